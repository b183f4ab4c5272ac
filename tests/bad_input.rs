//! Bad input gets a typed error and a clear message; nothing panics and
//! nothing is half-applied.

use crate::common;

use std::io::{Read, Write};
use std::process::Command;

use raftfs_proto::{codec, pb, FsError, OpResult};

type Client = pb::namespace_client::NamespaceClient<tonic::transport::Channel>;

/// Send one raw request and decode the typed result in the reply.
async fn send(c: &mut Client, req: pb::CallRequest) -> Result<OpResult, FsError> {
    let reply = c.call(req).await.expect("transport").into_inner();
    codec::decode(&reply.result_bin, "reply").expect("a decodable reply")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_on_the_grpc_port_leaves_the_member_serving() {
    let cluster = common::Cluster::start(3, "rocksdb");
    cluster.wait_ready().await;
    for addr in cluster.members.values() {
        for garbage in [
            &b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"[..],
            &[0xffu8; 4096][..],
            b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00",
        ] {
            let mut s = std::net::TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(std::time::Duration::from_secs(2))).unwrap();
            let _ = s.write_all(garbage);
            let mut buf = [0u8; 256];
            let _ = s.read(&mut buf);
        }
    }
    // Every member still answers.
    let fs = cluster.client("hdfs", &["hdfs"]);
    assert!(fs.mkdirs("/still/alive", None).await.unwrap());
    assert!(fs.get_file_status("/still/alive").await.unwrap().is_dir());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_op_payload_is_a_typed_error() {
    let cluster = common::Cluster::start(1, "memory");
    cluster.wait_ready().await;
    let addr = cluster.members[&1].clone();
    let mut c = cluster.namespace_client(&addr).await;
    let ctx = || {
        Some(pb::CallContext {
            client_id: "c".into(),
            call_id: 1,
            user: "hdfs".into(),
            groups: vec![],
            delegation_token: Vec::new(),
            federation_version: 0,
        })
    };
    for payload in [
        vec![],
        vec![0xff; 64],
        vec![0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f],
    ] {
        let r = send(
            &mut c,
            pb::CallRequest {
                ctx: ctx(),
                op_bin: payload,
                ..Default::default()
            },
        )
        .await;
        assert!(matches!(r, Err(FsError::InvalidArgument(_))), "{r:?}");
    }
    // No context at all.
    let r = send(
        &mut c,
        pb::CallRequest {
            ctx: None,
            op_bin: vec![],
            ..Default::default()
        },
    )
    .await;
    assert!(matches!(r, Err(FsError::InvalidArgument(_))), "{r:?}");
    // An empty user is refused as an unknown user.
    let op = codec::encode(&raftfs_proto::Op::GetFileInfo { path: "/".into() }).unwrap();
    let bad_ctx = Some(pb::CallContext {
        client_id: "c".into(),
        call_id: 2,
        user: "".into(),
        groups: vec![],
        delegation_token: Vec::new(),
        federation_version: 0,
    });
    let r = send(
        &mut c,
        pb::CallRequest {
            ctx: bad_ctx,
            op_bin: op,
            ..Default::default()
        },
    )
    .await;
    assert!(matches!(r, Err(FsError::AccessControl(_))), "{r:?}");
}

#[test]
fn member_refuses_unformatted_and_foreign_directories() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(common::BIN)
        .args(["metaserver", "--id", "1"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is not formatted") && err.contains("raftfs format"),
        "{err}"
    );

    let out = Command::new(common::BIN)
        .args([
            "format",
            "--member-id",
            "1",
            "--members",
            "1=127.0.0.1:1",
            "--cluster-id",
            "CID-a",
            "--insecure",
        ])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = Command::new(common::BIN)
        .args(["metaserver", "--id", "1", "--cluster-id", "CID-b"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("belongs to cluster CID-a, not CID-b"), "{err}");

    let out = Command::new(common::BIN)
        .args(["metaserver", "--id", "2"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("belongs to member 1, not 2"));

    let out = Command::new(common::BIN)
        .args(["format", "--member-id", "1", "--members", "1=127.0.0.1:1"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("already formatted"));
    // A router refuses a member's directory (and a member a router's).
    let out = Command::new(common::BIN)
        .args(["router", "run", "--id", "1", "--insecure"])
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a METASERVER directory, not a ROUTER one"), "{err}");
}

#[test]
fn bad_cli_arguments_are_reported() {
    for (args, want) in [
        (
            vec!["format", "--dir", "/tmp/x", "--member-id", "1", "--members", "1=nohost"],
            "is not HOST:PORT",
        ),
        (
            vec!["format", "--dir", "/tmp/x", "--member-id", "4", "--members", "1=a:1"],
            "not among --members",
        ),
        (
            vec![
                "format",
                "--dir",
                "/tmp/x",
                "--member-id",
                "1",
                "--members",
                "1=a:1",
                "--namespace-id",
                "0",
                "--insecure",
            ],
            "--namespace-id 0 is reserved",
        ),
        (
            vec![
                "router",
                "format",
                "--dir",
                "/tmp/x",
                "--id",
                "2",
                "--routers",
                "1=a:1",
                "--cluster-id",
                "C",
            ],
            "not among --routers",
        ),
        (vec!["routeradmin", "-ls"], "pass --router"),
        (
            vec!["routeradmin", "--router", "raftfs://h:1", "-frobnicate"],
            "unknown or malformed command",
        ),
        (
            vec!["routeradmin", "--router", "raftfs://h:1", "-add", "/a"],
            "-add needs",
        ),
        (vec!["dfs", "--fs", "raftfs://", "-ls", "/"], "no member address"),
        (vec!["dfs", "--fs", "raftfs://h:1", "-frobnicate"], "Unknown command"),
        (
            vec!["metaserver", "--dir", "/nonexistent", "--id", "1", "--store", "tape"],
            "unknown store",
        ),
    ] {
        let out = Command::new(common::BIN).args(&args).output().unwrap();
        assert!(!out.status.success(), "{args:?} succeeded");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn a_client_command_whose_reader_goes_away_stops_quietly() {
    // `raftfs dfs -help | head -0`: the reader is gone before the command
    // prints (the pipe's read end is closed before the process has even
    // started up), so its first write fails with a broken pipe.
    let mut child = Command::new(common::BIN)
        .args(["dfs", "-help"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    // 141 as a shell reports a process stopped by SIGPIPE; 0 only if the
    // command printed before the pipe closed.
    assert!(
        matches!(out.status.code(), Some(141) | Some(0)),
        "{:?}: {err}",
        out.status
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retried_calls_are_answered_from_the_retry_table() {
    let cluster = common::Cluster::start(1, "rocksdb");
    cluster.wait_ready().await;
    let addr = cluster.members[&1].clone();
    let mut c = cluster.namespace_client(&addr).await;
    let ctx = |call_id| {
        Some(pb::CallContext {
            client_id: "retrier".into(),
            call_id,
            user: "hdfs".into(),
            groups: vec![],
            delegation_token: Vec::new(),
            federation_version: 0,
        })
    };
    let call = |op: raftfs_proto::Op, call_id| pb::CallRequest {
        ctx: ctx(call_id),
        op_bin: codec::encode(&op).unwrap(),
        ..Default::default()
    };
    let create = raftfs_proto::Op::Create {
        path: "/once".into(),
        permission: raftfs_proto::Permission(0o644),
        overwrite: false,
        create_parent: true,
        replication: 3,
        block_size: 128 * 1024 * 1024,
    };
    let first = send(&mut c, call(create.clone(), 7)).await;
    // The same call again (a retry after a lost reply): the first result, not FileAlreadyExists.
    let retry = send(&mut c, call(create.clone(), 7)).await;
    assert_eq!(first, retry);
    assert!(first.is_ok());
    // A new call with the same op is a new create and fails.
    let again = send(&mut c, call(create, 8)).await;
    assert!(matches!(again, Err(FsError::FileAlreadyExists(_))), "{again:?}");
    // delete twice with one call id: true both times (not true then false).
    let del = raftfs_proto::Op::Delete {
        path: "/once".into(),
        recursive: false,
    };
    let d1 = send(&mut c, call(del.clone(), 9)).await;
    let d2 = send(&mut c, call(del, 9)).await;
    assert_eq!(d1, Ok(OpResult::Bool(true)));
    assert_eq!(d2, Ok(OpResult::Bool(true)));
}
