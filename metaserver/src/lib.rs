//! raftfs metaserver: the namespace engine, its stores, the Raft state
//! machine adapter and the gRPC services of one nameservice member.
//!
//! Layers, bottom up (see docs/architecture.md):
//! * [`store`]: the storage trait and its memory and RocksDB implementations.
//! * [`namespace`]: pure HDFS namespace logic (plan → delta → stage).
//! * [`locks`]: the leader's fine-grained inode and edge locks (`--exec leader`).
//! * [`log_clock`]: the time a leader writes into entries, true to real time across wall-clock steps.
//! * [`exec`]: the write pipeline (op → log command, `--exec apply | leader`) and the engine.
//! * [`raft`]: openraft glue: log store, state machine adapter, network.
//! * [`server`]: the member process: gRPC services, leader finding.

pub mod blocks;
pub mod exec;
pub mod golden;
pub mod inode;
pub mod locks;
pub mod log_clock;
pub mod namespace;
pub mod path;
pub mod raft;
pub mod server;
pub mod store;
pub mod testkit;
