//! Fencing without sshfence: a leader paused with SIGSTOP (the "false death"
//! of a long GC pause) is superseded; once resumed it must neither
//! acknowledge a write nor answer a read with what it knew before the pause,
//! nor refuse a write for a reason that held only before the pause (with
//! `--exec leader` a failed plan is answered without a log entry, so it
//! must first confirm the member still leads).
//! Its leases are bounded by the election timeout, so by the time the others
//! can elect, its lease has run out.

use crate::common;

use std::time::{Duration, Instant};

use common::Cluster;
use raftfs_client::{FileSystem, Identity};
use raftfs_proto::{pb, FsError, Op, OpResult, Permission};

type Client = pb::namespace_client::NamespaceClient<tonic::transport::Channel>;

async fn send(c: &mut Client, call_id: u64, op: &Op) -> Result<OpResult, FsError> {
    common::raw_call(c, "fencing-test", call_id, op).await
}

fn signal(pid: u32, sig: i32) {
    // SAFETY: kill(2) on a child process we started.
    assert_eq!(unsafe { libc::kill(pid as i32, sig) }, 0, "kill({pid}, {sig})");
}

async fn perm_of(fs: &FileSystem, path: &str) -> u16 {
    fs.get_file_status(path).await.expect("stat").permission.bits()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_is_fenced_after_it_resumes() {
    let c = Cluster::start(3, "rocksdb");
    c.wait_ready().await;
    let fs = c.client("hdfs", &["hdfs"]);
    fs.mkdirs("/fence", None).await.expect("mkdir");
    fs.set_permission("/fence", Permission(0o700)).await.expect("chmod");
    fs.mkdirs("/fence/taken", None).await.expect("mkdir");
    let old = c.leader().await;
    let old_addr = c.members[&old].clone();
    let mut old_client = c.namespace_client(&old_addr).await;
    let stat = Op::GetFileInfo { path: "/fence".into() };
    assert!(
        send(&mut old_client, 1, &stat).await.is_ok(),
        "the leader serves before the pause"
    );

    signal(c.pid(old).expect("leader pid"), libc::SIGSTOP);
    let paused_at = Instant::now();
    // The others elect and take a write.
    let others: Vec<String> = c
        .members
        .iter()
        .filter(|(i, _)| **i != old)
        .map(|(_, a)| a.clone())
        .collect();
    let rest = FileSystem::connect(
        &format!("raftfs://{}", others.join(",")),
        Identity::new("hdfs", &["hdfs"]),
        c.client_options(),
    )
    .unwrap();
    rest.set_permission("/fence", Permission(0o755))
        .await
        .expect("the majority elects and writes while the old leader is paused");
    let took = paused_at.elapsed().as_millis();
    println!("new leader took a write {took} ms after the pause");
    // The client's first hint points at the paused leader; it must not wait
    // out its whole RPC timeout there once another member leads.
    assert!(took < 6_000, "the client waited {took} ms on a paused leader");
    assert_eq!(perm_of(&rest, "/fence").await, 0o755);
    assert!(rest.delete("/fence/taken", true).await.expect("delete"));

    signal(c.pid(old).expect("leader pid"), libc::SIGCONT);
    // First thing after the resume, while it may still believe it leads: a
    // create the old state refuses (the name was taken before the pause) is
    // not refused for that; it is refused retryably (not the leader), or
    // nothing at all is answered from the old state.
    let create = Op::Create {
        path: "/fence/taken".into(),
        permission: Permission(0o644),
        overwrite: false,
        create_parent: false,
        replication: 1,
        block_size: 128 * 1024 * 1024,
    };
    match send(&mut old_client, 5, &create).await {
        Err(FsError::FileAlreadyExists(p)) => panic!("a deposed leader refused a create of {p} from its old state"),
        Err(e) => assert!(e.is_retryable(), "refused with a retryable error, got {e:?}"),
        Ok(r) => panic!("a deposed leader acknowledged a write: {r:?}"),
    }
    // Straight after the resume: a read on the old leader is either refused
    // or fresh, never the 700 it knew; a write is never acknowledged there.
    match send(&mut old_client, 2, &stat).await {
        Ok(OpResult::Status(Some(st))) => assert_eq!(st.permission.bits(), 0o755, "stale read from a deposed leader"),
        Ok(other) => panic!("unexpected {other:?}"),
        Err(e) => assert!(e.is_retryable(), "refused with a retryable error, got {e:?}"),
    }
    let write = Op::SetPermission {
        path: "/fence".into(),
        permission: Permission(0o711),
    };
    let r = send(&mut old_client, 3, &write).await;
    assert!(r.is_err(), "a deposed leader acknowledged a write: {r:?}");
    assert!(r.as_ref().unwrap_err().is_retryable(), "{r:?}");
    // The write was not applied anywhere.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(perm_of(&rest, "/fence").await, 0o755);
    // And the old leader rejoins as a follower and learns the new state.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match send(&mut old_client, 4, &stat).await {
            Err(FsError::NotLeader { leader: Some(h) }) if h.member_id != old => break,
            Ok(OpResult::Status(Some(st))) => assert_eq!(st.permission.bits(), 0o755),
            _ => {}
        }
        assert!(Instant::now() < deadline, "old leader never pointed at the new one");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
