//! Snapshots on the wire: a snapshot is its manifest, then every file's
//! bytes in manifest order, in chunks of at most `chunk_bytes` that never
//! span files. [`read_chunks`] produces them from a snapshot directory,
//! [`SnapshotWriter`] writes them into an incoming one; neither holds more
//! than a chunk in memory. The sender verifies each file's length and CRC32C
//! as it reads, the receiver as it writes; either fails the transfer on a
//! mismatch, and the receiver refuses a stream longer or shorter than its
//! manifest.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use openraft::RaftTypeConfig;

use crate::framed::sync_dir;
use crate::snapshot::{invalid, write_manifest, Manifest, SnapshotDir, DATA_DIR};

/// Read the files of `snap` in manifest order, handing `send` chunks of at
/// most `chunk_bytes`; stop early (with `Ok`) when `send` returns false. A
/// file whose length or CRC32C differs from the manifest is an error.
pub fn read_chunks<C: RaftTypeConfig>(
    snap: &SnapshotDir<C>,
    chunk_bytes: usize,
    mut send: impl FnMut(bytes::Bytes) -> bool,
) -> io::Result<()> {
    assert!(chunk_bytes > 0, "snapshot chunks hold at least one byte");
    let data = snap.data_dir();
    for f in &snap.manifest.files {
        let path = data.join(&f.name);
        let mut file = std::fs::File::open(&path)?;
        let (mut left, mut crc) = (f.len, 0u32);
        while left > 0 {
            let mut chunk = vec![0u8; chunk_bytes.min(left as usize)];
            file.read_exact(&mut chunk)
                .map_err(|e| invalid(format!("{}: {e} ({left} of {} bytes left)", path.display(), f.len)))?;
            crc = crc32c::crc32c_append(crc, &chunk);
            left -= chunk.len() as u64;
            if left == 0 && crc != f.crc32c {
                return Err(invalid(format!(
                    "{}: checksum mismatch (manifest {:08x}, file {crc:08x})",
                    path.display(),
                    f.crc32c
                )));
            }
            if !send(bytes::Bytes::from(chunk)) {
                return Ok(());
            }
        }
        if crc != f.crc32c {
            return Err(invalid(format!("{}: checksum mismatch", path.display())));
        }
    }
    Ok(())
}

/// Writes a snapshot streamed as by [`read_chunks`] into a directory from
/// [`Snapshots::incoming`](super::snapshot::Snapshots::incoming), checking every file's length and CRC32C.
pub struct SnapshotWriter<C: RaftTypeConfig> {
    dir: PathBuf,
    manifest: Manifest<C>,
    /// The file being written, and how far.
    index: usize,
    written: u64,
    crc: u32,
    file: Option<std::fs::File>,
}

impl<C: RaftTypeConfig> SnapshotWriter<C> {
    pub fn new(dir: PathBuf, manifest: Manifest<C>) -> io::Result<SnapshotWriter<C>> {
        manifest.validate()?;
        Ok(SnapshotWriter {
            dir,
            manifest,
            index: 0,
            written: 0,
            crc: 0,
            file: None,
        })
    }

    /// Finish the current file if it is complete (an empty one at once).
    fn close_complete(&mut self) -> io::Result<()> {
        while let Some(f) = self.manifest.files.get(self.index) {
            if self.written < f.len {
                return Ok(());
            }
            let file = match self.file.take() {
                Some(file) => file,
                None => std::fs::File::create(self.dir.join(DATA_DIR).join(&f.name))?,
            };
            if self.crc != f.crc32c {
                return Err(invalid(format!(
                    "snapshot file {}: checksum mismatch (manifest {:08x}, received {:08x})",
                    f.name, f.crc32c, self.crc
                )));
            }
            file.sync_all()?;
            self.index += 1;
            self.written = 0;
            self.crc = 0;
        }
        Ok(())
    }

