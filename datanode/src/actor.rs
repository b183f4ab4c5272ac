//! The DataNode's side of the DatanodeProtocol (HDFS `BPOfferService` and
//! `BPServiceActor`): for each nameservice, a handshake that fixes the
//! cluster and block pool, then one loop per member that registers, sends a
//! full block report, heartbeats, sends incremental reports as replicas
//! change, and repeats the full report on a period.
//!
//! Fencing: each heartbeat reply carries the member's term and whether it
//! leads. Commands are obeyed only from a leader whose term is the highest
//! this node has seen for that block pool; a deposed leader that still
//! believes it leads has a lower term and is ignored.
//!
//! A member of another cluster, or one that reports another block pool than
//! its peers, is refused with an error in the log; nothing on disk changes.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use raftfs_proto::codec;
use raftfs_proto::datanode::{
    BadBlocks, CommitBlockSync, DatanodeCommand, FullReport, Heartbeat, HeartbeatReply, IncrementalReportMsg,
    InitRecovery, NamespaceInfo, Registration, RegistrationReply, ReplicaReport, TransferRequest, UpdateRecovery,
    VersionRequest, WriteStage, MAX_REPORT_REPLICAS_PER_PAGE,
};
use raftfs_proto::pb::DnMessage;
use raftfs_proto::{Block, DatanodeId, FsError, ReplicaState};

use crate::node::Node;
use crate::transfer::{blocking, stop_writer};

/// Shortest wait before asking an unreachable member again.
const RETRY_MIN_MS: u64 = 200;

fn enc<T: serde::Serialize>(v: &T) -> Result<DnMessage, FsError> {
    Ok(DnMessage {
        data_bin: codec::encode(v)?,
    })
}

fn dec<T: serde::de::DeserializeOwned>(r: Result<tonic::Response<DnMessage>, tonic::Status>) -> Result<T, FsError> {
    let m = r.map_err(|s| FsError::Unavailable(format!("{}: {}", s.code(), s.message())))?;
    codec::decode::<Result<T, FsError>>(&m.get_ref().data_bin, "member reply")?
}

async fn version(node: &Node, addr: &str) -> Result<NamespaceInfo, FsError> {
    let req = VersionRequest {
        cluster_id: node.storage.ident().map(|i| i.cluster_id),
    };
    dec(node.member(addr)?.version_request(enc(&req)?).await)
}

/// Serve the nameservice whose members are `members` until the process
/// ends or the task is aborted (which stops its member loops too). With
/// `expected_pool`, a nameservice of another block pool is refused.
pub async fn run_nameservice(node: Arc<Node>, members: Vec<String>, expected_pool: Option<String>) {
    let retry = Duration::from_millis(RETRY_MIN_MS.max(node.cfg.heartbeat_ms));
    let info = 'found: loop {
        for m in &members {
            match version(&node, m).await {
                Ok(i) => break 'found i,
                Err(FsError::InvalidArgument(msg)) => {
                    // The member answered and refused us (another cluster).
                    tracing::error!(member = %m, error = %msg, "refusing the nameservice");
                    return;
                }
                Err(e) => tracing::debug!(member = %m, error = %e, "version request"),
            }
        }
        tokio::time::sleep(retry).await;
    };
    if let Some(want) = expected_pool.filter(|p| *p != info.block_pool_id) {
        tracing::error!(nameservice = %info.nameservice, bpid = %info.block_pool_id, expected = %want,
            "the members serve another block pool than the routers registered: refusing the nameservice");
        return;
    }
    let ident = match node.storage.adopt_cluster(&info.cluster_id) {
        Ok(i) => i,
        Err(e) => {
            tracing::error!(nameservice = %info.nameservice, error = %e, "refusing the nameservice");
            return;
        }
    };
    node.set_uuid(&ident.datanode_uuid);
    let now_ms = raftfs_trust::clock::wall_clock_ms();
    if let Err(e) = node
        .storage
        .open_pool(&info.block_pool_id, info.namespace_id, &info.cluster_id, now_ms)
    {
        tracing::error!(bpid = %info.block_pool_id, error = %e, "refusing the block pool");
        return;
    }
    node.pool_members
        .write()
        .insert(info.block_pool_id.clone(), members.clone());
    tracing::info!(nameservice = %info.nameservice, bpid = %info.block_pool_id, "serving block pool");
    let highest_term = Arc::new(AtomicU64::new(0));
    // Dropped (the task aborted) → every member loop aborted.
    let mut loops = tokio::task::JoinSet::new();
    for m in members {
        // Create the queue now, so no replica event is missed before the loop starts.
        node.ibr_queue(&info.block_pool_id, &m);
        loops.spawn(member_loop(node.clone(), m, info.clone(), highest_term.clone()));
    }
    while loops.join_next().await.is_some() {}
}

