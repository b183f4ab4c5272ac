//! A DataNode's memory of the block token proofs it accepted (a Kerberos
//! replay cache): each nonce is accepted once.
//!
//! What it guarantees: a nonce remembered is refused for
//! [`SEEN_PROOF_MEMORY_MS`] (twice [`BLOCK_PROOF_SKEW_MS`]) after it was
//! first accepted; by then a proof made with it is outside the skew window
//! and refused for its time. Memory is bounded: at most
//! [`MAX_REMEMBERED_BLOCK_PROOFS`] nonces; when that many proofs arrived
//! in the last [`SEEN_PROOF_MEMORY_MS`], new ones are refused with a
//! retryable error instead of forgetting one that may still be replayed.
//!
//! Caveats: memory is kept by the monotonic clock and the skew window by
//! the wall clock, so a DataNode's wall clock stepped back by more than the
//! window could accept a forgotten proof again (within its token's life).
//! A restarted DataNode forgets every nonce: a proof captured in the last
//! [`BLOCK_PROOF_SKEW_MS`] before the restart could be shown once more.

use std::collections::{HashSet, VecDeque};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use raftfs_proto::FsError;

use crate::block_token::BLOCK_PROOF_SKEW_MS;

/// How long a nonce is remembered.
pub const SEEN_PROOF_MEMORY_MS: u64 = 2 * BLOCK_PROOF_SKEW_MS;
/// Most nonces remembered at once (~50 MB; 3,300 proofs a second for 10 min).
pub const MAX_REMEMBERED_BLOCK_PROOFS: usize = 1_000_000;

struct Remembered {
    nonces: HashSet<[u8; 16]>,
    /// In the order they arrived, with when each may be forgotten.
    by_age: VecDeque<(Instant, [u8; 16])>,
}

/// The nonces of the proofs accepted in the last [`SEEN_PROOF_MEMORY_MS`].
pub struct SeenProofs {
    remembered: Mutex<Remembered>,
    capacity: usize,
}

impl Default for SeenProofs {
    fn default() -> Self {
        SeenProofs::with_capacity(MAX_REMEMBERED_BLOCK_PROOFS)
    }
}

impl SeenProofs {
    pub fn with_capacity(capacity: usize) -> SeenProofs {
        assert!(capacity > 0, "a replay cache must remember something");
        SeenProofs {
            remembered: Mutex::new(Remembered {
                nonces: HashSet::new(),
                by_age: VecDeque::new(),
            }),
            capacity,
        }
    }

    /// Accept `nonce` once: refused if it was accepted before (a replay) or
    /// if the memory is full.
    pub fn first_sight(&self, nonce: &[u8; 16], now: Instant) -> Result<(), FsError> {
        let mut r = self.remembered.lock();
        while let Some((forget_at, old)) = r.by_age.front().copied() {
            if forget_at > now {
                break;
            }
            r.by_age.pop_front();
            r.nonces.remove(&old);
        }
        if r.nonces.contains(nonce) {
            return Err(FsError::InvalidToken(
                "this block token proof was shown before (a replay): each request makes a fresh one".into(),
            ));
        }
        if r.nonces.len() >= self.capacity {
            return Err(FsError::Unavailable(format!(
                "this DataNode accepted {} block token proofs in the last {SEEN_PROOF_MEMORY_MS} ms, \
                 as many as it remembers; try again",
                self.capacity
            )));
        }
        r.nonces.insert(*nonce);
        r.by_age
            .push_back((now + Duration::from_millis(SEEN_PROOF_MEMORY_MS), *nonce));
        Ok(())
    }

    pub fn len(&self) -> usize {
        self.remembered.lock().nonces.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_nonce_is_accepted_once_until_it_is_forgotten() {
        let seen = SeenProofs::with_capacity(8);
        let t0 = Instant::now();
        seen.first_sight(&[1; 16], t0).unwrap();
        seen.first_sight(&[2; 16], t0).unwrap();
        let again = seen.first_sight(&[1; 16], t0 + Duration::from_millis(SEEN_PROOF_MEMORY_MS - 1));
        assert!(
            matches!(again, Err(FsError::InvalidToken(ref m)) if m.contains("replay")),
            "{again:?}"
        );
        // Forgotten once its memory is over (its time is outside the skew by then).
        let later = t0 + Duration::from_millis(SEEN_PROOF_MEMORY_MS);
        seen.first_sight(&[1; 16], later).unwrap();
        assert_eq!(seen.len(), 1, "both old nonces were forgotten, the new sight kept");
    }

    #[test]
    fn a_full_memory_refuses_new_proofs_and_forgets_nothing_early() {
        let seen = SeenProofs::with_capacity(2);
        let t0 = Instant::now();
        seen.first_sight(&[1; 16], t0).unwrap();
        seen.first_sight(&[2; 16], t0).unwrap();
        let full = seen.first_sight(&[3; 16], t0 + Duration::from_millis(1));
        assert!(matches!(full, Err(FsError::Unavailable(_))), "{full:?}");
        assert!(full.unwrap_err().is_retryable());
        // The remembered ones are still refused.
        assert!(seen.first_sight(&[2; 16], t0 + Duration::from_millis(2)).is_err());
        seen.first_sight(&[3; 16], t0 + Duration::from_millis(SEEN_PROOF_MEMORY_MS))
            .unwrap();
    }
}
