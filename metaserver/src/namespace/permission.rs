//! POSIX-style permission checks as HDFS's `FSPermissionChecker` does them:
//! owner, then group, then other bits; the superuser (the user who ran
//! `format`, or a member of the supergroup) passes every check.

use raftfs_proto::{CallCtx, FsError};

use super::resolve::Resolved;
use crate::inode::Inode;

pub const READ: u16 = 4;
pub const WRITE: u16 = 2;
pub const EXECUTE: u16 = 1;
pub const ALL: u16 = 7;

fn action_name(a: u16) -> &'static str {
    match a {
        4 => "READ",
        2 => "WRITE",
        1 => "EXECUTE",
        5 => "READ_EXECUTE",
        3 => "WRITE_EXECUTE",
        6 => "READ_WRITE",
        7 => "ALL",
        _ => "NONE",
    }
}

/// The caller as the permission checker sees it.
pub struct Caller<'a> {
    pub user: &'a str,
    pub groups: &'a [String],
    pub superuser: bool,
}

impl<'a> Caller<'a> {
    pub fn new(ctx: &'a CallCtx, superuser: &str, supergroup: &str) -> Caller<'a> {
        let is_super = ctx.user == superuser || ctx.groups.iter().any(|g| g == supergroup);
        Caller {
            user: &ctx.user,
            groups: &ctx.groups,
            superuser: is_super,
        }
    }

    pub fn is_owner(&self, inode: &Inode) -> bool {
        self.superuser || *inode.owner == *self.user
    }

    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }

    /// True when the caller may `access` (an rwx mask) `inode`.
    pub fn allowed(&self, inode: &Inode, access: u16) -> bool {
        if self.superuser {
            return true;
        }
        let mode = inode.permission.bits();
        let bits = if *inode.owner == *self.user {
            (mode >> 6) & 7
        } else if self.in_group(&inode.group) {
            (mode >> 3) & 7
        } else {
            mode & 7
        };
        bits & access == access
    }

    /// The AccessControl error for `access` on `inode` at `path`.
    pub fn denied(&self, inode: &Inode, access: u16, path: &str) -> FsError {
        FsError::AccessControl(format!(
            "Permission denied: user={}, access={}, inode=\"{}\":{}:{}:{}{}",
            self.user,
            action_name(access),
            path,
            inode.owner,
            inode.group,
            if inode.is_dir() { 'd' } else { '-' },
            inode.permission
        ))
    }

    /// Check `access` on `inode`, named `path` in the message.
    pub fn check(&self, inode: &Inode, access: u16, path: &str) -> Result<(), FsError> {
        if self.allowed(inode, access) {
            Ok(())
        } else {
            Err(self.denied(inode, access, path))
        }
    }

    /// EXECUTE on every directory traversed to reach the target position.
    /// Path texts are built only for the message of a denial.
    pub fn check_traverse(&self, r: &Resolved) -> Result<(), FsError> {
        if self.superuser {
            return Ok(());
        }
        let n = r.path.components.len().min(r.inodes.len());
        for i in 0..n {
            if r.inodes[i].is_dir() && !self.allowed(&r.inodes[i], EXECUTE) {
                return Err(self.denied(&r.inodes[i], EXECUTE, &r.text_at(i)));
            }
        }
        Ok(())
    }

    /// The sticky-bit rule for removing `child` from `parent`.
    pub fn check_sticky(&self, parent: &Inode, child: &Inode, path: &str) -> Result<(), FsError> {
        if self.superuser || !parent.permission.sticky() || *parent.owner == *self.user || *child.owner == *self.user {
            return Ok(());
        }
        Err(FsError::AccessControl(format!(
            "Permission denied by sticky bit: user={}, path=\"{}\":{}:{}:{}{}, parent=\"{}\"",
            self.user,
            path,
            child.owner,
            child.group,
            if child.is_dir() { 'd' } else { '-' },
            child.permission,
            path.rsplit_once('/')
                .map(|(p, _)| if p.is_empty() { "/" } else { p })
                .unwrap_or("/"),
        )))
    }

    pub fn require_superuser(&self, what: &str) -> Result<(), FsError> {
        if self.superuser {
            Ok(())
        } else {
            Err(FsError::AccessControl(format!(
                "Access denied for user {}. Superuser privilege is required{what}",
                self.user
            )))
        }
    }
}
