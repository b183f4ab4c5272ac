//! `raftfs dev` as a user runs it: two nameservices, two DataNodes and a
//! router; it prints the router's and each nameservice's `--fs` value once
//! serving, every DataNode serves both block pools, the router serves both
//! nameservices as one namespace through the tour's mount table, it stops
//! every process on Ctrl-C (SIGINT), `dfsadmin -report` (and `-json`)
//! shows the cluster, its nameservices and the mount table, and when run again on the same
//! directory it restarts with the data (and the mount table) intact.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::http::transfer;

/// What `raftfs dev` printed: ns1's, ns2's and the routers' --fs, and the
/// CA certificate it told clients to trust.
struct Printed {
    fs1: String,
    fs2: String,
    routers: String,
    ca: String,
}

/// `raftfs dev` on `dir`: its process and what it printed.
fn start_dev(dir: &std::path::Path, port_base: u16) -> (std::process::Child, Printed) {
    let mut child = Command::new(common::BIN)
        .args(["dev", "--port-base", &port_base.to_string(), "--store", "rocksdb"])
        .args([
            "--nameservices",
            "2",
            "--datanodes",
            "2",
            "--metaserver-args",
            "--safemode-extension-ms 0",
        ])
        .args(["--datanode-args", "--heartbeat-ms 200"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start raftfs dev");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    let (mut fs1, mut fs2, mut ca, mut routers) = (None, None, None, None);
    for line in out.lines() {
        let line = line.expect("read dev output");
        if let Some(v) = line.trim().strip_prefix("ns1: --fs ") {
            fs1 = Some(v.to_string());
        }
        if let Some(v) = line.trim().strip_prefix("ns2: --fs ") {
            fs2 = Some(v.to_string());
        }
        if let Some(v) = line.trim().strip_prefix("export RAFTFS_CA=") {
            ca = Some(v.to_string());
        }
        if let Some(v) = line.trim().strip_prefix("export RAFTFS_ROUTER=") {
            routers = Some(v.to_string());
        }
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    let printed = Printed {
        fs1: fs1.expect("raftfs dev printed no ns1 --fs line"),
        fs2: fs2.expect("raftfs dev printed no ns2 --fs line"),
        routers: routers.expect("raftfs dev printed no RAFTFS_ROUTER line"),
        ca: ca.expect("raftfs dev printed no RAFTFS_CA line"),
    };
    (child, printed)
}

/// Pids of every member of both nameservices, of both DataNodes and of the router.
fn pids(dir: &std::path::Path) -> Vec<i32> {
    let files = (1..=2)
        .flat_map(|k| (1..=3).map(move |i| format!("ns{k}/m{i}.pid")))
        .chain((1..=2).map(|j| format!("dn{j}.pid")))
        .chain(["routers/r1.pid".to_string()]);
    files
        .filter_map(|f| std::fs::read_to_string(dir.join(f)).ok())
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn dfs(ca: &str, fs: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(common::BIN)
        .env("RAFTFS_CA", ca)
        .arg("dfs")
        .arg("--fs")
        .arg(fs)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
    )
}

#[test]
fn dev_stops_on_ctrl_c_and_restarts_with_data() {
    let dir = tempfile::tempdir().unwrap();
    // Members at base + 1.., DataNodes at base + 101.. (see `raftfs dev --help`).
    let port_base = common::reserve_ports(520);
    let (mut dev, p) = start_dev(dir.path(), port_base);
    let (fs, fs2, ca) = (p.fs1.clone(), p.fs2.clone(), p.ca.clone());
    assert_eq!(dfs(&ca, &fs, &["-mkdir", "-p", "/kept/across/restarts"]).0, 0);
    // Each nameservice stores a file's data on the DataNodes, in its own block pool.
    let local = dir.path().join("hello.txt");
    std::fs::write(&local, b"hello from ns1\n").unwrap();
    assert_eq!(dfs(&ca, &fs, &["-put", local.to_str().unwrap(), "/kept/hello"]).0, 0);
    std::fs::write(&local, b"hello from ns2\n").unwrap();
    assert_eq!(dfs(&ca, &fs2, &["-put", local.to_str().unwrap(), "/hello2"]).0, 0);
    for j in 1..=2 {
        let pools: Vec<String> = std::fs::read_dir(dir.path().join(format!("dn{j}/data/current")))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.starts_with("BP-"))
            .collect();
        assert_eq!(pools.len(), 2, "DataNode {j} serves both block pools: {pools:?}");
    }
    // The router serves both as one namespace: the tour's mount points at
    // the root, /data in ns2.
    let (code, root) = dfs(&ca, &p.routers, &["-ls", "/"]);
    assert_eq!(code, 0, "{root}");
    for m in ["/data", "/shared", "/tmp", "/user"] {
        assert!(root.contains(m), "the router lists {m}: {root}");
    }
    std::fs::write(&local, b"hello through the router\n").unwrap();
    assert_eq!(
        dfs(&ca, &p.routers, &["-put", local.to_str().unwrap(), "/data/routed"]).0,
        0
    );
    assert_eq!(
        dfs(&ca, &fs2, &["-cat", "/data/routed"]),
        (0, "hello through the router\n".to_string()),
        "/data lives in ns2"
    );
    // WebHDFS through the router, as WebHDFS.md's curl steps: CREATE is
    // redirected to a DataNode, which writes through the routers; OPEN
    // follows the redirect; the file is in ns2 for the SDK to read.
    let router_port: u16 = p
        .routers
        .trim_start_matches("raftfs://")
        .split(',')
        .next()
        .unwrap()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let router_http = format!("127.0.0.1:{}", router_port + 200); // HTTP = RPC port + 200 in dev
    let user = raftfs_client::Identity::resolve(None).user;
    let ca_path = std::path::Path::new(&ca);
    let web = |q: &str| format!("https://{router_http}/webhdfs/v1/data/web?{q}&user.name={user}");
    let step1 = transfer("PUT", &web("op=CREATE"), Some(ca_path), None, None, false);
    assert_eq!(step1.status, 307, "{step1:?}");
    std::fs::write(&local, b"hello over WebHDFS\n").unwrap();
    let step2 = transfer(
        "PUT",
        &step1.location.unwrap(),
        Some(ca_path),
        None,
        Some(&local),
        false,
    );
    assert_eq!(step2.status, 201, "{step2:?} {}", String::from_utf8_lossy(&step2.body));
    assert_eq!(
        dfs(&ca, &fs2, &["-cat", "/data/web"]),
        (0, "hello over WebHDFS\n".to_string())
    );
    let read = transfer("GET", &web("op=OPEN&offset=6"), Some(ca_path), None, None, true);
    assert_eq!((read.status, read.body.as_slice()), (200, &b"over WebHDFS\n"[..]));
    // The cluster view: every nameservice with its ids, leader and health,
    // every DataNode's use of each block pool, and the mount table.
    let report = Command::new(common::BIN)
        .env("RAFTFS_CA", &ca)
        .args(["dfsadmin", "--router", &p.routers, "-report", "-json"])
        .output()
        .unwrap();
    assert!(report.status.success(), "{}", String::from_utf8_lossy(&report.stderr));
    let r: serde_json::Value = serde_json::from_slice(&report.stdout).expect("-report -json is JSON");
    assert!(r["cluster_id"].as_str().is_some_and(|c| c.starts_with("CID-")), "{r}");
    let nss = r["nameservices"].as_array().expect("nameservices");
    assert_eq!(nss.len(), 2, "{r}");
    for (ns, name) in nss.iter().zip(["ns1", "ns2"]) {
        assert_eq!(ns["name"], name);
        assert!(ns["namespace_id"].as_u64().is_some_and(|id| id > 0), "{ns}");
        assert!(
            ns["block_pool_id"].as_str().is_some_and(|b| b.starts_with("BP-")),
            "{ns}"
        );
        assert!(ns["leader"].as_u64().is_some(), "{ns}");
        assert_eq!(ns["members"].as_array().map(Vec::len), Some(3), "{ns}");
    }
    let dns = r["datanodes"].as_array().expect("datanodes");
    assert_eq!(dns.len(), 2, "{r}");
    for dn in dns {
        let pools: Vec<&str> = dn["pools"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["nameservice"].as_str())
            .collect();
        assert_eq!(pools, ["ns1", "ns2"], "each DataNode reports both pools: {dn}");
    }
    let sources: Vec<&str> = r["mount_table"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["source"].as_str())
        .collect();
    assert!(
        sources.contains(&"/data") && sources.contains(&"/shared"),
        "{sources:?}"
    );
    let text = Command::new(common::BIN)
        .env("RAFTFS_CA", &ca)
        .args(["dfsadmin", "--router", &p.routers, "-report"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    for want in [
        "Cluster ID: CID-",
        "Nameservice ns1: NamespaceID",
        "Mount table (version",
        "Block pool of ns2",
    ] {
        assert!(text.contains(want), "-report shows {want:?}:\n{text}");
    }

    let members = pids(dir.path());
    assert_eq!(members.len(), 9, "a pid file per member, DataNode and router");
    assert!(members.iter().all(|p| alive(*p)));
    for i in 1..=3 {
        assert!(dir.path().join(format!("ns1/m{i}.log")).exists(), "a log per member");
    }
    assert!(dir.path().join("dn1.log").exists(), "a log per DataNode");

    // Ctrl-C: every member stops, the pid files go.
    // SAFETY: signalling a child process we started.
    unsafe { libc::kill(dev.id() as i32, libc::SIGINT) };
    let status = dev.wait().unwrap();
    assert!(status.success(), "raftfs dev exited with {status}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while members.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < deadline, "members still running after Ctrl-C");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(pids(dir.path()).is_empty(), "pid files left behind");

    // Again on the same directory: the data is there.
    let (mut dev, p) = start_dev(dir.path(), port_base);
    let (fs, fs2, ca) = (p.fs1.clone(), p.fs2.clone(), p.ca.clone());
    assert_eq!(
        dfs(&ca, &p.routers, &["-cat", "/data/routed"]),
        (0, "hello through the router\n".to_string()),
        "the mount table survives a dev restart"
    );
    assert_eq!(
        dfs(&ca, &fs, &["-test", "-d", "/kept/across/restarts"]).0,
        0,
        "data lost across a dev restart"
    );
    assert_eq!(
        dfs(&ca, &fs, &["-cat", "/kept/hello"]),
        (0, "hello from ns1\n".to_string())
    );
    assert_eq!(
        dfs(&ca, &fs2, &["-cat", "/hello2"]),
        (0, "hello from ns2\n".to_string())
    );
    unsafe { libc::kill(dev.id() as i32, libc::SIGINT) };
    assert!(dev.wait().unwrap().success());
}
