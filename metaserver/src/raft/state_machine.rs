//! The openraft state machine: a thin adapter between committed log entries
//! and the namespace's [`Applier`] (DESIGN.md §4), in either execution mode.
//!
//! One `apply` call (a run of committed entries) becomes one store
//! [`WriteBatch`](crate::store::WriteBatch) per [`MAX_OPS_PER_APPLY_BATCH`]
//! ops or so (never splitting an entry), each recording the applied log id
//! and membership, so the store is always at an entry boundary. Client
//! responders are answered only after the batch holding their entry is
//! committed.
//!
//! Determinism is the applier's (time from the entry, kept monotonic; ids
//! from replicated counters or from the entry): a deterministic failure (an
//! op's `FsError`, a failed guard) is that write's answer on every replica;
//! a store error is not deterministic and stops the member (openraft treats
//! the returned `io::Error` as fatal).

use std::io;
use std::path::Path;
use std::sync::Arc;

use futures::StreamExt;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::{EntryPayload, OptionalSend};
use parking_lot::RwLock;
use tokio::sync::watch;

use raftfs_raft::injected_delay::injected_delay;

use super::{CommandResponse, LogId, SnapshotDir, SnapshotMeta, Snapshots, StoredMembership, TypeConfig};
use crate::blocks::BlockManager;
use crate::log_clock::LogClock;
use crate::namespace::apply::last_time;
use crate::namespace::ownership::{ownership, Ownership, META_OWNERSHIP};
use crate::namespace::{
    format_info, read_counter, Applier, FormatInfo, NsConfig, Overlay, META_DECOMMISSION, META_NEXT_BLOCK_ID,
};
use crate::store::{ReadView, Store, StoreError};

pub const META_APPLIED: &str = "raft_applied";
pub const META_MEMBERSHIP: &str = "raft_membership";
/// Ops after which a run of committed entries is committed as one store
/// batch and the next entries go into another (an entry is never split).
pub const MAX_OPS_PER_APPLY_BATCH: usize = 1024;

/// What the member's servers read from the state machine without going
/// through openraft: the store, the namespace config, the applied index.
pub struct SmShared {
    pub store: Arc<dyn Store>,
    /// Soft state that follows the block table (DESIGN.md §6).
    pub blocks: Arc<BlockManager>,
    /// The member's snapshots (the Raft service writes received ones here).
    pub snapshots: Arc<Snapshots>,
    /// The member's log clock: applied entries' times move it forward.
    pub log_clock: Arc<LogClock>,
    cfg: RwLock<Option<(NsConfig, FormatInfo)>>,
    /// The paths this nameservice owns in a federation, as applied: read
    /// by every routed call, so kept here rather than read from the store
    /// each time (reloaded when an entry changes the row).
    owned: RwLock<Option<Arc<Ownership>>>,
    applied_tx: watch::Sender<u64>,
}

impl SmShared {
    pub fn config(&self) -> Option<NsConfig> {
        self.cfg.read().as_ref().map(|(c, _)| c.clone())
    }
    pub fn format_info(&self) -> Option<FormatInfo> {
        self.cfg.read().as_ref().map(|(_, f)| f.clone())
    }
    /// The paths this nameservice owns, as applied (`None`: never told).
    pub fn ownership(&self) -> Option<Arc<Ownership>> {
        self.owned.read().clone()
    }
    /// Watch the index of the last applied entry.
    pub fn applied_index(&self) -> watch::Receiver<u64> {
        self.applied_tx.subscribe()
    }
    fn reload(&self) -> Result<(), StoreError> {
        *self.cfg.write() = format_info(&*self.store)?.map(|f| (NsConfig::from(&f), f));
        self.reload_ownership()
    }
    fn reload_ownership(&self) -> Result<(), StoreError> {
        *self.owned.write() = ownership(&*self.store)?.map(Arc::new);
        Ok(())
    }

