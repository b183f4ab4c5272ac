//! Storage faults the kernel really returns: the leader's fsyncs start
//! failing with EIO (an `LD_PRELOAD` shim this test builds, armed for one
//! process by its pid). The member must not acknowledge what it could not
//! make durable, must not retry the fsync as if it had worked (PostgreSQL's
//! "fsyncgate": after a failed fsync the kernel may have dropped the dirty
//! pages, so a later fsync that succeeds proves nothing): its Raft node
//! stops and the process exits saying why, as a NameNode whose journal
//! failed does. Writers move to the new leader and every write they were
//! told succeeded is there. Disarmed and restarted, the member rejoins.
//!
//! A leader whose disk fills up (a small tmpfs filled to the brim: ENOSPC)
//! does the same.
//!
//! A DataNode volume whose opens fail with EIO (a second shim, armed for
//! one process and one directory) is taken out of service; its replicas are
//! reported lost and copied from the others.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Cluster, CreateLoad};

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
    let shim = common::build_shim(shims.path(), "eio_fsync");
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
    // The first write to meet the failure may be a log append ("fsync raft
    // log") or the vote/commit record RocksDB syncs ("While fdatasync").
    assert!(
        (log.contains("fsync raft log") || log.contains("fdatasync")) && log.contains("Input/output error"),
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

/// Every `blk_<id>` replica file under `dir`, by block id.
fn replica_ids_under(dir: &Path) -> Vec<u64> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(replica_ids_under(&p));
        } else if let Some(id) = p
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix("blk_"))
            .filter(|n| !n.contains('.') && !n.contains('_'))
            .and_then(|n| n.parse().ok())
        {
            out.push(id);
        }
    }
    out
}

fn file_bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// A nameservice whose DataNodes run under the `eio_open` shim: DataNodes
/// 1-3 with one volume, DataNode 4 with a second one, and files (replication
/// 3, under `dir`) written until DataNode 4 keeps at least `on_second`
/// replicas on its second volume.
struct TwoVolumes {
    c: Cluster,
    _shims: tempfile::TempDir,
    arm_dir: PathBuf,
    second: PathBuf,
    dn4_addr: String,
    fs: raftfs_client::FileSystem,
    /// Every file whose close was acknowledged, with its contents.
    files: Vec<(String, Vec<u8>)>,
}

impl TwoVolumes {
    async fn start(dn4_extra: &[&str], dir: &str, on_second: usize, base_size: usize) -> TwoVolumes {
        let shims = tempfile::tempdir().unwrap();
        let shim = common::build_shim(shims.path(), "eio_open");
        let arm_dir = shims.path().join("arm");
        std::fs::create_dir(&arm_dir).unwrap();
        let mut c = Cluster::start_with(3, "memory", common::FAST_BLOCKS);
        c.wait_ready().await;
        c.env = vec![
            ("LD_PRELOAD".into(), shim.display().to_string()),
            ("RAFTFS_SHIM_EIO_DIR".into(), arm_dir.display().to_string()),
        ];
        c.start_datanodes(3, &[]);
        let second = c.root.path().join("dn4-second-volume");
        c.dn_extra_args = vec!["--dir".into(), second.display().to_string()];
        c.dn_extra_args.extend(dn4_extra.iter().map(|a| a.to_string()));
        c.start_datanode(4);
        c.dn_extra_args.clear();
        c.wait_datanodes(4).await;
        let dn4_addr = format!("127.0.0.1:{}", c.dn_ports[&4]);
        let fs = c.client("hdfs", &["hdfs"]);
        fs.mkdirs(dir, None).await.expect("mkdir");
        let mut v = TwoVolumes {
            c,
            _shims: shims,
            arm_dir,
            second,
            dn4_addr,
            fs,
            files: Vec::new(),
        };
        while replica_ids_under(&v.second).len() < on_second {
            assert!(v.files.len() < 40, "DataNode 4 never used its second volume");
            let i = v.files.len();
            let data = file_bytes(base_size + i * 1_000, i as u8);
            v.write(&format!("{dir}/f{i}"), data).await.expect("write a file");
        }
        v
    }

