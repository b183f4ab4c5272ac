//! The server side of `Namespace.CallStream`, which nameservice members
//! and routers both serve: many tagged calls over one gRPC stream, run
//! concurrently as they arrive, each reply sent with its tag as soon as it
//! is ready (in any order).
//!
//! Two ways to run a stream's calls:
//! * [`serve_call_stream`] (members): each call on a task of its own, its
//!   reply handed to the stream through a channel. One client's calls then
//!   use every core: a member's read does its store lookups on the CPU.
//! * [`serve_call_stream_inline`] (routers): no task and no channel. The
//!   reply stream itself reads the calls and polls their futures, from
//!   the task that sends the stream's replies, and yields each reply as
//!   its future finishes. A router's call mostly waits on a nameservice;
//!   the task spawned, scheduled and woken per call, and the channel hop
//!   of each reply, were a large share of the router's CPU per forwarded
//!   call (a profile: wake-ups and context switches ~30%, the runtime
//!   ~15%). Caveats: the calls of one stream share one task, so they
//!   use one core at a time (many clients' streams still spread over
//!   all); a call that panics ends its whole stream, not only itself (the
//!   client answers each call of the stream with a retryable
//!   `Unavailable` and retries them with their call ids).
//!
//! Guarantees (both): at most [`MAX_CALLS_IN_FLIGHT_PER_STREAM`] calls of
//! one stream run at once (more wait to be read, so a client cannot queue
//! unbounded work); a malformed message or a broken connection ends the
//! reading, calls already running still answer, then the replies end.
//! Inline, a client that stops reading replies also stops its calls being
//! read and run (the stream is not polled); one that drops the stream
//! cancels its calls still running (a call already sent on to a
//! nameservice may still happen there; its retry is answered by the
//! nameservice's retry table).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::stream::{FuturesUnordered, Stream, StreamExt};
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

/// Serve the calls of `inbound` (a `Streaming` of a gRPC request) with
/// `handle`, polled by the returned reply stream itself (see the module
/// docs); `peer` names the caller in logs.
pub fn serve_call_stream_inline<S, F, Fut>(
    mut inbound: S,
    peer: Arc<str>,
    handle: F,
) -> impl Stream<Item = Result<pb::TaggedReply, Status>> + Send + 'static
where
    S: Stream<Item = Result<pb::TaggedCall, Status>> + Unpin + Send + 'static,
    F: Fn(Option<pb::CallRequest>) -> Fut + Send + 'static,
    Fut: Future<Output = pb::CallReply> + Send + 'static,
{
    // A call's future is several KiB (a router's forwarding, down to the
    // nameservice connection's send): boxed where it is made, it is moved
    // once; the set's own node, with the box's pointer in it, is small.
    let tagged = move |call: pb::TaggedCall| {
        let reply = handle(call.call);
        Box::pin(async move {
            pb::TaggedReply {
                tag: call.tag,
                reply: Some(reply.await),
            }
        })
    };
    // Each call is polled only when it is woken.
    let mut running = FuturesUnordered::new();
    let mut reading = true;
    futures::stream::poll_fn(move |cx: &mut Context<'_>| {
        while reading && running.len() < MAX_CALLS_IN_FLIGHT_PER_STREAM {
            match Pin::new(&mut inbound).poll_next(cx) {
                Poll::Ready(Some(Ok(call))) => running.push(tagged(call)),
                Poll::Ready(Some(Err(status))) => {
                    tracing::debug!(client = %peer, error = %status, "call stream ended");
                    reading = false;
                }
                Poll::Ready(None) => reading = false,
                Poll::Pending => break,
            }
        }
        match running.poll_next_unpin(cx) {
            Poll::Ready(Some(reply)) => Poll::Ready(Some(Ok(reply))),
            // Nothing running: the end, unless more calls may come (then
            // `inbound` is registered to wake this stream).
            Poll::Ready(None) if reading => Poll::Pending,
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    })
}

#[cfg(test)]
mod tests {
    //! The inline form's guarantees (the per-call form's are the members'
    //! integration tests'): replies as calls finish, the bound on calls
    //! read, and the end of a stream. A test call's `min_index` names it;
    //! its reply's `index` echoes it.

    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use tokio::sync::{watch, Semaphore};

    use super::*;

