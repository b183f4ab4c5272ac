//! `raftfs haadmin`: leadership transfer on an idle cluster within a second,
//! superuser only; a member formatted with `--join` added as a learner that
//! catches up and becomes a voter; a member removed; the nameservice keeps
//! every file through it, served by the members that remain.

use crate::common;

use common::Cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_add_and_remove_members() {
    let mut c = Cluster::start(3, "rocksdb");
    c.wait_ready().await;
    let fs = c.client("hdfs", &["hdfs"]);
    fs.mkdirs("/ha", None).await.expect("mkdir");
    for i in 0..20 {
        fs.create(&format!("/ha/f{i}"), false).await.expect("create");
    }

    // Leadership transfer.
    let leader = c.leader().await;
    let to = if leader == 1 { 2 } else { 1 };
    let (code, out, err) = c.haadmin("alice", &["-transferLeader", &to.to_string()]);
    assert_eq!(code, 1, "a non-superuser is refused: {out}{err}");
    assert!(err.contains("Superuser privilege is required"), "{err}");
    let (code, out, err) = c.haadmin("hdfs", &["-transferLeader", &to.to_string()]);
    assert_eq!(code, 0, "transfer: {out}{err}");
    let ms: u64 = out
        .trim()
        .strip_prefix(&format!("Leadership transferred to member {to} in "))
        .and_then(|r| r.strip_suffix(" ms"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected output {out:?}"));
    println!("transferLeader took {ms} ms");
    assert!(ms <= 1000, "transfer took {ms} ms on an idle cluster");
    assert_eq!(c.leader().await, to);
    let (code, out, _) = c.haadmin("hdfs", &["-getServiceState", &c.members[&to]]);
    assert_eq!((code, out.trim()), (0, "active"), "HDFS's name for the leader");
    let (code, _, err) = c.haadmin("hdfs", &["-transferLeader", "9"]);
    assert_eq!(code, 1);
    assert!(err.contains("member 9 is not a voter"), "{err}");

    // Every member says how it executes writes (the default: leader).
    let (code, table, _) = c.haadmin("hdfs", &["-getAllServiceState"]);
    assert_eq!(code, 0, "{table}");
    assert_eq!(exec_column(&table), vec!["leader"; 3], "{table}");

    // A fourth member joins.
    let addr4 = c.start_joining_member(4);
    let (code, out, err) = c.haadmin("hdfs", &["-addMember", "4", &addr4]);
    assert_eq!((code, out.trim()), (0, "Voters: 1,2,3,4"), "{err}");
    // Every member learns the new membership from the log, member 4 too.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (_, table, _) = c.haadmin("hdfs", &["-getAllServiceState"]);
        if table.lines().any(|l| l.starts_with("4 ") && l.contains("FOLLOWER")) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "member 4 not listed as a follower:\n{table}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let (code, _, err) = c.haadmin("hdfs", &["-addMember", "4", &addr4]);
    assert_eq!(code, 1);
    assert!(err.contains("already a voter"), "{err}");

    // Remove two of the original members one at a time; the namespace
    // lives on in {3, 4} (a majority of the remaining voters).
    for gone in [1u64, 2] {
        let (code, out, err) = c.haadmin("hdfs", &["-removeMember", &gone.to_string()]);
        assert_eq!(code, 0, "remove {gone}: {out}{err}");
        c.kill(gone);
        c.members.remove(&gone);
    }
    let (code, out, _) = c.haadmin("hdfs", &["-getAllServiceState"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.lines().count(), 3, "header + members 3 and 4:\n{out}");
    let fs = c.client("hdfs", &["hdfs"]);
    fs.create("/ha/after", false).await.expect("write after the changes");
    let (code, out, err) = c.dfs("hdfs", &["-count", "/ha"]);
    assert_eq!(code, 0, "{err}");
    let fields: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(&fields[..2], &["1", "21"], "one directory, 21 files: {out}");
}

#[test]
fn bad_haadmin_arguments() {
    let c = Cluster::start(1, "memory");
    for args in [
        vec!["-transferLeader"],
        vec!["-transferLeader", "x"],
        vec!["-addMember", "4"],
        vec!["-addMember", "0", "h:1"],
        vec!["-removeMember"],
        vec!["-nope"],
    ] {
        let (code, _, err) = c.haadmin("hdfs", &args);
        assert_eq!(code, 255, "{args:?}");
        assert!(err.contains("Usage: raftfs haadmin"), "{args:?}: {err}");
    }
    let (code, _, err) = c.haadmin("hdfs", &["-addMember", "4", "not-an-address"]);
    assert_eq!(code, 1);
    assert!(err.contains("is not HOST:PORT"), "{err}");
}

/// The EXEC column of `haadmin -getAllServiceState`, one value per member.
fn exec_column(table: &str) -> Vec<String> {
    let mut lines = table.lines();
    let header: Vec<&str> = lines.next().unwrap_or_default().split_whitespace().collect();
    let col = header.iter().position(|h| *h == "EXEC").expect("an EXEC column");
    lines
        .filter_map(|l| l.split_whitespace().nth(col).map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn members_report_their_exec_mode() {
    let c = Cluster::start_with(1, "memory", &["--exec", "apply"]);
    c.wait_ready().await;
    let (code, table, _) = c.haadmin("hdfs", &["-getAllServiceState"]);
    assert_eq!(code, 0, "{table}");
    assert_eq!(exec_column(&table), vec!["apply"], "{table}");
}
