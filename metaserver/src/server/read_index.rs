//! Read indexes for linearizable follower reads, fetched from the leader
//! and shared: every read waiting when a request goes out gets its answer.
//!
//! Linearizability: a read may use a read index only from a leader request
//! *issued after the read arrived* (the leader confirms its leadership and
//! reports its commit index at that moment). Reads therefore join the next
//! batch, never the one in flight. One request per round trip serves any
//! number of concurrent reads, so linearizable follower reads cost the leader
//! one small RPC per batch instead of one per read.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use parking_lot::Mutex;
use tokio::sync::oneshot;

use raftfs_proto::{codec, pb, FsError};

use crate::raft::Raft;

type Waiter = oneshot::Sender<Result<u64, FsError>>;

#[derive(Default)]
struct Batch {
    in_flight: bool,
    next: Vec<Waiter>,
}

pub struct ReadIndexClient {
    raft: Raft,
    /// Addresses from VERSION, for members not in the membership yet.
    addrs: BTreeMap<u64, String>,
    timeout: Duration,
    channel: Mutex<Option<(String, tonic::transport::Channel)>>,
    batch: Mutex<Batch>,
}

impl ReadIndexClient {
    pub fn new(raft: Raft, addrs: BTreeMap<u64, String>, timeout: Duration) -> Arc<ReadIndexClient> {
        Arc::new(ReadIndexClient {
            raft,
            addrs,
            timeout,
            channel: Mutex::new(None),
            batch: Mutex::new(Batch::default()),
        })
    }

    /// A read index issued by the leader after this call began.
    pub async fn get(self: &Arc<Self>) -> Result<u64, FsError> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut b = self.batch.lock();
            b.next.push(tx);
            !std::mem::replace(&mut b.in_flight, true)
        };
        if start {
            let me = self.clone();
            tokio::spawn(async move { me.drive().await });
        }
        rx.await
            .unwrap_or_else(|_| Err(FsError::Unavailable("read index request dropped".into())))
    }

    /// Send one request per batch of waiters until none are left.
    async fn drive(&self) {
        loop {
            let waiters = {
                let mut b = self.batch.lock();
                if b.next.is_empty() {
                    b.in_flight = false;
                    return;
                }
                std::mem::take(&mut b.next)
            };
            let r = self.fetch().await;
            for w in waiters {
                let _ = w.send(r.clone());
            }
        }
    }

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
