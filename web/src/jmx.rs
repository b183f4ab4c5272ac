//! Hadoop's `/jmx` page: `{"beans": [{"name": ..., "modelerType": ...,
//! attributes...}]}`, as the NameNode's `JMXJsonServlet` writes it, so the
//! scripts and dashboards that read a NameNode's beans (`NameNodeInfo`,
//! `FSNamesystem`, `NameNodeStatus`) read ours.
//!
//! `?qry=` selects beans by an object name pattern, as the servlet does:
//! `Hadoop:service=NameNode,name=*` or an exact name. Patterns match the
//! whole name, with `*` for any run of characters and `?` for one (JMX's
//! key-property order rules are not reproduced: write the keys in the order
//! the bean names use). A pattern with no domain (no `:`) is malformed
//! (400, as the servlet answers `MalformedObjectNameException`).
//! `?get=BEAN::ATTRIBUTE` reads one attribute of one bean.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use crate::RemoteException;

/// Longest `qry` or `get` accepted.
pub const MAX_JMX_QUERY_CHARS: usize = 1024;

/// One bean: its object name, its Java type, its attributes in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Bean {
    pub name: String,
    pub modeler_type: String,
    pub attributes: Vec<(&'static str, Value)>,
}

impl Bean {
    pub fn new(name: impl Into<String>, modeler_type: impl Into<String>) -> Bean {
        Bean {
            name: name.into(),
            modeler_type: modeler_type.into(),
            attributes: Vec::new(),
        }
    }

    /// Add attribute `key` (the builder style the bean lists read best in).
    pub fn with(mut self, key: &'static str, value: impl Into<Value>) -> Bean {
        self.attributes.push((key, value.into()));
        self
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), Value::String(self.name.clone()));
        m.insert("modelerType".into(), Value::String(self.modeler_type.clone()));
        for (k, v) in &self.attributes {
            m.insert((*k).into(), v.clone());
        }
        Value::Object(m)
    }
}

/// What `/jmx` was asked for.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct JmxQuery {
    pub qry: Option<String>,
    pub get: Option<String>,
}

/// The page for `query` over `beans`.
pub fn jmx_page(beans: &[Bean], query: &JmxQuery) -> Response {
    match select(beans, query) {
        Ok(v) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json; charset=utf8")],
            serde_json::to_string_pretty(&v).expect("JSON values serialize"),
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

/// The JSON of the beans `query` selects.
pub fn select(beans: &[Bean], query: &JmxQuery) -> Result<Value, RemoteException> {
    for q in [&query.qry, &query.get].into_iter().flatten() {
        if q.len() > MAX_JMX_QUERY_CHARS {
            return Err(RemoteException::illegal_argument(format!(
                "a jmx query of {} characters is longer than {MAX_JMX_QUERY_CHARS}",
                q.len()
            )));
        }
    }
    if let Some(get) = &query.get {
        let (name, attr) = get
            .split_once("::")
            .ok_or_else(|| RemoteException::illegal_argument(format!("query get={get:?} is not BEAN::ATTRIBUTE")))?;
        let bean = beans
            .iter()
            .find(|b| b.name == name)
            .ok_or_else(|| not_found(format!("no bean {name:?}")))?;
        let (_, value) = bean
            .attributes
            .iter()
            .find(|(k, _)| *k == attr)
            .ok_or_else(|| not_found(format!("bean {name:?} has no attribute {attr:?}")))?;
        let mut m = Map::new();
        m.insert("name".into(), Value::String(bean.name.clone()));
        m.insert("modelerType".into(), Value::String(bean.modeler_type.clone()));
        m.insert(attr.into(), value.clone());
        return Ok(serde_json::json!({ "beans": [Value::Object(m)] }));
    }
    let pattern = query.qry.as_deref().unwrap_or("*:*");
    if !pattern.contains(':') {
        return Err(RemoteException::illegal_argument(format!(
            "qry={pattern:?} is not an object name (DOMAIN:KEY=VALUE,...)"
        )));
    }
    let chosen: Vec<Value> = beans
        .iter()
        .filter(|b| glob(pattern.as_bytes(), b.name.as_bytes()))
        .map(Bean::to_json)
        .collect();
    Ok(serde_json::json!({ "beans": chosen }))
}

fn not_found(message: String) -> RemoteException {
    RemoteException::new(
        StatusCode::NOT_FOUND,
        "javax.management.InstanceNotFoundException",
        message,
    )
}

/// Whether `name` matches `pattern` (`*` any run, `?` one character).
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    // Iterative, with one backtrack point: linear in practice, no recursion.
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, n));
                p += 1;
            }
            Some(c) if *c == b'?' || *c == name[n] => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p.min(pattern.len())..].iter().all(|c| *c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beans() -> Vec<Bean> {
        vec![
            Bean::new(
                "Hadoop:service=NameNode,name=NameNodeStatus",
                "org.apache.hadoop.hdfs.server.namenode.NameNode",
            )
            .with("State", "active")
            .with("NNRole", "NameNode"),
            Bean::new("Hadoop:service=NameNode,name=FSNamesystem", "FSNamesystem").with("BlocksTotal", 3),
        ]
    }

    fn q(qry: Option<&str>, get: Option<&str>) -> JmxQuery {
        JmxQuery {
            qry: qry.map(str::to_string),
            get: get.map(str::to_string),
        }
    }

    #[test]
    fn queries_select_beans_as_hadoops_servlet() {
        let all = select(&beans(), &q(None, None)).unwrap();
        assert_eq!(all["beans"].as_array().unwrap().len(), 2);
        let one = select(&beans(), &q(Some("Hadoop:service=NameNode,name=NameNodeStatus"), None)).unwrap();
        assert_eq!(one["beans"][0]["State"], "active");
        assert_eq!(
            one["beans"][0]["modelerType"],
            "org.apache.hadoop.hdfs.server.namenode.NameNode"
        );
        let star = select(&beans(), &q(Some("Hadoop:service=NameNode,name=FS*"), None)).unwrap();
        assert_eq!(star["beans"][0]["BlocksTotal"], 3);
        assert_eq!(star["beans"].as_array().unwrap().len(), 1);
        let none = select(&beans(), &q(Some("Hadoop:service=DataNode,*"), None)).unwrap();
        assert!(none["beans"].as_array().unwrap().is_empty());
        assert_eq!(select(&beans(), &q(Some("NameNode"), None)).unwrap_err().status, 400);
        let got = select(
            &beans(),
            &q(None, Some("Hadoop:service=NameNode,name=NameNodeStatus::State")),
        )
        .unwrap();
        assert_eq!(got["beans"][0]["State"], "active");
        assert!(got["beans"][0].get("NNRole").is_none());
        assert_eq!(
            select(
                &beans(),
                &q(None, Some("Hadoop:service=NameNode,name=NameNodeStatus::Nope"))
            )
            .unwrap_err()
            .status,
            404
        );
        assert_eq!(select(&beans(), &q(None, Some("x"))).unwrap_err().status, 400);
    }

    #[test]
    fn glob_matches_whole_names() {
        assert!(glob(b"*", b""));
        assert!(glob(b"a*c", b"abbbc"));
        assert!(!glob(b"a*c", b"abbbd"));
        assert!(glob(b"a?c", b"abc"));
        assert!(!glob(b"ab", b"abc"));
        assert!(glob(b"*b*", b"abc"));
        assert!(glob(b"a**", b"a"));
    }
}
