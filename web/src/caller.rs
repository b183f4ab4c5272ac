//! Who sent an HTTP request, as its connection proved it, and what that
//! caller may read.

use std::net::SocketAddr;

use raftfs_trust::{ClientAuth, PeerIdentity};

use crate::RemoteException;

/// The caller of a request: its address, and the certificate of this
/// cluster it presented on the connection (checked by the TLS handshake
/// against the cluster CA, and here to name this cluster).
#[derive(Debug, Clone)]
pub struct HttpCaller {
    pub remote: SocketAddr,
    /// `None`: no certificate, or a plaintext listener.
    pub peer: Option<PeerIdentity>,
    /// Why the certificate the caller presented was refused (it names no
    /// raftfs identity, or another cluster): such a caller may read nothing.
    pub certificate_refused: Option<String>,
}

impl HttpCaller {
    /// Whether this caller authenticated as `auth` asks of every page: a
    /// refused certificate reads nothing (403); under `strong` a caller
    /// without a certificate of this cluster is refused (401). Which user
    /// a certificate may act for is each page's own question.
    pub fn authenticate(&self, auth: ClientAuth) -> Result<(), RemoteException> {
        if let Some(why) = &self.certificate_refused {
            return Err(RemoteException::access_control(why.clone()));
        }
        match (auth, &self.peer) {
            (ClientAuth::Simple, _) | (ClientAuth::Strong, Some(_)) => Ok(()),
            (ClientAuth::Strong, None) => Err(RemoteException::authentication_required(
                "this node requires strong authentication: present a certificate of this cluster \
                 (`raftfs cert issue --role user --id NAME`; curl --cert node.crt --key node.key)",
            )),
        }
    }

    /// Whether this caller may read the node's metrics and beans (`/metrics`,
    /// `/jmx`): any authenticated caller may (see the crate docs).
    pub fn may_read_instrumentation(&self, auth: ClientAuth) -> Result<(), RemoteException> {
        self.authenticate(auth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use raftfs_trust::PeerRole;

    fn caller(peer: Option<PeerIdentity>, refused: Option<&str>) -> HttpCaller {
        HttpCaller {
            remote: "127.0.0.1:1".parse().unwrap(),
            peer,
            certificate_refused: refused.map(str::to_string),
        }
    }

    #[test]
    fn strong_needs_a_certificate_and_a_refused_one_reads_nothing() {
        let alice = PeerIdentity::new("CID", PeerRole::User, "alice").unwrap();
        assert!(caller(None, None).may_read_instrumentation(ClientAuth::Simple).is_ok());
        let e = caller(None, None)
            .may_read_instrumentation(ClientAuth::Strong)
            .unwrap_err();
        assert_eq!(e.status.as_u16(), 401, "{e:?}");
        assert!(caller(Some(alice), None)
            .may_read_instrumentation(ClientAuth::Strong)
            .is_ok());
        for auth in [ClientAuth::Simple, ClientAuth::Strong] {
            let e = caller(None, Some("another cluster"))
                .may_read_instrumentation(auth)
                .unwrap_err();
            assert_eq!(e.status.as_u16(), 403, "{e:?}");
            assert!(e.message.contains("another cluster"));
        }
    }
}
