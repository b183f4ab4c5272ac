//! Mutual TLS inside the cluster, one refusal per test: Raft messages need
//! a member certificate, DatanodeProtocol a DataNode certificate, a
//! DataNode certificate gives no say in administration, another cluster's
//! certificate fails the handshake, a client without the CA cannot start
//! and a plaintext client cannot talk to a TLS member. Each refusal is a
//! typed error and changes nothing. `--insecure` is run once, end to end.

use crate::common;

use std::path::Path;
use std::time::Duration;

use common::Cluster;
use raftfs_proto::{codec, pb, AdminOp, AdminResult, FsError};
use raftfs_trust::{Dialer, NodeCredentials, PeerRole};

fn dialer_of(dir: &Path) -> Dialer {
    NodeCredentials::load(dir).expect("credentials").dialer()
}

async fn raft_client(d: &Dialer, addr: &str) -> pb::raft_client::RaftClient<tonic::transport::Channel> {
    let ep = d.endpoint(addr, PeerRole::Member).unwrap();
    pb::raft_client::RaftClient::new(ep.connect().await.expect("connect"))
}

async fn term(c: &Cluster, addr: &str) -> u64 {
    let mut nc = c.namespace_client(addr).await;
    nc.member_info(pb::MemberInfoRequest {})
        .await
        .unwrap()
        .into_inner()
        .term
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raft_messages_need_a_member_certificate() {
    let c = Cluster::start(1, "memory");
    c.wait_ready().await;
    let addr = c.members[&1].clone();
    let before = term(&c, &addr).await;
    // A vote for a huge term would depose the leader if it were heard.
    let vote = || pb::RaftMessage {
        data_bin: b"not even a vote".to_vec(),
        cluster_id: c.ids.0.clone(),
        namespace_id: c.ids.1.parse().unwrap(),
    };

    // A client: the CA is trusted, no certificate presented.
    let client = Dialer::trusting(&c.ca_cert()).unwrap();
    let e = raft_client(&client, &addr).await.vote(vote()).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(
        e.message().contains("Raft Vote is only for a member") && e.message().contains("no certificate"),
        "{e:?}"
    );

    // A DataNode's certificate is not a member's.
    let dn = dialer_of(&c.issue_credentials("datanode", "dn9"));
    let e = raft_client(&dn, &addr).await.append_entries(vote()).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("the caller is datanode dn9 of cluster"), "{e:?}");

    // A member certificate gets past the check (and then fails on the
    // payload, which is not a vote): the check is what refused the others.
    let m = dialer_of(&c.issue_credentials("member", "7"));
    let e = raft_client(&m, &addr).await.vote(vote()).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::InvalidArgument, "{e:?}");

    assert_eq!(term(&c, &addr).await, before, "nothing refused changed the term");
    c.client("hdfs", &["hdfs"])
        .mkdirs("/still-serving", None)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn datanode_protocol_needs_a_datanode_certificate_and_grants_no_administration() {
    let c = Cluster::start(1, "memory");
    c.wait_ready().await;
    let addr = c.members[&1].clone();
    let client = Dialer::trusting(&c.ca_cert()).unwrap();
    let ep = client.endpoint(&addr, PeerRole::Member).unwrap();
    let mut dp = pb::datanode_protocol_client::DatanodeProtocolClient::new(ep.connect().await.unwrap());
    let e = dp
        .register_datanode(pb::DnMessage { data_bin: vec![] })
        .await
        .unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("only for a DataNode"), "{e:?}");

    // A DataNode asks to add a member, naming the superuser: refused for
    // what its certificate says it is, whoever it claims to act for.
    let dn = dialer_of(&c.issue_credentials("datanode", "dn1"));
    let ep = dn.endpoint(&addr, PeerRole::Member).unwrap();
    let mut ns = pb::namespace_client::NamespaceClient::new(ep.connect().await.unwrap());
    let add = pb::CallRequest {
        ctx: Some(pb::CallContext {
            client_id: "dn".into(),
            call_id: 1,
            user: "hdfs".into(),
            groups: vec![],
            delegation_token: Vec::new(),
            federation_version: 0,
        }),
        op_bin: codec::encode(&AdminOp::AddMember {
            id: 9,
            addr: "127.0.0.1:1".into(),
        })
        .unwrap(),
        ..Default::default()
    };
    let e = ns.admin(add).await.unwrap_err();
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("administration is for operators"), "{e:?}");
    let (code, out, err) = c.haadmin("hdfs", &["-getAllServiceState"]);
    assert_eq!(code, 0, "{err}");
    let members = out
        .lines()
        .filter(|l| l.starts_with(|ch: char| ch.is_ascii_digit()))
        .count();
    assert_eq!(members, 1, "still one member:\n{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_clusters_certificates_and_plaintext_are_refused() {
    let a = Cluster::start(1, "memory");
    let b = Cluster::start(1, "memory");
    a.wait_ready().await;
    let addr = a.members[&1].clone();

    // B's member certificate: A's member does not know B's CA.
    let b_member = dialer_of(&b.dir(1).join("tls"));
    let ep = b_member.endpoint(&addr, PeerRole::Member).unwrap();
    let r = tokio::time::timeout(Duration::from_secs(10), ep.connect())
        .await
        .unwrap();
    let e = r.expect_err("A's member takes B's certificate");
    let chain = format!("{e:?}");
    assert!(chain.contains("ertificate"), "a certificate error: {chain}");

    // A client trusting only B's CA does not accept A's member.
    let opts = raftfs_client::ClientOptions {
        tls: raftfs_client::ClientTls::CaFile(b.ca_cert()),
        call_deadline_ms: 2_000,
        ..Default::default()
    };
    let fs =
        raftfs_client::FileSystem::connect(&a.fs_uri(), raftfs_client::Identity::new("hdfs", &["hdfs"]), opts).unwrap();
    let e = fs.get_file_status("/").await.unwrap_err();
    assert!(e.is_retryable(), "an unreachable cluster, as the client sees it: {e:?}");

    // Plaintext against TLS: no answer either.
    let opts = raftfs_client::ClientOptions {
        tls: raftfs_client::ClientTls::Insecure,
        call_deadline_ms: 2_000,
        ..Default::default()
    };
    let fs =
        raftfs_client::FileSystem::connect(&a.fs_uri(), raftfs_client::Identity::new("hdfs", &["hdfs"]), opts).unwrap();
    assert!(fs.get_file_status("/").await.is_err());

    // The CLI with neither RAFTFS_CA nor RAFTFS_INSECURE says what to set.
    let out = std::process::Command::new(common::BIN)
        .args(["dfs", "--fs", &a.fs_uri(), "-ls", "/"])
        .env_remove(raftfs_client::CA_ENV)
        .env_remove(raftfs_client::INSECURE_ENV)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("RAFTFS_CA") && err.contains("RAFTFS_INSECURE"), "{err}");

    // A's own clients are served throughout.
    a.client("hdfs", &["hdfs"]).mkdirs("/a-is-fine", None).await.unwrap();
    let e = raftfs_client::ClientTls::CaFile(a.root.path().join("nothing.crt"))
        .dialer()
        .unwrap_err();
    assert!(matches!(e, FsError::InvalidArgument(_)), "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_refuses_credentials_that_are_not_its_own() {
    let c = Cluster::start(1, "memory");
    c.wait_ready().await;
    let other = c.issue_credentials("member", "2");
    let out = std::process::Command::new(common::BIN)
        .args(["metaserver", "--id", "1", "--listen", "127.0.0.1:0"])
        .arg("--dir")
        .arg(c.dir(1))
        .arg("--tls-dir")
        .arg(&other)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("holds the certificate of member 2"), "{err}");
    let out = std::process::Command::new(common::BIN)
        .args(["datanode", "--listen", "127.0.0.1:0", "--nameservice", &c.fs_uri()])
        .arg("--dir")
        .arg(c.root.path().join("dn-x"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tls-dir") && err.contains("--insecure"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_insecure_cluster_serves_files_in_plaintext() {
    let mut c = Cluster::start_with(3, "memory", &["--insecure", "--safemode-extension-ms", "0"]);
    c.start_datanodes(3, &[]);
    c.wait_ready().await;
    c.wait_datanodes(3).await;
    let local = c.root.path().join("hello.txt");
    std::fs::write(&local, b"in the clear\n").unwrap();
    let (code, _, err) = c.dfs("hdfs", &["-put", local.to_str().unwrap(), "/hello"]);
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = c.dfs("hdfs", &["-cat", "/hello"]);
    assert_eq!((code, out.as_str()), (0, "in the clear\n"), "{err}");
    let fs = c.client("hdfs", &["hdfs"]);
    match fs.admin(AdminOp::DatanodeReport).await.unwrap() {
        AdminResult::Datanodes(d) => assert_eq!(d.iter().filter(|x| x.live).count(), 3),
        other => panic!("{other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_datanode_uuid_belongs_to_the_certificate_that_registered_it() {
    let mut c = Cluster::start_with(1, "memory", &["--safemode-extension-ms", "0"]);
    c.start_datanodes(1, &[]);
    c.wait_ready().await;
    c.wait_datanodes(1).await;
    let fs = c.client("hdfs", &["hdfs"]);
    let AdminResult::Datanodes(nodes) = fs.admin(AdminOp::DatanodeReport).await.unwrap() else {
        panic!("not a DataNode report")
    };
    let real = nodes[0].id.clone();

    // DataNode "dn2" (a valid DataNode certificate) registers under dn1's UUID.
    let thief = dialer_of(&c.issue_credentials("datanode", "dn2"));
    let ep = thief.endpoint(&c.members[&1], PeerRole::Member).unwrap();
    let mut dp = pb::datanode_protocol_client::DatanodeProtocolClient::new(ep.connect().await.unwrap());
    let reg = raftfs_proto::datanode::Registration {
        id: raftfs_proto::DatanodeId {
            addr: "127.0.0.1:1".into(),
            ..real.clone()
        },
        cluster_id: c.ids.0.clone(),
        block_pool_id: c.ids.2.clone(),
        storage_ids: vec!["DS-stolen".into()],
        http_addr: String::new(),
        hadoop_xfer_addr: String::new(),
    };
    let reply = dp
        .register_datanode(pb::DnMessage {
            data_bin: codec::encode(&reg).unwrap(),
        })
        .await
        .unwrap()
        .into_inner();
    let r: Result<(), FsError> = codec::decode(&reply.data_bin, "reply").unwrap();
    match r {
        Err(FsError::AccessControl(m)) => {
            assert!(m.contains("registered with the certificate of DataNode dn1"), "{m}")
        }
        other => panic!("the UUID was taken over: {other:?}"),
    }
    let AdminResult::Datanodes(nodes) = fs.admin(AdminOp::DatanodeReport).await.unwrap() else {
        panic!("not a DataNode report")
    };
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].id.addr, real.addr, "dn1's traffic still goes to dn1");
}
