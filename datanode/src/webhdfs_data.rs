//! WebHDFS's data side on a DataNode (`/webhdfs/v1/<path>?op=...` on its
//! HTTP port): the OPEN, CREATE, APPEND and GETFILECHECKSUM a namespace
//! endpoint redirected here.
//!
//! The node runs each op as an SDK client of the file system the redirect
//! names (`namenoderpcaddress`), as the caller: so the bytes go through the
//! same pipeline, checksums, leases and permission checks as any SDK
//! client's, with block access tokens from the nameservice. Under simple
//! authentication the caller is the request's `user.name`; under strong,
//! only a delegation token (`delegation=`, which the redirect carries)
//! makes a caller, and the nameservice verifies it on every call.
//!
//! Guarantees:
//! - The node only dials addresses it already serves or follows (members
//!   of its block pools' nameservices, its routers); a request naming
//!   others is refused, so the endpoint cannot be pointed elsewhere.
//! - Memory is bounded: OPEN sends the file [`OPEN_CHUNK_BYTES`] at a time
//!   as the client takes it; CREATE and APPEND write the request body as it
//!   arrives, and give up if it stalls for [`BODY_IDLE_TIMEOUT_MS`].
//! - An upload that fails or is cut off mid-way is not completed: the
//!   node asks for the file's lease recovery, which closes it with what
//!   reached the DataNodes (as when an SDK writer dies and its lease
//!   expires, only sooner). CREATE answers 201 only once the file is
//!   complete.
//!
//! Caveat: an error after OPEN's first byte can only cut the response
//! short (its `Content-Length` is then not met), as in HDFS.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use parking_lot::Mutex;
use raftfs_client::{
    ClientOptions, DelegationTokenSource, FileReader, FileSystem, FileWriter, Identity, DEFAULT_BLOCK_SIZE_BYTES,
    DEFAULT_REPLICATION,
};
use raftfs_proto::FsError;
use raftfs_trust::ClientAuth;
use raftfs_web::axum::body::{Body, Bytes};
use raftfs_web::axum::extract::{Path, RawQuery, State};
use raftfs_web::axum::http::{header, HeaderMap, Method, StatusCode};
use raftfs_web::axum::response::{IntoResponse, Response};
use raftfs_web::axum::routing::any;
use raftfs_web::axum::{Extension, Json, Router};
use raftfs_web::webhdfs::{
    caller_by_token, caller_of, encode_path, file_checksum, Params, WebHdfsCaller, WebHdfsOp, NAMENODE_PARAM,
};
use raftfs_web::{HttpCaller, RemoteException};

use crate::node::Node;

/// Bytes OPEN reads from the file system and sends as one piece.
pub const OPEN_CHUNK_BYTES: usize = 1024 * 1024;
/// CREATE and APPEND give up on a request body that sends nothing this long.
pub const BODY_IDLE_TIMEOUT_MS: u64 = 60_000;
/// A refused request's body is read and dropped up to this many bytes
/// before the answer, so the connection is not reset under the answer.
pub const DRAIN_ON_ERROR_MAX_BYTES: usize = 1024 * 1024;
/// ... and for no longer than this.
pub const DRAIN_ON_ERROR_TIMEOUT_MS: u64 = 2_000;
/// After a failed upload, ask for the file's lease recovery this many times
/// (until the nameservice says it is closed).
pub const MAX_RECOVER_LEASE_ATTEMPTS: u32 = 30;
/// Between two of those asks.
pub const RECOVER_LEASE_RETRY_MS: u64 = 1_000;
/// File-system clients kept for reuse, one per (file system, caller).
pub const MAX_CACHED_FILE_SYSTEMS: usize = 64;

/// Clients of the file systems, by (addresses, user, token text).
type ClientKey = (String, String, Option<String>);

struct DataEndpoint {
    node: Arc<Node>,
    auth: ClientAuth,
    clients: Mutex<HashMap<ClientKey, FileSystem>>,
}

/// WebHDFS's data routes on a DataNode; `auth` decides who may call.
pub fn webhdfs_data_routes(node: Arc<Node>, auth: ClientAuth) -> Router {
    let e = Arc::new(DataEndpoint {
        node,
        auth,
        clients: Mutex::new(HashMap::new()),
    });
    Router::new().route("/webhdfs/v1/{*path}", any(at_path)).with_state(e)
}

async fn at_path(
    State(e): State<Arc<DataEndpoint>>,
    Extension(caller): Extension<HttpCaller>,
    method: Method,
    headers: HeaderMap,
    Path(path): Path<String>,
    RawQuery(query): RawQuery,
    body: Body,
) -> Response {
    let path = format!("/{}", path.trim_end_matches('/'));
    let mut body = Some(body);
    match run(&e, &caller, &method, &path, query.as_deref().unwrap_or(""), &mut body).await {
        Ok(r) => r,
        Err(x) => {
            if let Some(unread) = body.filter(|_| !expects_continue(&headers)) {
                drain(unread).await;
            }
            x.into_response()
        }
    }
}

