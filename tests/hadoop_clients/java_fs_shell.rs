//! Hadoop's own Java client: `FsShell`, what `hadoop fs` runs, from
//! Hadoop 3.3.4's client jars (`scripts/setup.sh` fetches them into
//! `target/hadoop-java/jars`), configured by nothing but the
//! `HADOOP_CONF_DIR` `raftfs dev` writes: the federated namespace through
//! the routers (fs.defaultFS) and one nameservice directly.
//!
//! What it shows: directories, a put of a file of four blocks and its get,
//! appends (Java's append sets its pipeline up with the block's length in
//! `minBytesRcvd` and the file's block size in the header, which the
//! DataNode once took for the length), `-checksum` equal to raftfs's,
//! rename, count, delete; and the errors an HDFS user knows, word for word
//! where FsShell prints them: not found, exists, permission denied, ACLs
//! disabled, a rename across nameservices refused.

use std::process::Command;

use super::*;

const JARS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/hadoop-java/jars");
/// Blocks of the files FsShell writes here (`-D dfs.blocksize`).
const BLOCK_SIZE: &str = "1048576";

/// `hadoop fs ARGS` as `user` (SIMPLE authentication): whether it
/// succeeded, and its stdout then stderr.
fn hadoop_fs(dev: &Dev, user: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new("java")
        .arg("-cp")
        .arg(format!("{JARS}/*:{}", dev.conf))
        .arg("org.apache.hadoop.fs.FsShell")
        .args(args)
        .env("HADOOP_USER_NAME", user)
        .env_remove("HADOOP_TOKEN_FILE_LOCATION")
        .output()
        .expect("run java (scripts/setup.sh installs it)");
    outcome(&out)
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

    // Delete.
    ok(&dev, &["-rm", "-r", "/user/alice/java"]);
    let (exists, text) = hadoop_fs(&dev, "alice", &["-test", "-e", "/user/alice/java"]);
    assert!(!exists, "-test -e after -rm -r: {text}");
}
