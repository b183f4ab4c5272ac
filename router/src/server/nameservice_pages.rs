//! The router's tabs that show what each nameservice's leader reports
//! (served with the other status pages, [`super::status_pages`]):
//!
//! * `/datanodes.html`: one table per nameservice, that is per block pool,
//!   of the DataNodes its leader knows (state, last contact, capacity and
//!   use), as `dfsadmin -report` asks for them;
//! * `/openfiles.html`: the files open for write in each nameservice (its
//!   leader's `dfsadmin -listOpenFiles`), each with its path in the
//!   federated namespace where a mount point leads to it.
//!
//! The router asks as the superuser, over its own certificate, every
//! nameservice at once; one that does not answer within
//! [`NAMESERVICE_REPORT_TIMEOUT_MS`] (or refuses) is shown with why, and
//! the others are shown as usual. Readable as the router's other state
//! pages ([`raftfs_web::HttpCaller::may_read_instrumentation`]).
//!
//! Caveat: a lease's last renewal is the nameservice's log time, shown
//! against this router's clock; clocks apart make it that much off.

use std::sync::Arc;
use std::time::Duration;

use crate::federation::{Federation, NameserviceRecord};
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::{Extension, Router};
use futures::future::join_all;
use maud::{html, Markup};
use raftfs_proto::admin::{OpenFileEntry, MAX_OPEN_FILES_LISTED};
use raftfs_proto::{pb, AdminOp, AdminResult, FsError};
use raftfs_web::status::units::{age, bytes};
use raftfs_web::status::{datanode_counts, datanode_table, StatusShell};
use raftfs_web::{axum, HttpCaller};

use super::node::RouterNode;

/// How long a page waits for each nameservice's leader to answer.
pub const NAMESERVICE_REPORT_TIMEOUT_MS: u64 = 3_000;

struct NameservicePages {
    node: Arc<RouterNode>,
    shell: StatusShell,
}

/// The DataNodes and open-files tabs.
pub fn nameservice_routes(node: Arc<RouterNode>, shell: StatusShell) -> Router {
    Router::new()
        .route("/datanodes.html", get(datanodes))
        .route("/openfiles.html", get(open_files))
        .with_state(Arc::new(NameservicePages { node, shell }))
}

/// Each nameservice with its answer, or why there is none.
pub(super) type Answers = Vec<(NameserviceRecord, Result<AdminResult, FsError>)>;

/// Ask every registered nameservice's leader `op`, at once, as `caller`
/// (the caller's context, which each nameservice checks; `None`: this
/// router's own call, as the superuser), each within
/// [`NAMESERVICE_REPORT_TIMEOUT_MS`]: the answers in the federation's
/// order, and the federation they were asked by.
pub(super) async fn ask_every_nameservice(
    node: &RouterNode,
    caller: Option<&pb::CallContext>,
    op: AdminOp,
) -> (Arc<Federation>, Answers) {
    let fed = node.calls.table().current();
    let records: Vec<NameserviceRecord> = fed.nameservices().cloned().collect();
    let wait = Duration::from_millis(NAMESERVICE_REPORT_TIMEOUT_MS);
    let answers = join_all(records.iter().map(|r| {
        let (fed, op) = (&fed, &op);
        async move {
            let asked = async {
                match caller {
                    Some(ctx) => node.calls.nameservices().admin(r, ctx, op).await,
                    None => node.calls.own_admin(fed, &r.name, op).await,
                }
            };
            match tokio::time::timeout(wait, asked).await {
                Ok(answer) => answer,
                Err(_) => Err(FsError::Timeout(format!(
                    "nameservice {} did not answer within {NAMESERVICE_REPORT_TIMEOUT_MS} ms",
                    r.name
                ))),
            }
        }
    }))
    .await;
    (fed, records.into_iter().zip(answers).collect())
}

/// A nameservice's heading.
fn heading(r: &NameserviceRecord) -> Markup {
    html! { h2 { "Nameservice " (r.name) ", block pool " (r.block_pool_id) } }
}

/// What to show for a nameservice that gave no usable answer.
fn no_answer(r: &NameserviceRecord, why: &str) -> Markup {
    html! { (heading(r)) p.bad data-nameservice=(r.name) { "No answer: " (why) } }
}

async fn datanodes(State(p): State<Arc<NameservicePages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    const TAB: &str = "/datanodes.html";
    if let Some(r) = p.shell.refuse_uninstrumented(&caller, p.node.client_auth, TAB) {
        return r;
    }
    let (_, answers) = ask_every_nameservice(&p.node, None, AdminOp::DatanodeReport).await;
    let body = html! {
        @for (r, answer) in &answers {
            @match answer {
                Ok(AdminResult::Datanodes(nodes)) => {
                    (heading(r))
                    p { (datanode_counts(nodes)) }
                    (datanode_table(None, &r.block_pool_id, nodes))
                    @if nodes.is_empty() { p.note { "No DataNode has registered with " (r.name) "." } }
                }
                Ok(other) => (no_answer(r, &format!("unexpected reply {other:?}"))),
                Err(e) => (no_answer(r, &e.to_string())),
            }
        }
        @if answers.is_empty() { p.note { "No nameservice is registered (dfsadmin -addNameservice)." } }
    };
    p.shell.page(TAB, "DataNodes", body)
}

fn open_file_rows(fed: &Federation, ns: &str, files: &[OpenFileEntry]) -> Markup {
    let now = raftfs_trust::clock::wall_clock_ms();
    html! {
        @for f in files {
            tr {
                td { @match fed.mounts().federated_path(ns, &f.path) { Some(p) => (p), None => span.note { "(not mounted)" } } }
                td { (f.path) }
                td.num { (f.inode) }
                td.num { (bytes(f.length)) }
                td { (f.holder) }
                td.num { (age(now.saturating_sub(f.renewed_ms).max(0) as u64)) " ago" }
            }
        }
    }
}

async fn open_files(State(p): State<Arc<NameservicePages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    const TAB: &str = "/openfiles.html";
    if let Some(r) = p.shell.refuse_uninstrumented(&caller, p.node.client_auth, TAB) {
        return r;
    }
    let (fed, answers) = ask_every_nameservice(&p.node, None, AdminOp::ListOpenFiles { path: "/".into() }).await;
    let body = html! {
        @for (r, answer) in &answers {
            @match answer {
                Ok(AdminResult::OpenFiles { files, more }) => {
                    (heading(r))
                    p { (files.len()) " file(s) open for write" @if *more { " (at most " (MAX_OPEN_FILES_LISTED) " shown: more are open)" } "." }
                    table.openfiles data-nameservice=(r.name) {
                        thead { tr {
                            th { "Path" } th { "Path in " (r.name) } th { "Inode" } th { "Length so far" } th { "Lease holder" } th { "Last renewal" }
                        } }
                        tbody { (open_file_rows(&fed, &r.name, files)) }
                    }
                }
                Ok(other) => (no_answer(r, &format!("unexpected reply {other:?}"))),
                Err(e) => (no_answer(r, &e.to_string())),
            }
        }
        @if answers.is_empty() { p.note { "No nameservice is registered (dfsadmin -addNameservice)." } }
    };
    p.shell.page(TAB, "Open files", body)
}
