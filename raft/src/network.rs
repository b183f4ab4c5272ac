//! Raft RPCs between the members of one Raft group, over tonic: the
//! client side ([`NetworkFactory`], [`PeerClient`]); the server side is
//! [`crate::service::RaftService`]. Generic over the group's type
//! configuration: a nameservice and the routers' mount-table group use the
//! same code and the same gRPC service (`Raft` in proto/raftfs.proto).
//!
//! openraft's messages travel bincode-encoded inside `RaftMessage`. One
//! lazily connected `Channel` per peer, shared by every replication stream
//! to it. Network failures become `Unreachable` so openraft backs off.
//! Snapshots stream as their manifest and then their files (see
//! [`crate::snapshot_stream`]).
//!
//! Every request carries the sender's [`RaftGroup`] (ClusterID and group
//! id: a nameservice's NamespaceID, or [`MOUNT_TABLE_GROUP_ID`]), and a
//! member refuses one of another group with `FailedPrecondition`. Member
//! ids and addresses are reused across clusters and groups (every group
//! numbers its members from 1, and a host or a port can be given to a new
//! cluster), so without the check a member of another cluster could win
//! this one's votes or overwrite its log (tests/foreign_cluster.rs shows it
//! happening). On top of that, each side checks the peer's certificate
//! role: a nameservice's peers are members, the mount-table group's are
//! routers.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use openraft::alias::{SnapshotOf, VoteOf};
use openraft::errors::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest, TransferLeaderResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, OptionalSend, RaftTypeConfig};
use parking_lot::Mutex;
use raftfs_trust::{Dialer, PeerRole};
use serde::{de::DeserializeOwned, Serialize};
use tonic::transport::Channel;

use raftfs_proto::pb;
use raftfs_proto::pb::raft_client::RaftClient;

use crate::snapshot::SnapshotDir;
use crate::snapshot_stream;

/// What the generic glue needs of a group's type configuration: members
/// numbered by `u64` and addressed by a `BasicNode`.
pub trait GroupConfig: RaftTypeConfig<NodeId = u64, Node = BasicNode> {}
impl<C: RaftTypeConfig<NodeId = u64, Node = BasicNode>> GroupConfig for C {}

/// The group id of the routers' mount-table group. Nameservices' ids
/// (their NamespaceIDs) are never 0.
pub const MOUNT_TABLE_GROUP_ID: u64 = 0;

/// Largest Raft message, in bytes: an AppendEntries of up to openraft's
/// `max_payload_entries` entries of up to `MAX_OPS_PER_ENTRY` ops each.
/// Snapshots travel in chunks of [`SNAPSHOT_CHUNK_BYTES`], whatever their size.
pub const MAX_RAFT_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
/// Bytes of snapshot data per streamed chunk.
pub const SNAPSHOT_CHUNK_BYTES: usize = 4 * 1024 * 1024;
/// Chunks buffered between the disk and the network, on either side.
pub const SNAPSHOT_CHUNKS_IN_FLIGHT: usize = 2;
/// Raft RPCs slower than this are logged (at debug level).
pub const SLOW_RAFT_RPC_MS: u64 = 100;
/// How long to wait for a TCP connection to a peer.
pub const PEER_CONNECT_TIMEOUT_MS: u64 = 1000;

fn bin_options() -> impl bincode::Options {
    use bincode::Options;
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(MAX_RAFT_MESSAGE_BYTES as u64)
        .allow_trailing_bytes()
}

pub fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    use bincode::Options;
    bin_options().serialize(v).expect("serialize a Raft message")
}

pub fn decode<T: DeserializeOwned>(b: &[u8]) -> Result<T, String> {
    use bincode::Options;
    bin_options()
        .deserialize(b)
        .map_err(|e| format!("malformed Raft message: {e}"))
}

/// The Raft group a member belongs to: one nameservice (its NamespaceID)
/// or the mount table ([`MOUNT_TABLE_GROUP_ID`]) of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftGroup {
    pub cluster_id: String,
    pub namespace_id: u64,
}

impl RaftGroup {
    /// Refuse a request sent by a member of another group. An empty
    /// ClusterID is a member older than the check, and is let through.
    pub(crate) fn admit(&self, cluster_id: &str, namespace_id: u64) -> Result<(), tonic::Status> {
        if cluster_id.is_empty() || (cluster_id == self.cluster_id && namespace_id == self.namespace_id) {
            return Ok(());
        }
        tracing::debug!(cluster_id, namespace_id, "refused a raft request of another group");
        Err(tonic::Status::failed_precondition(format!(
            "raft request of cluster {cluster_id} namespace {namespace_id} sent to a member of cluster {} namespace {}",
            self.cluster_id, self.namespace_id
        )))
    }
}

