//! READ_BLOCK: a replica's bytes as Hadoop packets, through the same
//! checksummed replica reader as the gRPC read; the reader's final
//! `ClientReadStatusProto` read and logged.

use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use prost::Message;
use tokio::io::{AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use raftfs_hadoop::wire::datatransfer::*;
use raftfs_hadoop::wire::hdfs::CHECKSUM_CRC32C;
use raftfs_proto::datanode::{BYTES_PER_CHECKSUM, CHECKSUM_SIZE_BYTES};
use raftfs_proto::{AccessMode, FsError};

use crate::node::Node;

use super::{answer, block_of, checked_token, read_op, refuse, Closed, CHECKSUM_NULL, PACKET_DATA_BYTES};
use crate::transfer::{blocking, READ_CHUNK_BYTES};

pub(super) async fn read_block(
    node: &Arc<Node>,
    r: &mut BufReader<OwnedReadHalf>,
    w: &mut BufWriter<OwnedWriteHalf>,
    op: OpReadBlock,
) -> Result<(), Closed> {
    let base = &op.header.base_header;
    let bpid = base.block.pool_id.clone();
    let block = block_of(&base.block);
    if let Err(msg) = checked_token(node, base.token.as_ref(), &base.block, AccessMode::Read) {
        return refuse(w, STATUS_ERROR_ACCESS_TOKEN, msg).await;
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
