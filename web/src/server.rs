//! The HTTP listener: HTTPS with the node's certificate (or plaintext for
//! `--insecure` nodes), HTTP/1.1 and HTTP/2, and an [`HttpCaller`] in every
//! request's extensions.

use futures::future::BoxFuture;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use raftfs_trust::{ServerSecurity, TLS_HANDSHAKE_TIMEOUT_MS};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tower::ServiceExt;

use crate::{HttpCaller, HTTP_HEADER_READ_TIMEOUT_MS, MAX_HTTP_CONNECTIONS};

/// A bound HTTP port, not serving yet (bind early, so a taken port fails
/// the node's start-up with a clear error).
pub struct HttpListener {
    listener: TcpListener,
}

impl HttpListener {
    pub async fn bind(addr: SocketAddr) -> std::io::Result<HttpListener> {
        Ok(HttpListener {
            listener: TcpListener::bind(addr).await?,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }
}

/// Serve `app` on `listener` until `shutdown` resolves, secured as
/// `security` says (the node's own TLS settings).
///
/// Boxed, so that a crate spawning it (the `raftfs` binary) calls this
/// crate's code instead of compiling its own copy of the HTTP server
/// (docs/architecture.md, "Build time").
#[inline(never)]
pub fn serve(
    listener: HttpListener,
    security: ServerSecurity,
    app: Router,
    shutdown: BoxFuture<'static, ()>,
) -> BoxFuture<'static, ()> {
    Box::pin(serve_unboxed(listener, security, app, shutdown))
}

async fn serve_unboxed(
    listener: HttpListener,
    security: ServerSecurity,
    app: Router,
    shutdown: BoxFuture<'static, ()>,
) {
    let tls = security.http_tls().map(tokio_rustls::TlsAcceptor::from);
    let slots = Arc::new(Semaphore::new(MAX_HTTP_CONNECTIONS));
    let security = Arc::new(security);
    tokio::pin!(shutdown);
    loop {
        // Wait for a free slot before accepting: excess callers wait in
        // the kernel's accept queue rather than in our memory.
        let slot = tokio::select! {
            s = slots.clone().acquire_owned() => s.expect("the semaphore is never closed"),
            _ = &mut shutdown => return,
        };
        let (tcp, remote) = tokio::select! {
            r = listener.listener.accept() => match r {
                Ok(c) => c,
                Err(e) => {
                    // Out of file descriptors, say: back off, do not spin.
                    tracing::warn!(error = %e, "HTTP accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return,
        };
        let (tls, security, app) = (tls.clone(), security.clone(), app.clone());
        tokio::spawn(async move {
            let _slot = slot;
            let _ = tcp.set_nodelay(true);
            match tls {
                None => {
                    let caller = HttpCaller {
                        remote,
                        peer: None,
                        certificate_refused: None,
                    };
                    serve_connection(tcp, caller, app).await
                }
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(Duration::from_millis(TLS_HANDSHAKE_TIMEOUT_MS), acceptor.accept(tcp));
                    let stream = match handshake.await {
                        Ok(Ok(s)) => s,
                        Ok(Err(e)) => {
                            tracing::debug!(%remote, error = %e, "HTTPS handshake refused");
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(%remote, "HTTPS handshake timed out");
                            return;
                        }
                    };
                    let leaf = stream
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(|c| c.as_ref().to_vec());
                    let (peer, certificate_refused) = match security.identify(leaf.as_deref()) {
                        Ok(p) => (p, None),
                        Err(why) => (None, Some(why)),
                    };
                    let caller = HttpCaller {
                        remote,
                        peer,
                        certificate_refused,
                    };
                    serve_connection(stream, caller, app).await
                }
            }
        });
    }
}

async fn serve_connection<S>(stream: S, caller: HttpCaller, app: Router)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let remote = caller.remote;
    let svc = app.map_request(move |mut req: axum::extract::Request<hyper::body::Incoming>| {
        req.extensions_mut().insert(caller.clone());
        req
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(HTTP_HEADER_READ_TIMEOUT_MS));
    if let Err(e) = builder
        .serve_connection(TokioIo::new(stream), TowerToHyperService::new(svc))
        .await
    {
        tracing::debug!(%remote, error = %e, "HTTP connection ended with an error");
    }
}
