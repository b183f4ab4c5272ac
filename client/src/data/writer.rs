//! [`FileWriter`]: HDFS's `DFSOutputStream` + `DataStreamer`.
//!
//! Bytes are cut into packets (at most [`WRITE_PACKET_BYTES`], never across
//! a block boundary), each with the CRC32C of every 512-byte chunk, and
//! sent down the block's pipeline; at most [`MAX_PACKETS_IN_FLIGHT`] wait
//! for their acks. Every packet starts on a chunk boundary: after an
//! hflush that ended inside a chunk, the next packet repeats that chunk's
//! bytes, and the DataNodes rewrite it with its new checksum.
//!
//! A pipeline that fails (an ack names a bad node, or the first node's
//! stream breaks) is rebuilt: the bad node is dropped, a replacement is
//! asked for and given a copy of the acknowledged bytes by a survivor, the
//! block gets a new generation stamp, the survivors reopen their replicas
//! at the acknowledged length, and the unacknowledged packets are sent
//! again. A pipeline that cannot be set up at all is abandoned and a new
//! block asked for, without the bad node.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use raftfs_proto::datanode::{TransferRequest, WriteHeader, WriteStage, ACK_SUCCESS, SETUP_SEQNO};
use raftfs_proto::pb::{DnMessage, WriteAck, WritePacket};
use raftfs_proto::{codec, Block, BlockToken, DatanodeId, FsError, LocatedBlock, Op, OpResult};

use super::{checksums, MAX_BLOCK_SETUP_ATTEMPTS, MAX_PACKETS_IN_FLIGHT, MAX_PIPELINE_RECOVERIES, WRITE_PACKET_BYTES};
use crate::fs::Core;

const CHUNK: u64 = raftfs_proto::datanode::BYTES_PER_CHECKSUM as u64;

#[derive(Clone)]
struct Sent {
    seqno: u64,
    offset: u64,
    data: Bytes,
    sums: Bytes,
    last: bool,
    sync: bool,
}

impl Sent {
    fn end(&self) -> u64 {
        self.offset + self.data.len() as u64
    }
    fn packet(&self) -> WritePacket {
        WritePacket {
            header_bin: Vec::new(),
            seqno: self.seqno,
            offset: self.offset,
            data: self.data.clone(),
            checksums: self.sums.clone(),
            last: self.last,
            sync: self.sync,
        }
    }
}

/// The block being written and its pipeline.
struct Pipeline {
    /// Id and current stamp; `num_bytes` = bytes of the block sent so far.
    block: Block,
    nodes: Vec<DatanodeId>,
    tx: mpsc::Sender<WritePacket>,
    acks: Streaming<WriteAck>,
    unacked: VecDeque<Sent>,
    next_seqno: u64,
    /// Bytes of the block every node acknowledged.
    acked: u64,
    /// The bytes after the last chunk boundary of what was sent.
    partial: Vec<u8>,
    recoveries: usize,
}

/// Writes one file. Call [`FileWriter::close`] to finish it: until then the
/// file is under construction and holds the writer's lease.
pub struct FileWriter {
    core: Arc<Core>,
    path: String,
    pool: String,
    replication: u16,
    block_size: u64,
    buf: Vec<u8>,
    cur: Option<Pipeline>,
    /// The file's last block, finished (addBlock's `previous`).
    prev: Option<Block>,
    pos: u64,
    excluded: Vec<String>,
    closed: bool,
}

fn bad_index(a: &WriteAck, nodes: usize) -> Option<usize> {
    match a.status.iter().position(|s| *s != ACK_SUCCESS) {
        Some(i) => Some(i),
        None if a.status.len() < nodes => Some(a.status.len()),
        None => None,
    }
}

impl FileWriter {
    pub(crate) async fn open(
        core: Arc<Core>,
        path: &str,
        replication: u16,
        block_size: u64,
        pos: u64,
        prev: Option<Block>,
        pool: String,
    ) -> Result<FileWriter, FsError> {
        core.writer_opened();
        Ok(FileWriter {
            core,
            path: path.to_string(),
            pool,
            replication,
            block_size,
            buf: Vec::with_capacity(WRITE_PACKET_BYTES),
            cur: None,
            prev,
            pos,
            excluded: Vec::new(),
            closed: false,
        })
    }