/// Creates [`PeerClient`]s, sharing one channel per peer.
pub struct NetworkFactory<C> {
    group: RaftGroup,
    /// Dials peers as this member (its certificate proves it).
    dialer: Dialer,
    /// The role the peers' certificates must name.
    peer_role: PeerRole,
    channels: Arc<Mutex<HashMap<(u64, String), Channel>>>,
    config: std::marker::PhantomData<fn() -> C>,
}

impl<C> Clone for NetworkFactory<C> {
    fn clone(&self) -> Self {
        NetworkFactory {
            group: self.group.clone(),
            dialer: self.dialer.clone(),
            peer_role: self.peer_role,
            channels: self.channels.clone(),
            config: std::marker::PhantomData,
        }
    }
}

impl<C> NetworkFactory<C> {
    /// Clients that send `group` with every request, to peers whose
    /// certificates name `peer_role`.
    pub fn new(group: RaftGroup, dialer: Dialer, peer_role: PeerRole) -> NetworkFactory<C> {
        NetworkFactory {
            group,
            dialer,
            peer_role,
            channels: Arc::default(),
            config: std::marker::PhantomData,
        }
    }

    fn channel(&self, target: u64, addr: &str) -> Result<Channel, String> {
        let mut map = self.channels.lock();
        if let Some(c) = map.get(&(target, addr.to_string())) {
            return Ok(c.clone());
        }
        let endpoint = self
            .dialer
            .endpoint(addr, self.peer_role)
            .map_err(|e| format!("peer address {addr:?}: {e}"))?
            .connect_timeout(Duration::from_millis(PEER_CONNECT_TIMEOUT_MS))
            .tcp_nodelay(true);
        let ch = endpoint.connect_lazy();
        map.insert((target, addr.to_string()), ch.clone());
        Ok(ch)
    }
}

impl<C: GroupConfig> RaftNetworkFactory<C> for NetworkFactory<C> {
    type Network = PeerClient<C>;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerClient<C> {
        let addr = crate::peer_route::peer_route(target, &node.addr);
        let client = self.channel(target, &addr).map(|ch| {
            RaftClient::new(ch)
                .max_decoding_message_size(MAX_RAFT_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_RAFT_MESSAGE_BYTES)
        });
        PeerClient {
            client,
            group: self.group.clone(),
            config: std::marker::PhantomData,
        }
    }
}

/// The Raft RPC client for one peer.
pub struct PeerClient<C> {
    client: Result<RaftClient<Channel>, String>,
    group: RaftGroup,
    config: std::marker::PhantomData<fn() -> C>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NetErr(String);

impl<C: GroupConfig> PeerClient<C> {
    /// Send a snapshot as a stream of chunks: the head (vote, manifest)
    /// first, then every file's bytes read from disk by a blocking task, at
    /// most [`SNAPSHOT_CHUNKS_IN_FLIGHT`] chunks ahead of the network.
    async fn stream_snapshot(
        &mut self,
        vote: VoteOf<C>,
        snapshot: SnapshotOf<C, SnapshotDir<C>>,
        ttl: Duration,
    ) -> Result<SnapshotResponse<C>, NetErr> {
        let client = self.client.as_mut().map_err(|e| NetErr(e.clone()))?;
        let dir = snapshot.snapshot;
        let total = dir.manifest.total_bytes();
        let head = pb::SnapshotChunk {
            head_bin: encode(&(vote, &dir.manifest)),
            data: bytes::Bytes::new(),
            cluster_id: self.group.cluster_id.clone(),
            namespace_id: self.group.namespace_id,
        };
        let (tx, rx) = tokio::sync::mpsc::channel(SNAPSHOT_CHUNKS_IN_FLIGHT);
        let reader = tokio::task::spawn_blocking(move || {
            snapshot_stream::read_chunks(&dir, SNAPSHOT_CHUNK_BYTES, |data| {
                tx.blocking_send(pb::SnapshotChunk {
                    data,
                    ..Default::default()
                })
                .is_ok()
            })
        });
        let chunks = futures::stream::once(async { head }).chain(tokio_stream::wrappers::ReceiverStream::new(rx));
        let started = std::time::Instant::now();
        let mut request = tonic::Request::new(chunks);
        request.set_timeout(ttl);
        let reply = client.install_snapshot(request).await;
        // A local read error ends the stream early; report it rather than
        // the receiver's "ended early".
        match reader.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(NetErr(format!("snapshot: read local snapshot: {e}"))),
            Err(e) => return Err(NetErr(format!("snapshot: reader task: {e}"))),
        }
        let reply = reply.map_err(|s| NetErr(format!("snapshot: {}", s.message())))?;
        tracing::info!(
            bytes = total,
            ms = started.elapsed().as_millis() as u64,
            "snapshot sent"
        );
        let r: Result<SnapshotResponse<C>, String> = decode(&reply.into_inner().data_bin).map_err(NetErr)?;
        r.map_err(NetErr)
    }
}

