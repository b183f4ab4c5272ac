//! The mount-table group's state machine: a thin adapter that applies each
//! committed [`FederationCommand`] to the [`Federation`] and answers with
//! the new version or the deterministic refusal.
//!
//! The federation is small (RBF's tables hold thousands of entries, ours
//! at most `MAX_MOUNT_ENTRIES`), so it lives in memory. It is made durable
//! by the log (openraft re-applies the committed tail at start) and by
//! snapshots: one framed, checksummed file holding the federation, the
//! last applied log id, the membership and the routers' delegation token
//! table (which [`FederationView`] keeps beside the federation, never in
//! the copy clients fetch). Nothing in apply reads a clock
//! or a random source. Routers watch [`FederationView::watch_version`] to
//! push changes to their clients.

use std::io;
use std::path::Path;
use std::sync::Arc;

use arc_swap::ArcSwap;
use futures::StreamExt;
use openraft::storage::{EntryResponder, RaftSnapshotBuilder, RaftStateMachine, Snapshot};
use openraft::{EntryPayload, OptionalSend};
use parking_lot::RwLock;
use raftfs_raft::framed::{read_framed, write_framed};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::{
    FederationCommand, FederationResponse, LogId, MountTableConfig, SnapshotDir, SnapshotMeta, Snapshots,
    StoredMembership,
};
use crate::federation::{Federation, FederationChange};
use raftfs_federation::router_tokens::RouterTokens;

/// The file holding the federation inside a snapshot's data directory.
const FEDERATION_FILE: &str = "federation.bin";
const FEDERATION_MAGIC: &[u8; 8] = b"RFSFED03";
/// Snapshots written before the routers issued delegation tokens.
const FEDERATION_MAGIC_WITHOUT_TOKENS: &[u8; 8] = b"RFSFED02";
/// Snapshots written before removed nameservices were remembered.
const FEDERATION_MAGIC_WITHOUT_REMOVED: &[u8; 8] = b"RFSFED01";
/// Largest federation snapshot file accepted, in bytes.
pub const MAX_FEDERATION_SNAPSHOT_BYTES: u64 = 256 * 1024 * 1024;

/// What apply has built: the federation and the Raft state it covers.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Applied {
    federation: Federation,
    last_applied: Option<LogId>,
    membership: StoredMembership,
    /// The routers' delegation tokens (secret: never handed to clients).
    tokens: RouterTokens,
}

/// [`Applied`] as snapshots of [`FEDERATION_MAGIC_WITHOUT_TOKENS`] hold it.
#[derive(Deserialize)]
struct AppliedWithoutTokens {
    federation: Federation,
    last_applied: Option<LogId>,
    membership: StoredMembership,
}

/// [`Applied`] as snapshots of [`FEDERATION_MAGIC_WITHOUT_REMOVED`] hold it.
#[derive(Deserialize)]
struct AppliedWithoutRemoved {
    federation: crate::federation::FederationWithoutRemoved,
    last_applied: Option<LogId>,
    membership: StoredMembership,
}

/// What the router reads without going through openraft: the federation
/// as applied, and a watch of its version.
pub struct FederationView {
    applied: RwLock<Applied>,
    /// A shared copy of `applied.federation`, replaced after each change:
    /// what the router routes calls by without a lock or a copy.
    current: ArcSwap<Federation>,
    version_tx: watch::Sender<u64>,
}

impl FederationView {
    /// A copy of the federation as this member has applied it.
    pub fn federation(&self) -> Federation {
        self.applied.read().federation.clone()
    }

    /// The federation as applied, shared (cheap: routing each call reads it).
    pub fn current(&self) -> Arc<Federation> {
        self.current.load_full()
    }

    /// Read the federation in place (it may be large: no copy).
    pub fn with<T>(&self, f: impl FnOnce(&Federation) -> T) -> T {
        f(&self.applied.read().federation)
    }

    /// Watch the federation's version as changes are applied.
    pub fn watch_version(&self) -> watch::Receiver<u64> {
        self.version_tx.subscribe()
    }

    /// Read the routers' delegation token table in place.
    pub fn with_tokens<T>(&self, f: impl FnOnce(&RouterTokens) -> T) -> T {
        f(&self.applied.read().tokens)
    }

    /// The index of the last applied log entry.
    pub fn applied_index(&self) -> u64 {
        self.applied.read().last_applied.as_ref().map_or(0, |l| l.index)
    }

    fn replace(&self, applied: Applied) {
        let version = applied.federation.version();
        self.current.store(Arc::new(applied.federation.clone()));
        *self.applied.write() = applied;
        self.version_tx.send_replace(version);
    }
}

pub struct MountTableStateMachine {
    view: Arc<FederationView>,
    snapshots: Arc<Snapshots>,
}

