//! A DataNode's storage: one or more data directories ("volumes"), each
//! laid out as HDFS lays out a federated DataNode:
//!
//! ```text
//! <dir>/current/ID                              ClusterID, DatanodeUuid, StorageID, node type
//! <dir>/current/<bpid>/VERSION                  NamespaceID, BlockPoolID, ctime, layout version
//! <dir>/current/<bpid>/current/finalized/subdirA/subdirB/blk_<id>, blk_<id>_<gs>.meta
//! <dir>/current/<bpid>/current/rbw/blk_<id>, blk_<id>_<gs>.meta   (being written)
//! ```
//!
//! Guarantees: nothing is written before the DataNode knows its cluster
//! (a directory of another cluster is refused untouched); a block pool's
//! directory appears the first time the node registers with its
//! nameservice; data and checksums sit side by side and every read checks
//! them. A volume that fails (an I/O error other than a missing file while
//! opening, writing, syncing or moving a replica; read-only; gone) is
//! marked failed and excluded from new writes, and its replicas leave the
//! maps ([`Storage::take_lost_replicas`]) to be reported lost; a full one is
//! skipped; neither is fatal while another volume works. Caveat: a read
//! error on a replica already open is answered to its reader without
//! failing the volume (the next open there will meet the fault).
//!
//! The replica map (per block pool: id → [`ReplicaInfo`]) is rebuilt from
//! the directories at start. File I/O here is blocking: callers run it on
//! tokio's blocking pool.

pub mod meta;
mod replica;

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use serde::{Deserialize, Serialize};

use raftfs_proto::{Block, FsError, ReplicaState, ReportedReplica};

pub use replica::{ReplicaReader, ReplicaWriter, WriterGuard};

/// The layout version this code writes.
pub const DATANODE_LAYOUT_VERSION: u32 = 1;
/// Subdirectories per level under `finalized/` (HDFS uses 32 × 32).
const SUBDIRS_PER_LEVEL: u64 = 32;

/// `<dir>/current/ID`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StorageIdent {
    pub cluster_id: String,
    pub datanode_uuid: String,
    pub storage_id: String,
    pub node_type: String,
    pub layout_version: u32,
}

/// `<dir>/current/<bpid>/VERSION`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolVersion {
    pub namespace_id: u64,
    pub block_pool_id: String,
    pub cluster_id: String,
    pub ctime_ms: i64,
    pub layout_version: u32,
}

pub struct Volume {
    pub dir: PathBuf,
    pub storage_id: RwLock<String>,
    failed: AtomicBool,
    pub failure: Mutex<Option<String>>,
}

impl Volume {
    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Mark the volume failed after `err` (logged once).
    pub fn fail(&self, what: &str, err: &std::io::Error) {
        if !self.failed.swap(true, Ordering::Relaxed) {
            tracing::error!(dir = %self.dir.display(), error = %err, "{what}: volume failed, excluded from new writes");
            *self.failure.lock() = Some(format!("{what}: {err}"));
        }
    }

    /// (capacity, free) of the file system holding the volume, bytes.
    pub fn space(&self) -> (u64, u64) {
        fs_space(&self.dir).unwrap_or((0, 0))
    }
}

fn fs_space(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs writes into the zeroed struct we pass; `c` is a valid C string.
    let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
        return None;
    }
    let frsize = s.f_frsize as u64;
    Some((s.f_blocks as u64 * frsize, s.f_bavail as u64 * frsize))
}

/// One replica as the map knows it.
#[derive(Clone)]
pub struct ReplicaInfo {
    /// Stamp and bytes on disk.
    pub block: Block,
    pub state: ReplicaState,
    pub volume: usize,
    /// Bytes acknowledged to the writer (readers may read this far).
    pub visible: u64,
    /// Highest block recovery this replica took part in.
    pub recovery_id: u64,
    /// Present while a pipeline writes the replica.
    pub writer: Option<Arc<WriterGuard>>,
    /// Written by a transfer into `tmp/`: not reported until finalized.
    pub temporary: bool,
}

