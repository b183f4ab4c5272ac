//! The block manager's state, kept under its one lock: the DataNode
//! registry ([`Descriptor`]s by index and uuid), the replica map
//! ([`BlockEntry`] per block, with each replica's [`Class`]), replicas
//! reported before their block is known, scheduled copies, and the
//! safe-mode counts. [`BlockManager`](super::BlockManager) is its API;
//! the replication monitor works on it under the same lock.

use std::collections::{BTreeSet, VecDeque};
use std::time::Instant;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use raftfs_proto::datanode::{DatanodeCommand, Heartbeat};
use raftfs_proto::{AdminState, Block, DatanodeId, FsError, ReplicaState};

use super::safemode::SafeMode;
use super::MIN_REPLICATION;

pub(crate) type NodeIdx = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Replica {
    pub node: NodeIdx,
    pub state: ReplicaState,
    pub gen_stamp: u64,
    pub num_bytes: u64,
    /// Reported bad by a reader or the DataNode.
    pub reported_bad: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    Good,
    Pending,
    Corrupt,
}

pub(crate) struct BlockEntry {
    pub inode: u64,
    pub gen_stamp: u64,
    pub num_bytes: u64,
    pub replication: u16,
    pub uc: bool,
    pub replicas: Vec<Replica>,
    /// Counted in the safe-mode numerator.
    pub safe: bool,
}

impl BlockEntry {
    pub(crate) fn classify(&self, r: &Replica) -> Class {
        if r.reported_bad {
            return Class::Corrupt;
        }
        if self.uc {
            return if r.gen_stamp >= self.gen_stamp {
                Class::Good
            } else {
                Class::Corrupt
            };
        }
        if r.gen_stamp > self.gen_stamp || (r.state == ReplicaState::Rbw && r.gen_stamp == self.gen_stamp) {
            Class::Pending
        } else if r.state == ReplicaState::Finalized && r.gen_stamp == self.gen_stamp && r.num_bytes == self.num_bytes {
            Class::Good
        } else {
            Class::Corrupt
        }
    }
}

pub(crate) struct Descriptor {
    pub id: DatanodeId,
    pub storage_ids: Vec<String>,
    /// Where it serves HTTP (empty: nowhere), as it registered.
    pub http_addr: String,
    /// Where it serves Hadoop's DataTransferProtocol (empty: nowhere).
    pub hadoop_xfer_addr: String,
    pub stats: Heartbeat,
    pub last_heartbeat: Instant,
    pub dead: bool,
    pub admin: AdminState,
    pub blocks: FxHashSet<u64>,
    pub invalidate: Vec<Block>,
    pub transfers: VecDeque<(Block, Vec<DatanodeId>)>,
    pub recoveries: Vec<DatanodeCommand>,
    /// Pages of a full report being received: (report id, replicas so far).
    pub report: Option<(u64, Vec<raftfs_proto::ReportedReplica>)>,
}

impl Descriptor {
    pub(crate) fn usable(&self) -> bool {
        !self.dead && self.admin == AdminState::Normal
    }

    pub(super) fn matches(&self, key: &str) -> bool {
        self.id.uuid == key || self.id.addr == key || self.id.hostname == key
    }
}

/// A scheduled copy: its targets and when to give up waiting for it.
pub(crate) struct Pending {
    pub targets: Vec<NodeIdx>,
    pub deadline: Instant,
}

pub(crate) struct State {
    pub nodes: Vec<Descriptor>,
    pub by_uuid: FxHashMap<String, NodeIdx>,
    pub blocks: FxHashMap<u64, BlockEntry>,
    /// Replicas of blocks this member has not applied yet (ids it has not allocated).
    pub unknown: FxHashMap<u64, Vec<Replica>>,
    /// Every block id below this was allocated by an applied entry.
    pub next_block_id: u64,
    /// Blocks the replication monitor should look at.
    pub attention: FxHashSet<u64>,
    pub pending: FxHashMap<u64, Pending>,
    /// Nodes an operator asked to decommission (uuid, address or host name).
    pub decommission: BTreeSet<String>,
    pub safemode: SafeMode,
    pub total_complete: u64,
    pub safe_complete: u64,
}

/// What fsck shows of one replica.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplicaView {
    pub node: DatanodeId,
    pub state: String,
    pub live: bool,
    pub admin: AdminState,
}

/// What fsck shows of one block.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockStatus {
    pub good: Vec<ReplicaView>,
    pub corrupt: Vec<ReplicaView>,
    /// Good replicas on live, normal nodes.
    pub live: usize,
}

