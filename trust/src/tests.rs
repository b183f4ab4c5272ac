//! The CA's life: create, load, issue, load a node's credentials, refuse
//! what does not fit.

use crate::*;

#[test]
fn a_ca_issues_credentials_that_name_role_id_and_cluster() {
    let d = tempfile::tempdir().unwrap();
    let ca = ClusterCa::create(&d.path().join("ca"), "CID-a").unwrap();
    assert_eq!(ca.cluster_id(), "CID-a");
    assert!(matches!(
        ClusterCa::create(&d.path().join("ca"), "CID-a"),
        Err(TrustError::AlreadyExists(_))
    ));
    let key_mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(d.path().join("ca").join(CA_KEY_FILE))
            .unwrap()
            .permissions(),
    );
    assert_eq!(key_mode & 0o077, 0, "the CA key is private");

    let loaded = ClusterCa::load(&d.path().join("ca")).unwrap();
    let out = d.path().join("dn1");
    let id = loaded
        .issue_into(
            &out,
            PeerRole::Datanode,
            "dn1",
            &["127.0.0.1".into(), "node1.example".into()],
            30,
        )
        .unwrap();
    assert_eq!(id, PeerIdentity::new("CID-a", PeerRole::Datanode, "dn1").unwrap());
    let creds = NodeCredentials::load(&out).unwrap();
    assert_eq!(creds.identity(), &id);
    assert!(creds.server_security().is_tls());
    assert!(creds.dialer().is_tls());
    assert!(Dialer::trusting(&out.join(CA_CERT_FILE)).unwrap().is_tls());
}

#[test]
fn credentials_of_another_cluster_or_missing_files_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let a = ClusterCa::create(&d.path().join("a"), "CID-a").unwrap();
    let b = ClusterCa::create(&d.path().join("b"), "CID-b").unwrap();
    let out = d.path().join("m1");
    a.issue_into(&out, PeerRole::Member, "1", &[], 30).unwrap();
    // Swap in the other cluster's CA: the node certificate no longer fits.
    std::fs::write(out.join(CA_CERT_FILE), b.cert_pem()).unwrap();
    assert_eq!(
        NodeCredentials::load(&out).err(),
        Some(TrustError::WrongCluster {
            expected: "CID-b".into(),
            found: "CID-a".into()
        })
    );
    std::fs::remove_file(out.join(NODE_KEY_FILE)).unwrap();
    assert!(matches!(NodeCredentials::load(&out), Err(TrustError::Missing { .. })));
    assert!(matches!(
        Dialer::trusting(&d.path().join("nothing.crt")),
        Err(TrustError::Missing { .. })
    ));
}

#[test]
fn bad_names_and_validities_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let ca = ClusterCa::create(d.path(), "CID-a").unwrap();
    assert!(matches!(
        ca.issue(PeerRole::Member, "a/b", &[], 30),
        Err(TrustError::InvalidName(_))
    ));
    assert!(matches!(
        ca.issue(PeerRole::Member, "1", &[], 0),
        Err(TrustError::InvalidName(_))
    ));
    assert!(matches!(
        ca.issue(PeerRole::Member, "1", &["bad host!".into()], 30),
        Err(TrustError::InvalidName(_))
    ));
    assert!(matches!(
        ClusterCa::create(&d.path().join("x"), "CID a"),
        Err(TrustError::InvalidName(_))
    ));
    assert!("king".parse::<PeerRole>().is_err());
}
