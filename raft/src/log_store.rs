//! The Raft log and vote in RocksDB (a nameservice's edit journal, DESIGN.md
//! §1; also the mount-table group's log), generic over the openraft type
//! configuration `C`: entries, votes and log ids need only be serde types.
//!
//! Guarantees openraft relies on:
//! * `append` leaves entries readable when it returns, and reports them
//!   durable (`io_completed`) only after an fsync of the RocksDB WAL.
//! * `save_vote` and `truncate_after` are synced before they return.
//! * Appends are made durable in order by one sync thread that takes every
//!   append waiting for it and covers them with a single fsync: group
//!   commit, many client ops per fsync.
//!
//! Entries are bincode-encoded with a version byte, keyed by big-endian
//! index. A record that does not decode is an `io::Error` (openraft stops the
//! member) rather than a panic.

use std::fmt::Debug;
use std::io;
use std::ops::{Bound, RangeBounds};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::Arc;

use openraft::alias::{EntryOf, LogIdOf, VoteOf};
use openraft::entry::RaftEntry;
use openraft::storage::{IOFlushed, LogState, RaftLogReader, RaftLogStorage};
use openraft::{OptionalSend, RaftTypeConfig};
use rocksdb::{ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB};
use serde::de::DeserializeOwned;
use serde::Serialize;

const CF_LOG: &str = "log";
const CF_RAFT_META: &str = "raft_meta";
const KEY_VOTE: &[u8] = b"vote";
const KEY_COMMITTED: &[u8] = b"committed";
const KEY_LAST_PURGED: &[u8] = b"last_purged";
const ENTRY_FORMAT_V1: u8 = 1;
/// Most appends one fsync may cover before their callbacks are answered.
const MAX_APPENDS_PER_SYNC: usize = 4096;

/// The log store of one Raft group; clones share the database and the sync
/// thread.
pub struct LogStore<C: RaftTypeConfig> {
    // Declared before `db`: dropping the last clone stops and joins the sync
    // thread first, so the database closes in the dropping thread, never in
    // a thread still running when the process exits (RocksDB aborts with
    // "pthread lock: Invalid argument" if its statics go first).
    sync: Arc<SyncThread<C>>,
    db: Arc<DB>,
    stats: Arc<IoStats>,
}

impl<C: RaftTypeConfig> Clone for LogStore<C> {
    fn clone(&self) -> Self {
        LogStore {
            sync: self.sync.clone(),
            db: self.db.clone(),
            stats: self.stats.clone(),
        }
    }
}

type SyncTx<C> = mpsc::Sender<(IOFlushed<C>, bool)>;

/// The sync thread's sender and handle; dropping the last one joins it.
struct SyncThread<C: RaftTypeConfig> {
    tx: parking_lot::Mutex<Option<SyncTx<C>>>,
    handle: parking_lot::Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl<C: RaftTypeConfig> Drop for SyncThread<C> {
    fn drop(&mut self) {
        drop(self.tx.lock().take());
        if let Some(h) = self.handle.lock().take() {
            if h.join().is_err() {
                tracing::error!("raft log sync thread panicked");
            }
        }
    }
}

/// What the health monitor reads of the log's disk: the slowest fsync and
/// the fsync failures since it last looked.
#[derive(Debug, Default)]
pub struct IoStats {
    max_fsync_ms: std::sync::atomic::AtomicU64,
    fsync_errors: std::sync::atomic::AtomicU64,
    last_error: parking_lot::Mutex<Option<String>>,
}

impl IoStats {
    fn record(&self, took: std::time::Duration, result: &Result<(), String>) {
        use std::sync::atomic::Ordering::Relaxed;
        self.max_fsync_ms.fetch_max(took.as_millis() as u64, Relaxed);
        if let Err(e) = result {
            self.fsync_errors.fetch_add(1, Relaxed);
            *self.last_error.lock() = Some(e.clone());
        }
    }

