//! [`LeaderConnection`]: calls to one Raft group's leader (a
//! nameservice's, or a set of routers, which answer alike): it finds the
//! leader, follows its hints, notices a paused leader that another member
//! replaced, and retries what is retryable with the same call id until the
//! call's deadline, so a retried write is answered from the group's retry
//! table. One channel and one call stream per member, shared by every call.
//!
//! It sends the [`pb::CallContext`] it is given: who the caller is, and
//! its call id, are the caller's business (the SDK's own identity, or the
//! caller a router or the SDK's direct mode routes for).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use raftfs_proto::limits::MAX_RPC_BYTES;
use raftfs_proto::pb::namespace_client::NamespaceClient;
use raftfs_proto::{codec, pb, AdminOp, AdminResult, BlockTokenCarrier, FsError, Op, OpResult};
use raftfs_trust::Dialer;
use rand::Rng;
use tonic::transport::Channel;

use crate::call_stream::CallStream;
use crate::options::{ClientOptions, FollowerReads};

/// See the module docs.
pub(crate) struct LeaderConnection {
    members: Vec<String>,
    /// Dials members (TLS against the cluster CA, or plaintext).
    dialer: Dialer,
    opts: ClientOptions,
    channels: Mutex<HashMap<String, Channel>>,
    /// One call stream per member, reopened when it ends.
    streams: Mutex<HashMap<String, Arc<CallStream>>>,
    leader: Mutex<Option<String>>,
    /// Highest log index seen in a reply (read-your-writes for follower reads).
    max_index: AtomicU64,
    next_reader: AtomicU64,
}

/// Which RPC of the Namespace service a request goes to.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Rpc {
    Call,
    Admin,
}

fn status_error(s: tonic::Status) -> FsError {
    use tonic::Code;
    match s.code() {
        Code::Unavailable | Code::Cancelled | Code::Unknown | Code::Aborted | Code::ResourceExhausted => {
            FsError::Unavailable(s.message().to_string())
        }
        Code::DeadlineExceeded => FsError::Timeout(s.message().to_string()),
        Code::InvalidArgument | Code::OutOfRange => FsError::InvalidArgument(s.message().to_string()),
        Code::PermissionDenied | Code::Unauthenticated => FsError::AccessControl(s.message().to_string()),
        _ => FsError::Internal(format!("{}: {}", s.code(), s.message())),
    }
}

impl LeaderConnection {
    /// Calls to the group whose members are `members` (at least one).
    pub(crate) fn new(members: Vec<String>, dialer: Dialer, opts: ClientOptions) -> LeaderConnection {
        assert!(!members.is_empty(), "a group has at least one member address");
        LeaderConnection {
            members,
            dialer,
            opts,
            channels: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            leader: Mutex::new(None),
            max_index: AtomicU64::new(0),
            next_reader: AtomicU64::new(rand::thread_rng().gen_range(0..1024)),
        }
    }

    /// The channel to member `addr` (one per member, shared by every call).
    pub(crate) fn namespace_channel(&self, addr: &str) -> Result<Channel, FsError> {
        let mut map = self.channels.lock().expect("channel map lock");
        if let Some(c) = map.get(addr) {
            return Ok(c.clone());
        }
        let via = self.opts.dial_via.get(addr).map_or(addr, String::as_str);
        let ep = self
            .dialer
            .namespace_endpoint(via)
            .map_err(|e| FsError::InvalidArgument(format!("member address {via:?}: {e}")))?
            .connect_timeout(Duration::from_millis(self.opts.connect_timeout_ms))
            .tcp_nodelay(true);
        let c = ep.connect_lazy();
        map.insert(addr.to_string(), c.clone());
        Ok(c)
    }

    /// The open call stream to member `addr`, or a new one; `None` if the
    /// member does not serve call streams (then calls to it are unary).
    fn call_stream(&self, addr: &str) -> Result<Option<Arc<CallStream>>, FsError> {
        let mut map = self.streams.lock().expect("call stream map lock");
        if let Some(s) = map.get(addr) {
            if s.is_unsupported() {
                return Ok(None);
            }
            if !s.is_dead() {
                return Ok(Some(s.clone()));
            }
        }
        let s = CallStream::open(addr, self.channel(addr)?);
        map.insert(addr.to_string(), s.clone());
        Ok(Some(s))
    }

    pub(crate) fn member_addrs(&self) -> &[String] {
        &self.members
    }

