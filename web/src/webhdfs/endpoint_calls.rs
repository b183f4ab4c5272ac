//! [`EndpointCalls`]: the client id a WebHDFS endpoint's calls go under,
//! and their call ids (WebHDFS requests carry none of their own).

use std::sync::atomic::{AtomicU64, Ordering};

/// One endpoint's client id (unique per process) and its next call id.
#[derive(Debug)]
pub struct EndpointCalls {
    client_id: String,
    next_call_id: AtomicU64,
}

impl EndpointCalls {
    /// Calls under `webhdfs-<node>-<random>`; `node` names the serving node
    /// (`m1`, `r2`) for the logs.
    pub fn new(node: &str) -> EndpointCalls {
        EndpointCalls {
            client_id: format!("webhdfs-{node}-{}", uuid::Uuid::new_v4().simple()),
            next_call_id: AtomicU64::new(1),
        }
    }

    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    /// A call id no earlier call of this endpoint had.
    pub fn next_call_id(&self) -> u64 {
        self.next_call_id.fetch_add(1, Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_distinct() {
        let (a, b) = (EndpointCalls::new("m1"), EndpointCalls::new("m1"));
        assert_ne!(a.client_id(), b.client_id());
        assert!(a.client_id().starts_with("webhdfs-m1-"));
        assert_eq!((a.next_call_id(), a.next_call_id()), (1, 2));
    }
}
