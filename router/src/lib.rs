//! raftfs's router (DESIGN.md §7): many nameservices behind one mount
//! table, as HDFS Router-Based Federation:
//!
//! * [`group`]: the routers' Raft group that replicates the federation (on
//!   the generic glue of `raftfs_raft`; the federation's pure types are
//!   `raftfs_federation`'s);
//! * [`proxy`]: the client protocol of the federated namespace, routed
//!   to the nameservices by the mount table;
//! * [`server`]: the router process: its member of the group, its admin
//!   service, and the client `Namespace` service, in safe mode while the
//!   router is out of touch with its group's quorum.

pub mod group;
pub mod proxy;
pub mod server;

/// The federation's pure types and the admin client live in
/// `raftfs_federation` (no storage engine, so clients can use them).
pub use raftfs_federation::{admin, admin_client, error, federation, mount_table};
pub use raftfs_federation::{
    Destination, Federation, FederationChange, MountEntry, MountQuota, MountTable, MountTableChange, MountTableError,
    NameserviceRecord, Order, RouterError,
};
