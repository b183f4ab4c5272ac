//! raftfs's router (DESIGN.md §7): many nameservices behind one mount
//! table, as HDFS Router-Based Federation. Built so far: the mount table's
//! data model and rules ([`mount_table`]), which the routers' Raft group
//! will replicate through the generic log store of `raftfs_raft`. The
//! router process, its admin commands and the router-aware SDK are not
//! built yet (issue 17).

pub mod error;
pub mod mount_table;

pub use error::MountTableError;
pub use mount_table::{Destination, MountEntry, MountQuota, MountTable, MountTableChange, Order};
