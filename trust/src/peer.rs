//! The server side: TLS on a listener, and the role check of each service.

use tonic::transport::{Server, ServerTlsConfig};
use tonic::{Request, Status};

use crate::{PeerIdentity, PeerRole, TrustError};

/// How a server's listener is secured, and what its services may check.
#[derive(Clone)]
pub enum ServerSecurity {
    /// `--insecure`: no TLS, and every role check passes.
    Plaintext,
    /// Mutual TLS; callers' certificates must chain to the cluster CA.
    Tls { tls: ServerTlsConfig, cluster_id: String },
}

impl std::fmt::Debug for ServerSecurity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerSecurity::Plaintext => f.write_str("ServerSecurity::Plaintext"),
            ServerSecurity::Tls { cluster_id, .. } => write!(f, "ServerSecurity::Tls({cluster_id})"),
        }
    }
}

impl ServerSecurity {
    pub fn is_tls(&self) -> bool {
        matches!(self, ServerSecurity::Tls { .. })
    }

    /// Put TLS on a server builder (nothing when plaintext).
    pub fn apply<L>(&self, server: Server<L>) -> Result<Server<L>, TrustError> {
        match self {
            ServerSecurity::Plaintext => Ok(server),
            ServerSecurity::Tls { tls, .. } => server
                .tls_config(tls.clone())
                .map_err(|e| TrustError::BadCertificate(format!("TLS settings: {e}"))),
        }
    }

    /// The identity the caller's certificate names: `None` for a caller
    /// that presented none, or on a plaintext server. A certificate that
    /// names another cluster or no raftfs identity is refused.
    #[allow(clippy::result_large_err)]
    pub fn peer<T>(&self, req: &Request<T>) -> Result<Option<PeerIdentity>, Status> {
        let ServerSecurity::Tls { cluster_id, .. } = self else {
            return Ok(None);
        };
        let Some(certs) = req.peer_certs() else {
            return Ok(None);
        };
        let Some(leaf) = certs.first() else {
            return Ok(None);
        };
        let id = PeerIdentity::from_der(leaf.as_ref())
            .map_err(|e| Status::permission_denied(format!("the caller's certificate: {e}")))?;
        if id.cluster_id != *cluster_id {
            return Err(Status::permission_denied(format!(
                "the caller is {id}, not of this cluster ({cluster_id})"
            )));
        }
        Ok(Some(id))
    }

    /// Refuse the call unless the caller holds a certificate of `role` (a
    /// plaintext server lets everything through). `what` names the call
    /// for the message.
    #[allow(clippy::result_large_err)]
    pub fn require<T>(&self, req: &Request<T>, role: PeerRole, what: &str) -> Result<Option<PeerIdentity>, Status> {
        if !self.is_tls() {
            return Ok(None);
        }
        match self.peer(req)? {
            Some(id) if id.role == role => Ok(Some(id)),
            Some(id) => Err(Status::permission_denied(format!(
                "{what} is only for {}; the caller is {id}",
                role.described()
            ))),
            None => Err(Status::permission_denied(format!(
                "{what} is only for {}; the caller presented no certificate",
                role.described()
            ))),
        }
    }
}
