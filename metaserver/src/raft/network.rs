//! Raft RPCs between members of one nameservice, over tonic.
//!
//! openraft's messages travel bincode-encoded inside `RaftMessage` (see
//! proto/raftfs.proto). Client side: one lazily connected `Channel` per peer,
//! shared by every replication stream to it. Server side: decode with a
//! size limit, hand to the local `Raft`, encode `Result<response, error>`.
//! Network failures become `Unreachable` so openraft backs off.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use openraft::errors::{NetworkError, RPCError, ReplicationClosed, StreamingError, Unreachable};
use openraft::network::{RPCOption, RaftNetworkFactory, RaftNetworkV2};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, TransferLeaderRequest, TransferLeaderResponse,
    VoteRequest, VoteResponse,
};
use openraft::storage::Snapshot;
use openraft::{BasicNode, OptionalSend};
use parking_lot::Mutex;
use serde::{de::DeserializeOwned, Serialize};
use tonic::transport::{Channel, Endpoint};

use raftfs_proto::pb;
use raftfs_proto::pb::raft_client::RaftClient;

use super::{SnapshotMeta, TypeConfig, Vote};

/// Largest Raft message, in bytes: an AppendEntries of up to openraft's
/// `max_payload_entries` entries of up to `MAX_OPS_PER_ENTRY` ops each.
/// Snapshots travel in chunks of [`SNAPSHOT_CHUNK_BYTES`], whatever their size.
pub const MAX_RAFT_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
/// Bytes of snapshot image per streamed chunk.
pub const SNAPSHOT_CHUNK_BYTES: usize = 4 * 1024 * 1024;
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

/// Creates [`PeerClient`]s, sharing one channel per peer.
#[derive(Clone, Default)]
pub struct NetworkFactory {
    channels: Arc<Mutex<HashMap<(u64, String), Channel>>>,
}

impl NetworkFactory {
    fn channel(&self, target: u64, addr: &str) -> Result<Channel, String> {
        let mut map = self.channels.lock();
        if let Some(c) = map.get(&(target, addr.to_string())) {
            return Ok(c.clone());
        }
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
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
        PeerClient { client }
    }
}

/// The Raft RPC client for one peer.
pub struct PeerClient {
    client: Result<RaftClient<Channel>, String>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NetErr(String);

impl PeerClient {
    /// Send a snapshot as a stream of chunks: the head (vote, meta, total
    /// length) first, then the image in [`SNAPSHOT_CHUNK_BYTES`] pieces
    /// (slices of one buffer, not copies).
    async fn stream_snapshot(
        &mut self,
        vote: Vote,
        snapshot: openraft::alias::SnapshotOf<TypeConfig, Vec<u8>>,
        ttl: Duration,
    ) -> Result<SnapshotResponse<TypeConfig>, NetErr> {
        let client = self.client.as_mut().map_err(|e| NetErr(e.clone()))?;
        let data = bytes::Bytes::from(snapshot.snapshot);
        let total = data.len() as u64;
        let head = encode(&(vote, snapshot.meta, total));
        let chunks = snapshot_chunks(head, data, SNAPSHOT_CHUNK_BYTES);
        let started = std::time::Instant::now();
        let mut request = tonic::Request::new(futures::stream::iter(chunks));
        request.set_timeout(ttl);
        let reply = client
            .install_snapshot(request)
            .await
            .map_err(|s| NetErr(format!("snapshot: {}", s.message())))?;
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
        let mut request = tonic::Request::new(pb::RaftMessage { data_bin: encode(req) });
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
    type SnapshotData = Vec<u8>;

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
        snapshot: openraft::alias::SnapshotOf<TypeConfig, Vec<u8>>,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<TypeConfig>, StreamingError<TypeConfig>> {
        tokio::select! {
            r = self.stream_snapshot(vote, snapshot, option.hard_ttl()) => r.map_err(|e| StreamingError::Network(NetworkError::new(&e))),
            closed = cancel => Err(StreamingError::Closed(closed)),
        }
    }
}

/// Split a snapshot image into stream chunks of `chunk_bytes`, the first
/// carrying `head`; slices of `data`, not copies. An empty image is one chunk.
fn snapshot_chunks(head: Vec<u8>, data: bytes::Bytes, chunk_bytes: usize) -> Vec<pb::SnapshotChunk> {
    assert!(chunk_bytes > 0, "snapshot chunks hold at least one byte");
    let mut chunks = Vec::with_capacity(data.len() / chunk_bytes + 1);
    let mut at = 0;
    loop {
        let end = (at + chunk_bytes).min(data.len());
        chunks.push(pb::SnapshotChunk {
            head_bin: if at == 0 { head.clone() } else { Vec::new() },
            data: data.slice(at..end),
        });
        at = end;
        if at >= data.len() {
            return chunks;
        }
    }
}

/// Reassembles a streamed snapshot image of an announced length, refusing
/// streams that are too long, too short, or over the size limit.
struct SnapshotAssembler {
    total: u64,
    data: Vec<u8>,
}

impl SnapshotAssembler {
    fn new(total: u64) -> Result<SnapshotAssembler, String> {
        if total > super::snapshot::MAX_SNAPSHOT_BYTES {
            return Err(format!(
                "snapshot of {total} bytes exceeds the limit of {}",
                super::snapshot::MAX_SNAPSHOT_BYTES
            ));
        }
        Ok(SnapshotAssembler {
            total,
            data: Vec::with_capacity(total as usize),
        })
    }

