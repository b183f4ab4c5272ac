//! A Raft group's state as Prometheus metrics, the same for a nameservice
//! member and a router's mount-table group.
//!
//! Gauges (term, role, leader, log indexes, log length, snapshot age,
//! voters) are read from openraft's metrics when a page is scraped
//! ([`GroupMetrics::refresh`]). Elections and leader changes are counted as
//! they happen by [`GroupMetrics::count_changes`], which follows openraft's
//! *server* metrics: those change on a vote, a role or a leader change,
//! not on every applied entry, so following them costs nothing per write.
//!
//! Caveat: "elections" counts the terms this member has seen begin, which
//! is every election any member ran that reached it (with pre-vote, a
//! campaign that could not win does not start a term).

use openraft::async_runtime::WatchReceiver;
use openraft::storage::RaftStateMachine;
use openraft::{Raft, RaftMetrics, ServerState};
use prometheus::{IntCounter, IntGauge, Opts, Registry};

use crate::network::GroupConfig;

/// The Raft metrics of one group.
pub struct GroupMetrics {
    term: IntGauge,
    is_leader: IntGauge,
    leader_id: IntGauge,
    last_log_index: IntGauge,
    committed_index: IntGauge,
    applied_index: IntGauge,
    snapshot_index: IntGauge,
    purged_index: IntGauge,
    log_entries: IntGauge,
    snapshot_age_seconds: IntGauge,
    voters: IntGauge,
    elections: IntCounter,
    leader_changes: IntCounter,
}

impl GroupMetrics {
    /// Register the group's metrics in `registry`, named `<prefix>_...`
    /// (`raftfs_raft` for a nameservice, `raftfs_mount_table_raft` for a
    /// router's group).
    pub fn register(registry: &Registry, prefix: &str) -> prometheus::Result<GroupMetrics> {
        let gauge = |name: &str, help: &str| -> prometheus::Result<IntGauge> {
            let g = IntGauge::with_opts(Opts::new(format!("{prefix}_{name}"), help))?;
            registry.register(Box::new(g.clone()))?;
            Ok(g)
        };
        let counter = |name: &str, help: &str| -> prometheus::Result<IntCounter> {
            let c = IntCounter::with_opts(Opts::new(format!("{prefix}_{name}"), help))?;
            registry.register(Box::new(c.clone()))?;
            Ok(c)
        };
        Ok(GroupMetrics {
            term: gauge("term", "The current Raft term (HDFS's epoch)")?,
            is_leader: gauge("is_leader", "1 while this member leads its group")?,
            leader_id: gauge("leader_id", "The leader this member knows of (0: none)")?,
            last_log_index: gauge("last_log_index", "Index of the last entry in this member's log")?,
            committed_index: gauge("committed_index", "Index of the last entry known committed")?,
            applied_index: gauge("applied_index", "Index of the last entry applied to the state machine")?,
            snapshot_index: gauge("snapshot_index", "Last index the newest snapshot covers")?,
            purged_index: gauge("purged_index", "Last index removed from the log")?,
            log_entries: gauge("log_entries", "Entries in the log (last index minus purged index)")?,
            snapshot_age_seconds: gauge(
                "snapshot_age_seconds",
                "Seconds since the newest snapshot was taken (-1: none)",
            )?,
            voters: gauge("voters", "Voters in the group's membership")?,
            elections: counter("elections_total", "Terms this member has seen begin since it started")?,
            leader_changes: counter(
                "leader_changes_total",
                "Times the leader this member knows of changed since it started",
            )?,
        })
    }

    /// Set the gauges from `m`; `snapshot_age_secs` from the snapshot
    /// directory (`None`: no snapshot yet).
    pub fn refresh<C: GroupConfig>(&self, m: &RaftMetrics<C>, snapshot_age_secs: Option<u64>)
    where
        C::Term: Into<u64>,
    {
        let idx = |l: Option<u64>| l.map_or(0, |i| i as i64);
        self.term.set(m.current_term.into() as i64);
        self.is_leader.set(i64::from(m.state == ServerState::Leader));
        self.leader_id.set(m.current_leader.unwrap_or(0) as i64);
        self.last_log_index.set(idx(m.last_log_index));
        self.committed_index
            .set(idx(m.local_committed.as_ref().map(|l| l.index)));
        self.applied_index.set(idx(m.last_applied.as_ref().map(|l| l.index)));
        self.snapshot_index.set(idx(m.snapshot.as_ref().map(|l| l.index)));
        let purged = m.purged.as_ref().map_or(0, |l| l.index);
        self.purged_index.set(purged as i64);
        self.log_entries
            .set(m.last_log_index.unwrap_or(0).saturating_sub(purged) as i64);
        self.snapshot_age_seconds
            .set(snapshot_age_secs.map_or(-1, |s| s as i64));
        self.voters
            .set(m.membership_config.membership().voter_ids().count() as i64);
    }

    /// Count elections and leader changes until `raft` shuts down (run it
    /// as one of the member's tasks). `start_term` is the term `raft` had
    /// when it was created ([`GroupMetrics::term_of`]), so the first
    /// election, which may end before this task first looks, counts too;
    /// the first leader this process sees counts as a change.
    pub async fn count_changes<C, SM>(&self, raft: Raft<C, SM>, start_term: u64)
    where
        C: GroupConfig,
        C::Term: Into<u64>,
        SM: RaftStateMachine<C>,
    {
        let mut server = raft.server_metrics();
        let term_now = || raft.metrics().borrow_watched().current_term.into();
        let (mut term, mut leader) = (start_term, None);
        // What happened between creation and this task's first look.
        self.note_changes(
            &mut term,
            &mut leader,
            term_now(),
            server.borrow_watched().current_leader,
        );
        loop {
            if server.changed().await.is_err() {
                return; // the Raft node stopped
            }
            self.note_changes(
                &mut term,
                &mut leader,
                term_now(),
                server.borrow_watched().current_leader,
            );
        }
    }

    /// The term of `raft` now: what [`GroupMetrics::count_changes`] takes
    /// as its start when read right after the node is created.
    pub fn term_of<C, SM>(raft: &Raft<C, SM>) -> u64
    where
        C: GroupConfig,
        C::Term: Into<u64>,
        SM: RaftStateMachine<C>,
    {
        raft.metrics().borrow_watched().current_term.into()
    }

    fn note_changes<N: PartialEq>(&self, term: &mut u64, leader: &mut Option<N>, t: u64, l: Option<N>) {
        if t > *term {
            self.elections.inc_by(t - *term);
            *term = t;
        }
        if l != *leader {
            if l.is_some() {
                self.leader_changes.inc();
            }
            *leader = l;
        }
    }
}
