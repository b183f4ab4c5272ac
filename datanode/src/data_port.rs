//! The DataNode's data port carries two protocols: raftfs's data transfer
//! (gRPC over HTTP/2, in TLS unless `--insecure`) and Hadoop's
//! ClientDatanodeProtocol (Hadoop IPC, [`crate::hadoop_ipc`]), which a
//! Hadoop client dials at the `ipcPort` of a location: raftfs names this
//! port there, because a DataNode heading a Hadoop client's write pipeline
//! forwards to the next one through raftfs's data transfer at that port.
//!
//! ```text
//! accept ─► first byte (peeked, not read)
//!             'h'  (Hadoop IPC opens with "hrpc") ─► Hadoop IPC server
//!             0x16 (TLS ClientHello)              ─► tonic in TLS (gRPC)
//!             else (HTTP/2 "PRI" in plaintext)     ─► tonic without TLS
//! ```
//!
//! On a TLS node the plaintext connections go to a service of their own
//! ([`crate::transfer::TransferService::over_plaintext`]): clients of a
//! cluster whose data protection is `authentication` read and write there,
//! showing block token proofs; nothing there has a certificate, so nothing
//! that needs one is served. A `--insecure` node has one plaintext service.
//!
//! Nothing of a connection is consumed before it is handed on, so each
//! side parses it whole (the IPC server checks the rest of the preamble).
//! Both protocols have the client speak first. Bounds: connections
//! waiting for their first byte ([`MAX_UNSORTED_CONNECTIONS`], each for at
//! most [`FIRST_BYTE_TIMEOUT_MS`]; one that sends nothing is closed),
//! gRPC connections waiting for tonic to take them
//! ([`MAX_QUEUED_GRPC_CONNECTIONS`]), Hadoop IPC connections served at
//! once ([`MAX_HADOOP_IPC_CONNECTIONS`]).

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use raftfs_hadoop::IpcService;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt;

/// Connections accepted whose first byte has not arrived yet.
pub const MAX_UNSORTED_CONNECTIONS: usize = 1024;
/// How long a new connection may take to send its first byte.
pub const FIRST_BYTE_TIMEOUT_MS: u64 = 10_000;
/// gRPC connections sorted but not yet taken by the gRPC server.
pub const MAX_QUEUED_GRPC_CONNECTIONS: usize = 64;
/// The first byte of a TLS connection (a handshake record).
const TLS_HANDSHAKE_RECORD: u8 = 0x16;
/// Hadoop IPC connections served at once; more wait unserved.
pub const MAX_HADOOP_IPC_CONNECTIONS: usize = 1024;

/// The gRPC connections of a data port, sorted.
pub struct GrpcConnections<S> {
    /// TLS connections (every connection of a `--insecure` node).
    pub tls: S,
    /// Plaintext connections of a TLS node; `None` on an `--insecure` node.
    pub plaintext: Option<S>,
}

/// Accept on `listener` for the life of the gRPC servers that take the
/// returned streams: Hadoop IPC connections are served with `ipc`, the
/// rest go to those streams (`tls_node`: sorted by whether they open TLS).
pub fn split(
    listener: TcpListener,
    ipc: Arc<dyn IpcService>,
    tls_node: bool,
) -> GrpcConnections<impl Stream<Item = Result<TcpStream, std::io::Error>> + Send + 'static> {
    let (grpc, taken) = mpsc::channel::<TcpStream>(MAX_QUEUED_GRPC_CONNECTIONS);
    let (plain, plain_taken) = mpsc::channel::<TcpStream>(MAX_QUEUED_GRPC_CONNECTIONS);
    tokio::spawn(async move {
        let unsorted = Arc::new(Semaphore::new(MAX_UNSORTED_CONNECTIONS));
        let ipc_slots = Arc::new(Semaphore::new(MAX_HADOOP_IPC_CONNECTIONS));
        while !grpc.is_closed() {
            let permit = unsorted.clone().acquire_owned().await.expect("never closed");
            let (stream, peer) = match listener.accept().await {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "data port accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (grpc, ipc, ipc_slots) = (grpc.clone(), ipc.clone(), ipc_slots.clone());
            let plain = plain.clone();
            tokio::spawn(async move {
                let mut first = [0u8; 1];
                let peeked =
                    tokio::time::timeout(Duration::from_millis(FIRST_BYTE_TIMEOUT_MS), stream.peek(&mut first)).await;
                drop(permit);
                match peeked {
                    Ok(Ok(1)) if first[0] == b'h' => {
                        let _slot = ipc_slots.acquire_owned().await.expect("never closed");
                        if let Err(why) = raftfs_hadoop::server::serve_connection(stream, peer, ipc).await {
                            tracing::debug!(%peer, %why, "Hadoop IPC connection closed");
                        }
                    }
                    Ok(Ok(1)) if tls_node && first[0] != TLS_HANDSHAKE_RECORD => {
                        let _ = stream.set_nodelay(true);
                        let _ = plain.send(stream).await;
                    }
                    Ok(Ok(1)) => {
                        let _ = stream.set_nodelay(true);
                        let _ = grpc.send(stream).await;
                    }
                    // Closed, failed or silent before a byte: nothing to serve.
                    _ => {}
                }
            });
        }
    });
    GrpcConnections {
        tls: ReceiverStream::new(taken).map(Ok),
        plaintext: tls_node.then(|| ReceiverStream::new(plain_taken).map(Ok)),
    }
}