/// Whether the client waits for `100 Continue` before it sends its body
/// (then an answer sent without reading the body is all it needs).
fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(header::EXPECT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("100-continue"))
}

/// Read and drop a refused request's body, up to [`DRAIN_ON_ERROR_MAX_BYTES`]
/// and [`DRAIN_ON_ERROR_TIMEOUT_MS`]. A server that answers and closes
/// while body bytes are still arriving makes the kernel reset the
/// connection, and the client may lose the answer it was sent; a larger
/// or slower body is cut off that way all the same.
async fn drain(body: Body) {
    let mut stream = body.into_data_stream();
    let mut read = 0usize;
    let deadline = tokio::time::Instant::now() + Duration::from_millis(DRAIN_ON_ERROR_TIMEOUT_MS);
    while read <= DRAIN_ON_ERROR_MAX_BYTES {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Ok(Some(Ok(chunk))) => read += chunk.len(),
            _ => return,
        }
    }
}

fn fs_error(e: FsError) -> RemoteException {
    RemoteException::from(&e)
}

async fn run(
    e: &DataEndpoint,
    caller: &HttpCaller,
    method: &Method,
    path: &str,
    query: &str,
    body: &mut Option<Body>,
) -> Result<Response, RemoteException> {
    let params = Params::parse(query)?;
    if e.auth == ClientAuth::Strong && params.get("delegation").is_none() {
        return Err(RemoteException::access_control(
            "this DataNode runs WebHDFS ops only for a delegation token (delegation=): \
             send the request to a namespace endpoint, which redirects it here with one",
        ));
    }
    // A token decides the caller here even beside a certificate: the node
    // can act for a user only with one.
    let who = match params.get("delegation") {
        Some(text) => caller_by_token(caller, text)?,
        None => caller_of(e.auth, caller, &params)?,
    };
    let op = WebHdfsOp::parse(method, &params)?;
    if !op.moves_data() {
        return Err(RemoteException::illegal_argument(format!(
            "{op:?} is answered by the namespace's WebHDFS endpoints (members, routers), not by a DataNode"
        )));
    }
    let namenode = params.get(NAMENODE_PARAM).ok_or_else(|| {
        RemoteException::illegal_argument(format!("the webhdfs parameter \"{NAMENODE_PARAM}\" is missing"))
    })?;
    let fs = e.file_system(namenode, &who)?;
    match op {
        WebHdfsOp::Open { offset, length } => open(&fs, path, offset, length).await,
        WebHdfsOp::Create {
            overwrite,
            replication,
            block_size,
            permission,
        } => {
            let writer = fs
                .create_file_opt(
                    path,
                    overwrite,
                    Some(permission),
                    replication.unwrap_or(DEFAULT_REPLICATION),
                    block_size.unwrap_or(DEFAULT_BLOCK_SIZE_BYTES),
                    true,
                )
                .await
                .map_err(fs_error)?;
            write_body(writer, body.take().expect("the body is read once"))
                .await
                .inspect_err(|_| recover(&fs, path))?;
            let location = format!("raftfs://{namenode}{}", encode_path(path));
            Ok((StatusCode::CREATED, [(header::LOCATION, location)]).into_response())
        }
        WebHdfsOp::Append => {
            let writer = fs.append(path).await.map_err(fs_error)?;
            write_body(writer, body.take().expect("the body is read once"))
                .await
                .inspect_err(|_| recover(&fs, path))?;
            Ok(StatusCode::OK.into_response())
        }
        WebHdfsOp::GetFileChecksum => {
            let c = fs.file_checksum(path).await.map_err(fs_error)?;
            Ok((StatusCode::OK, Json(file_checksum(&c.algorithm, &c.bytes))).into_response())
        }
        other => unreachable!("{other:?} moves no data"),
    }
}

