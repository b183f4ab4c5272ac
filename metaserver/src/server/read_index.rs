//! Where linearizable reads get their read index: [`LeaderReadIndex`] asks
//! the local Raft core (a leader's own reads), [`RemoteReadIndex`] asks the
//! leader over RPC (linearizable follower reads). Both are used through
//! [`Coalesced`](super::coalesce::Coalesced), which shares one request among
//! every read waiting for it (and explains why that stays linearizable).

use std::collections::BTreeMap;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use parking_lot::Mutex;

use raftfs_proto::{codec, pb, FsError};

use super::coalesce::IndexSource;
use crate::raft::Raft;

/// The local Raft core's read index, once this leader confirmed its
/// leadership (lease or heartbeat round): its commit index at that moment
/// (at least its own leadership's first entry), as Raft's read-index
/// protocol says.
///
/// Not what this leader has applied, though every write acknowledged
/// before the read arrived is applied there already (the leader answers a
/// write only after applying it): entries committed but not yet applied on
/// the leader may be applied on a follower already, and a linearizable
/// follower read there may have shown them to a client, so a read that
/// begins after that one ends must see them too. (Reading at the leader's
/// applied index did break that, found by the fault harness: a follower
/// read saw a delete, then a leader read that began after it saw the file.)
/// A follower applies at most what its leader had committed, so the commit
/// index covers every follower's view.
///
/// The caller waits until its own store has applied the index.
pub struct LeaderReadIndex {
    pub raft: Raft,
}

impl IndexSource for LeaderReadIndex {
    async fn fetch(&self) -> Result<u64, FsError> {
        let linearizer = self
            .raft
            .get_read_linearizer(super::member::read_option())
            .await
            .map_err(super::member::read_error)?;
        let read_log_id = linearizer.read_log_id();
        tracing::debug!(
            target: "raftfs::reads",
            %read_log_id,
            raft_applied = ?linearizer.applied(),
            "read index: the leader's confirmed commit index"
        );
        Ok(read_log_id.index())
    }
}

/// The leader's read index, fetched over RPC by a follower.
pub struct RemoteReadIndex {
    raft: Raft,
    /// Addresses from VERSION, for members not in the membership yet.
    addrs: BTreeMap<u64, String>,
    timeout: Duration,
    /// Dials the leader as this member (its certificate proves it).
    dialer: raftfs_trust::Dialer,
    channel: Mutex<Option<(String, tonic::transport::Channel)>>,
}

impl RemoteReadIndex {
    pub fn new(
        raft: Raft,
        addrs: BTreeMap<u64, String>,
        timeout: Duration,
        dialer: raftfs_trust::Dialer,
    ) -> RemoteReadIndex {
        RemoteReadIndex {
            raft,
            addrs,
            timeout,
            dialer,
            channel: Mutex::new(None),
        }
    }
}

impl IndexSource for RemoteReadIndex {
    async fn fetch(&self) -> Result<u64, FsError> {
        let leader = self
            .raft
            .metrics()
            .borrow_watched()
            .current_leader
            .ok_or_else(|| FsError::Unavailable("no leader known for a linearizable read".into()))?;
        let addr = raftfs_raft::group::member_addr(&self.raft, &self.addrs, leader)
            .map(|a| super::failpoint::peer_route(leader, &a))
            .ok_or_else(|| FsError::Unavailable(format!("no address for leader {leader}")))?;
        let channel = {
            let mut cache = self.channel.lock();
            match &*cache {
                Some((a, ch)) if *a == addr => ch.clone(),
                _ => {
                    let ch = self
                        .dialer
                        .endpoint(&addr, raftfs_trust::PeerRole::Member)
                        .map_err(|e| FsError::Internal(e.to_string()))?
                        .connect_timeout(self.timeout)
                        .timeout(self.timeout)
                        .tcp_nodelay(true)
                        .connect_lazy();
                    *cache = Some((addr.clone(), ch.clone()));
                    ch
                }
            }
        };
        let mut client = pb::namespace_client::NamespaceClient::new(channel);
        let reply = client
            .read_index(pb::ReadIndexRequest {})
            .await
            .map_err(|s| FsError::Unavailable(format!("read index from leader {leader}: {}", s.message())))?;
        let index = codec::decode::<Result<u64, FsError>>(&reply.into_inner().result_bin, "read index")?;
        tracing::debug!(target: "raftfs::reads", leader, addr, ?index, "read index from the leader");
        index
    }
}