    /// Write the next bytes of the stream.
    pub fn push(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            self.close_complete()?;
            let Some(f) = self.manifest.files.get(self.index) else {
                return Err(invalid(format!(
                    "snapshot stream longer than its announced {} bytes",
                    self.manifest.total_bytes()
                )));
            };
            if self.file.is_none() {
                self.file = Some(std::fs::File::create(self.dir.join(DATA_DIR).join(&f.name))?);
            }
            let n = (f.len - self.written).min(data.len() as u64) as usize;
            self.file.as_mut().expect("opened above").write_all(&data[..n])?;
            self.crc = crc32c::crc32c_append(self.crc, &data[..n]);
            self.written += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    /// Check the stream was complete and write the manifest: the directory
    /// is then a complete snapshot, ready for [`Snapshots::adopt`](super::snapshot::Snapshots::adopt).
    pub fn finish(mut self) -> io::Result<SnapshotDir<C>> {
        self.close_complete()?;
        if self.index != self.manifest.files.len() {
            return Err(invalid(format!(
                "snapshot stream ended in file {} of {}",
                self.index + 1,
                self.manifest.files.len()
            )));
        }
        sync_dir(&self.dir.join(DATA_DIR))?;
        write_manifest(&self.dir, &self.manifest)?;
        Ok(SnapshotDir {
            path: self.dir,
            manifest: self.manifest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::tests::{manifest_of, TestConfig};
    use crate::snapshot::{read_manifest, scan_files, Snapshots, SNAPSHOTS_DIR};

    /// A snapshot directory with files of the given sizes, written by hand.
    fn sample(snaps: &Snapshots<TestConfig>, sizes: &[usize]) -> SnapshotDir<TestConfig> {
        let dir = snaps.incoming().unwrap();
        for (i, n) in sizes.iter().enumerate() {
            let bytes: Vec<u8> = (0..*n).map(|b| (b * 7 + i) as u8).collect();
            std::fs::write(dir.join(DATA_DIR).join(format!("f{i}")), bytes).unwrap();
        }
        let manifest = manifest_of(scan_files(&dir.join(DATA_DIR)).unwrap());
        write_manifest(&dir, &manifest).unwrap();
        SnapshotDir { path: dir, manifest }
    }

    fn stream(snap: &SnapshotDir<TestConfig>, chunk: usize) -> Vec<bytes::Bytes> {
        let mut out = Vec::new();
        read_chunks(snap, chunk, |c| {
            out.push(c);
            true
        })
        .unwrap();
        out
    }

    #[test]
    fn a_snapshot_streams_file_by_file_and_round_trips() {
        let tmp = tempfile::tempdir().unwrap();
        let snaps = Snapshots::<TestConfig>::open(tmp.path()).unwrap();
        let sent = sample(&snaps, &[10, 0, 7]);
        let chunks = stream(&sent, 3);
        assert_eq!(chunks.len(), 4 + 3, "chunks never span files");
        let mut w = SnapshotWriter::new(snaps.incoming().unwrap(), sent.manifest.clone()).unwrap();
        for c in &chunks {
            w.push(c).unwrap();
        }
        let got = w.finish().unwrap();
        assert_eq!(read_manifest::<TestConfig>(&got.path).unwrap(), sent.manifest);
        for f in &sent.manifest.files {
            assert_eq!(
                std::fs::read(got.data_dir().join(&f.name)).unwrap(),
                std::fs::read(sent.data_dir().join(&f.name)).unwrap()
            );
        }
        let adopted = snaps.adopt(got).unwrap();
        assert_eq!(
            adopted.path,
            tmp.path().join(SNAPSHOTS_DIR).join("snap-00000000000000000000")
        );
        assert_eq!(snaps.latest().unwrap().unwrap().manifest, sent.manifest);
    }

    #[test]
    fn streams_of_the_wrong_length_or_content_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let snaps = Snapshots::<TestConfig>::open(tmp.path()).unwrap();
        let sent = sample(&snaps, &[4]);
        let mut long = SnapshotWriter::new(snaps.incoming().unwrap(), sent.manifest.clone()).unwrap();
        long.push(&std::fs::read(sent.data_dir().join("f0")).unwrap()).unwrap();
        assert!(long.push(&[0]).is_err(), "a byte past the announced length");
        let mut short = SnapshotWriter::new(snaps.incoming().unwrap(), sent.manifest.clone()).unwrap();
        short.push(&[0; 3]).unwrap();
        assert!(short.finish().is_err(), "a stream that ends early");
        let mut flipped = SnapshotWriter::new(snaps.incoming().unwrap(), sent.manifest.clone()).unwrap();
        let mut bytes = std::fs::read(sent.data_dir().join("f0")).unwrap();
        bytes[0] ^= 1;
        assert!(flipped.push(&bytes).and_then(|_| flipped.finish().map(|_| ())).is_err());
        // The sender verifies too.
        std::fs::write(sent.data_dir().join("f0"), &bytes).unwrap();
        assert!(read_chunks(&sent, 2, |_| true).is_err(), "a corrupt local file");
    }
}
