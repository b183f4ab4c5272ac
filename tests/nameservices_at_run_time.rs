//! Nameservices join and leave a running federation (`dfsadmin
//! -addNameservice` / `-removeNameservice [-force]`), and DataNodes that
//! follow the routers (`raftfs datanode --router`) serve, keep and delete
//! block pools accordingly, without a restart; one that was down during a
//! removal deletes the orphaned pool when it returns.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::routers::Routers;
use common::Cluster;

/// How long a DataNode may take to act on a federation change here (one
/// long poll answers as soon as the change commits).
const FOLLOW_BOUND_MS: u64 = 10_000;

fn pool_dir(c: &Cluster, dn: u64, bpid: &str) -> PathBuf {
    c.dn_dir(dn).join("current").join(bpid)
}

/// The nameservices DataNode `dn` says it serves (its FEDERATION file).
fn followed(c: &Cluster, dn: u64) -> String {
    std::fs::read_to_string(c.dn_dir(dn).join("current").join("FEDERATION")).unwrap_or_default()
}

/// Wait until `cond` holds, at most [`FOLLOW_BOUND_MS`]; how long it took.
async fn within_bound(what: &str, mut cond: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < Duration::from_millis(FOLLOW_BOUND_MS),
            "{what}: not within {FOLLOW_BOUND_MS} ms"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    start.elapsed()
}

/// The BlockPoolID `-addNameservice` printed.
fn added_pool(out: &str) -> String {
    out.split("BlockPoolID ")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or_else(|| panic!("no BlockPoolID in {out}"))
        .to_string()
}

fn exists(p: &Path) -> bool {
    p.join("VERSION").exists()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nameservices_join_and_leave_a_running_federation() {
    let mut ns1 = Cluster::start(1, "memory");
    let routers = Routers::start(&ns1, 1);
    routers.admin_ok(&["-addNameservice", "ns1", &ns1.fs_uri()]);
    ns1.start_datanodes(3, &["--router", &routers.uri(None)]);
    ns1.wait_datanodes(3).await;
    let bp1 = ns1.ids.2.clone();

    // A new nameservice of the cluster joins; every DataNode serves its pool.
    let ns3 = ns1.start_sibling(1, "ns3");
    ns3.wait_ready().await;
    let (code, out, err) = routers.dfsadmin(&["-addNameservice", "ns3", &ns3.fs_uri()]);
    assert_eq!(code, 0, "{out}{err}");
    let bp3 = added_pool(&out);
    assert_eq!(bp3, ns3.ids.2);
    assert!(
        out.contains(&format!("3 of 3 DataNodes serve block pool {bp3}")),
        "{out}"
    );
    for dn in 1..=3 {
        assert!(exists(&pool_dir(&ns1, dn, &bp3)), "DataNode {dn} made ns3's pool");
    }
    ns3.wait_datanodes(3).await;
    // Adding it again, or a nameservice that is not running, is refused.
    let (code, _, err) = routers.dfsadmin(&["-addNameservice", "ns3", &ns3.fs_uri()]);
    assert_ne!(code, 0);
    assert!(err.contains("already"), "{err}");
    let (code, _, err) = routers.dfsadmin(&["-addNameservice", "ns9", "raftfs://127.0.0.1:1"]);
    assert_ne!(code, 0);
    assert!(err.contains("127.0.0.1:1"), "{err}");

    // Data in ns3, through a mount point.
    routers.admin_ok(&["-add", "/three", "ns3", "/three"]);
    let version = routers.version().await;
    routers.wait_version(version).await;
    let local = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(local.path(), vec![7u8; 100_000]).unwrap();
    let (code, out, err) = ns3.dfs("hdfs", &["-mkdir", "/three"]);
    assert_eq!(code, 0, "{out}{err}");
    let put = ns1
        .cli()
        .args(["dfs", "--fs", &routers.uri(None), "--user", "hdfs", "-put"])
        .arg(local.path())
        .arg("/three/f")
        .output()
        .unwrap();
    assert!(put.status.success(), "{}", String::from_utf8_lossy(&put.stderr));

    // Refused while a mount point leads into it, then while it holds blocks.
    let (code, _, err) = routers.dfsadmin(&["-removeNameservice", "ns3"]);
    assert_ne!(code, 0);
    assert!(err.contains("/three"), "{err}");
    routers.admin_ok(&["-rm", "/three"]);
    let (code, _, err) = routers.dfsadmin(&["-removeNameservice", "ns3"]);
    assert_ne!(code, 0);
    assert!(err.contains("holds 1 blocks") && err.contains("-force"), "{err}");

    // Removed without -force (routeradmin does not ask for blocks): the
    // DataNodes stop serving it but keep its pool, which is not empty.
    ns1.kill_datanode(3);
    routers.admin_ok(&["-removeNameservice", "ns3"]);
    for dn in 1..=2 {
        within_bound("DataNode stops following ns3", || !followed(&ns1, dn).contains("ns3")).await;
        assert!(exists(&pool_dir(&ns1, dn, &bp3)), "a pool with replicas is kept");
    }
    // -force: the pools go, on every DataNode that runs.
    let (code, out, err) = routers.dfsadmin(&["-removeNameservice", "ns3", "-force"]);
    assert_eq!(code, 0, "{out}{err}");
    for dn in 1..=2 {
        let took = within_bound("DataNode deletes ns3's pool", || !pool_dir(&ns1, dn, &bp3).exists()).await;
        eprintln!("DataNode {dn} deleted ns3's pool {took:?} after -force");
    }
    assert!(exists(&pool_dir(&ns1, 3, &bp3)), "DataNode 3 was down");
    // DataNode 3 returns and deletes the orphaned pool.
    ns1.start_datanode(3);
    within_bound("DataNode 3 deletes the orphaned pool", || {
        !pool_dir(&ns1, 3, &bp3).exists()
    })
    .await;
    for dn in 1..=3 {
        assert!(exists(&pool_dir(&ns1, dn, &bp1)), "ns1's pool stays on DataNode {dn}");
    }
    ns1.wait_datanodes(3).await;

    // An empty nameservice comes and goes without -force.
    let ns4 = ns1.start_sibling(1, "ns4");
    ns4.wait_ready().await;
    let (code, out, err) = routers.dfsadmin(&["-addNameservice", "ns4", &ns4.fs_uri()]);
    assert_eq!(code, 0, "{out}{err}");
    let bp4 = added_pool(&out);
    let (code, out, err) = routers.dfsadmin(&["-removeNameservice", "ns4"]);
    assert_eq!(code, 0, "{out}{err}");
    for dn in 1..=3 {
        within_bound("DataNode deletes ns4's empty pool and stops following it", || {
            !pool_dir(&ns1, dn, &bp4).exists() && !followed(&ns1, dn).contains("ns4")
        })
        .await;
        assert!(followed(&ns1, dn).contains("ns1"), "DataNode {dn} still follows ns1");
    }
    // ns1 still takes data on three DataNodes.
    let (code, out, err) = ns1.dfs("hdfs", &["-put", local.path().to_str().unwrap(), "/after"]);
    assert_eq!(code, 0, "{out}{err}");
}
