//! [`CallStream`]: the SDK's calls to one member over one long-lived gRPC
//! stream (`Namespace.CallStream`) instead of one unary request each.
//!
//! Why: with 64 concurrent callers, a unary call cost the client one HTTP/2
//! request (headers, stream state, a tower buffer hop) and one `writev`
//! each (measured: 33k writev for 30k reads), and loopback sends dominate.
//! On a stream, calls are messages: whatever is queued when the connection
//! writes goes out in one write, and the same holds for the replies.
//!
//! Guarantees: every call gets exactly one answer — its reply, or a
//! retryable `Unavailable` if the stream ends first (the member restarted,
//! the connection broke), so the SDK retries it with the same call id and
//! the member's retry table keeps that safe. A dead stream is never reused:
//! the next call opens a new one. A member that does not serve call
//! streams (an older version, mid rolling upgrade) ends the stream with
//! `Unimplemented`; the stream then reports [`CallStream::is_unsupported`]
//! and the SDK sends that member unary calls. Caveat: a call abandoned by its caller
//! (timeout, leader change) still runs on the member; only its reply is
//! dropped.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::Channel;

use raftfs_proto::pb;
use raftfs_proto::pb::namespace_client::NamespaceClient;
use raftfs_proto::FsError;

/// Most calls queued on one stream before callers wait to send.
pub const MAX_QUEUED_CALLS_PER_STREAM: usize = 1024;

type Waiter = oneshot::Sender<Result<pb::CallReply, FsError>>;

/// Calls waiting for their replies, by tag; closed once the stream ended.
#[derive(Default)]
struct Pending {
    waiters: HashMap<u64, Waiter>,
    /// Why the stream ended, once it has: no call may wait on it after.
    ended: Option<FsError>,
}

/// One open call stream to a member (see the module docs).
pub(crate) struct CallStream {
    addr: String,
    tx: mpsc::Sender<pb::TaggedCall>,
    pending: Arc<Mutex<Pending>>,
    dead: Arc<AtomicBool>,
    /// The member answered the stream with `Unimplemented`.
    unsupported: Arc<AtomicBool>,
    next_tag: AtomicU64,
}

/// Removes a call's waiter if the caller gives up before the reply.
struct Forget<'a> {
    pending: &'a Mutex<Pending>,
    tag: u64,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.pending.lock().waiters.remove(&self.tag);
    }
}

impl CallStream {
    /// Open a stream to `addr` over `client`'s channel. Calls may be sent at
    /// once; they are written when the stream is established.
    pub(crate) fn open(addr: &str, mut client: NamespaceClient<Channel>) -> Arc<CallStream> {
        let (tx, rx) = mpsc::channel(MAX_QUEUED_CALLS_PER_STREAM);
        let pending = Arc::new(Mutex::new(Pending::default()));
        let dead = Arc::new(AtomicBool::new(false));
        let unsupported = Arc::new(AtomicBool::new(false));
        let (reader_pending, reader_dead, reader_addr) = (pending.clone(), dead.clone(), addr.to_string());
        let reader_unsupported = unsupported.clone();
        tokio::spawn(async move {
            let why = async {
                let mut replies = client.call_stream(ReceiverStream::new(rx)).await?.into_inner();
                while let Some(r) = replies.message().await? {
                    let waiter = reader_pending.lock().waiters.remove(&r.tag);
                    if let Some(w) = waiter {
                        let reply = r
                            .reply
                            .ok_or_else(|| FsError::Unavailable(format!("reply without a body from {reader_addr}")));
                        let _ = w.send(reply);
                    }
                }
                Ok::<(), tonic::Status>(())
            }
            .await;
            let why = match why {
                Ok(()) => FsError::Unavailable(format!("call stream to {reader_addr} ended")),
                Err(s) => {
                    if s.code() == tonic::Code::Unimplemented {
                        reader_unsupported.store(true, Ordering::Release);
                    }
                    FsError::Unavailable(format!("call stream to {reader_addr}: {}", s.message()))
                }
            };
            reader_dead.store(true, Ordering::Release);
            let waiters = {
                let mut p = reader_pending.lock();
                p.ended = Some(why.clone());
                std::mem::take(&mut p.waiters)
            };
            for (_, w) in waiters {
                let _ = w.send(Err(why.clone()));
            }
        });
        Arc::new(CallStream {
            addr: addr.to_string(),
            tx,
            pending,
            dead,
            unsupported,
            next_tag: AtomicU64::new(1),
        })
    }

