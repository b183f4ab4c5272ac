//! Snapshots and log purging: a member that was down while the log was
//! purged behind a snapshot catches up by snapshot transfer (a RocksDB
//! checkpoint or a memory image, streamed file by file); a nameservice
//! restarts from its latest snapshot plus the log tail (memory: always;
//! RocksDB: when its database is gone).

use crate::common;

use std::time::Duration;

use raftfs_proto::pb;

async fn info(cluster: &common::Cluster, addr: &str) -> Option<pb::MemberInfoReply> {
    let mut c = cluster.try_namespace_client(addr).await?;
    Some(c.member_info(pb::MemberInfoRequest {}).await.ok()?.into_inner())
}

/// Whether member directory `dir` holds a complete snapshot.
fn has_snapshot(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir.join("snapshots"))
        .map(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("snap-"))
        })
        .unwrap_or(false)
}

async fn write_dirs(c: &common::Cluster, prefix: &str, n: usize) {
    let fs = c.client("hdfs", &["hdfs"]);
    for i in 0..n {
        assert!(fs.mkdirs(&format!("{prefix}/d{i}"), None).await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_member_catches_up_by_snapshot() {
    for store in ["memory", "rocksdb"] {
        let mut c = common::Cluster::start_with(3, store, &["--snapshot-logs", "20", "--snapshot-keep-logs", "0"]);
        c.wait_ready().await;
        write_dirs(&c, "/before", 10).await;
        let last3 = info(&c, &c.members[&3].clone())
            .await
            .expect("member 3 answers")
            .last_log_index;
        c.kill(3);
        // Enough entries for several snapshots, so the log the lagging member needs is purged.
        write_dirs(&c, "/while-down", 150).await;
        assert!(
            has_snapshot(&c.dir(1)) || has_snapshot(&c.dir(2)),
            "no snapshot was taken"
        );
        // openraft may hold a purge back while entries are in flight to a
        // follower: wait until the leader has purged what member 3 lacks,
        // so only a snapshot can bring it back.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let mut purged = 0;
            for a in c.members.values() {
                if let Some(i) = info(&c, a).await {
                    if i.role == "LEADER" {
                        purged = i.purged_index;
                    }
                }
            }
            if purged > last3 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the leader did not purge past index {last3} ({store})"
            );
            write_dirs(&c, "/more", 5).await;
        }
        c.start_member(3);
        let addr3 = c.members[&3].clone();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        loop {
            let leader_last = {
                let mut best = 0;
                for a in c.members.values() {
                    if let Some(i) = info(&c, a).await {
                        if i.role == "LEADER" {
                            best = i.last_log_index;
                        }
                    }
                }
                best
            };
            if let Some(i) = info(&c, &addr3).await {
                if leader_last > 0 && i.applied_index >= leader_last {
                    break;
                }
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "member 3 did not catch up ({store})\n{}",
                c.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            has_snapshot(&c.dir(3)),
            "member 3 caught up without installing a snapshot ({store})"
        );
        // Member 3 now serves the data: make it the only one holding a majority with member 1.
        c.kill(2);
        let fs = c.client("hdfs", &["hdfs"]);
        for i in [0, 75, 149] {
            assert!(
                fs.exists(&format!("/while-down/d{i}")).await.unwrap(),
                "{store}: /while-down/d{i} missing"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restarts_from_snapshot_and_log_tail() {
    for store in ["memory", "rocksdb"] {
        let mut c = common::Cluster::start_with(3, store, &["--snapshot-logs", "20", "--snapshot-keep-logs", "0"]);
        c.wait_ready().await;
        write_dirs(&c, "/s", 120).await;
        c.kill_all();
        if store == "rocksdb" {
            // Lose every database: only the snapshots and the log tail remain.
            for id in 1..=3 {
                assert!(has_snapshot(&c.dir(id)), "member {id} took no snapshot");
                std::fs::remove_dir_all(c.dir(id).join("namespace")).expect("remove the namespace database");
            }
        }
        c.restart_all();
        c.wait_ready().await;
        let fs = c.client("hdfs", &["hdfs"]);
        let listing = fs.list_status("/s").await.unwrap();
        assert_eq!(
            listing.len(),
            120,
            "{store}: entries lost across a restart from snapshot + log"
        );
    }
}
