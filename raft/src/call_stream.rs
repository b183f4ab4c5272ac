//! The server side of `Namespace.CallStream`, which nameservice members
//! and routers both serve: many tagged calls over one gRPC stream, each
//! run on its own task as it arrives, each reply sent with its tag as soon
//! as it is ready (in any order).
//!
//! Guarantees: at most [`MAX_CALLS_IN_FLIGHT_PER_STREAM`] calls of one
//! stream run at once (more wait to be read, so a client cannot queue
//! unbounded work); a malformed message or a broken connection ends the
//! reading, calls already running still answer, then the replies end.

use std::future::Future;
use std::sync::Arc;

use raftfs_proto::pb;
use tokio::sync::{mpsc, Semaphore};
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Status, Streaming};

/// Most calls of one call stream running at once; more wait to be read.
pub const MAX_CALLS_IN_FLIGHT_PER_STREAM: usize = 1024;

/// Serve the calls of `inbound` with `handle` (a call's reply, typed
/// errors inside it); `peer` names the caller in logs.
pub fn serve_call_stream<F, Fut>(
    mut inbound: Streaming<pb::TaggedCall>,
    peer: Arc<str>,
    handle: F,
) -> ReceiverStream<Result<pb::TaggedReply, Status>>
where
    F: Fn(Option<pb::CallRequest>) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = pb::CallReply> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(MAX_CALLS_IN_FLIGHT_PER_STREAM);
    let slots = Arc::new(Semaphore::new(MAX_CALLS_IN_FLIGHT_PER_STREAM));
    tokio::spawn(async move {
        loop {
            let call = match inbound.message().await {
                Ok(Some(call)) => call,
                Ok(None) => break,
                Err(status) => {
                    tracing::debug!(client = %peer, error = %status, "call stream ended");
                    break;
                }
            };
            let Ok(slot) = slots.clone().acquire_owned().await else {
                break;
            };
            let (tx, handle) = (tx.clone(), handle.clone());
            tokio::spawn(async move {
                // A call's future is several KiB (a member's write path, a
                // router's forwarding): on the heap, only its pointer is
                // moved when the task is spawned and polled.
                let reply = Box::pin(handle(call.call)).await;
                let _ = tx
                    .send(Ok(pb::TaggedReply {
                        tag: call.tag,
                        reply: Some(reply),
                    }))
                    .await;
                drop(slot);
            });
        }
    });
    ReceiverStream::new(rx)
}
