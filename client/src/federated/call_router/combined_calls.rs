//! The calls a [`CallRouter`] answers from several nameservices, or from
//! its table and them together: a call on a path with several
//! destinations (fan-out), listings (merged with the mount points below),
//! content summaries (summed), renames and concats (refused across
//! nameservices). The pure merging is in `federated::merge`; single-path
//! routing, forwarding and the route of each kind of call are in the
//! parent module.

use futures::future::join_all;
use raftfs_federation::mount_table::within;
use raftfs_federation::routing::{locate, rename_destination, retarget_rename, Location};
use raftfs_federation::{Destination, Federation, MountEntry, Order};
use raftfs_proto::limits::{MAX_CONCAT_SOURCES, MAX_LISTING_ENTRIES};
use raftfs_proto::{pb, ContentSummary, FileStatus, FsError, Op, OpResult};
use rand::Rng;

use super::{check_writable, CallRouter, MAX_MOUNT_STATUS_LOOKUPS_PER_PAGE};
use crate::federated::merge::{directory_status, merge_listing, sum_summaries};
use crate::federated::TableSource;

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

impl<T: TableSource> CallRouter<T> {
    /// The destination among `ds` where the path exists, if any (asked of all at once).
    pub(super) async fn existing(
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

    /// A call on a path with several destinations (see [`Fanout`]).
    pub(super) async fn fan_out(
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

    /// The status a listing shows for mount point (or virtual directory) `name` below `dir`.
    pub(super) async fn mount_child(
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

    pub(super) async fn listing(
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

    pub(super) async fn content_summary(
        &self,
        fed: &Federation,
        ctx: &pb::CallContext,
        path: &str,
    ) -> Result<OpResult, FsError> {
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

    pub(super) async fn rename(&self, fed: &Federation, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
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
    pub(super) async fn concat(
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
