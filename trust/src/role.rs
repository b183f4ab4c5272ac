//! What a certificate says about its holder: cluster, role and id.
//!
//! The identity travels as one URI subject alternative name,
//! `raftfs://<cluster-id>/<role>/<id>`; a server certificate also carries the
//! DNS name of its role ([`PeerRole::server_name`]), which is what a caller
//! verifies, so a role is proven by the handshake itself.

use std::fmt;
use std::str::FromStr;

use crate::{TrustError, MAX_ID_CHARS};

/// The URI scheme of identities in certificates.
const IDENTITY_SCHEME: &str = "raftfs://";

/// The DNS name in the certificate of every server of the client
/// `Namespace` service (see [`PeerRole::serves_namespace`]). Certificates
/// issued before routers served clients lack it: re-issue them with
/// `raftfs cert issue`.
pub const NAMESPACE_SERVER_NAME: &str = "namespace.raftfs";

/// What a certificate's holder is in the cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PeerRole {
    /// A member of a nameservice (serves Raft, the namespace, DatanodeProtocol).
    Member,
    /// A DataNode (serves data transfer, calls DatanodeProtocol).
    Datanode,
    /// A router of the federated namespace.
    Router,
    /// A user of the file system (a client certificate; serves nothing).
    User,
}

impl PeerRole {
    pub const ALL: [PeerRole; 4] = [PeerRole::Member, PeerRole::Datanode, PeerRole::Router, PeerRole::User];

    pub fn as_str(self) -> &'static str {
        match self {
            PeerRole::Member => "member",
            PeerRole::Datanode => "datanode",
            PeerRole::Router => "router",
            PeerRole::User => "user",
        }
    }

    /// The DNS name a server of this role carries and its callers verify;
    /// `None` for users, who serve nothing.
    pub fn server_name(self) -> Option<&'static str> {
        match self {
            PeerRole::Member => Some("member.raftfs"),
            PeerRole::Datanode => Some("datanode.raftfs"),
            PeerRole::Router => Some("router.raftfs"),
            PeerRole::User => None,
        }
    }

    /// Whether servers of this role serve the client `Namespace` service
    /// (members for their nameservice, routers for the federated namespace);
    /// their certificates also carry [`NAMESPACE_SERVER_NAME`], which is what
    /// a client verifies, so one client reaches either without knowing which.
    pub fn serves_namespace(self) -> bool {
        matches!(self, PeerRole::Member | PeerRole::Router)
    }

    /// An article and the role, for messages ("a DataNode").
    pub fn described(self) -> &'static str {
        match self {
            PeerRole::Member => "a member",
            PeerRole::Datanode => "a DataNode",
            PeerRole::Router => "a router",
            PeerRole::User => "a user",
        }
    }
}

impl fmt::Display for PeerRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PeerRole {
    type Err = TrustError;
    fn from_str(s: &str) -> Result<PeerRole, TrustError> {
        PeerRole::ALL
            .into_iter()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| TrustError::InvalidName(format!("role {s:?} is not one of member, datanode, router, user")))
    }
}

/// Who holds a certificate.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PeerIdentity {
    pub cluster_id: String,
    pub role: PeerRole,
    /// Member id, DataNode name, router name or user name.
    pub id: String,
}

/// Ids, user names and ClusterIDs go into a URI: letters, digits and `._@-`.
pub(crate) fn check_name(what: &str, s: &str) -> Result<(), TrustError> {
    if s.is_empty() || s.len() > MAX_ID_CHARS {
        return Err(TrustError::InvalidName(format!(
            "{what} {s:?} must be 1 to {MAX_ID_CHARS} characters"
        )));
    }
    if let Some(c) = s.chars().find(|c| !(c.is_ascii_alphanumeric() || "._@-".contains(*c))) {
        return Err(TrustError::InvalidName(format!(
            "{what} {s:?} may hold only letters, digits and ._@- (not {c:?})"
        )));
    }
    Ok(())
}

impl PeerIdentity {
    pub fn new(cluster_id: &str, role: PeerRole, id: &str) -> Result<PeerIdentity, TrustError> {
        check_name("ClusterID", cluster_id)?;
        check_name("id", id)?;
        Ok(PeerIdentity {
            cluster_id: cluster_id.to_string(),
            role,
            id: id.to_string(),
        })
    }

    pub fn uri(&self) -> String {
        format!("{IDENTITY_SCHEME}{}/{}/{}", self.cluster_id, self.role, self.id)
    }

    /// Parse `raftfs://<cluster-id>/<role>/<id>`.
    pub fn parse_uri(uri: &str) -> Result<PeerIdentity, TrustError> {
        let bad = || TrustError::BadCertificate(format!("{uri:?} is not raftfs://CLUSTER/ROLE/ID"));
        let rest = uri.strip_prefix(IDENTITY_SCHEME).ok_or_else(bad)?;
        let mut parts = rest.split('/');
        let (Some(cid), Some(role), Some(id), None) = (parts.next(), parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        PeerIdentity::new(cid, role.parse()?, id)
    }

    /// The identity a DER certificate names (its raftfs URI).
    pub fn from_der(der: &[u8]) -> Result<PeerIdentity, TrustError> {
        let (_, cert) = x509_parser::parse_x509_certificate(der)
            .map_err(|e| TrustError::BadCertificate(format!("does not parse: {e}")))?;
        let san = cert
            .subject_alternative_name()
            .map_err(|e| TrustError::BadCertificate(format!("subject alternative names: {e}")))?
            .ok_or_else(|| TrustError::BadCertificate("no subject alternative names".into()))?;
        let uris: Vec<&str> = san
            .value
            .general_names
            .iter()
            .filter_map(|n| match n {
                x509_parser::extensions::GeneralName::URI(u) if u.starts_with(IDENTITY_SCHEME) => Some(*u),
                _ => None,
            })
            .collect();
        match uris.as_slice() {
            [one] => PeerIdentity::parse_uri(one),
            [] => Err(TrustError::BadCertificate("names no raftfs identity".into())),
            _ => Err(TrustError::BadCertificate("names more than one raftfs identity".into())),
        }
    }
}

impl fmt::Display for PeerIdentity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} of cluster {}", self.role, self.id, self.cluster_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_uri_round_trips_and_rejects_junk() {
        let p = PeerIdentity::new("CID-1", PeerRole::Datanode, "dn3").unwrap();
        assert_eq!(p.uri(), "raftfs://CID-1/datanode/dn3");
        assert_eq!(PeerIdentity::parse_uri(&p.uri()).unwrap(), p);
        for bad in [
            "raftfs://CID-1/datanode",
            "raftfs://CID-1/king/dn3",
            "raftfs://CID-1/member/3/x",
            "http://CID-1/member/3",
            "raftfs://CID 1/member/3",
        ] {
            assert!(PeerIdentity::parse_uri(bad).is_err(), "{bad} parsed");
        }
        assert!(PeerIdentity::new("CID", PeerRole::User, &"a".repeat(MAX_ID_CHARS + 1)).is_err());
    }
}
