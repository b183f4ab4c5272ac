//! Replica placement (a one-rack HDFS `BlockPlacementPolicyDefault`): the
//! writer's own node first when it is a DataNode, then distinct live nodes
//! in normal admin state with room for a block, skipping nodes much busier
//! than the average (HDFS `dfs.namenode.replication.considerLoad`), in
//! random order so that load spreads.

use rand::seq::SliceRandom;
use rustc_hash::FxHashSet;

use raftfs_proto::{DatanodeId, FsError};

use super::replica_map::{NodeIdx, State};
use super::BlockManager;

/// A node with more than this factor times the average transfers is skipped.
const CONSIDER_LOAD_FACTOR: f64 = 2.0;

impl State {
    /// Up to `n` nodes for a new replica, none of them in `exclude`.
    pub(crate) fn choose_targets(
        &self,
        n: usize,
        writer_host: &str,
        exclude: &FxHashSet<NodeIdx>,
        block_size: u64,
    ) -> Vec<NodeIdx> {
        let usable: Vec<NodeIdx> = (0..self.nodes.len() as NodeIdx)
            .filter(|i| {
                let node = &self.nodes[*i as usize];
                node.usable() && !exclude.contains(i) && node.stats.remaining_bytes >= block_size
            })
            .collect();
        if usable.is_empty() {
            return Vec::new();
        }
        let avg = usable
            .iter()
            .map(|i| self.nodes[*i as usize].stats.xceivers as f64)
            .sum::<f64>()
            / usable.len() as f64;
        let limit = (avg * CONSIDER_LOAD_FACTOR).max(2.0);
        let (mut light, heavy): (Vec<NodeIdx>, Vec<NodeIdx>) = usable
            .into_iter()
            .partition(|i| self.nodes[*i as usize].stats.xceivers as f64 <= limit);
        let mut rng = rand::thread_rng();
        light.shuffle(&mut rng);
        // The writer's node first (HDFS writes the first replica locally).
        if let Some(pos) = light
            .iter()
            .position(|i| self.nodes[*i as usize].id.hostname == writer_host)
        {
            light.swap(0, pos);
        }
        light.into_iter().chain(heavy).take(n).collect()
    }
}

impl BlockManager {
    /// Pipeline targets for a new block: `n` distinct nodes (fewer if fewer
    /// are usable, never none), avoiding the uuids in `excluded`.
    pub fn choose_targets(
        &self,
        n: usize,
        writer_host: &str,
        excluded: &[String],
        existing: &[String],
        block_size: u64,
    ) -> Result<Vec<DatanodeId>, FsError> {
        let st = self.state.lock();
        let exclude: FxHashSet<NodeIdx> = excluded
            .iter()
            .chain(existing)
            .filter_map(|u| st.by_uuid.get(u).copied())
            .collect();
        let chosen = st.choose_targets(n, writer_host, &exclude, block_size);
        if chosen.is_empty() && n > 0 {
            let live = st.nodes.iter().filter(|d| !d.dead).count();
            return Err(FsError::Unavailable(format!(
                "could only be written to 0 of the 1 minReplication nodes. There are {live} datanode(s) running and {} node(s) are excluded in this operation.",
                exclude.len()
            )));
        }
        Ok(chosen.into_iter().map(|i| st.nodes[i as usize].id.clone()).collect())
    }
}