    /// Write `data` to `path`; kept in [`TwoVolumes::files`] once closed.
    async fn write(&mut self, path: &str, data: Vec<u8>) -> Result<(), raftfs_proto::FsError> {
        let mut w = self.fs.create_file_opt(path, true, None, 3, 1 << 20, true).await?;
        w.write(&data).await?;
        w.close().await?;
        self.files.push((path.to_string(), data));
        Ok(())
    }

    /// From now on every open under DataNode 4's second volume fails with EIO.
    fn fail_second_volume(&self) {
        let pid = self.c.dn_pid(4).expect("DataNode 4 runs");
        std::fs::write(
            self.arm_dir.join(format!("eio-open-{pid}")),
            self.second.display().to_string(),
        )
        .unwrap();
    }

    /// Every file reads back byte for byte.
    async fn check_files(&self, when: &str) {
        for (path, data) in &self.files {
            let got = self
                .fs
                .open(path)
                .await
                .expect("open")
                .read_to_end()
                .await
                .expect("read");
            assert!(&got == data, "{path} reads back wrong {when}");
        }
    }

    fn dn4_log(&self) -> String {
        std::fs::read_to_string(self.c.root.path().join("dn4.log")).unwrap_or_default()
    }
}

/// A DataNode with two volumes loses one to I/O errors the kernel returns
/// (its opens fail with EIO, through the `eio_open` shim): the volume is
/// taken out of service, the replicas on it are reported lost, the
/// nameservice copies them elsewhere, and the DataNode goes on serving and
/// storing on the volume that works. No file loses a byte.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_datanode_volume_that_fails_is_taken_out_and_its_replicas_are_copied_elsewhere() {
    let mut v = TwoVolumes::start(&[], "/vol", 3, 200_000).await;
    let lost: Vec<u64> = replica_ids_under(&v.second);
    let mut file_of = std::collections::HashMap::new();
    for (path, _) in &v.files {
        for b in v.fs.block_locations(path).await.expect("locations").blocks {
            file_of.insert(b.block.id, path.clone());
        }
    }

    // The second volume dies. Reads and writes meet it: reads fall back to
    // other replicas, writes go on without it.
    v.fail_second_volume();
    v.check_files("with a volume failing").await;
    for i in 0..4 {
        let data = file_bytes(150_000, 100 + i as u8);
        v.write(&format!("/vol/after{i}"), data)
            .await
            .expect("write with a volume failing");
    }
    // A read meets the failed volume only when the client picks DataNode
    // 4's replica first (the order is shuffled per call), and a write only
    // when DataNode 4 puts the block there: read until it has met it.
    let met = Instant::now();
    while !v.dn4_log().contains("volume failed") {
        assert!(
            met.elapsed() < Duration::from_secs(60),
            "DataNode 4 never met its failed volume\n{}",
            v.dn4_log()
        );
        v.check_files("with a volume failing").await;
    }

    // Its replicas are reported lost and copied: three replicas of each
    // again, none of them the ones on the dead volume.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut waiting = Vec::new();
        for id in &lost {
            let path = &file_of[id];
            let blocks = v.fs.block_locations(path).await.expect("locations").blocks;
            let b = blocks.iter().find(|b| b.block.id == *id).expect("the block");
            // DataNode 4 may hold it again, copied onto the volume that works.
            let on_dn4 = b.locations.iter().any(|l| l.addr == v.dn4_addr);
            let on_dn4_first = replica_ids_under(&v.c.dn_dir(4)).contains(id);
            if (on_dn4 && !on_dn4_first) || b.locations.len() < 3 {
                waiting.push(format!(
                    "{id}: {} replicas, on DataNode 4: {on_dn4}, on its working volume: {on_dn4_first}",
                    b.locations.len()
                ));
            }
        }
        if waiting.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the failed volume's replicas were not replaced: {waiting:?}\n{}",
            v.dn4_log()
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let log = v.dn4_log();
    assert!(
        log.contains("volume failed") && log.contains("Input/output error"),
        "DataNode 4 did not say its volume failed:\n{log}"
    );
    assert!(
        log.contains("reported lost"),
        "DataNode 4 did not report the replicas lost:\n{log}"
    );
    let (_, report, _) = v.c.dfsadmin(&["-report"]);
    assert!(
        report.contains("Volume Failures: 1"),
        "dfsadmin -report shows the failed volume:\n{report}"
    );
    v.check_files("after the volume failed").await;
}

