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

/// Largest Raft message, in bytes (snapshots travel whole; see snapshot.rs).
pub const MAX_RAFT_MESSAGE_BYTES: usize = 1024 * 1024 * 1024;
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

enum Rpc {
    Append,
    Vote,
    PreVote,
    Snapshot,
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
            Rpc::Snapshot => "snapshot",
            Rpc::TransferLeader => "transfer leader",
        };
        let reply = match rpc {
            Rpc::Append => client.append_entries(request).await,
            Rpc::Vote => client.vote(request).await,
            Rpc::PreVote => client.pre_vote(request).await,
            Rpc::Snapshot => client.full_snapshot(request).await,
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
        let req = (vote, snapshot.meta, snapshot.snapshot);
        tokio::select! {
            r = self.call(Rpc::Snapshot, &req, option.hard_ttl()) => r.map_err(|e| StreamingError::Network(NetworkError::new(&e))),
            closed = cancel => Err(StreamingError::Closed(closed)),
        }
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

    async fn full_snapshot(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let (vote, meta, data): (Vote, SnapshotMeta, Vec<u8>) = parse(req)?;
        reply(
            self.raft
                .install_full_snapshot(vote, Snapshot { meta, snapshot: data })
                .await,
        )
    }
}
