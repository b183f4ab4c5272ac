//! [`CallObservation`]: what every client call gets, however it arrived
//! (gRPC, Hadoop IPC, WebHDFS): its time and outcome in the member's
//! metrics, and its audit line (if the log is on) once its result is known.
//!
//! Started before the call and finished with its result, rather than a
//! wrapper around the call's future: an async wrapper holds the future it
//! is given and, while awaiting it, a second copy of it (rustc does not
//! overlap the two), which doubled the size of every call's future and the
//! bytes moved per call (see `call_future_sizes.rs`).

use std::time::Instant;

use raftfs_proto::{FsError, OpResult};

use super::audit::AuditEntry;
use super::member::Member;

/// One client call being observed.
#[must_use = "a call observed must be finished with its result"]
pub(crate) struct CallObservation<'a> {
    member: &'a Member,
    audit: Option<AuditEntry>,
    name: &'static str,
    started: Instant,
}

impl<'a> CallObservation<'a> {
    /// Observe a call to op `name` starting now; `audit` is its audit
    /// line's entry (`None` when the audit log is off).
    pub(crate) fn start(member: &'a Member, audit: Option<AuditEntry>, name: &'static str) -> CallObservation<'a> {
        CallObservation {
            member,
            audit,
            name,
            started: Instant::now(),
        }
    }

    /// The call ended with `result`: count it, and write its audit line.
    pub(crate) fn finish(self, result: &Result<OpResult, FsError>) {
        (self.member.metrics).observe_op(self.name, self.started.elapsed(), result.is_ok());
        if let Some(entry) = self.audit {
            self.member.audit.record(entry, result);
        }
    }
}
