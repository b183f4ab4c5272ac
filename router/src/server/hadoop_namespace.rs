//! [`RouterHadoopNamespace`]: the federated namespace as a router's Hadoop
//! IPC server (`raftfs router run --hadoop-rpc-addr`) reaches it, as RBF
//! routers serve ClientProtocol, so `hadoop fs hdfs://ROUTERS/…` sees one
//! file system over every nameservice.
//!
//! Each call is routed by the mount table as a gRPC call to this router is
//! ([`crate::proxy::RouterCalls`]): listings merge mount points with the
//! entries beneath, renames across nameservices are refused, read-only
//! mounts refuse writes, and the caller's client id and call id (derived
//! from Hadoop's, [`raftfs_hadoop::ids`]) go with the call, so the
//! nameservice's retry table answers a Hadoop client's retry through any
//! router. The caller is the user the connection names (SIMPLE; the
//! server refuses every connection under `--auth strong`); the nameservice
//! resolves its groups and checks permissions.
//!
//! Blocks: each nameservice has its own block pool, so an answer's blocks
//! carry the pool of the nameservice that gave it; the pipeline calls that
//! name only a block (`updateBlockForPipeline`, `updatePipeline`) go to the
//! nameservice whose pool the block's `poolId` names, as RBF routes them.
//! Where DataNodes serve Hadoop's data transfer is learned from the
//! nameservices' DataNode reports, kept for [`DATANODE_ENDPOINTS_TTL_MS`]
//! and asked again at once (at most every [`DATANODE_ENDPOINTS_RETRY_MS`])
//! when an answer names a DataNode not known yet.
//!
//! Cluster calls: `getDatanodeReport` asks every nameservice as the caller
//! (each checks the superuser privilege) and reports each DataNode once;
//! `getFsStats` sums the nameservices' block counts and takes the space of
//! the one that hears from the most DataNodes (every DataNode serves every
//! nameservice); `setSafeMode GET` is on when this router or any
//! nameservice is in safe mode. Entering or leaving a nameservice's safe
//! mode is its own members' business: refused here, as the router's gRPC
//! service refuses administration.
//!
//! Reads are always current (forwarded to each nameservice's leader), so
//! answers carry no `stateId` and `msync` has nothing to wait for. A router
//! in safe mode answers `STANDBY` to `getHAServiceState` and refuses calls
//! with a retryable `SafeModeException`, so Hadoop's failover proxy moves
//! on to another router.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use raftfs_hadoop::namespace::{AdminFuture, CallFuture, EndpointsFuture, PasswordFuture, SyncFuture};
use raftfs_hadoop::{Answered, DatanodeEndpoints, Endpoints, HaState, HadoopNamespace, IpcCaller};
use raftfs_proto::{pb, AdminOp, AdminResult, CallCtx, DatanodeInfo, FsError, FsStats, SafeModeAction, SafeModeStatus};

use super::nameservice_pages::ask_every_nameservice;
use super::node::RouterNode;

/// How long the DataNodes' Hadoop endpoints are used before they are asked for again.
pub const DATANODE_ENDPOINTS_TTL_MS: u64 = 3_000;
/// Least time between two askings caused by a DataNode not known yet.
pub const DATANODE_ENDPOINTS_RETRY_MS: u64 = 200;

/// The endpoints learned, shared by the callers that use them.
type EndpointMap = Arc<Endpoints>;

pub struct RouterHadoopNamespace {
    node: Arc<RouterNode>,
    /// The endpoints last learned, and when.
    endpoints: Mutex<Option<(Instant, EndpointMap)>>,
    /// Held while the endpoints are asked for, so callers share one asking.
    asking: tokio::sync::Mutex<()>,
}

/// The context a call is forwarded with: Hadoop's ids, the caller's user
/// (groups are resolved by the nameservice).
fn forwarded_ctx(caller: &IpcCaller, ids: CallCtx) -> pb::CallContext {
    pb::CallContext {
        client_id: ids.client_id,
        call_id: ids.call_id,
        user: caller.user.clone(),
        groups: Vec::new(),
        delegation_token: Vec::new(),
        federation_version: 0,
    }
}

impl RouterHadoopNamespace {
    pub fn new(node: Arc<RouterNode>) -> RouterHadoopNamespace {
        RouterHadoopNamespace {
            node,
            endpoints: Mutex::new(None),
            asking: tokio::sync::Mutex::new(()),
        }
    }

    fn refuse_in_safe_mode(&self) -> Result<(), FsError> {
        match self.node.safe_mode() {
            Some(why) => Err(FsError::SafeMode(why)),
            None => Ok(()),
        }
    }

