//! [`MemberMetrics`]: a member's Prometheus metrics (served at `/metrics`
//! by [`super::http_pages`]).
//!
//! Client calls are counted and timed as they finish, by operation (HDFS's
//! names, [`raftfs_proto::Op::name`]) and outcome. Everything else is a
//! gauge or a count kept elsewhere, read when the page is scraped: the Raft
//! group ([`GroupMetrics`]), the block pool ([`BlockGauges`]), DataNodes,
//! safe mode, health, and the write pipeline's retry-table answers and
//! lock waits ([`WriteStats`]).

use std::time::Duration;

use prometheus::{
    Counter, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};
use raftfs_proto::{AdminState, DatanodeInfo};
use raftfs_raft::GroupMetrics;
use raftfs_web::registered;

use crate::blocks::BlockGauges;
use crate::exec::WriteStats;

/// Upper bounds of the call latency histogram's buckets, in seconds.
pub const OP_LATENCY_BUCKETS_SECS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The storage of the live DataNodes, summed from their heartbeats (what
/// `/metrics` and the `/jmx` beans both show).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capacity {
    pub total: u64,
    /// Used by every block pool.
    pub used: u64,
    /// Used by this nameservice's block pool.
    pub block_pool_used: u64,
    pub remaining: u64,
}

impl Capacity {
    pub fn of_live(nodes: &[DatanodeInfo]) -> Capacity {
        nodes
            .iter()
            .filter(|n| n.live)
            .fold(Capacity::default(), |c, n| Capacity {
                total: c.total + n.capacity_bytes,
                used: c.used + n.dfs_used_bytes,
                block_pool_used: c.block_pool_used + n.block_pool_used_bytes,
                remaining: c.remaining + n.remaining_bytes,
            })
    }
}

pub struct MemberMetrics {
    registry: Registry,
    pub raft: GroupMetrics,
    ops: IntCounterVec,
    op_seconds: HistogramVec,
    retry_answers: IntCounter,
    lock_waits: IntCounter,
    lock_wait_seconds: Counter,
    reads_served: IntCounter,
    healthy: IntGauge,
    safe_mode: IntGauge,
    blocks: IntGauge,
    blocks_complete: IntGauge,
    blocks_missing: IntGauge,
    blocks_under_replicated: IntGauge,
    blocks_corrupt: IntGauge,
    blocks_pending_replication: IntGauge,
    blocks_pending_deletion: IntGauge,
    datanodes: IntGaugeVec,
    capacity_bytes: IntGaugeVec,
}

impl Default for MemberMetrics {
    fn default() -> Self {
        MemberMetrics::new()
    }
}