impl DataEndpoint {
    /// A client of the file system at `namenode` (HOST:PORT,...) acting as
    /// `who`; only the addresses this node serves or follows are dialed.
    fn file_system(&self, namenode: &str, who: &WebHdfsCaller) -> Result<FileSystem, RemoteException> {
        let known = self.node.known_namespace_addrs();
        let addrs: Vec<&str> = namenode
            .split(',')
            .map(str::trim)
            .filter(|a| known.iter().any(|k| k == a))
            .collect();
        if addrs.is_empty() {
            return Err(RemoteException::access_control(format!(
                "{NAMENODE_PARAM}={namenode:?} names no nameservice or router this DataNode serves"
            )));
        }
        let token = match &who.delegation {
            Some(t) => Some(t.encode_url().map_err(fs_error)?),
            None => None,
        };
        let key = (addrs.join(","), who.user.clone(), token);
        let mut clients = self.clients.lock();
        if let Some(fs) = clients.get(&key) {
            return Ok(fs.clone());
        }
        let opts = ClientOptions {
            short_circuit: false,
            delegation_token: match &who.delegation {
                Some(t) => DelegationTokenSource::Token(t.clone()),
                None => DelegationTokenSource::None,
            },
            ..ClientOptions::default()
        };
        let fs = FileSystem::connect_with_dialer(
            &format!("raftfs://{}", key.0),
            Identity::new(&who.user, &[]),
            opts,
            self.node.cfg.security.dialer.clone(),
        )
        .map_err(fs_error)?;
        if clients.len() >= MAX_CACHED_FILE_SYSTEMS {
            // Any one goes; a request still using it keeps its own handle.
            let evicted = clients.keys().next().cloned().expect("a full map has a key");
            clients.remove(&evicted);
        }
        clients.insert(key, fs.clone());
        Ok(fs)
    }
}

/// OPEN: `length` bytes (all, if `None`) of `path` from `offset`, streamed.
async fn open(fs: &FileSystem, path: &str, offset: u64, length: Option<u64>) -> Result<Response, RemoteException> {
    let mut reader = fs.open(path).await.map_err(fs_error)?;
    let len = reader.len();
    if offset > len {
        return Err(fs_error(FsError::InvalidArgument(format!(
            "Offset={offset} out of the range [0, {len}]; OPEN, path={path}"
        ))));
    }
    let count = length.unwrap_or(u64::MAX).min(len - offset);
    reader.seek(offset);
    let chunks = futures::stream::unfold((reader, count), |(mut reader, left)| async move {
        if left == 0 {
            return None;
        }
        let mut buf = vec![0u8; OPEN_CHUNK_BYTES.min(left as usize)];
        let r = read_some(&mut reader, &mut buf).await;
        match r {
            Ok(n) => {
                buf.truncate(n);
                Some((Ok(Bytes::from(buf)), (reader, left - n as u64)))
            }
            Err(e) => {
                tracing::warn!(error = %e, "WebHDFS OPEN cut short");
                Some((Err(std::io::Error::other(e.to_string())), (reader, 0)))
            }
        }
    });
    Ok(Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::CONTENT_LENGTH, count)
        .body(Body::from_stream(chunks))
        .expect("a valid response"))
}

/// Fill `buf` from `reader` (short only at the end of the file, which the
/// caller's count never passes: a file that shrank is an error).
async fn read_some(reader: &mut FileReader, buf: &mut [u8]) -> Result<usize, FsError> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]).await? {
            0 => {
                return Err(FsError::Internal(format!(
                    "the file ended {} bytes early",
                    buf.len() - filled
                )))
            }
            n => filled += n,
        }
    }
    Ok(filled)
}

/// Close `path` after a failed upload, in the background: recover its
/// lease (as `hdfs debug recoverLease` does), so the file is closed with
/// what reached the DataNodes now rather than when the lease expires (the
/// cached client may hold other files open, which would keep renewing it).
fn recover(fs: &FileSystem, path: &str) {
    let (fs, path) = (fs.clone(), path.to_string());
    tokio::spawn(async move {
        for _ in 0..MAX_RECOVER_LEASE_ATTEMPTS {
            match fs.recover_lease(&path).await {
                Ok(true) => return,
                Ok(false) => tokio::time::sleep(Duration::from_millis(RECOVER_LEASE_RETRY_MS)).await,
                Err(e) => {
                    tracing::warn!(path = %path, error = %e, "recovering the lease of a failed WebHDFS upload");
                    return;
                }
            }
        }
        tracing::warn!(path = %path, "a failed WebHDFS upload's file is still open; its lease will expire");
    });
}

/// Write the request body to `writer` as it arrives, then complete the
/// file. On any failure the writer is dropped unclosed: lease recovery
/// closes the file with what reached the DataNodes.
async fn write_body(mut writer: FileWriter, body: Body) -> Result<(), RemoteException> {
    let mut stream = body.into_data_stream();
    let idle = Duration::from_millis(BODY_IDLE_TIMEOUT_MS);
    loop {
        match tokio::time::timeout(idle, stream.next()).await {
            Err(_) => {
                return Err(RemoteException::illegal_argument(format!(
                    "the request body sent nothing for {BODY_IDLE_TIMEOUT_MS} ms"
                )))
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                return Err(RemoteException::illegal_argument(format!(
                    "reading the request body: {e}"
                )))
            }
            Ok(Some(Ok(chunk))) => writer.write(&chunk).await.map_err(fs_error)?,
        }
    }
    writer.close().await.map_err(fs_error)
}
