//! The routers' own delegation tokens (RBF's `RouterSecurityManager`, with
//! its state in the routers' Raft group instead of ZooKeeper):
//! [`RouterTokens`] is the table (master keys, live tokens, the next
//! sequence number) and [`TokenCommand`] a change to it as the routers'
//! log carries it.
//!
//! Why routers issue tokens: a client of the federated namespace (a
//! WebHDFS caller with a certificate, a job that hands a token to its
//! tasks) talks to routers, and a token of one nameservice is worth
//! nothing at another. A router verifies a token it issued and forwards
//! the call as the token's owner, which a member believes of a router's
//! certificate as it believes the user a router names for any caller.
//! Tokens a nameservice issued still pass through to that nameservice.
//!
//! The rules are `raftfs_trust::token_table`'s, the same a nameservice
//! follows. Apply is deterministic: the time is in the command (the
//! leader's clock when it proposed), the secret of a new key too (the
//! leader drew it), sequence numbers count in the table. The table is not
//! part of the [`Federation`](crate::Federation) that clients fetch: its
//! keys are secrets.

use std::collections::BTreeMap;

use raftfs_proto::{DelegationKey, DelegationToken, DelegationTokenIdentifier, FsError};
use raftfs_trust::token_table::{
    self, TokenCaller, TokenChange, TokenLifetimes, TokenRecord, TokenTableView, MAX_TOKENS_PER_EXPIRY,
};
use serde::{Deserialize, Serialize};

/// The `service` of every token the routers issue (a nameservice's tokens
/// name the nameservice): a router verifies these itself and passes any
/// other on to the nameservice that issued it.
pub const ROUTER_TOKEN_SERVICE: &str = "raftfs-routers";

/// A change to the routers' token table, with the time it was proposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TokenCommand {
    /// A new token for `owner` (as the router authenticated it), renewable
    /// by `renewer` (the owner when empty).
    Issue {
        owner: String,
        renewer: String,
        max_lifetime_ms: u64,
        renew_interval_ms: u64,
        now_ms: i64,
    },
    /// Renew `token` for `user` (its renewer).
    Renew {
        token: DelegationToken,
        user: String,
        renew_interval_ms: u64,
        now_ms: i64,
    },
    /// Cancel `token` for `user` (its owner, its renewer or the superuser).
    Cancel {
        token: DelegationToken,
        user: String,
        superuser: bool,
    },
    /// A master key the leader made.
    AddKey { key: DelegationKey, now_ms: i64 },
    /// Drop those of `seqs` expired by `now_ms`, and expired keys.
    Expire { seqs: Vec<u64>, now_ms: i64 },
}

/// What a token command answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum TokenAnswer {
    Token(DelegationToken),
    /// A renewed token's new expiry, Unix ms.
    Expiry(i64),
    Done,
}

/// The routers' token table.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterTokens {
    keys: Vec<DelegationKey>,
    tokens: BTreeMap<u64, TokenRecord>,
    /// The next sequence number (0 before the first token: 1 is used).
    next_seq: u64,
}

impl TokenTableView for RouterTokens {
    fn keys(&self) -> Result<Vec<DelegationKey>, FsError> {
        Ok(self.keys.clone())
    }

    fn record(&self, seq: u64) -> Result<Option<TokenRecord>, FsError> {
        Ok(self.tokens.get(&seq).cloned())
    }

    fn live(&self) -> Result<u64, FsError> {
        Ok(self.tokens.len() as u64)
    }
}

