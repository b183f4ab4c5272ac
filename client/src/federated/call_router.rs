//! [`CallRouter`]: one client call of the federated namespace, routed by
//! the mount table to the nameservices that hold its paths (by a router
//! for its callers, or by the SDK for itself in direct mode: "the router"
//! below is whichever runs it).
//!
//! ```text
//!   client call ──► locate(path) ──► Mounted: forward to the destination(s)
//!                        │                      (path rewritten, client id and
//!                        │                       call id kept)
//!                        ├──────────► Virtual: answered by the router
//!                        └──────────► nowhere: NoLocationException
//! ```
//!
//! What a call does, by kind (RBF's behaviour unless said otherwise):
//! * **One destination**: the call is forwarded there.
//! * **Several destinations** (HASH, HASH_ALL, RANDOM, SPACE entries):
//!   `create` and `mkdirs` go where the path already exists, else to the
//!   destination the entry's order picks (RANDOM: a random one; SPACE: the
//!   first, see caveats); `delete`, `setPermission`, `setOwner`,
//!   `setTimes` and `setQuota` go to every destination (a directory may
//!   exist in each); the rest try the destinations in order until one has
//!   the path.
//! * **Listings** merge every destination's entries with the mount points
//!   below the directory; **getFileInfo** of a mount point answers as a
//!   directory even if its destination is missing; **getContentSummary**
//!   sums the destinations and every mount point below.
//! * **Refused**: a write under a read-only mount point, a write to a
//!   virtual directory, deleting or renaming a mount point itself, and a
//!   rename across nameservices ([`FsError::CrossNameservice`]).
//! * **renewLease** goes only to the nameservices where the client opened
//!   files through this router ([`LeaseHolders`]).
//! * **Mount quotas** are set by the router on the destination directory,
//!   where the nameservice enforces them exactly (the router crate's
//!   `proxy::enforce_mount_quota`, over [`CallRouter::own_call`]).
//!
//! Layout: this module routes one call (the one-way shortcut, the route
//! of each kind of call, single-path calls, forwarding); the calls
//! combined over several nameservices (fan-out, listings, content
//! summaries, renames, concat) are in its `combined_calls` submodule.
//!
//! Exactly once: one client call sends at most one write to each
//! nameservice, always with the client's (client id, call id), so each
//! nameservice's retry table answers a retried call as it answered the
//! first time, and a retry re-routes the same way (it finds the file the
//! first attempt created).
//!
//! Caveats: SPACE picks the first destination (free space per nameservice
//! is not reported to routers yet). Error messages name the nameservice's
//! path, not the federated one. File ids are per nameservice, so
//! `/.reserved/.inodes/<id>` paths cannot be routed. The routers issue
//! delegation tokens for the federated namespace (and check them before a
//! call is routed); a nameservice's own token passes through and is
//! checked by the nameservice the call reaches, so it works only for that
//! nameservice's paths.

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::future::{join_all, Either};
use raftfs_federation::routing::{locate, retarget, Location};
use raftfs_federation::{Destination, Federation, MountEntry};
use raftfs_proto::{pb, AdminOp, AdminResult, FsError, Op, OpResult};

use super::lease_holders::LeaseHolders;
use super::merge::{directory_status, last_component};
use super::nameservices::{registered, Nameservices};
use super::one_way::{one_way, refused_as_read_only};
use super::TableSource;

mod combined_calls;

/// Most times one call is routed again after a nameservice refused it as
/// not its own.
pub const MAX_REROUTES: u32 = 10;
/// Longest pause before routing a refused call again when the nameservice
/// knows no newer table than the router (a change is under way).
pub const REROUTE_PAUSE_MS: u64 = 100;
/// Longest a call waits for this router to reach the table version a
/// nameservice named, before it gives up with the `NotOwned` answer.
pub const MAX_REROUTE_WAIT_MS: u64 = 2_000;

/// Most mount points below one directory whose destinations a listing
/// page asks for their status (the rest show their entry only).
pub const MAX_MOUNT_STATUS_LOOKUPS_PER_PAGE: usize = 64;

tokio::task_local! {
    /// Within [`CallRouter::call_answered`]: the nameservice whose
    /// successful answer the call got last.
    static ANSWERED_BY: RefCell<Option<String>>;
}

/// See the module docs.
pub struct CallRouter<T: TableSource> {
    table: Arc<T>,
    nameservices: Nameservices,
    leases: LeaseHolders,
    /// Owner of the virtual directories.
    superuser: String,
    /// The client id of the calls this router makes itself ([`CallRouter::own_call`]).
    own_client_id: String,
    next_call_id: AtomicU64,
}

