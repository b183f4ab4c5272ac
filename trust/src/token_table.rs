//! The rules of a delegation token table (HDFS's
//! `AbstractDelegationTokenSecretManager`), apart from where the table is
//! kept: a nameservice keeps its tokens in namespace rows (the
//! metaserver's `namespace::delegation`), the routers' group in its
//! replicated state (the router's `group::router_tokens`). Both ask these
//! functions what a token operation changes and apply the answer
//! themselves, so the two issuers cannot drift apart in what they accept.
//!
//! Every function is pure and deterministic: the time is the caller's log
//! time, a new key's secret comes in the call (the leader drew it), a
//! sequence number is given (each issuer counts its own), and a password
//! is the HMAC of the identifier ([`crate::delegation`]), the same on
//! every replica. Renewals take the later expiry and a renewal of a token
//! cancelled meanwhile changes nothing, so changes planned concurrently
//! commute. Refusals are HDFS's `InvalidToken` texts.

use raftfs_proto::{DelegationKey, DelegationToken, DelegationTokenIdentifier, FsError};
use serde::{Deserialize, Serialize};

use crate::delegation::{delegation_password, delegation_password_matches, DELEGATION_KEY_SECRET_BYTES};

/// Most master keys kept (one per update interval over a token's max
/// lifetime, 8 with HDFS's defaults, and room for shorter intervals).
pub const MAX_DELEGATION_KEYS: usize = 64;
/// Most live tokens per issuer (HDFS has no limit; a bound keeps the table
/// and its sweep finite).
pub const MAX_DELEGATION_TOKENS: u64 = 1_000_000;
/// Most tokens one expiry drops.
pub const MAX_TOKENS_PER_EXPIRY: usize = 10_000;

/// One live token, as its issuer keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    pub identifier: DelegationTokenIdentifier,
    /// Unix ms (log time) after which the token is refused.
    pub expiry_ms: i64,
}

/// What a token table holds, as the rules read it.
pub trait TokenTableView {
    /// Every master key, oldest first.
    fn keys(&self) -> Result<Vec<DelegationKey>, FsError>;
    /// The record of live token `seq`.
    fn record(&self, seq: u64) -> Result<Option<TokenRecord>, FsError>;
    /// How many tokens are live.
    fn live(&self) -> Result<u64, FsError>;
}

/// One change to a token table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenChange {
    /// A new token (its sequence number is used up).
    Put(TokenRecord),
    /// A live token's expiry, if later than its current one.
    Renew { sequence_number: u64, expiry_ms: i64 },
    /// A token gone (cancelled or expired).
    Delete { sequence_number: u64 },
    /// The master keys from now on.
    SetKeys(Vec<DelegationKey>),
}

/// How long a new token lives: it expires `renew_interval_ms` after it was
/// issued or last renewed, and is never renewed past `max_lifetime_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenLifetimes {
    pub max_lifetime_ms: u64,
    pub renew_interval_ms: u64,
}

/// Who asks for a token operation.
#[derive(Debug, Clone, Copy)]
pub struct TokenCaller<'a> {
    pub user: &'a str,
    /// May cancel any token.
    pub superuser: bool,
}

/// A new token for `caller`, renewable by `renewer` (the caller when
/// empty), for `service`, at log time `now_ms`, numbered by `seq` (asked
/// only once the token will be issued, so a refusal uses up no number).
pub fn issue<T: TokenTableView + ?Sized>(
    table: &T,
    caller: TokenCaller<'_>,
    renewer: &str,
    seq: impl FnOnce() -> Result<u64, FsError>,
    service: &str,
    now_ms: i64,
    lifetimes: TokenLifetimes,
) -> Result<(DelegationToken, TokenChange), FsError> {
    let keys = table.keys()?;
    let Some(key) = keys.iter().rfind(|k| k.expiry_ms > now_ms) else {
        return Err(FsError::Unavailable(
            "no delegation token master key yet: the leader makes one, try again".into(),
        ));
    };
    if table.live()? >= MAX_DELEGATION_TOKENS {
        return Err(FsError::Unavailable(format!(
            "{MAX_DELEGATION_TOKENS} delegation tokens are live: cancel some, or wait for them to expire"
        )));
    }
    let identifier = DelegationTokenIdentifier {
        owner: caller.user.to_string(),
        renewer: if renewer.is_empty() { caller.user } else { renewer }.to_string(),
        real_user: String::new(),
        issue_ms: now_ms,
        max_ms: now_ms + lifetimes.max_lifetime_ms as i64,
        sequence_number: seq()?,
        key_id: key.key_id,
    };
    let password = delegation_password(&key.secret, &identifier)?;
    let expiry_ms = (now_ms + lifetimes.renew_interval_ms as i64).min(identifier.max_ms);
    let change = TokenChange::Put(TokenRecord {
        identifier: identifier.clone(),
        expiry_ms,
    });
    let token = DelegationToken {
        identifier,
        password,
        service: service.to_string(),
    };
    Ok((token, change))
}

/// The identifier `token` carries, if it is a live token of this table
/// with the right password at `now_ms`; else why not.
pub fn verify<T: TokenTableView + ?Sized>(
    table: &T,
    token: &DelegationToken,
    now_ms: i64,
) -> Result<DelegationTokenIdentifier, FsError> {
    let id = &token.identifier;
    let invalid = |why: String| FsError::AccessControl(format!("token ({token}) {why}"));
    let (rec, key) = live_record(table, id, &invalid)?;
    if !delegation_password_matches(&key.secret, id, &token.password)? {
        return Err(invalid("has a password that does not match".into()));
    }
    check_expiry(&rec, now_ms, &invalid)?;
    Ok(rec.identifier)
}

