//! `raftfs format`: write the identity (VERSION) of new nameservice members.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};
use clap::Args;
use rand::Rng;

use raftfs_metaserver::server::format_member;
use raftfs_metaserver::server::layout::{VersionFile, LAYOUT_VERSION};

#[derive(Args, Debug, Clone)]
pub struct FormatArgs {
    /// The member's data directory (must not be formatted yet).
    #[arg(long)]
    pub dir: PathBuf,
    /// This member's id (a positive integer, never reused).
    #[arg(long = "member-id")]
    pub member_id: u64,
    /// All initial members: ID=HOST:PORT[,ID=HOST:PORT...]
    #[arg(long)]
    pub members: String,
    /// The nameservice's name.
    #[arg(long, default_value = "ns1")]
    pub nameservice: String,
    /// Join an existing cluster: its ClusterID (default: a new one).
    #[arg(long = "cluster-id")]
    pub cluster_id: Option<String>,
    /// The nameservice's NamespaceID; give the same to every member (default: new).
    #[arg(long = "namespace-id")]
    pub namespace_id: Option<u64>,
    /// The nameservice's BlockPoolID; give the same to every member (default: new).
    #[arg(long = "block-pool-id")]
    pub block_pool_id: Option<String>,
    /// The superuser (default: the user running format, as in HDFS).
    #[arg(long)]
    pub superuser: Option<String>,
    /// Format a member that joins a running nameservice (then `raftfs haadmin
    /// -addMember ID HOST:PORT`); needs --cluster-id, --namespace-id and
    /// --block-pool-id of that nameservice.
    #[arg(long)]
    pub join: bool,
    /// The cluster CA's directory. A new cluster's CA is made there
    /// (default: DIR/ca); a member of an existing cluster has its
    /// certificate issued from it. The member's credentials go to DIR/tls.
    #[arg(long = "ca-dir")]
    pub ca_dir: Option<PathBuf>,
    /// Make no CA and no certificate: the member must then run --insecure.
    #[arg(long, conflicts_with = "ca_dir")]
    pub insecure: bool,
}

/// Parse `1=h:p,2=h:p`.
pub fn parse_members(s: &str) -> anyhow::Result<BTreeMap<u64, String>> {
    let mut m = BTreeMap::new();
    for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (id, addr) = part
            .split_once('=')
            .with_context(|| format!("member {part:?} is not ID=HOST:PORT"))?;
        let id: u64 = id
            .parse()
            .with_context(|| format!("member id {id:?} is not a positive integer"))?;
        if id == 0 {
            bail!("member id 0 is reserved");
        }
        let (host, port) = addr
            .rsplit_once(':')
            .with_context(|| format!("member address {addr:?} is not HOST:PORT"))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            bail!("member address {addr:?} is not HOST:PORT");
        }
        if m.insert(id, addr.to_string()).is_some() {
            bail!("member id {id} given twice");
        }
    }
    if m.is_empty() {
        bail!("--members lists no member");
    }
    Ok(m)
}

/// New HDFS-style identities: `CID-<uuid>`, a random NamespaceID, `BP-<n>-<ip>-<ms>`.
pub fn new_ids(now_ms: i64) -> (String, u64, String) {
    let cid = format!("CID-{}", uuid::Uuid::new_v4());
    let nsid: u64 = rand::thread_rng().gen_range(1..i32::MAX as u64);
    let bp = format!(
        "BP-{}-127.0.0.1-{now_ms}",
        rand::thread_rng().gen_range(1..i32::MAX as u64)
    );
    (cid, nsid, bp)
}

pub fn version_for(a: &FormatArgs, members: &BTreeMap<u64, String>, now_ms: i64) -> VersionFile {
    let (cid, nsid, bp) = new_ids(now_ms);
    VersionFile {
        layout_version: LAYOUT_VERSION,
        node_type: raftfs_metaserver::server::layout::NODE_TYPE_METASERVER.into(),
        cluster_id: a.cluster_id.clone().unwrap_or(cid),
        namespace_id: a.namespace_id.unwrap_or(nsid),
        block_pool_id: a.block_pool_id.clone().unwrap_or(bp),
        nameservice: a.nameservice.clone(),
        member_id: a.member_id,
        members: members.clone(),
        superuser: a
            .superuser
            .clone()
            .unwrap_or_else(|| raftfs_client::Identity::resolve(None).user),
        ctime_ms: now_ms,
        join: a.join,
    }
}

pub fn run(a: FormatArgs) -> anyhow::Result<()> {
    let members = parse_members(&a.members)?;
    if !members.contains_key(&a.member_id) {
        bail!("--member-id {} is not among --members", a.member_id);
    }
    if a.namespace_id == Some(raftfs_raft::MOUNT_TABLE_GROUP_ID) {
        bail!("--namespace-id 0 is reserved (the routers' mount-table group)");
    }
    if a.join && (a.cluster_id.is_none() || a.namespace_id.is_none() || a.block_pool_id.is_none()) {
        bail!("--join needs the nameservice's --cluster-id, --namespace-id and --block-pool-id");
    }
    if a.cluster_id.is_some() && a.ca_dir.is_none() && !a.insecure {
        bail!(
            "a member of an existing cluster needs that cluster's CA to get its certificate: --ca-dir CA \
             (or --insecure for a cluster run without TLS)"
        );
    }
    let v = version_for(&a, &members, raftfs_metaserver::server::member::now_ms());
    // The CA first: a cluster that cannot have one is not formatted.
    let ca_dir = match (&a.ca_dir, a.insecure) {
        (_, true) => None,
        (Some(d), false) => Some(std::path::absolute(d)?),
        (None, false) => Some(std::path::absolute(a.dir.join("ca"))?),
    };
    let ca = match &ca_dir {
        Some(d) if a.cluster_id.is_none() => Some(crate::cli_cert::ensure_ca(d, &v.cluster_id)?),
        Some(d) => Some(crate::cli_cert::load_ca(d, &v.cluster_id)?),
        None => None,
    };
    format_member(&a.dir, &v).map_err(|e| anyhow::anyhow!("{e}"))?;
    if let Some(ca) = &ca {
        crate::cli_cert::issue_member(ca, &a.dir, a.member_id, &members[&a.member_id])?;
    }
    println!(
        "Formatted {} as member {} of nameservice {}",
        a.dir.display(),
        v.member_id,
        v.nameservice
    );
    println!("  ClusterID   = {}", v.cluster_id);
    println!("  NamespaceID = {}", v.namespace_id);
    println!("  BlockPoolID = {}", v.block_pool_id);
    let ca_arg = match &ca {
        Some(ca) => {
            println!(
                "  TLS         = CA in {} (keep it off the nodes in production); this member's credentials in {}",
                ca.dir().display(),
                a.dir.join("tls").display()
            );
            format!(" --ca-dir {}", ca.dir().display())
        }
        None => {
            println!("  TLS         = none (--insecure): run the member with --insecure");
            " --insecure".to_string()
        }
    };
    println!(
        "Format the other members with: --cluster-id {} --namespace-id {} --block-pool-id {}{ca_arg}",
        v.cluster_id, v.namespace_id, v.block_pool_id
    );
    Ok(())
}
