//! [`BlockManager`]: the API over the DataNode registry and the replica
//! map (`replica_map`), kept under one lock.
//!
//! Replica classification (HDFS's rules, simplified to one pool):
//! * a complete block's replica is *good* when it is finalized with the
//!   block's stamp and length; a newer stamp or a replica still being
//!   written is *pending* (a recovery or a copy in progress); anything else
//!   (older stamp, wrong length, reported bad by a reader) is *corrupt*;
//! * a block being written counts every replica with the block's stamp or
//!   newer as good (the pipeline's expected locations) and older ones as
//!   corrupt (left behind by a pipeline recovery).
//!
//! Redundancy counts good replicas on live nodes in normal admin state;
//! replicas on decommissioning nodes still serve reads and copies.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rustc_hash::{FxHashMap, FxHashSet};
use tokio::sync::watch;

use raftfs_proto::datanode::{DatanodeCommand, FullReport, Heartbeat, IncrementalReportMsg, Registration};
use raftfs_proto::{AdminState, Block, DatanodeId, DatanodeInfo, FsError, LocatedBlocks, ReplicaState};

use super::safemode::{SafeMode, SafeModeStatus};
use super::{BlockManagerConfig, MAX_DATANODES, MAX_INVALIDATES_PER_HEARTBEAT, MAX_TRANSFERS_PER_NODE};
use super::{MIN_REPLICATION, REPORT_CHUNK_REPLICAS};
use crate::store::BlockRecord;

use super::replica_map::{BlockEntry, BlockStatus, Class, Descriptor, NodeIdx, Replica, State};

/// Block counts of one block pool, as a member knows them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlockGauges {
    /// Every block (complete or being written).
    pub blocks: u64,
    pub complete: u64,
    /// Complete blocks without a good replica on a live node.
    pub missing: u64,
    /// Complete blocks with fewer good replicas on live, normal nodes than
    /// their replication.
    pub under_replicated: u64,
    /// Blocks with at least one corrupt replica.
    pub corrupt: u64,
    /// Blocks with copies scheduled and not yet reported.
    pub pending_replication: u64,
    /// Replicas queued for deletion on their DataNodes.
    pub pending_deletion: u64,
}

pub struct BlockManager {
    pub(crate) cfg: BlockManagerConfig,
    pub(crate) state: Mutex<State>,
    /// Safe mode is known to be off: a write reads this without the
    /// state's lock, so no namespace op waits behind a block report (the
    /// automatic part never turns back on; an operator's `enter` clears it
    /// under the lock).
    safemode_off: std::sync::atomic::AtomicBool,
    /// Bumped whenever replicas change, for callers waiting on a block.
    reports: watch::Sender<u64>,
}

