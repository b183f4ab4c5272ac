//! A fault-injection route for peer connections, off unless the
//! environment asks: `RAFTFS_FAILPOINT_PEER_ROUTES=<id>=<host:port>,…`
//! makes a member (or router) connect to peer `<id>` (Raft RPCs, read-index
//! requests, health queries) through the given address instead of the
//! peer's own, so the fault harness can put a TCP proxy there and cut or
//! restore the link between two members. Never set in production.

use std::collections::HashMap;
use std::sync::OnceLock;

pub const ENV_PEER_ROUTES: &str = "RAFTFS_FAILPOINT_PEER_ROUTES";

/// The address to dial for member `id`, whose own address is `addr`: a
/// route from [`ENV_PEER_ROUTES`] if one is set for it, else `addr`.
pub fn peer_route(id: u64, addr: &str) -> String {
    static ROUTES: OnceLock<HashMap<u64, String>> = OnceLock::new();
    let routes = ROUTES.get_or_init(|| {
        let spec = std::env::var(ENV_PEER_ROUTES).unwrap_or_default();
        let routes = parse_routes(&spec);
        if !routes.is_empty() {
            tracing::warn!(?routes, "failpoint armed: peer connections routed");
        }
        routes
    });
    routes.get(&id).cloned().unwrap_or_else(|| addr.to_string())
}

/// `1=h:p,2=h:p`; malformed items are ignored with a warning (this is a
/// test aid, never set in production).
fn parse_routes(spec: &str) -> HashMap<u64, String> {
    let mut routes = HashMap::new();
    for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item
            .split_once('=')
            .and_then(|(id, a)| Some((id.parse::<u64>().ok()?, a)))
        {
            Some((id, a)) if !a.is_empty() => {
                routes.insert(id, a.to_string());
            }
            _ => tracing::warn!(item, "ignoring a malformed {ENV_PEER_ROUTES} item"),
        }
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_parse_and_skip_garbage() {
        let r = parse_routes("1=127.0.0.1:5, x=1, 3=, 2=h:7,");
        assert_eq!(r.len(), 2);
        assert_eq!(r[&1], "127.0.0.1:5");
        assert_eq!(r[&2], "h:7");
    }
}
