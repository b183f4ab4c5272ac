//! A call's futures stay small. Each level of a call builds its callee's
//! future on the stack and moves it into its own state, and each per-call
//! box moves the whole: a profile of getFileInfo at 64 callers found ~10%
//! of a member's CPU in `memmove` of futures over a kilobyte. Rare, large
//! arms (waiting for the format, a follower's read, the write path) are
//! boxed where they are taken, so the common path (a leader's read) pays
//! only for what it holds. This test prints every size and fails when one
//! grows past its bound, naming it.

use std::mem::size_of_val;
use std::sync::Arc;

use crate::exec::batcher::MAX_OPS_PER_ENTRY;
use crate::exec::ExecMode;
use crate::server::hadoop_namespace::MemberHadoopNamespace;
use crate::server::member::ReadMode;
use crate::server::StoreKind;
use crate::testkit::single_member_with;
use raftfs_hadoop::ipc_service::Call;
use raftfs_hadoop::{HadoopNamespace, IpcCaller, IpcService, NamenodeService};
use raftfs_proto::{CallCtx, Op};

/// The most a per-call future of the member may take, in bytes.
const MAX_MEMBER_CALL_FUTURE_BYTES: usize = 768;
/// The most a Hadoop IPC call's futures may take: the member's call (with
/// its metrics and audit entry) and the answer (decode, call, encode).
const MAX_HADOOP_CALL_FUTURE_BYTES: usize = 1024;

fn ctx() -> CallCtx {
    CallCtx {
        client_id: "c".into(),
        call_id: 1,
        user: "hdfs".into(),
        groups: vec![],
        routed_by: 0,
    }
}

fn get_file_info() -> Op {
    Op::GetFileInfo { path: "/".into() }
}

#[test]
fn call_futures_stay_small() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let member = rt
        .block_on(single_member_with(
            dir.path(),
            StoreKind::Rocksdb,
            ExecMode::default(),
            "hdfs",
            MAX_OPS_PER_ENTRY,
        ))
        .unwrap();
    let member = Arc::new(member);
    let caller = IpcCaller {
        user: "hdfs".into(),
        ip: "127.0.0.1".into(),
        token: None,
    };
    let ns = Arc::new(MemberHadoopNamespace::new(member.clone()));
    let service = NamenodeService::new(ns.clone(), raftfs_trust::ClientAuth::Simple);
    let call = Call {
        caller: &caller,
        rpc_client_id: &[7; 16],
        call_id: 1,
        seen_state_id: None,
    };
    let request = raftfs_hadoop::wire::namenode::GetFileInfoRequest { src: "/".into() };
    let request = prost::Message::encode_to_vec(&request);

    let member_sizes = [
        ("Member::call", size_of_val(&member.call(ctx(), get_file_info()))),
        (
            "Member::call_with",
            size_of_val(&member.call_with(ctx(), get_file_info(), ReadMode::Leader, 0)),
        ),
        (
            "Member::call_from",
            size_of_val(&member.call_from(ctx(), get_file_info(), ReadMode::Leader, 0, "h")),
        ),
        ("Member::linearize", size_of_val(&member.linearize())),
    ];
    let hadoop_sizes = [
        (
            "MemberHadoopNamespace::call",
            size_of_val(&*ns.call(&caller, ctx(), get_file_info(), None)),
        ),
        (
            "NamenodeService::answer (getFileInfo)",
            size_of_val(&*service.answer(&call, "getFileInfo", &request)),
        ),
    ];
    for (name, size) in member_sizes.iter().chain(&hadoop_sizes) {
        println!("{name}: {size} bytes");
    }
    let bounded = member_sizes
        .iter()
        .map(|&(name, size)| (name, size, MAX_MEMBER_CALL_FUTURE_BYTES))
        .chain(
            hadoop_sizes
                .iter()
                .map(|&(name, size)| (name, size, MAX_HADOOP_CALL_FUTURE_BYTES)),
        );
    for (name, size, bound) in bounded {
        assert!(
            size <= bound,
            "{name}'s future is {size} bytes, over {bound}: box the large, rare arm that grew it"
        );
    }
    rt.block_on(member.shutdown());
}
