//! What a member says of itself (`MemberInfo`: its nameservice, role,
//! term, log indexes, health, membership), and asking a peer the same.
//!
//! The answer is read from the member's Raft metrics and its own monitors
//! when asked; it is a moment's view, and a follower's commit index may lag
//! the leader's. Asking a peer is bounded by a timeout, so a page or
//! monitor that asks every member is never held by one that is down.

use std::collections::BTreeSet;
use std::time::Duration;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use raftfs_proto::pb;
use raftfs_trust::{Dialer, PeerRole};

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

/// What the member at `addr` says of itself, over `dialer`, within
/// `timeout_ms` (to connect, and again to answer); why not, if it does not.
pub async fn peer_info(dialer: &Dialer, addr: &str, timeout_ms: u64) -> Result<pb::MemberInfoReply, String> {
    let ep = dialer
        .endpoint(addr, PeerRole::Member)
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_millis(timeout_ms))
        .timeout(Duration::from_millis(timeout_ms));
    let ch = ep.connect().await.map_err(|e| e.to_string())?;
    pb::namespace_client::NamespaceClient::new(ch)
        .member_info(pb::MemberInfoRequest {})
        .await
        .map(|r| r.into_inner())
        .map_err(|s| s.message().to_string())
}
