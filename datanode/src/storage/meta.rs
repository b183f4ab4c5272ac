//! The checksum ("meta") file of a replica, in HDFS's format: a 7-byte
//! header (version u16 = 1, checksum type u8 = 2 for CRC32C, bytes per
//! checksum u32 = 512, all big-endian), then one 4-byte big-endian CRC32C
//! per 512-byte chunk of the data file, the last chunk possibly short.

use std::io::{self, Read, Seek, SeekFrom, Write};

use raftfs_proto::datanode::{BYTES_PER_CHECKSUM, CHECKSUM_SIZE_BYTES};

pub const META_VERSION: u16 = 1;
/// HDFS's `DataChecksum.CHECKSUM_CRC32C`.
pub const CHECKSUM_TYPE_CRC32C: u8 = 2;
pub const META_HEADER_BYTES: u64 = 7;

pub fn header() -> [u8; META_HEADER_BYTES as usize] {
    let mut h = [0u8; META_HEADER_BYTES as usize];
    h[..2].copy_from_slice(&META_VERSION.to_be_bytes());
    h[2] = CHECKSUM_TYPE_CRC32C;
    h[3..7].copy_from_slice(&(BYTES_PER_CHECKSUM as u32).to_be_bytes());
    h
}

/// Read and check the header of a meta file.
pub fn check_header(f: &mut std::fs::File) -> io::Result<()> {
    let mut h = [0u8; META_HEADER_BYTES as usize];
    f.seek(SeekFrom::Start(0))?;
    f.read_exact(&mut h)?;
    if h != header() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("meta file header {h:02x?} is not version 1 CRC32C/512"),
        ));
    }
    Ok(())
}

/// Offset in the meta file of the checksum of the chunk holding data byte `offset`.
pub fn checksum_offset(data_offset: u64) -> u64 {
    META_HEADER_BYTES + (data_offset / BYTES_PER_CHECKSUM as u64) * CHECKSUM_SIZE_BYTES as u64
}

/// Meta file length for `data_len` bytes of data.
pub fn meta_len(data_len: u64) -> u64 {
    META_HEADER_BYTES + data_len.div_ceil(BYTES_PER_CHECKSUM as u64) * CHECKSUM_SIZE_BYTES as u64
}

/// Create a meta file with only its header.
pub fn create(path: &std::path::Path) -> io::Result<std::fs::File> {
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(&header())?;
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(header(), [0, 1, 2, 0, 0, 2, 0]);
        assert_eq!(meta_len(0), 7);
        assert_eq!(meta_len(1), 11);
        assert_eq!(meta_len(512), 11);
        assert_eq!(meta_len(513), 15);
        assert_eq!(checksum_offset(1023), 11);
    }
}
