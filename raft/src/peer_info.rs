//! Asking a peer for its `MemberInfo` (role, term, log indexes, health,
//! membership): the status members and routers both answer, which the
//! health monitor, the status pages and a router registering a nameservice
//! read. The question is bounded by a timeout, to connect and again to
//! answer, so whoever asks every peer is never held by one that is down.

use std::time::Duration;

use raftfs_proto::pb;
use raftfs_trust::{Dialer, PeerRole};

/// What the node at `addr`, which must hold a certificate of `role`, says
/// of itself, over `dialer`, within `timeout_ms`; why not, if it does not.
pub async fn peer_info(
    dialer: &Dialer,
    addr: &str,
    role: PeerRole,
    timeout_ms: u64,
) -> Result<pb::MemberInfoReply, String> {
    let ep = dialer
        .endpoint(addr, role)
        .map_err(|e| e.to_string())?
        .connect_timeout(Duration::from_millis(timeout_ms))
        .timeout(Duration::from_millis(timeout_ms));
    let ch = ep.connect().await.map_err(|e| e.to_string())?;
    pb::namespace_client::NamespaceClient::new(ch)
        .member_info(pb::MemberInfoRequest {})
        .await
        .map(|r| r.into_inner())
        .map_err(|s| s.message().to_string())
}
