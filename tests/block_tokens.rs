//! Block access tokens, one refusal at a time: a DataNode asked for a block
//! without a token, with a forged or altered one, with one for another
//! block or another access, or with an expired one refuses with
//! `InvalidBlockTokenException` and changes nothing; a reader whose tokens
//! expire mid-read gets fresh ones without noticing; tokens outlive the
//! member that minted them; the short-circuit socket serves only the OS
//! users it is told to.

use crate::common;

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use common::Cluster;
use raftfs_client::{ClientOptions, FileSystem, Identity};
use raftfs_proto::datanode::{
    from_status, ReadHeader, ReplicaQuery, ShortCircuitReply, ShortCircuitRequest, TransferRequest, WriteHeader,
    WriteStage,
};
use raftfs_proto::pb::data_transfer_client::DataTransferClient;
use raftfs_proto::pb::{DnMessage, ReadBlockRequest, WritePacket};
use raftfs_proto::{codec, AccessMode, AccessModes, Block, BlockToken, FsError, LocatedBlock};
use raftfs_trust::{Dialer, PeerRole};

/// A directory of alice's, made by the superuser.
async fn alices_dir(c: &Cluster, path: &str) {
    let su = c.client("hdfs", &["hdfs"]);
    su.mkdirs(path, None).await.unwrap();
    su.set_owner(path, Some("alice"), None).await.unwrap();
}

async fn write_file(fs: &FileSystem, path: &str, data: &[u8]) {
    let mut w = fs.create_file(path, true).await.expect("create");
    w.write(data).await.expect("write");
    w.close().await.expect("close");
}

async fn first_block(fs: &FileSystem, path: &str) -> (String, LocatedBlock) {
    let l = fs.block_locations(path).await.expect("locations");
    (l.block_pool_id, l.blocks[0].clone())
}

async fn datanode(c: &Cluster, addr: &str) -> DataTransferClient<tonic::transport::Channel> {
    let ep = Dialer::trusting(&c.ca_cert())
        .unwrap()
        .endpoint(addr, PeerRole::Datanode)
        .unwrap();
    DataTransferClient::new(ep.connect().await.expect("connect to the DataNode"))
}

