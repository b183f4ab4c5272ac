//! [`LeaderContact`]: when a member last heard from a leader of its
//! group, and whether it can say it is in touch with the group's quorum.
//!
//! openraft tells a leader when a quorum last acknowledged it
//! (`last_quorum_acked`) but tells a follower nothing of the kind:
//! a follower cut off from the leader keeps its last known leader (its
//! pre-votes fail, so it never becomes a candidate) and looks current.
//! The `Raft` service therefore touches a [`LeaderContact`] whenever it
//! accepts an AppendEntries from a current leader (heartbeats included),
//! and [`in_touch_with_quorum`] combines both views. A router uses it to
//! enter safe mode rather than route by a table it cannot know is current.

use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use openraft::storage::RaftStateMachine;
use openraft::ServerState;
use parking_lot::Mutex;

use crate::network::GroupConfig;

/// When this member last accepted AppendEntries from a current leader.
#[derive(Debug, Default)]
pub struct LeaderContact {
    last: Mutex<Option<Instant>>,
}

impl LeaderContact {
    /// A leader's AppendEntries (or heartbeat) was accepted now.
    pub fn touch(&self) {
        *self.last.lock() = Some(Instant::now());
    }

    /// How long ago the last one was; `None` if never since start.
    pub fn since(&self) -> Option<Duration> {
        self.last.lock().map(|t| t.elapsed())
    }
}

/// Whether `raft` is in touch with its group's quorum within `within`: a
/// leader whose quorum acknowledged it that recently (a group of one
/// always is), or a follower or learner that accepted AppendEntries from
/// a leader that recently. A candidate, or a member that never heard from
/// a leader since it started, is not.
pub fn in_touch_with_quorum<C, SM>(raft: &openraft::Raft<C, SM>, contact: &LeaderContact, within: Duration) -> bool
where
    C: GroupConfig,
    SM: RaftStateMachine<C>,
{
    // Read in place: a router asks this on every call it serves, and a
    // copy of the metrics (membership, replication progress) would cost
    // allocations each time.
    let metrics = raft.metrics();
    let m = metrics.borrow_watched();
    match m.state {
        ServerState::Leader => {
            let membership = m.membership_config.membership();
            let alone = membership.voter_ids().all(|v| v == m.id);
            alone
                || m.last_quorum_acked
                    .as_ref()
                    .is_some_and(|at| openraft::Instant::elapsed(&**at) <= within)
        }
        ServerState::Follower | ServerState::Learner => contact.since().is_some_and(|d| d <= within),
        ServerState::Candidate | ServerState::Shutdown => false,
    }
}
