//! Block access tokens (HDFS `BlockTokenSecretManager` and the DataNode's
//! `BlockPoolTokenSecretManager`).
//!
//! ```text
//!   member (BlockTokenSecretManager)            DataNode (BlockKeyRing)
//!   keys: current, next, retired ──registration/heartbeat replies──▶ keys per pool
//!   mint(user, block, modes) ──▶ token with the locations ──client──▶ check(token, block, mode)
//! ```
//!
//! What this guarantees:
//! - A token is an identifier (pool, block id, access modes, user, expiry,
//!   key id) and its HMAC-SHA256 under a 256-bit key from the OS's random
//!   source (RustCrypto's `hmac` and `sha2`; nothing home-made). A DataNode
//!   accepts it only if the key is one a member of that block pool handed
//!   it, the HMAC matches (compared in constant time), the identifier names
//!   the pool, the block and the access asked for, and it has not expired.
//! - Every member mints with its own keys, as each HDFS NameNode of an HA
//!   pair does, and hands all of them to every DataNode of its pool. So a
//!   follower serving a read can mint, and tokens outlive a failover: the
//!   DataNodes keep the old leader's keys until they expire.
//! - Keys roll every update interval. A member hands out its next key an
//!   interval before it signs with it, so DataNodes that heard from it in
//!   the meantime know the key before any token it signs arrives. A key is
//!   kept until every token it signed has expired.
//!
//! Caveats: expiry compares the minting member's clock with the checking
//! DataNode's (as HDFS does): clocks far apart shorten or lengthen tokens.
//! Keys live in memory: a restarted member mints with new keys, and the
//! DataNodes learn them from its next reply. A DataNode also signs with a
//! member's current key when it copies a replica to another DataNode
//! (HDFS's DataNodes do the same), so a DataNode's certificate is as
//! trusted as a member's for the blocks of its pools.

use std::collections::HashMap;

use hmac::{Hmac, Mac};
use parking_lot::{Mutex, RwLock};
use rand::RngCore;
use sha2::Sha256;

use raftfs_proto::{
    codec, AccessMode, AccessModes, BlockKey, BlockToken, BlockTokenIdentifier, BlockTokenProof, DataProtection,
    ExportedBlockKeys, FsError,
};

/// How long a token lives (HDFS `dfs.block.access.token.lifetime`, 600 min).
pub const DEFAULT_BLOCK_TOKEN_LIFETIME_MS: u64 = 600 * 60 * 1000;
/// How often a member starts signing with a new key (HDFS
/// `dfs.block.access.key.update.interval`, 600 min).
pub const DEFAULT_BLOCK_KEY_UPDATE_INTERVAL_MS: u64 = 600 * 60 * 1000;
/// Shortest key update interval or token lifetime accepted.
pub const MIN_BLOCK_TOKEN_PERIOD_MS: u64 = 1_000;
/// Bytes of a block key's secret (HMAC-SHA256's block-sized key is 64; 32 is its output size and strength).
pub const BLOCK_KEY_SECRET_BYTES: usize = 32;
/// How far a [`BlockTokenProof`]'s time may be from the DataNode's clock
/// (Kerberos's default clock skew, 5 min); a DataNode remembers each
/// proof's nonce for twice this, so no proof is accepted twice.
pub const BLOCK_PROOF_SKEW_MS: u64 = 5 * 60 * 1000;
/// What a proof's MAC covers first, so that it means nothing elsewhere.
const BLOCK_PROOF_LABEL: &[u8] = b"raftfs block token proof v1";
/// Bytes of a token's password (an HMAC-SHA256).
pub const BLOCK_TOKEN_PASSWORD_BYTES: usize = 32;
/// Most keys a DataNode keeps per block pool (each member of the pool has
/// a current, a next and a few retired ones).
pub const MAX_BLOCK_KEYS_PER_POOL: usize = 256;
/// Most retired keys a member keeps (older ones have expired anyway unless
/// the lifetime is many update intervals).
pub const MAX_RETIRED_BLOCK_KEYS: usize = 64;

type HmacSha256 = Hmac<Sha256>;

fn mac(key: &BlockKey, id: &BlockTokenIdentifier) -> Result<HmacSha256, FsError> {
    let mut m = HmacSha256::new_from_slice(&key.secret)
        .map_err(|e| FsError::Internal(format!("block key {:#x}: {e}", key.key_id)))?;
    m.update(&codec::encode(id)?);
    Ok(m)
}

