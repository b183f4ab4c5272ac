//! [`RouterWebNamespace`]: the federated namespace as a router's WebHDFS
//! endpoint reaches it (RBF routers serve WebHDFS for the whole namespace).
//!
//! Each request is routed by the mount table as a gRPC call to this router
//! is ([`crate::proxy::RouterCalls`]): listings merge mount points with the
//! entries beneath, renames across nameservices are refused, read-only
//! mounts refuse writes. The call is forwarded as the user the endpoint
//! authenticated, under this endpoint's own client id with call ids
//! counting up; the nameservice resolves the user's groups and checks
//! permissions. A router in safe mode refuses with `SafeModeException`.
//! Any router answers (they are not leader-bound as members are). A
//! delegation token the request presented goes along with each call, and
//! the nameservice verifies it.
//!
//! Caveat: the data ops (OPEN, CREATE, APPEND, GETFILECHECKSUM) answer
//! `UnsupportedOperationException` here for now: a router does not yet
//! know DataNodes' HTTP addresses to redirect them to; a member's endpoint
//! serves them for its nameservice.

use std::sync::Arc;

use raftfs_proto::{codec, pb, FsError, Op};
use raftfs_web::webhdfs::{CallFuture, EndpointCalls, RedirectFuture, WebHdfsCaller, WebHdfsNamespace, WebHdfsOp};

use super::node::RouterNode;

pub struct RouterWebNamespace {
    node: Arc<RouterNode>,
    calls: EndpointCalls,
}

impl RouterWebNamespace {
    pub fn new(node: Arc<RouterNode>) -> RouterWebNamespace {
        let calls = EndpointCalls::new(&format!("r{}", node.version.member_id));
        RouterWebNamespace { node, calls }
    }
}

impl WebHdfsNamespace for RouterWebNamespace {
    fn call<'a>(&'a self, caller: &'a WebHdfsCaller, op: Op) -> CallFuture<'a> {
        Box::pin(async move {
            if let Some(why) = self.node.safe_mode() {
                return Err(FsError::SafeMode(why));
            }
            let ctx = pb::CallContext {
                client_id: self.calls.client_id().to_string(),
                call_id: self.calls.next_call_id(),
                user: caller.user.clone(),
                groups: Vec::new(), // nameservices resolve groups themselves
                delegation_token: match &caller.delegation {
                    Some(t) => codec::encode(t)?,
                    None => Vec::new(),
                },
                federation_version: 0,
            };
            self.node.calls.call(ctx, &op).await
        })
    }

    fn redirect<'a>(&'a self, _caller: &'a WebHdfsCaller, _path: &'a str, op: &'a WebHdfsOp) -> RedirectFuture<'a> {
        Box::pin(async move {
            Err(FsError::Unsupported(format!(
                "a router does not redirect {op:?} to DataNodes yet: send it to the WebHDFS endpoint \
                 of the owning nameservice's leader"
            )))
        })
    }
}