    /// Whether the stream has ended (a new one is needed).
    pub(crate) fn is_dead(&self) -> bool {
        self.dead.load(Ordering::Acquire)
    }

    /// Whether the member does not serve call streams (use unary calls).
    pub(crate) fn is_unsupported(&self) -> bool {
        self.unsupported.load(Ordering::Acquire)
    }

    /// Send `call` and wait for its reply.
    pub(crate) async fn call(&self, call: pb::CallRequest) -> Result<pb::CallReply, FsError> {
        let tag = self.next_tag.fetch_add(1, Ordering::Relaxed);
        let (wtx, wrx) = oneshot::channel();
        {
            let mut p = self.pending.lock();
            if let Some(why) = &p.ended {
                return Err(why.clone());
            }
            let previous = p.waiters.insert(tag, wtx);
            assert!(previous.is_none(), "call stream tags are unique");
        }
        let _forget = Forget {
            pending: &self.pending,
            tag,
        };
        self.tx
            .send(pb::TaggedCall { tag, call: Some(call) })
            .await
            .map_err(|_| FsError::Unavailable(format!("call stream to {} is closed", self.addr)))?;
        wrx.await.unwrap_or_else(|_| {
            Err(FsError::Unavailable(format!(
                "call stream to {} dropped a call",
                self.addr
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tonic::{Request, Response, Status, Streaming};

    use super::*;

    /// A member whose call stream answers each call with its own op bytes,
    /// later calls first; after `close_after` calls it ends the stream
    /// without answering the rest.
    struct Echo {
        close_after: usize,
        /// false: an older member, unary calls only.
        serves_streams: bool,
    }

    #[tonic::async_trait]
    impl pb::namespace_server::Namespace for Echo {
        async fn call(&self, _: Request<pb::CallRequest>) -> Result<Response<pb::CallReply>, Status> {
            // Every unary call finds nothing at its path.
            let result: Result<raftfs_proto::OpResult, FsError> = Ok(raftfs_proto::OpResult::Status(None));
            Ok(Response::new(pb::CallReply {
                result_bin: raftfs_proto::codec::encode(&result).expect("encode"),
                index: 0,
                block_tokens_bin: Vec::new(),
            }))
        }

        type CallStreamStream = ReceiverStream<Result<pb::TaggedReply, Status>>;

        async fn call_stream(
            &self,
            req: Request<Streaming<pb::TaggedCall>>,
        ) -> Result<Response<Self::CallStreamStream>, Status> {
            if !self.serves_streams {
                return Err(Status::unimplemented("Namespace.CallStream"));
            }
            let mut inbound = req.into_inner();
            let (tx, rx) = mpsc::channel(64);
            let close_after = self.close_after;
            tokio::spawn(async move {
                let mut seen = 0;
                while let Ok(Some(c)) = inbound.message().await {
                    seen += 1;
                    if seen > close_after {
                        let _ = tx.send(Err(Status::unavailable("member going away"))).await;
                        return;
                    }
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        // Later tags answer sooner: replies arrive out of order.
                        tokio::time::sleep(Duration::from_millis(200u64.saturating_sub(c.tag * 4))).await;
                        let reply = pb::CallReply {
                            result_bin: c.call.expect("call body").op_bin,
                            index: c.tag,
                            block_tokens_bin: Vec::new(),
                        };
                        let _ = tx
                            .send(Ok(pb::TaggedReply {
                                tag: c.tag,
                                reply: Some(reply),
                            }))
                            .await;
                    });
                }
            });
            Ok(Response::new(ReceiverStream::new(rx)))
        }

        async fn member_info(
            &self,
            _: Request<pb::MemberInfoRequest>,
        ) -> Result<Response<pb::MemberInfoReply>, Status> {
            Err(Status::unimplemented("member info"))
        }

        async fn admin(&self, _: Request<pb::CallRequest>) -> Result<Response<pb::CallReply>, Status> {
            Err(Status::unimplemented("admin"))
        }

        async fn read_index(&self, _: Request<pb::ReadIndexRequest>) -> Result<Response<pb::ReadIndexReply>, Status> {
            Err(Status::unimplemented("read index"))
        }
    }

    async fn serve(close_after: usize) -> String {
        serve_as(Echo {
            close_after,
            serves_streams: true,
        })
        .await
    }

    async fn serve_as(member: Echo) -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(pb::namespace_server::NamespaceServer::new(member))
                .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener)),
        );
        addr
    }

