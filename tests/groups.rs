//! Identities the server decides: a caller's groups come from the member's
//! group mapping (`--group-mapping`, else the host's groups), never from
//! the client. Claiming `supergroup` makes no one a superuser, a mapped
//! group grants what it grants, and `dfsadmin -refreshUserToGroupsMappings`
//! changes both on every member at once (a malformed file changes nothing).

use crate::common;

use common::Cluster;
use raftfs_proto::{AdminOp, FsError, Permission, SafeModeAction};

fn write_mapping(path: &std::path::Path, json: &str) {
    std::fs::write(path, json).expect("write group mapping");
}

fn denied<T: std::fmt::Debug>(r: Result<T, FsError>, what: &str) {
    match r {
        Err(FsError::AccessControl(_)) => {}
        other => panic!("{what}: expected AccessControl, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn groups_come_from_the_members_mapping_not_the_client() {
    let tmp = tempfile::tempdir().unwrap();
    let mapping = tmp.path().join("groups.json");
    write_mapping(&mapping, r#"{"carol": ["supergroup"], "dave": ["staff"]}"#);
    let c = Cluster::start_with(3, "rocksdb", &["--group-mapping", mapping.to_str().unwrap()]);
    c.wait_ready().await;
    let hdfs = c.client("hdfs", &[]);
    hdfs.mkdirs("/staff", None).await.expect("mkdir");
    hdfs.set_permission("/staff", Permission(0o770)).await.expect("chmod");
    hdfs.set_owner("/staff", None, Some("staff")).await.expect("chgrp");
    hdfs.create("/f", false).await.expect("create");

    // A client that claims supergroup or staff is neither.
    let mallory = c.client("mallory", &["supergroup", "staff"]);
    denied(
        mallory.set_owner("/f", Some("mallory"), None).await,
        "chown by a claimed superuser",
    );
    denied(
        mallory.create("/staff/m", false).await,
        "create under 770 by a claimed group member",
    );

    // The mapping's groups count.
    let carol = c.client("carol", &[]);
    carol
        .set_owner("/f", Some("carol"), None)
        .await
        .expect("carol is in supergroup by the mapping");
    let dave = c.client("dave", &[]);
    dave.create("/staff/d", false)
        .await
        .expect("dave is in staff by the mapping");

    // Admin commands: supergroup members by the mapping, not by their claim.
    let (code, out, err) = c.run(&["dfsadmin", "--fs", &c.fs_uri(), "--user", "carol", "-safemode", "get"]);
    assert_eq!((code, out.trim()), (0, "Safe mode is OFF"), "{err}");
    // Anyone may ask whether safe mode is on, as in HDFS; entering it is
    // the superuser's.
    let (code, out, err) = c.run(&["dfsadmin", "--fs", &c.fs_uri(), "--user", "mallory", "-safemode", "get"]);
    assert_eq!((code, out.trim()), (0, "Safe mode is OFF"), "{err}");
    let (code, out, err) = c.run(&[
        "dfsadmin",
        "--fs",
        &c.fs_uri(),
        "--user",
        "mallory",
        "-safemode",
        "enter",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Superuser privilege is required"), "{err}");
    denied(
        mallory.admin(AdminOp::SafeMode(SafeModeAction::Enter)).await,
        "an admin command by a claimed superuser",
    );
    denied(
        mallory.admin(AdminOp::DatanodeReport).await,
        "a DataNode report for a claimed superuser",
    );

    // A malformed file: the refresh fails on every member and nothing changes.
    write_mapping(&mapping, r#"{"carol": ["not:a:group"]}"#);
    let (code, out, err) = c.dfsadmin(&["-refreshUserToGroupsMappings"]);
    assert_eq!(code, 1, "a malformed mapping is refused: {out}{err}");
    assert!(
        err.contains("InvalidArgument") || err.contains("group mapping"),
        "{err}"
    );
    carol
        .set_owner("/f", Some("hdfs"), None)
        .await
        .expect("still in supergroup: the old mapping stands");

    // A new mapping takes effect on every member at the refresh.
    write_mapping(&mapping, r#"{"dave": ["staff"]}"#);
    let (code, out, err) = c.dfsadmin(&["-refreshUserToGroupsMappings"]);
    assert_eq!(code, 0, "refresh: {out}{err}");
    for addr in c.members.values() {
        assert!(
            out.contains(&format!("Refresh user to groups mapping successful for {addr}")),
            "{out}"
        );
    }
    denied(
        carol.set_owner("/f", Some("carol"), None).await,
        "carol after she left supergroup",
    );
    dave.create("/staff/d2", false).await.expect("dave still in staff");

    // Only the superuser refreshes.
    let (code, out, err) = c.run(&[
        "dfsadmin",
        "--fs",
        &c.fs_uri(),
        "--user",
        "dave",
        "-refreshUserToGroupsMappings",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("Superuser privilege is required"), "{err}");
}
