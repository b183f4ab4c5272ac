//! Hadoop's own RPC against `raftfs dev`: an independent client,
//! `hdfs-native` (from PyPI, in the virtual environment `scripts/setup.sh`
//! makes, and its Rust crate), configured only by the `HADOOP_CONF_DIR`
//! raftfs dev writes. One dev cluster of one nameservice serves the
//! checks against members: the Python client's namespace calls, reads and
//! writes (this file); the IPC server spoken byte by byte (`ipc`); the
//! DataNodes' DataTransferProtocol and a DataNode dying under a write
//! (`data_transfer`). Another, of two nameservices, serves the same
//! through a router (`router`); one run with `--auth strong` serves
//! Hadoop's clients with the delegation tokens dev fetched
//! (`dev_strong_auth`); and Hadoop's own Java client, `hadoop fs`, runs
//! against one of two nameservices (`java_fs_shell`).

mod data_transfer;
mod dev_strong_auth;
mod ipc;
mod java_fs_shell;
mod router;
mod token_auth;

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/python-clients/bin/python");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/hadoop_clients.py");
/// Sizes of the files hdfs-native reads: empty, within a chunk, chunk
/// edges, several packets, and four blocks of [`MULTI_BLOCK_SIZE_BYTES`].
pub(super) const FILE_SIZES: [usize; 6] = [0, 1, 511, 513, 200_000, 3 * 1024 * 1024 + 17];
pub(super) const MULTI_BLOCK_SIZE_BYTES: u64 = 1024 * 1024;
/// The script also reads this range of each file long enough (across a
/// block boundary in the largest).
const RANGE_AT: usize = 1024 * 1024 - 1000;
const RANGE_LEN: usize = 5000;

/// Sizes of the files hdfs-native writes (with 1 MiB blocks) and the SDK
/// reads, as `tests/clients/hadoop_clients.py` has them; and its append.
const WRITE_SIZES: [usize; 3] = [1, 70_000, 3 * 1024 * 1024 + 17];
const APPENDED: usize = 1000;
/// DataNodes in the cluster: three for each block, and one to replace a
/// DataNode that dies under a write.
pub(super) const DATANODES: usize = 4;
/// Directories the observer-read client makes and reads back.
pub(super) const OBSERVED_DIRS: usize = 20;

/// Whether a finished process succeeded, and its stdout then stderr.
pub(super) fn outcome(out: &std::process::Output) -> (bool, String) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Bytes that differ at every offset (so a wrong offset shows).
pub(super) fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u32 * 31 + (i >> 9) as u32) as u8).collect()
}

/// Stops `raftfs dev` (SIGINT, as Ctrl-C does) when dropped, a failed
/// assertion included, so no cluster outlives its test.
struct StopOnDrop(std::process::Child);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0.id() as i32, libc::SIGINT) };
        let _ = self.0.wait();
    }
}

/// A `raftfs dev` cluster with [`DATANODES`] DataNodes and one router,
/// and what it printed.
pub(super) struct Dev {
    /// Stopped first when dropped (fields drop in order), before `dir` goes.
    _process: StopOnDrop,
    pub dir: tempfile::TempDir,
    /// `RAFTFS_CA`.
    pub ca: String,
    /// `HADOOP_CONF_DIR`.
    pub conf: String,
    /// The `--fs` of each nameservice (`ns1`, ...) and of the routers (`routers`).
    pub fs: std::collections::BTreeMap<String, String>,
    /// Router 1's Hadoop RPC address.
    pub router_rpc: String,
    /// Under `--auth strong`: `RAFTFS_CREDENTIALS` (the dev user's
    /// certificate) and `HADOOP_TOKEN_FILE_LOCATION`.
    pub credentials: Option<String>,
    pub hadoop_tokens: Option<String>,
}

impl Dev {
    fn start(nameservices: u32) -> Dev {
        Dev::start_with(nameservices, DATANODES, &[])
    }

