//! [`FileSystem`]: the SDK's handle on one file system: one nameservice
//! (its members' addresses), or a federation (its routers' addresses).
//!
//! Through routers, calls are routed by the SDK itself by default
//! ([`Routing::Direct`]): it keeps the routers' mount table current
//! ([`FederationWatch`]) and sends each call straight to the leader of the
//! nameservice that owns its path, one hop fewer than through a router
//! (see [`crate::federated`]). With [`Routing::ViaRouter`] every call goes
//! to a router, which routes it the same way.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use futures::Stream;
use raftfs_trust::Dialer;
use tonic::transport::Channel;

use raftfs_proto::limits::MAX_LISTING_ENTRIES;
use raftfs_proto::pb::data_transfer_client::DataTransferClient;
use raftfs_proto::{
    codec, pb, AdminOp, AdminResult, ContentSummary, DirectoryListing, FileStatus, FsError, Op, OpResult, Permission,
    QuotaSetting,
};

use crate::data::{FileReader, FileWriter};
use crate::federated::CallRouter;
use crate::federation_watch::FederationWatch;
use crate::identity::Identity;
use crate::leader_conn::LeaderConnection;
use crate::options::{ClientOptions, Routing, DEFAULT_BLOCK_SIZE_BYTES, DEFAULT_REPLICATION, DEFAULT_UMASK};
use crate::uri::parse_fs;

/// A connection to one file system. Cheap to share (`&self` methods, and
/// `Clone` shares one connection); cloned channels multiplex concurrent
/// calls over one HTTP/2 connection per member.
#[derive(Clone)]
pub struct FileSystem {
    pub(crate) core: Arc<Core>,
}

/// The SDK's own routing of a federation's calls ([`Routing::Direct`]).
type DirectRouter = CallRouter<FederationWatch>;

/// What every handle on one file system shares: the connection to its
/// members or routers, identity, call ids, DataNode channels, and the
/// lease renewer of open writers.
pub(crate) struct Core {
    conn: LeaderConnection,
    /// Dials DataNodes (and, in direct mode, nameservices).
    pub(crate) dialer: Dialer,
    identity: Identity,
    pub(crate) client_id: String,
    next_call_id: AtomicU64,
    pub(crate) opts: ClientOptions,
    /// DataNode address and whether over plaintext → its data transfer client.
    pub(crate) datanodes: Mutex<HashMap<(String, bool), DataTransferClient<Channel>>>,
    /// Writers open now; the lease renewer runs while there are any.
    pub(crate) open_writers: AtomicUsize,
    pub(crate) renewer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The nameservice's block pool id, once learned (never through a
    /// router, whose files live in many block pools).
    pool_id: Mutex<Option<String>>,
    /// Whether the addresses are routers (learned on first need, from
    /// `MemberInfo`): then every file's block pool is asked for.
    via_router: Mutex<Option<bool>>,
    /// Set up on the first call: the SDK's own routing, when the addresses
    /// are routers and the options say [`Routing::Direct`].
    direct: tokio::sync::OnceCell<Option<Arc<DirectRouter>>>,
    /// The delegation token calls carry (encoded), and its owner, the user they claim.
    delegation_token: Option<(Vec<u8>, String)>,
    /// That token is the routers' (so calls are not routed directly).
    holds_router_token: bool,
}

impl FileSystem {
    /// Connect to the file system named by `fs` (`raftfs://h:p,h:p`: a
    /// nameservice's members, or routers). Connections are made lazily:
    /// this fails only on a malformed `fs`.
    pub fn connect(fs: &str, identity: Identity, opts: ClientOptions) -> Result<FileSystem, FsError> {
        parse_fs(fs)?; // a malformed address is the error to report, before any TLS setting
        let dialer = opts.tls.dialer()?;
        FileSystem::connect_with_dialer(fs, identity, opts, dialer)
    }

