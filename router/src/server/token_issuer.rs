//! The routers' delegation tokens at run time (RBF's
//! `RouterSecurityManager`): the table is
//! [`raftfs_federation::router_tokens`], replicated by the routers' group;
//! here is what a router does with it.
//!
//! * **Issue, renew, cancel** (`getDelegationToken` and friends, over the
//!   client protocol and WebHDFS): the router that receives the call
//!   authenticates the caller, builds the [`TokenCommand`] with its clock's
//!   time, and proposes it if it leads the group, or sends it to the
//!   leader over `RouterAdmin.Change` (which takes token commands from
//!   router certificates only). A token is issued or renewed only for a
//!   caller a user certificate authenticated, as a nameservice does.
//!   Renewing or cancelling a nameservice's token goes to that
//!   nameservice (the call router does it).
//! * **Verify**: a call that presents a token with the routers' service is
//!   checked against this router's applied table (a router that has not
//!   applied the token's entry yet waits up to [`TOKEN_APPLY_WAIT_MS`]);
//!   the call then goes on as the token's owner with the token removed,
//!   which a member believes of a router's certificate as it believes the
//!   user a router names for any caller. A nameservice's token passes
//!   through for that nameservice to check.
//! * **Keys and sweeps**: the leader adds a master key before the first
//!   token and whenever the newest is older than the key update interval,
//!   and every [`TOKEN_SWEEP_INTERVAL_MS`] rolls the key and drops expired
//!   tokens and keys ([`start_token_keeper`]).
//!
//! Caveats: a token command retried after its answer was lost may issue a
//! second token (harmless: it expires) or answer a second cancel with
//! "Token not found".

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use openraft::async_runtime::WatchReceiver;
use openraft::ServerState;
use raftfs_federation::router_tokens::{RouterTokens, TokenAnswer, TokenCommand, ROUTER_TOKEN_SERVICE};
use raftfs_proto::limits::MAX_PRINCIPAL_LEN_BYTES;
use raftfs_proto::{codec, pb, DelegationKey, DelegationToken, DelegationTokenIdentifier, FsError, Op, OpResult};
use raftfs_trust::delegation::new_delegation_secret;

use super::node::RouterNode;
use crate::admin_client::RouterAdminClient;
use crate::federation::FederationChange;
use crate::group::FederationCommand;
use crate::RouterError;

/// How often the leader rolls the master key and drops expired tokens.
pub const TOKEN_SWEEP_INTERVAL_MS: u64 = 60_000;
/// How long a router waits to apply a token it has not seen yet (one
/// issued a moment ago through another router).
pub const TOKEN_APPLY_WAIT_MS: u64 = 2_000;
/// How often it looks again meanwhile.
const TOKEN_APPLY_POLL_MS: u64 = 50;

/// This router's clock, Unix ms.
fn now_ms() -> i64 {
    raftfs_trust::clock::wall_clock_ms()
}

fn router_error(e: RouterError) -> FsError {
    match e {
        RouterError::Fs(e) => e,
        other => FsError::InvalidArgument(other.to_string()),
    }
}

/// The refusal of a token issue or renewal for a caller no user
/// certificate authenticated (a token cannot beget tokens).
pub fn certificate_needed() -> FsError {
    FsError::AccessControl(
        "Delegation Token can be issued or renewed only with a user certificate (RAFTFS_CREDENTIALS)".into(),
    )
}

/// Whether `op` is a token op the routers answer themselves: every
/// `getDelegationToken`, and renew/cancel of a token the routers issued.
pub fn is_router_token_op(op: &Op) -> bool {
    match op {
        Op::GetDelegationToken { .. } => true,
        Op::RenewDelegationToken { token, .. } | Op::CancelDelegationToken { token } => {
            token.service == ROUTER_TOKEN_SERVICE
        }
        _ => false,
    }
}

impl RouterNode {
    fn leads(&self) -> bool {
        self.raft.metrics().borrow_watched().state == ServerState::Leader
    }

    /// The name this router gives the commands it proposes.
    fn proposer(&self) -> String {
        format!("router-{}", self.version.member_id)
    }

