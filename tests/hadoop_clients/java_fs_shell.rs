//! Hadoop's own Java client: `FsShell`, what `hadoop fs` runs, from
//! Hadoop 3.3.4's client jars (`scripts/setup.sh` fetches them into
//! `target/hadoop-java/jars`), configured by nothing but the
//! `HADOOP_CONF_DIR` `raftfs dev` writes: the federated namespace through
//! the routers (fs.defaultFS) and one nameservice directly.
//!
//! What it shows: directories, a put of a file of four blocks and its get,
//! appends (Java's append sets its pipeline up with the block's length in
//! `minBytesRcvd` and the file's block size in the header, which the
//! DataNode once took for the length), a file still being written read up
//! to what was hflushed (Java asks a DataNode over ClientDatanodeProtocol
//! how long the last block is), `-checksum` equal to raftfs's,
//! rename, count, a put that goes on when a DataNode of its pipeline or
//! its nameservice's leader is killed, delete; and the errors an HDFS user knows, word for word
//! where FsShell prints them: not found, exists, permission denied, ACLs
//! disabled, a rename across nameservices refused.

use std::process::Command;

use super::*;

const JARS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/hadoop-java/jars");
/// Blocks of the files FsShell writes here (`-D dfs.blocksize`).
const BLOCK_SIZE: &str = "1048576";

/// `hadoop fs` as `user` (SIMPLE authentication), its arguments to come.
fn fs_shell_command(dev: &Dev, user: &str) -> Command {
    let mut java = Command::new("java");
    java.arg("-cp")
        .arg(format!("{JARS}/*:{}", dev.conf))
        .arg("org.apache.hadoop.fs.FsShell")
        .env("HADOOP_USER_NAME", user)
        .env_remove("HADOOP_TOKEN_FILE_LOCATION");
    java
}

/// Run `hadoop fs ARGS` as `user`.
fn fs_shell(dev: &Dev, user: &str, args: &[&str]) -> std::process::Output {
    fs_shell_command(dev, user)
        .args(args)
        .output()
        .expect("run java (scripts/setup.sh installs it)")
}

/// `hadoop fs ARGS` as `user`: whether it succeeded, and its stdout then stderr.
fn hadoop_fs(dev: &Dev, user: &str, args: &[&str]) -> (bool, String) {
    outcome(&fs_shell(dev, user, args))
}

/// `hadoop fs ARGS` as alice, which must succeed; its output.
fn ok(dev: &Dev, args: &[&str]) -> String {
    let (good, text) = hadoop_fs(dev, "alice", args);
    assert!(good, "hadoop fs {args:?} failed: {text}");
    text
}

/// `hadoop fs ARGS` as alice, which must fail saying `says`.
fn refused(dev: &Dev, args: &[&str], says: &str) {
    let (good, text) = hadoop_fs(dev, "alice", args);
    assert!(!good, "hadoop fs {args:?} succeeded: {text}");
    assert!(text.contains(says), "hadoop fs {args:?} should say {says:?}: {text}");
}

