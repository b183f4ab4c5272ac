//! A router's status pages (Router-Based Federation's web UI), served
//! with its other HTTP pages ([`super::http_pages`]):
//!
//! * `/federationhealth.html`, the overview: this router and its
//!   mount-table group (every router as it answers `MemberInfo`), safe
//!   mode, and each nameservice with each of its members (role, term, last
//!   log, commit and applied index, snapshot, health) and the DataNodes its
//!   members report serving HTTP;
//! * `/datanodes.html` and `/openfiles.html`: each nameservice's
//!   DataNodes and open files, as its leader reports them
//!   ([`super::nameservice_pages`]);
//! * `/mounts.html`: the mount table, as this router has applied it;
//! * `/explorer.html`: the file browser over the federated namespace
//!   ([`raftfs_web::status`]).
//!
//! `/` leads to the overview. The state pages are readable as `/metrics`
//! is ([`raftfs_web::HttpCaller::may_read_instrumentation`]); the browser
//! lists as the caller, through the mount table. Nodes that do not answer
//! within [`MEMBER_INFO_TIMEOUT_MS`] are shown unreachable.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{Redirect, Response};
use axum::routing::get;
use axum::{Extension, Router};
use futures::future::join_all;
use maud::html;
use openraft::async_runtime::WatchReceiver;
use raftfs_proto::{pb, Permission};
use raftfs_raft::peer_info::peer_info;
use raftfs_trust::PeerRole;
use raftfs_web::status::{explorer_routes, health_cell, member_header, member_rows, MemberAnswer, NavTab, StatusShell};
use raftfs_web::{axum, HttpCaller};

use super::nameservice_check::MEMBER_INFO_TIMEOUT_MS;
use super::nameservice_pages::nameservice_routes;
use super::node::RouterNode;
use super::web_namespace::RouterWebNamespace;
use crate::federation::Federation;

/// The router's tabs.
pub const ROUTER_TABS: &[NavTab] = &[
    NavTab {
        href: "/federationhealth.html",
        label: "Overview",
    },
    NavTab {
        href: "/datanodes.html",
        label: "DataNodes",
    },
    NavTab {
        href: "/openfiles.html",
        label: "Open files",
    },
    NavTab {
        href: "/mounts.html",
        label: "Mount table",
    },
    NavTab {
        href: "/explorer.html",
        label: "Browse the file system",
    },
    NavTab {
        href: "/metrics",
        label: "Metrics",
    },
];

struct Pages {
    node: Arc<RouterNode>,
    shell: StatusShell,
}

/// The router's status pages and file browser.
pub fn status_routes(node: Arc<RouterNode>) -> Router {
    let shell = StatusShell {
        node: format!("router {}", node.version.member_id),
        tabs: ROUTER_TABS,
    };
    let browser = explorer_routes(
        Arc::new(RouterWebNamespace::new(node.clone())),
        node.client_auth,
        shell.clone(),
    );
    let nameservices = nameservice_routes(node.clone(), shell.clone());
    Router::new()
        .route("/", get(|| async { Redirect::to("/federationhealth.html") }))
        .route("/federationhealth.html", get(overview))
        .route("/mounts.html", get(mounts))
        .with_state(Arc::new(Pages { node, shell }))
        .merge(nameservices)
        .merge(browser)
}

fn refused(p: &Pages, caller: &HttpCaller, tab: &str) -> Option<Response> {
    p.shell.refuse_uninstrumented(caller, p.node.client_auth, tab)
}

/// Ask every `(id, addr)` of `role` for its `MemberInfo`, at once.
async fn ask_all(p: &Pages, nodes: Vec<(u64, String)>, role: PeerRole) -> Vec<MemberAnswer> {
    let dialer = &p.node.security.dialer;
    join_all(nodes.into_iter().map(|(id, addr)| async move {
        let info = peer_info(dialer, &addr, role, MEMBER_INFO_TIMEOUT_MS).await;
        MemberAnswer {
            id,
            addr,
            voter: None,
            info,
        }
    }))
    .await
}

