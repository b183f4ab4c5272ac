//! `raftfs dev --auth strong`: a local cluster where every call must
//! authenticate, as a Kerberized HDFS would, set up by the one command.
//!
//! - The dev user (the OS user, who formatted the cluster and so is its
//!   superuser) gets a user certificate from the cluster CA in
//!   `DIR/users/<user>` (issued once, kept across restarts); `raftfs dev`
//!   makes its own calls with it and prints `export RAFTFS_CREDENTIALS=...`
//!   for the shell. Other users get theirs with `raftfs cert issue --role
//!   user --ca-dir DIR/ca`.
//! - Hadoop's clients cannot present a certificate: at every start the dev
//!   user fetches a delegation token of the routers' namespace and of each
//!   nameservice, and `DIR/hadoop-conf/tokens` holds them in Hadoop's token
//!   storage format (one per file system: `ha-hdfs:ns-fed`, `ha-hdfs:ns1`,
//!   ...), for `HADOOP_TOKEN_FILE_LOCATION`. The client configuration says
//!   `hadoop.security.authentication=kerberos`, which makes Hadoop's clients
//!   negotiate SASL, where they pick TOKEN (as a YARN container does with
//!   the tokens its job was given).
//!
//! Caveat: the tokens last as the nameservices' delegation-token settings
//! say (renewable for a day by default); a cluster left running longer
//! needs `raftfs fetchdt --renew`, or a restart, which fetches new ones.

use std::path::{Path, PathBuf};

use anyhow::Context;

use raftfs_client::{ClientOptions, ClientTls, DelegationTokenSource, FileSystem, Identity};

/// Where `raftfs dev` keeps user credentials, under its DIR.
pub const USERS_DIR_NAME: &str = "users";
/// The Hadoop token storage file, in the Hadoop client configuration's directory.
pub const HADOOP_TOKEN_FILE_NAME: &str = "tokens";

/// `user`'s credentials directory under `root`.
pub fn user_dir(root: &Path, user: &str) -> PathBuf {
    root.join(USERS_DIR_NAME).join(user)
}

/// `user`'s certificate from the CA in `ca_dir` (of `cluster_id`), issued
/// into [`user_dir`] unless a certificate of that user is there already.
pub fn ensure_user_credentials(root: &Path, ca_dir: &Path, cluster_id: &str, user: &str) -> anyhow::Result<PathBuf> {
    let dir = std::path::absolute(user_dir(root, user))?;
    let current = raftfs_trust::NodeCredentials::load(&dir).is_ok_and(|c| {
        let who = c.identity();
        who.role == raftfs_trust::PeerRole::User && who.id == user
    });
    if !current {
        let ca = crate::cli_cert::load_ca(ca_dir, cluster_id)?;
        ca.issue_into(
            &dir,
            raftfs_trust::PeerRole::User,
            user,
            &[],
            raftfs_trust::DEFAULT_CERT_VALIDITY_DAYS,
        )
        .with_context(|| format!("issue {user}'s user certificate"))?;
    }
    Ok(dir)
}

/// Fetch a delegation token (renewable by the caller) from each
/// `(raftfs URI, Hadoop file system)` as the user `tls` authenticates,
/// and write them into `conf_dir`'s [`HADOOP_TOKEN_FILE_NAME`] (mode 0600).
/// Returns the file and the earliest time (ms) a token stops being valid
/// unless renewed.
pub async fn write_hadoop_tokens(
    conf_dir: &Path,
    tls: &ClientTls,
    targets: &[(String, String)],
) -> anyhow::Result<(PathBuf, i64)> {
    let opts = ClientOptions {
        tls: tls.clone(),
        // Fetching needs the certificate; a token in the environment would stand in for it.
        delegation_token: DelegationTokenSource::None,
        ..ClientOptions::default()
    };
    let me = Identity::resolve(None);
    let mut tokens = Vec::with_capacity(targets.len());
    for (uri, hadoop_fs) in targets {
        let client = FileSystem::connect(uri, me.clone(), opts.clone())?;
        let t = client
            .get_delegation_token(&me.user)
            .await
            .with_context(|| format!("fetch a delegation token from {uri} for hdfs://{hadoop_fs}"))?;
        let until = client
            .renew_delegation_token(&t)
            .await
            .with_context(|| format!("read the expiry of the token of {uri}"))?;
        tokens.push((t, hadoop_fs.clone(), until));
    }
    let pairs: Vec<_> = tokens.iter().map(|(t, fs, _)| (t, fs.as_str())).collect();
    let bytes = raftfs_hadoop::delegation_token::token_file(&pairs)?;
    let path = conf_dir.join(HADOOP_TOKEN_FILE_NAME);
    raftfs_client::write_credential_file(&path, &bytes)?;
    let earliest = tokens.iter().map(|(_, _, until)| *until).min().unwrap_or(i64::MAX);
    Ok((path, earliest))
}
