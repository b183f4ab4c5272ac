//! Bounded bincode encoding of the serde types carried inside protobuf
//! envelopes. Decoding never panics: garbage or an oversized payload comes
//! back as [`FsError::InvalidArgument`].

use bincode::Options;
use serde::{de::DeserializeOwned, Serialize};

use crate::{limits::MAX_RPC_BYTES, FsError};

fn options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(MAX_RPC_BYTES as u64)
        .reject_trailing_bytes()
}

/// Encode `value`. Fails only if the value is larger than [`MAX_RPC_BYTES`].
pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, FsError> {
    options()
        .serialize(value)
        .map_err(|e| FsError::InvalidArgument(format!("encode message: {e}")))
}

/// Decode a `T` from `bytes`; `what` names the payload in the error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, FsError> {
    options()
        .deserialize(bytes)
        .map_err(|e| FsError::InvalidArgument(format!("malformed {what}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    #[test]
    fn garbage_is_a_typed_error() {
        let err = decode::<Op>(&[0xff, 0xff, 0xff, 0xff, 1, 2, 3], "op").unwrap_err();
        assert!(matches!(err, FsError::InvalidArgument(_)), "{err:?}");
        let err = decode::<Op>(&[], "op").unwrap_err();
        assert!(matches!(err, FsError::InvalidArgument(_)), "{err:?}");
    }

    #[test]
    fn huge_length_prefix_is_refused_without_allocating() {
        // Variant 0 (Mkdirs) followed by a string length of 2^62.
        let mut bytes = vec![0, 0, 0, 0];
        bytes.extend_from_slice(&(1u64 << 62).to_le_bytes());
        let err = decode::<Op>(&bytes, "op").unwrap_err();
        assert!(matches!(err, FsError::InvalidArgument(_)), "{err:?}");
    }

    #[test]
    fn round_trip() {
        let op = Op::Delete {
            path: "/a/b".into(),
            recursive: true,
        };
        let back: Op = decode(&encode(&op).unwrap(), "op").unwrap();
        assert_eq!(op, back);
    }
}
