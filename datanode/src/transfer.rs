//! The data transfer service (HDFS `DataXceiver`): block writes down a
//! pipeline, reads, replica queries, block checksums, copies to other
//! DataNodes, and the two replica steps of a block recovery.
//!
//! A write: the first message names the block, the stage and the nodes
//! after this one. This node opens its replica, connects to the next node
//! (which does the same), and answers the setup with one status per node.
//! Then every packet is forwarded downstream before it is checked and
//! written here; a responder acknowledges a packet upstream only when this
//! node wrote it and every node below acknowledged it, so an ack means the
//! packet is on every node of the pipeline (and, for a `sync` packet or the
//! block's last one, on their disks). The first failing node is named in the
//! ack's statuses, which is what the writer needs to rebuild the pipeline.
//!
//! Every request shows a block access token first ([`Node::check_token`]):
//! READ for reads, replica queries and checksums, WRITE for a pipeline (the
//! writer's token travels down it unchanged; a copy carries one the source
//! DataNode signs), COPY for a transfer. The two recovery steps instead
//! need a DataNode's certificate, as they come only from the primary
//! DataNode of a recovery the leader ordered.

use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::{Stream, StreamExt};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use raftfs_proto::codec;
use raftfs_proto::datanode::{
    to_status, BlockChecksumReply, BlockRequest, InitRecovery, ReadHeader, ReplicaQuery, ReplicaReport,
    TransferRequest, UpdateRecovery, WriteHeader, WriteStage, ACK_CHECKSUM_ERROR, ACK_ERROR, ACK_SUCCESS,
    MAX_PACKET_DATA_BYTES, SETUP_SEQNO,
};
use raftfs_proto::pb::data_transfer_server::DataTransfer;
use raftfs_proto::pb::{DnMessage, ReadBlockRequest, ReadChunk, WriteAck, WritePacket};
use raftfs_proto::{AccessMode, Block, BlockToken, FsError};

use raftfs_trust::PeerRole;

use crate::node::Node;
use crate::storage::{Pool, ReplicaWriter};

/// Packets a pipeline stage holds between receiving and acknowledging.
pub const MAX_PACKETS_IN_FLIGHT: usize = 128;
/// Bytes sent per message when a replica is read or copied.
pub const READ_CHUNK_BYTES: usize = 512 * 1024;

pub struct TransferService {
    pub node: Arc<Node>,
    /// Serves the plaintext connections of a TLS node (data protection
    /// `authentication`): requests show proofs, not tokens, and nothing
    /// that needs a DataNode's certificate is served.
    pub over_plaintext: bool,
}

fn decode_msg<T: serde::de::DeserializeOwned>(m: &DnMessage, what: &str) -> Result<T, Status> {
    codec::decode(&m.data_bin, what).map_err(|e| to_status(&e))
}

fn reply<T: serde::Serialize>(v: &T) -> Result<Response<DnMessage>, Status> {
    let data_bin = codec::encode(v).map_err(|e| to_status(&e))?;
    Ok(Response::new(DnMessage { data_bin }))
}

fn pool_of(node: &Node, bpid: &str) -> Result<Arc<Pool>, FsError> {
    node.storage
        .pool(bpid)
        .ok_or_else(|| FsError::InvalidArgument(format!("this DataNode does not serve block pool {bpid}")))
}

fn ack(seqno: u64, status: Vec<u32>, message: String) -> WriteAck {
    WriteAck { seqno, status, message }
}

/// Stop whoever writes replica `id` of `pool` and wait until it has let go.
pub async fn stop_writer(pool: &Pool, id: u64) {
    let guard = pool.get(id).and_then(|r| r.writer);
    if let Some(g) = guard {
        g.abort.store(true, Ordering::Relaxed);
        let _held = g.lock.lock().await;
    }
}

/// Run blocking storage work on tokio's blocking pool.
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, FsError> + Send + 'static,
) -> Result<T, FsError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| FsError::Internal(format!("storage task: {e}")))?
}

type AckStream = Pin<Box<dyn Stream<Item = Result<WriteAck, Status>> + Send>>;

