//! `raftfs router`: format a router's directory, or run one router (a
//! member of the routers' mount-table Raft group) until SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context};
use clap::{Args, Subcommand};

use raftfs_raft::health::HealthConfig;
use raftfs_raft::layout::{self, VersionFile, LAYOUT_VERSION, NODE_TYPE_ROUTER};
use raftfs_raft::{RaftTimings, MOUNT_TABLE_GROUP_ID};
use raftfs_router::server::{self, RouterConfig, RouterNode};
use raftfs_trust::PeerRole;

/// The name of the routers' Raft group (openraft's cluster name).
const ROUTER_GROUP_NAME: &str = "routers";

#[derive(Args, Debug)]
pub struct RouterArgs {
    #[command(subcommand)]
    cmd: RouterCmd,
}

#[derive(Subcommand, Debug)]
enum RouterCmd {
    /// Write the identity (VERSION) of a new router of a cluster.
    Format(RouterFormatArgs),
    /// Run one router.
    Run(RouterRunArgs),
}

#[derive(Args, Debug)]
pub struct RouterFormatArgs {
    /// The router's data directory (must not be formatted yet).
    #[arg(long)]
    dir: PathBuf,
    /// This router's id (a positive integer, never reused).
    #[arg(long)]
    id: u64,
    /// All initial routers: ID=HOST:PORT[,ID=HOST:PORT...]
    #[arg(long)]
    routers: String,
    /// The ClusterID of the nameservices this router federates.
    #[arg(long = "cluster-id")]
    cluster_id: String,
    /// The superuser, the only user who may change the mount table
    /// (default: the user running format).
    #[arg(long)]
    superuser: Option<String>,
    /// The cluster CA's directory: the router's certificate is issued from it into DIR/tls.
    #[arg(long = "ca-dir")]
    ca_dir: Option<PathBuf>,
    /// No certificate: the router must then run --insecure.
    #[arg(long, conflicts_with = "ca_dir")]
    insecure: bool,
}

#[derive(Args, Debug)]
pub struct RouterRunArgs {
    /// The router's data directory (formatted with `raftfs router format`).
    #[arg(long)]
    dir: PathBuf,
    /// This router's id, as formatted.
    #[arg(long)]
    id: u64,
    /// Address to listen on (default: this router's address in VERSION).
    #[arg(long)]
    listen: Option<SocketAddr>,
    /// Refuse to start unless the directory belongs to this ClusterID.
    #[arg(long = "cluster-id")]
    cluster_id: Option<String>,
    /// Raft heartbeat interval (default 100).
    #[arg(long = "heartbeat-ms")]
    heartbeat_ms: Option<u64>,
    /// Smallest election timeout (default 300).
    #[arg(long = "election-timeout-min-ms")]
    election_timeout_min_ms: Option<u64>,
    /// Largest election timeout (default 800).
    #[arg(long = "election-timeout-max-ms")]
    election_timeout_max_ms: Option<u64>,
    /// Take a snapshot of the mount table after this many log entries (default 10000).
    #[arg(long = "snapshot-logs")]
    snapshot_logs: Option<u64>,
    /// This router's credentials: ca.crt, node.crt, node.key (default: DIR/tls).
    #[arg(long = "tls-dir")]
    tls_dir: Option<PathBuf>,
    /// Serve and dial in plaintext, with no certificate checks. For trusted
    /// networks and comparisons only.
    #[arg(long)]
    insecure: bool,
    /// Client authentication: simple (default; the user name a call
    /// carries is trusted) or strong (a user certificate; needs TLS).
    #[arg(long)]
    auth: Option<String>,
    /// Refuse client calls (safe mode) after this long out of touch with
    /// the routers' quorum, rather than route by a table that may be stale.
    #[arg(long = "safe-mode-after-ms", default_value_t = server::DEFAULT_SAFE_MODE_AFTER_MS)]
    safe_mode_after_ms: u64,
    /// Serve this router's HTTP page here: /metrics (Prometheus); HTTPS
    /// with its certificate unless --insecure, readable as --auth says
    /// (RBF's dfs.federation.router.http-address). Default: no HTTP page.
    #[arg(long = "http-addr")]
    http_addr: Option<SocketAddr>,
    /// How often the routers start signing their delegation tokens with a
    /// new master key (default 86400000, HDFS's 1 day).
    #[arg(long = "delegation-key-update-interval-ms")]
    delegation_key_update_interval_ms: Option<u64>,
    /// A routers' delegation token can never be renewed past this long
    /// after it was issued (default 604800000, 7 days).
    #[arg(long = "delegation-token-max-lifetime-ms")]
    delegation_token_max_lifetime_ms: Option<u64>,
    /// A routers' delegation token expires this long after it was issued
    /// or renewed (default 86400000, 1 day).
    #[arg(long = "delegation-token-renew-interval-ms")]
    delegation_token_renew_interval_ms: Option<u64>,
    /// Serve Hadoop's own RPC (ClientNamenodeProtocol, IPC version 9) for
    /// the federated namespace here, so Hadoop clients (`hadoop fs`,
    /// hdfs-native) reach every nameservice through this router as
    /// through an RBF router (dfs.federation.router.rpc-address).
    /// Plaintext TCP, as Hadoop IPC is; under --auth simple the user a
    /// connection names is trusted, under --auth strong a connection
    /// authenticates with a delegation token of the routers (SASL TOKEN;
    /// `raftfs fetchdt --hadoop-token-file`) and acts as its owner
    /// (KERBEROS is not served). Default: not served.
    #[arg(long = "hadoop-rpc-addr")]
    hadoop_rpc_addr: Option<SocketAddr>,
}

