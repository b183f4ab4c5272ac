//! [`WriteStats`]: what a member's write pipeline counts for its metrics:
//! calls answered from the retry table, and waits for busy inode locks.
//!
//! Plain atomics bumped on the leader's write path (never inside apply);
//! the metrics page reads them when it is scraped. Caveat: under
//! `--exec apply` retries are answered inside apply, which counts nothing,
//! so there the retry count stays 0, and there are no lock waits.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

#[derive(Debug, Default)]
pub struct WriteStats {
    retry_answers: AtomicU64,
    lock_waits: AtomicU64,
    lock_wait_us: AtomicU64,
}

impl WriteStats {
    /// A write was answered from the retry table.
    pub fn retry_answered(&self) {
        self.retry_answers.fetch_add(1, Ordering::Relaxed);
    }

    /// A write found a lock busy and waited `waited` for it.
    pub fn lock_waited(&self, waited: Duration) {
        self.lock_waits.fetch_add(1, Ordering::Relaxed);
        self.lock_wait_us
            .fetch_add(waited.as_micros().min(u64::MAX as u128) as u64, Ordering::Relaxed);
    }

    pub fn retry_answers(&self) -> u64 {
        self.retry_answers.load(Ordering::Relaxed)
    }

    pub fn lock_waits(&self) -> u64 {
        self.lock_waits.load(Ordering::Relaxed)
    }

    /// Total time writes waited for locks, in microseconds.
    pub fn lock_wait_us(&self) -> u64 {
        self.lock_wait_us.load(Ordering::Relaxed)
    }
}
