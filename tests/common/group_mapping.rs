//! [`GroupMapping`]: a cluster's group mapping file (`--group-mapping`),
//! rewritten so that members resolve each caller of a golden script to the
//! groups the script names for it. Members decide callers' groups
//! themselves, so `@user:groups` can reach them only this way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use raftfs_metaserver::namespace::{check_ctx, check_principal};
use raftfs_proto::{CallCtx, FsError};

use super::Cluster;

pub struct GroupMapping {
    file: PathBuf,
    mapping: BTreeMap<String, Vec<String>>,
}

impl GroupMapping {
    /// An empty mapping in `file`.
    pub fn new(file: PathBuf) -> GroupMapping {
        std::fs::write(&file, "{}").expect("write the group mapping file");
        GroupMapping {
            file,
            mapping: BTreeMap::new(),
        }
    }

    /// The file members are started with (`--group-mapping`).
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Map `ctx`'s user to `ctx`'s groups, rewriting the file and making
    /// every member of `clusters` reread it when that changes the mapping.
    /// A group no mapping file can hold is refused as the engine's identity
    /// check refuses it for the script's ctx.
    pub fn map(&mut self, ctx: &CallCtx, clusters: &[&Cluster]) -> Result<(), FsError> {
        if ctx.groups.iter().any(|g| check_principal(g).is_err()) {
            check_ctx(ctx)?;
            unreachable!("check_ctx refuses an invalid group name");
        }
        if self.mapping.get(&ctx.user) != Some(&ctx.groups) {
            self.mapping.insert(ctx.user.clone(), ctx.groups.clone());
            std::fs::write(&self.file, serde_json::to_vec(&self.mapping).unwrap()).unwrap();
            for c in clusters {
                c.refresh_groups();
            }
        }
        Ok(())
    }
}
