//! `--auth strong`: a call needs a user certificate of the cluster and acts
//! as the user it names. Refused, each with `AccessControlException` and no
//! change: a call with no certificate, a certificate's holder claiming
//! another user, a DataNode's certificate used as a client's, a
//! non-superuser's admin command. The CLI takes its user from
//! `RAFTFS_CREDENTIALS`.

use crate::common;

use std::path::Path;

use common::Cluster;
use raftfs_client::{ClientOptions, ClientTls, FileSystem, Identity};
use raftfs_proto::{AdminOp, AdminResult, FsError, SafeModeAction};

fn as_user(c: &Cluster, creds: &Path, user: &str) -> FileSystem {
    let opts = ClientOptions {
        tls: ClientTls::Credentials(creds.to_path_buf()),
        ..Default::default()
    };
    FileSystem::connect(&c.fs_uri(), Identity::new(user, &[]), opts).expect("connect")
}

fn refused(r: Result<impl std::fmt::Debug, FsError>, why: &str) {
    match r {
        Err(FsError::AccessControl(m)) => assert!(m.contains(why), "{m}"),
        other => panic!("expected AccessControl ({why}), got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strong_authentication_takes_the_user_from_the_certificate() {
    let c = Cluster::start_with(1, "memory", &["--auth", "strong"]);
    let hdfs = as_user(&c, &c.user_credentials("hdfs"), "hdfs");
    hdfs.mkdirs("/user/alice", None)
        .await
        .expect("the superuser, by certificate");
    hdfs.set_owner("/user/alice", Some("alice"), None).await.unwrap();

    // No certificate: refused, whatever the name.
    let anon = c.client("hdfs", &["hdfs"]);
    refused(anon.get_file_status("/").await, "requires strong authentication");
    refused(anon.mkdirs("/anon", None).await, "requires strong authentication");

    // Alice's certificate acts as alice, and only as alice.
    let alice_creds = c.user_credentials("alice");
    let alice = as_user(&c, &alice_creds, "alice");
    alice
        .create("/user/alice/f", false)
        .await
        .expect("alice writes her own");
    let st = alice.get_file_status("/user/alice/f").await.unwrap();
    assert_eq!(st.owner, "alice");
    let posing = as_user(&c, &alice_creds, "hdfs");
    refused(posing.mkdirs("/root-owned", None).await, "authenticated as alice");
    refused(
        alice.admin(AdminOp::SafeMode(SafeModeAction::Enter)).await,
        "Superuser privilege",
    );

    // A DataNode's certificate does not authenticate a user.
    let dn = c.issue_credentials("datanode", "dn7");
    let e = ClientTls::Credentials(dn).dialer().unwrap_err();
    assert!(e.to_string().contains("not of a user"), "{e}");

    // Nothing refused left a trace.
    for p in ["/anon", "/root-owned"] {
        assert!(matches!(hdfs.get_file_status(p).await, Err(FsError::FileNotFound(_))));
    }
    assert!(matches!(
        hdfs.admin(AdminOp::SafeMode(SafeModeAction::Get)).await,
        Ok(AdminResult::SafeMode(s)) if !s.on
    ));

    // The CLI: the user comes from RAFTFS_CREDENTIALS.
    let out = c
        .cli()
        .env(raftfs_client::CREDENTIALS_ENV, &alice_creds)
        .env_remove("RAFTFS_USER")
        .args(["dfs", "--fs", &c.fs_uri(), "-touchz", "/user/alice/g"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(hdfs.get_file_status("/user/alice/g").await.unwrap().owner, "alice");

    // Admin commands: the superuser is the certificate's user, not a name.
    let admin_as = |creds: &Path, args: &[&str]| {
        let out = c
            .cli()
            .env(raftfs_client::CREDENTIALS_ENV, creds)
            .env_remove("RAFTFS_USER")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let fs_uri = c.fs_uri();
    let (code, out) = admin_as(
        &c.user_credentials("hdfs"),
        &["dfsadmin", "--fs", &fs_uri, "-safemode", "get"],
    );
    assert_eq!((code, out.trim()), (0, "Safe mode is OFF"));
    let (code, out) = admin_as(&alice_creds, &["dfsadmin", "--fs", &fs_uri, "-safemode", "enter"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("Superuser privilege"), "{out}");
    let (code, out) = admin_as(
        &alice_creds,
        &["dfsadmin", "--fs", &fs_uri, "--user", "hdfs", "-safemode", "enter"],
    );
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("authenticated as alice"), "{out}");
    let (code, out) = admin_as(
        &c.user_credentials("hdfs"),
        &["haadmin", "--fs", &fs_uri, "-getAllServiceState"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("LEADER"), "{out}");
    assert!(matches!(
        hdfs.admin(AdminOp::SafeMode(SafeModeAction::Get)).await,
        Ok(AdminResult::SafeMode(s)) if !s.on
    ));
}

#[test]
fn strong_authentication_needs_tls() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = common::run_cli(&[
        "format",
        "--member-id",
        "1",
        "--members",
        "1=127.0.0.1:1",
        "--insecure",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}{err}");
    let (code, _, err) = common::run_cli(&[
        "metaserver",
        "--id",
        "1",
        "--insecure",
        "--auth",
        "strong",
        "--dir",
        dir.path().to_str().unwrap(),
    ]);
    assert_ne!(code, 0);
    assert!(err.contains("--auth strong needs TLS"), "{err}");
}
