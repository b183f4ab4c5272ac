//! `raftfs dev` as a user runs it: two nameservices and two DataNodes; it
//! prints each nameservice's `--fs` value once serving, every DataNode
//! serves both block pools, it stops every process on Ctrl-C (SIGINT), and
//! when run again on the same directory it restarts with the data intact.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `raftfs dev` on `dir`: (its process, ns1's --fs, ns2's --fs, the CA
/// certificate it told clients to trust).
fn start_dev(dir: &std::path::Path, port_base: u16) -> (std::process::Child, String, String, String) {
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
    let (mut fs1, mut fs2, mut ca) = (None, None, None);
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
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    (
        child,
        fs1.expect("raftfs dev printed no ns1 --fs line"),
        fs2.expect("raftfs dev printed no ns2 --fs line"),
        ca.expect("raftfs dev printed no RAFTFS_CA line"),
    )
}

/// Pids of every member of both nameservices and of both DataNodes.
fn pids(dir: &std::path::Path) -> Vec<i32> {
    let files = (1..=2)
        .flat_map(|k| (1..=3).map(move |i| format!("ns{k}/m{i}.pid")))
        .chain((1..=2).map(|j| format!("dn{j}.pid")));
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
    let port_base = common::reserve_ports(110);
    let (mut dev, fs, fs2, ca) = start_dev(dir.path(), port_base);
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
    let members = pids(dir.path());
    assert_eq!(members.len(), 8, "a pid file per member and DataNode");
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
    let (mut dev, fs, fs2, ca) = start_dev(dir.path(), port_base);
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
