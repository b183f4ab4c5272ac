//! [`FileReader`]: HDFS's `DFSInputStream`.
//!
//! Reads go to the replicas in the order the nameservice gives them
//! (nearest first). Every chunk is checked against its CRC32C; a mismatch
//! is reported to the nameservice (which replaces the replica from a good
//! copy) and the read goes on from another replica, as does a read whose
//! DataNode is unreachable. Only when no replica can serve a range does the
//! reader ask for the block's locations again, and then fail with
//! `BlockMissing`.
//!
//! A file being written is readable up to what its writer's pipeline has
//! acknowledged: the last block's length is asked of a DataNode.
//!
//! Every request carries the block access token that came with the
//! block's locations. A DataNode that refuses it (expired mid-read, say)
//! sends the reader back for fresh locations and tokens, once per range,
//! without counting the replica as bad.
//!
//! A replica on a DataNode of this host with a domain socket is read
//! short-circuit (the DataNode passes its open files; the reader checks the
//! checksums itself), unless `ClientOptions::short_circuit` is off.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use raftfs_proto::datanode::{ReadHeader, ReplicaQuery, ReplicaReport};
use raftfs_proto::pb::{DnMessage, ReadBlockRequest};
use raftfs_proto::{codec, FsError, LocatedBlock, LocatedBlocks, Op, OpResult};

use super::short_circuit::{self, LocalReplica};
use super::verify;
use crate::fs::Core;

/// Replicas on this host opened for short-circuit reads, by (block, node uuid).
type Locals = HashMap<(u64, String), Arc<LocalReplica>>;

/// Bytes fetched per request by sequential reads.
pub const READ_WINDOW_BYTES: u64 = 16 * 1024 * 1024;

/// Read `[offset, offset + len)` of block `lb` from one of its replicas,
/// verified. Replicas in `dead` are skipped; failing ones are added.
async fn read_range_from(
    core: &Core,
    pool: &str,
    lb: &LocatedBlock,
    offset: u64,
    len: u64,
    dead: &mut HashSet<String>,
    locals: &mut Locals,
) -> Result<(Vec<u8>, bool), FsError> {
    let mut last = FsError::BlockMissing(format!("Could not obtain block: {pool}:{}: no live replica", lb.block));
    for node in &lb.locations {
        if dead.contains(&node.uuid) {
            continue;
        }
        let r = match is_local(core, node) {
            true => match read_local(core, pool, lb, node, offset, len, locals).await {
                Err(FsError::Unavailable(m)) => {
                    tracing::debug!(node = %node.addr, error = %m, "no short-circuit read: reading through the DataNode");
                    read_one(core, pool, lb, node, offset, len).await.map(|v| (v, false))
                }
                other => other.map(|v| (v, true)),
            },
            false => read_one(core, pool, lb, node, offset, len).await.map(|v| (v, false)),
        };
        match r {
            Ok(v) => return Ok(v),
            // Every replica would refuse it: ask for fresh tokens first.
            Err(e @ FsError::InvalidToken(_)) => return Err(e),
            Err(e) => {
                if let FsError::Checksum(m) = &e {
                    tracing::warn!(block = %lb.block, node = %node.addr, error = %m, "corrupt replica: reporting it, reading another");
                    core.report_bad_block(pool, lb.block, &node.uuid).await;
                } else {
                    tracing::info!(block = %lb.block, node = %node.addr, error = %e, "replica unreadable: trying another");
                }
                dead.insert(node.uuid.clone());
                last = e;
            }
        }
    }
    Err(last)
}

/// `node`'s replica of `lb`'s block, opened short-circuit once per reader.
async fn local_replica(
    core: &Core,
    pool: &str,
    lb: &LocatedBlock,
    node: &raftfs_proto::DatanodeId,
    locals: &mut Locals,
) -> Result<Arc<LocalReplica>, FsError> {
    let key = (lb.block.id, node.uuid.clone());
    if let Some(r) = locals.get(&key) {
        return Ok(r.clone());
    }
    let (dn, p, b, c, t) = (
        node.clone(),
        pool.to_string(),
        lb.block,
        core.client_id.clone(),
        lb.token.clone(),
    );
    let r = tokio::task::spawn_blocking(move || short_circuit::open(&dn, &p, &b, &c, t))
        .await
        .map_err(|e| FsError::Unavailable(format!("short-circuit task: {e}")))??;
    let r = Arc::new(r);
    locals.insert(key, r.clone());
    Ok(r)
}

