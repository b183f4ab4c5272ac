//! The router's half of the client protocol: calls of the federated
//! namespace routed by the mount table to the nameservices that hold
//! their paths. The routing itself is the SDK's
//! ([`raftfs_client::federated`], which the SDK's direct mode runs too);
//! here are what only a router does with it:
//!
//! * [`RouterCalls`]: the SDK's `CallRouter`, routing by this router's
//!   applied table ([`FederationView`] is its `TableSource`), over
//!   connections made with the router's own certificate
//!   ([`router_nameservices`]), so members believe the user it names;
//! * [`mount_calls`]: the calls a router makes itself on nameservices
//!   (mount quotas made exact, ownership pushes).

pub mod mount_calls;

use std::sync::Arc;
use std::time::Duration;

use raftfs_client::federated::{CallRouter, Nameservices, TableSource};
use raftfs_client::{ClientOptions, ClientTls, DelegationTokenSource, FollowerReads};
use raftfs_federation::Federation;
use raftfs_trust::Dialer;

use crate::group::FederationView;

pub use mount_calls::{enforce_mount_quota, push_ownership};

/// The router's call router.
pub type RouterCalls = CallRouter<FederationView>;

/// How long the router tries one forwarded call (leader changes and
/// retries included). Below the SDK's per-attempt timeout (10 s), so a
/// caller hears the nameservice's answer, or this router's `Timeout`,
/// before it gives up on the router.
pub const FORWARD_DEADLINE_MS: u64 = 8_000;
/// Timeout of one attempt of a forwarded call.
pub const FORWARD_ATTEMPT_TIMEOUT_MS: u64 = 3_000;

/// The router's connections to nameservices, over `dialer` (its own
/// certificate).
pub fn router_nameservices(dialer: Dialer) -> Nameservices {
    let opts = ClientOptions {
        call_deadline_ms: FORWARD_DEADLINE_MS,
        rpc_timeout_ms: FORWARD_ATTEMPT_TIMEOUT_MS,
        follower_reads: FollowerReads::Off,
        short_circuit: false,
        // The dialer is the router's own; these are never read.
        tls: ClientTls::Insecure,
        delegation_token: DelegationTokenSource::None,
        ..ClientOptions::default()
    };
    Nameservices::new(dialer, opts)
}

impl TableSource for FederationView {
    fn current(&self) -> Arc<Federation> {
        FederationView::current(self)
    }

    async fn wait_for_version(&self, version: u64, timeout: Duration) -> bool {
        let mut seen = self.watch_version();
        tokio::time::timeout(timeout, seen.wait_for(|v| *v >= version))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}