async fn overview(State(p): State<Arc<Pages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    const TAB: &str = "/federationhealth.html";
    if let Some(r) = refused(&p, &caller, TAB) {
        return r;
    }
    let node = &p.node;
    let status = node.status();
    let routers: Vec<(u64, String)> = {
        let m = node.raft.metrics().borrow_watched().clone();
        let nodes = m
            .membership_config
            .membership()
            .nodes()
            .map(|(id, n)| (*id, n.addr.clone()))
            .collect();
        nodes
    };
    let (records, disabled) = node.view().with(|f| {
        let records: Vec<_> = f.nameservices().cloned().collect();
        let disabled: Vec<String> = f.mounts().disabled_nameservices().cloned().collect();
        (records, disabled)
    });
    let router_rows = ask_all(&p, routers, PeerRole::Router).await;
    let leader = status.leader;
    let router_role = |row: &MemberAnswer, _: &pb::MemberInfoReply| {
        if Some(row.id) == leader {
            "LEADER".to_string()
        } else {
            "FOLLOWER".to_string()
        }
    };
    let ns_rows = join_all(records.iter().map(|r| {
        let members = r.members.iter().map(|(id, a)| (*id, a.clone())).collect();
        ask_all(&p, members, PeerRole::Member)
    }))
    .await;
    let body = html! {
        h2 { "Summary" }
        table #summary {
            tr { th { "Cluster ID" } td { (node.version.cluster_id) } }
            tr { th { "This router" } td { (status.router_id) " (" (status.state) ", term " (status.term) ")" } }
            tr { th { "Mount table version" } td { (status.version) " (applied index " (status.applied_index) ")" } }
            tr { th { "Safe mode" } td class=(if status.safe_mode.is_some() { "bad" } else { "good" }) {
                @match &status.safe_mode { Some(why) => { "ON: " (why) } None => { "off" } }
            } }
            tr { th { "Health" } (health_cell(&status.health)) }
            tr { th { "Nameservices" } td { (records.len()) @if !disabled.is_empty() { " (disabled: " (disabled.join(", ")) ")" } } }
            tr { th { "Version" } td { "raftfs " (env!("CARGO_PKG_VERSION")) } }
        }
        h2 { "Routers (the mount table's group)" }
        table #routers {
            thead { (member_header(false)) }
            tbody { (member_rows(&router_rows, router_role)) }
        }
        @for (r, rows) in records.iter().zip(&ns_rows) {
            h2 { "Nameservice " (r.name) @if disabled.contains(&r.name) { " " span.bad { "(disabled)" } } }
            p { "Namespace ID " (r.namespace_id) ", block pool " (r.block_pool_id) ". DataNodes serving WebHDFS: "
                (rows.iter().filter_map(|row| row.info.as_ref().ok()).map(|i| i.datanode_http.len()).max().unwrap_or(0)) "." }
            table.nameservice data-nameservice=(r.name) {
                thead { (member_header(false)) }
                tbody { (member_rows(rows, |_, i| i.role.clone())) }
            }
        }
        @if records.is_empty() { p.note { "No nameservice is registered (routeradmin -addNameservice)." } }
    };
    p.shell.page(TAB, "Overview", body)
}

async fn mounts(State(p): State<Arc<Pages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    const TAB: &str = "/mounts.html";
    if let Some(r) = refused(&p, &caller, TAB) {
        return r;
    }
    let (version, entries) = p.node.view().with(|f: &Federation| {
        let entries: Vec<_> = f.mounts().entries().cloned().collect();
        (f.version(), entries)
    });
    let limit = |q: Option<u64>| q.map_or_else(|| "unlimited".to_string(), |v| v.to_string());
    let body = html! {
        p { "Version " (version) ", " (entries.len()) " mount point(s)." }
        table #mounts {
            thead { tr {
                th { "Source" } th { "Destinations" } th { "Order" } th { "Read-only" }
                th { "Owner" } th { "Group" } th { "Permission" } th { "Name quota" } th { "Space quota" }
            } }
            tbody {
                @for e in &entries {
                    tr {
                        td { (e.source) }
                        td { @for (i, d) in e.destinations.iter().enumerate() { @if i > 0 { ", " } (d.nameservice) "->" (d.path) } }
                        td { (e.order.name()) }
                        td { (if e.read_only { "yes" } else { "no" }) }
                        td { (e.owner) }
                        td { (e.group) }
                        td { (Permission(e.mode)) }
                        td.num { (limit(e.quota.ns_quota)) }
                        td.num { (limit(e.quota.ss_quota)) }
                    }
                }
            }
        }
        @if entries.is_empty() { p.note { "The mount table is empty (routeradmin -add)." } }
    };
    p.shell.page(TAB, "Mount table", body)
}
