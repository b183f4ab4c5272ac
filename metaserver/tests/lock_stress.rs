//! The lock manager under contention (`metaserver::locks`): many threads
//! lock random pairs of paths over a small tree, as renames and deletes
//! do, and must finish (no deadlock: a watchdog fails the test) without a
//! lost update: each thread does an unprotected read-modify-write of a
//! counter per key it holds in WRITE (and of every descendant's counter,
//! since a WRITE edge covers the subtree), so two holders of one key at
//! once lose increments. The seed is printed; `LOCK_STRESS_SEED=N` replays.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::locks::{lock_paths, LockKey, LockMode, LockPool, PathLockRequest, PathMode, Wait};
use raftfs_metaserver::path::FsPath;
use raftfs_metaserver::store::{MemStore, ReadView, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{CallCtx, Op, OpResult, Permission};

const THREADS: usize = 8;
const ROUNDS_PER_THREAD: usize = 3000;
const WATCHDOG_SECS: u64 = 120;

/// The tree: /d{0..3}/s{0..2}/f{0..2} (directories d and s; files f).
fn paths() -> Vec<String> {
    let mut out = Vec::new();
    for d in 0..4 {
        out.push(format!("/d{d}"));
        for s in 0..3 {
            out.push(format!("/d{d}/s{s}"));
            for f in 0..3 {
                out.push(format!("/d{d}/s{s}/f{f}"));
            }
        }
    }
    // Names that do not exist (a create's or a rename destination's).
    out.push("/d1/new".into());
    out.push("/d2/s1/new".into());
    out.push("/missing/x".into());
    out
}

fn seed() -> u64 {
    std::env::var("LOCK_STRESS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::thread_rng().gen())
}

fn build_tree() -> Engine<Arc<MemStore>> {
    let e = Engine::open(
        Arc::new(MemStore::new()),
        &test_format_info("hdfs", 0),
        ExecMode::Leader,
    )
    .unwrap();
    let ctx = CallCtx {
        client_id: "setup".into(),
        call_id: 0,
        user: "hdfs".into(),
        groups: vec![],
        routed_by: 0,
    };
    for (i, p) in paths().iter().enumerate() {
        if p.contains("new") || p.contains("missing") {
            continue;
        }
        let mut c = ctx.clone();
        c.call_id = i as u64 + 1;
        let op = if p.rsplit('/').next().unwrap().starts_with('f') {
            Op::Create {
                path: p.clone(),
                permission: Permission(0o644),
                overwrite: false,
                create_parent: false,
                replication: 1,
                block_size: 1 << 20,
            }
        } else {
            Op::Mkdirs {
                path: p.clone(),
                permission: Permission(0o755),
                create_parent: false,
            }
        };
        assert!(matches!(
            e.execute(&c, &op, 1),
            Ok(OpResult::Status(_) | OpResult::Bool(true))
        ));
    }
    e
}

/// Inode ids of every existing path, and each path's ancestors' ids.
fn ids<S: ReadView + ?Sized>(store: &S) -> HashMap<String, u64> {
    let mut out = HashMap::new();
    for p in paths() {
        let mut cur = raftfs_metaserver::inode::ROOT_ID;
        let mut ok = true;
        for name in p.trim_start_matches('/').split('/') {
            match store.child(cur, name).unwrap() {
                Some(c) => cur = c,
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            out.insert(p, cur);
        }
    }
    out
}

#[test]
fn random_two_path_locks_neither_deadlock_nor_lose_updates() {
    let seed = seed();
    println!("lock stress seed {seed} (LOCK_STRESS_SEED={seed} replays)");
    let engine = build_tree();
    let store = engine.store().clone();
    let ids = Arc::new(ids(&*store));
    let paths = Arc::new(paths());
    // One counter per existing inode.
    let counters: Arc<HashMap<u64, AtomicU64>> = Arc::new(ids.values().map(|id| (*id, AtomicU64::new(0))).collect());
    let pool = Arc::new(LockPool::with_watermarks(64, 16)); // small: eviction runs all the time
    let done = Arc::new(AtomicBool::new(false));
    let expected = Arc::new(AtomicU64::new(0));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            while !done.load(Ordering::Relaxed) {
                assert!(
                    start.elapsed() < Duration::from_secs(WATCHDOG_SECS),
                    "lock stress (seed {seed}) did not finish in {WATCHDOG_SECS} s: deadlock"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (store, ids, paths, counters, pool, expected) = (
                store.clone(),
                ids.clone(),
                paths.clone(),
                counters.clone(),
                pool.clone(),
                expected.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed.wrapping_add(t as u64));
                for _ in 0..ROUNDS_PER_THREAD {
                    let pick = |rng: &mut StdRng| paths[rng.gen_range(0..paths.len())].clone();
                    let (a, b) = (pick(&mut rng), pick(&mut rng));
                    let mode = |rng: &mut StdRng| match rng.gen_range(0..4) {
                        0 => PathMode::Read,
                        1 => PathMode::WriteInode,
                        2 => PathMode::CreateEdge,
                        _ => PathMode::WriteEdge,
                    };
                    let mut reqs = vec![PathLockRequest {
                        path: FsPath::parse(&a).unwrap(),
                        mode: mode(&mut rng),
                    }];
                    if rng.gen_bool(0.7) {
                        reqs.push(PathLockRequest {
                            path: FsPath::parse(&b).unwrap(),
                            mode: mode(&mut rng),
                        });
                    }
                    // Now and then by inode id, as an op naming a file by id does.
                    if rng.gen_bool(0.1) {
                        if let Some(id) = ids.get(&a) {
                            reqs[0].path = FsPath::parse(&format!("/.reserved/.inodes/{id}")).unwrap();
                        }
                    }
                    let wait = if rng.gen_bool(0.2) { Wait::Try } else { Wait::Block };
                    let locks = match lock_paths(&pool, &*store, &reqs, wait) {
                        Ok(l) => l.locks,
                        Err(raftfs_metaserver::locks::LockError::WouldBlock(_)) => continue,
                        Err(e) => panic!("seed {seed}: lock {reqs:?}: {e}"),
                    };
                    // Everything this thread may write: inodes held in
                    // WRITE, and the subtree of every WRITE edge.
                    let mut mine: Vec<u64> = Vec::new();
                    for (key, mode) in locks.keys() {
                        if mode != LockMode::Write {
                            continue;
                        }
                        match key {
                            LockKey::Inode(id) => mine.push(*id),
                            LockKey::Edge(parent, name) => {
                                let parent_path = paths
                                    .iter()
                                    .find(|p| ids.get(*p) == Some(parent))
                                    .cloned()
                                    .unwrap_or_default();
                                let prefix = format!("{parent_path}/{name}");
                                for (p, id) in ids.iter() {
                                    if p == &prefix || p.starts_with(&format!("{prefix}/")) {
                                        mine.push(*id);
                                    }
                                }
                            }
                        }
                    }
                    mine.sort_unstable();
                    mine.dedup();
                    for id in &mine {
                        let c = &counters[id];
                        let v = c.load(Ordering::Relaxed);
                        std::thread::yield_now();
                        c.store(v + 1, Ordering::Relaxed);
                    }
                    expected.fetch_add(mine.len() as u64, Ordering::Relaxed);
                    drop(locks);
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    done.store(true, Ordering::Relaxed);
    watchdog.join().unwrap();
    let total: u64 = counters.values().map(|c| c.load(Ordering::Relaxed)).sum();
    assert_eq!(
        total,
        expected.load(Ordering::Relaxed),
        "seed {seed}: increments under WRITE locks were lost: two holders of one key at once"
    );
    assert!(total > 0, "seed {seed}: no WRITE lock was ever taken");
    assert!(pool.len() <= 64 + THREADS * 40, "the pool stays near its bound");
}

/// Renames and deletes through the engine (`--exec leader`) from many
/// threads over the same small tree: they finish, and the namespace is
/// whole afterwards (every directory's child count matches its listing,
/// and every inode is reachable exactly once).
#[test]
fn concurrent_renames_and_deletes_keep_the_tree_whole() {
    let seed = seed();
    println!("rename/delete stress seed {seed} (LOCK_STRESS_SEED={seed} replays)");
    let engine = Arc::new(build_tree());
    let paths = Arc::new(paths());
    let calls = Arc::new(AtomicU64::new(1_000_000));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (engine, paths, calls) = (engine.clone(), paths.clone(), calls.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed.wrapping_add(100 + t as u64));
                for _ in 0..400 {
                    let pick = |rng: &mut StdRng| paths[rng.gen_range(0..paths.len())].clone();
                    let op = match rng.gen_range(0..6) {
                        0 => Op::Rename {
                            src: pick(&mut rng),
                            dst: pick(&mut rng),
                        },
                        1 => Op::Rename2 {
                            src: pick(&mut rng),
                            dst: pick(&mut rng),
                            overwrite: rng.gen_bool(0.5),
                        },
                        2 => Op::Delete {
                            path: pick(&mut rng),
                            recursive: rng.gen_bool(0.3),
                        },
                        3 => Op::Mkdirs {
                            path: pick(&mut rng),
                            permission: Permission(0o755),
                            create_parent: true,
                        },
                        4 => Op::Create {
                            path: pick(&mut rng),
                            permission: Permission(0o644),
                            overwrite: true,
                            create_parent: true,
                            replication: 1,
                            block_size: 1 << 20,
                        },
                        _ => Op::SetPermission {
                            path: pick(&mut rng),
                            permission: Permission(0o700),
                        },
                    };
                    let ctx = CallCtx {
                        client_id: format!("w{t}"),
                        call_id: calls.fetch_add(1, Ordering::Relaxed),
                        user: "hdfs".into(),
                        groups: vec![],
                        routed_by: 0,
                    };
                    if let Err(e) = engine.execute(&ctx, &op, 10) {
                        assert!(!e.is_retryable(), "seed {seed}: {op:?} gave up: {e}");
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    // Reclaim what recursive deletes detached, then walk the tree: counts
    // match listings, every inode is reached once (but the directory that
    // held the detached subtrees, now empty).
    engine.reclaim_all(10).unwrap();
    let store = engine.store();
    let detached = raftfs_metaserver::inode::DETACHED_ID;
    assert!(
        store.children(detached, "", 10).unwrap().is_empty(),
        "seed {seed}: all reclaimed"
    );
    let image = store.export().unwrap();
    let mut seen = std::collections::HashSet::new();
    let mut stack = vec![raftfs_metaserver::inode::ROOT_ID];
    while let Some(dir) = stack.pop() {
        assert!(seen.insert(dir), "seed {seed}: inode {dir} reached twice");
        let inode = store.inode(dir).unwrap().expect("reachable inode exists");
        if !inode.is_dir() {
            continue;
        }
        let kids = store.children(dir, "", 10_000).unwrap();
        assert_eq!(
            inode.children(),
            kids.len() as u64,
            "seed {seed}: directory {dir}'s child count against its listing"
        );
        for (_, c) in kids {
            assert_eq!(
                store.inode(c).unwrap().unwrap().parent,
                dir,
                "seed {seed}: parent pointer of {c}"
            );
            stack.push(c);
        }
    }
    assert_eq!(
        seen.len() + 1,
        image.inodes.len(),
        "seed {seed}: inodes not reachable from the root"
    );
}
