//! The leader's part of delegation tokens (HDFS's
//! `AbstractDelegationTokenSecretManager` threads): it draws master keys
//! from the OS's random source and puts them in the log, rolls them every
//! key update interval, gives the token ops the member's lifetimes, and
//! sweeps expired tokens and keys out of the replicated state.
//!
//! Everything random or clock-bound happens here, before a proposal; the
//! entries themselves are planned deterministically
//! (`namespace::delegation`).

use std::time::Duration;

use raftfs_proto::{DelegationKey, FsError, Op};
use raftfs_trust::delegation::new_delegation_secret;

use super::data::DataPath;
use crate::namespace::delegation::{
    decode_token_row, delegation_keys, MAX_TOKENS_PER_EXPIRY, META_DELEGATION_TOKEN_PREFIX,
};

/// How often the leader sweeps expired delegation tokens (HDFS
/// `dfs.namenode.delegation.token.remover.scan.interval`, 1 hour; shorter
/// here, as a sweep of a few rows is cheap).
pub const DELEGATION_SWEEP_INTERVAL_MS: u64 = 60_000;
/// Token rows looked at per sweep.
const MAX_TOKENS_PER_SWEEP: usize = 100_000;
/// How long a token op waits for the leader to put a first key in the log.
const KEY_WAIT_MS: u64 = 5_000;

impl DataPath {
    /// `op` with the member's lifetimes in it (whatever the client sent is
    /// replaced), and, for a new token, a master key in the log first.
    pub(crate) async fn prepare_delegation_op(&self, op: Op) -> Result<Op, FsError> {
        let t = self.delegation;
        match op {
            Op::GetDelegationToken { renewer, .. } => {
                tokio::time::timeout(Duration::from_millis(KEY_WAIT_MS), self.ensure_delegation_key())
                    .await
                    .map_err(|_| FsError::Unavailable("no delegation key could be made in time".into()))??;
                Ok(Op::GetDelegationToken {
                    renewer,
                    max_lifetime_ms: t.max_lifetime_ms,
                    renew_interval_ms: t.renew_interval_ms,
                })
            }
            Op::RenewDelegationToken { token, .. } => Ok(Op::RenewDelegationToken {
                token,
                renew_interval_ms: t.renew_interval_ms,
            }),
            other => Ok(other),
        }
    }

    /// Put a new master key in the log unless the newest one is younger
    /// than the key update interval.
    pub(crate) async fn ensure_delegation_key(&self) -> Result<(), FsError> {
        let _one_at_a_time = self.delegation_key_lock.lock().await;
        let now = self.shared.log_clock.estimate();
        let keys = delegation_keys(&*self.shared.store.view())?;
        let newest = keys.last();
        if newest
            .is_some_and(|k| now < k.created_ms + self.delegation.key_update_interval_ms as i64 && k.expiry_ms > now)
        {
            return Ok(());
        }
        let key = DelegationKey {
            key_id: newest.map_or(1, |k| k.key_id + 1),
            created_ms: now,
            expiry_ms: now + (self.delegation.key_update_interval_ms + self.delegation.max_lifetime_ms) as i64,
            secret: new_delegation_secret(),
        };
        tracing::info!(key_id = key.key_id, "new delegation token master key");
        self.writes
            .write(self.system_ctx(), Op::AddDelegationKey { key })
            .await
            .map(|_| ())
    }

    /// The leader's periodic work: roll the master key when due, and every
    /// [`DELEGATION_SWEEP_INTERVAL_MS`] drop expired tokens and keys.
    pub(crate) async fn tend_delegation_tokens(&self, sweep: bool) -> Result<(), FsError> {
        let keys = delegation_keys(&*self.shared.store.view())?;
        // No key is made before the first token is asked for.
        if keys.is_empty() {
            return Ok(());
        }
        self.ensure_delegation_key().await?;
        if !sweep {
            return Ok(());
        }
        let now = self.shared.log_clock.estimate();
        let mut expired = Vec::new();
        for (row, raw) in self
            .shared
            .store
            .meta_page(META_DELEGATION_TOKEN_PREFIX, "", MAX_TOKENS_PER_SWEEP)?
        {
            match decode_token_row(&raw) {
                Ok(r) if r.expiry_ms < now => expired.push(r.identifier.sequence_number),
                Ok(_) => {}
                Err(e) => tracing::warn!(%row, error = %e, "unreadable delegation token row"),
            }
        }
        let mut entries: Vec<Vec<u64>> = expired.chunks(MAX_TOKENS_PER_EXPIRY).map(<[u64]>::to_vec).collect();
        // Expired keys go even when no token does (every entry drops them).
        if entries.is_empty() && keys.iter().any(|k| k.expiry_ms < now) {
            entries.push(Vec::new());
        }
        if !expired.is_empty() {
            tracing::info!(tokens = expired.len(), "removing expired delegation tokens");
        }
        for sequence_numbers in entries {
            self.writes
                .write(self.system_ctx(), Op::ExpireDelegationTokens { sequence_numbers })
                .await?;
        }
        Ok(())
    }
}
