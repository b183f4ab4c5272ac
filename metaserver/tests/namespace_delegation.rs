//! Delegation tokens in the replicated state, at the namespace level, on
//! both stores and in both execution modes: master keys only from the
//! superuser (the leader's own entries), tokens numbered in sequence and
//! signed by the newest live key, a retried fetch answered with the same
//! token, renewals by the renewer up to the max date, expiry by log time,
//! the sweep dropping expired tokens and keys, cancelling.

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::namespace::delegation::{self, live_tokens, verify};
use raftfs_metaserver::store::{MemStore, RocksStore, RocksStoreOptions, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{CallCtx, DelegationKey, DelegationToken, FsError, Op, OpResult};

const RENEW_MS: u64 = 10_000;
const MAX_MS: u64 = 25_000;

fn ctx(user: &str, call: u64) -> CallCtx {
    CallCtx {
        client_id: format!("client-{user}"),
        call_id: call,
        user: user.into(),
        groups: vec![],
        routed_by: 0,
    }
}

fn key(id: u64, expiry_ms: i64) -> Op {
    Op::AddDelegationKey {
        key: DelegationKey {
            key_id: id,
            created_ms: 0,
            expiry_ms,
            secret: vec![id as u8; 32],
        },
    }
}

fn fetch(e: &Engine<impl Store>, user: &str, call: u64, t: i64) -> Result<DelegationToken, FsError> {
    let op = Op::GetDelegationToken {
        renewer: "yarn".into(),
        max_lifetime_ms: MAX_MS,
        renew_interval_ms: RENEW_MS,
    };
    match e.execute(&ctx(user, call), &op, t)? {
        OpResult::DelegationToken(tok) => Ok(tok),
        other => panic!("getDelegationToken answered {other:?}"),
    }
}

fn renew(e: &Engine<impl Store>, user: &str, call: u64, tok: &DelegationToken, t: i64) -> Result<i64, FsError> {
    let op = Op::RenewDelegationToken {
        token: tok.clone(),
        renew_interval_ms: RENEW_MS,
    };
    match e.execute(&ctx(user, call), &op, t)? {
        OpResult::Expiry(ms) => Ok(ms),
        other => panic!("renewDelegationToken answered {other:?}"),
    }
}

fn denied<T: std::fmt::Debug>(r: Result<T, FsError>, why: &str) {
    match r {
        Err(FsError::AccessControl(m)) => assert!(m.contains(why), "{m:?} should say {why:?}"),
        other => panic!("expected AccessControl ({why}), got {other:?}"),
    }
}

fn scenario<S: Store>(store: S, mode: ExecMode) {
    let e = Engine::open(store, &test_format_info("hdfs", 1_000), mode).unwrap();
    let t0 = 10_000;
    // No key yet: nothing to sign with (the leader makes one first).
    assert!(matches!(fetch(&e, "alice", 1, t0), Err(FsError::Unavailable(_))));
    // Keys are the superuser's (the leader's own entries).
    denied(e.execute(&ctx("alice", 2), &key(1, 1_000_000), t0), "Superuser");
    e.execute(&ctx("hdfs", 1), &key(1, 1_000_000), t0).unwrap();
    assert!(matches!(
        e.execute(&ctx("hdfs", 2), &key(1, 1_000_000), t0),
        Err(FsError::InvalidArgument(_))
    ));

    let a = fetch(&e, "alice", 3, t0).unwrap();
    assert_eq!(a.identifier.sequence_number, 1);
    assert_eq!((a.identifier.owner.as_str(), a.identifier.key_id), ("alice", 1));
    assert_eq!(a.identifier.max_ms, t0 + MAX_MS as i64);
    assert_eq!(
        fetch(&e, "alice", 3, t0 + 5).unwrap(),
        a,
        "a retried fetch gets the same token"
    );
    e.execute(&ctx("hdfs", 3), &key(2, 1_000_000), t0 + 1).unwrap();
    let b = fetch(&e, "bob", 1, t0 + 2).unwrap();
    assert_eq!(
        (b.identifier.sequence_number, b.identifier.key_id),
        (2, 2),
        "the newest key signs"
    );
    assert_eq!(live_tokens(e.store()).unwrap(), 2);

    let view = e.store().view();
    assert_eq!(verify(&*view, &a, t0 + 1).unwrap().owner, "alice");
    denied(verify(&*view, &a, t0 + RENEW_MS as i64 + 1), "is expired");
    drop(view);

    // Renewals: only by the renewer, never past the max date.
    denied(renew(&e, "alice", 4, &a, t0 + 1_000), "non-matching renewer");
    assert_eq!(renew(&e, "yarn", 1, &a, t0 + 9_000).unwrap(), t0 + 19_000);
    assert_eq!(renew(&e, "yarn", 2, &a, t0 + 18_000).unwrap(), t0 + MAX_MS as i64);
    verify(&*e.store().view(), &a, t0 + 24_000).unwrap();

    // The sweep drops what expired by the entry's log time, and expired keys.
    let sweep = |call, t| {
        e.execute(
            &ctx("hdfs", call),
            &Op::ExpireDelegationTokens {
                sequence_numbers: vec![1, 2, 99],
            },
            t,
        )
    };
    sweep(10, t0 + 15_000).unwrap();
    assert!(
        delegation::token_record(e.store(), 1).unwrap().is_some(),
        "renewed: still live"
    );
    assert!(
        delegation::token_record(e.store(), 2).unwrap().is_none(),
        "bob's expired"
    );
    assert_eq!(live_tokens(e.store()).unwrap(), 1);
    denied(verify(&*e.store().view(), &b, t0 + 3), "can't be found");

    // Cancelling: owner or renewer; a cancelled token is gone.
    denied(
        e.execute(
            &ctx("mallory", 1),
            &Op::CancelDelegationToken { token: a.clone() },
            t0 + 20_000,
        ),
        "not authorized",
    );
    e.execute(
        &ctx("alice", 9),
        &Op::CancelDelegationToken { token: a.clone() },
        t0 + 20_000,
    )
    .unwrap();
    denied(verify(&*e.store().view(), &a, t0 + 20_001), "can't be found");
    assert_eq!(live_tokens(e.store()).unwrap(), 0);

    // Past every key's expiry the sweep drops the keys too.
    sweep(11, 2_000_000).unwrap();
    assert!(delegation::delegation_keys(e.store()).unwrap().is_empty());
    assert!(matches!(
        fetch(&e, "alice", 10, 2_000_001),
        Err(FsError::Unavailable(_))
    ));
}

#[test]
fn delegation_tokens_memory() {
    scenario(MemStore::new(), ExecMode::Apply);
    scenario(MemStore::new(), ExecMode::Leader);
}

#[test]
fn delegation_tokens_rocksdb() {
    for mode in [ExecMode::Apply, ExecMode::Leader] {
        let dir = tempfile::tempdir().unwrap();
        scenario(
            RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap(),
            mode,
        );
    }
}
