//! raftfs's Raft glue, generic over the openraft type configuration
//! (DESIGN.md §1, §7): what a nameservice and the routers' mount-table group
//! share. It knows nothing of namespaces or mount tables; each group brings
//! its own `RaftTypeConfig` and state machine.
//!
//! * [`LogStore`]: the Raft log and vote in RocksDB, fsynced (with group
//!   commit) before openraft is told an append is durable. Any type
//!   configuration whose entries, votes and log ids are serde types can use
//!   it, as openraft's `examples/log-rocks` store is generic over its config.
//! * [`snapshot`]: snapshot directories (a manifest of checksummed files
//!   the state machine wrote) and [`snapshot_stream`], their wire form.
//! * [`network`] and [`service`]: the client and server of the `Raft` gRPC
//!   service, which check the group and the peer's certificate role.
//! * [`group`]: the group's lifecycle: the openraft config from
//!   [`RaftTimings`], bootstrap, the health monitor, timed snapshots.
//! * [`call_stream`]: the server side of `Namespace.CallStream`, which
//!   members and routers both serve.
//! * [`peer_info`]: asking a member or router for its `MemberInfo`.
//! * [`client_errors`]: openraft's answers to a client write as `FsError`.
//! * [`group_metrics`]: the group's Raft state as Prometheus metrics.
//! * [`cpu`]: the CPU time a node's process has used (reported to benches).
//! * [`health`]: a member's own checks (disk space, log fsyncs).
//! * [`injected_delay`]: delays the fault tests set in a file.
//! * [`leader_contact`]: whether a member is in touch with its quorum.
//! * [`layout`]: a member's directory and its identity file (VERSION).

pub mod call_stream;
pub mod client_errors;
pub mod cpu;
pub mod framed;
pub mod group;
pub mod group_metrics;
pub mod health;
pub mod injected_delay;
pub mod layout;
pub mod leader_contact;
pub mod log_store;
pub mod network;
pub mod peer_info;
pub mod peer_route;
pub mod service;
pub mod snapshot;
pub mod snapshot_stream;

pub use group::RaftTimings;
pub use group_metrics::GroupMetrics;
pub use leader_contact::LeaderContact;
pub use log_store::{IoStats, LogStore, ENV_SLOW_DISK_FILE};
pub use network::{GroupConfig, NetworkFactory, RaftGroup, MOUNT_TABLE_GROUP_ID};
pub use service::{RaftService, ServeError};
pub use snapshot::{Manifest, SnapshotDir, Snapshots};