/// Sign `id` with `key`.
fn sign(key: &BlockKey, id: BlockTokenIdentifier) -> Result<BlockToken, FsError> {
    assert_eq!(key.key_id, id.key_id, "a token is signed by the key it names");
    let password = mac(key, &id)?.finalize().into_bytes().to_vec();
    Ok(BlockToken {
        identifier: id,
        password,
    })
}

/// Refuse unless `t`'s identifier names `block_id` of `block_pool_id` and `mode`.
fn grants(t: &BlockToken, block_pool_id: &str, block_id: u64, mode: AccessMode) -> Result<(), FsError> {
    let id = &t.identifier;
    if id.block_pool_id != block_pool_id || id.block_id != block_id {
        return Err(FsError::InvalidToken(format!(
            "{t} doesn't apply to blk_{block_id} of {block_pool_id}"
        )));
    }
    if !id.modes.contains(mode) {
        return Err(FsError::InvalidToken(format!(
            "{t} doesn't have {} permission",
            mode.name()
        )));
    }
    Ok(())
}

/// The MAC of a [`BlockTokenProof`]: HMAC-SHA256 under the token's
/// password of a label, the nonce and the time.
fn proof_mac(password: &[u8], nonce: &[u8; 16], time_ms: i64) -> Result<HmacSha256, FsError> {
    let mut m = HmacSha256::new_from_slice(password)
        .map_err(|e| FsError::InvalidToken(format!("a block token password: {e}")))?;
    m.update(BLOCK_PROOF_LABEL);
    m.update(nonce);
    m.update(&time_ms.to_be_bytes());
    Ok(m)
}

/// A proof that the caller holds `token`, to show a DataNode over
/// plaintext instead of the token (whose password never leaves the caller).
pub fn prove(token: &BlockToken, now_ms: i64) -> Result<BlockTokenProof, FsError> {
    let mut nonce = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut nonce);
    let mac = proof_mac(&token.password, &nonce, now_ms)?
        .finalize()
        .into_bytes()
        .to_vec();
    Ok(BlockTokenProof {
        identifier: token.identifier.clone(),
        nonce,
        time_ms: now_ms,
        mac,
    })
}

fn new_key(expiry_ms: i64) -> BlockKey {
    let mut secret = vec![0u8; BLOCK_KEY_SECRET_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut secret);
    BlockKey {
        key_id: rand::rngs::OsRng.next_u64(),
        expiry_ms,
        secret,
    }
}

/// How a member's tokens and keys are timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockTokenTimes {
    pub lifetime_ms: u64,
    pub key_update_interval_ms: u64,
}

impl Default for BlockTokenTimes {
    fn default() -> Self {
        BlockTokenTimes {
            lifetime_ms: DEFAULT_BLOCK_TOKEN_LIFETIME_MS,
            key_update_interval_ms: DEFAULT_BLOCK_KEY_UPDATE_INTERVAL_MS,
        }
    }
}

impl BlockTokenTimes {
    /// Refuse periods too short to hand keys out before they sign.
    pub fn check(&self) -> Result<(), String> {
        if self.lifetime_ms < MIN_BLOCK_TOKEN_PERIOD_MS || self.key_update_interval_ms < MIN_BLOCK_TOKEN_PERIOD_MS {
            return Err(format!(
                "block token lifetime and key update interval must be at least {MIN_BLOCK_TOKEN_PERIOD_MS} ms"
            ));
        }
        Ok(())
    }
}

struct MemberKeys {
    current: BlockKey,
    /// When `current` started signing.
    current_since_ms: i64,
    next: BlockKey,
    retired: Vec<BlockKey>,
}

/// A member's block keys: it mints tokens and exports its keys to DataNodes.
pub struct BlockTokenSecretManager {
    block_pool_id: String,
    times: BlockTokenTimes,
    protection: DataProtection,
    keys: Mutex<MemberKeys>,
}

