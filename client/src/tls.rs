//! How a client verifies the members and DataNodes it talks to: TLS
//! against the cluster CA (optionally presenting a user certificate), or
//! plaintext for `--insecure` clusters; by default from the environment.

use std::path::PathBuf;

use raftfs_proto::FsError;
use raftfs_trust::{Dialer, NodeCredentials, PeerRole};

/// Environment variable naming the cluster CA certificate clients trust.
pub const CA_ENV: &str = "RAFTFS_CA";
/// Environment variable naming a user's credentials directory (`ca.crt`,
/// `node.crt`, `node.key` from `raftfs cert issue --role user`): TLS with
/// that certificate, which a `--auth strong` nameservice requires.
pub const CREDENTIALS_ENV: &str = "RAFTFS_CREDENTIALS";
/// Environment variable that, set to 1, makes clients dial in plaintext
/// (clusters run with `--insecure`).
pub const INSECURE_ENV: &str = "RAFTFS_INSECURE";

/// How a client verifies the members and DataNodes it talks to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum ClientTls {
    /// [`CA_ENV`] names the CA certificate, or [`INSECURE_ENV`]=1 asks for
    /// plaintext; with neither, connecting fails and says so.
    #[default]
    FromEnv,
    /// TLS, trusting the cluster CA certificate in this file.
    CaFile(PathBuf),
    /// TLS with a user certificate: the credentials directory it was
    /// issued into (its `ca.crt` is the CA trusted).
    Credentials(PathBuf),
    /// Plaintext, for clusters run with `--insecure`.
    Insecure,
}

/// A user's credentials directory, refused if its certificate is not a user's.
pub(crate) fn load_credentials(dir: &std::path::Path) -> Result<NodeCredentials, FsError> {
    let creds = NodeCredentials::load(dir)
        .map_err(|e| FsError::InvalidArgument(format!("the credentials in {}: {e}", dir.display())))?;
    if creds.identity().role != PeerRole::User {
        return Err(FsError::InvalidArgument(format!(
            "{} holds the certificate of {}, not of a user",
            dir.display(),
            creds.identity()
        )));
    }
    Ok(creds)
}

impl ClientTls {
    /// The dialer this setting asks for.
    pub fn dialer(&self) -> Result<Dialer, FsError> {
        let trust = |p: &std::path::Path| {
            Dialer::trusting(p).map_err(|e| FsError::InvalidArgument(format!("the cluster CA certificate: {e}")))
        };
        match self {
            ClientTls::Insecure => Ok(Dialer::Plaintext),
            ClientTls::CaFile(p) => trust(p),
            ClientTls::Credentials(dir) => Ok(load_credentials(dir)?.dialer()),
            ClientTls::FromEnv => {
                if std::env::var(INSECURE_ENV).is_ok_and(|v| v == "1" || v == "true") {
                    return Ok(Dialer::Plaintext);
                }
                if let Some(dir) = std::env::var_os(CREDENTIALS_ENV).filter(|d| !d.is_empty()) {
                    return Ok(load_credentials(std::path::Path::new(&dir))?.dialer());
                }
                match std::env::var_os(CA_ENV) {
                    Some(p) if !p.is_empty() => trust(std::path::Path::new(&p)),
                    _ => Err(FsError::InvalidArgument(format!(
                        "no CA certificate to verify the cluster with: set {CA_ENV} to the cluster's ca.crt \
                         (`raftfs dev` prints it), {CREDENTIALS_ENV} to a user's credentials directory, \
                         or {INSECURE_ENV}=1 for a cluster run with --insecure"
                    ))),
                }
            }
        }
    }
}