/// Whether `r` says the path is not there (try the next destination).
fn not_found(r: &Result<OpResult, FsError>) -> bool {
    matches!(r, Err(FsError::FileNotFound(_)) | Ok(OpResult::Status(None)))
}

impl<T: TableSource> CallRouter<T> {
    /// Route by `table`, over `nameservices`; virtual directories (above
    /// the mount points) belong to `superuser`.
    pub fn new(table: Arc<T>, nameservices: Nameservices, superuser: &str) -> CallRouter<T> {
        CallRouter {
            table,
            nameservices,
            leases: LeaseHolders::default(),
            superuser: superuser.to_string(),
            own_client_id: format!("raftfs-router-{}", uuid::Uuid::new_v4()),
            next_call_id: AtomicU64::new(1),
        }
    }

    /// The table this router routes by.
    pub fn table(&self) -> &Arc<T> {
        &self.table
    }

    /// The nameservices calls are forwarded to.
    pub fn nameservices(&self) -> &Nameservices {
        &self.nameservices
    }

    /// Run `op` on nameservice `ns` as this router's own call (its own
    /// client id, as the superuser): the calls a router makes itself
    /// (mount quotas, telling nameservices what they own). Not routed by
    /// the table, so never refused as not owned.
    pub async fn own_call(&self, fed: &Federation, ns: &str, op: &Op) -> Result<OpResult, FsError> {
        let ctx = self.own_ctx();
        self.forward(fed, &ctx, ns, op).await
    }

    /// Run the `dfsadmin` command `op` on nameservice `ns` as this
    /// router's own call (as the superuser): what a router's status pages
    /// ask each nameservice (its DataNodes, its open files).
    pub async fn own_admin(&self, fed: &Federation, ns: &str, op: &AdminOp) -> Result<AdminResult, FsError> {
        let ctx = self.own_ctx();
        self.nameservices.admin(registered(fed, ns)?, &ctx, op).await
    }

    /// The context of a call this router makes itself.
    fn own_ctx(&self) -> pb::CallContext {
        pb::CallContext {
            client_id: self.own_client_id.clone(),
            call_id: self.next_call_id.fetch_add(1, Ordering::Relaxed),
            user: self.superuser.clone(),
            groups: Vec::new(),
            delegation_token: Vec::new(),
            federation_version: 0,
        }
    }