    /// Run `cmd` on the routers' token table: proposed here when this
    /// router leads, else sent to the leader.
    pub async fn token_command(&self, cmd: TokenCommand) -> Result<TokenAnswer, FsError> {
        if self.leads() {
            return self.propose_tokens(cmd).await;
        }
        let leader = self.raft.metrics().borrow_watched().current_leader;
        let Some(addr) = leader.and_then(|id| self.addr_of(id)) else {
            return Err(FsError::Unavailable(
                "the routers have no leader to run the token command: try again".into(),
            ));
        };
        let client = RouterAdminClient::new(vec![addr], self.security.dialer.clone()).map_err(router_error)?;
        client.token_command(&self.proposer(), cmd).await.map_err(router_error)
    }

    /// Propose `cmd` (this router leads; else `NotLeader`): a new token
    /// first gets a current master key.
    pub async fn propose_tokens(&self, cmd: TokenCommand) -> Result<TokenAnswer, FsError> {
        if !self.leads() {
            let leader = self.raft.metrics().borrow_watched().current_leader;
            let leader = leader.and_then(|id| {
                self.addr_of(id)
                    .map(|addr| raftfs_proto::LeaderHint { member_id: id, addr })
            });
            return Err(FsError::NotLeader { leader });
        }
        if matches!(cmd, TokenCommand::Issue { .. }) {
            self.ensure_token_key().await?;
        }
        self.write_tokens(cmd).await
    }

    async fn write_tokens(&self, cmd: TokenCommand) -> Result<TokenAnswer, FsError> {
        let entry = FederationCommand {
            change: FederationChange::DelegationTokens(cmd),
            by: self.proposer(),
        };
        let r = self
            .raft
            .client_write(entry)
            .await
            .map_err(raftfs_raft::client_errors::write_error)?;
        r.data
            .tokens
            .unwrap_or_else(|| Err(FsError::Internal("a token command without an answer".into())))
    }

    /// A master key current now: when the newest is older than the key
    /// update interval (or there is none), a new one is proposed, living
    /// for an interval plus a token's max lifetime.
    async fn ensure_token_key(&self) -> Result<(), FsError> {
        let _one_at_a_time = self.token_key_lock.lock().await;
        let t = self.delegation;
        let now = now_ms();
        let newest = self
            .view()
            .with_tokens(|tokens| tokens.newest_key().map(|k| (k.key_id, k.created_ms)));
        if let Some((_, created)) = newest {
            if created + t.key_update_interval_ms as i64 > now {
                return Ok(());
            }
        }
        let key = DelegationKey {
            key_id: newest.map_or(1, |(id, _)| id + 1),
            created_ms: now,
            expiry_ms: now + (t.key_update_interval_ms + t.max_lifetime_ms) as i64,
            secret: new_delegation_secret(),
        };
        tracing::info!(key_id = key.key_id, "new delegation token master key");
        self.write_tokens(TokenCommand::AddKey { key, now_ms: now })
            .await
            .map(|_| ())
    }

    /// What the leader does every sweep: a current key, expired tokens
    /// and keys dropped.
    async fn sweep_tokens(&self) -> Result<(), FsError> {
        self.ensure_token_key().await?;
        let now = now_ms();
        let (seqs, keys_expired) = self.view().with_tokens(|t| t.expired(now));
        if !seqs.is_empty() || keys_expired {
            tracing::info!(tokens = seqs.len(), "dropping expired delegation tokens");
            self.write_tokens(TokenCommand::Expire { seqs, now_ms: now }).await?;
        }
        Ok(())
    }

    /// The identifier of `token` (the routers' own), if it is live; a
    /// router that has not applied it yet waits up to [`TOKEN_APPLY_WAIT_MS`].
    pub async fn verify_router_token(&self, token: &DelegationToken) -> Result<DelegationTokenIdentifier, FsError> {
        self.when_applied(|t| t.verify(token, now_ms())).await
    }

    /// The password of live routers' token `id` (a Hadoop client proves it
    /// holds it, SASL DIGEST-MD5), waiting as [`Self::verify_router_token`] does.
    pub async fn router_token_password(&self, id: &DelegationTokenIdentifier) -> Result<Vec<u8>, FsError> {
        self.when_applied(|t| t.password(id, now_ms())).await
    }

