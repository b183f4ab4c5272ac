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
/// leadership (lease or heartbeat round).
///
/// The index is what this leader's store has *applied* once its
/// leadership is confirmed, as soon as it has applied an entry of its own
/// leadership (its first, blank entry, or a later one); only before that
/// does a read wait for the commit index to be applied. That is enough for a linearizable
/// read: a write is acknowledged to its client only after the leader that
/// proposed it applied it, so every write acknowledged before the read
/// arrived is at or below what this leader has applied (an earlier
/// leader's, because they precede this leadership's first entry; this
/// leader's, because it applied them before answering), and what it has
/// applied never goes back. Entries committed but not yet applied belong
/// to writes still unanswered, which a read may or may not see. Under a
/// stream of writes this spares each read the wait for the entries in
/// flight to be applied (`raftfs bench compare --ops mixed` shows the
/// reads' p99). The store's applied index is read, not the Raft core's:
/// the state machine moves it before it answers the batch's writers, while
/// the core learns of an apply only afterwards.
pub struct LeaderReadIndex {
    pub raft: Raft,
    /// The state machine's applied index.
    pub applied: tokio::sync::watch::Receiver<u64>,
}

impl IndexSource for LeaderReadIndex {
    async fn fetch(&self) -> Result<u64, FsError> {
        let linearizer = self
            .raft
            .get_read_linearizer(super::member::read_option())
            .await
            .map_err(super::member::read_error)?;
        let leadership = *linearizer.read_log_id().committed_leader_id();
        if let Some(applied) = linearizer.applied() {
            if *applied.committed_leader_id() == leadership {
                let store_applied = *self.applied.borrow();
                tracing::debug!(
                    target: "raftfs::reads",
                    read_log_id = %linearizer.read_log_id(),
                    raft_applied = %applied,
                    store_applied,
                    "read index: this leadership's entry is applied"
                );
                return Ok(store_applied.max(applied.index()));
            }
        }
        let state = linearizer
            .await_ready(&self.raft)
            .await
            .map_err(|f| FsError::Unavailable(format!("member stopped: {f}")))?;
        tracing::debug!(target: "raftfs::reads", read_log_id = %state.read_log_id(), "read index: waited for it to be applied");
        Ok(state.read_log_id().index())
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
