//! [`DatanodeTurns`]: which DataNode a namespace endpoint sends a data op
//! to: for a read, one that holds the block wanted (fewer hops, as HDFS's
//! NameNode chooses); otherwise, and when no holder serves HTTP, each in
//! turn.

use std::sync::atomic::{AtomicUsize, Ordering};

use raftfs_proto::{FsError, OpResult};

/// A DataNode's uuid and its HTTP HOST:PORT.
pub type DatanodeHttp = (String, String);

/// The turn of the next redirect not bound to a replica.
#[derive(Debug, Default)]
pub struct DatanodeTurns(AtomicUsize);

impl DatanodeTurns {
    /// Of `endpoints`, the first of `holders` (uuids, nearest first) among
    /// them, else the next in turn; `Unavailable` when there are none.
    pub fn choose<'a>(&self, holders: &[String], endpoints: &'a [DatanodeHttp]) -> Result<&'a DatanodeHttp, FsError> {
        if let Some(d) = holders.iter().find_map(|h| endpoints.iter().find(|(u, _)| u == h)) {
            return Ok(d);
        }
        if endpoints.is_empty() {
            return Err(FsError::Unavailable(
                "no live DataNode serves HTTP, so WebHDFS cannot move data (DataNodes serve it when \
                 started with --http-addr)"
                    .into(),
            ));
        }
        let turn = self.0.fetch_add(1, Ordering::Relaxed);
        Ok(&endpoints[turn % endpoints.len()])
    }
}

/// The holders (uuids, nearest first) of the first block a
/// `getBlockLocations` answer names; none for an empty file.
pub fn first_block_holders(located: OpResult) -> Result<Vec<String>, FsError> {
    match located {
        OpResult::Blocks(b) => Ok(b
            .blocks
            .first()
            .map(|lb| lb.locations.iter().map(|d| d.uuid.clone()).collect())
            .unwrap_or_default()),
        other => Err(FsError::Internal(format!("getBlockLocations answered {other:?}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_holder_first_else_in_turn() {
        let turns = DatanodeTurns::default();
        let eps: Vec<DatanodeHttp> = ["a", "b", "c"]
            .iter()
            .map(|u| (u.to_string(), format!("{u}:9864")))
            .collect();
        let holders = vec!["x".to_string(), "c".to_string()];
        assert_eq!(turns.choose(&holders, &eps).unwrap().0, "c");
        let picked: Vec<&str> = (0..4).map(|_| turns.choose(&[], &eps).unwrap().0.as_str()).collect();
        assert_eq!(picked, ["a", "b", "c", "a"]);
        assert!(matches!(turns.choose(&holders, &[]), Err(FsError::Unavailable(_))));
    }
}
