//! A local nameservice of `raftfs metaserver` processes of this binary, for
//! the benches and the fault harness that need real processes to kill.
//!
//! Members listen on free local ports and live in directories under one
//! temporary root (removed on drop, with every process killed). Each member
//! can be given its own environment (failpoints), killed with SIGKILL,
//! paused with SIGSTOP and resumed, and restarted on its directory.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use raftfs_client::{ClientOptions, ClientTls};
use raftfs_proto::pb;
use raftfs_trust::{Dialer, PeerRole};

use crate::ports::free_port;

/// How long to wait for a cluster to form or a restarted member to catch up.
pub const READY_TIMEOUT_MS: u64 = 60_000;
/// How far (in log entries) a member may trail the leader and count as caught up.
const CAUGHT_UP_ENTRIES: u64 = 100;
/// A MemberInfo probe's connect and call timeouts.
const PROBE_CONNECT_TIMEOUT_MS: u64 = 500;
const PROBE_TIMEOUT_MS: u64 = 1000;

pub struct Member {
    pub id: u64,
    pub addr: String,
    pub dir: PathBuf,
    /// Extra environment for this member's process (failpoints).
    pub env: Vec<(String, String)>,
    child: Option<Child>,
    paused: bool,
}

pub struct LocalNameservice {
    exe: PathBuf,
    root: tempfile::TempDir,
    pub members: Vec<Member>,
    store: String,
    extra_args: Vec<String>,
    /// Plaintext with no certificate checks (`--insecure`), for comparisons.
    insecure: bool,
    /// The cluster's ClusterID (empty for an insecure one).
    pub cluster_id: String,
    /// The CA of the cluster a sibling joined ([`LocalNameservice::format_sibling`]).
    ca_from: Option<PathBuf>,
}

/// A new nameservice's place in an existing cluster.
struct Sibling {
    cluster_id: String,
    ca_dir: PathBuf,
    nameservice: String,
}

impl LocalNameservice {
    /// Format `n` members (superuser `superuser`) without starting them;
    /// the first member's format makes the cluster CA, and every member
    /// gets its certificate (mutual TLS, as in production).
    pub fn format(n: u64, store: &str, extra_args: &str, superuser: &str) -> anyhow::Result<LocalNameservice> {
        LocalNameservice::format_with(n, store, extra_args, superuser, false)
    }

    /// As [`LocalNameservice::format`]; `insecure` formats and runs every
    /// member with `--insecure` instead.
    pub fn format_with(
        n: u64,
        store: &str,
        extra_args: &str,
        superuser: &str,
        insecure: bool,
    ) -> anyhow::Result<LocalNameservice> {
        LocalNameservice::format_inner(n, store, extra_args, superuser, insecure, None)
    }

    /// Another nameservice of this one's cluster (its ClusterID and CA; a
    /// new NamespaceID and BlockPoolID), named `name`, of `n` members,
    /// formatted and not started, with the same store and arguments.
    pub fn format_sibling(&self, n: u64, name: &str, superuser: &str) -> anyhow::Result<LocalNameservice> {
        if self.insecure {
            bail!("an insecure nameservice has no CA to share");
        }
        let sibling = Sibling {
            cluster_id: self.cluster_id.clone(),
            ca_dir: self.ca_dir(),
            nameservice: name.to_string(),
        };
        let extra = self.extra_args.join(" ");
        LocalNameservice::format_inner(n, &self.store, &extra, superuser, false, Some(sibling))
    }

    fn format_inner(
        n: u64,
        store: &str,
        extra_args: &str,
        superuser: &str,
        insecure: bool,
        sibling: Option<Sibling>,
    ) -> anyhow::Result<LocalNameservice> {
        let exe = std::env::current_exe().context("find the raftfs binary")?;
        let root = tempfile::tempdir()?;
        let mut members = Vec::new();
        for id in 1..=n {
            members.push(Member {
                id,
                addr: format!("127.0.0.1:{}", free_port()?),
                dir: root.path().join(format!("m{id}")),
                env: Vec::new(),
                child: None,
                paused: false,
            });
        }
        let spec: Vec<String> = members.iter().map(|m| format!("{}={}", m.id, m.addr)).collect();
        let mut ids: Vec<String> = match (&sibling, insecure) {
            (_, true) => vec!["--insecure".into()],
            (Some(s), false) => vec![
                "--cluster-id".into(),
                s.cluster_id.clone(),
                "--ca-dir".into(),
                s.ca_dir.display().to_string(),
            ],
            (None, false) => Vec::new(),
        };
        let name_args: Vec<String> = match &sibling {
            Some(s) => vec!["--nameservice".into(), s.nameservice.clone()],
            None => Vec::new(),
        };
        for m in &members {
            let out = Command::new(&exe)
                .args(["format", "--member-id", &m.id.to_string(), "--members", &spec.join(",")])
                .args(["--superuser", superuser])
                .args(&ids)
                .args(&name_args)
                .arg("--dir")
                .arg(&m.dir)
                .output()
                .context("run raftfs format")?;
            if !out.status.success() {
                bail!("format member {}: {}", m.id, String::from_utf8_lossy(&out.stderr));
            }
            if m.id == members[0].id {
                let text = String::from_utf8_lossy(&out.stdout);
                let line = text
                    .lines()
                    .find(|l| l.starts_with("Format the other members with:"))
                    .context("format printed no ids")?;
                ids = line
                    .trim_start_matches("Format the other members with:")
                    .split_whitespace()
                    .map(str::to_string)
                    .collect();
            }
        }
        let cluster_id = ids
            .iter()
            .position(|a| a == "--cluster-id")
            .and_then(|i| ids.get(i + 1))
            .cloned()
            .unwrap_or_default();
        Ok(LocalNameservice {
            exe,
            root,
            members,
            store: store.to_string(),
            extra_args: extra_args.split_whitespace().map(str::to_string).collect(),
            insecure,
            cluster_id,
            ca_from: sibling.map(|s| s.ca_dir),
        })
    }