impl State {
    /// Re-check safe mode's automatic part with the current block counts.
    pub(crate) fn refresh_safemode(&mut self, now: Instant) {
        let (safe, total) = (self.safe_complete, self.total_complete);
        self.safemode.update(safe, total, now);
    }

    pub(crate) fn node(&self, uuid: &str) -> Result<NodeIdx, FsError> {
        self.by_uuid.get(uuid).copied().ok_or_else(|| {
            FsError::Unavailable(format!(
                "DataNode {uuid} is not registered with this member: register again"
            ))
        })
    }

    pub(super) fn view(&self, r: &Replica, class: Class) -> ReplicaView {
        let n = &self.nodes[r.node as usize];
        ReplicaView {
            node: n.id.clone(),
            state: match (class, r.state) {
                (Class::Corrupt, _) => "CORRUPT".into(),
                (_, ReplicaState::Finalized) => "FINALIZED".into(),
                (_, ReplicaState::Rbw) => "RBW".into(),
            },
            live: !n.dead,
            admin: n.admin,
        }
    }

    /// Good replicas of `e` on live, normal nodes.
    pub(crate) fn live_good(&self, e: &BlockEntry) -> usize {
        e.replicas
            .iter()
            .filter(|r| e.classify(r) == Class::Good && self.nodes[r.node as usize].usable())
            .count()
    }

    /// Recompute what follows from block `id`'s replicas: safe-mode counts,
    /// whether the monitor must look at it.
    pub(crate) fn reevaluate(&mut self, id: u64) {
        let Some(e) = self.blocks.get(&id) else {
            self.attention.remove(&id);
            return;
        };
        let good_any = e
            .replicas
            .iter()
            .filter(|r| e.classify(r) == Class::Good && !self.nodes[r.node as usize].dead)
            .count();
        let live = self.live_good(e);
        let corrupt = e.replicas.iter().any(|r| e.classify(r) == Class::Corrupt);
        let needs_look = !e.uc && (live != e.replication as usize || corrupt || good_any != live);
        let safe = !e.uc && good_any >= MIN_REPLICATION;
        let was_safe = e.safe;
        if safe != was_safe {
            if safe {
                self.safe_complete += 1;
            } else {
                self.safe_complete -= 1;
            }
            self.blocks.get_mut(&id).expect("present").safe = safe;
        }
        if needs_look {
            self.attention.insert(id);
        } else {
            self.attention.remove(&id);
        }
    }

    /// Add or update node `n`'s replica `r` of block `block_id`.
    pub(crate) fn add_replica(&mut self, n: NodeIdx, block: Block, r: Replica) {
        match self.blocks.get_mut(&block.id) {
            Some(e) => {
                match e.replicas.iter_mut().find(|x| x.node == n) {
                    Some(x) => *x = r,
                    None => e.replicas.push(r),
                }
                self.nodes[n as usize].blocks.insert(block.id);
                if let Some(p) = self.pending.get_mut(&block.id) {
                    p.targets.retain(|t| *t != n);
                    if p.targets.is_empty() {
                        self.pending.remove(&block.id);
                    }
                }
                self.reevaluate(block.id);
            }
            None if block.id >= self.next_block_id => {
                // Allocated by an entry this member has not applied yet.
                let list = self.unknown.entry(block.id).or_default();
                list.retain(|x| x.node != n);
                list.push(r);
            }
            None => {
                // Its file is gone: the replica is garbage.
                let node = &mut self.nodes[n as usize];
                if !node.invalidate.iter().any(|b| b.id == block.id) {
                    node.invalidate.push(block);
                }
            }
        }
    }

    pub(crate) fn remove_replica(&mut self, n: NodeIdx, block_id: u64) {
        self.nodes[n as usize].blocks.remove(&block_id);
        if let Some(e) = self.blocks.get_mut(&block_id) {
            e.replicas.retain(|r| r.node != n);
            self.reevaluate(block_id);
        }
        if let Some(list) = self.unknown.get_mut(&block_id) {
            list.retain(|r| r.node != n);
            if list.is_empty() {
                self.unknown.remove(&block_id);
            }
        }
    }

    /// Queue the deletion of node `n`'s replica of `block_id` (leader sends it).
    pub(crate) fn queue_invalidate(&mut self, n: NodeIdx, block: Block) {
        let node = &mut self.nodes[n as usize];
        if !node.invalidate.iter().any(|b| b.id == block.id) {
            node.invalidate.push(block);
        }
    }

    pub(super) fn admin_for(&self, id: &DatanodeId) -> AdminState {
        if self
            .decommission
            .iter()
            .any(|k| *k == id.uuid || *k == id.addr || *k == id.hostname)
        {
            AdminState::DecommissionInProgress
        } else {
            AdminState::Normal
        }
    }
}
