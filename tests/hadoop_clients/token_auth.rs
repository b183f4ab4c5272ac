//! Hadoop RPC under `--auth strong`: a Hadoop client (hdfs-native, from
//! PyPI) authenticates with a raftfs delegation token written in Hadoop's
//! token storage format (`raftfs fetchdt --hadoop-token-file`), over SASL
//! TOKEN (DIGEST-MD5), and acts as the token's owner, reads and writes
//! included (the DataNode checks the block tokens). No token, a SIMPLE
//! client, a token whose password is wrong and a cancelled token are refused.

use std::path::Path;
use std::process::Command;

use super::PYTHON;
use crate::common;

/// What the client does with the token: a directory and a file of two
/// packets, read back; prints the directory's owner.
const CLIENT: &str = r#"
import sys
from hdfs_native import Client
security = {"hadoop.security.authentication": "kerberos"} if sys.argv[2] == "token" else {}
c = Client(sys.argv[1], config=security)
c.mkdirs("/user/alice/by-token/d", create_parent=True)
data = bytes(i % 251 for i in range(70000))
with c.create("/user/alice/by-token/f") as w:
    w.write(data)
with c.read("/user/alice/by-token/f") as r:
    assert r.read() == data
print("owner", c.get_file_info("/user/alice/by-token/d").owner)
"#;

/// Run [`CLIENT`] against `hdfs://rpc` with `token_file` (if any) as
/// `HADOOP_TOKEN_FILE_LOCATION`: whether it passed, and its output.
fn hadoop_client(rpc: &str, token_file: Option<&Path>, security: bool) -> (bool, String) {
    let mut cmd = Command::new(PYTHON);
    cmd.args([
        "-c",
        CLIENT,
        &format!("hdfs://{rpc}"),
        if security { "token" } else { "simple" },
    ]);
    cmd.env("HADOOP_USER_NAME", "mallory")
        .env_remove("HADOOP_TOKEN_FILE_LOCATION");
    if let Some(f) = token_file {
        cmd.env("HADOOP_TOKEN_FILE_LOCATION", f);
    }
    super::outcome(&cmd.output().expect("run hdfs-native"))
}

#[test]
fn hadoop_clients_authenticate_with_a_delegation_token_under_strong_auth() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let ports = common::free_ports(2);
    let (rpc, xfer) = (format!("127.0.0.1:{}", ports[0]), format!("127.0.0.1:{}", ports[1]));
    let mut c = common::Cluster::start_with(1, "memory", &["--auth", "strong", "--hadoop-rpc-addr", &rpc]);
    rt.block_on(async {
        // The superuser's certificate (wait_ready asks without one).
        let hdfs = c.certificate_client("hdfs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while let Err(e) = hdfs.mkdirs("/user/alice", None).await {
            assert!(std::time::Instant::now() < deadline, "the member never served: {e}");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        hdfs.set_owner("/user/alice", Some("alice"), None).await.unwrap();
    });
    c.start_datanodes(1, &["--hadoop-xfer-addr", &xfer]);
    rt.block_on(async {
        let hdfs = c.certificate_client("hdfs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let report = hdfs.admin(raftfs_proto::AdminOp::DatanodeReport).await;
            if matches!(&report, Ok(raftfs_proto::AdminResult::Datanodes(d)) if d.iter().any(|n| n.live)) {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no DataNode registered: {report:?}"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });

    // Alice, whom her certificate authenticates, fetches a token for Hadoop's clients.
    let dir = tempfile::tempdir().unwrap();
    let (token, hadoop_token) = (dir.path().join("alice.token"), dir.path().join("alice.hadoop-token"));
    let out = c
        .cli()
        .env(raftfs_client::CREDENTIALS_ENV, c.user_credentials("alice"))
        .args([
            "fetchdt",
            "--fs",
            &c.fs_uri(),
            "--hadoop-nameservice",
            &rpc,
            "--hadoop-token-file",
        ])
        .arg(&hadoop_token)
        .arg(&token)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));

    // With it, the client is alice (whatever HADOOP_USER_NAME says), and writes and reads.
    let (ok, text) = hadoop_client(&rpc, Some(&hadoop_token), true);
    assert!(ok, "the client with alice's token: {text}");
    assert!(text.contains("owner alice"), "{text}");

    // A SIMPLE client (the server's fatal answer reaches hdfs-native as a
    // closed connection), and a client with no token, are refused.
    let (ok, text) = hadoop_client(&rpc, None, false);
    assert!(!ok && !text.contains("owner"), "a SIMPLE client: {text}");
    let (ok, text) = hadoop_client(&rpc, None, true);
    assert!(!ok && !text.contains("owner"), "a client without a token: {text}");

    // A token whose password is wrong (its last byte changed) proves nothing.
    let mut forged = std::fs::read(&hadoop_token).unwrap();
    let at = forged.len() - 1 - (1 + "HDFS_DELEGATION_TOKEN".len()) - (1 + rpc.len()) - 1;
    forged[at] ^= 0x55;
    let forged_file = dir.path().join("forged.hadoop-token");
    std::fs::write(&forged_file, forged).unwrap();
    let (ok, text) = hadoop_client(&rpc, Some(&forged_file), true);
    assert!(
        !ok && text.contains("AccessControlException"),
        "a forged password: {text}"
    );

    // Once alice cancels it, the token opens nothing.
    let out = c
        .cli()
        .env(raftfs_client::CREDENTIALS_ENV, c.user_credentials("alice"))
        .args(["fetchdt", "--fs", &c.fs_uri(), "--cancel"])
        .arg(&token)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let (ok, text) = hadoop_client(&rpc, Some(&hadoop_token), true);
    assert!(!ok && text.contains("can't be found"), "a cancelled token: {text}");
}
