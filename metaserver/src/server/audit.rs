//! The audit log: one line per client operation on the member that
//! executes it, in HDFS's format, so that the scripts operators already
//! run over `hdfs-audit.log` read ours:
//!
//! ```text
//! allowed=true ugi=alice (auth:SIMPLE) ip=/127.0.0.1 cmd=create src=/a dst=null perm=alice:supergroup:rw-r--r-- proto=rpc
//! ```
//!
//! Fields are separated by tabs (shown as spaces above), as HDFS's
//! `DefaultAuditLogger` writes them; `src` and `dst` are escaped as Java
//! escapes strings, so a tab or a newline in a name cannot forge a field
//! or a line. `perm` is the status the reply carries (`owner:group:mode`:
//! create, append), else `null`; HDFS also logs the status mkdirs,
//! setPermission, setOwner, setTimes and rename leave, which would cost
//! those calls a lookup here (caveat). A call refused for permissions is
//! logged with `allowed=false`; other failures (a missing path, a quota)
//! are not logged, as in HDFS. A call a router forwarded shows the router
//! as the proxy: `ugi=alice (auth:PROXY) via router-1 (auth:CERTIFICATE)`.
//! A retry answered from the retry table is logged again (HDFS logs it
//! once).
//!
//! Which calls: the namespace operations HDFS audits, by HDFS's command
//! names ([`audit_cmd`]); the block-level calls of a writer (addBlock,
//! complete, lease renewal) are not audited, as in HDFS.
//!
//! How: [`AuditLog::record`] emits a `tracing` event with target
//! [`AUDIT_TARGET`], after the call has run, holding no lock; the binary
//! routes that target to its own file through a non-blocking writer (a
//! bounded queue drained by its own thread), so a write never waits on the
//! audit file's disk. Caveat: lines still queued when the process is
//! killed are lost, as with HDFS's asynchronous audit appender.

use std::borrow::Cow;
use std::fmt::Write as _;

use raftfs_proto::{FsError, Op, OpResult};
use raftfs_trust::{PeerIdentity, PeerRole};

/// The `tracing` target of audit lines (the binary sends it to the audit file).
pub const AUDIT_TARGET: &str = "raftfs::audit";

/// How a call's user was established (Hadoop names it in `ugi=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMethod {
    /// A user certificate on the connection.
    Certificate,
    /// A delegation token in the call.
    Token,
    /// The name the call carries (`--auth simple`).
    Simple,
}

impl AuthMethod {
    fn hadoop_name(self) -> &'static str {
        match self {
            AuthMethod::Simple => "SIMPLE",
            AuthMethod::Certificate => "CERTIFICATE",
            AuthMethod::Token => "TOKEN",
        }
    }
}

/// Whether this member writes audit lines (`--audit-log`).
#[derive(Debug, Clone, Copy)]
pub struct AuditLog {
    enabled: bool,
}

/// One audited call, taken before it runs (the call consumes its op).
pub struct AuditEntry {
    ugi: String,
    ip: String,
    cmd: Cow<'static, str>,
    src: String,
    dst: Option<String>,
    /// How the call arrived: `rpc` (gRPC) or `webhdfs`.
    proto: &'static str,
}

impl AuditEntry {
    /// The call arrived over WebHDFS (`proto=webhdfs`, as HDFS writes it).
    pub fn over_webhdfs(mut self) -> AuditEntry {
        self.proto = "webhdfs";
        self
    }
}

