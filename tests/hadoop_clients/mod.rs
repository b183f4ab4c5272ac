//! Hadoop's own RPC against `raftfs dev`: an independent client,
//! `hdfs-native` (from PyPI, in the virtual environment `scripts/setup.sh`
//! makes, and its Rust crate), configured only by the `HADOOP_CONF_DIR`
//! raftfs dev writes. One dev cluster serves every check: the Python
//! client's namespace calls, reads and writes (this file); the IPC server
//! spoken byte by byte (`ipc`); the DataNodes' DataTransferProtocol and a
//! DataNode dying under a write (`data_transfer`).

mod data_transfer;
mod ipc;

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

/// The SDK as alice, trusting `raftfs dev`'s CA.
fn alice_sdk(ca: &str, members: &str) -> raftfs_client::FileSystem {
    let opts = raftfs_client::ClientOptions {
        tls: raftfs_client::ClientTls::CaFile(ca.into()),
        ..Default::default()
    };
    raftfs_client::FileSystem::connect(members, raftfs_client::Identity::resolve(Some("alice")), opts).unwrap()
}

#[test]
fn hdfs_native_works_against_raftfs_dev_over_hadoop_rpc() {
    assert!(
        std::path::Path::new(PYTHON).exists(),
        "{PYTHON} is missing: run scripts/setup.sh (scripts/test.sh does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let base = common::reserve_ports(520);
    let mut dev = StopOnDrop(
        Command::new(common::BIN)
            .args(["dev", "--port-base", &base.to_string(), "--store", "rocksdb"])
            .args(["--nameservices", "1", "--datanodes", &DATANODES.to_string()])
            .args(["--metaserver-args", "--safemode-extension-ms 0"])
            .arg("--dir")
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start raftfs dev"),
    );
    let (mut ca, mut members, mut conf) = (None, None, None);
    for line in BufReader::new(dev.0.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let line = line.trim();
        if let Some(v) = line.strip_prefix("export RAFTFS_CA=") {
            ca = Some(v.to_string());
        }
        if let Some(v) = line.strip_prefix("ns1: --fs ") {
            members = Some(v.to_string());
        }
        if let Some(v) = line.strip_prefix("export HADOOP_CONF_DIR=") {
            conf = Some(v.to_string());
        }
        if line.starts_with("Press Ctrl-C") {
            break;
        }
    }
    let (ca, members, conf) = (
        ca.expect("RAFTFS_CA"),
        members.expect("ns1's --fs"),
        conf.expect("HADOOP_CONF_DIR"),
    );
    let dfs = |args: &[&str]| {
        let out = Command::new(common::BIN)
            .env("RAFTFS_CA", &ca)
            .args(["dfs", "--fs", &members])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    dfs(&["-mkdir", "-p", "/user/alice", "/user/bob"]);
    dfs(&["-chown", "alice", "/user/alice"]);
    dfs(&["-chown", "bob", "/user/bob"]);
    dfs(&["-mkdir", "-p", "/user/alice/data"]);
    dfs(&["-chown", "alice", "/user/alice/data"]);

    // Files the SDK writes (one of four 1 MiB blocks), for hdfs-native to
    // read over DataTransferProtocol.
    let written: Vec<(String, Vec<u8>)> = FILE_SIZES
        .iter()
        .map(|n| (format!("/user/alice/data/f{n}"), pattern(*n)))
        .collect();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let fs = alice_sdk(&ca, &members);
        for (path, data) in &written {
            let mut w = fs
                .create_file_opt(path, false, None, 3, MULTI_BLOCK_SIZE_BYTES, true)
                .await
                .unwrap();
            w.write(data).await.unwrap();
            w.close().await.unwrap();
        }
    });
    let read_dir = tempfile::tempdir().unwrap();
    // The script kills this member mid-write (the write goes on).
    let (leader_id, _) = ipc::hadoop_leader(&members).expect("a leader serves Hadoop RPC");
    let leader_pid = dir.path().join(format!("ns1/m{leader_id}.pid"));

    let out = Command::new(PYTHON)
        .arg(SCRIPT)
        .args(["--home", "/user/alice", "--others", "/user/bob"])
        .args(["--read-dir", read_dir.path().to_str().unwrap()])
        .args(["--write-dir", "/user/alice/written"])
        .args(["--kill-mid-write", leader_pid.to_str().unwrap()])
        .args(written.iter().map(|(p, _)| format!("--read={p}")))
        .env("HADOOP_CONF_DIR", &conf)
        .env("HADOOP_USER_NAME", "alice")
        .output()
        .expect("run hdfs-native");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    print!("{stdout}");

    // What hdfs-native wrote (several packets, four blocks, an append) the SDK reads.
    let sdk_read = rt.block_on(async {
        let fs = alice_sdk(&ca, &members);
        let mut out = Vec::new();
        for name in WRITE_SIZES
            .iter()
            .map(|n| format!("w{n}"))
            .chain(["appended".to_string(), "across-failover".to_string()])
        {
            let path = format!("/user/alice/written/{name}");
            let data = match fs.open(&path).await {
                Ok(mut r) => r.read_to_end().await.map_err(|e| e.to_string()),
                Err(e) => Err(e.to_string()),
            };
            out.push((name, data));
        }
        out
    });
    // The raw protocol checks run against the leader: the member whose
    // Hadoop RPC answers getFileInfo.
    let leader = ipc::hadoop_leader(&members).map(|(_, addr)| addr);
    let checksummed = format!("/user/alice/written/w{}", WRITE_SIZES[2]);
    let sdk_checksum = rt.block_on(async {
        let fs = alice_sdk(&ca, &members);
        fs.file_checksum(&checksummed).await.map(|c| c.bytes)
    });
    let raw = leader.map(|addr| {
        std::panic::catch_unwind(|| {
            ipc::ipc_server_refuses_bad_input_and_goes_on(&addr);
            data_transfer::read_block_needs_its_token(&addr);
            ipc::cluster_and_file_calls_answer_as_hdfs(&addr, &raftfs_client::Identity::resolve(None).user);
            data_transfer::data_port_refuses_bad_input_and_goes_on(&addr);
            data_transfer::block_checksums_agree_with_the_sdk(
                &addr,
                &checksummed,
                &sdk_checksum.expect("the SDK's -checksum"),
            );
            ipc::followers_serve_observer_reads(&rt, &conf, &members, &ca);
            let (path, data) =
                data_transfer::hdfs_native_rebuilds_its_pipeline_when_a_datanode_dies(&rt, &conf, &addr, dir.path());
            let read = rt.block_on(async {
                let fs = alice_sdk(&ca, &members);
                fs.open(&path).await.unwrap().read_to_end().await.unwrap()
            });
            assert!(
                read == data,
                "{path}: the SDK read {} bytes, hdfs-native wrote {}",
                read.len(),
                data.len()
            );
        })
    });
    drop(dev);
    assert!(out.status.success(), "hdfs-native failed:\n{stdout}\n{stderr}");
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
    // What hdfs-native read is what the SDK wrote, whole and in ranges.
    for (path, data) in &written {
        let name = path.rsplit('/').next().unwrap();
        let got = std::fs::read(read_dir.path().join(name)).unwrap();
        assert!(got == *data, "{path}: read {} bytes, wrote {}", got.len(), data.len());
        if data.len() > RANGE_AT {
            let range = std::fs::read(read_dir.path().join(format!("{name}.range"))).unwrap();
            let end = (RANGE_AT + RANGE_LEN).min(data.len());
            assert!(range == data[RANGE_AT..end], "{path}: the range read differs");
        }
    }
    let raw = raw.expect("one member (the leader) answers getFileInfo");
    if let Err(e) = raw {
        std::panic::resume_unwind(e);
    }
}
