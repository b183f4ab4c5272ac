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
//! delegation token the request presented is checked here when the
//! routers issued it (the call then acts as its owner), and goes along
//! with each call for the nameservice that issued it otherwise.
//!
//! Data ops are redirected to a DataNode, which runs them against the
//! routers (`namenoderpcaddress` names this router group's voters), so the
//! mount table's rules hold for the bytes too, as RBF does. For OPEN and
//! GETFILECHECKSUM the file's block locations are asked for first, as the
//! caller (a missing or unreadable file is refused before any redirect),
//! and a holder of the wanted block is preferred. The DataNodes that serve
//! HTTP are learned from the nameservices' members (`MemberInfo`), at most
//! every [`DATANODE_LIST_TTL_MS`]. Caveats: the DataNode must follow the
//! routers (`raftfs datanode --router`, as `raftfs dev` starts them), or
//! it refuses a file system it does not serve. Under strong
//! authentication a caller a certificate authenticated is given a token of
//! the routers for the DataNode to act with (a Raft write per redirect, as
//! HDFS's NameNode issues a token per redirect); a caller with
//! `delegation=` passes its own on.

use std::sync::Arc;
use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use parking_lot::Mutex;
use raftfs_proto::{codec, pb, FsError, Op, OpResult};
use raftfs_web::webhdfs::{
    first_block_holders, CallFuture, DatanodeHttp, DatanodeRedirect, DatanodeTurns, EndpointCalls, RedirectFuture,
    WebHdfsCaller, WebHdfsNamespace, WebHdfsOp,
};

use super::nameservice_check::member_info;
use super::node::RouterNode;
use super::token_issuer::{certificate_needed, is_router_token_op};

/// How long a list of DataNodes serving HTTP is used before it is asked for again.
pub const DATANODE_LIST_TTL_MS: u64 = 3_000;

/// The DataNodes serving HTTP, as last learned.
type DatanodeList = Arc<Vec<DatanodeHttp>>;

pub struct RouterWebNamespace {
    node: Arc<RouterNode>,
    calls: EndpointCalls,
    /// Where data ops go.
    turns: DatanodeTurns,
    /// `(uuid, HTTP HOST:PORT)` of the DataNodes, and when they were learned.
    datanodes: Mutex<Option<(Instant, DatanodeList)>>,
}

impl RouterWebNamespace {
    pub fn new(node: Arc<RouterNode>) -> RouterWebNamespace {
        let calls = EndpointCalls::new(&format!("r{}", node.version.member_id));
        RouterWebNamespace {
            node,
            calls,
            turns: DatanodeTurns::default(),
            datanodes: Mutex::new(None),
        }
    }

    fn ctx(&self, caller: &WebHdfsCaller) -> Result<pb::CallContext, FsError> {
        Ok(pb::CallContext {
            client_id: self.calls.client_id().to_string(),
            call_id: self.calls.next_call_id(),
            user: caller.user.clone(),
            groups: Vec::new(), // nameservices resolve groups themselves
            delegation_token: match &caller.delegation {
                Some(t) => codec::encode(t)?,
                None => Vec::new(),
            },
            federation_version: 0,
        })
    }

    /// The DataNodes serving HTTP, as the first member of each nameservice
    /// that answers knows them (cached for [`DATANODE_LIST_TTL_MS`]).
    async fn datanode_endpoints(&self) -> DatanodeList {
        if let Some((at, list)) = &*self.datanodes.lock() {
            if at.elapsed() < Duration::from_millis(DATANODE_LIST_TTL_MS) {
                return list.clone();
            }
        }
        let fed = self.node.calls.table().current();
        let mut found: Vec<DatanodeHttp> = Vec::new();
        for record in fed.nameservices() {
            for addr in record.members.values() {
                if let Ok(info) = member_info(&self.node.security.dialer, addr).await {
                    for d in info.datanode_http {
                        if !found.iter().any(|(u, _)| *u == d.uuid) {
                            found.push((d.uuid, d.addr));
                        }
                    }
                    break;
                }
            }
        }
        let list = Arc::new(found);
        *self.datanodes.lock() = Some((Instant::now(), list.clone()));
        list
    }

    /// HOST:PORT of every voter of the routers' group.
    fn router_addrs(&self) -> Vec<String> {
        let voters: Vec<u64> = (self.node.raft.metrics().borrow_watched())
            .membership_config
            .membership()
            .voter_ids()
            .collect();
        voters.into_iter().filter_map(|id| self.node.addr_of(id)).collect()
    }
}

impl WebHdfsNamespace for RouterWebNamespace {
    fn call<'a>(&'a self, caller: &'a WebHdfsCaller, op: Op) -> CallFuture<'a> {
        Box::pin(async move {
            if let Some(why) = self.node.safe_mode() {
                return Err(FsError::SafeMode(why));
            }
            let mut ctx = self.ctx(caller)?;
            self.node.resolve_router_token(&mut ctx).await?;
            let by_cert = caller.certificate.is_some();
            if is_router_token_op(&op) {
                return self.node.router_token_op(&ctx.user, by_cert, &op).await;
            }
            // A nameservice believes this router that the caller may renew.
            if matches!(op, Op::RenewDelegationToken { .. }) && !by_cert {
                return Err(certificate_needed());
            }
            self.node.calls.call(ctx, &op).await
        })
    }

    fn redirect<'a>(&'a self, caller: &'a WebHdfsCaller, path: &'a str, op: &'a WebHdfsOp) -> RedirectFuture<'a> {
        Box::pin(async move {
            // A caller a certificate authenticated gets a token of the
            // routers for the DataNode to act with, as HDFS's NameNode
            // issues one for each redirect under security.
            let issued = match (&caller.certificate, &caller.delegation) {
                (Some(_), None) => {
                    let get = Op::GetDelegationToken {
                        renewer: String::new(),
                        max_lifetime_ms: 0,
                        renew_interval_ms: 0,
                    };
                    match self.node.router_token_op(&caller.user, true, &get).await? {
                        OpResult::DelegationToken(t) => Some(t),
                        other => return Err(FsError::Internal(format!("getDelegationToken answered {other:?}"))),
                    }
                }
                _ => None,
            };
            let offset = match op {
                WebHdfsOp::Open { offset, .. } => Some(*offset),
                WebHdfsOp::GetFileChecksum => Some(0),
                _ => None,
            };
            let holders = match offset {
                Some(offset) => {
                    let located = Op::GetBlockLocations {
                        path: path.to_string(),
                        offset,
                        length: 1,
                    };
                    first_block_holders(self.call(caller, located).await?)?
                }
                None => Vec::new(),
            };
            let endpoints = self.datanode_endpoints().await;
            let chosen = self.turns.choose(&holders, &endpoints)?;
            Ok(DatanodeRedirect {
                datanode: format!("{}://{}", self.node.security.server.http_scheme(), chosen.1),
                namenode: self.router_addrs().join(","),
                delegation: issued
                    .as_ref()
                    .or(caller.delegation.as_ref())
                    .map(|t| t.encode_url())
                    .transpose()?,
            })
        })
    }
}
