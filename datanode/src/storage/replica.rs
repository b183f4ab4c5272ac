//! Replica operations: create, write, finalize, reopen (pipeline and block
//! recovery, append), read with checksum verification, delete, and the
//! start-up scan of a block pool directory.
//!
//! Invariants, asserted or checked: a packet always starts at the chunk
//! boundary at or below the replica's length (so a partial last chunk is
//! rewritten whole and its checksum replaced); the meta file always holds
//! one checksum per chunk of the data file; a replica leaves `rbw/` for
//! `finalized/` only after both files are fsynced.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use raftfs_proto::datanode::{ReplicaReport, BYTES_PER_CHECKSUM, CHECKSUM_SIZE_BYTES};
use raftfs_proto::{Block, FsError, ReplicaState};

use super::meta::{self, checksum_offset, meta_len, META_HEADER_BYTES};
use super::{Pool, ReplicaInfo, Storage};

const CHUNK: u64 = BYTES_PER_CHECKSUM as u64;

fn floor_chunk(n: u64) -> u64 {
    n - n % CHUNK
}

/// Held by the task writing a replica; a recovery sets `abort` and then
/// takes `lock` to wait until the writer has let go.
pub struct WriterGuard {
    pub abort: AtomicBool,
    pub lock: Arc<tokio::sync::Mutex<()>>,
}

impl WriterGuard {
    fn new() -> Arc<WriterGuard> {
        Arc::new(WriterGuard {
            abort: AtomicBool::new(false),
            lock: Arc::new(tokio::sync::Mutex::new(())),
        })
    }
}

pub struct ReplicaWriter {
    pool: Arc<Pool>,
    pub block: Block,
    volume: usize,
    data: File,
    meta: File,
    data_path: PathBuf,
    meta_path: PathBuf,
    pub guard: Arc<WriterGuard>,
    temporary: bool,
}

fn storage_err(storage: &Storage, volume: usize, what: &str, path: &Path, e: io::Error) -> FsError {
    if e.kind() != io::ErrorKind::NotFound {
        storage.volumes[volume].fail(what, &e);
    }
    FsError::Storage(format!("{what} {}: {e}", path.display()))
}

impl ReplicaWriter {
    /// Write one packet: `data` at `offset` with its chunk checksums.
    pub fn write_packet(&mut self, storage: &Storage, offset: u64, data: &[u8], sums: &[u8]) -> Result<(), FsError> {
        if self.guard.abort.load(Ordering::Relaxed) {
            return Err(FsError::Unavailable(format!(
                "replica {} is being recovered: the write was stopped",
                self.block
            )));
        }
        let len = self.block.num_bytes;
        if data.is_empty() {
            return Ok(()); // the empty last packet of a block
        }
        if offset != floor_chunk(len) {
            return Err(FsError::InvalidArgument(format!(
                "packet at offset {offset} does not continue replica {} of {len} bytes",
                self.block
            )));
        }
        if let Err(chunk) = raftfs_proto::checksum::verify(data, sums) {
            return Err(FsError::Checksum(format!(
                "Checksum error: {} at offset {} (chunk {chunk} of a packet)",
                self.block,
                offset + chunk as u64 * CHUNK
            )));
        }
        let end = offset + data.len() as u64;
        (|| -> io::Result<()> {
            self.data.write_all_at(data, offset)?;
            self.meta.write_all_at(sums, checksum_offset(offset))?;
            if end < len {
                self.data.set_len(end)?;
                self.meta.set_len(meta_len(end))?;
            }
            Ok(())
        })()
        .map_err(|e| storage_err(storage, self.volume, "write block file", &self.data_path, e))?;
        self.block.num_bytes = end;
        if let Some(r) = self.pool.replicas.lock().get_mut(&self.block.id) {
            r.block.num_bytes = end;
        }
        Ok(())
    }

    /// Make everything written so far durable (hsync).
    pub fn sync(&self, storage: &Storage) -> Result<(), FsError> {
        self.data
            .sync_data()
            .and_then(|_| self.meta.sync_data())
            .map_err(|e| storage_err(storage, self.volume, "sync block file", &self.data_path, e))
    }

