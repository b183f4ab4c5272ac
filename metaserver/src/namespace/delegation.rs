//! Delegation tokens in the replicated state (HDFS
//! `DelegationTokenSecretManager` with its state in the edit log): the
//! master keys and a record of every live token are namespace rows, so a
//! token issued by one leader is renewed, cancelled and honoured by the
//! next.
//!
//! Rows (meta table):
//! - `dt.keys`: every master key (a short list, bincode);
//! - `dt.token/<sequence number, 20 digits>`: one live token's identifier
//!   and current expiry;
//! - `dt.next_seq`: the next sequence number.
//!
//! The rules (what issuing, verifying, renewing, cancelling and expiring
//! accept and change) are `raftfs_trust::token_table`'s, shared with the
//! routers' own tokens; this module keeps their table in namespace rows.
//!
//! Planning is deterministic: times are the entry's log time, the secret of
//! a new key comes in its op (the leader drew it), and a password is the
//! HMAC of the identifier (`raftfs_trust::delegation`), the same on every
//! replica. Renewals take the later expiry and a renewal of a token
//! cancelled meanwhile changes nothing, so concurrent plans on the leader
//! commute; sequence numbers come from the leader's counter like inode ids.

use raftfs_proto::{DelegationKey, DelegationToken, DelegationTokenIdentifier, FsError, OpResult};
use raftfs_trust::token_table::{self, TokenCaller, TokenChange, TokenLifetimes, TokenTableView};

use super::delta::Mutation;
use super::plan::Planner;
use crate::store::{ReadView, StoreError};

pub use raftfs_trust::token_table::{TokenRecord, MAX_DELEGATION_KEYS, MAX_DELEGATION_TOKENS, MAX_TOKENS_PER_EXPIRY};

/// Meta row of the master keys.
pub const META_DELEGATION_KEYS: &str = "dt.keys";
/// Meta row of the number of live tokens.
pub const META_DELEGATION_LIVE: &str = "dt.live";
/// Meta row of the next token sequence number.
pub const META_DELEGATION_NEXT_SEQ: &str = "dt.next_seq";
/// Prefix of the token rows.
pub const META_DELEGATION_TOKEN_PREFIX: &str = "dt.token/";

pub fn token_key(seq: u64) -> String {
    format!("{META_DELEGATION_TOKEN_PREFIX}{seq:020}")
}

fn corrupt(what: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt {
        table: "meta",
        detail: format!("{what}: {e}"),
    }
}

/// Every master key, oldest first.
pub fn delegation_keys<V: ReadView + ?Sized>(view: &V) -> Result<Vec<DelegationKey>, StoreError> {
    match view.meta(META_DELEGATION_KEYS)? {
        Some(raw) => bincode::deserialize(&raw).map_err(|e| corrupt(META_DELEGATION_KEYS, e)),
        None => Ok(Vec::new()),
    }
}

/// A token row's record.
pub fn decode_token_row(raw: &[u8]) -> Result<TokenRecord, StoreError> {
    bincode::deserialize(raw).map_err(|e| corrupt("delegation token", e))
}

/// The record of live token `seq`.
pub fn token_record<V: ReadView + ?Sized>(view: &V, seq: u64) -> Result<Option<TokenRecord>, StoreError> {
    view.meta(&token_key(seq))?
        .map(|raw| decode_token_row(&raw))
        .transpose()
}

/// Tokens live now.
pub fn live_tokens<V: ReadView + ?Sized>(view: &V) -> Result<u64, StoreError> {
    Ok(super::read_optional_counter(view, META_DELEGATION_LIVE)?.unwrap_or(0))
}

/// The next sequence number (1 in a namespace that never issued one).
pub fn next_sequence_number<V: ReadView + ?Sized>(view: &V) -> Result<u64, StoreError> {
    Ok(super::read_optional_counter(view, META_DELEGATION_NEXT_SEQ)?.unwrap_or(1))
}

/// The namespace's token rows, as the token rules read them.
struct NamespaceTokens<'a, V: ?Sized>(&'a V);

impl<V: ReadView + ?Sized> TokenTableView for NamespaceTokens<'_, V> {
    fn keys(&self) -> Result<Vec<DelegationKey>, FsError> {
        Ok(delegation_keys(self.0)?)
    }

    fn record(&self, seq: u64) -> Result<Option<TokenRecord>, FsError> {
        Ok(token_record(self.0, seq)?)
    }

    fn live(&self) -> Result<u64, FsError> {
        Ok(live_tokens(self.0)?)
    }
}

