//! The log clock: the time a leader writes into log entries, kept true to
//! elapsed real time when the wall clock is stepped.
//!
//! Log time is what every replica uses for mtimes, lease ages, the retry
//! table's window and token dates (DESIGN.md §4: time comes from the entry).
//! It starts from the leader's wall clock, but a wall clock can be stepped
//! by minutes (an operator's `date -s`, a VM resumed, a bad NTP source).
//! Stepped forward, a leader that wrote its wall clock into entries would
//! age every retry record and lease at once: records still inside their
//! window in real time would expire and a retried write would apply twice;
//! live leases would pass their soft and hard limits. Stepped backward, log
//! time (kept monotonic) would freeze until the wall clock caught up.
//! HDFS avoids both by measuring those ages with the JVM's monotonic clock;
//! here the ages are differences of log times, so log time itself must
//! follow real time.
//!
//! What it guarantees:
//! - **Log time advances with the monotonic clock.** Each member keeps an
//!   anchor (a log time and the [`Instant`] it held). [`LogClock::now`]
//!   returns the wall clock while the two agree within
//!   [`CLOCK_STEP_TOLERANCE_MS`] (small NTP corrections pass straight
//!   through); past that it returns the anchor plus the elapsed monotonic
//!   time, moved toward the wall clock by at most 1/[`CLOCK_SLEW_DIVISOR`]
//!   of the elapsed time (it slews, as `adjtime` does), and says so in the
//!   log. So no step, in either direction, ages a lease or a retry record
//!   by more than 1% of the real time that passed.
//! - **Never backwards**: log time handed out is monotonic per member, and
//!   the applier keeps it monotonic across members.
//! - **A new leader continues the old one's time.** Every applied entry's
//!   time moves the member's anchor forward ([`LogClock::observe`]), so a
//!   follower's estimate runs from the leader's log time at real speed, and
//!   when it is elected its first entries follow on from the last ones, even
//!   if its own wall clock is minutes off.
//!
//! Caveats: at process start the member trusts its wall clock once (its
//! anchor is the later of the last applied log time and the wall clock): a
//! member restarted with a clock minutes ahead and elected before it
//! applies anything new would step log time. A clock that runs fast or slow
//! (rather than stepping) is followed while it stays within the tolerance.
//! Nothing in apply reads this clock: it only chooses the time a leader
//! proposes.

use std::time::Instant;

use parking_lot::Mutex;

/// The largest disagreement between the wall clock and the log clock that is
/// taken as the wall clock being right (NTP's ordinary corrections).
pub const CLOCK_STEP_TOLERANCE_MS: i64 = 1_000;

/// While the wall clock is out of step, log time moves toward it by at most
/// 1/this of the real time elapsed (1%): a step of 10 minutes is absorbed in
/// about 17 hours, and no expiry window shrinks or grows by more than 1%.
pub const CLOCK_SLEW_DIVISOR: i64 = 100;

/// How often the log says the wall clock is out of step, at most.
pub const CLOCK_STEP_WARN_INTERVAL_MS: u64 = 10_000;

/// A source of Unix milliseconds (the wall clock, or a test's).
pub type WallClock = fn() -> i64;

struct Anchor {
    /// Log time, in microseconds, at `at`.
    log_us: i64,
    at: Instant,
    warned_at: Option<Instant>,
}

impl Anchor {
    fn estimate_us(&self, now: Instant) -> i64 {
        self.log_us
            .saturating_add(now.saturating_duration_since(self.at).as_micros() as i64)
    }
}

/// One member's log clock (see the module docs).
pub struct LogClock {
    wall: WallClock,
    anchor: Mutex<Anchor>,
}

impl std::fmt::Debug for LogClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogClock")
            .field("estimate_ms", &self.estimate())
            .finish()
    }
}

impl LogClock {
    /// A clock for a member whose last applied log time is `last_log_ms`.
    pub fn new(last_log_ms: i64, wall: WallClock) -> LogClock {
        let start = last_log_ms.max(wall());
        LogClock {
            wall,
            anchor: Mutex::new(Anchor {
                log_us: start.saturating_mul(1000),
                at: Instant::now(),
                warned_at: None,
            }),
        }
    }

