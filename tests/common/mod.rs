//! A nameservice of real `raftfs metaserver` processes for tests: format,
//! start, kill -9, restart, and a client.
#![allow(dead_code)]

pub mod create_load;
pub mod federated;
pub mod group_mapping;
pub mod http;
pub mod raw_calls;
pub mod routers;

// Not every test binary uses them.
#[allow(unused_imports)]
pub use create_load::CreateLoad;
#[allow(unused_imports)]
pub use raw_calls::{raw_call, raw_routed_call};

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use raftfs_client::{ClientOptions, ClientTls, DelegationTokenSource, FileSystem, Identity};
use raftfs_proto::DelegationToken;

pub const BIN: &str = env!("CARGO_BIN_EXE_raftfs");

thread_local! {
    /// The ports this thread's test reserved: released when the thread
    /// ends, that is when its test is over (every test shares one process,
    /// which would otherwise hold every test's ports and use up the range).
    static TEST_PORTS: std::cell::RefCell<Vec<raftfs_bench::ports::PortReservation>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// `n` free ports for test servers, reserved until the calling thread (the
/// test's) ends (see [`raftfs_bench::ports`]).
pub fn free_ports(n: usize) -> Vec<u16> {
    (0..n).map(|_| reserve_ports(1)).collect()
}

/// The first of `n` consecutive reserved ports (for `raftfs dev --port-base`).
pub fn reserve_ports(n: usize) -> u16 {
    let r = raftfs_bench::ports::reserve_held(n).expect("reserve test ports");
    let base = r.base;
    TEST_PORTS.with(|held| held.borrow_mut().push(r));
    base
}

pub struct Cluster {
    pub root: tempfile::TempDir,
    pub members: BTreeMap<u64, String>,
    pub store: String,
    /// Extra `raftfs metaserver` arguments (e.g. `--snapshot-logs 20`).
    pub extra_args: Vec<String>,
    /// (ClusterID, NamespaceID, BlockPoolID) printed by format.
    pub ids: (String, String, String),
    /// Environment of every member started from now on (failpoints).
    pub env: Vec<(String, String)>,
    children: BTreeMap<u64, Child>,
    /// DataNodes: process and port.
    datanodes: BTreeMap<u64, Child>,
    pub dn_ports: BTreeMap<u64, u16>,
    /// Every member and DataNode serves its HTTP pages on a port of its
    /// own (kept across restarts): member i's, DataNode j's.
    pub http_ports: BTreeMap<u64, u16>,
    pub dn_http_ports: BTreeMap<u64, u16>,
    /// Extra `raftfs datanode` arguments.
    pub dn_extra_args: Vec<String>,
    /// Run with `--insecure` (given in `extra`): no CA, plaintext.
    pub insecure: bool,
    /// The CA of the cluster this nameservice joined (a sibling's: see
    /// [`Cluster::start_sibling`]); `None`: its own member 1 made it.
    ca_from: Option<PathBuf>,
}

/// Who a new nameservice's format joins: a cluster (its ClusterID and CA)
/// under a nameservice name of its own.
struct JoinCluster<'a> {
    cluster_id: &'a str,
    ca_dir: PathBuf,
    nameservice: &'a str,
}

impl Cluster {
    /// Format and start `n` members with `store` (memory or rocksdb).
    pub fn start(n: u64, store: &str) -> Cluster {
        Cluster::start_with(n, store, &[])
    }

    /// [`Cluster::start`], ready, with `datanodes` DataNodes registered.
    pub async fn start_with_datanodes(n: u64, store: &str, datanodes: u64) -> Cluster {
        let mut c = Cluster::start(n, store);
        c.wait_ready().await;
        c.start_datanodes(datanodes, &[]);
        c.wait_datanodes(datanodes as usize).await;
        c
    }

    /// As [`Cluster::start`], passing `extra` to every metaserver.
    pub fn start_with(n: u64, store: &str, extra: &[&str]) -> Cluster {
        Cluster::start_on(&free_ports(n as usize), store, extra)
    }

    /// A new cluster of one member per port in `ports` (member i on the
    /// i-th), passing `extra` to every metaserver.
    pub fn start_on(ports: &[u16], store: &str, extra: &[&str]) -> Cluster {
        Cluster::start_joining(ports, store, extra, None)
    }

