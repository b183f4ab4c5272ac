//! Raft RPCs between members of one nameservice, over tonic.
//!
//! openraft's messages travel bincode-encoded inside `RaftMessage` (see
//! proto/raftfs.proto). Client side: one lazily connected `Channel` per peer,
//! shared by every replication stream to it. Server side: decode with a
//! size limit, hand to the local `Raft`, encode `Result<response, error>`.
//! Network failures become `Unreachable` so openraft backs off.
//!
//! Every request carries the sender's [`RaftGroup`] (ClusterID and
//! NamespaceID), and a member refuses one of another group with
//! `FailedPrecondition`. Member ids and addresses are reused across
//! clusters (every nameservice numbers its members from 1, and a host or a
//! port can be given to a new cluster), so without the check a member of
//! another cluster could win this one's votes or overwrite its log
//! (tests/foreign_cluster.rs shows it happening).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use openraft::errors::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest, TransferLeaderResponse,
    VoteRequest, VoteResponse,
};
use openraft::storage::Snapshot;
use openraft::{BasicNode, OptionalSend};
use parking_lot::Mutex;
use raftfs_trust::{Dialer, PeerRole, ServerSecurity};
use serde::{de::DeserializeOwned, Serialize};
use tonic::transport::Channel;

use raftfs_proto::pb;
use raftfs_proto::pb::raft_client::RaftClient;

use super::snapshot::{Manifest, SnapshotDir, Snapshots};
use super::snapshot_stream::{self, SnapshotWriter};
use super::{TypeConfig, Vote};

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

/// The Raft group a member belongs to: one nameservice of one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaftGroup {
    pub cluster_id: String,
    pub namespace_id: u64,
}

