//! Leadership transfer and membership changes, as `raftfs haadmin` asks for
//! them (DESIGN.md §1: what ZKFC's manual failover and a JournalNode
//! reconfiguration are in HDFS).
//!
//! Every command runs on the leader (elsewhere: `NotLeader` with a hint) and
//! only for the superuser (the user who formatted, or a member of the
//! supergroup as the member resolves groups), except the reports anyone
//! may ask for (`getFsStats`, `-safemode get`: [`AdminOp::is_open_to_all`]),
//! and the group-mapping refresh, which every member runs for itself (each
//! resolves the groups of the calls it serves). Membership changes are
//! openraft's joint consensus; one at a time (openraft refuses a second while one is in
//! flight). A new member is added as a learner, the call waits until it has
//! caught up, and only then is it made a voter, so adding a member never
//! costs the group its quorum.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use openraft::{BasicNode, ChangeMembers, ServerState};

use raftfs_proto::admin::{FsckBlock, FsckFile, FsckReplica, FsckReport, TRANSFER_LEADER_TIMEOUT_MS};
use raftfs_proto::{AdminOp, AdminResult, CallCtx, FsError, FsStats, LeaderHint, SafeModeAction};

use super::member::Member;
use super::member_metrics::Capacity;
use super::open_files::open_files;
use super::proposer::write_error;
use crate::namespace::check_ctx;

/// Most files one fsck page reports.
pub const MAX_FSCK_FILES_PER_PAGE: usize = 100_000;

impl Member {
    /// Run one `haadmin` command.
    pub async fn admin(&self, ctx: &CallCtx, op: AdminOp) -> Result<AdminResult, FsError> {
        check_ctx(ctx)?;
        // HDFS's superuser privilege: the user who formatted, or a member
        // of the supergroup (groups as this member resolved them).
        let supergroup = self.shared().config().map(|c| c.supergroup);
        let in_supergroup = supergroup.is_some_and(|g| ctx.groups.contains(&g));
        if ctx.user != self.version.superuser && !in_supergroup && !op.is_open_to_all() {
            return Err(FsError::AccessControl(format!(
                "Access denied for user {}. Superuser privilege is required",
                ctx.user
            )));
        }
        if op != AdminOp::RefreshUserToGroupsMappings {
            self.leader_or_hint()?;
        }
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
            AdminOp::SafeMode(action) => {
                match action {
                    SafeModeAction::Get => {}
                    SafeModeAction::Enter => {
                        tracing::warn!(user = %ctx.user, "safe mode entered by hand");
                        self.blocks.safemode_enter();
                    }
                    SafeModeAction::Leave => {
                        tracing::warn!(user = %ctx.user, "safe mode left by hand");
                        self.blocks.safemode_leave();
                    }
                }
                Ok(AdminResult::SafeMode(self.blocks.safemode_status()))
            }
            AdminOp::DatanodeReport => Ok(AdminResult::Datanodes(
                self.blocks.datanode_report(std::time::Instant::now()),
            )),
            AdminOp::Fsck {
                path,
                start_after,
                limit,
            } => self.fsck(ctx, &path, &start_after, limit).map(AdminResult::Fsck),
            AdminOp::RefreshUserToGroupsMappings => {
                self.groups.refresh()?;
                tracing::info!(by = %ctx.user, "reread the group mapping");
                Ok(AdminResult::GroupsRefreshed {
                    member: self.version.member_id,
                })
            }
            AdminOp::FsStats => Ok(AdminResult::FsStats(self.fs_stats())),
            AdminOp::ListOpenFiles { path } => {
                let under = crate::path::FsPath::parse(&path)?.text;
                let store = self.shared().store.clone();
                let listed = tokio::task::spawn_blocking(move || open_files(&*store, &under))
                    .await
                    .unwrap_or_else(|e| panic!("listing open files panicked: {e}"));
                let (files, more) = listed.map_err(FsError::from)?;
                Ok(AdminResult::OpenFiles { files, more })
            }
        }
    }

    /// The live DataNodes' space and the block manager's counts.
    fn fs_stats(&self) -> FsStats {
        let capacity = Capacity::of_live(&self.blocks.datanode_report(Instant::now()));
        let g = self.blocks.block_gauges();
        FsStats {
            capacity_bytes: capacity.total,
            used_bytes: capacity.used,
            remaining_bytes: capacity.remaining,
            under_replicated_blocks: g.under_replicated,
            corrupt_blocks: g.corrupt,
            missing_blocks: g.missing,
            pending_deletion_blocks: g.pending_deletion,
        }
    }

    /// Walk the namespace under `path` (depth first, names in order) and
    /// report every file's blocks and their replicas.
    fn fsck(&self, ctx: &CallCtx, path: &str, start_after: &str, limit: u32) -> Result<FsckReport, FsError> {
        let limit = (limit as usize).clamp(1, MAX_FSCK_FILES_PER_PAGE);
        let cfg = self
            .shared()
            .config()
            .ok_or_else(|| FsError::Unavailable("namespace not formatted yet".into()))?;
        let store = self.shared().store.clone();
        let view = store.view();
        let top = match crate::namespace::read(&cfg, &*view, ctx, &raftfs_proto::Op::GetFileInfo { path: path.into() })?
        {
            raftfs_proto::OpResult::Status(Some(s)) => s,
            _ => return Err(FsError::FileNotFound(format!("File does not exist: {path}"))),
        };
        let top_path = crate::path::FsPath::parse(path)?.text;
        let mut out = FsckReport {
            block_pool_id: self.version.block_pool_id.clone(),
            files: Vec::new(),
            more: false,
        };
        // (path, inode id), popped in name order.
        let mut stack = vec![(top_path, top.file_id)];
        while let Some((p, id)) = stack.pop() {
            let Some(inode) = view.inode(id)? else { continue };
            if inode.is_dir() {
                let mut kids = Vec::new();
                crate::namespace::read::for_each_child(&*view, id, |name, child| {
                    kids.push((format!("{}/{name}", p.trim_end_matches('/')), child.id));
                    Ok(())
                })?;
                stack.extend(kids.into_iter().rev());
            }
            if !start_after.is_empty() && p.as_str() <= start_after {
                continue;
            }
            if out.files.len() >= limit {
                out.more = true;
                break;
            }
            let blocks = inode
                .blocks()
                .iter()
                .map(|b| {
                    let st = self.blocks.block_status(b.id);
                    let replicas = st
                        .good
                        .iter()
                        .chain(&st.corrupt)
                        .map(|r| FsckReplica {
                            node: r.node.clone(),
                            state: r.state.clone(),
                            decommission: r.admin,
                        })
                        .collect();
                    FsckBlock {
                        block: *b,
                        live: st.live as u32,
                        replicas,
                    }
                })
                .collect();
            out.files.push(FsckFile {
                path: p,
                is_dir: inode.is_dir(),
                length: match &inode.kind {
                    crate::inode::InodeKind::File { length, .. } => *length,
                    crate::inode::InodeKind::Directory { .. } => 0,
                },
                replication: inode.replication(),
                under_construction: inode.under_construction(),
                blocks,
            });
        }
        Ok(out)
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

    pub(crate) fn leader_or_hint(&self) -> Result<(), FsError> {
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
