//! raftfs's router (DESIGN.md §7): many nameservices behind one mount
//! table, as HDFS Router-Based Federation. Built so far: the mount table's
//! data model and rules ([`mount_table`]), the replicated federation state
//! over it ([`federation`]: nameservices and mounts at a version), the
//! routers' Raft group that replicates it ([`group`], on the generic glue
//! of `raftfs_raft`) and the router process that runs a member of that
//! group and serves its admin calls ([`server`], [`admin`]). Proxying the
//! client protocol and the router-aware SDK are not built yet (issue 17).

pub mod admin;
pub mod admin_client;
pub mod error;
pub mod federation;
pub mod group;
pub mod mount_table;
pub mod server;

pub use error::{MountTableError, RouterError};
pub use federation::{Federation, FederationChange, NameserviceRecord};
pub use mount_table::{Destination, MountEntry, MountQuota, MountTable, MountTableChange, Order};
