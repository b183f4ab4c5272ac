//! Both execution modes give identical namespaces (DESIGN.md §4): the same
//! seeded random op sequences, every op kind with their errors (missing
//! paths, permissions, quotas, leases, bad block arguments, retried calls),
//! run under `--exec apply` and `--exec leader`, on both stores; every
//! answer must match, and at the end the two stores must hold the same
//! records (inodes, entries, blocks, leases, retry table, counters).
//! The seed is printed; `EXEC_MODES_SEED=N` replays one. Seeds that once
//! found a difference run every time ([`REGRESSION_SEEDS`]).

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::namespace::RETRY_CACHE_EXPIRY_MS;
use raftfs_metaserver::store::{MemStore, RocksStore, RocksStoreOptions, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{Block, CallCtx, FsError, Op, OpResult, Permission, QuotaSetting};

const SEQUENCES: u64 = 12;
/// Sequences that found a difference once, each with what it was.
const REGRESSION_SEEDS: [u64; 1] = [
    // Step 459: a block recovery committed for a file a recursive delete
    // had detached (`--exec leader` committed it; apply had deleted it).
    3_192_753_945_835_928_264,
];
const OPS_PER_SEQUENCE: usize = 600;

const NAMES: [&str; 4] = ["a", "b", "c", "d"];

/// What the generator remembers of earlier answers, to make data-path ops
/// that can succeed.
#[derive(Default)]
struct Memory {
    /// The last block each path's writer got, and the stamp a pipeline update gave it.
    blocks: HashMap<String, Block>,
    bumped: HashMap<String, Block>,
    recoveries: Vec<(u64, Block, u64)>,
    calls: Vec<(CallCtx, Op)>,
    next_call: u64,
}

fn path(rng: &mut StdRng) -> String {
    match rng.gen_range(0..40) {
        0 => "/".into(),
        1 => "relative/x".into(),
        2 => "/a/../b".into(),
        3 => format!("/.reserved/.inodes/16385/{}", NAMES[rng.gen_range(0..4)]),
        _ => {
            let depth = rng.gen_range(1..=3);
            (0..depth).map(|_| format!("/{}", NAMES[rng.gen_range(0..4)])).collect()
        }
    }
}

fn ctx(rng: &mut StdRng, m: &mut Memory) -> CallCtx {
    let (user, groups): (&str, Vec<String>) = match rng.gen_range(0..10) {
        0..=5 => ("hdfs", vec![]),
        6..=8 => ("alice", vec!["staff".into()]),
        _ => ("bob", vec![]),
    };
    m.next_call += 1;
    CallCtx {
        client_id: ["c1", "c2"][rng.gen_range(0..2)].into(),
        call_id: m.next_call,
        user: user.into(),
        groups,
        routed_by: 0,
    }
}

fn with_len(b: Block, rng: &mut StdRng) -> Block {
    Block {
        num_bytes: rng.gen_range(0..=(1u64 << 20)),
        ..b
    }
}

fn random_op(rng: &mut StdRng, m: &mut Memory) -> (CallCtx, Op) {
    // A retry of an earlier call, exactly as it was sent.
    if !m.calls.is_empty() && rng.gen_bool(0.05) {
        let i = rng.gen_range(m.calls.len().saturating_sub(10)..m.calls.len());
        return m.calls[i].clone();
    }
    let c = ctx(rng, m);
    let p = path(rng);
    let last = |m: &Memory, p: &str| m.blocks.get(p).copied();
    let op = match rng.gen_range(0..29) {
        0..=3 => Op::Mkdirs {
            path: p,
            permission: Permission([0o755, 0o700, 0o777][rng.gen_range(0..3)]),
            create_parent: rng.gen_bool(0.7),
        },
        4..=7 => Op::Create {
            path: p,
            permission: Permission(0o644),
            overwrite: rng.gen_bool(0.3),
            create_parent: rng.gen_bool(0.7),
            replication: [1, 3, 0][rng.gen_range(0..3)],
            block_size: [1 << 20, 1000][rng.gen_range(0..2)],
        },
        8 => Op::Complete {
            last: last(m, &p).map(|b| with_len(b, rng)),
            path: p,
        },
        9 => Op::Rename { src: p, dst: path(rng) },
        10 => Op::Rename2 {
            src: p,
            dst: path(rng),
            overwrite: rng.gen_bool(0.5),
        },
        11 => Op::Delete {
            path: p,
            recursive: rng.gen_bool(0.5),
        },
        12 => Op::SetPermission {
            path: p,
            permission: Permission([0o755, 0o700, 0o1777][rng.gen_range(0..3)]),
        },
        13 => Op::SetOwner {
            path: p,
            owner: rng.gen_bool(0.5).then(|| "alice".into()),
            group: rng.gen_bool(0.5).then(|| "staff".into()),
        },
        14 => Op::SetReplication {
            path: p,
            replication: rng.gen_range(0..4),
        },
        15 => Op::SetTimes {
            path: p,
            mtime: rng.gen_bool(0.5).then(|| rng.gen_range(0..1_000_000)),
            atime: rng.gen_bool(0.5).then(|| rng.gen_range(0..1_000_000)),
        },
        16 => {
            let q = |rng: &mut StdRng| match rng.gen_range(0..3) {
                0 => QuotaSetting::Keep,
                1 => QuotaSetting::Clear,
                _ => QuotaSetting::Set([0, 2, 4, 10, 3 << 20][rng.gen_range(0..5)]),
            };
            Op::SetQuota {
                path: p,
                namespace: q(rng),
                space: q(rng),
            }
        }
        17..=18 => Op::AddBlock {
            previous: last(m, &p).map(|b| with_len(b, rng)),
            path: p,
            excluded: vec![],
        },
        19 => match last(m, &p) {
            Some(b) => Op::AbandonBlock { path: p, block: b },
            None => Op::RenewLease,
        },
        20 => match last(m, &p) {
            Some(b) => Op::UpdateBlockForPipeline { path: p, block: b },
            None => Op::RenewLease,
        },
        21 => match (last(m, &p), m.bumped.get(&p).copied()) {
            (Some(old), Some(new)) => Op::UpdatePipeline {
                path: p,
                old,
                new: with_len(new, rng),
                nodes: vec![],
            },
            _ => Op::RenewLease,
        },
        22 => Op::Append { path: p },
        23 => Op::RecoverLease { path: p },
        24 => match m.recoveries.pop() {
            Some((inode, block, recovery_id)) => {
                let mut c = c.clone();
                c.user = "hdfs".into();
                return remember(
                    m,
                    c,
                    Op::CommitBlockSynchronization {
                        path_inode: inode,
                        block,
                        new_gen_stamp: recovery_id,
                        new_length: rng.gen_range(0..2) * 4096,
                        nodes: vec![],
                    },
                );
            }
            None => Op::RenewLease,
        },
        25 => Op::SetDatanodeAdmin {
            node: format!("dn{}", rng.gen_range(0..3)),
            decommission: rng.gen_bool(0.5),
        },
        26 => Op::Concat {
            target: p,
            sources: (0..rng.gen_range(1..4)).map(|_| path(rng)).collect(),
        },
        27 => Op::Truncate {
            path: p,
            new_length: [0, 1, 4096, 1 << 20][rng.gen_range(0..4)],
        },
        _ => match rng.gen_range(0..3) {
            0 => Op::GetFileInfo { path: p },
            1 => Op::GetListing {
                path: p,
                start_after: String::new(),
                limit: 1000,
            },
            _ => Op::GetContentSummary { path: p },
        },
    };
    remember(m, c, op)
}

fn remember(m: &mut Memory, c: CallCtx, op: Op) -> (CallCtx, Op) {
    m.calls.push((c.clone(), op.clone()));
    (c, op)
}

/// Learn from an answer what later data-path ops can use.
fn learn(m: &mut Memory, op: &Op, r: &Result<OpResult, FsError>) {
    match (op, r) {
        (Op::AddBlock { path, .. }, Ok(OpResult::Located(lb))) => {
            m.blocks.insert(path.clone(), lb.block);
        }
        (Op::UpdateBlockForPipeline { path, .. }, Ok(OpResult::Located(lb))) => {
            m.bumped.insert(path.clone(), lb.block);
        }
        (Op::UpdatePipeline { path, new, .. }, Ok(_)) => {
            m.blocks.insert(path.clone(), *new);
        }
        (
            Op::RecoverLease { .. } | Op::Truncate { .. },
            Ok(
                OpResult::RecoveryStarted {
                    inode,
                    block,
                    recovery_id,
                }
                | OpResult::TruncateStarted {
                    inode,
                    block,
                    recovery_id,
                },
            ),
        ) => m.recoveries.push((*inode, *block, *recovery_id)),
        _ => {}
    }
}

/// Run the [`SEQUENCES`] sequences from `base_seed`, then [`REGRESSION_SEEDS`].
fn compare<S: Store>(store: impl Fn() -> (S, Option<tempfile::TempDir>), name: &str, base_seed: u64) {
    let seeds = (0..SEQUENCES).map(|seq| base_seed.wrapping_add(seq));
    for seed in seeds.chain(REGRESSION_SEEDS) {
        let (sa, _da) = store();
        let (sl, _dl) = store();
        let info = test_format_info("hdfs", 1_000_000);
        let apply = Engine::open(sa, &info, ExecMode::Apply).unwrap();
        let leader = Engine::open(sl, &info, ExecMode::Leader).unwrap();
        let mut rng = StdRng::seed_from_u64(seed);
        let mut m = Memory::default();
        let mut t = 1_000_000i64;
        for step in 0..OPS_PER_SEQUENCE {
            t += match rng.gen_range(0..50) {
                0 => 61_000,  // past the lease soft limit
                1 => 700_000, // past the retry table's expiry
                _ => rng.gen_range(1..2_000),
            };
            let (c, op) = random_op(&mut rng, &mut m);
            let a = apply.execute(&c, &op, t);
            let l = leader.execute(&c, &op, t);
            assert_eq!(
                a, l,
                "{name}, seed {seed}, step {step}: {op:?} by {c:?} answered differently (apply, leader)"
            );
            learn(&mut m, &op, &a);
        }
        // A failed write makes an entry in apply mode only, and each entry
        // expires retry records and moves log time: one last write, far
        // past the retry window, brings both to the same point.
        t += 2 * RETRY_CACHE_EXPIRY_MS;
        // A recursive delete in leader mode detached its subtree; reclaim it
        // (apply mode deleted it whole).
        assert_eq!(
            apply.reclaim_all(t),
            Ok(0),
            "{name}, seed {seed}: apply mode detaches nothing"
        );
        leader.reclaim_all(t).unwrap();
        // (A lease renewal always succeeds and always makes an entry.)
        let c = ctx(&mut rng, &mut m);
        assert_eq!(
            apply.execute(&c, &Op::RenewLease, t),
            Ok(OpResult::Unit),
            "{name}, seed {seed}"
        );
        assert_eq!(
            leader.execute(&c, &Op::RenewLease, t),
            Ok(OpResult::Unit),
            "{name}, seed {seed}"
        );
        let (ia, il) = (apply.store().export().unwrap(), leader.store().export().unwrap());
        assert_eq!(ia.inodes, il.inodes, "{name}, seed {seed}: inodes differ");
        assert_eq!(ia.dentries, il.dentries, "{name}, seed {seed}: entries differ");
        assert_eq!(ia.blocks, il.blocks, "{name}, seed {seed}: block table differs");
        assert_eq!(ia.leases, il.leases, "{name}, seed {seed}: leases differ");
        assert_eq!(
            ia.lease_files, il.lease_files,
            "{name}, seed {seed}: lease files differ"
        );
        assert_eq!(ia.retry, il.retry, "{name}, seed {seed}: retry tables differ");
        for ((ka, va), (kl, vl)) in ia.meta.iter().zip(&il.meta) {
            assert_eq!((ka, va), (kl, vl), "{name}, seed {seed}: meta row {ka} differs");
        }
        assert_eq!(ia.meta.len(), il.meta.len(), "{name}, seed {seed}: meta rows differ");
        assert!(ia.inodes.len() > 1, "{name}, seed {seed}: the sequence created nothing");
    }
}

fn base_seed() -> u64 {
    let s = std::env::var("EXEC_MODES_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen());
    println!("exec modes seed {s} (EXEC_MODES_SEED={s} replays; sequence k uses seed + k)");
    s
}

#[test]
fn both_modes_agree_memory_store() {
    compare(|| (MemStore::new(), None), "memory", base_seed());
}

#[test]
fn both_modes_agree_rocksdb_store() {
    compare(
        || {
            let dir = tempfile::tempdir().unwrap();
            let s = RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap();
            (s, Some(dir))
        },
        "rocksdb",
        base_seed(),
    );
}
