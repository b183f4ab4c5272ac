//! WebHDFS's data operations as HDFS clients run them: the namespace
//! endpoint (the leader) redirects OPEN, CREATE, APPEND and GETFILECHECKSUM
//! to a DataNode (307, or `{"Location"}` with `noredirect=true`), and the
//! DataNode runs them through the SDK's pipeline, so what WebHDFS writes
//! the SDK reads and the other way round. Files span several blocks.
//! Under strong authentication the redirect carries a delegation token.
//! Requests are sent with curl, as WebHDFS.md's examples do.

use crate::common;

use std::path::Path;

use common::http::{transfer, Transfer};
use common::Cluster;

/// Bytes that differ at every offset (so a wrong offset shows).
fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32 * 31 + seed as u32 * 7 + (i >> 10) as u32) as u8)
        .collect()
}

fn json(t: &Transfer) -> serde_json::Value {
    serde_json::from_slice(&t.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {} {:?}", t.status, String::from_utf8_lossy(&t.body)))
}

/// An error answer: its status and exception name.
fn refused(t: &Transfer) -> (u16, String, String) {
    let v = json(t);
    let e = &v["RemoteException"];
    (
        t.status,
        e["exception"].as_str().unwrap_or_default().to_string(),
        e["message"].as_str().unwrap_or_default().to_string(),
    )
}

/// `https://ADDR/webhdfs/v1PATH?QUERY`.
fn url(addr: &str, path: &str, query: &str) -> String {
    format!("https://{addr}/webhdfs/v1{path}?{query}")
}

/// Upload `data` as WebHDFS.md says: the namespace step without a body,
/// then the body to the DataNode the redirect names. Returns the second
/// step's answer.
fn upload(
    c: &Cluster,
    member: u64,
    method: &str,
    path: &str,
    query: &str,
    data: &[u8],
    creds: Option<&Path>,
) -> Transfer {
    upload_at(c, &c.http_addr(member), method, path, query, data, creds)
}

/// [`upload`] through the WebHDFS endpoint at `addr` (a member's or a router's).
fn upload_at(
    c: &Cluster,
    addr: &str,
    method: &str,
    path: &str,
    query: &str,
    data: &[u8],
    creds: Option<&Path>,
) -> Transfer {
    let ca = c.ca_cert();
    let first = transfer(method, &url(addr, path, query), Some(&ca), creds, None, false);
    assert_eq!(first.status, 307, "{method} {path}?{query}: {first:?}");
    let location = first.location.expect("a redirect names its DataNode");
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), data).unwrap();
    transfer(method, &location, Some(&ca), None, Some(file.path()), false)
}