impl BlockTokenSecretManager {
    /// Fresh keys for `block_pool_id`, the first signing from `now_ms`.
    pub fn new(block_pool_id: &str, times: BlockTokenTimes, now_ms: i64) -> BlockTokenSecretManager {
        let (life, every) = (times.lifetime_ms as i64, times.key_update_interval_ms as i64);
        BlockTokenSecretManager {
            block_pool_id: block_pool_id.to_string(),
            times,
            protection: DataProtection::default(),
            keys: Mutex::new(MemberKeys {
                current: new_key(now_ms + every + life),
                current_since_ms: now_ms,
                next: new_key(now_ms + 2 * every + life),
                retired: Vec::new(),
            }),
        }
    }

    /// Sign `protection` into every token from now on (default
    /// [`DataProtection::Authentication`]).
    pub fn with_protection(mut self, protection: DataProtection) -> BlockTokenSecretManager {
        self.protection = protection;
        self
    }

    pub fn times(&self) -> BlockTokenTimes {
        self.times
    }

    pub fn protection(&self) -> DataProtection {
        self.protection
    }

    /// Move to the next key once the current one has signed for an
    /// interval; drop retired keys whose tokens have all expired.
    fn roll(&self, k: &mut MemberKeys, now_ms: i64) {
        let (life, every) = (self.times.lifetime_ms as i64, self.times.key_update_interval_ms as i64);
        let mut rolled = false;
        if now_ms >= k.current_since_ms + 2 * every {
            // Asleep for more than an interval (a suspended process, a clock
            // stepped forward): the next key is stale too; start afresh.
            let current = std::mem::replace(&mut k.current, new_key(now_ms + every + life));
            let next = std::mem::replace(&mut k.next, new_key(now_ms + 2 * every + life));
            k.retired.extend([current, next]);
            k.current_since_ms = now_ms;
            rolled = true;
        } else if now_ms >= k.current_since_ms + every {
            let fresh = new_key(now_ms + 2 * every + life);
            let old = std::mem::replace(&mut k.current, std::mem::replace(&mut k.next, fresh));
            k.retired.push(old);
            k.current_since_ms += every;
            rolled = true;
        }
        k.retired.retain(|r| r.expiry_ms >= now_ms);
        if k.retired.len() > MAX_RETIRED_BLOCK_KEYS {
            let extra = k.retired.len() - MAX_RETIRED_BLOCK_KEYS;
            k.retired.drain(..extra);
        }
        if rolled {
            tracing::info!(pool = %self.block_pool_id, key = format_args!("{:#x}", k.current.key_id), "block key rolled");
        }
    }

    /// The keys to hand a DataNode now.
    pub fn export(&self, now_ms: i64) -> ExportedBlockKeys {
        let mut k = self.keys.lock();
        self.roll(&mut k, now_ms);
        let mut keys = vec![k.current.clone(), k.next.clone()];
        keys.extend(k.retired.iter().cloned());
        ExportedBlockKeys {
            block_pool_id: self.block_pool_id.clone(),
            current_key_id: k.current.key_id,
            keys,
            token_lifetime_ms: self.times.lifetime_ms,
        }
    }

    /// A token for `modes` on block `block_id`, issued to `user`.
    pub fn mint(&self, user: &str, block_id: u64, modes: AccessModes, now_ms: i64) -> Result<BlockToken, FsError> {
        let key = {
            let mut k = self.keys.lock();
            self.roll(&mut k, now_ms);
            k.current.clone()
        };
        sign(
            &key,
            BlockTokenIdentifier {
                expiry_ms: now_ms + self.times.lifetime_ms as i64,
                key_id: key.key_id,
                user: user.to_string(),
                block_pool_id: self.block_pool_id.clone(),
                block_id,
                modes,
                protection: self.protection,
            },
        )
    }
}

#[derive(Default)]
struct PoolKeys {
    keys: HashMap<u64, BlockKey>,
    /// The key the member that exported last signs with, and its token lifetime.
    current: Option<(u64, u64)>,
}

/// A DataNode's block keys, per block pool, as the members handed them.
#[derive(Default)]
pub struct BlockKeyRing {
    pools: RwLock<HashMap<String, PoolKeys>>,
}

impl BlockKeyRing {
    pub fn new() -> BlockKeyRing {
        BlockKeyRing::default()
    }

