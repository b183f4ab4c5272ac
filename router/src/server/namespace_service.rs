//! The client `Namespace` gRPC service of a router: the same service a
//! nameservice member serves, for the whole federated namespace, so the
//! SDK, `raftfs dfs` and the tools reach either with `raftfs://HOST:PORT,…`.
//!
//! The caller's user is decided as a member decides it (`--auth simple`:
//! the name the call carries; `strong`: the user certificate's); a call
//! on a connection without a user certificate may instead carry a
//! delegation token: one the routers issued is checked here and the call
//! goes on as its owner, one a nameservice issued is passed on for that
//! nameservice to check. Token ops (`getDelegationToken`, and renew or
//! cancel of a routers' token) are the routers' own
//! ([`super::token_issuer`]). Every failure is a typed `FsError` in the reply. A
//! router in safe mode refuses calls with a retryable `SafeModeException`,
//! so clients move on to another router. `Admin` and `ReadIndex` are a
//! nameservice's own: a router refuses them.

use std::pin::Pin;
use std::sync::Arc;

use futures::Stream;
use openraft::async_runtime::WatchReceiver;

use raftfs_proto::{codec, pb, FsError, Op, OpResult};
use raftfs_raft::call_stream::serve_call_stream_inline;
use raftfs_trust::{PeerIdentity, PeerRole};
use tonic::{Request, Response, Status, Streaming};

use super::node::RouterNode;
use super::token_issuer::{certificate_needed, is_router_token_op};

pub struct RouterNamespaceService {
    pub node: Arc<RouterNode>,
}

/// The context the call is forwarded with: the caller's client id, call
/// id and delegation token as it sent them; its user as this router's
/// client authentication decides it.
fn forwarded_ctx(
    node: &RouterNode,
    mut c: pb::CallContext,
    peer: Option<&PeerIdentity>,
) -> Result<pb::CallContext, FsError> {
    if !by_user_certificate(peer) && !c.delegation_token.is_empty() {
        // The nameservice that issued the token checks it, and that the
        // user the call names is its owner.
        return Ok(c);
    }
    c.user = node.client_auth.user(&c.user, peer).map_err(FsError::AccessControl)?;
    c.groups.clear(); // members resolve groups themselves
    Ok(c)
}

/// A call whose caller's user is decided, checked for safe mode.
enum Admitted {
    /// Forwarded to the nameservice the table names: the context to
    /// forward with, and the op.
    Forward(pb::CallContext, Op),
    /// One of the routers' own token ops, answered here.
    TokenOp(pb::CallContext, Op),
}

/// How a call goes on, decided without awaiting anything.
enum Way {
    Admitted(Admitted),
    /// A delegation token to look at first (its context as sent, and the
    /// op undecoded).
    Token(pb::CallContext, Vec<u8>),
}

fn by_user_certificate(peer: Option<&PeerIdentity>) -> bool {
    peer.is_some_and(|p| p.role == PeerRole::User)
}

async fn handle_call(node: &RouterNode, req: Option<pb::CallRequest>, peer: Option<&PeerIdentity>) -> pb::CallReply {
    let result = match way(node, req, peer) {
        Ok(Way::Admitted(Admitted::Forward(ctx, op))) => node.calls.call(ctx, &op).await,
        // Boxed: the token checks' and token ops' futures would otherwise
        // sit in every call's, and be copied with it.
        Ok(other) => Box::pin(other_call(node, other, peer)).await,
        Err(refused) => Err(refused),
    };
    // Log indexes are per nameservice: a router's answers carry none.
    codec::call_reply(&result, 0)
}

/// Which way call `req` goes on, or why it is refused here.
fn way(node: &RouterNode, req: Option<pb::CallRequest>, peer: Option<&PeerIdentity>) -> Result<Way, FsError> {
    let req = req.ok_or_else(|| FsError::InvalidArgument("missing call".into()))?;
    let ctx = req
        .ctx
        .ok_or_else(|| FsError::InvalidArgument("missing call context".into()))?;
    if !by_user_certificate(peer) && !ctx.delegation_token.is_empty() {
        return Ok(Way::Token(ctx, req.op_bin));
    }
    let ctx = forwarded_ctx(node, ctx, peer)?;
    Ok(Way::Admitted(admitted(node, ctx, &req.op_bin, peer)?))
}

