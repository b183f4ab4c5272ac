//! Delegation tokens' cryptography (HDFS `DelegationTokenSecretManager`'s
//! `createPassword`/`retrievePassword`): a token's password is the
//! HMAC-SHA256 of its identifier under a master key. The keys and the
//! tokens themselves live in the nameservice's replicated state (the
//! metaserver's `namespace::delegation`); this is only the arithmetic, pure
//! and deterministic, so every replica computes the same password.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

use raftfs_proto::{codec, DelegationTokenIdentifier, FsError};

/// How long a master key signs new tokens before the next one takes over
/// (HDFS `dfs.namenode.delegation.key.update-interval`, 1 day).
pub const DEFAULT_DELEGATION_KEY_UPDATE_INTERVAL_MS: u64 = 24 * 3600 * 1000;
/// A token can never be renewed past this long after it was issued (HDFS
/// `dfs.namenode.delegation.token.max-lifetime`, 7 days).
pub const DEFAULT_DELEGATION_TOKEN_MAX_LIFETIME_MS: u64 = 7 * 24 * 3600 * 1000;
/// A token expires this long after it was issued or last renewed (HDFS
/// `dfs.namenode.delegation.token.renew-interval`, 1 day).
pub const DEFAULT_DELEGATION_TOKEN_RENEW_INTERVAL_MS: u64 = 24 * 3600 * 1000;
/// Bytes of a master key's secret.
pub const DELEGATION_KEY_SECRET_BYTES: usize = 32;

/// The nameservice's delegation token periods (a member's flags; the leader's apply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DelegationTokenTimes {
    pub key_update_interval_ms: u64,
    pub max_lifetime_ms: u64,
    pub renew_interval_ms: u64,
}

impl Default for DelegationTokenTimes {
    fn default() -> Self {
        DelegationTokenTimes {
            key_update_interval_ms: DEFAULT_DELEGATION_KEY_UPDATE_INTERVAL_MS,
            max_lifetime_ms: DEFAULT_DELEGATION_TOKEN_MAX_LIFETIME_MS,
            renew_interval_ms: DEFAULT_DELEGATION_TOKEN_RENEW_INTERVAL_MS,
        }
    }
}

impl DelegationTokenTimes {
    /// Refuse periods of less than a second, or a renew interval longer than the lifetime.
    pub fn check(&self) -> Result<(), String> {
        let min = crate::block_token::MIN_BLOCK_TOKEN_PERIOD_MS;
        if self.key_update_interval_ms < min || self.max_lifetime_ms < min || self.renew_interval_ms < min {
            return Err(format!("delegation token periods must be at least {min} ms"));
        }
        if self.renew_interval_ms > self.max_lifetime_ms {
            return Err("the delegation token renew interval cannot exceed its max lifetime".into());
        }
        Ok(())
    }
}

/// A new master key's secret, from the OS's random source (on the leader,
/// before the key enters the log).
pub fn new_delegation_secret() -> Vec<u8> {
    let mut s = vec![0u8; DELEGATION_KEY_SECRET_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut s);
    s
}

fn mac(secret: &[u8], id: &DelegationTokenIdentifier) -> Result<Hmac<Sha256>, FsError> {
    let mut m = Hmac::<Sha256>::new_from_slice(secret)
        .map_err(|e| FsError::Internal(format!("delegation key {}: {e}", id.key_id)))?;
    m.update(&codec::encode(id)?);
    Ok(m)
}

/// The password of `id` under the master key `secret`.
pub fn delegation_password(secret: &[u8], id: &DelegationTokenIdentifier) -> Result<Vec<u8>, FsError> {
    Ok(mac(secret, id)?.finalize().into_bytes().to_vec())
}

/// Whether `password` is `id`'s under `secret` (compared in constant time).
pub fn delegation_password_matches(
    secret: &[u8],
    id: &DelegationTokenIdentifier,
    password: &[u8],
) -> Result<bool, FsError> {
    Ok(mac(secret, id)?.verify_slice(password).is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> DelegationTokenIdentifier {
        DelegationTokenIdentifier {
            owner: "alice".into(),
            renewer: "yarn".into(),
            real_user: String::new(),
            issue_ms: 1,
            max_ms: 2,
            sequence_number: 3,
            key_id: 4,
        }
    }

    #[test]
    fn a_password_is_deterministic_and_bound_to_its_key_and_identifier() {
        let (k1, k2) = (new_delegation_secret(), new_delegation_secret());
        let p = delegation_password(&k1, &id()).unwrap();
        assert_eq!(
            p,
            delegation_password(&k1, &id()).unwrap(),
            "every replica computes the same"
        );
        assert!(delegation_password_matches(&k1, &id(), &p).unwrap());
        assert!(!delegation_password_matches(&k2, &id(), &p).unwrap());
        let mut other = id();
        other.owner = "mallory".into();
        assert!(!delegation_password_matches(&k1, &other, &p).unwrap());
        assert!(!delegation_password_matches(&k1, &id(), &p[..8]).unwrap());
    }
}
