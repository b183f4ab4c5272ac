//! A member's HTTP pages (`--http-addr`), as a NameNode's HTTP server has
//! them: `/metrics` (Prometheus), `/jmx` (Hadoop's beans), WebHDFS
//! (`/webhdfs/v1`, [`super::web_namespace`]) and the status pages and
//! file browser ([`super::status_pages`]).
//!
//! Who may read them is [`raftfs_web::HttpCaller::may_read_instrumentation`]
//! under the member's `--auth`. Each page reads the member's state when it
//! is asked for; nothing here is on a client call's path.
//!
//! The beans are the ones HDFS monitoring reads, with the attributes that
//! map onto raftfs (others are left out rather than made up):
//! `NameNodeInfo` (capacity, safe mode, live/dead/decommissioning nodes as
//! JSON strings, ClusterId, BlockPoolId, blocks), `FSNamesystem` (capacity,
//! block counts, DataNode counts, `tag.HAState`) and `NameNodeStatus`
//! (`State`: `active` on the leader, `standby` on the others, which is what
//! failover scripts poll). Caveat: no file count (`FilesTotal`) yet: the
//! store keeps no running total of inodes.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Query, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use raftfs_proto::{AdminState, DatanodeInfo};
use raftfs_web::jmx::{jmx_page, Bean, JmxQuery};
use raftfs_web::{axum, metrics_page, HttpCaller};
use serde_json::json;

use super::member::Member;
use super::member_metrics::Capacity;
use super::status_pages::status_routes;
use super::web_namespace::MemberWebNamespace;
use raftfs_web::webhdfs::webhdfs_routes;

/// The member's HTTP pages.
pub fn http_pages(member: Arc<Member>) -> Router {
    let webhdfs = webhdfs_routes(Arc::new(MemberWebNamespace::new(member.clone())), member.client_auth);
    Router::new()
        .route("/metrics", get(metrics))
        .route("/jmx", get(jmx))
        .with_state(member.clone())
        .merge(webhdfs)
        .merge(status_routes(member))
}

async fn metrics(State(m): State<Arc<Member>>, Extension(caller): Extension<HttpCaller>) -> Response {
    if let Err(e) = caller.may_read_instrumentation(m.client_auth) {
        return e.into_response();
    }
    refresh(&m);
    metrics_page(m.metrics.registry())
}

async fn jmx(
    State(m): State<Arc<Member>>,
    Extension(caller): Extension<HttpCaller>,
    query: Result<Query<JmxQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if let Err(e) = caller.may_read_instrumentation(m.client_auth) {
        return e.into_response();
    }
    let query = match query {
        Ok(Query(q)) => q,
        Err(e) => return raftfs_web::RemoteException::illegal_argument(e.body_text()).into_response(),
    };
    jmx_page(&beans(&m), &query)
}

/// Bring every gauge and count kept elsewhere up to date.
fn refresh(m: &Member) {
    let raft = m.raft.metrics().borrow_watched().clone();
    let snapshot_age = m.snapshots().latest_age().ok().flatten().map(|d| d.as_secs());
    m.metrics.raft.refresh(&raft, snapshot_age);
    m.metrics
        .refresh_counts(m.data.writes.stats(), m.reads_served(), m.health().is_healthy());
    let nodes = m.blocks.datanode_report(Instant::now());
    m.metrics
        .refresh_blocks(&m.blocks.block_gauges(), m.blocks.in_safemode(), &nodes);
}

/// HDFS's words for a DataNode's admin state in `NameNodeInfo`.
fn admin_state(a: AdminState) -> &'static str {
    match a {
        AdminState::Normal => "In Service",
        AdminState::DecommissionInProgress => "Decommission In Progress",
        AdminState::Decommissioned => "Decommissioned",
    }
}

fn node_name(n: &DatanodeInfo) -> String {
    let port = n.id.addr.rsplit_once(':').map_or("", |(_, p)| p);
    format!("{}:{port}", n.id.hostname)
}

