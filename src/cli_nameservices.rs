//! `raftfs dfsadmin -addNameservice NS raftfs://MEMBERS` and
//! `-removeNameservice NS [-force]` (also `routeradmin`'s): nameservices
//! joining and leaving a running federation.
//!
//! * **Add**: the nameservice is formatted with the cluster's ClusterID
//!   and CA (`raftfs format --nameservice NS --cluster-id … --ca-dir …`)
//!   and running; the routers check its members (same cluster, the
//!   NamespaceID and BlockPoolID they report) and register it. DataNodes
//!   that follow the routers (`raftfs datanode --router`) register with it
//!   and make its block pool directory without a restart; the command
//!   waits up to [`DATANODES_WAIT_MS`] for as many live DataNodes as the
//!   other nameservices have, and fails saying how many came if fewer did.
//! * **Remove**: refused while mount points lead into it (by the routers)
//!   and, without `-force`, while it holds blocks (asked of its members
//!   here; one that cannot be asked is refused too). DataNodes that follow
//!   the routers then delete its block pool, even those down meanwhile,
//!   when they return (`raftfs_datanode::federation_follower`).

use std::time::{Duration, Instant};

use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_proto::{AdminOp, AdminResult, FsError, SafeModeAction};
use raftfs_router::federation::{Federation, FederationChange, NameserviceRecord};
use raftfs_router::RouterError;

use crate::cli_routeradmin::{connect as router_client, nameservice_record};

/// How long `-addNameservice` waits for DataNodes to serve the new pool.
pub const DATANODES_WAIT_MS: u64 = 30_000;
/// Pause between two counts of the DataNodes serving the new pool.
const DATANODES_POLL_MS: u64 = 250;

fn router_error(e: RouterError) -> String {
    match e {
        RouterError::Fs(e) => format!("{}: {e}", e.exception_name()),
        e => e.to_string(),
    }
}

/// A client of nameservice `r`'s members.
pub(crate) fn nameservice_client(r: &NameserviceRecord, user: Option<&str>) -> Result<FileSystem, FsError> {
    let members: Vec<&str> = r.members.values().map(String::as_str).collect();
    FileSystem::connect(
        &format!("raftfs://{}", members.join(",")),
        Identity::resolve(user),
        ClientOptions::default(),
    )
}

/// Live DataNodes the nameservice `fs` is a client of counts.
pub(crate) async fn live_datanodes(fs: &FileSystem) -> Result<usize, FsError> {
    match fs.admin(AdminOp::DatanodeReport).await? {
        AdminResult::Datanodes(d) => Ok(d.iter().filter(|d| d.live).count()),
        other => Err(FsError::Internal(format!("a DataNode report answered {other:?}"))),
    }
}

/// Blocks nameservice `r` holds.
async fn blocks(r: &NameserviceRecord, user: Option<&str>) -> Result<u64, FsError> {
    match nameservice_client(r, user)?
        .admin(AdminOp::SafeMode(SafeModeAction::Get))
        .await?
    {
        AdminResult::SafeMode(s) => Ok(s.total_blocks),
        other => Err(FsError::Internal(format!("safe mode get answered {other:?}"))),
    }
}

/// The most live DataNodes any registered nameservice but `except` counts.
async fn expected_datanodes(fed: &Federation, except: &str, user: Option<&str>) -> usize {
    let mut most = 0;
    for r in fed.nameservices().filter(|r| r.name != except) {
        let Ok(fs) = nameservice_client(r, user) else { continue };
        if let Ok(n) = live_datanodes(&fs).await {
            most = most.max(n);
        }
    }
    most
}

