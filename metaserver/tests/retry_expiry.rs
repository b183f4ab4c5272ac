//! The retry table expires by log time, deterministically: records older
//! than RETRY_CACHE_EXPIRY_MS go, at most MAX_RETRY_EXPIRIES_PER_ENTRY per
//! entry, and the result does not depend on how entries were batched.

use raftfs_metaserver::namespace::{
    execute_write, expire_retry, format_batch, Engine, NsConfig, Overlay, MAX_RETRY_EXPIRIES_PER_ENTRY,
    RETRY_CACHE_EXPIRY_MS,
};
use raftfs_metaserver::store::{MemStore, ReadView, RocksStore, RocksStoreOptions, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{CallCtx, FsError, Op, OpResult};

fn ctx(call_id: u64) -> CallCtx {
    CallCtx {
        client_id: "cl".into(),
        call_id,
        user: "hdfs".into(),
        groups: vec![],
    }
}

fn mkdir(n: u64) -> Op {
    Op::Mkdirs {
        path: format!("/d{n}"),
        permission: raftfs_proto::Permission(0o755),
        create_parent: true,
    }
}

fn check_engine<S: Store>(store: S) {
    let e = Engine::open(store, &test_format_info("hdfs", 0)).unwrap();
    let create = Op::Create {
        path: "/f".into(),
        permission: raftfs_proto::Permission(0o644),
        overwrite: false,
        create_parent: true,
        replication: 3,
        block_size: 1 << 27,
    };
    let first = e.execute(&ctx(1), &create, 1_000).unwrap();
    // Within the window a retry is answered from the table.
    assert_eq!(
        e.execute(&ctx(1), &create, 1_000 + RETRY_CACHE_EXPIRY_MS - 1).unwrap(),
        first
    );
    // After it, the record is gone and the retry runs again (and fails: the file exists).
    e.execute(&ctx(2), &mkdir(0), 1_000 + RETRY_CACHE_EXPIRY_MS + 1)
        .unwrap();
    assert!(matches!(
        e.execute(&ctx(1), &create, 1_000 + RETRY_CACHE_EXPIRY_MS + 2),
        Err(FsError::FileAlreadyExists(_))
    ));
    // Many records expire a bounded number per write.
    for n in 0..3000u64 {
        e.execute(&ctx(100 + n), &mkdir(n + 1), 2_000_000 + n as i64).unwrap();
    }
    let later = 2_000_000 + 3000 + RETRY_CACHE_EXPIRY_MS;
    assert_eq!(e.retry_records_older_than(later, 10_000).unwrap(), 3000);
    e.execute(&ctx(99_999), &Op::GetFileInfo { path: "/".into() }, later)
        .unwrap();
    e.execute(&ctx(99_998), &mkdir(99_998), later).unwrap();
    assert_eq!(
        e.retry_records_older_than(later - 1, 10_000).unwrap(),
        3000 - MAX_RETRY_EXPIRIES_PER_ENTRY
    );
}

#[test]
fn engine_expires_retry_records_memory() {
    check_engine(MemStore::new());
}

#[test]
fn engine_expires_retry_records_rocksdb() {
    let dir = tempfile::tempdir().unwrap();
    check_engine(RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap());
}

/// A retried attribute change is answered from the table, not re-run: re-run
/// after another client deleted the path it would say FileNotFound for a
/// change that was made (found by the fault harness's checker).
#[test]
fn retried_attribute_changes_answer_their_first_result() {
    let e = Engine::open(MemStore::new(), &test_format_info("hdfs", 0)).unwrap();
    e.execute(&ctx(1), &mkdir(7), 1_000).unwrap();
    let chmod = Op::SetPermission {
        path: "/d7".into(),
        permission: raftfs_proto::Permission(0o700),
    };
    let first = e.execute(&ctx(2), &chmod, 1_001).unwrap();
    let other = CallCtx {
        client_id: "other".into(),
        ..ctx(1)
    };
    let delete = Op::Delete {
        path: "/d7".into(),
        recursive: true,
    };
    assert_eq!(e.execute(&other, &delete, 1_002).unwrap(), OpResult::Bool(true));
    assert_eq!(
        e.execute(&ctx(2), &chmod, 1_003).unwrap(),
        first,
        "the retry gets the first answer"
    );
    // A new call is run: the path is gone.
    assert!(matches!(
        e.execute(&ctx(3), &chmod, 1_004),
        Err(FsError::FileNotFound(_))
    ));
}

/// Two entries applied through one overlay, or committed one by one, leave
/// the same store.
#[test]
fn expiry_does_not_depend_on_batching() {
    let cfg = NsConfig::from(&test_format_info("hdfs", 0));
    let seed = |s: &MemStore| {
        s.commit(format_batch(&test_format_info("hdfs", 0))).unwrap();
        let mut o = Overlay::new(s);
        for n in 0..2500u64 {
            execute_write(&cfg, &mut o, &ctx(n + 1), &mkdir(n), n as i64).unwrap();
        }
        let b = o.into_batch();
        s.commit(b).unwrap();
    };
    let now = 5000 + RETRY_CACHE_EXPIRY_MS;
    let (a, b) = (MemStore::new(), MemStore::new());
    seed(&a);
    seed(&b);
    // a: two entries in one apply batch.
    let mut o = Overlay::new(&a);
    for (i, t) in [(0u64, now), (1, now + 1)] {
        execute_write(&cfg, &mut o, &ctx(10_000 + i), &mkdir(10_000 + i), t).unwrap();
        expire_retry(&mut o, t).unwrap();
    }
    let batch = o.into_batch();
    a.commit(batch).unwrap();
    // b: the same entries committed one by one.
    for (i, t) in [(0u64, now), (1, now + 1)] {
        let mut o = Overlay::new(&b);
        execute_write(&cfg, &mut o, &ctx(10_000 + i), &mkdir(10_000 + i), t).unwrap();
        expire_retry(&mut o, t).unwrap();
        let batch = o.into_batch();
        b.commit(batch).unwrap();
    }
    assert_eq!(a.export().unwrap(), b.export().unwrap());
    let left = a.retry_older_than(i64::MAX, 100_000).unwrap().len();
    assert_eq!(
        left,
        2500 + 2 - 2 * MAX_RETRY_EXPIRIES_PER_ENTRY,
        "two entries expire two bounded rounds"
    );
    let _ = OpResult::Unit;
}
