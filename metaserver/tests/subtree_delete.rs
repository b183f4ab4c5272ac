//! A recursive delete of a large subtree in `--exec leader`
//! (`namespace::reclaim`): one small entry detaches it (gone for every
//! reader, quota and counts settled), then bounded reclaim entries delete
//! what was under it and free its blocks; a restart in the middle goes on
//! where the last applied entry left it. Both stores.

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::inode::DETACHED_ID;
use raftfs_metaserver::namespace::reclaim::detached_inodes;
use raftfs_metaserver::namespace::MAX_RECLAIM_INODES_PER_ENTRY;
use raftfs_metaserver::store::{MemStore, RocksStore, RocksStoreOptions, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{Block, CallCtx, ContentSummary, FsError, Op, OpResult, Permission, QuotaSetting};

/// Directories per level and files per leaf directory of the tree deleted.
const FANOUT: u64 = 6;
const FILES_PER_DIR: u64 = 20;
const MB: u64 = 1 << 20;

struct T<S: Store> {
    e: Engine<S>,
    t: i64,
    call: u64,
}

impl<S: Store> T<S> {
    fn run_as(&mut self, user: &str, op: Op) -> Result<OpResult, FsError> {
        self.t += 10;
        self.call += 1;
        let ctx = CallCtx {
            client_id: "c1".into(),
            call_id: self.call,
            user: user.into(),
            groups: vec![],
            routed_by: 0,
        };
        self.e.execute(&ctx, &op, self.t)
    }

    fn run(&mut self, op: Op) -> Result<OpResult, FsError> {
        self.run_as("hdfs", op)
    }

    fn summary(&mut self, path: &str) -> ContentSummary {
        match self.run(Op::GetContentSummary { path: path.into() }) {
            Ok(OpResult::Summary(s)) => s,
            other => panic!("summary of {path}: {other:?}"),
        }
    }

    /// /q/big/d{a}/d{b}/f{n}: FANOUT² leaf directories of FILES_PER_DIR
    /// files, every tenth file with a block; returns the block ids.
    fn build(&mut self) -> Vec<u64> {
        let mut blocks = Vec::new();
        for a in 0..FANOUT {
            for b in 0..FANOUT {
                for n in 0..FILES_PER_DIR {
                    let path = format!("/q/big/d{a}/d{b}/f{n}");
                    let created = self.run(Op::Create {
                        path: path.clone(),
                        permission: Permission(0o644),
                        overwrite: false,
                        create_parent: true,
                        replication: 3,
                        block_size: MB,
                    });
                    assert!(matches!(created, Ok(OpResult::Status(_))), "{path}: {created:?}");
                    let mut last = None;
                    if n % 10 == 0 {
                        match self.run(Op::AddBlock {
                            path: path.clone(),
                            previous: None,
                            excluded: vec![],
                        }) {
                            Ok(OpResult::Located(lb)) => {
                                blocks.push(lb.block.id);
                                last = Some(Block {
                                    num_bytes: 4096,
                                    ..lb.block
                                });
                            }
                            other => panic!("addBlock {path}: {other:?}"),
                        }
                    }
                    assert_eq!(self.run(Op::Complete { path, last }), Ok(OpResult::Bool(true)));
                }
            }
        }
        blocks
    }
}

/// Files, directories under /q/big (itself included).
fn expected_tree() -> (u64, u64) {
    (FANOUT * FANOUT * FILES_PER_DIR, 1 + FANOUT + FANOUT * FANOUT)
}

fn check<S: Store>(store: S, reopen: impl FnOnce(Engine<S>) -> Engine<S>) {
    let info = test_format_info("hdfs", 1_000);
    let mut t = T {
        e: Engine::open(store, &info, ExecMode::Leader).unwrap(),
        t: 1_000,
        call: 0,
    };
    t.run(Op::Mkdirs {
        path: "/q/other".into(),
        permission: Permission(0o755),
        create_parent: true,
    })
    .unwrap();
    t.run(Op::SetQuota {
        path: "/q".into(),
        namespace: QuotaSetting::Set(100_000),
        space: QuotaSetting::Set(1 << 40),
    })
    .unwrap();
    let blocks = t.build();
    let (files, dirs) = expected_tree();
    let before = t.summary("/q");
    assert_eq!(before.file_count, files);
    let big_id = match t.run(Op::GetFileInfo { path: "/q/big".into() }) {
        Ok(OpResult::Status(Some(s))) => s.file_id,
        other => panic!("{other:?}"),
    };
    let a_file_id = match t.run(Op::GetFileInfo {
        path: "/q/big/d1/d2/f3".into(),
    }) {
        Ok(OpResult::Status(Some(s))) => s.file_id,
        other => panic!("{other:?}"),
    };

    // Another user may not delete what it cannot access all of.
    t.run(Op::SetPermission {
        path: "/q".into(),
        permission: Permission(0o777),
    })
    .unwrap();
    t.run(Op::SetPermission {
        path: "/q/big/d3".into(),
        permission: Permission(0o700),
    })
    .unwrap();
    t.run(Op::SetPermission {
        path: "/q/big".into(),
        permission: Permission(0o777),
    })
    .unwrap();
    let refused = t.run_as(
        "alice",
        Op::Delete {
            path: "/q/big".into(),
            recursive: true,
        },
    );
    assert!(matches!(refused, Err(FsError::AccessControl(_))), "{refused:?}");

    // The delete: one entry, and the subtree is gone at once.
    let (commits0, writes0) = t.e.batch_stats();
    assert_eq!(
        t.run(Op::Delete {
            path: "/q/big".into(),
            recursive: true
        }),
        Ok(OpResult::Bool(true))
    );
    assert_eq!(
        t.e.batch_stats(),
        (commits0 + 1, writes0 + 1),
        "the delete is one small commit"
    );
    assert_eq!(
        t.run(Op::GetFileInfo { path: "/q/big".into() }),
        Ok(OpResult::Status(None))
    );
    let after = t.summary("/q");
    assert_eq!(after.file_count, 0);
    assert_eq!(after.directory_count, 2, "/q and /q/other");
    // Quota usage settled with the delete: /q counts itself and /q/other.
    let usage = t.summary("/q");
    assert_eq!((usage.quota, usage.space_consumed), (100_000, 0));
    for by_id in [big_id, a_file_id] {
        assert!(
            matches!(
                t.run(Op::GetFileInfo {
                    path: format!("/.reserved/.inodes/{by_id}")
                }),
                Err(FsError::FileNotFound(_))
            ),
            "inode {by_id} of the detached subtree is not found by id"
        );
    }
    // Not reclaimed yet: the inodes and blocks are still stored.
    assert_eq!(
        detached_inodes(t.e.store()).unwrap(),
        files + dirs,
        "/q/big and everything under it"
    );
    assert!(t.e.store().block(blocks[0]).unwrap().is_some());
    // Writes go on meanwhile, and a name may be reused at once.
    t.run(Op::Mkdirs {
        path: "/q/big/again".into(),
        permission: Permission(0o755),
        create_parent: true,
    })
    .unwrap();

    // Reclaim, a bounded step at a time; halfway, reopen the store.
    let mut steps = 0;
    let mut reclaimed = 0;
    let mut halfway = Some(reopen);
    loop {
        let (c0, w0) = t.e.batch_stats();
        let n = t.e.reclaim_step(t.t).unwrap();
        if n == 0 {
            break;
        }
        assert!(n <= MAX_RECLAIM_INODES_PER_ENTRY, "a step is bounded: {n}");
        assert_eq!(t.e.batch_stats(), (c0 + 1, w0 + 1), "one entry per step");
        reclaimed += n;
        steps += 1;
        let s = t.summary("/q");
        assert_eq!(
            (s.file_count, s.directory_count),
            (0, 4),
            "every step leaves the tree whole"
        );
        if steps == 2 {
            if let Some(reopen) = halfway.take() {
                t.e = reopen(t.e);
            }
        }
    }
    assert!(steps >= 3, "{files} files in more than one step: {steps} steps");
    assert!(reclaimed as u64 >= files + dirs);
    assert_eq!(detached_inodes(t.e.store()).unwrap(), 0);
    assert!(t.e.store().children(DETACHED_ID, "", 10).unwrap().is_empty());
    for b in &blocks {
        assert_eq!(t.e.store().block(*b).unwrap(), None, "block {b} freed");
    }
    assert_eq!(t.e.store().inode(a_file_id).unwrap(), None);
    let s = t.summary("/");
    assert_eq!(
        (s.file_count, s.directory_count),
        (0, 5),
        "/, /q, /q/other, /q/big, /q/big/again"
    );
    // Every stored inode is the tree's (plus the empty detached directory).
    assert_eq!(t.e.store().export().unwrap().inodes.len(), 6);
}

#[test]
fn subtree_delete_memory() {
    check(MemStore::new(), |e| e);
}

#[test]
fn subtree_delete_rocksdb_reopened_halfway() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_path_buf();
    check(
        RocksStore::open(&path, &RocksStoreOptions::default()).unwrap(),
        |e: Engine<RocksStore>| {
            drop(e);
            let store = RocksStore::open(&path, &RocksStoreOptions::default()).unwrap();
            Engine::open(store, &test_format_info("hdfs", 1_000), ExecMode::Leader).unwrap()
        },
    );
}

