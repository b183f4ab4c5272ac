//! The replicated half of the data path at the namespace level, against
//! both stores: which blocks make up a file, their stamps and lengths, the
//! derived block and lease tables, leases' soft limit, lease recovery,
//! space quota charges of blocks being written, and concat and truncate,
//! which move and cut blocks.

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::namespace::data::{RECOVERY_HOLDER, TRUNCATE_HOLDER};
use raftfs_metaserver::namespace::{FIRST_BLOCK_ID, FIRST_GEN_STAMP};
use raftfs_metaserver::store::{BlockRecord, MemStore, RocksStore, RocksStoreOptions, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{Block, CallCtx, FsError, Op, OpResult, Permission, QuotaSetting};

const MB: u64 = 1 << 20;

struct T<S: Store> {
    e: Engine<S>,
    t: i64,
    call: u64,
}

fn ctx(client: &str, call: u64) -> CallCtx {
    CallCtx {
        client_id: client.into(),
        call_id: call,
        user: "hdfs".into(),
        groups: vec![],
        routed_by: 0,
    }
}

impl<S: Store> T<S> {
    fn new(store: S, mode: ExecMode) -> T<S> {
        let info = test_format_info("hdfs", 1_000);
        T {
            e: Engine::open(store, &info, mode).unwrap(),
            t: 1_000,
            call: 0,
        }
    }

    fn run(&mut self, client: &str, op: Op) -> Result<OpResult, FsError> {
        self.t += 1000;
        self.call += 1;
        self.e.execute(&ctx(client, self.call), &op, self.t)
    }

    fn create(&mut self, client: &str, path: &str) {
        let op = Op::Create {
            path: path.into(),
            permission: Permission(0o644),
            overwrite: false,
            create_parent: true,
            replication: 3,
            block_size: MB,
        };
        self.run(client, op).unwrap();
    }

    fn add_block(&mut self, client: &str, path: &str, previous: Option<Block>) -> Result<Block, FsError> {
        match self.run(
            client,
            Op::AddBlock {
                path: path.into(),
                previous,
                excluded: vec![],
            },
        )? {
            OpResult::Located(lb) => Ok(lb.block),
            other => panic!("addBlock answered {other:?}"),
        }
    }

    fn status(&mut self, path: &str) -> raftfs_proto::FileStatus {
        match self.run("reader", Op::GetFileInfo { path: path.into() }).unwrap() {
            OpResult::Status(Some(s)) => s,
            other => panic!("{other:?}"),
        }
    }

    fn block_row(&self, id: u64) -> Option<BlockRecord> {
        self.e.store().block(id).unwrap()
    }
}

fn with_len(b: Block, n: u64) -> Block {
    Block { num_bytes: n, ..b }
}

fn lifecycle<S: Store>(mut t: T<S>) {
    t.create("c1", "/f");
    let lease = t.e.store().lease("c1").unwrap().expect("creating a file takes a lease");
    assert_eq!(lease.open_files, 1);
    assert_eq!(t.e.store().lease_files("c1", 10).unwrap().len(), 1);

    let b1 = t.add_block("c1", "/f", None).unwrap();
    assert_eq!(
        (b1.id, b1.gen_stamp, b1.num_bytes),
        (FIRST_BLOCK_ID, FIRST_GEN_STAMP, 0)
    );
    let row = t.block_row(b1.id).expect("block row");
    assert!(row.under_construction && row.replication == 3);
    // Only the holder may add blocks; the previous block must be the last one.
    let e = t.add_block("c2", "/f", Some(b1)).unwrap_err();
    assert!(matches!(e, FsError::LeaseExpired(_)), "{e:?}");
    let e = t.add_block("c1", "/f", None).unwrap_err();
    assert!(matches!(e, FsError::InvalidArgument(_)), "{e:?}");
    let b2 = t.add_block("c1", "/f", Some(with_len(b1, MB))).unwrap();
    assert_eq!(b2.id, b1.id + 1);
    let row1 = t.block_row(b1.id).unwrap();
    assert!(!row1.under_construction && row1.num_bytes == MB, "{row1:?}");

    // Pipeline recovery: a new stamp, then the block takes it.
    let nb = match t
        .run(
            "c1",
            Op::UpdateBlockForPipeline {
                path: "/f".into(),
                block: b2,
            },
        )
        .unwrap()
    {
        OpResult::Located(lb) => lb.block,
        other => panic!("{other:?}"),
    };
    assert!(nb.gen_stamp > b2.gen_stamp);
    let bad = Block {
        gen_stamp: nb.gen_stamp + 100,
        ..nb
    };
    let e = t
        .run(
            "c1",
            Op::UpdatePipeline {
                path: "/f".into(),
                old: b2,
                new: bad,
                nodes: vec![],
            },
        )
        .unwrap_err();
    assert!(matches!(e, FsError::InvalidArgument(_)), "an unallocated stamp: {e:?}");
    t.run(
        "c1",
        Op::UpdatePipeline {
            path: "/f".into(),
            old: b2,
            new: with_len(nb, 10),
            nodes: vec![],
        },
    )
    .unwrap();
    assert_eq!(t.block_row(b2.id).unwrap().gen_stamp, nb.gen_stamp);

    // complete commits the last length and drops the lease.
    let r = t.run(
        "c1",
        Op::Complete {
            path: "/f".into(),
            last: Some(with_len(nb, 77)),
        },
    );
    assert_eq!(r.unwrap(), OpResult::Bool(true));
    let s = t.status("/f");
    assert_eq!((s.length, s.under_construction), (MB + 77, false));
    assert!(t.e.store().lease("c1").unwrap().is_none(), "no open file, no lease");
    let lbs = match t
        .run(
            "reader",
            Op::GetBlockLocations {
                path: "/f".into(),
                offset: MB,
                length: 1,
            },
        )
        .unwrap()
    {
        OpResult::Blocks(l) => l,
        other => panic!("{other:?}"),
    };
    assert_eq!(lbs.blocks.len(), 1, "only the block holding the range");
    assert_eq!((lbs.blocks[0].offset, lbs.file_length), (MB, MB + 77));

    // Append reopens the partial last block for another client.
    let last = match t.run("c2", Op::Append { path: "/f".into() }).unwrap() {
        OpResult::Appended { last, .. } => last.expect("a partial last block"),
        other => panic!("{other:?}"),
    };
    assert_eq!((last.block.id, last.offset), (b2.id, MB));
    assert!(t.block_row(b2.id).unwrap().under_construction);
    assert_eq!(t.e.store().lease("c2").unwrap().unwrap().open_files, 1);

    // Another client within the soft limit: refused; the lease is recovered by recoverLease.
    let e = t.run("c3", Op::Append { path: "/f".into() }).unwrap_err();
    assert!(matches!(e, FsError::AlreadyBeingCreated(_)), "{e:?}");
    let started = t.run("c3", Op::RecoverLease { path: "/f".into() }).unwrap();
    let OpResult::RecoveryStarted {
        inode,
        block,
        recovery_id,
    } = started
    else {
        panic!("{started:?}")
    };
    assert_eq!(block.id, b2.id);
    assert_eq!(t.e.store().lease(RECOVERY_HOLDER).unwrap().unwrap().open_files, 1);
    assert!(t.e.store().lease("c2").unwrap().is_none());
    let e = t.run("c3", Op::Append { path: "/f".into() }).unwrap_err();
    assert!(matches!(e, FsError::RecoveryInProgress(_)), "{e:?}");
    let sync = Op::CommitBlockSynchronization {
        path_inode: inode,
        block,
        new_gen_stamp: recovery_id,
        new_length: 70,
        nodes: vec![],
    };
    t.run("hdfs-dn", sync).unwrap();
    let s = t.status("/f");
    assert_eq!((s.length, s.under_construction), (MB + 70, false));
    assert_eq!(t.block_row(b2.id).unwrap().gen_stamp, recovery_id);
    assert!(t.e.store().lease(RECOVERY_HOLDER).unwrap().is_none());

    // Deleting a file deletes its block rows.
    t.run(
        "c1",
        Op::Delete {
            path: "/f".into(),
            recursive: false,
        },
    )
    .unwrap();
    assert!(t.block_row(b1.id).is_none() && t.block_row(b2.id).is_none());
}

fn soft_limit_and_quota<S: Store>(mut t: T<S>) {
    // Past the soft limit, another client's create asks for a recovery.
    t.create("c1", "/s");
    t.add_block("c1", "/s", None).unwrap();
    t.t += 61_000;
    let op = Op::Create {
        path: "/s".into(),
        permission: Permission(0o644),
        overwrite: true,
        create_parent: true,
        replication: 3,
        block_size: MB,
    };
    let e = t.run("c2", op).unwrap_err();
    assert!(matches!(e, FsError::RecoveryInProgress(_)), "{e:?}");
    // A renewal keeps the lease for another soft limit.
    t.run("c1", Op::RenewLease).unwrap();
    let op = Op::Append { path: "/s".into() };
    let e = t.run("c2", op).unwrap_err();
    assert!(matches!(e, FsError::AlreadyBeingCreated(_)), "{e:?}");

    // A block being written is charged whole; its commit charges its length.
    t.run(
        "hdfs",
        Op::Mkdirs {
            path: "/q".into(),
            permission: Permission(0o755),
            create_parent: true,
        },
    )
    .unwrap();
    t.run(
        "hdfs",
        Op::SetQuota {
            path: "/q".into(),
            namespace: QuotaSetting::Keep,
            space: QuotaSetting::Set(4 * MB),
        },
    )
    .unwrap();
    t.create("c1", "/q/a");
    let b = t.add_block("c1", "/q/a", None).unwrap();
    t.create("c1", "/q/b");
    let e = t.add_block("c1", "/q/b", None).unwrap_err();
    assert!(matches!(e, FsError::DSQuotaExceeded(_)), "{e:?}");
    t.run(
        "c1",
        Op::Complete {
            path: "/q/a".into(),
            last: Some(with_len(b, 10)),
        },
    )
    .unwrap();
    t.add_block("c1", "/q/b", None).expect("room again after the commit");
    match t.run("x", Op::GetContentSummary { path: "/q".into() }).unwrap() {
        OpResult::Summary(s) => assert_eq!((s.length, s.space_consumed), (10, 30 + 3 * MB)),
        other => panic!("{other:?}"),
    }
    // Abandoning the block gives its charge back.
    let lb = t.add_block("c1", "/q/b", None);
    assert!(lb.is_err(), "the last block must be the previous one");
    let b = match t
        .run(
            "reader",
            Op::GetBlockLocations {
                path: "/q/b".into(),
                offset: 0,
                length: u64::MAX,
            },
        )
        .unwrap()
    {
        OpResult::Blocks(l) => l.blocks[0].block,
        other => panic!("{other:?}"),
    };
    t.run(
        "c1",
        Op::AbandonBlock {
            path: "/q/b".into(),
            block: b,
        },
    )
    .unwrap();
    assert!(t.block_row(b.id).is_none());
    match t.run("x", Op::GetContentSummary { path: "/q".into() }).unwrap() {
        OpResult::Summary(s) => assert_eq!(s.space_consumed, 30),
        other => panic!("{other:?}"),
    }
}

impl<S: Store> T<S> {
    /// A closed file at `path` of blocks `lens` bytes long.
    fn closed_file(&mut self, path: &str, repl: u16, block_size: u64, lens: &[u64]) -> Vec<Block> {
        let op = Op::Create {
            path: path.into(),
            permission: Permission(0o644),
            overwrite: false,
            create_parent: true,
            replication: repl,
            block_size,
        };
        self.run("w", op).unwrap();
        let mut blocks: Vec<Block> = Vec::new();
        for &len in lens {
            let b = self.add_block("w", path, blocks.last().copied()).unwrap();
            blocks.push(with_len(b, len));
        }
        let last = blocks.last().copied();
        let done = self
            .run(
                "w",
                Op::Complete {
                    path: path.into(),
                    last,
                },
            )
            .unwrap();
        assert_eq!(done, OpResult::Bool(true));
        blocks
    }

    fn concat(&mut self, user: &str, target: &str, sources: &[&str]) -> Result<OpResult, FsError> {
        self.t += 1000;
        self.call += 1;
        let ctx = CallCtx {
            user: user.into(),
            ..ctx("c", self.call)
        };
        let op = Op::Concat {
            target: target.into(),
            sources: sources.iter().map(|s| s.to_string()).collect(),
        };
        self.e.execute(&ctx, &op, self.t)
    }

    fn located(&mut self, path: &str) -> Vec<(u64, u64, u64)> {
        let op = Op::GetBlockLocations {
            path: path.into(),
            offset: 0,
            length: u64::MAX,
        };
        match self.run("reader", op).unwrap() {
            OpResult::Blocks(l) => l
                .blocks
                .iter()
                .map(|b| (b.block.id, b.offset, b.block.num_bytes))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    fn ds_used(&mut self, dir: &str) -> (u64, u64) {
        let id = self.status(dir).file_id;
        let q = self.e.store().inode(id).unwrap().unwrap();
        let q = q.quota().expect("a quota");
        (q.ns_used, q.ds_used)
    }
}

/// concat moves the sources' blocks, in order, to the end of the target:
/// the block rows then name the target and its replication, the sources
/// are gone, lengths and offsets add up, quota usage follows (a source of
/// lower replication costs more space once it is the target's), and the
/// refusals that need blocks to reach are HDFS's.
fn concat_moves_blocks<S: Store>(mut t: T<S>) {
    let mkdir = Op::Mkdirs {
        path: "/d".into(),
        permission: Permission(0o755),
        create_parent: true,
    };
    t.run("hdfs", mkdir).unwrap();
    let quota = Op::SetQuota {
        path: "/d".into(),
        namespace: QuotaSetting::Set(100),
        space: QuotaSetting::Set(100 * MB),
    };
    t.run("hdfs", quota).unwrap();
    let tb = t.closed_file("/d/t", 3, MB, &[MB, 10]);
    let ab = t.closed_file("/d/a", 2, MB, &[MB, 5]);
    let bb = t.closed_file("/d/b", 3, MB, &[7]);
    let target_id = t.status("/d/t").file_id;
    let before = t.ds_used("/d");
    assert_eq!(before, (4, 3 * (MB + 10) + 2 * (MB + 5) + 3 * 7));

    // Refusals that need a non-empty source.
    t.closed_file("/d/big", 3, 2 * MB, &[9]);
    let e = t.concat("hdfs", "/d/t", &["/d/big"]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "concat: source file /d/big has preferred block size 2097152 which is greater than the target file's preferred block size 1048576"
    );
    let e = t.concat("hdfs", "/d/t", &["/d/a", "/d/a"]).unwrap_err();
    assert_eq!(e.to_string(), "concat: at least two of the source files are the same");

    assert_eq!(t.concat("hdfs", "/d/t", &["/d/a", "/d/b"]).unwrap(), OpResult::Unit);
    let s = t.status("/d/t");
    assert_eq!((s.length, s.under_construction), (MB + 10 + MB + 5 + 7, false));
    let ids: Vec<u64> = tb.iter().chain(&ab).chain(&bb).map(|b| b.id).collect();
    let located = t.located("/d/t");
    assert_eq!(located.iter().map(|l| l.0).collect::<Vec<_>>(), ids, "blocks in order");
    let offsets: Vec<u64> = located.iter().map(|l| l.1).collect();
    assert_eq!(offsets, vec![0, MB, MB + 10, 2 * MB + 10, 2 * MB + 15]);
    for id in &ids {
        let row = t.block_row(*id).expect("a moved block keeps its row");
        assert_eq!(
            (row.inode, row.replication, row.under_construction),
            (target_id, 3, false),
            "block {id}"
        );
    }
    for gone in ["/d/a", "/d/b"] {
        let r = t.run("reader", Op::GetFileInfo { path: gone.into() }).unwrap();
        assert_eq!(r, OpResult::Status(None), "{gone} is deleted");
    }
    assert_eq!(t.status("/d").children_num, 2, "t and big are left");
    // /d/a's bytes now count at replication 3.
    assert_eq!(t.ds_used("/d"), (3, 3 * (2 * MB + 22) + 3 * 9));
    match t.run("x", Op::GetContentSummary { path: "/d".into() }).unwrap() {
        OpResult::Summary(c) => assert_eq!((c.file_count, c.space_consumed), (2, 3 * (2 * MB + 22) + 3 * 9)),
        other => panic!("{other:?}"),
    }

    // A source of lower replication that would overrun the space quota.
    let quota = Op::SetQuota {
        path: "/d".into(),
        namespace: QuotaSetting::Keep,
        space: QuotaSetting::Set(3 * (2 * MB + 22) + 3 * 9 + 2 * MB),
    };
    t.run("hdfs", quota).unwrap();
    t.closed_file("/d/one", 1, MB, &[MB]);
    let e = t.concat("hdfs", "/d/t", &["/d/one"]).unwrap_err();
    assert!(matches!(e, FsError::DSQuotaExceeded(_)), "{e:?}");
    assert!(t.status("/d/one").length == MB, "a refused concat changes nothing");
}

/// truncate at a block boundary drops the blocks past it at once; inside
/// a block it cuts the committed length, opens the file for the truncate
/// holder and starts a recovery to that length, which a recoverLease
/// starts again and whose commit must bring exactly that length.
fn truncate_cuts_blocks<S: Store>(mut t: T<S>) {
    let blocks = t.closed_file("/f", 3, MB, &[MB, MB, 100]);
    let truncate = |new_length| Op::Truncate {
        path: "/f".into(),
        new_length,
    };
    let e = t.run("c", truncate(2 * MB + 101)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Cannot truncate to a larger file size. Current size: 2097252, truncate size: 2097253."
    );
    assert_eq!(t.run("c", truncate(2 * MB + 100)).unwrap(), OpResult::Bool(true));
    // At a boundary: done, the last block's row is gone.
    assert_eq!(t.run("c", truncate(2 * MB)).unwrap(), OpResult::Bool(true));
    assert!(t.block_row(blocks[2].id).is_none());
    let s = t.status("/f");
    assert_eq!((s.length, s.under_construction), (2 * MB, false));

    // Inside the first block: the second is dropped, the first is cut.
    let started = t.run("c", truncate(1000)).unwrap();
    let OpResult::TruncateStarted {
        inode,
        block,
        recovery_id,
    } = started
    else {
        panic!("{started:?}")
    };
    assert_eq!(
        (block.id, block.num_bytes, block.gen_stamp),
        (blocks[0].id, 1000, blocks[0].gen_stamp)
    );
    assert!(t.block_row(blocks[1].id).is_none());
    let s = t.status("/f");
    assert_eq!((s.length, s.under_construction), (1000, true));
    assert_eq!(t.e.store().lease_files(TRUNCATE_HOLDER, 10).unwrap(), vec![inode]);
    let e = t.run("c2", Op::Append { path: "/f".into() }).unwrap_err();
    assert!(matches!(e, FsError::RecoveryInProgress(_)), "{e:?}");
    let e = t.run("c2", truncate(10)).unwrap_err();
    assert!(matches!(e, FsError::RecoveryInProgress(_)), "{e:?}");
    // A recoverLease starts the same truncate again, with a newer stamp.
    let again = t.run("c3", Op::RecoverLease { path: "/f".into() }).unwrap();
    let OpResult::TruncateStarted {
        recovery_id: again_id,
        block: again_block,
        ..
    } = again
    else {
        panic!("{again:?}")
    };
    assert!(again_id > recovery_id && again_block == block);
    let commit = |len| Op::CommitBlockSynchronization {
        path_inode: inode,
        block,
        new_gen_stamp: again_id,
        new_length: len,
        nodes: vec![],
    };
    let e = t.run("hdfs", commit(MB)).unwrap_err();
    assert!(e.to_string().contains("a truncate cuts it to 1000 bytes"), "{e}");
    t.run("hdfs", commit(1000)).unwrap();
    let s = t.status("/f");
    assert_eq!((s.length, s.under_construction), (1000, false));
    let row = t.block_row(blocks[0].id).unwrap();
    assert_eq!(
        (row.num_bytes, row.gen_stamp, row.under_construction),
        (1000, again_id, false)
    );
    assert!(t.e.store().lease(TRUNCATE_HOLDER).unwrap().is_none());
    // A file open for writing is its writer's, for it and for others.
    t.create("w2", "/open");
    for who in ["w2", "c"] {
        let op = Op::Truncate {
            path: "/open".into(),
            new_length: 0,
        };
        let e = t.run(who, op).unwrap_err();
        assert!(matches!(e, FsError::AlreadyBeingCreated(_)), "{who}: {e:?}");
    }
    // Truncating to nothing drops every block at once.
    assert_eq!(t.run("c", truncate(0)).unwrap(), OpResult::Bool(true));
    assert!(t.block_row(blocks[0].id).is_none());
    assert_eq!(t.status("/f").length, 0);
}

/// Each scenario against both stores, in both execution modes.
macro_rules! on_both_stores_and_modes {
    ($($scenario:ident),* $(,)?) => {
        mod on_both_stores_and_modes {
            $(
                #[test]
                fn $scenario() {
                    for mode in [super::ExecMode::Apply, super::ExecMode::Leader] {
                        super::$scenario(super::T::new(super::MemStore::new(), mode));
                        let dir = tempfile::tempdir().unwrap();
                        let rocks = super::RocksStore::open(dir.path(), &super::RocksStoreOptions::default()).unwrap();
                        super::$scenario(super::T::new(rocks, mode));
                    }
                }
            )*
        }
    };
}

on_both_stores_and_modes!(
    lifecycle,
    soft_limit_and_quota,
    concat_moves_blocks,
    truncate_cuts_blocks
);