/// The [`Applied`] a snapshot's federation file at `path` holds, in this
/// release's format or an older one's.
fn read_applied(path: &Path) -> io::Result<Applied> {
    let decode_error = |e| io::Error::new(io::ErrorKind::InvalidData, format!("{}: decode: {e}", path.display()));
    let read = |magic| read_framed(path, magic, MAX_FEDERATION_SNAPSHOT_BYTES);
    let e = match read(FEDERATION_MAGIC) {
        Ok(body) => return bincode::deserialize(&body).map_err(decode_error),
        Err(e) => e,
    };
    if let Ok(body) = read(FEDERATION_MAGIC_WITHOUT_TOKENS) {
        let old: AppliedWithoutTokens = bincode::deserialize(&body).map_err(decode_error)?;
        return Ok(Applied {
            federation: old.federation,
            last_applied: old.last_applied,
            membership: old.membership,
            tokens: RouterTokens::default(),
        });
    }
    if let Ok(body) = read(FEDERATION_MAGIC_WITHOUT_REMOVED) {
        let old: AppliedWithoutRemoved = bincode::deserialize(&body).map_err(decode_error)?;
        return Ok(Applied {
            federation: old.federation.into(),
            last_applied: old.last_applied,
            membership: old.membership,
            tokens: RouterTokens::default(),
        });
    }
    Err(e)
}

fn read_snapshot(snap: &SnapshotDir) -> io::Result<Applied> {
    let path = snap.data_dir().join(FEDERATION_FILE);
    let applied = read_applied(&path)?;
    if applied.last_applied != snap.manifest.meta.last_log_id {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "{}: covers {:?}, its manifest says {:?}",
                path.display(),
                applied.last_applied,
                snap.manifest.meta.last_log_id
            ),
        ));
    }
    Ok(applied)
}

impl MountTableStateMachine {
    /// Open the state machine of the member directory `dir`: the federation
    /// of the latest snapshot, if any (the log holds what came after).
    pub fn open(dir: &Path) -> io::Result<MountTableStateMachine> {
        let snapshots = Arc::new(Snapshots::open(dir)?);
        let applied = match snapshots.latest()? {
            Some(snap) => read_snapshot(&snap)?,
            None => Applied::default(),
        };
        let (version_tx, _) = watch::channel(applied.federation.version());
        Ok(MountTableStateMachine {
            view: Arc::new(FederationView {
                current: ArcSwap::from_pointee(applied.federation.clone()),
                applied: RwLock::new(applied),
                version_tx,
            }),
            snapshots,
        })
    }

    pub fn view(&self) -> Arc<FederationView> {
        self.view.clone()
    }

    /// The member's snapshots (the Raft service writes received ones here).
    pub fn snapshots(&self) -> Arc<Snapshots> {
        self.snapshots.clone()
    }
}

impl RaftStateMachine<MountTableConfig> for MountTableStateMachine {
    type SnapshotData = SnapshotDir;
    type SnapshotBuilder = FederationSnapshotBuilder;

    async fn applied_state(&mut self) -> io::Result<(Option<LogId>, StoredMembership)> {
        let a = self.view.applied.read();
        Ok((a.last_applied, a.membership.clone()))
    }

    async fn apply<Strm>(&mut self, mut entries: Strm) -> io::Result<()>
    where
        Strm: futures::Stream<Item = io::Result<EntryResponder<MountTableConfig>>> + Unpin + OptionalSend,
    {
        while let Some(item) = entries.next().await {
            let (entry, responder) = item?;
            let (response, version) = {
                let mut a = self.view.applied.write();
                let before = a.federation.version();
                a.last_applied = Some(entry.log_id);
                let response = match &entry.payload {
                    EntryPayload::Blank => FederationResponse::default(),
                    EntryPayload::Membership(m) => {
                        a.membership = StoredMembership::new(Some(entry.log_id), m.clone());
                        FederationResponse::default()
                    }
                    EntryPayload::Normal(FederationCommand {
                        change: FederationChange::DelegationTokens(t),
                        ..
                    }) => FederationResponse {
                        result: None,
                        tokens: Some(a.tokens.apply(t)),
                    },
                    EntryPayload::Normal(cmd) => {
                        let result = a.federation.apply(cmd.change.clone()).map(|()| a.federation.version());
                        if let Err(e) = &result {
                            tracing::info!(command = %cmd, error = %e, "federation change refused");
                        }
                        FederationResponse {
                            result: Some(result),
                            tokens: None,
                        }
                    }
                };
                if a.federation.version() != before {
                    self.view.current.store(Arc::new(a.federation.clone()));
                }
                (response, a.federation.version())
            };
            self.view
                .version_tx
                .send_if_modified(|v| std::mem::replace(v, version) != version);
            if let Some(r) = responder {
                r.send(response);
            }
        }
        Ok(())
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        FederationSnapshotBuilder {
            view: self.view.clone(),
            snapshots: self.snapshots.clone(),
        }
    }

