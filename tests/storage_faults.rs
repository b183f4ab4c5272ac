//! Storage faults the kernel really returns: the leader's fsyncs start
//! failing with EIO (an `LD_PRELOAD` shim this test builds, armed for one
//! process by its pid). The member must not acknowledge what it could not
//! make durable, must not retry the fsync as if it had worked (PostgreSQL's
//! "fsyncgate": after a failed fsync the kernel may have dropped the dirty
//! pages, so a later fsync that succeeds proves nothing): its Raft node
//! stops and the process exits saying why, as a NameNode whose journal
//! failed does. Writers move to the new leader and every write they were
//! told succeeded is there. Disarmed and restarted, the member rejoins.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Cluster, CreateLoad};

/// Build the EIO shim into `dir`; its path.
fn build_shim(dir: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/shims/eio_fsync.c");
    let out = dir.join("eio_fsync.so");
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .arg("-ldl")
        .status()
        .expect("run cc (a C compiler is needed to build RocksDB, so it is installed)");
    assert!(status.success(), "building the EIO shim failed");
    out
}

fn role_of(c: &Cluster, member: u64) -> String {
    let (_, out, _) = c.haadmin("hdfs", &["-getAllServiceState"]);
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(&member.to_string()))
        .and_then(|l| l.split_whitespace().nth(2).map(str::to_string))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_fsyncs_fail_acknowledges_nothing_more_and_gives_up_leadership() {
    let shims = tempfile::tempdir().unwrap();
    let shim = build_shim(shims.path());
    let arm_dir = shims.path().join("arm");
    std::fs::create_dir(&arm_dir).unwrap();
    let mut c = Cluster::start(3, "rocksdb");
    c.env = vec![
        ("LD_PRELOAD".into(), shim.display().to_string()),
        ("RAFTFS_SHIM_EIO_DIR".into(), arm_dir.display().to_string()),
    ];
    c.kill_all();
    c.restart_all();
    c.wait_ready().await;
    let fs = Arc::new(c.client("hdfs", &[]));
    fs.mkdirs("/eio", None).await.expect("mkdir");

    let load = CreateLoad::start(&fs, &["/eio"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let old = c.leader().await;
    let pid = c.pid(old).expect("the leader runs");
    let armed_at = load.acked_count();
    std::fs::write(arm_dir.join(format!("eio-{pid}")), "").unwrap();
    let armed = Instant::now();

    let deadline = Instant::now() + Duration::from_secs(30);
    let mut new = c.leader().await;
    while new == old {
        assert!(
            Instant::now() < deadline,
            "leadership stayed on the member whose fsyncs fail"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        new = c.leader().await;
    }
    println!(
        "leadership moved {old} -> {new} {} ms after member {old}'s fsyncs began to fail ({armed_at} creates before)",
        armed.elapsed().as_millis()
    );
    // Writes go on through the new leader.
    let before = load.acked_count();
    let going_on = Instant::now() + Duration::from_secs(20);
    while load.acked_count() < before + 50 {
        assert!(Instant::now() < going_on, "writes did not resume on the new leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_ne!(c.leader().await, old, "the failing member took leadership back");
    let (acked, errors) = load.stop().await;
    assert!(errors.is_empty(), "writers saw errors: {errors:?}");

    // Every acknowledged create is there.
    for p in &acked {
        fs.get_file_status(p)
            .await
            .unwrap_or_else(|e| panic!("acknowledged {p} lost: {e}"));
    }
    // It stopped by itself, and said why.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !c.exited().contains(&old) {
        assert!(
            Instant::now() < deadline,
            "member {old} kept running after its log fsync failed"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = std::fs::read_to_string(c.root.path().join(format!("m{old}.log"))).unwrap_or_default();
    for l in log
        .lines()
        .filter(|l| l.contains("ERROR") || l.contains("WARN"))
        .take(8)
    {
        println!("member {old}: {l}");
    }
    assert!(
        log.contains("fsync raft log") && log.contains("Input/output error"),
        "member {old} did not report the failed fsync:\n{log}"
    );
    assert!(
        log.contains("this member can no longer keep a durable log; exiting"),
        "member {old} did not say why it stopped:\n{log}"
    );

    // Disarmed and restarted, it rejoins as a follower.
    std::fs::remove_file(arm_dir.join(format!("eio-{pid}"))).unwrap();
    c.start_member(old);
    let deadline = Instant::now() + Duration::from_secs(30);
    while role_of(&c, old) != "FOLLOWER" {
        assert!(
            Instant::now() < deadline,
            "member {old} did not rejoin: {}",
            role_of(&c, old)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    fs.create("/eio/after", false)
        .await
        .expect("a create after it rejoined");
}
