//! `raftfs dev --auth strong`, as a new user runs it: the one command
//! leaves a cluster where every call authenticates, the dev user's
//! certificate for raftfs's own tools (`RAFTFS_CREDENTIALS`), and delegation
//! tokens for Hadoop's clients (`HADOOP_TOKEN_FILE_LOCATION`), with which
//! hdfs-native writes and reads through the router (SASL TOKEN with a
//! routers' token) and straight from a nameservice's members (with that
//! nameservice's token), as the tokens' owner whatever user it claims.
//! Without a credential, both are refused.

use std::process::Command;

use super::{Dev, PYTHON};
use crate::common;

/// Writes and reads a file of two packets through the default file
/// system (the routers), reads it back from `hdfs://ns1`, and prints its
/// owner as each sees it.
const CLIENT: &str = r#"
import sys
from hdfs_native import Client
home = sys.argv[1]
routers, ns1 = Client(), Client("hdfs://ns1")
routers.mkdirs(home + "/by-token", create_parent=True)
data = bytes(i % 251 for i in range(70000))
with routers.create(home + "/by-token/f") as w:
    w.write(data)
with routers.read(home + "/by-token/f") as r:
    assert r.read() == data
with ns1.read(home + "/by-token/f") as r:
    assert r.read() == data
print("owner", routers.get_file_info(home + "/by-token/f").owner, ns1.get_file_info(home + "/by-token").owner)
"#;

/// Run [`CLIENT`] with `dev`'s Hadoop configuration, claiming to be
/// mallory, with the token file if `tokens`: whether it passed, and its output.
fn hadoop_client(dev: &Dev, home: &str, tokens: bool) -> (bool, String) {
    let mut cmd = Command::new(PYTHON);
    cmd.args(["-c", CLIENT, home])
        .env("HADOOP_CONF_DIR", &dev.conf)
        .env("HADOOP_USER_NAME", "mallory")
        .env_remove("HADOOP_TOKEN_FILE_LOCATION");
    if tokens {
        cmd.env(
            "HADOOP_TOKEN_FILE_LOCATION",
            dev.hadoop_tokens
                .as_deref()
                .expect("dev printed HADOOP_TOKEN_FILE_LOCATION"),
        );
    }
    let (ok, text) = super::outcome(&cmd.output().expect("run hdfs-native"));
    println!("hdfs-native (tokens: {tokens}): {text}");
    (ok, text)
}

/// `raftfs dfs --fs FS ARGS` with `env`: (success, stdout and stderr).
fn dfs(fs: &str, env: (&str, &str), args: &[&str]) -> (bool, String) {
    let out = Command::new(common::BIN)
        .env_remove(raftfs_client::CREDENTIALS_ENV)
        .env_remove("RAFTFS_CA")
        .env(env.0, env.1)
        .args(["dfs", "--fs", fs])
        .args(args)
        .output()
        .unwrap();
    super::outcome(&out)
}

#[test]
fn raftfs_dev_auth_strong_serves_certificates_and_hadoop_tokens() {
    let dev = Dev::start_with(1, 1, &["--auth", "strong"]);
    let credentials = dev.credentials.clone().expect("dev printed RAFTFS_CREDENTIALS");
    // The dev user: the one the certificate was issued to (DIR/users/<user>).
    let me = std::path::Path::new(&credentials)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let home = format!("/user/{me}");
    let routers = dev.fs("routers");

    // raftfs's tools: with the certificate, yes; with the CA alone, refused.
    let (ok, text) = dfs(
        &routers,
        (raftfs_client::CREDENTIALS_ENV, &credentials),
        &["-mkdir", "-p", &home],
    );
    assert!(ok, "with the dev user's certificate: {text}");
    let (ok, text) = dfs(&routers, ("RAFTFS_CA", &dev.ca), &["-ls", "/"]);
    assert!(
        !ok && text.contains("strong authentication"),
        "without a certificate: {text}"
    );

    // Hadoop's clients: with the tokens, as their owner through the router
    // and from the nameservice; without, refused.
    let (ok, text) = hadoop_client(&dev, &home, true);
    assert!(ok, "hdfs-native with dev's tokens: {text}");
    assert!(text.contains(&format!("owner {me} {me}")), "{text}");
    let (ok, text) = hadoop_client(&dev, &format!("{home}/again"), false);
    assert!(!ok && !text.contains("owner"), "hdfs-native without tokens: {text}");
}
