//! A router's HTTP pages (`--http-addr`): `/metrics` in Prometheus's text
//! format ([`super::router_metrics`]), readable as the router's `--auth`
//! says ([`raftfs_web::HttpCaller::may_read_instrumentation`]), WebHDFS
//! for the federated namespace ([`super::web_namespace`]), and the status
//! pages and file browser ([`super::status_pages`]).

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use openraft::async_runtime::WatchReceiver;
use raftfs_web::{axum, metrics_page, HttpCaller};

use super::node::RouterNode;
use super::status_pages::status_routes;
use super::web_namespace::RouterWebNamespace;
use raftfs_web::webhdfs::webhdfs_routes;

/// The router's HTTP pages.
pub fn http_pages(node: Arc<RouterNode>) -> Router {
    let webhdfs = webhdfs_routes(Arc::new(RouterWebNamespace::new(node.clone())), node.client_auth);
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(node.clone())
        .merge(webhdfs)
        .merge(status_routes(node))
}

async fn metrics(State(node): State<Arc<RouterNode>>, Extension(caller): Extension<HttpCaller>) -> Response {
    if let Err(e) = caller.may_read_instrumentation(node.client_auth) {
        return e.into_response();
    }
    let m = &node.metrics;
    let raft = node.raft.metrics().borrow_watched().clone();
    let snapshot_age = node.snapshots().latest_age().ok().flatten().map(|d| d.as_secs());
    m.raft.refresh(&raft, snapshot_age);
    m.refresh_calls(&node.calls.nameservices().forward_counts());
    let status = node.status();
    let (mounts, nameservices) = node.view().with(|f| (f.mounts().len(), f.nameservices().count()));
    m.refresh_state(
        status.version,
        mounts,
        nameservices,
        status.safe_mode.is_some(),
        status.health == "HEALTHY",
    );
    metrics_page(m.registry())
}
