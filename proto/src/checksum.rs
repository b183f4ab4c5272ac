//! Chunk checksums of block data, as HDFS computes them: a CRC32C of every
//! 512-byte chunk (the last may be shorter), stored big-endian, 4 bytes each.
//! Writers compute them, DataNodes store and check them, readers check them
//! again end to end.
//!
//! Speed matters (every byte is checked at least twice): a chunk's CRC is a
//! dependency chain of the CPU's crc32 instruction, so on x86-64 with
//! SSE 4.2 four chunks are computed at once, one chain each, which keeps the
//! instruction's pipeline full. Elsewhere (and for a short last chunk) the
//! `crc32c` crate computes them.

use crate::datanode::{BYTES_PER_CHECKSUM, CHECKSUM_SIZE_BYTES};

/// Chunks computed side by side.
const LANES: usize = 4;

/// CRC32C of every chunk of `data`, appended to `out` big-endian.
pub fn compute_into(data: &[u8], out: &mut Vec<u8>) {
    out.reserve(data.len().div_ceil(BYTES_PER_CHECKSUM) * CHECKSUM_SIZE_BYTES);
    for_each_crc(data, |crc| out.extend_from_slice(&crc.to_be_bytes()));
}

/// CRC32C of every chunk of `data`, big-endian, concatenated.
pub fn compute(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    compute_into(data, &mut out);
    out
}

/// Check `data` (starting on a chunk boundary) against `sums`: the byte
/// offset in `data` of the first chunk that does not match, if any (0 when
/// `sums` has the wrong length).
pub fn verify(data: &[u8], sums: &[u8]) -> Result<(), usize> {
    if sums.len() != data.len().div_ceil(BYTES_PER_CHECKSUM) * CHECKSUM_SIZE_BYTES {
        return Err(0);
    }
    let mut i = 0usize;
    let mut bad = None;
    for_each_crc(data, |crc| {
        let s = &sums[i * CHECKSUM_SIZE_BYTES..(i + 1) * CHECKSUM_SIZE_BYTES];
        if bad.is_none() && crc.to_be_bytes() != s {
            bad = Some(i * BYTES_PER_CHECKSUM);
        }
        i += 1;
    });
    match bad {
        Some(at) => Err(at),
        None => Ok(()),
    }
}

/// Call `f` with the CRC32C of every chunk of `data`, in order.
fn for_each_crc(data: &[u8], mut f: impl FnMut(u32)) {
    let full = data.len() / BYTES_PER_CHECKSUM;
    let mut done = 0usize;
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        while done + LANES <= full {
            let base = done * BYTES_PER_CHECKSUM;
            // SAFETY: SSE 4.2 was detected at run time; the slice holds
            // LANES whole chunks from `base`.
            let crcs = unsafe { lanes_sse42(&data[base..base + LANES * BYTES_PER_CHECKSUM]) };
            for c in crcs {
                f(c);
            }
            done += LANES;
        }
    }
    for chunk in data[done * BYTES_PER_CHECKSUM..].chunks(BYTES_PER_CHECKSUM) {
        f(crc32c::crc32c(chunk));
    }
}

/// CRC32C of `LANES` consecutive whole chunks, computed side by side.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn lanes_sse42(data: &[u8]) -> [u32; LANES] {
    use std::arch::x86_64::_mm_crc32_u64;
    assert_eq!(data.len(), LANES * BYTES_PER_CHECKSUM, "whole chunks only");
    let word = |lane: usize, i: usize| {
        let at = lane * BYTES_PER_CHECKSUM + i;
        u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"))
    };
    let mut crc = [u32::MAX as u64; LANES];
    for i in (0..BYTES_PER_CHECKSUM).step_by(8) {
        for (lane, c) in crc.iter_mut().enumerate() {
            *c = _mm_crc32_u64(*c, word(lane, i));
        }
    }
    crc.map(|c| !(c as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_crc32c_crate_at_every_length() {
        let data: Vec<u8> = (0..20_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for len in [0, 1, 511, 512, 513, 2047, 2048, 2049, 4096, 5000, 20_000] {
            let d = &data[..len];
            let expect: Vec<u8> = d
                .chunks(BYTES_PER_CHECKSUM)
                .flat_map(|c| crc32c::crc32c(c).to_be_bytes())
                .collect();
            assert_eq!(compute(d), expect, "length {len}");
            assert_eq!(verify(d, &expect), Ok(()));
        }
        let sums = compute(&data);
        let mut bad = data.clone();
        bad[3 * 512 + 7] ^= 1;
        assert_eq!(verify(&bad, &sums), Err(3 * 512));
        assert_eq!(verify(&data, &sums[4..]), Err(0), "wrong checksum count");
        // The standard check value of CRC32C.
        assert_eq!(compute(b"123456789"), 0xE306_9283u32.to_be_bytes());
    }
}
