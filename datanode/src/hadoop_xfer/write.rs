//! WRITE_BLOCK: the gRPC write pipeline ([`crate::transfer::receive_block`])
//! fed with Hadoop's packets and answering with Hadoop's acks.

use std::sync::Arc;
use std::time::Duration;

use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};

use raftfs_hadoop::wire::datatransfer::*;
use raftfs_hadoop::wire::hdfs::CHECKSUM_CRC32C;
use raftfs_proto::datanode::{BYTES_PER_CHECKSUM, CHECKSUM_SIZE_BYTES};
use raftfs_proto::{AccessMode, Block};

use raftfs_proto::datanode::{WriteHeader, WriteStage, ACK_SUCCESS, MAX_PACKET_DATA_BYTES};
use raftfs_proto::pb::WritePacket;
use raftfs_proto::DatanodeId;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::node::Node;

use super::{answer, checked_token, refuse, Closed, OP_TIMEOUT_MS};
use crate::transfer::{blocking, receive_block, MAX_PACKETS_IN_FLIGHT};

/// The largest packet header read (a header is a few dozen bytes).
const MAX_PACKET_HEADER_BYTES: usize = 1024;

/// Receive a block from a Hadoop client (or the DataNode before this one
/// in its pipeline): the same pipeline as a gRPC WriteBlock
/// ([`crate::transfer::receive_block`]), with Hadoop's packets converted
/// on the way in and its acks on the way out. The nodes after this one
/// are reached through raftfs's own data transfer, at the port the
/// namespace put in each target's `ipcPort`.
pub(super) async fn write_block(
    node: &Arc<Node>,
    mut r: BufReader<OwnedReadHalf>,
    mut w: BufWriter<OwnedWriteHalf>,
    op: OpWriteBlock,
) -> Result<(), Closed> {
    let base = &op.header.base_header;
    let bpid = base.block.pool_id.clone();
    let token = match checked_token(node, base.token.as_ref(), &base.block, AccessMode::Write) {
        Ok(t) => t,
        Err(msg) => return refuse(&mut w, STATUS_ERROR_ACCESS_TOKEN, msg).await,
    };
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
            // Where the data starts: nothing for a new block; else what
            // the client counts as acknowledged (`minBytesRcvd`), as
            // HDFS's DataNode takes it: for an append, the block's length;
            // for a rebuilt pipeline, what was acknowledged (the header's
            // length may count packets sent and never acknowledged, and a
            // replica is cut back to what was). The header block's own
            // length is no guide: Java's client puts the file's block size
            // there (a hint for choosing a volume).
            num_bytes: match op.stage {
                STAGE_PIPELINE_SETUP_CREATE => 0,
                _ => op.min_bytes_rcvd,
            },
        },
        downstream,
        stage,
        client: op.header.client_name.clone(),
        token,
        proof: None,
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
