//! `raftfs dev`: a whole local cluster in one command.
//!
//! Formats `DIR/ns<k>/m<i>` (one ClusterID, a NamespaceID and BlockPoolID
//! per nameservice), `DIR/dn<j>` and `DIR/routers/r<r>` on first use,
//! starts every member (`raftfs metaserver`), every DataNode (`raftfs
//! datanode`) and every router (`raftfs router run`) as its own OS process
//! (so one can be `kill -9`ed), writes each process's pid and log next to
//! its directory, sets up the federation (every nameservice registered with
//! the routers; the tour's mount table on first use, see
//! `cli_dev_routers`), prints the `--fs` value of the routers and of each
//! nameservice, and stops them all on Ctrl-C or SIGTERM. Run again on the
//! same DIR, it restarts with the data intact; with a larger
//! `--nameservices` it adds the new nameservices to the cluster.
//!
//! Ports: member i of nameservice k listens on port-base + 10(k-1) + i,
//! router r on port-base + 90 + r, DataNode j on port-base + 100 + j; each
//! serves its HTTP pages (`/metrics`; the status pages, `/jmx` and WebHDFS
//! on members; the status pages and WebHDFS on routers; WebHDFS's data
//! side on DataNodes) on its port plus 200 (so up to port-base + 350), and
//! each member and router serves Hadoop RPC, and each DataNode Hadoop's
//! data transfer, on its port plus 360 (so the cluster's ports stay within
//! port-base .. port-base + 510). A Hadoop client configuration naming
//! every member and router is written to `DIR/hadoop-conf` (see
//! `cli_dev_hadoop_conf`).
//!
//! Credentials: the cluster's CA lives in `DIR/ca`; each member's
//! certificate in its directory's `tls/`, each DataNode's (`dn<j>`) in
//! `DIR/dn<j>/tls`. All traffic is mutual TLS and clients are told to
//! trust `DIR/ca/ca.crt`; `--insecure` runs everything in plaintext.
//! `--auth strong` makes every process authenticate its callers (a user
//! certificate, or a delegation token for Hadoop's clients): see
//! `cli_dev_auth`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{bail, Context};
use clap::Args;

use raftfs_metaserver::server::layout;
use raftfs_trust::ClientAuth;

use crate::cli_dev_hadoop_conf::{HadoopNameservice, ROUTERS_NAMESERVICE};
use crate::cli_dev_routers::{
    format_routers, router_addr, router_dir, router_log, router_pid_file, set_up_federation, MAX_DEV_ROUTERS,
};
use crate::cli_format::{new_ids, version_for, FormatArgs};

/// Print a line of progress; a closed stdout (a pipe whose reader left) must
/// not stop the cluster, so write errors are ignored.
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// Most members per nameservice `raftfs dev` starts.
const MAX_DEV_MEMBERS: u64 = 9;
/// Most nameservices `raftfs dev` starts.
const MAX_DEV_NAMESERVICES: u64 = 9;
/// Most DataNodes `raftfs dev` starts.
const MAX_DEV_DATANODES: u64 = 50;
/// Each process serves its HTTP pages on its port plus this (past every
/// RPC port: DataNodes end at port-base + 100 + [`MAX_DEV_DATANODES`]).
pub const HTTP_PORT_OFFSET: u64 = 200;
/// Each member and router serves Hadoop RPC, and each DataNode Hadoop's data
/// transfer, on its port plus this (past every HTTP port).
pub const HADOOP_RPC_PORT_OFFSET: u64 = 360;
/// Port offset of the DataNodes from --port-base.
const DATANODE_PORT_OFFSET: u64 = 100;
/// How long to wait for the nameservices to answer before giving up.
const READY_TIMEOUT_MS: u64 = 60_000;
/// How long processes get to exit after SIGTERM before SIGKILL.
const STOP_GRACE_MS: u64 = 5_000;

