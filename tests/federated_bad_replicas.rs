//! A client of the federated namespace that reads a corrupt replica
//! reports it to the nameservice that owns the block pool (not to the
//! routers it was given, which take no DataNode reports), both when the
//! SDK routes by itself and through a router.

use crate::common;

use std::time::{Duration, Instant};

use common::federated::{routing_flag, Federated};
use raftfs_client::Routing;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_replica_read_through_federation_is_reported_to_its_nameservice() {
    for routing in [Routing::Direct, Routing::ViaRouter] {
        let f = Federated::start(1, routing).await;
        let local = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(local.path(), vec![5u8; 200_000]).unwrap();
        f.dfs_ok("alice", &["-put", local.path().to_str().unwrap(), "/data/bad"]);
        // ns2 holds /data: keep its monitor from replacing what we corrupt.
        let (code, _, err) = f.ns2.dfsadmin(&["-safemode", "enter"]);
        assert_eq!(code, 0, "{err}");
        let own = f.ns2.client("hdfs", &["hdfs"]);
        let loc = own.block_locations("/data/bad").await.unwrap();
        let id = loc.blocks[0].block.id;
        let name = format!("blk_{id}");
        let files: Vec<_> = f
            .ns1
            .dn_ports
            .keys()
            .flat_map(|j| common::block_files(&f.ns1.dn_dir(*j)))
            .filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy() == name))
            .collect();
        assert_eq!(files.len(), 3, "three replicas");
        // Every replica corrupt: whichever the reader tries first, it
        // meets a checksum error and reports it.
        for file in &files {
            let mut raw = std::fs::read(file).unwrap();
            raw[1000] ^= 0x01;
            std::fs::write(file, raw).unwrap();
        }
        let got = tempfile::tempdir().unwrap();
        let (code, _, err) = f.dfs("alice", &["-get", "/data/bad", got.path().join("x").to_str().unwrap()]);
        assert_ne!(code, 0, "no good replica is left to read");
        assert!(err.contains("Could not obtain block"), "{err}");
        let deadline = Instant::now() + Duration::from_secs(10);
        while f.ns2.replica_counts("/data/bad").1 == 0 {
            assert!(
                Instant::now() < deadline,
                "ns2 never heard of the corrupt replicas read with --routing {}",
                routing_flag(routing)
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