    /// [`FileSystem::connect`] with a given dialer instead of the one
    /// `opts.tls` names.
    pub fn connect_with_dialer(
        fs: &str,
        identity: Identity,
        opts: ClientOptions,
        dialer: Dialer,
    ) -> Result<FileSystem, FsError> {
        let members = parse_fs(fs)?;
        let token = opts.delegation_token.resolve()?;
        let holds_router_token = token
            .as_ref()
            .is_some_and(|t| t.service == raftfs_federation::router_tokens::ROUTER_TOKEN_SERVICE);
        let delegation_token = match token {
            Some(t) => Some((codec::encode(&t)?, t.identifier.owner.clone())),
            None => None,
        };
        let core = Core {
            conn: LeaderConnection::new(members, dialer.clone(), opts.clone()),
            dialer,
            identity,
            client_id: format!("raftfs-client-{}", uuid::Uuid::new_v4()),
            next_call_id: AtomicU64::new(1),
            opts,
            datanodes: Mutex::new(HashMap::new()),
            open_writers: AtomicUsize::new(0),
            renewer: Mutex::new(None),
            pool_id: Mutex::new(None),
            via_router: Mutex::new(None),
            direct: tokio::sync::OnceCell::new(),
            delegation_token,
            holds_router_token,
        };
        Ok(FileSystem { core: Arc::new(core) })
    }

    pub fn identity(&self) -> &Identity {
        &self.core.identity
    }

    pub fn client_id(&self) -> &str {
        &self.core.client_id
    }

    pub fn options(&self) -> &ClientOptions {
        &self.core.opts
    }

    /// Run one namespace operation (retried, failover-aware; routed by the
    /// SDK in direct mode).
    pub fn call(&self, op: Op) -> impl Future<Output = Result<OpResult, FsError>> + Send + '_ {
        // Not an async fn, here and below: an async fn keeps its arguments
        // twice, and a call's futures are copied on every call
        // (the test `the_future_of_a_call_stays_small` bounds them).
        self.core.call(op)
    }

    /// The member (or router) addresses this handle was given.
    pub fn members(&self) -> &[String] {
        self.core.member_addrs()
    }

    /// Member `addr`'s report of itself (role, term, log and applied
    /// indexes, health, CPU time), over this handle's connection settings.
    pub async fn member_info(&self, addr: &str) -> Result<pb::MemberInfoReply, FsError> {
        self.core.conn.member_info(addr).await
    }

    /// Run one `haadmin`/`dfsadmin` command on the leader (superuser only).
    pub async fn admin(&self, op: AdminOp) -> Result<AdminResult, FsError> {
        self.core.admin(op).await
    }

    /// Whether calls are routed by this SDK itself (direct mode, through
    /// routers' addresses), known after the first call.
    pub fn routes_directly(&self) -> bool {
        matches!(self.core.direct.get(), Some(Some(_)))
    }

    /// Run `op` on the leader for another caller: `ctx` carries that
    /// caller's client id, call id, user and delegation token instead of
    /// this handle's. This is what a router does with the calls it
    /// forwards: a retry of the caller's call reaches the nameservice with
    /// the same (client id, call id), so its retry table answers it. The
    /// nameservice believes the user `ctx` names only from a peer it trusts
    /// to say so (a router's certificate, or `--auth simple`). Block access
    /// tokens in the reply are on the result's blocks.
    pub async fn forward(&self, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
        self.core.conn.forward(ctx, op).await
    }
}

impl Core {
    /// The channel to member `addr` (one per member, shared by every call).
    pub(crate) fn namespace_channel(&self, addr: &str) -> Result<Channel, FsError> {
        self.conn.namespace_channel(addr)
    }

    pub(crate) fn member_addrs(&self) -> &[String] {
        self.conn.member_addrs()
    }

