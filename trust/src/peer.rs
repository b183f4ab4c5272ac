//! The server side: TLS on a listener, and the role check of each service.

use std::sync::Arc;

use tonic::transport::{Server, ServerTlsConfig};
use tonic::{Request, Status};

use crate::{PeerIdentity, PeerRole, TrustError};

/// How a server's listener is secured, and what its services may check.
#[derive(Clone)]
pub enum ServerSecurity {
    /// `--insecure`: no TLS, and every role check passes.
    Plaintext,
    /// Mutual TLS; callers' certificates must chain to the cluster CA.
    /// `http` is the same for the node's HTTP listener.
    Tls {
        tls: ServerTlsConfig,
        http: Arc<rustls::ServerConfig>,
        cluster_id: String,
    },
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

    /// The scheme of this node's HTTP endpoint: `https` under TLS (the
    /// same certificate serves it), `http` for a plaintext node.
    pub fn http_scheme(&self) -> &'static str {
        if self.is_tls() {
            "https"
        } else {
            "http"
        }
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

    /// The rustls settings of the node's HTTP listener (`None`: plaintext).
    pub fn http_tls(&self) -> Option<Arc<rustls::ServerConfig>> {
        match self {
            ServerSecurity::Plaintext => None,
            ServerSecurity::Tls { http, .. } => Some(http.clone()),
        }
    }

    /// The identity a caller's certificate chain names (`leaf` first, as
    /// the handshake verified it): `None` without one or on a plaintext
    /// server; `Err` (the refusal's message) for one that names another
    /// cluster or no raftfs identity.
    pub fn identify(&self, leaf: Option<&[u8]>) -> Result<Option<PeerIdentity>, String> {
        let ServerSecurity::Tls { cluster_id, .. } = self else {
            return Ok(None);
        };
        let Some(leaf) = leaf else {
            return Ok(None);
        };
        let id = PeerIdentity::from_der(leaf).map_err(|e| format!("the caller's certificate: {e}"))?;
        if id.cluster_id != *cluster_id {
            return Err(format!("the caller is {id}, not of this cluster ({cluster_id})"));
        }
        Ok(Some(id))
    }

    /// The identity the caller's certificate names: `None` for a caller
    /// that presented none, or on a plaintext server. A certificate that
    /// names another cluster or no raftfs identity is refused.
    #[allow(clippy::result_large_err)]
    pub fn peer<T>(&self, req: &Request<T>) -> Result<Option<PeerIdentity>, Status> {
        if !self.is_tls() {
            return Ok(None);
        }
        let certs = req.peer_certs();
        let leaf = certs.as_deref().and_then(|c| c.first()).map(|c| c.as_ref());
        self.identify(leaf).map_err(Status::permission_denied)
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