    /// Keep the keys a member of `block_pool_id` handed over; drop expired ones.
    pub fn update(&self, block_pool_id: &str, exported: &ExportedBlockKeys, now_ms: i64) -> Result<(), FsError> {
        if exported.block_pool_id != block_pool_id {
            return Err(FsError::InvalidArgument(format!(
                "a member of block pool {block_pool_id} sent the keys of {}",
                exported.block_pool_id
            )));
        }
        if exported.keys.len() > MAX_BLOCK_KEYS_PER_POOL {
            return Err(FsError::InvalidArgument(format!(
                "{} block keys in one reply; at most {MAX_BLOCK_KEYS_PER_POOL}",
                exported.keys.len()
            )));
        }
        let mut pools = self.pools.write();
        let p = pools.entry(block_pool_id.to_string()).or_default();
        for k in &exported.keys {
            if k.secret.len() != BLOCK_KEY_SECRET_BYTES {
                return Err(FsError::InvalidArgument(format!(
                    "block key {:#x} has a {}-byte secret",
                    k.key_id,
                    k.secret.len()
                )));
            }
            p.keys.insert(k.key_id, k.clone());
        }
        if exported.keys.iter().any(|k| k.key_id == exported.current_key_id) {
            p.current = Some((exported.current_key_id, exported.token_lifetime_ms));
        }
        p.keys.retain(|_, k| k.expiry_ms >= now_ms);
        if p.keys.len() > MAX_BLOCK_KEYS_PER_POOL {
            // Keep the keys that live longest (a member restarted many times).
            let mut by_expiry: Vec<(i64, u64)> = p.keys.values().map(|k| (k.expiry_ms, k.key_id)).collect();
            by_expiry.sort_unstable();
            for (_, id) in by_expiry.iter().take(p.keys.len() - MAX_BLOCK_KEYS_PER_POOL) {
                p.keys.remove(id);
            }
        }
        Ok(())
    }

    /// Whether any member of `block_pool_id` has handed keys over yet.
    pub fn knows_pool(&self, block_pool_id: &str) -> bool {
        self.pools.read().get(block_pool_id).is_some_and(|p| !p.keys.is_empty())
    }

    /// Refuse unless `token` grants `mode` on `block_id` of `block_pool_id` now.
    pub fn check(
        &self,
        token: Option<&BlockToken>,
        block_pool_id: &str,
        block_id: u64,
        mode: AccessMode,
        now_ms: i64,
    ) -> Result<(), FsError> {
        let Some(t) = token else {
            return Err(FsError::InvalidToken(format!(
                "Block token is missing: {} access to blk_{block_id} of {block_pool_id} needs one",
                mode.name()
            )));
        };
        grants(t, block_pool_id, block_id, mode)?;
        let id = &t.identifier;
        mac(&self.live_key(t, now_ms)?, id)?
            .verify_slice(&t.password)
            .map_err(|_| FsError::InvalidToken(format!("{t}: the password does not match (forged or altered)")))
    }

    /// Refuse unless `proof` shows a token that grants `mode` on `block_id`
    /// of `block_pool_id` now, made within [`BLOCK_PROOF_SKEW_MS`] of
    /// `now_ms` (whether its nonce was seen before is the caller's check,
    /// [`crate::SeenProofs`], made after this one so that only genuine
    /// proofs fill it). Returns the token itself, recomputed, for a
    /// DataNode to pass down a pipeline over TLS.
    pub fn check_proof(
        &self,
        proof: &BlockTokenProof,
        block_pool_id: &str,
        block_id: u64,
        mode: AccessMode,
        now_ms: i64,
    ) -> Result<BlockToken, FsError> {
        let token = BlockToken {
            identifier: proof.identifier.clone(),
            password: Vec::new(),
        };
        grants(&token, block_pool_id, block_id, mode)?;
        let password = self.password(&proof.identifier, now_ms)?;
        proof_mac(&password, &proof.nonce, proof.time_ms)?
            .verify_slice(&proof.mac)
            .map_err(|_| {
                FsError::InvalidToken(format!(
                    "the proof of {token} does not match (forged, altered, or made without its password)"
                ))
            })?;
        if proof.time_ms.abs_diff(now_ms) > BLOCK_PROOF_SKEW_MS {
            return Err(FsError::InvalidToken(format!(
                "the proof of {token} was made at {} ms, {} ms from this DataNode's clock: more than the \
                 {BLOCK_PROOF_SKEW_MS} ms allowed (a replay, or clocks apart: keep them in sync)",
                proof.time_ms,
                proof.time_ms.abs_diff(now_ms)
            )));
        }
        Ok(BlockToken { password, ..token })
    }