/// The password of the live token `id` names (what the table's master key
/// makes of it), for a client that proves it holds the password without
/// sending it (Hadoop's SASL DIGEST-MD5); refused as [`verify`] refuses.
pub fn password<T: TokenTableView + ?Sized>(
    table: &T,
    id: &DelegationTokenIdentifier,
    now_ms: i64,
) -> Result<Vec<u8>, FsError> {
    let invalid = |why: String| {
        FsError::AccessControl(format!(
            "token (owner={}, sequenceNumber={}) {why}",
            id.owner, id.sequence_number
        ))
    };
    let (rec, key) = live_record(table, id, &invalid)?;
    check_expiry(&rec, now_ms, &invalid)?;
    delegation_password(&key.secret, id)
}

/// The record of `id`'s token and its master key, if it was issued as `id` says.
fn live_record<T: TokenTableView + ?Sized>(
    table: &T,
    id: &DelegationTokenIdentifier,
    invalid: &dyn Fn(String) -> FsError,
) -> Result<(TokenRecord, DelegationKey), FsError> {
    let Some(rec) = table.record(id.sequence_number)? else {
        return Err(invalid("can't be found in cache".into()));
    };
    if rec.identifier != *id {
        return Err(invalid(
            "does not match the token issued with its sequence number".into(),
        ));
    }
    let key = table.keys()?.into_iter().find(|k| k.key_id == id.key_id);
    let Some(key) = key else {
        return Err(invalid(format!("has an unknown master key {}", id.key_id)));
    };
    Ok((rec, key))
}

fn check_expiry(rec: &TokenRecord, now_ms: i64, invalid: &dyn Fn(String) -> FsError) -> Result<(), FsError> {
    if rec.expiry_ms < now_ms {
        return Err(invalid(format!(
            "is expired, current time: {now_ms} expected renewal time: {}",
            rec.expiry_ms
        )));
    }
    Ok(())
}

/// Renew `token` for its renewer: its new expiry and the change.
pub fn renew<T: TokenTableView + ?Sized>(
    table: &T,
    caller: TokenCaller<'_>,
    token: &DelegationToken,
    now_ms: i64,
    renew_interval_ms: u64,
) -> Result<(i64, TokenChange), FsError> {
    let id = verify(table, token, now_ms)?;
    if id.renewer != caller.user {
        return Err(FsError::AccessControl(format!(
            "{} tries to renew a token ({token}) with non-matching renewer {}",
            caller.user, id.renewer
        )));
    }
    let expiry_ms = (now_ms + renew_interval_ms as i64).min(id.max_ms);
    Ok((
        expiry_ms,
        TokenChange::Renew {
            sequence_number: id.sequence_number,
            expiry_ms,
        },
    ))
}

/// Cancel `token`, by its owner, its renewer or the superuser.
pub fn cancel<T: TokenTableView + ?Sized>(
    table: &T,
    caller: TokenCaller<'_>,
    token: &DelegationToken,
) -> Result<TokenChange, FsError> {
    let id = &token.identifier;
    match table.record(id.sequence_number)? {
        Some(rec) if rec.identifier == *id => {}
        _ => return Err(FsError::AccessControl(format!("Token not found ({token})"))),
    }
    if caller.user != id.owner && caller.user != id.renewer && !caller.superuser {
        return Err(FsError::AccessControl(format!(
            "{} is not authorized to cancel the token ({token})",
            caller.user
        )));
    }
    Ok(TokenChange::Delete {
        sequence_number: id.sequence_number,
    })
}

/// Add master key `key` (newer than every key kept), made at `now_ms`;
/// keys past their expiry go, and the oldest beyond [`MAX_DELEGATION_KEYS`].
pub fn add_key<T: TokenTableView + ?Sized>(
    table: &T,
    key: &DelegationKey,
    now_ms: i64,
) -> Result<TokenChange, FsError> {
    if key.secret.len() != DELEGATION_KEY_SECRET_BYTES {
        return Err(FsError::InvalidArgument(format!(
            "a delegation key's secret is {DELEGATION_KEY_SECRET_BYTES} bytes, not {}",
            key.secret.len()
        )));
    }
    let mut keys = table.keys()?;
    if keys.iter().any(|k| k.key_id >= key.key_id) {
        return Err(FsError::InvalidArgument(format!(
            "delegation key {} is not newer than every key kept",
            key.key_id
        )));
    }
    keys.retain(|k| k.expiry_ms >= now_ms);
    keys.push(DelegationKey {
        created_ms: now_ms,
        ..key.clone()
    });
    if keys.len() > MAX_DELEGATION_KEYS {
        keys.drain(..keys.len() - MAX_DELEGATION_KEYS);
    }
    Ok(TokenChange::SetKeys(keys))
}

/// Drop those of tokens `seqs` that expired before `now_ms`, and the keys
/// past their expiry.
pub fn expire<T: TokenTableView + ?Sized>(table: &T, seqs: &[u64], now_ms: i64) -> Result<Vec<TokenChange>, FsError> {
    if seqs.len() > MAX_TOKENS_PER_EXPIRY {
        return Err(FsError::InvalidArgument(format!(
            "at most {MAX_TOKENS_PER_EXPIRY} tokens per expiry"
        )));
    }
    let mut changes = Vec::new();
    for &seq in seqs {
        if table.record(seq)?.is_some_and(|r| r.expiry_ms < now_ms) {
            changes.push(TokenChange::Delete { sequence_number: seq });
        }
    }
    let keys = table.keys()?;
    let live: Vec<DelegationKey> = keys.iter().filter(|k| k.expiry_ms >= now_ms).cloned().collect();
    if live.len() != keys.len() {
        changes.push(TokenChange::SetKeys(live));
    }
    Ok(changes)
}