    /// The DataNodes' Hadoop endpoints as the nameservices report them.
    async fn ask_endpoints(&self) -> EndpointMap {
        let mut found = Endpoints::new();
        for (_, answer) in ask_every_nameservice(&self.node, None, AdminOp::DatanodeReport).await.1 {
            let Ok(AdminResult::Datanodes(nodes)) = answer else {
                continue;
            };
            for n in nodes.into_iter().filter(|n| !n.hadoop_xfer_addr.is_empty()) {
                found.entry(n.id.uuid.clone()).or_insert(DatanodeEndpoints {
                    xfer_addr: n.hadoop_xfer_addr,
                    http_addr: n.http_addr,
                    storage_id: n.storage_id,
                });
            }
        }
        Arc::new(found)
    }

    /// The endpoints known, if learned within `max_age`.
    fn cached(&self, max_age: Duration) -> Option<EndpointMap> {
        let cached = self.endpoints.lock();
        cached
            .as_ref()
            .filter(|(at, _)| at.elapsed() < max_age)
            .map(|(_, map)| map.clone())
    }

    async fn endpoints_of(&self, uuids: &[String]) -> EndpointMap {
        let ttl = Duration::from_millis(DATANODE_ENDPOINTS_TTL_MS);
        let retry = Duration::from_millis(DATANODE_ENDPOINTS_RETRY_MS);
        let knows_all = |m: &EndpointMap| uuids.iter().all(|u| m.contains_key(u));
        match self.cached(ttl) {
            Some(m) if knows_all(&m) => return m,
            // Asked just now: a DataNode missing still is not serving Hadoop's transfer.
            Some(m) if self.cached(retry).is_some() => return m,
            _ => {}
        }
        let _asking = self.asking.lock().await;
        // Another caller may have asked while this one waited.
        if let Some(m) = self.cached(retry) {
            return m;
        }
        let m = self.ask_endpoints().await;
        *self.endpoints.lock() = Some((Instant::now(), m.clone()));
        m
    }

    /// Every DataNode once, as the nameservices report it to the caller:
    /// its blocks and block-pool use summed over the pools; its state
    /// from the nameservice that heard from it last.
    async fn datanode_report(&self, ctx: &pb::CallContext) -> Result<AdminResult, FsError> {
        let mut merged: Vec<DatanodeInfo> = Vec::new();
        let mut refused = None;
        for (_, answer) in ask_every_nameservice(&self.node, Some(ctx), AdminOp::DatanodeReport)
            .await
            .1
        {
            let nodes = match answer {
                Ok(AdminResult::Datanodes(nodes)) => nodes,
                Ok(other) => return Err(FsError::Internal(format!("a DataNode report answered {other:?}"))),
                // The caller may not: say so, as one NameNode would.
                Err(e @ FsError::AccessControl(_)) => return Err(e),
                Err(e) => {
                    refused = Some(e);
                    continue;
                }
            };
            for n in nodes {
                match merged.iter_mut().find(|m| m.id.uuid == n.id.uuid) {
                    Some(m) => {
                        let (blocks, pool_used) =
                            (m.blocks + n.blocks, m.block_pool_used_bytes + n.block_pool_used_bytes);
                        if n.last_heartbeat_ago_ms < m.last_heartbeat_ago_ms {
                            *m = n;
                        }
                        m.blocks = blocks;
                        m.block_pool_used_bytes = pool_used;
                    }
                    None => merged.push(n),
                }
            }
        }
        match refused {
            Some(e) if merged.is_empty() => Err(e),
            _ => Ok(AdminResult::Datanodes(merged)),
        }
    }

    async fn fs_stats(&self, ctx: &pb::CallContext) -> Result<AdminResult, FsError> {
        let mut total = FsStats::default();
        let mut answered = 0;
        let mut last_err = None;
        for (_, answer) in ask_every_nameservice(&self.node, Some(ctx), AdminOp::FsStats).await.1 {
            match answer {
                Ok(AdminResult::FsStats(s)) => {
                    answered += 1;
                    if s.capacity_bytes > total.capacity_bytes {
                        total.capacity_bytes = s.capacity_bytes;
                        total.used_bytes = s.used_bytes;
                        total.remaining_bytes = s.remaining_bytes;
                    }
                    total.under_replicated_blocks += s.under_replicated_blocks;
                    total.corrupt_blocks += s.corrupt_blocks;
                    total.missing_blocks += s.missing_blocks;
                    total.pending_deletion_blocks += s.pending_deletion_blocks;
                }
                Ok(other) => return Err(FsError::Internal(format!("getFsStats answered {other:?}"))),
                Err(e) => last_err = Some(e),
            }
        }
        match last_err {
            Some(e) if answered == 0 => Err(e),
            _ => Ok(AdminResult::FsStats(total)),
        }
    }

