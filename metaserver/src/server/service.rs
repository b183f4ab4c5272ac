//! The client-facing `Namespace` gRPC service of a member.
//!
//! Every failure — a malformed payload, an invalid path, a follower asked
//! to write — is answered as a typed [`FsError`] inside the reply (never a
//! panic, never a bare transport error), so the SDK can decide to retry,
//! follow a leader hint, or report it.

use std::sync::Arc;

use raftfs_raft::call_stream::serve_call_stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use raftfs_proto::{codec, pb, AdminOp, AdminResult, CallCtx, DelegationToken, FsError, Op, OpResult};

use raftfs_trust::{PeerIdentity, PeerRole};

use super::audit::AuthMethod;
use super::call_observation::CallObservation;
use super::member::{Member, ReadMode};

pub struct NamespaceService {
    pub member: Arc<Member>,
}

/// Who a connection's certificate says the caller is (`None`: no
/// certificate, or a plaintext member).
type Peer = Option<Arc<PeerIdentity>>;

/// The caller of a request: its client id and call id as the request names
/// them; its user as the member's client authentication decides it
/// ([`raftfs_trust::ClientAuth`]: the name the request carries under `simple`, the user
/// certificate's under `strong`, and never another than a certificate's),
/// or, on a connection without a user certificate, the owner of the
/// delegation token the call presents (checked against this member's
/// replicated token table); its groups as this member resolves them
/// ([`super::groups::GroupMapping`]); the groups the request claims are ignored.
fn ctx_from(pb: Option<pb::CallContext>, member: &Member, peer: &Peer) -> Result<(CallCtx, AuthMethod), FsError> {
    let c = pb.ok_or_else(|| FsError::InvalidArgument("missing call context".into()))?;
    let by_cert = peer.as_deref().is_some_and(|p| p.role == PeerRole::User);
    let (user, method) = if !by_cert && !c.delegation_token.is_empty() {
        let token: DelegationToken = codec::decode(&c.delegation_token, "delegation token")?;
        let owner = member.verify_delegation_token(&token)?.owner;
        if !c.user.is_empty() && c.user != owner {
            return Err(FsError::AccessControl(format!(
                "authenticated as {owner} by delegation token, but the call claims user {:?}",
                c.user
            )));
        }
        (owner, AuthMethod::Token)
    } else {
        let user = member
            .client_auth
            .user(&c.user, peer.as_deref())
            .map_err(FsError::AccessControl)?;
        (
            user,
            if by_cert {
                AuthMethod::Certificate
            } else {
                AuthMethod::Simple
            },
        )
    };
    let groups = member.groups.groups_of_caller(&user);
    Ok((
        CallCtx {
            client_id: c.client_id,
            call_id: c.call_id,
            user,
            groups,
            routed_by: c.federation_version,
        },
        method,
    ))
}

/// Refuse what a client may not ask for: the member's own entries, and
/// delegation tokens (issued and renewed only for a caller a certificate
/// authenticated, as HDFS issues them only to Kerberos-authenticated
/// callers; a router forwards a renewal only for such a caller, and is
/// believed, `by_router`).
fn check_client_op(op: &Op, method: AuthMethod, by_router: bool) -> Result<(), FsError> {
    match op {
        Op::CommitBlockSynchronization { .. } => Err(FsError::InvalidArgument(
            "commitBlockSynchronization comes from DataNodes, not clients".into(),
        )),
        Op::AddDelegationKey { .. } | Op::ExpireDelegationTokens { .. } => Err(FsError::InvalidArgument(format!(
            "{} comes from the leader itself, not from clients",
            op.name()
        ))),
        Op::GetDelegationToken { .. } | Op::RenewDelegationToken { .. }
            if method != AuthMethod::Certificate && !by_router =>
        {
            Err(FsError::AccessControl(format!(
                "Delegation Token can be issued or renewed only with a user certificate (RAFTFS_CREDENTIALS); \
                 this call was authenticated by {}",
                match method {
                    AuthMethod::Token => "a delegation token",
                    _ => "the user name it carries (simple)",
                }
            )))
        }
        _ => Ok(()),
    }
}

