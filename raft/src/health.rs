//! A member's health checks (what ZKFC's HealthMonitor does for a
//! NameNode, here inside the member), for any Raft group; the monitor that
//! acts on them is [`crate::group::monitor_health`].
//!
//! Every [`HEALTH_CHECK_INTERVAL_MS`] it checks the free space of the data
//! directory's file system (statvfs), the Raft log's fsyncs since the last
//! check (any failure, or one slower than the limit) and, for the fault
//! tests, an injected condition. An unhealthy member stops campaigning;
//! an unhealthy leader also hands leadership to the most caught-up follower
//! that reports itself healthy. When the condition clears it campaigns again.
//! Nothing acknowledged is at risk either way: the log's durability rules do
//! not depend on health, health only decides who should lead.
//!
//! Caveat: if every member is unhealthy, none campaigns; the current leader
//! (if any) keeps leading.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::log_store::IoStats;

/// How often a member checks itself.
pub const HEALTH_CHECK_INTERVAL_MS: u64 = 1000;
/// Default least free space in the data directory's file system (HDFS
/// `dfs.namenode.resource.du.reserved`, 100 MB).
pub const DEFAULT_MIN_FREE_DISK_BYTES: u64 = 100 * 1024 * 1024;
/// Default slowest acceptable Raft log fsync.
pub const DEFAULT_MAX_FSYNC_MS: u64 = 5_000;
/// Fault injection: while `<data dir>/<this file name>` exists, the member is
/// unhealthy, with the file's first line as the reason.
pub const ENV_INJECT_UNHEALTHY_FILE: &str = "RAFTFS_FAILPOINT_UNHEALTHY_FILE";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Health {
    Healthy,
    Unhealthy(String),
}

impl Health {
    pub fn is_healthy(&self) -> bool {
        matches!(self, Health::Healthy)
    }

    /// `HEALTHY` or `UNHEALTHY: <reason>`, as haadmin shows it.
    pub fn describe(&self) -> String {
        match self {
            Health::Healthy => "HEALTHY".into(),
            Health::Unhealthy(r) => format!("UNHEALTHY: {r}"),
        }
    }
}

#[derive(Debug, Clone)]
pub struct HealthConfig {
    pub min_free_disk_bytes: u64,
    pub max_fsync_ms: u64,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            min_free_disk_bytes: DEFAULT_MIN_FREE_DISK_BYTES,
            max_fsync_ms: DEFAULT_MAX_FSYNC_MS,
        }
    }
}

/// One member's checks.
pub struct HealthChecks {
    dir: PathBuf,
    cfg: HealthConfig,
    log_io: Arc<IoStats>,
    inject_file: Option<PathBuf>,
}

/// Free bytes for unprivileged users in the file system holding `dir`.
pub fn free_disk_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(std::io::Error::other)?;
    // SAFETY: statvfs writes into the zeroed struct we pass; `c` is NUL-terminated.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(st.f_bavail as u64 * st.f_frsize as u64)
}

impl HealthChecks {
    pub fn new(dir: &Path, cfg: HealthConfig, log_io: Arc<IoStats>) -> HealthChecks {
        HealthChecks {
            dir: dir.to_path_buf(),
            cfg,
            log_io,
            inject_file: std::env::var_os(ENV_INJECT_UNHEALTHY_FILE).map(|f| dir.join(f)),
        }
    }

    /// Run every check once; the first failing one names the reason.
    pub fn check(&self) -> Health {
        let (slowest_ms, errors, last_error) = self.log_io.take();
        if errors > 0 {
            return Health::Unhealthy(format!(
                "{errors} raft log fsync failure(s), last: {}",
                last_error.unwrap_or_default()
            ));
        }
        if slowest_ms > self.cfg.max_fsync_ms {
            return Health::Unhealthy(format!(
                "raft log fsync took {slowest_ms} ms (limit {} ms)",
                self.cfg.max_fsync_ms
            ));
        }
        match free_disk_bytes(&self.dir) {
            Err(e) => return Health::Unhealthy(format!("statvfs {}: {e}", self.dir.display())),
            Ok(free) if free < self.cfg.min_free_disk_bytes => {
                return Health::Unhealthy(format!(
                    "free disk in {} is {} MiB (limit {} MiB)",
                    self.dir.display(),
                    free >> 20,
                    self.cfg.min_free_disk_bytes >> 20
                ))
            }
            Ok(_) => {}
        }
        if let Some(f) = &self.inject_file {
            if let Ok(text) = std::fs::read_to_string(f) {
                return Health::Unhealthy(format!("injected: {}", text.lines().next().unwrap_or("").trim()));
            }
        }
        Health::Healthy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_name_their_reason() {
        let dir = tempfile::tempdir().unwrap();
        let io = Arc::new(IoStats::default());
        let ok = HealthChecks::new(dir.path(), HealthConfig::default(), io.clone());
        assert!(free_disk_bytes(dir.path()).unwrap() > 0);
        let full = HealthChecks::new(
            dir.path(),
            HealthConfig {
                min_free_disk_bytes: u64::MAX,
                ..HealthConfig::default()
            },
            io,
        );
        match full.check() {
            Health::Unhealthy(r) => assert!(r.starts_with("free disk in "), "{r}"),
            h => panic!("{h:?}"),
        }
        // The default threshold holds on any machine that can run the tests.
        let _ = ok.check();
    }
}
