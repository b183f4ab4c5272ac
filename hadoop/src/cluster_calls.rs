//! ClientNamenodeProtocol's calls about the cluster rather than a path:
//! `getFsStats` (what `hdfs dfs -df` prints), `getDatanodeReport` (what
//! `hdfs dfsadmin -report` prints) and `setSafeMode` (`hdfs dfsadmin
//! -safemode get|enter|leave`).
//!
//! Privileges are HDFS's: anyone may ask for the stats or whether safe
//! mode is on; the DataNode report and entering or leaving safe mode are
//! for the superuser (the namespace checks, as for `raftfs dfsadmin`).
//!
//! Caveat: a DataNode that serves no Hadoop data transfer is reported with
//! its raftfs address and transfer port 0 (a Hadoop client cannot reach it).

use prost::Message;
use raftfs_proto::{AdminOp, AdminResult, AdminState, DatanodeInfo, FsError, SafeModeAction};

use crate::blocks;
use crate::ipc_service::{decode, Call, Refusal};
use crate::namespace::{DatanodeEndpoints, HadoopNamespace};
use crate::wire::hdfs::{self, ADMIN_DECOMMISSIONED, ADMIN_DECOMMISSION_INPROGRESS, ADMIN_NORMAL};
use crate::wire::namenode::*;

/// Whether `method` is one of this module's.
pub fn serves(method: &str) -> bool {
    matches!(method, "getFsStats" | "getDatanodeReport" | "setSafeMode")
}

/// Answer `method` (one [`serves`] names) with `request`'s bytes.
pub async fn answer(
    ns: &dyn HadoopNamespace,
    call: &Call<'_>,
    method: &str,
    request: &[u8],
) -> Result<Vec<u8>, Refusal> {
    Ok(match method {
        "getFsStats" => {
            decode::<EmptyMessage>(request)?;
            let s = match ns.admin(call.caller, call.ctx(None), AdminOp::FsStats).await? {
                AdminResult::FsStats(s) => s,
                other => return Err(FsError::Internal(format!("getFsStats answered {other:?}")).into()),
            };
            GetFsStatsResponse {
                capacity: s.capacity_bytes,
                used: s.used_bytes,
                remaining: s.remaining_bytes,
                under_replicated: s.under_replicated_blocks,
                corrupt_blocks: s.corrupt_blocks,
                missing_blocks: s.missing_blocks,
                missing_repl_one_blocks: Some(0),
                blocks_in_future: Some(0),
                pending_deletion_blocks: Some(s.pending_deletion_blocks),
            }
            .encode_to_vec()
        }
        "getDatanodeReport" => {
            let r: GetDatanodeReportRequest = decode(request)?;
            let wanted = report_filter(r.report_type)?;
            match ns.admin(call.caller, call.ctx(None), AdminOp::DatanodeReport).await? {
                AdminResult::Datanodes(nodes) => GetDatanodeReportResponse {
                    di: nodes.iter().filter(|n| wanted(n)).map(reported).collect(),
                }
                .encode_to_vec(),
                other => return Err(FsError::Internal(format!("a DataNode report answered {other:?}")).into()),
            }
        }
        "setSafeMode" => {
            let r: SetSafeModeRequest = decode(request)?;
            let action = match r.action {
                SAFEMODE_GET => SafeModeAction::Get,
                SAFEMODE_ENTER => SafeModeAction::Enter,
                SAFEMODE_LEAVE | SAFEMODE_FORCE_EXIT => SafeModeAction::Leave,
                other => return Err(FsError::InvalidArgument(format!("unknown safe mode action {other}")).into()),
            };
            match ns.admin(call.caller, call.ctx(None), AdminOp::SafeMode(action)).await? {
                AdminResult::SafeMode(s) => BoolResponse { result: s.on }.encode_to_vec(),
                other => return Err(FsError::Internal(format!("setSafeMode answered {other:?}")).into()),
            }
        }
        other => panic!("cluster_calls::answer called for {other}, which it does not serve"),
    })
}

/// Which DataNodes a `DatanodeReportTypeProto` asks for (raftfs has no
/// maintenance state: those reports are empty).
fn report_filter(kind: i32) -> Result<fn(&DatanodeInfo) -> bool, FsError> {
    Ok(match kind {
        REPORT_ALL => |_| true,
        REPORT_LIVE => |n| n.live,
        REPORT_DEAD => |n| !n.live,
        REPORT_DECOMMISSIONING => |n| n.admin_state == AdminState::DecommissionInProgress,
        REPORT_ENTERING_MAINTENANCE | REPORT_IN_MAINTENANCE => |_| false,
        other => {
            return Err(FsError::InvalidArgument(format!(
                "unknown DataNode report type {other}"
            )))
        }
    })
}

/// One DataNode as `getDatanodeReport` reports it.
fn reported(n: &DatanodeInfo) -> hdfs::DatanodeInfo {
    let at = DatanodeEndpoints {
        xfer_addr: n.hadoop_xfer_addr.clone(),
        http_addr: n.http_addr.clone(),
        storage_id: n.storage_id.clone(),
    };
    let fallback = || DatanodeEndpoints {
        xfer_addr: format!(
            "{}:0",
            n.id.addr.rsplit_once(':').map_or(n.id.addr.as_str(), |(h, _)| h)
        ),
        ..at.clone()
    };
    let mut d = blocks::datanode_info(&n.id, &at)
        .or_else(|| blocks::datanode_info(&n.id, &fallback()))
        .unwrap_or_else(|| panic!("{:?} with port 0 is not HOST:PORT", fallback().xfer_addr));
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    d.last_update = Some(now_ms.saturating_sub(n.last_heartbeat_ago_ms));
    d.capacity = Some(n.capacity_bytes);
    d.dfs_used = Some(n.dfs_used_bytes);
    d.remaining = Some(n.remaining_bytes);
    d.block_pool_used = Some(n.block_pool_used_bytes);
    d.non_dfs_used = Some(
        n.capacity_bytes
            .saturating_sub(n.dfs_used_bytes)
            .saturating_sub(n.remaining_bytes),
    );
    d.xceiver_count = Some(n.xceivers);
    d.num_blocks = Some(u32::try_from(n.blocks).unwrap_or(u32::MAX));
    d.admin_state = Some(match n.admin_state {
        AdminState::Normal => ADMIN_NORMAL,
        AdminState::DecommissionInProgress => ADMIN_DECOMMISSION_INPROGRESS,
        AdminState::Decommissioned => ADMIN_DECOMMISSIONED,
    });
    d
}
