//! The federated namespace through a router: two nameservices of one
//! cluster (one CA, DataNodes serving both block pools) behind a router
//! and a mount table, used with the same `raftfs dfs` and SDK calls as one
//! nameservice. Paths are translated and forwarded to the owning
//! nameservice; listings merge mount points; a mount point stats as a
//! directory; content summaries add up; renames across nameservices,
//! writes under read-only mounts and deletes of mount points are refused
//! with clear errors; a retried call is answered from the nameservice's
//! retry table through the router; a dead nameservice never blocks calls
//! to the other; a router out of touch with its group's quorum, or put
//! there by an operator, is in safe mode and says so; a nameservice refuses
//! a call routed by a stale table for a path it no longer owns; and under strong
//! authentication the router decides the user by its certificate and the
//! nameservice takes the router's word for it (proxy users).

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::federated::{names, Federated};
use common::routers::Routers;
use common::Cluster;
use raftfs_client::{ClientOptions, ClientTls, FileSystem, Identity, Routing};
use raftfs_proto::{FsError, Op, OpResult, Permission};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_namespace_over_two_nameservices_through_a_router() {
    one_namespace_over_two_nameservices(Routing::ViaRouter).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_namespace_over_two_nameservices_routed_by_the_sdk() {
    one_namespace_over_two_nameservices(Routing::Direct).await;
}

/// The federated namespace's behaviour, the same whether a router or the
/// SDK itself routes the calls.
async fn one_namespace_over_two_nameservices(routing: Routing) {
    let f = Federated::start(1, routing).await;

    // Files land in the nameservice their mount point names, at the translated path.
    let local = f.ns1.root.path().join("payload");
    let payload: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&local, &payload).unwrap();
    f.dfs_ok("alice", &["-put", local.to_str().unwrap(), "/data/big"]);
    f.dfs_ok("alice", &["-mkdir", "-p", "/user/alice/docs"]);
    f.dfs_ok("alice", &["-put", local.to_str().unwrap(), "/user/alice/docs/copy"]);
    let (_, direct, _) = f.ns2.dfs("hdfs", &["-ls", "/data"]);
    assert!(direct.contains("/data/big"), "ns2 holds /data/big: {direct}");
    let (_, direct, _) = f.ns1.dfs("hdfs", &["-ls", "/user/alice/docs"]);
    assert!(direct.contains("/user/alice/docs/copy"), "ns1 holds the copy: {direct}");
    let (_, direct, _) = f.ns1.dfs("hdfs", &["-ls", "/"]);
    assert!(!direct.contains("/data"), "ns1 holds no /data: {direct}");

    // Data reads back through the router, from the right block pool.
    let back = f.ns1.root.path().join("back");
    f.dfs_ok("alice", &["-get", "/data/big", back.to_str().unwrap()]);
    assert_eq!(std::fs::read(&back).unwrap(), payload);
    let fs = f.client("alice", f.ns1.client_options());
    let got = fs
        .open("/user/alice/docs/copy")
        .await
        .unwrap()
        .read_to_end()
        .await
        .unwrap();
    assert_eq!(got, payload, "the ns1 copy reads back through the router");
    assert_eq!(
        fs.routes_directly(),
        routing == Routing::Direct,
        "the SDK routes by itself exactly when told to"
    );

    // The root lists the mount points; a mount point stats as a directory
    // with its entry's owner and mode, even where its destination is missing.
    let root = f.dfs_ok("alice", &["-ls", "/"]);
    assert_eq!(names(&root), ["a", "data", "ro", "shared", "user"], "{root}");
    let a = f.dfs_ok("alice", &["-ls", "/a"]);
    assert_eq!(names(&a), ["b"], "{a}");
    let b = fs.get_file_status("/a/b").await.unwrap();
    assert!(b.is_dir());
    assert_eq!(
        (b.owner.as_str(), b.permission.bits(), b.path_suffix.as_str()),
        ("alice", 0o750, "b")
    );
    assert_eq!(fs.get_file_status("/").await.unwrap().owner, "hdfs");
    assert!(fs.get_file_info("/nowhere").await.unwrap().is_none());
    let data = fs.get_file_status("/data").await.unwrap();
    assert_eq!(data.children_num, 1, "the mount point shows its destination's children");

    // Content summaries add up across nameservices.
    let count = f.dfs_ok("alice", &["-count", "/"]);
    let fields: Vec<&str> = count.split_whitespace().collect();
    assert_eq!(fields[1], "2", "two files in the federated namespace: {count}");
    assert_eq!(fields[2], (2 * payload.len()).to_string(), "{count}");

    // Refusals, each with its reason.
    f.dfs_refused(
        &["-mv", "/user/alice/docs/copy", "/data/copy"],
        "cannot cross nameservices",
    );
    f.dfs_refused(&["-mkdir", "/ro/x"], "read-only mount point");
    f.dfs_refused(&["-rm", "-r", "/data"], "is a mount point");
    f.dfs_refused(&["-mkdir", "-p", "/nowhere/x"], "no mount point covers");
    f.dfs_refused(&["-chmod", "700", "/"], "mount table");
    // A rename within one nameservice works.
    f.dfs_ok("alice", &["-mv", "/data/big", "/data/big2"]);
    let (_, direct, _) = f.ns2.dfs("hdfs", &["-ls", "/data"]);
    assert!(direct.contains("/data/big2"), "{direct}");

    // A mount point's quota holds exactly: its nameservice enforces it on
    // the destination. /data holds itself and big2, so two more names fit.
    f.routers.admin_ok(&["-setQuota", "/data", "-nsQuota", "4"]);
    f.dfs_ok("alice", &["-touchz", "/data/q1"]);
    f.dfs_ok("alice", &["-touchz", "/data/q2"]);
    f.dfs_refused(&["-touchz", "/data/q3"], "quota");
    f.routers.admin_ok(&["-clrQuota", "/data"]);
    f.dfs_ok("alice", &["-touchz", "/data/q3"]);
    let (code, _, err) = f.routers.admin("hdfs", &["-setQuota", "/shared", "-nsQuota", "10"]);
    assert_ne!(code, 0);
    assert!(err.contains("cannot be enforced exactly"), "{err}");

    // HASH_ALL spreads the files of one directory over both nameservices;
    // the router's listing and summary see all of them.
    for i in 0..16 {
        let (code, out, err) = f.dfs("alice", &["-touchz", &format!("/shared/f{i}")]);
        assert_eq!(code, 0, "{out}{err}");
    }
    let listed = f.dfs_ok("alice", &["-ls", "/shared"]);
    assert_eq!(names(&listed).len(), 16, "{listed}");
    let in1 = names(&f.ns1.dfs("hdfs", &["-ls", "/shared"]).1).len();
    let in2 = names(&f.ns2.dfs("hdfs", &["-ls", "/shared"]).1).len();
    assert_eq!(in1 + in2, 16);
    assert!(in1 > 0 && in2 > 0, "HASH_ALL used both nameservices: {in1} + {in2}");
    println!("HASH_ALL placed {in1} files in ns1 and {in2} in ns2");
    let count = f.dfs_ok("alice", &["-count", "/shared"]);
    assert_eq!(count.split_whitespace().nth(1), Some("16"), "{count}");
    f.dfs_ok("alice", &["-rm", "/shared/f3"]);
    assert_eq!(names(&f.dfs_ok("alice", &["-ls", "/shared"])).len(), 15);

    // A concat joins files of one nameservice, with the paths translated,
    // and is refused where HASH_ALL put the files in different ones.
    let in_ns = |ns: &Cluster| names(&ns.dfs("hdfs", &["-ls", "/shared"]).1);
    let (one, two) = (in_ns(&f.ns1), in_ns(&f.ns2));
    let mut args = vec!["-concat".to_string()];
    args.extend(one.iter().chain(&two).map(|n| format!("/shared/{n}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    f.dfs_refused(&args, "a concat cannot cross nameservices");
    let small = f.ns1.root.path().join("small");
    std::fs::write(&small, b"0123456789").unwrap();
    f.dfs_ok("alice", &["-put", small.to_str().unwrap(), "/user/alice/docs/s1"]);
    f.dfs_ok("alice", &["-put", small.to_str().unwrap(), "/user/alice/docs/s2"]);
    f.dfs_ok(
        "alice",
        &[
            "-concat",
            "/user/alice/docs/copy",
            "/user/alice/docs/s1",
            "/user/alice/docs/s2",
        ],
    );
    let joined = fs
        .open("/user/alice/docs/copy")
        .await
        .unwrap()
        .read_to_end()
        .await
        .unwrap();
    assert_eq!(joined.len(), payload.len() + 20);
    assert!(joined[..payload.len()] == payload[..] && &joined[payload.len()..] == b"01234567890123456789");
    assert_eq!(names(&f.dfs_ok("alice", &["-ls", "/user/alice/docs"])), ["copy"]);

    // Exactly once through the router: a retried create (same client id
    // and call id) is answered from ns1's retry table, not refused as existing.
    let router = f.routers.addrs[0].clone();
    let mut raw = f.ns1.namespace_client(&router).await;
    let create = Op::Create {
        path: "/user/alice/once".into(),
        permission: Permission::new(0o644),
        overwrite: false,
        create_parent: false,
        replication: 1,
        block_size: 1 << 20,
    };
    let first = common::raw_call(&mut raw, "retrying-client", 7, &create).await;
    let again = common::raw_call(&mut raw, "retrying-client", 7, &create).await;
    assert!(matches!(first, Ok(OpResult::Status(Some(_)))), "{first:?}");
    assert_eq!(first, again, "the retry is answered as the first call was");
    let fresh = common::raw_call(&mut raw, "retrying-client", 8, &create).await;
    assert!(
        matches!(
            fresh,
            Err(FsError::AlreadyBeingCreated(_)) | Err(FsError::FileAlreadyExists(_))
        ),
        "{fresh:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_nameservice_does_not_block_the_other_and_safe_mode_refuses_calls() {
    let mut f = Federated::start(3, Routing::ViaRouter).await;
    let fs = Arc::new(f.client("alice", f.ns1.client_options()));
    fs.mkdirs("/user/alice/live", None).await.unwrap();

    // ns2 dies: calls into it pile up in the router, calls into ns1 go on.
    f.ns2.kill_all();
    let stuck: Vec<_> = (0..300)
        .map(|i| {
            let fs = fs.clone();
            tokio::spawn(async move { fs.get_file_info(&format!("/data/x{i}")).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut slowest = Duration::ZERO;
    for i in 0..20 {
        let t = Instant::now();
        fs.get_file_status("/user/alice/live").await.expect("ns1 still answers");
        slowest = slowest.max(t.elapsed());
        if i == 0 {
            fs.create("/user/alice/live/f", true)
                .await
                .expect("ns1 still takes writes");
        }
    }
    println!("slowest ns1 call while ns2 was dead: {} ms", slowest.as_millis());
    assert!(slowest < Duration::from_millis(1_000), "ns1's calls waited {slowest:?}");
    for s in stuck {
        s.abort();
    }

    // An operator's safe mode: the router refuses calls and says why.
    let (code, out, err) = f.routers.admin("alice", &["-safemode", "enter"]);
    assert_ne!(code, 0, "only the superuser may: {out}");
    assert!(err.contains("only the superuser"), "{err}");
    let out = f.routers.admin_ok(&["-safemode", "enter"]);
    assert_eq!(out.matches("Safe Mode: ON").count(), 3, "{out}");
    let quick = f.client(
        "alice",
        ClientOptions {
            call_deadline_ms: 1_500,
            ..f.ns1.client_options()
        },
    );
    let e = quick.get_file_status("/user/alice/live").await.unwrap_err();
    assert!(e.to_string().contains("safe mode"), "{e}");
    f.routers.admin_ok(&["-safemode", "leave"]);
    quick
        .get_file_status("/user/alice/live")
        .await
        .expect("out of safe mode");

    // A router cut off from its group's quorum enters safe mode by itself.
    f.routers.kill(2);
    f.routers.kill(3);
    let lost = Instant::now();
    loop {
        let (_, out, _) = f.routers.admin("hdfs", &["-safemode", "get"]);
        if out
            .lines()
            .any(|l| l.starts_with(&f.routers.addrs[0]) && l.contains("Safe Mode: ON"))
        {
            assert!(out.contains("quorum"), "{out}");
            break;
        }
        assert!(
            lost.elapsed() < Duration::from_secs(20),
            "router 1 never entered safe mode: {out}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!(
        "router 1 entered safe mode {} ms after losing its quorum",
        lost.elapsed().as_millis()
    );
    f.routers.start_router(2);
    let back = Instant::now();
    loop {
        if quick.get_file_status("/user/alice/live").await.is_ok() {
            break;
        }
        assert!(
            back.elapsed() < Duration::from_secs(30),
            "the routers never left safe mode\n{}",
            f.routers.logs()
        );
    }
    println!(
        "calls were answered again {} ms after a second router returned",
        back.elapsed().as_millis()
    );
}

/// `n` routers under `--auth strong` in front of `ns1` (mounted at /user),
/// and the superuser's certificate client with /user/alice made alice's.
async fn strong_routers(ns1: &Cluster, n: usize) -> (Routers, raftfs_client::FileSystem) {
    let mut routers = Routers::start_with(ns1, n, &["--auth", "strong"]);
    routers.admin_credentials = Some(ns1.user_credentials("hdfs"));
    routers.admin_ok(&["-addNameservice", "ns1", &ns1.fs_uri()]);
    routers.admin_ok(&["-add", "/user", "ns1", "/user"]);
    routers.wait_version(routers.version().await).await;
    let hdfs = ns1.certificate_client("hdfs");
    hdfs.mkdirs("/user/alice", None).await.unwrap();
    hdfs.set_owner("/user/alice", Some("alice"), None).await.unwrap();
    (routers, hdfs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strong_authentication_holds_through_a_router() {
    let ns1 = Cluster::start_with(1, "memory", &["--auth", "strong"]);
    let (routers, hdfs) = strong_routers(&ns1, 1).await;

    for routing in [Routing::ViaRouter, Routing::Direct] {
        let via = |user: &str, tls: ClientTls| {
            let opts = ClientOptions {
                tls,
                delegation_token: raftfs_client::DelegationTokenSource::None,
                routing,
                ..ClientOptions::default()
            };
            FileSystem::connect(&routers.uri(None), Identity::new(user, &[]), opts).unwrap()
        };
        // Alice's certificate makes her alice in ns1, through the router or
        // straight from the SDK.
        let alice = via("alice", ClientTls::Credentials(ns1.user_credentials("alice")));
        let dir = format!("/user/alice/{routing:?}");
        alice.mkdirs(&dir, None).await.expect("alice writes her home");
        assert_eq!(hdfs.get_file_status(&dir).await.unwrap().owner, "alice");
        assert_eq!(alice.routes_directly(), routing == Routing::Direct);
        // No certificate, or a claim beyond it, is refused.
        let anonymous = via("alice", ClientTls::CaFile(ns1.ca_cert()));
        let e = anonymous.mkdirs("/user/alice/e", None).await.unwrap_err();
        assert!(
            matches!(&e, FsError::AccessControl(m) if m.contains("strong authentication")),
            "{routing:?}: {e:?}"
        );
        let posing = via("hdfs", ClientTls::Credentials(ns1.user_credentials("alice")));
        let e = posing.mkdirs("/user/hdfs-only", None).await.unwrap_err();
        assert!(
            matches!(&e, FsError::AccessControl(m) if m.contains("authenticated as alice")),
            "{routing:?}: {e:?}"
        );
        // Alice is not the superuser, in ns1, whichever way she comes.
        let e = alice.mkdirs("/user/bob", None).await.unwrap_err();
        assert!(matches!(e, FsError::AccessControl(_)), "{routing:?}: {e:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nameservice_refuses_routed_calls_for_paths_it_does_not_own() {
    let f = Federated::start(1, Routing::ViaRouter).await;
    let version = f.routers.version().await;
    let ns2 = f.ns2.members[&1].clone();
    let mut raw = f.ns2.namespace_client(&ns2).await;
    let stat = |p: &str| Op::GetFileInfo { path: p.into() };
    // The router leader tells each nameservice its paths soon after a change.
    let told = Instant::now();
    loop {
        match common::raw_routed_call(&mut raw, "stale-client", 1, &stat("/user/alice"), version).await {
            Err(FsError::NotOwned { version: v, message }) => {
                assert!(v >= version, "{message}");
                assert!(message.contains("refresh the mount table"), "{message}");
                break;
            }
            other => assert!(
                told.elapsed() < Duration::from_secs(10),
                "ns2 never learned it does not own /user: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    println!("ns2 knew its paths {} ms into the test", told.elapsed().as_millis());
    // What ns2 owns is served; calls not routed by a table are never refused.
    let owned = common::raw_routed_call(&mut raw, "stale-client", 2, &stat("/data"), version).await;
    assert!(matches!(owned, Ok(OpResult::Status(Some(_)))), "{owned:?}");
    let direct = common::raw_call(&mut raw, "plain-client", 1, &stat("/user/alice")).await;
    assert_eq!(
        direct,
        Ok(OpResult::Status(None)),
        "ns2 alone has no /user/alice, and says so"
    );

    // /data moves to ns1. Once the change is acknowledged, ns2 already
    // refuses a client that still routes /data to it by the old table.
    f.routers.admin_ok(&["-update", "/data", "ns1", "/data"]);
    let mkdir = Op::Mkdirs {
        path: "/data/late".into(),
        permission: Permission::new(0o755),
        create_parent: true,
    };
    let stale = common::raw_routed_call(&mut raw, "stale-client", 3, &mkdir, version).await;
    assert!(matches!(stale, Err(FsError::NotOwned { .. })), "{stale:?}");
    // The router routes by the new table: /data is ns1's now.
    f.dfs_ok("alice", &["-mkdir", "-p", "/user/alice/x"]);
    f.ns1.dfs("hdfs", &["-mkdir", "-p", "/data"]);
    f.ns1.dfs("hdfs", &["-chmod", "777", "/data"]);
    f.dfs_ok("alice", &["-mkdir", "/data/moved"]);
    let (_, in1, _) = f.ns1.dfs("hdfs", &["-ls", "/data"]);
    assert!(in1.contains("/data/moved"), "{in1}");
    let (_, in2, _) = f.ns2.dfs("hdfs", &["-ls", "/data"]);
    assert!(!in2.contains("moved"), "{in2}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routers_issue_delegation_tokens_for_the_federated_namespace() {
    let ns1 = Cluster::start_with(1, "memory", &["--auth", "strong"]);
    let (routers, hdfs) = strong_routers(&ns1, 2).await;

    let connect = |uri: &str, user: &str, tls: ClientTls, token: Option<&raftfs_proto::DelegationToken>, routing| {
        let opts = ClientOptions {
            tls,
            delegation_token: match token {
                Some(t) => raftfs_client::DelegationTokenSource::Token(t.clone()),
                None => raftfs_client::DelegationTokenSource::None,
            },
            routing,
            ..ClientOptions::default()
        };
        FileSystem::connect(uri, Identity::new(user, &[]), opts).unwrap()
    };
    let alice_cert = || ClientTls::Credentials(ns1.user_credentials("alice"));
    let ca = || ClientTls::CaFile(ns1.ca_cert());

    // Alice's certificate gets her a token of the routers, from either router.
    let alice = connect(&routers.uri(None), "alice", alice_cert(), None, Routing::ViaRouter);
    let token = alice.get_delegation_token("").await.expect("a routers' token");
    assert_eq!(token.service, raftfs_federation::router_tokens::ROUTER_TOKEN_SERVICE);
    assert_eq!(token.identifier.owner, "alice");
    for i in 1..=2 {
        let at = connect(&routers.uri(Some(i)), "alice", alice_cert(), None, Routing::ViaRouter);
        at.get_delegation_token("")
            .await
            .unwrap_or_else(|e| panic!("router {i} issues a token: {e:?}"));
    }

    // The token alone authenticates alice through every router, right
    // after the fetch, in either routing (a token holder routes via routers).
    for (i, routing) in [(1, Routing::ViaRouter), (2, Routing::ViaRouter), (2, Routing::Direct)] {
        let holder = connect(&routers.uri(Some(i)), "nobody", ca(), Some(&token), routing);
        let dir = format!("/user/alice/by-token-{i}-{routing:?}");
        holder
            .mkdirs(&dir, None)
            .await
            .unwrap_or_else(|e| panic!("router {i}: {e:?}"));
        assert_eq!(hdfs.get_file_status(&dir).await.unwrap().owner, "alice");
        assert!(!holder.routes_directly(), "a routers' token is checked by routers");
        // A token cannot beget tokens, nor renew itself.
        let e = holder.get_delegation_token("").await.unwrap_err();
        assert!(
            matches!(&e, FsError::AccessControl(m) if m.contains("user certificate")),
            "{e:?}"
        );
        let e = holder.renew_delegation_token(&token).await.unwrap_err();
        assert!(matches!(e, FsError::AccessControl(_)), "{e:?}");
    }
    // Alice is still not the superuser.
    let holder = connect(&routers.uri(None), "nobody", ca(), Some(&token), Routing::ViaRouter);
    let e = holder.mkdirs("/user/bob", None).await.unwrap_err();
    assert!(matches!(e, FsError::AccessControl(_)), "{e:?}");
    // A forged token is refused.
    let mut forged = token.clone();
    forged.identifier.owner = "hdfs".into();
    let posing = connect(&routers.uri(None), "nobody", ca(), Some(&forged), Routing::ViaRouter);
    let e = posing.mkdirs("/user/forged", None).await.unwrap_err();
    assert!(matches!(e, FsError::AccessControl(_)), "{e:?}");

    // Renewed by its renewer; cancelled, it authenticates no more.
    let expiry = alice.renew_delegation_token(&token).await.expect("renew");
    assert!(expiry > token.identifier.issue_ms, "{expiry}");
    let bob = connect(
        &routers.uri(None),
        "bob",
        ClientTls::Credentials(ns1.user_credentials("bob")),
        None,
        Routing::ViaRouter,
    );
    let e = bob.cancel_delegation_token(&token).await.unwrap_err();
    assert!(
        matches!(e, FsError::AccessControl(_)),
        "bob may not cancel alice's token: {e:?}"
    );
    alice.cancel_delegation_token(&token).await.expect("cancel");
    // Every router refuses it once it has applied the cancel (at once on
    // the leader, within a heartbeat or so elsewhere).
    let cancelled = Instant::now();
    loop {
        match holder.get_file_status("/user/alice").await {
            Err(FsError::AccessControl(m)) if m.contains("can't be found") => break,
            other => assert!(
                cancelled.elapsed() < Duration::from_secs(5),
                "a cancelled token still authenticates: {other:?}"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("cancelled everywhere in {} ms", cancelled.elapsed().as_millis());
    for i in 1..=2 {
        let at = connect(&routers.uri(Some(i)), "nobody", ca(), Some(&token), Routing::ViaRouter);
        let e = at.mkdirs("/user/alice/after-cancel", None).await.unwrap_err();
        assert!(
            matches!(&e, FsError::AccessControl(m) if m.contains("can't be found")),
            "router {i}: {e:?}"
        );
    }

    // A nameservice's own token still works through the routers, and is
    // renewed and cancelled there.
    let ns_token = ns1.certificate_client("alice").get_delegation_token("").await.unwrap();
    assert_eq!(ns_token.service, "ns1");
    let ns_holder = connect(&routers.uri(None), "nobody", ca(), Some(&ns_token), Routing::ViaRouter);
    ns_holder.mkdirs("/user/alice/by-ns-token", None).await.unwrap();
    alice.renew_delegation_token(&ns_token).await.expect("renewed by ns1");
    alice
        .cancel_delegation_token(&ns_token)
        .await
        .expect("cancelled by ns1");
    assert!(ns_holder.mkdirs("/user/alice/after", None).await.is_err());
}
