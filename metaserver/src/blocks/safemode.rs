//! Safe mode (HDFS `BlockManagerSafeMode`): after a start, a member refuses
//! namespace changes until enough of the complete blocks have a replica
//! reported, so that a client never sees files whose data is still unknown;
//! an operator can also enter and leave it by hand.

use std::time::{Duration, Instant};

pub use raftfs_proto::SafeModeStatus;

pub(crate) struct SafeMode {
    manual: bool,
    /// Still waiting for reports since the start.
    auto: bool,
    threshold: f64,
    extension: Duration,
    reached_at: Option<Instant>,
}

impl SafeMode {
    pub(crate) fn new(threshold: f64, extension: Duration) -> SafeMode {
        SafeMode {
            manual: false,
            auto: true,
            threshold,
            extension,
            reached_at: None,
        }
    }

    pub(crate) fn is_on(&self) -> bool {
        self.manual || self.auto
    }

    pub(crate) fn enter(&mut self) {
        self.manual = true;
    }

    pub(crate) fn leave(&mut self) {
        self.manual = false;
        self.auto = false;
    }

    fn needed(&self, total: u64) -> u64 {
        (total as f64 * self.threshold).ceil() as u64
    }

    /// Re-check the automatic part with the current counts.
    pub(crate) fn update(&mut self, safe: u64, total: u64, now: Instant) {
        if !self.auto {
            return;
        }
        if safe >= self.needed(total) {
            let at = *self.reached_at.get_or_insert(now);
            if total == 0 || now.duration_since(at) >= self.extension {
                tracing::info!(safe, total, "leaving safe mode: enough blocks reported");
                self.auto = false;
            }
        } else {
            self.reached_at = None;
        }
    }

    pub(crate) fn status(&self, safe: u64, total: u64) -> SafeModeStatus {
        let message = if self.manual {
            "Safe mode is ON. It was turned on manually. Use \"raftfs dfsadmin -safemode leave\" to turn safe mode off."
                .to_string()
        } else if self.auto {
            let needed = self.needed(total);
            if safe >= needed {
                format!(
                    "Safe mode is ON. The reported blocks {safe} has reached the threshold {:.4} of total blocks {total}. In safe mode extension. Safe mode will be turned off automatically soon.",
                    self.threshold
                )
            } else {
                format!(
                    "Safe mode is ON. The reported blocks {safe} needs additional {} blocks to reach the threshold {:.4} of total blocks {total}.",
                    needed - safe,
                    self.threshold
                )
            }
        } else {
            "Safe mode is OFF".to_string()
        };
        SafeModeStatus {
            on: self.is_on(),
            manual: self.manual,
            safe_blocks: safe,
            total_blocks: total,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_after_threshold_and_extension() {
        let t0 = Instant::now();
        let mut s = SafeMode::new(0.999, Duration::from_millis(100));
        s.update(0, 0, t0);
        assert!(!s.is_on(), "an empty namespace leaves at once");

        let mut s = SafeMode::new(0.999, Duration::from_millis(100));
        s.update(500, 1000, t0);
        assert!(s.is_on());
        assert!(s.status(500, 1000).message.contains("needs additional 499 blocks"));
        s.update(1000, 1000, t0);
        assert!(s.is_on(), "in the extension");
        s.update(1000, 1000, t0 + Duration::from_millis(150));
        assert!(!s.is_on());
        s.enter();
        assert!(s.is_on() && s.status(1000, 1000).manual);
        s.update(1000, 1000, t0 + Duration::from_secs(10));
        assert!(s.is_on(), "manual safe mode stays until left");
        s.leave();
        assert!(!s.is_on());
    }
}