    /// The time for an entry proposed now (the leader's; see the module docs).
    pub fn now(&self) -> i64 {
        let wall_us = (self.wall)().saturating_mul(1000);
        let now = Instant::now();
        let mut a = self.anchor.lock();
        let elapsed_us = now.saturating_duration_since(a.at).as_micros() as i64;
        let mono_us = a.estimate_us(now);
        let off_us = wall_us.saturating_sub(mono_us);
        let t_us = if off_us.abs() <= CLOCK_STEP_TOLERANCE_MS * 1000 {
            wall_us
        } else {
            let slew = elapsed_us / CLOCK_SLEW_DIVISOR;
            let warn = a
                .warned_at
                .is_none_or(|w| now.duration_since(w).as_millis() as u64 >= CLOCK_STEP_WARN_INTERVAL_MS);
            if warn {
                a.warned_at = Some(now);
                tracing::warn!(
                    wall_minus_log_ms = off_us / 1000,
                    "the wall clock is out of step with log time: log time keeps real time and slews toward it by 1/{CLOCK_SLEW_DIVISOR}"
                );
            }
            mono_us.saturating_add(off_us.clamp(-slew, slew))
        };
        let t_us = t_us.max(a.log_us);
        a.log_us = t_us;
        a.at = now;
        t_us / 1000
    }

    /// The log time now as this member reckons it, without the wall clock:
    /// the last time it handed out or saw applied, plus the real time since.
    /// For ages measured against log times (lease hard limits, token dates).
    pub fn estimate(&self) -> i64 {
        self.anchor.lock().estimate_us(Instant::now()) / 1000
    }

    /// An entry with log time `log_ms` was applied: a leader's time ahead of
    /// this member's reckoning moves the anchor up to it.
    pub fn observe(&self, log_ms: i64) {
        let now = Instant::now();
        let mut a = self.anchor.lock();
        let log_us = log_ms.saturating_mul(1000);
        if log_us > a.estimate_us(now) {
            a.log_us = log_us;
            a.at = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, Ordering};

    static WALL: AtomicI64 = AtomicI64::new(1_700_000_000_000);

    fn wall() -> i64 {
        WALL.load(Ordering::Relaxed)
    }

    fn sleep_ms(ms: u64) {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }

    // One test drives the shared fake wall clock, so the steps do not race.
    #[test]
    fn log_time_follows_real_time_across_wall_clock_steps() {
        let base = wall();
        let c = LogClock::new(base - 5_000, wall);
        assert_eq!(c.now(), base, "in step: the wall clock");
        WALL.store(base + 300, Ordering::Relaxed);
        assert_eq!(c.now(), base + 300, "a small correction passes through");

        // Forward by ten minutes: log time moves on by real time (+1%).
        WALL.store(base + 300 + 600_000, Ordering::Relaxed);
        let before = c.now();
        assert!(before - (base + 300) < 100, "no jump: {}", before - base);
        sleep_ms(200);
        let t = c.now();
        assert!(
            (150..400).contains(&(t - before)),
            "advances at about real speed: {}",
            t - before
        );

        // Backward by twenty minutes: log time still advances.
        WALL.store(base - 1_200_000, Ordering::Relaxed);
        let before = c.now();
        sleep_ms(200);
        let t = c.now();
        assert!(t >= before, "never backwards");
        assert!((150..400).contains(&(t - before)), "does not freeze: {}", t - before);

        // The wall clock comes back near log time: followed again.
        let back = c.estimate() + 500;
        WALL.store(back, Ordering::Relaxed);
        assert_eq!(c.now(), back);
    }

    #[test]
    fn an_applied_time_ahead_moves_the_anchor_and_one_behind_does_not() {
        fn far_past() -> i64 {
            1_000
        }
        let c = LogClock::new(2_000_000, far_past);
        let e = c.estimate();
        c.observe(e - 10_000);
        assert!(c.estimate() >= e, "a time behind is ignored");
        c.observe(e + 60_000);
        assert!(c.estimate() >= e + 60_000, "a leader ahead is followed");
        assert!(c.now() >= e + 60_000, "and continued by this member as leader");
    }
}