impl AuditLog {
    pub fn new(enabled: bool) -> AuditLog {
        AuditLog { enabled }
    }

    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The entry of `op` by `user` (authenticated by `auth`, over a
    /// connection from `peer` at `ip`), if this log is on and HDFS audits it.
    pub fn entry(
        &self,
        user: &str,
        auth: AuthMethod,
        peer: Option<&PeerIdentity>,
        ip: &str,
        op: &Op,
    ) -> Option<AuditEntry> {
        if !self.enabled {
            return None;
        }
        let cmd = audit_cmd(op)?;
        let (src, dst) = match op {
            Op::Rename { src, dst } | Op::Rename2 { src, dst, .. } => (src.clone(), Some(dst.clone())),
            // As HDFS: the sources as Java prints an array, the target as dst.
            Op::Concat { target, sources } => (format!("[{}]", sources.join(", ")), Some(target.clone())),
            _ => (op.src_path().to_string(), None),
        };
        Some(AuditEntry {
            ugi: ugi(user, auth, peer),
            ip: ip.to_string(),
            cmd,
            src,
            dst,
            proto: "rpc",
        })
    }

    /// Log `entry` with the call's outcome: `allowed=true` when it
    /// succeeded, `allowed=false` when it was refused for permissions,
    /// nothing otherwise (as HDFS).
    pub fn record(&self, entry: AuditEntry, result: &Result<OpResult, FsError>) {
        let (allowed, perm) = match result {
            Ok(r) => (true, status_perm(r)),
            Err(FsError::AccessControl(_)) => (false, None),
            Err(_) => return,
        };
        let line = audit_line(allowed, &entry, perm.as_deref());
        tracing::info!(target: AUDIT_TARGET, "{line}");
    }
}

/// `owner:group:mode` of the status a reply carries, if any.
fn status_perm(r: &OpResult) -> Option<String> {
    let s = match r {
        OpResult::Status(Some(s)) | OpResult::Appended { status: s, .. } => s,
        _ => return None,
    };
    Some(format!("{}:{}:{}", s.owner, s.group, s.permission))
}

/// HDFS's command name for `op` ([`Op::name`], and rename2's options as
/// HDFS writes them), if HDFS audits it.
pub fn audit_cmd(op: &Op) -> Option<Cow<'static, str>> {
    match op {
        Op::Rename2 { overwrite, .. } => Some(Cow::Borrowed(if *overwrite {
            "rename (options=[OVERWRITE])"
        } else {
            "rename (options=[NONE])"
        })),
        // A writer's block calls, lease renewal, and what members,
        // DataNodes and routers send themselves: not audited (HDFS's
        // addBlock, complete and renewLease are not either).
        Op::Complete { .. }
        | Op::AddBlock { .. }
        | Op::AbandonBlock { .. }
        | Op::UpdateBlockForPipeline { .. }
        | Op::UpdatePipeline { .. }
        | Op::GetAdditionalDatanode { .. }
        | Op::RenewLease
        | Op::CommitBlockSynchronization { .. }
        | Op::SetDatanodeAdmin { .. }
        | Op::AddDelegationKey { .. }
        | Op::ExpireDelegationTokens { .. }
        | Op::SetOwnership { .. } => None,
        Op::Mkdirs { .. }
        | Op::Create { .. }
        | Op::Append { .. }
        | Op::Rename { .. }
        | Op::Delete { .. }
        | Op::SetPermission { .. }
        | Op::SetOwner { .. }
        | Op::SetReplication { .. }
        | Op::SetTimes { .. }
        | Op::SetQuota { .. }
        | Op::GetFileInfo { .. }
        | Op::GetListing { .. }
        | Op::GetContentSummary { .. }
        | Op::GetBlockLocations { .. }
        | Op::RecoverLease { .. }
        | Op::GetDelegationToken { .. }
        | Op::RenewDelegationToken { .. }
        | Op::CancelDelegationToken { .. }
        | Op::Concat { .. }
        | Op::Truncate { .. } => Some(Cow::Borrowed(op.name())),
    }
}

/// Hadoop's `UserGroupInformation` string of the caller: `alice
/// (auth:SIMPLE)`, or `alice (auth:PROXY) via router-1 (auth:CERTIFICATE)`
/// for a call a router forwarded for its client.
pub fn ugi(user: &str, auth: AuthMethod, peer: Option<&PeerIdentity>) -> String {
    match peer {
        Some(p) if p.role == PeerRole::Router => {
            format!("{user} (auth:PROXY) via {} (auth:CERTIFICATE)", p.id)
        }
        _ => format!("{user} (auth:{})", auth.hadoop_name()),
    }
}

/// One audit line (without the logger's time and level prefix).
fn audit_line(allowed: bool, e: &AuditEntry, perm: Option<&str>) -> String {
    let mut s = String::with_capacity(160);
    let ip = if e.ip.is_empty() { "null" } else { e.ip.as_str() };
    let _ = write!(
        s,
        "allowed={allowed}\tugi={}\tip=/{ip}\tcmd={}\tsrc={}\tdst=",
        e.ugi,
        e.cmd,
        escape_java(&e.src)
    );
    match &e.dst {
        Some(d) => s.push_str(&escape_java(d)),
        None => s.push_str("null"),
    }
    s.push_str("\tperm=");
    s.push_str(perm.unwrap_or("null"));
    s.push_str("\tproto=");
    s.push_str(e.proto);
    s
}

