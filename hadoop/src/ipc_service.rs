//! [`IpcService`]: the one Hadoop protocol an IPC server serves on a
//! connection, and what the server hands it: the caller it authenticated
//! ([`IpcCaller`]), each call's ids ([`Call`]) and the request's bytes.
//!
//! Two services exist: ClientNamenodeProtocol on members and routers
//! ([`crate::namenode_service`]), and ClientDatanodeProtocol on DataNodes
//! (in the DataNode crate). The server does the rest the same way for
//! both: the preamble, SASL, the connection context (whose protocol must
//! be the service's), framing, bounds, errors.
//!
//! Authentication: a service that [`requires_token`](IpcService::requires_token)
//! offers only SASL TOKEN (DIGEST-MD5), and a connection then acts for the
//! owner of the token it proved it holds; the token's identifier and
//! password stay with the connection ([`IpcCaller::token`]) for a service
//! that checks what the token grants per call (a block token names one
//! block). Otherwise SIMPLE: the connection context's user is trusted.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use raftfs_proto::{CallCtx, FsError};

use crate::ids;
use crate::remote_error::RemoteError;

/// A token a connection authenticated with (SASL TOKEN): the identifier's
/// bytes as the client sent them and the password it proved it holds.
/// Its `Debug` leaves the password out.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthenticatedToken {
    pub identifier: Vec<u8>,
    pub password: Vec<u8>,
}

impl fmt::Debug for AuthenticatedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthenticatedToken")
            .field("identifier", &self.identifier)
            .field("password", &REDACTED)
            .finish()
    }
}

/// Who a connection acts for, as the server authenticated it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpcCaller {
    pub user: String,
    /// The peer's IP address (for the audit log).
    pub ip: String,
    /// The token it authenticated with (`None` under SIMPLE).
    pub token: Option<AuthenticatedToken>,
}

/// What a token identifier stands for, as the service that issued (or
/// checks) it knows: who it acts for and the password its holder must prove.
/// Its `Debug` leaves the password out.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenSecret {
    pub owner: String,
    pub password: Vec<u8>,
}

impl fmt::Debug for TokenSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSecret")
            .field("owner", &self.owner)
            .field("password", &REDACTED)
            .finish()
    }
}

/// What `Debug` shows for a password (a log line or a panic message must
/// not carry one).
const REDACTED: &str = "<redacted>";

/// Why a call got no answer message.
#[derive(Debug)]
pub enum Refusal {
    /// Answered with an exception; the connection goes on.
    Remote(RemoteError),
    /// The request message does not decode: answered with
    /// `RpcServerException` (`ERROR_RPC_SERVER`); the connection goes on.
    Undecodable(String),
}

impl From<RemoteError> for Refusal {
    fn from(e: RemoteError) -> Refusal {
        Refusal::Remote(e)
    }
}

impl From<FsError> for Refusal {
    fn from(e: FsError) -> Refusal {
        Refusal::Remote(e.into())
    }
}

/// One call: who, and its ids as Hadoop's header carries them.
pub struct Call<'a> {
    pub caller: &'a IpcCaller,
    pub rpc_client_id: &'a [u8],
    pub call_id: i32,
    /// The state the client has seen (the header's `stateId`, sent by
    /// observer-read clients; a negative one is none yet, 0).
    pub seen_state_id: Option<u64>,
}

impl Call<'_> {
    /// The call's raftfs ids, with `holder` as the client id when the
    /// method names a lease holder.
    pub(crate) fn ctx(&self, holder: Option<&str>) -> CallCtx {
        CallCtx {
            client_id: holder.map_or_else(|| ids::anonymous_client_id(self.rpc_client_id), str::to_string),
            call_id: ids::call_id(self.rpc_client_id, self.call_id),
            user: self.caller.user.clone(),
            groups: Vec::new(),
            routed_by: 0,
        }
    }
}

/// `M` from a request's bytes, or why not.
pub fn decode<M: prost::Message + Default>(bytes: &[u8]) -> Result<M, Refusal> {
    M::decode(bytes).map_err(|e| Refusal::Undecodable(format!("{}: {e}", std::any::type_name::<M>())))
}

/// [`IpcService::answer`]'s future: the answer message's bytes.
pub type AnswerFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, Refusal>> + Send + 'a>>;
/// [`IpcService::token_secret`]'s future.
pub type TokenFuture<'a> = Pin<Box<dyn Future<Output = Result<TokenSecret, String>> + Send + 'a>>;

pub trait IpcService: Send + Sync + 'static {
    /// The protocol's name, as clients declare it in the connection
    /// context and in every request header
    /// (`org.apache.hadoop.hdfs.protocol.ClientProtocol`, ...).
    fn protocol(&self) -> &'static str;

    /// Whether a connection must authenticate with a token (SASL TOKEN);
    /// SIMPLE is refused then.
    fn requires_token(&self) -> bool;

    /// The owner and password of the token whose identifier is
    /// `identifier` (the bytes the client sent), or why it is not accepted
    /// (not issued here, expired, cancelled, signed by a key not known).
    fn token_secret<'a>(&'a self, identifier: &'a [u8]) -> TokenFuture<'a>;

    /// Answer `method` of `call` with `request`'s bytes; a method the
    /// protocol does not have answers `RpcNoSuchMethodException`.
    fn answer<'a>(&'a self, call: &'a Call<'a>, method: &'a str, request: &'a [u8]) -> AnswerFuture<'a>;

    /// The state every answer's header carries (`stateId`: a member's
    /// applied log index, which observer-read clients send back); `None`
    /// from a service with no such state.
    fn state_id(&self) -> Option<u64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_leaves_passwords_out() {
        let password = b"s3cr3t-password".to_vec();
        let token = AuthenticatedToken {
            identifier: vec![1, 2, 3],
            password: password.clone(),
        };
        let caller = IpcCaller {
            user: "alice".into(),
            ip: "127.0.0.1".into(),
            token: Some(token),
        };
        let secret = TokenSecret {
            owner: "alice".into(),
            password: password.clone(),
        };
        let bytes_as_debug = format!("{password:?}");
        for shown in [format!("{caller:?}"), format!("{secret:?}"), format!("{caller:#?}")] {
            assert!(!shown.contains(&bytes_as_debug), "a password in {shown}");
            assert!(shown.contains(REDACTED), "{shown}");
        }
        assert!(format!("{caller:?}").contains("[1, 2, 3]"), "the identifier is shown");
    }
}
