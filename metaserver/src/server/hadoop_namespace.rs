//! [`MemberHadoopNamespace`]: a member's namespace as its Hadoop IPC server
//! (`--hadoop-rpc-addr`) reaches it.
//!
//! The leader answers every call; another member answers `NotLeader`,
//! which Hadoop's clients know as `StandbyException`, so
//! `ConfiguredFailoverProxyProvider` moves on to the next NameNode
//! address and finds the leader with no raftfs code on the client. The
//! exception is an observer read: followers say they are observers
//! (`getHAServiceState`), every answer carries the member's applied
//! index as its `stateId`, and a follower serves a namespace read from a
//! client that sends the state it has seen once it has applied that
//! state (the follower-read path the SDK uses, bounded wait), so
//! `ObserverReadProxyProvider` clients read from followers and still see
//! their own writes (after `msync`, every write acknowledged before it). A call
//! runs as the user the connection context names (SIMPLE authentication),
//! with the groups this member resolves for that user, under the client
//! id and call id [`raftfs_hadoop::ids`] derives from Hadoop's, so the
//! retry table answers a Hadoop client's retry. Calls are audited (`proto=rpc`,
//! as HDFS writes Hadoop RPC calls) and counted in the member's metrics
//! like gRPC calls.

use std::sync::Arc;

use futures::FutureExt;

use raftfs_hadoop::namespace::{AdminFuture, CallFuture, EndpointsFuture, PasswordFuture, SyncFuture};
use raftfs_hadoop::{Answered, DatanodeEndpoints, HaState, HadoopNamespace, IpcCaller};
use raftfs_proto::{AdminOp, CallCtx, FsError, Op};

use super::audit::AuthMethod;
use super::call_observation::CallObservation;
use super::member::{Member, ReadMode};

pub struct MemberHadoopNamespace {
    member: Arc<Member>,
}

impl MemberHadoopNamespace {
    pub fn new(member: Arc<Member>) -> MemberHadoopNamespace {
        MemberHadoopNamespace { member }
    }

    /// `ids` as `caller`'s call, with the groups this member resolves for
    /// the user (never the client's).
    fn ctx(&self, caller: &IpcCaller, ids: CallCtx) -> CallCtx {
        CallCtx {
            user: caller.user.clone(),
            groups: self.member.groups.groups_of_caller(&caller.user),
            ..ids
        }
    }
}

impl HadoopNamespace for MemberHadoopNamespace {
    fn call<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: Op, seen: Option<u64>) -> CallFuture<'a> {
        let m = &self.member;
        // Off the leader, only an observer read: a read the client's seen
        // state lets a follower serve once it has applied it.
        let (mode, min_index) = match (m.leader_or_hint(), seen) {
            (Ok(()), _) => (ReadMode::Leader, 0),
            (Err(_), Some(seen)) if serves_as_observer(&op) => (ReadMode::Follower, seen),
            (Err(not_leader), _) => return Box::pin(std::future::ready(Err(not_leader))),
        };
        let audit = m.audit.entry(&caller.user, AuthMethod::Simple, None, &caller.ip, &op);
        let observation = CallObservation::start(m, audit, op.name());
        // A combinator, not an async block: a block would hold the call's
        // arguments beside the call's future (server/call_future_sizes.rs).
        let call = m.call_from(self.ctx(caller, ids), op, mode, min_index, &caller.ip);
        Box::pin(call.map(move |(result, _)| {
            observation.finish(&result);
            Ok(Answered {
                result: result?,
                block_pool_id: m.version.block_pool_id.clone(),
            })
        }))
    }

    fn call_in_pool<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, pool: &'a str, op: Op) -> CallFuture<'a> {
        Box::pin(async move {
            let own = &self.member.version.block_pool_id;
            if pool != own {
                return Err(FsError::InvalidArgument(format!(
                    "block pool {pool} is not this nameservice's ({own})"
                )));
            }
            self.call(caller, ids, op, None).await
        })
    }

    fn sync_state(&self) -> SyncFuture<'_> {
        Box::pin(async move {
            self.member.leader_or_hint()?;
            self.member.linearize().await.map(|_| ())
        })
    }

    fn state_id(&self) -> Option<u64> {
        Some(*self.member.shared().applied_index().borrow())
    }

    fn admin<'a>(&'a self, caller: &'a IpcCaller, ids: CallCtx, op: AdminOp) -> AdminFuture<'a> {
        Box::pin(async move { self.member.admin(&self.ctx(caller, ids), op).await })
    }

    fn ha_state(&self) -> HaState {
        match self.member.leader_or_hint() {
            Ok(()) => HaState::Active,
            Err(_) => HaState::Observer,
        }
    }

    fn token_password<'a>(&'a self, id: &'a raftfs_proto::DelegationTokenIdentifier) -> PasswordFuture<'a> {
        Box::pin(std::future::ready(self.member.delegation_token_password(id)))
    }

    fn datanode_endpoints<'a>(&'a self, uuids: Vec<String>) -> EndpointsFuture<'a> {
        let found = uuids
            .into_iter()
            .filter_map(|uuid| {
                let (xfer_addr, http_addr, storage_id) = self.member.blocks.hadoop_endpoints(&uuid)?;
                let at = DatanodeEndpoints {
                    xfer_addr,
                    http_addr,
                    storage_id,
                };
                Some((uuid, at))
            })
            .collect();
        Box::pin(std::future::ready(found))
    }
}

/// The reads a follower serves to observer-read clients (HDFS's
/// `@ReadOnly` namespace reads); everything else goes to the leader.
fn serves_as_observer(op: &Op) -> bool {
    matches!(
        op,
        Op::GetFileInfo { .. } | Op::GetListing { .. } | Op::GetContentSummary { .. } | Op::GetBlockLocations { .. }
    )
}