    /// The password of the token `id` names (HDFS's `retrievePassword`),
    /// which a client that holds the token proves it knows (SASL TOKEN on
    /// ClientDatanodeProtocol); refused if it has expired or its key is
    /// not one a member of its pool handed this DataNode. What it grants
    /// is checked per request, with [`BlockKeyRing::check`].
    pub fn password(&self, id: &BlockTokenIdentifier, now_ms: i64) -> Result<Vec<u8>, FsError> {
        let t = BlockToken {
            identifier: id.clone(),
            password: Vec::new(),
        };
        Ok(mac(&self.live_key(&t, now_ms)?, id)?.finalize().into_bytes().to_vec())
    }

    /// The key `t` names, if `t` has not expired and this DataNode has it.
    fn live_key(&self, t: &BlockToken, now_ms: i64) -> Result<BlockKey, FsError> {
        let id = &t.identifier;
        if id.expiry_ms < now_ms {
            return Err(FsError::InvalidToken(format!("{t} is expired")));
        }
        let key = {
            let pools = self.pools.read();
            pools
                .get(&id.block_pool_id)
                .and_then(|p| p.keys.get(&id.key_id))
                .cloned()
        };
        key.ok_or_else(|| {
            FsError::InvalidToken(format!(
                "Can't re-compute password for {t}, since the required block key (keyID={:#x}) doesn't exist",
                id.key_id
            ))
        })
    }