/// `s` escaped as Java's `StringEscapeUtils.escapeJava` escapes it (what
/// HDFS applies to paths): quotes, backslashes and control characters as
/// escapes, anything outside ASCII as `\uXXXX` (UTF-16 units).
fn escape_java(s: &str) -> Cow<'_, str> {
    if s.bytes().all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{u:04X}");
                }
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftfs_proto::{FileStatus, FileType, Permission};

    fn entry(op: &Op, peer: Option<&PeerIdentity>) -> AuditEntry {
        AuditLog::new(true)
            .entry("alice", AuthMethod::Simple, peer, "127.0.0.1", op)
            .expect("audited")
    }

    #[test]
    fn a_line_has_hdfs_fields_in_hdfs_order_separated_by_tabs() {
        let op = Op::Rename {
            src: "/a".into(),
            dst: "/b".into(),
        };
        assert_eq!(
            audit_line(true, &entry(&op, None), None),
            "allowed=true\tugi=alice (auth:SIMPLE)\tip=/127.0.0.1\tcmd=rename\tsrc=/a\tdst=/b\tperm=null\tproto=rpc"
        );
        let op = Op::GetFileInfo { path: "/x".into() };
        assert_eq!(
            audit_line(false, &entry(&op, None), Some("bob:staff:rwx------")),
            "allowed=false\tugi=alice (auth:SIMPLE)\tip=/127.0.0.1\tcmd=getfileinfo\tsrc=/x\tdst=null\tperm=bob:staff:rwx------\tproto=rpc"
        );
    }

    #[test]
    fn names_that_could_forge_a_field_or_a_line_are_escaped() {
        assert_eq!(escape_java("/plain/name-1.txt"), "/plain/name-1.txt");
        assert_eq!(escape_java("/a\tb\nc"), "/a\\tb\\nc");
        assert_eq!(escape_java("/q\"\\"), "/q\\\"\\\\");
        assert_eq!(escape_java("/é😀"), "/\\u00E9\\uD83D\\uDE00");
    }

    #[test]
    fn a_routed_call_names_the_router_as_proxy() {
        let router = PeerIdentity {
            cluster_id: "CID-1".into(),
            role: PeerRole::Router,
            id: "router-1".into(),
        };
        assert_eq!(
            ugi("alice", AuthMethod::Simple, Some(&router)),
            "alice (auth:PROXY) via router-1 (auth:CERTIFICATE)"
        );
        assert_eq!(ugi("bob", AuthMethod::Token, None), "bob (auth:TOKEN)");
    }

    #[test]
    fn what_is_audited_and_under_which_name() {
        let rename2 = |overwrite| Op::Rename2 {
            src: "/a".into(),
            dst: "/b".into(),
            overwrite,
        };
        assert_eq!(audit_cmd(&rename2(false)).as_deref(), Some("rename (options=[NONE])"));
        assert_eq!(
            audit_cmd(&rename2(true)).as_deref(),
            Some("rename (options=[OVERWRITE])")
        );
        assert_eq!(
            audit_cmd(&Op::GetListing {
                path: "/".into(),
                start_after: String::new(),
                limit: 0
            })
            .as_deref(),
            Some("listStatus")
        );
        assert_eq!(
            audit_cmd(&Op::GetFileInfo { path: "/".into() }).as_deref(),
            Some("getfileinfo")
        );
        assert_eq!(
            audit_cmd(&Op::Rename {
                src: "/a".into(),
                dst: "/b".into()
            })
            .as_deref(),
            Some("rename")
        );
        assert_eq!(audit_cmd(&Op::RenewLease), None);
        let off = AuditLog::new(false);
        assert!(off
            .entry(
                "alice",
                AuthMethod::Simple,
                None,
                "h",
                &Op::GetFileInfo { path: "/".into() }
            )
            .is_none());
    }

    #[test]
    fn perm_is_the_status_the_reply_carries() {
        let st = FileStatus {
            path_suffix: "f".into(),
            file_type: FileType::File,
            length: 0,
            replication: 3,
            block_size: 1 << 27,
            modification_time: 0,
            access_time: 0,
            permission: Permission(0o644),
            owner: "alice".into(),
            group: "supergroup".into(),
            file_id: 16_386,
            children_num: 0,
            under_construction: true,
        };
        assert_eq!(
            status_perm(&OpResult::Status(Some(st))).as_deref(),
            Some("alice:supergroup:rw-r--r--")
        );
        assert_eq!(status_perm(&OpResult::Unit), None);
    }
}