impl ReplicaInfo {
    /// The bytes a reader may read: all of a finalized replica, what the
    /// writer was acknowledged of one being written.
    pub fn visible_length(&self) -> u64 {
        match self.state {
            ReplicaState::Finalized => self.block.num_bytes,
            ReplicaState::Rbw => self.visible,
        }
    }
}

/// One block pool on this node.
pub struct Pool {
    pub id: String,
    pub namespace_id: u64,
    pub replicas: Mutex<HashMap<u64, ReplicaInfo>>,
    /// Bytes of block data this node has written to the pool's replicas
    /// (pipeline writes and copies) since it started, for its metrics.
    pub bytes_written: AtomicU64,
    /// Bytes of block data this node has sent to readers from the pool
    /// since it started (short-circuit reads bypass the node: not counted).
    pub bytes_read: AtomicU64,
}

impl Pool {
    /// Every replica, for a full block report (temporary copies excluded).
    pub fn report(&self) -> Vec<ReportedReplica> {
        self.replicas
            .lock()
            .values()
            .filter(|r| !r.temporary)
            .map(|r| ReportedReplica {
                block: r.block,
                state: r.state,
            })
            .collect()
    }

    pub fn used_bytes(&self) -> u64 {
        self.replicas.lock().values().map(|r| r.block.num_bytes).sum()
    }

    pub fn get(&self, id: u64) -> Option<ReplicaInfo> {
        self.replicas.lock().get(&id).cloned()
    }

    /// Bytes of replica `id` acknowledged by the whole pipeline: readers may read this far.
    pub fn set_visible(&self, id: u64, len: u64) {
        if let Some(r) = self.replicas.lock().get_mut(&id) {
            r.visible = r.visible.max(len.min(r.block.num_bytes));
        }
    }
}

pub struct Storage {
    pub volumes: Vec<Volume>,
    ident: RwLock<Option<StorageIdent>>,
    pools: RwLock<HashMap<String, Arc<Pool>>>,
    next_volume: AtomicUsize,
    /// Failed volumes whose replicas [`Storage::take_lost_replicas`] took.
    failures_scanned: AtomicU32,
    /// A replica entered the maps on a failed volume since the last scan.
    placed_on_failed: AtomicBool,
    /// Bytes kept free on every volume (HDFS `dfs.datanode.du.reserved`).
    pub reserved_bytes: u64,
}

fn io_err(what: &str, path: &Path, e: std::io::Error) -> FsError {
    FsError::Storage(format!("{what} {}: {e}", path.display()))
}

/// Write `bytes` to `path` through a synced temporary file.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp)?;
    f.write_all(bytes)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