    /// Bring the block manager in line with the whole block table (at
    /// start, and after a snapshot replaced the namespace).
    fn reload_blocks(&self) -> Result<(), StoreError> {
        let next = match self.store.meta(META_NEXT_BLOCK_ID)? {
            Some(_) => Some(read_counter(&*self.store, META_NEXT_BLOCK_ID)?),
            None => None,
        };
        let mut rows = std::collections::BTreeMap::new();
        let mut after = None;
        loop {
            let page = self.store.blocks_page(after, BLOCK_LOAD_PAGE)?;
            after = page.last().map(|(id, _)| *id);
            let done = page.len() < BLOCK_LOAD_PAGE;
            rows.extend(page.into_iter().map(|(id, r)| (id, Some(r))));
            if done {
                break;
            }
        }
        for id in self.blocks.known_blocks() {
            rows.entry(id).or_insert(None);
        }
        let decommission = crate::namespace::decommissioned(&*self.store)?;
        self.blocks.apply_changes(&rows, next, Some(decommission));
        Ok(())
    }
}

/// Block table rows read per page when the block manager is loaded.
const BLOCK_LOAD_PAGE: usize = 65_536;

pub struct NsStateMachine {
    shared: Arc<SmShared>,
    /// Fault injection: this process's file in [`ENV_SLOW_APPLY_DIR`];
    /// `None` in production.
    slow_apply: Option<std::path::PathBuf>,
}

/// Fault injection: `RAFTFS_FAILPOINT_SLOW_APPLY_DIR=<dir>`: while
/// `<dir>/<pid>` holds a number of milliseconds, each apply call of this
/// process waits that long before it applies (a leader that applies
/// committed entries later than its followers). Unset in production.
pub const ENV_SLOW_APPLY_DIR: &str = "RAFTFS_FAILPOINT_SLOW_APPLY_DIR";
/// The longest injected apply delay, however large the file's number.
const MAX_SLOW_APPLY_DELAY_MS: u64 = 10_000;

fn io_err(e: StoreError) -> io::Error {
    io::Error::other(e.to_string())
}

fn read_bincode<T: serde::de::DeserializeOwned>(view: &dyn Store, key: &str) -> io::Result<Option<T>> {
    match view.meta(key).map_err(io_err)? {
        None => Ok(None),
        Some(raw) => bincode::deserialize(&raw)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("meta {key}: {e}"))),
    }
}

impl NsStateMachine {
    /// Open the state machine over `store`; `dir` (the member directory)
    /// holds the snapshots. The store is restored from the latest snapshot
    /// when that is ahead of it: always for `--store memory` after a restart
    /// (the store starts empty), and for RocksDB after a machine crash that
    /// lost the unsynced tail of its writes below a snapshot whose log was
    /// already purged. Otherwise only the snapshot's manifest is read.
    pub fn open(store: Arc<dyn Store>, blocks: Arc<BlockManager>, dir: &Path) -> io::Result<NsStateMachine> {
        let snapshots = Arc::new(Snapshots::open(dir)?);
        let applied = read_bincode::<LogId>(&*store, META_APPLIED)?;
        if let Some(snap) = snapshots.latest()? {
            let snap_index = snap.manifest.meta.last_log_id.as_ref().map(|l| l.index);
            if snap_index > applied.as_ref().map(|l| l.index) {
                tracing::info!(snapshot = ?snap.manifest.meta.last_log_id, store = ?applied, "restoring the namespace from the latest snapshot");
                store.restore(&snap.data_dir()).map_err(io_err)?;
            }
        }
        let applied = read_bincode::<LogId>(&*store, META_APPLIED)?;
        let (applied_tx, _) = watch::channel(applied.map_or(0, |l| l.index));
        let log_clock = Arc::new(LogClock::new(
            last_time(&*store).map_err(io_err)?,
            raftfs_trust::clock::wall_clock_ms,
        ));
        let shared = Arc::new(SmShared {
            store,
            blocks,
            snapshots,
            log_clock,
            cfg: RwLock::new(None),
            owned: RwLock::new(None),
            applied_tx,
        });
        shared.reload().map_err(io_err)?;
        shared.reload_blocks().map_err(io_err)?;
        let slow_apply = std::env::var_os(ENV_SLOW_APPLY_DIR)
            .map(|dir| std::path::Path::new(&dir).join(std::process::id().to_string()));
        if let Some(file) = &slow_apply {
            tracing::warn!(file = %file.display(), "failpoint armed: slow apply while the file holds a delay");
        }
        Ok(NsStateMachine { shared, slow_apply })
    }

    pub fn shared(&self) -> Arc<SmShared> {
        self.shared.clone()
    }

