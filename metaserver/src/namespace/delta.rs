//! Deltas: what planning an operation produces and what apply writes
//! (DESIGN.md §4 step 2–3).
//!
//! Mutations are field-level so that deltas planned concurrently commute
//! where HDFS semantics allow: parent mtime, child counts and quota usage are
//! mergeable ([`Mutation::TouchDir`], [`Mutation::AddUsage`]); structural
//! changes carry guards ([`Mutation::Link`] needs the edge absent,
//! [`Mutation::Unlink`] needs it to point at the expected child), so a stale
//! delta fails the same way on every replica instead of corrupting the tree.

use raftfs_proto::{Block, OpResult, Permission};
use serde::{Deserialize, Serialize};

use crate::inode::{Inode, InodeId};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Attr {
    Permission(Permission),
    Owner {
        owner: Option<String>,
        group: Option<String>,
    },
    Replication(u16),
    Times {
        mtime: Option<i64>,
        atime: Option<i64>,
    },
    /// Set (or with both quotas `None`, remove) the quota feature; usage as counted at plan time.
    Quota {
        ns_quota: Option<u64>,
        ds_quota: Option<u64>,
        ns_used: u64,
        ds_used: u64,
    },
    /// Close a file: drop the lease, set mtime.
    Close {
        mtime: i64,
    },
    /// Give a file to a (new) lease holder: the writer of an append, or the
    /// lease recovery.
    LeaseHolder(String),
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mutation {
    /// Guard: the id is unused.
    CreateInode(Inode),
    /// Guard: the inode exists.
    DeleteInode(InodeId),
    /// Guard: `parent` is a directory and has no entry `name`.
    Link {
        parent: InodeId,
        name: String,
        child: InodeId,
    },
    /// Guard: `parent`/`name` points at `child`.
    Unlink {
        parent: InodeId,
        name: String,
        child: InodeId,
    },
    /// Guard: the inode exists (and, for file attributes, is a file).
    SetAttr { id: InodeId, attr: Attr },
    /// Mergeable: mtime = max(mtime, `mtime`), children += `children`.
    TouchDir { id: InodeId, mtime: i64, children: i64 },
    /// Mergeable: quota usage of a directory that has a quota.
    AddUsage { id: InodeId, ns: i64, ds: i64 },
    /// Mergeable: the inode id counter becomes at least this.
    AdvanceInodeId(InodeId),
    /// Guard: `id` is a file being written. Appends `block`.
    AddBlock { id: InodeId, block: Block },
    /// Guard: file `id`'s last block has id `expect`. Replaces it by `block`
    /// (a new length and/or generation stamp).
    SetLastBlock { id: InodeId, expect: u64, block: Block },
    /// Guard: file `id`'s last block has id `expect`. Removes it.
    RemoveLastBlock { id: InodeId, expect: u64 },
    /// `holder` renews its lease at the delta's time (nothing when it holds no file).
    RenewLease { holder: String },
    /// Mergeable: the block id counter becomes at least this.
    AdvanceBlockId(u64),
    /// Mergeable: the generation stamp counter becomes at least this.
    AdvanceGenStamp(u64),
    /// Mergeable: add `node` to (or remove it from) the set of DataNodes to decommission.
    Decommission { node: String, on: bool },
    /// Guard: no token has this sequence number. Records a new delegation token.
    PutDelegationToken(super::delegation::TokenRecord),
    /// Mergeable: the token's expiry becomes at least `expiry_ms` (nothing if it is gone).
    RenewDelegationToken { sequence_number: u64, expiry_ms: i64 },
    /// Forget a token (nothing if it is gone).
    DeleteDelegationToken { sequence_number: u64 },
    /// Replace the master keys (only the leader's own entries write them, one at a time).
    SetDelegationKeys(Vec<raftfs_proto::DelegationKey>),
    /// Mergeable: the token sequence counter becomes at least this.
    AdvanceDelegationSeq(u64),
    /// Replace the federation paths this nameservice owns (appended: the
    /// tags above are on disk).
    SetOwnership(super::ownership::Ownership),
    /// Guard: the ownership row was replaced `changes` times (0: never
    /// set). Carried by writes routed by a mount table: applied only if the
    /// paths they were checked against are still this nameservice's.
    OwnedAt { changes: u64 },
    /// Guard: `from` and `to` are closed files and `from`'s blocks are
    /// exactly `expect`. Moves them to the end of `to` (a concat), leaving
    /// `from` empty; their rows then name `to` and its replication.
    MoveBlocks {
        from: InodeId,
        to: InodeId,
        expect: Vec<u64>,
    },
}

/// The outcome of planning one operation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    pub mutations: Vec<Mutation>,
    pub result: OpResult,
}

impl Delta {
    pub fn read_only(result: OpResult) -> Delta {
        Delta {
            mutations: Vec::new(),
            result,
        }
    }
}
