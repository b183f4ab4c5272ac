//! A member refuses Raft requests of another cluster. Member ids restart at
//! 1 in every nameservice and ports get reused, so here cluster B's only
//! member starts on the address of cluster A's member 3 after A lost it:
//! A's leader keeps sending "member 3" heartbeats and log entries, which
//! B's member must refuse, or A's leader (member 1 or 2, like B's member 1)
//! could take over B's log. Both namespaces must come out untouched.
//!
//! Under TLS (the default) the two clusters' CAs differ and the handshake
//! itself fails; under `--insecure` the ClusterID every Raft request
//! carries is what refuses it. Both are run.

use crate::common;

use std::time::Duration;

use common::Cluster;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_refuses_raft_requests_of_another_cluster() {
    scenario(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insecure_member_refuses_raft_requests_of_another_cluster() {
    scenario(true).await;
}

async fn scenario(insecure: bool) {
    let extra: &[&str] = if insecure { &["--insecure"] } else { &[] };
    let mut a = Cluster::start_with(3, "memory", extra);
    a.wait_ready().await;
    let fa = a.client("hdfs", &["hdfs"]);
    fa.mkdirs("/in-a", None).await.expect("mkdir in A");

    let a3 = a.members[&3].clone();
    let port: u16 = a3
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("port of A's member 3");
    a.kill(3);
    // A's Raft group still lists member 3 at that address; A's clients are
    // told only of members 1 and 2 from now on (a client given B's address
    // would write to B: that is the address book's business, not Raft's).
    a.members.remove(&3);
    let fa = a.client("hdfs", &["hdfs"]);
    let b = Cluster::start_on(&[port], "memory", extra);
    b.wait_ready().await;
    let fb = b.client("hdfs", &["hdfs"]);
    fb.mkdirs("/in-b", None).await.expect("mkdir in B");

    // A's leader heartbeats every 50 ms and keeps trying to replicate to
    // "member 3": give it many rounds against B's member, writing as it goes.
    for i in 0..20 {
        fa.create(&format!("/in-a/f{i}"), false)
            .await
            .expect("A writes on with two of three");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // B's namespace is B's alone, and its member still leads it.
    fb.get_file_status("/in-b").await.expect("B's directory");
    let e = fb
        .get_file_status("/in-a")
        .await
        .expect_err("A's log reached B's member");
    assert!(matches!(e, raftfs_proto::FsError::FileNotFound(_)), "{e:?}");
    let (code, out, err) = b.haadmin("hdfs", &["-getAllServiceState"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.lines().any(|l| l.starts_with("1 ") && l.contains("LEADER")),
        "B's member no longer leads B:\n{out}"
    );
    fb.create("/in-b/after", false).await.expect("B still takes writes");

    // A is whole: its files, and (plaintext) its leader was told why member
    // 3 refused; under TLS the handshake failed before any request.
    let (code, out, err) = a.dfs("hdfs", &["-count", "/in-a"]);
    assert_eq!(code, 0, "{err}");
    let fields: Vec<&str> = out.split_whitespace().collect();
    assert_eq!(&fields[..2], &["1", "20"], "one directory, 20 files: {out}");
    if !insecure {
        return;
    }
    let refused = (1..=2).any(|i| {
        std::fs::read_to_string(a.root.path().join(format!("m{i}.log")))
            .unwrap_or_default()
            .contains("sent to a member of cluster")
    });
    assert!(refused, "A's leader logged no refusal:\n{}", a.logs());
}