/// Whether `node` may be read short-circuit from here.
fn is_local(core: &Core, node: &raftfs_proto::DatanodeId) -> bool {
    core.opts.short_circuit && !node.domain_socket.is_empty() && std::path::Path::new(&node.domain_socket).exists()
}

/// A short-circuit read of `node`'s replica (opened once per reader).
async fn read_local(
    core: &Core,
    pool: &str,
    lb: &LocatedBlock,
    node: &raftfs_proto::DatanodeId,
    offset: u64,
    len: u64,
    locals: &mut Locals,
) -> Result<Vec<u8>, FsError> {
    let replica = local_replica(core, pool, lb, node, locals).await?;
    if replica.block.gen_stamp < lb.block.gen_stamp || replica.block.num_bytes < offset + len {
        return Err(FsError::Unavailable(format!(
            "local replica {} does not hold {}..{} of {}",
            replica.block,
            offset,
            offset + len,
            lb.block
        )));
    }
    tokio::task::spawn_blocking(move || replica.read(offset, len))
        .await
        .map_err(|e| FsError::Unavailable(format!("short-circuit task: {e}")))?
}

async fn read_one(
    core: &Core,
    pool: &str,
    lb: &LocatedBlock,
    node: &raftfs_proto::DatanodeId,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, FsError> {
    let (mut dn, shown) = core.datanode(&node.addr, lb.token.as_ref())?;
    let header = ReadHeader {
        block_pool_id: pool.to_string(),
        block: lb.block,
        offset,
        length: len,
        client: core.client_id.clone(),
        token: shown.token,
        proof: shown.proof,
    };
    let mut stream = dn
        .read_block(ReadBlockRequest {
            header_bin: codec::encode(&header)?,
        })
        .await
        .map_err(|s| raftfs_proto::datanode::from_status(&s))?
        .into_inner();
    let mut out = Vec::with_capacity(len as usize);
    let mut next = offset;
    while let Some(chunk) = stream
        .message()
        .await
        .map_err(|s| raftfs_proto::datanode::from_status(&s))?
    {
        if let Err(at) = verify(&chunk.data, &chunk.checksums) {
            return Err(FsError::Checksum(format!(
                "Checksum error: {} at offset {} from {}",
                lb.block,
                chunk.offset + at as u64,
                node.addr
            )));
        }
        let end = chunk.offset + chunk.data.len() as u64;
        if chunk.offset > next || end <= next {
            return Err(FsError::Internal(format!(
                "{} sent bytes {}..{end} of {} when {next} was next",
                node.addr, chunk.offset, lb.block
            )));
        }
        out.extend_from_slice(&chunk.data[(next - chunk.offset) as usize..]);
        next = end;
    }
    if out.len() as u64 != len {
        return Err(FsError::Unavailable(format!(
            "{} sent {} of {len} bytes of {}",
            node.addr,
            out.len(),
            lb.block
        )));
    }
    Ok(out)
}

/// Read `[offset, offset + len)` of block `lb` from any replica.
pub(crate) async fn read_block_range(
    core: &Core,
    pool: &str,
    lb: &LocatedBlock,
    offset: u64,
    len: u64,
) -> Result<Vec<u8>, FsError> {
    let (v, _) = read_range_from(core, pool, lb, offset, len, &mut HashSet::new(), &mut HashMap::new()).await?;
    Ok(v)
}

/// Reads one file, sequentially ([`FileReader::read`]) or at any offset
/// ([`FileReader::read_at`]).
pub struct FileReader {
    core: Arc<Core>,
    path: String,
    located: LocatedBlocks,
    len: u64,
    pos: u64,
    /// Bytes read ahead from `pos`.
    window: Vec<u8>,
    window_at: usize,
    dead: HashSet<String>,
    locals: Locals,
    /// Bytes read short-circuit from replicas on this host.
    local_bytes: u64,
}

impl FileReader {
    pub(crate) async fn open(core: Arc<Core>, path: &str) -> Result<FileReader, FsError> {
        let located = locations(&core, path).await?;
        let mut r = FileReader {
            core,
            path: path.to_string(),
            len: 0,
            located,
            pos: 0,
            window: Vec::new(),
            window_at: 0,
            dead: HashSet::new(),
            locals: HashMap::new(),
            local_bytes: 0,
        };
        r.len = r.readable_length().await?;
        Ok(r)
    }

    /// The file's length: complete blocks, plus what the writer's pipeline
    /// acknowledged of a block being written.
    async fn readable_length(&mut self) -> Result<u64, FsError> {
        let l = &mut self.located;
        if !l.under_construction || l.blocks.is_empty() {
            return Ok(l.file_length);
        }
        let last = l.blocks.last_mut().expect("non-empty");
        let mut visible = None;
        for node in &last.locations {
            let r: Result<ReplicaReport, FsError> = async {
                let (mut dn, shown) = self.core.datanode(&node.addr, last.token.as_ref())?;
                let q = ReplicaQuery {
                    block_pool_id: l.block_pool_id.clone(),
                    block: last.block,
                    token: shown.token,
                    proof: shown.proof,
                };
                let m = dn
                    .replica_info(DnMessage {
                        data_bin: codec::encode(&q)?,
                    })
                    .await
                    .map_err(|s| raftfs_proto::datanode::from_status(&s))?;
                codec::decode(&m.get_ref().data_bin, "replica report")
            }
            .await;
            if let Ok(rep) = r {
                visible = Some(rep.visible_length);
                break;
            }
        }
        // No replica answers: the bytes the nameservice knows of.
        let v = visible.unwrap_or(last.block.num_bytes);
        last.block.num_bytes = v;
        Ok(last.offset + v)
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn pos(&self) -> u64 {
        self.pos
    }

    /// Bytes this reader read short-circuit (straight from the files of a
    /// DataNode on this host) rather than through a DataNode.
    pub fn short_circuit_bytes(&self) -> u64 {
        self.local_bytes
    }

    /// Move the next sequential read to `pos`.
    pub fn seek(&mut self, pos: u64) {
        if pos != self.pos {
            self.pos = pos;
            self.window.clear();
            self.window_at = 0;
        }
    }

    /// Read up to `buf.len()` bytes at the current position; 0 at the end.
    pub async fn read(&mut self, buf: &mut [u8]) -> Result<usize, FsError> {
        if self.window_at >= self.window.len() && self.pos < self.len {
            if let Some(n) = self.read_direct(buf).await? {
                return Ok(n);
            }
        }
        if self.window_at >= self.window.len() {
            if self.pos >= self.len {
                return Ok(0);
            }
            let n = READ_WINDOW_BYTES.min(self.len - self.pos);
            self.window = self.read_at(self.pos, n).await?;
            self.window_at = 0;
        }
        let n = buf.len().min(self.window.len() - self.window_at);
        buf[..n].copy_from_slice(&self.window[self.window_at..self.window_at + n]);
        self.window_at += n;
        self.pos += n as u64;
        Ok(n)
    }

    /// A short-circuit read straight into `buf`, when the position is on a
    /// chunk boundary, `buf` holds at least a chunk, the runtime can block a
    /// worker for the read, and a replica of the block is on this host.
    /// `None`: read through the window instead.
    async fn read_direct(&mut self, buf: &mut [u8]) -> Result<Option<usize>, FsError> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let chunk = raftfs_proto::datanode::BYTES_PER_CHECKSUM as u64;
        let multi = Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
        if !self.core.opts.short_circuit || !multi || !self.pos.is_multiple_of(chunk) || (buf.len() as u64) < chunk {
            return Ok(None);
        }
        let pos = self.pos;
        let Some(lb) = self.located.block_at(pos).cloned() else {
            return Ok(None);
        };
        let Some(node) = lb
            .locations
            .iter()
            .find(|n| !self.dead.contains(&n.uuid) && is_local(&self.core, n))
            .cloned()
        else {
            return Ok(None);
        };
        let in_block = pos - lb.offset;
        let left = lb.block.num_bytes - in_block;
        let mut n = (buf.len() as u64).min(left);
        if n < left {
            n -= n % chunk;
        }
        let pool = self.located.block_pool_id.clone();
        let replica = match local_replica(&self.core, &pool, &lb, &node, &mut self.locals).await {
            Ok(r) if r.block.gen_stamp >= lb.block.gen_stamp && r.block.num_bytes >= lb.block.num_bytes => r,
            _ => return Ok(None),
        };
        let out = &mut buf[..n as usize];
        // A read from the page cache takes well under a millisecond per MiB.
        match tokio::task::block_in_place(|| replica.read_exact_verified(in_block, out)) {
            Ok(()) => {
                self.pos += n;
                self.local_bytes += n;
                Ok(Some(n as usize))
            }
            Err(FsError::Checksum(m)) => {
                tracing::warn!(block = %lb.block, node = %node.addr, error = %m, "corrupt replica: reporting it, reading another");
                self.core.report_bad_block(&pool, lb.block, &node.uuid).await;
                self.dead.insert(node.uuid.clone());
                Ok(None)
            }
            Err(_) => Ok(None),
        }
    }

    /// Read `[offset, offset + len)` (clipped to the file's end).
    pub async fn read_at(&mut self, offset: u64, len: u64) -> Result<Vec<u8>, FsError> {
        let end = offset.saturating_add(len).min(self.len);
        let mut out = Vec::with_capacity(end.saturating_sub(offset) as usize);
        let mut at = offset;
        let mut refreshed = false;
        while at < end {
            let Some(lb) = self.located.block_at(at).cloned() else {
                return Err(FsError::Internal(format!(
                    "no block of {} holds offset {at}",
                    self.path
                )));
            };
            let in_block = at - lb.offset;
            let n = (lb.block.num_bytes - in_block).min(end - at);
            let pool = self.located.block_pool_id.clone();
            match read_range_from(&self.core, &pool, &lb, in_block, n, &mut self.dead, &mut self.locals).await {
                Ok((v, local)) => {
                    if local {
                        self.local_bytes += v.len() as u64;
                    }
                    out.extend_from_slice(&v);
                    at += n;
                }
                Err(e) if !refreshed => {
                    // Every known replica failed, or the token expired: ask
                    // where the block is now, with fresh tokens.
                    tracing::info!(block = %lb.block, error = %e, "refreshing block locations and tokens");
                    refreshed = true;
                    self.dead.clear();
                    let fresh = locations(&self.core, &self.path).await?;
                    for b in &mut self.located.blocks {
                        if let Some(f) = fresh.blocks.iter().find(|f| f.block.id == b.block.id) {
                            b.locations = f.locations.clone();
                            b.token = f.token.clone();
                        }
                    }
                }
                Err(FsError::Checksum(_) | FsError::Unavailable(_) | FsError::BlockMissing(_)) => {
                    return Err(FsError::BlockMissing(format!(
                        "Could not obtain block: {pool}:{} file={}",
                        lb.block, self.path
                    )))
                }
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// The whole file from the current position.
    pub async fn read_to_end(&mut self) -> Result<Vec<u8>, FsError> {
        let mut out = Vec::with_capacity((self.len - self.pos.min(self.len)) as usize);
        let mut buf = vec![0u8; 1 << 20];
        loop {
            let n = self.read(&mut buf).await?;
            if n == 0 {
                return Ok(out);
            }
            out.extend_from_slice(&buf[..n]);
        }
    }
}

pub(crate) async fn locations(core: &Core, path: &str) -> Result<LocatedBlocks, FsError> {
    match core
        .call(Op::GetBlockLocations {
            path: path.to_string(),
            offset: 0,
            length: u64::MAX,
        })
        .await?
    {
        OpResult::Blocks(b) => Ok(b),
        other => Err(FsError::Internal(format!("getBlockLocations answered {other:?}"))),
    }
}

pub(crate) use locations as block_locations;
