//! The SASL exchange of a Hadoop IPC connection (call id -33), as the
//! server's side of Hadoop's `SaslRpcClient`:
//!
//! ```text
//! SIMPLE:          NEGOTIATE ─► SUCCESS                (SIMPLE needs no more)
//! token required:  NEGOTIATE ─► NEGOTIATE [TOKEN DIGEST-MD5, challenge]
//!                  INITIATE (response) ─► SUCCESS (rspauth)   the token's owner
//! ```
//!
//! Where the service requires a token (ClientNamenodeProtocol under
//! `--auth strong`, ClientDatanodeProtocol when block tokens are on) the
//! one method offered is TOKEN: the client holds a token the service knows
//! (a delegation token, fetched by a user a certificate authenticated with
//! `raftfs fetchdt --hadoop-token-file` and read by Hadoop's clients from
//! `HADOOP_TOKEN_FILE_LOCATION`; or the block token of the block it asks
//! about) and proves it holds its password by DIGEST-MD5
//! ([`crate::digest_md5`]); the connection then acts for the token's
//! owner. A token unknown, cancelled, expired or signed by a key the
//! service does not have, a wrong proof, another method (KERBEROS is not
//! served) or a message out of order is refused with
//! `AccessControlException` and the connection closed.

use base64::Engine;

use crate::digest_md5;
use crate::ipc_service::{AuthenticatedToken, IpcService};
use crate::wire::rpc::{RpcSasl, SaslAuth, SASL_INITIATE, SASL_NEGOTIATE, SASL_SUCCESS};

/// Hadoop's names of the one method and mechanism offered where a token is required.
pub const TOKEN_METHOD: &str = "TOKEN";
pub const DIGEST_MECHANISM: &str = "DIGEST-MD5";

/// Where a connection's SASL exchange is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaslExchange {
    /// Waiting for the client's NEGOTIATE; `strong`: TOKEN is required.
    Negotiate { strong: bool },
    /// The TOKEN challenge with this nonce was sent; waiting for INITIATE.
    Initiated { nonce: String },
    /// Over: SIMPLE (the context names the user), or TOKEN for this owner.
    Done {
        token: Option<(String, AuthenticatedToken)>,
    },
}

/// What one SASL message leads to.
pub struct SaslStep {
    pub answer: RpcSasl,
    pub next: SaslExchange,
}

fn message(state: i32, token: Option<Vec<u8>>, auths: Vec<SaslAuth>) -> RpcSasl {
    RpcSasl {
        version: None,
        state,
        token,
        auths,
    }
}

impl SaslExchange {
    /// Whether the exchange is over (no more SASL messages are taken).
    pub fn is_done(&self) -> bool {
        matches!(self, SaslExchange::Done { .. })
    }

    /// Take the client's message `m`; the answer and the next state, or why
    /// the connection is refused.
    pub async fn step(&self, m: &RpcSasl, service: &dyn IpcService) -> Result<SaslStep, String> {
        match (self, m.state) {
            (SaslExchange::Negotiate { strong: false }, SASL_NEGOTIATE) => Ok(SaslStep {
                answer: message(SASL_SUCCESS, None, Vec::new()),
                next: SaslExchange::Done { token: None },
            }),
            (SaslExchange::Negotiate { strong: true }, SASL_NEGOTIATE) => {
                let nonce = digest_md5::new_nonce();
                let offer = SaslAuth {
                    method: TOKEN_METHOD.into(),
                    mechanism: DIGEST_MECHANISM.into(),
                    protocol: Some(digest_md5::PROTOCOL.into()),
                    server_id: Some(digest_md5::SERVER_ID.into()),
                    challenge: Some(digest_md5::challenge(&nonce)),
                };
                Ok(SaslStep {
                    answer: message(SASL_NEGOTIATE, None, vec![offer]),
                    next: SaslExchange::Initiated { nonce },
                })
            }
            (SaslExchange::Initiated { nonce }, SASL_INITIATE) => {
                let chosen = m.auths.first().ok_or("INITIATE names no method")?;
                if chosen.method != TOKEN_METHOD || chosen.mechanism != DIGEST_MECHANISM {
                    return Err(format!(
                        "Client cannot authenticate via:[{}]; this server takes [{TOKEN_METHOD}]",
                        chosen.method
                    ));
                }
                let response = digest_md5::parse_response(m.token.as_deref().unwrap_or_default())?;
                let identifier = base64::engine::general_purpose::STANDARD
                    .decode(&response.username)
                    .map_err(|e| format!("the DIGEST-MD5 username is not base64: {e}"))?;
                let secret = service.token_secret(&identifier).await?;
                let encoded = base64::engine::general_purpose::STANDARD.encode(&secret.password);
                let rspauth = digest_md5::verify(&response, nonce, &encoded)?;
                let token = AuthenticatedToken {
                    identifier,
                    password: secret.password,
                };
                Ok(SaslStep {
                    answer: message(SASL_SUCCESS, Some(rspauth), Vec::new()),
                    next: SaslExchange::Done {
                        token: Some((secret.owner, token)),
                    },
                })
            }
            (SaslExchange::Negotiate { .. }, state) => Err(format!(
                "SASL state {state} before negotiation: the client starts with NEGOTIATE"
            )),
            (SaslExchange::Initiated { .. }, state) => Err(format!("SASL state {state} where INITIATE was expected")),
            (SaslExchange::Done { .. }, state) => Err(format!("SASL state {state} after authentication")),
        }
    }
}
