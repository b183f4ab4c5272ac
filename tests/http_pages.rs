//! The nodes' HTTP pages as an operator reads them with curl: `/metrics`
//! in Prometheus's text format on members, DataNodes and routers, and
//! `/jmx` in Hadoop's JSON on members; who may read them under `simple`
//! and `strong` authentication; bad queries answered as Hadoop does.

use crate::common;

use std::time::{Duration, Instant};

use common::http::{get, sample, samples, Page};
use common::{raw_call, Cluster};
use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_proto::{Op, Permission};

/// The page at `path` of member `i`, read with only the CA (no certificate).
fn member_page(c: &Cluster, i: u64, path: &str) -> Page {
    let ca = c.ca_cert();
    get(&c.http_addr(i), path, Some(&ca), None)
}

fn metrics(c: &Cluster, i: u64) -> Vec<(String, f64)> {
    let p = member_page(c, i, "/metrics");
    assert_eq!(p.status, 200, "member {i}'s /metrics: {p:?}");
    assert_eq!(p.content_type, "text/plain; version=0.0.4; charset=utf-8");
    samples(&p.body)
}

fn jmx(c: &Cluster, i: u64, query: &str) -> serde_json::Value {
    let p = member_page(c, i, &format!("/jmx{query}"));
    assert_eq!(p.status, 200, "member {i}'s /jmx{query}: {p:?}");
    serde_json::from_str(&p.body).unwrap_or_else(|e| panic!("/jmx is JSON: {e}: {}", p.body))
}