impl RouterTokens {
    /// Apply `cmd`: the answer, or why it was refused (then nothing changed).
    pub fn apply(&mut self, cmd: &TokenCommand) -> Result<TokenAnswer, FsError> {
        match cmd {
            TokenCommand::Issue {
                owner,
                renewer,
                max_lifetime_ms,
                renew_interval_ms,
                now_ms,
            } => {
                let seq = self.next_seq.max(1);
                let caller = TokenCaller {
                    user: owner,
                    superuser: false,
                };
                let lifetimes = TokenLifetimes {
                    max_lifetime_ms: *max_lifetime_ms,
                    renew_interval_ms: *renew_interval_ms,
                };
                let (token, change) = token_table::issue(
                    self,
                    caller,
                    renewer,
                    || Ok(seq),
                    ROUTER_TOKEN_SERVICE,
                    *now_ms,
                    lifetimes,
                )?;
                self.next_seq = seq + 1;
                self.change(change);
                Ok(TokenAnswer::Token(token))
            }
            TokenCommand::Renew {
                token,
                user,
                renew_interval_ms,
                now_ms,
            } => {
                let caller = TokenCaller { user, superuser: false };
                let (expiry, change) = token_table::renew(self, caller, token, *now_ms, *renew_interval_ms)?;
                self.change(change);
                Ok(TokenAnswer::Expiry(expiry))
            }
            TokenCommand::Cancel { token, user, superuser } => {
                let caller = TokenCaller {
                    user,
                    superuser: *superuser,
                };
                let change = token_table::cancel(self, caller, token)?;
                self.change(change);
                Ok(TokenAnswer::Done)
            }
            TokenCommand::AddKey { key, now_ms } => {
                let change = token_table::add_key(self, key, *now_ms)?;
                self.change(change);
                Ok(TokenAnswer::Done)
            }
            TokenCommand::Expire { seqs, now_ms } => {
                for change in token_table::expire(self, seqs, *now_ms)? {
                    self.change(change);
                }
                Ok(TokenAnswer::Done)
            }
        }
    }

    fn change(&mut self, change: TokenChange) {
        match change {
            TokenChange::Put(rec) => {
                self.tokens.insert(rec.identifier.sequence_number, rec);
            }
            TokenChange::Renew {
                sequence_number,
                expiry_ms,
            } => {
                if let Some(rec) = self.tokens.get_mut(&sequence_number) {
                    rec.expiry_ms = rec.expiry_ms.max(expiry_ms);
                }
            }
            TokenChange::Delete { sequence_number } => {
                self.tokens.remove(&sequence_number);
            }
            TokenChange::SetKeys(keys) => self.keys = keys,
        }
    }

    /// The owner `token` authenticates, if the routers issued it and it is
    /// live at `now_ms`.
    pub fn verify(&self, token: &DelegationToken, now_ms: i64) -> Result<DelegationTokenIdentifier, FsError> {
        token_table::verify(self, token, now_ms)
    }

    /// The password of live token `id` of the routers (a Hadoop client
    /// proves it holds it, SASL DIGEST-MD5), refused as [`Self::verify`] refuses.
    pub fn password(&self, id: &DelegationTokenIdentifier, now_ms: i64) -> Result<Vec<u8>, FsError> {
        token_table::password(self, id, now_ms)
    }

    /// The newest master key, if any.
    pub fn newest_key(&self) -> Option<&DelegationKey> {
        self.keys.last()
    }

    /// Sequence numbers of tokens expired by `now_ms`, at most
    /// [`MAX_TOKENS_PER_EXPIRY`], and whether a key has expired (what the
    /// leader's sweep proposes to drop).
    pub fn expired(&self, now_ms: i64) -> (Vec<u64>, bool) {
        let seqs = self
            .tokens
            .iter()
            .filter(|(_, r)| r.expiry_ms < now_ms)
            .map(|(seq, _)| *seq)
            .take(MAX_TOKENS_PER_EXPIRY)
            .collect();
        (seqs, self.keys.iter().any(|k| k.expiry_ms < now_ms))
    }

    /// How many tokens are live.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY_MS: u64 = 24 * 3600 * 1000;

    fn key(id: u64, now_ms: i64) -> TokenCommand {
        TokenCommand::AddKey {
            key: DelegationKey {
                key_id: id,
                created_ms: 0,
                expiry_ms: now_ms + 8 * DAY_MS as i64,
                secret: vec![id as u8; raftfs_trust::delegation::DELEGATION_KEY_SECRET_BYTES],
            },
            now_ms,
        }
    }

    fn issue(t: &mut RouterTokens, owner: &str, now_ms: i64) -> Result<DelegationToken, FsError> {
        let cmd = TokenCommand::Issue {
            owner: owner.into(),
            renewer: String::new(),
            max_lifetime_ms: 7 * DAY_MS,
            renew_interval_ms: DAY_MS,
            now_ms,
        };
        match t.apply(&cmd)? {
            TokenAnswer::Token(token) => Ok(token),
            other => panic!("issue answered {other:?}"),
        }
    }

