//! A WebHDFS request as HDFS reads it: the HTTP method, `op` and its
//! parameters, checked before anything runs. Parameter names are matched
//! case-insensitively and `op` values too, as HDFS's `ParamFilter` and
//! enum parsing do; a bad value is answered as HDFS answers it, 400 with
//! `IllegalArgumentException: Invalid value for webhdfs parameter "NAME": ...`.

use std::collections::HashMap;

use axum::http::Method;
use raftfs_proto::limits::MAX_REPLICATION;
use raftfs_proto::{Op, Permission};

use crate::RemoteException;

/// Most bytes of a request's query string.
pub const MAX_WEBHDFS_QUERY_BYTES: usize = 16 * 1024;
/// SETREPLICATION's replication when the request names none (HDFS's
/// `dfs.replication` default).
pub const DEFAULT_WEBHDFS_REPLICATION: u16 = 3;

/// One WebHDFS operation on the namespace, as parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebHdfsOp {
    GetFileStatus,
    ListStatus,
    ListStatusBatch {
        start_after: String,
    },
    GetContentSummary,
    GetQuotaUsage,
    GetHomeDirectory,
    Mkdirs {
        permission: Permission,
    },
    Rename {
        destination: String,
    },
    Delete {
        recursive: bool,
    },
    SetPermission {
        permission: Permission,
    },
    SetOwner {
        owner: Option<String>,
        group: Option<String>,
    },
    SetReplication {
        replication: u16,
    },
    SetTimes {
        mtime: Option<i64>,
        atime: Option<i64>,
    },
    /// Read `length` bytes (to the end if `None`) from `offset`.
    Open {
        offset: u64,
        length: Option<u64>,
    },
    Create {
        overwrite: bool,
        /// `None`: the file system's default.
        replication: Option<u16>,
        /// `None`: the file system's default.
        block_size: Option<u64>,
        permission: Permission,
    },
    Append,
    GetFileChecksum,
    /// Join `sources` (absolute paths, in order) to the end of the path.
    Concat {
        sources: Vec<String>,
    },
    Truncate {
        new_length: u64,
    },
}

/// The ops that need what raftfs does not have (HDFS's answer when a
/// feature is off).
const UNSUPPORTED_OPS: [&str; 4] = ["CREATESNAPSHOT", "DELETESNAPSHOT", "RENAMESNAPSHOT", "SETACL"];

/// A file's permission when CREATE names none (HDFS's `0644`).
pub const DEFAULT_WEBHDFS_FILE_PERMISSION: Permission = Permission(0o644);

/// The request's parameters, names lower-cased; a repeated name keeps its first value.
pub struct Params(HashMap<String, String>);

impl Params {
    /// Parse `query` (the URL's raw query string).
    pub fn parse(query: &str) -> Result<Params, RemoteException> {
        if query.len() > MAX_WEBHDFS_QUERY_BYTES {
            return Err(RemoteException::illegal_argument(format!(
                "a query of {} bytes is longer than {MAX_WEBHDFS_QUERY_BYTES}",
                query.len()
            )));
        }
        let pairs: Vec<(String, String)> = serde_urlencoded::from_str(query)
            .map_err(|e| RemoteException::illegal_argument(format!("the query does not parse: {e}")))?;
        let mut map = HashMap::new();
        for (k, v) in pairs {
            map.entry(k.to_ascii_lowercase()).or_insert(v);
        }
        Ok(Params(map))
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str).filter(|v| !v.is_empty())
    }

    /// The value of `name` as `parse` reads it; a value it refuses is
    /// HDFS's 400 for an invalid parameter.
    pub fn parsed<T>(&self, name: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Option<T>, RemoteException> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => parse(v).map(Some).ok_or_else(|| invalid(name, v)),
        }
    }
}

fn invalid(name: &str, value: &str) -> RemoteException {
    RemoteException::illegal_argument(format!("Invalid value for webhdfs parameter \"{name}\": {value:?}"))
}