    /// `check` against the routers' tokens; a token not found is looked
    /// for again (off the leader, for [`TOKEN_APPLY_WAIT_MS`]) in case this
    /// router has not applied its issue yet.
    async fn when_applied<T>(&self, check: impl Fn(&RouterTokens) -> Result<T, FsError>) -> Result<T, FsError> {
        let deadline = Instant::now() + Duration::from_millis(TOKEN_APPLY_WAIT_MS);
        loop {
            match self.view().with_tokens(&check) {
                Err(FsError::AccessControl(m))
                    if m.contains("can't be found") && !self.leads() && Instant::now() < deadline =>
                {
                    tokio::time::sleep(Duration::from_millis(TOKEN_APPLY_POLL_MS)).await;
                }
                r => return r,
            }
        }
    }

    /// Check a routers' token the call `ctx` presents: the call then acts
    /// for the token's owner and carries no token. `Ok(true)` when a
    /// routers' token authenticated it; `Ok(false)` when it presents none
    /// or a nameservice's (left for that nameservice to check).
    pub async fn resolve_router_token(&self, ctx: &mut pb::CallContext) -> Result<bool, FsError> {
        if ctx.delegation_token.is_empty() {
            return Ok(false);
        }
        let token: DelegationToken = codec::decode(&ctx.delegation_token, "delegation token")?;
        if token.service != ROUTER_TOKEN_SERVICE {
            return Ok(false);
        }
        let owner = self.verify_router_token(&token).await?.owner;
        if !ctx.user.is_empty() && ctx.user != owner {
            return Err(FsError::AccessControl(format!(
                "authenticated as {owner} by delegation token, but the call claims user {:?}",
                ctx.user
            )));
        }
        ctx.user = owner;
        ctx.delegation_token.clear();
        ctx.groups.clear();
        Ok(true)
    }

    /// Run token op `op` ([`is_router_token_op`]) for `user`, whom a user
    /// certificate authenticated when `by_certificate`.
    pub async fn router_token_op(&self, user: &str, by_certificate: bool, op: &Op) -> Result<OpResult, FsError> {
        let t = self.delegation;
        let need_certificate = || {
            if by_certificate {
                Ok(())
            } else {
                Err(certificate_needed())
            }
        };
        let cmd = match op {
            Op::GetDelegationToken { renewer, .. } => {
                need_certificate()?;
                if !renewer.is_empty()
                    && (renewer.len() > MAX_PRINCIPAL_LEN_BYTES
                        || renewer.chars().any(|c| c.is_control() || c == ':' || c == '/'))
                {
                    return Err(FsError::InvalidArgument(format!("invalid renewer {renewer:?}")));
                }
                TokenCommand::Issue {
                    owner: user.to_string(),
                    renewer: renewer.clone(),
                    max_lifetime_ms: t.max_lifetime_ms,
                    renew_interval_ms: t.renew_interval_ms,
                    now_ms: now_ms(),
                }
            }
            Op::RenewDelegationToken { token, .. } => {
                need_certificate()?;
                TokenCommand::Renew {
                    token: token.clone(),
                    user: user.to_string(),
                    renew_interval_ms: t.renew_interval_ms,
                    now_ms: now_ms(),
                }
            }
            Op::CancelDelegationToken { token } => TokenCommand::Cancel {
                token: token.clone(),
                user: user.to_string(),
                superuser: user == self.version.superuser,
            },
            other => {
                return Err(FsError::Internal(format!(
                    "{} is not a token op of the routers",
                    other.name()
                )))
            }
        };
        match self.token_command(cmd).await? {
            TokenAnswer::Token(token) => Ok(OpResult::DelegationToken(token)),
            TokenAnswer::Expiry(ms) => Ok(OpResult::Expiry(ms)),
            TokenAnswer::Done => Ok(OpResult::Unit),
        }
    }
}

/// Start the leader's key rolls and sweeps on `node` (a task that ends
/// when the node is dropped or shut down).
pub fn start_token_keeper(node: &Arc<RouterNode>) {
    let weak: Weak<RouterNode> = Arc::downgrade(node);
    let task = tokio::spawn(async move {
        loop {
            tokio::time::sleep(Duration::from_millis(TOKEN_SWEEP_INTERVAL_MS)).await;
            let Some(node) = weak.upgrade() else { return };
            if node.leads() {
                if let Err(e) = node.sweep_tokens().await {
                    tracing::warn!(error = %e, "delegation token sweep failed; trying again later");
                }
            }
        }
    });
    node.add_task(task);
}