    fn channel(&self, addr: &str) -> Result<NamespaceClient<Channel>, FsError> {
        Ok(NamespaceClient::new(self.namespace_channel(addr)?)
            .max_decoding_message_size(MAX_RPC_BYTES)
            .max_encoding_message_size(MAX_RPC_BYTES))
    }

    /// Send one request of kind `rpc` to `addr`; decode its result.
    async fn attempt<T: serde::de::DeserializeOwned + BlockTokenCarrier>(
        &self,
        rpc: Rpc,
        addr: &str,
        ctx: &pb::CallContext,
        op_bin: &[u8],
        read_mode: pb::ReadMode,
    ) -> Result<T, FsError> {
        let call = pb::CallRequest {
            ctx: Some(ctx.clone()),
            op_bin: op_bin.to_vec(),
            read_mode: read_mode as i32,
            min_index: self.max_index.load(Ordering::Relaxed),
        };
        let timeout = Duration::from_millis(self.opts.rpc_timeout_ms);
        let stream = match rpc {
            Rpc::Call => self.call_stream(addr)?,
            Rpc::Admin => None,
        };
        let reply = match stream {
            Some(stream) => tokio::time::timeout(timeout, stream.call(call))
                .await
                .map_err(|_| FsError::Timeout(format!("no reply from {addr} within {timeout:?}")))??,
            // Unary (admin calls, members without call streams): boxed,
            // so the common path's future does not carry a unary call's.
            None => {
                Box::pin(async {
                    let mut req = tonic::Request::new(call);
                    req.set_timeout(timeout);
                    let mut client = self.channel(addr)?;
                    match rpc {
                        Rpc::Call => client.call(req).await,
                        Rpc::Admin => client.admin(req).await,
                    }
                    .map_err(status_error)
                    .map(tonic::Response::into_inner)
                })
                .await?
            }
        };
        self.max_index.fetch_max(reply.index, Ordering::Relaxed);
        let mut r = codec::decode::<Result<T, FsError>>(&reply.result_bin, "reply")??;
        if !reply.block_tokens_bin.is_empty() {
            r.put_block_tokens(codec::decode(&reply.block_tokens_bin, "block tokens")?);
        }
        Ok(r)
    }