    /// A token this DataNode signs itself, with the current key of a
    /// member of the pool (to write a copy of a replica to another DataNode).
    pub fn mint(
        &self,
        block_pool_id: &str,
        user: &str,
        block_id: u64,
        modes: AccessModes,
        now_ms: i64,
    ) -> Result<BlockToken, FsError> {
        let (key, lifetime_ms) = {
            let pools = self.pools.read();
            let p = pools.get(block_pool_id);
            let cur = p.and_then(|p| p.current);
            match (p, cur) {
                (Some(p), Some((id, life))) if p.keys.contains_key(&id) => (p.keys[&id].clone(), life),
                _ => {
                    return Err(FsError::Unavailable(format!(
                        "no block key of pool {block_pool_id} yet: no member of it has answered"
                    )))
                }
            }
        };
        sign(
            &key,
            BlockTokenIdentifier {
                expiry_ms: now_ms + lifetime_ms as i64,
                key_id: key.key_id,
                user: user.to_string(),
                block_pool_id: block_pool_id.to_string(),
                block_id,
                modes,
                // Shown only to other DataNodes, over mutual TLS.
                protection: DataProtection::Privacy,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POOL: &str = "BP-1-127.0.0.1-1";
    const T0: i64 = 1_700_000_000_000;
    const TIMES: BlockTokenTimes = BlockTokenTimes {
        lifetime_ms: 60_000,
        key_update_interval_ms: 600_000,
    };

    fn setup() -> (BlockTokenSecretManager, BlockKeyRing) {
        let m = BlockTokenSecretManager::new(POOL, TIMES, T0);
        let ring = BlockKeyRing::new();
        ring.update(POOL, &m.export(T0), T0).unwrap();
        (m, ring)
    }

    fn refused(r: Result<(), FsError>, what: &str) {
        match r {
            Err(FsError::InvalidToken(m)) => assert!(m.contains(what), "{m:?} should say {what:?}"),
            other => panic!("expected InvalidToken ({what}), got {other:?}"),
        }
    }

    #[test]
    fn a_minted_token_grants_what_it_names_and_nothing_else() {
        let (m, ring) = setup();
        let t = m.mint("alice", 7, AccessModes::of(&[AccessMode::Read]), T0).unwrap();
        assert_eq!(t.password.len(), BLOCK_TOKEN_PASSWORD_BYTES);
        ring.check(Some(&t), POOL, 7, AccessMode::Read, T0 + 1).unwrap();
        refused(
            ring.check(Some(&t), POOL, 7, AccessMode::Write, T0),
            "doesn't have WRITE permission",
        );
        refused(
            ring.check(Some(&t), POOL, 8, AccessMode::Read, T0),
            "doesn't apply to blk_8",
        );
        refused(
            ring.check(Some(&t), "BP-other", 7, AccessMode::Read, T0),
            "doesn't apply",
        );
        refused(
            ring.check(None, POOL, 7, AccessMode::Read, T0),
            "Block token is missing",
        );
        refused(
            ring.check(Some(&t), POOL, 7, AccessMode::Read, T0 + TIMES.lifetime_ms as i64 + 1),
            "is expired",
        );
    }

    #[test]
    fn the_password_of_a_live_token_is_recomputed_and_of_no_other() {
        let (m, ring) = setup();
        let t = m.mint("alice", 7, AccessModes::of(&[AccessMode::Read]), T0).unwrap();
        assert_eq!(ring.password(&t.identifier, T0 + 1).unwrap(), t.password);
        let mut altered = t.identifier.clone();
        altered.block_id = 8;
        assert_ne!(
            ring.password(&altered, T0).unwrap(),
            t.password,
            "another identifier, another password"
        );
        let expired = ring.password(&t.identifier, T0 + TIMES.lifetime_ms as i64 + 1);
        refused(expired.map(|_| ()), "is expired");
        let stranger = BlockTokenSecretManager::new(POOL, TIMES, T0);
        let t2 = stranger
            .mint("alice", 7, AccessModes::of(&[AccessMode::Read]), T0)
            .unwrap();
        refused(ring.password(&t2.identifier, T0).map(|_| ()), "doesn't exist");
    }

    #[test]
    fn forged_and_altered_tokens_are_refused() {
        let (m, ring) = setup();
        let t = m.mint("alice", 7, AccessModes::of(&[AccessMode::Read]), T0).unwrap();
        // Claim more access, a later expiry, another block or user: the HMAC no longer matches.
        let mut more = t.clone();
        more.identifier.modes = AccessModes::of(&[AccessMode::Read, AccessMode::Write]);
        refused(
            ring.check(Some(&more), POOL, 7, AccessMode::Write, T0),
            "password does not match",
        );
        let mut later = t.clone();
        later.identifier.expiry_ms += 3_600_000;
        refused(
            ring.check(Some(&later), POOL, 7, AccessMode::Read, T0),
            "password does not match",
        );
        let mut other = t.clone();
        other.identifier.block_id = 8;
        refused(
            ring.check(Some(&other), POOL, 8, AccessMode::Read, T0),
            "password does not match",
        );
        let mut bob = t.clone();
        bob.identifier.user = "bob".into();
        refused(
            ring.check(Some(&bob), POOL, 7, AccessMode::Read, T0),
            "password does not match",
        );
        // A flipped bit, a short password, a key nobody handed over.
        let mut flipped = t.clone();
        flipped.password[0] ^= 1;
        refused(
            ring.check(Some(&flipped), POOL, 7, AccessMode::Read, T0),
            "password does not match",
        );
        let mut short = t.clone();
        short.password.truncate(4);
        refused(
            ring.check(Some(&short), POOL, 7, AccessMode::Read, T0),
            "password does not match",
        );
        let stranger = BlockTokenSecretManager::new(POOL, TIMES, T0);
        let t2 = stranger
            .mint("alice", 7, AccessModes::of(&[AccessMode::Read]), T0)
            .unwrap();
        refused(ring.check(Some(&t2), POOL, 7, AccessMode::Read, T0), "doesn't exist");
    }

    #[test]
    fn keys_roll_and_the_next_key_is_known_before_it_signs() {
        let (m, ring) = setup();
        let before = m.mint("alice", 1, AccessModes::of(&[AccessMode::Read]), T0).unwrap();
        let every = TIMES.key_update_interval_ms as i64;
        // The DataNode heard from the member only before the roll.
        let after = m
            .mint("alice", 1, AccessModes::of(&[AccessMode::Read]), T0 + every)
            .unwrap();
        assert_ne!(before.identifier.key_id, after.identifier.key_id, "the key rolled");
        ring.check(Some(&after), POOL, 1, AccessMode::Read, T0 + every).unwrap();
        // The retired key still checks the tokens it signed until they expire.
        ring.update(POOL, &m.export(T0 + every), T0 + every).unwrap();
        ring.check(Some(&before), POOL, 1, AccessMode::Read, T0 + 1).unwrap();
        // Long after, every key is new and old ones are gone from the export.
        let late = T0 + 10 * every;
        let e = m.export(late);
        assert!(e.keys.iter().all(|k| k.expiry_ms >= late));
        assert!(!e.keys.iter().any(|k| k.key_id == before.identifier.key_id));
        ring.update(POOL, &e, late).unwrap();
        refused(ring.check(Some(&before), POOL, 1, AccessMode::Read, late), "is expired");
    }

    #[test]
    fn a_datanode_signs_copies_with_a_members_current_key() {
        let (m, ring) = setup();
        let other_dn = BlockKeyRing::new();
        other_dn.update(POOL, &m.export(T0), T0).unwrap();
        let t = ring
            .mint(POOL, "DataNode dn1", 9, AccessModes::of(&[AccessMode::Write]), T0)
            .unwrap();
        other_dn.check(Some(&t), POOL, 9, AccessMode::Write, T0).unwrap();
        assert!(matches!(
            BlockKeyRing::new().mint(POOL, "x", 9, AccessModes::of(&[AccessMode::Write]), T0),
            Err(FsError::Unavailable(_))
        ));
    }

    #[test]
    fn keys_of_another_pool_or_malformed_keys_are_refused() {
        let (m, ring) = setup();
        assert!(ring.update("BP-other", &m.export(T0), T0).is_err());
        let mut e = m.export(T0);
        e.keys[0].secret.truncate(3);
        assert!(ring.update(POOL, &e, T0).is_err());
        assert!(format!("{:?}", e.keys[1]).contains("redacted"));
        assert!(!format!("{:?}", e.keys[1]).contains(&format!("{:?}", e.keys[1].secret)));
    }

    #[test]
    fn a_proof_shows_a_token_without_its_password() {
        let (m, ring) = setup();
        let m = m.with_protection(DataProtection::Privacy);
        let t = m.mint("alice", 5, AccessModes::of(&[AccessMode::Read]), T0).unwrap();
        assert_eq!(
            t.identifier.protection,
            DataProtection::Privacy,
            "the level is signed in"
        );
        let p = prove(&t, T0).unwrap();
        assert!(!codec::encode(&p)
            .unwrap()
            .windows(t.password.len())
            .any(|w| w == t.password.as_slice()));
        // The recomputed token is the token itself.
        assert_eq!(ring.check_proof(&p, POOL, 5, AccessMode::Read, T0 + 10).unwrap(), t);
        // Within the skew either way; outside it refused.
        let skew = BLOCK_PROOF_SKEW_MS as i64;
        ring.check_proof(&p, POOL, 5, AccessMode::Read, T0 - skew).unwrap();
        refused(
            ring.check_proof(&p, POOL, 5, AccessMode::Read, T0 - skew - 1)
                .map(|_| ()),
            "ms allowed",
        );
        let behind = prove(&t, T0 - skew).unwrap();
        ring.check_proof(&behind, POOL, 5, AccessMode::Read, T0).unwrap();
        refused(
            ring.check_proof(&prove(&t, T0 - skew - 1).unwrap(), POOL, 5, AccessMode::Read, T0)
                .map(|_| ()),
            "ms allowed",
        );
        // What it grants is the token's; an altered proof is forged.
        refused(
            ring.check_proof(&p, POOL, 5, AccessMode::Write, T0).map(|_| ()),
            "doesn't have WRITE",
        );
        refused(
            ring.check_proof(&p, POOL, 6, AccessMode::Read, T0).map(|_| ()),
            "doesn't apply",
        );
        let mut later = p.clone();
        later.time_ms += 1;
        refused(
            ring.check_proof(&later, POOL, 5, AccessMode::Read, T0).map(|_| ()),
            "does not match",
        );
        let mut other_nonce = p.clone();
        other_nonce.nonce[3] ^= 1;
        refused(
            ring.check_proof(&other_nonce, POOL, 5, AccessMode::Read, T0)
                .map(|_| ()),
            "does not match",
        );
        let mut relabelled = p.clone();
        relabelled.identifier.protection = DataProtection::Authentication;
        refused(
            ring.check_proof(&relabelled, POOL, 5, AccessMode::Read, T0).map(|_| ()),
            "does not match",
        );
        // An expired token's proof is refused however fresh.
        let late = t.identifier.expiry_ms + 1;
        refused(
            ring.check_proof(&prove(&t, late).unwrap(), POOL, 5, AccessMode::Read, late)
                .map(|_| ()),
            "is expired",
        );
        // Two proofs of one token differ (fresh nonces).
        assert_ne!(prove(&t, T0).unwrap().nonce, p.nonce);
    }
}
