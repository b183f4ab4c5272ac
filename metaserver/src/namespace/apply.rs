//! [`Applier`]: the one place a log entry's payload ([`Command`]) becomes
//! writes on an [`Overlay`]. The Raft state machine calls it for every
//! committed entry; the engine (`namespace::Engine`) calls it for every
//! write it commits, so the two cannot drift apart.
//!
//! Guarantees, per entry, on every replica alike:
//! * log time is monotonic: an entry's time is the max of the time it
//!   carries and the last applied one (leaders' clocks differ), kept in
//!   the meta row [`META_LAST_TIME`];
//! * each write is all or nothing: a failed op or a failed guard leaves no
//!   trace, and is that write's answer;
//! * a write whose (client id, call id) the retry table holds is answered
//!   from it and writes nothing;
//! * retry records are expired once per entry ([`expire_retry`]), never per
//!   batch of entries, so batching never changes what a late retry sees.
//!
//! Only a store error is not deterministic: it is returned as `Err` and the
//! caller must not commit the overlay (the state machine stops the member).

use raftfs_proto::{codec, CallCtx, FsError, Op, OpResult};

use super::command::{Command, PlannedWrite};
use super::{execute_write, expire_retry, format_batch, format_info, live_retry, record_retry, NsConfig, Overlay};
use crate::store::{ReadView, StoreError};

/// Meta key of the last applied log time (i64 little-endian).
pub const META_LAST_TIME: &str = "last_time_ms";

/// Each write's answer, in the order the entry carries them.
pub type WriteResults = Vec<Result<OpResult, FsError>>;

/// Applies entries to an overlay; carries what one entry leaves for the next.
pub struct Applier {
    cfg: Option<NsConfig>,
    last_time_ms: i64,
    formatted: bool,
}

/// The last applied log time in `view` (0 before the first entry).
pub fn last_time<V: ReadView + ?Sized>(view: &V) -> Result<i64, StoreError> {
    match view.meta(META_LAST_TIME)? {
        None => Ok(0),
        Some(raw) => {
            let bytes: [u8; 8] = raw.as_slice().try_into().map_err(|_| StoreError::Corrupt {
                table: "meta",
                detail: format!("{META_LAST_TIME} is not 8 bytes"),
            })?;
            Ok(i64::from_le_bytes(bytes))
        }
    }
}

fn storage(op: &str, e: String) -> StoreError {
    StoreError::Io(format!("apply {op}: {e}"))
}

impl Applier {
    /// An applier for entries following the state in `view`; `cfg` is the
    /// namespace's config if it is formatted (the caller usually has it).
    pub fn new<V: ReadView + ?Sized>(view: &V, cfg: Option<NsConfig>) -> Result<Applier, StoreError> {
        Ok(Applier {
            cfg,
            last_time_ms: last_time(view)?,
            formatted: false,
        })
    }

    /// [`Applier::new`] reading the config from `view` as well.
    pub fn load<V: ReadView + ?Sized>(view: &V) -> Result<Applier, StoreError> {
        let cfg = format_info(view)?.map(|f| NsConfig::from(&f));
        Applier::new(view, cfg)
    }

    /// Whether an entry applied by this applier formatted the namespace.
    pub fn formatted(&self) -> bool {
        self.formatted
    }

    /// The last log time applied.
    pub fn last_time_ms(&self) -> i64 {
        self.last_time_ms
    }

    fn advance_time(&mut self, entry_ms: i64) -> i64 {
        self.last_time_ms = self.last_time_ms.max(entry_ms);
        self.last_time_ms
    }

