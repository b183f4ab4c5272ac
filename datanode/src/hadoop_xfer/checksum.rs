//! BLOCK_CHECKSUM (what `hadoop fs -checksum` asks each block's DataNode
//! for) and TRANSFER_BLOCK (what a Hadoop client asks of a DataNode of its
//! pipeline when it adds a node after a failure), each one answer on the
//! connection, through the same code as the gRPC ops.
//!
//! BLOCK_CHECKSUM answers HDFS's MD5CRC (the MD5 of the block's chunk
//! CRC32Cs), so a Hadoop client's file checksum equals raftfs's
//! `-checksum`; COMPOSITE_CRC is refused with `ERROR_UNSUPPORTED`.
//! TRANSFER_BLOCK copies the replica as it is (its stamp and visible
//! length, as HDFS's DataNode does) to the targets through raftfs's own pipeline (each target's raftfs
//! data port is the `ipcPort` the namespace gave it), as being written
//! (`TransferRbw`) while the replica is, else finalized.

use std::sync::Arc;

use tokio::io::BufWriter;
use tokio::net::tcp::OwnedWriteHalf;

use raftfs_hadoop::wire::datatransfer::*;
use raftfs_hadoop::wire::hdfs::CHECKSUM_CRC32C;
use raftfs_proto::datanode::{TransferRequest, WriteStage};
use raftfs_proto::{AccessMode, Block, DatanodeId, ReplicaState};

use super::{answer, block_of, checked_token, refuse, Closed};
use crate::node::Node;

pub(super) async fn block_checksum(
    node: &Arc<Node>,
    w: &mut BufWriter<OwnedWriteHalf>,
    op: OpBlockChecksum,
) -> Result<(), Closed> {
    let kind = op
        .block_checksum_options
        .as_ref()
        .and_then(|o| o.block_checksum_type)
        .unwrap_or(BLOCK_CHECKSUM_MD5CRC);
    if kind != BLOCK_CHECKSUM_MD5CRC {
        let msg = format!("block checksum type {kind}: raftfs DataNodes compute MD5CRC (type 1) only");
        return refuse(w, STATUS_ERROR_UNSUPPORTED, msg).await;
    }
    let b = &op.header.block;
    if let Err(msg) = checked_token(node, op.header.token.as_ref(), b, AccessMode::Read) {
        return refuse(w, STATUS_ERROR_ACCESS_TOKEN, msg).await;
    }
    let Some(pool) = node.storage.pool(&b.pool_id) else {
        let msg = format!("this DataNode does not serve block pool {}", b.pool_id);
        return refuse(w, STATUS_ERROR, msg).await;
    };
    let _x = node.xceiver();
    match crate::transfer::block_md5(node, pool, block_of(b)).await {
        Ok(sum) => {
            let ok = BlockOpResponse {
                status: STATUS_SUCCESS,
                checksum_response: Some(OpBlockChecksumResponse {
                    bytes_per_crc: sum.bytes_per_crc,
                    crc_per_block: sum.crc_per_block,
                    block_checksum: sum.md5.to_vec(),
                    crc_type: Some(CHECKSUM_CRC32C),
                    block_checksum_options: None,
                }),
                ..Default::default()
            };
            answer(w, &ok).await
        }
        Err(e) => {
            refuse(
                w,
                STATUS_ERROR,
                format!("blockChecksum {}:{} failed: {e}", b.pool_id, b.block_id),
            )
            .await
        }
    }
}

pub(super) async fn transfer_block(
    node: &Arc<Node>,
    w: &mut BufWriter<OwnedWriteHalf>,
    op: OpTransferBlock,
) -> Result<(), Closed> {
    let base = &op.header.base_header;
    let b = &base.block;
    let token = match checked_token(node, base.token.as_ref(), b, AccessMode::Copy) {
        Ok(t) => t,
        Err(msg) => return refuse(w, STATUS_ERROR_ACCESS_TOKEN, msg).await,
    };
    let Some(pool) = node.storage.pool(&b.pool_id) else {
        let msg = format!("this DataNode does not serve block pool {}", b.pool_id);
        return refuse(w, STATUS_ERROR, msg).await;
    };
    let block = block_of(b);
    let Some(replica) = pool.get(block.id).filter(|r| r.block.gen_stamp >= block.gen_stamp) else {
        return refuse(w, STATUS_ERROR, format!("Replica not found for {block}")).await;
    };
    // As HDFS's DataNode does: what it holds now (its stamp, its visible
    // length) is what goes, whatever length the client counted.
    let stage = match replica.state {
        ReplicaState::Finalized => WriteStage::Transfer,
        ReplicaState::Rbw => WriteStage::TransferRbw,
    };
    let visible = replica.visible_length();
    let block = Block {
        num_bytes: visible,
        ..replica.block
    };
    let mut targets = Vec::new();
    for t in &op.targets {
        if t.id.ipc_port == 0 {
            let msg = format!("target {} has no raftfs data port (ipcPort)", t.id.datanode_uuid);
            return refuse(w, STATUS_ERROR_INVALID, msg).await;
        }
        targets.push(DatanodeId {
            uuid: t.id.datanode_uuid.clone(),
            addr: format!("{}:{}", t.id.ip_addr, t.id.ipc_port),
            hostname: t.id.host_name.clone(),
            domain_socket: String::new(),
        });
    }
    let request = TransferRequest {
        block_pool_id: b.pool_id.clone(),
        block,
        targets,
        stage,
        token,
        proof: None,
    };
    match crate::copy::transfer(node, &request).await {
        Ok(_) => {
            let ok = BlockOpResponse {
                status: STATUS_SUCCESS,
                ..Default::default()
            };
            answer(w, &ok).await
        }
        Err(e) => refuse(w, STATUS_ERROR, format!("transferBlock {block} failed: {e}")).await,
    }
}
