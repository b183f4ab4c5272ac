//! The write pipeline: a client op becomes a log command, in one of two
//! execution modes (DESIGN.md §4).
//!
//! ```text
//!                      ┌──────────── --exec apply ─────────────┐
//!   write(ctx, op) ────┤                                        ├──► Command::Ops ──► log
//!                      │  every replica plans it when applied   │
//!                      └────────────────────────────────────────┘
//!                      ┌──────────── --exec leader ────────────┐
//!   write(ctx, op) ────┤ lock paths (locks::lock_paths)         │
//!                      │ plan vs. committed state + LeaderEpoch ├──► Command::Deltas ──► log
//!                      │ reserve quota; answer failures at once │        │
//!                      └────────────────────────────────────────┘        ▼
//!                       release locks ◄── applied (guards checked) ◄─ every replica
//! ```
//!
//! * [`ExecMode`]: which of the two a member or engine runs.
//! * [`prepare`]: one leader-side attempt (lock, plan, reserve), shared by
//!   the engine and the member.
//! * [`epoch`]: the leader's state for one term: counters, quota usage of
//!   writes in flight, monotonic log time.
//! * [`engine`]: the namespace without Raft, in either mode.
//! * [`pipeline`]: a member's writes in either mode, proposed through
//!   [`batcher`] (group commit into entries) and a [`batcher::Proposer`]
//!   the member implements over Raft: nothing here knows Raft.
//!
//! In both modes the log entry is applied by the namespace's
//! [`Applier`](crate::namespace::Applier); the Raft glue only carries it.

pub mod batcher;
pub mod engine;
pub mod epoch;
pub mod pipeline;
pub mod prepare;
pub mod write_stats;

pub use engine::{Engine, MAX_OPS_PER_ENGINE_BATCH};
pub use epoch::LeaderEpoch;
pub use write_stats::WriteStats;

/// How writes are executed (`--exec`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExecMode {
    /// The log carries each op; every replica plans and applies it in log
    /// order (the classic design; the baseline).
    Apply,
    /// The leader plans each op under fine-grained locks and the log
    /// carries its delta; replicas only write deltas.
    #[default]
    Leader,
}

impl ExecMode {
    pub fn name(self) -> &'static str {
        match self {
            ExecMode::Apply => "apply",
            ExecMode::Leader => "leader",
        }
    }
}

impl std::fmt::Display for ExecMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for ExecMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "apply" => Ok(ExecMode::Apply),
            "leader" => Ok(ExecMode::Leader),
            other => Err(format!("unknown execution mode {other:?}: expected leader or apply")),
        }
    }
}
