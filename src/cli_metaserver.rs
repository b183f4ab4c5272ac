//! `raftfs metaserver`: run one member of a nameservice until SIGINT/SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use serde::Deserialize;

use crate::cli_node;

use raftfs_metaserver::blocks::BlockManagerConfig;
use raftfs_metaserver::exec::ExecMode;
use raftfs_metaserver::server::health::HealthConfig;
use raftfs_metaserver::server::{self, layout, Member, MemberConfig, RaftTimings, StoreKind};
use raftfs_trust::{BlockTokenTimes, PeerRole};

/// The audit log's file in a member's directory, unless `--audit-log` names another.
pub const AUDIT_LOG_FILE: &str = "audit.log";

#[derive(Args, Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct MetaserverArgs {
    /// A JSON file with any of these options (flags given on the command line win).
    #[arg(long)]
    #[serde(skip)]
    pub config: Option<PathBuf>,
    /// The member's data directory (formatted with `raftfs format`).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// This member's id, as formatted.
    #[arg(long)]
    pub id: Option<u64>,
    /// Address to listen on (default: this member's address in VERSION).
    #[arg(long)]
    pub listen: Option<SocketAddr>,
    /// Where the namespace lives: rocksdb (default) or memory.
    #[arg(long)]
    pub store: Option<String>,
    /// How writes run: leader (default; planned on the leader under
    /// fine-grained locks, the log carries deltas) or apply (the log carries
    /// the ops and every member plans them; the baseline).
    #[arg(long)]
    pub exec: Option<String>,
    /// Refuse to start unless the directory belongs to this ClusterID.
    #[arg(long = "cluster-id")]
    pub cluster_id: Option<String>,
    /// Raft heartbeat interval (default 100).
    #[arg(long = "heartbeat-ms")]
    pub heartbeat_ms: Option<u64>,
    /// Smallest election timeout (default 300).
    #[arg(long = "election-timeout-min-ms")]
    pub election_timeout_min_ms: Option<u64>,
    /// Largest election timeout (default 800).
    #[arg(long = "election-timeout-max-ms")]
    pub election_timeout_max_ms: Option<u64>,
    /// Take a snapshot after this many log entries (default 100000).
    #[arg(long = "snapshot-logs")]
    pub snapshot_logs: Option<u64>,
    /// Log entries kept behind a snapshot (default 1000).
    #[arg(long = "snapshot-keep-logs")]
    pub snapshot_keep_logs: Option<u64>,
    /// Most client ops packed into one log entry (group commit; default 256; 1 = one entry per op).
    #[arg(long = "max-ops-per-entry")]
    pub max_ops_per_entry: Option<usize>,
    /// Also take a snapshot this often if entries were applied since the last (default 3600; 0 = never).
    #[arg(long = "snapshot-interval-secs")]
    pub snapshot_interval_secs: Option<u64>,
    /// Unhealthy below this much free space in the data directory's file system (default 100).
    #[arg(long = "min-free-disk-mb")]
    pub min_free_disk_mb: Option<u64>,
    /// Unhealthy after a Raft log fsync slower than this (default 5000).
    #[arg(long = "max-fsync-ms")]
    pub max_fsync_ms: Option<u64>,
    /// A DataNode silent this long is dead and its blocks are re-replicated (default 630000, HDFS's 10.5 min).
    #[arg(long = "datanode-dead-ms")]
    pub datanode_dead_ms: Option<u64>,
    /// How often the replication monitor runs (default 3000).
    #[arg(long = "replication-interval-ms")]
    pub replication_interval_ms: Option<u64>,
    /// A scheduled re-replication not done after this long is scheduled again (default 300000).
    #[arg(long = "pending-replication-timeout-ms")]
    pub pending_replication_timeout_ms: Option<u64>,
    /// Leave safe mode once this share of blocks has a replica reported (default 0.999).
    #[arg(long = "safemode-threshold")]
    pub safemode_threshold: Option<f64>,
    /// ... and this long after reaching it (default 5000).
    #[arg(long = "safemode-extension-ms")]
    pub safemode_extension_ms: Option<u64>,
    /// Recover the files of a writer that has not renewed its lease for this long (default 1200000, 20 min).
    #[arg(long = "lease-hard-limit-ms")]
    pub lease_hard_limit_ms: Option<u64>,
    /// Callers' groups for the users it names: a JSON file of user name to
    /// a list of group names (reread by `dfsadmin -refreshUserToGroupsMappings`).
    /// Other users get this host's groups for them. Groups a client claims
    /// are never used.
    #[arg(long = "group-mapping")]
    pub group_mapping: Option<PathBuf>,
    /// This member's credentials: ca.crt, node.crt, node.key (default: DIR/tls,
    /// where `raftfs format` puts them).
    #[arg(long = "tls-dir")]
    pub tls_dir: Option<PathBuf>,
    /// Serve and dial in plaintext, with no certificate checks: anyone who
    /// reaches the port can act as a member or a DataNode. For trusted
    /// networks and comparisons only.
    #[arg(long)]
    #[serde(default)]
    pub insecure: bool,
    /// Client authentication: simple (default; the user name a call
    /// carries is trusted, as HDFS's simple auth, for trusted networks) or
    /// strong (a call needs a user certificate of this cluster, and acts as
    /// the user it names; needs TLS).
    #[arg(long)]
    pub auth: Option<String>,
    /// How long a block access token lives (default 36000000, HDFS's 600 min).
    /// Tokens are minted and checked whenever the cluster runs TLS.
    #[arg(long = "block-token-lifetime-ms")]
    pub block_token_lifetime_ms: Option<u64>,
    /// How clients reach DataNodes (HDFS `dfs.data.transfer.protection`):
    /// authentication (default; block data in plaintext, each request
    /// proving it holds a block token) or privacy (clients' block data in
    /// TLS, like `dfs.encrypt.data.transfer`). Signed into every block token;
    /// DataNodes talk to each other in TLS at either level. Every member of
    /// a nameservice should say the same.
    #[arg(long = "data-protection")]
    pub data_protection: Option<String>,
    /// How often this member starts signing block tokens with a new key (default 36000000, HDFS's 600 min).
    #[arg(long = "block-key-update-interval-ms")]
    pub block_key_update_interval_ms: Option<u64>,
    /// How often the leader starts signing delegation tokens with a new master key (default 86400000, HDFS's 1 day).
    #[arg(long = "delegation-key-update-interval-ms")]
    pub delegation_key_update_interval_ms: Option<u64>,
    /// A delegation token can never be renewed past this long after it was issued (default 604800000, 7 days).
    #[arg(long = "delegation-token-max-lifetime-ms")]
    pub delegation_token_max_lifetime_ms: Option<u64>,
    /// A delegation token expires this long after it was issued or renewed (default 86400000, 1 day).
    #[arg(long = "delegation-token-renew-interval-ms")]
    pub delegation_token_renew_interval_ms: Option<u64>,
    /// The audit log: one line per client operation this member executes,
    /// in HDFS's hdfs-audit.log format (default DIR/audit.log; off: none).
    #[arg(long = "audit-log", value_name = "PATH|off")]
    pub audit_log: Option<String>,
    /// Serve this member's HTTP pages here: /metrics (Prometheus), /jmx
    /// (Hadoop's beans) and WebHDFS (/webhdfs/v1, on the leader); HTTPS
    /// with the member's certificate unless --insecure, callers
    /// authenticated as --auth says (HDFS's dfs.namenode.http-address).
    /// Default: no HTTP pages.
    #[arg(long = "http-addr")]
    pub http_addr: Option<SocketAddr>,
    /// Serve Hadoop's own RPC (ClientNamenodeProtocol, IPC version 9)
    /// here, so Hadoop clients (`hadoop fs`, hdfs-native) reach this
    /// member as a NameNode (HDFS's dfs.namenode.rpc-address). Plaintext
    /// TCP, as Hadoop IPC is; under --auth simple the user a connection
    /// names is trusted, under --auth strong a connection authenticates
    /// with a delegation token of this nameservice (SASL TOKEN; `raftfs
    /// fetchdt --hadoop-token-file`) and acts as its owner (KERBEROS is
    /// not served). Default: not served.
    #[arg(long = "hadoop-rpc-addr")]
    pub hadoop_rpc_addr: Option<SocketAddr>,
}