#[test]
fn hadoop_fs_of_hadoop_3_works_against_raftfs_dev() {
    assert!(
        std::path::Path::new(JARS).join("hadoop-client-api-3.3.4.jar").exists(),
        "{JARS} is missing Hadoop's client jars: run scripts/setup.sh (scripts/test.sh does)"
    );
    let dev = Dev::start(2);
    let routers = dev.fs("routers");
    dev.dfs(&routers, &["-mkdir", "-p", "/user/alice", "/data/alice"]);
    dev.dfs(&routers, &["-chown", "alice", "/user/alice", "/data/alice"]);
    let local = tempfile::tempdir().unwrap();
    let big = pattern(4 * 1024 * 1024 - 1000);
    let small = b"a small file\n".to_vec();
    let (big_path, small_path) = (local.path().join("big"), local.path().join("small"));
    std::fs::write(&big_path, &big).unwrap();
    std::fs::write(&small_path, &small).unwrap();
    let (big_local, small_local) = (big_path.to_str().unwrap(), small_path.to_str().unwrap());

    // Write, read back, append.
    ok(&dev, &["-mkdir", "-p", "/user/alice/java/d"]);
    ok(
        &dev,
        &[
            "-D",
            &format!("dfs.blocksize={BLOCK_SIZE}"),
            "-put",
            big_local,
            "/user/alice/java/big",
        ],
    );
    ok(&dev, &["-put", small_local, "/user/alice/java/small"]);
    let got = local.path().join("got");
    ok(&dev, &["-get", "/user/alice/java/big", got.to_str().unwrap()]);
    assert!(
        std::fs::read(&got).unwrap() == big,
        "hadoop fs -get returned other bytes than -put wrote"
    );
    ok(&dev, &["-appendToFile", small_local, "/user/alice/java/small"]);
    let cat = ok(&dev, &["-cat", "/user/alice/java/small"]);
    assert_eq!(cat, format!("{0}{0}", String::from_utf8_lossy(&small)), "the append");
    ok(&dev, &["-appendToFile", small_local, "/user/alice/java/big"]);
    let sdk_got = local.path().join("sdk-got");
    dev.dfs(&routers, &["-get", "/user/alice/java/big", sdk_got.to_str().unwrap()]);
    let mut appended = big.clone();
    appended.extend_from_slice(&small);
    assert!(
        std::fs::read(&sdk_got).unwrap() == appended,
        "raftfs reads other bytes than hadoop fs put and appended"
    );

    // A file still being written: FsShell reads what was hflushed, its
    // last block's length asked of a DataNode over ClientDatanodeProtocol
    // (authenticated with the block token, SASL DIGEST-MD5).
    reads_a_file_open_for_writing(&dev, &routers);

    // The same checksum as raftfs's -checksum, from the same DataNodes.
    let java_sum = ok(&dev, &["-checksum", "/user/alice/java/big"]);
    let ours = Command::new(common::BIN)
        .env("RAFTFS_CA", &dev.ca)
        .args(["dfs", "--fs", &routers, "-checksum", "/user/alice/java/big"])
        .output()
        .unwrap();
    let (good, ours) = outcome(&ours);
    assert!(good, "raftfs dfs -checksum: {ours}");
    let sum_of = |line: &str| line.split_whitespace().last().map(str::to_string);
    assert_eq!(
        sum_of(java_sum.trim()),
        sum_of(ours.trim()),
        "hadoop fs -checksum: {java_sum}; raftfs dfs -checksum: {ours}"
    );

    // Rename, list, count; one nameservice directly.
    ok(&dev, &["-mv", "/user/alice/java/small", "/user/alice/java/small2"]);
    let ls = ok(&dev, &["-ls", "/user/alice/java"]);
    assert!(ls.contains("Found 3 items"), "{ls}");
    for name in ["/user/alice/java/big", "/user/alice/java/small2", "/user/alice/java/d"] {
        assert!(
            ls.lines().any(|l| l.ends_with(name) && l.contains("alice")),
            "{name} in {ls}"
        );
    }
    let count = ok(&dev, &["-count", "/user/alice/java"]);
    let fields: Vec<&str> = count.split_whitespace().collect();
    let bytes = (appended.len() + 2 * small.len()).to_string();
    assert_eq!(&fields[..3], ["2", "2", bytes.as_str()], "-count: {count}");
    let direct = ok(&dev, &["-ls", "hdfs://ns1/user/alice/java"]);
    assert!(direct.contains("hdfs://ns1/user/alice/java/small2"), "{direct}");
    ok(&dev, &["-put", small_local, "/data/alice/s"]);
    assert_eq!(ok(&dev, &["-cat", "hdfs://ns2/data/alice/s"]).as_bytes(), &small[..]);

    // The errors of an HDFS user's day.
    refused(
        &dev,
        &["-ls", "/user/alice/nope"],
        "`/user/alice/nope': No such file or directory",
    );
    refused(&dev, &["-mkdir", "/user/alice/java"], "`/user/alice/java': File exists");
    refused(
        &dev,
        &["-mkdir", "/data/not-alices"],
        "Permission denied: user=alice, access=WRITE",
    );
    refused(
        &dev,
        &["-setfacl", "-m", "user:bob:r--", "/user/alice/java/big"],
        "Support for ACLs has been disabled",
    );
    refused(
        &dev,
        &["-mv", "/user/alice/java/big", "/data/alice/big"],
        "a rename cannot cross nameservices",
    );

    // A DataNode of the pipeline killed mid-put: Java rebuilds its
    // pipeline (a new node from getAdditionalDatanode, the replica copied
    // to it with TRANSFER_BLOCK, updatePipeline) and the put completes;
    // the same with ns1's leader killed mid-put (Java fails over).
    put_goes_on_when_a_datanode_dies(&dev);
    put_goes_on_when_the_leader_dies(&dev);

    // Delete.
    ok(&dev, &["-rm", "-r", "/user/alice/java"]);
    let (exists, text) = hadoop_fs(&dev, "alice", &["-test", "-e", "/user/alice/java"]);
    assert!(!exists, "-test -e after -rm -r: {text}");
}

/// The raftfs SDK writes a file of 1 MiB blocks and hflushes, twice (the
/// second time into its second block), leaving it open; each time
/// `hadoop fs -cat` must print exactly what was hflushed; once closed, all.
fn reads_a_file_open_for_writing(dev: &Dev, routers: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fs = alice_sdk(&dev.ca, routers);
    let path = "/user/alice/open-for-writing";
    let data = pattern(1_300_000);
    let mut w = rt
        .block_on(fs.create_file_opt(path, true, None, 3, 1 << 20, true))
        .expect("create");
    for upto in [100_000, data.len()] {
        let from = if upto == 100_000 { 0 } else { 100_000 };
        rt.block_on(async {
            w.write(&data[from..upto]).await?;
            w.hflush().await
        })
        .expect("write and hflush");
        let cat = hadoop_fs_bytes(dev, &["-cat", path]);
        assert_eq!(
            cat.len(),
            upto,
            "hadoop fs -cat of a file open with {upto} bytes hflushed"
        );
        assert!(
            cat == data[..upto],
            "hadoop fs -cat printed other bytes than were hflushed"
        );
    }
    rt.block_on(w.close()).expect("close");
    assert!(hadoop_fs_bytes(dev, &["-cat", path]) == data, "-cat after close");
}

