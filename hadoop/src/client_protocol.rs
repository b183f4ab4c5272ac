//! ClientNamenodeProtocol: each method's request decoded, run as a
//! namespace [`Op`], and its answer encoded as Hadoop's message.
//!
//! Methods for features raftfs does not have (ACLs, extended attributes,
//! snapshots, erasure coding, storage policies, encryption zones) answer
//! as HDFS does with the feature switched off: the exception HDFS throws
//! then, or the empty answer it gives (no erasure-coding policy, no
//! encryption zone, no data encryption key). A method ClientProtocol does
//! not have answers `RpcNoSuchMethodException`.
//!
//! Caveat: a listing asked for with locations runs one getBlockLocations
//! per file of the page (up to 1,000), each audited as `open`.

use std::future::Future;

use prost::Message;
use raftfs_proto::{Block, FsError, Op, OpResult, Permission, QuotaSetting};

use crate::blocks;
use crate::cluster_calls;
use crate::ipc_service::{decode, AnswerFuture, Call, Refusal};
use crate::method_kinds::{
    is_acl_method, is_client_protocol_method, is_snapshot_method, is_unsupported_feature_method,
};
use crate::namespace::{Answered, HaState, HadoopNamespace, ServerDefaults};
use crate::remote_error::RemoteError;
use crate::status;
use crate::wire::hdfs::{self, FsServerDefaults, CHECKSUM_CRC32C, HA_ACTIVE, HA_OBSERVER, HA_STANDBY};
use crate::wire::namenode::*;

/// The protocol the server serves.
pub const CLIENT_PROTOCOL: &str = "org.apache.hadoop.hdfs.protocol.ClientProtocol";
/// Entries in one page of getListing (HDFS's `dfs.ls.limit`).
pub const LISTING_PAGE_ENTRIES: u32 = 1000;
/// `CreateFlagProto::OVERWRITE`.
const CREATE_FLAG_OVERWRITE: u32 = 0x02;
/// `CreateFlagProto::APPEND`.
const CREATE_FLAG_APPEND: u32 = 0x04;
/// Hadoop's `QUOTA_DONT_SET` (Long.MAX_VALUE) and `QUOTA_RESET` (-1).
const QUOTA_DONT_SET: u64 = i64::MAX as u64;
const QUOTA_RESET: u64 = u64::MAX;
/// Bytes per checksum chunk, as raftfs stores blocks.
const WRITE_PACKET_BYTES: u32 = 64 * 1024;
const FILE_BUFFER_BYTES: u32 = 4096;

fn unexpected(method: &str, r: OpResult) -> Refusal {
    Refusal::Remote(FsError::Internal(format!("{method} answered {r:?}")).into())
}

fn permission(p: &hdfs::FsPermission) -> Permission {
    Permission((p.perm & u32::from(Permission::MASK)) as u16)
}

fn block(b: &hdfs::ExtendedBlock) -> Block {
    Block {
        id: b.block_id,
        gen_stamp: b.generation_stamp,
        num_bytes: b.num_bytes.unwrap_or(0),
    }
}

/// Hadoop's -1 ("leave it") for a time, as a uint64.
fn time(v: u64) -> Option<i64> {
    let v = v as i64;
    (v >= 0).then_some(v)
}

fn quota(v: u64) -> QuotaSetting {
    match v {
        QUOTA_DONT_SET => QuotaSetting::Keep,
        QUOTA_RESET => QuotaSetting::Clear,
        n => QuotaSetting::Set(n),
    }
}

/// `reply`, as [`answer`]'s future.
fn answering<'a>(reply: impl Future<Output = Result<Vec<u8>, Refusal>> + Send + 'a) -> AnswerFuture<'a> {
    Box::pin(reply)
}

/// A refusal, as [`answer`]'s future.
fn refused<'a>(why: impl Into<Refusal>) -> AnswerFuture<'a> {
    Box::pin(std::future::ready(Err(why.into())))
}