    /// Sync, move to `finalized/`, and mark the replica complete.
    pub fn finalize(self, storage: &Storage) -> Result<Block, FsError> {
        self.sync(storage)?;
        let dir = storage.finalized_dir(self.volume, &self.pool.id, self.block.id);
        let (data_to, meta_to) = (dir.join(self.block.file_name()), dir.join(self.block.meta_file_name()));
        (|| -> io::Result<()> {
            std::fs::create_dir_all(&dir)?;
            std::fs::rename(&self.meta_path, &meta_to)?;
            std::fs::rename(&self.data_path, &data_to)?;
            File::open(&dir)?.sync_all()
        })()
        .map_err(|e| storage_err(storage, self.volume, "finalize block", &self.data_path, e))?;
        let mut map = self.pool.replicas.lock();
        let r = map
            .get_mut(&self.block.id)
            .ok_or_else(|| FsError::Internal(format!("replica {} left the map while being written", self.block)))?;
        r.state = ReplicaState::Finalized;
        r.block = self.block;
        r.visible = self.block.num_bytes;
        r.writer = None;
        r.temporary = false;
        Ok(self.block)
    }

    /// Stop writing but keep the replica being written (a copy made for a
    /// pipeline recovery, which the writer's pipeline goes on with).
    pub fn close_rbw(self, storage: &Storage) -> Result<Block, FsError> {
        self.sync(storage)?;
        let mut map = self.pool.replicas.lock();
        if let Some(r) = map.get_mut(&self.block.id) {
            if self.temporary {
                // A recovery copy joins rbw/ so the pipeline can reopen it.
                let dir = storage.rbw_dir(self.volume, &self.pool.id);
                std::fs::rename(&self.meta_path, dir.join(self.block.meta_file_name()))
                    .and_then(|_| std::fs::rename(&self.data_path, dir.join(self.block.file_name())))
                    .map_err(|e| storage_err(storage, self.volume, "move block copy", &self.data_path, e))?;
                r.temporary = false;
            }
            r.visible = self.block.num_bytes;
            r.writer = None;
        }
        Ok(self.block)
    }
}

/// One piece of a replica as read: (offset in the block, data, checksums).
pub type Chunk = (u64, Vec<u8>, Vec<u8>);

/// Reads a replica's bytes with their stored checksums, verifying them.
pub struct ReplicaReader {
    pub block: Block,
    data: File,
    meta: File,
    pos: u64,
    end: u64,
    /// Bytes on disk (the stored checksums cover exactly these).
    on_disk: u64,
    path: PathBuf,
}

impl ReplicaReader {
    /// The next `(offset, data, checksums)` of at most `max` bytes (a
    /// multiple of 512), or `None` at the end. A stored chunk that does not
    /// match its checksum is a `Checksum` error.
    pub fn next_chunk(&mut self, max: usize) -> Result<Option<Chunk>, FsError> {
        if self.pos >= self.end {
            return Ok(None);
        }
        let n = (self.end - self.pos).min(floor_chunk(max as u64).max(CHUNK));
        // Read whole stored chunks, so every checksum can be verified.
        let stored_end = (self.pos + n).div_ceil(CHUNK).saturating_mul(CHUNK).min(self.on_disk);
        let mut data = vec![0u8; (stored_end - self.pos) as usize];
        let chunks = data.len().div_ceil(BYTES_PER_CHECKSUM);
        let mut sums = vec![0u8; chunks * CHECKSUM_SIZE_BYTES];
        let io = |e: io::Error| FsError::Storage(format!("read block file {}: {e}", self.path.display()));
        self.data.read_exact_at(&mut data, self.pos).map_err(io)?;
        self.meta
            .read_exact_at(&mut sums, checksum_offset(self.pos))
            .map_err(io)?;
        if let Err(chunk) = raftfs_proto::checksum::verify(&data, &sums) {
            return Err(FsError::Checksum(format!(
                "Checksum error: {} at offset {} of {}",
                self.block,
                self.pos + chunk as u64 * CHUNK,
                self.path.display()
            )));
        }
        if (data.len() as u64) > n {
            // The reader stops inside a chunk: checksum what it gets.
            data.truncate(n as usize);
            let last = floor_chunk(n) as usize;
            let tail = raftfs_proto::checksum::compute(&data[last..]);
            sums.truncate(last / BYTES_PER_CHECKSUM * CHECKSUM_SIZE_BYTES);
            sums.extend_from_slice(&tail);
        }
        let offset = self.pos;
        self.pos += n;
        Ok(Some((offset, data, sums)))
    }
}

impl Storage {
    fn open_files(data: &Path, meta_path: &Path) -> io::Result<(File, File)> {
        let d = OpenOptions::new().read(true).write(true).open(data)?;
        let mut m = OpenOptions::new().read(true).write(true).open(meta_path)?;
        meta::check_header(&mut m)?;
        Ok((d, m))
    }

