//! [`RaftProposer`]: the write pipeline's [`Proposer`] over this member's
//! Raft node, and [`follow_leadership`], which starts and ends the
//! pipeline's planning epochs as leadership comes and goes.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use openraft::async_runtime::WatchReceiver;
use openraft::impls::ProgressResponder;
use openraft::ServerState;

use raftfs_proto::{FsError, LeaderHint};
use raftfs_raft::client_errors::client_write_error;
pub(crate) use raftfs_raft::client_errors::{not_leader as hint, write_error};

use crate::exec::batcher::Proposer;
use crate::exec::pipeline::WritePipeline;
use crate::namespace::apply::WriteResults;
use crate::namespace::Command;
use crate::raft::{Raft, TypeConfig};

/// Proposes through this member's Raft node.
pub struct RaftProposer {
    pub raft: Raft,
    /// Member addresses from VERSION (for hints about members added since format).
    pub version_addrs: BTreeMap<u64, String>,
}

impl Proposer for RaftProposer {
    fn propose(&self, cmd: Command, term: Option<u64>) -> BoxFuture<'static, Result<WriteResults, FsError>> {
        let raft = self.raft.clone();
        Box::pin(async move {
            match term {
                None => raft
                    .client_write(cmd)
                    .await
                    .map(|r| r.data.results)
                    .map_err(write_error),
                Some(term) => {
                    let (responder, rx) = ProgressResponder::<TypeConfig, _>::complete_only();
                    raft.write(cmd)
                        .with_leader(term)
                        .responder(responder)
                        .await
                        .map_err(|f| FsError::Unavailable(format!("member stopped: {f}")))?;
                    match rx.await {
                        Ok(Ok(r)) => Ok(r.data.results),
                        Ok(Err(e)) => Err(client_write_error(e)),
                        Err(_) => Err(FsError::Unavailable(
                            "member stopped before the call was committed".into(),
                        )),
                    }
                }
            }
        })
    }

    fn leads(&self) -> bool {
        self.raft.metrics().borrow_watched().state == ServerState::Leader
    }

    fn confirm_leadership(&self, term: u64) -> BoxFuture<'static, Result<(), FsError>> {
        let raft = self.raft.clone();
        Box::pin(async move {
            let linearizer = raft
                .get_read_linearizer(super::member::read_option())
                .await
                .map_err(super::member::read_error)?;
            let confirmed = linearizer.read_log_id().committed_leader_id().term;
            if confirmed != term {
                return Err(FsError::Unavailable(format!(
                    "leadership changed (term {term} -> {confirmed}) while the call was planned; retry"
                )));
            }
            Ok(())
        })
    }

    fn not_leader(&self) -> FsError {
        let m = self.raft.metrics().borrow_watched().clone();
        let leader = m.current_leader.filter(|l| *l != m.id).map(|id| LeaderHint {
            member_id: id,
            addr: m
                .membership_config
                .membership()
                .get_node(&id)
                .map(|n| n.addr.clone())
                .or_else(|| self.version_addrs.get(&id).cloned())
                .unwrap_or_default(),
        });
        FsError::NotLeader { leader }
    }
}

/// Start a planning epoch when this member leads and has applied the
/// first entry of its term (everything earlier terms committed is then in
/// the store); end it when it no longer leads in that term.
pub async fn follow_leadership(raft: Raft, writes: Arc<WritePipeline>) {
    let mut metrics = raft.metrics();
    loop {
        let (leads, term, ready) = {
            let m = metrics.borrow_watched();
            let leads = m.state == ServerState::Leader;
            let applied_term = m.last_applied.as_ref().map(|l| l.committed_leader_id().term);
            (leads, m.current_term, leads && applied_term == Some(m.current_term))
        };
        if ready {
            if let Err(e) = writes.start_epoch(term) {
                tracing::error!(error = %e, term, "read the counters to plan writes on this leader");
            }
        } else if !leads || writes.epoch_term() != Some(term) {
            writes.end_epoch();
        }
        if metrics.changed().await.is_err() {
            return;
        }
    }
}