/// Read a whole block straight from a DataNode with `token`.
async fn read_raw(c: &Cluster, pool: &str, lb: &LocatedBlock, token: Option<BlockToken>) -> Result<Vec<u8>, FsError> {
    let header = ReadHeader {
        block_pool_id: pool.into(),
        block: lb.block,
        offset: 0,
        length: lb.block.num_bytes,
        client: "test".into(),
        token,
        proof: None,
    };
    let mut s = datanode(c, &lb.locations[0].addr)
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

fn refused<T: std::fmt::Debug>(r: Result<T, FsError>, what: &str) {
    match r {
        Err(FsError::InvalidToken(m)) => assert!(m.contains(what), "{m:?} should say {what:?}"),
        other => panic!("expected InvalidBlockTokenException ({what}), got {other:?}"),
    }
}

/// One short-circuit request over the DataNode's socket; the answer
/// (descriptors, if any, are dropped with the socket).
fn short_circuit(socket: &str, req: &ShortCircuitRequest) -> Result<ShortCircuitReply, FsError> {
    let mut s = UnixStream::connect(socket).expect("connect to the domain socket");
    let body = codec::encode(req).unwrap();
    s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut reply = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut reply).unwrap();
    codec::decode::<Result<ShortCircuitReply, FsError>>(&reply, "reply").unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn datanodes_refuse_block_access_without_a_valid_token() {
    let c = Cluster::start_with_datanodes(1, "memory", 1).await;
    alices_dir(&c, "/t").await;
    let fs = c.client("alice", &[]);
    let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7) as u8).collect();
    write_file(&fs, "/t/a", &data).await;
    write_file(&fs, "/t/b", b"another file").await;
    let (pool, a) = first_block(&fs, "/t/a").await;
    let (_, b) = first_block(&fs, "/t/b").await;

    // What a reader gets: READ on this block, for this user and pool.
    let t = a.token.clone().expect("block locations carry a token");
    assert_eq!(t.identifier.block_id, a.block.id);
    assert_eq!(t.identifier.block_pool_id, pool);
    assert_eq!(t.identifier.user, "alice");
    assert_eq!(t.identifier.modes, AccessModes::of(&[AccessMode::Read]));
    assert_eq!(read_raw(&c, &pool, &a, Some(t.clone())).await.unwrap(), data);

    // No token, another block's, more access than granted, a later expiry, a flipped bit.
    refused(read_raw(&c, &pool, &a, None).await, "Block token is missing");
    refused(read_raw(&c, &pool, &a, b.token.clone()).await, "doesn't apply to blk_");
    let mut more = t.clone();
    more.identifier.modes = AccessModes::of(&[AccessMode::Read, AccessMode::Write]);
    refused(
        read_raw(&c, &pool, &a, Some(more.clone())).await,
        "password does not match",
    );
    let mut later = t.clone();
    later.identifier.expiry_ms += 86_400_000;
    refused(read_raw(&c, &pool, &a, Some(later)).await, "password does not match");
    let mut flipped = t.clone();
    flipped.password[5] ^= 0x40;
    refused(read_raw(&c, &pool, &a, Some(flipped)).await, "password does not match");

    // Replica queries and checksums read too.
    let mut dn = datanode(&c, &a.locations[0].addr).await;
    let q = |token| DnMessage {
        data_bin: codec::encode(&ReplicaQuery {
            block_pool_id: pool.clone(),
            block: a.block,
            token,
            proof: None,
        })
        .unwrap(),
    };
    refused(dn.replica_info(q(None)).await.map_err(|s| from_status(&s)), "missing");
    refused(dn.block_checksum(q(None)).await.map_err(|s| from_status(&s)), "missing");
    dn.block_checksum(q(Some(t.clone())))
        .await
        .expect("checksum with the token");

    // A reader's token writes nothing: overwriting the replica (a pipeline
    // recovery of it) and copying it elsewhere are refused.
    let header = WriteHeader {
        block_pool_id: pool.clone(),
        block: Block {
            gen_stamp: a.block.gen_stamp + 1,
            num_bytes: 0,
            ..a.block
        },
        downstream: vec![],
        stage: WriteStage::Recover,
        client: "mallory".into(),
        token: Some(t.clone()),
        proof: None,
    };
    let first = WritePacket {
        header_bin: codec::encode(&header).unwrap(),
        ..Default::default()
    };
    let e = dn
        .write_block(tokio_stream::iter(vec![first]))
        .await
        .map(|_| ())
        .map_err(|s| from_status(&s));
    refused(e, "doesn't have WRITE permission");
    let copy = TransferRequest {
        block_pool_id: pool.clone(),
        block: a.block,
        targets: a.locations.clone(),
        stage: WriteStage::Transfer,
        token: Some(t.clone()),
        proof: None,
    };
    let e = dn
        .transfer_block(DnMessage {
            data_bin: codec::encode(&copy).unwrap(),
        })
        .await
        .map_err(|s| from_status(&s));
    refused(e, "doesn't have COPY permission");

    // Short-circuit: the socket wants the token too.
    let socket = a.locations[0].domain_socket.clone();
    let sc = |token| ShortCircuitRequest {
        block_pool_id: pool.clone(),
        block: a.block,
        client: "test".into(),
        token,
    };
    refused(short_circuit(&socket, &sc(None)), "missing");
    refused(short_circuit(&socket, &sc(Some(more))), "password does not match");
    let ok = short_circuit(&socket, &sc(Some(t.clone()))).expect("short-circuit with the token");
    assert_eq!(ok.block, a.block);

    // Nothing refused changed the replica.
    assert_eq!(fs.open("/t/a").await.unwrap().read_to_end().await.unwrap(), data);
    assert_eq!(read_raw(&c, &pool, &a, Some(t)).await.unwrap(), data);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn expired_tokens_are_refused_readers_refresh_them_and_they_outlive_their_member() {
    // Tokens live 2 s and keys roll every second, so this run sees both.
    let mut c = Cluster::start_with(
        3,
        "memory",
        &[
            "--block-token-lifetime-ms",
            "2000",
            "--block-key-update-interval-ms",
            "1000",
        ],
    );
    c.wait_ready().await;
    c.start_datanodes(2, &[]);
    c.wait_datanodes(2).await;
    let opts = ClientOptions {
        short_circuit: false,
        ..c.client_options()
    };
    alices_dir(&c, "/u").await;
    let fs = FileSystem::connect(&c.fs_uri(), Identity::new("alice", &[]), opts).unwrap();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    write_file(&fs, "/u/f", &data).await;

    let (pool, lb) = first_block(&fs, "/u/f").await;
    let minted_by_leader = lb.token.clone().unwrap();
    let mut reader = fs.open("/u/f").await.unwrap();
    let head = reader.read_at(0, 1000).await.unwrap();
    assert_eq!(head, data[..1000]);

    // The member that minted the token goes away; the DataNodes keep its keys.
    let leader = c.leader().await;
    c.kill(leader);
    assert_eq!(
        read_raw(&c, &pool, &lb, Some(minted_by_leader.clone())).await.unwrap(),
        data
    );

    tokio::time::sleep(Duration::from_millis(2_500)).await;
    refused(read_raw(&c, &pool, &lb, Some(minted_by_leader)).await, "is expired");
    // The reader's tokens expired too: it fetches fresh ones (from another
    // member, signed with a key that rolled since) and reads on.
    let rest = reader.read_at(1000, data.len() as u64 - 1000).await.unwrap();
    assert_eq!(rest, data[1000..]);
    let (_, fresh) = first_block(&fs, "/u/f").await;
    let fresh = fresh.token.unwrap();
    assert_ne!(fresh.identifier.key_id, lb.token.unwrap().identifier.key_id);
    // Writes after the keys rolled work as well.
    write_file(&fs, "/u/g", &data[..5000]).await;
    assert_eq!(
        fs.open("/u/g").await.unwrap().read_to_end().await.unwrap(),
        data[..5000]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_short_circuit_socket_serves_only_its_os_users() {
    let mut c = Cluster::start(1, "memory");
    c.wait_ready().await;
    // No process of this test runs as uid 4294967294.
    c.start_datanodes(1, &["--short-circuit-uids", "4294967294"]);
    c.wait_datanodes(1).await;
    alices_dir(&c, "/u").await;
    let fs = c.client("alice", &[]);
    let data = vec![42u8; 70_000];
    write_file(&fs, "/u/sc", &data).await;
    let (pool, lb) = first_block(&fs, "/u/sc").await;
    let req = ShortCircuitRequest {
        block_pool_id: pool,
        block: lb.block,
        client: "test".into(),
        token: lb.token.clone(),
    };
    match short_circuit(&lb.locations[0].domain_socket, &req) {
        Err(FsError::AccessControl(m)) => assert!(m.contains("may not read replicas short-circuit"), "{m}"),
        other => panic!("expected AccessControlException, got {other:?}"),
    }
    // The client reads through the DataNode instead.
    let mut r = fs.open("/u/sc").await.unwrap();
    assert_eq!(r.read_to_end().await.unwrap(), data);
    assert_eq!(r.short_circuit_bytes(), 0);
}