/// GET with redirects followed.
fn read(c: &Cluster, member: u64, path: &str, query: &str) -> Transfer {
    transfer(
        "GET",
        &url(&c.http_addr(member), path, query),
        Some(&c.ca_cert()),
        None,
        None,
        true,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhdfs_moves_file_data_through_datanodes() {
    let c = Cluster::start_with_datanodes(3, "memory", 3).await;
    let l = c.leader().await;
    let hdfs = c.client("hdfs", &["supergroup"]);
    hdfs.mkdirs("/user/alice", None).await.unwrap();
    hdfs.set_owner("/user/alice", Some("alice"), None).await.unwrap();
    let alice = c.client("alice", &[]);

    // CREATE: the leader redirects to a DataNode, with the file system and
    // the caller; the DataNode answers 201 once the file is complete.
    let data = pattern((3 << 20) + 17, 1);
    let q = "op=CREATE&user.name=alice&blocksize=1048576&replication=2&permission=640";
    let ca = c.ca_cert();
    let step1 = transfer(
        "PUT",
        &url(&c.http_addr(l), "/user/alice/f", q),
        Some(&ca),
        None,
        None,
        false,
    );
    assert_eq!(step1.status, 307, "{step1:?}");
    let location = step1.location.clone().unwrap();
    let dn_addrs: Vec<String> = (1..=3).map(|j| c.dn_http_addr(j)).collect();
    assert!(
        dn_addrs
            .iter()
            .any(|a| location.starts_with(&format!("https://{a}/webhdfs/v1/user/alice/f?"))),
        "{location} is on a DataNode ({dn_addrs:?})"
    );
    assert!(
        location.contains("namenoderpcaddress=") && location.contains("user.name=alice"),
        "{location}"
    );
    assert!(
        location.contains("op=CREATE") && location.contains("blocksize=1048576"),
        "{location}"
    );
    let done = upload(&c, l, "PUT", "/user/alice/f", q, &data, None);
    assert_eq!(done.status, 201, "{done:?} {}", String::from_utf8_lossy(&done.body));
    assert!(
        done.location.as_deref().unwrap_or_default().ends_with("/user/alice/f"),
        "{done:?}"
    );
    // The SDK reads what WebHDFS wrote, with what CREATE asked for.
    let st = alice.get_file_status("/user/alice/f").await.unwrap();
    assert_eq!(
        (st.length, st.block_size, st.replication, st.permission.bits()),
        (data.len() as u64, 1 << 20, 2, 0o640)
    );
    assert_eq!(
        alice.open("/user/alice/f").await.unwrap().read_to_end().await.unwrap(),
        data
    );

    // OPEN, whole and in ranges (across a block boundary, at the end).
    let all = read(&c, l, "/user/alice/f", "op=OPEN&user.name=alice");
    assert_eq!(all.status, 200);
    assert!(all.body == data, "OPEN returned {} bytes, not the file", all.body.len());
    let part = read(
        &c,
        l,
        "/user/alice/f",
        "op=OPEN&offset=1048570&length=100&user.name=alice",
    );
    assert_eq!(part.body, data[1048570..1048670]);
    let tail = read(&c, l, "/user/alice/f", "op=OPEN&offset=3145700&user.name=alice");
    assert_eq!(tail.body, data[3145700..]);
    let end = read(
        &c,
        l,
        "/user/alice/f",
        &format!("op=OPEN&offset={}&user.name=alice", data.len()),
    );
    assert_eq!((end.status, end.body.len()), (200, 0));
    let past = read(
        &c,
        l,
        "/user/alice/f",
        &format!("op=OPEN&offset={}&user.name=alice", data.len() + 1),
    );
    assert_eq!(refused(&past).0, 400, "{past:?}");

    // noredirect=true: the location as JSON, which works as the redirect does.
    let nr = transfer(
        "GET",
        &url(
            &c.http_addr(l),
            "/user/alice/f",
            "op=OPEN&length=10&noredirect=true&user.name=alice",
        ),
        Some(&ca),
        None,
        None,
        false,
    );
    assert_eq!(nr.status, 200, "{nr:?}");
    let loc = json(&nr)["Location"].as_str().unwrap().to_string();
    let ten = transfer("GET", &loc, Some(&ca), None, None, false);
    assert_eq!(ten.body, data[..10]);

    // APPEND: POST, then the bytes to the DataNode; the SDK sees them.
    let more = pattern(1 << 20, 2);
    let appended = upload(&c, l, "POST", "/user/alice/f", "op=APPEND&user.name=alice", &more, None);
    assert_eq!(appended.status, 200, "{appended:?}");
    let mut whole = data.clone();
    whole.extend_from_slice(&more);
    assert_eq!(
        alice.open("/user/alice/f").await.unwrap().read_to_end().await.unwrap(),
        whole
    );

    // GETFILECHECKSUM: HDFS's JSON, the SDK's (and `-checksum`'s) value.
    let sum = read(&c, l, "/user/alice/f", "op=GETFILECHECKSUM&user.name=alice");
    assert_eq!(sum.status, 200, "{sum:?}");
    let v = json(&sum);
    let want = alice.file_checksum("/user/alice/f").await.unwrap();
    assert_eq!(v["FileChecksum"]["algorithm"], want.algorithm.as_str());
    assert_eq!(v["FileChecksum"]["bytes"], want.to_string().as_str());
    assert_eq!(v["FileChecksum"]["length"], 28);

    // A file the SDK wrote, read over WebHDFS.
    let mut w = alice.create_file("/user/alice/g", false).await.unwrap();
    w.write(b"from the SDK").await.unwrap();
    w.close().await.unwrap();
    assert_eq!(
        read(&c, l, "/user/alice/g", "op=OPEN&user.name=alice").body,
        b"from the SDK"
    );

    // Errors, with HDFS's exceptions: where the namespace can tell, before
    // any redirect; where only the DataNode's step can, from it.
    let (st, ex, _) = refused(&read(&c, l, "/user/alice/none", "op=OPEN&user.name=alice"));
    assert_eq!((st, ex.as_str()), (404, "FileNotFoundException"));
    hdfs.set_permission("/user/alice/g", raftfs_proto::Permission(0o600))
        .await
        .unwrap();
    let (st, ex, _) = refused(&read(&c, l, "/user/alice/g", "op=OPEN&user.name=bob"));
    assert_eq!((st, ex.as_str()), (403, "AccessControlException"));
    let exists = upload(&c, l, "PUT", "/user/alice/g", "op=CREATE&user.name=alice", b"x", None);
    let (st, ex, _) = refused(&exists);
    assert_eq!((st, ex.as_str()), (403, "FileAlreadyExistsException"), "{exists:?}");
    // A refused body is read before the answer (curl sends one this size
    // without waiting for 100 Continue), so the answer is not lost to a
    // connection reset.
    let theirs = upload(
        &c,
        l,
        "PUT",
        "/user/alice/h",
        "op=CREATE&user.name=bob",
        &pattern(1000, 3),
        None,
    );
    let (st, ex, _) = refused(&theirs);
    assert_eq!((st, ex.as_str()), (403, "AccessControlException"), "{theirs:?}");
    assert!(
        !alice.exists("/user/alice/h").await.unwrap(),
        "a refused CREATE made nothing"
    );
    let follower = *c.members.keys().find(|i| **i != l).unwrap();
    let (st, ex, _) = refused(&read(&c, follower, "/user/alice/f", "op=OPEN&user.name=alice"));
    assert_eq!((st, ex.as_str()), (403, "StandbyException"));

    // An upload cut off mid-way: the DataNode has the file's lease
    // recovered, which closes it with what reached the DataNodes.
    let first = transfer(
        "PUT",
        &url(
            &c.http_addr(l),
            "/user/alice/cut",
            "op=CREATE&blocksize=1048576&user.name=alice",
        ),
        Some(&ca),
        None,
        None,
        false,
    );
    let body = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(body.path(), pattern(8 << 20, 4)).unwrap();
    let cut = std::process::Command::new("curl")
        .args([
            "-sS",
            "-o",
            "/dev/null",
            "--limit-rate",
            "512k",
            "--max-time",
            "3",
            "--cacert",
        ])
        .arg(&ca)
        .arg("-T")
        .arg(body.path())
        .arg(first.location.expect("a redirect"))
        .status()
        .unwrap();
    assert!(!cut.success(), "curl gave up mid-upload");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let st = loop {
        let st = alice.get_file_status("/user/alice/cut").await.unwrap();
        if !st.under_construction {
            break st;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the cut-off upload's file stayed open: {st:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    };
    assert!(st.length < 8 << 20, "{st:?}");
    let kept = alice
        .open("/user/alice/cut")
        .await
        .unwrap()
        .read_to_end()
        .await
        .unwrap();
    assert_eq!(
        kept,
        pattern(8 << 20, 4)[..st.length as usize],
        "what was kept is the upload's start"
    );

    // A DataNode dials only the file systems it serves, and runs only data ops.
    let dn = c.dn_http_addr(1);
    let elsewhere = transfer(
        "GET",
        &url(
            &dn,
            "/user/alice/f",
            "op=OPEN&namenoderpcaddress=10.1.2.3:8020&user.name=alice",
        ),
        Some(&ca),
        None,
        None,
        false,
    );
    let (st, ex, msg) = refused(&elsewhere);
    assert_eq!((st, ex.as_str()), (403, "AccessControlException"), "{msg}");
    let status_op = transfer(
        "GET",
        &url(&dn, "/user/alice/f", "op=GETFILESTATUS&user.name=alice"),
        Some(&ca),
        None,
        None,
        false,
    );
    assert_eq!(refused(&status_op).0, 400);
}

/// Wait (up to 60 s) until the nameservice answers `hdfs`.
async fn wait_serving(hdfs: &raftfs_client::FileSystem) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while let Err(e) = hdfs.get_file_status("/").await {
        assert!(std::time::Instant::now() < deadline, "never ready: {e}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Wait (up to 60 s) until a live DataNode has registered its HTTP address.
async fn wait_datanode_http(hdfs: &raftfs_client::FileSystem) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        use raftfs_proto::{AdminOp, AdminResult};
        if let Ok(AdminResult::Datanodes(d)) = hdfs.admin(AdminOp::DatanodeReport).await {
            if d.iter().any(|n| n.live && !n.http_addr.is_empty()) {
                break;
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no DataNode registered its HTTP address"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_strong_authentication_a_redirect_carries_a_delegation_token() {
    let mut c = Cluster::start_with(1, "memory", &["--auth", "strong"]);
    let hdfs = c.certificate_client("hdfs");
    wait_serving(&hdfs).await;
    c.start_datanodes(1, &["--auth", "strong"]);
    wait_datanode_http(&hdfs).await;
    hdfs.mkdirs("/user/alice", None).await.unwrap();
    hdfs.set_owner("/user/alice", Some("alice"), None).await.unwrap();
    let alice = c.user_credentials("alice");
    let data = pattern(100_000, 3);
    // alice's certificate authenticates the first step; the DataNode acts
    // for her by the token the redirect carries (her certificate is not sent there).
    let done = upload(&c, 1, "PUT", "/user/alice/s", "op=CREATE", &data, Some(&alice));
    assert_eq!(done.status, 201, "{done:?} {}", String::from_utf8_lossy(&done.body));
    let ca = c.ca_cert();
    let nr = transfer(
        "GET",
        &url(&c.http_addr(1), "/user/alice/s", "op=OPEN&noredirect=true"),
        Some(&ca),
        Some(&alice),
        None,
        false,
    );
    let loc = json(&nr)["Location"].as_str().unwrap().to_string();
    assert!(loc.contains("delegation=") && !loc.contains("user.name="), "{loc}");
    assert_eq!(transfer("GET", &loc, Some(&ca), None, None, false).body, data);
    let st = c
        .certificate_client("alice")
        .get_file_status("/user/alice/s")
        .await
        .unwrap();
    assert_eq!((st.owner.as_str(), st.length), ("alice", data.len() as u64));

    // The token also authenticates namespace calls (`delegation=`).
    let token = loc.split("delegation=").nth(1).unwrap().split('&').next().unwrap();
    let status = transfer(
        "GET",
        &url(
            &c.http_addr(1),
            "/user/alice/s",
            &format!("op=GETFILESTATUS&delegation={token}"),
        ),
        Some(&ca),
        None,
        None,
        false,
    );
    assert_eq!(json(&status)["FileStatus"]["owner"], "alice", "{status:?}");

    // Without a token the DataNode acts for no one; a forged one is refused.
    let dn = c.dn_http_addr(1);
    let without = loc.replace(&format!("delegation={token}"), "user.name=alice");
    let (st, ex, _) = refused(&transfer("GET", &without, Some(&ca), None, None, false));
    assert_eq!((st, ex.as_str()), (403, "AccessControlException"));
    let mut forged = raftfs_proto::DelegationToken::decode_url(token).unwrap();
    forged.identifier.owner = "hdfs".into();
    let forged = forged.encode_url().unwrap();
    let with_forged = loc.replace(token, &forged);
    assert!(with_forged.starts_with(&format!("https://{dn}/")));
    let (st, ex, msg) = refused(&transfer("GET", &with_forged, Some(&ca), None, None, false));
    assert_eq!(st, 403, "{ex}: {msg}");
}

/// POST CONCAT joins files of one directory to the target: their blocks
/// move, so each block keeps its replicas (none is invalidated, even
/// after several heartbeats) and the target reads as the files one after
/// the other, across blocks shorter than the block size. Refusals are
/// HDFS's statuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhdfs_concat_moves_blocks_and_copies_no_byte() {
    let c = Cluster::start_with_datanodes(3, "memory", 2).await;
    let l = c.leader().await;
    let hdfs = c.client("hdfs", &["supergroup"]);
    hdfs.mkdirs("/user/alice/c", None).await.unwrap();
    hdfs.set_owner("/user/alice/c", Some("alice"), None).await.unwrap();
    hdfs.mkdirs("/user/alice/other", None).await.unwrap();
    hdfs.set_owner("/user/alice/other", Some("alice"), None).await.unwrap();
    let alice = c.client("alice", &[]);
    let parts = [
        ("/user/alice/c/t", pattern((3 << 19) + 3, 7)),
        ("/user/alice/c/a", pattern((5 << 19) + 11, 8)),
        ("/user/alice/c/b", pattern(100, 9)),
        ("/user/alice/other/x", pattern(10, 10)),
    ];
    let q = "op=CREATE&user.name=alice&blocksize=1048576&replication=2";
    for (p, data) in &parts {
        let done = upload(&c, l, "PUT", p, q, data, None);
        assert_eq!(done.status, 201, "{p}: {done:?}");
    }
    // Every replica reported first, so that what follows compares like with like.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let before = loop {
        let mut all = Vec::new();
        for (p, _) in &parts[..3] {
            all.extend(alice.block_locations(p).await.unwrap().blocks);
        }
        if all.iter().all(|b| b.locations.len() == 2) {
            break all;
        }
        assert!(std::time::Instant::now() < deadline, "replicas not reported: {all:?}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let ca = c.ca_cert();
    let post = |query: &str| {
        transfer(
            "POST",
            &url(&c.http_addr(l), "/user/alice/c/t", query),
            Some(&ca),
            None,
            None,
            false,
        )
    };

    let missing = post("op=CONCAT&user.name=alice&sources=/user/alice/c/a,/user/alice/c/nope");
    let (st, ex, msg) = refused(&missing);
    assert_eq!((st, ex.as_str()), (404, "FileNotFoundException"), "{msg}");
    let elsewhere = post("op=CONCAT&user.name=alice&sources=/user/alice/c/a,/user/alice/other/x");
    let (st, _, msg) = refused(&elsewhere);
    assert_eq!(st, 400, "{msg}");
    assert!(msg.contains("is not in the same directory with the target"), "{msg}");
    let bob = post("op=CONCAT&user.name=bob&sources=/user/alice/c/a");
    assert_eq!(refused(&bob).1, "AccessControlException");

    let joined = post("op=CONCAT&user.name=alice&sources=/user/alice/c/a,/user/alice/c/b");
    assert_eq!(joined.status, 200, "{joined:?}");
    assert!(joined.body.is_empty(), "CONCAT answers no body: {joined:?}");
    let want: Vec<u8> = parts[..3].iter().flat_map(|(_, d)| d.clone()).collect();
    for gone in ["/user/alice/c/a", "/user/alice/c/b"] {
        assert!(!alice.exists(gone).await.unwrap(), "{gone} is deleted");
    }
    // The same blocks, in order, on the same DataNodes, now and after
    // DataNodes have heartbeated (and would have been told to delete).
    for wait_ms in [0, 1500] {
        tokio::time::sleep(std::time::Duration::from_millis(wait_ms)).await;
        let after = alice.block_locations("/user/alice/c/t").await.unwrap().blocks;
        let ids = |v: &[raftfs_proto::LocatedBlock]| v.iter().map(|b| b.block.id).collect::<Vec<_>>();
        assert_eq!(
            ids(&after),
            ids(&before),
            "the target's blocks are the three files' blocks"
        );
        for (a, b) in after.iter().zip(&before) {
            let nodes = |x: &raftfs_proto::LocatedBlock| {
                let mut n: Vec<String> = x.locations.iter().map(|d| d.uuid.clone()).collect();
                n.sort();
                n
            };
            assert_eq!(
                nodes(a),
                nodes(b),
                "block {} keeps its replicas after {wait_ms} ms",
                a.block.id
            );
        }
        let got = read(&c, l, "/user/alice/c/t", "op=OPEN&user.name=alice");
        assert_eq!(got.status, 200);
        assert!(got.body == want, "the target reads as t, a, b after {wait_ms} ms");
    }
    // A read that starts inside a's second block and ends in b.
    let from = (3 << 19) + 3 + (1 << 20) + 5;
    let part = read(
        &c,
        l,
        "/user/alice/c/t",
        &format!(
            "op=OPEN&user.name=alice&offset={from}&length={}",
            want.len() - from - 50
        ),
    );
    assert!(part.body == want[from..want.len() - 50], "an OPEN across short blocks");
    let st = json(&read(&c, l, "/user/alice/c/t", "op=GETFILESTATUS&user.name=alice"));
    assert_eq!(st["FileStatus"]["length"], want.len() as u64);

    // TRUNCATE inside a block: false, then the replicas are cut (their
    // last chunk's checksum recomputed) and the file closes; at a block
    // boundary: true at once. A larger length is refused.
    let larger = post(&format!("op=TRUNCATE&user.name=alice&newlength={}", want.len() + 1));
    let (st, ex, msg) = refused(&larger);
    assert_eq!((st, ex.as_str()), (400, "IllegalArgumentException"), "{msg}");
    let cut = (3 << 19) + 3 + (1 << 20) + 7;
    let r = post(&format!("op=TRUNCATE&user.name=alice&newlength={cut}"));
    assert_eq!(json(&r), serde_json::json!({ "boolean": false }), "{r:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while alice
        .get_file_status("/user/alice/c/t")
        .await
        .unwrap()
        .under_construction
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the truncate's recovery did not finish"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let got = read(&c, l, "/user/alice/c/t", "op=OPEN&user.name=alice");
    assert_eq!(got.body.len(), cut);
    assert!(got.body == want[..cut], "the truncated file is the old one's start");
    let tail = read(
        &c,
        l,
        "/user/alice/c/t",
        &format!("op=OPEN&user.name=alice&offset={}", cut - 3),
    );
    assert!(tail.body == want[cut - 3..cut], "the cut chunk reads back checksummed");
    let r = post(&format!("op=TRUNCATE&user.name=alice&newlength={}", 1 << 20));
    assert_eq!(json(&r), serde_json::json!({ "boolean": true }), "{r:?}");
    let got = read(&c, l, "/user/alice/c/t", "op=OPEN&user.name=alice");
    assert!(got.body == want[..1 << 20], "truncated at the first block's end");
}

/// Through a router under strong authentication: the redirect carries a
/// token the routers issued for the certificate's user, the DataNode
/// (following the routers) acts for her with it, and the bytes land in the
/// nameservice the mount point names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_router_under_strong_authentication_a_redirect_carries_a_routers_token() {
    let mut c = Cluster::start_with(1, "memory", &["--auth", "strong"]);
    let hdfs = c.certificate_client("hdfs");
    wait_serving(&hdfs).await;
    let mut routers = common::routers::Routers::start_with(&c, 1, &["--auth", "strong"]);
    routers.admin_credentials = Some(c.user_credentials("hdfs"));
    routers.admin_ok(&["-addNameservice", "ns1", &c.fs_uri()]);
    routers.admin_ok(&["-add", "/home", "ns1", "/user"]);
    routers.wait_version(routers.version().await).await;
    c.start_datanodes(1, &["--auth", "strong", "--router", &routers.uri(None)]);
    wait_datanode_http(&hdfs).await;
    hdfs.mkdirs("/user/alice", None).await.unwrap();
    hdfs.set_owner("/user/alice", Some("alice"), None).await.unwrap();
    let alice = c.user_credentials("alice");
    let ca = c.ca_cert();
    let r_http = routers.http_addrs[0].clone();
    let data = pattern(300_000, 5);
    let done = upload_at(&c, &r_http, "PUT", "/home/alice/r", "op=CREATE", &data, Some(&alice));
    assert_eq!(done.status, 201, "{done:?} {}", String::from_utf8_lossy(&done.body));
    let nr = transfer(
        "GET",
        &url(&r_http, "/home/alice/r", "op=OPEN&noredirect=true"),
        Some(&ca),
        Some(&alice),
        None,
        false,
    );
    let loc = json(&nr)["Location"].as_str().unwrap().to_string();
    let text = loc
        .split("delegation=")
        .nth(1)
        .expect("a token")
        .split('&')
        .next()
        .unwrap();
    let token = raftfs_proto::DelegationToken::decode_url(text).unwrap();
    assert_eq!(token.service, raftfs_federation::router_tokens::ROUTER_TOKEN_SERVICE);
    assert_eq!(token.identifier.owner, "alice");
    assert_eq!(transfer("GET", &loc, Some(&ca), None, None, false).body, data);
    let st = c
        .certificate_client("alice")
        .get_file_status("/user/alice/r")
        .await
        .unwrap();
    assert_eq!((st.owner.as_str(), st.length), ("alice", data.len() as u64));
}
