//! Hadoop's DataTransferProtocol (version 28) on its own port
//! (`--hadoop-xfer-addr`), so Hadoop's clients read blocks from this
//! DataNode as from an HDFS DataNode.
//!
//! Served: WRITE_BLOCK (a new block, an append, a pipeline recovery),
//! through the same pipeline as raftfs's gRPC writes (packets checked
//! against their CRC32Cs and written, forwarded to the next node over
//! raftfs's own data transfer, acknowledged once every node below has
//! them; heartbeat packets acknowledged at once); READ_BLOCK, through the
//! same checksummed replica reader as the gRPC read (every chunk is verified before it is sent; a corrupt replica
//! is reported to the nameservices and the connection closed), with the
//! block access token checked as for every gRPC request. Packets carry
//! [`PACKET_DATA_BYTES`] of data and one CRC32C per 512-byte chunk, as the
//! replica stores them. A connection may run one op after another (HDFS's
//! socket reuse), each within [`KEEPALIVE_MS`] of the last.
//!
//! Refused with `ERROR_UNSUPPORTED` and the connection closed: the other
//! ops (BLOCK_CHECKSUM, TRANSFER_BLOCK, short-circuit fds;
//! short-circuit reads use raftfs's own socket). A wrong version, an op
//! message over [`MAX_OP_MESSAGE_BYTES`] or one that does not decode gets
//! an `ERROR` answer and the connection is closed; nothing is read or
//! changed.
//!
//! Caveat: the port is plaintext TCP, as Hadoop's data transfer is without
//! SASL protection; block tokens (minted when the cluster runs TLS) travel
//! in it, as in HDFS without `dfs.data.transfer.protection`.

use std::sync::Arc;
use std::time::Duration;

use bytes::{BufMut, BytesMut};
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use raftfs_hadoop::wire::datatransfer::*;
use raftfs_hadoop::wire::hdfs::{Token, CHECKSUM_CRC32C};
use raftfs_proto::datanode::{BYTES_PER_CHECKSUM, CHECKSUM_SIZE_BYTES};
use raftfs_proto::{codec, AccessMode, Block, BlockToken, BlockTokenIdentifier, FsError};

use raftfs_proto::datanode::{WriteHeader, WriteStage, ACK_SUCCESS, MAX_PACKET_DATA_BYTES};
use raftfs_proto::pb::WritePacket;
use raftfs_proto::DatanodeId;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::node::Node;
use crate::transfer::{blocking, receive_block, MAX_PACKETS_IN_FLIGHT, READ_CHUNK_BYTES};

/// Data bytes per packet (HDFS's `dfs.client-write-packet-size`, 64 KiB).
pub const PACKET_DATA_BYTES: usize = 64 * 1024;
/// The largest op message read (an op names a block and a few nodes).
pub const MAX_OP_MESSAGE_BYTES: usize = 64 * 1024;
/// Connections served at once; more wait in the listen queue.
pub const MAX_HADOOP_XFER_CONNECTIONS: usize = 4096;
/// How long a connection may sit between two ops (HDFS's
/// `dfs.datanode.socket.reuse.keepalive`, 4 s).
pub const KEEPALIVE_MS: u64 = 4_000;
/// How long the first op and a reader's final status may take to arrive.
pub const OP_TIMEOUT_MS: u64 = 60_000;
/// `ChecksumTypeProto::CHECKSUM_NULL` (a reader that asked for no checksums).
const CHECKSUM_NULL: i32 = 0;

