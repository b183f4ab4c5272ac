//! What starting a node of a Raft group shares, whether a nameservice
//! member (`raftfs metaserver`) or a router (`raftfs router run`): the
//! address it listens on, how it authenticates clients, the TLS identity
//! it proves (checked to be its own before it serves), its HTTP pages
//! (DataNodes share those too) and its Hadoop RPC port.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::{bail, Context};
use raftfs_raft::layout::VersionFile;
use raftfs_trust::{ClientAuth, DelegationTokenTimes, NodeCredentials, NodeSecurity, PeerRole, ServerSecurity};
use raftfs_web::HttpListener;

/// `listen`, else this node's address in VERSION.
pub fn listen_addr(listen: Option<SocketAddr>, version: &VersionFile, role: PeerRole) -> anyhow::Result<SocketAddr> {
    if let Some(l) = listen {
        return Ok(l);
    }
    let (id, what) = (version.member_id, role.as_str());
    let addr = version
        .members
        .get(&id)
        .with_context(|| format!("{what} {id} has no address in VERSION"))?;
    addr.parse()
        .with_context(|| format!("{what} address {addr:?} (use --listen for a host name)"))
}

/// `--auth` (default `simple`); `strong` needs TLS.
pub fn client_auth(auth: Option<&str>, insecure: bool) -> anyhow::Result<ClientAuth> {
    let client_auth: ClientAuth = auth.unwrap_or("simple").parse()?;
    if client_auth == ClientAuth::Strong && insecure {
        bail!("--auth strong needs TLS (the user certificates travel in the handshake): drop --insecure");
    }
    Ok(client_auth)
}

/// Plaintext for `--insecure`; otherwise TLS with the credentials in
/// `tls_dir` (default `DIR/tls`), which must be this node's: `role`, its
/// id and its cluster.
pub fn node_security(
    dir: &Path,
    tls_dir: Option<&Path>,
    insecure: bool,
    role: PeerRole,
    version: &VersionFile,
) -> anyhow::Result<NodeSecurity> {
    if insecure {
        tracing::warn!("--insecure: plaintext, and no caller is checked");
        return Ok(NodeSecurity::insecure());
    }
    let (id, what) = (version.member_id, role.as_str());
    let tls_dir = tls_dir.map_or_else(|| dir.join("tls"), Path::to_path_buf);
    let creds = NodeCredentials::load(&tls_dir).map_err(|e| {
        anyhow::anyhow!("this {what}'s TLS credentials: {e} (or run with --insecure on a trusted network)")
    })?;
    let me = creds.identity();
    if me.role != role || me.id != id.to_string() || me.cluster_id != version.cluster_id {
        bail!(
            "{} holds the certificate of {me}, not of {what} {id} of cluster {}",
            tls_dir.display(),
            version.cluster_id
        );
    }
    Ok(NodeSecurity::tls(&creds))
}

/// Bind `--http-addr` (if given) before the node opens, so a port in use
/// fails the start with a clear error.
pub async fn bind_http(addr: Option<SocketAddr>) -> anyhow::Result<Option<HttpListener>> {
    match addr {
        None => Ok(None),
        Some(a) => Ok(Some(
            HttpListener::bind(a)
                .await
                .with_context(|| format!("listen for HTTP on {a} (--http-addr)"))?,
        )),
    }
}

/// Bind `--hadoop-rpc-addr` (if given) before the node opens, so a port in
/// use fails the start with a clear error.
pub async fn bind_hadoop_rpc(addr: Option<SocketAddr>) -> anyhow::Result<Option<tokio::net::TcpListener>> {
    match addr {
        None => Ok(None),
        Some(a) => {
            Ok(Some(tokio::net::TcpListener::bind(a).await.with_context(|| {
                format!("listen for Hadoop RPC on {a} (--hadoop-rpc-addr)")
            })?))
        }
    }
}

/// Serve Hadoop's IPC for `ns` (`what` it is, for the log) on `listener`
/// (if bound) for the life of the process, clients authenticated as `auth`
/// says.
pub fn serve_hadoop_rpc(
    listener: Option<tokio::net::TcpListener>,
    ns: std::sync::Arc<dyn raftfs_hadoop::HadoopNamespace>,
    auth: ClientAuth,
    what: &str,
) {
    let Some(listener) = listener else { return };
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "serving Hadoop RPC (ClientNamenodeProtocol) for {what}");
    }
    tokio::spawn(raftfs_hadoop::serve(
        listener,
        std::sync::Arc::new(raftfs_hadoop::NamenodeService::new(ns, auth)),
        Box::pin(std::future::pending()),
    ));
}

/// Serve `pages` on `listener` (if bound) for the life of the process,
/// secured as the node's own listener is.
pub fn serve_http(listener: Option<HttpListener>, security: ServerSecurity, pages: raftfs_web::axum::Router) {
    let Some(listener) = listener else { return };
    let scheme = security.http_scheme();
    match listener.local_addr() {
        Ok(a) => tracing::info!(url = %format!("{scheme}://{a}/metrics"), "serving HTTP pages"),
        Err(e) => tracing::warn!(error = %e, "the HTTP listener has no address"),
    }
    tokio::spawn(raftfs_web::serve(
        listener,
        security,
        pages,
        Box::pin(std::future::pending()),
    ));
}

/// The delegation token times the `--delegation-*` flags give (each
/// defaulting to HDFS's), checked.
pub fn delegation_times(
    key_update_interval_ms: Option<u64>,
    max_lifetime_ms: Option<u64>,
    renew_interval_ms: Option<u64>,
) -> anyhow::Result<DelegationTokenTimes> {
    let d = DelegationTokenTimes::default();
    let times = DelegationTokenTimes {
        key_update_interval_ms: key_update_interval_ms.unwrap_or(d.key_update_interval_ms),
        max_lifetime_ms: max_lifetime_ms.unwrap_or(d.max_lifetime_ms),
        renew_interval_ms: renew_interval_ms.unwrap_or(d.renew_interval_ms),
    };
    times.check().map_err(anyhow::Error::msg)?;
    Ok(times)
}
