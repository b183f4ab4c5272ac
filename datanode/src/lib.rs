//! raftfs DataNode (DESIGN.md §6): stores the blocks of every nameservice's
//! block pool, receives and forwards them down write pipelines, serves
//! verified reads, and keeps every member of every nameservice informed
//! with heartbeats and block reports.
//!
//! * [`storage`]: the on-disk layout (HDFS's, per block pool), replica map,
//!   checksummed reads and writes, volume failures.
//! * [`transfer`]: the data transfer service (write pipeline, read, copies,
//!   block recovery steps).
//! * [`actor`]: handshake, registration, heartbeats, reports and commands,
//!   per nameservice and member, with term-based fencing of commands.
//! * [`copy`]: copying a replica to other DataNodes.
//! * [`federation_follower`]: with `--router`, the nameservices the routers
//!   register, served and removed as they change.
//! * [`hadoop_xfer`]: Hadoop's DataTransferProtocol on its own port.
//! * [`hadoop_ipc`]: Hadoop's ClientDatanodeProtocol, on the data port
//!   ([`data_port`] tells its connections from raftfs's).
//! * [`http_pages`]: `/metrics` on the node's HTTP port.
//! * [`webhdfs_data`]: WebHDFS's OPEN, CREATE, APPEND and GETFILECHECKSUM,
//!   redirected here by the namespace's endpoints, run through the SDK.
//! * [`scanner`]: the periodic check of every replica's checksums.
//! * [`short_circuit`]: open replica files handed to clients on this host.

pub mod actor;
pub mod copy;
pub mod data_port;
pub mod federation_follower;
pub mod hadoop_ipc;
pub mod hadoop_xfer;
pub mod http_pages;
pub mod node;
pub mod scanner;
pub mod short_circuit;
pub mod storage;
pub mod transfer;
pub mod webhdfs_data;

use futures::future::BoxFuture;
use std::sync::Arc;

pub use node::{DatanodeConfig, Node};

use raftfs_proto::pb::data_transfer_server::DataTransferServer;
use raftfs_proto::FsError;

use crate::node::{CONNECTION_WINDOW_BYTES, MAX_DATA_MESSAGE_BYTES, STREAM_WINDOW_BYTES};
use crate::storage::Storage;

/// Most concurrent streams one connection may open to a DataNode.
pub const MAX_STREAMS_PER_CONNECTION: u32 = 4096;

/// A running DataNode.
pub struct Datanode {
    pub node: Arc<Node>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Datanode {
    /// Open the storage, start the data transfer service on `listener`, and
    /// start talking to every configured nameservice. Boxed, so that a
    /// crate awaiting it (the `raftfs` binary) calls this crate's code
    /// instead of compiling its own copy of the whole DataNode
    /// (docs/architecture.md, "Build time").
    #[inline(never)]
    pub fn start(
        cfg: DatanodeConfig,
        listener: tokio::net::TcpListener,
    ) -> BoxFuture<'static, Result<Datanode, FsError>> {
        Box::pin(Self::start_unboxed(cfg, listener))
    }

    async fn start_unboxed(cfg: DatanodeConfig, listener: tokio::net::TcpListener) -> Result<Datanode, FsError> {
        match (cfg.nameservices.is_empty(), cfg.routers.is_empty()) {
            (true, true) => {
                return Err(FsError::InvalidArgument(
                    "a DataNode needs the routers to follow (--router raftfs://host:port,...) \
                     or at least one --nameservice raftfs://host:port,..."
                        .into(),
                ))
            }
            (false, false) => {
                return Err(FsError::InvalidArgument(
                    "--router and --nameservice exclude each other: a DataNode following the \
                     routers serves every nameservice they register"
                        .into(),
                ))
            }
            _ => {}
        }
        let storage = {
            let (dirs, reserved) = (cfg.dirs.clone(), cfg.reserved_bytes);
            tokio::task::spawn_blocking(move || Storage::open(&dirs, reserved))
                .await
                .map_err(|e| FsError::Internal(e.to_string()))??
        };
        if let Some(why) = cfg.too_many_failed_volumes(storage.failed_volumes()) {
            return Err(FsError::Storage(format!("too many failed volumes: {why}")));
        }
        if let Some(i) = storage.ident() {
            tracing::info!(cluster = %i.cluster_id, uuid = %i.datanode_uuid, "storage opened");
        }
        let node = Arc::new(Node::new(cfg.clone(), Arc::new(storage)));
        if let Some(i) = node.storage.ident() {
            node.set_uuid(&i.datanode_uuid);
        }
        if let Some(path) = &cfg.domain_socket {
            short_circuit::serve(node.clone(), path)?;
        }
        let service = |over_plaintext: bool| {
            DataTransferServer::new(transfer::TransferService {
                node: node.clone(),
                over_plaintext,
            })
            .max_decoding_message_size(MAX_DATA_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_DATA_MESSAGE_BYTES)
        };
        let builder = || {
            tonic::transport::Server::builder()
                .tcp_nodelay(true)
                .initial_stream_window_size(STREAM_WINDOW_BYTES)
                .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
                .max_frame_size(node::MAX_FRAME_BYTES)
                .max_concurrent_streams(MAX_STREAMS_PER_CONNECTION)
        };
        let ipc = Arc::new(hadoop_ipc::ClientDatanodeService::new(node.clone()));
        let incoming = data_port::split(listener, ipc, cfg.security.server.is_tls());
        let mut tls_builder = cfg
            .security
            .server
            .apply(builder())
            .map_err(|e| FsError::InvalidArgument(format!("the data transfer service's TLS: {e}")))?;
        let tls_service = service(false);
        let mut tasks = vec![tokio::spawn(async move {
            let r = tls_builder
                .add_service(tls_service)
                .serve_with_incoming(incoming.tls)
                .await;
            if let Err(e) = r {
                tracing::error!(error = %e, "data transfer service stopped");
            }
        })];
        if let Some(plaintext) = incoming.plaintext {
            let plain_service = service(true);
            tasks.push(tokio::spawn(async move {
                let r = builder()
                    .add_service(plain_service)
                    .serve_with_incoming(plaintext)
                    .await;
                if let Err(e) = r {
                    tracing::error!(error = %e, "plaintext data transfer service stopped");
                }
            }));
        }
        for members in cfg.nameservices {
            tasks.push(tokio::spawn(actor::run_nameservice(node.clone(), members, None)));
        }
        if !cfg.routers.is_empty() {
            tasks.push(tokio::spawn(federation_follower::follow(node.clone(), cfg.routers)));
        }
        if cfg.scan_period_ms > 0 {
            let period = std::time::Duration::from_millis(cfg.scan_period_ms);
            tasks.push(tokio::spawn(scanner::run(node.clone(), period)));
        }
        Ok(Datanode { node, tasks })
    }

    /// Wait until the DataNode stops (it runs until the process ends).
    pub async fn wait(self) {
        for t in self.tasks {
            let _ = t.await;
        }
    }

    pub fn shutdown(&self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}