    /// Reopen the partial last block of a file opened for append.
    pub(crate) async fn reopen(&mut self, lb: LocatedBlock) -> Result<(), FsError> {
        let b = lb.block;
        // The bytes after the last chunk boundary go at the head of the next packet.
        let tail_start = b.num_bytes - b.num_bytes % CHUNK;
        let partial = if tail_start < b.num_bytes {
            super::reader::read_block_range(&self.core, &self.pool, &lb, tail_start, b.num_bytes - tail_start).await?
        } else {
            Vec::new()
        };
        let mut nodes = lb.locations.clone();
        loop {
            if nodes.is_empty() {
                return Err(FsError::BlockMissing(format!(
                    "no replica of the last block {b} of {} can be reopened for append",
                    self.path
                )));
            }
            let (new_gs, token) = self.new_stamp(&b).await?;
            let nb = Block { gen_stamp: new_gs, ..b };
            match self.connect(&nodes, nb, WriteStage::Recover, token).await {
                Ok((tx, acks)) => {
                    self.update_pipeline(b, nb, &nodes).await?;
                    self.cur = Some(Pipeline {
                        block: nb,
                        nodes,
                        tx,
                        acks,
                        unacked: VecDeque::new(),
                        next_seqno: 0,
                        acked: b.num_bytes,
                        partial,
                        recoveries: 0,
                    });
                    return Ok(());
                }
                Err((i, e)) => {
                    tracing::warn!(block = %b, error = %e, "reopen for append: dropping a node");
                    let bad = nodes.remove(i.min(nodes.len() - 1));
                    self.excluded.push(bad.uuid);
                }
            }
        }
    }

    /// Bytes written so far (the file's length once closed).
    pub fn pos(&self) -> u64 {
        self.pos
    }

    pub async fn write(&mut self, data: &[u8]) -> Result<(), FsError> {
        if self.closed {
            return Err(FsError::InvalidArgument(format!("{} is closed", self.path)));
        }
        self.buf.extend_from_slice(data);
        self.pos += data.len() as u64;
        while self.buf.len() >= WRITE_PACKET_BYTES {
            self.send_packet(false).await?;
        }
        Ok(())
    }

    /// Data written so far is on every DataNode of the pipeline and visible
    /// to new readers (HDFS `hflush`).
    pub async fn hflush(&mut self) -> Result<(), FsError> {
        self.flush(false).await
    }

    /// As [`FileWriter::hflush`], and on the DataNodes' disks (HDFS `hsync`).
    pub async fn hsync(&mut self) -> Result<(), FsError> {
        self.flush(true).await
    }

    async fn flush(&mut self, sync: bool) -> Result<(), FsError> {
        while !self.buf.is_empty() {
            self.send_packet(sync).await?;
        }
        if sync && self.cur.is_some() {
            self.send_empty(false, true).await?;
        }
        self.drain(true).await
    }

    /// Flush, finish the last block, and close the file (HDFS `complete`,
    /// asked again until the last block has its minimum replicas).
    pub async fn close(mut self) -> Result<(), FsError> {
        let r = self.finish().await;
        self.closed = true;
        self.core.writer_closed();
        r
    }

    async fn finish(&mut self) -> Result<(), FsError> {
        while !self.buf.is_empty() {
            self.send_packet(false).await?;
        }
        self.end_block().await?;
        let deadline = tokio::time::Instant::now() + Duration::from_millis(self.core.opts.call_deadline_ms);
        let mut backoff = Duration::from_millis(100);
        loop {
            let op = Op::Complete {
                path: self.path.clone(),
                last: self.prev,
            };
            match self.core.call(op).await? {
                OpResult::Bool(true) => return Ok(()),
                OpResult::Bool(false) if tokio::time::Instant::now() + backoff < deadline => {
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                }
                OpResult::Bool(false) => {
                    return Err(FsError::NotReplicatedYet(format!(
                        "Unable to close file {} because the last block {} does not have enough number of replicas.",
                        self.path,
                        self.prev.map(|b| b.to_string()).unwrap_or_default()
                    )))
                }
                other => return Err(FsError::Internal(format!("complete answered {other:?}"))),
            }
        }
    }

