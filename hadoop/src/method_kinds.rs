//! ClientProtocol's methods by how this server answers those it does not
//! run: the features raftfs does not have (answered as HDFS answers with
//! them off) and the methods not served over Hadoop RPC yet.

/// ACL calls (HDFS with `dfs.namenode.acls.enabled=false`: AclException).
pub(crate) fn is_acl_method(m: &str) -> bool {
    matches!(
        m,
        "getAclStatus" | "setAcl" | "modifyAclEntries" | "removeAclEntries" | "removeDefaultAcl" | "removeAcl"
    )
}

/// Snapshot calls (SnapshotException: raftfs has no snapshots).
pub(crate) fn is_snapshot_method(m: &str) -> bool {
    matches!(
        m,
        "allowSnapshot"
            | "disallowSnapshot"
            | "createSnapshot"
            | "deleteSnapshot"
            | "renameSnapshot"
            | "getSnapshotDiffReport"
            | "getSnapshotDiffReportListing"
            | "getSnapshotListing"
    )
}

/// Erasure coding, storage policies, encryption zones, caching, inotify
/// and symlinks (UnsupportedOperationException).
pub(crate) fn is_unsupported_feature_method(m: &str) -> bool {
    matches!(
        m,
        "setErasureCodingPolicy"
            | "unsetErasureCodingPolicy"
            | "getErasureCodingPolicies"
            | "getErasureCodingCodecs"
            | "addErasureCodingPolicies"
            | "removeErasureCodingPolicy"
            | "enableErasureCodingPolicy"
            | "disableErasureCodingPolicy"
            | "getECTopologyResultForPolicies"
            | "setStoragePolicy"
            | "unsetStoragePolicy"
            | "getStoragePolicy"
            | "getStoragePolicies"
            | "satisfyStoragePolicy"
            | "createEncryptionZone"
            | "listEncryptionZones"
            | "reencryptEncryptionZone"
            | "listReencryptionStatus"
            | "addCacheDirective"
            | "modifyCacheDirective"
            | "removeCacheDirective"
            | "listCacheDirectives"
            | "addCachePool"
            | "modifyCachePool"
            | "removeCachePool"
            | "listCachePools"
            | "getCurrentEditLogTxid"
            | "getEditsFromTxid"
            | "createSymlink"
            | "getLinkTarget"
    )
}

/// ClientProtocol's other methods, which raftfs has but this server does
/// not serve yet.
pub(crate) fn is_client_protocol_method(m: &str) -> bool {
    matches!(
        m,
        "getLocatedFileInfo"
            | "getBatchedListing"
            | "getFsReplicatedBlockStats"
            | "getFsECBlockGroupStats"
            | "getDatanodeStorageReport"
            | "saveNamespace"
            | "rollEdits"
            | "restoreFailedStorage"
            | "refreshNodes"
            | "finalizeUpgrade"
            | "upgradeStatus"
            | "rollingUpgrade"
            | "listCorruptFileBlocks"
            | "metaSave"
            | "setBalancerBandwidth"
            | "reportBadBlocks"
            | "getDelegationToken"
            | "renewDelegationToken"
            | "cancelDelegationToken"
            | "checkAccess"
            | "listOpenFiles"
            | "getSlowDatanodeReport"
            | "getEnclosingRoot"
    )
}
