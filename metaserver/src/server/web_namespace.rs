//! [`MemberWebNamespace`]: a member's namespace as its WebHDFS endpoint
//! reaches it.
//!
//! Only the leader answers: another member answers `StandbyException`
//! (403), for reads too, as an HDFS standby NameNode does, so WebHDFS
//! clients configured with every member move on to the next (HdfsCLI does
//! on `StandbyException`). A call runs as the user the endpoint
//! authenticated (a delegation token is verified first), with the groups
//! this member resolves for that user, under this endpoint's own client id
//! with call ids counting up (each HTTP request is one call; a client that
//! sends a request again sends a new call, as WebHDFS has no call ids).
//! Calls are audited with `proto=webhdfs` and counted in the member's
//! metrics like gRPC calls.
//!
//! Data ops are redirected to a live, in-service DataNode that serves
//! HTTP: for OPEN and GETFILECHECKSUM one holding the first block wanted
//! (found by `getBlockLocations` as the caller, which refuses a missing or
//! unreadable file before any redirect and is audited as `open`), else the
//! next in turn. The DataNode reaches the nameservice through its voters'
//! addresses, as the caller: by `user.name` under simple authentication, by
//! the caller's own delegation token, or, for a caller a certificate
//! authenticated, by a delegation token issued for the redirect (as HDFS's
//! NameNode issues one per redirect on a secure cluster; it expires as any
//! token does).

use std::sync::Arc;

use raftfs_proto::{CallCtx, FsError, Op, OpResult};
use raftfs_web::webhdfs::{
    first_block_holders, CallFuture, DatanodeRedirect, DatanodeTurns, EndpointCalls, RedirectFuture, WebHdfsCaller,
    WebHdfsNamespace, WebHdfsOp,
};

use super::audit::AuthMethod;
use super::call_observation::CallObservation;
use super::member::Member;

pub struct MemberWebNamespace {
    member: Arc<Member>,
    calls: EndpointCalls,
    /// Where data ops go.
    turns: DatanodeTurns,
}

impl MemberWebNamespace {
    pub fn new(member: Arc<Member>) -> MemberWebNamespace {
        let calls = EndpointCalls::new(&format!("m{}", member.version.member_id));
        MemberWebNamespace {
            member,
            calls,
            turns: DatanodeTurns::default(),
        }
    }

    /// The replica holders of the block at `offset` of `path`, nearest first
    /// (empty for an empty file), read as `caller`.
    async fn holders(&self, caller: &WebHdfsCaller, path: &str, offset: u64) -> Result<Vec<String>, FsError> {
        let op = Op::GetBlockLocations {
            path: path.to_string(),
            offset,
            length: 1,
        };
        first_block_holders(self.call(caller, op).await?)
    }

    /// The delegation token (URL text) a DataNode acts as `caller` with:
    /// the caller's own, one issued now for a certificate's user, or none
    /// under simple authentication.
    async fn token_for(&self, caller: &WebHdfsCaller) -> Result<Option<String>, FsError> {
        if let Some(t) = &caller.delegation {
            return t.encode_url().map(Some);
        }
        if caller.certificate.is_none() {
            return Ok(None);
        }
        let op = Op::GetDelegationToken {
            renewer: caller.user.clone(),
            max_lifetime_ms: 0,
            renew_interval_ms: 0,
        };
        match self.call(caller, op).await? {
            OpResult::DelegationToken(t) => t.encode_url().map(Some),
            other => Err(FsError::Internal(format!("getDelegationToken answered {other:?}"))),
        }
    }
}

impl WebHdfsNamespace for MemberWebNamespace {
    fn call<'a>(&'a self, caller: &'a WebHdfsCaller, op: Op) -> CallFuture<'a> {
        Box::pin(async move {
            let m = &self.member;
            m.leader_or_hint()?;
            let method = match (&caller.delegation, &caller.certificate) {
                (Some(token), _) => {
                    let owner = m.verify_delegation_token(token)?.owner;
                    assert_eq!(owner, caller.user, "a token's caller is its owner");
                    AuthMethod::Token
                }
                (None, Some(_)) => AuthMethod::Certificate,
                (None, None) => AuthMethod::Simple,
            };
            let user = caller.user.clone();
            let groups = m.groups.groups_of_caller(&user);
            let audit = m
                .audit
                .entry(&user, method, caller.certificate.as_ref(), &caller.ip, &op)
                .map(|e| e.over_webhdfs());
            let ctx = CallCtx {
                client_id: self.calls.client_id().to_string(),
                call_id: self.calls.next_call_id(),
                user,
                groups,
                routed_by: 0,
            };
            let observation = CallObservation::start(m, audit, op.name());
            let result = m.call(ctx, op).await;
            observation.finish(&result);
            result
        })
    }

    fn redirect<'a>(&'a self, caller: &'a WebHdfsCaller, path: &'a str, op: &'a WebHdfsOp) -> RedirectFuture<'a> {
        Box::pin(async move {
            let m = &self.member;
            m.leader_or_hint()?;
            let holders = match op {
                WebHdfsOp::Open { offset, .. } => self.holders(caller, path, *offset).await?,
                WebHdfsOp::GetFileChecksum => self.holders(caller, path, 0).await?,
                _ => {
                    // No call verifies the caller's token here: check it
                    // before a DataNode is sent to act with it.
                    if let Some(token) = &caller.delegation {
                        m.verify_delegation_token(token)?;
                    }
                    Vec::new()
                }
            };
            let endpoints = m.blocks.http_endpoints();
            let chosen = self.turns.choose(&holders, &endpoints)?;
            let namenode: Vec<String> = m.voters().into_iter().filter_map(|id| m.addr_of(id)).collect();
            Ok(DatanodeRedirect {
                datanode: format!("{}://{}", m.security.server.http_scheme(), chosen.1),
                namenode: namenode.join(","),
                delegation: self.token_for(caller).await?,
            })
        })
    }
}
