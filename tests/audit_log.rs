//! The audit log (issue 18, item 5): a member writes one line per audited
//! client operation to DIR/audit.log in HDFS's hdfs-audit.log format;
//! permission refusals are `allowed=false`; `--audit-log off` writes none.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use raftfs_proto::{FileStatus, FsError, Permission};

/// How long the audit file's writer thread may take to write a line.
const AUDIT_WRITE_WAIT_MS: u64 = 10_000;

/// The audit lines of `users` in `file` (the members' own readiness calls
/// are someone else's), once there are at least `n`.
async fn audit_lines(file: &Path, users: &[&str], n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_millis(AUDIT_WRITE_WAIT_MS);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let lines: Vec<String> = text
            .lines()
            .filter(|l| users.iter().any(|u| l.contains(&format!("\tugi={u} ("))))
            .map(str::to_string)
            .collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The message of a log4j-layout line, after checking its time and level
/// prefix (`2026-12-05 06:40:13,123 INFO FSNamesystem.audit: `).
fn message(line: &str) -> &str {
    let (time, rest) = line.split_at(23);
    chrono::NaiveDateTime::parse_from_str(time, "%Y-%m-%d %H:%M:%S,%3f")
        .unwrap_or_else(|e| panic!("{line:?} does not start with a log4j ISO8601 time: {e}"));
    rest.strip_prefix(" INFO FSNamesystem.audit: ")
        .unwrap_or_else(|| panic!("{line:?}: not an audit line"))
}

fn perm(s: &FileStatus) -> String {
    format!("{}:{}:{}", s.owner, s.group, s.permission)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_audits_client_operations_in_hdfs_format() {
    let cluster = common::Cluster::start(1, "rocksdb");
    cluster.wait_ready().await;
    let admin = cluster.client("hdfs", &["hdfs"]);
    admin.mkdirs("/home/alice", None).await.unwrap();
    admin
        .set_owner("/home/alice", Some("alice"), Some("staff"))
        .await
        .unwrap();
    let alice = cluster.client("alice", &[]);
    let bob = cluster.client("bob", &[]);

    let created = alice.create("/home/alice/f", false).await.unwrap();
    assert!(alice.rename("/home/alice/f", "/home/alice/g").await.unwrap());
    alice.set_permission("/home/alice", Permission(0o750)).await.unwrap();
    alice.list_status("/home/alice").await.unwrap();
    let err = bob.mkdirs("/home/alice/x", None).await.unwrap_err();
    assert!(matches!(err, FsError::AccessControl(_)), "{err:?}");
    // A failure other than permissions is not audited (HDFS neither).
    assert!(alice.create("/home/alice/g", false).await.is_err());
    assert!(alice.get_file_info("/home/alice/missing").await.unwrap().is_none());
    assert!(alice.delete("/home/alice/g", false).await.unwrap());

    let file = cluster.dir(1).join("audit.log");
    let lines = audit_lines(&file, &["alice", "bob"], 7).await;
    let got: Vec<&str> = lines.iter().map(|l| message(l)).collect();
    let alice_ugi = "allowed=true\tugi=alice (auth:SIMPLE)\tip=/127.0.0.1";
    let expected = [
        format!("{alice_ugi}\tcmd=create\tsrc=/home/alice/f\tdst=null\tperm={}\tproto=rpc", perm(&created)),
        format!("{alice_ugi}\tcmd=rename\tsrc=/home/alice/f\tdst=/home/alice/g\tperm=null\tproto=rpc"),
        format!("{alice_ugi}\tcmd=setPermission\tsrc=/home/alice\tdst=null\tperm=null\tproto=rpc"),
        format!("{alice_ugi}\tcmd=listStatus\tsrc=/home/alice\tdst=null\tperm=null\tproto=rpc"),
        "allowed=false\tugi=bob (auth:SIMPLE)\tip=/127.0.0.1\tcmd=mkdirs\tsrc=/home/alice/x\tdst=null\tperm=null\tproto=rpc"
            .to_string(),
        format!("{alice_ugi}\tcmd=getfileinfo\tsrc=/home/alice/missing\tdst=null\tperm=null\tproto=rpc"),
        format!("{alice_ugi}\tcmd=delete\tsrc=/home/alice/g\tdst=null\tperm=null\tproto=rpc"),
    ];
    assert_eq!(got, expected, "audit lines of alice and bob in {}", file.display());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_audit_log_turned_off_writes_nothing() {
    let cluster = common::Cluster::start_with(1, "rocksdb", &["--audit-log", "off"]);
    cluster.wait_ready().await;
    let alice = cluster.client("hdfs", &["hdfs"]);
    alice.mkdirs("/quiet", None).await.unwrap();
    assert!(alice.get_file_info("/quiet").await.unwrap().is_some());
    // The same calls with the log on are written within the wait above.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !cluster.dir(1).join("audit.log").exists(),
        "no audit file with --audit-log off"
    );
}