/// Open the downstream part of a pipeline: a WriteBlock stream to the next
/// node. Returns the packet sender, the ack stream and its setup statuses.
async fn connect_downstream(
    node: &Node,
    header: &WriteHeader,
) -> Result<(mpsc::Sender<WritePacket>, Streaming<WriteAck>, Vec<u32>), FsError> {
    let next = &header.downstream[0];
    let h = WriteHeader {
        downstream: header.downstream[1..].to_vec(),
        ..header.clone()
    };
    let (tx, rx) = mpsc::channel(MAX_PACKETS_IN_FLIGHT);
    tx.send(WritePacket {
        header_bin: codec::encode(&h)?,
        ..Default::default()
    })
    .await
    .map_err(|_| FsError::Internal("downstream channel closed".into()))?;
    let mut client = node.peer(&next.addr)?;
    let mut acks = client
        .write_block(ReceiverStream::new(rx))
        .await
        .map_err(|s| FsError::Unavailable(format!("connect to {}: {}", next.addr, s.message())))?
        .into_inner();
    let setup = acks
        .message()
        .await
        .map_err(|s| FsError::Unavailable(format!("pipeline setup at {}: {}", next.addr, s.message())))?
        .ok_or_else(|| FsError::Unavailable(format!("{} closed the pipeline at setup", next.addr)))?;
    Ok((tx, acks, setup.status))
}

/// Open this node's replica for `header`.
async fn open_replica(node: &Arc<Node>, pool: &Arc<Pool>, header: &WriteHeader) -> Result<ReplicaWriter, FsError> {
    let (n, p, b, stage) = (node.clone(), pool.clone(), header.block, header.stage);
    if stage == WriteStage::Recover {
        stop_writer(pool, b.id).await;
    }
    blocking(move || match stage {
        WriteStage::Create => n.storage.create_replica(&p, b, false),
        WriteStage::Transfer | WriteStage::TransferRbw => n.storage.create_replica(&p, b, true),
        // A node new to the pipeline before any byte was acknowledged starts afresh.
        WriteStage::Recover if b.num_bytes == 0 && p.get(b.id).is_none() => n.storage.create_replica(&p, b, false),
        WriteStage::Recover => n.storage.reopen_replica(&p, b),
    })
    .await
}

