//! How a server decides which user a call acts for.
//!
//! `simple` is HDFS's simple authentication: the user name a call carries
//! is trusted (for trusted networks). `strong` refuses a call that does not
//! come with a user certificate of this cluster, and the user is the one
//! the certificate names; a call may not claim another. A call that
//! presents a user certificate is held to it in either mode.
//!
//! A router acts for the users whose calls it forwards (HDFS's proxy
//! users: RBF routers impersonate the caller the same way): on a
//! connection that presents a router certificate of this cluster, the name
//! the call carries is the user in either mode, because the router has
//! already authenticated that caller by its own `--auth`. A router
//! certificate is therefore as powerful as the superuser's; it is issued
//! only by the cluster CA, and only for routers.
//!
//! The other credential HDFS's strong mode accepts, a delegation token, is
//! checked by the member against its replicated token table (a call on a
//! connection without a user certificate may carry one); this type decides
//! only between the name a call carries and a certificate.

use std::fmt;
use std::str::FromStr;

use crate::{PeerIdentity, PeerRole, TrustError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// The user name in the call is trusted.
    #[default]
    Simple,
    /// The user is the one a user certificate names; calls without one are refused.
    Strong,
}

impl FromStr for ClientAuth {
    type Err = TrustError;
    fn from_str(s: &str) -> Result<ClientAuth, TrustError> {
        match s {
            "simple" => Ok(ClientAuth::Simple),
            "strong" => Ok(ClientAuth::Strong),
            o => Err(TrustError::InvalidName(format!(
                "client authentication {o:?} is not simple or strong"
            ))),
        }
    }
}

impl fmt::Display for ClientAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClientAuth::Simple => "simple",
            ClientAuth::Strong => "strong",
        })
    }
}

impl ClientAuth {
    /// The user a call acts for: `claimed` is the name the call carries,
    /// `peer` the certificate its connection presented. `Err` is the
    /// refusal's message.
    pub fn user(&self, claimed: &str, peer: Option<&PeerIdentity>) -> Result<String, String> {
        match (peer, self) {
            (Some(p), _) if p.role == PeerRole::User => {
                if claimed.is_empty() || claimed == p.id {
                    Ok(p.id.clone())
                } else {
                    Err(format!(
                        "authenticated as {} by certificate, but the call claims user {claimed:?}",
                        p.id
                    ))
                }
            }
            (Some(p), _) if p.role == PeerRole::Router => {
                if claimed.is_empty() {
                    Err(format!("{p} forwarded a call that names no user"))
                } else {
                    Ok(claimed.to_string())
                }
            }
            (Some(p), ClientAuth::Strong) => Err(format!(
                "{} certificate does not authenticate a user ({p})",
                match p.role {
                    PeerRole::Member => "a member's",
                    PeerRole::Datanode => "a DataNode's",
                    PeerRole::Router => "a router's",
                    PeerRole::User => "a user's",
                }
            )),
            (None, ClientAuth::Strong) => Err(
                "this nameservice requires strong authentication: present a user certificate \
                 (`raftfs cert issue --role user --id NAME`, then RAFTFS_CREDENTIALS=DIR)"
                    .into(),
            ),
            (_, ClientAuth::Simple) => Ok(claimed.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_certificate_decides_the_user() {
        let alice = PeerIdentity::new("CID", PeerRole::User, "alice").unwrap();
        let dn = PeerIdentity::new("CID", PeerRole::Datanode, "dn1").unwrap();
        for mode in [ClientAuth::Simple, ClientAuth::Strong] {
            assert_eq!(mode.user("alice", Some(&alice)), Ok("alice".into()));
            assert_eq!(mode.user("", Some(&alice)), Ok("alice".into()));
            assert!(mode
                .user("hdfs", Some(&alice))
                .unwrap_err()
                .contains("authenticated as alice"));
        }
        assert_eq!(ClientAuth::Simple.user("bob", None), Ok("bob".into()));
        assert_eq!(ClientAuth::Simple.user("bob", Some(&dn)), Ok("bob".into()));
        assert!(ClientAuth::Strong
            .user("bob", None)
            .unwrap_err()
            .contains("strong authentication"));
        assert!(ClientAuth::Strong
            .user("bob", Some(&dn))
            .unwrap_err()
            .contains("DataNode"));
        let router = PeerIdentity::new("CID", PeerRole::Router, "1").unwrap();
        for mode in [ClientAuth::Simple, ClientAuth::Strong] {
            assert_eq!(mode.user("carol", Some(&router)), Ok("carol".into()), "{mode}");
            assert!(mode.user("", Some(&router)).unwrap_err().contains("names no user"));
        }
        assert_eq!("strong".parse::<ClientAuth>(), Ok(ClientAuth::Strong));
        assert!("kerberos".parse::<ClientAuth>().is_err());
    }
}
