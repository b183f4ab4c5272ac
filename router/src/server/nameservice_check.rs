//! What a router checks of a nameservice before registering it: that one
//! of the members the record names answers, belongs to this router's
//! cluster, and is the nameservice the record says (name, NamespaceID,
//! BlockPoolID). A record of another cluster, or of members that are not
//! running, is refused and the federation is left unchanged.
//!
//! Caveat: the check is made once, at registration; a nameservice
//! reformatted afterwards is caught by DataNodes (which compare block pool
//! ids at every registration) and by its own members, not here.

use raftfs_proto::{pb, FsError};
use raftfs_raft::peer_info::peer_info;
use raftfs_trust::{Dialer, PeerRole};

use crate::federation::NameserviceRecord;

/// How long one member has to answer.
pub const MEMBER_INFO_TIMEOUT_MS: u64 = 2_000;

/// What the member at `addr` says of itself (`MemberInfo`), over `dialer`,
/// within [`MEMBER_INFO_TIMEOUT_MS`]; why not, if it does not answer.
pub async fn member_info(dialer: &Dialer, addr: &str) -> Result<pb::MemberInfoReply, String> {
    peer_info(dialer, addr, PeerRole::Member, MEMBER_INFO_TIMEOUT_MS).await
}

/// Check `record` against its members, over `dialer`, for cluster `cluster_id`.
pub async fn check_record(dialer: &Dialer, cluster_id: &str, record: &NameserviceRecord) -> Result<(), FsError> {
    let mut last = String::new();
    for addr in record.members.values() {
        let info = match member_info(dialer, addr).await {
            Ok(i) => i,
            Err(e) => {
                last = format!("{addr}: {e}");
                continue;
            }
        };
        let name = &record.name;
        if info.cluster_id != cluster_id {
            return Err(FsError::InvalidArgument(format!(
                "the member at {addr} belongs to cluster {}, not this federation's {cluster_id}",
                info.cluster_id
            )));
        }
        if info.nameservice != *name
            || info.namespace_id != record.namespace_id
            || info.block_pool_id != record.block_pool_id
        {
            return Err(FsError::InvalidArgument(format!(
                "the member at {addr} is nameservice {} (NamespaceID {}, BlockPoolID {}), \
                 not {name} ({}, {})",
                info.nameservice, info.namespace_id, info.block_pool_id, record.namespace_id, record.block_pool_id
            )));
        }
        return Ok(());
    }
    Err(FsError::Unavailable(format!(
        "no member of nameservice {} answered ({last}): a nameservice is registered once it runs",
        record.name
    )))
}
