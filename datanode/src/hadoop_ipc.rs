//! Hadoop's ClientDatanodeProtocol, so a Hadoop client can read a file
//! that is still being written: it asks a DataNode of the last block how
//! many bytes of its replica are visible (`getReplicaVisibleLength`), as
//! HDFS's `DFSInputStream` does before it reads ("Cannot obtain block
//! length" when no DataNode answers). Also `getDatanodeInfo` (what `hdfs
//! dfsadmin -getDatanodeInfo` prints). Served on the DataNode's data port
//! ([`crate::data_port`]), which is the `ipcPort` its locations name.
//!
//! Authentication is HDFS's: when block tokens are on (the node runs TLS)
//! a connection must authenticate with a block token (SASL TOKEN,
//! DIGEST-MD5; its password is recomputed from the pool's block keys, as
//! HDFS's `BlockPoolTokenSecretManager.retrievePassword` does), and each
//! call is checked against what that token grants: READ on the very block
//! it asks about. With tokens off (an `--insecure` node) SIMPLE is taken
//! and nothing is checked, as on an HDFS DataNode without
//! `dfs.block.access.token.enable`.
//!
//! The visible length is what HDFS's is: a finalized replica's length, or
//! the bytes of a replica being written that every DataNode of its
//! pipeline has acknowledged. A replica this node does not hold answers
//! `ReplicaNotFoundException` (the client then asks the next location);
//! a replica older than the block asked about (an earlier generation
//! stamp) answers `IOException`. Every other method of the protocol
//! (reconfiguration, disk balancer, shutdown, the legacy short-circuit
//! path) answers `RpcNoSuchMethodException`.

use std::sync::Arc;

use raftfs_hadoop::ipc_service::{decode, AnswerFuture, Call, IpcService, Refusal, TokenFuture, TokenSecret};
use raftfs_hadoop::wire::client_datanode::*;
use raftfs_hadoop::RemoteError;
use raftfs_proto::{codec, AccessMode, BlockToken, BlockTokenIdentifier};
use raftfs_trust::clock::wall_clock_ms;

use crate::node::Node;

const IO_EXCEPTION_CLASS: &str = "java.io.IOException";
const REPLICA_NOT_FOUND_CLASS: &str = "org.apache.hadoop.hdfs.server.datanode.ReplicaNotFoundException";

/// ClientDatanodeProtocol served for `node`.
pub struct ClientDatanodeService {
    node: Arc<Node>,
}

impl ClientDatanodeService {
    pub fn new(node: Arc<Node>) -> ClientDatanodeService {
        ClientDatanodeService { node }
    }

    /// The visible length of the replica `request` names, for `call`'s caller.
    fn visible_length(&self, call: &Call<'_>, request: &[u8]) -> Result<Vec<u8>, Refusal> {
        let r: GetReplicaVisibleLengthRequest = decode(request)?;
        let b = &r.block;
        let token = match &call.caller.token {
            Some(t) => Some(BlockToken {
                identifier: codec::decode::<BlockTokenIdentifier>(&t.identifier, "block token identifier")?,
                password: t.password.clone(),
            }),
            None => None,
        };
        self.node
            .check_token(token.as_ref(), &b.pool_id, b.block_id, AccessMode::Read)?;
        let Some(pool) = self.node.storage.pool(&b.pool_id) else {
            let msg = format!("this DataNode does not serve block pool {}", b.pool_id);
            return Err(RemoteError::new(IO_EXCEPTION_CLASS, msg).into());
        };
        let named = format!("{}:blk_{}_{}", b.pool_id, b.block_id, b.generation_stamp);
        let Some(replica) = pool.get(b.block_id) else {
            let msg = format!("Replica not found for {named}");
            return Err(RemoteError::new(REPLICA_NOT_FOUND_CLASS, msg).into());
        };
        if replica.block.gen_stamp < b.generation_stamp {
            let msg = format!(
                "replica.getGenerationStamp() < block.getGenerationStamp(), block={named}, replica={}",
                replica.block
            );
            return Err(RemoteError::new(IO_EXCEPTION_CLASS, msg).into());
        }
        Ok(prost::Message::encode_to_vec(&GetReplicaVisibleLengthResponse {
            length: replica.visible_length(),
        }))
    }

    fn datanode_info(&self, request: &[u8]) -> Result<Vec<u8>, Refusal> {
        decode::<GetDatanodeInfoRequest>(request)?;
        let version = format!("raftfs-{}", env!("CARGO_PKG_VERSION"));
        Ok(prost::Message::encode_to_vec(&GetDatanodeInfoResponse {
            local_info: DatanodeLocalInfo {
                software_version: version.clone(),
                config_version: version,
                uptime: self.node.started.elapsed().as_secs(),
            },
        }))
    }
}

impl IpcService for ClientDatanodeService {
    fn protocol(&self) -> &'static str {
        CLIENT_DATANODE_PROTOCOL
    }

    fn requires_token(&self) -> bool {
        self.node.checks_tokens()
    }

    fn token_secret<'a>(&'a self, identifier: &'a [u8]) -> TokenFuture<'a> {
        Box::pin(async move {
            let id = codec::decode::<BlockTokenIdentifier>(identifier, "block token identifier")
                .map_err(|e| format!("not a block token of this cluster: {e}"))?;
            let password = self
                .node
                .block_keys
                .password(&id, wall_clock_ms())
                .map_err(|e| e.to_string())?;
            Ok(TokenSecret {
                owner: id.user,
                password,
            })
        })
    }

    fn answer<'a>(&'a self, call: &'a Call<'a>, method: &'a str, request: &'a [u8]) -> AnswerFuture<'a> {
        let answer = match method {
            "getReplicaVisibleLength" => self.visible_length(call, request),
            "getDatanodeInfo" => self.datanode_info(request),
            m => Err(RemoteError::no_such_method(m, CLIENT_DATANODE_PROTOCOL).into()),
        };
        Box::pin(std::future::ready(answer))
    }

    fn state_id(&self) -> Option<u64> {
        None
    }
}