/// Small tmpfs file systems mounted over directories, unmounted (lazily)
/// when dropped. Mounting needs root, as the CI and `raftfs dev` machines run.
struct Mounts(Vec<PathBuf>);

impl Mounts {
    /// Put `dir`, and what it holds, on a new tmpfs of `mib` MiB.
    fn tmpfs_over(&mut self, dir: &Path, mib: u64) {
        let saved = dir.with_extension("before-tmpfs");
        std::fs::rename(dir, &saved).unwrap();
        std::fs::create_dir(dir).unwrap();
        let mounted = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir)
            .status()
            .expect("run mount");
        assert!(
            mounted.success(),
            "mounting a {mib} MiB tmpfs on {} failed (the test makes a small file system to fill, which needs root)",
            dir.display()
        );
        self.0.push(dir.to_path_buf());
        common::copy_into(&saved, dir);
    }
}

impl Drop for Mounts {
    fn drop(&mut self) {
        for d in &self.0 {
            let _ = Command::new("umount").arg("-l").arg(d).status();
        }
    }
}

/// Write a ballast file into `dir` until its file system is full to the
/// last byte (the kernel answers ENOSPC); the bytes written.
/// How long a leader whose disk is full may go without acknowledging
/// anything before it must have given up leadership.
const STALLED_LEADER_GIVES_UP_WITHIN: Duration = Duration::from_secs(30);
/// How long a leader whose disk is full may go on acknowledging writes into
/// its preallocated WAL (a few MiB of creates, even on a slow machine).
const FULL_LEADER_GIVES_UP_WITHIN: Duration = Duration::from_secs(240);

fn fill_to_the_brim(dir: &Path) -> u64 {
    use std::io::Write;
    let mut f = std::fs::File::create(dir.join("ballast")).expect("create the ballast");
    let chunk = vec![0xA5u8; 1 << 20];
    let mut written = 0u64;
    for size in [1 << 20, 4096, 1] {
        loop {
            match f.write(&chunk[..size]) {
                Ok(0) => break,
                Ok(n) => written += n as u64,
                Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
                Err(e) => panic!("fill {}: {e}", dir.display()),
            }
        }
    }
    written
}