/// Serve DataTransferProtocol on `listener` for the life of the process.
pub fn serve(node: Arc<Node>, listener: TcpListener) {
    tokio::spawn(async move {
        let slots = Arc::new(Semaphore::new(MAX_HADOOP_XFER_CONNECTIONS));
        loop {
            let permit = slots.clone().acquire_owned().await.expect("never closed");
            match listener.accept().await {
                Ok((stream, peer)) => {
                    let node = node.clone();
                    tokio::spawn(async move {
                        let _permit = permit;
                        if let Err(why) = connection(node, stream).await {
                            tracing::debug!(%peer, %why, "Hadoop data transfer connection closed");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Hadoop data transfer accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    });
}

/// Why a connection ended (for the debug log).
type Closed = String;

async fn connection(node: Arc<Node>, stream: TcpStream) -> Result<(), Closed> {
    let _ = stream.set_nodelay(true);
    let (r, w) = stream.into_split();
    let (mut r, mut w) = (BufReader::new(r), BufWriter::new(w));
    let mut wait = Duration::from_millis(OP_TIMEOUT_MS);
    loop {
        let mut head = [0u8; 3];
        match tokio::time::timeout(wait, r.read_exact(&mut head)).await {
            Err(_) => return Ok(()),
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(()),
            Ok(Err(e)) => return Err(e.to_string()),
            Ok(Ok(_)) => {}
        }
        let version = u16::from_be_bytes([head[0], head[1]]);
        if version != DATA_TRANSFER_VERSION {
            let msg = format!("Version Mismatch (Expected: {DATA_TRANSFER_VERSION}, Received: {version} )");
            return refuse(&mut w, STATUS_ERROR, msg).await;
        }
        match head[2] {
            OP_WRITE_BLOCK => {
                let op: OpWriteBlock = match read_op(&mut r).await {
                    Ok(op) => op,
                    Err(e) => return refuse(&mut w, STATUS_ERROR, e).await,
                };
                return write_block(&node, r, w, op).await;
            }
            OP_READ_BLOCK => {
                let op: OpReadBlock = match read_op(&mut r).await {
                    Ok(op) => op,
                    Err(e) => return refuse(&mut w, STATUS_ERROR, e).await,
                };
                read_block(&node, &mut r, &mut w, op).await?;
            }
            other => {
                let msg = format!(
                    "op {other} is not served on this port (raftfs DataNodes serve WRITE_BLOCK and \
                     READ_BLOCK over DataTransferProtocol)"
                );
                return refuse(&mut w, STATUS_ERROR_UNSUPPORTED, msg).await;
            }
        }
        wait = Duration::from_millis(KEEPALIVE_MS);
    }
}

/// Read a varint-delimited op message of at most [`MAX_OP_MESSAGE_BYTES`].
async fn read_op<M: Message + Default>(r: &mut BufReader<OwnedReadHalf>) -> Result<M, String> {
    let mut len: u64 = 0;
    for shift in (0..35).step_by(7) {
        let b = tokio::time::timeout(Duration::from_millis(OP_TIMEOUT_MS), r.read_u8())
            .await
            .map_err(|_| "no op message in time".to_string())?
            .map_err(|e| format!("reading the op: {e}"))?;
        len |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            break;
        }
        if shift == 28 {
            return Err("the op's length is not a varint".into());
        }
    }
    if len as usize > MAX_OP_MESSAGE_BYTES {
        return Err(format!(
            "an op message of {len} bytes is over the {MAX_OP_MESSAGE_BYTES} allowed"
        ));
    }
    let mut buf = vec![0u8; len as usize];
    tokio::time::timeout(Duration::from_millis(OP_TIMEOUT_MS), r.read_exact(&mut buf))
        .await
        .map_err(|_| "the op message did not arrive in time".to_string())?
        .map_err(|e| format!("reading the op: {e}"))?;
    M::decode(&buf[..]).map_err(|e| format!("the op does not decode: {e}"))
}

async fn answer(w: &mut BufWriter<OwnedWriteHalf>, r: &BlockOpResponse) -> Result<(), Closed> {
    w.write_all(&r.encode_length_delimited_to_vec())
        .await
        .map_err(|e| e.to_string())?;
    w.flush().await.map_err(|e| e.to_string())
}

/// Answer `status` with `message` and end the connection.
async fn refuse(w: &mut BufWriter<OwnedWriteHalf>, status: i32, message: String) -> Result<(), Closed> {
    let r = BlockOpResponse {
        status,
        message: Some(message.clone()),
        ..Default::default()
    };
    let _ = answer(w, &r).await;
    let _ = w.shutdown().await;
    Err(message)
}

/// raftfs's block token inside Hadoop's token message (its identifier is
/// raftfs's encoded [`BlockTokenIdentifier`]); an empty one is none.
pub fn token_of(t: Option<&Token>) -> Result<Option<BlockToken>, FsError> {
    match t {
        Some(t) if !t.identifier.is_empty() => Ok(Some(BlockToken {
            identifier: codec::decode::<BlockTokenIdentifier>(&t.identifier, "block token identifier")?,
            password: t.password.clone(),
        })),
        _ => Ok(None),
    }
}

async fn read_block(
    node: &Arc<Node>,
    r: &mut BufReader<OwnedReadHalf>,
    w: &mut BufWriter<OwnedWriteHalf>,
    op: OpReadBlock,
) -> Result<(), Closed> {
    let base = &op.header.base_header;
    let bpid = base.block.pool_id.clone();
    let block = Block {
        id: base.block.block_id,
        gen_stamp: base.block.generation_stamp,
        num_bytes: base.block.num_bytes.unwrap_or(0),
    };
    let checked =
        token_of(base.token.as_ref()).and_then(|t| node.check_token(t.as_ref(), &bpid, block.id, AccessMode::Read));
    if let Err(e) = checked {
        return refuse(
            w,
            STATUS_ERROR_ACCESS_TOKEN,
            format!("Got access token error, status message {e}"),
        )
        .await;
    }
    let Some(pool) = node.storage.pool(&bpid) else {
        return refuse(
            w,
            STATUS_ERROR,
            format!("this DataNode does not serve block pool {bpid}"),
        )
        .await;
    };
    let (n2, p2) = (node.clone(), pool.clone());
    let (offset, len) = (op.offset, op.len);
    let opened = blocking(move || n2.storage.open_reader(&p2, &block, offset, len)).await;
    let mut reader = match opened {
        Ok(rd) => rd,
        Err(e) => {
            return refuse(
                w,
                STATUS_ERROR,
                format!("opReadBlock {bpid}:{block} received exception {e}"),
            )
            .await
        }
    };
    let _x = node.xceiver();
    let send_checksums = op.send_checksums.unwrap_or(true);
    let chunk_offset = offset / BYTES_PER_CHECKSUM as u64 * BYTES_PER_CHECKSUM as u64;
    let ok = BlockOpResponse {
        status: STATUS_SUCCESS,
        read_op_checksum_info: Some(ReadOpChecksumInfo {
            checksum: ChecksumInfo {
                checksum_type: if send_checksums { CHECKSUM_CRC32C } else { CHECKSUM_NULL },
                bytes_per_checksum: BYTES_PER_CHECKSUM as u32,
            },
            chunk_offset,
        }),
        ..Default::default()
    };
    answer(w, &ok).await?;
    let mut seqno = 0i64;
    let mut end = chunk_offset;
    loop {
        let read = tokio::task::spawn_blocking(move || {
            let c = reader.next_chunk(READ_CHUNK_BYTES);
            (reader, c)
        })
        .await
        .map_err(|e| format!("read task: {e}"))?;
        reader = read.0;
        match read.1 {
            Ok(Some((at, data, sums))) => {
                pool.bytes_read
                    .fetch_add(data.len() as u64, std::sync::atomic::Ordering::Relaxed);
                for (i, piece) in data.chunks(PACKET_DATA_BYTES).enumerate() {
                    let first_sum = i * PACKET_DATA_BYTES / BYTES_PER_CHECKSUM * CHECKSUM_SIZE_BYTES;
                    let n_sums = piece.len().div_ceil(BYTES_PER_CHECKSUM) * CHECKSUM_SIZE_BYTES;
                    let piece_sums = if send_checksums {
                        &sums[first_sum..first_sum + n_sums]
                    } else {
                        &[][..]
                    };
                    let piece_at = at + (i * PACKET_DATA_BYTES) as u64;
                    write_packet(w, piece_at, seqno, false, piece_sums, piece).await?;
                    seqno += 1;
                    end = piece_at + piece.len() as u64;
                }
            }
            Ok(None) => break,
            Err(e) => {
                if matches!(e, FsError::Checksum(_)) {
                    tracing::warn!(block = %reader.block, error = %e, "corrupt replica found by a Hadoop read");
                    crate::actor::report_bad_replica(node, &pool.id, reader.block);
                }
                let _ = w.shutdown().await;
                return Err(e.to_string());
            }
        }
    }
    write_packet(w, end, seqno, true, &[], &[]).await?;
    w.flush().await.map_err(|e| e.to_string())?;
    // The reader says how its checks went; it may also just close.
    match read_op::<ClientReadStatus>(r).await {
        Ok(s) if s.status == STATUS_ERROR_CHECKSUM => {
            tracing::warn!(block = %reader.block, "a Hadoop reader found a checksum error");
            Ok(())
        }
        Ok(_) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The largest packet header read (a header is a few dozen bytes).
const MAX_PACKET_HEADER_BYTES: usize = 1024;

/// Receive a block from a Hadoop client (or the DataNode before this one
/// in its pipeline): the same pipeline as a gRPC WriteBlock
/// ([`crate::transfer::receive_block`]), with Hadoop's packets converted
/// on the way in and its acks on the way out. The nodes after this one
/// are reached through raftfs's own data transfer, at the port the
/// namespace put in each target's `ipcPort`.
async fn write_block(
    node: &Arc<Node>,
    mut r: BufReader<OwnedReadHalf>,
    mut w: BufWriter<OwnedWriteHalf>,
    op: OpWriteBlock,
) -> Result<(), Closed> {
    let base = &op.header.base_header;
    let bpid = base.block.pool_id.clone();
    let token = match token_of(base.token.as_ref()) {
        Ok(t) => t,
        Err(e) => return refuse(&mut w, STATUS_ERROR_ACCESS_TOKEN, e.to_string()).await,
    };
    if let Err(e) = node.check_token(token.as_ref(), &bpid, base.block.block_id, AccessMode::Write) {
        return refuse(
            &mut w,
            STATUS_ERROR_ACCESS_TOKEN,
            format!("Got access token error, status message {e}"),
        )
        .await;
    }
    let sum = &op.requested_checksum;
    if sum.checksum_type != CHECKSUM_CRC32C || sum.bytes_per_checksum as usize != BYTES_PER_CHECKSUM {
        let msg = format!(
            "checksum type {} of {} bytes asked for: raftfs stores CRC32C of {BYTES_PER_CHECKSUM} bytes \
             (getServerDefaults says so)",
            sum.checksum_type, sum.bytes_per_checksum
        );
        return refuse(&mut w, STATUS_ERROR_INVALID, msg).await;
    }
    let stage = match op.stage {
        STAGE_PIPELINE_SETUP_CREATE => WriteStage::Create,
        STAGE_PIPELINE_SETUP_APPEND
        | STAGE_PIPELINE_SETUP_APPEND_RECOVERY
        | STAGE_PIPELINE_SETUP_STREAMING_RECOVERY => WriteStage::Recover,
        other => {
            let msg = format!("pipeline stage {other} is not served over DataTransferProtocol");
            return refuse(&mut w, STATUS_ERROR_UNSUPPORTED, msg).await;
        }
    };
    if op.targets.len() > raftfs_proto::limits::MAX_REPLICATION as usize {
        return refuse(
            &mut w,
            STATUS_ERROR_INVALID,
            "pipeline longer than the largest replication".into(),
        )
        .await;
    }
    let downstream: Vec<DatanodeId> = op
        .targets
        .iter()
        .map(|t| DatanodeId {
            uuid: t.id.datanode_uuid.clone(),
            addr: format!("{}:{}", t.id.ip_addr, t.id.ipc_port),
            hostname: t.id.host_name.clone(),
            domain_socket: String::new(),
        })
        .collect();
    let gen_stamp = if op.latest_generation_stamp > 0 {
        op.latest_generation_stamp
    } else {
        base.block.generation_stamp
    };
    let header = WriteHeader {
        block_pool_id: bpid,
        block: Block {
            id: base.block.block_id,
            gen_stamp,
            // Where the data starts: what the replicas hold already (a
            // recovery or an append), nothing for a new block.
            num_bytes: if stage == WriteStage::Create {
                0
            } else {
                op.min_bytes_rcvd.max(base.block.num_bytes.unwrap_or(0))
            },
        },
        downstream,
        stage,
        client: op.header.client_name.clone(),
        token,
    };
    let replica = (header.block_pool_id.clone(), header.block);
    let (packet_tx, packet_rx) = mpsc::channel::<Result<WritePacket, tonic::Status>>(MAX_PACKETS_IN_FLIGHT);
    let (ack_tx, mut ack_rx) = mpsc::channel(MAX_PACKETS_IN_FLIGHT);
    tokio::spawn(receive_block(
        node.clone(),
        header,
        ReceiverStream::new(packet_rx),
        ack_tx,
    ));
    // The setup's answer: every node of the pipeline came up, or the first that did not.
    let setup = match ack_rx.recv().await {
        Some(Ok(a)) => a,
        _ => return refuse(&mut w, STATUS_ERROR, "the pipeline ended at setup".into()).await,
    };
    if let Some(bad) = setup.status.iter().position(|s| *s != ACK_SUCCESS) {
        let first_bad_link = match bad {
            0 => String::new(),
            i => op
                .targets
                .get(i - 1)
                .map_or(String::new(), |t| format!("{}:{}", t.id.ip_addr, t.id.xfer_port)),
        };
        let r = BlockOpResponse {
            status: STATUS_ERROR,
            first_bad_link: Some(first_bad_link),
            message: Some(setup.message.clone()),
            ..Default::default()
        };
        let _ = answer(&mut w, &r).await;
        return Err(setup.message);
    }
    let ok = BlockOpResponse {
        status: STATUS_SUCCESS,
        first_bad_link: Some(String::new()),
        ..Default::default()
    };
    answer(&mut w, &ok).await?;
    // Acks go out from one task: the pipeline's, and heartbeats' at once.
    let nodes = 1 + op.targets.len();
    let (out_tx, mut out_rx) = mpsc::channel::<PipelineAck>(MAX_PACKETS_IN_FLIGHT);
    let heartbeat_tx = out_tx.clone();
    let forward = tokio::spawn(async move {
        while let Some(Ok(a)) = ack_rx.recv().await {
            let reply: Vec<i32> = a.status.iter().map(|s| *s as i32).collect();
            let ack = PipelineAck {
                seqno: a.seqno as i64,
                flag: a.status.clone(),
                reply,
                downstream_ack_time_nanos: Some(0),
            };
            if out_tx.send(ack).await.is_err() {
                return;
            }
        }
    });
    let writer = tokio::spawn(async move {
        while let Some(ack) = out_rx.recv().await {
            let bytes = ack.encode_length_delimited_to_vec();
            if w.write_all(&bytes).await.is_err() || w.flush().await.is_err() {
                return;
            }
        }
        let _ = w.shutdown().await;
    });
    let result = read_packets(node, replica, &mut r, &packet_tx, &heartbeat_tx, nodes).await;
    drop(packet_tx);
    drop(heartbeat_tx);
    let _ = forward.await;
    let _ = writer.await;
    result
}

/// Read Hadoop packets into the pipeline until the block's last one.
/// `replica` (block pool, block) is the replica being written here.
async fn read_packets(
    node: &Arc<Node>,
    replica: (String, Block),
    r: &mut BufReader<OwnedReadHalf>,
    packets: &mpsc::Sender<Result<WritePacket, tonic::Status>>,
    heartbeats: &mpsc::Sender<PipelineAck>,
    nodes: usize,
) -> Result<(), Closed> {
    let idle = Duration::from_millis(OP_TIMEOUT_MS);
    loop {
        let mut lens = [0u8; 6];
        match tokio::time::timeout(idle, r.read_exact(&mut lens)).await {
            Err(_) => return Err("no packet in time".into()),
            Ok(Err(e)) => return Err(format!("the writer went away: {e}")),
            Ok(Ok(_)) => {}
        }
        let payload = u32::from_be_bytes([lens[0], lens[1], lens[2], lens[3]]) as usize;
        let header_len = u16::from_be_bytes([lens[4], lens[5]]) as usize;
        if header_len > MAX_PACKET_HEADER_BYTES
            || payload < 4
            || payload - 4 > MAX_PACKET_DATA_BYTES + MAX_PACKET_DATA_BYTES / 128
        {
            return Err(format!(
                "a packet of {payload} bytes with a header of {header_len}: over the limits"
            ));
        }
        let mut buf = vec![0u8; header_len + payload - 4];
        tokio::time::timeout(idle, r.read_exact(&mut buf))
            .await
            .map_err(|_| "a packet cut off".to_string())?
            .map_err(|e| format!("a packet cut off: {e}"))?;
        let h = PacketHeader::decode(&buf[..header_len]).map_err(|e| format!("a packet header: {e}"))?;
        let data_len = usize::try_from(h.data_len).map_err(|_| "a negative packet length".to_string())?;
        let sums_len = (payload - 4)
            .checked_sub(data_len)
            .ok_or_else(|| format!("a packet of {payload} bytes says it holds {data_len} of data"))?;
        if sums_len != data_len.div_ceil(BYTES_PER_CHECKSUM) * CHECKSUM_SIZE_BYTES {
            return Err(format!("{sums_len} checksum bytes for {data_len} of data"));
        }
        if h.seqno == HEARTBEAT_SEQNO {
            let ack = PipelineAck {
                seqno: HEARTBEAT_SEQNO,
                reply: vec![STATUS_SUCCESS; nodes],
                downstream_ack_time_nanos: Some(0),
                flag: vec![STATUS_SUCCESS as u32; nodes],
            };
            heartbeats
                .send(ack)
                .await
                .map_err(|_| "the pipeline ended".to_string())?;
            continue;
        }
        let body = &buf[header_len..];
        let offset = u64::try_from(h.offset_in_block).map_err(|_| format!("packet offset {}", h.offset_in_block))?;
        let (mut offset, mut sums, mut data) = (offset, body[..sums_len].to_vec(), body[sums_len..].to_vec());
        if offset % BYTES_PER_CHECKSUM as u64 != 0 && !data.is_empty() {
            (offset, data, sums) = align_to_chunk(node, &replica, offset, data, &sums).await?;
        }
        let packet = WritePacket {
            header_bin: Vec::new(),
            seqno: u64::try_from(h.seqno).map_err(|_| format!("packet seqno {}", h.seqno))?,
            offset,
            checksums: sums.into(),
            data: data.into(),
            last: h.last_packet_in_block,
            sync: h.sync_block.unwrap_or(false),
        };
        let last = packet.last;
        packets
            .send(Ok(packet))
            .await
            .map_err(|_| "the pipeline ended".to_string())?;
        if last {
            return Ok(());
        }
    }
}

/// Hadoop's first packet of an append (or a recovery) to a replica that
/// ends inside a chunk starts there, with a checksum of only its own part
/// of the chunk; raftfs's pipeline takes whole chunks from their start.
/// Checks the packet's checksums as sent, puts the replica's own bytes of
/// that chunk before its data (every replica of the pipeline holds the
/// same bytes up to there) and checksums it whole chunks again.
async fn align_to_chunk(
    node: &Arc<Node>,
    (bpid, block): &(String, Block),
    offset: u64,
    data: Vec<u8>,
    sums: &[u8],
) -> Result<(u64, Vec<u8>, Vec<u8>), Closed> {
    let chunk = BYTES_PER_CHECKSUM as u64;
    let start = offset / chunk * chunk;
    let head = ((chunk - offset % chunk) as usize).min(data.len());
    let head_sum = crc32c::crc32c(&data[..head]).to_be_bytes();
    let sums_ok = sums.len() >= CHECKSUM_SIZE_BYTES
        && sums[..CHECKSUM_SIZE_BYTES] == head_sum
        && raftfs_proto::checksum::verify(&data[head..], &sums[CHECKSUM_SIZE_BYTES..]).is_ok();
    if !sums_ok {
        return Err(format!("a packet at offset {offset} does not match its checksums"));
    }
    let pool = node
        .storage
        .pool(bpid)
        .ok_or_else(|| format!("this DataNode does not serve block pool {bpid}"))?;
    let (n2, b) = (node.clone(), *block);
    let mut reader = blocking(move || n2.storage.open_reader(&pool, &b, start, offset - start))
        .await
        .map_err(|e| format!("the replica's bytes before offset {offset}: {e}"))?;
    let mut prefix = Vec::new();
    while let Some((_, bytes, _)) = reader.next_chunk(BYTES_PER_CHECKSUM).map_err(|e| e.to_string())? {
        prefix.extend_from_slice(&bytes);
    }
    if prefix.len() as u64 != offset - start {
        return Err(format!(
            "the replica holds {} bytes of the chunk at {start}, the packet continues at {offset}",
            prefix.len()
        ));
    }
    prefix.extend_from_slice(&data);
    let sums = raftfs_proto::checksum::compute(&prefix);
    Ok((start, prefix, sums))
}

/// One packet: lengths, header, checksums, data.
async fn write_packet(
    w: &mut BufWriter<OwnedWriteHalf>,
    offset: u64,
    seqno: i64,
    last: bool,
    sums: &[u8],
    data: &[u8],
) -> Result<(), Closed> {
    let header = PacketHeader {
        offset_in_block: offset as i64,
        seqno,
        last_packet_in_block: last,
        data_len: data.len() as i32,
        sync_block: Some(false),
    }
    .encode_to_vec();
    let mut head = BytesMut::with_capacity(6 + header.len());
    head.put_u32((4 + sums.len() + data.len()) as u32);
    head.put_u16(header.len() as u16);
    head.extend_from_slice(&header);
    for part in [&head[..], sums, data] {
        w.write_all(part).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}