    /// Another nameservice of this cluster (its ClusterID and CA, a new
    /// NamespaceID and BlockPoolID) named `name`, of `n` members.
    pub fn start_sibling(&self, n: u64, name: &str) -> Cluster {
        assert!(!self.insecure, "siblings share a CA");
        let extra: Vec<&str> = self.extra_args.iter().map(String::as_str).collect();
        Cluster::start_joining(
            &free_ports(n as usize),
            &self.store,
            &extra,
            Some(JoinCluster {
                cluster_id: &self.ids.0,
                ca_dir: self.ca_dir(),
                nameservice: name,
            }),
        )
    }

    fn start_joining(ports: &[u16], store: &str, extra: &[&str], join: Option<JoinCluster>) -> Cluster {
        let n = ports.len() as u64;
        let root = tempfile::tempdir().expect("temp dir");
        let members: BTreeMap<u64, String> = (1..=n)
            .map(|i| (i, format!("127.0.0.1:{}", ports[i as usize - 1])))
            .collect();
        let spec = members
            .iter()
            .map(|(i, a)| format!("{i}={a}"))
            .collect::<Vec<_>>()
            .join(",");
        let insecure = extra.contains(&"--insecure");
        let mut ids: Option<(String, String, String)> = None;
        for i in 1..=n {
            let mut cmd = Command::new(BIN);
            cmd.args([
                "format",
                "--member-id",
                &i.to_string(),
                "--members",
                &spec,
                "--superuser",
                "hdfs",
            ]);
            cmd.arg("--dir").arg(member_dir(root.path(), i));
            if let (None, Some(j)) = (&ids, &join) {
                cmd.args(["--cluster-id", j.cluster_id, "--nameservice", j.nameservice]);
                cmd.arg("--ca-dir").arg(&j.ca_dir);
            }
            if let Some((c, ns, bp)) = &ids {
                if let Some(j) = &join {
                    cmd.args(["--nameservice", j.nameservice]);
                }
                cmd.args(["--cluster-id", c, "--namespace-id", ns, "--block-pool-id", bp]);
                if !insecure {
                    let ca = join
                        .as_ref()
                        .map_or(member_dir(root.path(), 1).join("ca"), |j| j.ca_dir.clone());
                    cmd.arg("--ca-dir").arg(ca);
                }
            }
            if insecure {
                cmd.arg("--insecure");
            }
            let out = cmd.output().expect("run raftfs format");
            assert!(
                out.status.success(),
                "format member {i}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            if ids.is_none() {
                let text = String::from_utf8_lossy(&out.stdout).to_string();
                let field = |k: &str| {
                    text.lines()
                        .find_map(|l| {
                            l.trim()
                                .strip_prefix(k)
                                .map(|v| v.trim_start_matches([' ', '=']).trim().to_string())
                        })
                        .unwrap_or_else(|| panic!("format printed no {k}: {text}"))
                };
                ids = Some((field("ClusterID"), field("NamespaceID"), field("BlockPoolID")));
            }
        }
        let extra_args = extra.iter().map(|s| s.to_string()).collect();
        let mut c = Cluster {
            root,
            members,
            store: store.to_string(),
            extra_args,
            ids: ids.expect("at least one member formatted"),
            env: Vec::new(),
            children: BTreeMap::new(),
            datanodes: BTreeMap::new(),
            dn_ports: BTreeMap::new(),
            http_ports: BTreeMap::new(),
            dn_http_ports: BTreeMap::new(),
            dn_extra_args: Vec::new(),
            insecure,
            ca_from: join.map(|j| j.ca_dir),
        };
        for i in 1..=n {
            c.start_member(i);
        }
        c
    }

