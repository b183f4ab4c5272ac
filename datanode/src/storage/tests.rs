//! Storage tests: the replica lifecycle on real files.

use super::*;
use raftfs_proto::checksum::compute as checksums;

fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

fn open(dir: &Path) -> (Storage, Arc<Pool>) {
    let s = Storage::open(&[dir.to_path_buf()], 0).expect("open storage");
    s.adopt_cluster("CID-test").expect("adopt");
    let p = s.open_pool("BP-1", 7, "CID-test", 1).expect("pool");
    (s, p)
}

fn read_all(s: &Storage, p: &Pool, b: &Block, offset: u64, len: u64) -> Result<Vec<u8>, FsError> {
    let mut r = s.open_reader(p, b, offset, len)?;
    let mut out = Vec::new();
    let mut first = true;
    while let Some((off, d, sums)) = r.next_chunk(4096)? {
        assert_eq!(off % 512, 0, "chunks start on a checksum boundary");
        assert_eq!(
            raftfs_proto::checksum::verify(&d, &sums),
            Ok(()),
            "sent checksums match the data"
        );
        if first {
            out.extend_from_slice(&d[(offset - off) as usize..]);
            first = false;
        } else {
            out.extend_from_slice(&d);
        }
    }
    Ok(out)
}

#[test]
fn write_finalize_read_and_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let bytes = data(5000, 1);
    let b = Block {
        id: 1 << 30,
        gen_stamp: 1001,
        num_bytes: 0,
    };
    {
        let (s, p) = open(tmp.path());
        let mut w = s.create_replica(&p, b, false).unwrap();
        w.write_packet(&s, 0, &bytes[..2048], &checksums(&bytes[..2048]))
            .unwrap();
        // A packet that does not continue the replica is refused.
        assert!(w
            .write_packet(&s, 4096, &bytes[..512], &checksums(&bytes[..512]))
            .is_err());
        // A bad checksum is refused.
        let mut bad = checksums(&bytes[2048..]);
        bad[0] ^= 1;
        assert!(matches!(
            w.write_packet(&s, 2048, &bytes[2048..], &bad),
            Err(FsError::Checksum(_))
        ));
        w.write_packet(&s, 2048, &bytes[2048..], &checksums(&bytes[2048..]))
            .unwrap();
        let fin = w.finalize(&s).unwrap();
        assert_eq!(fin.num_bytes, 5000);
        assert_eq!(read_all(&s, &p, &fin, 0, 5000).unwrap(), bytes);
        assert_eq!(read_all(&s, &p, &fin, 1000, 3001).unwrap(), bytes[1000..4001]);
        assert_eq!(p.report().len(), 1);
    }
    // A restart finds the replica again.
    let s = Storage::open(&[tmp.path().to_path_buf()], 0).unwrap();
    assert_eq!(s.ident().unwrap().cluster_id, "CID-test");
    let p = s.pool("BP-1").expect("pool found at start");
    let r = p.get(b.id).unwrap();
    assert_eq!(
        (r.block.gen_stamp, r.block.num_bytes, r.state),
        (1001, 5000, ReplicaState::Finalized)
    );
    assert_eq!(read_all(&s, &p, &r.block, 0, 5000).unwrap(), bytes);
    assert!(s.adopt_cluster("CID-other").is_err(), "another cluster is refused");
}

#[test]
fn a_flipped_byte_is_a_checksum_error() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, p) = open(tmp.path());
    let bytes = data(3000, 2);
    let b = Block {
        id: (1 << 30) + 5,
        gen_stamp: 1002,
        num_bytes: 0,
    };
    let mut w = s.create_replica(&p, b, false).unwrap();
    w.write_packet(&s, 0, &bytes, &checksums(&bytes)).unwrap();
    let fin = w.finalize(&s).unwrap();
    let (data_path, _) = s.replica_paths(&p.id, &p.get(b.id).unwrap());
    let mut raw = std::fs::read(&data_path).unwrap();
    raw[1500] ^= 0x40;
    std::fs::write(&data_path, raw).unwrap();
    assert!(matches!(read_all(&s, &p, &fin, 0, 3000), Err(FsError::Checksum(_))));
    // The chunks before the bad one still read.
    assert_eq!(read_all(&s, &p, &fin, 0, 1024).unwrap(), bytes[..1024]);
}

