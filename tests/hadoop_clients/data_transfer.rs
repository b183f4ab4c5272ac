//! DataTransferProtocol against `raftfs dev`'s DataNodes: READ_BLOCK only
//! with its block token, BLOCK_CHECKSUM against the SDK's file checksum,
//! bad input on the data port, and a DataNode killed under hdfs-native's
//! write pipeline.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use prost::Message;
use raftfs_hadoop::wire::datatransfer::{
    BaseHeader, BlockChecksumOptions, BlockOpResponse, ClientOperationHeader, OpBlockChecksum, OpReadBlock,
    BLOCK_CHECKSUM_COMPOSITE_CRC, DATA_TRANSFER_VERSION, OP_BLOCK_CHECKSUM, OP_READ_BLOCK, STATUS_ERROR as XFER_ERROR,
    STATUS_ERROR_ACCESS_TOKEN, STATUS_ERROR_UNSUPPORTED, STATUS_SUCCESS as XFER_SUCCESS,
};
use raftfs_hadoop::wire::hdfs::Token;
use raftfs_hadoop::wire::namenode::{
    EmptyMessage, GetBlockLocationsRequest, GetBlockLocationsResponse, GetFileInfoRequest, GetFileInfoResponse,
};
use raftfs_hadoop::wire::rpc::STATUS_SUCCESS;

use super::ipc::{closed, one_call};
use super::{pattern, DATANODES, FILE_SIZES, MULTI_BLOCK_SIZE_BYTES};

/// The first block of one of the files the SDK wrote (FILE_SIZES[4] bytes), as getBlockLocations
/// over Hadoop RPC at `addr` gives it.
fn first_block(addr: &str) -> raftfs_hadoop::wire::hdfs::LocatedBlock {
    let req = GetBlockLocationsRequest {
        src: format!("/user/alice/data/f{}", FILE_SIZES[4]),
        offset: 0,
        length: 1 << 20,
    };
    let (h, body) = one_call(addr, "alice", "getBlockLocations", req);
    assert_eq!(h.status, STATUS_SUCCESS, "{h:?}");
    let located = GetBlockLocationsResponse::decode(&body[..]).unwrap().locations.unwrap();
    located.blocks.into_iter().next().expect("the file has a block")
}

/// A DataNode reads a block's replica only for the block access token
/// getBlockLocations hands out (none or a forged one: ERROR_ACCESS_TOKEN);
/// a wrong protocol version is refused and the connection closed.
pub(super) fn read_block_needs_its_token(addr: &str) {
    let lb = &first_block(addr);
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
        xfer_op(&xfer, OP_READ_BLOCK, op)
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
}

