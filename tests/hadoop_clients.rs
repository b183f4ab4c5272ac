//! Hadoop's own RPC against `raftfs dev`: an independent client,
//! `hdfs-native` (from PyPI, in the virtual environment `scripts/setup.sh`
//! makes), configured only by the `HADOOP_CONF_DIR` raftfs dev writes; and
//! the IPC server's behaviour under garbage, a wrong version, an
//! oversized frame and an unknown method, spoken byte by byte; and a
//! DataNode's DataTransferProtocol, which reads a replica only for its
//! block access token.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::Duration;

use prost::Message;
use raftfs_hadoop::wire::datatransfer::{
    BaseHeader, BlockChecksumOptions, BlockOpResponse, ClientOperationHeader, OpBlockChecksum, OpReadBlock,
    BLOCK_CHECKSUM_COMPOSITE_CRC, DATA_TRANSFER_VERSION, OP_BLOCK_CHECKSUM, OP_READ_BLOCK, STATUS_ERROR as XFER_ERROR,
    STATUS_ERROR_ACCESS_TOKEN, STATUS_ERROR_UNSUPPORTED, STATUS_SUCCESS as XFER_SUCCESS,
};
use raftfs_hadoop::wire::hdfs::Token;
use raftfs_hadoop::wire::namenode::{
    BoolResponse, ConcatRequest, EmptyMessage, GetBlockLocationsRequest, GetBlockLocationsResponse,
    GetDatanodeReportRequest, GetDatanodeReportResponse, GetFileInfoRequest, GetFileInfoResponse, GetFsStatsResponse,
    GetListingRequest, GetListingResponse, GetPreferredBlockSizeRequest, GetPreferredBlockSizeResponse, MkdirsRequest,
    SetSafeModeRequest, TruncateRequest, REPORT_DEAD, REPORT_LIVE, SAFEMODE_ENTER, SAFEMODE_GET, SAFEMODE_LEAVE,
};
use raftfs_hadoop::wire::rpc::*;

const PYTHON: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/python-clients/bin/python");
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/clients/hadoop_clients.py");
/// A member's Hadoop RPC port is its port plus this in `raftfs dev`.
const HADOOP_RPC_OFFSET: u16 = 360;
const PROTOCOL: &str = "org.apache.hadoop.hdfs.protocol.ClientProtocol";
/// Sizes of the files hdfs-native reads: empty, within a chunk, chunk
/// edges, several packets, and four blocks of [`MULTI_BLOCK_SIZE_BYTES`].
const FILE_SIZES: [usize; 6] = [0, 1, 511, 513, 200_000, 3 * 1024 * 1024 + 17];
const MULTI_BLOCK_SIZE_BYTES: u64 = 1024 * 1024;
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
const DATANODES: usize = 4;
/// Directories the observer-read client makes and reads back.
const OBSERVED_DIRS: usize = 20;

/// Bytes that differ at every offset (so a wrong offset shows).
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i as u32 * 31 + (i >> 9) as u32) as u8).collect()
}

fn frame(parts: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = parts.concat();
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

fn header(call_id: i32) -> Vec<u8> {
    header_seen(call_id, None)
}

/// A request header naming the state the client has seen (observer reads).
fn header_seen(call_id: i32, state_id: Option<i64>) -> Vec<u8> {
    RpcRequestHeader {
        rpc_kind: Some(RPC_KIND_PROTOCOL_BUFFER),
        rpc_op: Some(0),
        call_id,
        client_id: vec![9; 16],
        retry_count: Some(0),
        state_id,
    }
    .encode_length_delimited_to_vec()
}

/// A connection past the preamble and context, as `user`.
fn connect(addr: &str, user: &str) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"hrpc\x09\x00\x00").unwrap();
    let ctx = IpcConnectionContext {
        user_info: Some(UserInformation {
            effective_user: Some(user.into()),
            real_user: None,
        }),
        protocol: Some(PROTOCOL.into()),
    };
    s.write_all(&frame(&[
        header(CONNECTION_CONTEXT_CALL_ID),
        ctx.encode_length_delimited_to_vec(),
    ]))
    .unwrap();
    s
}

fn call(s: &mut TcpStream, call_id: i32, method: &str, request: Vec<u8>) {
    let rh = RequestHeader {
        method_name: method.into(),
        declaring_class_protocol_name: PROTOCOL.into(),
        client_protocol_version: 1,
    };
    s.write_all(&frame(&[header(call_id), rh.encode_length_delimited_to_vec(), request]))
        .unwrap();
}

/// The next answer: its header and body.
fn answer(s: &mut TcpStream) -> (RpcResponseHeader, Vec<u8>) {
    let mut len = [0u8; 4];
    s.read_exact(&mut len).unwrap();
    let mut buf = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut buf).unwrap();
    let mut b = &buf[..];
    let h = RpcResponseHeader::decode_length_delimited(&mut b).unwrap();
    let body = if b.is_empty() {
        Vec::new()
    } else {
        let n = prost::encoding::decode_length_delimiter(&mut b).unwrap();
        b[..n].to_vec()
    };
    (h, body)
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

