//! The RocksDB store's own tests: its caches' coherence with commits,
//! views, imports and restores, and its walk against the lookup-per-name walk.

use super::*;
use crate::inode::Inode;
use crate::store::Walk;
use compact_str::CompactString;
use raftfs_proto::Permission;

fn dir(id: InodeId, children: u64) -> Inode {
    let mut d = Inode::new_dir(id, crate::inode::ROOT_ID, Permission(0o755), "u", "g", 1);
    d.kind = crate::inode::InodeKind::Directory { children, quota: None };
    d
}

fn put(s: &RocksStore, i: Inode) {
    let mut b = WriteBatch::default();
    b.inodes.insert(i.id, Some(i));
    s.commit(b).expect("commit");
}

#[test]
fn directory_cache_follows_commits() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let s = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
    put(&s, dir(20000, 1));
    assert_eq!(s.inode(20000).unwrap().unwrap().children(), 1); // now cached
    put(&s, dir(20000, 2));
    assert_eq!(
        s.inode(20000).unwrap().unwrap().children(),
        2,
        "a commit updates the cached copy"
    );
    let mut b = WriteBatch::default();
    b.inodes.insert(20000, None);
    s.commit(b).unwrap();
    assert_eq!(s.inode(20000).unwrap(), None, "a delete evicts");
    put(&s, dir(20001, 5));
    assert_eq!(s.inode(20001).unwrap().unwrap().children(), 5);
    s.import(Image {
        inodes: vec![dir(20001, 9)],
        ..Image::default()
    })
    .unwrap();
    assert_eq!(
        s.inode(20001).unwrap().unwrap().children(),
        9,
        "an import clears the cache"
    );
}

#[test]
fn a_latest_view_follows_commits_and_keeps_its_generation_across_a_restore() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let s = RocksStore::open(&tmp.path().join("db"), &RocksStoreOptions::default()).expect("open");
    put(&s, dir(20000, 1));
    let latest = s.latest_view();
    assert_eq!(latest.inode(20000).unwrap().unwrap().children(), 1);
    put(&s, dir(20000, 2));
    assert_eq!(
        latest.inode(20000).unwrap().unwrap().children(),
        2,
        "each read sees the latest commit, through the cache"
    );
    // A checkpoint of this state, then a change, then the checkpoint restored.
    let cp = tmp.path().join("cp");
    s.checkpoint(&cp, &[]).expect("checkpoint");
    put(&s, dir(20000, 3));
    put(&s, dir(20001, 7));
    assert_eq!(latest.inode(20000).unwrap().unwrap().children(), 3);
    s.restore(&cp).expect("restore");
    assert_eq!(
        s.latest_view().inode(20000).unwrap().unwrap().children(),
        2,
        "a view made after the restore reads the restored state"
    );
    assert_eq!(s.latest_view().inode(20001).unwrap(), None);
    put(&s, dir(20000, 4)); // cached again, in the new generation
    assert_eq!(
        latest.inode(20000).unwrap().unwrap().children(),
        3,
        "a view made before the restore reads its own generation, not the new one's cache"
    );
    assert_eq!(latest.inode(20001).unwrap().unwrap().children(), 7);
}

fn link(s: &RocksStore, parent: InodeId, name: &str, child: Option<InodeId>) {
    let mut b = WriteBatch::default();
    b.dentries.insert((parent, name.into()), child);
    s.commit(b).expect("commit");
}

#[test]
fn entry_cache_follows_commits() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let s = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
    put(&s, dir(20000, 1));
    put(&s, dir(20001, 0));
    link(&s, 20000, "d", Some(20001));
    s.inode(20001).unwrap(); // the directory is cached ...
    for _ in 0..2 {
        assert_eq!(s.child(20000, "d").unwrap(), Some(20001)); // ... and then its entry
    }
    assert_eq!(s.cache.read().entry(20000, "d"), Some(20001), "entry cached");
    link(&s, 20000, "d", None);
    assert_eq!(s.child(20000, "d").unwrap(), None, "an unlink evicts");
    link(&s, 20000, "d", Some(20002));
    assert_eq!(s.child(20000, "d").unwrap(), Some(20002), "a relink is seen");
    assert_eq!(
        s.cache.read().entry(20000, "d"),
        None,
        "entries of uncached inodes stay out"
    );
}

fn set_meta(s: &RocksStore, key: &str, value: Option<&[u8]>) {
    let mut b = WriteBatch::default();
    b.meta.insert(key.into(), value.map(<[u8]>::to_vec));
    s.commit(b).expect("commit");
}

