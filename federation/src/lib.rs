//! The federation as routers replicate it and clients route by it
//! (DESIGN.md §7), with no storage engine so that the SDK can use it:
//!
//! * [`mount_table`]: path prefixes mapped onto (nameservice, path)
//!   destinations, longest prefix first, with their order, read-only flag,
//!   owner/group/mode and quotas;
//! * [`federation`]: the registered nameservices and the mount table at a
//!   version, changed only by [`FederationChange`]s checked whole;
//! * [`routing`]: where a path lives (mount point, virtual directory, or
//!   nowhere) and an operation rewritten for its nameservice;
//! * [`router_tokens`]: the routers' own delegation tokens (a table the
//!   routers' group replicates beside the federation, not in it);
//! * [`admin`]: the `RouterAdmin` messages, and [`admin_client`], a client of
//!   the routers that fails over between them.
//!
//! The routers' Raft group that replicates the federation is `raftfs_router`.

pub mod admin;
pub mod admin_client;
pub mod error;
pub mod federation;
pub mod mount_table;
pub mod router_tokens;
pub mod routing;

pub use error::{MountTableError, RouterError};
pub use federation::{Federation, FederationChange, FederationWithoutRemoved, NameserviceRecord, RemovedNameservice};
pub use mount_table::{Destination, MountEntry, MountQuota, MountTable, MountTableChange, Order};
pub use routing::{locate, Location};
