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
//! Planning is deterministic: times are the entry's log time, the secret of
//! a new key comes in its op (the leader drew it), and a password is the
//! HMAC of the identifier (`raftfs_trust::delegation`), the same on every
//! replica. Renewals take the later expiry and a renewal of a token
//! cancelled meanwhile changes nothing, so concurrent plans on the leader
//! commute; sequence numbers come from the leader's counter like inode ids.

use raftfs_proto::{DelegationKey, DelegationToken, DelegationTokenIdentifier, FsError, OpResult};
use raftfs_trust::delegation::{delegation_password, delegation_password_matches, DELEGATION_KEY_SECRET_BYTES};
use serde::{Deserialize, Serialize};

use super::delta::Mutation;
use super::plan::Planner;
use crate::store::{ReadView, StoreError};

/// Meta row of the master keys.
pub const META_DELEGATION_KEYS: &str = "dt.keys";
/// Meta row of the number of live tokens.
pub const META_DELEGATION_LIVE: &str = "dt.live";
/// Meta row of the next token sequence number.
pub const META_DELEGATION_NEXT_SEQ: &str = "dt.next_seq";
/// Prefix of the token rows.
pub const META_DELEGATION_TOKEN_PREFIX: &str = "dt.token/";
/// Most master keys kept (one per update interval over a token's max
/// lifetime, 8 with HDFS's defaults, and room for shorter intervals).
pub const MAX_DELEGATION_KEYS: usize = 64;
/// Most live tokens (HDFS has no limit; a bound keeps the table and its sweep finite).
pub const MAX_DELEGATION_TOKENS: u64 = 1_000_000;
/// Most tokens one expiry entry drops.
pub const MAX_TOKENS_PER_EXPIRY: usize = 10_000;

/// One live token, as the nameservice keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    pub identifier: DelegationTokenIdentifier,
    /// Unix ms (log time) after which the token is refused.
    pub expiry_ms: i64,
}

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

/// The identifier `token` carries, if it is a live token of this
/// namespace with the right password at `now_ms`; else why not (HDFS's
/// `InvalidToken` texts). What a member checks when a call presents a token.
pub fn verify<V: ReadView + ?Sized>(
    view: &V,
    token: &DelegationToken,
    now_ms: i64,
) -> Result<DelegationTokenIdentifier, FsError> {
    let id = &token.identifier;
    let invalid = |why: String| FsError::AccessControl(format!("token ({token}) {why}"));
    let Some(rec) = token_record(view, id.sequence_number)? else {
        return Err(invalid("can't be found in cache".into()));
    };
    if rec.identifier != *id {
        return Err(invalid(
            "does not match the token issued with its sequence number".into(),
        ));
    }
    let key = delegation_keys(view)?.into_iter().find(|k| k.key_id == id.key_id);
    let Some(key) = key else {
        return Err(invalid(format!("has an unknown master key {}", id.key_id)));
    };
    if !delegation_password_matches(&key.secret, id, &token.password)? {
        return Err(invalid("has a password that does not match".into()));
    }
    if rec.expiry_ms < now_ms {
        return Err(invalid(format!(
            "is expired, current time: {now_ms} expected renewal time: {}",
            rec.expiry_ms
        )));
    }
    Ok(rec.identifier)
}