/// Receive one block: the body of a WriteBlock call, and of a Hadoop
/// client's WRITE_BLOCK ([`crate::hadoop_xfer`]), whose packets arrive
/// converted.
pub(crate) async fn receive_block<S>(
    node: Arc<Node>,
    header: WriteHeader,
    mut inbound: S,
    upstream: mpsc::Sender<Result<WriteAck, Status>>,
) where
    S: Stream<Item = Result<WritePacket, Status>> + Unpin + Send + 'static,
{
    let _x = node.xceiver();
    let n_down = header.downstream.len();
    let fail_setup = |msg: String| {
        let up = upstream.clone();
        async move {
            let mut status = vec![ACK_ERROR];
            status.resize(1 + n_down, ACK_SUCCESS);
            let _ = up.send(Ok(ack(SETUP_SEQNO, status, msg))).await;
        }
    };
    let pool = match pool_of(&node, &header.block_pool_id) {
        Ok(p) => p,
        Err(e) => return fail_setup(e.to_string()).await,
    };
    let mut writer = match open_replica(&node, &pool, &header).await {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(block = %header.block, error = %e, "open replica for writing");
            return fail_setup(e.to_string()).await;
        }
    };
    let held = writer.guard.lock.clone().lock_owned().await;
    if matches!(header.stage, WriteStage::Create | WriteStage::Recover) {
        node.report_receiving(&pool.id, writer.block);
    }
    let mut down: Option<(mpsc::Sender<WritePacket>, Streaming<WriteAck>)> = None;
    if n_down > 0 {
        match connect_downstream(&node, &header).await {
            Ok((tx, acks, status)) => {
                let failed = status.iter().any(|s| *s != ACK_SUCCESS);
                let mut all = vec![ACK_SUCCESS];
                all.extend(status);
                let _ = upstream.send(Ok(ack(SETUP_SEQNO, all, String::new()))).await;
                if failed {
                    return;
                }
                down = Some((tx, acks));
            }
            Err(e) => {
                tracing::warn!(block = %header.block, next = %header.downstream[0].addr, error = %e, "pipeline downstream");
                let mut status = vec![ACK_SUCCESS, ACK_ERROR];
                status.resize(1 + n_down, ACK_SUCCESS);
                let _ = upstream.send(Ok(ack(SETUP_SEQNO, status, e.to_string()))).await;
                return;
            }
        }
    } else if upstream
        .send(Ok(ack(SETUP_SEQNO, vec![ACK_SUCCESS], String::new())))
        .await
        .is_err()
    {
        return;
    }
    // Responder: local results in order, matched with downstream acks.
    let (local_tx, mut local_rx) = mpsc::channel::<(u64, u32, u64, String)>(MAX_PACKETS_IN_FLIGHT);
    let (down_tx, mut down_acks) = match down {
        Some((tx, acks)) => (Some(tx), Some(acks)),
        None => (None, None),
    };
    let up = upstream.clone();
    let vis_pool = pool.clone();
    let block_id = writer.block.id;
    let responder = tokio::spawn(async move {
        while let Some((seqno, status, end, msg)) = local_rx.recv().await {
            let mut all = vec![status];
            let mut message = msg;
            if let Some(acks) = &mut down_acks {
                match acks.message().await {
                    Ok(Some(a)) if a.seqno == seqno => {
                        all.extend(a.status);
                        if message.is_empty() {
                            message = a.message;
                        }
                    }
                    other => {
                        all.push(ACK_ERROR);
                        message = match other {
                            Ok(Some(a)) => format!("downstream acked {} for {seqno}", a.seqno),
                            Ok(None) => "downstream closed the pipeline".into(),
                            Err(s) => format!("downstream: {}", s.message()),
                        };
                    }
                }
            }
            let ok = all.iter().all(|s| *s == ACK_SUCCESS);
            if ok {
                vis_pool.set_visible(block_id, end);
            }
            if up.send(Ok(ack(seqno, all, message))).await.is_err() || !ok {
                return;
            }
        }
    });
    loop {
        let pkt = match inbound.next().await.transpose() {
            Ok(Some(p)) => p,
            Ok(None) => break,
            Err(s) => {
                tracing::debug!(block = %writer.block, error = %s.message(), "upstream went away");
                break;
            }
        };
        if pkt.data.len() > MAX_PACKET_DATA_BYTES {
            let _ = local_tx
                .send((pkt.seqno, ACK_ERROR, writer.block.num_bytes, "packet too large".into()))
                .await;
            break;
        }
        if let Some(tx) = &down_tx {
            // A broken downstream shows up in the responder as a missing ack.
            let _ = tx.send(pkt.clone()).await;
        }
        let (seqno, last, sync) = (pkt.seqno, pkt.last, pkt.sync);
        let packet_bytes = pkt.data.len() as u64;
        let n2 = node.clone();
        let result = tokio::task::spawn_blocking(move || {
            let r = writer.write_packet(&n2.storage, pkt.offset, &pkt.data, &pkt.checksums);
            let r = r.and_then(|_| if sync { writer.sync(&n2.storage) } else { Ok(()) });
            (writer, r)
        })
        .await;
        let (w, r) = match result {
            Ok(x) => x,
            Err(e) => {
                tracing::error!(error = %e, "write task failed");
                break;
            }
        };
        writer = w;
        let end = writer.block.num_bytes;
        if r.is_ok() {
            pool.bytes_written
                .fetch_add(packet_bytes, std::sync::atomic::Ordering::Relaxed);
        }
        if let Err(e) = r {
            let status = if matches!(e, FsError::Checksum(_)) {
                ACK_CHECKSUM_ERROR
            } else {
                ACK_ERROR
            };
            tracing::warn!(block = %writer.block, error = %e, "write packet");
            let _ = local_tx.send((seqno, status, end, e.to_string())).await;
            break;
        }
        if last {
            let (n2, stage, bpid) = (node.clone(), header.stage, pool.id.clone());
            let done = blocking(move || match stage {
                WriteStage::TransferRbw => writer.close_rbw(&n2.storage),
                _ => writer.finalize(&n2.storage),
            })
            .await;
            let (status, msg) = match done {
                Ok(b) => {
                    if header.stage != WriteStage::TransferRbw {
                        node.report_received(&bpid, b);
                    }
                    (ACK_SUCCESS, String::new())
                }
                Err(e) => {
                    tracing::warn!(block = %header.block, error = %e, "finalize replica");
                    (ACK_ERROR, e.to_string())
                }
            };
            let _ = local_tx.send((seqno, status, end, msg)).await;
            drop(local_tx);
            let _ = responder.await;
            drop(held);
            return;
        }
        if local_tx.send((seqno, ACK_SUCCESS, end, String::new())).await.is_err() {
            break;
        }
    }
    drop(local_tx);
    drop(down_tx);
    let _ = responder.await;
    drop(held);
}