    async fn safe_mode_status(&self, ctx: &pb::CallContext) -> Result<AdminResult, FsError> {
        let mut status = SafeModeStatus {
            on: false,
            manual: false,
            safe_blocks: 0,
            total_blocks: 0,
            message: String::new(),
        };
        let mut why: Vec<String> = self.node.safe_mode().into_iter().collect();
        for (r, answer) in ask_every_nameservice(&self.node, Some(ctx), AdminOp::SafeMode(SafeModeAction::Get))
            .await
            .1
        {
            match answer? {
                AdminResult::SafeMode(s) => {
                    status.safe_blocks += s.safe_blocks;
                    status.total_blocks += s.total_blocks;
                    status.manual |= s.manual;
                    if s.on {
                        why.push(format!("nameservice {}: {}", r.name, s.message));
                    }
                }
                other => return Err(FsError::Internal(format!("setSafeMode answered {other:?}"))),
            }
        }
        status.on = !why.is_empty();
        status.message = if status.on {
            why.join("; ")
        } else {
            "Safe mode is OFF in this router and every nameservice.".into()
        };
        Ok(AdminResult::SafeMode(status))
    }
}

impl HadoopNamespace for RouterHadoopNamespace {
    fn call<'a>(
        &'a self,
        caller: &'a IpcCaller,
        ids: CallCtx,
        op: raftfs_proto::Op,
        _seen: Option<u64>,
    ) -> CallFuture<'a> {
        Box::pin(async move {
            self.refuse_in_safe_mode()?;
            let (r, by) = self.node.calls.call_answered(forwarded_ctx(caller, ids), &op).await;
            let fed = self.node.calls.table().current();
            let pool = by.and_then(|ns| fed.nameservice(&ns).map(|r| r.block_pool_id.clone()));
            Ok(Answered {
                result: r?,
                block_pool_id: pool.unwrap_or_default(),
            })
        })
    }

    fn call_in_pool<'a>(
        &'a self,
        caller: &'a IpcCaller,
        ids: CallCtx,
        pool: &'a str,
        op: raftfs_proto::Op,
    ) -> CallFuture<'a> {
        Box::pin(async move {
            self.refuse_in_safe_mode()?;
            let fed = self.node.calls.table().current();
            let Some(ns) = fed.nameservices().find(|r| r.block_pool_id == pool) else {
                return Err(FsError::InvalidArgument(format!(
                    "block pool {pool} belongs to no nameservice of this federation"
                )));
            };
            let result = self
                .node
                .calls
                .call_nameservice(forwarded_ctx(caller, ids), &ns.name, &op)
                .await?;
            Ok(Answered {
                result,
                block_pool_id: pool.to_string(),
            })
        })
    }

    fn sync_state(&self) -> SyncFuture<'_> {
        // Every call is forwarded to a nameservice's leader: nothing to wait for.
        Box::pin(async move { self.refuse_in_safe_mode() })
    }

    fn state_id(&self) -> Option<u64> {
        None
    }

    fn admin<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: AdminOp) -> AdminFuture<'a> {
        Box::pin(async move {
            let ctx = forwarded_ctx(caller, ids);
            match op {
                AdminOp::SafeMode(SafeModeAction::Get) => self.safe_mode_status(&ctx).await,
                AdminOp::DatanodeReport => {
                    self.refuse_in_safe_mode()?;
                    self.datanode_report(&ctx).await
                }
                AdminOp::FsStats => {
                    self.refuse_in_safe_mode()?;
                    self.fs_stats(&ctx).await
                }
                other => Err(FsError::Unsupported(format!(
                    "a router does not administer nameservices ({other:?}): run it against the \
                     nameservice's own NameNodes (its members)"
                ))),
            }
        })
    }

    fn ha_state(&self) -> HaState {
        match self.node.safe_mode() {
            None => HaState::Active,
            Some(_) => HaState::Standby,
        }
    }

    fn token_password<'a>(&'a self, id: &'a raftfs_proto::DelegationTokenIdentifier) -> PasswordFuture<'a> {
        // The routers' own tokens: a nameservice's would not route.
        Box::pin(self.node.router_token_password(id))
    }

    fn datanode_endpoints<'a>(&'a self, uuids: Vec<String>) -> EndpointsFuture<'a> {
        Box::pin(async move {
            let known = self.endpoints_of(&uuids).await;
            uuids
                .into_iter()
                .filter_map(|u| known.get(&u).cloned().map(|at| (u, at)))
                .collect()
        })
    }
}
