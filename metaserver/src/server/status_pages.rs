//! A member's status pages (the NameNode web UI's tabs), served with its
//! other HTTP pages ([`super::http_pages`]):
//!
//! * `/dfshealth.html`, the overview: the cluster, the nameservice and
//!   every member of it as that member answers `MemberInfo` (role, term,
//!   last log, commit and applied index, snapshot, health), safe mode,
//!   and the block pool's capacity and block counts;
//! * `/datanodes.html`: the DataNodes of this nameservice's block pool
//!   (live, dead, decommissioning; capacity, used, last contact);
//! * `/openfiles.html`: files open for write and their lease holders;
//! * `/mounts.html`: the paths the routers' mount table gives this
//!   nameservice;
//! * `/explorer.html`: the file browser ([`raftfs_web::status`]).
//!
//! `/` leads to the overview. Every page but the browser shows the
//! member's state and is readable as `/jmx` is
//! ([`raftfs_web::HttpCaller::may_read_instrumentation`]); the browser
//! lists as the caller. A follower serves them all (its own view, which
//! its applied index dates); peers that do not answer within
//! [`PEER_INFO_TIMEOUT_MS`] are shown as unreachable.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::State;
use axum::response::{Redirect, Response};
use axum::routing::get;
use axum::{Extension, Router};
use maud::html;
use raftfs_proto::{AdminState, DatanodeInfo};
use raftfs_raft::peer_info::peer_info;
use raftfs_trust::PeerRole;
use raftfs_web::status::units::{age, bytes, percent};
use raftfs_web::status::{
    datanode_counts, datanode_table, explorer_routes, health_cell, member_header, member_rows, MemberAnswer, NavTab,
    StatusShell,
};
use raftfs_web::{axum, HttpCaller};

use super::member::Member;
use super::member_metrics::Capacity;
use super::open_files::{open_files, MAX_OPEN_FILES_SCANNED};
use super::web_namespace::MemberWebNamespace;
use raftfs_proto::admin::MAX_OPEN_FILES_LISTED;

/// How long the overview waits for each peer's `MemberInfo`.
pub const PEER_INFO_TIMEOUT_MS: u64 = 1_000;

/// The member's tabs.
pub const MEMBER_TABS: &[NavTab] = &[
    NavTab {
        href: "/dfshealth.html",
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
    member: Arc<Member>,
    shell: StatusShell,
}

/// The member's status pages and file browser.
pub fn status_routes(member: Arc<Member>) -> Router {
    let v = &member.version;
    let shell = StatusShell {
        node: format!("member {} of {}", v.member_id, v.nameservice),
        tabs: MEMBER_TABS,
    };
    let browser = explorer_routes(
        Arc::new(MemberWebNamespace::new(member.clone())),
        member.client_auth,
        shell.clone(),
    );
    Router::new()
        .route("/", get(|| async { Redirect::to("/dfshealth.html") }))
        .route("/dfshealth.html", get(overview))
        .route("/datanodes.html", get(datanodes))
        .route("/openfiles.html", get(open_files_page))
        .route("/mounts.html", get(mounts))
        .with_state(Arc::new(Pages { member, shell }))
        .merge(browser)
}

/// Refuse callers who may not read the member's state.
fn refused(p: &Pages, caller: &HttpCaller, tab: &str) -> Option<Response> {
    p.shell.refuse_uninstrumented(caller, p.member.client_auth, tab)
}

async fn overview(State(p): State<Arc<Pages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    const TAB: &str = "/dfshealth.html";
    if let Some(r) = refused(&p, &caller, TAB) {
        return r;
    }
    let m = &p.member;
    let me = m.info();
    let dialer = &m.security.dialer;
    let me = &me;
    let asks = me.members.iter().map(|peer| async move {
        let info = if peer.id == me.member_id {
            Ok(me.clone())
        } else {
            peer_info(dialer, &peer.addr, PeerRole::Member, PEER_INFO_TIMEOUT_MS).await
        };
        MemberAnswer {
            id: peer.id,
            addr: peer.addr.clone(),
            voter: Some(peer.voter),
            info,
        }
    });
    let members: Vec<MemberAnswer> = futures::future::join_all(asks).await;
    let safemode = m.blocks.safemode_status();
    let nodes = m.blocks.datanode_report(Instant::now());
    let cap = Capacity::of_live(&nodes);
    let g = m.blocks.block_gauges();
    let count = |f: &dyn Fn(&DatanodeInfo) -> bool| nodes.iter().filter(|n| f(n)).count();
    let body = html! {
        h2 { "Summary" }
        table #summary {
            tr { th { "Cluster ID" } td { (me.cluster_id) } }
            tr { th { "Nameservice" } td { (me.nameservice) } }
            tr { th { "Namespace ID" } td { (me.namespace_id) } }
            tr { th { "Block pool ID" } td { (me.block_pool_id) } }
            tr { th { "This member" } td { (me.member_id) " (" (me.role) ", term " (me.term) ")" } }
            tr { th { "Leader" } td { @if me.leader_id == 0 { span.bad { "none known" } } @else { (me.leader_id) " at " (me.leader_addr) } } }
            tr { th { "Write execution" } td { (me.exec_mode) } }
            tr { th { "Namespace store" } td { (m.shared().store.kind()) } }
            tr { th { "Safe mode" } td class=(if safemode.on { "bad" } else { "good" }) {
                @if safemode.on { "ON. " (safemode.message) } @else { "off" }
            } }
            tr { th { "Health" } (health_cell(&me.health)) }
            tr { th { "Version" } td { "raftfs " (env!("CARGO_PKG_VERSION")) } }
        }
        h2 { "Members" }
        table #members {
            thead { (member_header(true)) }
            tbody { (member_rows(&members, |_, i| i.role.clone())) }
        }
        h2 { "Block pool " (me.block_pool_id) }
        table #capacity {
            tr { th { "Configured capacity" } td.num { (bytes(cap.total)) } }
            tr { th { "DFS used (all block pools)" } td.num { (bytes(cap.used)) " (" (percent(cap.used, cap.total)) ")" } }
            tr { th { "Block pool used" } td.num { (bytes(cap.block_pool_used)) } }
            tr { th { "DFS remaining" } td.num { (bytes(cap.remaining)) " (" (percent(cap.remaining, cap.total)) ")" } }
            tr { th { "Live nodes" } td.num { (count(&|n| n.live)) } }
            tr { th { "Dead nodes" } td.num { (count(&|n| !n.live)) } }
            tr { th { "Decommissioning nodes" } td.num { (count(&|n| n.admin_state == AdminState::DecommissionInProgress)) } }
            tr { th { "Blocks" } td.num { (g.blocks) } }
            tr { th { "Under-replicated blocks" } td.num { (g.under_replicated) } }
            tr { th { "Missing blocks" } td.num class=[(g.missing > 0).then_some("bad")] { (g.missing) } }
            tr { th { "Blocks with corrupt replicas" } td.num { (g.corrupt) } }
            tr { th { "Replicas pending deletion" } td.num { (g.pending_deletion) } }
        }
    };
    p.shell.page(TAB, "Overview", body)
}

