//! The cluster CA: made once per cluster, it issues every node certificate.
//!
//! A CA directory holds `ca.crt` and `ca.key` (mode 0600). The CA names its
//! ClusterID as its subject's organisation, and refuses to issue for another
//! cluster. Issued node certificates carry the node's identity URI, the DNS
//! name of its role (for servers) and any host names the operator lists.
//!
//! Caveat: whoever can read `ca.key` can mint any identity; keep the CA
//! directory off the nodes in production (`raftfs dev` keeps it in its own
//! directory for convenience).

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    SanType,
};
use time::{Duration, OffsetDateTime};

use crate::role::check_name;
use crate::{
    PeerIdentity, PeerRole, TrustError, CA_CERT_FILE, CA_KEY_FILE, CA_VALIDITY_DAYS, MAX_CERT_VALIDITY_DAYS,
    MAX_PEM_FILE_BYTES, NODE_CERT_FILE, NODE_KEY_FILE, NOT_BEFORE_SLACK_SECS,
};

/// Longest DNS host name (RFC 1035).
const MAX_DNS_NAME_CHARS: usize = 253;
/// The common name of every cluster CA.
const CA_COMMON_NAME: &str = "raftfs cluster CA";

/// A cluster's certificate authority, loaded with its key.
pub struct ClusterCa {
    dir: PathBuf,
    cluster_id: String,
    cert_pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn gen_err(e: rcgen::Error) -> TrustError {
    TrustError::Generate(e.to_string())
}

/// Read a small PEM file, saying which file is missing and how to make it.
pub(crate) fn read_pem(path: &Path, hint: &str) -> Result<String, TrustError> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => TrustError::Missing {
            path: path.display().to_string(),
            hint: hint.to_string(),
        },
        _ => TrustError::io(path, e),
    })?;
    if meta.len() > MAX_PEM_FILE_BYTES {
        return Err(TrustError::BadCertificate(format!(
            "{} is {} bytes, more than a certificate or key ({MAX_PEM_FILE_BYTES})",
            path.display(),
            meta.len()
        )));
    }
    std::fs::read_to_string(path).map_err(|e| TrustError::io(path, e))
}

/// Write `text` to `path` through a temporary file and a rename, with `mode`.
pub(crate) fn write_file(path: &Path, text: &str, mode: u32) -> Result<(), TrustError> {
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(mode)
        .open(&tmp)
        .map_err(|e| TrustError::io(&tmp, e))?;
    f.write_all(text.as_bytes())
        .and_then(|_| f.sync_all())
        .map_err(|e| TrustError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| TrustError::io(path, e))
}

/// The validity window of a certificate issued now for `days`.
fn validity(days: i64) -> (OffsetDateTime, OffsetDateTime) {
    let now = OffsetDateTime::now_utc();
    (
        now - Duration::seconds(NOT_BEFORE_SLACK_SECS),
        now + Duration::days(days),
    )
}

/// The ClusterID a CA certificate names (its subject's organisation).
pub(crate) fn ca_cluster_id(cert_pem: &str) -> Result<String, TrustError> {
    let (_, pem) = x509_parser::pem::parse_x509_pem(cert_pem.as_bytes())
        .map_err(|e| TrustError::BadCertificate(format!("CA certificate is not PEM: {e}")))?;
    let cert = pem
        .parse_x509()
        .map_err(|e| TrustError::BadCertificate(format!("CA certificate does not parse: {e}")))?;
    let org = cert
        .subject()
        .iter_organization()
        .next()
        .and_then(|o| o.as_str().ok())
        .ok_or_else(|| TrustError::BadCertificate("the CA certificate names no ClusterID".into()))?;
    Ok(org.to_string())
}

impl ClusterCa {
    /// Make a new CA for `cluster_id` in `dir` (created if needed). Refuses
    /// a directory that already holds a CA.
    pub fn create(dir: &Path, cluster_id: &str) -> Result<ClusterCa, TrustError> {
        check_name("ClusterID", cluster_id)?;
        if dir.join(CA_KEY_FILE).exists() || dir.join(CA_CERT_FILE).exists() {
            return Err(TrustError::AlreadyExists(dir.display().to_string()));
        }
        std::fs::create_dir_all(dir).map_err(|e| TrustError::io(dir, e))?;
        let key = KeyPair::generate().map_err(gen_err)?;
        let mut params = CertificateParams::default();
        params.distinguished_name.push(DnType::CommonName, CA_COMMON_NAME);
        params.distinguished_name.push(DnType::OrganizationName, cluster_id);
        params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        (params.not_before, params.not_after) = validity(CA_VALIDITY_DAYS);
        let cert = params.self_signed(&key).map_err(gen_err)?;
        write_file(&dir.join(CA_KEY_FILE), &key.serialize_pem(), 0o600)?;
        write_file(&dir.join(CA_CERT_FILE), &cert.pem(), 0o644)?;
        ClusterCa::load(dir)
    }

