//! The replication monitor (HDFS `RedundancyMonitor`, `HeartbeatManager`
//! and `DatanodeAdminManager` in one periodic pass).
//!
//! Every member runs it: it declares silent DataNodes dead (their replicas
//! no longer count), moves decommissioning nodes to Decommissioned once
//! every block they hold has its replicas elsewhere, and leaves safe mode.
//! Only the leader schedules work: copies of under-replicated blocks from a
//! good replica to new nodes, and deletion of excess and corrupt replicas
//! once enough good ones exist, and none of that in safe mode. Commands wait in per-node queues until the
//! node's next heartbeat to the leader.

use std::time::{Duration, Instant};

use rustc_hash::FxHashSet;

use raftfs_proto::{AdminState, Block};

use super::replica_map::{Class, NodeIdx, Pending, State};
use super::{BlockManager, MAX_BLOCKS_PER_MONITOR_RUN};

/// What one monitor run did (logged, and checked by tests).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct MonitorStats {
    pub newly_dead: usize,
    pub copies_scheduled: usize,
    pub deletions_scheduled: usize,
    /// Complete blocks without a good replica on a live node.
    pub missing: usize,
}

impl BlockManager {
    /// One pass at `now`; `leader` says whether to schedule commands.
    pub fn monitor_tick(&self, now: Instant, leader: bool) -> MonitorStats {
        let mut stats = MonitorStats::default();
        let mut st = self.state.lock();
        let dead_after = Duration::from_millis(self.cfg.dead_after_ms);
        for i in 0..st.nodes.len() {
            let node = &st.nodes[i];
            if node.dead || now.saturating_duration_since(node.last_heartbeat) <= dead_after {
                continue;
            }
            tracing::warn!(uuid = %node.id.uuid, addr = %node.id.addr, "DataNode is dead: its replicas no longer count");
            stats.newly_dead += 1;
            st.nodes[i].dead = true;
            let blocks: Vec<u64> = st.nodes[i].blocks.iter().copied().collect();
            for b in blocks {
                st.remove_replica(i as NodeIdx, b);
            }
            let node = &mut st.nodes[i];
            node.invalidate.clear();
            node.transfers.clear();
            node.recoveries.clear();
        }
        let expired: Vec<u64> = st
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in expired {
            st.pending.remove(&id);
            st.attention.insert(id);
        }
        // As HDFS: no re-replication or deletion while in safe mode.
        if leader && !st.safemode.is_on() {
            let ids: Vec<u64> = st.attention.iter().take(MAX_BLOCKS_PER_MONITOR_RUN).copied().collect();
            let timeout = Duration::from_millis(self.cfg.pending_replication_timeout_ms);
            for id in ids {
                self.handle_block(&mut st, id, now + timeout, &mut stats);
            }
        }
        decommission_progress(&mut st);
        st.refresh_safemode(now);
        stats.missing = (st.total_complete - st.safe_complete) as usize;
        stats
    }

    fn handle_block(&self, st: &mut State, id: u64, deadline: Instant, stats: &mut MonitorStats) {
        let Some(e) = st.blocks.get(&id) else {
            st.attention.remove(&id);
            return;
        };
        if e.uc {
            st.attention.remove(&id);
            return;
        }
        let block = Block {
            id,
            gen_stamp: e.gen_stamp,
            num_bytes: e.num_bytes,
        };
        let expected = e.replication as usize;
        let mut live: Vec<NodeIdx> = Vec::new();
        let mut sources: Vec<NodeIdx> = Vec::new();
        let mut corrupt: Vec<(NodeIdx, Block)> = Vec::new();
        let mut holders: FxHashSet<NodeIdx> = FxHashSet::default();
        for r in &e.replicas {
            holders.insert(r.node);
            let node = &st.nodes[r.node as usize];
            match e.classify(r) {
                Class::Good if !node.dead => {
                    sources.push(r.node);
                    if node.usable() {
                        live.push(r.node);
                    }
                }
                Class::Corrupt if !node.dead => corrupt.push((
                    r.node,
                    Block {
                        id,
                        gen_stamp: r.gen_stamp,
                        num_bytes: r.num_bytes,
                    },
                )),
                _ => {}
            }
        }
        let pending = st.pending.get(&id).map_or(0, |p| p.targets.len());
        if let Some(p) = st.pending.get(&id) {
            holders.extend(p.targets.iter().copied());
        }
        let mut satisfied = true;
        if live.len() + pending < expected {
            satisfied = false;
            if sources.is_empty() {
                return; // missing: nothing to copy from
            }
            let need = expected - live.len() - pending;
            let targets = st.choose_targets(need, "", &holders, block.num_bytes);
            if targets.is_empty() {
                return;
            }
            // The source with the fewest queued copies; live normal ones first.
            let source = *sources
                .iter()
                .min_by_key(|n| {
                    let node = &st.nodes[**n as usize];
                    (node.admin != AdminState::Normal, node.transfers.len())
                })
                .expect("sources is not empty");
            let ids = targets.iter().map(|t| st.nodes[*t as usize].id.clone()).collect();
            st.nodes[source as usize].transfers.push_back((block, ids));
            let p = st.pending.entry(id).or_insert(Pending {
                targets: Vec::new(),
                deadline,
            });
            p.targets.extend(targets);
            p.deadline = deadline;
            stats.copies_scheduled += 1;
        } else if live.len() > expected && pending == 0 {
            // Delete from the fullest nodes first.
            live.sort_by_key(|n| st.nodes[*n as usize].stats.remaining_bytes);
            for n in live.iter().take(live.len() - expected) {
                st.queue_invalidate(*n, block);
                stats.deletions_scheduled += 1;
            }
        }
        if !corrupt.is_empty() {
            if live.len() >= expected {
                for (n, b) in corrupt {
                    st.queue_invalidate(n, b);
                    stats.deletions_scheduled += 1;
                }
            } else {
                satisfied = false;
            }
        }
        if satisfied && pending == 0 {
            st.attention.remove(&id);
        }
    }
}

/// Decommission-In-Progress nodes become Decommissioned once every complete
/// block they hold has its replication on other live, normal nodes.
fn decommission_progress(st: &mut State) {
    for i in 0..st.nodes.len() {
        if st.nodes[i].admin != AdminState::DecommissionInProgress || st.nodes[i].dead {
            continue;
        }
        let drained = st.nodes[i].blocks.iter().all(|b| match st.blocks.get(b) {
            Some(e) => !e.uc && st.live_good(e) >= e.replication as usize,
            None => true,
        });
        if drained {
            tracing::info!(uuid = %st.nodes[i].id.uuid, "DataNode decommissioned in this block pool");
            st.nodes[i].admin = AdminState::Decommissioned;
        }
    }
}
