//! A client of the routers' `RouterAdmin` service, for `raftfs routeradmin`
//! (and the SDK's table fetches): tries the routers in turn, follows a
//! leader hint for changes, and retries what is retryable until a deadline.

use std::time::{Duration, Instant};

use raftfs_proto::limits::MAX_RPC_BYTES;
use raftfs_proto::{codec, pb, FsError};
use raftfs_trust::{Dialer, PeerRole};
use serde::{de::DeserializeOwned, Serialize};

use crate::admin::{
    ChangeRequest, FederationReply, FederationRequest, RouterStatus, SafeModeAction, SafeModeRequest,
    MAX_FEDERATION_WAIT_MS,
};
use crate::error::RouterError;
use crate::federation::FederationChange;
use crate::router_tokens::{TokenAnswer, TokenCommand};

/// How long a call keeps trying routers before it gives up.
pub const ROUTER_CALL_DEADLINE_MS: u64 = 15_000;
/// Pause between rounds over every router.
const RETRY_PAUSE_MS: u64 = 200;
/// How long to wait for a TCP connection to a router.
const CONNECT_TIMEOUT_MS: u64 = 1_000;
/// How long one call may take, beyond a federation request's own wait.
const CALL_TIMEOUT_MS: u64 = 10_000;

#[derive(Clone, Copy)]
enum Rpc {
    Federation,
    Change,
    Status,
    SafeMode,
}

/// Routers of one cluster, by address.
pub struct RouterAdminClient {
    addrs: Vec<String>,
    dialer: Dialer,
}

fn unavailable(m: String) -> RouterError {
    RouterError::Fs(FsError::Unavailable(m))
}

impl RouterAdminClient {
    /// `addrs`: `host:port` of one or more routers.
    pub fn new(addrs: Vec<String>, dialer: Dialer) -> Result<RouterAdminClient, RouterError> {
        if addrs.is_empty() {
            return Err(RouterError::Fs(FsError::InvalidArgument("no router address".into())));
        }
        Ok(RouterAdminClient { addrs, dialer })
    }

    async fn call_one<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        addr: &str,
        rpc: Rpc,
        req: &Req,
        extra_wait: Duration,
    ) -> Result<Resp, RouterError> {
        let ep = self
            .dialer
            .endpoint(addr, PeerRole::Router)
            .map_err(|e| RouterError::Fs(FsError::InvalidArgument(format!("router {addr}: {e}"))))?
            .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
            .timeout(Duration::from_millis(CALL_TIMEOUT_MS) + extra_wait);
        let channel = ep
            .connect()
            .await
            .map_err(|e| unavailable(format!("router {addr}: {e}")))?;
        let mut c = pb::router_admin_client::RouterAdminClient::new(channel)
            .max_decoding_message_size(MAX_RPC_BYTES)
            .max_encoding_message_size(MAX_RPC_BYTES);
        let msg = pb::RouterMessage {
            data_bin: codec::encode(req)?,
        };
        let reply = match rpc {
            Rpc::Federation => c.federation(msg).await,
            Rpc::Change => c.change(msg).await,
            Rpc::Status => c.status(msg).await,
            Rpc::SafeMode => c.safe_mode(msg).await,
        }
        .map_err(|s| match s.code() {
            tonic::Code::PermissionDenied | tonic::Code::Unauthenticated => {
                RouterError::Fs(FsError::AccessControl(format!("router {addr}: {}", s.message())))
            }
            tonic::Code::InvalidArgument => {
                RouterError::Fs(FsError::InvalidArgument(format!("router {addr}: {}", s.message())))
            }
            _ => unavailable(format!("router {addr}: {}", s.message())),
        })?;
        codec::decode::<Result<Resp, RouterError>>(&reply.into_inner().data_bin, "router reply")?
    }

    /// Call the routers in turn (a leader hint first) until one answers
    /// with something final or the deadline passes.
    async fn call<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        rpc: Rpc,
        req: &Req,
        extra_wait: Duration,
    ) -> Result<Resp, RouterError> {
        let deadline = Instant::now() + Duration::from_millis(ROUTER_CALL_DEADLINE_MS) + extra_wait;
        let mut hint: Option<String> = None;
        let mut last = unavailable("no router answered".into());
        loop {
            let order: Vec<String> = hint.take().into_iter().chain(self.addrs.iter().cloned()).collect();
            for addr in order {
                match self.call_one(&addr, rpc, req, extra_wait).await {
                    Ok(r) => return Ok(r),
                    Err(RouterError::Fs(FsError::NotLeader { leader: Some(l) })) => {
                        last = RouterError::Fs(FsError::NotLeader {
                            leader: Some(l.clone()),
                        });
                        hint = Some(l.addr);
                        break;
                    }
                    Err(e) if e.is_retryable() => last = e,
                    Err(e) => return Err(e),
                }
            }
            if Instant::now() > deadline {
                return Err(last);
            }
            if hint.is_none() {
                tokio::time::sleep(Duration::from_millis(RETRY_PAUSE_MS)).await;
            }
        }
    }

    /// The federation, once past `since_version` (or after `wait_ms`).
    pub async fn federation(&self, since_version: u64, wait_ms: u64) -> Result<FederationReply, RouterError> {
        let wait_ms = wait_ms.min(MAX_FEDERATION_WAIT_MS);
        self.call(
            Rpc::Federation,
            &FederationRequest { since_version, wait_ms },
            Duration::from_millis(wait_ms),
        )
        .await
    }

    /// Make `change` as `user`; the federation's new version.
    pub async fn change(&self, user: &str, change: FederationChange) -> Result<u64, RouterError> {
        let req = ChangeRequest {
            user: user.to_string(),
            change,
        };
        self.call(Rpc::Change, &req, Duration::ZERO).await
    }

    /// The status of the router at `addr`.
    /// Have the routers' leader run token command `cmd` (a router's own
    /// call, over its certificate: the leader takes token commands from
    /// routers only). Retried as every call here is, so a command whose
    /// answer was lost may run twice (see the router's `token_issuer`).
    pub async fn token_command(&self, by: &str, cmd: TokenCommand) -> Result<TokenAnswer, RouterError> {
        let req = ChangeRequest {
            user: by.to_string(),
            change: FederationChange::DelegationTokens(cmd),
        };
        self.call(Rpc::Change, &req, Duration::ZERO).await
    }

    pub async fn status(&self, addr: &str) -> Result<RouterStatus, RouterError> {
        self.call_one(addr, Rpc::Status, &(), Duration::ZERO).await
    }

    /// Enter, leave or get the safe mode of the router at `addr` (as
    /// `user`); why it is in safe mode afterwards, or `None`.
    pub async fn safe_mode(
        &self,
        addr: &str,
        user: &str,
        action: SafeModeAction,
    ) -> Result<Option<String>, RouterError> {
        let req = SafeModeRequest {
            user: user.to_string(),
            action,
        };
        self.call_one(addr, Rpc::SafeMode, &req, Duration::ZERO).await
    }
}