fn create(path: &str) -> Op {
    Op::Create {
        path: path.into(),
        permission: Permission(0o644),
        overwrite: false,
        create_parent: true,
        replication: 1,
        block_size: 1 << 20,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_and_datanodes_serve_metrics_and_beans() {
    let mut c = Cluster::start(3, "rocksdb");
    c.start_datanodes(1, &[]);
    c.wait_ready().await;
    c.wait_datanodes(1).await;
    // A file through the DataNode (no short-circuit read, so the node
    // serves the bytes), a refused call, and a retried one.
    let opts = ClientOptions {
        short_circuit: false,
        ..c.client_options()
    };
    let fs = FileSystem::connect(&c.fs_uri(), Identity::new("hdfs", &[]), opts).expect("connect");
    let data = vec![7u8; 300_000];
    let mut w = fs
        .create_file_opt("/m/file", true, None, 1, 1 << 20, true)
        .await
        .expect("create");
    w.write(&data).await.expect("write");
    w.close().await.expect("close");
    let mut r = fs.open("/m/file").await.expect("open");
    assert_eq!(r.read_to_end().await.expect("read"), data);
    let alice = c.client("alice", &[]);
    assert!(alice.mkdirs("/m/not-alices", None).await.is_err());
    let leader = c.leader().await;
    let mut raw = c.namespace_client(&c.members[&leader]).await;
    let first = raw_call(&mut raw, "metrics-test", 1, &create("/m/retried")).await;
    let again = raw_call(&mut raw, "metrics-test", 1, &create("/m/retried")).await;
    assert_eq!(first, again, "the retry is answered from the retry table");

    // The leader's metrics.
    let m = metrics(&c, leader);
    assert_eq!(sample(&m, "raftfs_raft_is_leader"), 1.0);
    assert_eq!(sample(&m, "raftfs_raft_leader_id"), leader as f64);
    assert!(sample(&m, "raftfs_raft_term") >= 1.0);
    assert!(sample(&m, "raftfs_raft_elections_total") >= 1.0);
    assert!(sample(&m, "raftfs_raft_applied_index") >= sample(&m, "raftfs_raft_log_entries").min(1.0));
    assert_eq!(sample(&m, "raftfs_raft_voters"), 3.0);
    assert!(sample(&m, r#"raftfs_ops_total{op="create",outcome="success"}"#) >= 2.0);
    assert!(sample(&m, r#"raftfs_ops_total{op="mkdirs",outcome="error"}"#) >= 1.0);
    assert!(sample(&m, r#"raftfs_op_duration_seconds_count{op="create"}"#) >= 2.0);
    assert!(sample(&m, r#"raftfs_op_duration_seconds_bucket{op="create",le="+Inf"}"#) >= 2.0);
    assert!(sample(&m, "raftfs_retry_table_hits_total") >= 1.0);
    assert!(sample(&m, "raftfs_lock_waits_total") >= 0.0);
    assert_eq!(sample(&m, "raftfs_safe_mode"), 0.0);
    assert_eq!(sample(&m, "raftfs_healthy"), 1.0);
    assert_eq!(sample(&m, "raftfs_blocks"), 1.0);
    assert_eq!(sample(&m, "raftfs_blocks_missing"), 0.0);
    assert_eq!(sample(&m, r#"raftfs_datanodes{state="live"}"#), 1.0);
    assert_eq!(sample(&m, r#"raftfs_datanodes{state="dead"}"#), 0.0);
    assert!(sample(&m, r#"raftfs_capacity_bytes{kind="total"}"#) > 0.0);
    // A follower knows the leader and does not lead.
    let follower = *c.members.keys().find(|i| **i != leader).unwrap();
    let f = metrics(&c, follower);
    assert_eq!(sample(&f, "raftfs_raft_is_leader"), 0.0);
    assert_eq!(sample(&f, "raftfs_raft_leader_id"), leader as f64);

    // The beans HDFS monitoring reads.
    let status = "?qry=Hadoop:service=NameNode,name=NameNodeStatus";
    assert_eq!(jmx(&c, leader, status)["beans"][0]["State"], "active");
    assert_eq!(jmx(&c, follower, status)["beans"][0]["State"], "standby");
    let all = jmx(&c, leader, "");
    let bean = |name: &str| {
        all["beans"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == format!("Hadoop:service=NameNode,name={name}"))
            .unwrap_or_else(|| panic!("no bean {name} in {all}"))
            .clone()
    };
    let info = bean("NameNodeInfo");
    assert_eq!(info["ClusterId"], c.ids.0.as_str());
    assert_eq!(info["BlockPoolId"], c.ids.2.as_str());
    assert_eq!(info["Safemode"], "");
    assert_eq!(info["TotalBlocks"], 1);
    let live: serde_json::Value = serde_json::from_str(info["LiveNodes"].as_str().unwrap()).unwrap();
    assert_eq!(live.as_object().unwrap().len(), 1, "{live}");
    let fsn = bean("FSNamesystem");
    assert_eq!(fsn["tag.HAState"], "active");
    assert_eq!(fsn["NumLiveDataNodes"], 1);
    assert_eq!(fsn["BlocksTotal"], 1);
    assert_eq!(fsn["FSState"], "Operational");
    let get_one = jmx(
        &c,
        leader,
        "?get=Hadoop:service=NameNode,name=FSNamesystem::BlocksTotal",
    );
    assert_eq!(get_one["beans"][0]["BlocksTotal"], 1);

    // Bad queries and unknown pages, as Hadoop answers them.
    let bad = member_page(&c, leader, "/jmx?qry=NameNodeStatus");
    assert_eq!(bad.status, 400, "{bad:?}");
    let e: serde_json::Value = serde_json::from_str(&bad.body).unwrap();
    assert_eq!(
        e["RemoteException"]["javaClassName"],
        "java.lang.IllegalArgumentException"
    );
    assert_eq!(member_page(&c, leader, "/no-such-page").status, 404);

    // The DataNode's page: the bytes it wrote and served for the pool.
    let ca = c.ca_cert();
    let p = get(&c.dn_http_addr(1), "/metrics", Some(&ca), None);
    assert_eq!(p.status, 200, "{p:?}");
    let d = samples(&p.body);
    let pool = &c.ids.2;
    let written = sample(
        &d,
        &format!(r#"raftfs_datanode_bytes_written_total{{block_pool="{pool}"}}"#),
    );
    let read = sample(
        &d,
        &format!(r#"raftfs_datanode_bytes_read_total{{block_pool="{pool}"}}"#),
    );
    assert!(written >= data.len() as f64, "written {written}");
    assert!(read >= data.len() as f64, "read {read}");
    assert_eq!(
        sample(&d, &format!(r#"raftfs_datanode_replicas{{block_pool="{pool}"}}"#)),
        1.0
    );
    assert!(d
        .iter()
        .any(|(s, v)| s.starts_with("raftfs_datanode_volume_capacity_bytes{") && *v > 0.0));

    // A new leader counts the election and the change of leader.
    c.kill(leader);
    let deadline = Instant::now() + Duration::from_secs(30);
    let new_leader = loop {
        let l = c.leader().await;
        if l != leader {
            break l;
        }
        assert!(Instant::now() < deadline, "no new leader");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let n = metrics(&c, new_leader);
    assert_eq!(sample(&n, "raftfs_raft_is_leader"), 1.0);
    assert!(sample(&n, "raftfs_raft_elections_total") >= 2.0, "{n:?}");
    assert!(sample(&n, "raftfs_raft_leader_changes_total") >= 2.0, "{n:?}");
    assert_eq!(jmx(&c, new_leader, status)["beans"][0]["State"], "active");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_strong_authentication_pages_need_a_certificate() {
    let c = Cluster::start_with(1, "memory", &["--auth", "strong"]);
    let hdfs = c.certificate_client("hdfs");
    let deadline = Instant::now() + Duration::from_secs(60);
    while let Err(e) = hdfs.get_file_status("/").await {
        assert!(Instant::now() < deadline, "the nameservice never answered: {e}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ca = c.ca_cert();
    let anonymous = get(&c.http_addr(1), "/metrics", Some(&ca), None);
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    assert!(anonymous.body.contains("strong authentication"), "{}", anonymous.body);
    let jmx = get(&c.http_addr(1), "/jmx", Some(&ca), None);
    assert_eq!(jmx.status, 401, "{jmx:?}");
    let alice = c.user_credentials("alice");
    let with_cert = get(&c.http_addr(1), "/metrics", Some(&ca), Some(&alice));
    assert_eq!(with_cert.status, 200, "{with_cert:?}");
    assert_eq!(sample(&samples(&with_cert.body), "raftfs_raft_is_leader"), 1.0);
    let node = c.issue_credentials("datanode", "dn-monitor");
    assert_eq!(get(&c.http_addr(1), "/jmx", Some(&ca), Some(&node)).status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routers_count_calls_by_nameservice() {
    let f = common::federated::Federated::start(1, raftfs_client::Routing::ViaRouter).await;
    f.dfs_ok("alice", &["-mkdir", "-p", "/user/alice/x"]);
    f.dfs_ok("alice", &["-ls", "/data"]);
    let ca = f.ns1.ca_cert();
    let p = get(&f.routers.http_addrs[0], "/metrics", Some(&ca), None);
    assert_eq!(p.status, 200, "{p:?}");
    let m = samples(&p.body);
    assert!(sample(&m, r#"raftfs_router_calls_total{nameservice="ns1",outcome="success"}"#) >= 1.0);
    assert!(sample(&m, r#"raftfs_router_calls_total{nameservice="ns2",outcome="success"}"#) >= 1.0);
    assert_eq!(sample(&m, "raftfs_mount_table_raft_is_leader"), 1.0);
    assert_eq!(sample(&m, "raftfs_mount_entries"), 5.0);
    assert_eq!(sample(&m, "raftfs_nameservices"), 2.0);
    assert_eq!(sample(&m, "raftfs_router_safe_mode"), 0.0);
    assert!(sample(&m, "raftfs_federation_version") >= 1.0);
}