/// A DataNode's data port, which Hadoop's locations name as its
/// `ipcPort`, also speaks Hadoop IPC (ClientDatanodeProtocol). With block
/// tokens on, a SIMPLE client is refused and a SASL one is offered only
/// TOKEN (the block token); garbage that looks like the start of IPC is
/// closed. (Java's reads of a file open for writing use it in earnest:
/// `java_fs_shell`.)
pub(super) fn datanode_ipc_takes_only_block_tokens(addr: &str) {
    use raftfs_hadoop::wire::rpc::*;
    let dn = &first_block(addr).locs[0].id;
    let ipc = format!("{}:{}", dn.ip_addr, dn.ipc_port);
    let open = |preamble: &[u8]| {
        let mut s = TcpStream::connect(&ipc).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        s.write_all(preamble).unwrap();
        s
    };

    let mut simple = open(b"hrpc\x09\x00\x00");
    let (h, _) = super::ipc::answer(&mut simple);
    assert_eq!(h.status, STATUS_FATAL, "{h:?}");
    assert_eq!(
        h.exception_class_name.as_deref(),
        Some("org.apache.hadoop.security.AccessControlException")
    );
    assert!(
        h.error_msg
            .as_deref()
            .unwrap_or("")
            .contains("SIMPLE authentication is not enabled"),
        "{h:?}"
    );
    assert!(closed(&mut simple));

    let mut sasl = open(b"hrpc\x09\x00\xdf");
    let negotiate = RpcSasl {
        version: None,
        state: SASL_NEGOTIATE,
        token: None,
        auths: Vec::new(),
    };
    sasl.write_all(&super::ipc::frame(&[
        super::ipc::header(SASL_CALL_ID),
        negotiate.encode_length_delimited_to_vec(),
    ]))
    .unwrap();
    let (h, body) = super::ipc::answer(&mut sasl);
    assert_eq!((h.status, h.call_id), (STATUS_SUCCESS, SASL_CALL_ID as u32), "{h:?}");
    let offer = RpcSasl::decode(&body[..]).unwrap();
    let methods: Vec<(&str, &str)> = offer
        .auths
        .iter()
        .map(|a| (a.method.as_str(), a.mechanism.as_str()))
        .collect();
    assert_eq!(methods, [("TOKEN", "DIGEST-MD5")], "{offer:?}");

    let mut garbage = open(b"hello, not Hadoop IPC");
    assert!(closed(&mut garbage), "garbage that starts like IPC is closed");
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
pub(super) fn hadoop_blocks(addr: &str, path: &str) -> raftfs_hadoop::wire::hdfs::LocatedBlocks {
    try_hadoop_blocks(addr, path).unwrap_or_else(|| panic!("getBlockLocations {path} failed"))
}

/// [`hadoop_blocks`], or `None` when the call fails (no such file yet).
pub(super) fn try_hadoop_blocks(addr: &str, path: &str) -> Option<raftfs_hadoop::wire::hdfs::LocatedBlocks> {
    let req = GetBlockLocationsRequest {
        src: path.into(),
        offset: 0,
        length: u64::MAX >> 1,
    };
    let (h, body) = one_call(addr, "alice", "getBlockLocations", req);
    if h.status != STATUS_SUCCESS {
        return None;
    }
    GetBlockLocationsResponse::decode(&body[..]).unwrap().locations
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
pub(super) fn block_checksums_agree_with_the_sdk(addr: &str, path: &str, sdk_checksum: &[u8]) {
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

/// The data port under bad input: an unknown op (ERROR_UNSUPPORTED), an
/// op message over the limit (ERROR), and a WRITE_BLOCK whose first packet
/// stops half-way before the client goes away. The DataNode goes on (it
/// answers the next connection), and the half-sent packet changed nothing
/// (the file is still empty).
pub(super) fn data_port_refuses_bad_input_and_goes_on(addr: &str) {
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
/// the node. `fs` is the file system's URL and a Hadoop RPC address
/// serving it (a leader's or a router's). Returns the path written and its
/// bytes.
/// `kill -9` the DataNode of `raftfs dev` (in `dev_dir`) whose uuid is
/// `uuid`; its number.
pub(super) fn kill_datanode(dev_dir: &std::path::Path, uuid: &str) -> usize {
    let j = (1..=DATANODES)
        .find(|j| {
            std::fs::read_to_string(dev_dir.join(format!("dn{j}/data/current/ID"))).is_ok_and(|id| id.contains(uuid))
        })
        .unwrap_or_else(|| panic!("no DataNode directory holds uuid {uuid}"));
    let pid: i32 = std::fs::read_to_string(dev_dir.join(format!("dn{j}.pid")))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0, "kill -9 DataNode {j}");
    j
}

pub(super) fn hdfs_native_rebuilds_its_pipeline_when_a_datanode_dies(
    rt: &tokio::runtime::Runtime,
    conf: &str,
    (url, addr): (&str, &str),
    path: &str,
    dev_dir: &std::path::Path,
) -> (String, Vec<u8>) {
    let path = path.to_string();
    let data = pattern(2 * MULTI_BLOCK_SIZE_BYTES as usize - 4321);
    let cut = MULTI_BLOCK_SIZE_BYTES as usize + 300_000;
    let victim = rt.block_on(async {
        let client = hdfs_native::ClientBuilder::new()
            .with_config_dir(conf)
            .with_url(url)
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
        let j = kill_datanode(dev_dir, &victim);
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
