//! Leadership transfer and membership changes, as `raftfs haadmin` asks for
//! them (DESIGN.md §1: what ZKFC's manual failover and a JournalNode
//! reconfiguration are in HDFS).
//!
//! Every command runs on the leader (elsewhere: `NotLeader` with a hint) and
//! only for the superuser. Membership changes are openraft's joint
//! consensus; one at a time (openraft refuses a second while one is in
//! flight). A new member is added as a learner, the call waits until it has
//! caught up, and only then is it made a voter, so adding a member never
//! costs the group its quorum.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use openraft::{BasicNode, ChangeMembers, ServerState};

use raftfs_proto::admin::TRANSFER_LEADER_TIMEOUT_MS;
use raftfs_proto::{AdminOp, AdminResult, CallCtx, FsError, LeaderHint};

use super::member::{write_error, Member};
use crate::namespace::check_ctx;

impl Member {
    /// Run one `haadmin` command.
    pub async fn admin(&self, ctx: &CallCtx, op: AdminOp) -> Result<AdminResult, FsError> {
        check_ctx(ctx)?;
        if ctx.user != self.version.superuser {
            return Err(FsError::AccessControl(format!(
                "Access denied for user {}. Superuser privilege is required",
                ctx.user
            )));
        }
        self.leader_or_hint()?;
        match op {
            AdminOp::TransferLeader { to } => self.transfer_leader(to).await,
            AdminOp::AddMember { id, addr } => {
                if id == 0 {
                    return Err(FsError::InvalidArgument("member id 0 is reserved".into()));
                }
                raftfs_proto::admin::check_member_addr(&addr)?;
                if self.voters().contains(&id) {
                    return Err(FsError::InvalidArgument(format!("member {id} is already a voter")));
                }
                tracing::info!(id, %addr, "adding a member: as a learner first");
                self.raft
                    .add_learner(id, BasicNode { addr }, true)
                    .await
                    .map_err(write_error)?;
                tracing::info!(id, "learner caught up: making it a voter");
                self.raft
                    .change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false)
                    .await
                    .map_err(write_error)?;
                Ok(AdminResult::Membership {
                    voters: self.voters().into_iter().collect(),
                })
            }
            AdminOp::RemoveMember { id } => {
                let voters = self.voters();
                if !voters.contains(&id) {
                    return Err(FsError::InvalidArgument(format!("member {id} is not a voter")));
                }
                if voters.len() == 1 {
                    return Err(FsError::InvalidArgument(format!(
                        "member {id} is the only voter; a nameservice cannot remove its last member"
                    )));
                }
                tracing::info!(id, "removing a member");
                self.raft
                    .change_membership(ChangeMembers::RemoveVoters(BTreeSet::from([id])), false)
                    .await
                    .map_err(write_error)?;
                Ok(AdminResult::Membership {
                    voters: self.voters().into_iter().collect(),
                })
            }
        }
    }

    /// The current voters, from the latest membership this member knows.
    pub fn voters(&self) -> BTreeSet<u64> {
        self.raft
            .metrics()
            .borrow_watched()
            .membership_config
            .membership()
            .voter_ids()
            .collect()
    }

    fn leader_or_hint(&self) -> Result<(), FsError> {
        let m = self.raft.metrics().borrow_watched().clone();
        if m.state == ServerState::Leader {
            return Ok(());
        }
        Err(FsError::NotLeader {
            leader: m.current_leader.map(|id| LeaderHint {
                member_id: id,
                addr: self.addr_of(id).unwrap_or_default(),
            }),
        })
    }

    async fn transfer_leader(&self, to: u64) -> Result<AdminResult, FsError> {
        if !self.voters().contains(&to) {
            return Err(FsError::InvalidArgument(format!("member {to} is not a voter")));
        }
        let start = Instant::now();
        if to != self.version.member_id {
            self.raft
                .trigger()
                .transfer_leader(to)
                .await
                .map_err(|e| FsError::Unavailable(format!("member stopped: {e}")))?;
        }
        let mut metrics = self.raft.metrics();
        let deadline = tokio::time::Instant::now() + Duration::from_millis(TRANSFER_LEADER_TIMEOUT_MS);
        loop {
            if metrics.borrow_watched().current_leader == Some(to) {
                return Ok(AdminResult::LeaderTransferred {
                    leader: to,
                    elapsed_ms: start.elapsed().as_millis() as u64,
                });
            }
            match tokio::time::timeout_at(deadline, metrics.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) => return Err(FsError::Unavailable("member is shutting down".into())),
                Err(_) => {
                    return Err(FsError::Timeout(format!(
                        "leadership did not move to member {to} within {TRANSFER_LEADER_TIMEOUT_MS} ms"
                    )))
                }
            }
        }
    }
}
