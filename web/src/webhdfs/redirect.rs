//! Where a namespace endpoint sends the ops that move file data (OPEN,
//! CREATE, APPEND, GETFILECHECKSUM): a DataNode's WebHDFS endpoint, with
//! what the DataNode needs to run the op as the caller against the same
//! file system — its address (`namenoderpcaddress`, as HDFS names it) and
//! the caller: `user.name` under simple authentication, a delegation
//! token (`delegation=`) otherwise, as HDFS's NameNode redirects.

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};

use super::request::WebHdfsOp;

/// What a path segment keeps encoded in a URL (RFC 3986's `pchar` allows
/// the rest).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// The name of the parameter that tells a DataNode which file system to
/// run the op against (HDFS's).
pub const NAMENODE_PARAM: &str = "namenoderpcaddress";

/// A DataNode chosen to run a data op, and how it reaches the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatanodeRedirect {
    /// `https://HOST:PORT` (`http://` for a plaintext cluster): the
    /// DataNode's HTTP endpoint.
    pub datanode: String,
    /// The file system's addresses, `HOST:PORT,HOST:PORT`: the
    /// nameservice's members, or the routers.
    pub namenode: String,
    /// A delegation token (its URL text) the DataNode acts as the caller
    /// with; `None`: the caller's `user.name` goes along (simple
    /// authentication).
    pub delegation: Option<String>,
}

impl DatanodeRedirect {
    /// The URL that runs `op` on `path` for `user` on this DataNode.
    pub fn location(&self, op: &WebHdfsOp, path: &str, user: &str) -> String {
        let mut query = op.query_pairs();
        query.push((NAMENODE_PARAM, self.namenode.clone()));
        match &self.delegation {
            Some(token) => query.push(("delegation", token.clone())),
            None => query.push(("user.name", user.to_string())),
        }
        let query = serde_urlencoded::to_string(&query).expect("string pairs encode");
        format!("{}/webhdfs/v1{}?{query}", self.datanode, encode_path(path))
    }
}

/// `path` (absolute) with each segment percent-encoded.
pub fn encode_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        out.push('/');
        out.extend(utf8_percent_encode(segment, SEGMENT));
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::webhdfs::Params;
    use axum::http::Method;

    #[test]
    fn a_location_carries_the_op_and_the_caller() {
        let r = DatanodeRedirect {
            datanode: "https://127.0.0.1:9864".into(),
            namenode: "127.0.0.1:8020,127.0.0.1:8021".into(),
            delegation: None,
        };
        let op = WebHdfsOp::Open {
            offset: 3,
            length: Some(4),
        };
        let url = r.location(&op, "/a b/c?d%", "alice");
        let (base, query) = url.split_once('?').unwrap();
        assert_eq!(base, "https://127.0.0.1:9864/webhdfs/v1/a%20b/c%3Fd%25");
        let params = Params::parse(query).unwrap();
        assert_eq!(WebHdfsOp::parse(&Method::GET, &params), Ok(op.clone()));
        assert_eq!(params.get("user.name"), Some("alice"));
        assert_eq!(params.get(NAMENODE_PARAM), Some("127.0.0.1:8020,127.0.0.1:8021"));
        let with_token = DatanodeRedirect {
            delegation: Some("TOKEN".into()),
            ..r
        };
        let url = with_token.location(&op, "/", "alice");
        let params = Params::parse(url.split_once('?').unwrap().1).unwrap();
        assert_eq!(params.get("delegation"), Some("TOKEN"));
        assert_eq!(params.get("user.name"), None);
        assert!(url.starts_with("https://127.0.0.1:9864/webhdfs/v1/?"));
    }
}