    /// (slowest fsync in ms, fsync errors, the last error) since the last call; resets them.
    pub fn take(&self) -> (u64, u64, Option<String>) {
        use std::sync::atomic::Ordering::Relaxed;
        (
            self.max_fsync_ms.swap(0, Relaxed),
            self.fsync_errors.swap(0, Relaxed),
            self.last_error.lock().take(),
        )
    }
}

fn other<E: std::fmt::Display>(what: &str) -> impl FnOnce(E) -> io::Error + '_ {
    move |e| io::Error::other(format!("{what}: {e}"))
}

fn encode<T: serde::Serialize>(v: &T) -> Vec<u8> {
    let mut out = vec![ENTRY_FORMAT_V1];
    bincode::serialize_into(&mut out, v).expect("serialize an in-memory Raft record");
    out
}

fn decode<T: serde::de::DeserializeOwned>(what: &str, bytes: &[u8]) -> io::Result<T> {
    match bytes.split_first() {
        Some((&ENTRY_FORMAT_V1, rest)) => bincode::deserialize(rest).map_err(other(what)),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what}: unknown record format"),
        )),
    }
}

fn index_key(i: u64) -> [u8; 8] {
    i.to_be_bytes()
}

fn synced() -> WriteOptions {
    let mut wo = WriteOptions::default();
    wo.set_sync(true);
    wo
}

impl<C> LogStore<C>
where
    C: RaftTypeConfig<Entry: Serialize + DeserializeOwned, Vote: Serialize + DeserializeOwned>,
    LogIdOf<C>: Serialize + DeserializeOwned,
{
    /// Open (or create) the log in `dir`.
    pub fn open(dir: &Path) -> io::Result<LogStore<C>> {
        let mut opts = Options::default();
        opts.create_if_missing(true);
        opts.create_missing_column_families(true);
        opts.set_max_background_jobs(2);
        // The log is written once, read mostly while it is hot, and purged
        // behind snapshots: no compression, a modest write buffer.
        opts.set_write_buffer_size(LOG_WRITE_BUFFER_BYTES);
        // The vote and purge marks (a rarely written column family) would
        // otherwise pin old WAL files, and a restart would replay them all.
        opts.set_max_total_wal_size(MAX_LOG_WAL_BYTES);
        opts.set_compression_type(rocksdb::DBCompressionType::None);
        let cfs = [CF_LOG, CF_RAFT_META].map(|n| {
            let mut cf = Options::default();
            cf.set_write_buffer_size(LOG_WRITE_BUFFER_BYTES);
            ColumnFamilyDescriptor::new(n, cf)
        });
        let db = Arc::new(DB::open_cf_descriptors(&opts, dir, cfs).map_err(other("open raft log"))?);
        let (sync_tx, sync_rx) = mpsc::channel::<(IOFlushed<C>, bool)>();
        let sync_db = db.clone();
        let stats = Arc::new(IoStats::default());
        let sync_stats = stats.clone();
        let handle = std::thread::Builder::new()
            .name("raft-log-sync".into())
            .spawn(move || sync_loop(sync_db, sync_rx, &sync_stats, slow_disk_file()))?;
        let sync = Arc::new(SyncThread {
            tx: parking_lot::Mutex::new(Some(sync_tx)),
            handle: parking_lot::Mutex::new(Some(handle)),
        });
        Ok(LogStore { sync, db, stats })
    }

    /// The log's fsync statistics, for the health monitor.
    pub fn io_stats(&self) -> Arc<IoStats> {
        self.stats.clone()
    }

    fn cf(&self, name: &str) -> &rocksdb::ColumnFamily {
        self.db.cf_handle(name).expect("column family created at open")
    }

    fn get_meta<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> io::Result<Option<T>> {
        match self
            .db
            .get_pinned_cf(self.cf(CF_RAFT_META), key)
            .map_err(other("read raft meta"))?
        {
            None => Ok(None),
            Some(v) => decode("raft meta", &v).map(Some),
        }
    }

    fn put_meta<T: serde::Serialize>(&self, key: &[u8], v: &T, sync: bool) -> io::Result<()> {
        let mut wb = WriteBatch::default();
        wb.put_cf(self.cf(CF_RAFT_META), key, encode(v));
        let wo = if sync { synced() } else { WriteOptions::default() };
        self.db.write_opt(wb, &wo).map_err(other("write raft meta"))
    }
}

