//! A node's credentials on disk, and how any process dials a service.
//!
//! A credentials directory (`raftfs cert issue --out DIR`, or `DIR/tls` of a
//! member made by `raftfs format`) holds `ca.crt`, `node.crt` and `node.key`.
//! Loading checks that the certificate names the CA's cluster.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity, ServerTlsConfig};

use crate::authority::{ca_cluster_id, read_pem};
use crate::{PeerIdentity, PeerRole, ServerSecurity, TrustError, CA_CERT_FILE, NODE_CERT_FILE, NODE_KEY_FILE};

/// How long a TLS handshake may take before the connection is dropped.
pub const TLS_HANDSHAKE_TIMEOUT_MS: u64 = 10_000;

/// A node's certificate, key and the CA that issued them.
#[derive(Clone)]
pub struct NodeCredentials {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
    identity: PeerIdentity,
    /// The same identity and CA for the node's HTTP listener.
    http: Arc<rustls::ServerConfig>,
}

impl NodeCredentials {
    /// Load the credentials in `dir`.
    pub fn load(dir: &Path) -> Result<NodeCredentials, TrustError> {
        let hint = format!(
            "issue this node's credentials with `raftfs cert issue --ca-dir CA --role ROLE --id ID --out {}`",
            dir.display()
        );
        let ca_pem = read_pem(&dir.join(CA_CERT_FILE), &hint)?;
        let cert_pem = read_pem(&dir.join(NODE_CERT_FILE), &hint)?;
        let key_pem = read_pem(&dir.join(NODE_KEY_FILE), &hint)?;
        let cluster_id = ca_cluster_id(&ca_pem)?;
        let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes()).map_err(|e| {
            TrustError::BadCertificate(format!("{} is not PEM: {e}", dir.join(NODE_CERT_FILE).display()))
        })?;
        let identity = PeerIdentity::from_der(&pem.contents)?;
        if identity.cluster_id != cluster_id {
            return Err(TrustError::WrongCluster {
                expected: cluster_id,
                found: identity.cluster_id,
            });
        }
        let http = http_server_config(&ca_pem, &cert_pem, &key_pem)?;
        Ok(NodeCredentials {
            ca_pem,
            cert_pem,
            key_pem,
            identity,
            http,
        })
    }

    /// Who these credentials say this node is.
    pub fn identity(&self) -> &PeerIdentity {
        &self.identity
    }

    /// Whether this node's certificate names the DNS name `name` (what
    /// callers of a server role verify; certificates issued before routers
    /// served clients lack [`crate::NAMESPACE_SERVER_NAME`]).
    pub fn certifies_name(&self, name: &str) -> bool {
        let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(self.cert_pem.as_bytes()) else {
            return false;
        };
        let Ok((_, cert)) = x509_parser::parse_x509_certificate(&pem.contents) else {
            return false;
        };
        let Ok(Some(san)) = cert.subject_alternative_name() else {
            return false;
        };
        san.value
            .general_names
            .iter()
            .any(|n| matches!(n, x509_parser::extensions::GeneralName::DNSName(d) if *d == name))
    }

    /// This node's server side: its certificate, and the CA that callers'
    /// certificates must chain to (callers without one are let in; each
    /// service decides what they may do).
    pub fn server_security(&self) -> ServerSecurity {
        let tls = ServerTlsConfig::new()
            .identity(Identity::from_pem(&self.cert_pem, &self.key_pem))
            .client_ca_root(Certificate::from_pem(&self.ca_pem))
            .client_auth_optional(true)
            .timeout(Duration::from_millis(TLS_HANDSHAKE_TIMEOUT_MS));
        ServerSecurity::Tls {
            tls,
            http: self.http.clone(),
            cluster_id: self.identity.cluster_id.clone(),
        }
    }

    /// This node's client side: it trusts the CA and presents its certificate.
    pub fn dialer(&self) -> Dialer {
        Dialer::Tls {
            ca: Certificate::from_pem(&self.ca_pem),
            identity: Some(Identity::from_pem(&self.cert_pem, &self.key_pem)),
        }
    }
}

