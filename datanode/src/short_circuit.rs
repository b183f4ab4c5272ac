//! Short-circuit local reads (HDFS `dfs.client.read.shortcircuit` with
//! `dfs.domain.socket.path`): a client on this host asks, over a Unix
//! socket, for a finalized replica; the DataNode checks it and passes the
//! open data and checksum files back as file descriptors (SCM_RIGHTS). The
//! client then reads them itself, still checking every chunk's CRC32C, with
//! no copy through the DataNode.
//!
//! Only finalized replicas are handed out (a replica being written changes
//! under the reader). Each request is one connection: a u32 big-endian
//! length, then a bincode `ShortCircuitRequest`; the answer is framed the
//! same way and carries the two descriptors when it is `Ok`.
//!
//! Who may ask: the kernel names the peer of each connection (SO_PEERCRED),
//! and only the OS users in `--short-circuit-uids` (by default the
//! DataNode's own) are served, as HDFS's `dfs.block.local-path-access.user`;
//! the request must also carry a block access token with READ on the
//! block. A refused client reads through the DataNode instead.

use std::io::{Read, Write};
use std::os::unix::io::{AsRawFd, RawFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use raftfs_proto::codec;
use raftfs_proto::datanode::{ShortCircuitReply, ShortCircuitRequest, MAX_SHORT_CIRCUIT_MESSAGE_BYTES};
use raftfs_proto::{AccessMode, FsError, ReplicaState};

use crate::node::Node;
use crate::storage::meta;

/// Requests served at once; more are refused (the client reads remotely).
pub const MAX_SHORT_CIRCUIT_CONNECTIONS: usize = 256;
/// How long a client may take to send its request.
const REQUEST_TIMEOUT_MS: u64 = 5_000;
/// Longest Unix socket path (`sun_path`), bytes.
pub const MAX_SOCKET_PATH_BYTES: usize = 107;

/// Bind `path` and serve short-circuit requests on a thread of their own.
pub fn serve(node: Arc<Node>, path: &Path) -> Result<(), FsError> {
    let text = path.display().to_string();
    if text.len() > MAX_SOCKET_PATH_BYTES {
        return Err(FsError::InvalidArgument(format!(
            "--domain-socket {text} is longer than {MAX_SOCKET_PATH_BYTES} bytes"
        )));
    }
    // A socket left by an earlier run of this DataNode.
    let _ = std::fs::remove_file(path);
    let listener = UnixListener::bind(path)
        .map_err(|e| FsError::InvalidArgument(format!("bind the domain socket {text}: {e}")))?;
    let active = Arc::new(AtomicUsize::new(0));
    std::thread::Builder::new()
        .name("short-circuit".into())
        .spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { continue };
                if active.fetch_add(1, Ordering::SeqCst) >= MAX_SHORT_CIRCUIT_CONNECTIONS {
                    active.fetch_sub(1, Ordering::SeqCst);
                    continue; // dropped: the client falls back to a remote read
                }
                let (node, active) = (node.clone(), active.clone());
                let spawned = std::thread::Builder::new()
                    .name("short-circuit-conn".into())
                    .spawn(move || {
                        if let Err(e) = handle(&node, conn) {
                            tracing::debug!(error = %e, "short-circuit request");
                        }
                        active.fetch_sub(1, Ordering::SeqCst);
                    });
                if spawned.is_err() {
                    tracing::warn!("no thread for a short-circuit request");
                }
            }
        })
        .map_err(|e| FsError::Internal(format!("start the short-circuit thread: {e}")))?;
    Ok(())
}

fn handle(node: &Node, mut conn: UnixStream) -> std::io::Result<()> {
    conn.set_read_timeout(Some(Duration::from_millis(REQUEST_TIMEOUT_MS)))?;
    let mut len = [0u8; 4];
    conn.read_exact(&mut len)?;
    let len = u32::from_be_bytes(len) as usize;
    if len > MAX_SHORT_CIRCUIT_MESSAGE_BYTES {
        return Err(std::io::Error::other(format!("request of {len} bytes")));
    }
    let mut body = vec![0u8; len];
    conn.read_exact(&mut body)?;
    let peer = peer_credentials(&conn);
    let (reply, files) = match peer.and_then(|p| open(node, &body, p)) {
        Ok((r, d, m)) => (Ok(r), vec![d, m]),
        Err(e) => (Err(e), Vec::new()),
    };
    let reply: Result<ShortCircuitReply, FsError> = reply;
    let bytes = codec::encode(&reply).map_err(std::io::Error::other)?;
    let mut frame = (bytes.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&bytes);
    let fds: Vec<RawFd> = files.iter().map(AsRawFd::as_raw_fd).collect();
    send_with_fds(&conn, &frame, &fds)
    // `files` close here; the client holds its own descriptors.
}