    /// A new replica of `block` (being written). `temporary` puts it in
    /// `tmp/` (a copy by transfer) and keeps it out of reports until finalized.
    pub fn create_replica(&self, pool: &Arc<Pool>, block: Block, temporary: bool) -> Result<ReplicaWriter, FsError> {
        if let Some(old) = pool.get(block.id) {
            if old.block.gen_stamp >= block.gen_stamp {
                return Err(FsError::FileAlreadyExists(format!(
                    "Block {} already exists in state {:?} and thus cannot be created.",
                    old.block, old.state
                )));
            }
            self.delete_replica(pool, &old.block)?;
        }
        let volume = self.choose_volume(block.num_bytes.max(CHUNK))?;
        let dir = if temporary {
            self.tmp_dir(volume, &pool.id)
        } else {
            self.rbw_dir(volume, &pool.id)
        };
        let b = Block { num_bytes: 0, ..block };
        let (data_path, meta_path) = (dir.join(b.file_name()), dir.join(b.meta_file_name()));
        let (data, meta) = (|| -> io::Result<(File, File)> {
            std::fs::create_dir_all(&dir)?;
            let d = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(true)
                .open(&data_path)?;
            let _ = std::fs::remove_file(&meta_path);
            Ok((d, meta::create(&meta_path)?))
        })()
        .map_err(|e| storage_err(self, volume, "create block file", &data_path, e))?;
        let guard = WriterGuard::new();
        pool.replicas.lock().insert(
            b.id,
            ReplicaInfo {
                block: b,
                state: ReplicaState::Rbw,
                volume,
                visible: 0,
                recovery_id: 0,
                writer: Some(guard.clone()),
                temporary,
            },
        );
        self.placed_on(volume);
        Ok(ReplicaWriter {
            pool: pool.clone(),
            block: b,
            volume,
            data,
            meta,
            data_path,
            meta_path,
            guard,
            temporary,
        })
    }

    /// Reopen a replica for a rebuilt pipeline or an append: its stamp
    /// becomes `block.gen_stamp` (newer than its own), it is cut to
    /// `block.num_bytes`, and it is being written again. The caller has
    /// stopped any writer first.
    pub fn reopen_replica(&self, pool: &Arc<Pool>, block: Block) -> Result<ReplicaWriter, FsError> {
        let r = pool
            .get(block.id)
            .ok_or_else(|| FsError::FileNotFound(format!("Cannot recover a non-existent replica of {block}")))?;
        if r.block.gen_stamp > block.gen_stamp {
            return Err(FsError::InvalidArgument(format!(
                "replica {} is newer than the requested {block}",
                r.block
            )));
        }
        if r.block.num_bytes < block.num_bytes {
            return Err(FsError::InvalidArgument(format!(
                "replica {} has {} bytes, fewer than the {} acknowledged",
                r.block, r.block.num_bytes, block.num_bytes
            )));
        }
        let (old_data, old_meta) = self.replica_paths(&pool.id, &r);
        let dir = self.rbw_dir(r.volume, &pool.id);
        let (data_path, meta_path) = (dir.join(block.file_name()), dir.join(block.meta_file_name()));
        let (data, meta) = (|| -> io::Result<(File, File)> {
            std::fs::create_dir_all(&dir)?;
            std::fs::rename(&old_meta, &meta_path)?;
            std::fs::rename(&old_data, &data_path)?;
            let (d, m) = Self::open_files(&data_path, &meta_path)?;
            truncate(&d, &m, r.block.num_bytes, block.num_bytes)?;
            Ok((d, m))
        })()
        .map_err(|e| storage_err(self, r.volume, "reopen replica", &old_data, e))?;
        let guard = WriterGuard::new();
        pool.replicas.lock().insert(
            block.id,
            ReplicaInfo {
                block,
                state: ReplicaState::Rbw,
                volume: r.volume,
                visible: block.num_bytes,
                recovery_id: r.recovery_id,
                writer: Some(guard.clone()),
                temporary: false,
            },
        );
        self.placed_on(r.volume);
        Ok(ReplicaWriter {
            pool: pool.clone(),
            block,
            volume: r.volume,
            data,
            meta,
            data_path,
            meta_path,
            guard,
            temporary: false,
        })
    }

