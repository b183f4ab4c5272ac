//! The namespace conformance suite (tests/golden/*.txt) through a real
//! single-member Raft nameservice in-process, once per store and execution
//! mode: writes go through the log (ops, or deltas planned under the
//! leader's locks), fsync, apply and the retry table.

use std::path::PathBuf;

use raftfs_metaserver::exec::batcher::MAX_OPS_PER_ENTRY;
use raftfs_metaserver::exec::ExecMode;
use raftfs_metaserver::golden::{run_dir, Backend, GOLDEN_SUPERUSER};
use raftfs_metaserver::server::{Member, StoreKind};
use raftfs_metaserver::testkit::single_member_with;
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

fn run(store: StoreKind, exec: ExecMode) {
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
        let member = rt
            .block_on(single_member_with(
                tmp.path(),
                store,
                exec,
                GOLDEN_SUPERUSER,
                MAX_OPS_PER_ENTRY,
            ))
            .unwrap();
        Box::new(RaftBackend {
            rt: rt.clone(),
            member,
            _dir: tmp,
        })
    })
    .unwrap_or_else(|d| panic!("{exec}: {d}"));
    assert!(n >= 10);
}

#[test]
fn golden_through_raft_memory_store_exec_leader() {
    run(StoreKind::Memory, ExecMode::Leader);
}

#[test]
fn golden_through_raft_memory_store_exec_apply() {
    run(StoreKind::Memory, ExecMode::Apply);
}

#[test]
fn golden_through_raft_rocksdb_store_exec_leader() {
    run(StoreKind::Rocksdb, ExecMode::Leader);
}

#[test]
fn golden_through_raft_rocksdb_store_exec_apply() {
    run(StoreKind::Rocksdb, ExecMode::Apply);
}