/// Through a single-member nameservice: the member's own reclaimer empties
/// what the delete detached, and goes on after a restart in the middle.
#[test]
fn a_member_reclaims_in_the_background_and_after_a_restart() {
    use raftfs_metaserver::server::StoreKind;
    use raftfs_metaserver::testkit::{open_single_member, single_member};
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let member = single_member(dir.path(), StoreKind::Rocksdb, "hdfs").await.unwrap();
        let ctx = |call| CallCtx {
            client_id: "c".into(),
            call_id: call,
            user: "hdfs".into(),
            groups: vec![],
            routed_by: 0,
        };
        let files = 3 * MAX_RECLAIM_INODES_PER_ENTRY as u64;
        let mut call = 0;
        for n in 0..files {
            call += 1;
            let op = Op::Mkdirs {
                path: format!("/t/d{}/e{n}", n % 7),
                permission: Permission(0o755),
                create_parent: true,
            };
            member.call(ctx(call), op).await.unwrap();
        }
        call += 1;
        let del = Op::Delete {
            path: "/t".into(),
            recursive: true,
        };
        assert_eq!(member.call(ctx(call), del).await, Ok(OpResult::Bool(true)));
        // Stop it as soon as some, not all, of it is reclaimed.
        let store = member.shared().store.clone();
        let total = detached_inodes(&*store.view()).unwrap();
        assert!(total >= files, "detached {total}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while detached_inodes(&*store.view()).unwrap() == total && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        member.shutdown().await;
        drop(member);
        drop(store);
        let member = open_single_member(
            dir.path(),
            StoreKind::Rocksdb,
            ExecMode::Leader,
            raftfs_metaserver::exec::batcher::MAX_OPS_PER_ENTRY,
        )
        .await
        .unwrap();
        let store = member.shared().store.clone();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            let left = detached_inodes(&*store.view()).unwrap();
            if left == 0 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{left} inodes left to reclaim");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        assert_eq!(
            member.call(ctx(call + 1), Op::GetFileInfo { path: "/t".into() }).await,
            Ok(OpResult::Status(None))
        );
        member.shutdown().await;
    });
}
