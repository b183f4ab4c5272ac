//! Data protection (HDFS `dfs.data.transfer.protection`), one refusal at a
//! time. At `authentication` (the default) clients read and write blocks
//! over plaintext, each request showing a fresh proof of its block token:
//! the token itself over plaintext, a forged, altered, stale or replayed
//! proof, and the DataNode-only recovery calls are refused and change
//! nothing; the SDK's reads and writes (three-node pipelines included) work
//! that way. At `privacy` the members sign the level into their tokens,
//! and a proof of such a token is refused over plaintext, and on Hadoop's
//! data transfer port (which has no encryption), while the SDK reads and
//! writes in TLS.

use crate::common;

use common::http::{get, sample, samples};
use common::Cluster;
use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_hadoop::wire::datatransfer::{
    BaseHeader, BlockOpResponse, ClientOperationHeader, OpReadBlock, DATA_TRANSFER_VERSION, OP_READ_BLOCK,
    STATUS_ERROR_ACCESS_TOKEN,
};
use raftfs_hadoop::wire::hdfs::{ExtendedBlock, Token};
use raftfs_proto::datanode::{from_status, InitRecovery, ReadHeader, ReplicaQuery};
use raftfs_proto::pb::data_transfer_client::DataTransferClient;
use raftfs_proto::pb::{DnMessage, ReadBlockRequest};
use raftfs_proto::{
    codec, AccessMode, AccessModes, BlockToken, BlockTokenProof, DataProtection, FsError, LocatedBlock,
};
use raftfs_trust::block_token::{prove, BLOCK_PROOF_SKEW_MS};
use raftfs_trust::clock::wall_clock_ms;
use tonic::transport::{Channel, Endpoint};

/// A client of the DataNode at `addr` over plaintext (HTTP/2 without TLS).
async fn plaintext(addr: &str) -> DataTransferClient<Channel> {
    let ep = Endpoint::from_shared(format!("http://{addr}")).unwrap();
    DataTransferClient::new(ep.connect().await.expect("connect to the DataNode over plaintext"))
}

/// Read a whole block over plaintext showing `token` and/or `proof`.
async fn read_plain(
    pool: &str,
    lb: &LocatedBlock,
    token: Option<BlockToken>,
    proof: Option<BlockTokenProof>,
) -> Result<Vec<u8>, FsError> {
    let header = ReadHeader {
        block_pool_id: pool.into(),
        block: lb.block,
        offset: 0,
        length: lb.block.num_bytes,
        client: "test".into(),
        token,
        proof,
    };
    let mut s = plaintext(&lb.locations[0].addr)
        .await
        .read_block(ReadBlockRequest {
            header_bin: codec::encode(&header).unwrap(),
        })
        .await
        .map_err(|s| from_status(&s))?
        .into_inner();
    let mut out = Vec::new();
    while let Some(chunk) = s.message().await.map_err(|s| from_status(&s))? {
        out.extend_from_slice(&chunk.data);
    }
    Ok(out)
}

/// alice's client, reading through the DataNodes (not short-circuit).
fn through_datanodes(c: &Cluster) -> FileSystem {
    let opts = ClientOptions {
        short_circuit: false,
        ..c.client_options()
    };
    FileSystem::connect(&c.fs_uri(), Identity::new("alice", &[]), opts).unwrap()
}

