//! Snapshot images: the payload openraft ships to a lagging member and the
//! file a member keeps so that it can restart (and serve snapshots) after
//! its log was purged.
//!
//! Layout: `RFSSNAP2` magic, CRC32C of the body (u32 LE), body length (u64
//! LE), body = bincode of ([`SnapshotMeta`], [`Image`]). The checksum is
//! verified before anything is decoded; a mismatch is an `InvalidData`
//! error. Files are written to a temporary name, fsynced, then renamed.
//!
//! On the wire an image travels as a stream of chunks (`raft::network`,
//! `InstallSnapshot`), so no single message holds it.
//!
//! Caveat (the HA issue's): the whole image is one buffer in memory on both
//! sides, and for RocksDB it is an export of every record, not a RocksDB
//! checkpoint of the SST files.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::SnapshotMeta;
use crate::store::Image;

const MAGIC: &[u8; 8] = b"RFSSNAP2";
const HEADER_BYTES: usize = 8 + 4 + 8;
/// Largest snapshot image accepted, in bytes.
pub const MAX_SNAPSHOT_BYTES: u64 = 4 * 1024 * 1024 * 1024;
/// File name of the current snapshot inside a member's directory.
pub const SNAPSHOT_FILE: &str = "snapshot.bin";

/// Encode a snapshot into its checksummed byte form.
pub fn encode(meta: &SnapshotMeta, image: &Image) -> Vec<u8> {
    let body = bincode::serialize(&(meta, image)).expect("serialize snapshot image");
    let mut out = Vec::with_capacity(HEADER_BYTES + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Verify the header and checksum; return the body.
fn verified_body(bytes: &[u8]) -> io::Result<&[u8]> {
    let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, m);
    if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC {
        return Err(bad("snapshot: bad magic or truncated header".into()));
    }
    let crc = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    let len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    if len > MAX_SNAPSHOT_BYTES || len != (bytes.len() - HEADER_BYTES) as u64 {
        return Err(bad(format!(
            "snapshot: body length {len} does not match {} bytes present",
            bytes.len() - HEADER_BYTES
        )));
    }
    let body = &bytes[HEADER_BYTES..];
    let actual = crc32c::crc32c(body);
    if actual != crc {
        return Err(bad(format!(
            "snapshot: checksum mismatch (stored {crc:08x}, computed {actual:08x})"
        )));
    }
    Ok(body)
}

/// Verify and decode a snapshot.
pub fn decode(bytes: &[u8]) -> io::Result<(SnapshotMeta, Image)> {
    bincode::deserialize(verified_body(bytes)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("snapshot: decode body: {e}")))
}

/// Verify a snapshot and decode only its metadata (the body's prefix),
/// without building the image.
pub fn decode_meta(bytes: &[u8]) -> io::Result<SnapshotMeta> {
    bincode::deserialize(verified_body(bytes)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("snapshot: decode metadata: {e}")))
}

/// Write `bytes` as the snapshot file in `dir`, atomically.
pub fn write_file(dir: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = dir.join(format!("{SNAPSHOT_FILE}.tmp"));
    {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path(dir))?;
    std::fs::File::open(dir)?.sync_all()
}

/// Read the snapshot file in `dir`, if there is one.
pub fn read_file(dir: &Path) -> io::Result<Option<Vec<u8>>> {
    match std::fs::read(path(dir)) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn path(dir: &Path) -> PathBuf {
    dir.join(SNAPSHOT_FILE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raft::StoredMembership;

    #[test]
    fn meta_prefix_and_checksum() {
        let meta = SnapshotMeta {
            last_log_id: None,
            last_membership: StoredMembership::default(),
        };
        let image = Image {
            meta: vec![("k".into(), vec![1, 2, 3])],
            ..Image::default()
        };
        let mut bytes = encode(&meta, &image);
        assert_eq!(decode_meta(&bytes).expect("meta"), meta);
        assert_eq!(decode(&bytes).expect("image"), (meta, image));
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        assert!(decode_meta(&bytes).is_err(), "a flipped byte must fail the checksum");
    }
}