    async fn install_snapshot(&mut self, meta: &SnapshotMeta, data: SnapshotDir) -> io::Result<()> {
        if &data.manifest.meta != meta {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "snapshot: metadata does not match its manifest",
            ));
        }
        let snapshots = self.snapshots.clone();
        let applied = tokio::task::spawn_blocking(move || -> io::Result<Applied> {
            let applied = read_snapshot(&data)?;
            snapshots.adopt(data)?;
            snapshots.prune()?;
            Ok(applied)
        })
        .await
        .map_err(io::Error::other)??;
        tracing::info!(last = ?meta.last_log_id, version = applied.federation.version(), "mount-table snapshot installed");
        self.view.replace(applied);
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> io::Result<Option<openraft::alias::SnapshotOf<MountTableConfig, SnapshotDir>>> {
        Ok(self.snapshots.latest()?.map(|snap| Snapshot {
            meta: snap.manifest.meta.clone(),
            snapshot: snap,
        }))
    }
}

/// Writes the federation as applied into a snapshot, off the runtime's threads.
pub struct FederationSnapshotBuilder {
    view: Arc<FederationView>,
    snapshots: Arc<Snapshots>,
}

impl RaftSnapshotBuilder<MountTableConfig> for FederationSnapshotBuilder {
    type SnapshotData = SnapshotDir;

    async fn build_snapshot(&mut self) -> io::Result<openraft::alias::SnapshotOf<MountTableConfig, SnapshotDir>> {
        let applied = self.view.applied.read().clone();
        let snapshots = self.snapshots.clone();
        let snap = tokio::task::spawn_blocking(move || {
            snapshots.build_with(|data_dir| {
                std::fs::create_dir(data_dir)?;
                let body = bincode::serialize(&applied).expect("serialize the federation");
                write_framed(&data_dir.join(FEDERATION_FILE), FEDERATION_MAGIC, &body)?;
                raftfs_raft::framed::sync_dir(data_dir)?;
                Ok(SnapshotMeta {
                    last_log_id: applied.last_applied,
                    last_membership: applied.membership,
                })
            })
        })
        .await
        .map_err(io::Error::other)??;
        tracing::info!(last = ?snap.manifest.meta.last_log_id, "mount-table snapshot taken");
        Ok(Snapshot {
            meta: snap.manifest.meta.clone(),
            snapshot: snap,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftfs_federation::router_tokens::{TokenAnswer, TokenCommand};

    /// What a snapshot of the release before router tokens wrote.
    #[derive(Serialize)]
    struct OldApplied {
        federation: Federation,
        last_applied: Option<LogId>,
        membership: StoredMembership,
    }

    #[test]
    fn snapshots_of_this_and_the_previous_format_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FEDERATION_FILE);
        let mut federation = Federation::default();
        federation
            .apply(crate::federation::FederationChange::AddNameservice(
                crate::NameserviceRecord {
                    name: "ns1".into(),
                    namespace_id: 7,
                    block_pool_id: "BP-7".into(),
                    members: [(1, "127.0.0.1:1".to_string())].into(),
                },
            ))
            .unwrap();
        let old = OldApplied {
            federation: federation.clone(),
            last_applied: None,
            membership: StoredMembership::default(),
        };
        write_framed(
            &path,
            FEDERATION_MAGIC_WITHOUT_TOKENS,
            &bincode::serialize(&old).unwrap(),
        )
        .unwrap();
        let read = read_applied(&path).unwrap();
        assert_eq!(read.federation, federation);
        assert!(read.tokens.is_empty(), "no tokens before routers issued them");

        let mut tokens = RouterTokens::default();
        let key = raftfs_proto::DelegationKey {
            key_id: 1,
            created_ms: 0,
            expiry_ms: 1_000_000,
            secret: vec![3; raftfs_trust::delegation::DELEGATION_KEY_SECRET_BYTES],
        };
        tokens.apply(&TokenCommand::AddKey { key, now_ms: 10 }).unwrap();
        let issued = tokens.apply(&TokenCommand::Issue {
            owner: "alice".into(),
            renewer: String::new(),
            max_lifetime_ms: 100_000,
            renew_interval_ms: 10_000,
            now_ms: 20,
        });
        let Ok(TokenAnswer::Token(token)) = issued else {
            panic!("issued {issued:?}")
        };
        let now = Applied {
            federation,
            last_applied: None,
            membership: StoredMembership::default(),
            tokens,
        };
        write_framed(&path, FEDERATION_MAGIC, &bincode::serialize(&now).unwrap()).unwrap();
        let read = read_applied(&path).unwrap();
        assert_eq!(read.tokens, now.tokens);
        assert_eq!(read.tokens.verify(&token, 30).unwrap().owner, "alice");
    }
}
