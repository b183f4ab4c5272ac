//! The SDK's per-call futures stay small. A call builds a future per level
//! (the handle, the router in direct mode, the leader connection, one
//! attempt) and moves each into its caller's: their sizes are bytes
//! copied on every call, and a profile of the bench's clients found ~6%
//! of their CPU in `memmove`. This test prints the sizes and fails when
//! one grows past its bound, naming it (the member's are bounded in
//! `metaserver/tests/call_future_sizes.rs`).

use std::future::Future;
use std::mem::size_of_val;
use std::sync::Arc;
use std::time::Duration;

use raftfs_client::federated::{CallRouter, Nameservices, TableSource};
use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_federation::Federation;
use raftfs_proto::{pb, Op};
use raftfs_trust::Dialer;

/// The most a call's future may take at any level of the handle and the
/// leader connection, in bytes (they were up to 1,696).
const MAX_CALL_FUTURE_BYTES: usize = 1024;
/// The most a call routed by the SDK itself (direct mode) may take above
/// the connection (it was 2,480: its routing levels each carried the
/// connection's future).
const MAX_ROUTED_CALL_FUTURE_BYTES: usize = 1536;

/// A table that never changes.
struct FixedTable(Arc<Federation>);

impl TableSource for FixedTable {
    fn current(&self) -> Arc<Federation> {
        self.0.clone()
    }

    fn wait_for_version(&self, _version: u64, _timeout: Duration) -> impl Future<Output = bool> + Send {
        std::future::ready(false)
    }
}

fn get_file_info() -> Op {
    Op::GetFileInfo { path: "/f".into() }
}

#[tokio::test]
async fn call_futures_stay_small() {
    let identity = Identity::resolve(Some("alice"));
    // Connections are lazy: nothing is dialled, no future is polled.
    let (addr, opts) = ("raftfs://127.0.0.1:1", ClientOptions::default());
    let fs = FileSystem::connect_with_dialer(addr, identity, opts, Dialer::Plaintext).unwrap();
    let table = Arc::new(FixedTable(Arc::new(Federation::default())));
    let router = CallRouter::new(
        table,
        Nameservices::new(Dialer::Plaintext, ClientOptions::default()),
        "hdfs",
    );
    let ctx = pb::CallContext::default();
    let op = get_file_info();
    let sizes = [
        (
            "FileSystem::call",
            size_of_val(&fs.call(get_file_info())),
            MAX_CALL_FUTURE_BYTES,
        ),
        (
            "FileSystem::get_file_info",
            size_of_val(&fs.get_file_info("/f")),
            MAX_CALL_FUTURE_BYTES,
        ),
        (
            "FileSystem::forward",
            size_of_val(&fs.forward(&ctx, &op)),
            MAX_CALL_FUTURE_BYTES,
        ),
        (
            "CallRouter::call (direct mode)",
            size_of_val(&router.call(ctx.clone(), &op)),
            MAX_ROUTED_CALL_FUTURE_BYTES,
        ),
    ];
    for (name, size, _) in sizes {
        println!("{name}: {size} bytes");
    }
    for (name, size, bound) in sizes {
        assert!(
            size <= bound,
            "{name}'s future is {size} bytes, over {bound}: box the large, rare arm that grew it"
        );
    }
}
