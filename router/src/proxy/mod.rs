//! The router's half of the client protocol: calls of the federated
//! namespace routed by the mount table to the nameservices that hold
//! their paths ([`CallRouter`]), over per-nameservice connections with
//! bounded call slots ([`Nameservices`]), with lease renewals sent only
//! where a client writes ([`LeaseHolders`]) and the answers that combine
//! nameservices built by the pure [`merge`] functions. Where a path
//! lives is decided by `raftfs_federation::routing`, which the SDK's
//! direct mode shares.

pub mod call_router;
pub mod lease_holders;
pub mod merge;
pub mod nameservices;

pub use call_router::CallRouter;
pub use lease_holders::LeaseHolders;
pub use nameservices::Nameservices;
