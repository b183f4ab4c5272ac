//! [`RouterMetrics`]: a router's Prometheus metrics (served at `/metrics`
//! by [`super::http_pages`]): its mount-table group's Raft state, calls
//! forwarded to each nameservice (counted where they are forwarded, by
//! [`raftfs_client::federated::nameservices::ForwardCounts`]), the
//! federation's version and size, safe mode and health. Everything is read
//! when the page is scraped.

use prometheus::{IntCounterVec, IntGauge, Opts, Registry};
use raftfs_client::federated::nameservices::ForwardCounts;
use raftfs_raft::GroupMetrics;
use raftfs_web::registered;

pub struct RouterMetrics {
    registry: Registry,
    pub raft: GroupMetrics,
    calls: IntCounterVec,
    federation_version: IntGauge,
    mount_entries: IntGauge,
    nameservices: IntGauge,
    safe_mode: IntGauge,
    healthy: IntGauge,
}

impl Default for RouterMetrics {
    fn default() -> Self {
        RouterMetrics::new()
    }
}

impl RouterMetrics {
    pub fn new() -> RouterMetrics {
        let registry = Registry::new();
        let gauge =
            |name: &str, help: &str| registered(&registry, IntGauge::new(name, help).expect("a valid metric name"));
        let calls = registered(
            &registry,
            IntCounterVec::new(
                Opts::new(
                    "raftfs_router_calls_total",
                    "Client calls this router forwarded, by nameservice and outcome",
                ),
                &["nameservice", "outcome"],
            )
            .expect("a valid metric"),
        );
        RouterMetrics {
            raft: GroupMetrics::register(&registry, "raftfs_mount_table_raft")
                .expect("the Raft metrics are registered once"),
            calls,
            federation_version: gauge(
                "raftfs_federation_version",
                "Version of the federation (mount table and nameservices) this router has applied",
            ),
            mount_entries: gauge("raftfs_mount_entries", "Entries in the mount table"),
            nameservices: gauge("raftfs_nameservices", "Nameservices in the federation"),
            safe_mode: gauge("raftfs_router_safe_mode", "1 while this router refuses client calls"),
            healthy: gauge("raftfs_healthy", "1 while this router's health checks pass"),
            registry,
        }
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Counts of the calls forwarded to each nameservice, as they are now.
    pub fn refresh_calls(&self, counts: &[(String, std::sync::Arc<ForwardCounts>)]) {
        self.calls.reset();
        for (ns, c) in counts {
            self.calls
                .with_label_values(&[ns.as_str(), "success"])
                .inc_by(c.succeeded());
            self.calls.with_label_values(&[ns.as_str(), "error"]).inc_by(c.failed());
        }
    }

    /// The federation and the router's own state, as they are now.
    pub fn refresh_state(&self, version: u64, mounts: usize, nameservices: usize, safe_mode: bool, healthy: bool) {
        self.federation_version.set(version as i64);
        self.mount_entries.set(mounts as i64);
        self.nameservices.set(nameservices as i64);
        self.safe_mode.set(i64::from(safe_mode));
        self.healthy.set(i64::from(healthy));
    }
}