/// Bound on the raft log's own RocksDB write-ahead log, bytes.
const MAX_LOG_WAL_BYTES: u64 = 64 * 1024 * 1024;

/// The log's memtable size (each column family). RocksDB preallocates WAL
/// space in steps of 1.1 times the largest memtable, so this also bounds how
/// long a member goes on appending into space it reserved before its disk
/// filled: a full disk stops the log (ENOSPC, the member says so and
/// exits) within about 9 MiB of appends rather than 70.
const LOG_WRITE_BUFFER_BYTES: usize = 8 * 1024 * 1024;

/// Fault injection: `RAFTFS_FAILPOINT_SLOW_DISK_FILE=<path>` (see
/// `server::failpoint`). Unset in production.
pub const ENV_SLOW_DISK_FILE: &str = "RAFTFS_FAILPOINT_SLOW_DISK_FILE";
/// The longest injected fsync delay, however large the file's number.
const MAX_SLOW_DISK_DELAY_MS: u64 = 10_000;

fn slow_disk_file() -> Option<PathBuf> {
    let f = std::env::var_os(ENV_SLOW_DISK_FILE).map(PathBuf::from)?;
    tracing::warn!(file = %f.display(), "failpoint armed: slow disk while the file holds a delay");
    Some(f)
}

/// Sleep as long as the slow-disk file says (no file, or no number: no delay).
fn slow_disk_delay(f: &Path) {
    if let Some(d) = crate::injected_delay::injected_delay(f, MAX_SLOW_DISK_DELAY_MS) {
        std::thread::sleep(d);
    }
}

/// Take every append waiting, fsync once, answer them in order. A batch of
/// appends that wrote nothing (heartbeats) needs no fsync of its own: it is
/// ordered behind every earlier append, each of which was synced before its
/// callback ran.
fn sync_loop<C: RaftTypeConfig>(
    db: Arc<DB>,
    rx: mpsc::Receiver<(IOFlushed<C>, bool)>,
    stats: &IoStats,
    slow_disk: Option<PathBuf>,
) {
    while let Ok(first) = rx.recv() {
        let mut waiting = vec![first];
        while waiting.len() < MAX_APPENDS_PER_SYNC {
            match rx.try_recv() {
                Ok(cb) => waiting.push(cb),
                Err(_) => break,
            }
        }
        let wrote = waiting.iter().any(|(_, w)| *w);
        let result = if wrote {
            let started = std::time::Instant::now();
            if let Some(f) = &slow_disk {
                slow_disk_delay(f);
            }
            let r = db.flush_wal(true).map_err(|e| e.into_string());
            stats.record(started.elapsed(), &r);
            r
        } else {
            Ok(())
        };
        if let Err(e) = &result {
            tracing::error!(error = %e, "fsync raft log");
        }
        for (cb, _) in waiting {
            cb.io_completed(result.clone().map_err(io::Error::other));
        }
    }
}

impl<C> RaftLogReader<C> for LogStore<C>
where
    C: RaftTypeConfig<Entry: Serialize + DeserializeOwned, Vote: Serialize + DeserializeOwned>,
    LogIdOf<C>: Serialize + DeserializeOwned,
{
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> io::Result<Vec<EntryOf<C>>> {
        let start = match range.start_bound() {
            Bound::Included(x) => *x,
            Bound::Excluded(x) => x.saturating_add(1),
            Bound::Unbounded => 0,
        };
        let mut out = Vec::new();
        let it = self.db.iterator_cf(
            self.cf(CF_LOG),
            IteratorMode::From(&index_key(start), Direction::Forward),
        );
        for item in it {
            let (k, v) = item.map_err(other("read raft log"))?;
            let idx = u64::from_be_bytes(
                k.as_ref()
                    .try_into()
                    .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "raft log key is not 8 bytes"))?,
            );
            if !range.contains(&idx) {
                break;
            }
            let entry: EntryOf<C> = decode("raft log entry", &v)?;
            if entry.index() != idx {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("raft log entry {} stored under index {idx}", entry.index()),
                ));
            }
            out.push(entry);
        }
        Ok(out)
    }

    async fn read_vote(&mut self) -> io::Result<Option<VoteOf<C>>> {
        self.get_meta(KEY_VOTE)
    }
}

