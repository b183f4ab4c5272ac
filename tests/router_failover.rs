//! kill -9 of the routers' leader (then of each other router in turn)
//! under a write load: clients that send their calls through the routers
//! move to another router, and clients
//! that route by themselves (the SDK's direct mode) do not notice; either
//! way a pause within the nameservices' own failover bound, never an
//! error, and nothing acknowledged lost.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::federated::Federated;
use raftfs_client::{ClientOptions, Routing};

/// Writers per routing.
const WRITERS: usize = 2;
/// The same bound as a nameservice leader's kill -9 (`tests/failover.rs`).
const FAILOVER_BOUND_MS: u128 = 10_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_router_leader_is_a_pause_not_an_error() {
    let mut f = Federated::start(3, Routing::ViaRouter).await;
    let stop = Arc::new(AtomicBool::new(false));
    // Per writer: its routing, the directories it was told exist, its slowest call.
    let results = Arc::new(Mutex::new(Vec::new()));
    let mut writers = Vec::new();
    for w in 0..2 * WRITERS {
        let routing = if w % 2 == 0 {
            Routing::ViaRouter
        } else {
            Routing::Direct
        };
        let fs = f.client(
            "alice",
            ClientOptions {
                routing,
                ..f.ns1.client_options()
            },
        );
        let (stop, results) = (stop.clone(), results.clone());
        writers.push(tokio::spawn(async move {
            let (mut made, mut slowest, mut n) = (Vec::new(), Duration::ZERO, 0);
            while !stop.load(Ordering::Relaxed) {
                let path = format!("/user/alice/w{w}-{n}");
                n += 1;
                let t = Instant::now();
                fs.mkdirs(&path, None)
                    .await
                    .unwrap_or_else(|e| panic!("writer {w} ({routing:?}): mkdirs {path}: {e}"));
                slowest = slowest.max(t.elapsed());
                made.push(path);
            }
            results.lock().unwrap().push((routing, made, slowest));
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Each router dies once, the leader first, so every client's router
    // dies under it at some point; two of three stay up each time.
    let first = f.routers.leader();
    let order: Vec<usize> = std::iter::once(first).chain((1..=3).filter(|i| *i != first)).collect();
    for victim in order {
        f.routers.kill(victim);
        let killed = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            // The killed router's line says it cannot be reached.
            let (_, out, _) = f.routers.admin("hdfs", &["-status"]);
            if out.contains(" LEADER ") {
                break;
            }
            assert!(killed.elapsed() < Duration::from_secs(20), "no router leader: {out}");
        }
        println!(
            "killed router {victim}{}; a leader again after {} ms",
            if victim == first { " (the leader)" } else { "" },
            killed.elapsed().as_millis()
        );
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        f.routers.start_router(victim);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.expect("a writer failed");
    }

    let check = f.ns1.client("hdfs", &[]);
    let results = std::mem::take(&mut *results.lock().unwrap());
    for (routing, made, slowest) in &results {
        println!(
            "{routing:?} writer: {} mkdirs, slowest {} ms",
            made.len(),
            slowest.as_millis()
        );
        assert!(
            slowest.as_millis() < FAILOVER_BOUND_MS,
            "{routing:?}: a call waited {slowest:?}"
        );
        assert!(made.len() > 10, "{routing:?}: the writer made progress");
        for p in made {
            assert!(
                check.get_file_info(p).await.unwrap().is_some(),
                "{routing:?}: acknowledged {p} is not in ns1"
            );
        }
    }
}