    /// The context of this client's own call `call_id`: its client id,
    /// user (the token's owner when it authenticates by token) and token.
    fn own_ctx(&self, call_id: u64) -> pb::CallContext {
        pb::CallContext {
            client_id: self.client_id.clone(),
            call_id,
            user: match &self.delegation_token {
                Some((_, owner)) => owner.clone(),
                None => self.identity.user.clone(),
            },
            groups: self.identity.groups.clone(),
            delegation_token: self
                .delegation_token
                .as_ref()
                .map(|(t, _)| t.clone())
                .unwrap_or_default(),
            // Set by the router that routes it (the SDK's own in direct mode).
            federation_version: 0,
        }
    }

    pub fn call(&self, op: Op) -> impl Future<Output = Result<OpResult, FsError>> + Send + '_ {
        let ctx = self.own_ctx(self.next_call_id.fetch_add(1, Ordering::Relaxed));
        async move {
            // Token ops go to the addresses as given: members issue their
            // nameservice's tokens, routers the federated namespace's (and
            // pass a nameservice token's renewal on to it), also when this
            // SDK routes the other calls itself.
            if matches!(
                op,
                Op::GetDelegationToken { .. } | Op::RenewDelegationToken { .. } | Op::CancelDelegationToken { .. }
            ) {
                return self.conn.call(&ctx, &op).await;
            }
            match self.direct().await? {
                // Not boxed: the routed call's future is no larger than
                // the direct one's (the test below says so).
                Some(router) => router.call(ctx, &op).await,
                None => self.conn.call(&ctx, &op).await,
            }
        }
    }

    /// Run one `haadmin`/`dfsadmin` command on the leader (superuser only).
    pub async fn admin(&self, op: AdminOp) -> Result<AdminResult, FsError> {
        let ctx = self.own_ctx(self.next_call_id.fetch_add(1, Ordering::Relaxed));
        self.conn.admin(&ctx, &op).await
    }

    /// The SDK's own router, if calls are routed directly: set up on the
    /// first call that finds the addresses are routers (and `Routing::Direct`).
    async fn direct(&self) -> Result<Option<&Arc<DirectRouter>>, FsError> {
        // A routers' token is checked by the routers: its holder's calls go
        // through them.
        if self.opts.routing == Routing::ViaRouter || self.holds_router_token {
            return Ok(None);
        }
        if let Some(known) = self.direct.get() {
            return Ok(known.as_ref());
        }
        // The set-up runs once; boxed, so every call's future stays small.
        let made = self
            .direct
            .get_or_try_init(|| {
                Box::pin(async {
                    match self.router_role().await {
                        Some(true) => {}
                        Some(false) => return Ok(None),
                        // No address answered: not known yet, so nothing is set up
                        // (the call goes to the addresses, riding out a failover).
                        None => return Err(None),
                    }
                    let watch = FederationWatch::start_with_dialer(self.member_addrs().to_vec(), self.dialer.clone())
                        .await
                        .map_err(Some)?;
                    let superuser = watch.superuser().to_string();
                    let mut opts = self.opts.clone();
                    opts.follower_reads = crate::options::FollowerReads::Off;
                    let nameservices = crate::federated::Nameservices::new(self.dialer.clone(), opts);
                    Ok(Some(Arc::new(CallRouter::new(
                        Arc::new(watch),
                        nameservices,
                        &superuser,
                    ))))
                })
            })
            .await;
        match made {
            Ok(router) => Ok(router.as_ref()),
            Err(None) => Ok(None),
            Err(Some(e)) => Err(e),
        }
    }

    /// The members to tell about a replica of block pool `pool`: this
    /// handle's addresses, or, when they are routers, the members of the
    /// nameservice the federation registers with that pool (none if it
    /// registers none, or no router answers).
    pub(crate) async fn pool_members(&self, pool: &str) -> Vec<String> {
        if self.router_role().await != Some(true) {
            return self.member_addrs().to_vec();
        }
        let fed = match self.direct.get() {
            Some(Some(router)) => router.table().current(),
            _ => {
                let asked = async {
                    let admin = raftfs_federation::admin_client::RouterAdminClient::new(
                        self.member_addrs().to_vec(),
                        self.dialer.clone(),
                    )
                    .ok()?;
                    admin.federation(0, 0).await.ok()
                };
                match asked.await {
                    Some(reply) => Arc::new(reply.federation),
                    None => return Vec::new(),
                }
            }
        };
        let members = fed
            .nameservices()
            .find(|r| r.block_pool_id == pool)
            .map(|r| r.members.values().cloned().collect())
            .unwrap_or_default();
        members
    }

    /// Whether the addresses are routers: the first that answers
    /// `MemberInfo` says (`None`: none answered).
    async fn router_role(&self) -> Option<bool> {
        if let Some(known) = *self.via_router.lock().expect("via router lock") {
            return Some(known);
        }
        for addr in self.member_addrs() {
            if let Ok(info) = self.conn.member_info(addr).await {
                let router = info.role == crate::ROUTER_ROLE;
                *self.via_router.lock().expect("via router lock") = Some(router);
                return Some(router);
            }
        }
        None
    }
}

