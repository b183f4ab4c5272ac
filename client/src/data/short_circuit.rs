//! The client's side of short-circuit local reads (see the DataNode's
//! `short_circuit` module): ask a DataNode on this host for a finalized
//! replica's open files over its Unix socket, then read them directly,
//! checking every chunk against its stored CRC32C as a remote read would.
//! Anything unusual (no socket here, another node answering, a replica
//! being written) makes the caller read remotely instead.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use raftfs_proto::datanode::{
    ShortCircuitReply, ShortCircuitRequest, BYTES_PER_CHECKSUM, CHECKSUM_SIZE_BYTES, MAX_SHORT_CIRCUIT_MESSAGE_BYTES,
};
use raftfs_proto::{codec, Block, BlockToken, DatanodeId, FsError};

use super::verify;

/// How long to wait for a local DataNode's answer.
const REPLY_TIMEOUT_MS: u64 = 5_000;
/// Bytes of the meta file's header (HDFS's: version, type, bytes per checksum).
const META_HEADER_BYTES: u64 = 7;

/// A replica on this host, read straight from its files.
pub(crate) struct LocalReplica {
    pub block: Block,
    data: File,
    meta: File,
}

fn recv_with_fds(s: &UnixStream, buf: &mut [u8]) -> std::io::Result<(usize, Vec<OwnedFd>)> {
    const MAX_FDS: usize = 2;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<libc::c_int>()) as u32) } as usize;
    let mut control = vec![0u8; space];
    let mut iov = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: a zeroed msghdr is valid; iov and control outlive the call;
    // the kernel writes at most iov_len and msg_controllen bytes.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    msg.msg_controllen = space as _;
    let n = unsafe { libc::recvmsg(s.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    let mut fds = Vec::new();
    // SAFETY: the kernel filled the control buffer; the CMSG macros walk it
    // within msg_controllen, and every descriptor received is ours to own.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&msg);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let bytes = (*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize;
                let count = bytes / std::mem::size_of::<libc::c_int>();
                let data = libc::CMSG_DATA(cmsg) as *const libc::c_int;
                for i in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(i))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&msg, cmsg);
        }
    }
    Ok((n as usize, fds))
}

/// Ask DataNode `dn` (on this host) for its replica of `block`. Blocking.
pub(crate) fn open(
    dn: &DatanodeId,
    pool: &str,
    block: &Block,
    client: &str,
    token: Option<BlockToken>,
) -> Result<LocalReplica, FsError> {
    let unavailable = |e: String| FsError::Unavailable(format!("short-circuit read from {}: {e}", dn.addr));
    let mut s = UnixStream::connect(&dn.domain_socket).map_err(|e| unavailable(e.to_string()))?;
    s.set_read_timeout(Some(Duration::from_millis(REPLY_TIMEOUT_MS)))
        .map_err(|e| unavailable(e.to_string()))?;
    let req = ShortCircuitRequest {
        block_pool_id: pool.to_string(),
        block: *block,
        client: client.to_string(),
        token,
    };
    let body = codec::encode(&req)?;
    let mut frame = (body.len() as u32).to_be_bytes().to_vec();
    frame.extend_from_slice(&body);
    s.write_all(&frame).map_err(|e| unavailable(e.to_string()))?;
    let mut buf = vec![0u8; 4 + MAX_SHORT_CIRCUIT_MESSAGE_BYTES];
    let (mut got, fds) = recv_with_fds(&s, &mut buf).map_err(|e| unavailable(e.to_string()))?;
    while got < 4 {
        let n = s.read(&mut buf[got..]).map_err(|e| unavailable(e.to_string()))?;
        if n == 0 {
            return Err(unavailable("closed before answering".into()));
        }
        got += n;
    }
    let len = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes")) as usize;
    if len > MAX_SHORT_CIRCUIT_MESSAGE_BYTES {
        return Err(unavailable(format!("an answer of {len} bytes")));
    }
    if got < 4 + len {
        s.read_exact(&mut buf[got..4 + len])
            .map_err(|e| unavailable(e.to_string()))?;
    }
    let reply: Result<ShortCircuitReply, FsError> = codec::decode(&buf[4..4 + len], "short-circuit reply")?;
    // A refusal (a replica being written, say) means: read through the DataNode.
    let reply = reply.map_err(|e| unavailable(e.to_string()))?;
    if reply.uuid != dn.uuid {
        return Err(unavailable(format!("the socket belongs to DataNode {}", reply.uuid)));
    }
    let mut fds = fds.into_iter();
    let (Some(data), Some(meta)) = (fds.next(), fds.next()) else {
        return Err(unavailable("no file descriptors came with the answer".into()));
    };
    Ok(LocalReplica {
        block: reply.block,
        data: File::from(data),
        meta: File::from(meta),
    })
}

