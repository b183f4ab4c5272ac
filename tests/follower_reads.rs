//! Follower (observer) reads: with read-your-writes a client always sees
//! its own writes wherever its reads land; with linearizable follower reads
//! a reader sees every write completed before its read began, whoever wrote
//! it; and the reads really are served by followers.

use crate::common;

use std::time::Duration;

use common::Cluster;
use raftfs_client::{ClientOptions, FileSystem, FollowerReads, Identity};
use raftfs_proto::Permission;

fn client(c: &Cluster, mode: FollowerReads) -> FileSystem {
    let opts = ClientOptions {
        follower_reads: mode,
        ..c.client_options()
    };
    FileSystem::connect(&c.fs_uri(), Identity::new("hdfs", &["hdfs"]), opts).expect("connect")
}

/// READS column of every member in `haadmin -getAllServiceState`: (id, role, reads).
fn reads(c: &Cluster) -> Vec<(u64, String, u64)> {
    let (_, out, _) = c.haadmin("hdfs", &["-getAllServiceState"]);
    out.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            Some((f.first()?.parse().ok()?, f.get(2)?.to_string(), f.get(7)?.parse().ok()?))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follower_reads_see_what_they_must() {
    let c = Cluster::start(3, "rocksdb");
    c.wait_ready().await;
    let ryw = client(&c, FollowerReads::ReadYourWrites);
    ryw.mkdirs("/fr", None).await.expect("mkdir");
    for n in 0..60 {
        let p = format!("/fr/f{n}");
        ryw.create(&p, false).await.expect("create");
        let st = ryw
            .get_file_status(&p)
            .await
            .expect("read-your-writes: own create visible at once");
        assert!(!st.is_dir());
    }
    let per_member = reads(&c);
    let on_followers: u64 = per_member
        .iter()
        .filter(|(_, r, _)| r != "LEADER")
        .map(|(_, _, n)| n)
        .sum();
    assert!(on_followers >= 20, "followers served reads: {per_member:?}");

    // Linearizable follower reads: B never saw A's writes, yet sees each one.
    let a = c.client("hdfs", &["hdfs"]);
    let b = client(&c, FollowerReads::Linearizable);
    for i in 0..30u16 {
        let mode = 0o700 + (i % 8) * 0o10;
        a.set_permission("/fr", Permission(mode)).await.expect("chmod");
        let seen = b.get_file_status("/fr").await.expect("stat").permission.bits();
        assert_eq!(seen, mode, "linearizable follower read {i} missed a completed write");
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let after = reads(&c);
    let follower_gain: u64 = after
        .iter()
        .zip(&per_member)
        .filter(|((_, r, _), _)| r != "LEADER")
        .map(|((_, _, n1), (_, _, n0))| n1 - n0)
        .sum();
    assert!(
        follower_gain >= 10,
        "linearizable reads also went to followers: {after:?}"
    );
}