#[derive(Args, Debug, Clone)]
pub struct DevArgs {
    /// Where the cluster keeps its data, pids and logs.
    #[arg(long, default_value = "./dev-data")]
    pub dir: PathBuf,
    /// Member i of nameservice k listens on port-base + 10(k-1) + i; router r on port-base + 90 + r; DataNode j on port-base + 100 + j; each serves HTTP (status pages, /metrics, /jmx, WebHDFS) on its port + 200, and each member and router Hadoop RPC (each DataNode Hadoop's data transfer) on its port + 360.
    #[arg(long = "port-base", default_value_t = 9000)]
    pub port_base: u16,
    /// Members of each nameservice (3 or 5 keep a majority through failures).
    #[arg(long, default_value_t = 3)]
    pub members: u64,
    /// Nameservices (each its own namespace and block pool).
    #[arg(long, default_value_t = 2)]
    pub nameservices: u64,
    /// Routers in front of the nameservices (0: none), serving them as one
    /// namespace through the mount table; router r on port-base + 90 + r.
    #[arg(long, default_value_t = 1)]
    pub routers: u64,
    /// DataNodes, each serving every nameservice's block pool.
    #[arg(long, default_value_t = 3)]
    pub datanodes: u64,
    /// Namespace store of every member: rocksdb or memory.
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
    /// How every member executes writes: leader (planned on the leader under
    /// fine-grained locks; the log carries deltas) or apply (the log carries
    /// the ops; every member plans them).
    #[arg(long, default_value = "leader")]
    pub exec: String,
    /// Extra arguments for every `raftfs metaserver` (e.g. "--datanode-dead-ms 10000").
    #[arg(long = "metaserver-args", default_value = "", allow_hyphen_values = true)]
    pub metaserver_args: String,
    /// Extra arguments for every `raftfs datanode` (e.g. "--heartbeat-ms 500").
    #[arg(long = "datanode-args", default_value = "", allow_hyphen_values = true)]
    pub datanode_args: String,
    /// Exit once the cluster serves, leaving the processes running (for scripts and tests).
    #[arg(long)]
    pub detach: bool,
    /// Run every process in plaintext with no certificate checks (for
    /// comparisons; by default the cluster has its own CA in DIR/ca and
    /// all traffic is mutual TLS).
    #[arg(long)]
    pub insecure: bool,
    /// How every process authenticates its callers: simple (the user name a
    /// call carries is trusted, as HDFS's simple auth) or strong (a user
    /// certificate, or a delegation token; the dev user's certificate goes
    /// into DIR/users/USER, and Hadoop clients get tokens in
    /// DIR/hadoop-conf/tokens). Strong needs TLS.
    #[arg(long, default_value = "simple")]
    pub auth: ClientAuth,
    /// How clients reach DataNodes: authentication (block data in
    /// plaintext, each request proving its block token, as HDFS's
    /// `dfs.data.transfer.protection=authentication`) or privacy (block data
    /// in TLS; Hadoop clients' data transfer is then refused). DataNodes talk
    /// to each other in TLS either way. Ignored with --insecure.
    #[arg(long = "data-protection", default_value = "authentication", value_parser = parse_data_protection)]
    pub data_protection: raftfs_proto::DataProtection,
}

fn parse_data_protection(s: &str) -> Result<raftfs_proto::DataProtection, String> {
    raftfs_proto::DataProtection::parse(s)
}

fn ca_dir(root: &Path) -> PathBuf {
    root.join("ca")
}