impl<V: ReadView + ?Sized> Planner<'_, V> {
    pub(crate) fn get_delegation_token(
        &mut self,
        renewer: &str,
        max_lifetime_ms: u64,
        renew_interval_ms: u64,
    ) -> Result<OpResult, FsError> {
        if !renewer.is_empty() {
            super::check_principal(renewer)?;
        }
        let keys = delegation_keys(self.view)?;
        let Some(key) = keys.iter().rfind(|k| k.expiry_ms > self.time) else {
            return Err(FsError::Unavailable(
                "no delegation token master key yet: the leader makes one, try again".into(),
            ));
        };
        let seq = match self.leader {
            Some(env) => env.ids.delegation_seq(),
            None => next_sequence_number(self.view)?,
        };
        if live_tokens(self.view)? >= MAX_DELEGATION_TOKENS {
            return Err(FsError::Unavailable(format!(
                "{MAX_DELEGATION_TOKENS} delegation tokens are live: cancel some, or wait for them to expire"
            )));
        }
        let service = super::format_info(self.view)?
            .map(|f| f.nameservice)
            .unwrap_or_default();
        let identifier = DelegationTokenIdentifier {
            owner: self.ctx.user.clone(),
            renewer: if renewer.is_empty() {
                self.ctx.user.clone()
            } else {
                renewer.to_string()
            },
            real_user: String::new(),
            issue_ms: self.time,
            max_ms: self.time + max_lifetime_ms as i64,
            sequence_number: seq,
            key_id: key.key_id,
        };
        let password = delegation_password(&key.secret, &identifier)?;
        let expiry_ms = (self.time + renew_interval_ms as i64).min(identifier.max_ms);
        self.muts.push(Mutation::PutDelegationToken(TokenRecord {
            identifier: identifier.clone(),
            expiry_ms,
        }));
        self.muts.push(Mutation::AdvanceDelegationSeq(seq + 1));
        Ok(OpResult::DelegationToken(DelegationToken {
            identifier,
            password,
            service,
        }))
    }

    pub(crate) fn renew_delegation_token(
        &mut self,
        token: &DelegationToken,
        renew_interval_ms: u64,
    ) -> Result<OpResult, FsError> {
        let id = verify(self.view, token, self.time)?;
        if id.renewer != self.ctx.user {
            return Err(FsError::AccessControl(format!(
                "{} tries to renew a token ({token}) with non-matching renewer {}",
                self.ctx.user, id.renewer
            )));
        }
        let expiry_ms = (self.time + renew_interval_ms as i64).min(id.max_ms);
        self.muts.push(Mutation::RenewDelegationToken {
            sequence_number: id.sequence_number,
            expiry_ms,
        });
        Ok(OpResult::Expiry(expiry_ms))
    }

    pub(crate) fn cancel_delegation_token(&mut self, token: &DelegationToken) -> Result<OpResult, FsError> {
        let id = &token.identifier;
        let Some(rec) = token_record(self.view, id.sequence_number)? else {
            return Err(FsError::AccessControl(format!("Token not found ({token})")));
        };
        if rec.identifier != *id {
            return Err(FsError::AccessControl(format!("Token not found ({token})")));
        }
        let user = self.ctx.user.as_str();
        if user != id.owner && user != id.renewer && !self.caller.superuser {
            return Err(FsError::AccessControl(format!(
                "{user} is not authorized to cancel the token ({token})"
            )));
        }
        self.muts.push(Mutation::DeleteDelegationToken {
            sequence_number: id.sequence_number,
        });
        Ok(OpResult::Unit)
    }

    pub(crate) fn add_delegation_key(&mut self, key: &DelegationKey) -> Result<OpResult, FsError> {
        self.caller.require_superuser(" to add a delegation key")?;
        if key.secret.len() != DELEGATION_KEY_SECRET_BYTES {
            return Err(FsError::InvalidArgument(format!(
                "a delegation key's secret is {DELEGATION_KEY_SECRET_BYTES} bytes, not {}",
                key.secret.len()
            )));
        }
        let mut keys = delegation_keys(self.view)?;
        if keys.iter().any(|k| k.key_id >= key.key_id) {
            return Err(FsError::InvalidArgument(format!(
                "delegation key {} is not newer than every key kept",
                key.key_id
            )));
        }
        keys.retain(|k| k.expiry_ms >= self.time);
        keys.push(DelegationKey {
            created_ms: self.time,
            ..key.clone()
        });
        if keys.len() > MAX_DELEGATION_KEYS {
            keys.drain(..keys.len() - MAX_DELEGATION_KEYS);
        }
        self.muts.push(Mutation::SetDelegationKeys(keys));
        Ok(OpResult::Unit)
    }

    pub(crate) fn expire_delegation_tokens(&mut self, seqs: &[u64]) -> Result<OpResult, FsError> {
        self.caller.require_superuser(" to expire delegation tokens")?;
        if seqs.len() > MAX_TOKENS_PER_EXPIRY {
            return Err(FsError::InvalidArgument(format!(
                "at most {MAX_TOKENS_PER_EXPIRY} tokens per expiry"
            )));
        }
        for &seq in seqs {
            if token_record(self.view, seq)?.is_some_and(|r| r.expiry_ms < self.time) {
                self.muts.push(Mutation::DeleteDelegationToken { sequence_number: seq });
            }
        }
        let keys = delegation_keys(self.view)?;
        let live: Vec<DelegationKey> = keys.iter().filter(|k| k.expiry_ms >= self.time).cloned().collect();
        if live.len() != keys.len() {
            self.muts.push(Mutation::SetDelegationKeys(live));
        }
        Ok(OpResult::Unit)
    }
}
