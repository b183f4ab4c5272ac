//! `raftfs dfsadmin -report [-live] [-dead] [-decommissioning] [-json]`:
//! the cluster as HDFS's report shows it (capacity, then each DataNode
//! with its state and use of every block pool), and, when the routers are
//! named (`--router`, `RAFTFS_ROUTER`, which `raftfs dev` sets), the
//! federation first: the ClusterID, each nameservice with its NamespaceID,
//! BlockPoolID, leader, term, health and members, and the mount table.
//! `-json` prints the same as one JSON object, for scripts.
//!
//! Each nameservice is asked on its own: one that cannot be reached is
//! reported so (its DataNodes' pools are then missing), not a failure of
//! the whole report, since an operator runs it most when something is down.

use std::collections::BTreeMap;

use chrono::{Local, TimeZone};
use serde::Serialize;

use raftfs_client::FileSystem;
use raftfs_proto::{AdminOp, AdminResult, AdminState, DatanodeInfo, FsError};
use raftfs_router::{Federation, MountEntry};

/// What the report covers: the nameservices to ask (name, client, block
/// pool id if known), and the federation if the routers were named.
pub struct ReportScope {
    pub nameservices: Vec<(String, FileSystem, Option<String>)>,
    pub federation: Option<Federation>,
}

/// One member as it reports itself.
#[derive(Serialize)]
struct MemberView {
    id: u64,
    addr: String,
    /// LEADER, FOLLOWER, …, or UNREACHABLE.
    role: String,
    term: u64,
    applied_index: u64,
    health: String,
}

#[derive(Serialize)]
struct NameserviceView {
    name: String,
    cluster_id: String,
    namespace_id: u64,
    block_pool_id: String,
    leader: Option<u64>,
    leader_addr: Option<String>,
    term: u64,
    /// HEALTHY, or what is wrong.
    health: String,
    members: Vec<MemberView>,
}

#[derive(Serialize)]
struct PoolView {
    nameservice: String,
    used_bytes: u64,
    blocks: u64,
    admin_state: String,
}

#[derive(Serialize)]
struct DatanodeView {
    #[serde(flatten)]
    info: DatanodeInfo,
    decommission_status: &'static str,
    pools: Vec<PoolView>,
}

#[derive(Serialize)]
struct MountTableView {
    version: u64,
    entries: Vec<MountEntry>,
}

#[derive(Serialize)]
struct Report {
    cluster_id: String,
    nameservices: Vec<NameserviceView>,
    mount_table: Option<MountTableView>,
    capacity_bytes: u64,
    dfs_used_bytes: u64,
    remaining_bytes: u64,
    datanodes: Vec<DatanodeView>,
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KB", "MB", "GB", "TB", "PB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{n} ({v:.2} {})", UNITS[u])
}

/// `a` as a percentage of `b`, as HDFS prints it.
pub(crate) fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "0.00%".into()
    } else {
        format!("{:.2}%", a as f64 * 100.0 / b as f64)
    }
}

/// The state of a node across its block pools (HDFS Federation: a node is
/// decommissioned once every pool has drained it).
fn overall(states: &[AdminState]) -> &'static str {
    if states.iter().all(|s| *s == AdminState::Decommissioned) {
        "Decommissioned"
    } else if states.iter().all(|s| *s == AdminState::Normal) {
        "Normal"
    } else if states.contains(&AdminState::Normal) {
        "Decommission partially started"
    } else {
        "Decommission in progress"
    }
}