impl FileSystem {
    // ---- the Hadoop-style API ----

    /// `mkdirs` with `permission` masked by the umask (HDFS: true when the
    /// directory exists afterwards).
    pub async fn mkdirs(&self, path: &str, permission: Option<Permission>) -> Result<bool, FsError> {
        self.mkdirs_opt(path, permission, true).await
    }

    pub async fn mkdirs_opt(
        &self,
        path: &str,
        permission: Option<Permission>,
        create_parent: bool,
    ) -> Result<bool, FsError> {
        let permission = Permission::new(permission.map_or(0o777, |p| p.bits()) & !DEFAULT_UMASK);
        expect_bool(
            self.call(Op::Mkdirs {
                path: path.into(),
                permission,
                create_parent,
            })
            .await?,
        )
    }

    /// Create a file (metadata; it stays open until [`FileSystem::complete`]).
    pub async fn create(&self, path: &str, overwrite: bool) -> Result<FileStatus, FsError> {
        self.create_opt(
            path,
            overwrite,
            None,
            DEFAULT_REPLICATION,
            DEFAULT_BLOCK_SIZE_BYTES,
            true,
        )
        .await
    }

    pub async fn create_opt(
        &self,
        path: &str,
        overwrite: bool,
        permission: Option<Permission>,
        replication: u16,
        block_size: u64,
        create_parent: bool,
    ) -> Result<FileStatus, FsError> {
        let permission = Permission::new(permission.map_or(0o666, |p| p.bits()) & !DEFAULT_UMASK);
        let op = Op::Create {
            path: path.into(),
            permission,
            overwrite,
            create_parent,
            replication,
            block_size,
        };
        match self.call(op).await? {
            OpResult::Status(Some(s)) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    pub async fn complete(&self, path: &str) -> Result<bool, FsError> {
        expect_bool(
            self.call(Op::Complete {
                path: path.into(),
                last: None,
            })
            .await?,
        )
    }

    /// The status of `path`; `FileNotFound` when it does not exist (Hadoop's `getFileStatus`).
    pub async fn get_file_status(&self, path: &str) -> Result<FileStatus, FsError> {
        self.get_file_info(path)
            .await?
            .ok_or_else(|| FsError::FileNotFound(format!("File does not exist: {path}")))
    }

    /// The status of `path`, `None` when it does not exist (HDFS `getFileInfo`).
    pub async fn get_file_info(&self, path: &str) -> Result<Option<FileStatus>, FsError> {
        match self.call(Op::GetFileInfo { path: path.into() }).await? {
            OpResult::Status(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }

    pub async fn exists(&self, path: &str) -> Result<bool, FsError> {
        Ok(self.get_file_info(path).await?.is_some())
    }

    /// One page of a listing: entries strictly after `start_after`.
    pub async fn list_page(&self, path: &str, start_after: &str, limit: u32) -> Result<DirectoryListing, FsError> {
        match self
            .call(Op::GetListing {
                path: path.into(),
                start_after: start_after.into(),
                limit,
            })
            .await?
        {
            OpResult::Listing(l) => Ok(l),
            other => Err(unexpected(other)),
        }
    }

    /// A listing as a stream over pages of [`MAX_LISTING_ENTRIES`].
    pub fn list_status_stream<'a>(&'a self, path: &'a str) -> impl Stream<Item = Result<FileStatus, FsError>> + 'a {
        struct St {
            after: String,
            page: std::vec::IntoIter<FileStatus>,
            done: bool,
        }
        let st = St {
            after: String::new(),
            page: Vec::new().into_iter(),
            done: false,
        };
        futures::stream::try_unfold(st, move |mut st| async move {
            loop {
                if let Some(s) = st.page.next() {
                    return Ok(Some((s, st)));
                }
                if st.done {
                    return Ok(None);
                }
                let page = self.list_page(path, &st.after, MAX_LISTING_ENTRIES as u32).await?;
                st.done = page.remaining_entries == 0 || page.entries.is_empty();
                if let Some(last) = page.entries.last() {
                    st.after = last.path_suffix.clone();
                }
                // A file lists as itself, with an empty name: one page only.
                if page.entries.len() == 1 && page.entries[0].path_suffix.is_empty() {
                    st.done = true;
                }
                st.page = page.entries.into_iter();
            }
        })
    }

    /// The whole listing of `path`.
    pub async fn list_status(&self, path: &str) -> Result<Vec<FileStatus>, FsError> {
        use futures::TryStreamExt;
        self.list_status_stream(path).try_collect().await
    }

    /// Old-style rename: `false` for most failures, a directory destination moves into it.
    pub async fn rename(&self, src: &str, dst: &str) -> Result<bool, FsError> {
        expect_bool(
            self.call(Op::Rename {
                src: src.into(),
                dst: dst.into(),
            })
            .await?,
        )
    }

    /// `rename2`, optionally with OVERWRITE.
    pub async fn rename2(&self, src: &str, dst: &str, overwrite: bool) -> Result<(), FsError> {
        self.call(Op::Rename2 {
            src: src.into(),
            dst: dst.into(),
            overwrite,
        })
        .await
        .map(|_| ())
    }

    /// Move the blocks of `sources`, in order, to the end of `target` and
    /// delete the sources (HDFS `concat`): closed files of one directory,
    /// no data copied.
    pub async fn concat(&self, target: &str, sources: &[String]) -> Result<(), FsError> {
        self.call(Op::Concat {
            target: target.into(),
            sources: sources.to_vec(),
        })
        .await
        .map(|_| ())
    }

    /// Cut a closed file to `new_length` bytes (HDFS `truncate`): `true`
    /// when done, `false` while its last block is being cut on the
    /// DataNodes (the file is open until then: poll its status).
    pub async fn truncate(&self, path: &str, new_length: u64) -> Result<bool, FsError> {
        expect_bool(
            self.call(Op::Truncate {
                path: path.into(),
                new_length,
            })
            .await?,
        )
    }

    pub async fn delete(&self, path: &str, recursive: bool) -> Result<bool, FsError> {
        expect_bool(
            self.call(Op::Delete {
                path: path.into(),
                recursive,
            })
            .await?,
        )
    }

    pub async fn set_permission(&self, path: &str, permission: Permission) -> Result<(), FsError> {
        self.call(Op::SetPermission {
            path: path.into(),
            permission,
        })
        .await
        .map(|_| ())
    }

    pub async fn set_owner(&self, path: &str, owner: Option<&str>, group: Option<&str>) -> Result<(), FsError> {
        let op = Op::SetOwner {
            path: path.into(),
            owner: owner.map(str::to_string),
            group: group.map(str::to_string),
        };
        self.call(op).await.map(|_| ())
    }

    pub async fn set_replication(&self, path: &str, replication: u16) -> Result<bool, FsError> {
        expect_bool(
            self.call(Op::SetReplication {
                path: path.into(),
                replication,
            })
            .await?,
        )
    }

    pub async fn set_times(&self, path: &str, mtime: Option<i64>, atime: Option<i64>) -> Result<(), FsError> {
        self.call(Op::SetTimes {
            path: path.into(),
            mtime,
            atime,
        })
        .await
        .map(|_| ())
    }

    pub async fn set_quota(&self, path: &str, namespace: QuotaSetting, space: QuotaSetting) -> Result<(), FsError> {
        self.call(Op::SetQuota {
            path: path.into(),
            namespace,
            space,
        })
        .await
        .map(|_| ())
    }

    // ---- file data ----

    /// Create `path` (replacing a file there if `overwrite`) and open it for
    /// writing with the default replication and block size (Hadoop `create`).
    pub async fn create_file(&self, path: &str, overwrite: bool) -> Result<FileWriter, FsError> {
        self.create_file_opt(
            path,
            overwrite,
            None,
            DEFAULT_REPLICATION,
            DEFAULT_BLOCK_SIZE_BYTES,
            true,
        )
        .await
    }

    pub async fn create_file_opt(
        &self,
        path: &str,
        overwrite: bool,
        permission: Option<Permission>,
        replication: u16,
        block_size: u64,
        create_parent: bool,
    ) -> Result<FileWriter, FsError> {
        let status = self
            .create_opt(path, overwrite, permission, replication, block_size, create_parent)
            .await?;
        let pool = self.pool_id(path).await?;
        FileWriter::open(
            self.core.clone(),
            path,
            status.replication,
            status.block_size,
            0,
            None,
            pool,
        )
        .await
    }

    /// Open a closed file for appending (Hadoop `append`).
    pub async fn append(&self, path: &str) -> Result<FileWriter, FsError> {
        let (status, last) = match self.call(Op::Append { path: path.into() }).await? {
            OpResult::Appended { status, last } => (status, last),
            other => return Err(unexpected(other)),
        };
        let located = crate::data::block_locations(&self.core, path).await?;
        let prev = match &last {
            Some(_) => None,
            None => located.blocks.last().map(|b| b.block),
        };
        let mut w = FileWriter::open(
            self.core.clone(),
            path,
            status.replication,
            status.block_size,
            status.length,
            prev,
            located.block_pool_id,
        )
        .await?;
        if let Some(lb) = last {
            w.reopen(lb).await?;
        }
        Ok(w)
    }

    /// Open a file for reading (Hadoop `open`).
    pub async fn open(&self, path: &str) -> Result<FileReader, FsError> {
        FileReader::open(self.core.clone(), path).await
    }

    /// Where the blocks of `path` are (HDFS `getBlockLocations`).
    pub async fn block_locations(&self, path: &str) -> Result<raftfs_proto::LocatedBlocks, FsError> {
        crate::data::block_locations(&self.core, path).await
    }

    /// Close a file whose writer went away; true once it is closed (HDFS `recoverLease`).
    pub async fn recover_lease(&self, path: &str) -> Result<bool, FsError> {
        expect_bool(self.call(Op::RecoverLease { path: path.into() }).await?)
    }

    /// HDFS's MD5-of-MD5-of-CRC32C checksum of a file.
    pub async fn file_checksum(&self, path: &str) -> Result<crate::data::FileChecksum, FsError> {
        crate::data::file_checksum(&self.core, path).await
    }

    /// The block pool of `path`: the nameservice's (asked once, then
    /// remembered), or, through routers, the pool of the nameservice the
    /// file landed in (asked for each file).
    async fn pool_id(&self, path: &str) -> Result<String, FsError> {
        if let Some(p) = self.core.pool_id.lock().expect("pool id lock").clone() {
            return Ok(p);
        }
        let p = crate::data::block_locations(&self.core, path).await?.block_pool_id;
        if !self.via_router().await {
            *self.core.pool_id.lock().expect("pool id lock") = Some(p.clone());
        }
        Ok(p)
    }

    /// Whether this handle's addresses are routers (the first that answers
    /// `MemberInfo` says; if none answers, assumed so, which only costs a
    /// block-pool lookup per file).
    async fn via_router(&self) -> bool {
        self.core.router_role().await.unwrap_or(true)
    }

    pub async fn content_summary(&self, path: &str) -> Result<ContentSummary, FsError> {
        match self.call(Op::GetContentSummary { path: path.into() }).await? {
            OpResult::Summary(s) => Ok(s),
            other => Err(unexpected(other)),
        }
    }
}

fn expect_bool(r: OpResult) -> Result<bool, FsError> {
    match r {
        OpResult::Bool(b) => Ok(b),
        other => Err(unexpected(other)),
    }
}

fn unexpected(r: OpResult) -> FsError {
    FsError::Internal(format!("unexpected reply shape {r:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::size_of_val;

    /// Most bytes the future of one call may take, at each level of the
    /// handle and the leader connection. Each caller builds its own future
    /// and copies the callee's into it, so a large one costs every call a
    /// few KiB of copying (measured: about a tenth of the client's CPU per
    /// getFileInfo, and of a router's, before the rarely taken paths were
    /// boxed; they were up to 1,696 bytes before the call paths stopped
    /// being async fns, which keep their arguments twice).
    const MAX_CALL_FUTURE_BYTES: usize = 1024;
    /// Most bytes a call routed by the SDK itself (direct mode) may take
    /// above the connection: it is inside every SDK call's future, not
    /// boxed (2,480 when each routing level carried the connection's
    /// future; 528 once the common call took one way).
    const MAX_ROUTED_CALL_FUTURE_BYTES: usize = 768;

    /// A mount table that never changes.
    struct FixedTable(Arc<raftfs_federation::Federation>);

    impl crate::federated::TableSource for FixedTable {
        fn current(&self) -> Arc<raftfs_federation::Federation> {
            self.0.clone()
        }

        fn wait_for_version(&self, _version: u64, _timeout: std::time::Duration) -> impl Future<Output = bool> + Send {
            std::future::ready(false)
        }
    }

    #[test]
    fn the_future_of_a_call_stays_small() {
        let opts = ClientOptions {
            delegation_token: crate::DelegationTokenSource::None,
            ..ClientOptions::default()
        };
        let fs = FileSystem::connect_with_dialer(
            "raftfs://127.0.0.1:1",
            Identity::new("alice", &[]),
            opts.clone(),
            Dialer::Plaintext,
        )
        .expect("a handle (nothing is dialled until a call)");
        let table = Arc::new(FixedTable(Arc::default()));
        let nameservices = crate::federated::Nameservices::new(Dialer::Plaintext, opts);
        let router = CallRouter::new(table, nameservices, "hdfs");
        let op = Op::GetFileInfo { path: "/a".into() };
        let ctx = pb::CallContext::default();
        let sizes = [
            (
                "FileSystem::call",
                size_of_val(&fs.call(op.clone())),
                MAX_CALL_FUTURE_BYTES,
            ),
            (
                "FileSystem::get_file_info",
                size_of_val(&fs.get_file_info("/a")),
                MAX_CALL_FUTURE_BYTES,
            ),
            (
                "FileSystem::forward",
                size_of_val(&fs.forward(&ctx, &op)),
                MAX_CALL_FUTURE_BYTES,
            ),
            (
                "CallRouter::call (direct mode)",
                size_of_val(&router.call(ctx.clone(), &op)),
                MAX_ROUTED_CALL_FUTURE_BYTES,
            ),
        ];
        for (what, bytes, bound) in sizes {
            println!("{what}: {bytes} bytes");
            assert!(
                bytes <= bound,
                "the future of {what} is {bytes} bytes, more than {bound}: box what a rare path awaits"
            );
        }
    }
}