enum Rpc {
    Append,
    Vote,
    PreVote,
    TransferLeader,
}

impl<C: GroupConfig> PeerClient<C> {
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &mut self,
        rpc: Rpc,
        req: &Req,
        ttl: Duration,
    ) -> Result<Resp, NetErr> {
        let client = self.client.as_mut().map_err(|e| NetErr(e.clone()))?;
        let mut request = tonic::Request::new(pb::RaftMessage {
            data_bin: encode(req),
            cluster_id: self.group.cluster_id.clone(),
            namespace_id: self.group.namespace_id,
        });
        request.set_timeout(ttl);
        let started = std::time::Instant::now();
        let kind = match rpc {
            Rpc::Append => "append",
            Rpc::Vote => "vote",
            Rpc::PreVote => "pre-vote",
            Rpc::TransferLeader => "transfer leader",
        };
        let reply = match rpc {
            Rpc::Append => client.append_entries(request).await,
            Rpc::Vote => client.vote(request).await,
            Rpc::PreVote => client.pre_vote(request).await,
            Rpc::TransferLeader => client.transfer_leader(request).await,
        }
        .map_err(|s| NetErr(format!("{}: {}", s.code(), s.message())))?;
        let took = started.elapsed();
        if took > Duration::from_millis(SLOW_RAFT_RPC_MS) {
            tracing::debug!(kind, ?took, "slow raft rpc");
        }
        let result: Result<Resp, String> = decode(&reply.into_inner().data_bin).map_err(NetErr)?;
        result.map_err(|e| NetErr(format!("remote: {e}")))
    }
}

impl<C: GroupConfig> RaftNetworkV2<C> for PeerClient<C> {
    type SnapshotData = SnapshotDir<C>;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<C>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<C>, RPCError<C>> {
        self.call(Rpc::Append, &rpc, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn vote(&mut self, rpc: VoteRequest<C>, option: RPCOption) -> Result<VoteResponse<C>, RPCError<C>> {
        self.call(Rpc::Vote, &rpc, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn pre_vote(&mut self, rpc: VoteRequest<C>, option: RPCOption) -> Result<VoteResponse<C>, RPCError<C>> {
        self.call(Rpc::PreVote, &rpc, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<C>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<C>, RPCError<C>> {
        self.call(Rpc::TransferLeader, &req, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn full_snapshot(
        &mut self,
        vote: VoteOf<C>,
        snapshot: SnapshotOf<C, SnapshotDir<C>>,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<C>, StreamingError<C>> {
        tokio::select! {
            r = self.stream_snapshot(vote, snapshot, option.hard_ttl()) => r.map_err(|e| StreamingError::Network(NetworkError::new(&e))),
            closed = cancel => Err(StreamingError::Closed(closed)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_of_another_group_are_refused() {
        let g = RaftGroup {
            cluster_id: "CID-a".into(),
            namespace_id: 7,
        };
        g.admit("CID-a", 7).expect("its own group");
        g.admit("", 0).expect("a member older than the check");
        for (c, n) in [("CID-b", 7), ("CID-a", 8)] {
            let s = g.admit(c, n).expect_err("another group");
            assert_eq!(s.code(), tonic::Code::FailedPrecondition);
            assert!(
                s.message().contains(&format!("cluster {c} namespace {n}")),
                "{}",
                s.message()
            );
            assert!(
                s.message().contains("member of cluster CID-a namespace 7"),
                "{}",
                s.message()
            );
        }
    }
}