    /// Apply `items` as one store batch, then answer their responders.
    fn apply_chunk(&self, items: Vec<EntryResponder<TypeConfig>>) -> io::Result<()> {
        let Some(applied) = items.last().map(|(e, _)| e.log_id) else {
            return Ok(());
        };
        let store = self.shared.store.clone();
        let mut answers = Vec::with_capacity(items.len());
        let (batch, formatted, applied_time) = {
            let view = store.view();
            let mut overlay: Overlay<'_, dyn ReadView + '_> = Overlay::new(&*view);
            let mut applier = Applier::new(&overlay, self.shared.config()).map_err(io_err)?;
            let mut membership: Option<StoredMembership> = None;
            for (entry, responder) in items {
                let results = match &entry.payload {
                    EntryPayload::Blank => Vec::new(),
                    EntryPayload::Normal(cmd) => applier.apply(&mut overlay, cmd).map_err(io_err)?,
                    EntryPayload::Membership(m) => {
                        membership = Some(StoredMembership::new(Some(entry.log_id), m.clone()));
                        Vec::new()
                    }
                };
                answers.push((responder, CommandResponse { results }));
            }
            applier.finish(&mut overlay);
            overlay.put_meta(META_APPLIED, bincode::serialize(&applied).expect("serialize log id"));
            if let Some(m) = &membership {
                overlay.put_meta(META_MEMBERSHIP, bincode::serialize(m).expect("serialize membership"));
            }
            let applied_time = applier.last_time_ms();
            (overlay.into_batch(), applier.formatted(), applied_time)
        };
        let block_changes = batch.blocks.clone();
        let next_block = batch
            .meta
            .get(META_NEXT_BLOCK_ID)
            .and_then(|v| v.as_deref())
            .and_then(|v| <[u8; 8]>::try_from(v).ok())
            .map(u64::from_le_bytes);
        let decommission_changed = batch.meta.contains_key(META_DECOMMISSION);
        let ownership_changed = batch.meta.contains_key(META_OWNERSHIP);
        store.commit(batch).map_err(io_err)?;
        if ownership_changed {
            self.shared.reload_ownership().map_err(io_err)?;
        }
        let decommission = match decommission_changed {
            true => Some(crate::namespace::decommissioned(&*store).map_err(io_err)?),
            false => None,
        };
        if !block_changes.is_empty() || next_block.is_some() || decommission.is_some() {
            self.shared
                .blocks
                .apply_changes(&block_changes, next_block, decommission);
        }
        if formatted {
            self.shared.reload().map_err(io_err)?;
        }
        self.shared.log_clock.observe(applied_time);
        self.shared.applied_tx.send_replace(applied.index);
        for (responder, response) in answers {
            if let Some(r) = responder {
                r.send(response);
            }
        }
        Ok(())
    }
}

impl RaftStateMachine<TypeConfig> for NsStateMachine {
    type SnapshotData = SnapshotDir;
    type SnapshotBuilder = NsSnapshotBuilder;