/// The beans, as they are now.
pub fn beans(m: &Member) -> Vec<Bean> {
    let raft = m.raft.metrics().borrow_watched().clone();
    let ha_state = if raft.state == ServerState::Leader {
        "active"
    } else {
        "standby"
    };
    let g = m.blocks.block_gauges();
    let safemode = m.blocks.safemode_status();
    let nodes = m.blocks.datanode_report(Instant::now());
    let live: Vec<&DatanodeInfo> = nodes.iter().filter(|n| n.live).collect();
    let Capacity {
        total,
        used,
        block_pool_used: pool_used,
        remaining: free,
    } = Capacity::of_live(&nodes);
    let non_dfs = total.saturating_sub(used).saturating_sub(free);
    let percent = |x: u64| {
        if total == 0 {
            0.0
        } else {
            x as f64 * 100.0 / total as f64
        }
    };
    let live_nodes: serde_json::Map<String, serde_json::Value> = live
        .iter()
        .map(|n| {
            (
                node_name(n),
                json!({
                    "xferaddr": n.id.addr,
                    "lastContact": n.last_heartbeat_ago_ms / 1000,
                    "usedSpace": n.dfs_used_bytes,
                    "adminState": admin_state(n.admin_state),
                    "capacity": n.capacity_bytes,
                    "remaining": n.remaining_bytes,
                    "numBlocks": n.blocks,
                    "blockPoolUsed": n.block_pool_used_bytes,
                    "volfails": n.failed_volumes,
                    "xceiverCount": n.xceivers,
                }),
            )
        })
        .collect();
    let dead_nodes: serde_json::Map<String, serde_json::Value> = nodes
        .iter()
        .filter(|n| !n.live)
        .map(|n| {
            (
                node_name(n),
                json!({
                    "lastContact": n.last_heartbeat_ago_ms / 1000,
                    "decommissioned": n.admin_state == AdminState::Decommissioned,
                    "adminState": admin_state(n.admin_state),
                    "xferaddr": n.id.addr,
                }),
            )
        })
        .collect();
    let decom_nodes: serde_json::Map<String, serde_json::Value> = live
        .iter()
        .filter(|n| n.admin_state == AdminState::DecommissionInProgress)
        .map(|n| (node_name(n), json!({ "xferaddr": n.id.addr })))
        .collect();
    let count = |f: &dyn Fn(&DatanodeInfo) -> bool| nodes.iter().filter(|n| f(n)).count() as u64;
    let version = format!("raftfs-{}", env!("CARGO_PKG_VERSION"));
    let v = &m.version;
    vec![
        Bean::new(
            "Hadoop:service=NameNode,name=NameNodeInfo",
            "org.apache.hadoop.hdfs.server.namenode.FSNamesystem",
        )
        .with("Total", total)
        .with("Used", used)
        .with("Free", free)
        .with("NonDfsUsedSpace", non_dfs)
        .with("PercentUsed", percent(used))
        .with("PercentRemaining", percent(free))
        .with("BlockPoolUsedSpace", pool_used)
        .with(
            "Safemode",
            if safemode.on {
                safemode.message.clone()
            } else {
                String::new()
            },
        )
        .with("LiveNodes", serde_json::Value::Object(live_nodes).to_string())
        .with("DeadNodes", serde_json::Value::Object(dead_nodes).to_string())
        .with("DecomNodes", serde_json::Value::Object(decom_nodes).to_string())
        .with("ClusterId", v.cluster_id.clone())
        .with("BlockPoolId", v.block_pool_id.clone())
        .with("TotalBlocks", g.blocks)
        .with("NumberOfMissingBlocks", g.missing)
        .with("Version", version.clone())
        .with("SoftwareVersion", version),
        Bean::new("Hadoop:service=NameNode,name=FSNamesystem", "FSNamesystem")
            .with("tag.Context", "dfs")
            .with("tag.HAState", ha_state)
            .with("CapacityTotal", total)
            .with("CapacityUsed", used)
            .with("CapacityRemaining", free)
            .with("CapacityUsedNonDFS", non_dfs)
            .with("BlocksTotal", g.blocks)
            .with("MissingBlocks", g.missing)
            .with("UnderReplicatedBlocks", g.under_replicated)
            .with("LowRedundancyBlocks", g.under_replicated)
            .with("CorruptBlocks", g.corrupt)
            .with("PendingReplicationBlocks", g.pending_replication)
            .with("ScheduledReplicationBlocks", g.pending_replication)
            .with("PendingDeletionBlocks", g.pending_deletion)
            .with("NumLiveDataNodes", count(&|n| n.live))
            .with("NumDeadDataNodes", count(&|n| !n.live))
            .with(
                "NumDecommissioningDataNodes",
                count(&|n| n.admin_state == AdminState::DecommissionInProgress),
            )
            .with(
                "NumDecomLiveDataNodes",
                count(&|n| n.live && n.admin_state == AdminState::Decommissioned),
            )
            .with(
                "NumDecomDeadDataNodes",
                count(&|n| !n.live && n.admin_state == AdminState::Decommissioned),
            )
            .with("TotalLoad", live.iter().map(|n| u64::from(n.xceivers)).sum::<u64>())
            .with("FSState", if safemode.on { "safeMode" } else { "Operational" }),
        Bean::new(
            "Hadoop:service=NameNode,name=NameNodeStatus",
            "org.apache.hadoop.hdfs.server.namenode.NameNode",
        )
        .with("NNRole", "NameNode")
        .with("HostAndPort", m.addr_of(v.member_id).unwrap_or_default())
        .with("SecurityEnabled", m.security.server.is_tls())
        .with("State", ha_state),
    ]
}
