//! A DataNode's HTTP pages (`--http-addr`): `/metrics` in Prometheus's
//! text format, readable as `--auth` says
//! ([`raftfs_web::HttpCaller::may_read_instrumentation`]), and WebHDFS's
//! data side ([`crate::webhdfs_data`]).
//!
//! Everything is read when the page is scraped: bytes written to and read
//! from each block pool (counted by the data transfer service as packets
//! are written and chunks sent; short-circuit reads bypass the node and are
//! not counted), replicas and bytes used per pool, each volume's space and
//! state, and transfers in progress. A pool the node stopped serving
//! disappears from the page.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Router};
use prometheus::{IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry};
use raftfs_trust::ClientAuth;
use raftfs_web::{axum, metrics_page, registered, HttpCaller};

use crate::node::Node;

/// The DataNode's metrics, filled from its state at each scrape.
pub struct DatanodeMetrics {
    registry: Registry,
    bytes_written: IntCounterVec,
    bytes_read: IntCounterVec,
    replicas: IntGaugeVec,
    pool_used_bytes: IntGaugeVec,
    volume_capacity_bytes: IntGaugeVec,
    volume_free_bytes: IntGaugeVec,
    volume_failed: IntGaugeVec,
    xceivers: IntGauge,
    admitted: IntCounterVec,
}

impl Default for DatanodeMetrics {
    fn default() -> Self {
        DatanodeMetrics::new()
    }
}

impl DatanodeMetrics {
    pub fn new() -> DatanodeMetrics {
        let registry = Registry::new();
        let counters = |name: &str, help: &str, label: &str| {
            registered(
                &registry,
                IntCounterVec::new(Opts::new(name, help), &[label]).expect("a valid metric"),
            )
        };
        let gauges = |name: &str, help: &str, label: &str| {
            registered(
                &registry,
                IntGaugeVec::new(Opts::new(name, help), &[label]).expect("a valid metric"),
            )
        };
        let xceivers = registered(
            &registry,
            IntGauge::new("raftfs_datanode_xceivers", "Reads and writes in progress").expect("a valid metric"),
        );
        DatanodeMetrics {
            admitted: counters(
                "raftfs_datanode_block_requests_admitted_total",
                "Block requests whose token or proof was accepted, by how they arrived (tls or plaintext)",
                "transport",
            ),
            bytes_written: counters(
                "raftfs_datanode_bytes_written_total",
                "Bytes of block data written to the pool's replicas since the node started",
                "block_pool",
            ),
            bytes_read: counters(
                "raftfs_datanode_bytes_read_total",
                "Bytes of block data sent to readers from the pool since the node started",
                "block_pool",
            ),
            replicas: gauges(
                "raftfs_datanode_replicas",
                "Replicas of the pool on this node",
                "block_pool",
            ),
            pool_used_bytes: gauges(
                "raftfs_datanode_block_pool_used_bytes",
                "Bytes the pool's replicas take on this node",
                "block_pool",
            ),
            volume_capacity_bytes: gauges(
                "raftfs_datanode_volume_capacity_bytes",
                "Size of the file system holding the volume",
                "volume",
            ),
            volume_free_bytes: gauges(
                "raftfs_datanode_volume_free_bytes",
                "Free bytes of the file system holding the volume",
                "volume",
            ),
            volume_failed: gauges(
                "raftfs_datanode_volume_failed",
                "1 once the volume failed (it takes no new replicas)",
                "volume",
            ),
            xceivers,
            registry,
        }
    }

    /// Fill every metric from `node` as it is now.
    pub fn refresh(&self, node: &Node) {
        for v in [&self.bytes_written, &self.bytes_read] {
            v.reset();
        }
        for v in [&self.replicas, &self.pool_used_bytes] {
            v.reset();
        }
        for pool in node.storage.pools() {
            let id = [pool.id.as_str()];
            self.bytes_written
                .with_label_values(&id)
                .inc_by(pool.bytes_written.load(Ordering::Relaxed));
            self.bytes_read
                .with_label_values(&id)
                .inc_by(pool.bytes_read.load(Ordering::Relaxed));
            self.replicas
                .with_label_values(&id)
                .set(pool.replicas.lock().len() as i64);
            self.pool_used_bytes
                .with_label_values(&id)
                .set(pool.used_bytes() as i64);
        }
        for v in &node.storage.volumes {
            let dir = v.dir.display().to_string();
            let (capacity, free) = v.space();
            self.volume_capacity_bytes
                .with_label_values(&[dir.as_str()])
                .set(capacity as i64);
            self.volume_free_bytes
                .with_label_values(&[dir.as_str()])
                .set(free as i64);
            self.volume_failed
                .with_label_values(&[dir.as_str()])
                .set(i64::from(v.is_failed()));
        }
        self.xceivers.set(i64::from(node.xceivers()));
        self.admitted.reset();
        for (transport, n) in [("tls", &node.admitted_tls), ("plaintext", &node.admitted_plaintext)] {
            self.admitted
                .with_label_values(&[transport])
                .inc_by(n.load(Ordering::Relaxed));
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }
}

struct Pages {
    node: Arc<Node>,
    auth: ClientAuth,
    metrics: DatanodeMetrics,
}

/// The DataNode's HTTP pages; `auth` decides who may read them.
pub fn http_pages(node: Arc<Node>, auth: ClientAuth) -> Router {
    let webhdfs = crate::webhdfs_data::webhdfs_data_routes(node.clone(), auth);
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(Arc::new(Pages {
            node,
            auth,
            metrics: DatanodeMetrics::new(),
        }))
        .merge(webhdfs)
}

async fn metrics(State(p): State<Arc<Pages>>, Extension(caller): Extension<HttpCaller>) -> Response {
    if let Err(e) = caller.may_read_instrumentation(p.auth) {
        return e.into_response();
    }
    let p2 = p.clone();
    // statvfs of each volume and the pools' maps: off the async threads.
    match tokio::task::spawn_blocking(move || p2.metrics.refresh(&p2.node)).await {
        Ok(()) => metrics_page(p.metrics.registry()),
        Err(e) => raftfs_web::RemoteException::new(
            axum::http::StatusCode::INTERNAL_SERVER_ERROR,
            "java.io.IOException",
            format!("reading the DataNode's state: {e}"),
        )
        .into_response(),
    }
}