    /// [`LeaderConnection::attempt`] on the leader path, abandoned with a
    /// `NotLeader` hint if, while it is unanswered, another member reports
    /// itself leader. The call id makes the retry safe.
    async fn attempt_watched<T: serde::de::DeserializeOwned + BlockTokenCarrier>(
        &self,
        rpc: Rpc,
        target: &str,
        ctx: &pb::CallContext,
        op_bin: &[u8],
    ) -> Result<T, FsError> {
        // Boxed: the attempt's future is large, and the retry loop and
        // every caller above would otherwise copy it on each call.
        let mut attempt = Box::pin(self.attempt(rpc, target, ctx, op_bin, pb::ReadMode::Leader));
        let every = Duration::from_millis(self.opts.leader_check_after_ms.max(1));
        let mut check = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            // The select ends before the leader check is awaited: inside a
            // branch, its output (a whole result) would be kept beside the
            // check's future in this future.
            tokio::select! {
                r = &mut attempt => return r,
                _ = check.tick() => {}
            }
            if let Some(hint) = Box::pin(self.other_leader(target)).await {
                tracing::debug!(from = %target, to = %hint.addr, "another member leads: abandoning the call");
                return Err(FsError::NotLeader { leader: Some(hint) });
            }
        }
    }

    /// A member other than `target` that reports itself leader, if any answers so.
    async fn other_leader(&self, target: &str) -> Option<raftfs_proto::LeaderHint> {
        let asks = self
            .members
            .iter()
            .filter(|m| m.as_str() != target)
            .map(|m| async move {
                let mut c = self.channel(m).ok()?;
                let mut req = tonic::Request::new(pb::MemberInfoRequest {});
                req.set_timeout(Duration::from_millis(self.opts.leader_check_after_ms.max(1)));
                let i = c.member_info(req).await.ok()?.into_inner();
                (i.role == "LEADER").then(|| {
                    (
                        i.term,
                        raftfs_proto::LeaderHint {
                            member_id: i.member_id,
                            addr: m.clone(),
                        },
                    )
                })
            });
        // Two may claim it across a partition: the higher term is the current one.
        futures::future::join_all(asks)
            .await
            .into_iter()
            .flatten()
            .max_by_key(|(term, _)| *term)
            .map(|(_, hint)| hint)
    }

    /// Run `op` for the caller `ctx` names: a read on a follower first
    /// when the options say so (one try; anything retryable falls back to
    /// the leader), else on the leader, retried, failover-aware.
    pub(crate) async fn call(&self, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
        let op_bin = codec::encode(op)?;
        let mode = match self.opts.follower_reads {
            FollowerReads::Off => None,
            FollowerReads::ReadYourWrites => Some(pb::ReadMode::Follower),
            FollowerReads::Linearizable => Some(pb::ReadMode::FollowerLinearizable),
        };
        if let (false, Some(mode)) = (op.is_write(), mode) {
            let n = self.next_reader.fetch_add(1, Ordering::Relaxed) as usize;
            let target = self.members[n % self.members.len()].clone();
            // Boxed: an attempt's future is large, and the leader's path
            // (every call without follower reads) would carry it.
            match Box::pin(self.attempt(Rpc::Call, &target, ctx, &op_bin, mode)).await {
                Ok(r) => return Ok(r),
                Err(e) if e.is_retryable() => {
                    tracing::debug!(member = %target, error = %e, "follower read failed; reading from the leader")
                }
                Err(e) => return Err(e),
            }
        }
        self.run(Rpc::Call, ctx, op_bin).await
    }

    /// Run one `haadmin`/`dfsadmin` command on the leader for `ctx`'s caller.
    pub(crate) async fn admin(&self, ctx: &pb::CallContext, op: &AdminOp) -> Result<AdminResult, FsError> {
        self.run(Rpc::Admin, ctx, codec::encode(op)?).await
    }

    /// Member `addr`'s report of itself.
    pub(crate) async fn member_info(&self, addr: &str) -> Result<pb::MemberInfoReply, FsError> {
        let mut c = self.channel(addr)?;
        let mut req = tonic::Request::new(pb::MemberInfoRequest {});
        req.set_timeout(Duration::from_millis(self.opts.rpc_timeout_ms));
        c.member_info(req).await.map(|r| r.into_inner()).map_err(status_error)
    }

    /// Run `op` on the leader for the caller `ctx` names, as it is
    /// (see [`FileSystem::forward`](crate::FileSystem::forward)).
    pub(crate) async fn forward(&self, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
        self.run(Rpc::Call, ctx, codec::encode(op)?).await
    }

    /// Run one logical call: find the leader, retry what is retryable with
    /// the same call id, give up at the deadline.
    async fn run<T: serde::de::DeserializeOwned + BlockTokenCarrier>(
        &self,
        rpc: Rpc,
        ctx: &pb::CallContext,
        op_bin: Vec<u8>,
    ) -> Result<T, FsError> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(self.opts.call_deadline_ms);
        let mut backoff = self.opts.min_backoff_ms;
        let mut rotate = rand::thread_rng().gen_range(0..self.members.len());
        let mut last_err;
        loop {
            let target = self.leader.lock().expect("leader lock").clone().unwrap_or_else(|| {
                rotate = (rotate + 1) % self.members.len();
                self.members[rotate].clone()
            });
            match self.attempt_watched(rpc, &target, ctx, &op_bin).await {
                Ok(r) => return Ok(r),
                Err(FsError::NotLeader { leader: Some(hint) }) if hint.addr != target && !hint.addr.is_empty() => {
                    tracing::debug!(from = %target, to = %hint.addr, "following leader hint");
                    *self.leader.lock().expect("leader lock") = Some(hint.addr.clone());
                    last_err = FsError::NotLeader { leader: Some(hint) };
                    // A hint is a redirect, not a failure: no backoff.
                    if tokio::time::Instant::now() >= deadline {
                        break;
                    }
                    continue;
                }
                // A call routed by a mount table that the nameservice
                // refused as not its own: the caller routes it again.
                Err(e @ FsError::NotOwned { .. }) if ctx.federation_version > 0 => return Err(e),
                Err(e) if e.is_retryable() => {
                    tracing::debug!(member = %target, error = %e, "retrying");
                    *self.leader.lock().expect("leader lock") = None;
                    last_err = e;
                }
                Err(e) => return Err(e),
            }
            let jitter = rand::thread_rng().gen_range(0..=backoff / 2);
            let sleep = Duration::from_millis(backoff + jitter);
            if tokio::time::Instant::now() + sleep >= deadline {
                break;
            }
            tokio::time::sleep(sleep).await;
            backoff = (backoff * 2).min(self.opts.max_backoff_ms);
        }
        Err(FsError::Timeout(format!(
            "call did not complete within {} ms; last error: {last_err}",
            self.opts.call_deadline_ms
        )))
    }
}
