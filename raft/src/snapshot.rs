//! Snapshots (HDFS's checkpoints) on disk, for any Raft group.
//!
//! A member keeps its snapshots under `<member dir>/snapshots/`, one
//! directory each, named for the last log index they cover
//! (`snap-<index + 1, 20 digits>`):
//! * `data/`: whatever files the group's state machine writes there (a
//!   nameservice: its store's checkpoint, RocksDB SST files hard-linked or
//!   a checksummed image; the mount-table group: one framed table file);
//! * `SNAPSHOT`: the [`Manifest`]: the Raft snapshot meta (last log id,
//!   membership) and every data file's name, length and CRC32C, itself
//!   checksummed (`RFSSNAP3` magic, CRC32C, length, bincode body).
//!
//! A snapshot is built or received in a `tmp-*` / `incoming-*` directory,
//! the manifest written last, and renamed into place: a `snap-*` directory
//! is always complete. The newest [`SNAPSHOTS_KEPT`] are kept (one may still
//! be streaming to a follower while the next is taken).
//!
//! On the wire a snapshot is its manifest and then its files' bytes (see
//! [`super::snapshot_stream`]).

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use openraft::alias::{LogIdOf, SnapshotMetaOf};
use openraft::RaftTypeConfig;
use serde::{Deserialize, Serialize};

use crate::framed::{read_framed, sync_dir, write_framed};

/// Directory of a member's snapshots, inside the member directory.
pub const SNAPSHOTS_DIR: &str = "snapshots";
const MANIFEST_FILE: &str = "SNAPSHOT";
pub(super) const DATA_DIR: &str = "data";
const SNAPSHOT_DIR_PREFIX: &str = "snap-";
const BUILDING_DIR_PREFIX: &str = "tmp-";
const INCOMING_DIR_PREFIX: &str = "incoming-";
const MANIFEST_MAGIC: &[u8; 8] = b"RFSSNAP3";
/// Largest snapshot accepted from a peer, in bytes (the sum of its files).
pub const MAX_SNAPSHOT_BYTES: u64 = 1 << 40;
/// Most files in one snapshot.
pub const MAX_SNAPSHOT_FILES: usize = 100_000;
/// Longest file name in a snapshot, in bytes.
pub const MAX_SNAPSHOT_FILE_NAME_BYTES: usize = 255;
/// Largest manifest, in bytes.
const MAX_MANIFEST_BYTES: u64 = 64 * 1024 * 1024;
/// Snapshots kept on disk, newest first.
pub const SNAPSHOTS_KEPT: usize = 2;
/// Read buffer when checksumming files, in bytes.
const SCAN_BUFFER_BYTES: usize = 1024 * 1024;

/// One file of a snapshot's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotFile {
    pub name: String,
    pub len: u64,
    pub crc32c: u32,
}

/// What a snapshot is: its Raft meta and its files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(bound = "")]
pub struct Manifest<C: RaftTypeConfig> {
    pub meta: SnapshotMetaOf<C>,
    pub files: Vec<SnapshotFile>,
}

pub(crate) fn invalid(m: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, m.into())
}

impl<C: RaftTypeConfig> Manifest<C> {
    pub fn total_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.len).sum()
    }

    /// Refuse a manifest (from a peer) that would write outside its
    /// directory or past the limits.
    pub fn validate(&self) -> io::Result<()> {
        if self.files.len() > MAX_SNAPSHOT_FILES {
            return Err(invalid(format!(
                "snapshot of {} files exceeds the limit of {MAX_SNAPSHOT_FILES}",
                self.files.len()
            )));
        }
        let mut total: u64 = 0;
        let mut names = std::collections::HashSet::new();
        for f in &self.files {
            let n = &f.name;
            if n.is_empty()
                || n.len() > MAX_SNAPSHOT_FILE_NAME_BYTES
                || n == "."
                || n == ".."
                || n.contains(['/', '\\', '\0'])
            {
                return Err(invalid(format!("snapshot file name {n:?} is not a plain file name")));
            }
            if !names.insert(n.as_str()) {
                return Err(invalid(format!("snapshot file {n:?} listed twice")));
            }
            total = total.saturating_add(f.len);
        }
        if total > MAX_SNAPSHOT_BYTES {
            return Err(invalid(format!(
                "snapshot of {total} bytes exceeds the limit of {MAX_SNAPSHOT_BYTES}"
            )));
        }
        Ok(())
    }
}

/// A complete snapshot in a directory: openraft's `SnapshotData`.
#[derive(Debug)]
pub struct SnapshotDir<C: RaftTypeConfig> {
    pub path: PathBuf,
    pub manifest: Manifest<C>,
}

impl<C: RaftTypeConfig> SnapshotDir<C> {
    /// The state machine's files inside.
    pub fn data_dir(&self) -> PathBuf {
        self.path.join(DATA_DIR)
    }
}