/// Log entries between the mount table's snapshots by default (the table is small).
const DEFAULT_ROUTER_SNAPSHOT_LOGS: u64 = 10_000;

pub async fn run(a: RouterArgs) -> anyhow::Result<()> {
    match a.cmd {
        RouterCmd::Format(f) => format(f),
        RouterCmd::Run(r) => {
            crate::logging::init_tracing();
            serve(r).await
        }
    }
}

fn format(a: RouterFormatArgs) -> anyhow::Result<()> {
    let routers = crate::cli_format::parse_members(&a.routers)?;
    let Some(addr) = routers.get(&a.id) else {
        bail!("--id {} is not among --routers", a.id);
    };
    if a.ca_dir.is_none() && !a.insecure {
        bail!("a router needs the cluster's CA to get its certificate: --ca-dir CA (or --insecure)");
    }
    let v = VersionFile {
        layout_version: LAYOUT_VERSION,
        node_type: NODE_TYPE_ROUTER.into(),
        cluster_id: a.cluster_id.clone(),
        namespace_id: MOUNT_TABLE_GROUP_ID,
        block_pool_id: String::new(),
        nameservice: ROUTER_GROUP_NAME.into(),
        member_id: a.id,
        members: routers.clone(),
        superuser: a
            .superuser
            .clone()
            .unwrap_or_else(|| raftfs_client::Identity::resolve(None).user),
        ctime_ms: raftfs_trust::clock::wall_clock_ms(),
        join: false,
    };
    let ca = match &a.ca_dir {
        Some(d) => Some(crate::cli_cert::load_ca(d, &v.cluster_id)?),
        None => None,
    };
    layout::format(&a.dir, &v).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(ca) = &ca {
        crate::cli_cert::issue_node(ca, &a.dir, PeerRole::Router, a.id, addr)?;
    }
    println!(
        "Formatted {} as router {} of cluster {} (superuser {})",
        a.dir.display(),
        a.id,
        v.cluster_id,
        v.superuser
    );
    Ok(())
}

async fn serve(a: RouterRunArgs) -> anyhow::Result<()> {
    let dir = a.dir.clone();
    let id = a.id;
    let d = RaftTimings::default();
    let timings = RaftTimings {
        heartbeat_interval_ms: a.heartbeat_ms.unwrap_or(d.heartbeat_interval_ms),
        election_timeout_min_ms: a.election_timeout_min_ms.unwrap_or(d.election_timeout_min_ms),
        election_timeout_max_ms: a.election_timeout_max_ms.unwrap_or(d.election_timeout_max_ms),
        snapshot_logs_since_last: a.snapshot_logs.unwrap_or(DEFAULT_ROUTER_SNAPSHOT_LOGS),
        ..d
    };
    let version = layout::check(&dir, NODE_TYPE_ROUTER, id, a.cluster_id.as_deref()).map_err(anyhow::Error::msg)?;
    let listen = crate::cli_node::listen_addr(a.listen, &version, PeerRole::Router)?;
    let client_auth = crate::cli_node::client_auth(a.auth.as_deref(), a.insecure)?;
    let security = crate::cli_node::node_security(&dir, a.tls_dir.as_deref(), a.insecure, PeerRole::Router, &version)?;
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("listen on {listen}"))?;
    let http = crate::cli_node::bind_http(a.http_addr).await?;
    let hadoop_rpc = crate::cli_node::bind_hadoop_rpc(a.hadoop_rpc_addr).await?;
    let delegation = crate::cli_node::delegation_times(
        a.delegation_key_update_interval_ms,
        a.delegation_token_max_lifetime_ms,
        a.delegation_token_renew_interval_ms,
    )?;
    let cfg = RouterConfig {
        dir,
        router_id: id,
        timings,
        health: HealthConfig::default(),
        expect_cluster_id: a.cluster_id,
        security,
        client_auth,
        safe_mode_after_ms: a.safe_mode_after_ms,
        delegation,
    };
    let node = Arc::new(
        RouterNode::open(&cfg)
            .await
            .map_err(|e| anyhow::anyhow!("start router {id}: {e}"))?,
    );
    server::token_issuer::start_token_keeper(&node);
    tracing::info!(router = id, %listen, cluster = %version.cluster_id, tls = node.security.server.is_tls(), auth = %client_auth, "serving");
    crate::cli_node::serve_http(
        http,
        node.security.server.clone(),
        raftfs_router::server::http_pages::http_pages(node.clone()),
    );
    crate::cli_node::serve_hadoop_rpc(
        hadoop_rpc,
        Arc::new(raftfs_router::server::hadoop_namespace::RouterHadoopNamespace::new(
            node.clone(),
        )),
        client_auth,
        "the federated namespace",
    );
    tokio::select! {
        served = server::serve(node.clone(), listener, crate::cli_metaserver::shutdown_signal()) => {
            served.context("serve gRPC")?;
            tracing::info!(router = id, "shutting down");
            node.shutdown().await;
            Ok(())
        }
        why = node.raft_stopped() => {
            tracing::error!(router = id, reason = %why, "the Raft node stopped; exiting");
            eprintln!("raftfs router: router {id} stopped: {why}");
            std::process::exit(1);
        }
    }
}