#[test]
fn meta_cache_follows_commits_views_and_imports() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let s = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
    assert_eq!(s.meta("k").unwrap(), None);
    assert_eq!(s.cache.read().meta.get("k"), Some(&None), "an absent row is cached too");
    set_meta(&s, "k", Some(&[1]));
    assert_eq!(s.meta("k").unwrap(), Some(vec![1]), "a commit replaces the cached row");
    let v = s.view();
    set_meta(&s, "k", Some(&[2]));
    assert_eq!(
        v.meta("k").unwrap(),
        Some(vec![1]),
        "a view reads its own state, not the cache"
    );
    assert_eq!(s.view().meta("k").unwrap(), Some(vec![2]));
    drop(v);
    set_meta(&s, "k", None);
    assert_eq!(s.meta("k").unwrap(), None, "a delete is seen");
    s.import(Image {
        meta: vec![("k".into(), vec![9])],
        ..Image::default()
    })
    .unwrap();
    assert_eq!(s.meta("k").unwrap(), Some(vec![9]), "an import clears the cache");
}

fn retry_write(s: &RocksStore, call: u64, time_ms: i64, put: bool) {
    let mut b = WriteBatch::default();
    let w = if put {
        RetryWrite::Put {
            record: crate::store::RetryRecord {
                time_ms,
                result: vec![],
            },
            replaces: None,
        }
    } else {
        RetryWrite::Delete { time_ms }
    };
    b.retry.insert(("c".into(), call), w);
    s.commit(b).expect("commit");
}

fn older(v: &dyn ReadView, before_ms: i64) -> Vec<(i64, u64)> {
    let found = v.retry_older_than(before_ms, 10).expect("scan the retry table");
    found.into_iter().map(|(t, (_, call))| (t, call)).collect()
}

#[test]
fn the_retry_floor_never_hides_a_record() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let s = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
    assert_eq!(older(&s, 50), vec![]);
    assert_eq!(
        s.cache.read().retry_floor_ms,
        Some(i64::MAX),
        "an empty table has no oldest record"
    );
    retry_write(&s, 1, 100, true);
    assert_eq!(s.cache.read().retry_floor_ms, Some(100), "a put lowers the floor");
    assert_eq!(older(&s, 50), vec![]);
    retry_write(&s, 2, 10, true);
    assert_eq!(older(&s, 50), vec![(10, 2)], "a record below the old floor is found");
    let v = s.view();
    retry_write(&s, 2, 10, false);
    assert_eq!(
        older(&*v, 50),
        vec![(10, 2)],
        "a view from before the delete still finds it"
    );
    drop(v);
    assert_eq!(older(&s, 50), vec![]);
    assert_eq!(
        s.cache.read().retry_floor_ms,
        Some(100),
        "a scan that took nothing learns the oldest time"
    );
    assert_eq!(older(&s, 101), vec![(100, 1)]);
    retry_write(&s, 1, 100, false);
    assert_eq!(older(&s, i64::MAX), vec![]);
    retry_write(&s, 3, 5, true);
    assert_eq!(older(&s, 6), vec![(5, 3)]);
    s.import(Image {
        retry: vec![(
            ("c".into(), 4),
            crate::store::RetryRecord {
                time_ms: 1,
                result: vec![],
            },
        )],
        ..Image::default()
    })
    .unwrap();
    assert_eq!(s.cache.read().retry_floor_ms, None, "an import forgets the floor");
    assert_eq!(older(&s, 2), vec![(1, 4)]);
}

fn file(id: InodeId, parent: InodeId) -> Inode {
    let mut f = dir(id, 0);
    f.parent = parent;
    f.kind = crate::inode::InodeKind::File {
        replication: 3,
        block_size: 1 << 27,
        length: 0,
        lease_holder: None,
        blocks: vec![],
    };
    f
}

fn walk_ids(v: &dyn ReadView, names: &[&str]) -> (Walk, Vec<InodeId>) {
    let names: Vec<CompactString> = names.iter().map(|n| (*n).into()).collect();
    let mut inodes = vec![v.inode(20000).unwrap().expect("the start inode")];
    let end = v.walk(&names, &mut inodes).expect("walk");
    (end, inodes.iter().map(|i| i.id).collect())
}