    /// The cluster CA's directory (made by the first member's format, or
    /// the cluster's a sibling joined).
    pub fn ca_dir(&self) -> PathBuf {
        self.ca_from.clone().unwrap_or_else(|| self.members[0].dir.join("ca"))
    }

    /// How a client of this nameservice verifies it.
    pub fn client_tls(&self) -> ClientTls {
        if self.insecure {
            ClientTls::Insecure
        } else {
            ClientTls::CaFile(self.ca_dir().join(raftfs_trust::CA_CERT_FILE))
        }
    }

    /// Client options with this nameservice's TLS setting.
    pub fn client_options(&self) -> ClientOptions {
        ClientOptions {
            tls: self.client_tls(),
            ..ClientOptions::default()
        }
    }

    /// The `raftfs datanode` arguments that give DataNode `name` its
    /// credentials (issued into `dir` from this nameservice's CA), or
    /// `--insecure`.
    pub fn datanode_tls_args(&self, name: &str, dir: &Path) -> anyhow::Result<Vec<String>> {
        if self.insecure {
            return Ok(vec!["--insecure".into()]);
        }
        let ca = raftfs_trust::ClusterCa::load(&self.ca_dir())?;
        ca.issue_into(
            dir,
            PeerRole::Datanode,
            name,
            &["127.0.0.1".to_string()],
            raftfs_trust::DEFAULT_CERT_VALIDITY_DAYS,
        )?;
        Ok(vec!["--tls-dir".into(), dir.display().to_string()])
    }

    fn dialer(&self) -> Option<Dialer> {
        self.client_tls().dialer().ok()
    }

    pub fn root(&self) -> &Path {
        self.root.path()
    }

    pub fn fs_uri(&self) -> String {
        let addrs: Vec<&str> = self.members.iter().map(|m| m.addr.as_str()).collect();
        format!("raftfs://{}", addrs.join(","))
    }

    pub fn member(&mut self, id: u64) -> &mut Member {
        let i = self
            .members
            .iter()
            .position(|m| m.id == id)
            .expect("a member of this nameservice");
        &mut self.members[i]
    }