impl MetaserverArgs {
    /// Fill options not given on the command line from `--config`.
    fn merged(self) -> anyhow::Result<MetaserverArgs> {
        let Some(path) = &self.config else { return Ok(self) };
        let raw = std::fs::read(path).with_context(|| format!("read config {}", path.display()))?;
        let f: MetaserverArgs =
            serde_json::from_slice(&raw).with_context(|| format!("parse config {}", path.display()))?;
        Ok(MetaserverArgs {
            config: self.config.clone(),
            dir: self.dir.or(f.dir),
            id: self.id.or(f.id),
            listen: self.listen.or(f.listen),
            store: self.store.or(f.store),
            exec: self.exec.or(f.exec),
            cluster_id: self.cluster_id.or(f.cluster_id),
            heartbeat_ms: self.heartbeat_ms.or(f.heartbeat_ms),
            election_timeout_min_ms: self.election_timeout_min_ms.or(f.election_timeout_min_ms),
            election_timeout_max_ms: self.election_timeout_max_ms.or(f.election_timeout_max_ms),
            snapshot_logs: self.snapshot_logs.or(f.snapshot_logs),
            snapshot_keep_logs: self.snapshot_keep_logs.or(f.snapshot_keep_logs),
            max_ops_per_entry: self.max_ops_per_entry.or(f.max_ops_per_entry),
            snapshot_interval_secs: self.snapshot_interval_secs.or(f.snapshot_interval_secs),
            min_free_disk_mb: self.min_free_disk_mb.or(f.min_free_disk_mb),
            max_fsync_ms: self.max_fsync_ms.or(f.max_fsync_ms),
            datanode_dead_ms: self.datanode_dead_ms.or(f.datanode_dead_ms),
            replication_interval_ms: self.replication_interval_ms.or(f.replication_interval_ms),
            pending_replication_timeout_ms: self.pending_replication_timeout_ms.or(f.pending_replication_timeout_ms),
            safemode_threshold: self.safemode_threshold.or(f.safemode_threshold),
            safemode_extension_ms: self.safemode_extension_ms.or(f.safemode_extension_ms),
            lease_hard_limit_ms: self.lease_hard_limit_ms.or(f.lease_hard_limit_ms),
            group_mapping: self.group_mapping.or(f.group_mapping),
            tls_dir: self.tls_dir.or(f.tls_dir),
            insecure: self.insecure || f.insecure,
            auth: self.auth.or(f.auth),
            block_token_lifetime_ms: self.block_token_lifetime_ms.or(f.block_token_lifetime_ms),
            data_protection: self.data_protection.or(f.data_protection),
            block_key_update_interval_ms: self.block_key_update_interval_ms.or(f.block_key_update_interval_ms),
            delegation_key_update_interval_ms: self
                .delegation_key_update_interval_ms
                .or(f.delegation_key_update_interval_ms),
            delegation_token_max_lifetime_ms: self
                .delegation_token_max_lifetime_ms
                .or(f.delegation_token_max_lifetime_ms),
            delegation_token_renew_interval_ms: self
                .delegation_token_renew_interval_ms
                .or(f.delegation_token_renew_interval_ms),
            audit_log: self.audit_log.or(f.audit_log),
            http_addr: self.http_addr.or(f.http_addr),
            hadoop_rpc_addr: self.hadoop_rpc_addr.or(f.hadoop_rpc_addr),
        })
    }
}