/// A store's own walk (the memory store's, the RocksDB cache's) ends as
/// the lookup-per-name walk does, and a view walks its own state.
#[test]
fn walks_agree_with_the_plain_walk_on_both_stores() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let rocks = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
    let mem = crate::store::MemStore::new();
    for (s, snapshot_views) in [(&rocks as &dyn Store, true), (&mem as &dyn Store, false)] {
        let mut b = WriteBatch::default();
        b.inodes.insert(20000, Some(dir(20000, 2)));
        b.inodes.insert(20001, Some(dir(20001, 1)));
        b.inodes.insert(20002, Some(file(20002, 20001)));
        b.dentries.insert((20000, "d".into()), Some(20001));
        b.dentries.insert((20001, "f".into()), Some(20002));
        b.dentries.insert((20000, "g".into()), Some(30000));
        s.commit(b).expect("commit");
        // Warm the RocksDB cache along the path.
        s.inode(20001).unwrap();
        s.child(20000, "d").unwrap();
        let v = s.view();
        let cases: [(&[&str], Walk, &[InodeId]); 5] = [
            (&["d", "f"], Walk::Ended, &[20000, 20001, 20002]),
            (&["d", "nope", "x"], Walk::Ended, &[20000, 20001]),
            (&["d", "f", "x"], Walk::ThroughFile, &[20000, 20001, 20002]),
            (&["d", "f", "x", "y"], Walk::ThroughFile, &[20000, 20001, 20002]),
            (
                &["g"],
                Walk::Dangling {
                    parent: 20000,
                    name: 0,
                    child: 30000,
                },
                &[20000],
            ),
        ];
        for (names, end, ids) in cases {
            assert_eq!(walk_ids(&*v, names), (end, ids.to_vec()), "{names:?}");
            let plain: Vec<CompactString> = names.iter().map(|n| (*n).into()).collect();
            let mut inodes = vec![v.inode(20000).unwrap().unwrap()];
            assert_eq!(crate::store::walk_each(&*v, &plain, &mut inodes).unwrap(), end);
        }
        // A commit that removes the directory: a RocksDB view (a
        // snapshot) still walks it; the memory store's view holds the
        // read lock, so no commit can come while it lives.
        let mut b = WriteBatch::default();
        b.dentries.insert((20000, "d".into()), None);
        b.dentries.insert((20001, "f".into()), None);
        b.inodes.insert(20001, None);
        b.inodes.insert(20002, None);
        if snapshot_views {
            s.commit(b).expect("commit");
            let old = walk_ids(&*v, &["d", "f"]).1;
            assert_eq!(old, vec![20000, 20001, 20002], "the view predates the delete");
            drop(v);
        } else {
            drop(v);
            s.commit(b).expect("commit");
        }
        assert_eq!(walk_ids(&*s.view(), &["d", "f"]), (Walk::Ended, vec![20000]));
    }
}

#[test]
fn a_view_sees_one_committed_state() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let s = RocksStore::open(tmp.path(), &RocksStoreOptions::default()).expect("open");
    put(&s, dir(20000, 1));
    put(&s, dir(20001, 0));
    link(&s, 20000, "d", Some(20001));
    // Warm the cache, so the view could be tempted to read it.
    s.inode(20001).unwrap();
    s.child(20000, "d").unwrap();
    let v = s.view();
    // A commit on another thread removes the entry and its inode at once.
    std::thread::scope(|t| {
        t.spawn(|| {
            let mut b = WriteBatch::default();
            b.dentries.insert((20000, "d".into()), None);
            b.inodes.insert(20001, None);
            b.inodes.insert(20000, Some(dir(20000, 0)));
            s.commit(b).expect("commit");
        });
    });
    assert_eq!(
        v.child(20000, "d").unwrap(),
        Some(20001),
        "the view predates the delete"
    );
    assert!(v.inode(20001).unwrap().is_some(), "... so the inode is there too");
    assert_eq!(v.inode(20000).unwrap().unwrap().children(), 1);
    assert_eq!(v.children(20000, "", 10).unwrap().len(), 1);
    drop(v);
    let now = s.view();
    assert_eq!(now.child(20000, "d").unwrap(), None);
    assert_eq!(now.inode(20001).unwrap(), None);
    assert_eq!(now.inode(20000).unwrap().unwrap().children(), 0);
}

#[test]
fn a_checkpoint_restores_into_a_new_generation_under_live_views() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let root = tmp.path().join("ns");
    let s = RocksStore::open(&root, &RocksStoreOptions::default()).expect("open");
    put(&s, dir(20000, 1));
    link(&s, 20000, "d", Some(20001));
    let cp = tmp.path().join("cp");
    let values = s.checkpoint(&cp, &["absent"]).expect("checkpoint");
    assert_eq!(values, vec![None]);
    let image = s.export().unwrap();
    // Move on past the checkpoint; a view of that state stays open.
    put(&s, dir(20000, 7));
    link(&s, 20000, "e", Some(20002));
    let old_view = s.view();
    s.restore(&cp).expect("restore");
    assert_eq!(s.export().unwrap(), image, "the store is the checkpoint again");
    assert_eq!(s.inode(20000).unwrap().unwrap().children(), 1);
    assert_eq!(
        old_view.inode(20000).unwrap().unwrap().children(),
        7,
        "a view of the old generation reads it to the end"
    );
    assert!(root.join("gen-0").exists(), "the old generation stays while read");
    drop(old_view);
    assert!(!root.join("gen-0").exists(), "... and goes with its last reader");
    // The restored store is durable and the checkpoint untouched.
    put(&s, dir(20003, 0));
    drop(s);
    let s = RocksStore::open(&root, &RocksStoreOptions::default()).expect("reopen");
    assert!(
        s.inode(20003).unwrap().is_some(),
        "writes after the restore survive a reopen"
    );
    assert_eq!(RocksStore::export_checkpoint(&cp).unwrap(), image);
    // Either store restores either format.
    let mem = crate::store::MemStore::new();
    mem.restore(&cp).expect("memory store restores a RocksDB checkpoint");
    assert_eq!(mem.export().unwrap(), image);
    let mem_cp = tmp.path().join("mem-cp");
    mem.checkpoint(&mem_cp, &[]).expect("memory checkpoint");
    s.restore(&mem_cp).expect("RocksDB restores an image");
    assert_eq!(s.export().unwrap(), image);
}