#[test]
fn reopen_truncates_restamps_and_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, p) = open(tmp.path());
    let bytes = data(4000, 3);
    let b = Block {
        id: (1 << 30) + 9,
        gen_stamp: 1003,
        num_bytes: 0,
    };
    let mut w = s.create_replica(&p, b, false).unwrap();
    w.write_packet(&s, 0, &bytes[..3000], &checksums(&bytes[..3000]))
        .unwrap();
    drop(w);
    // Only 2100 bytes were acknowledged: reopen with a new stamp there.
    let mut w = s
        .reopen_replica(
            &p,
            Block {
                id: b.id,
                gen_stamp: 1010,
                num_bytes: 2100,
            },
        )
        .unwrap();
    // The writer resends from the chunk boundary below 2100.
    w.write_packet(&s, 2048, &bytes[2048..], &checksums(&bytes[2048..]))
        .unwrap();
    let fin = w.finalize(&s).unwrap();
    assert_eq!((fin.gen_stamp, fin.num_bytes), (1010, 4000));
    assert_eq!(read_all(&s, &p, &fin, 0, 4000).unwrap(), bytes);
    // An older stamp cannot read it, the recovery protocol can cut it.
    let rep = s.init_recovery(&p, &fin, 1020).unwrap();
    assert_eq!(rep.visible_length, 4000);
    let cut = s.update_recovery(&p, &fin, 1020, 1234).unwrap();
    assert_eq!((cut.gen_stamp, cut.num_bytes), (1020, 1234));
    assert_eq!(read_all(&s, &p, &cut, 0, 1234).unwrap(), bytes[..1234]);
    assert!(s.delete_replica(&p, &cut).unwrap());
    assert!(p.get(b.id).is_none());
}

#[test]
fn an_unwritable_directory_is_a_failed_volume_not_fatal() {
    let tmp = tempfile::tempdir().unwrap();
    let good = tmp.path().join("good");
    let bad = tmp.path().join("file-not-dir");
    std::fs::write(&bad, b"x").unwrap();
    let s = Storage::open(&[bad.clone(), good], 0).expect("one good volume is enough");
    assert_eq!(s.failed_volumes(), 1);
    assert!(Storage::open(&[bad], 0).is_err(), "no usable volume is an error");
}

#[test]
fn a_pool_is_deleted_empty_or_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let (s, p) = open(tmp.path());
    let other = s.open_pool("BP-2", 8, "CID-test", 1).expect("pool");
    assert_eq!(s.remove_pool("BP-2", false).unwrap(), Some(0), "an empty pool goes");
    assert!(s.pool("BP-2").is_none() && !s.pool_dir(0, "BP-2").exists());
    drop(other);
    let b = Block {
        id: 1 << 30,
        gen_stamp: 1001,
        num_bytes: 0,
    };
    let bytes = data(1000, 3);
    let mut w = s.create_replica(&p, b, false).unwrap();
    w.write_packet(&s, 0, &bytes, &checksums(&bytes)).unwrap();
    drop(w);
    assert_eq!(s.remove_pool("BP-1", false).unwrap(), None, "kept: it holds a replica");
    assert!(s.pool("BP-1").is_some() && s.pool_dir(0, "BP-1").join("VERSION").exists());
    assert_eq!(s.remove_pool("BP-1", true).unwrap(), Some(1), "forced");
    assert!(s.pool("BP-1").is_none() && !s.pool_dir(0, "BP-1").exists());
    assert_eq!(s.remove_pool("BP-9", false).unwrap(), Some(0), "a pool it never had");
    drop(s);
    let again = Storage::open(&[tmp.path().to_path_buf()], 0).unwrap();
    assert!(again.pools().is_empty(), "nothing of either pool is left to load");
}