/// `hadoop fs ARGS` as alice, which must succeed; its stdout's bytes.
fn hadoop_fs_bytes(dev: &Dev, args: &[&str]) -> Vec<u8> {
    let out = fs_shell(dev, "alice", args);
    assert!(
        out.status.success(),
        "hadoop fs {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// `hadoop fs -put -` of two and a half 1 MiB blocks from a pipe: once the
/// second block's pipeline of three is up, one of its DataNodes is killed
/// (`kill -9`), then the rest is written. With the replace-on-failure
/// policy ALWAYS (and no best effort), Java must replace the node and
/// finish; its second block has three replicas, none on the dead node.
fn put_goes_on_when_a_datanode_dies(dev: &Dev) {
    let path = "/user/alice/java/datanode-killed";
    let conf = [
        "dfs.client.block.write.replace-datanode-on-failure.policy=ALWAYS",
        "dfs.client.block.write.replace-datanode-on-failure.best-effort=false",
    ];
    let mut victim = String::new();
    let data = put_across_a_fault(dev, (path, path), &conf, |pipeline| {
        victim = pipeline[1].id.datanode_uuid.clone();
        format!("DataNode {}", data_transfer::kill_datanode(dev.dir.path(), &victim))
    });
    let located = data_transfer::hadoop_blocks(&dev.router_rpc, path);
    assert_eq!(located.file_length, data.len() as u64);
    let holders: Vec<&str> = located.blocks[1]
        .locs
        .iter()
        .map(|d| d.id.datanode_uuid.as_str())
        .collect();
    assert_eq!(holders.len(), 3, "the second block kept three replicas: {holders:?}");
    assert!(
        !holders.contains(&victim.as_str()),
        "the dead DataNode was replaced: {holders:?}"
    );
}

/// The same against nameservice ns1 directly (`hdfs://ns1`, Hadoop's
/// ConfiguredFailoverProxyProvider over its members), its leader killed
/// mid-put: Java fails over to the new leader (StandbyException from a
/// follower until one leads) and the put completes.
fn put_goes_on_when_the_leader_dies(dev: &Dev) {
    let path = "/user/alice/java/leader-killed";
    put_across_a_fault(dev, (&format!("hdfs://ns1{path}"), path), &[], |_| {
        let pid_file = dev.leader_pid_file("ns1");
        let pid: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
        assert_eq!(
            unsafe { libc::kill(pid, libc::SIGKILL) },
            0,
            "kill -9 the leader of ns1"
        );
        format!("the leader of ns1 ({})", pid_file.display())
    });
}

/// `hadoop fs [-D CONF]... -put - DEST` (`dest` as a URL and as a path the
/// routers know) of two and a half 1 MiB blocks from a pipe, `fault` run
/// once the second block's pipeline of three is up (it says what it did),
/// the rest written after it. The put must succeed and read back whole;
/// the bytes it wrote.
fn put_across_a_fault(
    dev: &Dev,
    (dest, path): (&str, &str),
    conf: &[&str],
    fault: impl FnOnce(&[raftfs_hadoop::wire::hdfs::DatanodeInfo]) -> String,
) -> Vec<u8> {
    use std::io::Write;
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let block = 1usize << 20;
    let data = pattern(2 * block + 500_000);
    let cut = block + 300_000;
    let mut java = fs_shell_command(dev, "alice");
    java.args(["-D", &format!("dfs.blocksize={BLOCK_SIZE}")]);
    for c in conf {
        java.args(["-D", c]);
    }
    let mut java = java
        .args(["-put", "-", dest])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run java");
    let mut stdin = java.stdin.take().unwrap();
    stdin.write_all(&data[..cut]).unwrap();
    stdin.flush().unwrap();
    // FsShell writes PATH._COPYING_ and renames it at the end.
    let copying = format!("{path}._COPYING_");
    let deadline = Instant::now() + Duration::from_secs(60);
    let pipeline = loop {
        if let Some(lbs) = data_transfer::try_hadoop_blocks(&dev.router_rpc, &copying) {
            if lbs.blocks.len() == 2 && lbs.blocks[1].locs.len() == 3 {
                break lbs.blocks[1].locs.clone();
            }
        }
        assert!(Instant::now() < deadline, "the second block's pipeline never came up");
        std::thread::sleep(Duration::from_millis(100));
    };
    let what = fault(&pipeline);
    stdin.write_all(&data[cut..]).unwrap();
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(120);
    while java.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = java.kill();
            panic!("hadoop fs -put {dest} still runs 120 s after {what} was killed");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let (good, text) = outcome(&java.wait_with_output().unwrap());
    assert!(good, "hadoop fs -put {dest} after {what} was killed: {text}");
    assert!(hadoop_fs_bytes(dev, &["-cat", path]) == data, "-cat of {path}");
    data
}
