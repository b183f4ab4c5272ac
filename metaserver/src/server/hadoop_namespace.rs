//! [`MemberHadoopNamespace`]: a member's namespace as its Hadoop IPC server
//! (`--hadoop-rpc-addr`) reaches it.
//!
//! Only the leader answers: another member answers every call with
//! `NotLeader`, which Hadoop's clients know as `StandbyException`, so
//! `ConfiguredFailoverProxyProvider` moves on to the next NameNode
//! address and finds the leader with no raftfs code on the client. A call
//! runs as the user the connection context names (SIMPLE authentication),
//! with the groups this member resolves for that user, under the client
//! id and call id [`raftfs_hadoop::ids`] derives from Hadoop's, so the
//! retry table answers a Hadoop client's retry. Calls are audited (`proto=rpc`,
//! as HDFS writes Hadoop RPC calls) and counted in the member's metrics
//! like gRPC calls.

use std::sync::Arc;

use raftfs_hadoop::namespace::{AdminFuture, CallFuture};
use raftfs_hadoop::{DatanodeEndpoints, FsStats, HaState, HadoopNamespace, IpcCaller, ServerDefaults};
use raftfs_proto::limits::{BYTES_PER_CHECKSUM, DEFAULT_BLOCK_SIZE_BYTES, DEFAULT_REPLICATION};
use raftfs_proto::{AdminOp, CallCtx, FsError, Op};

use super::audit::AuthMethod;
use super::member::Member;
use super::member_metrics::Capacity;
use super::service::observed;

pub struct MemberHadoopNamespace {
    member: Arc<Member>,
}

impl MemberHadoopNamespace {
    pub fn new(member: Arc<Member>) -> MemberHadoopNamespace {
        MemberHadoopNamespace { member }
    }
}

impl HadoopNamespace for MemberHadoopNamespace {
    fn call<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: Op) -> CallFuture<'a> {
        Box::pin(async move {
            let m = &self.member;
            m.leader_or_hint()?;
            let groups = m.groups.groups_of_caller(&caller.user);
            let audit = m.audit.entry(&caller.user, AuthMethod::Simple, None, &caller.ip, &op);
            let ctx = CallCtx {
                user: caller.user.clone(),
                groups,
                ..ids
            };
            let name = op.name();
            observed(m, audit, name, async { (m.call(ctx, op).await, ()) }).await.0
        })
    }

    fn admin<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: AdminOp) -> AdminFuture<'a> {
        Box::pin(async move {
            let m = &self.member;
            let ctx = CallCtx {
                user: caller.user.clone(),
                groups: m.groups.groups_of_caller(&caller.user),
                ..ids
            };
            m.admin(&ctx, op).await
        })
    }

    fn fs_stats(&self) -> Result<FsStats, FsError> {
        let m = &self.member;
        m.leader_or_hint()?;
        let capacity = Capacity::of_live(&m.blocks.datanode_report(std::time::Instant::now()));
        let g = m.blocks.block_gauges();
        Ok(FsStats {
            capacity_bytes: capacity.total,
            used_bytes: capacity.used,
            remaining_bytes: capacity.remaining,
            under_replicated_blocks: g.under_replicated,
            corrupt_blocks: g.corrupt,
            missing_blocks: g.missing,
            pending_deletion_blocks: g.pending_deletion,
        })
    }

    fn in_safe_mode(&self) -> Result<bool, FsError> {
        self.member.leader_or_hint()?;
        Ok(self.member.blocks.safemode_status().on)
    }

    fn ha_state(&self) -> HaState {
        match self.member.leader_or_hint() {
            Ok(()) => HaState::Active,
            Err(_) => HaState::Standby,
        }
    }

    fn server_defaults(&self) -> ServerDefaults {
        ServerDefaults {
            block_size_bytes: DEFAULT_BLOCK_SIZE_BYTES,
            replication: DEFAULT_REPLICATION,
            bytes_per_checksum: BYTES_PER_CHECKSUM as u32,
        }
    }

    fn block_pool_id(&self) -> String {
        self.member.version.block_pool_id.clone()
    }

    fn file_of_block(&self, block_id: u64) -> Option<String> {
        let view = self.member.shared().store.view();
        let record = view.block(block_id).ok()??;
        Some(format!("/.reserved/.inodes/{}", record.inode))
    }

    fn datanode_endpoints(&self, uuid: &str) -> Option<DatanodeEndpoints> {
        let (xfer_addr, http_addr, storage_id) = self.member.blocks.hadoop_endpoints(uuid)?;
        Some(DatanodeEndpoints {
            xfer_addr,
            http_addr,
            storage_id,
        })
    }
}
