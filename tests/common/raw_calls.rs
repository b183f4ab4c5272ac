//! Single namespace calls over a raw gRPC client, for tests that need a
//! call exactly as sent: a chosen client id and call id, a routed table
//! version, no SDK retries or leader hints.

use raftfs_proto::{codec, pb, FsError, Op, OpResult};

/// One raw call to one member as user `hdfs` of client `client_id`: no
/// leader hints followed, no retries (a retry is the same call id again).
pub async fn raw_call(
    c: &mut pb::namespace_client::NamespaceClient<tonic::transport::Channel>,
    client_id: &str,
    call_id: u64,
    op: &Op,
) -> Result<OpResult, FsError> {
    raw_routed_call(c, client_id, call_id, op, 0).await
}

/// As [`raw_call`], saying it was routed by mount-table version `routed_by`.
pub async fn raw_routed_call(
    c: &mut pb::namespace_client::NamespaceClient<tonic::transport::Channel>,
    client_id: &str,
    call_id: u64,
    op: &Op,
    routed_by: u64,
) -> Result<OpResult, FsError> {
    let req = pb::CallRequest {
        ctx: Some(pb::CallContext {
            client_id: client_id.into(),
            call_id,
            user: "hdfs".into(),
            groups: vec![],
            delegation_token: Vec::new(),
            federation_version: routed_by,
        }),
        op_bin: codec::encode(op).unwrap(),
        ..Default::default()
    };
    let reply = c.call(req).await.expect("transport").into_inner();
    codec::decode(&reply.result_bin, "reply").expect("decodable reply")
}