    /// Send the last packet of the current block and wait for every ack.
    async fn end_block(&mut self) -> Result<(), FsError> {
        if self.cur.is_none() {
            return Ok(());
        }
        self.send_empty(true, false).await?;
        self.drain(true).await?;
        let p = self.cur.take().expect("checked");
        self.prev = Some(Block {
            num_bytes: p.acked,
            ..p.block
        });
        Ok(())
    }

    async fn send_empty(&mut self, last: bool, sync: bool) -> Result<(), FsError> {
        let p = self.cur.as_mut().expect("a pipeline is up");
        let sent = Sent {
            seqno: p.next_seqno,
            offset: p.block.num_bytes,
            data: Bytes::new(),
            sums: Bytes::new(),
            last,
            sync,
        };
        self.push(sent).await
    }

    /// Cut one packet from the buffer and send it.
    async fn send_packet(&mut self, sync: bool) -> Result<(), FsError> {
        if self.cur.as_ref().is_some_and(|p| p.block.num_bytes >= self.block_size) {
            self.end_block().await?;
        }
        if self.cur.is_none() {
            self.new_block().await?;
        }
        let p = self.cur.as_mut().expect("a pipeline is up");
        let room = (self.block_size - p.block.num_bytes) as usize;
        let take = self.buf.len().min(WRITE_PACKET_BYTES - p.partial.len()).min(room);
        let mut data = std::mem::take(&mut p.partial);
        data.extend_from_slice(&self.buf[..take]);
        self.buf.drain(..take);
        let offset = p.block.num_bytes - (data.len() - take) as u64;
        let tail = data.len() % CHUNK as usize;
        p.partial = data[data.len() - tail..].to_vec();
        let sent = Sent {
            seqno: p.next_seqno,
            offset,
            sums: checksums(&data).into(),
            data: data.into(),
            last: false,
            sync: sync && self.buf.is_empty(),
        };
        self.push(sent).await
    }

    async fn push(&mut self, sent: Sent) -> Result<(), FsError> {
        {
            let p = self.cur.as_mut().expect("a pipeline is up");
            p.next_seqno += 1;
            p.block.num_bytes = p.block.num_bytes.max(sent.end());
            p.unacked.push_back(sent.clone());
            // A broken stream shows up as a missing ack below.
            let _ = p.tx.send(sent.packet()).await;
        }
        self.drain(false).await
    }

    /// Read acks until fewer than the in-flight limit wait (or none, with `all`).
    async fn drain(&mut self, all: bool) -> Result<(), FsError> {
        loop {
            let Some(p) = self.cur.as_mut() else { return Ok(()) };
            if p.unacked.is_empty() || (!all && p.unacked.len() < MAX_PACKETS_IN_FLIGHT) {
                return Ok(());
            }
            let failed = match p.acks.message().await {
                Ok(Some(a)) => match bad_index(&a, p.nodes.len()) {
                    None if p.unacked.front().map(|s| s.seqno) == Some(a.seqno) => {
                        let s = p.unacked.pop_front().expect("front");
                        p.acked = p.acked.max(s.end());
                        continue;
                    }
                    None => (0, format!("ack for {} out of order", a.seqno)),
                    Some(i) => (i, a.message),
                },
                Ok(None) => (0, "the pipeline closed".to_string()),
                Err(s) => (0, format!("the pipeline broke: {}", s.message())),
            };
            self.recover(failed.0, &failed.1).await?;
        }
    }

    /// A new generation stamp for the block being written, and a token to write it.
    async fn new_stamp(&self, b: &Block) -> Result<(u64, Option<BlockToken>), FsError> {
        let op = Op::UpdateBlockForPipeline {
            path: self.path.clone(),
            block: *b,
        };
        match self.core.call(op).await? {
            OpResult::Located(lb) => Ok((lb.block.gen_stamp, lb.token)),
            other => Err(FsError::Internal(format!("updateBlockForPipeline answered {other:?}"))),
        }
    }

