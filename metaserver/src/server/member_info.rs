//! What a member says of itself (`MemberInfo`: its nameservice, role,
//! term, log indexes, health, membership); peers are asked the same with
//! [`raftfs_raft::peer_info`].
//!
//! The answer is read from the member's Raft metrics and its own monitors
//! when asked; it is a moment's view, and a follower's commit index may lag
//! the leader's.

use std::collections::BTreeSet;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use raftfs_proto::pb;

use super::member::Member;

impl Member {
    /// This member's `MemberInfo`.
    pub fn info(&self) -> pb::MemberInfoReply {
        let m = self.raft.metrics().borrow_watched().clone();
        let leader_id = m.current_leader.unwrap_or(0);
        let role = match m.state {
            ServerState::Leader => "LEADER",
            ServerState::Follower => "FOLLOWER",
            ServerState::Learner => "LEARNER",
            ServerState::Candidate => "CANDIDATE",
            ServerState::Shutdown => "SHUTDOWN",
        };
        let membership = m.membership_config.membership();
        let voters: BTreeSet<u64> = membership.voter_ids().collect();
        pb::MemberInfoReply {
            member_id: self.version.member_id,
            nameservice: self.version.nameservice.clone(),
            cluster_id: self.version.cluster_id.clone(),
            leader_id,
            leader_addr: self.addr_of(leader_id).unwrap_or_default(),
            term: m.current_term,
            role: role.to_string(),
            last_log_index: m.last_log_index.unwrap_or(0),
            commit_index: m.local_committed.as_ref().map_or(0, |l| l.index),
            applied_index: m.last_applied.as_ref().map_or(0, |l| l.index),
            health: self.health().describe(),
            snapshot_index: m.snapshot.as_ref().map_or(0, |l| l.index),
            purged_index: m.purged.as_ref().map_or(0, |l| l.index),
            reads_served: self.reads_served(),
            exec_mode: self.exec_mode().to_string(),
            namespace_id: self.version.namespace_id,
            block_pool_id: self.version.block_pool_id.clone(),
            datanode_http: (self.blocks.http_endpoints().into_iter())
                .map(|(uuid, addr)| pb::DatanodeHttp { uuid, addr })
                .collect(),
            cpu_time_us: crate::server::cpu::process_cpu_time_us().unwrap_or(0),
            members: membership
                .nodes()
                .map(|(id, n)| pb::MemberAddr {
                    id: *id,
                    addr: n.addr.clone(),
                    voter: voters.contains(id),
                })
                .collect(),
        }
    }
}