impl Storage {
    /// Open the volumes under `dirs`. A directory that cannot be created
    /// or read is a failed volume; directories of different clusters or
    /// DataNodes are refused.
    pub fn open(dirs: &[PathBuf], reserved_bytes: u64) -> Result<Storage, FsError> {
        if dirs.is_empty() {
            return Err(FsError::InvalidArgument("a DataNode needs at least one --dir".into()));
        }
        let mut volumes = Vec::new();
        let mut ident: Option<StorageIdent> = None;
        for dir in dirs {
            let v = Volume {
                dir: dir.clone(),
                storage_id: RwLock::new(String::new()),
                failed: AtomicBool::new(false),
                failure: Mutex::new(None),
            };
            if let Err(e) = std::fs::create_dir_all(dir.join("current")) {
                v.fail("create data directory", &e);
            }
            let id_path = dir.join("current").join("ID");
            match std::fs::read(&id_path) {
                Ok(raw) => {
                    let found: StorageIdent = serde_json::from_slice(&raw)
                        .map_err(|e| FsError::Storage(format!("{} is unreadable: {e}", id_path.display())))?;
                    if let Some(prev) = &ident {
                        if prev.cluster_id != found.cluster_id || prev.datanode_uuid != found.datanode_uuid {
                            return Err(FsError::InvalidArgument(format!(
                                "{} belongs to DataNode {} of cluster {}, the other directories to {} of {}",
                                dir.display(),
                                found.datanode_uuid,
                                found.cluster_id,
                                prev.datanode_uuid,
                                prev.cluster_id
                            )));
                        }
                    }
                    *v.storage_id.write() = found.storage_id.clone();
                    ident = Some(found);
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => v.fail("read current/ID", &e),
            }
            volumes.push(v);
        }
        if volumes.iter().all(Volume::is_failed) {
            return Err(FsError::Storage("every data directory failed; see the log".into()));
        }
        let s = Storage {
            volumes,
            ident: RwLock::new(ident),
            pools: RwLock::new(HashMap::new()),
            next_volume: AtomicUsize::new(0),
            failures_scanned: AtomicU32::new(0),
            placed_on_failed: AtomicBool::new(false),
            reserved_bytes,
        };
        s.load_pools()?;
        Ok(s)
    }

    pub fn ident(&self) -> Option<StorageIdent> {
        self.ident.read().clone()
    }

    /// Belong to `cluster_id`: a fresh node takes it (and a new uuid) and
    /// writes `current/ID`; a node of another cluster is refused untouched.
    pub fn adopt_cluster(&self, cluster_id: &str) -> Result<StorageIdent, FsError> {
        let mut ident = self.ident.write();
        if let Some(i) = &*ident {
            if i.cluster_id != cluster_id {
                return Err(FsError::InvalidArgument(format!(
                    "this DataNode belongs to cluster {}, not {cluster_id}: refusing to serve it",
                    i.cluster_id
                )));
            }
        }
        let uuid = ident
            .as_ref()
            .map(|i| i.datanode_uuid.clone())
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let mut chosen = ident.clone();
        for v in self.volumes.iter().filter(|v| !v.is_failed()) {
            if !v.storage_id.read().is_empty() {
                continue;
            }
            let id = StorageIdent {
                cluster_id: cluster_id.to_string(),
                datanode_uuid: uuid.clone(),
                storage_id: format!("DS-{}", uuid::Uuid::new_v4()),
                node_type: "DATA_NODE".into(),
                layout_version: DATANODE_LAYOUT_VERSION,
            };
            let path = v.dir.join("current").join("ID");
            let json = serde_json::to_vec_pretty(&id).expect("serialize ID");
            match write_atomic(&path, &json) {
                Ok(()) => {
                    *v.storage_id.write() = id.storage_id.clone();
                    chosen.get_or_insert(id);
                }
                Err(e) => v.fail("write current/ID", &e),
            }
        }
        let chosen = chosen.ok_or_else(|| FsError::Storage("no data directory could record the cluster id".into()))?;
        *ident = Some(chosen.clone());
        Ok(chosen)
    }

    pub fn storage_ids(&self) -> Vec<String> {
        self.volumes
            .iter()
            .filter(|v| !v.is_failed())
            .map(|v| v.storage_id.read().clone())
            .collect()
    }

    /// A replica entered the maps on `volume`: if that volume failed
    /// meanwhile, the next [`Storage::take_lost_replicas`] scans again.
    pub(crate) fn placed_on(&self, volume: usize) {
        if self.volumes[volume].is_failed() {
            self.placed_on_failed.store(true, Ordering::Relaxed);
        }
    }

    pub fn failed_volumes(&self) -> u32 {
        self.volumes.iter().filter(|v| v.is_failed()).count() as u32
    }

    /// Take the replicas on failed volumes out of the replica maps: (block
    /// pool, block) of each, for the DataNode to report deleted, so the
    /// nameservice copies them from other replicas (HDFS's DataNode removes
    /// a failed volume's replicas and reports them gone in the same way).
    /// Replicas still being written there leave too: their writer's next
    /// packet fails on the dead volume and the pipeline recovers without it.
    ///
    /// This runs on every heartbeat, so the maps are scanned only when more
    /// volumes have failed than at the last scan, or a replica was placed
    /// on a volume that failed meanwhile.
    pub fn take_lost_replicas(&self) -> Vec<(String, Block)> {
        let failed = self.failed_volumes();
        let placed_on_failed = self.placed_on_failed.swap(false, Ordering::Relaxed);
        if failed <= self.failures_scanned.load(Ordering::Relaxed) && !placed_on_failed {
            return Vec::new();
        }
        let mut lost = Vec::new();
        for pool in self.pools.read().values() {
            pool.replicas.lock().retain(|_, r| {
                let keep = !self.volumes[r.volume].is_failed();
                if !keep && !r.temporary {
                    lost.push((pool.id.clone(), r.block));
                }
                keep
            });
        }
        self.failures_scanned.fetch_max(failed, Ordering::Relaxed);
        lost
    }

    /// (capacity, remaining) over healthy volumes, bytes, after the reserve.
    pub fn space(&self) -> (u64, u64) {
        let mut seen = std::collections::HashSet::new();
        let (mut cap, mut free) = (0u64, 0u64);
        for v in self.volumes.iter().filter(|v| !v.is_failed()) {
            let (c, f) = v.space();
            // Volumes on one file system count once.
            if seen.insert((c, f / (1 << 20))) {
                cap += c.saturating_sub(self.reserved_bytes);
                free += f.saturating_sub(self.reserved_bytes);
            }
        }
        (cap, free)
    }

    pub fn pool(&self, bpid: &str) -> Option<Arc<Pool>> {
        self.pools.read().get(bpid).cloned()
    }

    pub fn pools(&self) -> Vec<Arc<Pool>> {
        self.pools.read().values().cloned().collect()
    }

    pub fn pool_dir(&self, volume: usize, bpid: &str) -> PathBuf {
        self.volumes[volume].dir.join("current").join(bpid)
    }

    /// The block pool `bpid` of namespace `nsid`, created on first use.
    pub fn open_pool(&self, bpid: &str, nsid: u64, cluster_id: &str, now_ms: i64) -> Result<Arc<Pool>, FsError> {
        if bpid.is_empty() || bpid.contains(['/', '\0']) || bpid.starts_with('.') {
            return Err(FsError::InvalidArgument(format!("block pool id {bpid:?} is not valid")));
        }
        if let Some(p) = self.pool(bpid) {
            if p.namespace_id != nsid {
                return Err(FsError::InvalidArgument(format!(
                    "block pool {bpid} belongs to namespace {}, not {nsid}",
                    p.namespace_id
                )));
            }
            return Ok(p);
        }
        let version = PoolVersion {
            namespace_id: nsid,
            block_pool_id: bpid.to_string(),
            cluster_id: cluster_id.to_string(),
            ctime_ms: now_ms,
            layout_version: DATANODE_LAYOUT_VERSION,
        };
        for (i, v) in self.volumes.iter().enumerate().filter(|(_, v)| !v.is_failed()) {
            let dir = self.pool_dir(i, bpid);
            let made = std::fs::create_dir_all(dir.join("current").join("finalized"))
                .and_then(|_| std::fs::create_dir_all(dir.join("current").join("rbw")))
                .and_then(|_| std::fs::create_dir_all(dir.join("tmp")))
                .and_then(|_| {
                    write_atomic(
                        &dir.join("VERSION"),
                        &serde_json::to_vec_pretty(&version).expect("serialize VERSION"),
                    )
                });
            if let Err(e) = made {
                v.fail("create block pool directory", &e);
            }
        }
        tracing::info!(bpid, nsid, "block pool directory created");
        let pool = Arc::new(Pool {
            id: bpid.to_string(),
            namespace_id: nsid,
            replicas: Mutex::new(HashMap::new()),
            bytes_written: AtomicU64::new(0),
            bytes_read: AtomicU64::new(0),
        });
        self.pools.write().insert(bpid.to_string(), pool.clone());
        Ok(pool)
    }

    /// Delete block pool `bpid` (HDFS `deleteBlockPool`): its replicas
    /// leave the map and its directory every volume. A pool that holds
    /// replicas is kept unless `force`. Returns the replicas it held, or
    /// `None` if it was kept; a pool this node does not have is `Some(0)`.
    pub fn remove_pool(&self, bpid: &str, force: bool) -> Result<Option<usize>, FsError> {
        let held = {
            let mut pools = self.pools.write();
            let held = pools.get(bpid).map_or(0, |p| p.replicas.lock().len());
            if held > 0 && !force {
                return Ok(None);
            }
            pools.remove(bpid);
            held
        };
        for (i, v) in self.volumes.iter().enumerate().filter(|(_, v)| !v.is_failed()) {
            let dir = self.pool_dir(i, bpid);
            match std::fs::remove_dir_all(&dir) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    v.fail("delete block pool directory", &e);
                    return Err(io_err("delete block pool directory", &dir, e));
                }
            }
        }
        tracing::info!(bpid, replicas = held, "block pool deleted");
        Ok(Some(held))
    }

    /// Read every block pool found on the volumes into the replica map.
    fn load_pools(&self) -> Result<(), FsError> {
        for (vi, v) in self.volumes.iter().enumerate().filter(|(_, v)| !v.is_failed()) {
            let cur = v.dir.join("current");
            let entries = match std::fs::read_dir(&cur) {
                Ok(e) => e,
                Err(e) => {
                    v.fail("list current/", &e);
                    continue;
                }
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let version_path = path.join("VERSION");
                let Ok(raw) = std::fs::read(&version_path) else {
                    continue;
                };
                let version: PoolVersion = serde_json::from_slice(&raw)
                    .map_err(|e| FsError::Storage(format!("{} is unreadable: {e}", version_path.display())))?;
                let pool = {
                    let mut pools = self.pools.write();
                    pools
                        .entry(version.block_pool_id.clone())
                        .or_insert_with(|| {
                            Arc::new(Pool {
                                id: version.block_pool_id.clone(),
                                namespace_id: version.namespace_id,
                                replicas: Mutex::new(HashMap::new()),
                                bytes_written: AtomicU64::new(0),
                                bytes_read: AtomicU64::new(0),
                            })
                        })
                        .clone()
                };
                let found = replica::scan_pool(&path, vi).map_err(|e| io_err("scan block pool", &path, e))?;
                let mut map = pool.replicas.lock();
                for r in found {
                    // The same block on two volumes: keep the newer stamp.
                    match map.get(&r.block.id) {
                        Some(old) if old.block.gen_stamp >= r.block.gen_stamp => {}
                        _ => {
                            map.insert(r.block.id, r);
                        }
                    }
                }
                tracing::info!(bpid = %pool.id, replicas = map.len(), dir = %v.dir.display(), "block pool loaded");
            }
        }
        Ok(())
    }

    /// A healthy volume with room for `bytes` more, round robin.
    pub fn choose_volume(&self, bytes: u64) -> Result<usize, FsError> {
        let n = self.volumes.len();
        let start = self.next_volume.fetch_add(1, Ordering::Relaxed);
        for k in 0..n {
            let i = (start + k) % n;
            let v = &self.volumes[i];
            if v.is_failed() {
                continue;
            }
            let (_, free) = v.space();
            if free >= self.reserved_bytes.saturating_add(bytes) {
                return Ok(i);
            }
        }
        Err(FsError::Storage(format!(
            "no data directory has {bytes} bytes free beyond the {} reserved (or every one failed)",
            self.reserved_bytes
        )))
    }

    /// Directory of a finalized replica of block `id`.
    pub fn finalized_dir(&self, volume: usize, bpid: &str, id: u64) -> PathBuf {
        self.pool_dir(volume, bpid)
            .join("current")
            .join("finalized")
            .join(format!("subdir{}", (id >> 16) % SUBDIRS_PER_LEVEL))
            .join(format!("subdir{}", (id >> 8) % SUBDIRS_PER_LEVEL))
    }

    pub fn rbw_dir(&self, volume: usize, bpid: &str) -> PathBuf {
        self.pool_dir(volume, bpid).join("current").join("rbw")
    }

    pub fn tmp_dir(&self, volume: usize, bpid: &str) -> PathBuf {
        self.pool_dir(volume, bpid).join("tmp")
    }

    /// (data file, meta file) of replica `r` of pool `bpid`.
    pub fn replica_paths(&self, bpid: &str, r: &ReplicaInfo) -> (PathBuf, PathBuf) {
        let dir = match (r.state, r.temporary) {
            (_, true) => self.tmp_dir(r.volume, bpid),
            (ReplicaState::Finalized, false) => self.finalized_dir(r.volume, bpid, r.block.id),
            (ReplicaState::Rbw, false) => self.rbw_dir(r.volume, bpid),
        };
        (dir.join(r.block.file_name()), dir.join(r.block.meta_file_name()))
    }
}

#[cfg(test)]
mod tests;
