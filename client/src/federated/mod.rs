//! Calls of a federated namespace routed by the mount table to the
//! nameservices that hold their paths: the one piece of routing that a
//! router runs for its callers and the SDK runs for itself (direct mode).
//!
//! ```text
//!   router:  client ──► router [CallRouter<FederationView>] ──► nameservice leaders
//!   direct:  client [CallRouter<FederationWatch>] ─────────────► nameservice leaders
//! ```
//!
//! * [`CallRouter`]: one client call, routed and combined over
//!   nameservices; generic over where its copy of the table comes from
//!   ([`TableSource`]: the router's applied Raft state, or the SDK's
//!   [`FederationWatch`](crate::FederationWatch)).
//! * [`Nameservices`]: connections to the nameservices' leaders, made
//!   once per table version, with bounded call slots per nameservice
//!   ([`call_slots`]: taken and given back without a lock).
//! * [`LeaseHolders`]: where a client holds open files, so lease renewals
//!   go there only.
//! * [`merge`]: the pure functions that combine nameservices' answers.
//! * `one_way`: the common call's route, decided without the general
//!   routing (a path with one destination, sent there as it is).
//!
//! Where a path lives is decided by `raftfs_federation::routing`. Every
//! routed call carries the table version it was routed by; a nameservice
//! that does not own the path refuses it (`NotOwned`), so a stale table
//! costs a refresh and a second try, never a write in the wrong place.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use raftfs_federation::Federation;

pub mod call_router;
pub mod call_slots;
pub mod lease_holders;
pub mod merge;
pub mod nameservices;
mod one_way;

pub use call_router::CallRouter;
pub use lease_holders::LeaseHolders;
pub use nameservices::Nameservices;

/// Where a [`CallRouter`] reads the federation it routes by.
pub trait TableSource: Send + Sync + 'static {
    /// The federation as known now (cheap: read on every call).
    fn current(&self) -> Arc<Federation>;
    /// Wait until version `version` (or a later one) is known, for at most
    /// `timeout`; whether it is.
    fn wait_for_version(&self, version: u64, timeout: Duration) -> impl Future<Output = bool> + Send;
}
