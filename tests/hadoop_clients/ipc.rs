//! Hadoop's IPC spoken byte by byte against a `raftfs dev` member: the
//! server's refusals (garbage, HTTP, a wrong version, an oversized frame,
//! an unknown method, an undecodable request, a call before the context),
//! the calls about the cluster and the file calls hdfs-native's client
//! does not have, and observer reads on followers.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::Duration;

use prost::Message;
use raftfs_hadoop::wire::namenode::{
    BoolResponse, ConcatRequest, EmptyMessage, GetDatanodeReportRequest, GetDatanodeReportResponse, GetFileInfoRequest,
    GetFileInfoResponse, GetFsStatsResponse, GetListingRequest, GetListingResponse, GetPreferredBlockSizeRequest,
    GetPreferredBlockSizeResponse, MkdirsRequest, SetSafeModeRequest, TruncateRequest, REPORT_DEAD, REPORT_LIVE,
    SAFEMODE_ENTER, SAFEMODE_GET, SAFEMODE_LEAVE,
};
use raftfs_hadoop::wire::rpc::*;

use super::{DATANODES, FILE_SIZES, MULTI_BLOCK_SIZE_BYTES, OBSERVED_DIRS};
use crate::common;

/// A member's Hadoop RPC port is its port plus this in `raftfs dev`.
const HADOOP_RPC_OFFSET: u16 = 360;
const PROTOCOL: &str = "org.apache.hadoop.hdfs.protocol.ClientProtocol";

pub(super) fn frame(parts: &[Vec<u8>]) -> Vec<u8> {
    let body: Vec<u8> = parts.concat();
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend(body);
    out
}

pub(super) fn header(call_id: i32) -> Vec<u8> {
    header_seen(call_id, None)
}

/// A request header naming the state the client has seen (observer reads).
fn header_seen(call_id: i32, state_id: Option<i64>) -> Vec<u8> {
    RpcRequestHeader {
        rpc_kind: Some(RPC_KIND_PROTOCOL_BUFFER),
        rpc_op: Some(0),
        call_id,
        client_id: vec![9; 16].into(),
        retry_count: Some(0),
        state_id,
    }
    .encode_length_delimited_to_vec()
}

/// A connection past the preamble and context, as `user`.
pub(super) fn connect(addr: &str, user: &str) -> TcpStream {
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

pub(super) fn call(s: &mut TcpStream, call_id: i32, method: &str, request: Vec<u8>) {
    let rh = RequestHeader {
        method_name: method.to_string().into(),
        declaring_class_protocol_name: PROTOCOL.as_bytes().into(),
        client_protocol_version: 1,
    };
    s.write_all(&frame(&[header(call_id), rh.encode_length_delimited_to_vec(), request]))
        .unwrap();
}

/// The next answer: its header and body.
pub(super) fn answer(s: &mut TcpStream) -> (RpcResponseHeader, Vec<u8>) {
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

/// The Hadoop RPC address of each member of `members` (raftfs://a,b,c),
/// with its member id (its position, as `raftfs dev` numbers them).
pub(super) fn hadoop_addrs(members: &str) -> Vec<(u64, String)> {
    (1..)
        .zip(members.trim_start_matches("raftfs://").split(','))
        .map(|(i, a)| {
            let port: u16 = a.rsplit(':').next().unwrap().parse().unwrap();
            (i, format!("127.0.0.1:{}", port + HADOOP_RPC_OFFSET))
        })
        .collect()
}

/// The member whose Hadoop RPC answers getFileInfo (the leader).
pub(super) fn hadoop_leader(members: &str) -> Option<(u64, String)> {
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
pub(super) fn closed(s: &mut TcpStream) -> bool {
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => true,
        Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

pub(super) fn ipc_server_refuses_bad_input_and_goes_on(addr: &str) {
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
pub(super) fn one_call(addr: &str, user: &str, method: &str, request: impl Message) -> (RpcResponseHeader, Vec<u8>) {
    static NEXT_CALL_ID: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(1000);
    let id = NEXT_CALL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut s = connect(addr, user);
    call(&mut s, id, method, request.encode_length_delimited_to_vec());
    answer(&mut s)
}

pub(super) fn refused_with(h: &RpcResponseHeader, class: &str) {
    assert_eq!(h.status, STATUS_ERROR, "{h:?}");
    assert_eq!(h.exception_class_name.as_deref(), Some(class), "{h:?}");
}

/// getFsStats, getDatanodeReport, setSafeMode, getPreferredBlockSize,
/// truncate and concat, spoken raw (hdfs-native's client has none of
/// them), with HDFS's privileges: the report and safe mode changes are
/// the superuser's.
pub(super) fn cluster_and_file_calls_answer_as_hdfs(addr: &str, superuser: &str) {
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
        method_name: method.to_string().into(),
        declaring_class_protocol_name: PROTOCOL.as_bytes().into(),
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
pub(super) fn followers_serve_observer_reads(rt: &tokio::runtime::Runtime, conf: &str, members: &str, ca: &str) {
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
            .with_url("hdfs://ns1")
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
