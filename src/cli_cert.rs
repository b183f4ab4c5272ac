//! `raftfs cert`: issue the certificates of a cluster's nodes from its CA.
//!
//! `raftfs format` makes the CA of a new cluster and its member's
//! certificate; this command issues the rest (other members formatted
//! elsewhere, DataNodes, routers, users) and shows what a credentials
//! directory holds.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, Subcommand};

use raftfs_trust::{ClusterCa, NodeCredentials, PeerIdentity, PeerRole, DEFAULT_CERT_VALIDITY_DAYS};

#[derive(Args, Debug, Clone)]
pub struct CertArgs {
    #[command(subcommand)]
    pub cmd: CertCmd,
}

#[derive(Subcommand, Debug, Clone)]
pub enum CertCmd {
    /// Issue a certificate and key for one node (or user) into a credentials directory.
    Issue {
        /// The cluster CA's directory (ca.crt and ca.key; made by `raftfs format`).
        #[arg(long = "ca-dir")]
        ca_dir: PathBuf,
        /// member, datanode, router or user.
        #[arg(long)]
        role: String,
        /// Member id, DataNode name, router name or user name.
        #[arg(long)]
        id: String,
        /// Host names or IP addresses to name too, for tools that check them (repeatable).
        #[arg(long = "host")]
        hosts: Vec<String>,
        /// Days the certificate is valid.
        #[arg(long, default_value_t = DEFAULT_CERT_VALIDITY_DAYS)]
        days: i64,
        /// Where to write ca.crt, node.crt and node.key (replaced if present).
        #[arg(long)]
        out: PathBuf,
    },
    /// Say whose certificate a credentials directory holds.
    Show {
        /// A credentials directory (ca.crt, node.crt, node.key).
        dir: PathBuf,
    },
}

pub fn run(a: CertArgs) -> anyhow::Result<()> {
    match a.cmd {
        CertCmd::Issue {
            ca_dir,
            role,
            id,
            hosts,
            days,
            out,
        } => {
            let role: PeerRole = role.parse()?;
            let ca = ClusterCa::load(&ca_dir)?;
            let who = ca.issue_into(&out, role, &id, &hosts, days)?;
            println!(
                "Issued the certificate of {who} into {} (valid {days} days)",
                out.display()
            );
            Ok(())
        }
        CertCmd::Show { dir } => {
            let creds = NodeCredentials::load(&dir)?;
            println!("{}: {}", dir.display(), creds.identity());
            Ok(())
        }
    }
}

/// The CA in `dir`, made for `cluster_id` if `dir` holds none yet.
pub fn ensure_ca(dir: &Path, cluster_id: &str) -> anyhow::Result<ClusterCa> {
    if dir.join(raftfs_trust::CA_KEY_FILE).exists() {
        load_ca(dir, cluster_id)
    } else {
        Ok(ClusterCa::create(dir, cluster_id)?)
    }
}

/// The CA in `dir`, which must be `cluster_id`'s.
pub fn load_ca(dir: &Path, cluster_id: &str) -> anyhow::Result<ClusterCa> {
    let ca = ClusterCa::load(dir)?;
    if ca.cluster_id() != cluster_id {
        anyhow::bail!(
            "the CA in {} is of cluster {}, not {cluster_id}",
            dir.display(),
            ca.cluster_id()
        );
    }
    Ok(ca)
}

/// Issue member `id`'s certificate (naming the host of `addr`) into `DIR/tls`.
pub fn issue_member(ca: &ClusterCa, member_dir: &Path, id: u64, addr: &str) -> anyhow::Result<PeerIdentity> {
    issue_node(ca, member_dir, PeerRole::Member, id, addr)
}

/// Issue the certificate of `role` `id` (naming the host of `addr`) into `DIR/tls`.
pub fn issue_node(ca: &ClusterCa, dir: &Path, role: PeerRole, id: u64, addr: &str) -> anyhow::Result<PeerIdentity> {
    let host = addr.rsplit_once(':').map(|(h, _)| h.to_string()).unwrap_or_default();
    let hosts: Vec<String> = [host].into_iter().filter(|h| !h.is_empty()).collect();
    ca.issue_into(
        &dir.join("tls"),
        role,
        &id.to_string(),
        &hosts,
        raftfs_trust::CA_VALIDITY_DAYS,
    )
    .with_context(|| format!("issue {} {id}'s certificate", role.as_str()))
}