    async fn applied_state(&mut self) -> io::Result<(Option<LogId>, StoredMembership)> {
        let store = &*self.shared.store;
        let applied = read_bincode::<LogId>(store, META_APPLIED)?;
        let membership = read_bincode::<StoredMembership>(store, META_MEMBERSHIP)?.unwrap_or_default();
        Ok((applied, membership))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> io::Result<()>
    where
        Strm: futures::Stream<Item = io::Result<EntryResponder<TypeConfig>>> + Unpin + OptionalSend,
    {
        // A run is committed in chunks of about MAX_OPS_PER_APPLY_BATCH ops,
        // read from the stream as they go (a chunk's store view is never held
        // across an await). A member catching up after a restart gets its
        // whole log tail as one run: in one batch that held every write in
        // memory, and each entry's retry expiry, which looks at the retry
        // writes staged before it, made the run quadratic (20k ops: 1.47 s in
        // one overlay against 0.11 s in chunks of 1024).
        if let Some(delay) = self
            .slow_apply
            .as_deref()
            .and_then(|f| injected_delay(f, MAX_SLOW_APPLY_DELAY_MS))
        {
            tokio::time::sleep(delay).await;
        }
        let mut chunk = Vec::new();
        let mut chunk_ops = 0usize;
        while let Some(item) = entries.next().await {
            let item = item?;
            chunk_ops += match &item.0.payload {
                EntryPayload::Normal(cmd) => cmd.write_count(),
                _ => 1,
            };
            chunk.push(item);
            if chunk_ops >= MAX_OPS_PER_APPLY_BATCH {
                self.apply_chunk(std::mem::take(&mut chunk))?;
                chunk_ops = 0;
            }
        }
        if !chunk.is_empty() {
            self.apply_chunk(chunk)?;
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        NsSnapshotBuilder {
            store: self.shared.store.clone(),
            snapshots: self.shared.snapshots.clone(),
        }
    }

    async fn install_snapshot(&mut self, meta: &SnapshotMeta, data: SnapshotDir) -> io::Result<()> {
        if &data.manifest.meta != meta {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "snapshot: metadata does not match its manifest",
            ));
        }
        let (store, snapshots) = (self.shared.store.clone(), self.shared.snapshots.clone());
        let started = std::time::Instant::now();
        let bytes = data.manifest.total_bytes();
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            // Kept first: if the restore is cut short, the next start
            // restores from it.
            let snap = snapshots.adopt(data)?;
            store.restore(&snap.data_dir()).map_err(io_err)?;
            snapshots.prune()
        })
        .await
        .map_err(io::Error::other)??;
        self.shared.reload().map_err(io_err)?;
        self.shared.reload_blocks().map_err(io_err)?;
        let installed_time = last_time(&*self.shared.store).map_err(io_err)?;
        self.shared.log_clock.observe(installed_time);
        self.shared
            .applied_tx
            .send_replace(meta.last_log_id.as_ref().map_or(0, |l| l.index));
        tracing::info!(last = ?meta.last_log_id, bytes, ms = started.elapsed().as_millis() as u64, "snapshot installed");
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> io::Result<Option<openraft::alias::SnapshotOf<TypeConfig, SnapshotDir>>> {
        Ok(self.shared.snapshots.latest()?.map(|snap| Snapshot {
            meta: snap.manifest.meta.clone(),
            snapshot: snap,
        }))
    }
}

/// Take a snapshot of `store` into `snapshots`: the store's checkpoint
/// (RocksDB's own, or an image file for the memory store) with the applied
/// log id and membership read from that same checkpoint. Blocking.
pub fn build_snapshot(snapshots: &Snapshots, store: &dyn Store) -> io::Result<SnapshotDir> {
    snapshots.build_with(|data_dir| {
        let values = store
            .checkpoint(data_dir, &[META_APPLIED, META_MEMBERSHIP])
            .map_err(io::Error::other)?;
        let mut values = values.into_iter();
        let last_log_id: Option<LogId> = decode_meta(META_APPLIED, values.next().flatten())?;
        let last_membership: StoredMembership =
            decode_meta(META_MEMBERSHIP, values.next().flatten())?.unwrap_or_default();
        Ok(SnapshotMeta {
            last_log_id,
            last_membership,
        })
    })
}

fn decode_meta<T: serde::de::DeserializeOwned>(key: &str, raw: Option<Vec<u8>>) -> io::Result<Option<T>> {
    raw.map(|r| {
        bincode::deserialize(&r)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("snapshot meta {key}: {e}")))
    })
    .transpose()
}

/// Builds a snapshot ([`build_snapshot`]) off the async runtime's threads.
pub struct NsSnapshotBuilder {
    store: Arc<dyn Store>,
    snapshots: Arc<Snapshots>,
}

impl RaftSnapshotBuilder<TypeConfig> for NsSnapshotBuilder {
    type SnapshotData = SnapshotDir;

    async fn build_snapshot(&mut self) -> io::Result<openraft::alias::SnapshotOf<TypeConfig, SnapshotDir>> {
        let (store, snapshots) = (self.store.clone(), self.snapshots.clone());
        let started = std::time::Instant::now();
        let snap = tokio::task::spawn_blocking(move || build_snapshot(&snapshots, &*store))
            .await
            .map_err(io::Error::other)??;
        tracing::info!(
            last = ?snap.manifest.meta.last_log_id,
            bytes = snap.manifest.total_bytes(),
            files = snap.manifest.files.len(),
            ms = started.elapsed().as_millis() as u64,
            "snapshot taken"
        );
        Ok(Snapshot {
            meta: snap.manifest.meta.clone(),
            snapshot: snap,
        })
    }
}
