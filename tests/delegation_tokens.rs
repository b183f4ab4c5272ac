//! Delegation tokens: a user with a certificate fetches one; a process with
//! only the token acts as its owner on a `--auth strong` nameservice; only
//! the renewer renews it, only its owner or renewer cancels it; a forged or
//! altered token, a cancelled one and an expired one are refused with
//! `AccessControlException`; a token cannot fetch or renew tokens; tokens
//! live in the replicated state, so they outlive the leader that issued
//! them; and `raftfs fetchdt` fetches, prints, renews and cancels them.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use common::Cluster;
use raftfs_proto::FsError;

fn refused<T: std::fmt::Debug>(r: Result<T, FsError>, why: &str) {
    match r {
        Err(FsError::AccessControl(m)) => assert!(m.contains(why), "{m:?} should say {why:?}"),
        other => panic!("expected AccessControlException ({why}), got {other:?}"),
    }
}

async fn home(c: &Cluster, user: &str) {
    let hdfs = c.certificate_client("hdfs");
    let dir = format!("/user/{user}");
    hdfs.mkdirs(&dir, None).await.unwrap();
    hdfs.set_owner(&dir, Some(user), None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tokens_authenticate_renew_cancel_and_outlive_their_leader() {
    tokens_in(&["--auth", "strong"]).await;
}

/// The same with every member planning every write (the log carries ops).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn tokens_in_exec_apply() {
    tokens_in(&["--auth", "strong", "--exec", "apply"]).await;
}

async fn tokens_in(extra: &[&str]) {
    let mut c = Cluster::start_with(3, "rocksdb", extra);
    home(&c, "alice").await;
    let alice = c.certificate_client("alice");
    let t = alice.get_delegation_token("yarn").await.expect("alice fetches a token");
    let id = &t.identifier;
    assert_eq!((id.owner.as_str(), id.renewer.as_str()), ("alice", "yarn"));
    assert_eq!(
        id.max_ms - id.issue_ms,
        7 * 24 * 3600 * 1000,
        "HDFS's 7-day max lifetime"
    );

    // The token alone authenticates as alice, whatever name the process has.
    let job = c.token_client(&t);
    job.create("/user/alice/by-token", false)
        .await
        .expect("a write as alice");
    assert_eq!(
        job.get_file_status("/user/alice/by-token").await.unwrap().owner,
        "alice"
    );
    refused(job.mkdirs("/not-alices", None).await, "user=alice");
    // ... but fetches and renews nothing.
    refused(job.get_delegation_token("").await, "only with a user certificate");
    refused(job.renew_delegation_token(&t).await, "only with a user certificate");

    // Forged or altered tokens.
    let mut as_hdfs = t.clone();
    as_hdfs.identifier.owner = "hdfs".into();
    refused(c.token_client(&as_hdfs).mkdirs("/forged", None).await, "does not match");
    let mut longer = t.clone();
    longer.identifier.max_ms += 86_400_000;
    refused(c.token_client(&longer).get_file_status("/").await, "does not match");
    let mut flipped = t.clone();
    flipped.password[3] ^= 1;
    refused(
        c.token_client(&flipped).get_file_status("/").await,
        "password that does not match",
    );

    // Only the renewer renews; the expiry never passes the max date.
    refused(alice.renew_delegation_token(&t).await, "non-matching renewer yarn");
    let yarn = c.certificate_client("yarn");
    let until = yarn.renew_delegation_token(&t).await.expect("yarn renews");
    assert!(until > id.issue_ms && until <= id.max_ms, "{until}");

    // The leader that issued it goes; the token, its record and renewals stay.
    let leader = c.leader().await;
    c.kill(leader);
    job.get_file_status("/user/alice/by-token")
        .await
        .expect("the token works with the next leader");
    yarn.renew_delegation_token(&t)
        .await
        .expect("renewed by the next leader");
    c.start_member(leader);

    // Cancelling: not by a stranger; by the owner; then it is refused everywhere.
    refused(
        c.certificate_client("bob").cancel_delegation_token(&t).await,
        "not authorized",
    );
    alice
        .cancel_delegation_token(&t)
        .await
        .expect("alice cancels her token");
    refused(job.get_file_status("/").await, "can't be found");
    refused(yarn.renew_delegation_token(&t).await, "can't be found");

    // Nothing refused left a trace.
    let hdfs = c.certificate_client("hdfs");
    for p in ["/not-alices", "/forged"] {
        assert!(matches!(hdfs.get_file_status(p).await, Err(FsError::FileNotFound(_))));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fetchdt_and_expiry() {
    let c = Cluster::start_with(
        1,
        "memory",
        &[
            "--auth",
            "strong",
            "--delegation-token-renew-interval-ms",
            "1500",
            "--delegation-token-max-lifetime-ms",
            "60000",
            "--delegation-key-update-interval-ms",
            "1000",
        ],
    );
    home(&c, "alice").await;
    let creds = c.user_credentials("alice");
    let file = c.root.path().join("alice.token");
    let fetchdt = |args: &[&str], creds: Option<&Path>| {
        let mut cmd = c.cli();
        cmd.env_remove("RAFTFS_USER")
            .args(["fetchdt", "--fs", &c.fs_uri()])
            .args(args);
        if let Some(dir) = creds {
            cmd.env(raftfs_client::CREDENTIALS_ENV, dir);
        }
        let out = cmd.output().expect("run raftfs fetchdt");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    let f = file.to_str().unwrap();

    // Without a certificate there is no token to fetch.
    let (code, _, err) = fetchdt(&[f], None);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("AccessControlException") && err.contains("requires strong authentication"),
        "{err}"
    );

    let (code, out, err) = fetchdt(&["--renewer", "alice", f], Some(&creds));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Fetched token for ns1 into "), "{out}");
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    let (code, out, _) = fetchdt(&["--print", f], None);
    assert_eq!(code, 0);
    assert!(
        out.contains("Kind: HDFS_DELEGATION_TOKEN") && out.contains("owner=alice, renewer=alice"),
        "{out}"
    );

    // A shell with only the token file acts as alice.
    let dfs = |args: &[&str]| {
        let out = c
            .cli()
            .env_remove("RAFTFS_USER")
            .env(raftfs_client::DELEGATION_TOKEN_ENV, &file)
            .args(["dfs", "--fs", &c.fs_uri()])
            .args(args)
            .output()
            .expect("run raftfs dfs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    assert_eq!(dfs(&["-touchz", "/user/alice/x"]), (0, String::new()));
    let hdfs = c.certificate_client("hdfs");
    assert_eq!(hdfs.get_file_status("/user/alice/x").await.unwrap().owner, "alice");

    let (code, out, err) = fetchdt(&["--renew", f], Some(&creds));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Renewed token for ns1 until: "), "{out}");

    // Not renewed for longer than the renew interval: expired.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let (code, err) = dfs(&["-touchz", "/user/alice/y"]);
    assert_ne!(code, 0);
    assert!(err.contains("is expired"), "{err}");
    let (code, _, err) = fetchdt(&["--renew", f], Some(&creds));
    assert_eq!(code, 1);
    assert!(err.contains("is expired"), "{err}");

    // The master key rolled meanwhile: a new token is signed by a newer key.
    let first = raftfs_client::read_token_file(&file).unwrap();
    let (code, _, err) = fetchdt(&[f], Some(&creds));
    assert_eq!(code, 0, "{err}");
    let second = raftfs_client::read_token_file(&file).unwrap();
    assert!(
        second.identifier.key_id > first.identifier.key_id,
        "{first} then {second}"
    );
    assert!(second.identifier.sequence_number > first.identifier.sequence_number);
    let (code, out, err) = fetchdt(&["--cancel", f], Some(&creds));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("Cancelled token for ns1"), "{out}");
    assert_ne!(
        dfs(&["-touchz", "/user/alice/z"]).0,
        0,
        "a cancelled token authenticates nothing"
    );
}
