//! Hadoop's DataTransferProtocol (version 28) on its own port
//! (`--hadoop-xfer-addr`), so Hadoop's clients read blocks from this
//! DataNode as from an HDFS DataNode.
//!
//! Served: BLOCK_CHECKSUM and TRANSFER_BLOCK (see `checksum`); WRITE_BLOCK (a new block, an append, a pipeline recovery),
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
//! ops (READ_METADATA, REPLACE_BLOCK, COPY_BLOCK, short-circuit fds:
//! short-circuit reads use raftfs's own socket). A wrong version, an op
//! message over [`MAX_OP_MESSAGE_BYTES`] or one that does not decode gets
//! an `ERROR` answer and the connection is closed; nothing is read or
//! changed.
//!
//! Caveat: the port is plaintext TCP, as Hadoop's data transfer is without
//! SASL protection; block tokens (minted when the cluster runs TLS) travel
//! in it, as in HDFS without `dfs.data.transfer.protection`. A cluster
//! whose data protection is `privacy` signs that into its tokens, and this
//! port refuses them: it has no encryption to offer.

use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

use raftfs_hadoop::wire::datatransfer::*;
use raftfs_hadoop::wire::hdfs::{ExtendedBlock, Token};
use raftfs_proto::{codec, AccessMode, Block, BlockToken, BlockTokenIdentifier, DataProtection, FsError};

use crate::node::Node;

mod checksum;
mod read;
mod write;

use read::read_block;
use write::write_block;

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
            OP_BLOCK_CHECKSUM => {
                let op: OpBlockChecksum = match read_op(&mut r).await {
                    Ok(op) => op,
                    Err(e) => return refuse(&mut w, STATUS_ERROR, e).await,
                };
                checksum::block_checksum(&node, &mut w, op).await?;
            }
            OP_TRANSFER_BLOCK => {
                let op: OpTransferBlock = match read_op(&mut r).await {
                    Ok(op) => op,
                    Err(e) => return refuse(&mut w, STATUS_ERROR, e).await,
                };
                checksum::transfer_block(&node, &mut w, op).await?;
            }
            other => {
                let msg = format!(
                    "op {other} is not served on this port (raftfs DataNodes serve WRITE_BLOCK, \
                     READ_BLOCK, BLOCK_CHECKSUM and TRANSFER_BLOCK over DataTransferProtocol)"
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

/// raftfs's name for the block a Hadoop op names.
fn block_of(b: &ExtendedBlock) -> Block {
    Block {
        id: b.block_id,
        gen_stamp: b.generation_stamp,
        num_bytes: b.num_bytes.unwrap_or(0),
    }
}

/// The op's block token, if it grants `mode` on `b` (as every gRPC request
/// is checked); else the message of the `ERROR_ACCESS_TOKEN` answer.
fn checked_token(
    node: &Node,
    token: Option<&Token>,
    b: &ExtendedBlock,
    mode: AccessMode,
) -> Result<Option<BlockToken>, String> {
    token_of(token)
        .and_then(|t| node.check_token(t.as_ref(), &b.pool_id, b.block_id, mode).map(|()| t))
        .and_then(|t| match &t {
            // This port has no SASL privacy (encryption) to offer.
            Some(t) if t.identifier.protection == DataProtection::Privacy => Err(FsError::InvalidToken(format!(
                "{t} is for data protection privacy, and Hadoop's data transfer is served here in \
                 plaintext only: read and write with raftfs's SDK, or run the cluster at authentication"
            ))),
            _ => Ok(t),
        })
        .map_err(|e| format!("Got access token error, status message {e}"))
}
