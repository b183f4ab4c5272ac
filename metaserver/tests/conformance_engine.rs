//! The namespace conformance suite (tests/golden/*.txt) against the engine
//! alone, once per store and execution mode.

use std::path::PathBuf;

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::golden::{run_dir, Backend, GOLDEN_SUPERUSER};
use raftfs_metaserver::store::{MemStore, RocksStore, RocksStoreOptions, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{CallCtx, FsError, Op, OpResult};

struct EngineBackend<S: Store> {
    engine: Engine<S>,
    time_ms: i64,
    _dir: Option<tempfile::TempDir>,
}

impl<S: Store> Backend for EngineBackend<S> {
    fn call(&mut self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError> {
        self.time_ms += 1000;
        self.engine.execute(&ctx, &op, self.time_ms)
    }
}

fn golden_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn memory(mode: ExecMode) {
    let n = run_dir(&golden_dir(), &mut || {
        Box::new(EngineBackend {
            engine: Engine::open(MemStore::new(), &test_format_info(GOLDEN_SUPERUSER, 1_000_000), mode).unwrap(),
            time_ms: 1_000_000,
            _dir: None,
        })
    })
    .unwrap_or_else(|d| panic!("{mode}: {d}"));
    assert!(n >= 10, "expected the golden scripts, found {n}");
}

fn rocksdb(mode: ExecMode) {
    let n = run_dir(&golden_dir(), &mut || {
        let dir = tempfile::tempdir().unwrap();
        let store = RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap();
        Box::new(EngineBackend {
            engine: Engine::open(store, &test_format_info(GOLDEN_SUPERUSER, 1_000_000), mode).unwrap(),
            time_ms: 1_000_000,
            _dir: Some(dir),
        })
    })
    .unwrap_or_else(|d| panic!("{mode}: {d}"));
    assert!(n >= 10);
}

#[test]
fn golden_memory_store_exec_apply() {
    memory(ExecMode::Apply);
}

#[test]
fn golden_memory_store_exec_leader() {
    memory(ExecMode::Leader);
}

#[test]
fn golden_rocksdb_store_exec_apply() {
    rocksdb(ExecMode::Apply);
}

#[test]
fn golden_rocksdb_store_exec_leader() {
    rocksdb(ExecMode::Leader);
}
