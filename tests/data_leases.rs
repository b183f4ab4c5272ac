//! Leases, hflush visibility, append, lease recovery (by another client
//! and by the hard limit), and space quotas, against real processes.

use crate::common;

use std::time::{Duration, Instant};

use raftfs_client::FileSystem;
use raftfs_proto::{FsError, QuotaSetting};

const BLOCK: u64 = 1024 * 1024;
const ARGS: &[&str] = &[
    "--safemode-extension-ms",
    "0",
    "--replication-interval-ms",
    "200",
    "--lease-hard-limit-ms",
    "3000",
];

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed)).collect()
}

async fn read(fs: &FileSystem, path: &str) -> Vec<u8> {
    fs.open(path).await.unwrap().read_to_end().await.unwrap()
}

async fn wait_closed(fs: &FileSystem, path: &str, within: Duration) -> raftfs_proto::FileStatus {
    let deadline = Instant::now() + within;
    loop {
        let s = fs.get_file_status(path).await.unwrap();
        if !s.under_construction {
            return s;
        }
        assert!(Instant::now() < deadline, "{path} still open after {within:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn leases_hflush_append_and_recovery() {
    let mut c = common::Cluster::start_with(3, "rocksdb", ARGS);
    c.wait_ready().await;
    c.start_datanodes(3, &[]);
    c.wait_datanodes(3).await;
    let a = c.client("hdfs", &["hdfs"]);
    let b = c.client("hdfs", &["hdfs"]);
    a.mkdirs("/l", None).await.unwrap();

    // hflush makes bytes visible to another reader while the file is open.
    let first = bytes(1000, 1);
    let mut w = a.create_file_opt("/l/a", false, None, 3, BLOCK, true).await.unwrap();
    w.write(&first).await.unwrap();
    w.hflush().await.unwrap();
    assert_eq!(read(&b, "/l/a").await, first, "hflushed bytes are visible");
    // The lease keeps other clients out.
    let e = b
        .create_file("/l/a", true)
        .await
        .err()
        .expect("create over a held file");
    assert!(matches!(e, FsError::AlreadyBeingCreated(_)), "{e:?}");
    let e = b.append("/l/a").await.err().expect("append to a held file");
    assert!(matches!(e, FsError::AlreadyBeingCreated(_)), "{e:?}");
    let second = bytes(2000, 2);
    w.write(&second).await.unwrap();
    // hsync: on the DataNodes' disks, and visible too.
    w.hsync().await.unwrap();
    assert_eq!(read(&b, "/l/a").await.len(), 3000, "hsynced bytes are visible");
    w.close().await.unwrap();
    let mut all = first.clone();
    all.extend_from_slice(&second);
    assert_eq!(read(&b, "/l/a").await, all);

    // Append to a partial last block, then to a full one.
    let mut w = b.append("/l/a").await.unwrap();
    let third = bytes(700, 3);
    w.write(&third).await.unwrap();
    w.close().await.unwrap();
    all.extend_from_slice(&third);
    assert_eq!(read(&a, "/l/a").await, all, "append to a partial block");
    let full = bytes(BLOCK as usize, 4);
    let mut w = a.create_file_opt("/l/full", false, None, 3, BLOCK, true).await.unwrap();
    w.write(&full).await.unwrap();
    w.close().await.unwrap();
    let mut w = a.append("/l/full").await.unwrap();
    w.write(b"tail").await.unwrap();
    w.close().await.unwrap();
    let got = read(&b, "/l/full").await;
    assert_eq!(got.len(), BLOCK as usize + 4);
    assert!(got[..BLOCK as usize] == full[..] && &got[BLOCK as usize..] == b"tail");
    assert_eq!(b.block_locations("/l/full").await.unwrap().blocks.len(), 2);

    // A writer that dies: another client recovers the lease; the file keeps
    // what was hflushed.
    let dying = c.client("hdfs", &["hdfs"]);
    let mut w = dying
        .create_file_opt("/l/r", false, None, 3, BLOCK, true)
        .await
        .unwrap();
    let kept = bytes(3000, 5);
    w.write(&kept).await.unwrap();
    w.hflush().await.unwrap();
    drop(w);
    drop(dying);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !b.recover_lease("/l/r").await.unwrap() {
        assert!(Instant::now() < deadline, "lease recovery did not finish\n{}", c.logs());
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let s = b.get_file_status("/l/r").await.unwrap();
    assert!(!s.under_construction);
    assert_eq!(read(&b, "/l/r").await, kept, "recovered file holds the hflushed bytes");

    // A writer silent past the hard limit: the leader recovers the file itself.
    let silent = c.client("hdfs", &["hdfs"]);
    let mut w = silent
        .create_file_opt("/l/h", false, None, 3, BLOCK, true)
        .await
        .unwrap();
    w.write(&bytes(700, 6)).await.unwrap();
    w.hflush().await.unwrap();
    drop(w);
    drop(silent);
    let s = wait_closed(&b, "/l/h", Duration::from_secs(30)).await;
    assert_eq!(s.length, 700);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn space_quota_counts_blocks_being_written_and_bytes() {
    let mut c = common::Cluster::start_with(3, "memory", ARGS);
    c.wait_ready().await;
    c.start_datanodes(3, &[]);
    c.wait_datanodes(3).await;
    let fs = c.client("hdfs", &["hdfs"]);
    fs.mkdirs("/q", None).await.unwrap();
    // One block being written of three replicas fills the quota.
    fs.set_quota("/q", QuotaSetting::Keep, QuotaSetting::Set(3 * BLOCK))
        .await
        .unwrap();
    let mut w = fs.create_file_opt("/q/a", false, None, 3, BLOCK, true).await.unwrap();
    w.write(&[7u8; 10]).await.unwrap();
    w.close().await.unwrap();
    let s = fs.content_summary("/q").await.unwrap();
    assert_eq!((s.length, s.space_consumed, s.file_count), (10, 30, 1));
    let mut w = fs.create_file_opt("/q/b", false, None, 3, BLOCK, true).await.unwrap();
    let e = async {
        w.write(&[1u8; 300_000]).await?;
        w.hflush().await
    }
    .await
    .expect_err("over quota");
    assert!(matches!(e, FsError::DSQuotaExceeded(_)), "{e:?}");
    drop(w);
    let s = fs.content_summary("/q").await.unwrap();
    assert_eq!(
        (s.length, s.space_consumed),
        (10, 30),
        "the refused block is not charged"
    );
}
