//! A Prometheus registry as a `/metrics` page.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use prometheus::core::Collector;
use prometheus::{IntCounter, Registry, TextEncoder};

use crate::RemoteException;

/// Prometheus's text exposition format, version 0.0.4 (the encoder's
/// format, with the charset Prometheus's own clients name).
pub const METRICS_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Every metric of `registry`, in Prometheus's text format.
pub fn metrics_page(registry: &Registry) -> Response {
    let encoder = TextEncoder::new();
    let mut page = String::new();
    match encoder.encode_utf8(&registry.gather(), &mut page) {
        Ok(()) => (StatusCode::OK, [(header::CONTENT_TYPE, METRICS_CONTENT_TYPE)], page).into_response(),
        Err(e) => RemoteException::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "java.io.IOException",
            format!("encoding the metrics: {e}"),
        )
        .into_response(),
    }
}

/// `c`, registered in `registry`. A node registers each metric once at
/// start-up under its own name, so a refusal (a name taken twice, an
/// invalid one) is a bug: it panics, naming the registry's reason.
pub fn registered<C: Collector + Clone + 'static>(registry: &Registry, c: C) -> C {
    if let Err(e) = registry.register(Box::new(c.clone())) {
        panic!("a metric must be registered once, under a valid name of its own: {e}");
    }
    c
}

/// Bring counter `c` up to `total`, a count kept elsewhere (an atomic the
/// hot path bumps): counters only go up, so a smaller total (it cannot
/// happen for a monotonic source) leaves `c` as it is.
pub fn sync_counter(c: &IntCounter, total: u64) {
    let now = c.get();
    if total > now {
        c.inc_by(total - now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_counter_follows_its_source_and_never_goes_down() {
        let c = IntCounter::new("x_total", "x").unwrap();
        sync_counter(&c, 5);
        sync_counter(&c, 3);
        assert_eq!(c.get(), 5);
        sync_counter(&c, 9);
        assert_eq!(c.get(), 9);
    }
}
