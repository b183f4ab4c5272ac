//! Restart safety: kill -9 every member during a write load, restart them
//! on the same directories, and check that every op a client saw
//! acknowledged is there and nothing is half-applied.

use crate::common;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use raftfs_client::{ClientOptions, FileSystem, Identity};

/// Concurrent writers during the load.
const WRITERS: usize = 8;
/// How long the load runs before the kill, per cycle.
const LOAD_MS: u64 = 1500;
/// Kill-all cycles per store in the suite; `RAFTFS_KILL_ALL_CYCLES=20`
/// makes it the acceptance loop (run by hand:
/// `RAFTFS_KILL_ALL_CYCLES=20 cargo test --test integration restart_safety:: -- --nocapture`).
const DEFAULT_CYCLES: usize = 3;

fn cycles() -> usize {
    std::env::var("RAFTFS_KILL_ALL_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CYCLES)
}

async fn load(fs: Arc<FileSystem>, writer: usize, cycle: usize, acked: Arc<Mutex<BTreeSet<String>>>) {
    for n in 0.. {
        let dir = format!("/load/c{cycle}/w{writer}/d{n}");
        // mkdirs with missing parents, then a create inside: both must survive or neither was acked.
        if fs.mkdirs(&dir, None).await.is_err() {
            return;
        }
        acked.lock().unwrap().insert(dir.clone());
        let file = format!("{dir}/f");
        if fs.create(&file, false).await.is_err() {
            return;
        }
        acked.lock().unwrap().insert(file);
    }
}

/// Walk the tree and check every directory's child count matches its listing.
async fn check_consistent(fs: &FileSystem, path: &str) -> usize {
    let st = fs.get_file_status(path).await.expect("stat");
    if !st.is_dir() {
        return 1;
    }
    let children = fs.list_status(path).await.expect("list");
    assert_eq!(
        st.children_num,
        children.len() as u64,
        "child count of {path} disagrees with its listing"
    );
    let mut n = 1;
    for c in children {
        let p = if path == "/" {
            format!("/{}", c.path_suffix)
        } else {
            format!("{path}/{}", c.path_suffix)
        };
        n += Box::pin(check_consistent(fs, &p)).await;
    }
    n
}

async fn run(store: &str, exec: &str) {
    // Snapshots every few hundred entries: kills land during checkpoints,
    // and a memory-store restart loads the latest snapshot plus the log tail.
    let mut cluster = common::Cluster::start_with(
        3,
        store,
        &["--snapshot-logs", "500", "--snapshot-keep-logs", "50", "--exec", exec],
    );
    cluster.wait_ready().await;
    let acked = Arc::new(Mutex::new(BTreeSet::new()));
    for cycle in 0..cycles() {
        let opts = ClientOptions {
            call_deadline_ms: 3_000,
            rpc_timeout_ms: 1_000,
            ..cluster.client_options()
        };
        let fs = Arc::new(FileSystem::connect(&cluster.fs_uri(), Identity::new("hdfs", &["hdfs"]), opts).unwrap());
        let mut tasks = Vec::new();
        for w in 0..WRITERS {
            tasks.push(tokio::spawn(load(fs.clone(), w, cycle, acked.clone())));
        }
        tokio::time::sleep(Duration::from_millis(LOAD_MS)).await;
        cluster.kill_all();
        for t in tasks {
            t.await.unwrap();
        }
        cluster.restart_all();
        cluster.wait_ready().await;
        let check = cluster.client("hdfs", &["hdfs"]);
        let acked_now = acked.lock().unwrap().clone();
        assert!(!acked_now.is_empty(), "the load acknowledged nothing in cycle {cycle}");
        for p in &acked_now {
            assert!(
                check.exists(p).await.unwrap(),
                "acknowledged {p} lost after kill -9 of every member (cycle {cycle})"
            );
        }
        let inodes = check_consistent(&check, "/").await;
        println!(
            "{store} --exec {exec} cycle {cycle}: {} acknowledged ops present, {inodes} inodes consistent",
            acked_now.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_all_members_during_load_rocksdb_exec_leader() {
    run("rocksdb", "leader").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_all_members_during_load_memory_exec_leader() {
    run("memory", "leader").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_all_members_during_load_rocksdb_exec_apply() {
    run("rocksdb", "apply").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_all_members_during_load_memory_exec_apply() {
    run("memory", "apply").await;
}