/// The peer of a connection as the kernel knows it (SO_PEERCRED).
#[derive(Debug, Clone, Copy)]
struct PeerCredentials {
    pid: i32,
    uid: u32,
}

fn peer_credentials(conn: &UnixStream) -> Result<PeerCredentials, FsError> {
    // SAFETY: a zeroed ucred is valid; getsockopt writes at most `len`
    // bytes into it, and `len` is its size.
    let (rc, cred) = unsafe {
        let mut cred: libc::ucred = std::mem::zeroed();
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        let rc = libc::getsockopt(
            conn.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            &mut cred as *mut libc::ucred as *mut libc::c_void,
            &mut len,
        );
        (rc, cred)
    };
    if rc != 0 {
        return Err(FsError::AccessControl(format!(
            "cannot tell who is on the short-circuit socket: {}",
            std::io::Error::last_os_error()
        )));
    }
    Ok(PeerCredentials {
        pid: cred.pid,
        uid: cred.uid,
    })
}

/// The OS users the socket serves: `--short-circuit-uids`, else the DataNode's own.
fn allowed(node: &Node, uid: u32) -> bool {
    match &node.cfg.short_circuit_uids {
        Some(list) => list.contains(&uid),
        // SAFETY: geteuid cannot fail and touches no memory.
        None => uid == unsafe { libc::geteuid() },
    }
}

/// Check the peer, the request and its token, and open the replica's files.
fn open(
    node: &Node,
    body: &[u8],
    peer: PeerCredentials,
) -> Result<(ShortCircuitReply, std::fs::File, std::fs::File), FsError> {
    if !allowed(node, peer.uid) {
        tracing::warn!(
            uid = peer.uid,
            pid = peer.pid,
            "short-circuit request from an OS user this DataNode does not serve"
        );
        return Err(FsError::AccessControl(format!(
            "OS user {} (pid {}) may not read replicas short-circuit from this DataNode (--short-circuit-uids)",
            peer.uid, peer.pid
        )));
    }
    let req: ShortCircuitRequest = codec::decode(body, "short-circuit request")?;
    node.check_token(req.token.as_ref(), &req.block_pool_id, req.block.id, AccessMode::Read)?;
    let uuid = node
        .id()
        .map(|i| i.uuid)
        .ok_or_else(|| FsError::Unavailable("this DataNode has not joined a cluster yet".into()))?;
    let pool = node
        .storage
        .pool(&req.block_pool_id)
        .ok_or_else(|| FsError::InvalidArgument(format!("no block pool {}", req.block_pool_id)))?;
    let r = pool
        .get(req.block.id)
        .filter(|r| r.state == ReplicaState::Finalized && !r.temporary)
        .ok_or_else(|| FsError::BlockMissing(format!("no finalized replica of {}", req.block)))?;
    if r.block.gen_stamp < req.block.gen_stamp {
        return Err(FsError::BlockMissing(format!(
            "replica {} is older than the requested {}",
            r.block, req.block
        )));
    }
    let (data_path, meta_path) = node.storage.replica_paths(&pool.id, &r);
    let io = |p: &Path, e: std::io::Error| FsError::BlockMissing(format!("open {}: {e}", p.display()));
    let data = std::fs::File::open(&data_path).map_err(|e| io(&data_path, e))?;
    let mut m = std::fs::File::open(&meta_path).map_err(|e| io(&meta_path, e))?;
    meta::check_header(&mut m).map_err(|e| io(&meta_path, e))?;
    Ok((ShortCircuitReply { uuid, block: r.block }, data, m))
}

/// Send `data` with `fds` attached (SCM_RIGHTS), then any rest of `data`.
fn send_with_fds(s: &UnixStream, data: &[u8], fds: &[RawFd]) -> std::io::Result<()> {
    let fd_bytes = std::mem::size_of_val(fds);
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: a zeroed msghdr is a valid empty message; the pointers set
    // below stay valid for the sendmsg call (iov, control and data live
    // until the end of this function), and the control buffer is CMSG_SPACE
    // bytes, enough for one header and `fds`.
    let sent = unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        if !fds.is_empty() {
            msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
            msg.msg_controllen = space as _;
            let cmsg = libc::CMSG_FIRSTHDR(&msg);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd_bytes as u32) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr() as *const u8, libc::CMSG_DATA(cmsg), fd_bytes);
        }
        libc::sendmsg(s.as_raw_fd(), &msg, libc::MSG_NOSIGNAL)
    };
    if sent < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut w = s;
    w.write_all(&data[sent as usize..])
}