impl LocalReplica {
    /// Fill `out` with the replica's bytes from `offset` (a chunk boundary),
    /// every chunk checked; `out` must end on a chunk boundary or at the
    /// block's end. Reads straight into the caller's buffer: no other copy.
    pub(crate) fn read_exact_verified(&self, offset: u64, out: &mut [u8]) -> Result<(), FsError> {
        let chunk = BYTES_PER_CHECKSUM as u64;
        let end = offset + out.len() as u64;
        assert!(
            offset.is_multiple_of(chunk) && (end.is_multiple_of(chunk) || end == self.block.num_bytes),
            "a direct read of {}..{end} of {} is not chunk-aligned",
            offset,
            self.block
        );
        if end > self.block.num_bytes {
            return Err(FsError::Unavailable(format!("{} has no bytes up to {end}", self.block)));
        }
        let io = |e: std::io::Error| FsError::Unavailable(format!("read local replica {}: {e}", self.block));
        self.data.read_exact_at(out, offset).map_err(io)?;
        let mut sums = vec![0u8; out.len().div_ceil(BYTES_PER_CHECKSUM) * CHECKSUM_SIZE_BYTES];
        self.meta
            .read_exact_at(
                &mut sums,
                META_HEADER_BYTES + offset / chunk * CHECKSUM_SIZE_BYTES as u64,
            )
            .map_err(io)?;
        verify(out, &sums).map_err(|at| {
            FsError::Checksum(format!(
                "Checksum error: {} at offset {} (short-circuit read)",
                self.block,
                offset + at as u64
            ))
        })
    }

    /// Bytes `[offset, offset + len)` of the replica, every chunk checked.
    pub(crate) fn read(&self, offset: u64, len: u64) -> Result<Vec<u8>, FsError> {
        let chunk = BYTES_PER_CHECKSUM as u64;
        let end = offset.saturating_add(len).min(self.block.num_bytes);
        if offset >= end {
            return Ok(Vec::new());
        }
        let start = offset - offset % chunk;
        let stored_end = end.div_ceil(chunk).saturating_mul(chunk).min(self.block.num_bytes);
        let mut data = vec![0u8; (stored_end - start) as usize];
        let mut sums = vec![0u8; data.len().div_ceil(BYTES_PER_CHECKSUM) * CHECKSUM_SIZE_BYTES];
        let io = |e: std::io::Error| FsError::Unavailable(format!("read local replica {}: {e}", self.block));
        self.data.read_exact_at(&mut data, start).map_err(io)?;
        self.meta
            .read_exact_at(
                &mut sums,
                META_HEADER_BYTES + start / chunk * CHECKSUM_SIZE_BYTES as u64,
            )
            .map_err(io)?;
        if let Err(at) = verify(&data, &sums) {
            return Err(FsError::Checksum(format!(
                "Checksum error: {} at offset {} (short-circuit read)",
                self.block,
                start + at as u64
            )));
        }
        data.truncate((end - start) as usize);
        if start < offset {
            data.drain(..(offset - start) as usize);
        }
        Ok(data)
    }
}