/// The rustls settings of a node's HTTP listener: its certificate, and
/// callers' certificates checked against the CA when they present one (as
/// on its gRPC listener; each page decides what callers without one may
/// see). ALPN offers HTTP/2 and HTTP/1.1.
fn http_server_config(ca_pem: &str, cert_pem: &str, key_pem: &str) -> Result<Arc<rustls::ServerConfig>, TrustError> {
    let bad = |what: &str, e: &dyn std::fmt::Display| TrustError::BadCertificate(format!("{what}: {e}"));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots
            .add(ca.map_err(|e| bad("the CA certificate", &e))?)
            .map_err(|e| bad("the CA certificate", &e))?;
    }
    let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .allow_unauthenticated()
        .build()
        .map_err(|e| bad("client certificate checks", &e))?;
    let chain = CertificateDer::pem_slice_iter(cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad("the node certificate", &e))?;
    let key = PrivateKeyDer::from_pem_slice(key_pem.as_bytes()).map_err(|e| bad("the node key", &e))?;
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| bad("TLS versions", &e))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(chain, key)
        .map_err(|e| bad("the node certificate and key", &e))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// How a process dials the cluster's services.
#[derive(Clone)]
pub enum Dialer {
    /// No TLS (`--insecure` clusters only).
    Plaintext,
    /// TLS, trusting the cluster CA; nodes also present their certificate.
    Tls {
        ca: Certificate,
        identity: Option<Identity>,
    },
}

impl std::fmt::Debug for Dialer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dialer::Plaintext => f.write_str("Dialer::Plaintext"),
            Dialer::Tls { identity, .. } => write!(f, "Dialer::Tls(with certificate: {})", identity.is_some()),
        }
    }
}

impl Dialer {
    /// A client that trusts the CA certificate in `ca_file` and presents none.
    pub fn trusting(ca_file: &Path) -> Result<Dialer, TrustError> {
        let pem = read_pem(
            ca_file,
            "the cluster's CA certificate (`raftfs dev` prints its path; operators copy ca.crt from the CA directory)",
        )?;
        ca_cluster_id(&pem)?;
        Ok(Dialer::Tls {
            ca: Certificate::from_pem(pem),
            identity: None,
        })
    }

    pub fn is_tls(&self) -> bool {
        matches!(self, Dialer::Tls { .. })
    }

    /// An endpoint for the `server` role's service at `addr` (HOST:PORT):
    /// under TLS the server must prove it holds a certificate of that role.
    pub fn endpoint(&self, addr: &str, server: PeerRole) -> Result<Endpoint, TrustError> {
        let name = server
            .server_name()
            .ok_or_else(|| TrustError::InvalidName(format!("{} serves nothing to dial", server.described())))?;
        self.endpoint_named(addr, name)
    }

    /// An endpoint for the client `Namespace` service at `addr`: a member
    /// or a router (under TLS the server must prove it is one of those,
    /// [`crate::NAMESPACE_SERVER_NAME`]).
    pub fn namespace_endpoint(&self, addr: &str) -> Result<Endpoint, TrustError> {
        self.endpoint_named(addr, crate::NAMESPACE_SERVER_NAME)
    }

    fn endpoint_named(&self, addr: &str, name: &'static str) -> Result<Endpoint, TrustError> {
        let bad = |e: &dyn std::fmt::Display| TrustError::InvalidName(format!("address {addr:?}: {e}"));
        match self {
            Dialer::Plaintext => Endpoint::from_shared(format!("http://{addr}")).map_err(|e| bad(&e)),
            Dialer::Tls { ca, identity } => {
                let mut cfg = ClientTlsConfig::new()
                    .ca_certificate(ca.clone())
                    .domain_name(name)
                    .timeout(Duration::from_millis(TLS_HANDSHAKE_TIMEOUT_MS));
                if let Some(id) = identity {
                    cfg = cfg.identity(id.clone());
                }
                Endpoint::from_shared(format!("https://{addr}"))
                    .map_err(|e| bad(&e))?
                    .tls_config(cfg)
                    .map_err(|e| bad(&e))
            }
        }
    }
}

/// Both sides of a node: how it serves and how it dials.
#[derive(Clone, Debug)]
pub struct NodeSecurity {
    pub server: ServerSecurity,
    pub dialer: Dialer,
}

impl NodeSecurity {
    /// `--insecure`: plaintext both ways, no checks.
    pub fn insecure() -> NodeSecurity {
        NodeSecurity {
            server: ServerSecurity::Plaintext,
            dialer: Dialer::Plaintext,
        }
    }

    /// Mutual TLS with `creds`.
    pub fn tls(creds: &NodeCredentials) -> NodeSecurity {
        NodeSecurity {
            server: creds.server_security(),
            dialer: creds.dialer(),
        }
    }
}