/// Nameservice `name` as its members report themselves.
async fn nameservice_view(name: &str, fs: &FileSystem, pool: Option<&str>) -> NameserviceView {
    let mut v = NameserviceView {
        name: name.to_string(),
        cluster_id: String::new(),
        namespace_id: 0,
        block_pool_id: pool.unwrap_or_default().to_string(),
        leader: None,
        leader_addr: None,
        term: 0,
        health: String::new(),
        members: Vec::new(),
    };
    let mut problems = Vec::new();
    for addr in fs.members() {
        match fs.member_info(addr).await {
            Ok(i) => {
                if i.role == "LEADER" && i.term >= v.term {
                    v.leader = Some(i.member_id);
                    v.leader_addr = Some(addr.clone());
                }
                v.term = v.term.max(i.term);
                v.cluster_id = i.cluster_id.clone();
                v.namespace_id = i.namespace_id;
                if !i.block_pool_id.is_empty() {
                    v.block_pool_id = i.block_pool_id.clone();
                }
                if i.health != "HEALTHY" {
                    problems.push(format!("member {}: {}", i.member_id, i.health));
                }
                v.members.push(MemberView {
                    id: i.member_id,
                    addr: addr.clone(),
                    role: i.role,
                    term: i.term,
                    applied_index: i.applied_index,
                    health: i.health,
                });
            }
            Err(e) => {
                problems.push(format!("{addr} unreachable"));
                v.members.push(MemberView {
                    id: 0,
                    addr: addr.clone(),
                    role: "UNREACHABLE".into(),
                    term: 0,
                    applied_index: 0,
                    health: e.to_string(),
                });
            }
        }
    }
    if v.leader.is_none() {
        problems.insert(0, "no leader".into());
    }
    v.health = if problems.is_empty() {
        "HEALTHY".into()
    } else {
        format!("UNHEALTHY: {}", problems.join("; "))
    };
    v
}

/// Gather the report (each nameservice asked once).
async fn gather(scope: &ReportScope) -> Result<Report, FsError> {
    type PerPool = Vec<(String, AdminState, u64, u64)>;
    // uuid → (its freshest info, (nameservice, state, pool bytes, blocks) per pool)
    let mut nodes: BTreeMap<String, (DatanodeInfo, PerPool)> = BTreeMap::new();
    let mut views = Vec::new();
    let mut reached = 0;
    let mut last_err = None;
    for (name, fs, pool) in &scope.nameservices {
        views.push(nameservice_view(name, fs, pool.as_deref()).await);
        let infos = match fs.admin(AdminOp::DatanodeReport).await {
            Ok(AdminResult::Datanodes(d)) => d,
            Ok(other) => return Err(FsError::Internal(format!("report answered {other:?}"))),
            Err(e) => {
                last_err = Some(e);
                continue;
            }
        };
        reached += 1;
        for i in infos {
            let e = nodes
                .entry(i.id.uuid.clone())
                .or_insert_with(|| (i.clone(), Vec::new()));
            e.1.push((name.clone(), i.admin_state, i.block_pool_used_bytes, i.blocks));
            if i.live && i.last_heartbeat_ago_ms < e.0.last_heartbeat_ago_ms {
                e.0 = DatanodeInfo {
                    admin_state: e.0.admin_state,
                    ..i
                };
            }
        }
    }
    if reached == 0 {
        // Not one nameservice answered: that is the error to report.
        return Err(last_err.unwrap_or_else(|| FsError::InvalidArgument("no nameservice to report on".into())));
    }
    let datanodes: Vec<DatanodeView> = nodes
        .into_values()
        .map(|(info, pools)| {
            let states: Vec<AdminState> = pools.iter().map(|p| p.1).collect();
            DatanodeView {
                info,
                decommission_status: overall(&states),
                pools: pools
                    .into_iter()
                    .map(|(nameservice, state, used_bytes, blocks)| PoolView {
                        nameservice,
                        used_bytes,
                        blocks,
                        admin_state: state.describe().to_string(),
                    })
                    .collect(),
            }
        })
        .collect();
    let live = || datanodes.iter().filter(|d| d.info.live);
    Ok(Report {
        cluster_id: views
            .iter()
            .map(|v| v.cluster_id.clone())
            .find(|c| !c.is_empty())
            .unwrap_or_default(),
        nameservices: views,
        mount_table: scope.federation.as_ref().map(|f| MountTableView {
            version: f.version(),
            entries: f.mounts().entries().cloned().collect(),
        }),
        capacity_bytes: live().map(|d| d.info.capacity_bytes).sum(),
        dfs_used_bytes: live().map(|d| d.info.dfs_used_bytes).sum(),
        remaining_bytes: live().map(|d| d.info.remaining_bytes).sum(),
        datanodes,
    })
}