/// Register with one member and keep it informed.
async fn member_loop(node: Arc<Node>, addr: String, info: NamespaceInfo, highest_term: Arc<AtomicU64>) {
    let bpid = info.block_pool_id.clone();
    let queue = node.ibr_queue(&bpid, &addr);
    let beat = node.cfg.heartbeat();
    let report_every = Duration::from_millis(node.cfg.block_report_interval_ms.max(1));
    let mut report_id = 0u64;
    'register: loop {
        // The member must be of our cluster and pool (checked every time: it may have been reformatted).
        match version(&node, &addr).await {
            Ok(i) if i.cluster_id != info.cluster_id || i.block_pool_id != bpid => {
                tracing::error!(member = %addr, cluster = %i.cluster_id, bpid = %i.block_pool_id,
                    "member belongs to another cluster or block pool than its nameservice: not registering with it");
                tokio::time::sleep(beat * 10).await;
                continue;
            }
            Ok(_) => {}
            Err(_) => {
                tokio::time::sleep(beat).await;
                continue;
            }
        }
        let Some(id) = node.id() else { return };
        let reg = Registration {
            id: id.clone(),
            cluster_id: info.cluster_id.clone(),
            block_pool_id: bpid.clone(),
            storage_ids: node.storage.storage_ids(),
            http_addr: node.cfg.http_advertise.clone().unwrap_or_default(),
            hadoop_xfer_addr: node.cfg.hadoop_xfer_advertise.clone().unwrap_or_default(),
        };
        let registered: Result<RegistrationReply, FsError> =
            async { dec(node.member(&addr)?.register_datanode(enc(&reg)?).await) }.await;
        match registered {
            Ok(r) => learn_keys(&node, &addr, &bpid, r.block_keys.as_ref()),
            Err(e) => {
                tracing::warn!(member = %addr, error = %e, "register");
                tokio::time::sleep(beat).await;
                continue;
            }
        }
        let mut next_report = tokio::time::Instant::now();
        let mut next_beat = tokio::time::Instant::now();
        loop {
            if tokio::time::Instant::now() >= next_report {
                report_id += 1;
                match full_report(&node, &addr, &bpid, &id.uuid, report_id).await {
                    Ok(()) => next_report = tokio::time::Instant::now() + report_every,
                    Err(e) => {
                        tracing::debug!(member = %addr, error = %e, "full block report");
                        next_report = tokio::time::Instant::now() + beat;
                    }
                }
            }
            tokio::select! {
                _ = tokio::time::sleep_until(next_beat) => {
                    next_beat = tokio::time::Instant::now() + beat;
                    node.handle_volume_failures();
                    match heartbeat(&node, &addr, &bpid, &id.uuid).await {
                        Ok(reply) => {
                            learn_keys(&node, &addr, &bpid, reply.block_keys.as_ref());
                            if handle_reply(&node, &bpid, &info, reply, &highest_term).await {
                                continue 'register;
                            }
                        }
                        Err(e) => tracing::debug!(member = %addr, error = %e, "heartbeat"),
                    }
                }
                _ = queue.ready.notified() => {
                    let report = queue.take();
                    if report.received.is_empty() && report.receiving.is_empty() && report.deleted.is_empty() {
                        continue;
                    }
                    let msg = IncrementalReportMsg { uuid: id.uuid.clone(), block_pool_id: bpid.clone(), report: report.clone() };
                    let sent: Result<(), FsError> = async {
                        dec(node.member(&addr)?.block_received_and_deleted(enc(&msg)?).await)
                    }.await;
                    if let Err(e) = sent {
                        tracing::debug!(member = %addr, error = %e, "incremental block report");
                        queue.put_back(report);
                        // Try again with the next heartbeat.
                        let q = queue.clone();
                        tokio::spawn(async move { tokio::time::sleep(beat).await; q.ready.notify_one(); });
                        if matches!(e, FsError::Unavailable(ref m) if m.contains("not registered")) {
                            continue 'register;
                        }
                    }
                }
            }
        }
    }
}

