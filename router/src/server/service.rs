//! The `RouterAdmin` gRPC service of one router. Every failure is a typed
//! [`RouterError`] inside the reply; malformed payloads are refused with
//! `InvalidArgument`. The caller's user is decided as the nameservices
//! decide it (`--auth simple`: the name the call carries; `strong`: the
//! user certificate's), never from anything else the call claims. Under
//! `strong`, the routers' view (mount table, nameservices, status) is
//! for callers with a certificate of this cluster only, as RBF's admin
//! protocol answers authenticated users only.

use std::sync::Arc;

use raftfs_proto::{codec, pb, FsError};
use tonic::{Request, Response, Status};

use super::node::RouterNode;
use crate::admin::{ChangeRequest, FederationReply, FederationRequest, SafeModeAction, SafeModeRequest};
use crate::error::RouterError;
use crate::federation::FederationChange;
use raftfs_federation::router_tokens::TokenAnswer;
use raftfs_trust::{ClientAuth, PeerIdentity, PeerRole};

pub struct RouterAdminService {
    pub node: Arc<RouterNode>,
}

fn reply<T: serde::Serialize>(r: Result<T, RouterError>) -> Result<Response<pb::RouterMessage>, Status> {
    let data_bin = codec::encode(&r).map_err(|e| Status::internal(e.to_string()))?;
    Ok(Response::new(pb::RouterMessage { data_bin }))
}

fn decode<T: serde::de::DeserializeOwned>(req: Request<pb::RouterMessage>, what: &str) -> Result<T, Status> {
    codec::decode(&req.into_inner().data_bin, what).map_err(|e| Status::invalid_argument(e.to_string()))
}

impl RouterAdminService {
    /// Under strong authentication, refuse a caller without a certificate
    /// of this cluster (a user's, or a node's: DataNodes and routers follow
    /// the federation too).
    fn require_certificate(&self, peer: Option<&PeerIdentity>) -> Result<(), RouterError> {
        match (self.node.client_auth, peer) {
            (ClientAuth::Strong, None) => Err(RouterError::Fs(FsError::AccessControl(
                "this router requires strong authentication: present a user certificate \
                 (`raftfs cert issue --role user --id NAME`, then RAFTFS_CREDENTIALS=DIR)"
                    .into(),
            ))),
            _ => Ok(()),
        }
    }
}

#[tonic::async_trait]
impl pb::router_admin_server::RouterAdmin for RouterAdminService {
    async fn federation(&self, req: Request<pb::RouterMessage>) -> Result<Response<pb::RouterMessage>, Status> {
        let peer = self.node.security.server.peer(&req)?;
        if let Err(e) = self.require_certificate(peer.as_ref()) {
            return reply::<FederationReply>(Err(e));
        }
        let r: FederationRequest = decode(req, "federation request")?;
        let federation = self.node.federation_after(r.since_version, r.wait_ms).await;
        reply(Ok(FederationReply {
            federation,
            router_id: self.node.version.member_id,
            superuser: self.node.version.superuser.clone(),
        }))
    }

    async fn change(&self, req: Request<pb::RouterMessage>) -> Result<Response<pb::RouterMessage>, Status> {
        let peer = self.node.security.server.peer(&req)?;
        let r: ChangeRequest = decode(req, "change request")?;
        // A token command comes from another router, which authenticated
        // the caller it is for; from anyone else it is refused (by `change`).
        if let FederationChange::DelegationTokens(cmd) = r.change {
            // (`--insecure` routers know no certificates, and trust names.)
            let from_router = peer.as_ref().is_some_and(|p| p.role == PeerRole::Router);
            if !from_router && self.node.security.server.is_tls() {
                return reply::<TokenAnswer>(Err(RouterError::Fs(FsError::AccessControl(
                    "delegation token commands are taken from routers only".into(),
                ))));
            }
            return reply(self.node.propose_tokens(cmd).await.map_err(RouterError::Fs));
        }
        let user = match self.node.client_auth.user(&r.user, peer.as_ref()) {
            Ok(u) => u,
            Err(e) => return reply::<u64>(Err(RouterError::Fs(FsError::AccessControl(e)))),
        };
        reply(self.node.change(&user, r.change).await)
    }

    async fn status(&self, req: Request<pb::RouterMessage>) -> Result<Response<pb::RouterMessage>, Status> {
        let peer = self.node.security.server.peer(&req)?;
        if let Err(e) = self.require_certificate(peer.as_ref()) {
            return reply::<crate::admin::RouterStatus>(Err(e));
        }
        reply(Ok(self.node.status()))
    }

    async fn safe_mode(&self, req: Request<pb::RouterMessage>) -> Result<Response<pb::RouterMessage>, Status> {
        let peer = self.node.security.server.peer(&req)?;
        let r: SafeModeRequest = decode(req, "safe mode request")?;
        let result = async {
            if r.action != SafeModeAction::Get {
                let user = self
                    .node
                    .client_auth
                    .user(&r.user, peer.as_ref())
                    .map_err(|e| RouterError::Fs(FsError::AccessControl(e)))?;
                self.node.set_safe_mode(&user, r.action == SafeModeAction::Enter)?;
            }
            Ok(self.node.safe_mode())
        }
        .await;
        reply(result)
    }
}
