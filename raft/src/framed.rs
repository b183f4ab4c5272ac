//! Framed files: a small file whose body is checked whole before it is
//! trusted. Layout: 8-byte magic, CRC32C of the body (u32 LE), body length
//! (u64 LE), body. Written with one fsync; read back whole, with the length
//! bounded by the caller, so a torn or corrupt file is an `InvalidData`
//! error naming it, never a partial read. Used for snapshot manifests and
//! the memory store's image files.

use std::io::{self, Write};
use std::path::Path;

/// Magic, CRC32C and length in front of a framed file's body.
const FRAME_HEADER_BYTES: usize = 8 + 4 + 8;

/// Write `body` to the new file `path` framed as `magic`, CRC32C (u32 LE),
/// length (u64 LE), body; synced.
pub fn write_framed(path: &Path, magic: &[u8; 8], body: &[u8]) -> io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    f.write_all(magic)?;
    f.write_all(&crc32c::crc32c(body).to_le_bytes())?;
    f.write_all(&(body.len() as u64).to_le_bytes())?;
    f.write_all(body)?;
    f.sync_all()
}

/// Read the file `path` written by [`write_framed`] and return its body once
/// the magic, the length (at most `max_bytes`) and the CRC32C check out; a
/// mismatch is `InvalidData` naming the file.
pub fn read_framed(path: &Path, magic: &[u8; 8], max_bytes: u64) -> io::Result<Vec<u8>> {
    let mut bytes = std::fs::read(path)?;
    let bad = |m: String| io::Error::new(io::ErrorKind::InvalidData, format!("{}: {m}", path.display()));
    if bytes.len() < FRAME_HEADER_BYTES || &bytes[..8] != magic {
        return Err(bad("bad magic or truncated header".into()));
    }
    let crc = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
    let len = u64::from_le_bytes(bytes[12..20].try_into().expect("8 bytes"));
    let body_len = (bytes.len() - FRAME_HEADER_BYTES) as u64;
    if len > max_bytes || len != body_len {
        return Err(bad(format!(
            "body length {len} does not match the {body_len} bytes present"
        )));
    }
    let actual = crc32c::crc32c(&bytes[FRAME_HEADER_BYTES..]);
    if actual != crc {
        return Err(bad(format!(
            "checksum mismatch (stored {crc:08x}, computed {actual:08x})"
        )));
    }
    bytes.drain(..FRAME_HEADER_BYTES);
    Ok(bytes)
}

/// fsync a directory, so the names in it are durable.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}
