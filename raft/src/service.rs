//! The server side of Raft RPCs: the `Raft` gRPC service of one member of
//! one Raft group, generic over the group's type configuration and state
//! machine (a nameservice's members and the routers serve the same service).
//!
//! Every request must come from a caller whose certificate names the
//! group's peer role and must name this member's [`RaftGroup`]; its
//! openraft message is decoded with a size limit and handed to the local
//! `Raft`, and the reply carries `Result<response, error>` bincode-encoded.
//! A snapshot arrives as a stream (manifest first, then the files) and is
//! written by a blocking task into an incoming directory, checked file by
//! file, before openraft sees it.

use std::sync::Arc;

use openraft::alias::VoteOf;
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, TransferLeaderRequest, VoteRequest};
use openraft::storage::{RaftStateMachine, Snapshot};
use raftfs_proto::pb;
use raftfs_trust::{PeerRole, ServerSecurity};
use serde::{de::DeserializeOwned, Serialize};

use crate::leader_contact::LeaderContact;
use crate::network::{decode, encode, GroupConfig, RaftGroup, MAX_RAFT_MESSAGE_BYTES, SNAPSHOT_CHUNKS_IN_FLIGHT};
use crate::snapshot::{Manifest, SnapshotDir, Snapshots};
use crate::snapshot_stream::SnapshotWriter;

/// The `Raft` gRPC service of one member.
pub struct RaftService<C: GroupConfig, SM: RaftStateMachine<C>> {
    pub raft: openraft::Raft<C, SM>,
    /// Where received snapshots are written.
    pub snapshots: Arc<Snapshots<C>>,
    /// Requests of any other group are refused.
    pub group: RaftGroup,
    /// Requests from callers without a certificate of this role are refused.
    pub peer_role: PeerRole,
    pub security: ServerSecurity,
    /// Touched whenever AppendEntries from a current leader is accepted.
    pub leader_contact: Arc<LeaderContact>,
}

/// Why a member's gRPC server (a nameservice member's or a router's)
/// stopped or could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    /// The member's TLS settings do not make a server (a bad key, say).
    #[error("TLS: {0}")]
    Tls(#[from] raftfs_trust::TrustError),
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
}

impl<C: GroupConfig, SM: RaftStateMachine<C, SnapshotData = SnapshotDir<C>>> RaftService<C, SM> {
    /// The tonic server of this service, taking messages up to
    /// [`MAX_RAFT_MESSAGE_BYTES`] either way.
    pub fn into_server(self) -> pb::raft_server::RaftServer<Self> {
        pb::raft_server::RaftServer::new(self)
            .max_decoding_message_size(MAX_RAFT_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_RAFT_MESSAGE_BYTES)
    }

    /// The request's openraft message, if it comes from this member's group.
    fn parse<T: DeserializeOwned>(&self, req: tonic::Request<pb::RaftMessage>, rpc: &str) -> Result<T, tonic::Status> {
        self.security.require(&req, self.peer_role, rpc)?;
        let m = req.into_inner();
        self.group.admit(&m.cluster_id, m.namespace_id)?;
        decode(&m.data_bin).map_err(tonic::Status::invalid_argument)
    }