/// An octal permission of 0 to 1777, as HDFS's `PermissionParam` reads it.
fn permission(v: &str) -> Option<Permission> {
    let bits = u16::from_str_radix(v, 8).ok()?;
    (v.len() <= 4 && bits <= Permission::MASK).then_some(Permission(bits))
}

/// A count of 0 or more (offsets, lengths).
fn non_negative(v: &str) -> Option<u64> {
    v.parse().ok()
}

/// A count of 1 or more (block and buffer sizes).
fn positive(v: &str) -> Option<u64> {
    v.parse().ok().filter(|n| *n > 0)
}

fn replication(v: &str) -> Option<u16> {
    v.parse::<u16>().ok().filter(|r| (1..=MAX_REPLICATION).contains(r))
}

pub(crate) fn boolean(v: &str) -> Option<bool> {
    match v.to_ascii_lowercase().as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// A time in ms since the epoch; -1 (HDFS's default) leaves it unchanged.
fn time(v: &str) -> Option<Option<i64>> {
    let t: i64 = v.parse().ok()?;
    match t {
        -1 => Some(None),
        t if t >= 0 => Some(Some(t)),
        _ => None,
    }
}

impl WebHdfsOp {
    /// The operation `method` and `params` ask for.
    pub fn parse(method: &Method, params: &Params) -> Result<WebHdfsOp, RemoteException> {
        let op = params
            .get("op")
            .ok_or_else(|| RemoteException::illegal_argument("the webhdfs parameter \"op\" is missing"))?
            .to_ascii_uppercase();
        let perm = |default: u16| -> Result<Permission, RemoteException> {
            Ok(params.parsed("permission", permission)?.unwrap_or(Permission(default)))
        };
        let parsed = match (method.as_str(), op.as_str()) {
            ("GET", "GETFILESTATUS") => WebHdfsOp::GetFileStatus,
            ("GET", "LISTSTATUS") => WebHdfsOp::ListStatus,
            ("GET", "LISTSTATUS_BATCH") => WebHdfsOp::ListStatusBatch {
                start_after: params.get("startafter").unwrap_or_default().to_string(),
            },
            ("GET", "GETCONTENTSUMMARY") => WebHdfsOp::GetContentSummary,
            ("GET", "GETQUOTAUSAGE") => WebHdfsOp::GetQuotaUsage,
            ("GET", "GETHOMEDIRECTORY") => WebHdfsOp::GetHomeDirectory,
            ("PUT", "MKDIRS") => WebHdfsOp::Mkdirs {
                permission: perm(0o755)?,
            },
            ("PUT", "RENAME") => {
                let destination = params
                    .get("destination")
                    .ok_or_else(|| RemoteException::illegal_argument("RENAME needs the parameter \"destination\""))?;
                if !destination.starts_with('/') {
                    return Err(invalid("destination", destination));
                }
                WebHdfsOp::Rename {
                    destination: destination.to_string(),
                }
            }
            ("DELETE", "DELETE") => WebHdfsOp::Delete {
                recursive: params.parsed("recursive", boolean)?.unwrap_or(false),
            },
            ("PUT", "SETPERMISSION") => WebHdfsOp::SetPermission {
                permission: perm(0o755)?,
            },
            ("PUT", "SETOWNER") => {
                let owner = params.get("owner").map(str::to_string);
                let group = params.get("group").map(str::to_string);
                if owner.is_none() && group.is_none() {
                    return Err(RemoteException::illegal_argument("Both owner and group are empty."));
                }
                WebHdfsOp::SetOwner { owner, group }
            }
            ("PUT", "SETREPLICATION") => {
                let r = params
                    .parsed("replication", replication)?
                    .unwrap_or(DEFAULT_WEBHDFS_REPLICATION);
                WebHdfsOp::SetReplication { replication: r }
            }
            ("PUT", "SETTIMES") => WebHdfsOp::SetTimes {
                mtime: params.parsed("modificationtime", time)?.flatten(),
                atime: params.parsed("accesstime", time)?.flatten(),
            },
            ("GET", "OPEN") => WebHdfsOp::Open {
                offset: params.parsed("offset", non_negative)?.unwrap_or(0),
                length: params.parsed("length", non_negative)?,
            },
            ("PUT", "CREATE") => WebHdfsOp::Create {
                overwrite: params.parsed("overwrite", boolean)?.unwrap_or(false),
                replication: params.parsed("replication", replication)?,
                block_size: params.parsed("blocksize", positive)?,
                permission: params
                    .parsed("permission", permission)?
                    .unwrap_or(DEFAULT_WEBHDFS_FILE_PERMISSION),
            },
            ("POST", "APPEND") => WebHdfsOp::Append,
            ("POST", "CONCAT") => {
                let sources: Vec<String> = params
                    .get("sources")
                    .ok_or_else(|| {
                        RemoteException::illegal_argument("Required param sources for op: CONCAT is null or empty")
                    })?
                    .split(',')
                    .map(str::to_string)
                    .collect();
                if let Some(bad) = sources.iter().find(|s| !s.starts_with('/')) {
                    return Err(invalid("sources", bad));
                }
                WebHdfsOp::Concat { sources }
            }
            ("POST", "TRUNCATE") => WebHdfsOp::Truncate {
                new_length: params.parsed("newlength", non_negative)?.ok_or_else(|| {
                    RemoteException::illegal_argument("Required param newlength for op: TRUNCATE is null or empty")
                })?,
            },
            ("GET", "GETFILECHECKSUM") => WebHdfsOp::GetFileChecksum,
            (_, o) if UNSUPPORTED_OPS.contains(&o) => {
                return Err(RemoteException::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    "java.lang.UnsupportedOperationException",
                    format!("{o} is not supported: raftfs has no snapshots or ACLs"),
                ))
            }
            (m, o) => {
                return Err(RemoteException::illegal_argument(format!(
                    "Invalid value for webhdfs parameter \"op\": {o} is not an operation of {m}"
                )))
            }
        };
        params.parsed("buffersize", positive)?; // read and checked, as HDFS does; streams pick their own
        Ok(parsed)
    }

    /// Whether this op moves file data: its namespace endpoint redirects
    /// it to a DataNode, which runs it.
    pub fn moves_data(&self) -> bool {
        matches!(
            self,
            WebHdfsOp::Open { .. } | WebHdfsOp::Create { .. } | WebHdfsOp::Append | WebHdfsOp::GetFileChecksum
        )
    }

    /// This op's parameters as a DataNode is sent them (`op` first), in
    /// the form [`WebHdfsOp::parse`] reads back.
    pub fn query_pairs(&self) -> Vec<(&'static str, String)> {
        let mut q = Vec::new();
        match self {
            WebHdfsOp::Open { offset, length } => {
                q.push(("op", "OPEN".to_string()));
                q.push(("offset", offset.to_string()));
                if let Some(l) = length {
                    q.push(("length", l.to_string()));
                }
            }
            WebHdfsOp::Create {
                overwrite,
                replication,
                block_size,
                permission,
            } => {
                q.push(("op", "CREATE".to_string()));
                q.push(("overwrite", overwrite.to_string()));
                if let Some(r) = replication {
                    q.push(("replication", r.to_string()));
                }
                if let Some(b) = block_size {
                    q.push(("blocksize", b.to_string()));
                }
                q.push(("permission", format!("{:o}", permission.bits())));
            }
            WebHdfsOp::Append => q.push(("op", "APPEND".to_string())),
            WebHdfsOp::GetFileChecksum => q.push(("op", "GETFILECHECKSUM".to_string())),
            other => unreachable!("{other:?} is answered by the namespace, never sent to a DataNode"),
        }
        q
    }

    /// The namespace call that answers this op on `path` (`None`: not one
    /// call: GETHOMEDIRECTORY needs none, LISTSTATUS one per page, each a
    /// LISTSTATUS_BATCH's, and the data ops are a DataNode's to run).
    pub fn to_op(&self, path: &str) -> Option<Op> {
        let path = path.to_string();
        Some(match self {
            WebHdfsOp::GetFileStatus => Op::GetFileInfo { path },
            WebHdfsOp::ListStatus
            | WebHdfsOp::GetHomeDirectory
            | WebHdfsOp::Open { .. }
            | WebHdfsOp::Create { .. }
            | WebHdfsOp::Append
            | WebHdfsOp::GetFileChecksum => return None,
            WebHdfsOp::ListStatusBatch { start_after } => Op::GetListing {
                path,
                start_after: start_after.clone(),
                limit: 0,
            },
            WebHdfsOp::GetContentSummary | WebHdfsOp::GetQuotaUsage => Op::GetContentSummary { path },
            WebHdfsOp::Mkdirs { permission } => Op::Mkdirs {
                path,
                permission: *permission,
                create_parent: true,
            },
            WebHdfsOp::Rename { destination } => Op::Rename {
                src: path,
                dst: destination.clone(),
            },
            WebHdfsOp::Delete { recursive } => Op::Delete {
                path,
                recursive: *recursive,
            },
            WebHdfsOp::SetPermission { permission } => Op::SetPermission {
                path,
                permission: *permission,
            },
            WebHdfsOp::SetOwner { owner, group } => Op::SetOwner {
                path,
                owner: owner.clone(),
                group: group.clone(),
            },
            WebHdfsOp::SetReplication { replication } => Op::SetReplication {
                path,
                replication: *replication,
            },
            WebHdfsOp::SetTimes { mtime, atime } => Op::SetTimes {
                path,
                mtime: *mtime,
                atime: *atime,
            },
            WebHdfsOp::Concat { sources } => Op::Concat {
                target: path,
                sources: sources.clone(),
            },
            WebHdfsOp::Truncate { new_length } => Op::Truncate {
                path,
                new_length: *new_length,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(method: Method, q: &str) -> Result<WebHdfsOp, RemoteException> {
        WebHdfsOp::parse(&method, &Params::parse(q)?)
    }

    #[test]
    fn ops_parse_as_hdfs_reads_them() {
        assert_eq!(parse(Method::GET, "op=liststatus"), Ok(WebHdfsOp::ListStatus));
        assert_eq!(
            parse(Method::PUT, "OP=MKDIRS&Permission=700"),
            Ok(WebHdfsOp::Mkdirs {
                permission: Permission(0o700)
            })
        );
        assert_eq!(
            parse(Method::DELETE, "op=DELETE&recursive=true"),
            Ok(WebHdfsOp::Delete { recursive: true })
        );
        assert_eq!(
            parse(Method::PUT, "op=SETTIMES&modificationtime=5&accesstime=-1"),
            Ok(WebHdfsOp::SetTimes {
                mtime: Some(5),
                atime: None
            })
        );
        assert_eq!(
            parse(Method::PUT, "op=RENAME&destination=%2Fa%20b"),
            Ok(WebHdfsOp::Rename {
                destination: "/a b".into()
            })
        );
    }

    #[test]
    fn data_ops_go_to_a_datanode_as_parsed() {
        for (m, q) in [
            (Method::GET, "op=OPEN&offset=5&length=10&buffersize=4096"),
            (Method::GET, "op=open"),
            (
                Method::PUT,
                "op=CREATE&overwrite=true&replication=2&blocksize=1048576&permission=600",
            ),
            (Method::PUT, "op=CREATE"),
            (Method::POST, "op=APPEND"),
            (Method::GET, "op=GETFILECHECKSUM"),
        ] {
            let op = parse(m.clone(), q).unwrap();
            assert!(op.moves_data(), "{q}");
            assert_eq!(op.to_op("/f"), None);
            let sent = serde_urlencoded::to_string(op.query_pairs()).unwrap();
            assert_eq!(parse(m, &sent), Ok(op), "{q} was sent as {sent}");
        }
        assert_eq!(
            parse(Method::PUT, "op=CREATE"),
            Ok(WebHdfsOp::Create {
                overwrite: false,
                replication: None,
                block_size: None,
                permission: Permission(0o644)
            })
        );
        assert!(!parse(Method::GET, "op=GETFILESTATUS").unwrap().moves_data());
    }

    #[test]
    fn bad_requests_are_refused_before_anything_runs() {
        for (m, q, says) in [
            (Method::GET, "", "\"op\" is missing"),
            (Method::GET, "op=NOPE", "NOPE is not an operation of GET"),
            (Method::GET, "op=MKDIRS", "MKDIRS is not an operation of GET"),
            (Method::PUT, "op=MKDIRS&permission=999", "\"permission\""),
            (Method::PUT, "op=MKDIRS&permission=77777", "\"permission\""),
            (Method::DELETE, "op=DELETE&recursive=maybe", "\"recursive\""),
            (Method::PUT, "op=SETTIMES&modificationtime=-5", "\"modificationtime\""),
            (Method::PUT, "op=SETREPLICATION&replication=0", "\"replication\""),
            (Method::PUT, "op=RENAME&destination=relative", "\"destination\""),
            (Method::PUT, "op=RENAME", "destination"),
            (Method::PUT, "op=SETOWNER", "Both owner and group are empty"),
        ] {
            let e = parse(m, q).unwrap_err();
            assert_eq!(e.status, 400, "{q}: {e:?}");
            assert!(e.message.contains(says), "{q}: {e:?}");
        }
        let e = parse(Method::PUT, "op=CREATESNAPSHOT").unwrap_err();
        assert_eq!(e.exception, "UnsupportedOperationException");
        assert_eq!(
            parse(Method::POST, "op=TRUNCATE&newlength=10"),
            Ok(WebHdfsOp::Truncate { new_length: 10 })
        );
        assert_eq!(
            parse(Method::POST, "op=CONCAT&sources=%2Fd%2Fa,/d/b"),
            Ok(WebHdfsOp::Concat {
                sources: vec!["/d/a".into(), "/d/b".into()]
            })
        );
        for (q, says) in [
            ("op=CONCAT", "Required param sources for op: CONCAT is null or empty"),
            ("op=CONCAT&sources=/d/a,b", "\"sources\""),
            (
                "op=TRUNCATE",
                "Required param newlength for op: TRUNCATE is null or empty",
            ),
            ("op=TRUNCATE&newlength=-1", "\"newlength\""),
        ] {
            let e = parse(Method::POST, q).unwrap_err();
            assert_eq!(e.status, 400, "{q}: {e:?}");
            assert!(e.message.contains(says), "{q}: {e:?}");
        }
        for (m, q, says) in [
            (Method::GET, "op=OPEN&offset=-1", "\"offset\""),
            (Method::GET, "op=OPEN&length=x", "\"length\""),
            (Method::GET, "op=OPEN&buffersize=0", "\"buffersize\""),
            (Method::PUT, "op=CREATE&blocksize=0", "\"blocksize\""),
            (Method::PUT, "op=CREATE&overwrite=yes", "\"overwrite\""),
            (Method::POST, "op=CREATE", "CREATE is not an operation of POST"),
            (Method::PUT, "op=APPEND", "APPEND is not an operation of PUT"),
        ] {
            let e = parse(m, q).unwrap_err();
            assert_eq!(e.status, 400, "{q}: {e:?}");
            assert!(e.message.contains(says), "{q}: {e:?}");
        }
        assert!(Params::parse(&"a=b&".repeat(MAX_WEBHDFS_QUERY_BYTES)).is_err());
    }
}