    /// Open a reader over `[offset, offset + length)` of a replica with
    /// stamp `block.gen_stamp` or newer; it starts at the chunk boundary at
    /// or below `offset`.
    pub fn open_reader(&self, pool: &Pool, block: &Block, offset: u64, length: u64) -> Result<ReplicaReader, FsError> {
        let r = pool
            .get(block.id)
            .ok_or_else(|| FsError::BlockMissing(format!("Replica not found for {block}")))?;
        if r.block.gen_stamp < block.gen_stamp {
            return Err(FsError::BlockMissing(format!(
                "Replica {} is older than the requested {block}",
                r.block
            )));
        }
        let readable = r.visible_length();
        if offset > readable {
            return Err(FsError::InvalidArgument(format!(
                "Offset {offset} is beyond the {readable} readable bytes of {}",
                r.block
            )));
        }
        let (data_path, meta_path) = self.replica_paths(&pool.id, &r);
        let (data, meta) = Self::open_files(&data_path, &meta_path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                FsError::BlockMissing(format!("Replica {} has no block file: {e}", r.block))
            } else {
                storage_err(self, r.volume, "open block file", &data_path, e)
            }
        })?;
        let on_disk = data
            .metadata()
            .map_err(|e| FsError::Storage(format!("stat {}: {e}", data_path.display())))?
            .len()
            .min(r.block.num_bytes.max(readable));
        Ok(ReplicaReader {
            block: r.block,
            data,
            meta,
            pos: floor_chunk(offset),
            end: offset.saturating_add(length).min(readable),
            on_disk,
            path: data_path,
        })
    }

    /// Delete a replica if its stamp is `block`'s or older. True if one went.
    pub fn delete_replica(&self, pool: &Pool, block: &Block) -> Result<bool, FsError> {
        let r = {
            let mut map = pool.replicas.lock();
            match map.get(&block.id) {
                Some(r) if r.block.gen_stamp <= block.gen_stamp => {
                    if let Some(w) = &r.writer {
                        w.abort.store(true, Ordering::Relaxed);
                    }
                    map.remove(&block.id).expect("present")
                }
                _ => return Ok(false),
            }
        };
        let (d, m) = self.replica_paths(&pool.id, &r);
        for p in [d, m] {
            if let Err(e) = std::fs::remove_file(&p) {
                if e.kind() != io::ErrorKind::NotFound {
                    return Err(storage_err(self, r.volume, "delete block file", &p, e));
                }
            }
        }
        Ok(true)
    }

    /// First step of a block recovery: remember `recovery_id` and report the
    /// replica. The caller has stopped any writer first.
    pub fn init_recovery(&self, pool: &Pool, block: &Block, recovery_id: u64) -> Result<ReplicaReport, FsError> {
        let mut map = pool.replicas.lock();
        let r = map
            .get_mut(&block.id)
            .ok_or_else(|| FsError::BlockMissing(format!("Replica not found for {block}")))?;
        if r.block.gen_stamp < block.gen_stamp {
            return Err(FsError::InvalidArgument(format!(
                "replica {} is older than {block}: not recovering it",
                r.block
            )));
        }
        if r.recovery_id > recovery_id {
            return Err(FsError::RecoveryInProgress(format!(
                "replica {} is in a newer recovery {}",
                r.block, r.recovery_id
            )));
        }
        r.recovery_id = recovery_id;
        r.writer = None;
        Ok(ReplicaReport {
            block: r.block,
            state: r.state,
            visible_length: r.block.num_bytes,
        })
    }

    /// Last step of a block recovery: cut the replica to `new_length`,
    /// stamp it `recovery_id`, and finalize it.
    pub fn update_recovery(
        &self,
        pool: &Pool,
        block: &Block,
        recovery_id: u64,
        new_length: u64,
    ) -> Result<Block, FsError> {
        let r = pool
            .get(block.id)
            .ok_or_else(|| FsError::BlockMissing(format!("Replica not found for {block}")))?;
        if r.recovery_id != recovery_id {
            return Err(FsError::RecoveryInProgress(format!(
                "replica {} is in recovery {}, not {recovery_id}",
                r.block, r.recovery_id
            )));
        }
        if r.block.num_bytes < new_length {
            return Err(FsError::InvalidArgument(format!(
                "replica {} has {} bytes, fewer than the agreed {new_length}",
                r.block, r.block.num_bytes
            )));
        }
        let newb = Block {
            id: block.id,
            gen_stamp: recovery_id,
            num_bytes: new_length,
        };
        let (old_data, old_meta) = self.replica_paths(&pool.id, &r);
        let dir = self.finalized_dir(r.volume, &pool.id, block.id);
        let (data_to, meta_to) = (dir.join(newb.file_name()), dir.join(newb.meta_file_name()));
        (|| -> io::Result<()> {
            let (d, m) = Self::open_files(&old_data, &old_meta)?;
            truncate(&d, &m, r.block.num_bytes, new_length)?;
            d.sync_all()?;
            m.sync_all()?;
            std::fs::create_dir_all(&dir)?;
            std::fs::rename(&old_meta, &meta_to)?;
            std::fs::rename(&old_data, &data_to)?;
            File::open(&dir)?.sync_all()
        })()
        .map_err(|e| storage_err(self, r.volume, "recover replica", &old_data, e))?;
        let mut map = pool.replicas.lock();
        if let Some(x) = map.get_mut(&block.id) {
            x.block = newb;
            x.state = ReplicaState::Finalized;
            x.visible = new_length;
            x.writer = None;
            x.temporary = false;
        }
        Ok(newb)
    }
}

