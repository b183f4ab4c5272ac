//! The namespace conformance suite (metaserver/tests/golden/*.txt) against
//! a three-member nameservice of real processes, over gRPC through the SDK,
//! per store and execution mode.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_metaserver::golden::{run_dir, Backend};
use raftfs_proto::{CallCtx, FsError, Op, OpResult};

struct GrpcBackend {
    rt: Arc<tokio::runtime::Runtime>,
    cluster: common::Cluster,
    clients: HashMap<(String, Vec<String>), FileSystem>,
}

impl Backend for GrpcBackend {
    fn call(&mut self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError> {
        let key = (ctx.user.clone(), ctx.groups.clone());
        let uri = self.cluster.fs_uri();
        let fs = self.clients.entry(key).or_insert_with(|| {
            let groups: Vec<&str> = ctx.groups.iter().map(String::as_str).collect();
            FileSystem::connect(&uri, Identity::new(&ctx.user, &groups), ClientOptions::default()).expect("connect")
        });
        self.rt.block_on(fs.call(op))
    }
}

fn run(store: &str, exec: &str) {
    let rt = Arc::new(
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap(),
    );
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("metaserver/tests/golden");
    let n = run_dir(&dir, &mut || {
        let cluster = common::Cluster::start_with(3, store, &["--exec", exec]);
        rt.block_on(cluster.wait_ready());
        Box::new(GrpcBackend {
            rt: rt.clone(),
            cluster,
            clients: HashMap::new(),
        })
    })
    .unwrap_or_else(|d| panic!("{d}"));
    assert!(n >= 10);
}

#[test]
fn golden_over_grpc_three_members_rocksdb_exec_leader() {
    run("rocksdb", "leader");
}

#[test]
fn golden_over_grpc_three_members_memory_exec_leader() {
    run("memory", "leader");
}

#[test]
fn golden_over_grpc_three_members_rocksdb_exec_apply() {
    run("rocksdb", "apply");
}

#[test]
fn golden_over_grpc_three_members_memory_exec_apply() {
    run("memory", "apply");
}
