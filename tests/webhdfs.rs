//! WebHDFS's namespace operations on a member, as HDFS's WebHDFS answers
//! them: JSON shapes, permissions as the member checks them for the user
//! the request names, HDFS's errors and statuses, a follower's
//! `StandbyException`, bad requests refused before anything changes, and
//! `proto=webhdfs` in the audit log. Requests are sent with curl.

use crate::common;

use common::http::{request, Page};
use common::Cluster;

/// `METHOD /webhdfs/v1PATH?QUERY` on member `i`.
fn web(c: &Cluster, i: u64, method: &str, path: &str, query: &str) -> Page {
    let ca = c.ca_cert();
    request(
        method,
        &c.http_addr(i),
        &format!("/webhdfs/v1{path}?{query}"),
        Some(&ca),
        None,
    )
}

fn json(p: &Page) -> serde_json::Value {
    serde_json::from_str(&p.body).unwrap_or_else(|e| panic!("not JSON ({e}): {p:?}"))
}

/// A 200 answer's JSON.
fn ok(p: Page) -> serde_json::Value {
    assert_eq!(p.status, 200, "{p:?}");
    if p.body.is_empty() {
        serde_json::Value::Null
    } else {
        json(&p)
    }
}

/// An error answer: its status and exception name.
fn refused(p: Page) -> (u16, String, String) {
    let v = json(&p);
    let e = &v["RemoteException"];
    (
        p.status,
        e["exception"].as_str().unwrap_or_default().to_string(),
        e["message"].as_str().unwrap_or_default().to_string(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhdfs_namespace_operations_behave_as_hdfs() {
    let c = Cluster::start(3, "memory");
    c.wait_ready().await;
    let l = c.leader().await;
    let (put, get, del) = ("PUT", "GET", "DELETE");
    // The superuser makes alice's home and gives it to her.
    assert_eq!(
        ok(web(&c, l, put, "/user/alice", "op=MKDIRS&user.name=hdfs")),
        serde_json::json!({"boolean": true})
    );
    ok(web(&c, l, put, "/user/alice", "op=SETOWNER&owner=alice&user.name=hdfs"));
    // alice works in it.
    assert_eq!(
        ok(web(
            &c,
            l,
            put,
            "/user/alice/d",
            "op=MKDIRS&permission=750&user.name=alice"
        ))["boolean"],
        true
    );
    let st = ok(web(&c, l, get, "/user/alice/d", "op=GETFILESTATUS&user.name=alice"));
    let s = &st["FileStatus"];
    assert_eq!(
        (s["type"].as_str(), s["owner"].as_str()),
        (Some("DIRECTORY"), Some("alice"))
    );
    assert_eq!(s["permission"], "750");
    assert_eq!(s["pathSuffix"], "");
    let list = ok(web(&c, l, get, "/user/alice", "op=LISTSTATUS&user.name=alice"));
    let entries = list["FileStatuses"]["FileStatus"].as_array().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0]["pathSuffix"], "d");
    let batch = ok(web(&c, l, get, "/user/alice", "op=LISTSTATUS_BATCH&user.name=alice"));
    assert_eq!(batch["DirectoryListing"]["remainingEntries"], 0);
    assert_eq!(
        batch["DirectoryListing"]["partialListing"]["FileStatuses"]["FileStatus"][0]["pathSuffix"],
        "d"
    );
    assert_eq!(
        ok(web(
            &c,
            l,
            put,
            "/user/alice/d",
            "op=RENAME&destination=/user/alice/e&user.name=alice"
        ))["boolean"],
        true
    );
    let (status, exception, message) = refused(web(&c, l, get, "/user/alice/d", "op=GETFILESTATUS&user.name=alice"));
    assert_eq!(
        (status, exception.as_str()),
        (404, "FileNotFoundException"),
        "{message}"
    );
    assert!(message.contains("/user/alice/d"), "{message}");
    ok(web(
        &c,
        l,
        put,
        "/user/alice/e",
        "op=SETPERMISSION&permission=700&user.name=alice",
    ));
    ok(web(
        &c,
        l,
        put,
        "/user/alice/e",
        "op=SETTIMES&modificationtime=1000&user.name=alice",
    ));
    let e = ok(web(&c, l, get, "/user/alice/e", "op=GETFILESTATUS&user.name=alice"));
    assert_eq!(e["FileStatus"]["permission"], "700");
    assert_eq!(e["FileStatus"]["modificationTime"], 1000);
    let summary = ok(web(&c, l, get, "/user/alice", "op=GETCONTENTSUMMARY&user.name=alice"));
    assert_eq!(summary["ContentSummary"]["directoryCount"], 2);
    assert_eq!(summary["ContentSummary"]["quota"], -1);
    let usage = ok(web(&c, l, get, "/user/alice", "op=GETQUOTAUSAGE&user.name=alice"));
    assert_eq!(usage["QuotaUsage"]["fileAndDirectoryCount"], 2);
    assert_eq!(
        ok(web(&c, l, get, "/", "op=GETHOMEDIRECTORY&user.name=alice")),
        serde_json::json!({"Path": "/user/alice"})
    );

    // Permissions are the namespace's, for the user the request names.
    let (status, exception, _) = refused(web(&c, l, put, "/user/alice/x", "op=MKDIRS&user.name=bob"));
    assert_eq!((status, exception.as_str()), (403, "AccessControlException"));
    let (status, exception, _) = refused(web(&c, l, get, "/user/alice/e", "op=LISTSTATUS&user.name=bob"));
    assert_eq!((status, exception.as_str()), (403, "AccessControlException"));
    // doas only for oneself: there are no proxy users.
    let (status, _, message) = refused(web(&c, l, put, "/user/alice/y", "op=MKDIRS&user.name=bob&doas=alice"));
    assert_eq!(status, 403);
    assert!(message.contains("not allowed to impersonate"), "{message}");

    // Bad requests: refused whole, nothing changed.
    for (method, path, query, want_status, want) in [
        (
            get,
            "/user/alice",
            "op=NOPE&user.name=alice",
            400,
            "IllegalArgumentException",
        ),
        (get, "/user/alice", "user.name=alice", 400, "IllegalArgumentException"),
        (
            put,
            "/user/alice/z",
            "op=MKDIRS&permission=8&user.name=alice",
            400,
            "IllegalArgumentException",
        ),
        (
            del,
            "/user/alice/e",
            "op=DELETE&recursive=yes&user.name=alice",
            400,
            "IllegalArgumentException",
        ),
        (
            get,
            "/user/alice/e",
            "op=MKDIRS&user.name=alice",
            400,
            "IllegalArgumentException",
        ),
        (
            put,
            "/user/../alice/z",
            "op=MKDIRS&user.name=alice",
            400,
            "InvalidPathException",
        ),
        (
            "PUT",
            "/user/alice/e",
            "op=CREATESNAPSHOT&user.name=alice",
            400,
            "UnsupportedOperationException",
        ),
        (
            "POST",
            "/user/alice/e",
            "op=CONCAT&user.name=alice",
            400,
            "IllegalArgumentException",
        ),
    ] {
        let (status, exception, message) = refused(web(&c, l, method, path, query));
        assert_eq!(
            (status, exception.as_str()),
            (want_status, want),
            "{method} {path}?{query}: {message}"
        );
    }
    assert_eq!(
        refused(web(&c, l, get, "/user/alice/z", "op=GETFILESTATUS&user.name=alice")).0,
        404,
        "a refused MKDIRS made nothing"
    );

    // Only the leader answers: a follower says StandbyException.
    let follower = *c.members.keys().find(|i| **i != l).unwrap();
    let (status, exception, _) = refused(web(&c, follower, get, "/user/alice", "op=LISTSTATUS&user.name=alice"));
    assert_eq!((status, exception.as_str()), (403, "StandbyException"));

    // DELETE: true when something was deleted, false when nothing was there.
    let (status, exception, _) = refused(web(&c, l, del, "/user/alice", "op=DELETE&user.name=alice"));
    assert_eq!((status, exception.as_str()), (403, "PathIsNotEmptyDirectoryException"));
    assert_eq!(
        ok(web(
            &c,
            l,
            del,
            "/user/alice/e",
            "op=DELETE&recursive=true&user.name=alice"
        ))["boolean"],
        true
    );
    assert_eq!(
        ok(web(&c, l, del, "/user/alice/e", "op=DELETE&user.name=alice"))["boolean"],
        false
    );

    // The audit log says the calls came over WebHDFS.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let audit = std::fs::read_to_string(c.dir(l).join("audit.log")).unwrap_or_default();
        let refused_line = audit.lines().any(|x| {
            x.contains("allowed=false\tugi=bob (auth:SIMPLE)")
                && x.contains("cmd=mkdirs")
                && x.ends_with("proto=webhdfs")
        });
        let renamed = audit
            .lines()
            .any(|x| x.contains("cmd=rename\tsrc=/user/alice/d\tdst=/user/alice/e") && x.ends_with("proto=webhdfs"));
        if refused_line && renamed {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "audit log:\n{audit}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_strong_authentication_webhdfs_needs_a_user_certificate() {
    let c = Cluster::start_with(1, "memory", &["--auth", "strong"]);
    let hdfs = c.certificate_client("hdfs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while let Err(e) = hdfs.get_file_status("/").await {
        assert!(std::time::Instant::now() < deadline, "never ready: {e}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let ca = c.ca_cert();
    let anon = request(
        "GET",
        &c.http_addr(1),
        "/webhdfs/v1/?op=LISTSTATUS&user.name=hdfs",
        Some(&ca),
        None,
    );
    assert_eq!(anon.status, 401, "{anon:?}");
    let alice = c.user_credentials("alice");
    let posing = request(
        "PUT",
        &c.http_addr(1),
        "/webhdfs/v1/x?op=MKDIRS&user.name=hdfs",
        Some(&ca),
        Some(&alice),
    );
    assert_eq!(posing.status, 403, "{posing:?}");
    assert!(posing.body.contains("authenticated as alice"), "{}", posing.body);
    let own = request(
        "GET",
        &c.http_addr(1),
        "/webhdfs/v1/?op=GETHOMEDIRECTORY",
        Some(&ca),
        Some(&alice),
    );
    assert_eq!(own.status, 200, "{own:?}");
    assert!(own.body.contains("/user/alice"), "{}", own.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routers_serve_webhdfs_for_the_federated_namespace() {
    let f = common::federated::Federated::start(1, raftfs_client::Routing::ViaRouter).await;
    let ca = f.ns1.ca_cert();
    let r = |method: &str, path: &str, query: &str| {
        request(
            method,
            &f.routers.http_addrs[0],
            &format!("/webhdfs/v1{path}?{query}"),
            Some(&ca),
            None,
        )
    };
    // The root lists the mount points.
    let root = ok(r("GET", "/", "op=LISTSTATUS&user.name=alice"));
    let names: Vec<&str> = root["FileStatuses"]["FileStatus"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["pathSuffix"].as_str().unwrap())
        .collect();
    for m in ["a", "data", "ro", "shared", "user"] {
        assert!(names.contains(&m), "{m} in {names:?}");
    }
    // A directory made through the router lands in the nameservice that owns its path.
    assert_eq!(ok(r("PUT", "/data/web", "op=MKDIRS&user.name=alice"))["boolean"], true);
    let st = ok(r("GET", "/data/web", "op=GETFILESTATUS&user.name=alice"));
    assert_eq!(st["FileStatus"]["owner"], "alice");
    let in_ns2 = f.ns2.client("hdfs", &[]).get_file_status("/data/web").await;
    assert_eq!(in_ns2.expect("/data/web is in ns2").owner, "alice");
    // Across nameservices and under a read-only mount: refused.
    let (status, exception, message) = refused(r(
        "PUT",
        "/data/web",
        "op=RENAME&destination=/user/alice/web&user.name=alice",
    ));
    assert_eq!(status, 403, "{exception}: {message}");
    let (status, exception, message) = refused(r("PUT", "/ro/x", "op=MKDIRS&user.name=alice"));
    assert_eq!(status, 403, "{exception}: {message}");
}