/// Cut data file `d` (now `len` bytes) to `to` bytes and its meta file `m`
/// to match, re-checksumming a partial last chunk.
fn truncate(d: &File, m: &File, len: u64, to: u64) -> io::Result<()> {
    if to == len {
        return Ok(());
    }
    d.set_len(to)?;
    m.set_len(meta_len(to))?;
    if !to.is_multiple_of(CHUNK) {
        let start = floor_chunk(to);
        let mut tail = vec![0u8; (to - start) as usize];
        d.read_exact_at(&mut tail, start)?;
        m.write_all_at(&raftfs_proto::checksum::compute(&tail), checksum_offset(start))?;
    }
    Ok(())
}

/// Parse `blk_<id>` and `blk_<id>_<gs>.meta` names.
fn parse_block_name(name: &str) -> Option<(u64, Option<u64>)> {
    let rest = name.strip_prefix("blk_")?;
    match rest.strip_suffix(".meta") {
        Some(m) => {
            let (id, gs) = m.split_once('_')?;
            Some((id.parse().ok()?, Some(gs.parse().ok()?)))
        }
        None => Some((rest.parse().ok()?, None)),
    }
}

/// Every replica under one block pool directory of volume `volume`.
/// Leftovers of interrupted transfers (`tmp/`) are removed. A replica
/// being written keeps the bytes its checksums cover.
pub(super) fn scan_pool(pool_dir: &Path, volume: usize) -> io::Result<Vec<ReplicaInfo>> {
    let tmp = pool_dir.join("tmp");
    if tmp.exists() {
        std::fs::remove_dir_all(&tmp)?;
        std::fs::create_dir_all(&tmp)?;
    }
    let mut out = Vec::new();
    let cur = pool_dir.join("current");
    let mut stack = vec![(cur.join("finalized"), ReplicaState::Finalized)];
    stack.push((cur.join("rbw"), ReplicaState::Rbw));
    while let Some((dir, state)) = stack.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        let mut metas = std::collections::HashMap::new();
        let mut datas = Vec::new();
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().to_string();
            if entry.file_type()?.is_dir() {
                stack.push((entry.path(), state));
                continue;
            }
            match parse_block_name(&name) {
                Some((id, Some(gs))) => {
                    metas.insert(id, (gs, entry.path()));
                }
                Some((id, None)) => datas.push((id, entry.path())),
                None => {}
            }
        }
        for (id, path) in datas {
            let Some((gs, meta_path)) = metas.get(&id) else {
                tracing::warn!(file = %path.display(), "block file without a meta file: ignored");
                continue;
            };
            let data_len = std::fs::metadata(&path)?.len();
            let meta_bytes = std::fs::metadata(meta_path)?.len();
            let covered = meta_bytes.saturating_sub(META_HEADER_BYTES) / CHECKSUM_SIZE_BYTES as u64 * CHUNK;
            let len = match state {
                ReplicaState::Finalized => data_len,
                ReplicaState::Rbw => data_len.min(covered),
            };
            let mut f = File::open(meta_path)?;
            let mut head = [0u8; META_HEADER_BYTES as usize];
            if f.read_exact(&mut head).is_err() || head != meta::header() {
                tracing::warn!(file = %meta_path.display(), "meta file with a bad header: replica ignored");
                continue;
            }
            out.push(ReplicaInfo {
                block: Block {
                    id,
                    gen_stamp: *gs,
                    num_bytes: len,
                },
                state,
                volume,
                visible: len,
                recovery_id: 0,
                writer: None,
                temporary: false,
            });
        }
    }
    Ok(out)
}
