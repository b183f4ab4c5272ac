//! [`BlockAccess`]: the block access tokens a member puts on its answers
//! (HDFS `BlockManager.setBlockToken`), and the keys it hands DataNodes.
//!
//! Which answers carry tokens, for which access:
//! - getBlockLocations: READ on every block listed;
//! - addBlock and updateBlockForPipeline: WRITE on the block;
//! - append: READ and WRITE on the last block (the
//!   writer reads the partial last chunk back before it appends);
//! - getAdditionalDatanode: COPY (the writer asks a DataNode of its
//!   pipeline to copy the replica to the new node).
//!
//! Tokens are minted on whichever member answers, leader or follower, with
//! that member's own keys ([`raftfs_trust::block_token`]); nothing about
//! them enters the log. A member that runs without TLS (`--insecure`) mints
//! none, and its DataNodes check none.

use raftfs_proto::{AccessMode, AccessModes, DataProtection, ExportedBlockKeys, FsError, Op, OpResult};
use raftfs_trust::{BlockTokenSecretManager, BlockTokenTimes};

use super::member::now_ms;

pub struct BlockAccess {
    keys: Option<BlockTokenSecretManager>,
}

/// What a token on `op`'s answer grants, or `None` when the answer names no block.
pub fn grant_for(op: &Op) -> Option<AccessModes> {
    use AccessMode::*;
    let modes: &[AccessMode] = match op {
        Op::GetBlockLocations { .. } => &[Read],
        Op::AddBlock { .. } | Op::UpdateBlockForPipeline { .. } => &[Write],
        Op::Append { .. } => &[Read, Write],
        Op::GetAdditionalDatanode { .. } => &[Copy],
        _ => return None,
    };
    Some(AccessModes::of(modes))
}

impl BlockAccess {
    /// Tokens for `block_pool_id` timed by `times`, for data protection
    /// `protection`, or none at all (`enabled` false).
    pub fn new(enabled: bool, block_pool_id: &str, times: BlockTokenTimes, protection: DataProtection) -> BlockAccess {
        BlockAccess {
            keys: enabled
                .then(|| BlockTokenSecretManager::new(block_pool_id, times, now_ms()).with_protection(protection)),
        }
    }

    pub fn enabled(&self) -> bool {
        self.keys.is_some()
    }

    /// The keys for a DataNode's registration or heartbeat reply.
    pub fn export(&self) -> Option<ExportedBlockKeys> {
        self.keys.as_ref().map(|k| k.export(now_ms()))
    }

    /// Put tokens for `modes`, issued to `user`, on every block `r` names.
    pub fn stamp(&self, user: &str, modes: Option<AccessModes>, r: &mut OpResult) -> Result<(), FsError> {
        let (Some(keys), Some(modes)) = (&self.keys, modes) else {
            return Ok(());
        };
        let now = now_ms();
        for lb in r.located_blocks_mut() {
            lb.token = Some(keys.mint(user, lb.block.id, modes, now)?);
        }
        Ok(())
    }
}
