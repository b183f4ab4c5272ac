//! Key and value encodings of the RocksDB store: big-endian ids so one
//! directory's entries are one contiguous key range in name order, a
//! sortable time prefix for the retry index, and versioned values whose
//! decoding failures are [`StoreError::Corrupt`], never panics.

use super::super::{RetryKey, StoreError};
use super::{CF_LEASE_FILE, CF_RETRY, VALUE_FORMAT_V1};
use crate::inode::InodeId;

pub(super) fn io(e: rocksdb::Error) -> StoreError {
    StoreError::Io(e.into_string())
}

pub(super) fn encode_value<T: serde::Serialize>(v: &T) -> Vec<u8> {
    let mut out = vec![VALUE_FORMAT_V1];
    bincode::serialize_into(&mut out, v).expect("serialize an in-memory record");
    out
}

pub(super) fn decode_value<T: serde::de::DeserializeOwned>(table: &'static str, bytes: &[u8]) -> Result<T, StoreError> {
    match bytes.split_first() {
        Some((&VALUE_FORMAT_V1, rest)) => bincode::deserialize(rest).map_err(|e| StoreError::Corrupt {
            table,
            detail: e.to_string(),
        }),
        Some((v, _)) => Err(StoreError::Corrupt {
            table,
            detail: format!("unknown value format {v}"),
        }),
        None => Err(StoreError::Corrupt {
            table,
            detail: "empty value".into(),
        }),
    }
}

pub(super) fn dentry_key(parent: InodeId, name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(8 + name.len());
    k.extend_from_slice(&parent.to_be_bytes());
    k.extend_from_slice(name.as_bytes());
    k
}

pub(super) fn retry_key(key: &RetryKey) -> Vec<u8> {
    // client ids never contain NUL (the server checks), so NUL separates.
    let mut k = Vec::with_capacity(key.0.len() + 9);
    k.extend_from_slice(key.0.as_bytes());
    k.push(0);
    k.extend_from_slice(&key.1.to_be_bytes());
    k
}

/// Sortable time prefix: i64 with the sign bit flipped, big-endian.
pub(super) fn time_key(time_ms: i64, key: &RetryKey) -> Vec<u8> {
    let mut k = ((time_ms as u64) ^ (1 << 63)).to_be_bytes().to_vec();
    k.extend_from_slice(&retry_key(key));
    k
}

pub(super) fn parse_retry_key(k: &[u8]) -> Result<RetryKey, StoreError> {
    let split = k
        .len()
        .checked_sub(9)
        .filter(|i| k[*i] == 0)
        .ok_or(StoreError::Corrupt {
            table: CF_RETRY,
            detail: "bad key".into(),
        })?;
    let client = String::from_utf8(k[..split].to_vec()).map_err(|e| StoreError::Corrupt {
        table: CF_RETRY,
        detail: e.to_string(),
    })?;
    Ok((client, parse_id(CF_RETRY, &k[split + 1..])?))
}

/// Key of a lease-file row: holder, NUL, inode id big-endian (holders never contain NUL).
pub(super) fn lease_file_key(holder: &str, inode: InodeId) -> Vec<u8> {
    let mut k = Vec::with_capacity(holder.len() + 9);
    k.extend_from_slice(holder.as_bytes());
    k.push(0);
    k.extend_from_slice(&inode.to_be_bytes());
    k
}

pub(super) fn parse_lease_file_key(k: &[u8]) -> Result<(String, InodeId), StoreError> {
    let (holder, inode) = parse_retry_key(k).map_err(|_| StoreError::Corrupt {
        table: CF_LEASE_FILE,
        detail: "bad key".into(),
    })?;
    Ok((holder, inode))
}

pub(super) fn parse_id(table: &'static str, bytes: &[u8]) -> Result<u64, StoreError> {
    <[u8; 8]>::try_from(bytes)
        .map(u64::from_be_bytes)
        .map_err(|_| StoreError::Corrupt {
            table,
            detail: format!("id of {} bytes", bytes.len()),
        })
}
