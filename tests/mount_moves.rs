//! Moving a mount point between nameservices under a running write load.
//! Writers create files under the mount point, some routing by the SDK
//! itself (direct mode), some through the router, and one that never
//! learns a newer table than the first (a client cut off from the routers:
//! it keeps sending /mv's calls to ns1, routed by that version), while the mount point
//! moves back and forth between the two nameservices at times drawn from a
//! printed seed (`RAFTFS_TEST_SEED=N` replays one). Two things must hold:
//!
//! * no write lands in a nameservice after it gave the path up: a write
//!   sent after a move was acknowledged (and before the next move began)
//!   is in the nameservice the path moved to, though SDK clients learn of
//!   the move only a few milliseconds later (their stale writes are
//!   refused by the old nameservice and routed again); and from the moment
//!   a move is acknowledged until the path moves back, the nameservice the
//!   path left gains no file under it;
//! * every acknowledged write is found afterwards, in exactly one
//!   nameservice (a refused write was not run, and was routed again).

use crate::common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::federated::Federated;
use common::Cluster;
use raftfs_client::{ClientOptions, Routing};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Times the mount point moves.
const MOVES: usize = 6;
/// Writers of each kind (direct, through the router).
const WRITERS_PER_ROUTING: usize = 3;

/// The names under /mv in nameservice `ns` (asked of its own members: not
/// routed, so never refused).
async fn held(ns: &Cluster) -> BTreeSet<String> {
    ns.client("hdfs", &[])
        .list_status("/mv")
        .await
        .expect("list /mv in a nameservice")
        .into_iter()
        .map(|s| s.path_suffix)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moving_a_mount_point_under_load_never_writes_where_it_left() {
    let seed = std::env::var("RAFTFS_TEST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random::<u64>);
    println!("mount point moves under load: seed {seed} (replay: RAFTFS_TEST_SEED={seed})");
    let mut rng = StdRng::seed_from_u64(seed);

    let f = Federated::start(1, Routing::Direct).await;
    for ns in [&f.ns1, &f.ns2] {
        for args in [&["-mkdir", "-p", "/mv"][..], &["-chmod", "777", "/mv"]] {
            let (code, out, err) = ns.dfs("hdfs", args);
            assert_eq!(code, 0, "{out}{err}");
        }
    }
    f.routers.admin_ok(&["-add", "/mv", "ns1", "/mv"]);
    let first = f.routers.version().await;
    f.routers.wait_version(first).await;

    let stop = Arc::new(AtomicBool::new(false));
    // Acknowledged writes: name, and when the writer sent it.
    let acked = Arc::new(Mutex::new(Vec::<(String, Instant)>::new()));
    let refused = Arc::new(AtomicU64::new(0));
    let mut writers = Vec::new();
    for (w, routing) in (0..2 * WRITERS_PER_ROUTING).map(|w| {
        let r = if w % 2 == 0 {
            Routing::Direct
        } else {
            Routing::ViaRouter
        };
        (w, r)
    }) {
        let fs = f.client(
            "alice",
            ClientOptions {
                routing,
                ..f.ns1.client_options()
            },
        );
        let (stop, acked, refused) = (stop.clone(), acked.clone(), refused.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("w{w}-{n}");
                n += 1;
                let sent = Instant::now();
                match fs.create(&format!("/mv/{name}"), false).await {
                    Ok(_) => acked.lock().unwrap().push((name, sent)),
                    // Unacknowledged: it may or may not have run.
                    Err(e) if e.is_retryable() => {
                        refused.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => panic!("writer {w} ({routing:?}): create /mv/{name}: {e}"),
                }
            }
        }));
    }

    // The stale writer: ns1's writes routed by the first table, for ever.
    let stale_landed = Arc::new(Mutex::new(Vec::<String>::new()));
    let stale_refused = Arc::new(AtomicU64::new(0));
    {
        let mut raw = f.ns1.namespace_client(&f.ns1.members[&1]).await;
        let (stop, landed, refused) = (stop.clone(), stale_landed.clone(), stale_refused.clone());
        writers.push(tokio::spawn(async move {
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                let name = format!("stale-{n}");
                let create = raftfs_proto::Op::Create {
                    path: format!("/mv/{name}"),
                    permission: raftfs_proto::Permission::new(0o644),
                    overwrite: false,
                    create_parent: false,
                    replication: 1,
                    block_size: 1 << 20,
                };
                match common::raw_routed_call(&mut raw, "stale-client", n, &create, first).await {
                    Ok(_) => landed.lock().unwrap().push(name),
                    Err(raftfs_proto::FsError::NotOwned { .. }) => {
                        refused.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    Err(e) => panic!("stale writer: create /mv/{name}: {e}"),
                }
            }
        }));
    }

    // owner: which nameservice /mv is in; left: what each held when it gave /mv up.
    let clusters = [&f.ns1, &f.ns2];
    let mut owner = 0usize;
    let mut left: [Option<BTreeSet<String>>; 2] = [None, None];
    // Per move: when it began, when it was acknowledged, where /mv went.
    let mut moves: Vec<(Instant, Instant, usize)> = Vec::new();
    for m in 0..MOVES {
        tokio::time::sleep(Duration::from_millis(rng.gen_range(150..700))).await;
        let to = 1 - owner;
        // Before /mv returns to `to`, it gained nothing since it gave /mv up.
        if let Some(then) = left[to].take() {
            let now = held(clusters[to]).await;
            let late: Vec<_> = now.difference(&then).collect();
            assert!(
                late.is_empty(),
                "seed {seed}, move {m}: ns{} took writes after it gave /mv up: {late:?}",
                to + 1
            );
        }
        let began = Instant::now();
        f.routers.admin_ok(&["-update", "/mv", &format!("ns{}", to + 1), "/mv"]);
        moves.push((began, Instant::now(), to));
        left[owner] = Some(held(clusters[owner]).await);
        println!(
            "move {}: /mv to ns{} ({} writes acknowledged so far)",
            m + 1,
            to + 1,
            acked.lock().unwrap().len()
        );
        owner = to;
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("writer");
    }
    // The last nameservice /mv left gained nothing either, writers stopped.
    for (i, then) in left.iter().enumerate() {
        if let Some(then) = then {
            let now = held(clusters[i]).await;
            let late: Vec<_> = now.difference(then).collect();
            assert!(
                late.is_empty(),
                "seed {seed}: ns{} took writes after it gave /mv up: {late:?}",
                i + 1
            );
        }
    }

    // Every acknowledged write is in exactly one nameservice.
    let (in1, in2) = (held(&f.ns1).await, held(&f.ns2).await);
    let acked = acked.lock().unwrap().clone();
    // Writes sent between a move's acknowledgement and the next move's
    // start are where that move put /mv.
    let mut checked = 0;
    for (name, sent) in &acked {
        let Some(k) = moves.iter().rposition(|(_, acked_at, _)| acked_at <= sent) else {
            continue;
        };
        if moves.get(k + 1).is_some_and(|(began, _, _)| began <= sent) {
            continue; // sent while the next move was under way: either is right
        }
        let to = moves[k].2;
        let there = if to == 0 { &in1 } else { &in2 };
        assert!(
            there.contains(name),
            "seed {seed}: /mv/{name}, sent {:?} after move {} put /mv in ns{}, is not there",
            sent.duration_since(moves[k].1),
            k + 1,
            to + 1
        );
        checked += 1;
    }
    for (name, _) in &acked {
        assert!(
            in1.contains(name) ^ in2.contains(name),
            "seed {seed}: acknowledged /mv/{name} is in ns1: {}, ns2: {}",
            in1.contains(name),
            in2.contains(name)
        );
    }
    println!(
        "{} writes acknowledged ({} in ns1, {} in ns2; {checked} sent after a move and checked against it), \
         {} not acknowledged (retryable)",
        acked.len(),
        in1.len(),
        in2.len(),
        refused.load(Ordering::Relaxed)
    );
    assert!(
        in1.len() > MOVES && in2.len() > MOVES,
        "both nameservices took writes while they owned /mv"
    );
    let stale = stale_landed.lock().unwrap().len();
    println!(
        "the stale writer: {stale} creates landed in ns1 (while it owned /mv), {} refused",
        stale_refused.load(Ordering::Relaxed)
    );
    assert!(
        stale > 0 && stale_refused.load(Ordering::Relaxed) > 0,
        "the stale writer both wrote (while ns1 owned /mv) and was refused (while it did not)"
    );
}
