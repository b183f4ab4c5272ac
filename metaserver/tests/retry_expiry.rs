//! The retry table expires by log time, deterministically: records older
//! than RETRY_CACHE_EXPIRY_MS go, at most MAX_RETRY_EXPIRIES_PER_ENTRY per
//! entry, and the result does not depend on how entries were batched. The
//! table holds at most a bound of records, dropping the oldest past it.

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::namespace::{
    execute_write, expire_retry, expire_retry_bounded, format_batch, retry_records, NsConfig, Overlay,
    MAX_RETRY_EXPIRIES_PER_ENTRY, RETRY_CACHE_EXPIRY_MS,
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
        routed_by: 0,
    }
}

fn mkdir(n: u64) -> Op {
    Op::Mkdirs {
        path: format!("/d{n}"),
        permission: raftfs_proto::Permission(0o755),
        create_parent: true,
    }
}

/// Format `s` and commit `n` mkdirs as one batch, call ids 1..=n at log
/// times `start_ms`, `start_ms + 1`, ...
fn seed_mkdirs(s: &MemStore, n: u64, start_ms: i64) {
    let cfg = NsConfig::from(&test_format_info("hdfs", 0));
    s.commit(format_batch(&test_format_info("hdfs", 0))).unwrap();
    let mut o = Overlay::new(s);
    for k in 0..n {
        execute_write(&cfg, &mut o, &ctx(k + 1), &mkdir(k), start_ms + k as i64).unwrap();
    }
    let b = o.into_batch();
    s.commit(b).unwrap();
}

fn check_engine<S: Store>(store: S, mode: ExecMode) {
    let e = Engine::open(store, &test_format_info("hdfs", 0), mode).unwrap();
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
    check_engine(MemStore::new(), ExecMode::Apply);
    check_engine(MemStore::new(), ExecMode::Leader);
}

#[test]
fn engine_expires_retry_records_rocksdb() {
    for mode in [ExecMode::Apply, ExecMode::Leader] {
        let dir = tempfile::tempdir().unwrap();
        check_engine(
            RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap(),
            mode,
        );
    }
}

/// A retried attribute change is answered from the table, not re-run: re-run
/// after another client deleted the path it would say FileNotFound for a
/// change that was made (found by the fault harness's checker).
#[test]
fn retried_attribute_changes_answer_their_first_result() {
    for mode in [ExecMode::Apply, ExecMode::Leader] {
        retried_attribute_changes_in(mode);
    }
}

fn retried_attribute_changes_in(mode: ExecMode) {
    let e = Engine::open(MemStore::new(), &test_format_info("hdfs", 0), mode).unwrap();
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
    let now = 5000 + RETRY_CACHE_EXPIRY_MS;
    let (a, b) = (MemStore::new(), MemStore::new());
    seed_mkdirs(&a, 2500, 0);
    seed_mkdirs(&b, 2500, 0);
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

fn create(n: u64) -> Op {
    Op::Create {
        path: format!("/f{n}"),
        permission: raftfs_proto::Permission(0o644),
        overwrite: false,
        create_parent: true,
        replication: 3,
        block_size: 1 << 27,
    }
}

/// Past its bound the table drops its oldest records, a bounded number per
/// entry; a retry of a dropped call runs again, one of a kept call is answered.
fn check_bound<S: Store>(s: S) {
    let cfg = NsConfig::from(&test_format_info("hdfs", 0));
    s.commit(format_batch(&test_format_info("hdfs", 0))).unwrap();
    // 3000 creates, all within the expiry window.
    {
        let view = s.view();
        let mut o: Overlay<'_, dyn ReadView + '_> = Overlay::new(&*view);
        for n in 0..3000u64 {
            execute_write(&cfg, &mut o, &ctx(n + 1), &create(n), 1_000 + n as i64).unwrap();
        }
        let b = o.into_batch();
        drop(view);
        s.commit(b).unwrap();
    }
    assert_eq!(retry_records(&s).unwrap(), 3000);
    // A bound of 100: one entry drops at most MAX_RETRY_EXPIRIES_PER_ENTRY, oldest first.
    let now = 10_000;
    let mut left = 3000u64;
    while left > 100 {
        let view = s.view();
        let mut o: Overlay<'_, dyn ReadView + '_> = Overlay::new(&*view);
        let dropped = expire_retry_bounded(&mut o, now, 100).unwrap() as u64;
        assert_eq!(dropped, (left - 100).min(MAX_RETRY_EXPIRIES_PER_ENTRY as u64));
        left -= dropped;
        let b = o.into_batch();
        drop(view);
        s.commit(b).unwrap();
        assert_eq!(retry_records(&s).unwrap(), left);
    }
    let kept = s.retry_older_than(i64::MAX, 10_000).unwrap();
    assert_eq!(kept.len(), 100);
    assert_eq!(
        kept.first().map(|(t, _)| *t),
        Some(1_000 + 2900),
        "the newest 100 are kept"
    );
    // Within the bound nothing more goes.
    {
        let view = s.view();
        let mut o: Overlay<'_, dyn ReadView + '_> = Overlay::new(&*view);
        assert_eq!(expire_retry_bounded(&mut o, now, 100).unwrap(), 0);
    }
    let e = Engine::open(s, &test_format_info("hdfs", 0), ExecMode::Leader).unwrap();
    assert!(
        matches!(e.execute(&ctx(1), &create(0), now), Err(FsError::FileAlreadyExists(_))),
        "a call whose record was dropped runs again"
    );
    assert!(
        matches!(e.execute(&ctx(3000), &create(2999), now), Ok(OpResult::Status(_))),
        "a call whose record was kept gets its first answer"
    );
}

#[test]
fn the_table_keeps_at_most_its_bound_memory() {
    check_bound(MemStore::new());
}

#[test]
fn the_table_keeps_at_most_its_bound_rocksdb() {
    let dir = tempfile::tempdir().unwrap();
    check_bound(RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap());
}

/// Dropping records past the bound does not depend on batching either, even
/// when an entry re-runs a call whose record an earlier entry of the same
/// batch dropped (its key is deleted and put again in one overlay).
#[test]
fn the_bound_does_not_depend_on_batching() {
    let cfg = NsConfig::from(&test_format_info("hdfs", 0));
    // Entry i runs a new mkdirs, then re-runs call 1 + i (dropped by the
    // entry before it, except for the first), then expires down to 100.
    let entry = |o: &mut Overlay<'_, MemStore>, i: u64| {
        let t = 5_000 + i as i64;
        execute_write(&cfg, o, &ctx(10_000 + i), &mkdir(10_000 + i), t).unwrap();
        execute_write(&cfg, o, &ctx(1 + i), &mkdir(i), t).unwrap();
        expire_retry_bounded(o, t, 100).unwrap();
    };
    let (a, b) = (MemStore::new(), MemStore::new());
    seed_mkdirs(&a, 300, 1_000);
    seed_mkdirs(&b, 300, 1_000);
    let mut o = Overlay::new(&a);
    for i in 0..3 {
        entry(&mut o, i);
    }
    let batch = o.into_batch();
    a.commit(batch).unwrap();
    for i in 0..3 {
        let mut o = Overlay::new(&b);
        entry(&mut o, i);
        let batch = o.into_batch();
        b.commit(batch).unwrap();
    }
    assert_eq!(a.export().unwrap(), b.export().unwrap());
    assert_eq!(retry_records(&a).unwrap(), 100);
    assert_eq!(a.retry_older_than(i64::MAX, 100_000).unwrap().len(), 100);
}