/// Run one client call and encode its reply (a typed error inside the
/// reply for anything wrong with the request).
async fn handle_call(member: &Member, req: Option<pb::CallRequest>, host: &str, peer: &Peer) -> pb::CallReply {
    let (result, index): (Result<OpResult, FsError>, u64) = async {
        let req = req.ok_or_else(|| FsError::InvalidArgument("missing call".into()))?;
        let routed_by = req.ctx.as_ref().map_or(0, |c| c.federation_version);
        let (ctx, method) = ctx_from(req.ctx, member, peer)?;
        let op: Op = codec::decode(&req.op_bin, "op")?;
        let mode = ReadMode::from_wire(req.read_mode)?;
        let by_router = peer.as_deref().is_some_and(|p| p.role == PeerRole::Router);
        check_client_op(&op, method, by_router)?;
        member.check_routed(routed_by, &op)?;
        let audit = member.audit.entry(&ctx.user, method, peer.as_deref(), host, &op);
        let observation = CallObservation::start(member, audit, op.name());
        let (result, index) = member.call_from(ctx, op, mode, req.min_index, host).await;
        observation.finish(&result);
        Ok((result, index))
    }
    .await
    .unwrap_or_else(|e| (Err(e), 0));
    codec::call_reply(&result, index)
}

#[tonic::async_trait]
impl pb::namespace_server::Namespace for NamespaceService {
    async fn call(&self, req: Request<pb::CallRequest>) -> Result<Response<pb::CallReply>, Status> {
        let host = req.remote_addr().map(|a| a.ip().to_string()).unwrap_or_default();
        let peer = self.member.security.server.peer(&req)?.map(Arc::new);
        Ok(Response::new(
            handle_call(&self.member, Some(req.into_inner()), &host, &peer).await,
        ))
    }

    type CallStreamStream = ReceiverStream<Result<pb::TaggedReply, Status>>;

    async fn call_stream(
        &self,
        req: Request<Streaming<pb::TaggedCall>>,
    ) -> Result<Response<Self::CallStreamStream>, Status> {
        let host: Arc<str> = req.remote_addr().map(|a| a.ip().to_string()).unwrap_or_default().into();
        let peer = self.member.security.server.peer(&req)?.map(Arc::new);
        let member = self.member.clone();
        let log_host = host.clone();
        Ok(Response::new(serve_call_stream(
            req.into_inner(),
            log_host,
            move |call| {
                let (member, host, peer) = (member.clone(), host.clone(), peer.clone());
                async move { handle_call(&member, call, &host, &peer).await }
            },
        )))
    }

    async fn read_index(&self, req: Request<pb::ReadIndexRequest>) -> Result<Response<pb::ReadIndexReply>, Status> {
        self.member
            .security
            .server
            .require(&req, PeerRole::Member, "ReadIndex")?;
        let r = self.member.read_index().await;
        let result_bin = codec::encode(&r).map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::ReadIndexReply { result_bin }))
    }

    async fn admin(&self, req: Request<pb::CallRequest>) -> Result<Response<pb::CallReply>, Status> {
        // Operators administer; a node's certificate (a DataNode's, say)
        // grants no say over membership, leadership or safe mode. A
        // router may ask for the reports its status pages show (for the
        // superuser it names, as it names users in calls).
        let peer = self.member.security.server.peer(&req)?;
        let op: Result<AdminOp, FsError> = codec::decode(&req.get_ref().op_bin, "admin op");
        if let Some(node) = &peer {
            let report = op.as_ref().is_ok_and(AdminOp::is_report);
            if node.role != PeerRole::User && !(node.role == PeerRole::Router && report) {
                return Err(Status::permission_denied(format!(
                    "administration is for operators; the caller is {node}"
                )));
            }
        }
        let peer = peer.map(Arc::new);
        let req = req.into_inner();
        let result: Result<AdminResult, FsError> = async {
            let (ctx, _) = ctx_from(req.ctx, &self.member, &peer)?;
            self.member.admin(&ctx, op?).await
        }
        .await;
        let result_bin = codec::encode(&result)
            .or_else(|e| codec::encode(&Err::<AdminResult, FsError>(e)))
            .map_err(|e| Status::internal(e.to_string()))?;
        Ok(Response::new(pb::CallReply {
            result_bin,
            index: 0,
            block_tokens_bin: Vec::new(),
        }))
    }

    async fn member_info(&self, _req: Request<pb::MemberInfoRequest>) -> Result<Response<pb::MemberInfoReply>, Status> {
        Ok(Response::new(self.member.info()))
    }
}
