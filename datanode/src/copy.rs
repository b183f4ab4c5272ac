//! Copying a replica to other DataNodes (HDFS `DataTransfer`): the source
//! reads its replica (checking every checksum) and writes it down a
//! pipeline of the targets, exactly as a client writes a block. Used for
//! re-replication (`Transfer`: the copies are finalized) and for a writer
//! rebuilding its pipeline (`TransferRbw`: the copy stays being written).

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use raftfs_proto::codec;
use raftfs_proto::datanode::{TransferRequest, WriteHeader, ACK_SUCCESS, SETUP_SEQNO};
use raftfs_proto::pb::WritePacket;
use raftfs_proto::{Block, FsError};

use crate::node::Node;
use crate::transfer::{blocking, MAX_PACKETS_IN_FLIGHT, READ_CHUNK_BYTES};

fn check_ack(statuses: &[u32], message: &str, targets: &[raftfs_proto::DatanodeId]) -> Result<(), FsError> {
    match statuses.iter().position(|s| *s != ACK_SUCCESS) {
        None if statuses.len() == targets.len() => Ok(()),
        None => Err(FsError::Unavailable(format!(
            "copy pipeline answered for {} of {} nodes",
            statuses.len(),
            targets.len()
        ))),
        Some(i) => Err(FsError::Unavailable(format!(
            "copy to {} failed: {message}",
            targets.get(i).map_or("?", |t| t.addr.as_str())
        ))),
    }
}

/// Copy `t.block` (its first `num_bytes`) to `t.targets`.
pub async fn transfer(node: &Arc<Node>, t: &TransferRequest) -> Result<Block, FsError> {
    let first = t
        .targets
        .first()
        .ok_or_else(|| FsError::InvalidArgument("a transfer needs a target".into()))?;
    let pool = node
        .storage
        .pool(&t.block_pool_id)
        .ok_or_else(|| FsError::InvalidArgument(format!("no block pool {}", t.block_pool_id)))?;
    let _x = node.xceiver();
    let (n2, p2, b) = (node.clone(), pool.clone(), t.block);
    let mut reader = blocking(move || n2.storage.open_reader(&p2, &b, 0, b.num_bytes)).await?;
    let header = WriteHeader {
        block_pool_id: t.block_pool_id.clone(),
        block: t.block,
        downstream: t.targets[1..].to_vec(),
        stage: t.stage,
        client: format!("DataNode {}", node.id().map(|i| i.uuid).unwrap_or_default()),
        token: node.copy_token(&t.block_pool_id, t.block.id)?,
        proof: None,
    };
    let (tx, rx) = mpsc::channel(MAX_PACKETS_IN_FLIGHT);
    tx.send(WritePacket {
        header_bin: codec::encode(&header)?,
        ..Default::default()
    })
    .await
    .map_err(|_| FsError::Internal("copy channel closed".into()))?;
    let mut acks = node
        .peer(&first.addr)?
        .write_block(ReceiverStream::new(rx))
        .await
        .map_err(|s| FsError::Unavailable(format!("connect to {}: {}", first.addr, s.message())))?
        .into_inner();
    let setup = acks
        .message()
        .await
        .map_err(|s| FsError::Unavailable(s.message().to_string()))?
        .ok_or_else(|| FsError::Unavailable("the copy pipeline closed at setup".into()))?;
    if setup.seqno != SETUP_SEQNO {
        return Err(FsError::Internal(format!("setup answered with seqno {}", setup.seqno)));
    }
    check_ack(&setup.status, &setup.message, &t.targets)?;
    let mut seqno = 0u64;
    let mut end = 0u64;
    loop {
        let r = tokio::task::spawn_blocking(move || {
            let c = reader.next_chunk(READ_CHUNK_BYTES);
            (reader, c)
        })
        .await
        .map_err(|e| FsError::Internal(format!("read task: {e}")))?;
        reader = r.0;
        let chunk = match r.1 {
            Ok(c) => c,
            Err(e) => {
                if matches!(e, FsError::Checksum(_)) {
                    crate::actor::report_bad_replica(node, &pool.id, reader.block);
                }
                return Err(e);
            }
        };
        let (last, pkt) = match chunk {
            Some((offset, data, sums)) => {
                end = offset + data.len() as u64;
                (
                    false,
                    WritePacket {
                        seqno,
                        offset,
                        data: data.into(),
                        checksums: sums.into(),
                        ..Default::default()
                    },
                )
            }
            None => (
                true,
                WritePacket {
                    seqno,
                    offset: end,
                    last: true,
                    ..Default::default()
                },
            ),
        };
        if tx.send(pkt).await.is_err() {
            break;
        }
        seqno += 1;
        if last {
            break;
        }
    }
    drop(tx);
    let mut acked = 0u64;
    while acked < seqno {
        let a = acks
            .message()
            .await
            .map_err(|s| FsError::Unavailable(s.message().to_string()))?
            .ok_or_else(|| FsError::Unavailable("the copy pipeline closed before the last ack".into()))?;
        check_ack(&a.status, &a.message, &t.targets)?;
        acked = a.seqno + 1;
    }
    tracing::info!(block = %t.block, to = ?t.targets.iter().map(|x| &x.addr).collect::<Vec<_>>(), "replica copied");
    Ok(Block {
        num_bytes: end,
        ..t.block
    })
}
