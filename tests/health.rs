//! The health monitor: an unhealthy leader hands leadership to a healthy
//! follower and stops campaigning, writers see no error and lose nothing,
//! and it campaigns again once healthy; a real free-space check against the
//! data directory's file system; periodic snapshots by time.

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Cluster, CreateLoad};

const INJECT_FILE: &str = "inject-unhealthy";

/// The health column of `member` in `haadmin -getAllServiceState`.
fn health_of(c: &Cluster, member: u64) -> String {
    let (_, out, _) = c.haadmin("hdfs", &["-getAllServiceState"]);
    out.lines()
        .find(|l| l.split_whitespace().next() == Some(&member.to_string()))
        .and_then(|l| {
            let at = l.find(" UNHEALTHY").or_else(|| l.find(" HEALTHY"))?;
            Some(l[at..].trim().to_string())
        })
        .unwrap_or_else(|| panic!("member {member} not listed:\n{out}"))
}

async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unhealthy_leader_hands_over_and_nothing_is_lost() {
    let mut c = Cluster::start(3, "rocksdb");
    c.env = vec![("RAFTFS_FAILPOINT_UNHEALTHY_FILE".into(), INJECT_FILE.into())];
    c.kill_all();
    c.restart_all();
    c.wait_ready().await;
    let fs = Arc::new(c.client("hdfs", &["hdfs"]));
    fs.mkdirs("/h", None).await.expect("mkdir");
    let load = CreateLoad::start(&fs, &["/h"]);
    let old = c.leader().await;
    assert_eq!(health_of(&c, old), "HEALTHY");
    std::fs::write(c.dir(old).join(INJECT_FILE), "disk controller errors\n").unwrap();
    let marked = Instant::now();
    wait_for("the unhealthy leader to hand over", || {
        health_of(&c, old).starts_with("UNHEALTHY: injected: disk controller errors")
    })
    .await;
    let new = c.leader().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut new = new;
    while new == old {
        assert!(Instant::now() < deadline, "leadership stayed on the unhealthy member");
        tokio::time::sleep(Duration::from_millis(100)).await;
        new = c.leader().await;
    }
    println!(
        "leadership moved {old} -> {new} {} ms after the leader turned unhealthy",
        marked.elapsed().as_millis()
    );
    // While unhealthy it does not campaign, so it does not take leadership back.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_ne!(c.leader().await, old, "an unhealthy member took leadership back");
    std::fs::remove_file(c.dir(old).join(INJECT_FILE)).unwrap();
    wait_for("health to come back", || health_of(&c, old) == "HEALTHY").await;
    let (acked, errors) = load.stop().await;
    assert!(errors.is_empty(), "writers saw errors: {errors:?}");
    assert!(!acked.is_empty());
    for p in &acked {
        fs.get_file_status(p)
            .await
            .unwrap_or_else(|e| panic!("acknowledged {p} lost: {e}"));
    }
    // Healthy again, it may lead: with the new leader gone, the other two elect one of themselves.
    c.kill(new);
    let leader = c.leader().await;
    assert_ne!(leader, new);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn low_free_disk_is_unhealthy_and_snapshots_come_by_time() {
    // A threshold no disk meets: the real statvfs check reports it.
    let c = Cluster::start_with(
        1,
        "rocksdb",
        &["--min-free-disk-mb", "1000000000", "--snapshot-interval-secs", "1"],
    );
    c.wait_ready().await;
    let fs = c.client("hdfs", &["hdfs"]);
    for i in 0..5 {
        fs.mkdirs(&format!("/s{i}"), None)
            .await
            .expect("a lone unhealthy leader keeps serving");
    }
    wait_for("the free-space check", || {
        health_of(&c, 1).starts_with("UNHEALTHY: free disk in ")
    })
    .await;
    wait_for("a periodic snapshot", || {
        let (_, out, _) = c.haadmin("hdfs", &["-getAllServiceState"]);
        out.lines()
            .nth(1)
            .and_then(|l| l.split_whitespace().nth(6))
            .and_then(|s| s.parse::<u64>().ok())
            .is_some_and(|s| s > 0)
    })
    .await;
}