/// `-addNameservice NAME FS`.
pub async fn add(router: &str, user: Option<&str>, name: &str, fs: &str) -> i32 {
    let me = Identity::resolve(user).user;
    let r = match nameservice_record(name, fs).await {
        Ok(r) => r,
        Err(e) => {
            eprintln!("dfsadmin: {e}");
            return 1;
        }
    };
    let client = match router_client(router) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dfsadmin: {e}");
            return 255;
        }
    };
    let version = match client.change(&me, FederationChange::AddNameservice(r.clone())).await {
        Ok(v) => v,
        Err(e) => {
            eprintln!("dfsadmin: {}", router_error(e));
            return 1;
        }
    };
    println!(
        "Added nameservice {} (NamespaceID {}, BlockPoolID {}, {} members) to the federation (version {version})",
        r.name,
        r.namespace_id,
        r.block_pool_id,
        r.members.len()
    );
    let fed = match client.federation(0, 0).await {
        Ok(reply) => reply.federation,
        Err(e) => {
            eprintln!("dfsadmin: {}", router_error(e));
            return 1;
        }
    };
    let want = expected_datanodes(&fed, name, user).await;
    let fs = match nameservice_client(&r, user) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("dfsadmin: {e}");
            return 1;
        }
    };
    let deadline = Instant::now() + Duration::from_millis(DATANODES_WAIT_MS);
    loop {
        let have = live_datanodes(&fs).await.unwrap_or(0);
        if have >= want {
            println!("{have} of {want} DataNodes serve block pool {}", r.block_pool_id);
            return 0;
        }
        if Instant::now() >= deadline {
            eprintln!(
                "dfsadmin: only {have} of {want} DataNodes serve block pool {} after {DATANODES_WAIT_MS} ms: \
                 DataNodes started with --nameservice instead of --router do not follow the routers \
                 (restart them with --router, or add the nameservice to their --nameservice list)",
                r.block_pool_id
            );
            return 1;
        }
        tokio::time::sleep(Duration::from_millis(DATANODES_POLL_MS)).await;
    }
}

/// `-removeNameservice NAME [-force]`.
pub async fn remove(router: &str, user: Option<&str>, name: &str, force: bool) -> i32 {
    let me = Identity::resolve(user).user;
    let client = match router_client(router) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dfsadmin: {e}");
            return 255;
        }
    };
    let fed = match client.federation(0, 0).await {
        Ok(reply) => reply.federation,
        Err(e) => {
            eprintln!("dfsadmin: {}", router_error(e));
            return 1;
        }
    };
    let pool = fed
        .nameservice(name)
        .map(|r| r.block_pool_id.clone())
        .or_else(|| fed.last_removed(name).map(|r| r.block_pool_id.clone()))
        .unwrap_or_default();
    let using = fed.mounts_into(name);
    if !using.is_empty() {
        eprintln!(
            "dfsadmin: nameservice {name} is in use: mount points lead into it: {} (routeradmin -rm them first)",
            using.join(", ")
        );
        return 1;
    }
    if !force {
        if let Some(r) = fed.nameservice(name) {
            match blocks(r, user).await {
                Ok(0) => {}
                Ok(n) => {
                    eprintln!(
                        "dfsadmin: nameservice {name} holds {n} blocks, so its block pool {pool} is not empty: \
                         delete its files first, or -force to remove it and delete the pool with them"
                    );
                    return 1;
                }
                Err(e) => {
                    eprintln!(
                        "dfsadmin: cannot tell whether nameservice {name} holds blocks ({}: {e}): \
                         -force removes it and deletes its block pool whatever it holds",
                        e.exception_name()
                    );
                    return 1;
                }
            }
        }
    }
    let change = if force {
        FederationChange::ForceRemoveNameservice { name: name.to_string() }
    } else {
        FederationChange::RemoveNameservice { name: name.to_string() }
    };
    match client.change(&me, change).await {
        Ok(version) => {
            let with = if force { " with every replica it holds" } else { "" };
            println!(
                "Removed nameservice {name} from the federation (version {version}); \
                 DataNodes following the routers delete its block pool {pool}{with}"
            );
            0
        }
        Err(e) => {
            eprintln!("dfsadmin: {}", router_error(e));
            1
        }
    }
}
