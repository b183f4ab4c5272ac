//! ClientNamenodeProtocol as an [`IpcService`]: a namespace (a member's
//! nameservice or a router's federated one) behind the IPC server.
//!
//! Under `--auth strong` a connection must authenticate with a delegation
//! token of the namespace (SASL TOKEN) and acts for its owner; under
//! `--auth simple` the connection context's user is trusted, as HDFS's
//! SIMPLE authentication trusts it.

use std::sync::Arc;

use raftfs_trust::ClientAuth;

use crate::client_protocol::{self, CLIENT_PROTOCOL};
use crate::delegation_token::decode_identifier;
use crate::ipc_service::{AnswerFuture, Call, IpcService, TokenFuture, TokenSecret};
use crate::namespace::HadoopNamespace;

/// ClientNamenodeProtocol served for `ns`.
pub struct NamenodeService {
    ns: Arc<dyn HadoopNamespace>,
    auth: ClientAuth,
}

impl NamenodeService {
    pub fn new(ns: Arc<dyn HadoopNamespace>, auth: ClientAuth) -> NamenodeService {
        NamenodeService { ns, auth }
    }
}

impl IpcService for NamenodeService {
    fn protocol(&self) -> &'static str {
        CLIENT_PROTOCOL
    }

    fn requires_token(&self) -> bool {
        self.auth == ClientAuth::Strong
    }

    fn token_secret<'a>(&'a self, identifier: &'a [u8]) -> TokenFuture<'a> {
        Box::pin(async move {
            let id = decode_identifier(identifier).map_err(|e| e.to_string())?;
            let password = self.ns.token_password(&id).await.map_err(|e| e.to_string())?;
            Ok(TokenSecret {
                owner: id.owner,
                password,
            })
        })
    }

    fn answer<'a>(&'a self, call: &'a Call<'a>, method: &'a str, request: &'a [u8]) -> AnswerFuture<'a> {
        client_protocol::answer(&*self.ns, call, method, request)
    }

    fn state_id(&self) -> Option<u64> {
        self.ns.state_id()
    }
}