    /// Write a snapshot stream into a new incoming directory, on a blocking
    /// task fed [`SNAPSHOT_CHUNKS_IN_FLIGHT`] chunks at a time. The
    /// directory is removed if the stream is refused.
    async fn receive_snapshot(
        &self,
        manifest: Manifest<C>,
        first: bytes::Bytes,
        chunks: &mut tonic::Streaming<pb::SnapshotChunk>,
    ) -> Result<SnapshotDir<C>, tonic::Status> {
        manifest
            .validate()
            .map_err(|e| tonic::Status::invalid_argument(e.to_string()))?;
        let dir = self
            .snapshots
            .incoming()
            .map_err(|e| tonic::Status::internal(format!("create incoming snapshot directory: {e}")))?;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<bytes::Bytes>(SNAPSHOT_CHUNKS_IN_FLIGHT);
        let writer = tokio::task::spawn_blocking(move || {
            let written = SnapshotWriter::new(dir.clone(), manifest).and_then(|mut w| {
                while let Some(data) = rx.blocking_recv() {
                    w.push(&data)?;
                }
                w.finish()
            });
            if written.is_err() {
                let _ = std::fs::remove_dir_all(&dir);
            }
            written
        });
        let mut stream_error = None;
        if !first.is_empty() && tx.send(first).await.is_err() {
            stream_error = Some(tonic::Status::invalid_argument("snapshot refused by the writer"));
        }
        while stream_error.is_none() {
            match chunks.message().await {
                Ok(None) => break,
                Ok(Some(c)) if !c.head_bin.is_empty() => {
                    stream_error = Some(tonic::Status::invalid_argument("snapshot chunk with a second head"))
                }
                Ok(Some(c)) => {
                    if tx.send(c.data).await.is_err() {
                        break; // the writer failed: its error says why
                    }
                }
                Err(s) => stream_error = Some(s),
            }
        }
        drop(tx);
        let written = writer
            .await
            .map_err(|e| tonic::Status::internal(format!("snapshot writer task: {e}")))?;
        if let Some(s) = stream_error {
            if let Ok(dir) = &written {
                let _ = std::fs::remove_dir_all(&dir.path);
            }
            return Err(s);
        }
        written.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => tonic::Status::invalid_argument(e.to_string()),
            _ => tonic::Status::internal(format!("write snapshot: {e}")),
        })
    }
}

fn reply<T: Serialize, E: std::fmt::Display>(
    r: Result<T, E>,
) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
    let r: Result<T, String> = r.map_err(|e| e.to_string());
    Ok(tonic::Response::new(pb::RaftMessage {
        data_bin: encode(&r),
        ..Default::default()
    }))
}

#[tonic::async_trait]
impl<C, SM> pb::raft_server::Raft for RaftService<C, SM>
where
    C: GroupConfig,
    SM: RaftStateMachine<C, SnapshotData = SnapshotDir<C>>,
{
    async fn append_entries(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: AppendEntriesRequest<C> = self.parse(req, "Raft AppendEntries")?;
        let r = self.raft.append_entries(rpc).await;
        if matches!(
            r,
            Ok(AppendEntriesResponse::Success
                | AppendEntriesResponse::PartialSuccess(_)
                | AppendEntriesResponse::Conflict)
        ) {
            self.leader_contact.touch();
        }
        reply(r)
    }

    async fn vote(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: VoteRequest<C> = self.parse(req, "Raft Vote")?;
        reply(self.raft.vote(rpc).await)
    }

    async fn pre_vote(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: VoteRequest<C> = self.parse(req, "Raft PreVote")?;
        reply(self.raft.pre_vote(rpc).await)
    }

    async fn transfer_leader(
        &self,
        req: tonic::Request<pb::RaftMessage>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        let rpc: TransferLeaderRequest<C> = self.parse(req, "Raft TransferLeader")?;
        reply(self.raft.handle_transfer_leader(rpc).await)
    }

    async fn install_snapshot(
        &self,
        req: tonic::Request<tonic::Streaming<pb::SnapshotChunk>>,
    ) -> Result<tonic::Response<pb::RaftMessage>, tonic::Status> {
        self.security.require(&req, self.peer_role, "Raft InstallSnapshot")?;
        let mut chunks = req.into_inner();
        let first = chunks
            .message()
            .await?
            .ok_or_else(|| tonic::Status::invalid_argument("snapshot stream without a first chunk"))?;
        self.group.admit(&first.cluster_id, first.namespace_id)?;
        let (vote, manifest): (VoteOf<C>, Manifest<C>) =
            decode(&first.head_bin).map_err(tonic::Status::invalid_argument)?;
        let dir = self.receive_snapshot(manifest, first.data, &mut chunks).await?;
        let path = dir.path.clone();
        let meta = dir.manifest.meta.clone();
        let installed = self
            .raft
            .install_full_snapshot(vote, Snapshot { meta, snapshot: dir })
            .await;
        // Refused (a stale vote, an older snapshot): not adopted, so still
        // in the incoming directory.
        if path.exists() {
            let _ = std::fs::remove_dir_all(&path);
        }
        reply(installed)
    }
}
