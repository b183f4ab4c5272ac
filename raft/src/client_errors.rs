//! How openraft's answers to a client write become the `FsError` a caller
//! of any group sees: a follower's `ForwardToLeader` is `NotLeader` with the
//! leader's id and address (the client follows it), an entry discarded by a
//! leader change and a stopped node are `Unavailable` (retryable).

use openraft::errors::{ClientWriteError, ForwardToLeader, RaftError};
use raftfs_proto::{FsError, LeaderHint};

use crate::network::GroupConfig;

/// Where the leader is, from a ForwardToLeader.
pub fn not_leader<C: GroupConfig>(f: &ForwardToLeader<C>) -> FsError {
    FsError::NotLeader {
        leader: match (f.leader_id, &f.leader_node) {
            (Some(id), Some(n)) => Some(LeaderHint {
                member_id: id,
                addr: n.addr.clone(),
            }),
            _ => None,
        },
    }
}

/// Why a proposal's entry was not committed, as its responder says.
pub fn client_write_error<C: GroupConfig>(e: ClientWriteError<C>) -> FsError {
    match e {
        ClientWriteError::ForwardToLeader(f) => not_leader(&f),
        ClientWriteError::LogEntryDiscarded(f) => {
            tracing::debug!(?f, "proposal discarded by a leader change");
            FsError::Unavailable("leadership changed before the call was committed; retry".into())
        }
        e => FsError::Internal(e.to_string()),
    }
}

/// Why `client_write` did not commit an entry.
pub fn write_error<C: GroupConfig>(e: RaftError<C, ClientWriteError<C>>) -> FsError {
    match e {
        RaftError::APIError(e) => client_write_error(e),
        RaftError::Fatal(f) => FsError::Unavailable(format!("member stopped: {f}")),
    }
}
