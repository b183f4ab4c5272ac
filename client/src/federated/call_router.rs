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
use raftfs_federation::mount_table::within;
use raftfs_federation::routing::{locate, rename_destination, retarget, retarget_rename, Location};
use raftfs_federation::{Destination, Federation, MountEntry, NameserviceRecord, Order};
use raftfs_proto::limits::{MAX_CONCAT_SOURCES, MAX_LISTING_ENTRIES};
use raftfs_proto::{pb, AdminOp, AdminResult, ContentSummary, FileStatus, FsError, Op, OpResult};
use rand::Rng;

use super::lease_holders::LeaseHolders;
use super::merge::{directory_status, last_component, merge_listing, sum_summaries};
use super::nameservices::Nameservices;
use super::one_way::{one_way, refused_as_read_only};
use super::TableSource;

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

/// How a call on a multi-destination path is sent.
enum Fanout {
    /// Where the path exists, else where the order picks.
    New,
    /// To every destination.
    All,
    /// Destinations in order until one has the path.
    Sequential,
}

fn fanout(op: &Op) -> Fanout {
    match op {
        Op::Create { .. } | Op::Mkdirs { .. } => Fanout::New,
        Op::Delete { .. }
        | Op::SetPermission { .. }
        | Op::SetOwner { .. }
        | Op::SetTimes { .. }
        | Op::SetQuota { .. } => Fanout::All,
        _ => Fanout::Sequential,
    }
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
        self.nameservices.admin(self.record(fed, ns)?, &ctx, op).await
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

    fn record<'a>(&self, fed: &'a Federation, ns: &str) -> Result<&'a NameserviceRecord, FsError> {
        fed.nameservice(ns).ok_or_else(|| {
            FsError::Unroutable(format!(
                "the mount table names nameservice {ns}, which is not registered"
            ))
        })
    }

    /// Forward `op` (already rewritten) to `ns`; note where a writer opens files.
    async fn forward(&self, fed: &Federation, ctx: &pb::CallContext, ns: &str, op: &Op) -> Result<OpResult, FsError> {
        let record = self.record(fed, ns)?;
        // Boxed: the connection's future (its retry loop and the attempt's
        // select) is most of a routed call's, and each of the routing
        // levels above would carry (and copy) it.
        let r = Box::pin(self.nameservices.forward(record, ctx, op)).await;
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

    /// The destination among `ds` where the path exists, if any (asked of all at once).
    async fn existing(
        &self,
        fed: &Federation,
        ctx: &pb::CallContext,
        ds: &[Destination],
    ) -> Result<Option<Destination>, FsError> {
        let probe = Op::GetFileInfo { path: String::new() };
        let asks = ds.iter().map(|d| self.forward_to(fed, ctx, d, &probe));
        let mut found = None;
        for (d, r) in ds.iter().zip(join_all(asks).await) {
            match r {
                Ok(OpResult::Status(Some(_))) if found.is_none() => found = Some(d.clone()),
                Ok(_) | Err(FsError::FileNotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(found)
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

    /// A call on a path with several destinations (see [`Fanout`]).
    async fn fan_out(
        &self,
        fed: &Federation,
        ctx: &pb::CallContext,
        entry: &MountEntry,
        candidates: &[Destination],
        op: &Op,
    ) -> Result<OpResult, FsError> {
        match fanout(op) {
            Fanout::New => {
                let to = match self.existing(fed, ctx, candidates).await? {
                    Some(d) => d,
                    None => pick_new(entry, candidates),
                };
                self.forward_to(fed, ctx, &to, op).await
            }
            Fanout::All => {
                let rs = join_all(candidates.iter().map(|d| self.forward_to(fed, ctx, d, op))).await;
                combine_all(rs)
            }
            Fanout::Sequential => self.sequential(fed, ctx, candidates, op).await,
        }
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

    /// The status a listing shows for mount point (or virtual directory) `name` below `dir`.
    async fn mount_child(
        &self,
        fed: &Federation,
        ctx: &pb::CallContext,
        dir: &str,
        name: &str,
        ask: bool,
    ) -> FileStatus {
        let full = if dir == "/" {
            format!("/{name}")
        } else {
            format!("{dir}/{name}")
        };
        match locate(fed, &full) {
            Ok(Location::Mounted { entry, candidates, .. }) => {
                let dest = if ask {
                    match self
                        .forward_to(fed, ctx, &candidates[0], &Op::GetFileInfo { path: String::new() })
                        .await
                    {
                        Ok(OpResult::Status(s)) => s,
                        _ => None,
                    }
                } else {
                    None
                };
                let below = fed.mounts().child_mount_names(&full).len();
                directory_status(name, Some(entry), dest, &self.superuser, below)
            }
            _ => {
                let below = fed.mounts().child_mount_names(&full).len();
                directory_status(name, None, None, &self.superuser, below)
            }
        }
    }

    async fn listing(
        &self,
        fed: &Federation,
        ctx: &pb::CallContext,
        path: &str,
        start_after: &str,
        limit: u32,
    ) -> Result<OpResult, FsError> {
        let loc = match locate(fed, path) {
            Err(FsError::Unroutable(_)) => return Err(FsError::FileNotFound(format!("File {path} does not exist."))),
            other => other?,
        };
        let dir = loc.path().to_string();
        // 0 asks for the nameservices' own page size, as it does of one nameservice.
        let limit_entries = match limit {
            0 => MAX_LISTING_ENTRIES,
            n => (n as usize).min(MAX_LISTING_ENTRIES),
        };
        let pages = match &loc {
            Location::Virtual { .. } => Vec::new(),
            Location::Mounted { candidates, .. } => {
                let op = Op::GetListing {
                    path: String::new(),
                    start_after: start_after.to_string(),
                    limit,
                };
                let rs = join_all(candidates.iter().map(|d| self.forward_to(fed, ctx, d, &op))).await;
                let mut pages = Vec::new();
                let mut first_err = None;
                for r in rs {
                    match r {
                        // A file lists as itself: pass its page on as it is.
                        Ok(OpResult::Listing(l)) if l.entries.len() == 1 && l.entries[0].path_suffix.is_empty() => {
                            return Ok(OpResult::Listing(l));
                        }
                        Ok(OpResult::Listing(l)) => pages.push(l),
                        Ok(other) => return Err(FsError::Internal(format!("getListing answered {other:?}"))),
                        Err(e) => {
                            first_err.get_or_insert(e);
                        }
                    }
                }
                // A destination without the directory lists nothing, as
                // long as the directory is somewhere: in another
                // destination, or as a mount point (which lists even if
                // its destination is missing), or above mount points.
                let somewhere =
                    !pages.is_empty() || loc.is_mount_point() || !fed.mounts().child_mount_names(&dir).is_empty();
                match first_err {
                    Some(FsError::FileNotFound(_)) if somewhere => {}
                    Some(e) => return Err(e),
                    None => {}
                }
                pages
            }
        };
        let children: Vec<String> = fed
            .mounts()
            .child_mount_names(&dir)
            .into_iter()
            .filter(|n| n.as_str() > start_after)
            .take(limit_entries + 1)
            .collect();
        let mounts = join_all(
            children
                .iter()
                .enumerate()
                .map(|(i, n)| self.mount_child(fed, ctx, &dir, n, i < MAX_MOUNT_STATUS_LOOKUPS_PER_PAGE)),
        )
        .await;
        Ok(OpResult::Listing(merge_listing(
            pages,
            mounts,
            start_after,
            limit_entries,
        )))
    }

    async fn content_summary(&self, fed: &Federation, ctx: &pb::CallContext, path: &str) -> Result<OpResult, FsError> {
        let loc = match locate(fed, path) {
            Err(FsError::Unroutable(_)) => return Err(FsError::FileNotFound(format!("File does not exist: {path}"))),
            other => other?,
        };
        let op = Op::GetContentSummary { path: String::new() };
        let mut summed: Vec<Destination> = Vec::new();
        let mut own: Option<ContentSummary> = None;
        let mut others = Vec::new();
        if let Location::Mounted { candidates, .. } = &loc {
            let rs = join_all(candidates.iter().map(|d| self.forward_to(fed, ctx, d, &op))).await;
            let mut missing = 0;
            for r in rs {
                match r {
                    Ok(OpResult::Summary(s)) if own.is_none() => own = Some(s),
                    Ok(OpResult::Summary(s)) => others.push(s),
                    Ok(other) => return Err(FsError::Internal(format!("getContentSummary answered {other:?}"))),
                    Err(FsError::FileNotFound(_)) => missing += 1,
                    Err(e) => return Err(e),
                }
            }
            if missing == candidates.len() && !loc.is_mount_point() {
                return Err(FsError::FileNotFound(format!("File does not exist: {path}")));
            }
            summed.extend(candidates.iter().cloned());
        }
        // Mount points below: each destination once, and none inside one already summed.
        let mut below: Vec<Destination> = Vec::new();
        for e in fed.mounts().entries_below(loc.path()) {
            for d in &e.destinations {
                if fed.mounts().is_disabled(&d.nameservice) {
                    continue;
                }
                let inside = |o: &Destination| o.nameservice == d.nameservice && within(&d.path, &o.path);
                if !summed.iter().any(inside) && !below.iter().any(inside) {
                    below.push(d.clone());
                }
            }
        }
        let rs = join_all(below.iter().map(|d| self.forward_to(fed, ctx, d, &op))).await;
        for r in rs {
            match r {
                Ok(OpResult::Summary(s)) => others.push(s),
                Ok(other) => return Err(FsError::Internal(format!("getContentSummary answered {other:?}"))),
                // A mount point whose destination is missing holds nothing.
                Err(FsError::FileNotFound(_)) => {}
                Err(e) => return Err(e),
            }
        }
        let mut total = sum_summaries(own, others);
        if matches!(loc, Location::Virtual { .. }) {
            total.directory_count += 1; // the virtual directory itself
        }
        Ok(OpResult::Summary(total))
    }

    async fn rename(&self, fed: &Federation, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
        let dst_path = rename_destination(op).expect("a rename has a destination");
        let src = locate(fed, op.src_path())?;
        if src.is_mount_point() {
            return Err(FsError::AccessControl(format!(
                "{} is a mount point: move it with routeradmin -update, not rename",
                src.path()
            )));
        }
        let dst = locate(fed, dst_path)?;
        let (
            Location::Mounted {
                path: sp,
                entry: se,
                candidates: sc,
                ..
            },
            Location::Mounted {
                path: dp,
                entry: de,
                candidates: dc,
                ..
            },
        ) = (&src, &dst)
        else {
            let p = if matches!(src, Location::Virtual { .. }) {
                src.path()
            } else {
                dst.path()
            };
            return Err(FsError::AccessControl(format!(
                "{p} is a directory of the router's mount table, not of a nameservice: rename it with routeradmin"
            )));
        };
        if dst.is_mount_point() && matches!(op, Op::Rename2 { .. }) {
            return Err(FsError::AccessControl(format!(
                "{dp} is a mount point: a rename may not replace it"
            )));
        }
        check_writable(se, sp, op)?;
        check_writable(de, dp, op)?;
        let from = if sc.len() == 1 {
            sc[0].clone()
        } else {
            self.existing(fed, ctx, sc).await?.unwrap_or_else(|| sc[0].clone())
        };
        let Some(to) = dc.iter().find(|d| d.nameservice == from.nameservice) else {
            let there: Vec<&str> = dc.iter().map(|d| d.nameservice.as_str()).collect();
            return Err(FsError::CrossNameservice(format!(
                "Rename of {sp} to {dp} is not allowed: {sp} is in nameservice {} and {dp} in {}; \
                 a rename cannot cross nameservices (copy, then delete)",
                from.nameservice,
                there.join(",")
            )));
        };
        self.forward(fed, ctx, &from.nameservice, &retarget_rename(op, &from.path, &to.path))
            .await
    }

    /// A concat: the target and every source are found (a multi-destination
    /// entry asks its nameservices which holds each), and must all be in
    /// one nameservice, which then checks the rest.
    async fn concat(
        &self,
        fed: &Federation,
        ctx: &pb::CallContext,
        op: &Op,
        target: &str,
        sources: &[String],
    ) -> Result<OpResult, FsError> {
        if sources.len() > MAX_CONCAT_SOURCES {
            return Err(FsError::InvalidArgument(format!(
                "concat: {} source files given; at most {MAX_CONCAT_SOURCES} are joined in one call",
                sources.len()
            )));
        }
        let mut placed: Vec<(String, Destination)> = Vec::with_capacity(1 + sources.len());
        for p in std::iter::once(target).chain(sources.iter().map(String::as_str)) {
            let Location::Mounted {
                path,
                entry,
                candidates,
                ..
            } = locate(fed, p)?
            else {
                return Err(FsError::FileNotFound(format!("Path is not a file: {p}")));
            };
            check_writable(entry, &path, op)?;
            let d = if candidates.len() == 1 {
                candidates[0].clone()
            } else {
                self.existing(fed, ctx, &candidates)
                    .await?
                    .ok_or_else(|| FsError::FileNotFound(format!("File does not exist: {path}")))?
            };
            placed.push((path.into_owned(), d));
        }
        let (t_path, t_dest) = &placed[0];
        if let Some((p, d)) = placed[1..].iter().find(|(_, d)| d.nameservice != t_dest.nameservice) {
            return Err(FsError::CrossNameservice(format!(
                "Concat of {p} to {t_path} is not allowed: {p} is in nameservice {} and {t_path} in {}; \
                 a concat cannot cross nameservices",
                d.nameservice, t_dest.nameservice
            )));
        }
        let routed = Op::Concat {
            target: t_dest.path.clone(),
            sources: placed[1..].iter().map(|(_, d)| d.path.clone()).collect(),
        };
        self.forward(fed, ctx, &t_dest.nameservice, &routed).await
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

/// Where a new file or directory of a multi-destination entry goes.
fn pick_new(entry: &MountEntry, candidates: &[Destination]) -> Destination {
    match entry.order {
        Order::Random => candidates[rand::thread_rng().gen_range(0..candidates.len())].clone(),
        Order::Hash | Order::HashAll | Order::Space => candidates[0].clone(),
    }
}

/// One answer from a call sent to every destination: success if any
/// succeeded (a delete is true if any deleted), else the first error that
/// is not "not found", else not found.
fn combine_all(rs: Vec<Result<OpResult, FsError>>) -> Result<OpResult, FsError> {
    let mut ok: Option<OpResult> = None;
    let mut not_found_err = None;
    for r in rs {
        match r {
            Ok(OpResult::Bool(b)) => {
                let was = matches!(ok, Some(OpResult::Bool(true)));
                ok = Some(OpResult::Bool(b || was));
            }
            Ok(r) => {
                ok.get_or_insert(r);
            }
            Err(e @ FsError::FileNotFound(_)) => {
                not_found_err.get_or_insert(e);
            }
            Err(e) => return Err(e),
        }
    }
    match (ok, not_found_err) {
        (Some(r), _) => Ok(r),
        (None, Some(e)) => Err(e),
        (None, None) => Err(FsError::Internal("a call sent to no destination".into())),
    }
}
