//! raftfs's router (DESIGN.md §7): many nameservices behind one mount
//! table, as HDFS Router-Based Federation. Built so far: the routers' Raft
//! group that replicates the federation ([`group`], on the generic glue of
//! `raftfs_raft`; the federation's pure types are `raftfs_federation`'s)
//! and the router process that runs a member of that group and serves its
//! admin calls ([`server`]). Proxying the
//! client protocol and the router-aware SDK are not built yet (issue 17).

pub mod group;
pub mod server;

/// The federation's pure types and the admin client live in
/// `raftfs_federation` (no storage engine, so clients can use them).
pub use raftfs_federation::{admin, admin_client, error, federation, mount_table};
pub use raftfs_federation::{
    Destination, Federation, FederationChange, MountEntry, MountQuota, MountTable, MountTableChange, MountTableError,
    NameserviceRecord, Order, RouterError,
};
