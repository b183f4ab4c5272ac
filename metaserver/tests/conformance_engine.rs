//! The namespace conformance suite (tests/golden/*.txt) against the engine
//! alone, once per store.

use std::path::PathBuf;

use raftfs_metaserver::golden::{run_dir, Backend, GOLDEN_SUPERUSER};
use raftfs_metaserver::namespace::Engine;
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

#[test]
fn golden_memory_store() {
    let n = run_dir(&golden_dir(), &mut || {
        Box::new(EngineBackend {
            engine: Engine::open(MemStore::new(), &test_format_info(GOLDEN_SUPERUSER, 1_000_000)).unwrap(),
            time_ms: 1_000_000,
            _dir: None,
        })
    })
    .unwrap_or_else(|d| panic!("{d}"));
    assert!(n >= 10, "expected the golden scripts, found {n}");
}

#[test]
fn golden_rocksdb_store() {
    let n = run_dir(&golden_dir(), &mut || {
        let dir = tempfile::tempdir().unwrap();
        let store = RocksStore::open(dir.path(), &RocksStoreOptions::default()).unwrap();
        Box::new(EngineBackend {
            engine: Engine::open(store, &test_format_info(GOLDEN_SUPERUSER, 1_000_000)).unwrap(),
            time_ms: 1_000_000,
            _dir: Some(dir),
        })
    })
    .unwrap_or_else(|d| panic!("{d}"));
    assert!(n >= 10);
}
