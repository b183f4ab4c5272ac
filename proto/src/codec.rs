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

/// The `CallReply` of a call's `result` at log index `index`: the result
/// encoded (an `OpResult` that cannot be encoded becomes the `Internal`
/// error it is), and the block access tokens of the blocks it names
/// beside it.
pub fn call_reply(result: &Result<crate::OpResult, FsError>, index: u64) -> crate::pb::CallReply {
    use crate::BlockTokenCarrier;
    let tokens = match result {
        Ok(r) => r.block_tokens(),
        Err(_) => Vec::new(),
    };
    let block_tokens_bin = if tokens.is_empty() {
        Vec::new()
    } else {
        encode(&tokens).unwrap_or_default()
    };
    let result_bin = encode(result).unwrap_or_else(|e| {
        encode(&Err::<crate::OpResult, FsError>(FsError::Internal(format!(
            "encode reply: {e}"
        ))))
        .expect("an Internal error encodes")
    });
    crate::pb::CallReply {
        result_bin,
        index,
        block_tokens_bin,
    }
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
