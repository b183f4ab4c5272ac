//! Blocks and their locations as Hadoop's messages: a DataNode is named by
//! the Hadoop DataTransferProtocol address it registered (a replica on a
//! DataNode without one is left out: a Hadoop client could not reach it),
//! and raftfs's block access token travels inside Hadoop's token message
//! (its identifier is raftfs's encoded identifier; the DataNode decodes it).
//! `ipcPort` carries the DataNode's raftfs data port: the head of a Hadoop
//! client's write pipeline forwards to it, and a Hadoop client asks it
//! over ClientDatanodeProtocol how much of a block being written it can
//! read (the port serves both).

use raftfs_proto::{codec, BlockToken, DatanodeId, FsError, LocatedBlock, LocatedBlocks};

use crate::namespace::{DatanodeEndpoints, Endpoints, HadoopNamespace};
use crate::wire::hdfs::{self, Token, ADMIN_NORMAL, STORAGE_DISK};

/// The endpoints of every DataNode `blocks` name.
pub async fn endpoints_of<'a>(
    ns: &dyn HadoopNamespace,
    blocks: impl IntoIterator<Item = &'a LocatedBlock>,
) -> Endpoints {
    let mut uuids: Vec<String> = blocks
        .into_iter()
        .flat_map(|lb| lb.locations.iter().map(|d| d.uuid.clone()))
        .collect();
    uuids.sort_unstable();
    uuids.dedup();
    if uuids.is_empty() {
        return Endpoints::new();
    }
    ns.datanode_endpoints(uuids).await
}

/// The token kind HDFS gives block access tokens.
pub const BLOCK_TOKEN_KIND: &str = "HDFS_BLOCK_TOKEN";

/// Hadoop's token message for `t` (an empty token when there is none:
/// block tokens are off).
pub fn block_token(t: Option<&BlockToken>) -> Result<Token, FsError> {
    Ok(match t {
        Some(t) => Token {
            identifier: codec::encode(&t.identifier)?,
            password: t.password.clone(),
            kind: BLOCK_TOKEN_KIND.into(),
            service: String::new(),
        },
        None => Token {
            identifier: Vec::new(),
            password: Vec::new(),
            kind: String::new(),
            service: String::new(),
        },
    })
}

fn split_addr(addr: &str) -> Option<(&str, u32)> {
    let (host, port) = addr.rsplit_once(':')?;
    Some((host, port.parse().ok()?))
}

/// A DataNode as Hadoop's clients reach it, if it serves Hadoop's data transfer.
pub fn datanode_info(id: &DatanodeId, at: &DatanodeEndpoints) -> Option<hdfs::DatanodeInfo> {
    let (ip, xfer_port) = split_addr(&at.xfer_addr)?;
    let info_port = split_addr(&at.http_addr).map_or(0, |(_, p)| p);
    Some(hdfs::DatanodeInfo {
        id: hdfs::DatanodeId {
            ip_addr: ip.to_string(),
            host_name: if id.hostname.is_empty() {
                ip.to_string()
            } else {
                id.hostname.clone()
            },
            datanode_uuid: id.uuid.clone(),
            xfer_port,
            info_port,
            // raftfs's data port: a DataNode that heads a Hadoop client's
            // pipeline forwards down it through raftfs's pipeline, and it
            // also serves ClientDatanodeProtocol (Hadoop IPC).
            ipc_port: split_addr(&id.addr).map_or(0, |(_, p)| p),
        },
        capacity: None,
        dfs_used: None,
        remaining: None,
        block_pool_used: None,
        last_update: None,
        xceiver_count: None,
        non_dfs_used: None,
        admin_state: Some(ADMIN_NORMAL),
        num_blocks: None,
    })
}

/// `lb` of block pool `pool_id` as Hadoop's message (its DataNodes at `at`).
pub fn located_block(at: &Endpoints, lb: &LocatedBlock, pool_id: &str) -> Result<hdfs::LocatedBlock, FsError> {
    let (locs, storage_ids): (Vec<hdfs::DatanodeInfo>, Vec<String>) = lb
        .locations
        .iter()
        .filter_map(|d| {
            let at = at.get(&d.uuid)?;
            Some((datanode_info(d, at)?, at.storage_id.clone()))
        })
        .unzip();
    Ok(hdfs::LocatedBlock {
        b: hdfs::ExtendedBlock {
            pool_id: pool_id.to_string(),
            block_id: lb.block.id,
            generation_stamp: lb.block.gen_stamp,
            num_bytes: Some(lb.block.num_bytes),
        },
        offset: lb.offset,
        is_cached: vec![false; locs.len()],
        storage_types: vec![STORAGE_DISK; locs.len()],
        storage_ids,
        locs,
        corrupt: lb.corrupt,
        block_token: block_token(lb.token.as_ref())?,
    })
}

/// `lb` of block pool `pool_id` as Hadoop's message, its DataNodes asked of `ns`.
pub async fn one_located_block(
    ns: &dyn HadoopNamespace,
    lb: &LocatedBlock,
    pool_id: &str,
) -> Result<hdfs::LocatedBlock, FsError> {
    located_block(&endpoints_of(ns, [lb]).await, lb, pool_id)
}

/// `lbs` as Hadoop's message, their DataNodes asked of `ns`.
pub async fn located_blocks(ns: &dyn HadoopNamespace, lbs: &LocatedBlocks) -> Result<hdfs::LocatedBlocks, FsError> {
    let pool = &lbs.block_pool_id;
    let at = endpoints_of(ns, &lbs.blocks).await;
    let blocks = lbs
        .blocks
        .iter()
        .map(|lb| located_block(&at, lb, pool))
        .collect::<Result<Vec<_>, _>>()?;
    // HDFS sends the file's last block again as `lastBlock`, complete or not.
    let last_block = blocks.last().cloned();
    Ok(hdfs::LocatedBlocks {
        file_length: lbs.file_length,
        blocks,
        under_construction: lbs.under_construction,
        last_block,
        is_last_block_complete: lbs.last_block_complete,
    })
}
