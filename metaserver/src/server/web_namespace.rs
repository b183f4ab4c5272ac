//! [`MemberWebNamespace`]: a member's namespace as its WebHDFS endpoint
//! reaches it.
//!
//! Only the leader answers: another member answers `StandbyException`
//! (403), for reads too, as an HDFS standby NameNode does, so WebHDFS
//! clients configured with every member move on to the next (HdfsCLI does
//! on `StandbyException`). A call runs as the user the endpoint
//! authenticated, with the groups this member resolves for that user,
//! under this endpoint's own client id with call ids counting up (each
//! HTTP request is one call; a client that sends a request again sends a
//! new call, as WebHDFS has no call ids). Calls are audited with
//! `proto=webhdfs` and counted in the member's metrics like gRPC calls.

use std::sync::Arc;

use raftfs_proto::{CallCtx, Op};
use raftfs_web::webhdfs::{CallFuture, EndpointCalls, WebHdfsCaller, WebHdfsNamespace};

use super::audit::AuthMethod;
use super::member::Member;
use super::service::observed;

pub struct MemberWebNamespace {
    member: Arc<Member>,
    calls: EndpointCalls,
}

impl MemberWebNamespace {
    pub fn new(member: Arc<Member>) -> MemberWebNamespace {
        let calls = EndpointCalls::new(&format!("m{}", member.version.member_id));
        MemberWebNamespace { member, calls }
    }
}

impl WebHdfsNamespace for MemberWebNamespace {
    fn call<'a>(&'a self, caller: &'a WebHdfsCaller, op: Op) -> CallFuture<'a> {
        Box::pin(async move {
            let m = &self.member;
            m.leader_or_hint()?;
            let user = caller.user.clone();
            let groups = m.groups.groups_of_caller(&user);
            let method = if caller.certificate.is_some() {
                AuthMethod::Certificate
            } else {
                AuthMethod::Simple
            };
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
            let name = op.name();
            observed(m, audit, name, async { (m.call(ctx, op).await, ()) }).await.0
        })
    }
}