    async fn update_pipeline(&self, old: Block, new: Block, nodes: &[DatanodeId]) -> Result<(), FsError> {
        let op = Op::UpdatePipeline {
            path: self.path.clone(),
            old,
            new,
            nodes: nodes.iter().map(|n| n.uuid.clone()).collect(),
        };
        self.core.call(op).await.map(|_| ())
    }

    /// Open a pipeline to `nodes` for `block`; on failure, the index of the bad node.
    async fn connect(
        &self,
        nodes: &[DatanodeId],
        block: Block,
        stage: WriteStage,
        token: Option<BlockToken>,
    ) -> Result<(mpsc::Sender<WritePacket>, Streaming<WriteAck>), (usize, FsError)> {
        let first = nodes
            .first()
            .ok_or((0, FsError::Unavailable("an empty pipeline".into())))?;
        let (mut client, shown) = self.core.datanode(&first.addr, token.as_ref()).map_err(|e| (0, e))?;
        let header = WriteHeader {
            block_pool_id: self.pool.clone(),
            block,
            downstream: nodes[1..].to_vec(),
            stage,
            client: self.core.client_id.clone(),
            token: shown.token,
            proof: shown.proof,
        };
        let (tx, rx) = mpsc::channel(MAX_PACKETS_IN_FLIGHT + 2);
        let header_bin = codec::encode(&header).map_err(|e| (0, e))?;
        let _ = tx
            .send(WritePacket {
                header_bin,
                ..Default::default()
            })
            .await;
        let mut acks = client
            .write_block(ReceiverStream::new(rx))
            .await
            .map_err(|s| match raftfs_proto::datanode::from_status(&s) {
                e @ FsError::InvalidToken(_) => (0, e),
                _ => (
                    0,
                    FsError::Unavailable(format!("connect to {}: {}", first.addr, s.message())),
                ),
            })?
            .into_inner();
        match acks.message().await {
            Ok(Some(a)) if a.seqno == SETUP_SEQNO => match bad_index(&a, nodes.len()) {
                None => Ok((tx, acks)),
                Some(i) => Err((i, FsError::Unavailable(format!("pipeline setup: {}", a.message)))),
            },
            Ok(Some(a)) => Err((0, FsError::Internal(format!("setup answered with seqno {}", a.seqno)))),
            Ok(None) => Err((0, FsError::Unavailable(format!("{} closed the pipeline", first.addr)))),
            Err(s) => Err((0, FsError::Unavailable(format!("{}: {}", first.addr, s.message())))),
        }
    }

    /// Allocate the next block and set up its pipeline.
    async fn new_block(&mut self) -> Result<(), FsError> {
        let mut last_err = FsError::Unavailable("no pipeline could be set up".into());
        for _ in 0..MAX_BLOCK_SETUP_ATTEMPTS {
            let op = Op::AddBlock {
                path: self.path.clone(),
                previous: self.prev,
                excluded: self.excluded.clone(),
            };
            let lb = match self.core.call(op).await? {
                OpResult::Located(lb) => lb,
                other => return Err(FsError::Internal(format!("addBlock answered {other:?}"))),
            };
            match self
                .connect(&lb.locations, lb.block, WriteStage::Create, lb.token.clone())
                .await
            {
                Ok((tx, acks)) => {
                    self.cur = Some(Pipeline {
                        block: lb.block,
                        nodes: lb.locations,
                        tx,
                        acks,
                        unacked: VecDeque::new(),
                        next_seqno: 0,
                        acked: 0,
                        partial: Vec::new(),
                        recoveries: 0,
                    });
                    return Ok(());
                }
                Err((i, e)) => {
                    tracing::warn!(block = %lb.block, error = %e, "pipeline setup failed: abandoning the block");
                    // A refused token is no fault of the node (it may not
                    // have the member's newest key yet): the next block comes with a new one.
                    if let (Some(bad), false) = (lb.locations.get(i), matches!(e, FsError::InvalidToken(_))) {
                        self.excluded.push(bad.uuid.clone());
                    }
                    self.core
                        .call(Op::AbandonBlock {
                            path: self.path.clone(),
                            block: lb.block,
                        })
                        .await?;
                    last_err = e;
                }
            }
        }
        Err(last_err)
    }