/// The identifier `token` carries, if it is a live token of this
/// namespace with the right password at `now_ms`; else why not (HDFS's
/// `InvalidToken` texts). What a member checks when a call presents a token.
pub fn verify<V: ReadView + ?Sized>(
    view: &V,
    token: &DelegationToken,
    now_ms: i64,
) -> Result<DelegationTokenIdentifier, FsError> {
    token_table::verify(&NamespaceTokens(view), token, now_ms)
}

/// The password of live token `id` (for Hadoop's SASL DIGEST-MD5, where
/// the client proves it holds it), refused as [`verify`] refuses.
pub fn password<V: ReadView + ?Sized>(
    view: &V,
    id: &DelegationTokenIdentifier,
    now_ms: i64,
) -> Result<Vec<u8>, FsError> {
    token_table::password(&NamespaceTokens(view), id, now_ms)
}

/// The mutation that makes `change`.
fn mutation(change: TokenChange) -> Mutation {
    match change {
        TokenChange::Put(rec) => Mutation::PutDelegationToken(rec),
        TokenChange::Renew {
            sequence_number,
            expiry_ms,
        } => Mutation::RenewDelegationToken {
            sequence_number,
            expiry_ms,
        },
        TokenChange::Delete { sequence_number } => Mutation::DeleteDelegationToken { sequence_number },
        TokenChange::SetKeys(keys) => Mutation::SetDelegationKeys(keys),
    }
}

impl<V: ReadView + ?Sized> Planner<'_, V> {
    fn token_caller(&self) -> TokenCaller<'_> {
        TokenCaller {
            user: &self.ctx.user,
            superuser: self.caller.superuser,
        }
    }

    pub(crate) fn get_delegation_token(
        &mut self,
        renewer: &str,
        max_lifetime_ms: u64,
        renew_interval_ms: u64,
    ) -> Result<OpResult, FsError> {
        if !renewer.is_empty() {
            super::check_principal(renewer)?;
        }
        let (leader, view) = (self.leader, self.view);
        let seq = || match leader {
            Some(env) => Ok(env.ids.delegation_seq()),
            None => Ok(next_sequence_number(view)?),
        };
        let service = super::format_info(self.view)?
            .map(|f| f.nameservice)
            .unwrap_or_default();
        let lifetimes = TokenLifetimes {
            max_lifetime_ms,
            renew_interval_ms,
        };
        let (token, change) = token_table::issue(
            &NamespaceTokens(self.view),
            self.token_caller(),
            renewer,
            seq,
            &service,
            self.time,
            lifetimes,
        )?;
        let seq = token.identifier.sequence_number;
        self.muts.push(mutation(change));
        self.muts.push(Mutation::AdvanceDelegationSeq(seq + 1));
        Ok(OpResult::DelegationToken(token))
    }

    pub(crate) fn renew_delegation_token(
        &mut self,
        token: &DelegationToken,
        renew_interval_ms: u64,
    ) -> Result<OpResult, FsError> {
        let (expiry_ms, change) = token_table::renew(
            &NamespaceTokens(self.view),
            self.token_caller(),
            token,
            self.time,
            renew_interval_ms,
        )?;
        self.muts.push(mutation(change));
        Ok(OpResult::Expiry(expiry_ms))
    }

    pub(crate) fn cancel_delegation_token(&mut self, token: &DelegationToken) -> Result<OpResult, FsError> {
        let change = token_table::cancel(&NamespaceTokens(self.view), self.token_caller(), token)?;
        self.muts.push(mutation(change));
        Ok(OpResult::Unit)
    }

    pub(crate) fn add_delegation_key(&mut self, key: &DelegationKey) -> Result<OpResult, FsError> {
        self.caller.require_superuser(" to add a delegation key")?;
        let change = token_table::add_key(&NamespaceTokens(self.view), key, self.time)?;
        self.muts.push(mutation(change));
        Ok(OpResult::Unit)
    }

    pub(crate) fn expire_delegation_tokens(&mut self, seqs: &[u64]) -> Result<OpResult, FsError> {
        self.caller.require_superuser(" to expire delegation tokens")?;
        let changes = token_table::expire(&NamespaceTokens(self.view), seqs, self.time)?;
        self.muts.extend(changes.into_iter().map(mutation));
        Ok(OpResult::Unit)
    }
}
