//! `/explorer.html`: the file browser (the NameNode UI's "Browse the file
//! system"), as server-written HTML over a [`WebHdfsNamespace`].
//!
//! `?path=/dir` lists one page of `/dir` ([`MAX_EXPLORER_ENTRIES_PER_PAGE`]
//! entries; `start_after=` pages on) as the caller WebHDFS would run it for
//! (the same parameters: `user.name`, `doas`, `delegation`), so the
//! namespace's permission checks decide what is shown. Directories link to
//! their own listing, files to `/webhdfs/v1/<path>?op=OPEN` on this node,
//! which redirects to a DataNode that streams the bytes. The links carry
//! the caller's `user.name` or `delegation` on, as Hadoop's UI carries
//! `user.name`.
//!
//! Caveat: a listing is one page of a directory at one moment; paging on
//! by name shows entries added meanwhile after the last name, as
//! LISTSTATUS_BATCH does.

use std::sync::Arc;

use axum::extract::{RawQuery, State};
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use maud::{html, Markup};
use raftfs_proto::{FileStatus, FsError, Op, OpResult};
use raftfs_trust::ClientAuth;

use super::units::{bytes, utc_time};
use super::StatusShell;
use crate::webhdfs::{caller_of, encode_path, Params, WebHdfsNamespace};
use crate::{HttpCaller, RemoteException};

/// Most entries one page of the browser lists.
pub const MAX_EXPLORER_ENTRIES_PER_PAGE: u32 = 1000;
/// The browser's address.
const EXPLORER_HREF: &str = "/explorer.html";

struct Explorer {
    ns: Arc<dyn WebHdfsNamespace>,
    auth: ClientAuth,
    shell: StatusShell,
}

/// `/explorer.html` over `ns`, its callers decided under `auth`.
pub fn explorer_routes(ns: Arc<dyn WebHdfsNamespace>, auth: ClientAuth, shell: StatusShell) -> Router {
    Router::new()
        .route(EXPLORER_HREF, get(explore))
        .with_state(Arc::new(Explorer { ns, auth, shell }))
}

async fn explore(
    State(x): State<Arc<Explorer>>,
    Extension(caller): Extension<HttpCaller>,
    RawQuery(query): RawQuery,
) -> Response {
    match listing(&x, &caller, query.as_deref().unwrap_or("")).await {
        Ok((title, body)) => x.shell.page(EXPLORER_HREF, &title, body),
        Err(e) => x.shell.error_page(EXPLORER_HREF, &e),
    }
}

/// The parameters that say who the caller is, carried on in every link.
fn credentials(params: &Params) -> Vec<(&'static str, String)> {
    ["user.name", "doas", "delegation"]
        .into_iter()
        .filter_map(|k| params.get(k).map(|v| (k, v.to_string())))
        .collect()
}

fn link(base: &str, mut pairs: Vec<(&'static str, String)>, creds: &[(&'static str, String)]) -> String {
    pairs.extend(creds.iter().cloned());
    if pairs.is_empty() {
        return base.to_string();
    }
    let query = serde_urlencoded::to_string(&pairs).expect("string pairs encode");
    format!("{base}?{query}")
}

fn explorer_link(path: &str, creds: &[(&'static str, String)]) -> String {
    link(EXPLORER_HREF, vec![("path", path.to_string())], creds)
}

fn child_path(dir: &str, name: &str) -> String {
    if dir == "/" {
        format!("/{name}")
    } else {
        format!("{dir}/{name}")
    }
}

async fn listing(x: &Explorer, caller: &HttpCaller, query: &str) -> Result<(String, Markup), RemoteException> {
    let params = Params::parse(query)?;
    let who = caller_of(x.auth, caller, &params)?;
    let path = params.get("path").unwrap_or("/").to_string();
    if !path.starts_with('/') {
        return Err(RemoteException::illegal_argument(format!(
            "{path}: the path must be absolute"
        )));
    }
    let path = if path.len() > 1 {
        path.trim_end_matches('/').to_string()
    } else {
        path
    };
    let start_after = params.get("start_after").unwrap_or_default().to_string();
    let op = Op::GetListing {
        path: path.clone(),
        start_after,
        limit: MAX_EXPLORER_ENTRIES_PER_PAGE,
    };
    let page = match x.ns.call(&who, op).await {
        Ok(OpResult::Listing(l)) => l,
        Ok(r) => {
            return Err(RemoteException::from(&FsError::Internal(format!(
                "a listing was answered {r:?}"
            ))))
        }
        Err(e) => return Err(RemoteException::from(&e)),
    };
    let creds = credentials(&params);
    // A file lists as itself, with an empty name.
    let is_file = page.entries.len() == 1 && !page.entries[0].is_dir() && page.entries[0].path_suffix.is_empty();
    let parent = match path.rsplit_once('/') {
        Some(("", _)) if path != "/" => Some("/".to_string()),
        Some((p, _)) if !p.is_empty() => Some(p.to_string()),
        _ => None,
    };
    let entry_path = |s: &FileStatus| {
        if is_file {
            path.clone()
        } else {
            child_path(&path, &s.path_suffix)
        }
    };
    let next = (page.remaining_entries > 0)
        .then(|| page.entries.last())
        .flatten()
        .map(|last| {
            link(
                EXPLORER_HREF,
                vec![("path", path.clone()), ("start_after", last.path_suffix.clone())],
                &creds,
            )
        });
    let body = html! {
        p {
            "Listed as " strong { (who.user) } ". "
            @if let Some(parent) = &parent {
                a href=(explorer_link(parent, &creds)) { "Up to " (parent) }
            }
        }
        table #listing {
            thead { tr {
                th { "Permission" } th { "Owner" } th { "Group" } th { "Size" }
                th { "Last Modified" } th { "Replication" } th { "Block Size" } th { "Name" }
            } }
            tbody {
                @for s in &page.entries {
                    @let p = entry_path(s);
                    @let name = if is_file { path.rsplit('/').next().unwrap_or_default().to_string() } else { s.path_suffix.clone() };
                    tr {
                        td { (if s.is_dir() { "d" } else { "-" }) (s.permission) }
                        td { (s.owner) }
                        td { (s.group) }
                        td.num { @if !s.is_dir() { (bytes(s.length)) } }
                        td { (utc_time(s.modification_time)) }
                        td.num { @if !s.is_dir() { (s.replication) } }
                        td.num { @if !s.is_dir() { (bytes(s.block_size)) } }
                        td {
                            @if s.is_dir() {
                                a href=(explorer_link(&p, &creds)) { (name) "/" }
                            } @else {
                                a href=(link(&format!("/webhdfs/v1{}", encode_path(&p)), vec![("op", "OPEN".to_string())], &creds)) download=(name) { (name) }
                                @if s.under_construction { " " span.note { "(open for write)" } }
                            }
                        }
                    }
                }
            }
        }
        @if page.entries.is_empty() { p.note { "Empty directory." } }
        @if let Some(next) = next {
            p { a href=(next) { "Next page" } " (more entries follow)" }
        }
    };
    Ok((format!("Browse {path}"), body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_carry_the_path_and_the_callers_name_encoded() {
        let creds = vec![("user.name", "al ice".to_string())];
        assert_eq!(
            explorer_link("/a b", &creds),
            "/explorer.html?path=%2Fa+b&user.name=al+ice"
        );
        assert_eq!(explorer_link("/", &[]), "/explorer.html?path=%2F");
        assert_eq!(child_path("/", "x"), "/x");
        assert_eq!(child_path("/d", "x"), "/d/x");
    }
}
