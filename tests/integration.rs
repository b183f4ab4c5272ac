//! The integration tests of the `raftfs` package, as one test binary.
//!
//! Why one: each integration test crate compiles its own copy of every
//! generic and `async fn` of the SDK, tokio and tonic it reaches (rustc
//! shares none of them between crates at `opt-level = 3`), so 40 crates
//! cost CI ~1,600 s of compiler time where one costs ~60 (docs/architecture.md,
//! "Build time"). Each file below is one module, named as its test binary
//! was: `cargo test --test integration restart_safety::` runs one file's
//! tests.
//!
//! Caveat: the tests share one process, so nothing here may change the
//! process's environment, working directory or global subscriber; the
//! clusters' ports are reserved per process (`raftfs_bench::ports`).

mod common;

mod audit_log;
mod bad_input;
mod bench_compare;
mod block_tokens;
mod clock_faults;
mod cluster_conformance;
mod data_admin;
mod data_leases;
mod data_path;
mod data_protection;
mod delegation_tokens;
mod dev_cluster;
mod dfs_cli;
mod failover;
mod faults;
mod federated_bad_replicas;
mod federated_conformance;
mod fencing;
mod follower_reads;
mod foreign_cluster;
mod groups;
mod ha_admin;
mod hadoop_clients;
mod health;
mod http_pages;
mod mount_moves;
mod nameservices_at_run_time;
mod power_cut;
mod replica_determinism;
mod restart_safety;
mod router_admin;
mod router_failover;
mod router_proxy;
mod shell_golden;
mod snapshots;
mod status_pages;
mod storage_faults;
mod strong_auth;
mod tls;
mod webhdfs;
mod webhdfs_clients;
mod webhdfs_data;