async fn datanodes(State(p): State<Arc<Pages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    const TAB: &str = "/datanodes.html";
    if let Some(r) = refused(&p, &caller, TAB) {
        return r;
    }
    let nodes = p.member.blocks.datanode_report(Instant::now());
    let pool = &p.member.version.block_pool_id;
    let body = html! {
        p { "Block pool " strong { (pool) } ": " (datanode_counts(&nodes)) }
        (datanode_table(Some("datanodes"), pool, &nodes))
        @if nodes.is_empty() { p.note { "No DataNode has registered with this nameservice." } }
    };
    p.shell.page(TAB, "DataNodes", body)
}

async fn open_files_page(State(p): State<Arc<Pages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    const TAB: &str = "/openfiles.html";
    if let Some(r) = refused(&p, &caller, TAB) {
        return r;
    }
    let m = p.member.clone();
    let listed = tokio::task::spawn_blocking(move || open_files(&*m.shared().store, "/")).await;
    let (files, more) = match listed {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => {
            let e = raftfs_web::RemoteException::from(&raftfs_proto::FsError::from(e));
            return p.shell.error_page(TAB, &e);
        }
        Err(e) => panic!("listing open files panicked: {e}"),
    };
    let now = p.member.shared().log_clock.estimate();
    let body = html! {
        p { (files.len()) " file(s) open for write" @if more { " (at most " (MAX_OPEN_FILES_LISTED) " shown, of the first " (MAX_OPEN_FILES_SCANNED) " looked at: more are open)" } ", as of applied index "
            (*p.member.shared().applied_index().borrow()) "." }
        table #openfiles {
            thead { tr { th { "Path" } th { "Inode" } th { "Length so far" } th { "Lease holder" } th { "Last renewal" } } }
            tbody {
                @for f in &files {
                    tr {
                        td { (f.path) }
                        td.num { (f.inode) }
                        td.num { (bytes(f.length)) }
                        td { (f.holder) }
                        td.num { (age(now.saturating_sub(f.renewed_ms).max(0) as u64)) " ago" }
                    }
                }
            }
        }
    };
    p.shell.page(TAB, "Open files", body)
}

async fn mounts(State(p): State<Arc<Pages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    const TAB: &str = "/mounts.html";
    if let Some(r) = refused(&p, &caller, TAB) {
        return r;
    }
    let owned = p.member.shared().ownership();
    let body = html! {
        @match &owned {
            None => p #ownership { "No router has given this nameservice a part of a federated namespace: it serves its whole namespace to every client." }
            Some(o) => {
                p #ownership { "The routers' mount table (version " (o.version) ") leads these paths of this nameservice; calls routed by a mount table for other paths are refused so the caller refreshes its table." }
                table #owned {
                    thead { tr { th { "Path in this nameservice" } } }
                    tbody { @for prefix in &o.prefixes { tr { td { (prefix) } } } }
                }
            }
        }
        p.note { "The whole mount table is on the routers' pages." }
    };
    p.shell.page(TAB, "Mount table", body)
}
