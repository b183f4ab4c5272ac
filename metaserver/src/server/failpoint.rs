//! Fault injection for the fault tests, off unless the environment asks.
//!
//! `RAFTFS_FAILPOINT_CRASH_AFTER_COMMIT=<substring>`: the member kills itself
//! with SIGKILL right after a write whose path contains `<substring>` was
//! committed by a majority and applied, before the client gets the reply:
//! the case HDFS's RetryCache exists for (the client retries against the
//! next leader, which must answer with the first result).
//! `RAFTFS_FAILPOINT_ONCE_FILE=<path>`: fire only while `<path>` does not
//! exist, creating it first, so that one crash happens across all members
//! sharing the file system (a test removes the file to arm it again).
//! `RAFTFS_FAILPOINT_PEER_ROUTES=<id>=<host:port>,…`: connect to member
//! `<id>` (Raft RPCs, read-index requests, health queries) through the
//! given address instead of its own: the fault harness puts a TCP proxy
//! there to cut or restore the link between two members.
//! `RAFTFS_FAILPOINT_SLOW_DISK_FILE=<path>`: while `<path>` holds a number of
//! milliseconds, every fsync of the Raft log takes that much longer (read
//! by the log store, see `raftfs_raft::log_store`).
//! `RAFTFS_FAILPOINT_CLOCK_OFFSET_DIR=<dir>`: while `<dir>/<pid>` holds a
//! signed number of milliseconds, the process's wall clock reads that much
//! off (see `raftfs_trust::clock`; log time then keeps real time, see
//! `crate::log_clock`).
//! `RAFTFS_FAILPOINT_SLOW_APPLY_DIR=<dir>`: while `<dir>/<pid>` holds a
//! number of milliseconds, every apply call of the state machine waits
//! that long first (see `crate::raft::state_machine`).

use std::path::PathBuf;

use raftfs_proto::Op;

pub const ENV_CRASH_AFTER_COMMIT: &str = "RAFTFS_FAILPOINT_CRASH_AFTER_COMMIT";
pub const ENV_ONCE_FILE: &str = "RAFTFS_FAILPOINT_ONCE_FILE";
/// Peer routes are read by the Raft glue (`raftfs_raft::peer_route`).
pub use raftfs_raft::peer_route::{peer_route, ENV_PEER_ROUTES};

#[derive(Debug, Default, Clone)]
pub struct Failpoints {
    crash_after_commit: Option<String>,
    once_file: Option<PathBuf>,
}

impl Failpoints {
    pub fn from_env() -> Failpoints {
        let fp = Failpoints {
            crash_after_commit: std::env::var(ENV_CRASH_AFTER_COMMIT).ok().filter(|s| !s.is_empty()),
            once_file: std::env::var_os(ENV_ONCE_FILE).map(PathBuf::from),
        };
        if let Some(s) = &fp.crash_after_commit {
            tracing::warn!(substring = %s, once_file = ?fp.once_file, "failpoint armed: crash after commit");
        }
        fp
    }

    /// Whether [`Failpoints::crash_after_commit`] is to follow `op`.
    pub fn watches(&self, op: &Op) -> bool {
        self.crash_after_commit
            .as_ref()
            .is_some_and(|s| op.src_path().contains(s.as_str()))
    }

    /// Called after a watched op was committed and applied, before its reply.
    pub fn crash_after_commit(&self) {
        if let Some(f) = &self.once_file {
            // create_new: exactly one member wins the race to fire.
            if std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(f)
                .is_err()
            {
                return;
            }
        }
        tracing::warn!("failpoint: crashing after commit");
        // SAFETY: sending SIGKILL to ourselves has no preconditions; it is kill -9.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}
