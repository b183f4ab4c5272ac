//! `raftfs datanode`: run one DataNode until SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;

use raftfs_datanode::{Datanode, DatanodeConfig};
use raftfs_trust::{NodeCredentials, NodeSecurity, PeerRole};

#[derive(Args, Debug, Clone)]
pub struct DatanodeArgs {
    /// A data directory (repeat for several disks; each is a volume).
    #[arg(long = "dir", required = true)]
    pub dirs: Vec<PathBuf>,
    /// Address of the data transfer service (HDFS's default port is 9866).
    /// The same port answers Hadoop IPC (ClientDatanodeProtocol: how much
    /// of a block being written a Hadoop client may read), as HDFS's
    /// dfs.datanode.ipc.address does; Hadoop clients learn it as the
    /// location's ipcPort.
    #[arg(long, default_value = "127.0.0.1:9866")]
    pub listen: SocketAddr,
    /// HOST:PORT clients use to reach this node (default: --listen).
    #[arg(long)]
    pub advertise: Option<String>,
    /// Host name reported to metaservers (default: the host of --advertise).
    #[arg(long)]
    pub hostname: Option<String>,
    /// A nameservice to serve, as raftfs://host:port,... (repeat for each nameservice).
    #[arg(long = "nameservice", required_unless_present = "router", conflicts_with = "router")]
    pub nameservices: Vec<String>,
    /// Serve every nameservice the routers at raftfs://host:port,... have
    /// registered, and follow them as nameservices are added
    /// (dfsadmin -addNameservice) and removed (-removeNameservice, which
    /// deletes their block pools here), without a restart.
    #[arg(long)]
    pub router: Option<String>,
    /// Heartbeat interval (HDFS dfs.heartbeat.interval, 3 s).
    #[arg(long = "heartbeat-ms", default_value_t = 3_000)]
    pub heartbeat_ms: u64,
    /// Full block report interval (HDFS dfs.blockreport.intervalMsec, 6 h).
    #[arg(long = "block-report-interval-ms", default_value_t = 21_600_000)]
    pub block_report_interval_ms: u64,
    /// Space kept free on every data directory (HDFS dfs.datanode.du.reserved).
    #[arg(long = "reserved-mb", default_value_t = 0)]
    pub reserved_mb: u64,
    /// Timeout of one call to a metaserver.
    #[arg(long = "rpc-timeout-ms", default_value_t = 10_000)]
    pub rpc_timeout_ms: u64,
    /// Check every replica's checksums this often (HDFS: 3 weeks); 0 = never.
    #[arg(long = "scan-period-ms", default_value_t = 1_814_400_000)]
    pub scan_period_ms: u64,
    /// Unix socket for short-circuit reads by clients on this host (HDFS dfs.domain.socket.path).
    #[arg(long = "domain-socket")]
    pub domain_socket: Option<PathBuf>,
    /// OS users (numeric uids, comma-separated) whose processes may read
    /// replicas short-circuit through --domain-socket (HDFS
    /// dfs.block.local-path-access.user); default: this DataNode's own user.
    /// Others read through the DataNode.
    #[arg(long = "short-circuit-uids", value_delimiter = ',')]
    pub short_circuit_uids: Option<Vec<u32>>,
    /// Volumes that may fail before the DataNode stops offering service and
    /// exits (HDFS dfs.datanode.failed.volumes.tolerated); default: it runs
    /// as long as one volume works (HDFS's -1). The replicas of a failed
    /// volume are reported lost either way.
    #[arg(long = "failed-volumes-tolerated")]
    pub failed_volumes_tolerated: Option<u32>,
    /// This DataNode's credentials: ca.crt, node.crt, node.key (from
    /// `raftfs cert issue --role datanode`). Required unless --insecure.
    #[arg(long = "tls-dir")]
    pub tls_dir: Option<PathBuf>,
    /// Serve and dial in plaintext, with no certificate checks (trusted
    /// networks and comparisons only).
    #[arg(long, conflicts_with = "tls_dir")]
    pub insecure: bool,
    /// Serve this DataNode's HTTP endpoint here: /metrics (Prometheus) and
    /// WebHDFS's data side (the OPEN, CREATE, APPEND and GETFILECHECKSUM
    /// that members and routers redirect here; the address is registered
    /// with every nameservice); HTTPS with its certificate unless
    /// --insecure (HDFS's dfs.datanode.http.address). Default: none.
    #[arg(long = "http-addr")]
    pub http_addr: Option<SocketAddr>,
    /// Serve Hadoop's DataTransferProtocol (version 28: READ_BLOCK,
    /// WRITE_BLOCK with pipelines and their recovery, BLOCK_CHECKSUM,
    /// TRANSFER_BLOCK) here, so Hadoop clients read and write blocks as
    /// with an HDFS DataNode (HDFS's dfs.datanode.address); the address is
    /// registered with every nameservice. Plaintext TCP, as Hadoop's data transfer is; block
    /// access tokens are checked. Default: not served.
    #[arg(long = "hadoop-xfer-addr")]
    pub hadoop_xfer_addr: Option<SocketAddr>,
    /// Who may use the HTTP endpoint: simple (default; anyone who reaches
    /// the port, as HDFS's simple HTTP authentication; WebHDFS acts as the
    /// request's user.name) or strong (/metrics for a caller with a
    /// certificate of this cluster, WebHDFS only with a delegation token,
    /// which redirects carry; needs TLS). Block data is guarded by block
    /// access tokens either way.
    #[arg(long)]
    pub auth: Option<String>,
}