/// Make the cluster's CA on first use (also for a cluster made before
/// `raftfs dev` had one) and issue any credentials a member or DataNode
/// lacks. Returns the CA certificate's path.
fn ensure_credentials(a: &DevArgs, cluster_id: &str, all_members: &[BTreeMap<u64, String>]) -> anyhow::Result<PathBuf> {
    let dir = std::path::absolute(ca_dir(&a.dir))?;
    let ca = crate::cli_cert::ensure_ca(&dir, cluster_id)?;
    for (k, members) in (1..).zip(all_members) {
        for (i, addr) in members {
            let m = member_dir(&a.dir, k, *i);
            // Certificates issued before routers served clients lack the
            // name clients now verify: issue them again.
            let current = raftfs_trust::NodeCredentials::load(&m.join("tls"))
                .is_ok_and(|c| c.certifies_name(raftfs_trust::NAMESPACE_SERVER_NAME));
            if !current {
                crate::cli_cert::issue_member(&ca, &m, *i, addr)?;
            }
        }
    }
    for j in 1..=a.datanodes {
        let tls = dn_dir(&a.dir, j).join("tls");
        if !tls.join(raftfs_trust::NODE_CERT_FILE).exists() {
            ca.issue_into(
                &tls,
                raftfs_trust::PeerRole::Datanode,
                &format!("dn{j}"),
                &["127.0.0.1".to_string()],
                raftfs_trust::CA_VALIDITY_DAYS,
            )?;
        }
    }
    Ok(dir.join(raftfs_trust::CA_CERT_FILE))
}

fn ns_name(k: u64) -> String {
    format!("ns{k}")
}

fn member_dir(root: &Path, k: u64, i: u64) -> PathBuf {
    root.join(ns_name(k)).join(format!("m{i}"))
}

fn member_pid_file(root: &Path, k: u64, i: u64) -> PathBuf {
    root.join(ns_name(k)).join(format!("m{i}.pid"))
}

fn dn_dir(root: &Path, j: u64) -> PathBuf {
    root.join(format!("dn{j}"))
}

fn dn_pid_file(root: &Path, j: u64) -> PathBuf {
    root.join(format!("dn{j}.pid"))
}

/// Format every member of nameservice `k` (one identity for all), in
/// `cluster_id` (a new cluster when `None`). Returns the ClusterID.
fn format_ns(
    a: &DevArgs,
    k: u64,
    members: &BTreeMap<u64, String>,
    cluster_id: Option<String>,
) -> anyhow::Result<String> {
    let now = raftfs_metaserver::server::member::now_ms();
    let (new_cid, nsid, bp) = new_ids(now);
    let cid = cluster_id.unwrap_or(new_cid);
    for id in members.keys() {
        let fa = FormatArgs {
            dir: member_dir(&a.dir, k, *id),
            member_id: *id,
            members: String::new(),
            nameservice: ns_name(k),
            cluster_id: Some(cid.clone()),
            namespace_id: Some(nsid),
            block_pool_id: Some(bp.clone()),
            superuser: None,
            join: false,
            ca_dir: None,
            insecure: a.insecure,
        };
        let v = version_for(&fa, members, now);
        raftfs_metaserver::server::format_member(&fa.dir, &v).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    say!(
        "Formatted nameservice {} (block pool {bp}) of cluster {cid} in {}",
        ns_name(k),
        a.dir.display()
    );
    Ok(cid)
}

fn alive(pid: i32) -> bool {
    // SAFETY: kill with signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: sending a signal to a child we started has no memory effects.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// Refuse to start over a process of an earlier run that still lives.
fn check_not_running(pid_file: &Path, what: &str, name: &str) -> anyhow::Result<()> {
    if let Ok(p) = std::fs::read_to_string(pid_file) {
        if let Ok(pid) = p.trim().parse::<i32>() {
            if alive(pid) && std::fs::read_to_string(format!("/proc/{pid}/cmdline")).is_ok_and(|c| c.contains(what)) {
                bail!("{name} is still running (pid {pid}); stop it first");
            }
        }
    }
    Ok(())
}

struct Started {
    name: String,
    pid: i32,
    pid_file: PathBuf,
    child: tokio::process::Child,
}

/// The HTTP address of the process listening on `addr` (HOST:PORT): the
/// same host, the port + [`HTTP_PORT_OFFSET`].
fn http_addr(addr: &str) -> anyhow::Result<String> {
    offset_addr(addr, HTTP_PORT_OFFSET)
}

/// A member's or router's Hadoop RPC address: its port plus [`HADOOP_RPC_PORT_OFFSET`].
fn hadoop_rpc_addr(addr: &str) -> anyhow::Result<String> {
    offset_addr(addr, HADOOP_RPC_PORT_OFFSET)
}

fn offset_addr(addr: &str, offset: u64) -> anyhow::Result<String> {
    let (host, port) = addr
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h, p.parse::<u64>().ok()?)))
        .with_context(|| format!("{addr:?} is not HOST:PORT"))?;
    Ok(format!("{host}:{}", port + offset))
}

