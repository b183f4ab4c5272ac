//! The SDK's data path (DESIGN.md §6): [`FileWriter`] streams a file's
//! blocks down DataNode pipelines, [`FileReader`] reads them back, both
//! checking a CRC32C of every 512-byte chunk end to end.

mod reader;
mod short_circuit;
mod writer;

use std::sync::atomic::Ordering;
use std::time::Duration;

use tonic::transport::Channel;

use raftfs_proto::pb::data_transfer_client::DataTransferClient;
use raftfs_proto::pb::datanode_protocol_client::DatanodeProtocolClient;
use raftfs_proto::{codec, Block, BlockToken, BlockTokenProof, DataProtection, FsError, Op};

pub(crate) use reader::block_locations;
pub use reader::FileReader;
pub use writer::FileWriter;

use crate::fs::Core;

/// What a request shows a DataNode for its block: the token itself (in
/// TLS), or a proof of it (over plaintext), or nothing (`--insecure`).
pub(crate) struct BlockCredential {
    pub token: Option<BlockToken>,
    pub proof: Option<BlockTokenProof>,
}

/// Data bytes per write packet (HDFS `dfs.client-write-packet-size` is 64 KiB;
/// gRPC messages cost more per message than HDFS's raw packets, so larger).
pub const WRITE_PACKET_BYTES: usize = 256 * 1024;
/// Packets sent and not yet acknowledged, per writer (HDFS `dfs.client.write.max-packets-in-flight` is 80).
pub const MAX_PACKETS_IN_FLIGHT: usize = 64;
/// How often an open writer's lease is renewed (HDFS: half the soft limit).
pub const LEASE_RENEW_INTERVAL_MS: u64 = 30_000;
/// Pipeline rebuilds one block may need before the write fails.
pub const MAX_PIPELINE_RECOVERIES: usize = 5;
/// New pipelines tried for one block when setting one up fails (HDFS `dfs.client.block.write.retries`).
pub const MAX_BLOCK_SETUP_ATTEMPTS: usize = 3;
/// HTTP/2 windows and message bounds of the data path: the DataNode's.
const STREAM_WINDOW_BYTES: u32 = 16 * 1024 * 1024;
const CONNECTION_WINDOW_BYTES: u32 = 64 * 1024 * 1024;
const MAX_DATA_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Largest HTTP/2 frame the client receives (a DataNode's read chunk in one frame).
const MAX_FRAME_BYTES: u32 = 1024 * 1024;

impl Core {
    /// A client of DataNode `addr`'s data transfer service for a request
    /// about a block `token` grants, and what the request shows for it.
    /// A token for data protection `authentication` goes over plaintext
    /// (HTTP/2 without TLS) and the request shows a proof of it, fresh
    /// for this request; any other token, or none, goes in TLS (when the
    /// cluster runs it) and shows the token itself. One channel per
    /// DataNode and way.
    pub(crate) fn datanode(
        &self,
        addr: &str,
        token: Option<&BlockToken>,
    ) -> Result<(DataTransferClient<Channel>, BlockCredential), FsError> {
        let plaintext =
            self.dialer.is_tls() && token.is_some_and(|t| t.identifier.protection == DataProtection::Authentication);
        let credential = match token {
            Some(t) if plaintext => BlockCredential {
                token: None,
                proof: Some(raftfs_trust::block_token::prove(
                    t,
                    raftfs_trust::clock::wall_clock_ms(),
                )?),
            },
            _ => BlockCredential {
                token: token.cloned(),
                proof: None,
            },
        };
        let key = (addr.to_string(), plaintext);
        let mut map = self.datanodes.lock().expect("datanode map lock");
        if let Some(c) = map.get(&key) {
            return Ok((c.clone(), credential));
        }
        let bad = |e: &dyn std::fmt::Display| FsError::InvalidArgument(format!("DataNode address {addr:?}: {e}"));
        let ep = if plaintext {
            tonic::transport::Endpoint::from_shared(format!("http://{addr}")).map_err(|e| bad(&e))?
        } else {
            self.dialer
                .endpoint(addr, raftfs_trust::PeerRole::Datanode)
                .map_err(|e| bad(&e))?
        };
        let ep = ep
            .connect_timeout(Duration::from_millis(self.opts.connect_timeout_ms))
            .tcp_nodelay(true)
            .initial_stream_window_size(STREAM_WINDOW_BYTES)
            .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
            .max_frame_size(MAX_FRAME_BYTES);
        let c = DataTransferClient::new(ep.connect_lazy())
            .max_decoding_message_size(MAX_DATA_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_DATA_MESSAGE_BYTES);
        map.insert(key, c.clone());
        Ok((c, credential))
    }

    /// Tell the nameservice that `node`'s replica of `block` is corrupt
    /// (best effort: every member hears it, as from a DataNode; through
    /// routers, the members of the nameservice that owns `pool`).
    pub(crate) async fn report_bad_block(&self, pool: &str, block: Block, node_uuid: &str) {
        let msg = raftfs_proto::datanode::BadBlocks {
            block_pool_id: pool.to_string(),
            replicas: vec![(block, node_uuid.to_string())],
        };
        let Ok(data_bin) = codec::encode(&msg) else { return };
        for m in &self.pool_members(pool).await {
            let Ok(ch) = self.namespace_channel(m) else { continue };
            let mut c = DatanodeProtocolClient::new(ch);
            if let Err(e) = c
                .report_bad_blocks(raftfs_proto::pb::DnMessage {
                    data_bin: data_bin.clone(),
                })
                .await
            {
                tracing::debug!(member = %m, error = %e, "report bad block");
            }
        }
    }

    /// Count one more open writer; start the lease renewer if it is the first.
    pub(crate) fn writer_opened(self: &std::sync::Arc<Self>) {
        if self.open_writers.fetch_add(1, Ordering::SeqCst) > 0 {
            return;
        }
        let mut slot = self.renewer.lock().expect("renewer lock");
        if slot.as_ref().is_some_and(|h| !h.is_finished()) {
            return;
        }
        let weak = std::sync::Arc::downgrade(self);
        *slot = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(LEASE_RENEW_INTERVAL_MS)).await;
                let Some(core) = weak.upgrade() else { return };
                if core.open_writers.load(Ordering::SeqCst) == 0 {
                    return;
                }
                if let Err(e) = core.call(Op::RenewLease).await {
                    tracing::warn!(error = %e, "renew lease");
                }
            }
        }));
    }

    pub(crate) fn writer_closed(&self) {
        self.open_writers.fetch_sub(1, Ordering::SeqCst);
    }
}