/// Print the federation part (only when the routers were named).
fn print_federation(r: &Report) {
    println!("Cluster ID: {}", r.cluster_id);
    println!("Nameservices ({}):", r.nameservices.len());
    for ns in &r.nameservices {
        let leader = match (ns.leader, &ns.leader_addr) {
            (Some(id), Some(addr)) => format!("member {id} ({addr})"),
            _ => "none".into(),
        };
        println!(
            "Nameservice {}: NamespaceID {}, BlockPoolID {}, leader {leader}, term {}, {}",
            ns.name, ns.namespace_id, ns.block_pool_id, ns.term, ns.health
        );
        for m in &ns.members {
            println!(
                "  member {} {} {} term {} applied {} {}",
                m.id, m.addr, m.role, m.term, m.applied_index, m.health
            );
        }
    }
    if let Some(t) = &r.mount_table {
        println!("Mount table (version {}):", t.version);
        crate::cli_routeradmin::print_entries(t.entries.iter());
    }
    println!();
}

/// Run `-report` with `flags` (`-live`, `-dead`, `-decommissioning`, `-json`).
pub async fn report(scope: &ReportScope, flags: &[&str]) -> Result<(), FsError> {
    let r = gather(scope).await?;
    if flags.contains(&"-json") {
        let text = serde_json::to_string_pretty(&r).map_err(|e| FsError::Internal(format!("report as JSON: {e}")))?;
        println!("{text}");
        return Ok(());
    }
    if scope.federation.is_some() {
        print_federation(&r);
    }
    let (cap, used, rem) = (r.capacity_bytes, r.dfs_used_bytes, r.remaining_bytes);
    println!("Configured Capacity: {}", bytes(cap));
    println!("Present Capacity: {}", bytes(used + rem));
    println!("DFS Remaining: {}", bytes(rem));
    println!("DFS Used: {}", bytes(used));
    println!("DFS Used%: {}", pct(used, used + rem));
    println!();
    println!("-------------------------------------------------");
    let filter: Vec<&str> = flags.iter().copied().filter(|f| *f != "-json").collect();
    let show = |kind: &str| filter.is_empty() || filter.contains(&kind);
    for (title, live, kind) in [("Live", true, "-live"), ("Dead", false, "-dead")] {
        if !(show(kind) || kind == "-live" && show("-decommissioning")) {
            continue;
        }
        let list: Vec<&DatanodeView> = r
            .datanodes
            .iter()
            .filter(|d| d.info.live == live)
            .filter(|d| {
                !filter.contains(&"-decommissioning")
                    || d.pools
                        .iter()
                        .any(|p| p.admin_state == AdminState::DecommissionInProgress.describe())
            })
            .collect();
        println!("{title} datanodes ({}):", list.len());
        println!();
        for d in list {
            let i = &d.info;
            println!("Name: {} ({})", i.id.addr, i.id.hostname);
            println!("Hostname: {}", i.id.hostname);
            println!("Decommission Status : {}", d.decommission_status);
            println!("Configured Capacity: {}", bytes(i.capacity_bytes));
            println!("DFS Used: {}", bytes(i.dfs_used_bytes));
            println!("DFS Remaining: {}", bytes(i.remaining_bytes));
            println!("DFS Used%: {}", pct(i.dfs_used_bytes, i.capacity_bytes));
            println!("Xceivers: {}", i.xceivers);
            println!("Volume Failures: {}", i.failed_volumes);
            let last = chrono::Utc::now().timestamp_millis() - i.last_heartbeat_ago_ms as i64;
            if let chrono::LocalResult::Single(t) = Local.timestamp_millis_opt(last) {
                println!("Last contact: {}", t.format("%a %b %d %H:%M:%S %Z %Y"));
            }
            for p in &d.pools {
                println!(
                    "Block pool of {}: Used {}, {} blocks, {}",
                    p.nameservice,
                    bytes(p.used_bytes),
                    p.blocks,
                    p.admin_state
                );
            }
            println!();
        }
    }
    Ok(())
}
