//! Routers and `raftfs routeradmin` against a running nameservice: three
//! routers replicate the federation (nameservices and mount table) in
//! their own Raft group over mutual TLS; every change made through any
//! router reaches every router within [`PROPAGATION_BOUND_MS`]; only the
//! superuser may change the table; bad changes are refused with the reason
//! and leave the table as it was; and the group keeps working when its
//! leader is killed with SIGKILL.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::routers::Routers;
use common::{Cluster, BIN};

/// The bound this suite holds routers to: a change acknowledged by the
/// leader is applied by every live router within this long (docs/architecture.md).
const PROPAGATION_BOUND_MS: u64 = 1_000;

/// The version a successful change printed.
fn printed_version(out: &str) -> u64 {
    out.rsplit("mount table version ")
        .next()
        .and_then(|v| v.trim().trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no version in {out:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mount_table_changes_reach_every_router_and_bad_ones_change_nothing() {
    let cluster = Cluster::start(1, "rocksdb");
    cluster.wait_ready().await;
    let routers = Routers::start(&cluster, 3);

    let out = routers.admin_ok(&["-addNameservice", "ns1", &cluster.fs_uri()]);
    assert!(out.contains("Successfully added nameservice ns1"), "{out}");
    assert!(out.contains(&format!("NamespaceID {}", cluster.ids.1)), "{out}");
    let out = routers.admin_ok(&["-add", "/data", "ns1", "/data", "-order", "HASH_ALL", "-mode", "750"]);
    assert!(out.contains("Successfully added mount point /data"), "{out}");
    let v = printed_version(&out);
    let took = routers.wait_version(v).await;
    println!(
        "the change reached all 3 routers {} ms after it was acknowledged",
        took.as_millis()
    );
    assert!(
        took <= Duration::from_millis(PROPAGATION_BOUND_MS),
        "a change took {took:?} to reach every router"
    );
    // A client watching the federation has every change within the same bound.
    let watch = raftfs_client::FederationWatch::start(
        &routers.uri(None),
        &raftfs_client::ClientTls::CaFile(routers.cluster_ca.clone()),
    )
    .await
    .expect("watch the federation");
    assert_eq!(watch.current().version(), v);
    let out = routers.admin_ok(&["-add", "/logs", "ns1", "/logs"]);
    let changed = Instant::now();
    let seen = watch
        .wait_for_version(printed_version(&out), Duration::from_millis(PROPAGATION_BOUND_MS))
        .await
        .expect("the client sees the change in time");
    println!(
        "a watching client had the change {} ms after it was acknowledged",
        changed.elapsed().as_millis()
    );
    assert!(seen.mounts().get("/logs").is_some());
    routers.admin_ok(&["-rm", "/logs"]);
    // Every router lists it.
    for i in 1..=3 {
        let out = Command::new(BIN)
            .env(raftfs_client::CA_ENV, &routers.cluster_ca)
            .args(["routeradmin", "--router", &routers.uri(Some(i)), "-ls"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let line = text
            .lines()
            .find(|l| l.starts_with("/data"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(
            line.contains("ns1->/data") && line.contains("rwxr-x---") && line.contains("HASH_ALL"),
            "{line}"
        );
    }

    // Refused changes: the reason, a failing exit, and the table as it was.
    let before = routers.version().await;
    let refused: [(&str, &[&str], &str); 6] = [
        ("alice", &["-add", "/x", "ns1", "/x"], "only the superuser hdfs may"),
        ("hdfs", &["-add", "/data2", "ns1", "/data/sub"], "overlap"),
        ("hdfs", &["-add", "/y", "ns9", "/y"], "unknown nameservice ns9"),
        ("hdfs", &["-add", "/a/../b", "ns1", "/b"], "invalid mount entry"),
        ("hdfs", &["-rm", "/nope"], "no mount point /nope"),
        (
            "hdfs",
            &["-removeNameservice", "ns1"],
            "mount points lead into it: /data",
        ),
    ];
    for (user, args, why) in refused {
        let (code, out, err) = routers.admin(user, args);
        assert_eq!(code, 1, "{args:?} by {user}: {out}{err}");
        assert!(err.contains(why), "{args:?} by {user}: {err}");
    }
    assert_eq!(routers.version().await, before, "refused changes changed nothing");
    // The routers' delegation token table is not the admin's to change,
    // not even the superuser's (only routers propose its commands).
    let forged =
        raftfs_router::FederationChange::DelegationTokens(raftfs_federation::router_tokens::TokenCommand::Issue {
            owner: "alice".into(),
            renewer: String::new(),
            max_lifetime_ms: 60_000,
            renew_interval_ms: 60_000,
            now_ms: 0,
        });
    let refused = routers.client(1).change("hdfs", forged).await;
    assert!(
        matches!(&refused, Err(raftfs_router::RouterError::Fs(raftfs_proto::FsError::AccessControl(m)))
            if m.contains("from routers only")),
        "{refused:?}"
    );
    assert_eq!(routers.version().await, before, "refused changes changed nothing");

    // Quotas, read-only, disabled nameservices.
    routers.admin_ok(&["-setQuota", "/data", "-nsQuota", "100", "-ssQuota", "1g"]);
    routers.admin_ok(&["-update", "/data", "-readonly", "true"]);
    let ls = routers.admin_ok(&["-ls", "/data"]);
    assert!(
        ls.contains("[NsQuota: 100, SsQuota: 1073741824]") && ls.contains(" true "),
        "{ls}"
    );
    // The quota lives on the destination, where ns1 enforces it exactly.
    let (code, q, err) = cluster.dfs("hdfs", &["-count", "-q", "/data"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        q.split_whitespace().next(),
        Some("100"),
        "ns1's /data has the quota: {q}"
    );
    routers.admin_ok(&["-clrQuota", "/data"]);
    let (_, q, _) = cluster.dfs("hdfs", &["-count", "-q", "/data"]);
    assert_eq!(q.split_whitespace().next(), Some("none"), "cleared in ns1 too: {q}");
    routers.admin_ok(&["-nameservice", "disable", "ns1"]);
    assert_eq!(routers.admin_ok(&["-getDisabledNameservices"]).trim(), "ns1");
    routers.admin_ok(&["-nameservice", "enable", "ns1"]);
    assert_eq!(routers.admin_ok(&["-getDisabledNameservices"]).trim(), "");
    let out = routers.admin_ok(&["-rm", "/data"]);
    let v = printed_version(&out);
    routers.wait_version(v).await;
    assert!(!routers.admin_ok(&["-ls"]).contains("/data"));
    routers.admin_ok(&["-removeNameservice", "ns1"]);
    assert!(!routers.admin_ok(&["-listNameservices"]).contains("ns1"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_group_goes_on_when_its_leader_is_killed() {
    let cluster = Cluster::start(1, "rocksdb");
    cluster.wait_ready().await;
    let mut routers = Routers::start(&cluster, 3);
    routers.admin_ok(&["-addNameservice", "ns1", &cluster.fs_uri()]);
    routers.admin_ok(&["-add", "/user", "ns1", "/user"]);
    let leader = routers.leader();
    routers.kill(leader);
    let started = Instant::now();
    let out = routers.admin_ok(&["-add", "/tmp", "ns1", "/tmp"]);
    println!(
        "a change through the survivors took {} ms after the leader was killed",
        started.elapsed().as_millis()
    );
    let v = printed_version(&out);
    routers.wait_version(v).await;
    // The killed router comes back and catches up from its log and the new leader.
    routers.start_router(leader);
    let r = routers
        .client(leader)
        .federation(v - 1, 10_000)
        .await
        .expect("the restarted router answers");
    assert!(
        r.federation.version() >= v,
        "restarted router at {}",
        r.federation.version()
    );
    let sources: Vec<String> = r.federation.mounts().entries().map(|e| e.source.clone()).collect();
    assert_eq!(sources, ["/tmp", "/user"]);
}