    /// Start member `id` (its log appends to `<root>/m<id>.log`).
    pub fn start(&mut self, id: u64) -> anyhow::Result<()> {
        let log_path = self.root.path().join(format!("m{id}.log"));
        let (exe, store, mut extra) = (self.exe.clone(), self.store.clone(), self.extra_args.clone());
        if self.insecure {
            extra.push("--insecure".into());
        }
        let m = self.member(id);
        assert!(m.child.is_none(), "member {id} is already running");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(log_path)?;
        let child = Command::new(exe)
            .args(["metaserver", "--id", &id.to_string(), "--store", &store])
            .args(&extra)
            .arg("--dir")
            .arg(&m.dir)
            .envs(m.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("start metaserver")?;
        m.child = Some(child);
        m.paused = false;
        Ok(())
    }

    pub fn start_all(&mut self) -> anyhow::Result<()> {
        let ids: Vec<u64> = self.members.iter().map(|m| m.id).collect();
        for id in ids {
            self.start(id)?;
        }
        Ok(())
    }

    pub fn is_running(&mut self, id: u64) -> bool {
        self.member(id).child.is_some()
    }

    /// The process id of member `id`, if it runs.
    pub fn pid(&mut self, id: u64) -> Option<u32> {
        self.member(id).child.as_ref().map(Child::id)
    }

    /// kill -9 member `id` and reap it.
    pub fn kill(&mut self, id: u64) -> anyhow::Result<()> {
        let m = self.member(id);
        if let Some(mut c) = m.child.take() {
            c.kill().context("kill member")?;
            c.wait().context("reap member")?;
        }
        m.paused = false;
        Ok(())
    }

    /// SIGSTOP (`pause = true`) or SIGCONT member `id`.
    pub fn signal_pause(&mut self, id: u64, pause: bool) -> anyhow::Result<()> {
        let m = self.member(id);
        let Some(c) = &m.child else {
            bail!("member {id} is not running")
        };
        let sig = if pause { libc::SIGSTOP } else { libc::SIGCONT };
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        if unsafe { libc::kill(c.id() as libc::pid_t, sig) } != 0 {
            bail!("signal member {id}: {}", std::io::Error::last_os_error());
        }
        m.paused = pause;
        Ok(())
    }

    /// Members that exited on their own (a crash), with their status.
    pub fn exited(&mut self) -> Vec<(u64, String)> {
        let mut out = Vec::new();
        for m in &mut self.members {
            if let Some(c) = &mut m.child {
                if let Ok(Some(st)) = c.try_wait() {
                    out.push((m.id, st.to_string()));
                    m.child = None;
                }
            }
        }
        out
    }

    /// The leader, once every running, unpaused member agrees on it and has
    /// applied about as far as it.
    pub async fn settled_leader(&self) -> anyhow::Result<u64> {
        let deadline = Instant::now() + Duration::from_millis(READY_TIMEOUT_MS);
        let dialer = self.dialer().context("this nameservice's CA certificate")?;
        while Instant::now() < deadline {
            let mut infos = Vec::new();
            for m in self.members.iter().filter(|m| m.child.is_some() && !m.paused) {
                infos.push(member_info(&dialer, &m.addr).await);
            }
            if let Some(Some(l)) = infos.iter().find(|i| i.as_ref().is_some_and(|i| i.role == "LEADER")) {
                let caught_up = infos.iter().all(|i| {
                    i.as_ref().is_some_and(|i| {
                        i.leader_id == l.member_id && i.applied_index + CAUGHT_UP_ENTRIES >= l.applied_index
                    })
                });
                if caught_up {
                    return Ok(l.member_id);
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        bail!("no settled leader within {READY_TIMEOUT_MS} ms")
    }

    /// The member that says it leads now (the highest term wins), if any answers so.
    pub async fn current_leader(&self) -> Option<u64> {
        let mut best: Option<(u64, u64)> = None;
        let dialer = self.dialer()?;
        for m in self.members.iter().filter(|m| m.child.is_some() && !m.paused) {
            if let Some(i) = member_info(&dialer, &m.addr).await {
                if i.role == "LEADER" && best.is_none_or(|(t, _)| i.term > t) {
                    best = Some((i.term, i.member_id));
                }
            }
        }
        best.map(|(_, id)| id)
    }

    /// The tail of every member's log, for a failure report.
    pub fn log_tails(&self, lines: usize) -> String {
        let mut out = String::new();
        for m in &self.members {
            let path = self.root.path().join(format!("m{}.log", m.id));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let all: Vec<&str> = text.lines().collect();
            out.push_str(&format!("--- member {} ({}) ---\n", m.id, path.display()));
            for l in &all[all.len().saturating_sub(lines)..] {
                out.push_str(l);
                out.push('\n');
            }
        }
        out
    }

    /// Lines of the members' logs that contain `needle` (events the run
    /// should report, such as snapshot installs).
    pub fn count_in_logs(&self, needle: &str) -> usize {
        self.members
            .iter()
            .map(|m| {
                std::fs::read_to_string(self.root.path().join(format!("m{}.log", m.id)))
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.contains(needle))
                    .count()
            })
            .sum()
    }

    /// Keep the directory (logs and data) after the run, for a post-mortem.
    pub fn keep(self) -> PathBuf {
        let mut me = self;
        me.kill_all();
        let root = std::mem::replace(&mut me.root, tempfile::tempdir().expect("temp dir"));
        root.keep()
    }

    pub fn kill_all(&mut self) {
        for m in &mut self.members {
            if let Some(mut c) = m.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

impl Drop for LocalNameservice {
    fn drop(&mut self) {
        self.kill_all();
    }
}

/// A member's MemberInfo, or None if it does not answer in time.
pub async fn member_info(dialer: &Dialer, addr: &str) -> Option<pb::MemberInfoReply> {
    let ep = dialer
        .endpoint(addr, PeerRole::Member)
        .ok()?
        .connect_timeout(Duration::from_millis(PROBE_CONNECT_TIMEOUT_MS))
        .timeout(Duration::from_millis(PROBE_TIMEOUT_MS));
    let mut c = pb::namespace_client::NamespaceClient::new(ep.connect().await.ok()?);
    c.member_info(pb::MemberInfoRequest {})
        .await
        .ok()
        .map(|r| r.into_inner())
}