/// The Hadoop RPC address of each member of `members` (raftfs://a,b,c),
/// with its member id (its position, as `raftfs dev` numbers them).
fn hadoop_addrs(members: &str) -> Vec<(u64, String)> {
    (1..)
        .zip(members.trim_start_matches("raftfs://").split(','))
        .map(|(i, a)| {
            let port: u16 = a.rsplit(':').next().unwrap().parse().unwrap();
            (i, format!("127.0.0.1:{}", port + HADOOP_RPC_OFFSET))
        })
        .collect()
}

/// The member whose Hadoop RPC answers getFileInfo (the leader).
fn hadoop_leader(members: &str) -> Option<(u64, String)> {
    hadoop_addrs(members).into_iter().find(|(_, addr)| {
        if TcpStream::connect(addr).is_err() {
            return false; // a member that is down
        }
        let mut s = connect(addr, "alice");
        call(
            &mut s,
            0,
            "getFileInfo",
            GetFileInfoRequest { src: "/".into() }.encode_length_delimited_to_vec(),
        );
        answer(&mut s).0.status == STATUS_SUCCESS
    })
}

/// Whether the server closed the connection (after anything it sent):
/// an end of stream or a reset, not the read timeout.
fn closed(s: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

fn ipc_server_refuses_bad_input_and_goes_on(addr: &str) {
    // Garbage: closed with nothing done.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"\x00\x01garbage, not a preamble").unwrap();
    assert!(closed(&mut s), "garbage closes the connection");
    // An HTTP request gets HDFS's hint.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut text = String::new();
    let _ = s.read_to_string(&mut text);
    assert!(text.contains("HTTP request to a Hadoop IPC port"), "{text}");
    // A wrong version: a fatal answer naming both versions, then closed.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"hrpc\x07\x00\x00").unwrap();
    let (h, _) = answer(&mut s);
    assert_eq!(h.status, STATUS_FATAL);
    assert_eq!(h.error_detail, Some(FATAL_VERSION_MISMATCH));
    assert!(
        h.error_msg.as_deref().unwrap_or("").contains("client version 7"),
        "{h:?}"
    );
    assert!(closed(&mut s));
    // A frame over the limit: fatal, closed.
    let mut s = connect(addr, "alice");
    s.write_all(&(raftfs_hadoop::MAX_IPC_FRAME_BYTES as u32 + 1).to_be_bytes())
        .unwrap();
    let (h, _) = answer(&mut s);
    assert_eq!(h.status, STATUS_FATAL, "{h:?}");
    assert!(
        h.error_msg.as_deref().unwrap_or("").contains("longer than maximum"),
        "{h:?}"
    );
    assert!(closed(&mut s));
    // An unknown method: an error answer, and the connection goes on.
    let mut s = connect(addr, "alice");
    // An empty message, length-delimited, is one zero byte.
    call(&mut s, 0, "noSuchMethod", vec![0]);
    let (h, _) = answer(&mut s);
    assert_eq!((h.status, h.call_id), (STATUS_ERROR, 0));
    assert_eq!(
        h.exception_class_name.as_deref(),
        Some("org.apache.hadoop.ipc.RpcNoSuchMethodException")
    );
    let req = GetFileInfoRequest { src: "/".into() }.encode_length_delimited_to_vec();
    call(&mut s, 1, "getFileInfo", req);
    let (h, body) = answer(&mut s);
    assert_eq!((h.status, h.call_id), (STATUS_SUCCESS, 1), "{h:?}");
    let info = GetFileInfoResponse::decode(&body[..]).unwrap();
    assert!(info.fs.is_some(), "the root exists");
    // A request that does not decode: an error answer, the connection goes on.
    call(&mut s, 2, "getFileInfo", vec![3, 0xff, 0xff, 0xff]);
    let (h, _) = answer(&mut s);
    assert_eq!((h.status, h.call_id), (STATUS_ERROR, 2), "{h:?}");
    call(
        &mut s,
        3,
        "getFileInfo",
        GetFileInfoRequest { src: "/".into() }.encode_length_delimited_to_vec(),
    );
    assert_eq!(answer(&mut s).0.status, STATUS_SUCCESS);
    // The DataNode's data transfer: a block's replica is read only with
    // the block access token getBlockLocations hands out; a wrong version
    // is refused.
    let req = GetBlockLocationsRequest {
        src: format!("/user/alice/data/f{}", FILE_SIZES[4]),
        offset: 0,
        length: 1 << 20,
    };
    call(&mut s, 4, "getBlockLocations", req.encode_length_delimited_to_vec());
    let (h, body) = answer(&mut s);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let located = GetBlockLocationsResponse::decode(&body[..]).unwrap().locations.unwrap();
    let lb = &located.blocks[0];
    let dn = &lb.locs[0].id;
    let xfer = format!("{}:{}", dn.ip_addr, dn.xfer_port);
    let read_op = |token: Option<Token>| {
        let op = OpReadBlock {
            header: ClientOperationHeader {
                base_header: BaseHeader {
                    block: lb.b.clone(),
                    token,
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
        let mut d = TcpStream::connect(&xfer).unwrap();
        d.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        d.write_all(&bytes).unwrap();
        let mut first = vec![0u8; 4096];
        let n = d.read(&mut first).unwrap();
        let mut b = &first[..n];
        BlockOpResponse::decode_length_delimited(&mut b).unwrap()
    };
    assert!(
        !lb.block_token.identifier.is_empty(),
        "raftfs dev runs TLS, so blocks come with tokens"
    );
    assert_eq!(read_op(Some(lb.block_token.clone())).status, XFER_SUCCESS);
    let refused = read_op(None);
    assert_eq!(refused.status, STATUS_ERROR_ACCESS_TOKEN, "{refused:?}");
    let mut forged = lb.block_token.clone();
    forged.password[0] ^= 1;
    assert_eq!(read_op(Some(forged)).status, STATUS_ERROR_ACCESS_TOKEN);
    let mut d = TcpStream::connect(&xfer).unwrap();
    d.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    d.write_all(&[0, 27, OP_READ_BLOCK]).unwrap();
    let mut first = vec![0u8; 4096];
    let n = d.read(&mut first).unwrap();
    let wrong = BlockOpResponse::decode_length_delimited(&first[..n]).unwrap();
    assert_eq!(wrong.status, XFER_ERROR);
    assert!(wrong.message.unwrap_or_default().contains("Version Mismatch"));
    assert!(closed(&mut d));

    // A call before the connection context: fatal.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(b"hrpc\x09\x00\x00").unwrap();
    call(
        &mut s,
        0,
        "getFileInfo",
        GetFileInfoRequest { src: "/".into() }.encode_length_delimited_to_vec(),
    );
    let (h, _) = answer(&mut s);
    assert_eq!(h.status, STATUS_FATAL, "{h:?}");
    assert!(closed(&mut s));
}

/// One call on a new connection as `user`: the answer's header and body.
/// Each has a call id of its own, as a client's calls do (the same client
/// id and call id again is a retry, which the retry table answers).
fn one_call(addr: &str, user: &str, method: &str, request: impl Message) -> (RpcResponseHeader, Vec<u8>) {
    static NEXT_CALL_ID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1000);
    let id = NEXT_CALL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut s = connect(addr, user);
    call(&mut s, id, method, request.encode_length_delimited_to_vec());
    answer(&mut s)
}

fn refused_with(h: &RpcResponseHeader, class: &str) {
    assert_eq!(h.status, STATUS_ERROR, "{h:?}");
    assert_eq!(h.exception_class_name.as_deref(), Some(class), "{h:?}");
}

/// getFsStats, getDatanodeReport, setSafeMode, getPreferredBlockSize,
/// truncate and concat, spoken raw (hdfs-native's client has none of
/// them), with HDFS's privileges: the report and safe mode changes are
/// the superuser's.
fn cluster_and_file_calls_answer_as_hdfs(addr: &str, superuser: &str) {
    let (h, body) = one_call(addr, "alice", "getFsStats", EmptyMessage {});
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let stats = GetFsStatsResponse::decode(&body[..]).unwrap();
    assert!(
        stats.capacity > 0 && stats.remaining > 0 && stats.remaining <= stats.capacity,
        "{stats:?}"
    );
    assert!(stats.used > 0, "the files written use space: {stats:?}");
    assert_eq!(stats.missing_blocks, 0, "{stats:?}");

    let live = GetDatanodeReportRequest {
        report_type: REPORT_LIVE,
    };
    let (h, _) = one_call(addr, "alice", "getDatanodeReport", live.clone());
    refused_with(&h, "org.apache.hadoop.security.AccessControlException");
    let (h, body) = one_call(addr, superuser, "getDatanodeReport", live);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let report = GetDatanodeReportResponse::decode(&body[..]).unwrap();
    assert_eq!(report.di.len(), DATANODES, "every DataNode is live: {report:?}");
    for d in &report.di {
        assert!(d.id.xfer_port != 0 && !d.id.datanode_uuid.is_empty(), "{d:?}");
        assert!(d.capacity.unwrap_or(0) > 0, "{d:?}");
        assert!(d.last_update.unwrap_or(0) > 1_600_000_000_000, "a time in ms: {d:?}");
    }
    let dead = GetDatanodeReportRequest {
        report_type: REPORT_DEAD,
    };
    let (_, body) = one_call(addr, superuser, "getDatanodeReport", dead);
    assert!(GetDatanodeReportResponse::decode(&body[..]).unwrap().di.is_empty());

    let safemode =
        |user: &str, action: i32| one_call(addr, user, "setSafeMode", SetSafeModeRequest { action, checked: None });
    let on = |(h, body): (RpcResponseHeader, Vec<u8>)| {
        assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
        BoolResponse::decode(&body[..]).unwrap().result
    };
    assert!(!on(safemode("alice", SAFEMODE_GET)), "anyone may ask; safe mode is off");
    refused_with(
        &safemode("alice", SAFEMODE_ENTER).0,
        "org.apache.hadoop.security.AccessControlException",
    );
    assert!(on(safemode(superuser, SAFEMODE_ENTER)));
    let mkdir = MkdirsRequest {
        src: "/user/alice/in-safe-mode".into(),
        masked: raftfs_hadoop::wire::hdfs::FsPermission { perm: 0o755 },
        create_parent: false,
        unmasked: None,
    };
    let (h, _) = one_call(addr, "alice", "mkdirs", mkdir);
    refused_with(&h, "org.apache.hadoop.hdfs.server.namenode.SafeModeException");
    assert!(!on(safemode(superuser, SAFEMODE_LEAVE)));
    assert!(!on(safemode("alice", SAFEMODE_GET)));

    let data = "/user/alice/data";
    // A listing with locations (listLocatedStatus: Spark's and MapReduce's input listing).
    let list = GetListingRequest {
        src: data.into(),
        start_after: Vec::new(),
        need_location: true,
    };
    let (h, body) = one_call(addr, "alice", "getListing", list);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let listed = GetListingResponse::decode(&body[..])
        .unwrap()
        .dir_list
        .unwrap()
        .partial_listing;
    assert_eq!(listed.len(), FILE_SIZES.len(), "{listed:?}");
    for f in &listed {
        let at = f.locations.as_ref().unwrap_or_else(|| panic!("no locations: {f:?}"));
        assert_eq!(at.file_length, f.length);
        assert_eq!(
            at.blocks.len() as u64,
            f.length.div_ceil(MULTI_BLOCK_SIZE_BYTES),
            "{f:?}"
        );
        assert!(at.blocks.iter().all(|b| b.locs.len() == 3), "{at:?}");
    }
    let (h, body) = one_call(
        addr,
        "alice",
        "getPreferredBlockSize",
        GetPreferredBlockSizeRequest {
            filename: format!("{data}/f1"),
        },
    );
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    assert_eq!(
        GetPreferredBlockSizeResponse::decode(&body[..]).unwrap().bsize,
        MULTI_BLOCK_SIZE_BYTES
    );
    let length = |path: &str| {
        let (h, body) = one_call(addr, "alice", "getFileInfo", GetFileInfoRequest { src: path.into() });
        assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
        GetFileInfoResponse::decode(&body[..]).unwrap().fs.map(|f| f.length)
    };
    // concat: the source's blocks move to the end of the target.
    let concat = ConcatRequest {
        trg: format!("{data}/f511"),
        srcs: vec![format!("{data}/f513")],
    };
    let (h, _) = one_call(addr, "alice", "concat", concat);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    assert_eq!(length(&format!("{data}/f511")), Some(1024));
    assert_eq!(length(&format!("{data}/f513")), None, "the source is gone");
    // truncate at a block boundary is done at once.
    let big = format!("{data}/f{}", FILE_SIZES[5]);
    let truncate = TruncateRequest {
        src: big.clone(),
        new_length: 2 * MULTI_BLOCK_SIZE_BYTES,
        client_name: "raw-truncate".into(),
    };
    let (h, body) = one_call(addr, "alice", "truncate", truncate);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    assert!(
        BoolResponse::decode(&body[..]).unwrap().result,
        "done at a block boundary"
    );
    assert_eq!(length(&big), Some(2 * MULTI_BLOCK_SIZE_BYTES));
    let truncate = TruncateRequest {
        src: big,
        new_length: 5 * MULTI_BLOCK_SIZE_BYTES,
        client_name: "raw-truncate".into(),
    };
    let (h, _) = one_call(addr, "alice", "truncate", truncate);
    refused_with(&h, "java.lang.IllegalArgumentException");
}

/// One call as alice on a new connection whose header says the client has
/// seen `seen`: the answer's header.
fn call_seen(addr: &str, method: &str, request: impl Message, seen: Option<i64>) -> RpcResponseHeader {
    let mut s = connect(addr, "alice");
    let rh = RequestHeader {
        method_name: method.into(),
        declaring_class_protocol_name: PROTOCOL.into(),
        client_protocol_version: 1,
    };
    let id = 7;
    s.write_all(&frame(&[
        header_seen(id, seen),
        rh.encode_length_delimited_to_vec(),
        request.encode_length_delimited_to_vec(),
    ]))
    .unwrap();
    answer(&mut s).0
}

/// Followers serve observer reads: they say they are observers; every
/// answer carries the member's state (its applied index); a follower
/// answers a read whose client sent the state it has seen, once it has
/// applied it, and refuses writes and calls without a state
/// (StandbyException). hdfs-native with `ObserverReadProxyProvider`
/// reads its own writes through them, and the followers' read counters
/// (`haadmin -getAllServiceState`) show they served those reads.
fn followers_serve_observer_reads(rt: &tokio::runtime::Runtime, conf: &str, members: &str, ca: &str) {
    let (leader_id, leader) = hadoop_leader(members).expect("a leader");
    let followers: Vec<(u64, String)> = hadoop_addrs(members)
        .into_iter()
        .filter(|(id, addr)| *id != leader_id && TcpStream::connect(addr).is_ok())
        .collect();
    assert!(!followers.is_empty(), "a follower is up");
    // The reads the followers have served, as haadmin reports them.
    let follower_reads = || -> u64 {
        let out = Command::new(common::BIN)
            .env("RAFTFS_CA", ca)
            .args(["haadmin", "--fs", members, "-getAllServiceState"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .skip(1)
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let id: u64 = f.first()?.parse().ok()?;
                (id != leader_id).then(|| f.get(7)?.parse::<u64>().ok()).flatten()
            })
            .sum()
    };
    let ha_state = |addr: &str| {
        let (h, body) = one_call(addr, "alice", "getHAServiceState", EmptyMessage {});
        assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
        raftfs_hadoop::wire::namenode::HaServiceStateResponse::decode(&body[..])
            .unwrap()
            .state
    };
    assert_eq!(ha_state(&leader), raftfs_hadoop::wire::hdfs::HA_ACTIVE);
    for (_, f) in &followers {
        assert_eq!(ha_state(f), raftfs_hadoop::wire::hdfs::HA_OBSERVER);
    }
    let mkdir = |src: &str| MkdirsRequest {
        src: src.into(),
        masked: raftfs_hadoop::wire::hdfs::FsPermission { perm: 0o755 },
        create_parent: true,
        unmasked: None,
    };
    let made = call_seen(&leader, "mkdirs", mkdir("/user/alice/observed/raw"), None);
    assert_eq!(made.status, STATUS_SUCCESS, "{made:?}");
    let state = made.state_id.expect("answers carry the member's state");
    assert!(state > 0, "{made:?}");
    let (_, follower) = &followers[0];
    let info = GetFileInfoRequest {
        src: "/user/alice/observed/raw".into(),
    };
    let read = call_seen(follower, "getFileInfo", info.clone(), Some(state));
    assert_eq!(
        read.status, STATUS_SUCCESS,
        "an observer read at the state seen: {read:?}"
    );
    assert!(read.state_id.unwrap_or(0) >= state, "{read:?}");
    refused_with(
        &call_seen(follower, "getFileInfo", info, None),
        "org.apache.hadoop.ipc.StandbyException",
    );
    refused_with(
        &call_seen(follower, "mkdirs", mkdir("/user/alice/observed/x"), Some(state)),
        "org.apache.hadoop.ipc.StandbyException",
    );

    let before = follower_reads();
    rt.block_on(async {
        let client = hdfs_native::ClientBuilder::new()
            .with_config_dir(conf)
            .with_config([(
                "dfs.client.failover.proxy.provider.ns1",
                "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider",
            )])
            .with_user("alice")
            .build()
            .expect("an hdfs-native client with observer reads");
        for i in 0..OBSERVED_DIRS {
            let dir = format!("/user/alice/observed/d{i}");
            client.mkdirs(&dir, 0o755, true).await.expect("mkdirs (on the leader)");
            let st = client
                .get_file_info(&dir)
                .await
                .expect("a read sees the write before it");
            assert!(st.isdir, "{st:?}");
        }
    });
    let served = follower_reads() - before;
    assert!(
        served >= OBSERVED_DIRS as u64,
        "the followers served the observer-read client's {OBSERVED_DIRS} reads; they served {served}"
    );
}

/// The data port under bad input: an unknown op (ERROR_UNSUPPORTED), an
/// op message over the limit (ERROR), and a WRITE_BLOCK whose first packet
/// stops half-way before the client goes away. The DataNode goes on (it
/// answers the next connection), and the half-sent packet changed nothing
/// (the file is still empty).
fn data_port_refuses_bad_input_and_goes_on(addr: &str) {
    use raftfs_hadoop::wire::datatransfer::{
        ChecksumInfo, OpWriteBlock, PacketHeader, OP_WRITE_BLOCK, STAGE_PIPELINE_SETUP_CREATE,
    };
    use raftfs_hadoop::wire::namenode::{AddBlockRequest, CreateRequest, DeleteRequest, LocatedBlockResponse};
    let (path, client) = ("/user/alice/half-sent", "raw-half-sent");
    let create = CreateRequest {
        src: path.into(),
        masked: raftfs_hadoop::wire::hdfs::FsPermission { perm: 0o644 },
        client_name: client.into(),
        create_flag: 0x01,
        create_parent: false,
        replication: 3,
        block_size: MULTI_BLOCK_SIZE_BYTES,
        ec_policy_name: None,
        storage_policy: None,
    };
    let (h, _) = one_call(addr, "alice", "create", create);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let add = AddBlockRequest {
        src: path.into(),
        client_name: client.into(),
        previous: None,
        exclude_nodes: Vec::new(),
        file_id: None,
    };
    let (h, body) = one_call(addr, "alice", "addBlock", add);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let lb = LocatedBlockResponse::decode(&body[..]).unwrap().block;
    let head = &lb.locs[0].id;
    let xfer = format!("{}:{}", head.ip_addr, head.xfer_port);

    let unknown = xfer_op(&xfer, 0x7f, EmptyMessage {});
    assert_eq!(unknown.status, STATUS_ERROR_UNSUPPORTED, "{unknown:?}");
    let mut d = TcpStream::connect(&xfer).unwrap();
    d.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut huge = DATA_TRANSFER_VERSION.to_be_bytes().to_vec();
    huge.push(OP_READ_BLOCK);
    prost::encoding::encode_varint(64 << 20, &mut huge);
    d.write_all(&huge).unwrap();
    let mut first = vec![0u8; 4096];
    let n = d.read(&mut first).unwrap();
    let r = BlockOpResponse::decode_length_delimited(&first[..n]).unwrap();
    assert_eq!(r.status, XFER_ERROR, "{r:?}");
    assert!(closed(&mut d), "an oversized op message closes the connection");

    let op = OpWriteBlock {
        header: ClientOperationHeader {
            base_header: BaseHeader {
                block: lb.b.clone(),
                token: Some(lb.block_token.clone()),
            },
            client_name: client.into(),
        },
        targets: lb.locs[1..].to_vec(),
        stage: STAGE_PIPELINE_SETUP_CREATE,
        pipeline_size: lb.locs.len() as u32,
        min_bytes_rcvd: 0,
        max_bytes_rcvd: 0,
        latest_generation_stamp: lb.b.generation_stamp,
        requested_checksum: ChecksumInfo {
            checksum_type: raftfs_hadoop::wire::hdfs::CHECKSUM_CRC32C,
            bytes_per_checksum: 512,
        },
    };
    let mut d = TcpStream::connect(&xfer).unwrap();
    d.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut bytes = DATA_TRANSFER_VERSION.to_be_bytes().to_vec();
    bytes.push(OP_WRITE_BLOCK);
    bytes.extend(op.encode_length_delimited_to_vec());
    d.write_all(&bytes).unwrap();
    let n = d.read(&mut first).unwrap();
    let setup = BlockOpResponse::decode_length_delimited(&first[..n]).unwrap();
    assert_eq!(setup.status, XFER_SUCCESS, "the pipeline is set up: {setup:?}");
    // A packet of 64 KiB announced, its checksums and 1,000 bytes sent.
    let data_len = 64 * 1024;
    let header = PacketHeader {
        offset_in_block: 0,
        seqno: 0,
        last_packet_in_block: false,
        data_len: data_len as i32,
        sync_block: None,
    }
    .encode_to_vec();
    let mut packet = ((4 + data_len / 512 * 4 + data_len) as u32).to_be_bytes().to_vec();
    packet.extend((header.len() as u16).to_be_bytes());
    packet.extend(header);
    packet.extend(vec![0u8; data_len / 512 * 4]);
    packet.extend(vec![7u8; 1000]);
    d.write_all(&packet).unwrap();
    drop(d);
    std::thread::sleep(Duration::from_millis(200));
    let again = xfer_op(&xfer, 0x7f, EmptyMessage {});
    assert_eq!(
        again.status, STATUS_ERROR_UNSUPPORTED,
        "the DataNode goes on: {again:?}"
    );
    let (h, body) = one_call(addr, "alice", "getFileInfo", GetFileInfoRequest { src: path.into() });
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let st = GetFileInfoResponse::decode(&body[..]).unwrap().fs.expect("the file");
    assert_eq!(st.length, 0, "nothing of the half-sent packet is in the file: {st:?}");
    let (h, _) = one_call(
        addr,
        "alice",
        "delete",
        DeleteRequest {
            src: path.into(),
            recursive: false,
        },
    );
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
}

/// A raw DataTransferProtocol op on a new connection: the first answer.
fn xfer_op(xfer: &str, op_code: u8, op: impl Message) -> BlockOpResponse {
    let mut bytes = DATA_TRANSFER_VERSION.to_be_bytes().to_vec();
    bytes.push(op_code);
    bytes.extend(op.encode_length_delimited_to_vec());
    let mut d = TcpStream::connect(xfer).unwrap();
    d.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    d.write_all(&bytes).unwrap();
    let mut first = vec![0u8; 4096];
    let n = d.read(&mut first).unwrap();
    BlockOpResponse::decode_length_delimited(&first[..n]).unwrap()
}

/// The blocks of `path` as getBlockLocations answers over Hadoop RPC.
fn hadoop_blocks(addr: &str, path: &str) -> raftfs_hadoop::wire::hdfs::LocatedBlocks {
    let req = GetBlockLocationsRequest {
        src: path.into(),
        offset: 0,
        length: u64::MAX >> 1,
    };
    let (h, body) = one_call(addr, "alice", "getBlockLocations", req);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    GetBlockLocationsResponse::decode(&body[..]).unwrap().locations.unwrap()
}

/// What `hadoop fs -checksum` computes from each block's BLOCK_CHECKSUM
/// (the MD5 of the blocks' MD5s of their CRC32Cs), as the bytes HDFS
/// prints: bytesPerCRC, crcPerBlock (the first block's, with more than
/// one block), the MD5.
fn hadoop_file_checksum(addr: &str, path: &str) -> Vec<u8> {
    use md5::Digest;
    let located = hadoop_blocks(addr, path);
    let (mut file_md5, mut crc_per_block, mut bytes_per_crc) = (md5::Md5::new(), 0, 0);
    for (i, lb) in located.blocks.iter().enumerate() {
        let dn = &lb.locs[0].id;
        let op = OpBlockChecksum {
            header: BaseHeader {
                block: lb.b.clone(),
                token: Some(lb.block_token.clone()),
            },
            block_checksum_options: None,
        };
        let r = xfer_op(&format!("{}:{}", dn.ip_addr, dn.xfer_port), OP_BLOCK_CHECKSUM, op);
        assert_eq!(r.status, XFER_SUCCESS, "{r:?}");
        let c = r.checksum_response.expect("a checksum");
        if i == 0 && located.blocks.len() > 1 {
            crc_per_block = c.crc_per_block;
        }
        bytes_per_crc = c.bytes_per_crc;
        file_md5.update(&c.block_checksum);
    }
    let mut out = bytes_per_crc.to_be_bytes().to_vec();
    out.extend(crc_per_block.to_be_bytes());
    out.extend(file_md5.finalize());
    out
}

/// BLOCK_CHECKSUM on each block of a file hdfs-native wrote gives the
/// file checksum the SDK's `-checksum` gives; a COMPOSITE_CRC request is
/// refused as unsupported.
fn block_checksums_agree_with_the_sdk(addr: &str, path: &str, sdk_checksum: &[u8]) {
    assert_eq!(hadoop_file_checksum(addr, path), sdk_checksum, "{path}");
    let located = hadoop_blocks(addr, path);
    let lb = &located.blocks[0];
    let dn = &lb.locs[0].id;
    let op = OpBlockChecksum {
        header: BaseHeader {
            block: lb.b.clone(),
            token: Some(lb.block_token.clone()),
        },
        block_checksum_options: Some(BlockChecksumOptions {
            block_checksum_type: Some(BLOCK_CHECKSUM_COMPOSITE_CRC),
            stripe_length: None,
        }),
    };
    let r = xfer_op(&format!("{}:{}", dn.ip_addr, dn.xfer_port), OP_BLOCK_CHECKSUM, op);
    assert_eq!(r.status, STATUS_ERROR_UNSUPPORTED, "{r:?}");
}

/// The warnings and errors in the DataNodes' logs (for a failure's message).
fn datanode_warnings(dev_dir: &std::path::Path) -> String {
    (1..=DATANODES)
        .map(|j| {
            let log = std::fs::read_to_string(dev_dir.join(format!("dn{j}.log"))).unwrap_or_default();
            let lines: Vec<&str> = log
                .lines()
                .filter(|l| l.contains("WARN") || l.contains("ERROR"))
                .collect();
            format!("dn{j}:\n{}", lines[lines.len().saturating_sub(20)..].join("\n"))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// hdfs-native (the Rust crate) writes two blocks' worth with
/// replication 3; after part of the second block, a DataNode of that
/// block's pipeline is killed (-9). The client rebuilds the pipeline as
/// against HDFS: with the policy ALWAYS it asks for a replacement
/// (getAdditionalDatanode), has a survivor copy the replica there
/// (TRANSFER_BLOCK) and goes on (updateBlockForPipeline, a streaming
/// recovery, updatePipeline). The file reads back whole, and the block
/// ends with three replicas, none on the dead node. The write ends in
/// that block: a new block could be placed on the dead node before the
/// member misses its heartbeats, and hdfs-native 0.14.7, unlike Java's
/// DataStreamer, does not abandon such a block and ask again excluding
/// the node. Returns the path written and its bytes.
fn hdfs_native_rebuilds_its_pipeline_when_a_datanode_dies(
    rt: &tokio::runtime::Runtime,
    conf: &str,
    addr: &str,
    dev_dir: &std::path::Path,
) -> (String, Vec<u8>) {
    let path = "/user/alice/written/datanode-killed".to_string();
    let data = pattern(2 * MULTI_BLOCK_SIZE_BYTES as usize - 4321);
    let cut = MULTI_BLOCK_SIZE_BYTES as usize + 300_000;
    let victim = rt.block_on(async {
        let client = hdfs_native::ClientBuilder::new()
            .with_config_dir(conf)
            .with_config([
                ("dfs.client.block.write.replace-datanode-on-failure.policy", "ALWAYS"),
                (
                    "dfs.client.block.write.replace-datanode-on-failure.best-effort",
                    "false",
                ),
            ])
            .with_user("alice")
            .build()
            .expect("an hdfs-native client from HADOOP_CONF_DIR");
        let opts = hdfs_native::WriteOptions::default()
            .replication(3)
            .block_size(MULTI_BLOCK_SIZE_BYTES)
            .overwrite(true);
        let mut w = client.create(&path, opts).await.expect("create");
        w.write_bytes(bytes::Bytes::copy_from_slice(&data[..cut]))
            .await
            .expect("the first part");
        w.hsync().await.expect("hsync");
        // The pipeline of the block being written, and one of its nodes killed.
        let located = hadoop_blocks(addr, &path);
        let last = located.blocks.last().expect("the block being written");
        assert_eq!(last.locs.len(), 3, "a pipeline of three: {last:?}");
        let victim = last.locs[1].id.datanode_uuid.clone();
        let j = (1..=DATANODES)
            .find(|j| {
                std::fs::read_to_string(dev_dir.join(format!("dn{j}/data/current/ID")))
                    .is_ok_and(|id| id.contains(&victim))
            })
            .unwrap_or_else(|| panic!("no DataNode directory holds uuid {victim}"));
        let pid: i32 = std::fs::read_to_string(dev_dir.join(format!("dn{j}.pid")))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill -9 DataNode {j}");
        let rest = w.write_bytes(bytes::Bytes::copy_from_slice(&data[cut..])).await;
        let closed = match rest {
            Ok(_) => w.close().await,
            Err(e) => Err(e),
        };
        if let Err(e) = closed {
            panic!("the write after DataNode {j} died: {e}\n{}", datanode_warnings(dev_dir));
        }
        victim
    });
    let located = hadoop_blocks(addr, &path);
    assert_eq!(located.file_length, data.len() as u64);
    let second = &located.blocks[1];
    let holders: Vec<&str> = second.locs.iter().map(|d| d.id.datanode_uuid.as_str()).collect();
    assert_eq!(holders.len(), 3, "the block kept three replicas: {holders:?}");
    assert!(
        !holders.contains(&victim.as_str()),
        "the dead DataNode was replaced: {holders:?}"
    );
    (path, data)
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
        let opts = raftfs_client::ClientOptions {
            tls: raftfs_client::ClientTls::CaFile(ca.clone().into()),
            ..Default::default()
        };
        let alice = raftfs_client::Identity {
            user: "alice".into(),
            groups: Vec::new(),
        };
        let fs = raftfs_client::FileSystem::connect(&members, alice, opts).unwrap();
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
    let (leader_id, _) = hadoop_leader(&members).expect("a leader serves Hadoop RPC");
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
        let opts = raftfs_client::ClientOptions {
            tls: raftfs_client::ClientTls::CaFile(ca.clone().into()),
            ..Default::default()
        };
        let fs = raftfs_client::FileSystem::connect(&members, raftfs_client::Identity::resolve(Some("alice")), opts)
            .unwrap();
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
    let leader = hadoop_leader(&members).map(|(_, addr)| addr);
    let checksummed = format!("/user/alice/written/w{}", WRITE_SIZES[2]);
    let sdk_checksum = rt.block_on(async {
        let opts = raftfs_client::ClientOptions {
            tls: raftfs_client::ClientTls::CaFile(ca.clone().into()),
            ..Default::default()
        };
        let fs = raftfs_client::FileSystem::connect(&members, raftfs_client::Identity::resolve(Some("alice")), opts)
            .unwrap();
        fs.file_checksum(&checksummed).await.map(|c| c.bytes)
    });
    let raw = leader.map(|addr| {
        std::panic::catch_unwind(|| {
            ipc_server_refuses_bad_input_and_goes_on(&addr);
            cluster_and_file_calls_answer_as_hdfs(&addr, &raftfs_client::Identity::resolve(None).user);
            data_port_refuses_bad_input_and_goes_on(&addr);
            block_checksums_agree_with_the_sdk(&addr, &checksummed, &sdk_checksum.expect("the SDK's -checksum"));
            followers_serve_observer_reads(&rt, &conf, &members, &ca);
            let (path, data) = hdfs_native_rebuilds_its_pipeline_when_a_datanode_dies(&rt, &conf, &addr, dir.path());
            let read = rt.block_on(async {
                let opts = raftfs_client::ClientOptions {
                    tls: raftfs_client::ClientTls::CaFile(ca.clone().into()),
                    ..Default::default()
                };
                let fs =
                    raftfs_client::FileSystem::connect(&members, raftfs_client::Identity::resolve(Some("alice")), opts)
                        .unwrap();
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
