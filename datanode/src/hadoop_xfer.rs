//! Hadoop's DataTransferProtocol (version 28) on its own port
//! (`--hadoop-xfer-addr`), so Hadoop's clients read blocks from this
//! DataNode as from an HDFS DataNode.
//!
//! Served: READ_BLOCK, through the same checksummed replica reader as the
//! gRPC read (every chunk is verified before it is sent; a corrupt replica
//! is reported to the nameservices and the connection closed), with the
//! block access token checked as for every gRPC request. Packets carry
//! [`PACKET_DATA_BYTES`] of data and one CRC32C per 512-byte chunk, as the
//! replica stores them. A connection may run one op after another (HDFS's
//! socket reuse), each within [`KEEPALIVE_MS`] of the last.
//!
//! Refused with `ERROR_UNSUPPORTED` and the connection closed: the other
//! ops (WRITE_BLOCK, BLOCK_CHECKSUM, TRANSFER_BLOCK, short-circuit fds;
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

use crate::node::Node;
use crate::transfer::{blocking, READ_CHUNK_BYTES};

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
            OP_READ_BLOCK => {
                let op: OpReadBlock = match read_op(&mut r).await {
                    Ok(op) => op,
                    Err(e) => return refuse(&mut w, STATUS_ERROR, e).await,
                };
                read_block(&node, &mut r, &mut w, op).await?;
            }
            other => {
                let msg = format!(
                    "op {other} is not served on this port (raftfs DataNodes serve READ_BLOCK over \
                     DataTransferProtocol; writes go through raftfs's SDK or WebHDFS)"
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