/// The DataNode's TLS, from --tls-dir or --insecure.
fn security(a: &DatanodeArgs) -> anyhow::Result<NodeSecurity> {
    if a.insecure {
        return Ok(NodeSecurity::insecure());
    }
    let dir = a.tls_dir.as_ref().context(
        "a DataNode needs its credentials: --tls-dir DIR (made by `raftfs cert issue --role datanode`), or --insecure on a trusted network",
    )?;
    let creds = NodeCredentials::load(dir).map_err(|e| anyhow::anyhow!("this DataNode's TLS credentials: {e}"))?;
    if creds.identity().role != PeerRole::Datanode {
        bail!(
            "{} holds the certificate of {}, not of a DataNode",
            dir.display(),
            creds.identity()
        );
    }
    Ok(NodeSecurity::tls(&creds))
}

pub fn config(a: &DatanodeArgs) -> anyhow::Result<DatanodeConfig> {
    let advertise = a.advertise.clone().unwrap_or_else(|| {
        if a.listen.ip().is_unspecified() {
            format!("127.0.0.1:{}", a.listen.port())
        } else {
            a.listen.to_string()
        }
    });
    raftfs_proto::admin::check_member_addr(&advertise).map_err(anyhow::Error::msg)?;
    let host = advertise
        .rsplit_once(':')
        .map(|(h, _)| h.to_string())
        .unwrap_or_default();
    let mut nameservices = Vec::new();
    for ns in &a.nameservices {
        let members = raftfs_client::uri::parse_fs(ns).map_err(|e| anyhow::anyhow!("--nameservice {ns}: {e}"))?;
        nameservices.push(members);
    }
    let routers = match &a.router {
        Some(r) => raftfs_client::uri::parse_fs(r).map_err(|e| anyhow::anyhow!("--router {r}: {e}"))?,
        None => Vec::new(),
    };
    if a.heartbeat_ms == 0 || a.block_report_interval_ms == 0 {
        bail!("--heartbeat-ms and --block-report-interval-ms must be positive");
    }
    Ok(DatanodeConfig {
        dirs: a.dirs.clone(),
        listen: a.listen.to_string(),
        advertise,
        http_advertise: None,        // known once the HTTP listener is bound (see `run`)
        hadoop_xfer_advertise: None, // likewise
        hostname: a.hostname.clone().unwrap_or(host),
        nameservices,
        routers,
        heartbeat_ms: a.heartbeat_ms,
        block_report_interval_ms: a.block_report_interval_ms,
        reserved_bytes: a.reserved_mb.saturating_mul(1 << 20),
        rpc_timeout_ms: a.rpc_timeout_ms,
        scan_period_ms: a.scan_period_ms,
        domain_socket: a.domain_socket.clone(),
        short_circuit_uids: a.short_circuit_uids.clone(),
        security: security(a)?,
        failed_volumes_tolerated: a.failed_volumes_tolerated,
    })
}

/// HOST:PORT for others to reach a listener (HTTP, Hadoop data transfer)
/// bound at `bound`: its own address, or, bound to every interface, the
/// host the data service advertises (`advertise`) with its port.
fn http_advertise(advertise: &str, bound: SocketAddr) -> String {
    if !bound.ip().is_unspecified() {
        return bound.to_string();
    }
    let host = advertise.rsplit_once(':').map(|(h, _)| h).unwrap_or("127.0.0.1");
    format!("{host}:{}", bound.port())
}

pub async fn run(a: DatanodeArgs) -> anyhow::Result<()> {
    let mut cfg = config(&a)?;
    let auth = crate::cli_node::client_auth(a.auth.as_deref(), a.insecure)?;
    let listener = tokio::net::TcpListener::bind(a.listen)
        .await
        .with_context(|| format!("listen on {}", a.listen))?;
    let http = crate::cli_node::bind_http(a.http_addr).await?;
    if let Some(l) = &http {
        let bound = l.local_addr().context("the HTTP listener's address")?;
        cfg.http_advertise = Some(http_advertise(&cfg.advertise, bound));
    }
    let hadoop_xfer = match a.hadoop_xfer_addr {
        None => None,
        Some(addr) => {
            let l = tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("listen for Hadoop data transfer on {addr} (--hadoop-xfer-addr)"))?;
            let bound = l.local_addr().context("the Hadoop data transfer listener's address")?;
            cfg.hadoop_xfer_advertise = Some(http_advertise(&cfg.advertise, bound));
            Some(l)
        }
    };
    let dn = Datanode::start(cfg.clone(), listener)
        .await
        .map_err(|e| anyhow::anyhow!("start DataNode: {e}"))?;
    crate::cli_node::serve_http(
        http,
        cfg.security.server.clone(),
        raftfs_datanode::http_pages::http_pages(dn.node.clone(), auth),
    );
    if let Some(l) = hadoop_xfer {
        raftfs_datanode::hadoop_xfer::serve(dn.node.clone(), l);
    }
    tracing::info!(listen = %cfg.listen, advertise = %cfg.advertise, nameservices = cfg.nameservices.len(), routers = cfg.routers.len(), "DataNode serving");
    let node = dn.node.clone();
    tokio::select! {
        _ = crate::cli_metaserver::shutdown_signal() => {
            tracing::info!("shutting down");
            dn.shutdown();
            Ok(())
        }
        why = node.wait_volumes_exhausted() => {
            tracing::error!(reason = %why, "too many failed volumes: this DataNode stops offering service; exiting (replace the disks and restart it)");
            dn.shutdown();
            bail!("too many failed volumes: {why}")
        }
    }
}
