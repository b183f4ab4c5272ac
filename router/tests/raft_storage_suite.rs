//! openraft's own storage conformance suite (`openraft::testing`) against
//! the generic RocksDB log store and the mount-table state machine: the
//! second user of the Raft glue the nameservices use.

use openraft::testing::log::{StoreBuilder, Suite};
use openraft::StorageError;

use raftfs_router::group::{LogStore, MountTableConfig, MountTableStateMachine};

struct Builder;

impl StoreBuilder<MountTableConfig, LogStore, MountTableStateMachine, tempfile::TempDir> for Builder {
    async fn build(
        &self,
    ) -> Result<(tempfile::TempDir, LogStore, MountTableStateMachine), StorageError<MountTableConfig>> {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = LogStore::open(&dir.path().join("raft-log")).expect("open log store");
        let sm = MountTableStateMachine::open(dir.path()).expect("open state machine");
        Ok((dir, log, sm))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openraft_suite_with_the_mount_table() {
    Suite::test_all(Builder).await.expect("openraft storage suite");
}
