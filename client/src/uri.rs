//! The `--fs` value: `raftfs://host:port[,host:port…]` (the scheme may be
//! left out). Any member of the nameservice will do; the client finds the
//! leader.

use raftfs_proto::FsError;

/// Most member addresses one `--fs` value may list.
pub const MAX_FS_MEMBERS: usize = 16;

pub fn parse_fs(s: &str) -> Result<Vec<String>, FsError> {
    let rest = s.strip_prefix("raftfs://").unwrap_or(s);
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() {
        return Err(FsError::InvalidArgument(format!(
            "--fs {s:?}: no member address (expected raftfs://host:port,...)"
        )));
    }
    let mut out = Vec::new();
    for a in rest.split(',') {
        let a = a.trim();
        let (host, port) = a
            .rsplit_once(':')
            .ok_or_else(|| FsError::InvalidArgument(format!("--fs {s:?}: member {a:?} is not host:port")))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(FsError::InvalidArgument(format!(
                "--fs {s:?}: member {a:?} is not host:port"
            )));
        }
        out.push(a.to_string());
    }
    if out.len() > MAX_FS_MEMBERS {
        return Err(FsError::InvalidArgument(format!(
            "--fs lists more than {MAX_FS_MEMBERS} members"
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_member_lists() {
        assert_eq!(parse_fs("raftfs://a:1,b:2").unwrap(), vec!["a:1", "b:2"]);
        assert_eq!(parse_fs("127.0.0.1:9000").unwrap(), vec!["127.0.0.1:9000"]);
        assert!(parse_fs("raftfs://").is_err());
        assert!(parse_fs("raftfs://a").is_err());
        assert!(parse_fs("raftfs://a:x").is_err());
    }
}
