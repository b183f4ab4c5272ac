//! Every replica computes the same bytes: after a mixed load on three
//! members, each member's RocksDB namespace exports an identical image
//! (inodes, dentries, counters, retry table, applied log id).

use crate::common;

use std::time::Duration;

use raftfs_metaserver::store::{RocksStore, RocksStoreOptions, Store};
use raftfs_proto::pb;

async fn applied(cluster: &common::Cluster, addr: &str) -> Option<(u64, u64)> {
    let mut c = cluster.try_namespace_client(addr).await?;
    let i = c.member_info(pb::MemberInfoRequest {}).await.ok()?.into_inner();
    Some((i.applied_index, i.last_log_index))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_hold_identical_namespaces() {
    let mut cluster = common::Cluster::start(3, "rocksdb");
    cluster.wait_ready().await;
    let fs = std::sync::Arc::new(cluster.client("hdfs", &["hdfs"]));
    let mut tasks = Vec::new();
    for w in 0..4 {
        let fs = fs.clone();
        tasks.push(tokio::spawn(async move {
            for n in 0..60 {
                let d = format!("/mix/w{w}/d{}", n % 7);
                fs.mkdirs(&d, None).await.unwrap();
                fs.create(&format!("{d}/f{n}"), true).await.unwrap();
                if n % 3 == 0 {
                    fs.rename(&format!("{d}/f{n}"), &format!("{d}/g{n}")).await.unwrap();
                }
                if n % 5 == 0 {
                    fs.set_permission(&d, raftfs_proto::Permission(0o750)).await.unwrap();
                }
                if n % 11 == 0 {
                    fs.delete(&format!("/mix/w{w}/d{}", (n + 3) % 7), true).await.unwrap();
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // Wait until every member has applied everything.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut states = Vec::new();
        for a in cluster.members.values() {
            states.push(applied(&cluster, a).await);
        }
        let first = states[0];
        if first.is_some() && states.iter().all(|s| *s == first && s.is_some_and(|(a, l)| a == l)) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "members did not converge: {states:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    cluster.kill_all();
    let images: Vec<_> = cluster
        .members
        .keys()
        .map(|i| {
            let store = RocksStore::open(&cluster.dir(*i).join("namespace"), &RocksStoreOptions::default()).unwrap();
            store.export().unwrap()
        })
        .collect();
    assert!(
        images[0].inodes.len() > 100,
        "the load created too little: {}",
        images[0].inodes.len()
    );
    for (i, img) in images.iter().enumerate().skip(1) {
        assert_eq!(
            img.inodes,
            images[0].inodes,
            "member {} inodes differ from member 1",
            i + 1
        );
        assert_eq!(img.dentries, images[0].dentries, "member {} dentries differ", i + 1);
        assert_eq!(img.meta, images[0].meta, "member {} meta differs", i + 1);
        assert_eq!(img.retry, images[0].retry, "member {} retry table differs", i + 1);
    }
}