    /// Route and run one call of the caller `ctx` names (its user already
    /// authenticated by the router). The call carries the table version it
    /// was routed by; a nameservice that does not own the path refuses it
    /// with `NotOwned` before running it, and the call is routed again (at
    /// most [`MAX_REROUTES`] times):
    /// * the nameservice names a newer version than the router's: once the
    ///   router has it (waiting at most [`MAX_REROUTE_WAIT_MS`]);
    /// * it names the same or an older one: a change is on its way (a
    ///   nameservice gives paths up just before the table moves them, and
    ///   is told its new ones just after), so after a newer version or
    ///   [`REROUTE_PAUSE_MS`], whichever comes first.
    ///
    /// A refused call was not run, so routing it again is safe.
    // Not an async fn: it would keep the context twice (see
    // `FileSystem`'s `the_future_of_a_call_stays_small`).
    #[allow(clippy::manual_async_fn)]
    pub fn call<'a>(
        &'a self,
        mut ctx: pb::CallContext,
        op: &'a Op,
    ) -> impl Future<Output = Result<OpResult, FsError>> + Send + 'a {
        async move {
            let mut fed = self.table.current();
            let mut reroutes = 0;
            loop {
                ctx.federation_version = fed.version();
                // Only the refusal's parts are kept across the waits below
                // (a whole answer would be in this future).
                let (version, message) = match self.route_once(&fed, &ctx, op).await {
                    Err(FsError::NotOwned { version, message }) if reroutes < MAX_REROUTES => (version, message),
                    r => return r,
                };
                reroutes += 1;
                if version > fed.version() {
                    let wait = Duration::from_millis(MAX_REROUTE_WAIT_MS);
                    // Boxed, here and below: rare, and their futures are large.
                    if !Box::pin(self.table.wait_for_version(version, wait)).await {
                        return Err(FsError::NotOwned { version, message });
                    }
                } else {
                    let pause = Duration::from_millis(REROUTE_PAUSE_MS);
                    Box::pin(self.table.wait_for_version(fed.version() + 1, pause)).await;
                }
                fed = self.table.current();
            }
        }
    }

    /// Route and run `op` once, by `fed`: the common call one way (one
    /// forward, none of the general routing's levels), any other by the
    /// general routing (boxed: its future is large). Not an async fn: the
    /// choice is made before anything is awaited, so the one-way route is
    /// kept once in the future.
    fn route_once<'a>(
        &'a self,
        fed: &'a Federation,
        ctx: &'a pb::CallContext,
        op: &'a Op,
    ) -> impl Future<Output = Result<OpResult, FsError>> + Send + 'a {
        match one_way(fed, op) {
            Some(way) => Either::Left(async move {
                let r = self.forward(fed, ctx, way.nameservice, &way.op).await;
                way.answer(r)
            }),
            None => Either::Right(Box::pin(self.route(fed, ctx, op))),
        }
    }

    /// [`CallRouter::call`], and the nameservice that gave the answer (the
    /// last to answer with success, for a call sent to several; `None`
    /// when none did: the router answered from its table): a Hadoop
    /// client's block needs its nameservice's block pool.
    pub async fn call_answered(&self, ctx: pb::CallContext, op: &Op) -> (Result<OpResult, FsError>, Option<String>) {
        ANSWERED_BY
            .scope(RefCell::new(None), async {
                let r = self.call(ctx, op).await;
                (r, ANSWERED_BY.with(|a| a.borrow_mut().take()))
            })
            .await
    }

    /// Run the caller's `op` on nameservice `ns` itself, not routed by the
    /// table: a call that names an object of that nameservice rather than
    /// a path (a block of its pool: Hadoop's `updatePipeline`, as RBF
    /// routes it by the block pool). The nameservice checks the caller as
    /// for any call.
    pub async fn call_nameservice(&self, mut ctx: pb::CallContext, ns: &str, op: &Op) -> Result<OpResult, FsError> {
        let fed = self.table.current();
        ctx.federation_version = 0;
        self.forward(&fed, &ctx, ns, op).await
    }

    async fn route(&self, fed: &Federation, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
        match op {
            // The less common calls' futures are boxed, so that every
            // call's future (copied as callers build theirs) stays small.
            Op::RenewLease => Box::pin(self.renew_lease(fed, ctx)).await,
            Op::GetFileInfo { path } => self.file_info(fed, ctx, path).await,
            Op::GetListing {
                path,
                start_after,
                limit,
            } => Box::pin(self.listing(fed, ctx, path, start_after, *limit)).await,
            Op::GetContentSummary { path } => Box::pin(self.content_summary(fed, ctx, path)).await,
            Op::Rename { .. } | Op::Rename2 { .. } => Box::pin(self.rename(fed, ctx, op)).await,
            Op::Concat { target, sources } => Box::pin(self.concat(fed, ctx, op, target, sources)).await,
            Op::CommitBlockSynchronization { .. } | Op::AddDelegationKey { .. } | Op::ExpireDelegationTokens { .. } => {
                Err(FsError::InvalidArgument(format!(
                    "{} comes from a nameservice's own members and DataNodes, not from clients",
                    op.name()
                )))
            }
            Op::SetDatanodeAdmin { .. } => Err(FsError::Unsupported(
                "decommissioning is per nameservice: run dfsadmin against its members (--fs raftfs://MEMBER,...)"
                    .into(),
            )),
            Op::SetOwnership { .. } => Err(FsError::InvalidArgument(
                "setOwnership is the routers' own call to a nameservice, not a client's".into(),
            )),
            // A nameservice's token is renewed and cancelled where it was
            // issued; the routers' own token ops never reach here (a router
            // answers them, and the SDK sends them to the routers).
            Op::RenewDelegationToken { token, .. } | Op::CancelDelegationToken { token } => {
                Box::pin(self.forward(fed, ctx, &token.service, op)).await
            }
            Op::GetDelegationToken { .. } => Err(FsError::Unsupported(
                "delegation tokens of the federated namespace are issued by the routers: ask them \
                 (raftfs fetchdt --fs raftfs://ROUTER,...)"
                    .into(),
            )),
            _ => self.path_call(fed, ctx, op).await,
        }
    }

    /// Forward `op` (already rewritten) to `ns`; note where a writer opens files.
    async fn forward(&self, fed: &Federation, ctx: &pb::CallContext, ns: &str, op: &Op) -> Result<OpResult, FsError> {
        // Boxed: the connection's future (its retry loop and the attempt's
        // select) is most of a routed call's, and each of the routing
        // levels above would carry (and copy) it.
        let r = Box::pin(self.nameservices.forward_in(fed, ns, ctx, op)).await;
        if r.is_ok() {
            if matches!(op, Op::Create { .. } | Op::Append { .. }) {
                self.leases.opened(&ctx.client_id, ns);
            }
            // Outside `call_answered` nobody asks.
            let _ = ANSWERED_BY.try_with(|a| *a.borrow_mut() = Some(ns.to_string()));
        }
        r
    }

    /// Forward `op` to destination `d`, its path rewritten to `d`'s.
    async fn forward_to(
        &self,
        fed: &Federation,
        ctx: &pb::CallContext,
        d: &Destination,
        op: &Op,
    ) -> Result<OpResult, FsError> {
        self.forward(fed, ctx, &d.nameservice, &retarget(op, &d.path)).await
    }

    /// Try the destinations in order until one has the path; the last answer otherwise.
    async fn sequential(
        &self,
        fed: &Federation,
        ctx: &pb::CallContext,
        ds: &[Destination],
        op: &Op,
    ) -> Result<OpResult, FsError> {
        // Boxed (only when a destination lacks the path): a whole result
        // kept across the next await would be in every routed call's future.
        let mut last = None;
        for d in ds {
            let r = self.forward_to(fed, ctx, d, op).await;
            if !not_found(&r) {
                return r;
            }
            last = Some(Box::new(r));
        }
        last.map_or_else(|| Err(FsError::Unroutable("no destination".into())), |r| *r)
    }

    async fn path_call(&self, fed: &Federation, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
        let loc = locate(fed, op.src_path())?;
        let (path, entry, candidates) = match &loc {
            Location::Virtual { path, .. } => {
                return match op {
                    // The directory exists (mkdirs is true when it does afterwards).
                    Op::Mkdirs { .. } => Ok(OpResult::Bool(true)),
                    _ if op.is_write() => Err(FsError::AccessControl(format!(
                        "{path} is a directory of the router's mount table, not of a nameservice: \
                         {} it with routeradmin",
                        op.name()
                    ))),
                    _ => Err(FsError::FileNotFound(format!("Path is not a file: {path}"))),
                };
            }
            Location::Mounted {
                path,
                entry,
                candidates,
                ..
            } => (path, *entry, candidates),
        };
        check_writable(entry, path, op)?;
        if loc.is_mount_point() && matches!(op, Op::Delete { .. }) {
            return Err(FsError::AccessControl(format!(
                "{path} is a mount point: remove its entry first (routeradmin -rm {path})"
            )));
        }
        if candidates.len() == 1 {
            return self.forward_to(fed, ctx, &candidates[0], op).await;
        }
        Box::pin(self.fan_out(fed, ctx, entry, candidates, op)).await
    }

    async fn file_info(&self, fed: &Federation, ctx: &pb::CallContext, path: &str) -> Result<OpResult, FsError> {
        let loc = match locate(fed, path) {
            Err(FsError::Unroutable(_)) => return Ok(OpResult::Status(None)),
            other => other?,
        };
        let name = last_component(loc.path()).to_string();
        let op = Op::GetFileInfo { path: String::new() };
        match &loc {
            Location::Virtual { children, .. } => Ok(OpResult::Status(Some(directory_status(
                &name,
                None,
                None,
                &self.superuser,
                children.len(),
            )))),
            Location::Mounted { entry, candidates, .. } => {
                let found = match self.sequential(fed, ctx, candidates, &op).await? {
                    OpResult::Status(s) => s,
                    other => return Err(FsError::Internal(format!("getFileInfo answered {other:?}"))),
                };
                if loc.is_mount_point() {
                    return Ok(OpResult::Status(Some(directory_status(
                        &name,
                        Some(*entry),
                        found,
                        &self.superuser,
                        fed.mounts().child_mount_names(loc.path()).len(),
                    ))));
                }
                Ok(OpResult::Status(found.map(|mut s| {
                    s.path_suffix = name;
                    s
                })))
            }
        }
    }

    async fn renew_lease(&self, fed: &Federation, ctx: &pb::CallContext) -> Result<OpResult, FsError> {
        let names = self.leases.renew(&ctx.client_id);
        let rs = join_all(names.iter().map(|ns| self.forward(fed, ctx, ns, &Op::RenewLease))).await;
        for r in rs {
            r?;
        }
        Ok(OpResult::Unit)
    }
}

/// Refuse a write under a read-only mount point.
fn check_writable(entry: &MountEntry, path: &str, op: &Op) -> Result<(), FsError> {
    if refused_as_read_only(entry, op) {
        return Err(FsError::AccessControl(format!(
            "{} of {path} is not allowed: {} is a read-only mount point",
            op.name(),
            entry.source
        )));
    }
    Ok(())
}
