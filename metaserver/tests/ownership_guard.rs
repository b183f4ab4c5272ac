//! A write routed by a mount table is applied only where the nameservice
//! owns its path at the moment it is applied, not just when it was
//! checked: a routed write's plan carries the guard `OwnedAt`, and a
//! revocation applied between its plan and its apply makes the guard fail
//! (the write is then planned again, and refused with `NotOwned`). Calls
//! not routed by a table are never checked; in `--exec apply` the same
//! check runs at apply, from the version the log entry carries.

use raftfs_metaserver::exec::{Engine, ExecMode};
use raftfs_metaserver::namespace::{execute_write, format_batch, plan, Mutation, NsConfig, Overlay};
use raftfs_metaserver::store::{MemStore, Store};
use raftfs_metaserver::testkit::test_format_info;
use raftfs_proto::{CallCtx, FsError, Op, OpResult, Permission};

fn ctx(call_id: u64, routed_by: u64) -> CallCtx {
    CallCtx {
        client_id: "cl".into(),
        call_id,
        user: "hdfs".into(),
        groups: vec![],
        routed_by,
    }
}

fn mkdir(path: &str) -> Op {
    Op::Mkdirs {
        path: path.into(),
        permission: Permission(0o755),
        create_parent: true,
    }
}

fn own(version: u64, prefixes: &[&str]) -> Op {
    Op::SetOwnership {
        version,
        prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
    }
}

/// Run `op` as its own committed entry.
fn commit(s: &MemStore, cfg: &NsConfig, ctx: &CallCtx, op: &Op, time_ms: i64) -> Result<OpResult, FsError> {
    let mut o = Overlay::new(s);
    let r = execute_write(cfg, &mut o, ctx, op, time_ms);
    let b = o.into_batch();
    s.commit(b).unwrap();
    r
}

#[test]
fn a_revocation_between_plan_and_apply_fails_the_routed_write() {
    let info = test_format_info("hdfs", 0);
    let cfg = NsConfig::from(&info);
    let s = MemStore::new();
    s.commit(format_batch(&info)).unwrap();
    commit(&s, &cfg, &ctx(1, 0), &own(3, &["/a"]), 10).unwrap();

    // Planned while /a is owned: it carries the guard on the row as read.
    let planned = plan(&cfg, &s, &ctx(2, 3), &mkdir("/a/x"), 20).unwrap();
    assert!(
        planned.mutations.contains(&Mutation::OwnedAt { changes: 1 }),
        "{:?}",
        planned.mutations
    );
    // The routers take /a away (same table version: the change has not
    // committed yet) before the write is applied.
    commit(&s, &cfg, &ctx(3, 0), &own(3, &[]), 30).unwrap();
    let mut o = Overlay::new(&s);
    let e = o.stage(&planned.mutations, 40).unwrap_err();
    assert!(
        matches!(&e, FsError::Unavailable(m) if m.contains("owns changed")),
        "{e:?}"
    );
    // Planned again, it is refused, naming the version to route by.
    let e = plan(&cfg, &s, &ctx(2, 3), &mkdir("/a/x"), 50).unwrap_err();
    assert!(matches!(e, FsError::NotOwned { version: 3, .. }), "{e:?}");
    // A call not routed by a table is not checked: the nameservice is a
    // whole file system to its own clients.
    let plain = plan(&cfg, &s, &ctx(4, 0), &mkdir("/a/x"), 60).unwrap();
    assert!(!plain.mutations.iter().any(|m| matches!(m, Mutation::OwnedAt { .. })));
    // An older push changes nothing; a newer one grants /a again.
    commit(&s, &cfg, &ctx(5, 0), &own(2, &["/a"]), 70).unwrap();
    assert!(plan(&cfg, &s, &ctx(2, 3), &mkdir("/a/x"), 80).is_err());
    commit(&s, &cfg, &ctx(6, 0), &own(4, &["/a"]), 90).unwrap();
    let again = plan(&cfg, &s, &ctx(2, 4), &mkdir("/a/x"), 100).unwrap();
    assert!(
        again.mutations.contains(&Mutation::OwnedAt { changes: 3 }),
        "three pushes replaced the row: {:?}",
        again.mutations
    );
}

#[test]
fn both_exec_modes_refuse_routed_writes_outside_what_is_owned() {
    for mode in [ExecMode::Apply, ExecMode::Leader] {
        let e = Engine::open(MemStore::new(), &test_format_info("hdfs", 0), mode).unwrap();
        e.execute(&ctx(1, 0), &own(5, &["/mine"]), 10).unwrap();
        e.execute(&ctx(2, 5), &mkdir("/mine/d"), 20)
            .unwrap_or_else(|err| panic!("{mode}: an owned path: {err}"));
        let err = e.execute(&ctx(3, 5), &mkdir("/theirs/d"), 30).unwrap_err();
        assert!(matches!(err, FsError::NotOwned { version: 5, .. }), "{mode}: {err:?}");
        e.execute(&ctx(4, 0), &mkdir("/theirs/d"), 40)
            .unwrap_or_else(|err| panic!("{mode}: a call not routed: {err}"));
        // A non-superuser may not say what the nameservice owns.
        let alice = CallCtx {
            user: "alice".into(),
            ..ctx(5, 0)
        };
        let err = e.execute(&alice, &own(6, &["/"]), 50).unwrap_err();
        assert!(matches!(err, FsError::AccessControl(_)), "{mode}: {err:?}");
    }
}
