//! Clock faults: a leader's wall clock stepped forward and backward by
//! minutes under load (the test offsets one process's clock through the
//! `RAFTFS_FAILPOINT_CLOCK_OFFSET_DIR` failpoint, see `raftfs_trust::clock`).
//!
//! Log time is what every age in the namespace is measured in: the retry
//! table's window, lease soft and hard limits, delegation token dates. A
//! leader that wrote its stepped wall clock into entries would, stepped
//! forward, expire retry records early (a retried create would fail with
//! "already exists" instead of getting its first answer: the write applied
//! twice, as far as the client can tell) and break live leases; stepped
//! backward, it would freeze mtimes. The log clock keeps log time true to
//! real time instead (`raftfs_metaserver::log_clock`), across a failover to
//! a member whose clock is stepped the other way too.

use crate::common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{raw_call, Cluster, CreateLoad};
use raftfs_client::FileSystem;
use raftfs_proto::{FsError, Op, OpResult, Permission};

/// Lease hard limit for the members: a +25 minute step is well past it.
const HARD_LIMIT_MS: &str = "600000";
/// Delegation tokens' renew interval: a +25 minute step is well past it.
const RENEW_INTERVAL_MS: &str = "600000";
/// The clock step, in ms (25 minutes: past the retry window and the hard limit).
const STEP_MS: i64 = 25 * 60 * 1000;

fn real_now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64
}

fn create(path: &str, overwrite: bool) -> Op {
    Op::Create {
        path: path.into(),
        permission: Permission(0o644),
        overwrite,
        create_parent: false,
        replication: 1,
        block_size: 1 << 20,
    }
}

/// Step member `i`'s wall clock by `offset_ms` (0 puts it right).
fn step_clock(c: &Cluster, dir: &std::path::Path, i: u64, offset_ms: i64) {
    let pid = c.pid(i).expect("member pid");
    std::fs::write(dir.join(pid.to_string()), offset_ms.to_string()).unwrap();
}

/// What the leader's answers show after a step: the first answer to a
/// retried create, the lease of `/clock/held` still its holder's, a
/// delegation token issued minutes ago still valid, and log time near real
/// time.
async fn check_times_hold(c: &Cluster, what: &str, first: &OpResult, job: &FileSystem) {
    let leader = c.leader().await;
    let mut leader_client = c.namespace_client(&c.members[&leader]).await;
    let again = raw_call(&mut leader_client, "clock-test", 1, &create("/clock/retried", false)).await;
    assert_eq!(
        again.as_ref(),
        Ok(first),
        "{what}: a retried create must get its first answer from the retry table"
    );
    raw_call(&mut leader_client, "clock-holder", 100, &Op::RenewLease)
        .await
        .expect("renew the holder's lease");
    let other = raw_call(&mut leader_client, "clock-other", 1, &create("/clock/held", true)).await;
    assert!(
        matches!(other, Err(FsError::AlreadyBeingCreated(_))),
        "{what}: a lease renewed a moment ago holds (no soft or hard limit passed): {other:?}"
    );
    let by_token = job.get_file_status("/clock").await;
    assert!(
        by_token.is_ok(),
        "{what}: a delegation token inside its renew interval authenticates: {by_token:?}"
    );
    let probe = format!("/clock/probe-{}", real_now_ms());
    let before = real_now_ms();
    let made = raw_call(
        &mut leader_client,
        "clock-test",
        real_now_ms() as u64,
        &create(&probe, false),
    )
    .await;
    let Ok(OpResult::Status(Some(st))) = made else {
        panic!("{what}: create {probe}: {made:?}");
    };
    let after = real_now_ms();
    assert!(
        st.modification_time >= before - 2_000 && st.modification_time <= after + 2_000,
        "{what}: log time follows real time, not the stepped clock: mtime {} vs real [{before}, {after}]",
        st.modification_time
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_time_ages_nothing_early_when_a_leaders_clock_is_stepped() {
    let offsets = tempfile::tempdir().unwrap();
    let mut c = Cluster::start_with(
        3,
        "rocksdb",
        &[
            "--lease-hard-limit-ms",
            HARD_LIMIT_MS,
            "--delegation-token-renew-interval-ms",
            RENEW_INTERVAL_MS,
        ],
    );
    c.env = vec![(
        raftfs_trust::clock::ENV_CLOCK_OFFSET_DIR.into(),
        offsets.path().display().to_string(),
    )];
    c.kill_all();
    c.restart_all();
    c.wait_ready().await;
    let fs = std::sync::Arc::new(c.client("hdfs", &[]));
    fs.mkdirs("/clock/load", None).await.expect("mkdir");
    let alice = c.certificate_client("alice");
    let token = alice.get_delegation_token("yarn").await.expect("alice fetches a token");
    let job = c.token_client(&token);

    let leader = c.leader().await;
    let mut leader_client = c.namespace_client(&c.members[&leader]).await;
    let first = raw_call(&mut leader_client, "clock-test", 1, &create("/clock/retried", false))
        .await
        .expect("first create");
    raw_call(&mut leader_client, "clock-holder", 1, &create("/clock/held", false))
        .await
        .expect("the holder's create");
    let load = CreateLoad::start(&fs, &["/clock/load"]);

    // Forward by 25 minutes, for longer than a lease check takes to run.
    step_clock(&c, offsets.path(), leader, STEP_MS);
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    check_times_hold(&c, "leader's clock 25 min ahead", &first, &job).await;

    // Backward by 25 minutes: log time must not freeze.
    step_clock(&c, offsets.path(), leader, -STEP_MS);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut leader_client = c.namespace_client(&c.members[&leader]).await;
    let mtime = |r: Result<OpResult, FsError>| match r {
        Ok(OpResult::Status(Some(st))) => st.modification_time,
        other => panic!("create: {other:?}"),
    };
    let t1 = mtime(raw_call(&mut leader_client, "clock-test", 10, &create("/clock/back-1", false)).await);
    let waited = Instant::now();
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let t2 = mtime(raw_call(&mut leader_client, "clock-test", 11, &create("/clock/back-2", false)).await);
    let real = waited.elapsed().as_millis() as i64;
    assert!(
        t2 - t1 >= real - 500,
        "log time keeps real time with the clock 25 min behind: {} ms of log time in {real} ms",
        t2 - t1
    );
    check_times_hold(&c, "leader's clock 25 min behind", &first, &job).await;

    // The followers' clocks 25 minutes ahead, then the leader dies: the new
    // leader carries on from the old one's log time.
    for i in c.members.keys().copied().filter(|i| *i != leader).collect::<Vec<_>>() {
        step_clock(&c, offsets.path(), i, STEP_MS);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.kill(leader);
    let deadline = Instant::now() + Duration::from_secs(30);
    while c.leader().await == leader {
        assert!(Instant::now() < deadline, "no new leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    check_times_hold(&c, "new leader with its clock 25 min ahead", &first, &job).await;

    let (acked, _errors) = load.stop().await;
    assert!(!acked.is_empty(), "the load made progress");
    for p in &acked {
        assert!(fs.exists(p).await.expect("stat"), "acknowledged create {p} is lost");
    }
}