    /// Apply one entry's payload.
    pub fn apply<V: ReadView + ?Sized>(
        &mut self,
        overlay: &mut Overlay<'_, V>,
        cmd: &Command,
    ) -> Result<WriteResults, StoreError> {
        match cmd {
            Command::Format(info) => {
                if format_info(overlay)?.is_none() {
                    let b = format_batch(info);
                    let target = overlay.batch_mut();
                    target.inodes.extend(b.inodes);
                    target.meta.extend(b.meta);
                    self.cfg = Some(NsConfig::from(info));
                    self.formatted = true;
                    self.advance_time(info.time_ms);
                }
                Ok(vec![Ok(OpResult::Unit)])
            }
            Command::Ops { time_ms, ops } => self.apply_ops(overlay, *time_ms, ops.iter().map(|(c, o)| (c, o))),
            Command::Deltas { time_ms, writes } => self.apply_deltas(overlay, *time_ms, writes),
            Command::RoutedOps { time_ms, ops } => {
                let ops: Vec<(CallCtx, &Op)> = ops
                    .iter()
                    .map(|(ctx, routed_by, op)| {
                        let ctx = CallCtx {
                            routed_by: *routed_by,
                            ..ctx.clone()
                        };
                        (ctx, op)
                    })
                    .collect();
                self.apply_ops(overlay, *time_ms, ops.iter().map(|(c, o)| (c, *o)))
            }
        }
    }

    /// Apply an entry of client ops (`--exec apply`): plan and stage each.
    pub fn apply_ops<'o, V: ReadView + ?Sized>(
        &mut self,
        overlay: &mut Overlay<'_, V>,
        time_ms: i64,
        ops: impl Iterator<Item = (&'o CallCtx, &'o Op)>,
    ) -> Result<WriteResults, StoreError> {
        let time = self.advance_time(time_ms);
        let mut results = Vec::with_capacity(ops.size_hint().0);
        for (ctx, op) in ops {
            let r = match &self.cfg {
                None => Err(FsError::Unavailable("the namespace is not formatted yet".into())),
                Some(c) => execute_write(c, overlay, ctx, op, time),
            };
            if let Err(FsError::Storage(e)) = r {
                return Err(storage(op.name(), e));
            }
            results.push(r);
        }
        expire_retry(overlay, time)?;
        Ok(results)
    }

    /// Apply an entry of writes planned on the leader (`--exec leader`):
    /// stage each one's mutations; a failed guard is that write's answer.
    pub fn apply_deltas<V: ReadView + ?Sized>(
        &mut self,
        overlay: &mut Overlay<'_, V>,
        time_ms: i64,
        writes: &[PlannedWrite],
    ) -> Result<WriteResults, StoreError> {
        let time = self.advance_time(time_ms);
        let mut results = Vec::with_capacity(writes.len());
        for w in writes {
            let r = match &self.cfg {
                None => Err(FsError::Unavailable("the namespace is not formatted yet".into())),
                Some(_) => stage_planned(overlay, w, time),
            };
            if let Err(FsError::Storage(e)) = r {
                return Err(storage("planned write", e));
            }
            results.push(r);
        }
        expire_retry(overlay, time)?;
        Ok(results)
    }

    /// Record the last log time in `overlay`; once per batch, before it is committed.
    pub fn finish<V: ReadView + ?Sized>(&self, overlay: &mut Overlay<'_, V>) {
        overlay.put_meta(META_LAST_TIME, self.last_time_ms.to_le_bytes().to_vec());
    }
}

/// Stage one planned write at log time `time_ms`, or answer it from the
/// retry table when its call is there already.
fn stage_planned<V: ReadView + ?Sized>(
    overlay: &mut Overlay<'_, V>,
    w: &PlannedWrite,
    time_ms: i64,
) -> Result<OpResult, FsError> {
    if let Some(key) = &w.retry {
        if let Some(rec) = live_retry(overlay, key, time_ms)? {
            return codec::decode(&rec.result, "retry record");
        }
    }
    overlay.stage(&w.mutations, time_ms)?;
    if let Some(key) = &w.retry {
        record_retry(overlay, key.clone(), time_ms, &w.result)?;
    }
    Ok(w.result.clone())
}
