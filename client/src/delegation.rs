//! Delegation tokens on the client (HDFS `getDelegationToken`,
//! `renewDelegationToken`, `cancelDelegationToken`, and the token file
//! `HADOOP_TOKEN_FILE_LOCATION` names).
//!
//! A client authenticated by a user certificate asks for a token and hands
//! it (a file, `raftfs fetchdt`) to a process that has no certificate: with
//! [`DelegationTokenSource`] set, that process's calls carry the token and
//! act as its owner, also on a `--auth strong` nameservice. A token is kept
//! in the nameservice's replicated state, so it outlives a failover, and it
//! expires unless its renewer renews it.

use std::path::{Path, PathBuf};

use raftfs_proto::{DelegationToken, FsError, Op, OpResult};

use crate::fs::FileSystem;

/// Environment variable naming a delegation token file (from `raftfs fetchdt`).
pub const DELEGATION_TOKEN_ENV: &str = "RAFTFS_DELEGATION_TOKEN";
/// Largest token file read, bytes.
pub const MAX_TOKEN_FILE_BYTES: u64 = 64 * 1024;

/// Which delegation token a client's calls carry, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum DelegationTokenSource {
    /// The file [`DELEGATION_TOKEN_ENV`] names, if it is set.
    #[default]
    FromEnv,
    /// No token.
    None,
    /// This token file.
    File(PathBuf),
    /// This token.
    Token(DelegationToken),
}

/// Read a token file (the token's URL-safe text, as `raftfs fetchdt` writes it).
pub fn read_token_file(path: &Path) -> Result<DelegationToken, FsError> {
    let bad = |e: String| FsError::InvalidArgument(format!("delegation token file {}: {e}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if meta.len() > MAX_TOKEN_FILE_BYTES {
        return Err(bad(format!("larger than {MAX_TOKEN_FILE_BYTES} bytes")));
    }
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    DelegationToken::decode_url(&text).map_err(|e| bad(e.to_string()))
}

/// Write `token` to `path` (mode 0600: it is a credential).
pub fn write_token_file(path: &Path, token: &DelegationToken) -> Result<(), FsError> {
    write_credential_file(path, format!("{}\n", token.encode_url()?).as_bytes())
}

/// Write `bytes` to `path`, replacing it, readable by its owner only
/// (mode 0600: a credential), and flushed to disk.
pub fn write_credential_file(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let bad = |e: std::io::Error| FsError::InvalidArgument(format!("write {}: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(bad)?;
    f.write_all(bytes).and_then(|()| f.sync_all()).map_err(bad)
}

impl DelegationTokenSource {
    /// The token this source names, if any.
    pub fn resolve(&self) -> Result<Option<DelegationToken>, FsError> {
        match self {
            DelegationTokenSource::None => Ok(None),
            DelegationTokenSource::Token(t) => Ok(Some(t.clone())),
            DelegationTokenSource::File(p) => read_token_file(p).map(Some),
            DelegationTokenSource::FromEnv => match std::env::var_os(DELEGATION_TOKEN_ENV) {
                Some(p) if !p.is_empty() => read_token_file(Path::new(&p)).map(Some),
                _ => Ok(None),
            },
        }
    }
}

impl FileSystem {
    /// A delegation token for this client's user, renewable by `renewer`
    /// (empty: the user). The nameservice issues one only to a caller
    /// authenticated by a user certificate.
    pub async fn get_delegation_token(&self, renewer: &str) -> Result<DelegationToken, FsError> {
        let op = Op::GetDelegationToken {
            renewer: renewer.to_string(),
            max_lifetime_ms: 0,
            renew_interval_ms: 0,
        };
        match self.call(op).await? {
            OpResult::DelegationToken(t) => Ok(t),
            other => Err(FsError::Internal(format!("getDelegationToken answered {other:?}"))),
        }
    }

    /// Renew `token` (as its renewer): its new expiry, Unix ms.
    pub async fn renew_delegation_token(&self, token: &DelegationToken) -> Result<i64, FsError> {
        let op = Op::RenewDelegationToken {
            token: token.clone(),
            renew_interval_ms: 0,
        };
        match self.call(op).await? {
            OpResult::Expiry(ms) => Ok(ms),
            other => Err(FsError::Internal(format!("renewDelegationToken answered {other:?}"))),
        }
    }

    /// Revoke `token` (as its owner or renewer).
    pub async fn cancel_delegation_token(&self, token: &DelegationToken) -> Result<(), FsError> {
        self.call(Op::CancelDelegationToken { token: token.clone() })
            .await
            .map(|_| ())
    }
}
