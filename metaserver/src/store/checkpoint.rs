//! Checkpoints: a consistent copy of a whole store in a directory, the
//! payload of a Raft snapshot (the fsimage of HDFS).
//!
//! Two formats, one per store kind, told apart by what the directory holds:
//! * **RocksDB checkpoint** (`--store rocksdb`): RocksDB's own checkpoint of
//!   the live database (SST files hard-linked, MANIFEST and OPTIONS copied),
//!   so taking one costs a memtable flush and a few links, not a scan; it is
//!   restored by linking the files into a new database directory.
//! * **Image file** (`--store memory`): [`IMAGE_FILE`], a versioned,
//!   checksummed encoding of every record (`RFSIMG01` magic, CRC32C and
//!   length of the body, then the bincode body). The checksum is verified
//!   before anything is decoded.
//!
//! Either store restores either format (a RocksDB checkpoint is exported
//! into a memory store; an image is imported into RocksDB), so members of one
//! nameservice may run different stores.

use std::io;
use std::path::Path;

use raftfs_raft::framed::{read_framed, write_framed};

use super::{Image, StoreError};

/// The image file inside a memory store's checkpoint directory.
pub const IMAGE_FILE: &str = "image.bin";
/// The file every RocksDB database (and so every RocksDB checkpoint) has.
const ROCKSDB_MARKER_FILE: &str = "CURRENT";
const IMAGE_MAGIC: &[u8; 8] = b"RFSIMG01";
/// Largest image file accepted, in bytes (the memory store holds it all).
pub const MAX_IMAGE_BYTES: u64 = 64 * 1024 * 1024 * 1024;

/// What a checkpoint directory holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointFormat {
    Rocksdb,
    Image,
}

/// Tell the format of the checkpoint in `dir`.
pub fn format_of(dir: &Path) -> Result<CheckpointFormat, StoreError> {
    if dir.join(IMAGE_FILE).is_file() {
        Ok(CheckpointFormat::Image)
    } else if dir.join(ROCKSDB_MARKER_FILE).is_file() {
        Ok(CheckpointFormat::Rocksdb)
    } else {
        Err(StoreError::Io(format!(
            "checkpoint {}: neither {IMAGE_FILE} nor a RocksDB {ROCKSDB_MARKER_FILE} file",
            dir.display()
        )))
    }
}

fn io_at(what: &str, path: &Path, e: io::Error) -> StoreError {
    StoreError::Io(format!("{what} {}: {e}", path.display()))
}

/// Write `image` as the image file of the new checkpoint directory `dir`, synced.
pub fn write_image(dir: &Path, image: &Image) -> Result<(), StoreError> {
    std::fs::create_dir_all(dir).map_err(|e| io_at("create checkpoint directory", dir, e))?;
    let body = bincode::serialize(image).expect("serialize a store image");
    let path = dir.join(IMAGE_FILE);
    write_framed(&path, IMAGE_MAGIC, &body).map_err(|e| io_at("write image file", &path, e))?;
    sync_dir(dir)
}

/// Read and verify the image file of the checkpoint directory `dir`.
pub fn read_image(dir: &Path) -> Result<Image, StoreError> {
    let path = dir.join(IMAGE_FILE);
    let corrupt = |detail: String| StoreError::Corrupt { table: "image", detail };
    let body = read_framed(&path, IMAGE_MAGIC, MAX_IMAGE_BYTES).map_err(|e| match e.kind() {
        io::ErrorKind::InvalidData => corrupt(e.to_string()),
        _ => io_at("read image file", &path, e),
    })?;
    bincode::deserialize(&body).map_err(|e| corrupt(format!("decode: {e}")))
}

/// fsync a directory, so the names in it are durable.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    raftfs_raft::framed::sync_dir(dir).map_err(|e| io_at("sync directory", dir, e))
}

/// Make `dst` (new) hold the files of `src` (flat): SST files hard-linked
/// (RocksDB never changes one once written, so both databases may share
/// it), everything else copied (MANIFEST, OPTIONS and logs are written in
/// place). Falls back to copying when linking fails (another filesystem).
pub fn link_or_copy_dir(src: &Path, dst: &Path) -> Result<(), StoreError> {
    std::fs::create_dir(dst).map_err(|e| io_at("create directory", dst, e))?;
    let entries = std::fs::read_dir(src).map_err(|e| io_at("list checkpoint", src, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| io_at("list checkpoint", src, e))?;
        let name = entry.file_name();
        let (from, to) = (entry.path(), dst.join(&name));
        if !entry.file_type().map_err(|e| io_at("stat", &from, e))?.is_file() {
            return Err(StoreError::Io(format!(
                "checkpoint {}: {} is not a regular file",
                src.display(),
                from.display()
            )));
        }
        let linked = name.to_string_lossy().ends_with(".sst") && std::fs::hard_link(&from, &to).is_ok();
        if !linked {
            std::fs::copy(&from, &to).map_err(|e| io_at("copy checkpoint file", &from, e))?;
            std::fs::File::open(&to)
                .and_then(|f| f.sync_all())
                .map_err(|e| io_at("sync", &to, e))?;
        }
    }
    sync_dir(dst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_round_trip_and_checksum() {
        let tmp = tempfile::tempdir().expect("temp dir");
        let dir = tmp.path().join("cp");
        let image = Image {
            meta: vec![("k".into(), vec![1, 2, 3])],
            ..Image::default()
        };
        write_image(&dir, &image).expect("write");
        assert_eq!(format_of(&dir).expect("format"), CheckpointFormat::Image);
        assert_eq!(read_image(&dir).expect("read"), image);
        let path = dir.join(IMAGE_FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(
            matches!(read_image(&dir), Err(StoreError::Corrupt { .. })),
            "a flipped byte must fail the checksum"
        );
        assert!(format_of(tmp.path()).is_err(), "an empty directory is no checkpoint");
    }
}