/// Keep the block keys member `addr` handed over (every member of the
/// pool signs with its own, leader or not).
fn learn_keys(node: &Node, addr: &str, bpid: &str, keys: Option<&raftfs_proto::ExportedBlockKeys>) {
    let Some(keys) = keys else { return };
    if let Err(e) = node.block_keys.update(bpid, keys, raftfs_trust::clock::wall_clock_ms()) {
        tracing::warn!(member = %addr, error = %e, "block keys refused");
    }
}

async fn heartbeat(node: &Node, addr: &str, bpid: &str, uuid: &str) -> Result<HeartbeatReply, FsError> {
    let (capacity, remaining) = node.storage.space();
    let pools = node.storage.pools();
    let dfs_used: u64 = pools.iter().map(|p| p.used_bytes()).sum();
    let bp_used = node.storage.pool(bpid).map_or(0, |p| p.used_bytes());
    let hb = Heartbeat {
        uuid: uuid.to_string(),
        block_pool_id: bpid.to_string(),
        capacity_bytes: capacity,
        dfs_used_bytes: dfs_used,
        block_pool_used_bytes: bp_used,
        remaining_bytes: remaining,
        xceivers: node.xceivers(),
        failed_volumes: node.storage.failed_volumes(),
    };
    dec(node.member(addr)?.send_heartbeat(enc(&hb)?).await)
}

async fn full_report(node: &Node, addr: &str, bpid: &str, uuid: &str, report_id: u64) -> Result<(), FsError> {
    let pool = node
        .storage
        .pool(bpid)
        .ok_or_else(|| FsError::Internal(format!("block pool {bpid} is not open")))?;
    let replicas = pool.report();
    let pages: Vec<&[raftfs_proto::ReportedReplica]> = if replicas.is_empty() {
        vec![&[]]
    } else {
        replicas.chunks(MAX_REPORT_REPLICAS_PER_PAGE).collect()
    };
    let n = pages.len();
    let mut client = node.member(addr)?;
    for (i, page) in pages.into_iter().enumerate() {
        let msg = FullReport {
            uuid: uuid.to_string(),
            block_pool_id: bpid.to_string(),
            report_id,
            page: i as u32,
            last_page: i + 1 == n,
            replicas: page.to_vec(),
        };
        dec::<()>(client.block_report(enc(&msg)?).await)?;
    }
    tracing::debug!(member = %addr, replicas = replicas.len(), "full block report sent");
    Ok(())
}

/// Whether commands in a reply of a member at `term` may be obeyed: only a
/// leader's, and only if no higher term was seen for the pool (which `term`
/// is recorded as, if it is the highest).
fn obey(highest_term: &AtomicU64, term: u64, is_leader: bool) -> bool {
    let seen = highest_term.fetch_max(term, Ordering::SeqCst).max(term);
    is_leader && term >= seen
}