fn spawn(exe: &Path, args: &[String], log_path: &Path, pid_file: &Path, name: &str) -> anyhow::Result<Started> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .with_context(|| format!("open {}", log_path.display()))?;
    let child = tokio::process::Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .kill_on_drop(false)
        .spawn()
        .with_context(|| format!("start {name}"))?;
    let pid = child.id().context("child pid")? as i32;
    std::fs::write(pid_file, format!("{pid}\n"))?;
    Ok(Started {
        name: name.to_string(),
        pid,
        pid_file: pid_file.to_path_buf(),
        child,
    })
}

pub async fn run(a: DevArgs) -> anyhow::Result<()> {
    if a.members == 0 || a.members > MAX_DEV_MEMBERS {
        bail!("--members must be 1..={MAX_DEV_MEMBERS}");
    }
    if a.nameservices == 0 || a.nameservices > MAX_DEV_NAMESERVICES {
        bail!("--nameservices must be 1..={MAX_DEV_NAMESERVICES}");
    }
    if a.routers > MAX_DEV_ROUTERS {
        bail!("--routers must be 0..={MAX_DEV_ROUTERS}");
    }
    if a.datanodes > MAX_DEV_DATANODES {
        bail!("--datanodes must be 0..={MAX_DEV_DATANODES}");
    }
    if a.store != "rocksdb" && a.store != "memory" {
        bail!("--store must be rocksdb or memory, not {:?}", a.store);
    }
    if a.exec != "leader" && a.exec != "apply" {
        bail!("--exec must be leader or apply, not {:?}", a.exec);
    }
    if a.auth == ClientAuth::Strong && a.insecure {
        bail!("--auth strong needs TLS: it cannot run with --insecure");
    }
    let last_port = (a.port_base as u64 + DATANODE_PORT_OFFSET + a.datanodes + HTTP_PORT_OFFSET)
        .max(a.port_base as u64 + DATANODE_PORT_OFFSET + a.datanodes + HADOOP_RPC_PORT_OFFSET);
    if last_port > u16::MAX as u64 {
        bail!("--port-base {} leaves no room for the cluster's ports", a.port_base);
    }
    let port = |k: u64, i: u64| a.port_base as u64 + 10 * (k - 1) + i;
    let mut cluster_id: Option<String> = None;
    let mut all_members = Vec::new();
    for k in 1..=a.nameservices {
        let members: BTreeMap<u64, String> = (1..=a.members)
            .map(|i| (i, format!("127.0.0.1:{}", port(k, i))))
            .collect();
        match layout::read(&member_dir(&a.dir, k, 1)) {
            Ok(v) => {
                if v.members != members {
                    bail!(
                        "{} holds nameservice {} with members {:?}; start it with the same --members/--port-base, or use another --dir",
                        a.dir.display(),
                        ns_name(k),
                        v.members
                    );
                }
                if cluster_id.as_ref().is_some_and(|c| *c != v.cluster_id) {
                    bail!(
                        "{} mixes clusters: {} is of cluster {}",
                        a.dir.display(),
                        ns_name(k),
                        v.cluster_id
                    );
                }
                say!(
                    "Restarting nameservice {} of cluster {} from {}",
                    ns_name(k),
                    v.cluster_id,
                    a.dir.display()
                );
                cluster_id = Some(v.cluster_id);
            }
            Err(layout::LayoutError::NotFormatted { .. }) => {
                cluster_id = Some(format_ns(&a, k, &members, cluster_id.clone())?);
            }
            Err(e) => bail!("{e}"),
        }
        for i in members.keys() {
            check_not_running(
                &member_pid_file(&a.dir, k, *i),
                "metaserver",
                &format!("member {i} of {}", ns_name(k)),
            )?;
        }
        all_members.push(members);
    }
    for j in 1..=a.datanodes {
        check_not_running(&dn_pid_file(&a.dir, j), "datanode", &format!("DataNode {j}"))?;
    }
    for r in 1..=a.routers {
        check_not_running(&router_pid_file(&a.dir, r), "router", &format!("router {r}"))?;
    }
    let cluster_id = cluster_id.context("at least one nameservice")?;
    let ca_cert = if a.insecure {
        None
    } else {
        Some(ensure_credentials(&a, &cluster_id, &all_members)?)
    };
    // Under strong authentication raftfs dev calls as the dev user, with
    // that user's certificate.
    let credentials = match a.auth {
        ClientAuth::Strong => Some(crate::cli_dev_auth::ensure_user_credentials(
            &a.dir,
            &ca_dir(&a.dir),
            &cluster_id,
            &raftfs_client::Identity::resolve(None).user,
        )?),
        ClientAuth::Simple => None,
    };
    let exe = std::env::current_exe().context("find the raftfs binary")?;
    if a.routers > 0 {
        let ca = std::path::absolute(ca_dir(&a.dir))?;
        format_routers(
            &exe,
            &a.dir,
            a.port_base,
            a.routers,
            &cluster_id,
            (!a.insecure).then_some(ca.as_path()),
        )?;
    }
    let extra_ms: Vec<String> = a.metaserver_args.split_whitespace().map(str::to_string).collect();
    let extra_dn: Vec<String> = a.datanode_args.split_whitespace().map(str::to_string).collect();
    let mut children = Vec::new();
    let mut uris = Vec::new();
    let scheme = if a.insecure { "http" } else { "https" };
    for (k, members) in (1..).zip(&all_members) {
        for (i, addr) in members {
            let dir = member_dir(&a.dir, k, *i);
            let mut args: Vec<String> = vec!["metaserver".into(), "--dir".into(), dir.display().to_string()];
            args.extend(["--id".into(), i.to_string(), "--store".into(), a.store.clone()]);
            args.extend(["--exec".into(), a.exec.clone()]);
            args.extend(["--auth".into(), a.auth.to_string()]);
            if a.insecure {
                args.push("--insecure".into());
            } else {
                args.extend(["--data-protection".into(), a.data_protection.to_string()]);
            }
            let http = http_addr(addr)?;
            args.extend(["--http-addr".into(), http.clone()]);
            let hadoop = hadoop_rpc_addr(addr)?;
            args.extend(["--hadoop-rpc-addr".into(), hadoop.clone()]);
            args.extend(extra_ms.iter().cloned());
            let log = a.dir.join(ns_name(k)).join(format!("m{i}.log"));
            let name = format!("member {i} of {}", ns_name(k));
            let st = spawn(&exe, &args, &log, &member_pid_file(&a.dir, k, *i), &name)?;
            say!(
                "  {name}: pid {}, listening on {addr}, status pages {scheme}://{http}/ (and /metrics, /jmx), Hadoop RPC on {hadoop}, log {}",
                st.pid,
                log.display()
            );
            children.push(st);
        }
        uris.push(format!(
            "raftfs://{}",
            members.values().cloned().collect::<Vec<_>>().join(",")
        ));
    }
    for j in 1..=a.datanodes {
        let listen = format!("127.0.0.1:{}", a.port_base as u64 + DATANODE_PORT_OFFSET + j);
        let data = dn_dir(&a.dir, j).join("data");
        std::fs::create_dir_all(&data).with_context(|| format!("create {}", data.display()))?;
        let mut args: Vec<String> = vec!["datanode".into(), "--dir".into(), data.display().to_string()];
        args.extend(["--listen".into(), listen.clone()]);
        args.extend(["--auth".into(), a.auth.to_string()]);
        if a.insecure {
            args.push("--insecure".into());
        } else {
            args.extend(["--tls-dir".into(), dn_dir(&a.dir, j).join("tls").display().to_string()]);
        }
        let sock = dn_dir(&a.dir, j).join("dn.sock");
        if sock.display().to_string().len() <= 107 {
            args.extend(["--domain-socket".into(), sock.display().to_string()]);
        }
        if a.routers > 0 {
            // DataNodes follow the routers: nameservices added or removed
            // later (dfsadmin -addNameservice) need no restart.
            let addrs: Vec<String> = (1..=a.routers).map(|r| router_addr(a.port_base, r)).collect();
            args.extend(["--router".into(), format!("raftfs://{}", addrs.join(","))]);
        } else {
            for u in &uris {
                args.extend(["--nameservice".into(), u.clone()]);
            }
        }
        let http = http_addr(&listen)?;
        args.extend(["--http-addr".into(), http.clone()]);
        let hadoop_xfer = hadoop_rpc_addr(&listen)?;
        args.extend(["--hadoop-xfer-addr".into(), hadoop_xfer.clone()]);
        args.extend(extra_dn.iter().cloned());
        let log = a.dir.join(format!("dn{j}.log"));
        let name = format!("DataNode {j}");
        let st = spawn(&exe, &args, &log, &dn_pid_file(&a.dir, j), &name)?;
        say!(
            "  {name}: pid {}, listening on {listen}, page {scheme}://{http}/metrics, Hadoop data transfer on {hadoop_xfer}, log {}",
            st.pid,
            log.display()
        );
        children.push(st);
    }
    let tls = match (&credentials, &ca_cert) {
        (Some(dir), _) => raftfs_client::ClientTls::Credentials(dir.clone()),
        (None, Some(p)) => raftfs_client::ClientTls::CaFile(p.clone()),
        (None, None) => raftfs_client::ClientTls::Insecure,
    };
    for u in &uris {
        wait_ready(u, &tls).await?;
    }
    let mut routers_uri = None;
    if a.routers > 0 {
        let addrs: Vec<String> = (1..=a.routers).map(|r| router_addr(a.port_base, r)).collect();
        for r in 1..=a.routers {
            let mut args: Vec<String> = vec!["router".into(), "run".into(), "--id".into(), r.to_string()];
            args.extend(["--dir".into(), router_dir(&a.dir, r).display().to_string()]);
            args.extend(["--auth".into(), a.auth.to_string()]);
            if a.insecure {
                args.push("--insecure".into());
            }
            let http = http_addr(&addrs[r as usize - 1])?;
            args.extend(["--http-addr".into(), http.clone()]);
            let hadoop = hadoop_rpc_addr(&addrs[r as usize - 1])?;
            args.extend(["--hadoop-rpc-addr".into(), hadoop.clone()]);
            let log = router_log(&a.dir, r);
            let name = format!("router {r}");
            let st = spawn(&exe, &args, &log, &router_pid_file(&a.dir, r), &name)?;
            say!(
                "  {name}: pid {}, listening on {}, status pages {scheme}://{http}/ (and /metrics), Hadoop RPC on {hadoop}, log {}",
                st.pid,
                addrs[r as usize - 1],
                log.display()
            );
            children.push(st);
        }
        let uri = format!("raftfs://{}", addrs.join(","));
        let table = set_up_federation(&uri, &tls, &uris).await?;
        say!("Mount table (raftfs routeradmin -ls):");
        for line in table {
            say!("  {line}");
        }
        routers_uri = Some(uri);
    }
    for u in &uris {
        wait_datanodes(u, &tls, a.datanodes as usize).await;
    }
    say!("The cluster is serving. Use it with:");
    if let Some(u) = &routers_uri {
        say!("  routers (every nameservice as one namespace): --fs {u}");
    }
    for (k, u) in (1..).zip(&uris) {
        say!("  {}: --fs {u}", ns_name(k));
    }
    match &routers_uri {
        Some(u) => {
            say!("  export RAFTFS_FS={u}");
            say!("  export RAFTFS_ROUTER={u}");
        }
        None => say!("  export RAFTFS_FS={}", uris[0]),
    }
    say!("  export RAFTFS_NAMESERVICES=\"{}\"", uris.join(";"));
    match &ca_cert {
        Some(p) => say!("  export {}={}", raftfs_client::CA_ENV, p.display()),
        None => say!("  export {}=1", raftfs_client::INSECURE_ENV),
    }
    if let Some(dir) = &credentials {
        say!(
            "  export {}={}   (your certificate: every call must authenticate; others' with raftfs cert issue --role user --ca-dir {})",
            raftfs_client::CREDENTIALS_ENV,
            dir.display(),
            std::path::absolute(ca_dir(&a.dir))?.display()
        );
    }
    let first_http = http_addr(all_members[0].values().next().expect("a nameservice has members"))?;
    let curl = match (&ca_cert, &credentials) {
        (Some(p), Some(me)) => format!(
            "curl --cacert {} --cert {} --key {} https://{first_http}",
            p.display(),
            me.join(raftfs_trust::NODE_CERT_FILE).display(),
            me.join(raftfs_trust::NODE_KEY_FILE).display()
        ),
        (Some(p), None) => format!("curl --cacert {} https://{first_http}", p.display()),
        (None, _) => format!("curl http://{first_http}"),
    };
    say!("Status pages (the NameNode UI: overview, DataNodes, open files, mount table, file browser): {scheme}://{first_http}/ in a browser");
    if let Some(p) = &ca_cert {
        say!(
            "  (the browser does not know the cluster's CA: import {} or accept the certificate)",
            p.display()
        );
    }
    say!("Metrics and beans: {curl}/metrics (or /jmx)");
    let hadoop_members: Vec<BTreeMap<u64, String>> = all_members
        .iter()
        .map(|m| {
            m.iter()
                .map(|(i, a)| Ok((*i, hadoop_rpc_addr(a)?)))
                .collect::<anyhow::Result<_>>()
        })
        .collect::<anyhow::Result<_>>()?;
    let hadoop_routers: BTreeMap<u64, String> = (1..=a.routers)
        .map(|r| Ok((r, hadoop_rpc_addr(&router_addr(a.port_base, r))?)))
        .collect::<anyhow::Result<_>>()?;
    // The routers first: their namespace is the default file system.
    let hadoop_nameservices: Vec<HadoopNameservice<'_>> = (a.routers > 0)
        .then(|| HadoopNameservice {
            name: ROUTERS_NAMESERVICE.into(),
            id_prefix: "r",
            members: &hadoop_routers,
        })
        .into_iter()
        .chain((1..).zip(&hadoop_members).map(|(k, members)| HadoopNameservice {
            name: ns_name(k),
            id_prefix: "m",
            members,
        }))
        .collect();
    let hadoop_conf = crate::cli_dev_hadoop_conf::write(&a.dir, &hadoop_nameservices, a.auth == ClientAuth::Strong)?;
    if a.routers > 0 {
        say!(
            "Hadoop clients (hadoop fs, hdfs-native): hdfs://{ROUTERS_NAMESERVICE}/ is every nameservice through \
             the routers (the default), hdfs://ns1/ one nameservice (each member serves Hadoop RPC, the leader \
             answers), with"
        );
    } else {
        say!(
            "Hadoop clients (hadoop fs, hdfs-native; each member serves Hadoop RPC, the leader answers): hdfs://ns1/ with"
        );
    }
    say!("  export HADOOP_CONF_DIR={}", hadoop_conf.display());
    if a.auth == ClientAuth::Strong {
        // Hadoop's clients authenticate with delegation tokens: one for the
        // routers' namespace and one for each nameservice.
        let targets: Vec<(String, String)> = routers_uri
            .iter()
            .map(|u| (u.clone(), ROUTERS_NAMESERVICE.to_string()))
            .chain((1..).zip(&uris).map(|(k, u)| (u.clone(), ns_name(k))))
            .collect();
        let (tokens, until) = crate::cli_dev_auth::write_hadoop_tokens(&hadoop_conf, &tls, &targets).await?;
        say!(
            "  export HADOOP_TOKEN_FILE_LOCATION={}   (delegation tokens of {}, valid until {} unless renewed)",
            tokens.display(),
            targets
                .iter()
                .map(|(_, fs)| format!("hdfs://{fs}"))
                .collect::<Vec<_>>()
                .join(", "),
            chrono::DateTime::from_timestamp_millis(until)
                .map(|d| d.format("%Y-%m-%d %H:%M:%S UTC").to_string())
                .unwrap_or_else(|| until.to_string())
        );
    }
    if credentials.is_some() {
        say!("WebHDFS takes a delegation token (the leader of ns1 answers; the others say StandbyException):");
        say!("  raftfs fetchdt --fs {} /tmp/ns1.token", uris[0]);
        say!("  {curl}\"/webhdfs/v1/?op=LISTSTATUS&delegation=$(cat /tmp/ns1.token)\"");
    } else {
        say!("WebHDFS (the leader of ns1 answers; the others say StandbyException): {curl}'/webhdfs/v1/?op=LISTSTATUS&user.name=hdfs'");
        say!("  reads and writes are redirected to a DataNode: curl -L ...'/webhdfs/v1/FILE?op=OPEN&user.name=hdfs'");
    }
    if a.detach {
        return Ok(());
    }
    say!("Press Ctrl-C to stop every process.");
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    say!("Stopping...");
    for st in &children {
        signal(st.pid, libc::SIGTERM);
    }
    let deadline = tokio::time::Instant::now() + Duration::from_millis(STOP_GRACE_MS);
    for st in &mut children {
        if tokio::time::timeout_at(deadline, st.child.wait()).await.is_err() {
            eprintln!("{} (pid {}) did not stop in time: killing it", st.name, st.pid);
            signal(st.pid, libc::SIGKILL);
            let _ = st.child.wait().await;
        }
        let _ = std::fs::remove_file(&st.pid_file);
    }
    say!("Stopped.");
    Ok(())
}