    /// Format member `i` with `format --join` on a free port and start it;
    /// it waits to be added with `haadmin -addMember`. Returns its address.
    pub fn start_joining_member(&mut self, i: u64) -> String {
        let addr = format!("127.0.0.1:{}", free_ports(1)[0]);
        let (c, ns, bp) = self.ids.clone();
        let out = Command::new(BIN)
            .args(["format", "--join", "--member-id", &i.to_string()])
            .args(["--members", &format!("{i}={addr}"), "--superuser", "hdfs"])
            .args(["--cluster-id", &c, "--namespace-id", &ns, "--block-pool-id", &bp])
            .args(self.format_tls_args())
            .arg("--dir")
            .arg(self.dir(i))
            .output()
            .expect("run raftfs format --join");
        assert!(
            out.status.success(),
            "format --join member {i}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.members.insert(i, addr.clone());
        self.start_member(i);
        addr
    }

    /// The cluster CA's directory (made by member 1's format).
    pub fn ca_dir(&self) -> PathBuf {
        self.ca_from
            .clone()
            .unwrap_or_else(|| member_dir(self.root.path(), 1).join("ca"))
    }

    /// The CA certificate clients trust.
    pub fn ca_cert(&self) -> PathBuf {
        self.ca_dir().join("ca.crt")
    }

    /// How clients of this cluster verify it.
    pub fn client_tls(&self) -> ClientTls {
        if self.insecure {
            ClientTls::Insecure
        } else {
            ClientTls::CaFile(self.ca_cert())
        }
    }

    /// Default client options with this cluster's TLS setting.
    pub fn client_options(&self) -> ClientOptions {
        ClientOptions {
            tls: self.client_tls(),
            ..ClientOptions::default()
        }
    }

    /// `raftfs` with the environment a client of this cluster needs
    /// (RAFTFS_CA, or RAFTFS_INSECURE=1).
    pub fn cli(&self) -> Command {
        let mut cmd = Command::new(BIN);
        if self.insecure {
            cmd.env(raftfs_client::INSECURE_ENV, "1");
        } else {
            cmd.env(raftfs_client::CA_ENV, self.ca_cert());
        }
        cmd
    }

    /// What `raftfs format` of one more member needs: the CA, or --insecure.
    fn format_tls_args(&self) -> Vec<String> {
        if self.insecure {
            vec!["--insecure".into()]
        } else {
            vec!["--ca-dir".into(), self.ca_dir().display().to_string()]
        }
    }

    /// DataNode `j`'s credentials directory, issued on first use with
    /// `raftfs cert issue` (or `--insecure`): its `raftfs datanode` arguments.
    pub fn datanode_tls_args(&self, j: u64) -> Vec<String> {
        if self.insecure {
            return vec!["--insecure".into()];
        }
        let dir = self.root.path().join(format!("dn{j}-tls"));
        self.issue_credentials_into("datanode", &format!("dn{j}"), &dir);
        vec!["--tls-dir".into(), dir.display().to_string()]
    }

    /// Credentials for `role` `id` from this cluster's CA, issued into
    /// `dir` with `raftfs cert issue` unless already there.
    pub fn issue_credentials_into(&self, role: &str, id: &str, dir: &Path) {
        if dir.join("node.crt").exists() {
            return;
        }
        let out = Command::new(BIN)
            .args(["cert", "issue", "--role", role, "--id", id, "--host", "127.0.0.1"])
            .arg("--ca-dir")
            .arg(self.ca_dir())
            .arg("--out")
            .arg(dir)
            .output()
            .expect("run raftfs cert issue");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "issue {role} {id}'s certificate: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(stdout.contains(&format!("{role} {id} of cluster")), "{stdout}");
    }

    /// As [`Cluster::issue_credentials_into`], into `creds-ROLE-ID` under
    /// the cluster's root; returns the directory.
    pub fn issue_credentials(&self, role: &str, id: &str) -> PathBuf {
        let dir = self.root.path().join(format!("creds-{role}-{id}"));
        self.issue_credentials_into(role, id, &dir);
        dir
    }

    /// Credentials (a user certificate) for `user`: the directory to give a client.
    pub fn user_credentials(&self, user: &str) -> PathBuf {
        self.issue_credentials("user", user)
    }

    /// Run `raftfs haadmin --fs <cluster> --user USER ARGS`; (exit code, stdout, stderr).
    pub fn haadmin(&self, user: &str, args: &[&str]) -> (i32, String, String) {
        self.tool("haadmin", user, args)
    }

    /// Run `raftfs dfsadmin --fs <cluster> --user hdfs ARGS`; (exit code, stdout, stderr).
    pub fn dfsadmin(&self, args: &[&str]) -> (i32, String, String) {
        self.tool("dfsadmin", "hdfs", args)
    }

    /// Run `raftfs TOOL --fs <cluster> --user USER ARGS` (`dfs`,
    /// `dfsadmin`, `haadmin`, `fsck`); (exit code, stdout, stderr).
    pub fn tool(&self, tool: &str, user: &str, args: &[&str]) -> (i32, String, String) {
        let out = self
            .cli()
            .args([tool, "--fs", &self.fs_uri(), "--user", user])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run raftfs {tool}: {e}"));
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    /// The member that the others agree leads, once there is one.
    pub async fn leader(&self) -> u64 {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, out, _) = self.haadmin("hdfs", &["-getAllServiceState"]);
            let leaders: Vec<u64> = out
                .lines()
                .filter(|l| l.split_whitespace().nth(2) == Some("LEADER"))
                .filter_map(|l| l.split_whitespace().next()?.parse().ok())
                .collect();
            if let [one] = leaders.as_slice() {
                return *one;
            }
            assert!(Instant::now() < deadline, "no single leader: {out}\n{}", self.logs());
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn dir(&self, i: u64) -> PathBuf {
        member_dir(self.root.path(), i)
    }

    /// HOST:PORT of member `i`'s HTTP pages (`/metrics`, `/jmx`).
    pub fn http_addr(&self, i: u64) -> String {
        format!("127.0.0.1:{}", self.http_ports[&i])
    }

    /// HOST:PORT of DataNode `j`'s HTTP page (`/metrics`).
    pub fn dn_http_addr(&self, j: u64) -> String {
        format!("127.0.0.1:{}", self.dn_http_ports[&j])
    }

    pub fn start_member(&mut self, i: u64) {
        let http = *self.http_ports.entry(i).or_insert_with(|| free_ports(1)[0]);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.path().join(format!("m{i}.log")))
            .expect("open member log");
        let child = Command::new(BIN)
            .args(["metaserver", "--id", &i.to_string(), "--store", &self.store])
            .args([
                "--heartbeat-ms",
                "50",
                "--election-timeout-min-ms",
                "300",
                "--election-timeout-max-ms",
                "600",
            ])
            .args(["--http-addr", &format!("127.0.0.1:{http}")])
            .args(&self.extra_args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .arg("--dir")
            .arg(self.dir(i))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("start metaserver");
        self.children.insert(i, child);
    }

    /// Members whose process has exited on its own since the last call (they
    /// are forgotten: start them again with [`Cluster::start_member`]).
    pub fn exited(&mut self) -> Vec<u64> {
        reap_exited(&mut self.children)
    }

    /// The process id of DataNode `j`, if it runs.
    pub fn dn_pid(&self, j: u64) -> Option<u32> {
        self.datanodes.get(&j).map(Child::id)
    }

    /// DataNodes whose process has exited on its own since the last call
    /// (forgotten, as [`Cluster::exited`] forgets members).
    pub fn exited_datanodes(&mut self) -> Vec<u64> {
        reap_exited(&mut self.datanodes)
    }

    /// Process id of a running member.
    pub fn pid(&self, i: u64) -> Option<u32> {
        self.children.get(&i).map(Child::id)
    }

    /// kill -9 one member.
    pub fn kill(&mut self, i: u64) {
        if let Some(mut c) = self.children.remove(&i) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn kill_all(&mut self) {
        let ids: Vec<u64> = self.children.keys().copied().collect();
        for i in ids {
            self.kill(i);
        }
        let dns: Vec<u64> = self.datanodes.keys().copied().collect();
        for j in dns {
            self.kill_datanode(j);
        }
    }

    /// Data directory of DataNode `j`.
    pub fn dn_dir(&self, j: u64) -> PathBuf {
        self.root.path().join(format!("dn{j}"))
    }

    /// Start DataNodes 1..=n serving this nameservice (or, with `--router`
    /// in `extra`, the nameservices the routers register), with `extra`
    /// arguments (a 100 ms heartbeat unless `extra` says otherwise).
    pub fn start_datanodes(&mut self, n: u64, extra: &[&str]) {
        self.dn_extra_args = extra.iter().map(|s| s.to_string()).collect();
        for j in 1..=n {
            self.start_datanode(j);
        }
    }

    /// Start (or restart, on its old port) DataNode `j`.
    pub fn start_datanode(&mut self, j: u64) {
        let port = *self.dn_ports.entry(j).or_insert_with(|| free_ports(1)[0]);
        let http = *self.dn_http_ports.entry(j).or_insert_with(|| free_ports(1)[0]);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.root.path().join(format!("dn{j}.log")))
            .expect("open datanode log");
        let mut cmd = Command::new(BIN);
        cmd.args(["datanode", "--listen", &format!("127.0.0.1:{port}")]);
        cmd.args(["--http-addr", &format!("127.0.0.1:{http}")]);
        // A DataNode that follows routers is told its nameservices by them.
        if !self.dn_extra_args.iter().any(|a| a == "--router") {
            cmd.args(["--nameservice", &self.fs_uri()]);
        }
        cmd.arg("--domain-socket")
            .arg(self.root.path().join(format!("dn{j}.sock")))
            .arg("--dir")
            .arg(self.dn_dir(j))
            .args(self.datanode_tls_args(j));
        if !self.dn_extra_args.iter().any(|a| a == "--heartbeat-ms") {
            cmd.args(["--heartbeat-ms", "100"]);
        }
        let child = cmd
            .args(&self.dn_extra_args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log"))
            .stderr(log)
            .spawn()
            .expect("start datanode");
        self.datanodes.insert(j, child);
    }

    /// kill -9 DataNode `j`.
    pub fn kill_datanode(&mut self, j: u64) {
        if let Some(mut c) = self.datanodes.remove(&j) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Wait until the leader counts `n` live DataNodes and is out of safe mode.
    pub async fn wait_datanodes(&self, n: usize) {
        use raftfs_proto::{AdminOp, AdminResult, SafeModeAction};
        let fs = self.client("hdfs", &["hdfs"]);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let live = match fs.admin(AdminOp::DatanodeReport).await {
                Ok(AdminResult::Datanodes(d)) => d.iter().filter(|x| x.live).count(),
                _ => 0,
            };
            let safe = matches!(
                fs.admin(AdminOp::SafeMode(SafeModeAction::Get)).await,
                Ok(AdminResult::SafeMode(s)) if !s.on
            );
            if live >= n && safe {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{live} of {n} DataNodes live (safe mode off: {safe})\n{}",
                self.logs()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub fn restart_all(&mut self) {
        let ids: Vec<u64> = self.members.keys().copied().collect();
        for i in ids {
            self.start_member(i);
        }
    }

    pub fn fs_uri(&self) -> String {
        format!(
            "raftfs://{}",
            self.members.values().cloned().collect::<Vec<_>>().join(",")
        )
    }

    /// A block's replicas as `fsck PATH` on this nameservice shows them:
    /// (good live, corrupt).
    pub fn replica_counts(&self, path: &str) -> (usize, usize) {
        let out = self
            .cli()
            .args(["fsck", "--fs", &self.fs_uri(), "--user", "hdfs", path])
            .args(["-files", "-blocks", "-locations"])
            .output()
            .expect("run fsck");
        let text = String::from_utf8_lossy(&out.stdout);
        let live = text
            .lines()
            .find_map(|l| l.split("Live_repl=").nth(1))
            .and_then(|v| v.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let corrupt = text.matches("is CORRUPT").count();
        (live, corrupt)
    }

    /// Make every member reread its group mapping
    /// (`raftfs dfsadmin -refreshUserToGroupsMappings`, as the superuser).
    pub fn refresh_groups(&self) {
        let (code, out, err) = self.dfsadmin(&["-refreshUserToGroupsMappings"]);
        assert_eq!(code, 0, "refresh the group mappings: {out}{err}");
    }

    /// A client authenticated by `user`'s certificate (the only way to
    /// fetch delegation tokens), with no token of its own.
    pub fn certificate_client(&self, user: &str) -> FileSystem {
        let opts = ClientOptions {
            tls: ClientTls::Credentials(self.user_credentials(user)),
            delegation_token: DelegationTokenSource::None,
            ..Default::default()
        };
        FileSystem::connect(&self.fs_uri(), Identity::new(user, &[]), opts).expect("connect")
    }

    /// A client that authenticates with `token` alone (its process name is
    /// "nobody").
    pub fn token_client(&self, token: &DelegationToken) -> FileSystem {
        let opts = ClientOptions {
            delegation_token: DelegationTokenSource::Token(token.clone()),
            ..self.client_options()
        };
        FileSystem::connect(&self.fs_uri(), Identity::new("nobody", &[]), opts).expect("connect")
    }

    pub fn client(&self, user: &str, groups: &[&str]) -> FileSystem {
        FileSystem::connect(&self.fs_uri(), Identity::new(user, groups), self.client_options()).expect("connect")
    }

    /// Wait until the nameservice answers (leader elected, namespace formatted).
    pub async fn wait_ready(&self) {
        let fs = self.client("hdfs", &["hdfs"]);
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match fs.get_file_status("/").await {
                Ok(_) => return,
                Err(e) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(50)).await
                }
                Err(e) => panic!("cluster did not become ready: {e}\n{}", self.logs()),
            }
        }
    }

    pub fn logs(&self) -> String {
        let mut s = String::new();
        let names = self
            .members
            .keys()
            .map(|i| format!("m{i}"))
            .chain(self.dn_ports.keys().map(|j| format!("dn{j}")));
        for i in names {
            let p = self.root.path().join(format!("{i}.log"));
            let text = std::fs::read_to_string(&p).unwrap_or_default();
            let tail: Vec<&str> = text.lines().rev().take(20).collect();
            s.push_str(&format!("--- {i} log (last lines) ---\n"));
            for l in tail.into_iter().rev() {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    }

    /// A raw Namespace client of member (or router) `addr` (TLS as the
    /// cluster's clients have it); `None` if it does not connect.
    pub async fn try_namespace_client(
        &self,
        addr: &str,
    ) -> Option<raftfs_proto::pb::namespace_client::NamespaceClient<tonic::transport::Channel>> {
        let ep = self
            .client_tls()
            .dialer()
            .expect("the cluster's CA")
            .namespace_endpoint(addr)
            .expect("endpoint");
        Some(raftfs_proto::pb::namespace_client::NamespaceClient::new(
            ep.connect().await.ok()?,
        ))
    }

    /// As [`Cluster::try_namespace_client`], panicking if it does not connect.
    pub async fn namespace_client(
        &self,
        addr: &str,
    ) -> raftfs_proto::pb::namespace_client::NamespaceClient<tonic::transport::Channel> {
        self.try_namespace_client(addr)
            .await
            .unwrap_or_else(|| panic!("connect to member {addr}"))
    }

    /// Run `raftfs ARGS` as a client of this cluster; (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.cli().args(args).output().expect("run raftfs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    /// Run `raftfs dfs ARGS` as `user`; returns (exit code, stdout, stderr).
    pub fn dfs(&self, user: &str, args: &[&str]) -> (i32, String, String) {
        self.tool("dfs", user, args)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.kill_all();
        // A failing test's cluster is gone with its temp dir: keep the
        // members' last log lines in the test's output.
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
    }
}

fn member_dir(root: &Path, i: u64) -> PathBuf {
    root.join(format!("m{i}"))
}

/// Run `raftfs ARGS`; (exit code, stdout, stderr).
pub fn run_cli(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run raftfs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Build the `LD_PRELOAD` shim `tests/shims/<name>.c` into `dir`; its path.
pub fn build_shim(dir: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/shims/{name}.c"));
    let out = dir.join(format!("{name}.so"));
    let status = Command::new("cc")
        .args(["-shared", "-fPIC", "-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .args(["-ldl", "-lpthread"])
        .status()
        .expect("run cc (a C compiler is needed to build RocksDB, so it is installed)");
    assert!(status.success(), "building the {name} shim failed");
    out
}

/// Children that exited on their own, removed from `children`.
fn reap_exited(children: &mut BTreeMap<u64, Child>) -> Vec<u64> {
    let gone: Vec<u64> = children
        .iter_mut()
        .filter_map(|(i, c)| matches!(c.try_wait(), Ok(Some(_))).then_some(*i))
        .collect();
    for i in &gone {
        children.remove(i);
    }
    gone
}

/// Member arguments for data-path tests: no safe-mode extension, and
/// replication, dead DataNodes and pending copies noticed in seconds.
pub const FAST_BLOCKS: &[&str] = &[
    "--safemode-extension-ms",
    "0",
    "--replication-interval-ms",
    "200",
    "--datanode-dead-ms",
    "3000",
    "--pending-replication-timeout-ms",
    "5000",
];

/// Replace `to` with a copy of `from` (`cp -a`: modes and times kept).
/// Every replica data file (`blk_<id>`, not its `.meta`) under `dir`.
pub fn block_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(block_files(&p));
        } else if p.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n.starts_with("blk_") && !n.ends_with(".meta")
        }) {
            out.push(p);
        }
    }
    out
}

pub fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    copy_into(from, to);
}

/// Copy what `from` holds into the existing directory `to` (`cp -a`).
pub fn copy_into(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(format!("{}/.", from.display()))
        .arg(to)
        .status()
        .expect("run cp");
    assert!(status.success(), "copy {} to {}", from.display(), to.display());
}