    fn push(&mut self, chunk: &[u8]) -> Result<(), String> {
        if (self.data.len() + chunk.len()) as u64 > self.total {
            return Err(format!(
                "snapshot stream longer than its announced {} bytes",
                self.total
            ));
        }
        self.data.extend_from_slice(chunk);
        Ok(())
    }

    fn finish(self) -> Result<Vec<u8>, String> {
        if self.data.len() as u64 != self.total {
            return Err(format!(
                "snapshot stream ended at {} of {} bytes",
                self.data.len(),
                self.total
            ));
        }
        Ok(self.data)
    }
}

/// The server side: the `Raft` gRPC service of one member.
pub struct RaftService {
    pub raft: super::Raft,
}

fn reply<T: Serialize, E: std::fmt::Display>(
    r: Result<T, E>,
) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
    let r: Result<T, String> = r.map_err(|e| e.to_string());
    Ok(tonic::Response::new(pb::RaftMessage { data_bin: encode(&r) }))
}

fn parse<T: DeserializeOwned>(req: tonic::Request<pb::RaftMessage>) -> Result<T, tonic::Status> {
    decode(&req.into_inner().data_bin).map_err(tonic::Status::invalid_argument)
}

#[tonic::async_trait]
impl pb::raft_server::Raft for RaftService {
    async fn append_entries(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: AppendEntriesRequest<TypeConfig> = parse(req)?;
        reply(self.raft.append_entries(rpc).await)
    }

    async fn vote(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: VoteRequest<TypeConfig> = parse(req)?;
        reply(self.raft.vote(rpc).await)
    }

    async fn pre_vote(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: VoteRequest<TypeConfig> = parse(req)?;
        reply(self.raft.pre_vote(rpc).await)
    }

    async fn transfer_leader(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: TransferLeaderRequest<TypeConfig> = parse(req)?;
        reply(self.raft.handle_transfer_leader(rpc).await)
    }

    async fn install_snapshot(
        &self,
        req: tonic::Request<tonic::Streaming<pb::SnapshotChunk>>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let mut chunks = req.into_inner();
        let first = chunks
            .message()
            .await?
            .ok_or_else(|| tonic::Status::invalid_argument("snapshot stream without a first chunk"))?;
        let (vote, meta, total): (Vote, SnapshotMeta, u64) =
            decode(&first.head_bin).map_err(tonic::Status::invalid_argument)?;
        let mut image = SnapshotAssembler::new(total).map_err(tonic::Status::invalid_argument)?;
        image.push(&first.data).map_err(tonic::Status::invalid_argument)?;
        while let Some(c) = chunks.message().await? {
            if !c.head_bin.is_empty() {
                return Err(tonic::Status::invalid_argument("snapshot chunk with a second head"));
            }
            image.push(&c.data).map_err(tonic::Status::invalid_argument)?;
        }
        let data = image.finish().map_err(tonic::Status::invalid_argument)?;
        reply(
            self.raft
                .install_full_snapshot(vote, Snapshot { meta, snapshot: data })
                .await,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshot_chunks_round_trip() {
        let data = bytes::Bytes::from((0u8..10).collect::<Vec<u8>>());
        let chunks = snapshot_chunks(vec![7], data.clone(), 3);
        assert_eq!(chunks.len(), 4);
        assert_eq!(chunks[0].head_bin, vec![7]);
        assert!(chunks[1..].iter().all(|c| c.head_bin.is_empty()));
        let mut a = SnapshotAssembler::new(10).unwrap();
        for c in &chunks {
            a.push(&c.data).unwrap();
        }
        assert_eq!(a.finish().unwrap(), data.to_vec());
        let empty = snapshot_chunks(vec![1], bytes::Bytes::new(), 3);
        assert_eq!(empty.len(), 1);
    }

    #[test]
    fn snapshot_streams_of_the_wrong_length_are_refused() {
        let mut long = SnapshotAssembler::new(4).unwrap();
        long.push(&[0; 3]).unwrap();
        assert!(long.push(&[0; 2]).is_err());
        let mut short = SnapshotAssembler::new(4).unwrap();
        short.push(&[0; 3]).unwrap();
        assert!(short.finish().is_err());
        assert!(SnapshotAssembler::new(super::super::snapshot::MAX_SNAPSHOT_BYTES + 1).is_err());
    }
}