type ChunkStream = Pin<Box<dyn Stream<Item = Result<ReadChunk, Status>> + Send>>;

impl TransferService {
    /// [`Node::check_credential`] on this service's connections, as the
    /// gRPC status a refusal travels in.
    #[allow(clippy::result_large_err)]
    fn check(&self, req: &impl BlockRequest, mode: AccessMode) -> Result<Option<BlockToken>, Status> {
        self.node
            .check_credential(
                req.token(),
                req.proof(),
                self.over_plaintext,
                req.block_pool_id(),
                req.block_id(),
                mode,
            )
            .map_err(|e| to_status(&e))
    }
}

#[tonic::async_trait]
impl DataTransfer for TransferService {
    type WriteBlockStream = AckStream;
    type ReadBlockStream = ChunkStream;

    async fn write_block(
        &self,
        req: Request<Streaming<WritePacket>>,
    ) -> Result<Response<Self::WriteBlockStream>, Status> {
        let mut inbound = req.into_inner();
        let first = inbound
            .message()
            .await?
            .ok_or_else(|| Status::invalid_argument("empty write stream"))?;
        let mut header: WriteHeader = codec::decode(&first.header_bin, "write header").map_err(|e| to_status(&e))?;
        // Down the pipeline (in TLS) the token itself travels.
        header.token = self.check(&header, AccessMode::Write)?;
        header.proof = None;
        if header.downstream.len() > raftfs_proto::limits::MAX_REPLICATION as usize {
            return Err(Status::invalid_argument("pipeline longer than the largest replication"));
        }
        let (tx, rx) = mpsc::channel(MAX_PACKETS_IN_FLIGHT);
        tokio::spawn(receive_block(self.node.clone(), header, inbound, tx));
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn read_block(&self, req: Request<ReadBlockRequest>) -> Result<Response<Self::ReadBlockStream>, Status> {
        let header: ReadHeader =
            codec::decode(&req.into_inner().header_bin, "read header").map_err(|e| to_status(&e))?;
        self.check(&header, AccessMode::Read)?;
        let node = self.node.clone();
        let pool = pool_of(&node, &header.block_pool_id).map_err(|e| to_status(&e))?;
        let (n2, p2) = (node.clone(), pool.clone());
        let h2 = header.clone();
        let mut reader = blocking(move || n2.storage.open_reader(&p2, &h2.block, h2.offset, h2.length))
            .await
            .map_err(|e| to_status(&e))?;
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            let _x = node.xceiver();
            loop {
                let r = tokio::task::spawn_blocking(move || {
                    let c = reader.next_chunk(READ_CHUNK_BYTES);
                    (reader, c)
                })
                .await;
                let Ok((rd, chunk)) = r else { return };
                reader = rd;
                match chunk {
                    Ok(Some((offset, data, checksums))) => {
                        pool.bytes_read
                            .fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
                        let msg = ReadChunk {
                            offset,
                            data: data.into(),
                            checksums: checksums.into(),
                        };
                        if tx.send(Ok(msg)).await.is_err() {
                            return;
                        }
                    }
                    Ok(None) => return,
                    Err(e) => {
                        if matches!(e, FsError::Checksum(_)) {
                            tracing::warn!(block = %header.block, error = %e, "corrupt replica found by a read");
                            crate::actor::report_bad_replica(&node, &pool.id, reader.block);
                        }
                        let _ = tx.send(Err(to_status(&e))).await;
                        return;
                    }
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn replica_info(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        let q: ReplicaQuery = decode_msg(req.get_ref(), "replica query")?;
        self.check(&q, AccessMode::Read)?;
        let pool = pool_of(&self.node, &q.block_pool_id).map_err(|e| to_status(&e))?;
        let r = pool
            .get(q.block.id)
            .filter(|r| r.block.gen_stamp >= q.block.gen_stamp)
            .ok_or_else(|| to_status(&FsError::BlockMissing(format!("Replica not found for {}", q.block))))?;
        reply(&ReplicaReport {
            block: r.block,
            state: r.state,
            visible_length: r.visible_length(),
        })
    }

    async fn block_checksum(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        let q: ReplicaQuery = decode_msg(req.get_ref(), "block checksum query")?;
        self.check(&q, AccessMode::Read)?;
        let pool = pool_of(&self.node, &q.block_pool_id).map_err(|e| to_status(&e))?;
        let sum = block_md5(&self.node, pool, q.block).await.map_err(|e| to_status(&e))?;
        reply(&sum)
    }

    async fn transfer_block(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        let t: TransferRequest = decode_msg(req.get_ref(), "transfer request")?;
        self.check(&t, AccessMode::Copy)?;
        let b = crate::copy::transfer(&self.node, &t).await.map_err(|e| to_status(&e))?;
        reply(&b)
    }

    async fn init_replica_recovery(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        // Lease recovery runs between DataNodes (the primary asks the others).
        self.node
            .cfg
            .security
            .server
            .require(&req, PeerRole::Datanode, "InitReplicaRecovery")?;
        let q: InitRecovery = decode_msg(req.get_ref(), "recovery request")?;
        let pool = pool_of(&self.node, &q.block_pool_id).map_err(|e| to_status(&e))?;
        stop_writer(&pool, q.block.id).await;
        let r = self
            .node
            .storage
            .init_recovery(&pool, &q.block, q.recovery_id)
            .map_err(|e| to_status(&e))?;
        reply(&r)
    }

    async fn update_replica_under_recovery(&self, req: Request<DnMessage>) -> Result<Response<DnMessage>, Status> {
        self.node
            .cfg
            .security
            .server
            .require(&req, PeerRole::Datanode, "UpdateReplicaUnderRecovery")?;
        let q: UpdateRecovery = decode_msg(req.get_ref(), "recovery update")?;
        let pool = pool_of(&self.node, &q.block_pool_id).map_err(|e| to_status(&e))?;
        let n = self.node.clone();
        let p2 = pool.clone();
        let b: Block = blocking(move || n.storage.update_recovery(&p2, &q.block, q.recovery_id, q.new_length))
            .await
            .map_err(|e| to_status(&e))?;
        self.node.report_received(&pool.id, b);
        reply(&b)
    }
}

/// HDFS's MD5CRC block checksum of `block`'s first `num_bytes` in `pool`:
/// the MD5 of its chunks' CRC32Cs as the replica stores them (every chunk
/// read is verified on the way). Both protocols' BLOCK_CHECKSUM answer it.
pub async fn block_md5(node: &Arc<Node>, pool: Arc<Pool>, block: Block) -> Result<BlockChecksumReply, FsError> {
    use md5::Digest;
    let n = node.clone();
    blocking(move || {
        let mut reader = n.storage.open_reader(&pool, &block, 0, block.num_bytes)?;
        let mut md5 = md5::Md5::new();
        let mut chunks = 0u64;
        while let Some((_, _, sums)) = reader.next_chunk(READ_CHUNK_BYTES)? {
            md5.update(&sums);
            chunks += (sums.len() / raftfs_proto::datanode::CHECKSUM_SIZE_BYTES) as u64;
        }
        Ok(BlockChecksumReply {
            bytes_per_crc: raftfs_proto::datanode::BYTES_PER_CHECKSUM as u32,
            crc_per_block: chunks,
            md5: md5.finalize().into(),
        })
    })
    .await
}