pub(crate) use raftfs_proto::checksum::{compute as checksums, verify};

/// A file checksum as HDFS computes it: MD5 over the blocks' MD5s of their
/// chunk CRC32Cs (`MD5-of-<crcPerBlock>MD5-of-512CRC32C`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChecksum {
    pub algorithm: String,
    /// bytesPerCRC (u32 BE), crcPerBlock (u64 BE), then the MD5: as HDFS prints it.
    pub bytes: Vec<u8>,
}

impl std::fmt::Display for FileChecksum {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in &self.bytes {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

pub(crate) async fn file_checksum(core: &Core, path: &str) -> Result<FileChecksum, FsError> {
    use md5::Digest;
    let located = block_locations(core, path).await?;
    if located.under_construction {
        return Err(FsError::InvalidArgument(format!(
            "{path} is being written: no checksum yet"
        )));
    }
    let mut file_md5 = md5::Md5::new();
    let mut crc_per_block = 0u64;
    for (i, lb) in located.blocks.iter().enumerate() {
        let mut last = FsError::BlockMissing(format!("no replica of {} answered", lb.block));
        let mut got = None;
        for node in &lb.locations {
            let r: Result<raftfs_proto::datanode::BlockChecksumReply, FsError> = async {
                let (mut dn, shown) = core.datanode(&node.addr, lb.token.as_ref())?;
                let q = raftfs_proto::datanode::ReplicaQuery {
                    block_pool_id: located.block_pool_id.clone(),
                    block: lb.block,
                    token: shown.token,
                    proof: shown.proof,
                };
                let m = dn
                    .block_checksum(raftfs_proto::pb::DnMessage {
                        data_bin: codec::encode(&q)?,
                    })
                    .await
                    .map_err(|s| raftfs_proto::datanode::from_status(&s))?;
                codec::decode(&m.get_ref().data_bin, "block checksum")
            }
            .await;
            match r {
                Ok(c) => {
                    got = Some(c);
                    break;
                }
                Err(e) => last = e,
            }
        }
        let c = got.ok_or(last)?;
        if i == 0 && located.blocks.len() > 1 {
            crc_per_block = c.crc_per_block;
        }
        file_md5.update(c.md5);
    }
    let mut bytes = (raftfs_proto::datanode::BYTES_PER_CHECKSUM as u32)
        .to_be_bytes()
        .to_vec();
    bytes.extend_from_slice(&crc_per_block.to_be_bytes());
    bytes.extend_from_slice(&file_md5.finalize());
    Ok(FileChecksum {
        algorithm: format!("MD5-of-{crc_per_block}MD5-of-512CRC32C"),
        bytes,
    })
}
