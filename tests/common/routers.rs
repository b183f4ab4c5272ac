//! Routers of a test cluster: `raftfs router format` and `router run`
//! processes certified by the cluster's CA, `raftfs routeradmin` against
//! them, and admin clients.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use raftfs_router::admin_client::RouterAdminClient;

use super::{free_ports, Cluster, BIN};

pub struct Routers {
    pub cluster_ca: PathBuf,
    pub root: PathBuf,
    pub addrs: Vec<String>,
    /// HOST:PORT of each router's HTTP page (`/metrics`).
    pub http_addrs: Vec<String>,
    children: Vec<Option<Child>>,
    /// Extra `raftfs router run` arguments.
    pub extra_args: Vec<String>,
    /// The credentials `routeradmin` runs with (a user certificate, for
    /// routers run `--auth strong`); `None`: the CA only.
    pub admin_credentials: Option<PathBuf>,
}

impl Routers {
    /// Format and start `n` routers of `cluster`'s ClusterID, certified by its CA.
    pub fn start(cluster: &Cluster, n: usize) -> Routers {
        Routers::start_with(cluster, n, &[])
    }

    /// As [`Routers::start`], passing `extra` to every `raftfs router run`.
    pub fn start_with(cluster: &Cluster, n: usize, extra: &[&str]) -> Routers {
        let root = cluster.root.path().join("routers");
        let addrs: Vec<String> = free_ports(n).iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let spec: Vec<String> = addrs
            .iter()
            .enumerate()
            .map(|(i, a)| format!("{}={a}", i + 1))
            .collect();
        for i in 1..=n {
            let out = Command::new(BIN)
                .args(["router", "format", "--id", &i.to_string(), "--routers", &spec.join(",")])
                .args(["--cluster-id", &cluster.ids.0, "--superuser", "hdfs"])
                .arg("--ca-dir")
                .arg(cluster.ca_dir())
                .arg("--dir")
                .arg(root.join(format!("r{i}")))
                .output()
                .expect("run raftfs router format");
            assert!(
                out.status.success(),
                "format router {i}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut r = Routers {
            cluster_ca: cluster.ca_cert(),
            root,
            addrs,
            http_addrs: free_ports(n).iter().map(|p| format!("127.0.0.1:{p}")).collect(),
            children: (0..n).map(|_| None).collect(),
            extra_args: extra.iter().map(|s| s.to_string()).collect(),
            admin_credentials: None,
        };
        for i in 1..=n {
            r.start_router(i);
        }
        r
    }

    pub fn start_router(&mut self, i: usize) {
        let log = std::fs::File::create(self.root.join(format!("r{i}.log"))).expect("router log");
        let child = Command::new(BIN)
            .args(["router", "run", "--id", &i.to_string()])
            .arg("--dir")
            .arg(self.root.join(format!("r{i}")))
            .args(["--heartbeat-ms", "50", "--election-timeout-min-ms", "150"])
            .args(["--election-timeout-max-ms", "400"])
            .args(["--http-addr", &self.http_addrs[i - 1]])
            .args(&self.extra_args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start router");
        self.children[i - 1] = Some(child);
    }

    pub fn kill(&mut self, i: usize) {
        if let Some(mut c) = self.children[i - 1].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// The router that leads the routers' group, from `routeradmin -status`.
    pub fn leader(&self) -> usize {
        let status = self.admin_ok(&["-status"]);
        status
            .lines()
            .find(|l| l.contains(" LEADER "))
            .and_then(|l| l.split("router ").nth(1))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|id| id.parse::<usize>().ok())
            .unwrap_or_else(|| panic!("no leader in {status}"))
    }

    pub fn uri(&self, only: Option<usize>) -> String {
        match only {
            Some(i) => format!("raftfs://{}", self.addrs[i - 1]),
            None => format!("raftfs://{}", self.addrs.join(",")),
        }
    }

    /// `raftfs routeradmin --router <routers> --user USER ARGS`.
    pub fn admin(&self, user: &str, args: &[&str]) -> (i32, String, String) {
        self.tool("routeradmin", user, args)
    }

    /// `raftfs dfsadmin --router <routers> --user hdfs ARGS` (the commands
    /// that change the federation's nameservices).
    pub fn dfsadmin(&self, args: &[&str]) -> (i32, String, String) {
        self.tool("dfsadmin", "hdfs", args)
    }

    /// `raftfs TOOL --router <routers> --user USER ARGS`.
    fn tool(&self, tool: &str, user: &str, args: &[&str]) -> (i32, String, String) {
        let mut cmd = Command::new(BIN);
        cmd.env(raftfs_client::CA_ENV, &self.cluster_ca);
        if let Some(creds) = &self.admin_credentials {
            cmd.env(raftfs_client::CREDENTIALS_ENV, creds);
        }
        let out = cmd
            .args([tool, "--router", &self.uri(None), "--user", user])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("run raftfs {tool}: {e}"));
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    /// Like `admin`, asserting success; returns stdout.
    pub fn admin_ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.admin("hdfs", args);
        assert_eq!(code, 0, "routeradmin {args:?}: {out}{err}\n{}", self.logs());
        out
    }

    pub fn client(&self, i: usize) -> RouterAdminClient {
        RouterAdminClient::new(vec![self.addrs[i - 1].clone()], self.admin_dialer()).expect("router client")
    }

    /// Dials as [`Routers::admin_credentials`] say (routers run `--auth
    /// strong` answer only callers with a certificate), else with the CA only.
    fn admin_dialer(&self) -> raftfs_trust::Dialer {
        match &self.admin_credentials {
            Some(dir) => raftfs_client::ClientTls::Credentials(dir.clone()),
            None => raftfs_client::ClientTls::CaFile(self.cluster_ca.clone()),
        }
        .dialer()
        .expect("the cluster CA or the admin's credentials")
    }

    /// Wait until every live router has applied `version`; how long it took.
    pub async fn wait_version(&self, version: u64) -> Duration {
        let started = Instant::now();
        for i in 1..=self.addrs.len() {
            if self.children[i - 1].is_none() {
                continue;
            }
            let r = self
                .client(i)
                .federation(version - 1, 5_000)
                .await
                .unwrap_or_else(|e| panic!("router {i}: {e}"));
            assert!(
                r.federation.version() >= version,
                "router {i} is at version {} after waiting for {version}",
                r.federation.version()
            );
        }
        started.elapsed()
    }

    pub async fn version(&self) -> u64 {
        let c = RouterAdminClient::new(self.addrs.clone(), self.admin_dialer()).unwrap();
        c.federation(0, 0).await.expect("the federation").federation.version()
    }

    pub fn logs(&self) -> String {
        let mut s = String::new();
        for i in 1..=self.addrs.len() {
            let text = std::fs::read_to_string(self.root.join(format!("r{i}.log"))).unwrap_or_default();
            s.push_str(&format!("--- router {i} ---\n"));
            for l in text.lines().rev().take(15).collect::<Vec<_>>().into_iter().rev() {
                s.push_str(l);
                s.push('\n');
            }
        }
        s
    }
}

impl Drop for Routers {
    fn drop(&mut self) {
        for i in 1..=self.children.len() {
            self.kill(i);
        }
        if std::thread::panicking() {
            eprintln!("{}", self.logs());
        }
    }
}