    fn call(tag: u64) -> Result<pb::TaggedCall, Status> {
        Ok(pb::TaggedCall {
            tag,
            call: Some(pb::CallRequest {
                min_index: tag,
                ..Default::default()
            }),
        })
    }

    fn reply_of(index: u64) -> pb::CallReply {
        pb::CallReply {
            index,
            ..Default::default()
        }
    }

    async fn next_tag<S: Stream<Item = Result<pb::TaggedReply, Status>> + Unpin>(replies: &mut S) -> Option<u64> {
        let reply = tokio::time::timeout(Duration::from_secs(5), replies.next())
            .await
            .expect("a reply within 5 s")?
            .expect("replies are never errors");
        assert_eq!(
            reply.reply.expect("a reply").index,
            reply.tag,
            "reply {} is its own call's",
            reply.tag
        );
        Some(reply.tag)
    }

    #[tokio::test]
    async fn replies_come_as_calls_finish_with_their_tags() {
        // Call N finishes when the watch reaches N: released 3, then 1, then 2.
        let (release, gate) = watch::channel(0u64);
        let inbound = futures::stream::iter(vec![call(1), call(2), call(3)]);
        let mut replies = Box::pin(serve_call_stream_inline(inbound, "test".into(), move |call| {
            let mut gate = gate.clone();
            async move {
                let me = call.expect("a call").min_index;
                gate.wait_for(|released| *released == me).await.expect("the gate stays");
                reply_of(me)
            }
        }));
        for tag in [3, 1, 2] {
            release.send(tag).unwrap();
            assert_eq!(next_tag(&mut replies).await, Some(tag));
        }
        assert_eq!(
            next_tag(&mut replies).await,
            None,
            "ends after the input and every reply"
        );
    }

    #[tokio::test]
    async fn no_more_calls_are_read_than_the_bound() {
        let total = MAX_CALLS_IN_FLIGHT_PER_STREAM + 10;
        let read = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(Semaphore::new(0));
        let inbound = futures::stream::iter((1..=total as u64).map(call).collect::<Vec<_>>());
        let (counted, held) = (read.clone(), gate.clone());
        let mut replies = Box::pin(serve_call_stream_inline(inbound, "test".into(), move |call| {
            counted.fetch_add(1, Ordering::SeqCst);
            let gate = held.clone();
            async move {
                let _pass = gate.acquire().await.expect("the gate stays");
                reply_of(call.expect("a call").min_index)
            }
        }));
        // Nothing can finish: the stream reads up to the bound and waits.
        assert!(
            tokio::time::timeout(Duration::from_millis(200), replies.next())
                .await
                .is_err(),
            "no reply while every call waits"
        );
        assert_eq!(read.load(Ordering::SeqCst), MAX_CALLS_IN_FLIGHT_PER_STREAM);
        gate.add_permits(total);
        let mut tags = Vec::new();
        while let Some(tag) = next_tag(&mut replies).await {
            tags.push(tag);
        }
        tags.sort_unstable();
        assert_eq!(tags, (1..=total as u64).collect::<Vec<_>>(), "every call answered once");
        assert_eq!(read.load(Ordering::SeqCst), total);
    }

    #[tokio::test]
    async fn a_broken_input_ends_reading_and_running_calls_still_answer() {
        let read = Arc::new(AtomicUsize::new(0));
        let counted = read.clone();
        let inbound = futures::stream::iter(vec![call(1), Err(Status::data_loss("garbled frame")), call(2)]);
        let mut replies = Box::pin(serve_call_stream_inline(inbound, "test".into(), move |call| {
            counted.fetch_add(1, Ordering::SeqCst);
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                reply_of(call.expect("a call").min_index)
            }
        }));
        assert_eq!(
            next_tag(&mut replies).await,
            Some(1),
            "the call read before the error answers"
        );
        assert_eq!(next_tag(&mut replies).await, None, "then the replies end");
        assert_eq!(read.load(Ordering::SeqCst), 1, "nothing after the error is read");
    }

    #[tokio::test]
    async fn an_empty_input_ends_at_once() {
        let inbound = futures::stream::iter(Vec::<Result<pb::TaggedCall, Status>>::new());
        let mut replies = Box::pin(serve_call_stream_inline(inbound, "test".into(), |_call| async {
            panic!("no call to handle")
        }));
        assert_eq!(next_tag(&mut replies).await, None);
    }
}