/// Block requests the first `n` DataNodes admitted in TLS and over plaintext (their /metrics).
fn admitted(c: &Cluster, n: u64) -> (f64, f64) {
    let ca = c.ca_cert();
    let (mut tls, mut plain) = (0.0, 0.0);
    for j in 1..=n {
        let p = get(&c.dn_http_addr(j), "/metrics", Some(&ca), None);
        assert_eq!(p.status, 200, "{p:?}");
        let d = samples(&p.body);
        tls += sample(&d, r#"raftfs_datanode_block_requests_admitted_total{transport="tls"}"#);
        plain += sample(
            &d,
            r#"raftfs_datanode_block_requests_admitted_total{transport="plaintext"}"#,
        );
    }
    (tls, plain)
}

fn refused<T: std::fmt::Debug>(r: Result<T, FsError>, what: &str) {
    match r {
        Err(FsError::InvalidToken(m)) => assert!(m.contains(what), "{m:?} should say {what:?}"),
        other => panic!("expected InvalidBlockTokenException ({what}), got {other:?}"),
    }
}

async fn setup(c: &Cluster, data: &[u8]) -> (String, LocatedBlock) {
    let su = c.client("hdfs", &["hdfs"]);
    su.mkdirs("/p", None).await.unwrap();
    su.set_owner("/p", Some("alice"), None).await.unwrap();
    let fs = c.client("alice", &[]);
    let mut w = fs.create_file("/p/f", true).await.expect("create");
    w.write(data).await.expect("write");
    w.close().await.expect("close");
    let l = fs.block_locations("/p/f").await.expect("locations");
    (l.block_pool_id, l.blocks[0].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_authentication_plaintext_requests_prove_their_token_once() {
    let c = Cluster::start_with_datanodes(1, "memory", 3).await;
    let data: Vec<u8> = (0..200_000u32).map(|i| (i * 13) as u8).collect();
    // The SDK writes a three-DataNode pipeline over plaintext (the first
    // hop; the DataNodes pass the token on in TLS) and reads it back.
    let (pool, lb) = setup(&c, &data).await;
    assert_eq!(lb.locations.len(), 3, "a three-node pipeline");
    let fs = through_datanodes(&c);
    assert_eq!(fs.open("/p/f").await.unwrap().read_to_end().await.unwrap(), data);
    let t = lb.token.clone().expect("a token");
    assert_eq!(t.identifier.protection, DataProtection::Authentication);
    // The SDK's requests came over plaintext; only the DataNodes' own
    // (the pipeline's later hops) in TLS.
    let (tls, plain) = admitted(&c, 3);
    assert!(
        plain >= 2.0,
        "the write's first hop and the read over plaintext: {plain}"
    );
    assert!(tls >= 2.0, "the pipeline's hops between DataNodes in TLS: {tls}");

    // A fresh proof reads; the same proof again is a replay.
    let p = prove(&t, wall_clock_ms()).unwrap();
    assert_eq!(read_plain(&pool, &lb, None, Some(p.clone())).await.unwrap(), data);
    refused(read_plain(&pool, &lb, None, Some(p.clone())).await, "shown before");

    // The token itself must not cross plaintext; nothing at all is missing.
    refused(
        read_plain(&pool, &lb, Some(t.clone()), None).await,
        "sent over plaintext",
    );
    refused(read_plain(&pool, &lb, None, None).await, "Block token is missing");

    // Forged: a flipped MAC, an identifier granting more, a proof made
    // without the password, a time outside the skew window.
    let mut flipped = prove(&t, wall_clock_ms()).unwrap();
    flipped.mac[0] ^= 1;
    refused(read_plain(&pool, &lb, None, Some(flipped)).await, "does not match");
    let mut more = prove(&t, wall_clock_ms()).unwrap();
    more.identifier.modes = AccessModes::of(&[AccessMode::Read, AccessMode::Write]);
    refused(read_plain(&pool, &lb, None, Some(more)).await, "does not match");
    let guessed = BlockToken {
        password: vec![0; 32],
        ..t.clone()
    };
    refused(
        read_plain(&pool, &lb, None, Some(prove(&guessed, wall_clock_ms()).unwrap())).await,
        "does not match",
    );
    let stale = prove(&t, wall_clock_ms() - 2 * BLOCK_PROOF_SKEW_MS as i64).unwrap();
    refused(read_plain(&pool, &lb, None, Some(stale)).await, "ms allowed");

    // What needs a DataNode's certificate is refused over plaintext.
    let mut dn = plaintext(&lb.locations[0].addr).await;
    let e = dn
        .init_replica_recovery(DnMessage {
            data_bin: codec::encode(&InitRecovery {
                block_pool_id: pool.clone(),
                block: lb.block,
                recovery_id: lb.block.gen_stamp + 1,
            })
            .unwrap(),
        })
        .await
        .expect_err("recovery over plaintext");
    assert_eq!(e.code(), tonic::Code::PermissionDenied, "{e:?}");
    assert!(e.message().contains("no certificate"), "{}", e.message());
    // Replica queries over plaintext prove too.
    let q = ReplicaQuery {
        block_pool_id: pool.clone(),
        block: lb.block,
        token: None,
        proof: Some(prove(&t, wall_clock_ms()).unwrap()),
    };
    dn.block_checksum(DnMessage {
        data_bin: codec::encode(&q).unwrap(),
    })
    .await
    .expect("a checksum with a proof");

    // Nothing refused changed the replica (no recovery began: it reads whole).
    let p = prove(&t, wall_clock_ms()).unwrap();
    assert_eq!(read_plain(&pool, &lb, None, Some(p)).await.unwrap(), data);
    assert_eq!(fs.open("/p/f").await.unwrap().read_to_end().await.unwrap(), data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn at_privacy_tokens_are_refused_over_plaintext_and_the_sdk_uses_tls() {
    let mut c = Cluster::start_with(1, "memory", &["--data-protection", "privacy"]);
    c.wait_ready().await;
    let xfer = format!("127.0.0.1:{}", common::free_ports(1)[0]);
    c.start_datanodes(1, &["--hadoop-xfer-addr", &xfer]);
    c.wait_datanodes(1).await;
    let data: Vec<u8> = (0..150_000u32).map(|i| (i % 241) as u8).collect();
    let (pool, lb) = setup(&c, &data).await;
    let t = lb.token.clone().expect("a token");
    assert_eq!(t.identifier.protection, DataProtection::Privacy);
    refused(
        read_plain(&pool, &lb, None, Some(prove(&t, wall_clock_ms()).unwrap())).await,
        "show it in TLS",
    );
    // The level is signed: a proof of the token relabelled is forged.
    let mut relabelled = prove(&t, wall_clock_ms()).unwrap();
    relabelled.identifier.protection = DataProtection::Authentication;
    refused(read_plain(&pool, &lb, None, Some(relabelled)).await, "does not match");
    let fs = through_datanodes(&c);
    assert_eq!(fs.open("/p/f").await.unwrap().read_to_end().await.unwrap(), data);
    let (tls, plain) = admitted(&c, 1);
    assert_eq!(plain, 0.0, "nothing admitted over plaintext at privacy");
    assert!(tls >= 2.0, "the write and the read in TLS: {tls}");

    // Hadoop's data transfer port has no encryption: it refuses the token.
    let answer = hadoop_read_block(&xfer, &pool, &lb, &t);
    assert_eq!(answer.status, STATUS_ERROR_ACCESS_TOKEN, "{answer:?}");
    assert!(
        answer
            .message
            .as_deref()
            .unwrap_or("")
            .contains("data protection privacy"),
        "{answer:?}"
    );
}

/// READ_BLOCK of 10 bytes of `lb` on Hadoop's data transfer port at `xfer`, showing `t`.
fn hadoop_read_block(xfer: &str, pool: &str, lb: &LocatedBlock, t: &BlockToken) -> BlockOpResponse {
    use prost::Message;
    use std::io::{Read, Write};
    let op = OpReadBlock {
        header: ClientOperationHeader {
            base_header: BaseHeader {
                block: ExtendedBlock {
                    pool_id: pool.into(),
                    block_id: lb.block.id,
                    generation_stamp: lb.block.gen_stamp,
                    num_bytes: Some(lb.block.num_bytes),
                },
                token: Some(Token {
                    identifier: codec::encode(&t.identifier).unwrap(),
                    password: t.password.clone(),
                    kind: "HDFS_BLOCK_TOKEN".into(),
                    service: String::new(),
                }),
            },
            client_name: "raw".into(),
        },
        offset: 0,
        len: 10,
        send_checksums: Some(true),
    };
    let mut bytes = DATA_TRANSFER_VERSION.to_be_bytes().to_vec();
    bytes.push(OP_READ_BLOCK);
    bytes.extend(op.encode_length_delimited_to_vec());
    let mut d = std::net::TcpStream::connect(xfer).unwrap();
    d.set_read_timeout(Some(std::time::Duration::from_secs(20))).unwrap();
    d.write_all(&bytes).unwrap();
    let mut first = vec![0u8; 4096];
    let n = d.read(&mut first).unwrap();
    BlockOpResponse::decode_length_delimited(&first[..n]).unwrap()
}