    /// `raftfs dev` with `nameservices`, one router, `datanodes` and `extra` arguments.
    fn start_with(nameservices: u32, datanodes: usize, extra: &[&str]) -> Dev {
        assert!(
            std::path::Path::new(PYTHON).exists(),
            "{PYTHON} is missing: run scripts/setup.sh (scripts/test.sh does)"
        );
        let dir = tempfile::tempdir().unwrap();
        let base = common::reserve_ports(520);
        let mut process = StopOnDrop(
            Command::new(common::BIN)
                .args(["dev", "--port-base", &base.to_string(), "--store", "rocksdb"])
                .args(["--nameservices", &nameservices.to_string()])
                .args(["--routers", "1", "--datanodes", &datanodes.to_string()])
                .args(["--metaserver-args", "--safemode-extension-ms 0"])
                .args(extra)
                .arg("--dir")
                .arg(dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()
                .expect("start raftfs dev"),
        );
        let (mut ca, mut conf, mut router_rpc, mut fs) = (None, None, None, std::collections::BTreeMap::new());
        let (mut credentials, mut hadoop_tokens) = (None, None);
        // "export NAME=VALUE   (a comment)": the value.
        let value = |v: &str| v.split_whitespace().next().unwrap_or_default().to_string();
        for line in BufReader::new(process.0.stdout.take().unwrap()).lines() {
            let line = line.unwrap();
            let line = line.trim();
            if let Some(v) = line.strip_prefix("export RAFTFS_CA=") {
                ca = Some(v.to_string());
            }
            if let Some(v) = line.strip_prefix("export HADOOP_CONF_DIR=") {
                conf = Some(v.to_string());
            }
            if let Some(v) = line.strip_prefix("export RAFTFS_CREDENTIALS=") {
                credentials = Some(value(v));
            }
            if let Some(v) = line.strip_prefix("export HADOOP_TOKEN_FILE_LOCATION=") {
                hadoop_tokens = Some(value(v));
            }
            if let Some((label, uri)) = line.split_once(": --fs ") {
                let label = if label.starts_with("routers") { "routers" } else { label };
                fs.insert(label.to_string(), uri.to_string());
            }
            if line.starts_with("router 1:") {
                let at = line
                    .split("Hadoop RPC on ")
                    .nth(1)
                    .expect("router 1's Hadoop RPC address");
                router_rpc = Some(at.split(',').next().unwrap().to_string());
            }
            if line.starts_with("Press Ctrl-C") {
                break;
            }
        }
        Dev {
            _process: process,
            dir,
            ca: ca.expect("RAFTFS_CA"),
            conf: conf.expect("HADOOP_CONF_DIR"),
            fs,
            router_rpc: router_rpc.expect("router 1's Hadoop RPC address"),
            credentials,
            hadoop_tokens,
        }
    }

    /// `--fs` of `label` (`ns1`, ..., `routers`).
    pub fn fs(&self, label: &str) -> String {
        self.fs
            .get(label)
            .unwrap_or_else(|| panic!("no --fs for {label}: {:?}", self.fs))
            .clone()
    }

    /// `raftfs dfs --fs FS ARGS` as the dev user (the superuser); must succeed.
    pub fn dfs(&self, fs: &str, args: &[&str]) {
        let out = Command::new(common::BIN)
            .env("RAFTFS_CA", &self.ca)
            .args(["dfs", "--fs", fs])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The pid file of nameservice `ns`'s leader (whose Hadoop RPC answers).
    pub fn leader_pid_file(&self, ns: &str) -> std::path::PathBuf {
        let (id, _) = ipc::hadoop_leader(&self.fs(ns)).expect("a leader serves Hadoop RPC");
        self.dir.path().join(format!("{ns}/m{id}.pid"))
    }
}

/// The SDK as alice, trusting `raftfs dev`'s CA.
fn alice_sdk(ca: &str, members: &str) -> raftfs_client::FileSystem {
    let opts = raftfs_client::ClientOptions {
        tls: raftfs_client::ClientTls::CaFile(ca.into()),
        ..Default::default()
    };
    raftfs_client::FileSystem::connect(members, raftfs_client::Identity::resolve(Some("alice")), opts).unwrap()
}

/// The SDK (through `fs`) writes [`FILE_SIZES`] files into `dir` for
/// hdfs-native to read (the largest of four 1 MiB blocks): their paths and bytes.
fn sdk_writes(rt: &tokio::runtime::Runtime, dev: &Dev, fs: &str, dir: &str) -> Vec<(String, Vec<u8>)> {
    let written: Vec<(String, Vec<u8>)> = FILE_SIZES
        .iter()
        .map(|n| (format!("{dir}/f{n}"), pattern(*n)))
        .collect();
    rt.block_on(async {
        let fs = alice_sdk(&dev.ca, fs);
        for (path, data) in &written {
            let mut w = fs
                .create_file_opt(path, false, None, 3, MULTI_BLOCK_SIZE_BYTES, true)
                .await
                .unwrap();
            w.write(data).await.unwrap();
            w.close().await.unwrap();
        }
    });
    written
}

/// Run `tests/clients/hadoop_clients.py` with `args` against `dev`'s
/// HADOOP_CONF_DIR as alice; its stdout and stderr, and whether it passed.
fn run_script(dev: &Dev, args: &[String]) -> (String, String, bool) {
    let out = Command::new(PYTHON)
        .arg(SCRIPT)
        .args(args)
        .env("HADOOP_CONF_DIR", &dev.conf)
        .env("HADOOP_USER_NAME", "alice")
        .output()
        .expect("run hdfs-native");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    );
    print!("{stdout}");
    (stdout, stderr, out.status.success())
}

/// What the script wrote into `write_dir` (several packets, four blocks,
/// an append, a write across a leader's kill), as the SDK reads it through `fs`.
fn sdk_reads(
    rt: &tokio::runtime::Runtime,
    dev: &Dev,
    fs: &str,
    write_dir: &str,
) -> Vec<(String, Result<Vec<u8>, String>)> {
    rt.block_on(async {
        let fs = alice_sdk(&dev.ca, fs);
        let mut out = Vec::new();
        for name in WRITE_SIZES
            .iter()
            .map(|n| format!("w{n}"))
            .chain(["appended".to_string(), "across-failover".to_string()])
        {
            let path = format!("{write_dir}/{name}");
            let data = match fs.open(&path).await {
                Ok(mut r) => r.read_to_end().await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            out.push((name, data));
        }
        out
    })
}

/// The SDK (through `fs`) reads `path` as hdfs-native wrote it: `data`.
fn sdk_reads_back(rt: &tokio::runtime::Runtime, dev: &Dev, fs: &str, path: &str, data: &[u8]) {
    let read = rt.block_on(async {
        let fs = alice_sdk(&dev.ca, fs);
        fs.open(path).await.unwrap().read_to_end().await.unwrap()
    });
    assert!(
        read == data,
        "{path}: the SDK read {} bytes, hdfs-native wrote {}",
        read.len(),
        data.len()
    );
}

/// The script passed; the SDK read what it wrote; it read what the SDK
/// wrote, whole and in ranges.
fn check_script_run(
    (stdout, stderr, passed): &(String, String, bool),
    sdk_read: Vec<(String, Result<Vec<u8>, String>)>,
    read_dir: &std::path::Path,
    written: &[(String, Vec<u8>)],
) {
    assert!(passed, "hdfs-native failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("hdfs-native: ok"), "{stdout}");
    for (name, data) in sdk_read {
        let data = data.unwrap_or_else(|e| panic!("the SDK reads {name}: {e}"));
        let want = match name.strip_prefix('w') {
            Some(n) => pattern(n.parse().unwrap()),
            None if name == "appended" => pattern(WRITE_SIZES[2])[..2 * APPENDED].to_vec(),
            None => pattern(WRITE_SIZES[2]),
        };
        assert!(
            data == want,
            "{name}: the SDK read {} bytes, hdfs-native wrote {}",
            data.len(),
            want.len()
        );
    }
    for (path, data) in written {
        let name = path.rsplit('/').next().unwrap();
        let got = std::fs::read(read_dir.join(name)).unwrap();
        assert!(got == *data, "{path}: read {} bytes, wrote {}", got.len(), data.len());
        if data.len() > RANGE_AT {
            let range = std::fs::read(read_dir.join(format!("{name}.range"))).unwrap();
            let end = (RANGE_AT + RANGE_LEN).min(data.len());
            assert!(range == data[RANGE_AT..end], "{path}: the range read differs");
        }
    }
}

/// The script's arguments: home and others' directory, files to read into
/// `read_dir`, where to write, and the pid file of the leader to kill.
fn script_args(
    home: &str,
    others: &str,
    read: &[(String, Vec<u8>)],
    read_dir: &std::path::Path,
    write_dir: &str,
    kill: &std::path::Path,
) -> Vec<String> {
    let mut args: Vec<String> = ["--home", home, "--others", others, "--write-dir", write_dir]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["--read-dir".into(), read_dir.display().to_string()]);
    args.extend(["--kill-mid-write".into(), kill.display().to_string()]);
    args.extend(read.iter().map(|(p, _)| format!("--read={p}")));
    args
}

#[test]
fn hdfs_native_works_against_raftfs_dev_over_hadoop_rpc() {
    let dev = Dev::start(1);
    let members = dev.fs("ns1");
    let (ca, conf) = (&dev.ca, &dev.conf);
    dev.dfs(&members, &["-mkdir", "-p", "/user/alice/data", "/user/bob"]);
    dev.dfs(&members, &["-chown", "alice", "/user/alice", "/user/alice/data"]);
    dev.dfs(&members, &["-chown", "bob", "/user/bob"]);

    let rt = tokio::runtime::Runtime::new().unwrap();
    let written = sdk_writes(&rt, &dev, &members, "/user/alice/data");
    let read_dir = tempfile::tempdir().unwrap();
    // hdfs://ns1: the nameservice's members (fs.defaultFS is the routers').
    // The script kills the leader mid-write (the write goes on).
    let mut args = vec!["--url".to_string(), "hdfs://ns1".to_string()];
    args.extend(script_args(
        "/user/alice",
        "/user/bob",
        &written,
        read_dir.path(),
        "/user/alice/written",
        &dev.leader_pid_file("ns1"),
    ));
    let ran = run_script(&dev, &args);
    let sdk_read = sdk_reads(&rt, &dev, &members, "/user/alice/written");

    // The raw protocol checks run against the leader: the member whose
    // Hadoop RPC answers getFileInfo.
    let leader = ipc::hadoop_leader(&members).map(|(_, addr)| addr);
    let checksummed = format!("/user/alice/written/w{}", WRITE_SIZES[2]);
    let sdk_checksum = rt.block_on(async {
        let fs = alice_sdk(ca, &members);
        fs.file_checksum(&checksummed).await.map(|c| c.bytes)
    });
    let raw = leader.map(|addr| {
        std::panic::catch_unwind(|| {
            ipc::ipc_server_refuses_bad_input_and_goes_on(&addr);
            data_transfer::read_block_needs_its_token(&addr);
            data_transfer::datanode_ipc_takes_only_block_tokens(&addr);
            ipc::cluster_and_file_calls_answer_as_hdfs(&addr, &raftfs_client::Identity::resolve(None).user);
            data_transfer::data_port_refuses_bad_input_and_goes_on(&addr);
            data_transfer::block_checksums_agree_with_the_sdk(
                &addr,
                &checksummed,
                &sdk_checksum.expect("the SDK's -checksum"),
            );
            ipc::followers_serve_observer_reads(&rt, conf, &members, ca);
            let (path, data) = data_transfer::hdfs_native_rebuilds_its_pipeline_when_a_datanode_dies(
                &rt,
                conf,
                ("hdfs://ns1", &addr),
                "/user/alice/written/datanode-killed",
                dev.dir.path(),
            );
            sdk_reads_back(&rt, &dev, &members, &path, &data);
        })
    });
    check_script_run(&ran, sdk_read, read_dir.path(), &written);
    let raw = raw.expect("one member (the leader) answers getFileInfo");
    if let Err(e) = raw {
        std::panic::resume_unwind(e);
    }
}