/// Wait (at most [`READY_TIMEOUT_MS`]) until nameservice `fs` counts `n`
/// live DataNodes; say so if it does not.
async fn wait_datanodes(fs: &str, tls: &raftfs_client::ClientTls, n: usize) {
    let identity = raftfs_client::Identity::resolve(None);
    let opts = raftfs_client::ClientOptions {
        tls: tls.clone(),
        ..Default::default()
    };
    let Ok(client) = raftfs_client::FileSystem::connect(fs, identity, opts) else {
        return;
    };
    let deadline = std::time::Instant::now() + Duration::from_millis(READY_TIMEOUT_MS);
    let mut live = 0;
    while std::time::Instant::now() < deadline {
        live = crate::cli_nameservices::live_datanodes(&client).await.unwrap_or(0);
        if live >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    say!("warning: {fs} counts {live} of {n} DataNodes live (see the DataNode logs)");
}

async fn wait_ready(fs: &str, tls: &raftfs_client::ClientTls) -> anyhow::Result<()> {
    let identity = raftfs_client::Identity::resolve(None);
    let opts = raftfs_client::ClientOptions {
        call_deadline_ms: READY_TIMEOUT_MS,
        tls: tls.clone(),
        ..Default::default()
    };
    let client = raftfs_client::FileSystem::connect(fs, identity, opts)?;
    client
        .get_file_status("/")
        .await
        .context("wait for the nameservice to serve (see the member logs)")?;
    Ok(())
}