/// The directory name of the snapshot ending at `last`.
fn dir_name<C: RaftTypeConfig>(last: Option<&LogIdOf<C>>) -> String {
    format!("{SNAPSHOT_DIR_PREFIX}{:020}", last.map_or(0, |l| l.index + 1))
}

pub(crate) fn write_manifest<C: RaftTypeConfig>(dir: &Path, m: &Manifest<C>) -> io::Result<()> {
    let body = bincode::serialize(m).expect("serialize a snapshot manifest");
    write_framed(&dir.join(MANIFEST_FILE), MANIFEST_MAGIC, &body)?;
    sync_dir(dir)
}

/// Read and verify the manifest of the snapshot directory `dir`.
pub fn read_manifest<C: RaftTypeConfig>(dir: &Path) -> io::Result<Manifest<C>> {
    let path = dir.join(MANIFEST_FILE);
    let body = read_framed(&path, MANIFEST_MAGIC, MAX_MANIFEST_BYTES)?;
    bincode::deserialize(&body).map_err(|e| invalid(format!("{}: decode: {e}", path.display())))
}

/// Name, length and CRC32C of every file in `dir`, in name order.
pub(crate) fn scan_files(dir: &Path) -> io::Result<Vec<SnapshotFile>> {
    let mut files = Vec::new();
    let mut buf = vec![0u8; SCAN_BUFFER_BYTES];
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if !entry.file_type()?.is_file() {
            return Err(invalid(format!("{}: not a regular file", entry.path().display())));
        }
        let name = entry
            .file_name()
            .into_string()
            .map_err(|n| invalid(format!("snapshot file name {n:?} is not UTF-8")))?;
        let mut f = std::fs::File::open(entry.path())?;
        let (mut len, mut crc) = (0u64, 0u32);
        loop {
            let n = f.read(&mut buf)?;
            if n == 0 {
                break;
            }
            crc = crc32c::crc32c_append(crc, &buf[..n]);
            len += n as u64;
        }
        files.push(SnapshotFile { name, len, crc32c: crc });
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// A member's snapshot directory, for the snapshots of group type `C`.
pub struct Snapshots<C: RaftTypeConfig> {
    root: PathBuf,
    group: std::marker::PhantomData<fn() -> C>,
}

impl<C: RaftTypeConfig> Snapshots<C> {
    /// Open (or create) `<member_dir>/snapshots`, removing what a crash left
    /// half built or half received.
    pub fn open(member_dir: &Path) -> io::Result<Snapshots<C>> {
        let root = member_dir.join(SNAPSHOTS_DIR);
        std::fs::create_dir_all(&root)?;
        for entry in std::fs::read_dir(&root)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(BUILDING_DIR_PREFIX) || name.starts_with(INCOMING_DIR_PREFIX) {
                tracing::info!(path = %entry.path().display(), "removing an unfinished snapshot");
                std::fs::remove_dir_all(entry.path())?;
            }
        }
        Ok(Snapshots {
            root,
            group: std::marker::PhantomData,
        })
    }

    /// Complete snapshot directories, newest first.
    fn list(&self) -> io::Result<Vec<PathBuf>> {
        let mut dirs = Vec::new();
        for entry in std::fs::read_dir(&self.root)? {
            let entry = entry?;
            if entry.file_name().to_string_lossy().starts_with(SNAPSHOT_DIR_PREFIX) {
                dirs.push(entry.path());
            }
        }
        // Fixed-width names: name order is log order.
        dirs.sort_unstable_by(|a, b| b.cmp(a));
        Ok(dirs)
    }

    /// The newest snapshot, if any. A corrupt manifest is an error, not a
    /// reason to fall back to an older snapshot (the log may be purged past it).
    pub fn latest(&self) -> io::Result<Option<SnapshotDir<C>>> {
        match self.list()?.into_iter().next() {
            None => Ok(None),
            Some(path) => {
                let manifest = read_manifest(&path)?;
                Ok(Some(SnapshotDir { path, manifest }))
            }
        }
    }

    /// How long ago the newest snapshot was put in place (its directory's
    /// modification time); `None` without one.
    pub fn latest_age(&self) -> io::Result<Option<std::time::Duration>> {
        match self.list()?.into_iter().next() {
            None => Ok(None),
            Some(path) => {
                let modified = std::fs::metadata(path)?.modified()?;
                Ok(Some(modified.elapsed().unwrap_or_default()))
            }
        }
    }

    fn unique_dir(&self, prefix: &str) -> io::Result<PathBuf> {
        let path = self.root.join(format!("{prefix}{}", uuid::Uuid::new_v4().simple()));
        std::fs::create_dir(&path)?;
        Ok(path)
    }

    /// Take a snapshot: `write_data` writes the state machine's files into
    /// the data directory it is given (which it creates) and returns the
    /// Raft meta they cover; the files are then checksummed into the
    /// manifest and the directory moved into place. Blocking: call it off
    /// the async runtime's threads.
    pub fn build_with(
        &self,
        write_data: impl FnOnce(&Path) -> io::Result<SnapshotMetaOf<C>>,
    ) -> io::Result<SnapshotDir<C>> {
        let tmp = self.unique_dir(BUILDING_DIR_PREFIX)?;
        let built = self.build_in(write_data, &tmp);
        if built.is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        built
    }

    fn build_in(
        &self,
        write_data: impl FnOnce(&Path) -> io::Result<SnapshotMetaOf<C>>,
        tmp: &Path,
    ) -> io::Result<SnapshotDir<C>> {
        let meta = write_data(&tmp.join(DATA_DIR))?;
        let manifest = Manifest {
            meta,
            files: scan_files(&tmp.join(DATA_DIR))?,
        };
        write_manifest(tmp, &manifest)?;
        let built = self.adopt(SnapshotDir {
            path: tmp.to_path_buf(),
            manifest,
        })?;
        self.prune()?;
        Ok(built)
    }

    /// A new directory to receive a snapshot into (see [`super::snapshot_stream::SnapshotWriter`]).
    pub fn incoming(&self) -> io::Result<PathBuf> {
        let path = self.unique_dir(INCOMING_DIR_PREFIX)?;
        std::fs::create_dir(path.join(DATA_DIR))?;
        Ok(path)
    }

    /// Move a complete snapshot (built or received) into its place. When a
    /// snapshot of the same log index is there already, that one is kept
    /// (the same index means the same committed state).
    pub fn adopt(&self, snap: SnapshotDir<C>) -> io::Result<SnapshotDir<C>> {
        let target = self.root.join(dir_name::<C>(snap.manifest.meta.last_log_id.as_ref()));
        if snap.path == target {
            return Ok(snap);
        }
        if target.exists() {
            std::fs::remove_dir_all(&snap.path)?;
            let manifest = read_manifest(&target)?;
            return Ok(SnapshotDir { path: target, manifest });
        }
        std::fs::rename(&snap.path, &target)?;
        sync_dir(&self.root)?;
        Ok(SnapshotDir {
            path: target,
            manifest: snap.manifest,
        })
    }

    /// Remove all but the newest [`SNAPSHOTS_KEPT`] snapshots.
    pub fn prune(&self) -> io::Result<()> {
        for old in self.list()?.into_iter().skip(SNAPSHOTS_KEPT) {
            tracing::debug!(path = %old.display(), "removing an old snapshot");
            std::fs::remove_dir_all(&old)?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    openraft::declare_raft_types!(
        /// A type configuration for the tests of the generic pieces.
        pub TestConfig:
            D = String,
            R = String,
            NodeId = u64,
            Node = openraft::BasicNode,
            LeaderId = openraft::impls::leader_id_std::LeaderId<u64, u64>,
    );

    pub(crate) fn manifest_of(files: Vec<SnapshotFile>) -> Manifest<TestConfig> {
        Manifest {
            meta: SnapshotMetaOf::<TestConfig> {
                last_log_id: None,
                last_membership: Default::default(),
            },
            files,
        }
    }

    #[test]
    fn manifests_naming_paths_or_breaking_limits_are_refused() {
        for name in ["", ".", "..", "a/b", "../x", "n\0"] {
            let m = manifest_of(vec![SnapshotFile {
                name: name.into(),
                len: 1,
                crc32c: 0,
            }]);
            assert!(m.validate().is_err(), "{name:?}");
        }
        let twice = SnapshotFile {
            name: "a".into(),
            len: 1,
            crc32c: 0,
        };
        assert!(manifest_of(vec![twice.clone(), twice]).validate().is_err());
        let huge = SnapshotFile {
            name: "a".into(),
            len: MAX_SNAPSHOT_BYTES + 1,
            crc32c: 0,
        };
        assert!(manifest_of(vec![huge]).validate().is_err());
    }

    #[test]
    fn newest_snapshots_are_kept_and_leftovers_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let snaps = Snapshots::<TestConfig>::open(tmp.path()).unwrap();
        for i in 0..4 {
            std::fs::create_dir(snaps.root.join(dir_name::<TestConfig>(Some(&LogIdOf::<TestConfig>::new(
                openraft::alias::CommittedLeaderIdOf::<TestConfig>::new(1),
                i,
            )))))
            .unwrap();
        }
        snaps.prune().unwrap();
        assert_eq!(snaps.list().unwrap().len(), SNAPSHOTS_KEPT);
        assert!(snaps.list().unwrap()[0].ends_with("snap-00000000000000000004"));
        let leftover = snaps.incoming().unwrap();
        drop(snaps);
        Snapshots::<TestConfig>::open(tmp.path()).unwrap();
        assert!(!leftover.exists(), "a half-received snapshot is removed at open");
    }
}
