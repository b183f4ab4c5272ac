//! The data path against real processes: three metaservers, DataNodes,
//! the SDK. Data written is data read, at every size around chunk, packet
//! and block boundaries; after a DataNode is lost; after everything
//! restarts.

use crate::common;

use std::time::{Duration, Instant};

use common::FAST_BLOCKS;
use raftfs_client::FileSystem;

/// Block size of the test files: the smallest allowed, so files span blocks cheaply.
const BLOCK: u64 = 1024 * 1024;
/// The client's packet size, to test its boundaries.
const PACKET: u64 = 256 * 1024;

fn bytes(n: u64, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

async fn write(fs: &FileSystem, path: &str, data: &[u8], replication: u16) {
    let mut w = fs
        .create_file_opt(path, true, None, replication, BLOCK, true)
        .await
        .unwrap_or_else(|e| panic!("create {path}: {e}"));
    // Odd-sized writes, so packets and the caller's writes do not line up.
    for chunk in data.chunks(100_003) {
        w.write(chunk).await.unwrap_or_else(|e| panic!("write {path}: {e}"));
    }
    w.close().await.unwrap_or_else(|e| panic!("close {path}: {e}"));
}

async fn read(fs: &FileSystem, path: &str) -> Vec<u8> {
    let mut r = fs.open(path).await.unwrap_or_else(|e| panic!("open {path}: {e}"));
    r.read_to_end().await.unwrap_or_else(|e| panic!("read {path}: {e}"))
}

fn sizes() -> Vec<u64> {
    vec![
        0,
        1,
        511,
        512,
        513,
        PACKET - 1,
        PACKET,
        PACKET + 1,
        BLOCK - 1,
        BLOCK,
        BLOCK + 1,
        3 * BLOCK + PACKET / 2 + 7,
    ]
}

async fn check_all(fs: &FileSystem, when: &str) {
    for (i, n) in sizes().into_iter().enumerate() {
        let path = format!("/data/f{i}");
        let got = read(fs, &path).await;
        assert!(got == bytes(n, i as u64), "{path} ({n} bytes) reads back wrong {when}");
        let st = fs.get_file_status(&path).await.unwrap();
        assert_eq!(st.length, n, "{path} length {when}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn data_written_is_data_read() {
    let mut c = common::Cluster::start_with(3, "rocksdb", FAST_BLOCKS);
    c.wait_ready().await;
    c.start_datanodes(3, &[]);
    c.wait_datanodes(3).await;
    let fs = c.client("hdfs", &["hdfs"]);
    for (i, n) in sizes().into_iter().enumerate() {
        write(&fs, &format!("/data/f{i}"), &bytes(n, i as u64), 3).await;
    }
    check_all(&fs, "after writing").await;

    // Positional reads across block boundaries.
    let big = bytes(3 * BLOCK + PACKET / 2 + 7, 11);
    let mut r = fs.open("/data/f11").await.unwrap();
    for (off, len) in [
        (0, 10),
        (BLOCK - 3, 6),
        (2 * BLOCK - 1, BLOCK + 2),
        (3 * BLOCK, PACKET),
        (1, 3 * BLOCK),
    ] {
        let got = r.read_at(off, len).await.unwrap();
        let end = (off + len).min(big.len() as u64) as usize;
        assert!(got == big[off as usize..end], "pread {off}+{len}");
    }
    assert!(
        r.short_circuit_bytes() > 0,
        "replicas on this host are read short-circuit"
    );
    // Through the DataNodes, as a client on another host reads.
    let remote = raftfs_client::FileSystem::connect(
        &c.fs_uri(),
        raftfs_client::Identity::new("hdfs", &["hdfs"]),
        raftfs_client::ClientOptions {
            short_circuit: false,
            ..c.client_options()
        },
    )
    .unwrap();
    let mut rr = remote.open("/data/f11").await.unwrap();
    assert!(rr.read_to_end().await.unwrap() == big);
    assert_eq!(rr.short_circuit_bytes(), 0);
    let sum1 = fs.file_checksum("/data/f11").await.unwrap();
    assert_eq!(sum1.algorithm, "MD5-of-2048MD5-of-512CRC32C");

    // One DataNode gone: reads fail over to the other replicas.
    c.kill_datanode(1);
    check_all(&fs, "with DataNode 1 down").await;
    assert_eq!(
        fs.file_checksum("/data/f11").await.unwrap(),
        sum1,
        "checksum from other replicas"
    );

    // Everything restarts: metadata from the log, replicas from the disks.
    c.kill_all();
    c.restart_all();
    c.wait_ready().await;
    c.start_datanodes(3, &[]);
    c.wait_datanodes(3).await;
    let fs = c.client("hdfs", &["hdfs"]);
    check_all(&fs, "after a restart of everything").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flipped_byte_is_found_reported_and_replaced() {
    let mut c = common::Cluster::start_with(3, "rocksdb", FAST_BLOCKS);
    c.wait_ready().await;
    c.start_datanodes(4, &["--scan-period-ms", "300"]);
    c.wait_datanodes(4).await;
    let fs = c.client("hdfs", &["hdfs"]);
    let data = bytes(300_000, 5);
    write(&fs, "/bad", &data, 3).await;
    // Hold re-replication while we look: no copies or deletions in safe mode.
    let (code, _, err) = c.dfsadmin(&["-safemode", "enter"]);
    assert_eq!(code, 0, "{err}");
    let loc = fs.block_locations("/bad").await.unwrap();
    let victim = loc.blocks[0].locations[0].clone();
    let j = *c
        .dn_ports
        .iter()
        .find(|(_, p)| victim.addr.ends_with(&format!(":{p}")))
        .expect("victim is one of ours")
        .0;
    let files = common::block_files(&c.dn_dir(j));
    assert_eq!(files.len(), 1, "one replica on DataNode {j}");
    let mut raw = std::fs::read(&files[0]).unwrap();
    raw[12345] ^= 0x20;
    std::fs::write(&files[0], raw).unwrap();

    // Reads never return the bad byte.
    for _ in 0..3 {
        assert!(read(&fs, "/bad").await == data, "a read returned corrupt data");
    }
    // The scanner (or a read) reported it: fsck shows the corrupt replica.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, corrupt) = c.replica_counts("/bad");
        if corrupt == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "fsck never showed the corrupt replica\n{}",
            c.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Out of safe mode the replica is replaced from a good copy and deleted.
    let (code, _, err) = c.dfsadmin(&["-safemode", "leave"]);
    assert_eq!(code, 0, "{err}");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (live, corrupt) = c.replica_counts("/bad");
        let left = common::block_files(&c.dn_dir(j));
        if live == 3 && corrupt == 0 && left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not replaced: live {live}, corrupt {corrupt}, files left {left:?}\n{}",
            c.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(read(&fs, "/bad").await == data);
    let out = c
        .cli()
        .args(["fsck", "--fs", &c.fs_uri(), "--user", "hdfs", "/"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.trim_end().ends_with("The filesystem under path '/' is HEALTHY"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lost_datanode_is_re_replicated_and_a_pipeline_survives_one() {
    let mut c = common::Cluster::start_with(3, "rocksdb", FAST_BLOCKS);
    c.wait_ready().await;
    c.start_datanodes(4, &[]);
    c.wait_datanodes(4).await;
    let fs = c.client("hdfs", &["hdfs"]);

    // A write loses a pipeline node halfway: it completes with its bytes intact.
    let data = bytes(12 * BLOCK + 1234, 9);
    let mut w = fs.create_file_opt("/big", true, None, 3, BLOCK, true).await.unwrap();
    let half = data.len() / 2;
    for chunk in data[..half].chunks(65_536) {
        w.write(chunk).await.unwrap();
    }
    w.hflush().await.unwrap();
    let loc = fs.block_locations("/big").await.unwrap();
    let victim = loc.blocks.last().unwrap().locations[1].clone();
    let j = *c
        .dn_ports
        .iter()
        .find(|(_, p)| victim.addr.ends_with(&format!(":{p}")))
        .unwrap()
        .0;
    c.kill_datanode(j);
    for chunk in data[half..].chunks(65_536) {
        w.write(chunk).await.unwrap();
    }
    w.close().await.unwrap();
    assert!(read(&fs, "/big").await == data, "the file reads back identical");

    // Every block is back at three live replicas within the monitor's period.
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        let loc = fs.block_locations("/big").await.unwrap();
        let short: Vec<_> = loc
            .blocks
            .iter()
            .filter(|b| b.locations.iter().filter(|l| l.uuid != victim.uuid).count() < 3)
            .map(|b| b.block)
            .collect();
        if short.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "under-replicated: {short:?}\n{}", c.logs());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(read(&fs, "/big").await == data);
    if std::env::var_os("SHOW_LOGS").is_some() {
        eprintln!("{}", c.logs());
    }
}
