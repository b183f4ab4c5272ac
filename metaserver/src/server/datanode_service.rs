//! The `DatanodeProtocol` gRPC service of a member: what DataNodes call
//! (HDFS `DatanodeProtocol`). Every member serves it; only the leader's
//! heartbeat replies carry commands, and only the leader commits a block
//! recovery (others answer `NotLeader`).
//!
//! A DataNode of another cluster, or one naming another block pool, is
//! refused with `InvalidArgument` and a message that says which.
//!
//! Registration and heartbeat replies carry this member's block keys, so
//! DataNodes can check the block access tokens it mints.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use tonic::{Request, Response, Status};

use raftfs_proto::datanode::{
    BadBlocks, CommitBlockSync, FullReport, Heartbeat, HeartbeatReply, IncrementalReportMsg, NamespaceInfo,
    Registration, RegistrationReply, VersionRequest,
};
use raftfs_proto::pb::datanode_protocol_server::DatanodeProtocol;
use raftfs_proto::pb::DnMessage;
use raftfs_proto::{codec, FsError, LeaderHint};

use raftfs_trust::{PeerIdentity, PeerRole};

use super::layout::LAYOUT_VERSION;
use super::member::Member;
use crate::blocks::MAX_DATANODES;

/// Longest DataNode uuid or storage id accepted, bytes.
const MAX_NODE_ID_LEN_BYTES: usize = 128;
/// Most storages (data directories) one DataNode may report.
const MAX_STORAGES_PER_NODE: usize = 1024;

pub struct DatanodeService {
    pub member: Arc<Member>,
    /// Which DataNode certificate registered each UUID: a UUID is the
    /// node's that registered it first, and no other certificate may
    /// register, heartbeat or report under it. Soft state, as registrations
    /// are: learned again from the first registration after a restart.
    pub owners: parking_lot::Mutex<HashMap<String, String>>,
}

impl DatanodeService {
    pub fn new(member: Arc<Member>) -> DatanodeService {
        DatanodeService {
            member,
            owners: parking_lot::Mutex::new(HashMap::new()),
        }
    }
}

fn respond<T: serde::Serialize>(r: Result<T, FsError>) -> Result<Response<DnMessage>, Status> {
    let data_bin = codec::encode(&r)
        .or_else(|e| codec::encode(&Err::<T, FsError>(e)))
        .map_err(|e| Status::internal(e.to_string()))?;
    Ok(Response::new(DnMessage { data_bin }))
}

impl DatanodeService {
    /// DataNodes only (they present a DataNode certificate under TLS);
    /// ReportBadBlocks stays open to clients, as HDFS's reportBadBlocks is.
    #[allow(clippy::result_large_err)]
    fn require_datanode<T>(&self, req: &Request<T>, what: &str) -> Result<Option<PeerIdentity>, Status> {
        self.member.security.server.require(req, PeerRole::Datanode, what)
    }

