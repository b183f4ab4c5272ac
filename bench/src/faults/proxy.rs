//! A fault-injecting TCP proxy for one directed link between two members
//! (member A dialing member B goes through A→B's proxy, by
//! `RAFTFS_FAILPOINT_PEER_ROUTES`).
//!
//! A link is up or cut. Cutting it is a black hole, as a real partition is:
//! bytes stop flowing both ways on every connection through it, and new
//! connections are accepted but carry nothing, so the members see timeouts,
//! not resets. Restoring it closes the connections held through the cut
//! (as a long partition would have timed them out) and lets new ones
//! through. Since B answers A on A's connection, cutting A→B also silences
//! B's replies to A's requests; B's own requests to A use B→A.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

/// Bytes copied per read on a proxied connection.
const COPY_BUFFER_BYTES: usize = 64 * 1024;

pub struct LinkProxy {
    pub listen: SocketAddr,
    up: watch::Sender<bool>,
    /// Connections accepted over the proxy's life.
    pub accepted: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl LinkProxy {
    /// Listen on a free local port and forward to `target`; the link starts up.
    pub async fn start(target: SocketAddr) -> std::io::Result<LinkProxy> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let listen = listener.local_addr()?;
        let (up, up_rx) = watch::channel(true);
        let accepted = Arc::new(AtomicU64::new(0));
        let counter = accepted.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((inbound, _)) = listener.accept().await else {
                    // Out of descriptors or similar: wait a little, keep serving.
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                };
                counter.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(carry(inbound, target, up_rx.clone()));
            }
        });
        Ok(LinkProxy {
            listen,
            up,
            accepted,
            task,
        })
    }

    /// Cut (`false`) or restore (`true`) the link.
    pub fn set_up(&self, up: bool) {
        self.up.send_replace(up);
    }

    pub fn is_up(&self) -> bool {
        *self.up.borrow()
    }
}

impl Drop for LinkProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn wait_for(rx: &mut watch::Receiver<bool>, want: bool) -> bool {
    rx.wait_for(|v| *v == want).await.is_ok()
}

/// Carry one connection while the link is up; hold it silent while it is
/// cut, and close it when the link comes back.
async fn carry(mut inbound: TcpStream, target: SocketAddr, mut up: watch::Receiver<bool>) {
    if !*up.borrow() {
        // Accepted during a cut: say nothing until the link is back, then close.
        wait_for(&mut up, true).await;
        return;
    }
    let Ok(mut outbound) = TcpStream::connect(target).await else {
        return; // the member is down: the caller sees its connection closed
    };
    let _ = inbound.set_nodelay(true);
    let _ = outbound.set_nodelay(true);
    let cut = {
        let (mut ri, mut wi) = inbound.split();
        let (mut ro, mut wo) = outbound.split();
        let a = copy(&mut ri, &mut wo);
        let b = copy(&mut ro, &mut wi);
        tokio::select! {
            _ = async { tokio::join!(a, b) } => false,
            _ = wait_for(&mut up, false) => true,
        }
    };
    if cut {
        // Hold both sockets silent through the cut, then drop them.
        wait_for(&mut up, true).await;
    } else {
        let _ = inbound.shutdown().await;
        let _ = outbound.shutdown().await;
    }
}

async fn copy<R, W>(r: &mut R, w: &mut W)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::AsyncReadExt;
    let mut buf = vec![0u8; COPY_BUFFER_BYTES];
    loop {
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => {
                let _ = w.shutdown().await;
                return;
            }
            Ok(n) => {
                if w.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn echo_server() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut b = [0u8; 1024];
                    while let Ok(n) = s.read(&mut b).await {
                        if n == 0 || s.write_all(&b[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn roundtrip(s: &mut TcpStream, msg: &[u8], wait_ms: u64) -> Option<Vec<u8>> {
        s.write_all(msg).await.ok()?;
        let mut b = vec![0u8; msg.len()];
        tokio::time::timeout(std::time::Duration::from_millis(wait_ms), s.read_exact(&mut b))
            .await
            .ok()?
            .ok()?;
        Some(b)
    }

    #[tokio::test]
    async fn cut_is_silent_and_restore_closes_held_connections() {
        let p = LinkProxy::start(echo_server().await).await.unwrap();
        let mut c = TcpStream::connect(p.listen).await.unwrap();
        assert_eq!(roundtrip(&mut c, b"ping", 2000).await.as_deref(), Some(&b"ping"[..]));
        p.set_up(false);
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert_eq!(
            roundtrip(&mut c, b"lost", 300).await,
            None,
            "a cut link carries nothing"
        );
        let mut during = TcpStream::connect(p.listen).await.unwrap();
        assert_eq!(roundtrip(&mut during, b"lost", 300).await, None);
        p.set_up(true);
        // The held connections are closed; a new one works.
        let mut b = [0u8; 8];
        let n = tokio::time::timeout(std::time::Duration::from_secs(2), c.read(&mut b)).await;
        assert!(matches!(n, Ok(Ok(0)) | Ok(Err(_))), "held connection closed: {n:?}");
        let mut after = TcpStream::connect(p.listen).await.unwrap();
        assert_eq!(
            roundtrip(&mut after, b"back", 2000).await.as_deref(),
            Some(&b"back"[..])
        );
        assert_eq!(p.accepted.load(Ordering::Relaxed), 3);
    }
}
