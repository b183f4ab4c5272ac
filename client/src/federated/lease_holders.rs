//! [`LeaseHolders`]: which nameservices each client may hold open files
//! in, so that the client's `renewLease` goes to those nameservices only.
//!
//! A client's lease is per nameservice (each keeps its own lease table).
//! A client that writes through a router sends one `renewLease` to the
//! router, which must renew it wherever the client has files open: RBF
//! sent it to every nameservice, which costs every nameservice a call per
//! client per renewal interval. Here a successful create or append marks
//! (client, nameservice); a renewal goes to the marked nameservices and
//! keeps the marks alive; a mark not renewed for [`LEASE_MARK_TTL_MS`]
//! (the nameservices' hard lease limit: their lease is gone by then) is
//! dropped.
//!
//! Caveats: the router does not see a client close its last file in a
//! nameservice, so renewals go on until the client stops renewing (it
//! stops once it has no writers open). Marks live in this router's memory:
//! a client whose renewal reaches another router (failover) renews where
//! that router saw it open files; a file it opened through the first
//! router keeps its lease for the soft limit only, as with a client that
//! paused. At most [`MAX_LEASE_HOLDERS`] clients are tracked; past that the
//! oldest marks are dropped first.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// How long a mark lives without a renewal: the nameservices' hard lease
/// limit (`--lease-hard-limit-ms`, 20 minutes by default).
pub const LEASE_MARK_TTL_MS: u64 = 20 * 60 * 1000;
/// Most clients tracked at once.
pub const MAX_LEASE_HOLDERS: usize = 100_000;

/// See the module docs.
#[derive(Default)]
pub struct LeaseHolders {
    marks: Mutex<HashMap<String, BTreeMap<String, Instant>>>,
}

impl LeaseHolders {
    /// `client` opened a file for writing in `nameservice`.
    pub fn opened(&self, client: &str, nameservice: &str) {
        let mut marks = self.marks.lock();
        if !marks.contains_key(client) && marks.len() >= MAX_LEASE_HOLDERS {
            expire(&mut marks, Instant::now());
            if marks.len() >= MAX_LEASE_HOLDERS {
                let oldest = marks
                    .iter()
                    .min_by_key(|(_, m)| m.values().max().copied())
                    .map(|(c, _)| c.clone());
                if let Some(c) = oldest {
                    marks.remove(&c);
                }
            }
        }
        marks
            .entry(client.to_string())
            .or_default()
            .insert(nameservice.to_string(), Instant::now());
    }

    /// The nameservices `client`'s renewal goes to (their marks renewed).
    pub fn renew(&self, client: &str) -> Vec<String> {
        let now = Instant::now();
        let mut marks = self.marks.lock();
        let Some(m) = marks.get_mut(client) else {
            return Vec::new();
        };
        m.retain(|_, t| now.duration_since(*t) <= Duration::from_millis(LEASE_MARK_TTL_MS));
        for t in m.values_mut() {
            *t = now;
        }
        let names: Vec<String> = m.keys().cloned().collect();
        if names.is_empty() {
            marks.remove(client);
        }
        names
    }

    /// Clients tracked now.
    pub fn len(&self) -> usize {
        self.marks.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Drop every mark older than the TTL, and clients left without marks.
fn expire(marks: &mut HashMap<String, BTreeMap<String, Instant>>, now: Instant) {
    let ttl = Duration::from_millis(LEASE_MARK_TTL_MS);
    marks.retain(|_, m| {
        m.retain(|_, t| now.duration_since(*t) <= ttl);
        !m.is_empty()
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renewals_go_where_files_were_opened() {
        let l = LeaseHolders::default();
        assert!(l.renew("c1").is_empty(), "a client that opened nothing renews nowhere");
        l.opened("c1", "ns2");
        l.opened("c1", "ns1");
        l.opened("c1", "ns2");
        l.opened("c2", "ns3");
        assert_eq!(l.renew("c1"), ["ns1", "ns2"]);
        assert_eq!(l.renew("c2"), ["ns3"]);
        assert_eq!(l.len(), 2);
    }
}
