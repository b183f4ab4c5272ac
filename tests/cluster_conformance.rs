//! The namespace conformance suite (metaserver/tests/golden/*.txt) against
//! a three-member nameservice of real processes, over gRPC through the SDK,
//! per store and execution mode.

use crate::common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use common::group_mapping::GroupMapping;
use raftfs_client::{FileSystem, Identity};
use raftfs_metaserver::golden::{run_dir, Backend};
use raftfs_proto::{CallCtx, FsError, Op, OpResult};

/// Members resolve callers' groups themselves, so the scripts' `@user:groups`
/// reach them through the cluster's group mapping file ([`GroupMapping`]).
struct GrpcBackend {
    rt: Arc<tokio::runtime::Runtime>,
    cluster: common::Cluster,
    clients: HashMap<String, FileSystem>,
    groups: GroupMapping,
}

impl Backend for GrpcBackend {
    fn call(&mut self, ctx: CallCtx, op: Op) -> Result<OpResult, FsError> {
        self.groups.map(&ctx, &[&self.cluster])?;
        let uri = self.cluster.fs_uri();
        let fs = self.clients.entry(ctx.user.clone()).or_insert_with(|| {
            // The groups claimed here are ignored: the mapping decides.
            FileSystem::connect(
                &uri,
                Identity::new(&ctx.user, &["supergroup"]),
                self.cluster.client_options(),
            )
            .expect("connect")
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
    let mappings = tempfile::tempdir().unwrap();
    let mut clusters = 0;
    let n = run_dir(&dir, &mut || {
        clusters += 1;
        let groups = GroupMapping::new(mappings.path().join(format!("groups-{clusters}.json")));
        let cluster = common::Cluster::start_with(
            3,
            store,
            &["--exec", exec, "--group-mapping", groups.path().to_str().unwrap()],
        );
        rt.block_on(cluster.wait_ready());
        Box::new(GrpcBackend {
            rt: rt.clone(),
            cluster,
            clients: HashMap::new(),
            groups,
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