/// Answer `method` with `request`'s bytes.
///
/// Each method's answer is its own future, boxed as it is chosen: one
/// async fn with every method inline would be as large as its largest
/// method (3.5 KiB, moved into its box on every call, getFileInfo's
/// included).
pub fn answer<'a>(
    ns: &'a dyn HadoopNamespace,
    call: &'a Call<'a>,
    method: &'a str,
    request: &'a [u8],
) -> AnswerFuture<'a> {
    // A call's result; `answered` also says which block pool answered.
    let answered = move |holder: Option<&str>, op: Op| ns.call(call.caller, call.ctx(holder), op, call.seen_state_id);
    let run = move |holder: Option<&str>, op: Op| {
        let asked = answered(holder, op);
        async move { asked.await.map(|a| a.result) }
    };
    match method {
        "getServerDefaults" => answering(async move {
            decode::<GetServerDefaultsRequest>(request)?;
            let d = ServerDefaults::default();
            Ok(GetServerDefaultsResponse {
                server_defaults: FsServerDefaults {
                    block_size: d.block_size_bytes,
                    bytes_per_checksum: d.bytes_per_checksum,
                    write_packet_size: WRITE_PACKET_BYTES,
                    replication: u32::from(d.replication),
                    file_buffer_size: FILE_BUFFER_BYTES,
                    encrypt_data_transfer: Some(false),
                    trash_interval: Some(0),
                    checksum_type: Some(CHECKSUM_CRC32C),
                },
            }
            .encode_to_vec())
        }),
        "getFileInfo" | "getFileLinkInfo" => answering(async move {
            let r: GetFileInfoRequest = decode(request)?;
            Ok(match run(None, Op::GetFileInfo { path: r.src }).await? {
                OpResult::Status(s) => GetFileInfoResponse {
                    fs: s.as_ref().map(|s| status::file_status(s, b"")),
                }
                .encode_to_vec(),
                other => return Err(unexpected(method, other)),
            })
        }),
        "getListing" => answering(async move {
            let r: GetListingRequest = decode(request)?;
            let start_after = String::from_utf8(r.start_after)
                .map_err(|_| FsError::InvalidArgument("getListing's startAfter is not UTF-8".into()))?;
            let op = Op::GetListing {
                path: r.src.clone(),
                start_after,
                limit: LISTING_PAGE_ENTRIES,
            };
            Ok(match run(None, op).await {
                Ok(OpResult::Listing(l)) if r.need_location => GetListingResponse {
                    dir_list: Some(located_listing(ns, call, &r.src, &l).await?),
                }
                .encode_to_vec(),
                Ok(OpResult::Listing(l)) => GetListingResponse {
                    dir_list: Some(status::listing(&l)),
                }
                .encode_to_vec(),
                // HDFS answers a missing directory with no listing.
                Err(FsError::FileNotFound(_)) => GetListingResponse { dir_list: None }.encode_to_vec(),
                Ok(other) => return Err(unexpected(method, other)),
                Err(e) => return Err(e.into()),
            })
        }),
        "mkdirs" => answering(async move {
            let r: MkdirsRequest = decode(request)?;
            let op = Op::Mkdirs {
                path: r.src,
                permission: permission(&r.masked),
                create_parent: r.create_parent,
            };
            bool_answer(method, run(None, op).await?)
        }),
        "delete" => answering(async move {
            let r: DeleteRequest = decode(request)?;
            let op = Op::Delete {
                path: r.src,
                recursive: r.recursive,
            };
            bool_answer(method, run(None, op).await?)
        }),
        "rename" => answering(async move {
            let r: RenameRequest = decode(request)?;
            bool_answer(method, run(None, Op::Rename { src: r.src, dst: r.dst }).await?)
        }),
        "rename2" => answering(async move {
            let r: Rename2Request = decode(request)?;
            let op = Op::Rename2 {
                src: r.src,
                dst: r.dst,
                overwrite: r.overwrite_dest,
            };
            run(None, op).await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "setPermission" => answering(async move {
            let r: SetPermissionRequest = decode(request)?;
            let op = Op::SetPermission {
                path: r.src,
                permission: permission(&r.permission),
            };
            run(None, op).await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "setOwner" => answering(async move {
            let r: SetOwnerRequest = decode(request)?;
            let op = Op::SetOwner {
                path: r.src,
                owner: r.username.filter(|u| !u.is_empty()),
                group: r.groupname.filter(|g| !g.is_empty()),
            };
            run(None, op).await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "setReplication" => answering(async move {
            let r: SetReplicationRequest = decode(request)?;
            let replication = u16::try_from(r.replication)
                .map_err(|_| FsError::InvalidArgument(format!("replication {} is over 32767", r.replication)))?;
            let op = Op::SetReplication {
                path: r.src,
                replication,
            };
            bool_answer(method, run(None, op).await?)
        }),
        "setTimes" => answering(async move {
            let r: SetTimesRequest = decode(request)?;
            let op = Op::SetTimes {
                path: r.src,
                mtime: time(r.mtime),
                atime: time(r.atime),
            };
            run(None, op).await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "getContentSummary" | "getQuotaUsage" => answering(async move {
            let r: PathRequest = decode(request)?;
            Ok(match run(None, Op::GetContentSummary { path: r.path }).await? {
                OpResult::Summary(c) if method == "getContentSummary" => GetContentSummaryResponse {
                    summary: status::content_summary(&c),
                }
                .encode_to_vec(),
                OpResult::Summary(c) => GetQuotaUsageResponse {
                    usage: status::quota_usage(&c),
                }
                .encode_to_vec(),
                other => return Err(unexpected(method, other)),
            })
        }),
        "setQuota" => answering(async move {
            let r: SetQuotaRequest = decode(request)?;
            if r.storage_type.is_some() {
                return Err(
                    FsError::Unsupported("quotas by storage type: raftfs has one storage type (DISK)".into()).into(),
                );
            }
            let op = Op::SetQuota {
                path: r.path,
                namespace: quota(r.namespace_quota),
                space: quota(r.storagespace_quota),
            };
            run(None, op).await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "create" => answering(async move {
            let r: CreateRequest = decode(request)?;
            if r.ec_policy_name.as_deref().is_some_and(|p| !p.is_empty()) {
                return Err(RemoteError::new(
                    "org.apache.hadoop.HadoopIllegalArgumentException",
                    "raftfs has no erasure coding: files are replicated",
                )
                .into());
            }
            if r.create_flag & CREATE_FLAG_APPEND != 0 {
                return Err(FsError::Unsupported(
                    "create with the APPEND flag: open the file with append instead".into(),
                )
                .into());
            }
            let replication = u16::try_from(r.replication)
                .map_err(|_| FsError::InvalidArgument(format!("replication {} is over 32767", r.replication)))?;
            let op = Op::Create {
                path: r.src,
                permission: permission(&r.masked),
                overwrite: r.create_flag & CREATE_FLAG_OVERWRITE != 0,
                create_parent: r.create_parent,
                replication,
                block_size: r.block_size,
            };
            Ok(match run(Some(&r.client_name), op).await? {
                OpResult::Status(s) => CreateResponse {
                    fs: s.as_ref().map(|s| status::file_status(s, b"")),
                }
                .encode_to_vec(),
                other => return Err(unexpected(method, other)),
            })
        }),
        "complete" => answering(async move {
            let r: CompleteRequest = decode(request)?;
            let op = Op::Complete {
                path: r.src,
                last: r.last.as_ref().map(block),
            };
            bool_answer(method, run(Some(&r.client_name), op).await?)
        }),
        "renewLease" => answering(async move {
            let r: RenewLeaseRequest = decode(request)?;
            run(Some(&r.client_name), Op::RenewLease).await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "recoverLease" => answering(async move {
            let r: RecoverLeaseRequest = decode(request)?;
            bool_answer(
                method,
                run(Some(&r.client_name), Op::RecoverLease { path: r.src }).await?,
            )
        }),
        "getBlockLocations" => answering(async move {
            let r: GetBlockLocationsRequest = decode(request)?;
            let op = Op::GetBlockLocations {
                path: r.src,
                offset: r.offset,
                length: r.length,
            };
            Ok(match run(None, op).await? {
                OpResult::Blocks(lbs) => GetBlockLocationsResponse {
                    locations: Some(blocks::located_blocks(ns, &lbs).await?),
                }
                .encode_to_vec(),
                other => return Err(unexpected(method, other)),
            })
        }),
        "addBlock" => answering(async move {
            let r: AddBlockRequest = decode(request)?;
            let op = Op::AddBlock {
                path: r.src,
                previous: r.previous.as_ref().map(block),
                excluded: uuids(&r.exclude_nodes),
            };
            Ok(match answered(Some(&r.client_name), op).await? {
                Answered {
                    result: OpResult::Located(lb),
                    block_pool_id,
                } => LocatedBlockResponse {
                    block: blocks::one_located_block(ns, &lb, &block_pool_id).await?,
                }
                .encode_to_vec(),
                other => return Err(unexpected(method, other.result)),
            })
        }),
        "abandonBlock" => answering(async move {
            let r: AbandonBlockRequest = decode(request)?;
            let op = Op::AbandonBlock {
                path: r.src,
                block: block(&r.b),
            };
            run(Some(&r.holder), op).await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "getAdditionalDatanode" => answering(async move {
            let r: GetAdditionalDatanodeRequest = decode(request)?;
            let op = Op::GetAdditionalDatanode {
                path: r.src,
                block: block(&r.blk),
                existing: uuids(&r.existings),
                excluded: uuids(&r.excludes),
                count: r.num_additional_nodes,
            };
            Ok(match run(Some(&r.client_name), op).await? {
                // HDFS answers with the whole new pipeline: the existing
                // nodes, then the added ones, each with its storage (Java
                // refuses a block whose storages and nodes do not pair up).
                OpResult::Located(lb) => {
                    let mut located = blocks::one_located_block(ns, &lb, &r.blk.pool_id).await?;
                    let mut storage_ids = if r.existing_storage_uuids.len() == r.existings.len() {
                        r.existing_storage_uuids
                    } else {
                        let at = ns.datanode_endpoints(uuids(&r.existings)).await;
                        let storage_of =
                            |d: &hdfs::DatanodeInfo| at.get(&d.id.datanode_uuid).map(|e| e.storage_id.clone());
                        r.existings.iter().map(|d| storage_of(d).unwrap_or_default()).collect()
                    };
                    storage_ids.append(&mut located.storage_ids);
                    let mut locs = r.existings;
                    locs.append(&mut located.locs);
                    located.is_cached = vec![false; locs.len()];
                    located.storage_types = vec![hdfs::STORAGE_DISK; locs.len()];
                    located.locs = locs;
                    located.storage_ids = storage_ids;
                    LocatedBlockResponse { block: located }.encode_to_vec()
                }
                other => return Err(unexpected(method, other)),
            })
        }),
        "updateBlockForPipeline" => answering(async move {
            let r: UpdateBlockForPipelineRequest = decode(request)?;
            let op = Op::UpdateBlockForPipeline {
                path: String::new(), // the namespace finds the block's file
                block: block(&r.block),
            };
            let pool = &r.block.pool_id;
            Ok(
                match ns
                    .call_in_pool(call.caller, call.ctx(Some(&r.client_name)), pool, op)
                    .await?
                    .result
                {
                    OpResult::Located(lb) => LocatedBlockResponse {
                        block: blocks::one_located_block(ns, &lb, pool).await?,
                    }
                    .encode_to_vec(),
                    other => return Err(unexpected(method, other)),
                },
            )
        }),
        "updatePipeline" => answering(async move {
            let r: UpdatePipelineRequest = decode(request)?;
            let op = Op::UpdatePipeline {
                path: String::new(), // the namespace finds the block's file
                old: block(&r.old_block),
                new: block(&r.new_block),
                nodes: r.new_nodes.iter().map(|d| d.datanode_uuid.clone()).collect(),
            };
            let (caller, ids) = (call.caller, call.ctx(Some(&r.client_name)));
            ns.call_in_pool(caller, ids, &r.old_block.pool_id, op).await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "append" => answering(async move {
            let r: AppendRequest = decode(request)?;
            Ok(
                match answered(Some(&r.client_name), Op::Append { path: r.src }).await? {
                    Answered {
                        result: OpResult::Appended { status, last },
                        block_pool_id,
                    } => AppendResponse {
                        block: match &last {
                            Some(lb) => Some(blocks::one_located_block(ns, lb, &block_pool_id).await?),
                            None => None,
                        },
                        stat: Some(status::file_status(&status, b"")),
                    }
                    .encode_to_vec(),
                    other => return Err(unexpected(method, other.result)),
                },
            )
        }),
        "fsync" => answering(async move {
            // raftfs records a block in the namespace when it is added, and
            // a reader learns the last block's length from the DataNodes,
            // so fsync has nothing to make durable: it checks that the
            // caller still holds the file's lease (renewing it).
            let r: FsyncRequest = decode(request)?;
            run(Some(&r.client), Op::RenewLease).await?;
            Ok(match run(None, Op::GetFileInfo { path: r.src.clone() }).await? {
                OpResult::Status(Some(s)) if s.under_construction => EmptyMessage {}.encode_to_vec(),
                OpResult::Status(_) => {
                    return Err(FsError::LeaseExpired(format!("{} is not open for writing", r.src)).into())
                }
                other => return Err(unexpected(method, other)),
            })
        }),
        "msync" => answering(async move {
            decode::<EmptyMessage>(request)?;
            ns.sync_state().await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "truncate" => answering(async move {
            let r: TruncateRequest = decode(request)?;
            let op = Op::Truncate {
                path: r.src,
                new_length: r.new_length,
            };
            bool_answer(method, run(Some(&r.client_name), op).await?)
        }),
        "concat" => answering(async move {
            let r: ConcatRequest = decode(request)?;
            run(
                None,
                Op::Concat {
                    target: r.trg,
                    sources: r.srcs,
                },
            )
            .await?;
            Ok(EmptyMessage {}.encode_to_vec())
        }),
        "getPreferredBlockSize" => answering(async move {
            let r: GetPreferredBlockSizeRequest = decode(request)?;
            let path = r.filename;
            Ok(match run(None, Op::GetFileInfo { path: path.clone() }).await? {
                OpResult::Status(Some(s)) if !s.is_dir() => {
                    GetPreferredBlockSizeResponse { bsize: s.block_size }.encode_to_vec()
                }
                OpResult::Status(Some(_)) => {
                    return Err(FsError::FileNotFound(format!("{path} is a directory, not a file")).into())
                }
                OpResult::Status(None) => {
                    return Err(FsError::FileNotFound(format!("File does not exist: {path}")).into())
                }
                other => return Err(unexpected(method, other)),
            })
        }),
        m if cluster_calls::serves(m) => Box::pin(cluster_calls::answer(ns, call, m, request)),
        "getHAServiceState" => answering(async move {
            decode::<EmptyMessage>(request)?;
            let state = match ns.ha_state() {
                HaState::Active => HA_ACTIVE,
                HaState::Observer => HA_OBSERVER,
                HaState::Standby => HA_STANDBY,
            };
            Ok(HaServiceStateResponse { state }.encode_to_vec())
        }),
        // Features off, answered as HDFS answers with them off.
        "getErasureCodingPolicy" | "getEZForPath" | "getDataEncryptionKey" | "getSnapshottableDirListing" => {
            Box::pin(std::future::ready(Ok(EmptyMessage {}.encode_to_vec())))
        }
        m if is_acl_method(m) => refused(RemoteError::new(
            "org.apache.hadoop.hdfs.protocol.AclException",
            "The ACL operation has been rejected.  Support for ACLs has been disabled by setting \
             dfs.namenode.acls.enabled to false.",
        )),
        "getXAttrs" | "listXAttrs" | "setXAttr" | "removeXAttr" => refused(RemoteError::new(
            "java.io.IOException",
            "The XAttr operation has been rejected.  Support for XAttrs has been disabled by setting \
             dfs.namenode.xattrs.enabled to false.",
        )),
        m if is_snapshot_method(m) => refused(RemoteError::new(
            "org.apache.hadoop.hdfs.protocol.SnapshotException",
            format!("{m}: raftfs has no snapshots"),
        )),
        m if is_unsupported_feature_method(m) => refused(RemoteError::new(
            "java.lang.UnsupportedOperationException",
            format!(
                "{m}: raftfs has no erasure coding, storage policies, encryption zones, caching or \
                 inotify"
            ),
        )),
        m if is_client_protocol_method(m) => refused(FsError::Unsupported(format!(
            "{m} is not served over Hadoop RPC yet (the raftfs SDK and WebHDFS serve it)"
        ))),
        m => refused(RemoteError::no_such_method(m, CLIENT_PROTOCOL)),
    }
}

/// A listing page with each file's block locations (what
/// `listLocatedStatus`, and so Spark's and MapReduce's input listing,
/// asks for): one getBlockLocations per file, as the caller. A file gone
/// since the page was read is left out, as if the listing came after.
async fn located_listing(
    ns: &dyn HadoopNamespace,
    call: &Call<'_>,
    dir: &str,
    page: &raftfs_proto::DirectoryListing,
) -> Result<hdfs::DirectoryListing, Refusal> {
    let mut out = status::listing(page);
    let mut kept = Vec::with_capacity(out.partial_listing.len());
    for (entry, mut st) in page.entries.iter().zip(out.partial_listing.drain(..)) {
        if !entry.is_dir() {
            let op = Op::GetBlockLocations {
                path: format!("{}/{}", dir.trim_end_matches('/'), entry.path_suffix),
                offset: 0,
                length: entry.length,
            };
            match ns
                .call(call.caller, call.ctx(None), op, call.seen_state_id)
                .await
                .map(|a| a.result)
            {
                Ok(OpResult::Blocks(lbs)) => st.locations = Some(blocks::located_blocks(ns, &lbs).await?),
                Err(FsError::FileNotFound(_)) => continue,
                Ok(other) => return Err(unexpected("getListing", other)),
                Err(e) => return Err(e.into()),
            }
        }
        kept.push(st);
    }
    out.partial_listing = kept;
    Ok(out)
}

/// The uuids of the DataNodes a request names.
fn uuids(nodes: &[hdfs::DatanodeInfo]) -> Vec<String> {
    nodes.iter().map(|d| d.id.datanode_uuid.clone()).collect()
}

fn bool_answer(method: &str, r: OpResult) -> Result<Vec<u8>, Refusal> {
    match r {
        OpResult::Bool(result) => Ok(BoolResponse { result }.encode_to_vec()),
        other => Err(unexpected(method, other)),
    }
}