    /// Refuse a call about `uuid` from another certificate than the one
    /// that registered it; `bind` (a registration) records the first.
    /// Nothing to check on a plaintext member (`peer` is `None`).
    fn check_owner(&self, uuid: &str, peer: Option<&PeerIdentity>, bind: bool) -> Result<(), FsError> {
        let Some(peer) = peer else { return Ok(()) };
        let mut owners = self.owners.lock();
        match owners.get(uuid) {
            Some(owner) if *owner != peer.id => Err(FsError::AccessControl(format!(
                "DataNode {uuid} registered with the certificate of DataNode {owner}; the caller is {peer}"
            ))),
            Some(_) => Ok(()),
            None if bind => {
                if owners.len() >= MAX_DATANODES {
                    return Err(FsError::Unavailable(format!(
                        "this member tracks {MAX_DATANODES} DataNodes already"
                    )));
                }
                owners.insert(uuid.to_string(), peer.id.clone());
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn check_pool(&self, bpid: &str) -> Result<(), FsError> {
        let ours = &self.member.version.block_pool_id;
        if bpid != ours {
            return Err(FsError::InvalidArgument(format!(
                "block pool {bpid} is not this nameservice's ({ours})"
            )));
        }
        Ok(())
    }

    fn check_node_id(uuid: &str) -> Result<(), FsError> {
        if uuid.is_empty() || uuid.len() > MAX_NODE_ID_LEN_BYTES || uuid.contains(char::is_control) {
            return Err(FsError::InvalidArgument(format!("DataNode uuid {uuid:?} is not valid")));
        }
        Ok(())
    }

    fn register(&self, reg: Registration) -> Result<(), FsError> {
        let v = &self.member.version;
        if reg.cluster_id != v.cluster_id {
            return Err(FsError::InvalidArgument(format!(
                "DataNode {} belongs to cluster {}, this nameservice to {}: refused",
                reg.id.addr, reg.cluster_id, v.cluster_id
            )));
        }
        self.check_pool(&reg.block_pool_id)?;
        Self::check_node_id(&reg.id.uuid)?;
        raftfs_proto::admin::check_member_addr(&reg.id.addr)?;
        if reg.storage_ids.len() > MAX_STORAGES_PER_NODE
            || reg.storage_ids.iter().any(|s| s.len() > MAX_NODE_ID_LEN_BYTES)
            || reg.id.hostname.len() > raftfs_proto::limits::MAX_MEMBER_ADDR_LEN_BYTES
        {
            return Err(FsError::InvalidArgument(
                "registration fields exceed their limits".into(),
            ));
        }
        self.member.blocks.register(&reg, Instant::now())
    }

    fn leader_hint(&self) -> FsError {
        let m = self.member.raft.metrics().borrow_watched().clone();
        FsError::NotLeader {
            leader: m.current_leader.map(|id| LeaderHint {
                member_id: id,
                addr: self.member.addr_of(id).unwrap_or_default(),
            }),
        }
    }
}

#[tonic::async_trait]
impl DatanodeProtocol for DatanodeService {
    async fn version_request(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        self.require_datanode(&req, "DatanodeProtocol VersionRequest")?;
        let r = (|| {
            let q: VersionRequest = codec::decode(&req.get_ref().data_bin, "version request")?;
            let v = &self.member.version;
            if let Some(c) = &q.cluster_id {
                if *c != v.cluster_id {
                    return Err(FsError::InvalidArgument(format!(
                        "this DataNode belongs to cluster {c}, this nameservice to {}: refused",
                        v.cluster_id
                    )));
                }
            }
            Ok(NamespaceInfo {
                cluster_id: v.cluster_id.clone(),
                namespace_id: v.namespace_id,
                block_pool_id: v.block_pool_id.clone(),
                nameservice: v.nameservice.clone(),
                member_id: v.member_id,
                layout_version: LAYOUT_VERSION,
            })
        })();
        respond(r)
    }

    async fn register_datanode(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        let peer = self.require_datanode(&req, "DatanodeProtocol RegisterDatanode")?;
        let r = codec::decode::<Registration>(&req.get_ref().data_bin, "registration").and_then(|reg| {
            Self::check_node_id(&reg.id.uuid)?;
            self.check_owner(&reg.id.uuid, peer.as_ref(), true)?;
            self.register(reg)?;
            Ok(RegistrationReply {
                block_keys: self.member.block_access.export(),
            })
        });
        if let Err(e) = &r {
            tracing::warn!(error = %e, "DataNode registration refused");
        }
        respond(r)
    }

    async fn send_heartbeat(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        let peer = self.require_datanode(&req, "DatanodeProtocol SendHeartbeat")?;
        let r = (|| {
            let hb: Heartbeat = codec::decode(&req.get_ref().data_bin, "heartbeat")?;
            self.check_owner(&hb.uuid, peer.as_ref(), false)?;
            self.check_pool(&hb.block_pool_id)?;
            let m = self.member.raft.metrics().borrow_watched().clone();
            let leader = m.state == ServerState::Leader;
            let commands = self.member.blocks.heartbeat(&hb, Instant::now(), leader);
            Ok(HeartbeatReply {
                term: m.current_term,
                is_leader: leader,
                commands,
                block_keys: self.member.block_access.export(),
            })
        })();
        respond(r)
    }

    async fn block_report(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        let peer = self.require_datanode(&req, "DatanodeProtocol BlockReport")?;
        let r = match codec::decode::<FullReport>(&req.get_ref().data_bin, "block report") {
            Ok(page) => match self
                .check_pool(&page.block_pool_id)
                .and_then(|_| self.check_owner(&page.uuid, peer.as_ref(), false))
            {
                Ok(()) => {
                    let blocks = self.member.blocks.clone();
                    // A big report is CPU work: off the async workers.
                    tokio::task::spawn_blocking(move || blocks.full_report(page))
                        .await
                        .unwrap_or_else(|e| Err(FsError::Internal(e.to_string())))
                }
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        respond(r)
    }

    async fn block_received_and_deleted(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        let peer = self.require_datanode(&req, "DatanodeProtocol BlockReceivedAndDeleted")?;
        let r = (|| {
            let msg: IncrementalReportMsg = codec::decode(&req.get_ref().data_bin, "incremental report")?;
            self.check_owner(&msg.uuid, peer.as_ref(), false)?;
            self.check_pool(&msg.block_pool_id)?;
            self.member.blocks.incremental(&msg)
        })();
        respond(r)
    }

    async fn report_bad_blocks(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        let r = (|| {
            let msg: BadBlocks = codec::decode(&req.get_ref().data_bin, "bad blocks")?;
            self.check_pool(&msg.block_pool_id)?;
            self.member.blocks.report_bad(&msg.replicas);
            Ok(())
        })();
        respond(r)
    }

    async fn commit_block_synchronization(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        self.require_datanode(&req, "DatanodeProtocol CommitBlockSynchronization")?;
        let r = async {
            let msg: CommitBlockSync = codec::decode(&req.get_ref().data_bin, "block sync")?;
            self.check_pool(&msg.block_pool_id)?;
            if !self.member.data.is_leader() {
                return Err(self.leader_hint());
            }
            self.member.data.commit_block_sync(msg).await
        }
        .await;
        respond(r)
    }
}