pub async fn run(args: MetaserverArgs) -> anyhow::Result<()> {
    let a = args.merged()?;
    let dir = a.dir.clone().context("--dir is required")?;
    let audit_path = match a.audit_log.as_deref() {
        Some("off") => None,
        Some("") => anyhow::bail!("--audit-log needs a file path, or off"),
        Some(p) => Some(PathBuf::from(p)),
        None => Some(dir.join(AUDIT_LOG_FILE)),
    };
    let id = a.id.context("--id is required")?;
    let store: StoreKind = a
        .store
        .as_deref()
        .unwrap_or("rocksdb")
        .parse()
        .map_err(anyhow::Error::msg)?;
    let exec: ExecMode = a
        .exec
        .as_deref()
        .unwrap_or("leader")
        .parse()
        .map_err(anyhow::Error::msg)?;
    let d = RaftTimings::default();
    let timings = RaftTimings {
        heartbeat_interval_ms: a.heartbeat_ms.unwrap_or(d.heartbeat_interval_ms),
        election_timeout_min_ms: a.election_timeout_min_ms.unwrap_or(d.election_timeout_min_ms),
        election_timeout_max_ms: a.election_timeout_max_ms.unwrap_or(d.election_timeout_max_ms),
        snapshot_logs_since_last: a.snapshot_logs.unwrap_or(d.snapshot_logs_since_last),
        logs_kept_after_snapshot: a.snapshot_keep_logs.unwrap_or(d.logs_kept_after_snapshot),
        snapshot_interval_secs: a.snapshot_interval_secs.unwrap_or(d.snapshot_interval_secs),
    };
    let hd = HealthConfig::default();
    let health = HealthConfig {
        min_free_disk_bytes: a
            .min_free_disk_mb
            .map_or(hd.min_free_disk_bytes, |mb| mb.saturating_mul(1 << 20)),
        max_fsync_ms: a.max_fsync_ms.unwrap_or(hd.max_fsync_ms),
    };
    let bd = BlockManagerConfig::default();
    let threshold = a.safemode_threshold.unwrap_or(bd.safemode_threshold);
    if !(0.0..=1.0).contains(&threshold) {
        anyhow::bail!("--safemode-threshold must be between 0 and 1, not {threshold}");
    }
    let blocks = BlockManagerConfig {
        dead_after_ms: a.datanode_dead_ms.unwrap_or(bd.dead_after_ms),
        monitor_interval_ms: a.replication_interval_ms.unwrap_or(bd.monitor_interval_ms).max(10),
        pending_replication_timeout_ms: a
            .pending_replication_timeout_ms
            .unwrap_or(bd.pending_replication_timeout_ms),
        safemode_threshold: threshold,
        safemode_extension_ms: a.safemode_extension_ms.unwrap_or(bd.safemode_extension_ms),
        block_tokens: BlockTokenTimes {
            lifetime_ms: a.block_token_lifetime_ms.unwrap_or(bd.block_tokens.lifetime_ms),
            key_update_interval_ms: a
                .block_key_update_interval_ms
                .unwrap_or(bd.block_tokens.key_update_interval_ms),
        },
        data_protection: match &a.data_protection {
            Some(p) => raftfs_proto::DataProtection::parse(p).map_err(|e| anyhow::anyhow!("--data-protection: {e}"))?,
            None => bd.data_protection,
        },
    };
    blocks.block_tokens.check().map_err(anyhow::Error::msg)?;
    let delegation = crate::cli_node::delegation_times(
        a.delegation_key_update_interval_ms,
        a.delegation_token_max_lifetime_ms,
        a.delegation_token_renew_interval_ms,
    )?;
    let version =
        layout::check(&dir, layout::NODE_TYPE_METASERVER, id, a.cluster_id.as_deref()).map_err(anyhow::Error::msg)?;
    // Once the arguments and the directory are known good (their errors
    // come first). Kept for the life of the process: dropping it writes
    // the audit lines still buffered.
    let _audit_writer = crate::logging::init_tracing_with_audit(audit_path.as_deref())?;
    let listen = cli_node::listen_addr(a.listen, &version, PeerRole::Member)?;
    let client_auth = cli_node::client_auth(a.auth.as_deref(), a.insecure)?;
    let security = cli_node::node_security(&dir, a.tls_dir.as_deref(), a.insecure, PeerRole::Member, &version)?;
    let listener = server::bind(listen)
        .await
        .with_context(|| format!("listen on {listen}"))?;
    let http = cli_node::bind_http(a.http_addr).await?;
    let hadoop_rpc = cli_node::bind_hadoop_rpc(a.hadoop_rpc_addr).await?;
    let blocks_protection = blocks.data_protection;
    let cfg = MemberConfig {
        dir: dir.clone(),
        member_id: id,
        store,
        timings,
        expect_cluster_id: a.cluster_id,
        max_ops_per_entry: a
            .max_ops_per_entry
            .unwrap_or(raftfs_metaserver::exec::batcher::MAX_OPS_PER_ENTRY),
        exec,
        health,
        blocks,
        lease_hard_limit_ms: a.lease_hard_limit_ms.unwrap_or(server::DEFAULT_LEASE_HARD_LIMIT_MS),
        group_mapping: a.group_mapping,
        security,
        client_auth,
        delegation,
        audit: audit_path.is_some(),
    };
    let member = Arc::new(
        Member::open(&cfg)
            .await
            .map_err(|e| anyhow::anyhow!("start member {id}: {e}"))?,
    );
    tracing::info!(member = id, %listen, store = ?store, nameservice = %version.nameservice, cluster = %version.cluster_id, tls = member.security.server.is_tls(), auth = %client_auth, block_tokens = member.block_access.enabled(), data_protection = %blocks_protection, "serving");
    cli_node::serve_http(
        http,
        member.security.server.clone(),
        raftfs_metaserver::server::http_pages::http_pages(member.clone()),
    );
    cli_node::serve_hadoop_rpc(
        hadoop_rpc,
        Arc::new(raftfs_metaserver::server::hadoop_namespace::MemberHadoopNamespace::new(
            member.clone(),
        )),
        client_auth,
        "this nameservice",
    );
    let serving = server::serve(member.clone(), listener, shutdown_signal());
    tokio::select! {
        served = serving => {
            served.context("serve gRPC")?;
            tracing::info!(member = id, "shutting down");
            member.shutdown().await;
            Ok(())
        }
        why = member.raft_stopped() => {
            // Nothing here can be served any more, and a graceful stop would
            // wait for every client's call stream to end: exit now. What the
            // member acknowledged is durable; the rest is as after kill -9.
            tracing::error!(member = id, reason = %why, "the Raft node stopped: this member can no longer keep a durable log; exiting (restart it once the cause is fixed)");
            eprintln!("raftfs metaserver: member {id} stopped: {why}");
            std::process::exit(1);
        }
    }
}

pub async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = async { match term.as_mut() { Some(t) => { t.recv().await; } None => std::future::pending::<()>().await } } => {}
    }
}
