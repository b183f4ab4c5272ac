//! Two nameservices of one cluster behind routers and a mount table, for
//! the federation tests, used through the SDK and `raftfs dfs` either
//! routed by the SDK itself or through a router ([`Routing`]).

use raftfs_client::{ClientOptions, FileSystem, Identity, Routing};

use super::routers::Routers;
use super::Cluster;

/// `raftfs dfs --routing` of `r`.
pub fn routing_flag(r: Routing) -> &'static str {
    match r {
        Routing::Direct => "direct",
        Routing::ViaRouter => "router",
    }
}

/// Two nameservices (ns1, ns2) of one member each, three DataNodes serving
/// both, and `routers` routers with both registered and this mount table:
/// /user → ns1:/user, /data → ns2:/data, /ro → ns1:/ro (read-only),
/// /shared → ns1:/shared + ns2:/shared (HASH_ALL), /a/b → ns2:/ab.
pub struct Federated {
    pub ns1: Cluster,
    pub ns2: Cluster,
    pub routers: Routers,
    /// How the SDK and `raftfs dfs` send calls (`--routing`).
    pub routing: Routing,
}

impl Federated {
    pub async fn start(routers: usize, routing: Routing) -> Federated {
        let mut ns1 = Cluster::start(1, "memory");
        let ns2 = ns1.start_sibling(1, "ns2");
        ns1.start_datanodes(3, &["--nameservice", &ns2.fs_uri()]);
        ns1.wait_datanodes(3).await;
        ns2.wait_datanodes(3).await;
        let routers = Routers::start(&ns1, routers);
        routers.admin_ok(&["-addNameservice", "ns1", &ns1.fs_uri()]);
        routers.admin_ok(&["-addNameservice", "ns2", &ns2.fs_uri()]);
        for args in [
            &["-add", "/user", "ns1", "/user"][..],
            &["-add", "/data", "ns2", "/data"],
            &["-add", "/ro", "ns1", "/ro", "-readonly"],
            &["-add", "/shared", "ns1,ns2", "/shared", "-order", "HASH_ALL"],
            &["-add", "/a/b", "ns2", "/ab", "-owner", "alice", "-mode", "750"],
        ] {
            routers.admin_ok(args);
        }
        let version = routers.version().await;
        routers.wait_version(version).await;
        // The superuser makes each user's home, as an HDFS admin does.
        for (ns, dirs) in [
            (&ns1, &["/user/alice", "/ro", "/shared"][..]),
            (&ns2, &["/data", "/shared"]),
        ] {
            for d in dirs {
                let (code, out, err) = ns.dfs("hdfs", &["-mkdir", "-p", d]);
                assert_eq!(code, 0, "{out}{err}");
                let (code, out, err) = ns.dfs("hdfs", &["-chmod", "777", d]);
                assert_eq!(code, 0, "{out}{err}");
            }
        }
        Federated {
            ns1,
            ns2,
            routers,
            routing,
        }
    }

    /// `raftfs dfs --fs <routers> --routing R --user USER ARGS`.
    pub fn dfs(&self, user: &str, args: &[&str]) -> (i32, String, String) {
        let out = self
            .ns1
            .cli()
            .args(["dfs", "--fs", &self.routers.uri(None), "--user", user])
            .args(["--routing", routing_flag(self.routing)])
            .args(args)
            .output()
            .expect("run raftfs dfs");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    pub fn dfs_ok(&self, user: &str, args: &[&str]) -> String {
        let (code, out, err) = self.dfs(user, args);
        assert_eq!(code, 0, "dfs {args:?}: {out}{err}\n{}", self.routers.logs());
        out
    }

    /// `args` fails through the router, saying `says`.
    pub fn dfs_refused(&self, args: &[&str], says: &str) {
        let (code, out, err) = self.dfs("alice", args);
        assert_ne!(code, 0, "dfs {args:?} should fail: {out}");
        assert!(err.contains(says), "dfs {args:?} should say {says:?}: {err}");
    }

    /// An SDK handle on the routers, routing as this federation's tests do.
    pub fn client(&self, user: &str, opts: ClientOptions) -> FileSystem {
        let opts = ClientOptions {
            routing: self.routing,
            ..opts
        };
        FileSystem::connect(&self.routers.uri(None), Identity::new(user, &[]), opts).expect("connect to the routers")
    }
}

/// The names a `-ls` printed.
pub fn names(listing: &str) -> Vec<String> {
    listing
        .lines()
        .filter(|l| l.starts_with('d') || l.starts_with('-'))
        .filter_map(|l| l.split_whitespace().last())
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string())
        .collect()
}