/// The leader's disk fills up (a 512 MiB tmpfs filled to the brim, so the
/// kernel answers ENOSPC, with the free-space health check off so that the
/// full disk is met by the log itself): the member acknowledges nothing it
/// could not write, its Raft node stops and it exits saying why;
/// leadership moves, writers carry on and lose nothing. Given space again
/// and restarted, it rejoins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_whose_disk_fills_acknowledges_nothing_more_and_gives_up_leadership() {
    let mut mounts = Mounts(Vec::new());
    let mut c = Cluster::start_with(3, "rocksdb", &["--min-free-disk-mb", "0"]);
    c.kill_all();
    for i in 1..=3 {
        mounts.tmpfs_over(&c.dir(i), 512);
    }
    c.restart_all();
    c.wait_ready().await;
    let fs = Arc::new(c.client("hdfs", &[]));
    fs.mkdirs("/full", None).await.expect("mkdir");
    let load = CreateLoad::start(&fs, &["/full"]);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let old = c.leader().await;
    let armed_at = load.acked_count();
    let filled = fill_to_the_brim(&c.dir(old));
    let full = Instant::now();

    // RocksDB preallocates its WAL a block ahead (1.1 x the log store's
    // write buffer, about 9 MiB), so the leader may rightly go on writing,
    // durably, into space it holds until that block is used up: how long
    // that takes depends on how fast this machine creates. What must not
    // happen is a leader that stops acknowledging without giving up, or one
    // that goes on past any preallocation.
    let filled_at_acks = load.acked_count();
    let (mut last_acks, mut last_progress) = (filled_at_acks, Instant::now());
    let mut new = c.leader().await;
    while new == old {
        let acks = load.acked_count();
        if acks != last_acks {
            (last_acks, last_progress) = (acks, Instant::now());
        }
        assert!(
            last_progress.elapsed() < STALLED_LEADER_GIVES_UP_WITHIN,
            "the member whose disk is full stopped acknowledging but kept leadership"
        );
        assert!(
            full.elapsed() < FULL_LEADER_GIVES_UP_WITHIN,
            "leadership stayed on the member whose disk is full ({} creates since)",
            acks - filled_at_acks
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        new = c.leader().await;
    }
    println!(
        "leadership moved {old} -> {new} {} ms after member {old}'s disk filled ({} MiB of ballast, {armed_at} creates before, {} after)",
        full.elapsed().as_millis(),
        filled >> 20,
        load.acked_count() - filled_at_acks
    );
    let before = load.acked_count();
    let going_on = Instant::now() + Duration::from_secs(20);
    while load.acked_count() < before + 50 {
        assert!(Instant::now() < going_on, "writes did not resume on the new leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (acked, errors) = load.stop().await;
    assert!(errors.is_empty(), "writers saw errors: {errors:?}");
    for p in &acked {
        fs.get_file_status(p)
            .await
            .unwrap_or_else(|e| panic!("acknowledged {p} lost: {e}"));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while !c.exited().contains(&old) {
        assert!(Instant::now() < deadline, "member {old} kept running with a full disk");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = std::fs::read_to_string(c.root.path().join(format!("m{old}.log"))).unwrap_or_default();
    for l in log.lines().filter(|l| l.contains("ERROR")).take(6) {
        println!("member {old}: {l}");
    }
    assert!(
        log.contains("No space left on device"),
        "member {old} did not say its disk is full:\n{log}"
    );
    assert!(
        log.contains("this member can no longer keep a durable log; exiting"),
        "member {old} did not say why it stopped:\n{log}"
    );

    // Given space again and restarted, it rejoins.
    std::fs::remove_file(c.dir(old).join("ballast")).unwrap();
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
    fs.create("/full/after", false)
        .await
        .expect("a create after it rejoined");
    c.kill_all();
}

/// With `--failed-volumes-tolerated 0` (HDFS's default), a DataNode whose
/// volume fails stops offering service and exits saying why; the
/// nameservice counts it dead and copies its replicas from the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_datanode_past_its_tolerated_volume_failures_exits_and_its_replicas_are_copied() {
    let mut v = TwoVolumes::start(&["--failed-volumes-tolerated", "0"], "/tol", 1, 100_000).await;
    // Reads meet the dead volume (some through DataNode 4).
    v.fail_second_volume();
    v.check_files("with a volume failing").await;
    // A write that lands on it fails the volume for sure.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut i = 0;
    while !v.c.exited_datanodes().contains(&4) {
        assert!(
            Instant::now() < deadline,
            "DataNode 4 kept running past its tolerated volume failures"
        );
        let data = file_bytes(50_000, 200u8.wrapping_add(i as u8));
        let _ = v.write(&format!("/tol/after{i}"), data).await;
        i += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let log = v.dn4_log();
    assert!(
        log.contains("too many failed volumes") && log.contains("1 of 2 volumes failed, 0 tolerated"),
        "DataNode 4 did not say why it stopped:\n{log}"
    );
    // Counted dead, its replicas are copied: every block has three live
    // replicas, none of them DataNode 4's.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut short = Vec::new();
        for (path, _) in &v.files {
            for b in v.fs.block_locations(path).await.expect("locations").blocks {
                if b.locations.len() < 3 || b.locations.iter().any(|l| l.addr == v.dn4_addr) {
                    short.push(format!("{path}: {}", b.locations.len()));
                }
            }
        }
        if short.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "replicas not restored: {short:?}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    v.check_files("after DataNode 4 stopped").await;
}
