//! raftfs's Raft glue, generic over the openraft type configuration
//! (DESIGN.md §1, §7): what a nameservice and the routers' mount-table group
//! share. It knows nothing of namespaces or mount tables; each group brings
//! its own `RaftTypeConfig` and state machine.
//!
//! * [`LogStore`]: the Raft log and vote in RocksDB, fsynced (with group
//!   commit) before openraft is told an append is durable. Any type
//!   configuration whose entries, votes and log ids are serde types can use
//!   it, as openraft's `examples/log-rocks` store is generic over its config.

pub mod log_store;

pub use log_store::{IoStats, LogStore, ENV_SLOW_DISK_FILE};
