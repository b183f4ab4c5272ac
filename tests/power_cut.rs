//! Crash consistency: the power goes while writers create files and write
//! data, and everything that was not fsynced is gone when it comes back.
//!
//! Every member and DataNode runs with the `power_cut` shim
//! (`tests/shims/power_cut.c`), which keeps beside each process's data
//! directory a copy holding only what the process fsynced (file contents as
//! of their last fsync/fdatasync; names as they were when synced). The cut
//! is SIGKILL of every process, then each data directory is replaced by that
//! copy, as a machine that lost power comes back with what its disk held.
//! Then the cluster restarts: every create a writer was told succeeded and
//! every file whose close was acknowledged must be there, byte for byte.
//! The run repeats the cut, so a restarted cluster's own recovery writes are
//! cut too.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{copy_dir, Cluster, CreateLoad};
use raftfs_client::FileSystem;

const MEMBERS: u64 = 3;
const DATANODES: u64 = 3;
const CUTS: usize = 2;

fn contents(i: usize) -> Vec<u8> {
    let n = 70_000 + (i * 7_919) % 200_000;
    (0..n)
        .map(|k| (k as u8).wrapping_mul(13).wrapping_add(i as u8))
        .collect()
}

/// Writes files with data until stopped; the ones whose close was
/// acknowledged, by path, with their contents' index.
struct DataLoad {
    stop: Arc<AtomicBool>,
    closed: Arc<Mutex<BTreeMap<String, usize>>>,
    task: tokio::task::JoinHandle<()>,
}

impl DataLoad {
    fn start(fs: Arc<FileSystem>, dir: &str, first: usize) -> DataLoad {
        let stop = Arc::new(AtomicBool::new(false));
        let closed = Arc::new(Mutex::new(BTreeMap::new()));
        let (s, c, dir) = (stop.clone(), closed.clone(), dir.to_string());
        let task = tokio::spawn(async move {
            let mut i = first;
            while !s.load(Ordering::Relaxed) {
                let path = format!("{dir}/d{i}");
                let written = async {
                    let mut w = fs.create_file_opt(&path, true, None, 3, 1 << 20, true).await?;
                    w.write(&contents(i)).await?;
                    w.close().await
                }
                .await;
                if written.is_ok() {
                    c.lock().unwrap().insert(path, i);
                }
                i += 1;
            }
        });
        DataLoad { stop, closed, task }
    }

    async fn stop(self) -> BTreeMap<String, usize> {
        self.stop.store(true, Ordering::Relaxed);
        let _ = tokio::time::timeout(Duration::from_secs(120), self.task).await;
        self.closed.lock().unwrap().clone()
    }
}

/// Every process's data directory, relative to the cluster root.
fn data_dirs(c: &Cluster) -> Vec<std::path::PathBuf> {
    let mut dirs: Vec<_> = (1..=MEMBERS).map(|i| c.dir(i)).collect();
    dirs.extend((1..=DATANODES).map(|j| c.dn_dir(j)));
    dirs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_acknowledged_is_lost_when_the_power_goes() {
    power_cuts("rocksdb", &[]).await;
}

/// The memory store (the namespace comes back from the snapshot and the
/// log alone) with every member applying ops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_acknowledged_is_lost_when_the_power_goes_memory_exec_apply() {
    power_cuts("memory", &["--exec", "apply"]).await;
}

async fn power_cuts(store: &str, extra: &[&str]) {
    let shims = tempfile::tempdir().unwrap();
    let shim = common::build_shim(shims.path(), "power_cut");
    let shadow = tempfile::tempdir().unwrap();
    let mut args = vec!["--safemode-extension-ms", "0", "--snapshot-logs", "300"];
    args.extend_from_slice(extra);
    let mut c = Cluster::start_with(MEMBERS, store, &args);
    c.kill_all();
    // What the members hold now (formatted, stopped) is on disk.
    let root = c.root.path().to_path_buf();
    for d in data_dirs(&c).iter().filter(|d| d.exists()) {
        copy_dir(d, &shadow.path().join(d.strip_prefix(&root).unwrap()));
    }
    c.env = vec![
        ("LD_PRELOAD".into(), shim.display().to_string()),
        ("RAFTFS_SHIM_DURABLE_ROOT".into(), root.display().to_string()),
        ("RAFTFS_SHIM_DURABLE_SHADOW".into(), shadow.path().display().to_string()),
    ];
    c.restart_all();
    c.wait_ready().await;
    c.start_datanodes(DATANODES, &[]);
    c.wait_datanodes(DATANODES as usize).await;
    let fs = Arc::new(c.client("hdfs", &["hdfs"]));
    fs.mkdirs("/pc/data", None).await.expect("mkdir");

    let mut acked_creates: Vec<String> = Vec::new();
    let mut closed: BTreeMap<String, usize> = BTreeMap::new();
    for cut in 1..=CUTS {
        let meta_dir = format!("/pc/meta{cut}");
        fs.mkdirs(&meta_dir, None).await.expect("mkdir");
        let creates = CreateLoad::start(&fs, &[meta_dir.as_str()]);
        let data = DataLoad::start(fs.clone(), "/pc/data", cut * 100_000);
        tokio::time::sleep(Duration::from_millis(3_000)).await;

        // The power goes: every process at once, then the disks keep only
        // what was synced.
        let cut_at = Instant::now();
        c.kill_all();
        for d in data_dirs(&c) {
            let synced = shadow.path().join(d.strip_prefix(&root).unwrap());
            let _ = std::fs::remove_dir_all(&d);
            if synced.exists() {
                copy_dir(&synced, &d);
            }
        }
        c.restart_all();
        for j in 1..=DATANODES {
            c.start_datanode(j);
        }
        c.wait_ready().await;
        c.wait_datanodes(DATANODES as usize).await;
        println!("cut {cut}: back in {} ms", cut_at.elapsed().as_millis());
        // Writers caught by the cut retry against the restarted cluster.
        let (acked, _errors) = creates.stop().await;
        let done = data.stop().await;
        println!(
            "cut {cut}: {} creates and {} files acknowledged",
            acked.len(),
            done.len()
        );
        assert!(
            !acked.is_empty() && !done.is_empty(),
            "the load made progress before cut {cut}"
        );
        acked_creates.extend(acked);
        closed.extend(done);

        for p in &acked_creates {
            fs.get_file_status(p)
                .await
                .unwrap_or_else(|e| panic!("acknowledged create {p} lost in cut {cut}: {e}"));
        }
        for (p, i) in &closed {
            let got = async { fs.open(p).await?.read_to_end().await }
                .await
                .unwrap_or_else(|e| panic!("file {p}, closed before cut {cut}, unreadable: {e}"));
            assert!(
                got == contents(*i),
                "file {p}, closed before cut {cut}, reads back wrong"
            );
        }
    }
}
