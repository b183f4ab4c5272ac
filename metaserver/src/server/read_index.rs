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
/// leadership (lease or heartbeat round) and applied up to it.
pub struct LeaderReadIndex {
    pub raft: Raft,
}

impl IndexSource for LeaderReadIndex {
    async fn fetch(&self) -> Result<u64, FsError> {
        let read = self
            .raft
            .ensure_linearizable(super::member::read_option())
            .await
            .map_err(super::member::read_error)?;
        Ok(read.index())
    }
}

/// The leader's read index, fetched over RPC by a follower.
pub struct RemoteReadIndex {
    raft: Raft,
    /// Addresses from VERSION, for members not in the membership yet.
    addrs: BTreeMap<u64, String>,
    timeout: Duration,
    channel: Mutex<Option<(String, tonic::transport::Channel)>>,
}

impl RemoteReadIndex {
    pub fn new(raft: Raft, addrs: BTreeMap<u64, String>, timeout: Duration) -> RemoteReadIndex {
        RemoteReadIndex {
            raft,
            addrs,
            timeout,
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
        let addr = super::member::member_addr(&self.raft, &self.addrs, leader)
            .map(|a| super::failpoint::peer_route(leader, &a))
            .ok_or_else(|| FsError::Unavailable(format!("no address for leader {leader}")))?;
        let channel = {
            let mut cache = self.channel.lock();
            match &*cache {
                Some((a, ch)) if *a == addr => ch.clone(),
                _ => {
                    let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
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
        codec::decode::<Result<u64, FsError>>(&reply.into_inner().result_bin, "read index")?
    }
}