    fn client(addr: &str) -> NamespaceClient<Channel> {
        let ch = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .expect("endpoint")
            .connect_lazy();
        NamespaceClient::new(ch)
    }

    fn call(n: u64) -> pb::CallRequest {
        pb::CallRequest {
            op_bin: n.to_le_bytes().to_vec(),
            ..Default::default()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_calls_get_their_own_replies_out_of_order() {
        let addr = serve(usize::MAX).await;
        let s = CallStream::open(&addr, client(&addr));
        let calls = (0..40u64).map(|n| {
            let s = s.clone();
            async move { (n, s.call(call(n)).await) }
        });
        for (n, r) in futures::future::join_all(calls).await {
            let r = r.expect("reply");
            assert_eq!(r.result_bin, n.to_le_bytes(), "call {n} got another call's reply");
        }
        assert!(s.pending.lock().waiters.is_empty(), "answered calls leave no waiter");
        assert!(!s.is_dead());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stream_that_ends_fails_its_waiting_calls_retryably_and_stays_dead() {
        let addr = serve(5).await;
        let s = CallStream::open(&addr, client(&addr));
        let calls = (0..20u64).map(|n| {
            let s = s.clone();
            async move { s.call(call(n)).await }
        });
        let results = futures::future::join_all(calls).await;
        let failed: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        assert!(!failed.is_empty(), "the member ended the stream after 5 calls");
        for e in &failed {
            assert!(e.is_retryable(), "a call lost with its stream is retried: {e}");
        }
        assert!(s.is_dead(), "an ended stream is marked dead");
        let e = s.call(call(99)).await.expect_err("a dead stream takes no calls");
        assert!(e.is_retryable(), "{e}");
        // A new stream to the same member works.
        let again = CallStream::open(&addr, client(&addr));
        assert_eq!(again.call(call(7)).await.expect("reply").result_bin, 7u64.to_le_bytes());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_abandoned_call_leaves_no_waiter() {
        let addr = serve(usize::MAX).await;
        let s = CallStream::open(&addr, client(&addr));
        // Tag 1 answers after ~196 ms; give up long before.
        let r = tokio::time::timeout(Duration::from_millis(20), s.call(call(1))).await;
        assert!(r.is_err(), "the call was still waiting");
        assert!(
            s.pending.lock().waiters.is_empty(),
            "the abandoned call's waiter is gone"
        );
        // The reply that arrives later is dropped; the stream keeps working.
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert_eq!(s.call(call(3)).await.expect("reply").result_bin, 3u64.to_le_bytes());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_member_without_call_streams_is_sent_unary_calls() {
        let addr = serve_as(Echo {
            close_after: 0,
            serves_streams: false,
        })
        .await;
        let s = CallStream::open(&addr, client(&addr));
        let e = s.call(call(1)).await.expect_err("the member has no call streams");
        assert!(e.is_retryable(), "{e}");
        assert!(s.is_unsupported() && s.is_dead());

        // Through the SDK: the first try meets Unimplemented and is retried
        // as a unary call.
        let fs = crate::FileSystem::connect(
            &format!("raftfs://{addr}"),
            crate::Identity::resolve(Some("alice")),
            crate::ClientOptions {
                tls: crate::ClientTls::Insecure,
                ..Default::default()
            },
        )
        .expect("connect");
        let status = tokio::time::timeout(Duration::from_secs(10), fs.get_file_status("/a"))
            .await
            .expect("answered well within the call deadline");
        let e = status.expect_err("the fake member has no /a");
        assert!(matches!(e, FsError::FileNotFound(_)), "{e:?}");
    }
}