    /// Rebuild the pipeline without node `bad` (see the module docs).
    async fn recover(&mut self, mut bad: usize, why: &str) -> Result<(), FsError> {
        loop {
            let p = self.cur.as_mut().expect("a pipeline is up");
            p.recoveries += 1;
            if p.recoveries > MAX_PIPELINE_RECOVERIES {
                return Err(FsError::Unavailable(format!(
                    "the pipeline of {} failed {MAX_PIPELINE_RECOVERIES} times; last: {why}",
                    p.block
                )));
            }
            let gone = p.nodes.remove(bad.min(p.nodes.len().saturating_sub(1)));
            tracing::warn!(block = %p.block, node = %gone.addr, reason = why, "pipeline failed: rebuilding it without the node");
            self.excluded.push(gone.uuid.clone());
            let (block, acked) = (p.block, p.acked);
            let mut nodes = p.nodes.clone();
            if nodes.is_empty() {
                return Err(FsError::Unavailable(format!(
                    "All DataNodes of the pipeline of {block} are bad. Aborting..."
                )));
            }
            if nodes.len() < self.replication as usize {
                if let Some(n) = self.replacement(&block, &nodes, acked).await {
                    nodes.push(n);
                }
            }
            let (new_gs, token) = self.new_stamp(&block).await?;
            let nb = Block {
                id: block.id,
                gen_stamp: new_gs,
                num_bytes: acked,
            };
            match self.connect(&nodes, nb, WriteStage::Recover, token).await {
                Ok((tx, acks)) => {
                    self.update_pipeline(
                        Block {
                            num_bytes: acked,
                            ..block
                        },
                        nb,
                        &nodes,
                    )
                    .await?;
                    let p = self.cur.as_mut().expect("a pipeline is up");
                    p.block.gen_stamp = new_gs;
                    p.nodes = nodes;
                    p.tx = tx;
                    p.acks = acks;
                    p.next_seqno = 0;
                    for s in p.unacked.iter_mut() {
                        s.seqno = p.next_seqno;
                        p.next_seqno += 1;
                        let _ = p.tx.send(s.packet()).await;
                    }
                    return Ok(());
                }
                Err((i, e)) => {
                    // Nodes that did reopen hold the unused stamp; the next
                    // attempt's newer stamp supersedes it.
                    self.cur.as_mut().expect("a pipeline is up").nodes = nodes;
                    bad = i;
                    tracing::warn!(error = %e, "rebuilt pipeline did not come up");
                }
            }
        }
    }

    /// A new node for the pipeline, given a copy of the acknowledged bytes.
    async fn replacement(&mut self, block: &Block, nodes: &[DatanodeId], acked: u64) -> Option<DatanodeId> {
        let op = Op::GetAdditionalDatanode {
            path: self.path.clone(),
            block: *block,
            existing: nodes.iter().map(|n| n.uuid.clone()).collect(),
            excluded: self.excluded.clone(),
            count: 1,
        };
        let (new, token) = match self.core.call(op).await {
            Ok(OpResult::Located(lb)) => (lb.locations.into_iter().next()?, lb.token),
            Ok(_) => return None,
            Err(e) => {
                tracing::info!(error = %e, "no replacement DataNode: going on with the survivors");
                return None;
            }
        };
        if acked > 0 {
            let sent = async {
                let (mut dn, shown) = self.core.datanode(&nodes[0].addr, token.as_ref())?;
                let req = TransferRequest {
                    block_pool_id: self.pool.clone(),
                    block: Block {
                        num_bytes: acked,
                        ..*block
                    },
                    targets: vec![new.clone()],
                    stage: WriteStage::TransferRbw,
                    token: shown.token,
                    proof: shown.proof,
                };
                let data_bin = codec::encode(&req)?;
                dn.transfer_block(DnMessage { data_bin })
                    .await
                    .map_err(|s| raftfs_proto::datanode::from_status(&s))
            }
            .await;
            if let Err(e) = sent {
                tracing::warn!(node = %new.addr, error = %e, "copy to the replacement DataNode failed");
                self.excluded.push(new.uuid);
                return None;
            }
        }
        Some(new)
    }
}

impl Drop for FileWriter {
    fn drop(&mut self) {
        if !self.closed {
            self.core.writer_closed();
        }
    }
}