/// Obey a heartbeat reply's commands if they come from the current leader.
/// True when the member asks this node to register again.
async fn handle_reply(
    node: &Arc<Node>,
    bpid: &str,
    info: &NamespaceInfo,
    reply: HeartbeatReply,
    highest_term: &AtomicU64,
) -> bool {
    if reply.commands.iter().any(|c| matches!(c, DatanodeCommand::Reregister)) {
        return true;
    }
    if !obey(highest_term, reply.term, reply.is_leader) {
        if !reply.commands.is_empty() {
            let highest = highest_term.load(Ordering::SeqCst);
            tracing::warn!(term = reply.term, highest, "ignoring commands of a deposed leader");
        }
        return false;
    }
    for cmd in reply.commands {
        match cmd {
            DatanodeCommand::Invalidate { blocks } => {
                let (n, bp) = (node.clone(), bpid.to_string());
                tokio::spawn(async move {
                    let Some(pool) = n.storage.pool(&bp) else { return };
                    for b in blocks {
                        stop_writer(&pool, b.id).await;
                        let (n2, p2) = (n.clone(), pool.clone());
                        match blocking(move || n2.storage.delete_replica(&p2, &b)).await {
                            Ok(true) => n.report_deleted(&bp, b),
                            Ok(false) => {}
                            Err(e) => tracing::warn!(block = %b, error = %e, "delete replica"),
                        }
                    }
                });
            }
            DatanodeCommand::Transfer { block, targets } => {
                let req = TransferRequest {
                    block_pool_id: bpid.to_string(),
                    block,
                    targets,
                    stage: WriteStage::Transfer,
                    token: None,
                    proof: None,
                };
                let n = node.clone();
                tokio::spawn(async move {
                    if let Err(e) = crate::copy::transfer(&n, &req).await {
                        tracing::warn!(block = %req.block, error = %e, "re-replication");
                    }
                });
            }
            DatanodeCommand::Recover {
                inode,
                block,
                new_gen_stamp,
                replicas,
                truncate,
            } => {
                let (n, bp, ns) = (node.clone(), bpid.to_string(), info.nameservice.clone());
                let cut_to = truncate.then_some(block.num_bytes);
                tokio::spawn(async move {
                    if let Err(e) = recover_block(&n, &bp, inode, block, new_gen_stamp, replicas, cut_to).await {
                        tracing::warn!(nameservice = %ns, block = %block, error = %e, "block recovery");
                    }
                });
            }
            DatanodeCommand::Reregister => {}
        }
    }
    false
}

/// Send `msg` to the members of `bpid`'s nameservice until the leader takes it.
async fn to_leader<T, F>(node: &Node, bpid: &str, call: F) -> Result<T, FsError>
where
    F: Fn(
        raftfs_proto::pb::datanode_protocol_client::DatanodeProtocolClient<tonic::transport::Channel>,
    ) -> futures::future::BoxFuture<'static, Result<tonic::Response<DnMessage>, tonic::Status>>,
    T: serde::de::DeserializeOwned,
{
    let members = node.pool_members.read().get(bpid).cloned().unwrap_or_default();
    let mut last = FsError::Unavailable(format!("no member of block pool {bpid} is known"));
    for m in &members {
        let r: Result<T, FsError> = dec(call(node.member(m)?).await);
        match r {
            Ok(v) => return Ok(v),
            Err(e) => last = e,
        }
    }
    Err(last)
}

/// Tell the members of `bpid` that this node's replica of `block` is corrupt.
pub fn report_bad_replica(node: &Arc<Node>, bpid: &str, block: Block) {
    let Some(id) = node.id() else { return };
    let msg = BadBlocks {
        block_pool_id: bpid.to_string(),
        replicas: vec![(block, id.uuid)],
    };
    let members = node.pool_members.read().get(bpid).cloned().unwrap_or_default();
    let n = node.clone();
    tokio::spawn(async move {
        for m in members {
            let sent: Result<(), FsError> = async { dec(n.member(&m)?.report_bad_blocks(enc(&msg)?).await) }.await;
            if let Err(e) = sent {
                tracing::debug!(member = %m, error = %e, "report bad block");
            }
        }
    });
}

