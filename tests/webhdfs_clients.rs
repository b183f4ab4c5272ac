//! Real WebHDFS clients against `raftfs dev`, as HDFS users run them:
//! HdfsCLI (`hdfs` on PyPI), given every member of the nameservice (it
//! moves on from a follower's `StandbyException`), and fsspec's WebHDFS
//! filesystem, through the router. The clients' steps and checks are in
//! `tests/clients/webhdfs_clients.py`; they run from the virtual
//! environment `scripts/setup.sh` makes (`target/python-clients`).

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

/// The Python with HdfsCLI and fsspec (see `scripts/setup.sh`).
const PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/python-clients/bin/python");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/webhdfs_clients.py");
/// A process's HTTP port is its RPC port plus this in `raftfs dev`.
const HTTP_OFFSET: u16 = 200;

#[test]
fn hdfscli_and_fsspec_work_against_raftfs_dev() {
    assert!(
        std::path::Path::new(PYTHON).exists(),
        "{PYTHON} is missing: run scripts/setup.sh (scripts/test.sh does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let base = common::reserve_ports(520);
    let mut dev = Command::new(common::BIN)
        .args(["dev", "--port-base", &base.to_string(), "--store", "rocksdb"])
        .args(["--nameservices", "1", "--datanodes", "3"])
        .args(["--metaserver-args", "--safemode-extension-ms 0"])
        .args(["--datanode-args", "--heartbeat-ms 200"])
        .arg("--dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start raftfs dev");
    let (mut ca, mut members) = (None, None);
    for line in BufReader::new(dev.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if let Some(v) = line.trim().strip_prefix("export RAFTFS_CA=") {
            ca = Some(v.to_string());
        }
        if let Some(v) = line.trim().strip_prefix("ns1: --fs ") {
            members = Some(v.to_string());
        }
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    let (ca, members) = (ca.expect("a RAFTFS_CA line"), members.expect("an ns1 line"));
    // The superuser (who ran `raftfs dev`) gives alice her home.
    for args in [
        &["-mkdir", "-p", "/user/alice"][..],
        &["-chown", "alice", "/user/alice"],
    ] {
        let out = Command::new(common::BIN)
            .env("RAFTFS_CA", &ca)
            .args(["dfs", "--fs", &members])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let http_of = |addr: &str| {
        let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap();
        format!("https://127.0.0.1:{}", port + HTTP_OFFSET)
    };
    let hdfscli_urls: Vec<String> = members
        .trim_start_matches("raftfs://")
        .split(',')
        .map(http_of)
        .collect();
    let router_http_port = base + 91 + HTTP_OFFSET;
    let out = Command::new(PYTHON)
        .arg(SCRIPT)
        .args(["--hdfscli-urls", &hdfscli_urls.join(";")])
        .args([
            "--fsspec-host",
            "127.0.0.1",
            "--fsspec-port",
            &router_http_port.to_string(),
        ])
        .args(["--ca", &ca, "--user", "alice", "--home", "/user/alice"])
        .output()
        .expect("run the Python clients");
    unsafe { libc::kill(dev.id() as i32, libc::SIGINT) };
    let _ = dev.wait();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    print!("{stdout}");
    assert!(out.status.success(), "the clients failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("both clients: ok"), "{stdout}");
    // Each client met HDFS's errors as its own exceptions.
    for want in [
        "status of a missing path: HdfsError",
        "write in another's directory: HdfsError: Permission denied",
        "info of a missing path: FileNotFoundError",
        "mkdir in another's directory: PermissionError",
    ] {
        assert!(stdout.contains(want), "{want} in:\n{stdout}");
    }
}
