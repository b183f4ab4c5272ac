//! Failover without ZooKeeper: kill -9 of the leader under a write load is
//! a pause for the clients, never an error; and a call whose leader died
//! after committing it but before replying, retried on the next leader,
//! returns its first result and is applied once (the replicated retry table).

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Cluster, CreateLoad};

const WRITERS: usize = 8;
/// Failover must finish well inside this (the harness elects in 300–600 ms).
const FAILOVER_BOUND_MS: u128 = 10_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leader_kill_is_a_pause_not_an_error() {
    let mut c = Cluster::start(3, "rocksdb");
    c.wait_ready().await;
    let fs = Arc::new(c.client("hdfs", &["hdfs"]));
    let dirs: Vec<String> = (0..WRITERS).map(|w| format!("/fo/w{w}")).collect();
    for d in &dirs {
        fs.mkdirs(d, None).await.expect("mkdir");
    }
    let load = CreateLoad::start(&fs, &dirs.iter().map(String::as_str).collect::<Vec<_>>());
    tokio::time::sleep(Duration::from_millis(1000)).await;
    let leader = c.leader().await;
    let before = load.acked_count();
    c.kill(leader);
    let killed_at = Instant::now();
    // A fresh client's first write after the kill: the failover as a user sees it.
    let probe = c.client("hdfs", &["hdfs"]);
    probe
        .create("/fo/probe", false)
        .await
        .expect("probe write rides through");
    let failover_ms = killed_at.elapsed().as_millis();
    println!("failover (leader {leader} killed -> first write acknowledged): {failover_ms} ms");
    assert!(failover_ms < FAILOVER_BOUND_MS, "failover took {failover_ms} ms");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (acked, errors) = load.stop().await;
    assert!(errors.is_empty(), "a client saw errors: {errors:?}");
    assert!(acked.len() > before, "writes went on after the kill");
    c.start_member(leader);
    for p in &acked {
        fs.get_file_status(p)
            .await
            .unwrap_or_else(|e| panic!("acknowledged {p} lost: {e}"));
    }
    println!("{} acknowledged creates, all present", acked.len());
}

/// Wait for the one member the failpoint killed; start it again.
async fn restart_crashed(c: &mut Cluster, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let gone = c.exited();
        if !gone.is_empty() {
            assert_eq!(gone.len(), 1, "{what}: one member crashed, not {gone:?}");
            c.start_member(gone[0]);
            c.wait_ready().await;
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{what}: the failpoint did not fire\n{}",
            c.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_crash_between_commit_and_reply_applies_once() {
    let mut c = Cluster::start(3, "rocksdb");
    let once = c.root.path().join("failpoint.fired");
    c.env = vec![
        ("RAFTFS_FAILPOINT_CRASH_AFTER_COMMIT".into(), "/once/".into()),
        ("RAFTFS_FAILPOINT_ONCE_FILE".into(), once.display().to_string()),
    ];
    // Restart every member with the failpoint armed.
    c.kill_all();
    c.restart_all();
    c.wait_ready().await;
    let fs = c.client("hdfs", &["hdfs"]);
    fs.mkdirs("/once", None).await.expect("mkdir /once"); // "/once" does not match "/once/"
    std::fs::write(&once, b"disarmed").expect("disarm");
    fs.mkdirs("/once/sub", None).await.expect("setup");
    fs.create("/once/exists", false).await.expect("setup");

    // create (overwrite=false): applied twice it would fail with FileAlreadyExists.
    std::fs::remove_file(&once).expect("arm");
    let st = fs
        .create("/once/a", false)
        .await
        .expect("retried create returns its first result");
    assert_eq!(st.length, 0);
    restart_crashed(&mut c, "create").await;

    // rename: applied twice, the second would return false.
    std::fs::remove_file(&once).expect("arm");
    assert!(
        fs.rename("/once/a", "/once/b").await.expect("retried rename"),
        "rename answered true"
    );
    restart_crashed(&mut c, "rename").await;

    // delete: applied twice, the second would return false.
    std::fs::remove_file(&once).expect("arm");
    assert!(
        fs.delete("/once/exists", false).await.expect("retried delete"),
        "delete answered true"
    );
    restart_crashed(&mut c, "delete").await;

    // mkdirs with createParent of a new chain.
    std::fs::remove_file(&once).expect("arm");
    assert!(fs.mkdirs("/once/p/q/r", None).await.expect("retried mkdirs"));
    restart_crashed(&mut c, "mkdirs").await;

    std::fs::write(&once, b"disarmed").expect("disarm");
    let names: Vec<String> = fs
        .list_status("/once")
        .await
        .expect("list")
        .into_iter()
        .map(|s| s.path_suffix)
        .collect();
    assert_eq!(names, vec!["b", "p", "sub"], "each op applied exactly once");
}