/// Be the primary of a block recovery (HDFS `BlockRecoveryWorker`): ask
/// every replica for its state, agree on a length (a finalized replica's
/// if there is one, else the shortest being written; a truncate's
/// `cut_to`), cut every replica to it under the recovery stamp, and report
/// the result to the leader.
async fn recover_block(
    node: &Arc<Node>,
    bpid: &str,
    inode: u64,
    block: Block,
    recovery_id: u64,
    replicas: Vec<DatanodeId>,
    cut_to: Option<u64>,
) -> Result<(), FsError> {
    let mut found: Vec<(DatanodeId, ReplicaReport)> = Vec::new();
    for dn in &replicas {
        let req = InitRecovery {
            block_pool_id: bpid.to_string(),
            block,
            recovery_id,
        };
        let r: Result<ReplicaReport, FsError> = async {
            let m = node
                .peer(&dn.addr)?
                .init_replica_recovery(enc(&req)?)
                .await
                .map_err(|s| raftfs_proto::datanode::from_status(&s))?;
            codec::decode(&m.get_ref().data_bin, "replica report")
        }
        .await;
        match r {
            Ok(rep) => found.push((dn.clone(), rep)),
            Err(e) => tracing::info!(node = %dn.addr, block = %block, error = %e, "replica left out of the recovery"),
        }
    }
    let finalized = found
        .iter()
        .filter(|(_, r)| r.state == ReplicaState::Finalized)
        .map(|(_, r)| r.visible_length)
        .min();
    let length = match (cut_to, finalized) {
        (Some(l), _) => l,
        (None, Some(l)) => l,
        (None, None) => found
            .iter()
            .map(|(_, r)| r.visible_length)
            .min()
            .ok_or_else(|| FsError::BlockMissing(format!("no replica of {block} answered the recovery")))?,
    };
    let mut nodes = Vec::new();
    for (dn, rep) in &found {
        if rep.visible_length < length {
            continue;
        }
        let req = UpdateRecovery {
            block_pool_id: bpid.to_string(),
            block,
            recovery_id,
            new_length: length,
        };
        let r: Result<(), FsError> = async {
            node.peer(&dn.addr)?
                .update_replica_under_recovery(enc(&req)?)
                .await
                .map_err(|s| raftfs_proto::datanode::from_status(&s))?;
            Ok(())
        }
        .await;
        match r {
            Ok(()) => nodes.push(dn.uuid.clone()),
            Err(e) => tracing::warn!(node = %dn.addr, block = %block, error = %e, "update replica under recovery"),
        }
    }
    if nodes.is_empty() {
        return Err(FsError::BlockMissing(format!(
            "no replica of {block} could be recovered"
        )));
    }
    let commit = CommitBlockSync {
        block_pool_id: bpid.to_string(),
        inode,
        block,
        new_gen_stamp: recovery_id,
        new_length: length,
        nodes,
    };
    let msg = enc(&commit)?;
    to_leader::<(), _>(node, bpid, move |mut c| {
        let msg = msg.clone();
        Box::pin(async move { c.commit_block_synchronization(msg).await })
    })
    .await?;
    tracing::info!(block = %block, length, recovery_id, "block recovered");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_of_a_deposed_leader_are_ignored() {
        let h = AtomicU64::new(0);
        assert!(obey(&h, 5, true), "the leader of term 5");
        assert!(!obey(&h, 5, false), "a follower never commands");
        assert!(!obey(&h, 6, false), "a follower's higher term is remembered");
        assert!(
            !obey(&h, 5, true),
            "the old leader of term 5 is deposed once term 6 was seen"
        );
        assert!(obey(&h, 6, true), "the leader of term 6");
        assert!(obey(&h, 7, true));
    }
}