impl MemberMetrics {
    pub fn new() -> MemberMetrics {
        let registry = Registry::new();
        let gauge =
            |name: &str, help: &str| registered(&registry, IntGauge::new(name, help).expect("a valid metric name"));
        let counter =
            |name: &str, help: &str| registered(&registry, IntCounter::new(name, help).expect("a valid metric name"));
        let ops = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "raftfs_ops_total",
                    "Client calls this member answered, by operation and outcome",
                ),
                &["op", "outcome"],
            )
            .expect("a valid metric"),
        );
        let op_seconds = registered(
            &registry,
            HistogramVec::new(
                HistogramOpts::new(
                    "raftfs_op_duration_seconds",
                    "Time this member took to answer client calls, by operation",
                )
                .buckets(OP_LATENCY_BUCKETS_SECS.to_vec()),
                &["op"],
            )
            .expect("a valid metric"),
        );
        let lock_wait_seconds = registered(
            &registry,
            Counter::new(
                "raftfs_lock_wait_seconds_total",
                "Time leader-side writes spent waiting for busy inode locks",
            )
            .expect("a valid metric name"),
        );
        let datanodes = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "raftfs_datanodes",
                    "DataNodes registered with this member, by state (live, dead, decommissioning, decommissioned)",
                ),
                &["state"],
            )
            .expect("a valid metric"),
        );
        let capacity_bytes = registered(
            &registry,
            IntGaugeVec::new(
                Opts::new(
                    "raftfs_capacity_bytes",
                    "Storage of the live DataNodes, as their heartbeats report it: total, used (every block pool), \
                     block_pool_used (this nameservice's), remaining",
                ),
                &["kind"],
            )
            .expect("a valid metric"),
        );
        let raft = GroupMetrics::register(&registry, "raftfs_raft").expect("the Raft metrics are registered once");
        MemberMetrics {
            raft,
            ops,
            op_seconds,
            retry_answers: counter(
                "raftfs_retry_table_hits_total",
                "Writes answered from the retry table (a client's retry of a call already executed)",
            ),
            lock_waits: counter(
                "raftfs_lock_waits_total",
                "Times a leader-side write found an inode lock busy and waited",
            ),
            lock_wait_seconds,
            reads_served: counter("raftfs_reads_served_total", "Reads this member answered"),
            healthy: gauge("raftfs_healthy", "1 while this member's health checks pass"),
            safe_mode: gauge("raftfs_safe_mode", "1 while the nameservice is in safe mode"),
            blocks: gauge("raftfs_blocks", "Blocks of this block pool (complete or being written)"),
            blocks_complete: gauge("raftfs_blocks_complete", "Complete blocks"),
            blocks_missing: gauge(
                "raftfs_blocks_missing",
                "Complete blocks without a good replica on a live DataNode",
            ),
            blocks_under_replicated: gauge(
                "raftfs_blocks_under_replicated",
                "Complete blocks with fewer good replicas than their replication",
            ),
            blocks_corrupt: gauge("raftfs_blocks_corrupt", "Blocks with at least one corrupt replica"),
            blocks_pending_replication: gauge(
                "raftfs_blocks_pending_replication",
                "Blocks with copies scheduled and not yet reported",
            ),
            blocks_pending_deletion: gauge(
                "raftfs_blocks_pending_deletion",
                "Replicas queued for deletion on their DataNodes",
            ),
            datanodes,
            capacity_bytes,
            registry,
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// One client call to `op` finished after `elapsed`.
    pub fn observe_op(&self, op: &'static str, elapsed: Duration, ok: bool) {
        self.ops
            .with_label_values(&[op, if ok { "success" } else { "error" }])
            .inc();
        self.op_seconds.with_label_values(&[op]).observe(elapsed.as_secs_f64());
    }

    /// The counts kept elsewhere, as they are now.
    pub fn refresh_counts(&self, writes: &WriteStats, reads_served: u64, healthy: bool) {
        raftfs_web::sync_counter(&self.retry_answers, writes.retry_answers());
        raftfs_web::sync_counter(&self.lock_waits, writes.lock_waits());
        let waited = writes.lock_wait_us() as f64 / 1e6;
        let counted = self.lock_wait_seconds.get();
        if waited > counted {
            self.lock_wait_seconds.inc_by(waited - counted);
        }
        raftfs_web::sync_counter(&self.reads_served, reads_served);
        self.healthy.set(i64::from(healthy));
    }

    /// The block pool and its DataNodes, as they are now.
    pub fn refresh_blocks(&self, g: &BlockGauges, safe_mode: bool, nodes: &[DatanodeInfo]) {
        self.safe_mode.set(i64::from(safe_mode));
        self.blocks.set(g.blocks as i64);
        self.blocks_complete.set(g.complete as i64);
        self.blocks_missing.set(g.missing as i64);
        self.blocks_under_replicated.set(g.under_replicated as i64);
        self.blocks_corrupt.set(g.corrupt as i64);
        self.blocks_pending_replication.set(g.pending_replication as i64);
        self.blocks_pending_deletion.set(g.pending_deletion as i64);
        let count = |f: &dyn Fn(&DatanodeInfo) -> bool| nodes.iter().filter(|n| f(n)).count() as i64;
        for (state, n) in [
            ("live", count(&|n| n.live)),
            ("dead", count(&|n| !n.live)),
            (
                "decommissioning",
                count(&|n| n.live && n.admin_state == AdminState::DecommissionInProgress),
            ),
            (
                "decommissioned",
                count(&|n| n.admin_state == AdminState::Decommissioned),
            ),
        ] {
            self.datanodes.with_label_values(&[state]).set(n);
        }
        let c = Capacity::of_live(nodes);
        for (kind, v) in [
            ("total", c.total),
            ("used", c.used),
            ("block_pool_used", c.block_pool_used),
            ("remaining", c.remaining),
        ] {
            self.capacity_bytes.with_label_values(&[kind]).set(v as i64);
        }
    }
}
