//! openraft's own storage conformance suite (`openraft::testing`) against
//! the RocksDB log store and the namespace state machine, once per store.

use std::sync::Arc;

use openraft::testing::log::{StoreBuilder, Suite};
use openraft::StorageError;

use raftfs_metaserver::raft::{LogStore, NsStateMachine, TypeConfig};
use raftfs_metaserver::store::{MemStore, RocksStore, RocksStoreOptions, Store};

struct Builder {
    rocks_namespace: bool,
}

impl StoreBuilder<TypeConfig, LogStore, NsStateMachine, tempfile::TempDir> for Builder {
    async fn build(&self) -> Result<(tempfile::TempDir, LogStore, NsStateMachine), StorageError<TypeConfig>> {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = LogStore::open(&dir.path().join("raft-log")).expect("open log store");
        let store: Arc<dyn Store> = if self.rocks_namespace {
            Arc::new(
                RocksStore::open(&dir.path().join("namespace"), &RocksStoreOptions::default()).expect("open store"),
            )
        } else {
            Arc::new(MemStore::new())
        };
        let sm = NsStateMachine::open(
            store,
            std::sync::Arc::new(raftfs_metaserver::blocks::BlockManager::new(Default::default())),
            dir.path(),
        )
        .expect("open state machine");
        Ok((dir, log, sm))
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openraft_suite_with_memory_namespace() {
    Suite::test_all(Builder { rocks_namespace: false })
        .await
        .expect("openraft storage suite");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openraft_suite_with_rocksdb_namespace() {
    Suite::test_all(Builder { rocks_namespace: true })
        .await
        .expect("openraft storage suite");
}