/// A call re-run after its record left the retry window, before any entry
/// expired it (in `--exec leader` a refused write makes no entry, so this
/// happens): the record is overwritten, the table still counts one record
/// and indexes it once, by its new time, and a later expiry drops it.
fn check_rerun_overwrites<S: Store>(s: S) {
    let cfg = NsConfig::from(&test_format_info("hdfs", 0));
    s.commit(format_batch(&test_format_info("hdfs", 0))).unwrap();
    let commit = |s: &S, t: i64, op: &Op, expire: bool| {
        let view = s.view();
        let mut o: Overlay<'_, dyn ReadView + '_> = Overlay::new(&*view);
        let r = execute_write(&cfg, &mut o, &ctx(1), op, t);
        if expire {
            expire_retry(&mut o, t).unwrap();
        }
        let b = o.into_batch();
        drop(view);
        s.commit(b).unwrap();
        r
    };
    assert_eq!(commit(&s, 1_000, &mkdir(1), false), Ok(OpResult::Bool(true)));
    let later = 1_000 + RETRY_CACHE_EXPIRY_MS + 5;
    // Past the window the same call runs again (mkdirs of an existing
    // directory: true again), over its old record.
    assert_eq!(commit(&s, later, &mkdir(1), false), Ok(OpResult::Bool(true)));
    assert_eq!(retry_records(&s).unwrap(), 1, "one record, counted once");
    assert_eq!(s.retry(&("cl".into(), 1)).unwrap().map(|r| r.time_ms), Some(later));
    assert_eq!(
        s.retry_older_than(i64::MAX, 10).unwrap(),
        vec![(later, ("cl".to_string(), 1))],
        "indexed once, by its new time"
    );
    // Expiry at the old record's deadline takes nothing; at the new one's, the record.
    commit(&s, later + 1, &Op::RenewLease, true).unwrap();
    assert_eq!(retry_records(&s).unwrap(), 1);
    commit(&s, later + RETRY_CACHE_EXPIRY_MS + 1, &Op::RenewLease, true).unwrap();
    assert_eq!(retry_records(&s).unwrap(), 0);
    assert_eq!(s.retry(&("cl".into(), 1)).unwrap(), None);
    assert!(s.retry_older_than(i64::MAX, 10).unwrap().is_empty());
}

#[test]
fn a_rerun_past_the_window_overwrites_its_record_memory() {
    check_rerun_overwrites(MemStore::new());
}

#[test]
fn a_rerun_past_the_window_overwrites_its_record_rocksdb() {
    let dir = tempfile::tempdir().unwrap();
    check_rerun_overwrites(RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap());
}
