//! The host's wall clock, as every raftfs process reads it, with a test
//! offset.
//!
//! Wall-clock time is what hosts agree on only roughly: token expiry dates
//! cross hosts (a member signs, a DataNode checks), and a nameservice's log
//! time starts from the leader's wall clock. Reading it through
//! [`wall_clock_ms`] lets the clock-fault tests step one process's clock
//! the way an operator's `date -s` or a misbehaving NTP server would,
//! without touching the host's clock (which every process on the machine
//! shares) and without libfaketime (which would also shift the monotonic
//! clock the tests rely on staying true).
//!
//! `RAFTFS_FAILPOINT_CLOCK_OFFSET_DIR=<dir>`: while `<dir>/<pid>` holds a
//! signed number of milliseconds, this process's wall clock reads that much
//! off. The file is read again at most every [`CLOCK_OFFSET_REREAD_MS`], so
//! a test steps a running process's clock by writing the file. Unset in
//! production, where the offset is zero and nothing is read.
//!
//! Caveat: the monotonic clock ([`std::time::Instant`]) is never offset; the
//! offset models a stepped wall clock, not a slowed or sped-up one.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub const ENV_CLOCK_OFFSET_DIR: &str = "RAFTFS_FAILPOINT_CLOCK_OFFSET_DIR";

/// How stale a test clock offset may be before the file is read again.
pub const CLOCK_OFFSET_REREAD_MS: u64 = 50;

struct OffsetFile {
    path: std::path::PathBuf,
    started: Instant,
    /// Milliseconds since `started` when the file was last read.
    read_at_ms: AtomicI64,
    offset_ms: AtomicI64,
}

fn offset_file() -> Option<&'static OffsetFile> {
    static FILE: OnceLock<Option<OffsetFile>> = OnceLock::new();
    FILE.get_or_init(|| {
        let dir = std::env::var_os(ENV_CLOCK_OFFSET_DIR)?;
        let path = std::path::Path::new(&dir).join(std::process::id().to_string());
        tracing::warn!(file = %path.display(), "failpoint armed: the wall clock is offset while the file holds milliseconds");
        Some(OffsetFile {
            path,
            started: Instant::now(),
            read_at_ms: AtomicI64::new(i64::MIN),
            offset_ms: AtomicI64::new(0),
        })
    })
    .as_ref()
}

/// The test offset of this process's wall clock (0 unless armed).
fn offset_ms() -> i64 {
    let Some(f) = offset_file() else {
        return 0;
    };
    let since = f.started.elapsed().as_millis() as i64;
    let read_at = f.read_at_ms.load(Ordering::Relaxed);
    if read_at == i64::MIN || since.saturating_sub(read_at) >= CLOCK_OFFSET_REREAD_MS as i64 {
        let offset = std::fs::read_to_string(&f.path)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .unwrap_or(0);
        if f.offset_ms.swap(offset, Ordering::Relaxed) != offset {
            tracing::warn!(offset_ms = offset, "failpoint: the wall clock is stepped");
        }
        f.read_at_ms.store(since, Ordering::Relaxed);
    }
    f.offset_ms.load(Ordering::Relaxed)
}

/// Unix milliseconds on this host's wall clock (plus the test offset, if armed).
pub fn wall_clock_ms() -> i64 {
    let real = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    real.saturating_add(offset_ms())
}
