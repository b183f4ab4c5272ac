//! The namespace conformance suite (tests/golden/*.txt) through a real
//! single-member Raft nameservice in-process (`--exec apply`), once per
//! store: ops go through the log, fsync, apply and the retry table.

use std::path::PathBuf;

use raftfs_metaserver::golden::{run_dir, Backend, GOLDEN_SUPERUSER};
use raftfs_metaserver::server::{Member, StoreKind};
use raftfs_metaserver::testkit::single_member;
use raftfs_proto::{CallCtx, FsError, Op, OpResult};

struct RaftBackend {
    rt: std::sync::Arc<tokio::runtime::Runtime>,
    member: Member,
    _dir: tempfile::TempDir,
}

impl Backend for RaftBackend {
    fn call(&mut self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError> {
        self.rt.block_on(self.member.call(ctx, op))
    }
}

impl Drop for RaftBackend {
    fn drop(&mut self) {
        self.rt.block_on(self.member.shutdown());
    }
}

fn run(store: StoreKind) {
    let rt = std::sync::Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    );
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let n = run_dir(&dir, &mut || {
        let tmp = tempfile::tempdir().unwrap();
        let member = rt.block_on(single_member(tmp.path(), store, GOLDEN_SUPERUSER)).unwrap();
        Box::new(RaftBackend {
            rt: rt.clone(),
            member,
            _dir: tmp,
        })
    })
    .unwrap_or_else(|d| panic!("{d}"));
    assert!(n >= 10);
}

#[test]
fn golden_through_raft_memory_store() {
    run(StoreKind::Memory);
}

#[test]
fn golden_through_raft_rocksdb_store() {
    run(StoreKind::Rocksdb);
}
