//! The block scanner (HDFS `VolumeScanner`): reads every finalized replica
//! once per period, checking each chunk against its checksum, and reports
//! the corrupt ones so the nameservices replace them from good copies
//! before a reader meets them.

use std::sync::Arc;
use std::time::Duration;

use raftfs_proto::{FsError, ReplicaState};

use crate::node::Node;
use crate::transfer::{blocking, READ_CHUNK_BYTES};

/// Scan every replica, one after another, every `period`.
pub async fn run(node: Arc<Node>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let (mut scanned, mut bad) = (0u64, 0u64);
        for pool in node.storage.pools() {
            let replicas: Vec<_> = pool
                .replicas
                .lock()
                .values()
                .filter(|r| r.state == ReplicaState::Finalized && !r.temporary)
                .map(|r| r.block)
                .collect();
            for b in replicas {
                let (n, p) = (node.clone(), pool.clone());
                let r = blocking(move || {
                    let mut rd = n.storage.open_reader(&p, &b, 0, b.num_bytes)?;
                    while rd.next_chunk(READ_CHUNK_BYTES)?.is_some() {}
                    Ok(())
                })
                .await;
                scanned += 1;
                match r {
                    Ok(()) => {}
                    Err(FsError::Checksum(m)) => {
                        bad += 1;
                        tracing::warn!(block = %b, error = %m, "block scanner found a corrupt replica");
                        crate::actor::report_bad_replica(&node, &pool.id, b);
                    }
                    // Deleted meanwhile, or a volume problem the writers will meet.
                    Err(e) => tracing::debug!(block = %b, error = %e, "block scanner skipped a replica"),
                }
            }
        }
        tracing::debug!(scanned, bad, "block scan done");
    }
}