impl<C> RaftLogStorage<C> for LogStore<C>
where
    C: RaftTypeConfig<Entry: Serialize + DeserializeOwned, Vote: Serialize + DeserializeOwned>,
    LogIdOf<C>: Serialize + DeserializeOwned,
{
    type LogReader = LogStore<C>;

    async fn get_log_state(&mut self) -> io::Result<LogState<C>> {
        let last_purged: Option<LogIdOf<C>> = self.get_meta(KEY_LAST_PURGED)?;
        let last = match self.db.iterator_cf(self.cf(CF_LOG), IteratorMode::End).next() {
            None => None,
            Some(item) => {
                let (_, v) = item.map_err(other("read raft log"))?;
                let e: EntryOf<C> = decode("raft log entry", &v)?;
                Some(e.log_id())
            }
        };
        Ok(LogState {
            last_log_id: last.or_else(|| last_purged.clone()),
            last_purged_log_id: last_purged,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &VoteOf<C>) -> io::Result<()> {
        self.put_meta(KEY_VOTE, vote, true)
    }

    async fn save_committed(&mut self, committed: Option<LogIdOf<C>>) -> io::Result<()> {
        // Not synced: losing it only means re-applying from the state
        // machine's own applied id after a crash.
        self.put_meta(KEY_COMMITTED, &committed, false)
    }

    async fn read_committed(&mut self) -> io::Result<Option<LogIdOf<C>>> {
        Ok(self.get_meta::<Option<LogIdOf<C>>>(KEY_COMMITTED)?.flatten())
    }

    async fn append<I>(&mut self, entries: I, callback: IOFlushed<C>) -> io::Result<()>
    where
        I: IntoIterator<Item = EntryOf<C>> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut wb = WriteBatch::default();
        let cf = self.cf(CF_LOG);
        let mut wrote = false;
        for e in entries {
            wb.put_cf(cf, index_key(e.index()), encode(&e));
            wrote = true;
        }
        // Readable now; durable once the sync thread has fsynced the WAL.
        if wrote {
            self.db
                .write_opt(wb, &WriteOptions::default())
                .map_err(other("append raft log"))?;
        }
        self.sync
            .tx
            .lock()
            .as_ref()
            .ok_or_else(|| io::Error::other("raft log sync thread stopped"))?
            .send((callback, wrote))
            .map_err(|_| io::Error::other("raft log sync thread stopped"))
    }

    async fn truncate_after(&mut self, last_log_id: Option<LogIdOf<C>>) -> io::Result<()> {
        let from = last_log_id.map_or(0, |l| l.index + 1);
        let mut wb = WriteBatch::default();
        wb.delete_range_cf(self.cf(CF_LOG), index_key(from), index_key(u64::MAX));
        // delete_range is exclusive at the end: also drop u64::MAX itself.
        wb.delete_cf(self.cf(CF_LOG), index_key(u64::MAX));
        self.db.write_opt(wb, &synced()).map_err(other("truncate raft log"))
    }

    async fn purge(&mut self, log_id: LogIdOf<C>) -> io::Result<()> {
        // Record the purge point first: entries at or before it are ignored
        // by openraft, so the deletion itself need not be atomic with it.
        self.put_meta(KEY_LAST_PURGED, &log_id, true)?;
        let mut wb = WriteBatch::default();
        wb.delete_range_cf(self.cf(CF_LOG), index_key(0), index_key(log_id.index + 1));
        self.db
            .write_opt(wb, &WriteOptions::default())
            .map_err(other("purge raft log"))
    }
}
