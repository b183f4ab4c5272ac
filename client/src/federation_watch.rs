//! A client's copy of the federation (nameservices and mount table),
//! kept current by the routers: [`FederationWatch`] fetches it once, then
//! long-polls a router for any newer version (`RouterAdmin.Federation`,
//! which answers as soon as the version passes the one the client holds).
//! A change therefore reaches every watching client about as fast as it
//! reaches the routers, with no time-to-live to wait out.
//!
//! It is the [`TableSource`] of the SDK's direct mode.
//!
//! Caveat: a router cut off from its group's quorum answers with what it
//! last applied (it is in safe mode then, and says so to `routeradmin
//! -safemode get`); a call routed by a stale table is refused by the
//! nameservice that no longer owns its path, and routed again once the
//! watch has the version the nameservice named.

use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use raftfs_federation::admin::MAX_FEDERATION_WAIT_MS;
use raftfs_federation::admin_client::RouterAdminClient;
use raftfs_federation::{Federation, RouterError};
use raftfs_proto::FsError;
use tokio::sync::watch;

use crate::federated::TableSource;
use crate::tls::ClientTls;

/// Pause after a failed poll before the next (every router unreachable).
const POLL_RETRY_PAUSE_MS: u64 = 500;

fn fs_error(e: RouterError) -> FsError {
    match e {
        RouterError::Fs(e) => e,
        RouterError::MountTable(e) => FsError::InvalidArgument(e.to_string()),
    }
}

/// The federation as the routers last told this client, kept current by a
/// background task (stopped when the watch is dropped).
pub struct FederationWatch {
    /// What calls are routed by: read without a lock (every call reads it).
    latest: Arc<ArcSwap<Federation>>,
    /// Its version, to wait for one.
    version: watch::Receiver<u64>,
    /// The routers' superuser (owner of the directories above mount points).
    superuser: String,
    poller: tokio::task::JoinHandle<()>,
}

impl FederationWatch {
    /// Fetch the federation from the routers `routers`
    /// (`raftfs://host:port,...`) and keep it current.
    pub async fn start(routers: &str, tls: &ClientTls) -> Result<FederationWatch, FsError> {
        FederationWatch::start_with_dialer(crate::uri::parse_fs(routers)?, tls.dialer()?).await
    }

    /// [`FederationWatch::start`] for routers `addrs` (HOST:PORT), over `dialer`.
    pub async fn start_with_dialer(
        addrs: Vec<String>,
        dialer: raftfs_trust::Dialer,
    ) -> Result<FederationWatch, FsError> {
        let client = RouterAdminClient::new(addrs, dialer).map_err(fs_error)?;
        let reply = client.federation(0, 0).await.map_err(fs_error)?;
        let (first, superuser) = (reply.federation, reply.superuser);
        let (tx, version) = watch::channel(first.version());
        let latest = Arc::new(ArcSwap::from_pointee(first));
        let shared = latest.clone();
        let poller = tokio::spawn(async move {
            loop {
                let have = shared.load().version();
                match client.federation(have, MAX_FEDERATION_WAIT_MS).await {
                    Ok(r) if r.federation.version() > have => {
                        tracing::debug!(version = r.federation.version(), "federation changed");
                        let newer = r.federation.version();
                        shared.store(Arc::new(r.federation));
                        tx.send_replace(newer);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        tracing::debug!(error = %e, "federation poll");
                        tokio::time::sleep(Duration::from_millis(POLL_RETRY_PAUSE_MS)).await;
                    }
                }
                if tx.is_closed() {
                    return;
                }
            }
        });
        Ok(FederationWatch {
            latest,
            version,
            superuser,
            poller,
        })
    }

    /// The federation as this client knows it now.
    pub fn current(&self) -> Arc<Federation> {
        self.latest.load_full()
    }

    /// The routers' superuser.
    pub fn superuser(&self) -> &str {
        &self.superuser
    }

    /// Wait until this client knows version `version` (or a later one), for
    /// at most `timeout`.
    pub async fn wait_for_version(&self, version: u64, timeout: Duration) -> Result<Arc<Federation>, FsError> {
        let mut rx = self.version.clone();
        // The poller stores a federation before it announces its version.
        let reached = tokio::time::timeout(timeout, rx.wait_for(|v| *v >= version)).await;
        match reached {
            Ok(Ok(_)) => Ok(self.latest.load_full()),
            Ok(Err(_)) => Err(FsError::Unavailable("the federation watch stopped".into())),
            Err(_) => Err(FsError::Unavailable(format!(
                "the federation did not reach version {version} within {timeout:?} (at {})",
                self.latest.load().version()
            ))),
        }
    }
}

impl Drop for FederationWatch {
    fn drop(&mut self) {
        self.poller.abort();
    }
}

impl TableSource for FederationWatch {
    fn current(&self) -> Arc<Federation> {
        FederationWatch::current(self)
    }

    async fn wait_for_version(&self, version: u64, timeout: Duration) -> bool {
        FederationWatch::wait_for_version(self, version, timeout).await.is_ok()
    }
}