/// The call of `ctx` (its user decided) and `op_bin`, past safe mode and
/// the token ops' rules.
fn admitted(
    node: &RouterNode,
    ctx: pb::CallContext,
    op_bin: &[u8],
    peer: Option<&PeerIdentity>,
) -> Result<Admitted, FsError> {
    let op: Op = codec::decode(op_bin, "op")?;
    if let Some(why) = node.safe_mode() {
        return Err(FsError::SafeMode(why));
    }
    if is_router_token_op(&op) {
        return Ok(Admitted::TokenOp(ctx, op));
    }
    // A nameservice believes this router that the caller may renew.
    if matches!(op, Op::RenewDelegationToken { .. }) && !by_user_certificate(peer) {
        return Err(certificate_needed());
    }
    Ok(Admitted::Forward(ctx, op))
}

/// A call with a delegation token, or a token op: a routers' token is
/// checked here, any other goes on to the nameservice that issued it; the
/// routers' token ops are answered here.
async fn other_call(node: &RouterNode, way: Way, peer: Option<&PeerIdentity>) -> Result<OpResult, FsError> {
    let admitted = match way {
        Way::Admitted(admitted) => admitted,
        Way::Token(mut ctx, op_bin) => {
            let ctx = if node.resolve_router_token(&mut ctx).await? {
                ctx
            } else {
                forwarded_ctx(node, ctx, peer)?
            };
            admitted(node, ctx, &op_bin, peer)?
        }
    };
    match admitted {
        Admitted::Forward(ctx, op) => node.calls.call(ctx, &op).await,
        Admitted::TokenOp(ctx, op) => node.router_token_op(&ctx.user, by_user_certificate(peer), &op).await,
    }
}

#[tonic::async_trait]
impl pb::namespace_server::Namespace for RouterNamespaceService {
    async fn call(&self, req: Request<pb::CallRequest>) -> Result<Response<pb::CallReply>, Status> {
        let peer = self.node.security.server.peer(&req)?;
        Ok(Response::new(
            handle_call(&self.node, Some(req.into_inner()), peer.as_ref()).await,
        ))
    }

    type CallStreamStream = Pin<Box<dyn Stream<Item = Result<pb::TaggedReply, Status>> + Send>>;

    async fn call_stream(
        &self,
        req: Request<Streaming<pb::TaggedCall>>,
    ) -> Result<Response<Self::CallStreamStream>, Status> {
        let host: Arc<str> = req.remote_addr().map(|a| a.ip().to_string()).unwrap_or_default().into();
        let peer = self.node.security.server.peer(&req)?.map(Arc::new);
        let node = self.node.clone();
        Ok(Response::new(Box::pin(serve_call_stream_inline(
            req.into_inner(),
            host,
            move |call| {
                let (node, peer) = (node.clone(), peer.clone());
                async move { handle_call(&node, call, peer.as_deref()).await }
            },
        ))))
    }

    async fn member_info(&self, _req: Request<pb::MemberInfoRequest>) -> Result<Response<pb::MemberInfoReply>, Status> {
        let s = self.node.status();
        let raft = self.node.raft.metrics().borrow_watched().clone();
        let leader_id = s.leader.unwrap_or(0);
        Ok(Response::new(pb::MemberInfoReply {
            member_id: s.router_id,
            nameservice: String::new(),
            cluster_id: self.node.version.cluster_id.clone(),
            leader_id,
            leader_addr: self.node.addr_of(leader_id).unwrap_or_default(),
            term: s.term,
            role: raftfs_client::ROUTER_ROLE.to_string(),
            last_log_index: raft.last_log_index.unwrap_or(0),
            commit_index: raft.local_committed.as_ref().map_or(0, |l| l.index),
            applied_index: s.applied_index,
            members: Vec::new(),
            health: match self.node.safe_mode() {
                Some(why) => format!("UNHEALTHY: safe mode: {why}"),
                None => s.health,
            },
            snapshot_index: 0,
            reads_served: 0,
            purged_index: 0,
            cpu_time_us: raftfs_raft::cpu::process_cpu_time_us().unwrap_or(0),
            exec_mode: String::new(),
            namespace_id: 0,
            block_pool_id: String::new(),
            datanode_http: Vec::new(),
        }))
    }

    async fn admin(&self, _req: Request<pb::CallRequest>) -> Result<Response<pb::CallReply>, Status> {
        let e: Result<raftfs_proto::AdminResult, FsError> = Err(FsError::Unsupported(
            "a router does not administer nameservices: run haadmin/dfsadmin against the nameservice's \
             members (--fs raftfs://MEMBER,...), and routeradmin for the mount table"
                .into(),
        ));
        let result_bin = codec::encode(&e).map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::CallReply {
            result_bin,
            index: 0,
            block_tokens_bin: Vec::new(),
        }))
    }

    async fn read_index(&self, _req: Request<pb::ReadIndexRequest>) -> Result<Response<pb::ReadIndexReply>, Status> {
        Err(Status::permission_denied(
            "ReadIndex is for the members of a nameservice, not routers",
        ))
    }
}
