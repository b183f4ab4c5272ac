//! Hadoop's own RPC through a router (RBF's ClientProtocol on routers):
//! hdfs-native, configured only by `raftfs dev`'s HADOOP_CONF_DIR (whose
//! fs.defaultFS is the routers), against a cluster of two nameservices
//! with the tour's mount table: `/user` on ns1, `/data` on ns2.
//!
//! What it shows: the Python client's whole run (namespace calls on ns1,
//! reads and writes of files in ns2's block pool, an append, a write
//! across ns2's leader's kill -9); each answer's blocks carry the block
//! pool of the nameservice that holds the file; a DataNode dying under a
//! write to ns2 is recovered through the router (the pipeline calls that
//! name only a block go to the block pool's nameservice); a retried create
//! is answered from the nameservice's retry table; the cluster calls
//! answer for the whole federation.

use prost::Message;
use raftfs_hadoop::wire::hdfs::{FsPermission, HA_ACTIVE};
use raftfs_hadoop::wire::namenode::{
    BoolResponse, CreateRequest, CreateResponse, EmptyMessage, GetDatanodeReportRequest, GetDatanodeReportResponse,
    GetFsStatsResponse, HaServiceStateResponse, SetSafeModeRequest, REPORT_ALL, SAFEMODE_ENTER, SAFEMODE_GET,
};
use raftfs_hadoop::wire::rpc::STATUS_SUCCESS;

use super::data_transfer::{
    block_checksums_agree_with_the_sdk, hadoop_blocks, hdfs_native_rebuilds_its_pipeline_when_a_datanode_dies,
};
use super::ipc::{answer, call, connect, hadoop_leader, one_call, refused_with};
use super::*;

/// The file system Hadoop's clients know the routers by (`raftfs dev`'s `ns-fed`).
const ROUTERS_URL: &str = "hdfs://ns-fed";

#[test]
fn hdfs_native_works_through_a_router_over_hadoop_rpc() {
    let dev = Dev::start(2);
    let routers = dev.fs("routers");
    let router = dev.router_rpc.clone();
    dev.dfs(
        &routers,
        &["-mkdir", "-p", "/user/alice", "/user/bob", "/data/alice/in"],
    );
    dev.dfs(
        &routers,
        &["-chown", "alice", "/user/alice", "/data/alice", "/data/alice/in"],
    );
    dev.dfs(&routers, &["-chown", "bob", "/user/bob"]);

    let rt = tokio::runtime::Runtime::new().unwrap();
    // In ns2 (/data), for hdfs-native to read through the router.
    let written = sdk_writes(&rt, &dev, &routers, "/data/alice/in");
    let read_dir = tempfile::tempdir().unwrap();
    // No --url: fs.defaultFS, the routers. Home is ns1's; what it writes
    // goes to ns2, whose leader the script kills mid-write.
    let args = script_args(
        "/user/alice",
        "/user/bob",
        &written,
        read_dir.path(),
        "/data/alice/written",
        &dev.leader_pid_file("ns2"),
    );
    let ran = run_script(&dev, &args);
    let sdk_read = sdk_reads(&rt, &dev, &routers, "/data/alice/written");
    check_script_run(&ran, sdk_read, read_dir.path(), &written);

    blocks_carry_their_nameservices_pool(&rt, &dev, &router);
    let checksummed = format!("/data/alice/written/w{}", WRITE_SIZES[2]);
    let sdk_checksum = rt.block_on(async {
        let fs = alice_sdk(&dev.ca, &routers);
        fs.file_checksum(&checksummed).await.map(|c| c.bytes)
    });
    block_checksums_agree_with_the_sdk(&router, &checksummed, &sdk_checksum.expect("the SDK's -checksum"));
    a_retried_create_is_answered_from_the_retry_table(&router);
    cluster_calls_answer_for_the_federation(&router);

    let (path, data) = hdfs_native_rebuilds_its_pipeline_when_a_datanode_dies(
        &rt,
        &dev.conf,
        (ROUTERS_URL, &router),
        "/data/alice/written/datanode-killed",
        dev.dir.path(),
    );
    sdk_reads_back(&rt, &dev, &routers, &path, &data);
}

