//! `raftfs dev` as a user runs it: it prints the `--fs` value once serving,
//! stops every member on Ctrl-C (SIGINT), and when run again on the same
//! directory it restarts with the data intact.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn start_dev(dir: &std::path::Path, port_base: u16) -> (std::process::Child, String) {
    let mut child = Command::new(common::BIN)
        .args(["dev", "--port-base", &port_base.to_string(), "--store", "rocksdb"])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start raftfs dev");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut fs = None;
    for line in out.lines() {
        let line = line.expect("read dev output");
        if let Some(v) = line.trim().strip_prefix("ns1: --fs ") {
            fs = Some(v.to_string());
        }
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    (child, fs.expect("raftfs dev printed no --fs line"))
}

fn pids(dir: &std::path::Path) -> Vec<i32> {
    (1..=3)
        .filter_map(|i| std::fs::read_to_string(dir.join(format!("ns1/m{i}.pid"))).ok())
        .filter_map(|p| p.trim().parse().ok())
        .collect()
}

fn alive(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

fn dfs(fs: &str, args: &[&str]) -> (i32, String) {
    let out = Command::new(common::BIN)
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
    let port_base = common::free_ports(1)[0].saturating_sub(10).max(20000);
    let (mut dev, fs) = start_dev(dir.path(), port_base);
    assert_eq!(dfs(&fs, &["-mkdir", "-p", "/kept/across/restarts"]).0, 0);
    let members = pids(dir.path());
    assert_eq!(members.len(), 3, "a pid file per member");
    assert!(members.iter().all(|p| alive(*p)));
    for i in 1..=3 {
        assert!(dir.path().join(format!("ns1/m{i}.log")).exists(), "a log per member");
    }

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
    let (mut dev, fs) = start_dev(dir.path(), port_base);
    assert_eq!(
        dfs(&fs, &["-test", "-d", "/kept/across/restarts"]).0,
        0,
        "data lost across a dev restart"
    );
    unsafe { libc::kill(dev.id() as i32, libc::SIGINT) };
    assert!(dev.wait().unwrap().success());
}