    #[test]
    fn tokens_are_issued_verified_renewed_cancelled_and_expired() {
        let mut t = RouterTokens::default();
        let refused = issue(&mut t, "alice", 1_000).unwrap_err();
        assert!(matches!(refused, FsError::Unavailable(_)), "no key yet: {refused:?}");
        t.apply(&key(1, 1_000)).unwrap();
        let a = issue(&mut t, "alice", 2_000).unwrap();
        let b = issue(&mut t, "bob", 2_000).unwrap();
        assert_eq!(a.service, ROUTER_TOKEN_SERVICE);
        assert_eq!((a.identifier.sequence_number, b.identifier.sequence_number), (1, 2));
        assert_eq!(t.verify(&a, 3_000).unwrap().owner, "alice");

        // What a client proves it holds without sending it (Hadoop's SASL TOKEN).
        assert_eq!(t.password(&a.identifier, 3_000).unwrap(), a.password);

        let mut forged = a.clone();
        forged.identifier.owner = "root".into();
        assert!(t.verify(&forged, 3_000).is_err(), "an identifier changed after signing");
        assert!(
            t.password(&forged.identifier, 3_000).is_err(),
            "no password for an identifier never issued"
        );
        let mut wrong = a.clone();
        wrong.password[0] ^= 1;
        assert!(t.verify(&wrong, 3_000).is_err(), "a password that does not match");

        // Renewed only by its renewer, and never past its max lifetime.
        let renew = |token: &DelegationToken, user: &str, now_ms: i64| TokenCommand::Renew {
            token: token.clone(),
            user: user.into(),
            renew_interval_ms: DAY_MS,
            now_ms,
        };
        assert!(t.apply(&renew(&a, "bob", 5_000)).is_err());
        let day = DAY_MS as i64;
        assert_eq!(
            t.apply(&renew(&a, "alice", 5_000)).unwrap(),
            TokenAnswer::Expiry(5_000 + day)
        );
        let late = 2_000 + 7 * day - 10;
        assert!(t.verify(&a, late).is_err(), "expired: not renewed in time");
        assert!(
            t.password(&a.identifier, late).is_err(),
            "no password for an expired token"
        );

        // Cancelled by its owner or the superuser only.
        let cancel = |token: &DelegationToken, user: &str, superuser: bool| TokenCommand::Cancel {
            token: token.clone(),
            user: user.into(),
            superuser,
        };
        assert!(t.apply(&cancel(&b, "carol", false)).is_err());
        t.apply(&cancel(&b, "hdfs", true)).unwrap();
        assert!(t.verify(&b, 3_000).is_err(), "cancelled");
        assert!(
            t.password(&b.identifier, 3_000).is_err(),
            "no password for a cancelled token"
        );
        assert_eq!(t.len(), 1);

        // The sweep finds what expired and drops it; a live token stays.
        let c = issue(&mut t, "carol", 2 * day).unwrap();
        let (seqs, _) = t.expired(2 * day + 10);
        assert_eq!(seqs, vec![a.identifier.sequence_number]);
        t.apply(&TokenCommand::Expire {
            seqs,
            now_ms: 2 * day + 10,
        })
        .unwrap();
        assert_eq!(t.len(), 1);
        assert!(t.verify(&c, 2 * day + 10).is_ok());
    }

    #[test]
    fn applying_the_same_commands_gives_the_same_table() {
        let cmds = [key(1, 10), key(2, 20)];
        let (mut x, mut y) = (RouterTokens::default(), RouterTokens::default());
        for c in &cmds {
            x.apply(c).unwrap();
            y.apply(c).unwrap();
        }
        let tx = issue(&mut x, "alice", 30).unwrap();
        let ty = issue(&mut y, "alice", 30).unwrap();
        assert_eq!(tx, ty, "the same password on every router");
        assert_eq!(x, y);
        assert_eq!(x.newest_key().unwrap().key_id, 2);
        assert!(x.apply(&key(2, 40)).is_err(), "a key not newer than the newest");
    }
}