/// A file's blocks, asked of the router, are in the block pool of the
/// nameservice that holds the file (as that nameservice's leader says),
/// and the two nameservices' pools differ.
fn blocks_carry_their_nameservices_pool(rt: &tokio::runtime::Runtime, dev: &Dev, router: &str) {
    rt.block_on(async {
        let fs = alice_sdk(&dev.ca, &dev.fs("routers"));
        let mut w = fs.create_file("/user/alice/in-ns1", false).await.unwrap();
        w.write(&pattern(1000)).await.unwrap();
        w.close().await.unwrap();
    });
    let pool = |addr: &str, path: &str| {
        let located = hadoop_blocks(addr, path);
        let first = located.blocks.first().unwrap_or_else(|| panic!("{path} has a block"));
        first.b.pool_id.clone()
    };
    let in_ns2 = format!("/data/alice/in/f{}", FILE_SIZES[4]);
    let (_, ns1_leader) = hadoop_leader(&dev.fs("ns1")).expect("ns1's leader");
    let (_, ns2_leader) = hadoop_leader(&dev.fs("ns2")).expect("ns2's leader");
    let ns1_pool = pool(&ns1_leader, "/user/alice/in-ns1");
    let ns2_pool = pool(&ns2_leader, &in_ns2);
    assert_ne!(ns1_pool, ns2_pool, "each nameservice has its own block pool");
    assert_eq!(pool(router, "/user/alice/in-ns1"), ns1_pool);
    assert_eq!(pool(router, &in_ns2), ns2_pool);
}

/// The same create sent twice (a new connection, the same RPC client id and
/// call id, as Hadoop's client retries after a failover) is answered the
/// second time from ns2's retry table, not refused as existing.
fn a_retried_create_is_answered_from_the_retry_table(router: &str) {
    let create = CreateRequest {
        src: "/data/alice/retried".into(),
        masked: FsPermission { perm: 0o644 },
        client_name: "raw-retrier".into(),
        create_flag: 0x01, // CREATE
        create_parent: false,
        replication: 3,
        block_size: MULTI_BLOCK_SIZE_BYTES,
        ec_policy_name: None,
        storage_policy: None,
    };
    let mut ids = Vec::new();
    for attempt in 0..2 {
        let mut s = connect(router, "alice");
        call(&mut s, 424_242, "create", create.encode_length_delimited_to_vec());
        let (h, body) = answer(&mut s);
        assert_eq!(h.status, STATUS_SUCCESS, "attempt {attempt}: {h:?}");
        let st = CreateResponse::decode(&body[..])
            .unwrap()
            .fs
            .expect("the new file's status");
        ids.push(st.file_id);
    }
    assert_eq!(ids[0], ids[1], "the retry got the first answer");
    // A new call (another call id) is refused: the file exists.
    let (h, _) = one_call(router, "alice", "create", create);
    refused_with(&h, "org.apache.hadoop.fs.FileAlreadyExistsException");
}

/// getDatanodeReport (the superuser's) reports each DataNode once over both
/// nameservices; getFsStats and safe mode GET answer for anyone; entering a
/// nameservice's safe mode is its own members' business; the router is active.
fn cluster_calls_answer_for_the_federation(router: &str) {
    let superuser = raftfs_client::Identity::resolve(None).user;
    let all = GetDatanodeReportRequest {
        report_type: REPORT_ALL,
    };
    let (h, _) = one_call(router, "alice", "getDatanodeReport", all.clone());
    refused_with(&h, "org.apache.hadoop.security.AccessControlException");
    let (h, body) = one_call(router, &superuser, "getDatanodeReport", all);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let report = GetDatanodeReportResponse::decode(&body[..]).unwrap();
    let mut uuids: Vec<&str> = report.di.iter().map(|d| d.id.datanode_uuid.as_str()).collect();
    uuids.sort_unstable();
    uuids.dedup();
    assert_eq!(uuids.len(), DATANODES, "each DataNode once: {report:?}");
    assert_eq!(report.di.len(), DATANODES, "{report:?}");
    assert!(report.di.iter().all(|d| d.id.xfer_port != 0), "{report:?}");

    let (h, body) = one_call(router, "alice", "getFsStats", EmptyMessage {});
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let stats = GetFsStatsResponse::decode(&body[..]).unwrap();
    assert!(
        stats.capacity > 0 && stats.used > 0 && stats.remaining <= stats.capacity,
        "{stats:?}"
    );
    assert_eq!(stats.missing_blocks, 0, "{stats:?}");

    let safemode = |user: &str, action: i32| {
        one_call(
            router,
            user,
            "setSafeMode",
            SetSafeModeRequest { action, checked: None },
        )
    };
    let (h, body) = safemode("alice", SAFEMODE_GET);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    assert!(
        !BoolResponse::decode(&body[..]).unwrap().result,
        "safe mode is off everywhere"
    );
    refused_with(
        &safemode(&superuser, SAFEMODE_ENTER).0,
        "java.lang.UnsupportedOperationException",
    );

    let (h, body) = one_call(router, "alice", "getHAServiceState", EmptyMessage {});
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    assert_eq!(HaServiceStateResponse::decode(&body[..]).unwrap().state, HA_ACTIVE);
}