    /// Load the CA in `dir`.
    pub fn load(dir: &Path) -> Result<ClusterCa, TrustError> {
        let hint = "the cluster CA is made by `raftfs format` of the cluster's first member";
        let cert_pem = read_pem(&dir.join(CA_CERT_FILE), hint)?;
        let key_pem = read_pem(&dir.join(CA_KEY_FILE), hint)?;
        let key = KeyPair::from_pem(&key_pem)
            .map_err(|e| TrustError::BadCertificate(format!("{}: {e}", dir.join(CA_KEY_FILE).display())))?;
        let cluster_id = ca_cluster_id(&cert_pem)?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key)
            .map_err(|e| TrustError::BadCertificate(format!("{}: {e}", dir.join(CA_CERT_FILE).display())))?;
        Ok(ClusterCa {
            dir: dir.to_path_buf(),
            cluster_id,
            cert_pem,
            issuer,
        })
    }

    pub fn cluster_id(&self) -> &str {
        &self.cluster_id
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn cert_pem(&self) -> &str {
        &self.cert_pem
    }

    /// A certificate and key (PEM) for `role` `id`, valid for `days`, also
    /// naming `hosts` (IP addresses or DNS names) for tools that check them.
    pub fn issue(&self, role: PeerRole, id: &str, hosts: &[String], days: i64) -> Result<(String, String), TrustError> {
        if !(1..=MAX_CERT_VALIDITY_DAYS).contains(&days) {
            return Err(TrustError::InvalidName(format!(
                "validity of {days} days is not 1..={MAX_CERT_VALIDITY_DAYS}"
            )));
        }
        let ident = PeerIdentity::new(&self.cluster_id, role, id)?;
        let mut sans = vec![SanType::URI(ident.uri().try_into().map_err(gen_err)?)];
        if let Some(name) = role.server_name() {
            sans.push(SanType::DnsName(name.try_into().map_err(gen_err)?));
        }
        if role.serves_namespace() {
            sans.push(SanType::DnsName(
                crate::role::NAMESPACE_SERVER_NAME.try_into().map_err(gen_err)?,
            ));
        }
        for h in hosts {
            sans.push(match h.parse::<std::net::IpAddr>() {
                Ok(ip) => SanType::IpAddress(ip),
                Err(_) => {
                    let bad = || TrustError::InvalidName(format!("host {h:?} is not a DNS name or IP address"));
                    let dns_ok = !h.is_empty()
                        && h.len() <= MAX_DNS_NAME_CHARS
                        && h.split('.').all(|l| {
                            !l.is_empty()
                                && !l.starts_with('-')
                                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                        });
                    if !dns_ok {
                        return Err(bad());
                    }
                    SanType::DnsName(h.as_str().try_into().map_err(|_| bad())?)
                }
            });
        }
        let mut params = CertificateParams::default();
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{role} {id}"));
        params
            .distinguished_name
            .push(DnType::OrganizationName, self.cluster_id.as_str());
        params.subject_alt_names = sans;
        params.is_ca = IsCa::ExplicitNoCa;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = match role.server_name() {
            Some(_) => vec![ExtendedKeyUsagePurpose::ServerAuth, ExtendedKeyUsagePurpose::ClientAuth],
            None => vec![ExtendedKeyUsagePurpose::ClientAuth],
        };
        params.use_authority_key_identifier_extension = true;
        (params.not_before, params.not_after) = validity(days);
        let key = KeyPair::generate().map_err(gen_err)?;
        let cert = params.signed_by(&key, &self.issuer).map_err(gen_err)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// Issue for `role` `id` into the credentials directory `out` (made if
    /// needed): `ca.crt`, `node.crt` and `node.key` (mode 0600). Replaces
    /// what `out` held, so re-issuing is the same command.
    pub fn issue_into(
        &self,
        out: &Path,
        role: PeerRole,
        id: &str,
        hosts: &[String],
        days: i64,
    ) -> Result<PeerIdentity, TrustError> {
        let (cert, key) = self.issue(role, id, hosts, days)?;
        std::fs::create_dir_all(out).map_err(|e| TrustError::io(out, e))?;
        write_file(&out.join(NODE_KEY_FILE), &key, 0o600)?;
        write_file(&out.join(NODE_CERT_FILE), &cert, 0o644)?;
        write_file(&out.join(CA_CERT_FILE), &self.cert_pem, 0o644)?;
        PeerIdentity::new(&self.cluster_id, role, id)
    }
}