impl RaftGroup {
    /// Refuse a request sent by a member of another group. An empty
    /// ClusterID is a member older than the check, and is let through.
    fn admit(&self, cluster_id: &str, namespace_id: u64) -> Result<(), tonic::Status> {
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
#[derive(Clone)]
pub struct NetworkFactory {
    group: RaftGroup,
    /// Dials peers as this member (its certificate proves it).
    dialer: Dialer,
    channels: Arc<Mutex<HashMap<(u64, String), Channel>>>,
}

impl NetworkFactory {
    /// Clients that send `group` with every request.
    pub fn new(group: RaftGroup, dialer: Dialer) -> NetworkFactory {
        NetworkFactory {
            group,
            dialer,
            channels: Arc::default(),
        }
    }

    fn channel(&self, target: u64, addr: &str) -> Result<Channel, String> {
        let mut map = self.channels.lock();
        if let Some(c) = map.get(&(target, addr.to_string())) {
            return Ok(c.clone());
        }
        let endpoint = self
            .dialer
            .endpoint(addr, PeerRole::Member)
            .map_err(|e| format!("peer address {addr:?}: {e}"))?
            .connect_timeout(Duration::from_millis(PEER_CONNECT_TIMEOUT_MS))
            .tcp_nodelay(true);
        let ch = endpoint.connect_lazy();
        map.insert((target, addr.to_string()), ch.clone());
        Ok(ch)
    }
}

impl RaftNetworkFactory<TypeConfig> for NetworkFactory {
    type Network = PeerClient;

    async fn new_client(&mut self, target: u64, node: &BasicNode) -> PeerClient {
        let addr = crate::server::failpoint::peer_route(target, &node.addr);
        let client = self.channel(target, &addr).map(|ch| {
            RaftClient::new(ch)
                .max_decoding_message_size(MAX_RAFT_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_RAFT_MESSAGE_BYTES)
        });
        PeerClient {
            client,
            group: self.group.clone(),
        }
    }
}

/// The Raft RPC client for one peer.
pub struct PeerClient {
    client: Result<RaftClient<Channel>, String>,
    group: RaftGroup,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NetErr(String);

impl PeerClient {
    /// Send a snapshot as a stream of chunks: the head (vote, manifest)
    /// first, then every file's bytes read from disk by a blocking task, at
    /// most [`SNAPSHOT_CHUNKS_IN_FLIGHT`] chunks ahead of the network.
    async fn stream_snapshot(
        &mut self,
        vote: Vote,
        snapshot: openraft::alias::SnapshotOf<TypeConfig, SnapshotDir>,
        ttl: Duration,
    ) -> Result<SnapshotResponse<TypeConfig>, NetErr> {
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
        let r: Result<SnapshotResponse<TypeConfig>, String> = decode(&reply.into_inner().data_bin).map_err(NetErr)?;
        r.map_err(NetErr)
    }
}

enum Rpc {
    Append,
    Vote,
    PreVote,
    TransferLeader,
}

impl PeerClient {
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

impl RaftNetworkV2<TypeConfig> for PeerClient {
    type SnapshotData = SnapshotDir;

    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(Rpc::Append, &rpc, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(Rpc::Vote, &rpc, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn pre_vote(
        &mut self,
        rpc: VoteRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<VoteResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(Rpc::PreVote, &rpc, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn transfer_leader(
        &mut self,
        req: TransferLeaderRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<TransferLeaderResponse<TypeConfig>, RPCError<TypeConfig>> {
        self.call(Rpc::TransferLeader, &req, option.hard_ttl())
            .await
            .map_err(|e| RPCError::Unreachable(Unreachable::new(&e)))
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: openraft::alias::SnapshotOf<TypeConfig, SnapshotDir>,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        tokio::select! {
            r = self.stream_snapshot(vote, snapshot, option.hard_ttl()) => r.map_err(|e| StreamingError::Network(NetworkError::new(&e))),
            closed = cancel => Err(StreamingError::Closed(closed)),
        }
    }
}

/// The server side: the `Raft` gRPC service of one member.
pub struct RaftService {
    pub raft: super::Raft,
    /// Where received snapshots are written.
    pub snapshots: Arc<Snapshots>,
    /// Requests of any other group are refused.
    pub group: RaftGroup,
    /// Requests from callers without a member certificate are refused.
    pub security: ServerSecurity,
}

impl RaftService {
    /// The request's openraft message, if it comes from this member's group.
    fn parse<T: DeserializeOwned>(&self, req: tonic::Request<pb::RaftMessage>, rpc: &str) -> Result<T, tonic::Status> {
        self.security.require(&req, PeerRole::Member, rpc)?;
        let m = req.into_inner();
        self.group.admit(&m.cluster_id, m.namespace_id)?;
        decode(&m.data_bin).map_err(tonic::Status::invalid_argument)
    }

    /// Write a snapshot stream into a new incoming directory, on a blocking
    /// task fed [`SNAPSHOT_CHUNKS_IN_FLIGHT`] chunks at a time. The
    /// directory is removed if the stream is refused.
    async fn receive_snapshot(
        &self,
        manifest: Manifest,
        first: bytes::Bytes,
        chunks: &mut tonic::Streaming<pb::SnapshotChunk>,
    ) -> Result<SnapshotDir, tonic::Status> {
        manifest
            .validate()
            .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?;
        let dir = self
            .snapshots
            .incoming()
            .map_err(|e| tonic::Status::internal(format!("create incoming snapshot directory: {e}")))?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(SNAPSHOT_CHUNKS_IN_FLIGHT);
        let writer = tokio::task::spawn_blocking(move || {
            let written = SnapshotWriter::new(dir.clone(), manifest).and_then(|mut w| {
                while let Some(data) = rx.blocking_recv() {
                    w.push(&data)?;
                }
                w.finish()
            });
            if written.is_err() {
                let _ = std::fs::remove_dir_all(&dir);
            }
            written
        });
        let mut stream_error = None;
        if !first.is_empty() && tx.send(first).await.is_err() {
            stream_error = Some(tonic::Status::invalid_argument("snapshot refused by the writer"));
        }
        while stream_error.is_none() {
            match chunks.message().await {
                Ok(None) => break,
                Ok(Some(c)) if !c.head_bin.is_empty() => {
                    stream_error = Some(tonic::Status::invalid_argument("snapshot chunk with a second head"))
                }
                Ok(Some(c)) => {
                    if tx.send(c.data).await.is_err() {
                        break; // the writer failed: its error says why
                    }
                }
                Err(s) => stream_error = Some(s),
            }
        }
        drop(tx);
        let written = writer
            .await
            .map_err(|e| tonic::Status::internal(format!("snapshot writer task: {e}")))?;
        if let Some(s) = stream_error {
            if let Ok(dir) = &written {
                let _ = std::fs::remove_dir_all(&dir.path);
            }
            return Err(s);
        }
        written.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => tonic::Status::invalid_argument(e.to_string()),
            _ => tonic::Status::internal(format!("write snapshot: {e}")),
        })
    }
}

fn reply<T: Serialize, E: std::fmt::Display>(
    r: Result<T, E>,
) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
    let r: Result<T, String> = r.map_err(|e| e.to_string());
    Ok(tonic::Response::new(pb::RaftMessage {
        data_bin: encode(&r),
        ..Default::default()
    }))
}

#[tonic::async_trait]
impl pb::raft_server::Raft for RaftService {
    async fn append_entries(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: AppendEntriesRequest<TypeConfig> = self.parse(req, "Raft AppendEntries")?;
        reply(self.raft.append_entries(rpc).await)
    }

    async fn vote(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: VoteRequest<TypeConfig> = self.parse(req, "Raft Vote")?;
        reply(self.raft.vote(rpc).await)
    }

    async fn pre_vote(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: VoteRequest<TypeConfig> = self.parse(req, "Raft PreVote")?;
        reply(self.raft.pre_vote(rpc).await)
    }

    async fn transfer_leader(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: TransferLeaderRequest<TypeConfig> = self.parse(req, "Raft TransferLeader")?;
        reply(self.raft.handle_transfer_leader(rpc).await)
    }

    async fn install_snapshot(
        &self,
        req: tonic::Request<tonic::Streaming<pb::SnapshotChunk>>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        self.security.require(&req, PeerRole::Member, "Raft InstallSnapshot")?;
        let mut chunks = req.into_inner();
        let first = chunks
            .message()
            .await?
            .ok_or_else(|| tonic::Status::invalid_argument("snapshot stream without a first chunk"))?;
        self.group.admit(&first.cluster_id, first.namespace_id)?;
        let (vote, manifest): (Vote, Manifest) = decode(&first.head_bin).map_err(tonic::Status::invalid_argument)?;
        let dir = self.receive_snapshot(manifest, first.data, &mut chunks).await?;
        let path = dir.path.clone();
        let meta = dir.manifest.meta.clone();
        let installed = self
            .raft
            .install_full_snapshot(vote, Snapshot { meta, snapshot: dir })
            .await;
        // Refused (a stale vote, an older snapshot): not adopted, so still
        // in the incoming directory.
        if path.exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
        reply(installed)
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