impl BlockManager {
    pub fn new(cfg: BlockManagerConfig) -> BlockManager {
        let safemode = SafeMode::new(cfg.safemode_threshold, Duration::from_millis(cfg.safemode_extension_ms));
        BlockManager {
            cfg,
            state: Mutex::new(State {
                nodes: Vec::new(),
                by_uuid: FxHashMap::default(),
                blocks: FxHashMap::default(),
                unknown: FxHashMap::default(),
                next_block_id: 0,
                attention: FxHashSet::default(),
                pending: FxHashMap::default(),
                decommission: BTreeSet::new(),
                safemode,
                total_complete: 0,
                safe_complete: 0,
            }),
            reports: watch::channel(0).0,
            safemode_off: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn config(&self) -> &BlockManagerConfig {
        &self.cfg
    }

    fn bump(&self) {
        self.reports.send_modify(|v| *v += 1);
    }

    /// Follow block table changes of an applied batch (`None`: the block is
    /// gone, its replicas are queued for deletion), the block id counter, and
    /// the set of nodes to decommission.
    pub fn apply_changes(
        &self,
        changes: &BTreeMap<u64, Option<BlockRecord>>,
        next_block_id: Option<u64>,
        decommission: Option<BTreeSet<String>>,
    ) {
        let mut st = self.state.lock();
        if let Some(n) = next_block_id {
            st.next_block_id = st.next_block_id.max(n);
        }
        for (id, change) in changes {
            let id = *id;
            match change {
                Some(rec) => {
                    let was = st.blocks.get(&id).map(|e| (e.uc, e.safe));
                    if let Some((false, safe)) = was {
                        st.total_complete -= 1;
                        if safe {
                            st.safe_complete -= 1;
                        }
                    }
                    let unknown = st.unknown.remove(&id).unwrap_or_default();
                    let e = st.blocks.entry(id).or_insert_with(|| BlockEntry {
                        inode: rec.inode,
                        gen_stamp: 0,
                        num_bytes: 0,
                        replication: 0,
                        uc: true,
                        replicas: Vec::new(),
                        safe: false,
                    });
                    e.inode = rec.inode;
                    e.gen_stamp = rec.gen_stamp;
                    e.num_bytes = rec.num_bytes;
                    e.replication = rec.replication;
                    e.uc = rec.under_construction;
                    e.safe = false;
                    let complete = !e.uc;
                    for r in &unknown {
                        if !e.replicas.iter().any(|x| x.node == r.node) {
                            e.replicas.push(*r);
                        }
                    }
                    for r in unknown {
                        st.nodes[r.node as usize].blocks.insert(id);
                    }
                    if complete {
                        st.total_complete += 1;
                    }
                    st.reevaluate(id);
                }
                None => {
                    if let Some(e) = st.blocks.remove(&id) {
                        if !e.uc {
                            st.total_complete -= 1;
                            if e.safe {
                                st.safe_complete -= 1;
                            }
                        }
                        for r in e.replicas {
                            st.nodes[r.node as usize].blocks.remove(&id);
                            let b = Block {
                                id,
                                gen_stamp: r.gen_stamp,
                                num_bytes: r.num_bytes,
                            };
                            st.queue_invalidate(r.node, b);
                        }
                    }
                    st.attention.remove(&id);
                    st.pending.remove(&id);
                }
            }
        }
        if let Some(set) = decommission {
            st.decommission = set;
            for i in 0..st.nodes.len() {
                let wanted = st.admin_for(&st.nodes[i].id);
                let node = &mut st.nodes[i];
                match (wanted, node.admin) {
                    (AdminState::Normal, AdminState::Normal) => {}
                    (AdminState::Normal, _) => node.admin = AdminState::Normal,
                    (_, AdminState::Normal) => node.admin = AdminState::DecommissionInProgress,
                    _ => {}
                }
                let blocks: Vec<u64> = st.nodes[i].blocks.iter().copied().collect();
                for b in blocks {
                    st.reevaluate(b);
                }
            }
        }
    }

    /// A DataNode (re-)registers. A node seen before keeps its replicas
    /// until its next full report replaces them.
    pub fn register(&self, reg: &Registration, now: Instant) -> Result<(), FsError> {
        let mut st = self.state.lock();
        let admin = st.admin_for(&reg.id);
        match st.by_uuid.get(&reg.id.uuid).copied() {
            Some(i) => {
                let node = &mut st.nodes[i as usize];
                node.id = reg.id.clone();
                node.storage_ids = reg.storage_ids.clone();
                node.http_addr = reg.http_addr.clone();
                node.hadoop_xfer_addr = reg.hadoop_xfer_addr.clone();
                node.last_heartbeat = now;
                node.dead = false;
                if admin == AdminState::Normal {
                    node.admin = AdminState::Normal;
                } else if node.admin == AdminState::Normal {
                    node.admin = admin;
                }
            }
            None => {
                if st.nodes.len() >= MAX_DATANODES {
                    return Err(FsError::Unavailable(format!(
                        "this member tracks {MAX_DATANODES} DataNodes already"
                    )));
                }
                let i = st.nodes.len() as NodeIdx;
                st.nodes.push(Descriptor {
                    id: reg.id.clone(),
                    storage_ids: reg.storage_ids.clone(),
                    http_addr: reg.http_addr.clone(),
                    hadoop_xfer_addr: reg.hadoop_xfer_addr.clone(),
                    stats: Heartbeat {
                        uuid: reg.id.uuid.clone(),
                        block_pool_id: reg.block_pool_id.clone(),
                        capacity_bytes: 0,
                        dfs_used_bytes: 0,
                        block_pool_used_bytes: 0,
                        remaining_bytes: 0,
                        xceivers: 0,
                        failed_volumes: 0,
                    },
                    last_heartbeat: now,
                    dead: false,
                    admin,
                    blocks: FxHashSet::default(),
                    invalidate: Vec::new(),
                    transfers: VecDeque::new(),
                    recoveries: Vec::new(),
                    report: None,
                });
                st.by_uuid.insert(reg.id.uuid.clone(), i);
            }
        }
        tracing::info!(uuid = %reg.id.uuid, addr = %reg.id.addr, "DataNode registered");
        Ok(())
    }

    /// A heartbeat: update the node's figures; a leader hands it its
    /// queued commands. An unknown or dead node is told to register again.
    pub fn heartbeat(&self, hb: &Heartbeat, now: Instant, leader: bool) -> Vec<DatanodeCommand> {
        let mut st = self.state.lock();
        let Some(i) = st.by_uuid.get(&hb.uuid).copied() else {
            return vec![DatanodeCommand::Reregister];
        };
        let node = &mut st.nodes[i as usize];
        if node.dead {
            return vec![DatanodeCommand::Reregister];
        }
        node.stats = hb.clone();
        node.last_heartbeat = now;
        let mut cmds = Vec::new();
        // Commands come from the leader only, and not in safe mode (HDFS).
        if !leader || st.safemode.is_on() {
            return cmds;
        }
        let node = &mut st.nodes[i as usize];
        if !node.invalidate.is_empty() {
            let n = node.invalidate.len().min(MAX_INVALIDATES_PER_HEARTBEAT);
            cmds.push(DatanodeCommand::Invalidate {
                blocks: node.invalidate.drain(..n).collect(),
            });
        }
        for _ in 0..MAX_TRANSFERS_PER_NODE {
            match node.transfers.pop_front() {
                Some((block, targets)) => cmds.push(DatanodeCommand::Transfer { block, targets }),
                None => break,
            }
        }
        cmds.append(&mut node.recoveries);
        cmds
    }

    /// One page of a full block report; the last page replaces everything
    /// this member knew about the node's replicas.
    pub fn full_report(&self, page: FullReport) -> Result<(), FsError> {
        let replicas = {
            let mut st = self.state.lock();
            let n = st.node(&page.uuid)?;
            let node = &mut st.nodes[n as usize];
            let pages = match &mut node.report {
                Some((id, list)) if *id == page.report_id => list,
                _ if page.page == 0 => {
                    node.report = Some((page.report_id, Vec::new()));
                    &mut node.report.as_mut().expect("just set").1
                }
                _ => {
                    return Err(FsError::InvalidArgument(format!(
                        "block report {} page {} without its first page",
                        page.report_id, page.page
                    )))
                }
            };
            pages.extend(page.replicas);
            if !page.last_page {
                return Ok(());
            }
            node.report.take().expect("present").1
        };
        // A node's first report (the usual case at start) replaces nothing.
        let first = {
            let mut st = self.state.lock();
            let n = st.node(&page.uuid)?;
            let node = &mut st.nodes[n as usize];
            node.blocks.reserve(replicas.len().saturating_sub(node.blocks.len()));
            node.blocks.is_empty()
        };
        let mut reported = FxHashSet::default();
        if !first {
            reported.reserve(replicas.len());
        }
        for chunk in replicas.chunks(REPORT_CHUNK_REPLICAS) {
            let mut st = self.state.lock();
            let n = st.node(&page.uuid)?;
            for rr in chunk {
                if !first {
                    reported.insert(rr.block.id);
                }
                let r = Replica {
                    node: n,
                    state: rr.state,
                    gen_stamp: rr.block.gen_stamp,
                    num_bytes: rr.block.num_bytes,
                    reported_bad: false,
                };
                st.add_replica(n, rr.block, r);
            }
        }
        let gone: Vec<u64> = if first {
            Vec::new()
        } else {
            let st = self.state.lock();
            let n = st.node(&page.uuid)?;
            st.nodes[n as usize]
                .blocks
                .iter()
                .filter(|b| !reported.contains(b))
                .copied()
                .collect()
        };
        for chunk in gone.chunks(REPORT_CHUNK_REPLICAS) {
            let mut st = self.state.lock();
            let n = st.node(&page.uuid)?;
            for b in chunk {
                st.remove_replica(n, *b);
            }
        }
        self.bump();
        Ok(())
    }

    /// Blocks received, being received, or deleted on a node since its last report.
    pub fn incremental(&self, msg: &IncrementalReportMsg) -> Result<(), FsError> {
        let mut st = self.state.lock();
        let n = st.node(&msg.uuid)?;
        for (list, state) in [
            (&msg.report.received, ReplicaState::Finalized),
            (&msg.report.receiving, ReplicaState::Rbw),
        ] {
            for b in list {
                let r = Replica {
                    node: n,
                    state,
                    gen_stamp: b.gen_stamp,
                    num_bytes: b.num_bytes,
                    reported_bad: false,
                };
                st.add_replica(n, *b, r);
            }
        }
        for b in &msg.report.deleted {
            st.remove_replica(n, b.id);
            st.nodes[n as usize].invalidate.retain(|x| x.id != b.id);
        }
        drop(st);
        self.bump();
        Ok(())
    }

    /// Readers or DataNodes found these replicas corrupt.
    pub fn report_bad(&self, replicas: &[(Block, String)]) {
        let mut st = self.state.lock();
        for (b, uuid) in replicas {
            let Some(&n) = st.by_uuid.get(uuid) else { continue };
            if let Some(e) = st.blocks.get_mut(&b.id) {
                if let Some(r) = e.replicas.iter_mut().find(|r| r.node == n) {
                    tracing::warn!(block = %b, node = %uuid, "replica reported corrupt");
                    r.reported_bad = true;
                }
                st.reevaluate(b.id);
            }
        }
    }

    /// Whether `block` (as a writer committed it) has its minimum replicas.
    pub fn has_min_replicas(&self, block: &Block) -> bool {
        let st = self.state.lock();
        let Some(e) = st.blocks.get(&block.id) else {
            return false;
        };
        e.replicas
            .iter()
            .filter(|r| {
                r.state == ReplicaState::Finalized
                    && r.gen_stamp == block.gen_stamp
                    && r.num_bytes == block.num_bytes
                    && !r.reported_bad
                    && !st.nodes[r.node as usize].dead
            })
            .count()
            >= MIN_REPLICATION
    }

    /// Wait up to `timeout` for `block` to reach its minimum replicas.
    pub async fn wait_min_replicas(&self, block: &Block, timeout: Duration) -> bool {
        let mut rx = self.reports.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if self.has_min_replicas(block) {
                return true;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return self.has_min_replicas(block),
            }
        }
    }

    /// Fill in replica locations for a reader: good replicas, those on the
    /// reader's host first, then live nodes in random order, decommissioning
    /// ones last; only if every replica is corrupt, the corrupt ones.
    pub fn locate(&self, located: &mut LocatedBlocks, client_host: &str) {
        use rand::seq::SliceRandom;
        let st = self.state.lock();
        for lb in &mut located.blocks {
            let Some(e) = st.blocks.get(&lb.block.id) else { continue };
            let mut good: Vec<&Replica> = e
                .replicas
                .iter()
                .filter(|r| e.classify(r) != Class::Corrupt && !st.nodes[r.node as usize].dead)
                .collect();
            good.shuffle(&mut rand::thread_rng());
            good.sort_by_key(|r| {
                let n = &st.nodes[r.node as usize];
                (n.id.hostname != client_host, n.admin != AdminState::Normal)
            });
            if good.is_empty() {
                let corrupt: Vec<&Replica> = e.replicas.iter().filter(|r| !st.nodes[r.node as usize].dead).collect();
                lb.corrupt = !corrupt.is_empty();
                lb.locations = corrupt.iter().map(|r| st.nodes[r.node as usize].id.clone()).collect();
            } else {
                lb.locations = good.iter().map(|r| st.nodes[r.node as usize].id.clone()).collect();
            }
        }
    }

    /// Live nodes holding a replica of block `id` with its stamp or newer
    /// (the candidates of a block recovery).
    pub fn replica_nodes(&self, id: u64) -> Vec<DatanodeId> {
        let st = self.state.lock();
        let Some(e) = st.blocks.get(&id) else {
            return Vec::new();
        };
        e.replicas
            .iter()
            .filter(|r| !r.reported_bad && r.gen_stamp >= e.gen_stamp && !st.nodes[r.node as usize].dead)
            .map(|r| st.nodes[r.node as usize].id.clone())
            .collect()
    }

    /// Ask the first of `replicas` (the primary) to recover `block` of file
    /// `inode` (with `truncate`, to cut them to `block.num_bytes`).
    pub fn queue_recovery(
        &self,
        inode: u64,
        block: Block,
        recovery_id: u64,
        replicas: Vec<DatanodeId>,
        truncate: bool,
    ) {
        let mut st = self.state.lock();
        let Some(primary) = replicas.first().and_then(|p| st.by_uuid.get(&p.uuid).copied()) else {
            return;
        };
        let node = &mut st.nodes[primary as usize];
        node.recoveries
            .retain(|c| !matches!(c, DatanodeCommand::Recover { block: b, .. } if b.id == block.id));
        node.recoveries.push(DatanodeCommand::Recover {
            inode,
            block,
            new_gen_stamp: recovery_id,
            replicas,
            truncate,
        });
    }

    /// Whether namespace changes are refused. The automatic part is
    /// re-checked with the current counts on every question, so an empty
    /// namespace (or one whose blocks are all reported) leaves safe mode as
    /// soon as it is asked, not only at the next monitor run.
    pub fn in_safemode(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.safemode_off.load(Ordering::Acquire) {
            return false;
        }
        let mut st = self.state.lock();
        st.refresh_safemode(Instant::now());
        let on = st.safemode.is_on();
        self.safemode_off.store(!on, Ordering::Release);
        on
    }

    pub fn safemode_status(&self) -> SafeModeStatus {
        let mut st = self.state.lock();
        st.refresh_safemode(Instant::now());
        st.safemode.status(st.safe_complete, st.total_complete)
    }

    pub fn safemode_enter(&self) {
        let mut st = self.state.lock();
        st.safemode.enter();
        self.safemode_off.store(false, std::sync::atomic::Ordering::Release);
    }

    pub fn safemode_leave(&self) {
        let mut st = self.state.lock();
        st.safemode.leave();
        self.safemode_off.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Hold the block manager's lock for `hold` on another thread, as a
    /// long block report would (tests: namespace ops must not wait on it).
    #[doc(hidden)]
    pub fn hold_lock_for_test(self: &std::sync::Arc<Self>, hold: std::time::Duration) -> std::thread::JoinHandle<()> {
        let me = self.clone();
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::spawn(move || {
            let _st = me.state.lock();
            tx.send(()).expect("the caller waits for the lock to be held");
            std::thread::sleep(hold);
        });
        rx.recv().expect("the holder took the lock");
        h
    }

    /// The DataNodes WebHDFS may send data to, `(uuid, HTTP HOST:PORT)`:
    /// live, in service, and serving HTTP.
    pub fn http_endpoints(&self) -> Vec<(String, String)> {
        let st = self.state.lock();
        st.nodes
            .iter()
            .filter(|n| n.usable() && !n.http_addr.is_empty())
            .map(|n| (n.id.uuid.clone(), n.http_addr.clone()))
            .collect()
    }

    /// Where DataNode `uuid` serves Hadoop's DataTransferProtocol and HTTP
    /// (either empty when it serves none), if it is registered,
    /// and one of its storage ids.
    pub fn hadoop_endpoints(&self, uuid: &str) -> Option<(String, String, String)> {
        let st = self.state.lock();
        let i = *st.by_uuid.get(uuid)?;
        let n = &st.nodes[i as usize];
        let storage = n.storage_ids.first().cloned().unwrap_or_default();
        Some((n.hadoop_xfer_addr.clone(), n.http_addr.clone(), storage))
    }

    /// Every registered DataNode, as `dfsadmin -report` shows them.
    pub fn datanode_report(&self, now: Instant) -> Vec<DatanodeInfo> {
        let st = self.state.lock();
        st.nodes
            .iter()
            .map(|n| DatanodeInfo {
                id: n.id.clone(),
                capacity_bytes: n.stats.capacity_bytes,
                dfs_used_bytes: n.stats.dfs_used_bytes,
                block_pool_used_bytes: n.stats.block_pool_used_bytes,
                remaining_bytes: n.stats.remaining_bytes,
                xceivers: n.stats.xceivers,
                failed_volumes: n.stats.failed_volumes,
                last_heartbeat_ago_ms: now.saturating_duration_since(n.last_heartbeat).as_millis() as u64,
                live: !n.dead,
                admin_state: n.admin,
                blocks: n.blocks.len() as u64,
                http_addr: n.http_addr.clone(),
                hadoop_xfer_addr: n.hadoop_xfer_addr.clone(),
                storage_id: n.storage_ids.first().cloned().unwrap_or_default(),
            })
            .collect()
    }

    /// Replicas of block `id`, for fsck.
    pub fn block_status(&self, id: u64) -> BlockStatus {
        let st = self.state.lock();
        let Some(e) = st.blocks.get(&id) else {
            return BlockStatus::default();
        };
        let mut s = BlockStatus {
            live: st.live_good(e),
            ..BlockStatus::default()
        };
        for r in &e.replicas {
            match e.classify(r) {
                Class::Corrupt => s.corrupt.push(st.view(r, Class::Corrupt)),
                c => {
                    if !st.nodes[r.node as usize].dead {
                        s.good.push(st.view(r, c))
                    }
                }
            }
        }
        s
    }

    /// Complete blocks and the ones with no readable replica (fsck, metrics).
    pub fn counts(&self) -> (u64, u64) {
        let st = self.state.lock();
        let missing = st.total_complete - st.safe_complete;
        (st.total_complete, missing)
    }

    /// The block counts metrics and `/jmx` show. Under-replicated and
    /// corrupt blocks are found among the blocks the replication monitor
    /// must look at (every such block is one), so this costs time in
    /// proportion to those, not to every block, under the lock.
    pub fn block_gauges(&self) -> BlockGauges {
        let st = self.state.lock();
        let mut g = BlockGauges {
            blocks: st.blocks.len() as u64,
            complete: st.total_complete,
            missing: st.total_complete - st.safe_complete,
            pending_replication: st.pending.len() as u64,
            pending_deletion: st.nodes.iter().map(|n| n.invalidate.len() as u64).sum(),
            ..BlockGauges::default()
        };
        for id in &st.attention {
            let Some(e) = st.blocks.get(id) else { continue };
            if e.uc {
                continue;
            }
            if st.live_good(e) < e.replication as usize {
                g.under_replicated += 1;
            }
            if e.replicas.iter().any(|r| e.classify(r) == Class::Corrupt) {
                g.corrupt += 1;
            }
        }
        g
    }

    /// Ids of every block this member tracks.
    pub fn known_blocks(&self) -> Vec<u64> {
        self.state.lock().blocks.keys().copied().collect()
    }

    /// Whether a registered DataNode has `key` as uuid, address or host name.
    pub fn node_known(&self, key: &str) -> bool {
        self.state.lock().nodes.iter().any(|n| n.matches(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn complete_block(inode: u64) -> Option<BlockRecord> {
        Some(BlockRecord {
            inode,
            gen_stamp: 1,
            num_bytes: 10,
            replication: 3,
            under_construction: false,
        })
    }

    #[test]
    fn an_empty_namespace_is_out_of_safe_mode_before_any_monitor_run() {
        let m = BlockManager::new(BlockManagerConfig::default());
        assert!(!m.in_safemode(), "no blocks: nothing to wait for");
        assert_eq!(m.safemode_status().message, "Safe mode is OFF");
    }

    #[test]
    fn unreported_blocks_keep_safe_mode_on() {
        let m = BlockManager::new(BlockManagerConfig::default());
        m.apply_changes(
            &BTreeMap::from([(1, complete_block(2)), (3, complete_block(4))]),
            Some(5),
            None,
        );
        assert!(m.in_safemode(), "two complete blocks, no replica reported");
        let s = m.safemode_status();
        assert!(s.on && s.total_blocks == 2 && s.safe_blocks == 0, "{s:?}");
        m.safemode_leave();
        assert!(!m.in_safemode());
    }
}
