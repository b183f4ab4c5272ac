//! The namespace and the block pool have separate locks (Bilibili's first
//! step, HDFS-17384): a namespace op never waits behind block-report
//! processing. Another thread holds the block manager's lock for seconds,
//! as a long block report would; meanwhile namespace reads and writes
//! through a member (`--exec leader` and `--exec apply`) answer within
//! milliseconds. (`raftfs bench blockreport` measures getFileInfo latency
//! during a real report of 1M replicas.)

use std::time::{Duration, Instant};

use raftfs_metaserver::exec::batcher::MAX_OPS_PER_ENTRY;
use raftfs_metaserver::exec::ExecMode;
use raftfs_metaserver::server::StoreKind;
use raftfs_metaserver::testkit::single_member_with;
use raftfs_proto::{CallCtx, Op, Permission};

/// How long the block manager's lock is held.
const HOLD: Duration = Duration::from_secs(3);
/// What a namespace op may take meanwhile (loaded CI machine included).
const BOUND: Duration = Duration::from_millis(1000);

fn run(exec: ExecMode) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let member = single_member_with(dir.path(), StoreKind::Rocksdb, exec, "hdfs", MAX_OPS_PER_ENTRY)
            .await
            .unwrap();
        let ctx = |call| CallCtx {
            client_id: "c".into(),
            call_id: call,
            user: "hdfs".into(),
            groups: vec![],
            routed_by: 0,
        };
        // Out of safe mode first (asked once, with the lock free).
        member
            .call(
                ctx(1),
                Op::Mkdirs {
                    path: "/warm".into(),
                    permission: Permission(0o755),
                    create_parent: true,
                },
            )
            .await
            .unwrap();
        let holder = member.blocks.hold_lock_for_test(HOLD);
        let started = Instant::now();
        let ops = [
            Op::GetFileInfo { path: "/warm".into() },
            Op::Mkdirs {
                path: "/a/b".into(),
                permission: Permission(0o755),
                create_parent: true,
            },
            Op::Create {
                path: "/a/b/f".into(),
                permission: Permission(0o644),
                overwrite: false,
                create_parent: false,
                replication: 3,
                block_size: 1 << 27,
            },
            Op::Complete {
                path: "/a/b/f".into(),
                last: None,
            },
            Op::Rename2 {
                src: "/a/b/f".into(),
                dst: "/a/g".into(),
                overwrite: false,
            },
            Op::SetPermission {
                path: "/a".into(),
                permission: Permission(0o750),
            },
            Op::GetListing {
                path: "/a".into(),
                start_after: String::new(),
                limit: 100,
            },
            Op::Delete {
                path: "/a".into(),
                recursive: true,
            },
        ];
        for (i, op) in ops.into_iter().enumerate() {
            let t = Instant::now();
            let name = op.name();
            let r = member.call(ctx(10 + i as u64), op).await;
            assert!(r.is_ok(), "{exec} {name}: {r:?}");
            assert!(
                t.elapsed() < BOUND,
                "{exec} {name} took {:?} while the block manager's lock was held",
                t.elapsed()
            );
        }
        assert!(
            started.elapsed() < HOLD,
            "every op answered while the lock was still held"
        );
        holder.join().unwrap();
        member.shutdown().await;
    });
}

#[test]
fn namespace_ops_do_not_wait_for_the_block_manager_exec_leader() {
    run(ExecMode::Leader);
}

#[test]
fn namespace_ops_do_not_wait_for_the_block_manager_exec_apply() {
    run(ExecMode::Apply);
}
