//! `raftfs bench`: NNThroughputBenchmark for raftfs (REFERENCE.md).
//!
//! `nnthroughput` runs the benchmark's ops (create, mkdirs, open,
//! fileStatus, rename, delete, clean) at one of three levels:
//! * `--level engine`: the namespace engine alone (plan + stage + commit
//!   under its single writer), on threads;
//! * `--level raft`: a single-member nameservice in-process (engine + Raft
//!   log with fsync, no RPC), with `-threads` concurrent callers;
//! * `--fs ADDR`: a running nameservice over gRPC, `-threads` concurrent callers.
//!
//! Inputs are pre-generated names in a balanced tree
//! (`<base>/<op>/ThroughputBenchDir<i>/…/ThroughputBench<n>`), split evenly
//! over the callers; ops that need files (open, fileStatus, rename, delete)
//! create them first, untimed. Each run prints NNThroughputBenchmark's
//! block; `--runs N` repeats it and prints the median.
//!
//! `nnmemory` reports resident memory per file of the memory store.
//! `failover` times a nameservice's recovery from kill -9 of its leader.
//! `data` measures put and get of a large file against the disk's limits;
//! `blockreport` times a member processing a full block report.
//! `snapshot` times checkpoints (take, install, restart) at a large namespace.
//! `faults` runs a nameservice of real processes under random faults and
//! checks the clients' history for linearizability and lost or doubled ops.
//! `mounttable` times resolving paths through a large mount table;
//! `federation` compares getFileInfo through a router with direct calls,
//! and two nameservices under load at once with one alone.
//! `audit` compares the create rate with the audit log on and off.
//! `webhdfs` compares WebHDFS GETFILESTATUS with the SDK's getFileInfo.
//! `hadoop-rpc` compares getFileInfo and create through Hadoop's RPC (by
//! hdfs-native) with the SDK's; `hadoop-data` a 1 GiB put and get.
//! `compare` runs the matrix of stores and execution modes at every level,
//! interleaved, and prints one table.

mod audit;
mod compare;
mod cpu_pin;
mod datapath;
mod delete;
mod failover;
pub mod faults;
mod federation;
mod hadoop_data;
mod hadoop_rpc;
mod localns;
mod mounttable;
mod names;
mod nnmemory;
mod nnthroughput;
pub mod ports;
mod snapshot;
mod target;
mod webhdfs;
mod webhdfs_open;

use clap::{Args, Subcommand};

#[derive(Args, Debug)]
pub struct BenchCli {
    #[command(subcommand)]
    pub cmd: BenchCmd,
}

#[derive(Subcommand, Debug)]
pub enum BenchCmd {
    /// Namespace throughput, as Hadoop's NNThroughputBenchmark.
    Nnthroughput(nnthroughput::NnArgs),
    /// Resident memory per file of `--store memory`.
    Nnmemory(nnmemory::MemArgs),
    /// Write unavailability after kill -9 of the leader (starts its own local nameservice).
    Failover(failover::FailoverArgs),
    /// Single-client put and get of one large file against local disk limits (starts its own cluster).
    Data(datapath::DataArgs),
    /// A member processing a full block report, with getFileInfo latency alongside.
    Blockreport(datapath::BlockReportArgs),
    /// Random faults (kill -9, SIGSTOP, partitions, slow disk) under a
    /// recorded client load; checks linearizability and that nothing
    /// acknowledged is lost or applied twice. Starts its own nameservice.
    Faults(faults::FaultArgs),
    /// Snapshot take, install on a new member, and restart-to-serving at a large namespace.
    Snapshot(snapshot::SnapshotArgs),
    /// A recursive delete of a large subtree: the call's time, the reclaim's, and getFileInfo latency elsewhere meanwhile.
    Delete(delete::DeleteArgs),
    /// {memory, rocksdb} x {apply, leader} at engine, raft and gRPC level, interleaved: one table (and --json, --plot).
    Compare(compare::CompareArgs),
    /// Resolving paths through a mount table of 10,000 entries, as the SDK does per call.
    Mounttable(mounttable::MountTableArgs),
    /// getFileInfo through a router vs direct, and two nameservices under load at once vs one alone (starts its own cluster).
    Federation(federation::FederationArgs),
    /// The create rate with the audit log on vs off, interleaved (starts its own nameservices).
    Audit(audit::AuditArgs),
    /// WebHDFS GETFILESTATUS vs the SDK's getFileInfo, interleaved (starts its own nameservice).
    Webhdfs(webhdfs::WebHdfsArgs),
    /// WebHDFS OPEN of a large file vs the SDK's read of it (no short-circuit), interleaved (starts its own cluster).
    WebhdfsOpen(webhdfs_open::WebHdfsOpenArgs),
    /// getFileInfo and create through Hadoop RPC (hdfs-native) vs the SDK, 64 callers, interleaved (starts its own nameservice).
    HadoopRpc(hadoop_rpc::HadoopRpcArgs),
    /// A 1 GiB put and get by hdfs-native (DataTransferProtocol) vs the SDK (no short-circuit), interleaved (starts its own cluster).
    HadoopData(hadoop_data::HadoopDataArgs),
}

/// Run the bench `cli` names. Boxed, so that the `raftfs` binary calls
/// this crate's code instead of compiling its own copy of every bench
/// (docs/architecture.md, "Build time").
#[inline(never)]
pub fn run(cli: BenchCli) -> futures::future::BoxFuture<'static, anyhow::Result<()>> {
    Box::pin(run_unboxed(cli))
}

async fn run_unboxed(cli: BenchCli) -> anyhow::Result<()> {
    match cli.cmd {
        BenchCmd::Nnthroughput(a) => nnthroughput::run(a).await,
        BenchCmd::Nnmemory(a) => nnmemory::run(a),
        BenchCmd::Failover(a) => failover::run(a).await,
        BenchCmd::Data(a) => datapath::run(a).await,
        BenchCmd::Blockreport(a) => datapath::blockreport(a).await,
        BenchCmd::Faults(a) => faults::run(a).await,
        BenchCmd::Snapshot(a) => snapshot::run(a).await,
        BenchCmd::Compare(a) => compare::run(a).await,
        BenchCmd::Delete(a) => delete::run(a).await,
        BenchCmd::Mounttable(a) => mounttable::run(a),
        BenchCmd::Federation(a) => federation::run(a).await,
        BenchCmd::Audit(a) => audit::run(a).await,
        BenchCmd::Webhdfs(a) => webhdfs::run(a).await,
        BenchCmd::WebhdfsOpen(a) => webhdfs_open::run(a).await,
        BenchCmd::HadoopRpc(a) => hadoop_rpc::run(a).await,
        BenchCmd::HadoopData(a) => hadoop_data::run(a).await,
    }
}
