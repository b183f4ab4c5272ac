//! The engine's group commit (`namespace::engine`): concurrent writers share
//! store commits, yet each is answered with its own result, a failed write
//! in a batch leaves the others applied, and nothing is lost or doubled.

use std::sync::Arc;

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::store::{MemStore, RocksStore, RocksStoreOptions, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{CallCtx, FsError, Op, OpResult, Permission};

const THREADS: usize = 4;
const FILES_PER_THREAD: u64 = 300;

fn ctx(worker: usize, call_id: u64) -> CallCtx {
    CallCtx {
        client_id: format!("worker-{worker}"),
        call_id,
        user: "hdfs".into(),
        groups: vec![],
        routed_by: 0,
    }
}

fn create(path: String) -> Op {
    Op::Create {
        path,
        permission: Permission(0o644),
        overwrite: false,
        create_parent: true,
        replication: 3,
        block_size: 1 << 27,
    }
}

fn check<S: Store>(store: S, mode: ExecMode) {
    let e = Arc::new(Engine::open(store, &test_format_info("hdfs", 0), mode).unwrap());
    let handles: Vec<_> = (0..THREADS)
        .map(|w| {
            let e = e.clone();
            std::thread::spawn(move || {
                let mut shared_won = 0;
                for n in 0..FILES_PER_THREAD {
                    let call = 3 * n;
                    // Every worker races to create the same file each round:
                    // one wins, the others are refused.
                    match e.execute(&ctx(w, call), &create(format!("/shared/{n}")), 1_000) {
                        Ok(OpResult::Status(Some(_))) => shared_won += 1,
                        // Open by its creator: AlreadyBeingCreated, as HDFS.
                        Err(FsError::FileAlreadyExists(_) | FsError::AlreadyBeingCreated(_)) => {}
                        other => panic!("worker {w} shared {n}: {other:?}"),
                    }
                    let own = format!("/w{w}/f{n}");
                    match e.execute(&ctx(w, call + 1), &create(own.clone()), 1_000) {
                        Ok(OpResult::Status(Some(s))) => assert!(s.is_file() && s.under_construction),
                        other => panic!("worker {w} {own}: {other:?}"),
                    }
                    let done = e.execute(&ctx(w, call + 2), &Op::Complete { path: own, last: None }, 1_000);
                    assert_eq!(done, Ok(OpResult::Bool(true)), "worker {w} complete {n}");
                }
                shared_won
            })
        })
        .collect();
    let won: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(won, FILES_PER_THREAD, "each shared file is created exactly once");
    let read = |op: Op| e.execute(&ctx(99, 0), &op, 2_000);
    for w in 0..THREADS {
        for n in 0..FILES_PER_THREAD {
            let path = format!("/w{w}/f{n}");
            match read(Op::GetFileInfo { path: path.clone() }) {
                Ok(OpResult::Status(Some(s))) => assert!(!s.under_construction, "{path} is closed"),
                other => panic!("{path}: {other:?}"),
            }
        }
    }
    let (batches, writes) = e.batch_stats();
    // Apply mode commits every write, refused ones included (as a log
    // entry carries them); leader mode answers a refused plan at once.
    let refused = (THREADS as u64 - 1) * FILES_PER_THREAD;
    let committed = match mode {
        ExecMode::Apply => THREADS as u64 * FILES_PER_THREAD * 3,
        ExecMode::Leader => THREADS as u64 * FILES_PER_THREAD * 3 - refused,
    };
    assert_eq!(writes, committed, "every write ran once ({mode})");
    assert!(batches >= 1 && batches <= writes);
    // A retried call is answered from the retry table, whichever batch ran it.
    assert_eq!(
        e.execute(&ctx(0, 1), &create("/w0/f0".into()), 1_500)
            .map(|r| matches!(r, OpResult::Status(Some(_)))),
        Ok(true)
    );
}

#[test]
fn concurrent_writers_share_commits_memory() {
    check(MemStore::new(), ExecMode::Apply);
    check(MemStore::new(), ExecMode::Leader);
}

#[test]
fn concurrent_writers_share_commits_rocksdb() {
    for mode in [ExecMode::Apply, ExecMode::Leader] {
        let dir = tempfile::tempdir().unwrap();
        check(
            RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap(),
            mode,
        );
    }
}

/// The thread that held the writer lock last gets it first; the others wait
/// a little for it. When that thread has gone (or stopped writing), the
/// others must still get their writes done, in their own time.
#[test]
fn writes_go_on_when_the_last_holder_has_gone() {
    for mode in [ExecMode::Apply, ExecMode::Leader] {
        writes_go_on_in(mode);
    }
}

fn writes_go_on_in(mode: ExecMode) {
    let e = Arc::new(Engine::open(MemStore::new(), &test_format_info("hdfs", 0), mode).unwrap());
    let first = e.clone();
    std::thread::spawn(move || {
        let r = first.execute(&ctx(0, 1), &create("/gone".into()), 1_000);
        assert!(matches!(r, Ok(OpResult::Status(Some(_)))), "{r:?}");
    })
    .join()
    .unwrap();
    // Two new threads, each its own caller: the last holder is not among them.
    let handles: Vec<_> = (1..=2)
        .map(|w| {
            let e = e.clone();
            std::thread::spawn(move || {
                for n in 0..50 {
                    let r = e.execute(&ctx(w, n), &create(format!("/after{w}/{n}")), 1_000);
                    assert!(
                        matches!(r, Ok(OpResult::Status(Some(_)))),
                        "worker {w} write {n}: {r:?}"
                    );
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let (_, writes) = e.batch_stats();
    assert_eq!(writes, 101, "every write ran, once");
}
