//! [`FileSystem`]: the SDK's handle on one nameservice.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::Stream;
use raftfs_trust::Dialer;
use rand::Rng;
use tonic::transport::Channel;

use raftfs_proto::limits::{MAX_LISTING_ENTRIES, MAX_RPC_BYTES};
use raftfs_proto::pb::data_transfer_client::DataTransferClient;
use raftfs_proto::pb::namespace_client::NamespaceClient;
use raftfs_proto::{
    codec, pb, AdminOp, AdminResult, BlockTokenCarrier, ContentSummary, DirectoryListing, FileStatus, FsError, Op,
    OpResult, Permission, QuotaSetting,
};

use crate::call_stream::CallStream;
use crate::data::{FileReader, FileWriter};
use crate::identity::Identity;
use crate::options::{ClientOptions, FollowerReads, DEFAULT_BLOCK_SIZE_BYTES, DEFAULT_REPLICATION, DEFAULT_UMASK};
use crate::uri::parse_fs;

/// A connection to one nameservice. Cheap to share (`&self` methods, and
/// `Clone` shares one connection); cloned channels multiplex concurrent
/// calls over one HTTP/2 connection per member.
#[derive(Clone)]
pub struct FileSystem {
    pub(crate) core: Arc<Core>,
}

/// What every handle on one nameservice shares: addresses, identity,
/// channels, the leader guess, call ids, and the lease renewer of open writers.
pub(crate) struct Core {
    members: Vec<String>,
    /// Dials members and DataNodes (TLS against the cluster CA, or plaintext).
    pub(crate) dialer: Dialer,
    identity: Identity,
    pub(crate) client_id: String,
    next_call_id: AtomicU64,
    pub(crate) opts: ClientOptions,
    channels: Mutex<HashMap<String, Channel>>,
    /// One call stream per member, reopened when it ends.
    streams: Mutex<HashMap<String, Arc<CallStream>>>,
    leader: Mutex<Option<String>>,
    /// Highest log index seen in a reply (read-your-writes for follower reads).
    max_index: AtomicU64,
    next_reader: AtomicU64,
    /// Channels to DataNodes, one per address.
    pub(crate) datanodes: Mutex<HashMap<String, DataTransferClient<Channel>>>,
    /// Writers open now; the lease renewer runs while there are any.
    pub(crate) open_writers: AtomicUsize,
    pub(crate) renewer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// The nameservice's block pool id, once learned (never through a
    /// router, whose files live in many block pools).
    pool_id: Mutex<Option<String>>,
    /// Whether the addresses are routers (learned on first need, from
    /// `MemberInfo`): then every file's block pool is asked for.
    via_router: Mutex<Option<bool>>,
    /// The delegation token calls carry (encoded), and its owner, the user they claim.
    delegation_token: Option<(Vec<u8>, String)>,
}

/// Which RPC of the Namespace service a request goes to.
#[derive(Debug, Clone, Copy)]
enum Rpc {
    Call,
    Admin,
}

fn status_error(s: tonic::Status) -> FsError {
    use tonic::Code;
    match s.code() {
        Code::Unavailable | Code::Cancelled | Code::Unknown | Code::Aborted | Code::ResourceExhausted => {
            FsError::Unavailable(s.message().to_string())
        }
        Code::DeadlineExceeded => FsError::Timeout(s.message().to_string()),
        Code::InvalidArgument | Code::OutOfRange => FsError::InvalidArgument(s.message().to_string()),
        Code::PermissionDenied | Code::Unauthenticated => FsError::AccessControl(s.message().to_string()),
        _ => FsError::Internal(format!("{}: {}", s.code(), s.message())),
    }
}

impl FileSystem {
    /// Connect to the nameservice named by `fs` (`raftfs://h:p,h:p`).
    /// Connections are made lazily: this fails only on a malformed `fs`.
    pub fn connect(fs: &str, identity: Identity, opts: ClientOptions) -> Result<FileSystem, FsError> {
        parse_fs(fs)?; // a malformed address is the error to report, before any TLS setting
        let dialer = opts.tls.dialer()?;
        FileSystem::connect_with_dialer(fs, identity, opts, dialer)
    }

    /// [`FileSystem::connect`] with a given dialer instead of the one
    /// `opts.tls` names (a router dials nameservices with its own certificate).
    pub fn connect_with_dialer(
        fs: &str,
        identity: Identity,
        opts: ClientOptions,
        dialer: Dialer,
    ) -> Result<FileSystem, FsError> {
        let members = parse_fs(fs)?;
        let delegation_token = match opts.delegation_token.resolve()? {
            Some(t) => Some((codec::encode(&t)?, t.identifier.owner.clone())),
            None => None,
        };
        let core = Core {
            members,
            dialer,
            identity,
            client_id: format!("raftfs-client-{}", uuid::Uuid::new_v4()),
            next_call_id: AtomicU64::new(1),
            opts,
            channels: Mutex::new(HashMap::new()),
            streams: Mutex::new(HashMap::new()),
            leader: Mutex::new(None),
            max_index: AtomicU64::new(0),
            next_reader: AtomicU64::new(rand::thread_rng().gen_range(0..1024)),
            datanodes: Mutex::new(HashMap::new()),
            open_writers: AtomicUsize::new(0),
            renewer: Mutex::new(None),
            pool_id: Mutex::new(None),
            via_router: Mutex::new(None),
            delegation_token,
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

    /// Run one namespace operation (retried, failover-aware).
    pub async fn call(&self, op: Op) -> Result<OpResult, FsError> {
        self.core.call(op).await
    }

    /// The member addresses this handle was given.
    pub fn members(&self) -> &[String] {
        self.core.member_addrs()
    }

    /// Member `addr`'s report of itself (role, term, log and applied
    /// indexes, health, CPU time), over this handle's connection settings.
    pub async fn member_info(&self, addr: &str) -> Result<raftfs_proto::pb::MemberInfoReply, FsError> {
        let mut c = self.core.channel(addr)?;
        let mut req = tonic::Request::new(raftfs_proto::pb::MemberInfoRequest {});
        req.set_timeout(Duration::from_millis(self.core.opts.rpc_timeout_ms));
        c.member_info(req).await.map(|r| r.into_inner()).map_err(status_error)
    }

    /// Run one `haadmin`/`dfsadmin` command on the leader (superuser only).
    pub async fn admin(&self, op: AdminOp) -> Result<AdminResult, FsError> {
        self.core.admin(op).await
    }

    /// Run `op` on the nameservice's leader for another caller: `ctx`
    /// carries that caller's client id, call id, user and delegation token
    /// instead of this handle's. This is what a router does with the calls
    /// it forwards: a retry of the caller's call reaches the nameservice
    /// with the same (client id, call id), so its retry table answers it.
    /// The nameservice believes the user `ctx` names only from a peer it
    /// trusts to say so (a router's certificate, or `--auth simple`).
    /// Block access tokens in the reply are on the result's blocks.
    pub async fn forward(&self, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
        self.core.forward(ctx, op).await
    }
}

impl Core {
    /// The channel to member `addr` (one per member, shared by every call).
    pub(crate) fn namespace_channel(&self, addr: &str) -> Result<Channel, FsError> {
        let mut map = self.channels.lock().expect("channel map lock");
        if let Some(c) = map.get(addr) {
            return Ok(c.clone());
        }
        let via = self.opts.dial_via.get(addr).map_or(addr, String::as_str);
        let ep = self
            .dialer
            .namespace_endpoint(via)
            .map_err(|e| FsError::InvalidArgument(format!("member address {via:?}: {e}")))?
            .connect_timeout(Duration::from_millis(self.opts.connect_timeout_ms))
            .tcp_nodelay(true);
        let c = ep.connect_lazy();
        map.insert(addr.to_string(), c.clone());
        Ok(c)
    }

    /// The open call stream to member `addr`, or a new one; `None` if the
    /// member does not serve call streams (then calls to it are unary).
    fn call_stream(&self, addr: &str) -> Result<Option<Arc<CallStream>>, FsError> {
        let mut map = self.streams.lock().expect("call stream map lock");
        if let Some(s) = map.get(addr) {
            if s.is_unsupported() {
                return Ok(None);
            }
            if !s.is_dead() {
                return Ok(Some(s.clone()));
            }
        }
        let s = CallStream::open(addr, self.channel(addr)?);
        map.insert(addr.to_string(), s.clone());
        Ok(Some(s))
    }

    pub(crate) fn member_addrs(&self) -> &[String] {
        &self.members
    }

    fn channel(&self, addr: &str) -> Result<NamespaceClient<Channel>, FsError> {
        Ok(NamespaceClient::new(self.namespace_channel(addr)?)
            .max_decoding_message_size(MAX_RPC_BYTES)
            .max_encoding_message_size(MAX_RPC_BYTES))
    }

    /// Send one request of kind `rpc` to `addr`; decode its result.
    async fn attempt<T: serde::de::DeserializeOwned + BlockTokenCarrier>(
        &self,
        rpc: Rpc,
        addr: &str,
        ctx: &pb::CallContext,
        op_bin: &[u8],
        read_mode: pb::ReadMode,
    ) -> Result<T, FsError> {
        let call = pb::CallRequest {
            ctx: Some(ctx.clone()),
            op_bin: op_bin.to_vec(),
            read_mode: read_mode as i32,
            min_index: self.max_index.load(Ordering::Relaxed),
        };
        let timeout = Duration::from_millis(self.opts.rpc_timeout_ms);
        let stream = match rpc {
            Rpc::Call => self.call_stream(addr)?,
            Rpc::Admin => None,
        };
        let reply = match stream {
            Some(stream) => tokio::time::timeout(timeout, stream.call(call))
                .await
                .map_err(|_| FsError::Timeout(format!("no reply from {addr} within {timeout:?}")))??,
            None => {
                let mut req = tonic::Request::new(call);
                req.set_timeout(timeout);
                let mut client = self.channel(addr)?;
                match rpc {
                    Rpc::Call => client.call(req).await,
                    Rpc::Admin => client.admin(req).await,
                }
                .map_err(status_error)?
                .into_inner()
            }
        };
        self.max_index.fetch_max(reply.index, Ordering::Relaxed);
        let mut r = codec::decode::<Result<T, FsError>>(&reply.result_bin, "reply")??;
        if !reply.block_tokens_bin.is_empty() {
            r.put_block_tokens(codec::decode(&reply.block_tokens_bin, "block tokens")?);
        }
        Ok(r)
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
            // Not routed by a mount table (the SDK's direct mode will be).
            federation_version: 0,
        }
    }

    /// [`Core::attempt`] on the leader path, abandoned with a
    /// `NotLeader` hint if, while it is unanswered, another member reports
    /// itself leader. The call id makes the retry safe.
    async fn attempt_watched<T: serde::de::DeserializeOwned + BlockTokenCarrier>(
        &self,
        rpc: Rpc,
        target: &str,
        ctx: &pb::CallContext,
        op_bin: &[u8],
    ) -> Result<T, FsError> {
        let attempt = self.attempt(rpc, target, ctx, op_bin, pb::ReadMode::Leader);
        tokio::pin!(attempt);
        let every = Duration::from_millis(self.opts.leader_check_after_ms.max(1));
        let mut check = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        loop {
            tokio::select! {
                r = &mut attempt => return r,
                _ = check.tick() => {
                    if let Some(hint) = self.other_leader(target).await {
                        tracing::debug!(from = %target, to = %hint.addr, "another member leads: abandoning the call");
                        return Err(FsError::NotLeader { leader: Some(hint) });
                    }
                }
            }
        }
    }

    /// A member other than `target` that reports itself leader, if any answers so.
    async fn other_leader(&self, target: &str) -> Option<raftfs_proto::LeaderHint> {
        let asks = self
            .members
            .iter()
            .filter(|m| m.as_str() != target)
            .map(|m| async move {
                let mut c = self.channel(m).ok()?;
                let mut req = tonic::Request::new(pb::MemberInfoRequest {});
                req.set_timeout(Duration::from_millis(self.opts.leader_check_after_ms.max(1)));
                let i = c.member_info(req).await.ok()?.into_inner();
                (i.role == "LEADER").then(|| {
                    (
                        i.term,
                        raftfs_proto::LeaderHint {
                            member_id: i.member_id,
                            addr: m.clone(),
                        },
                    )
                })
            });
        // Two may claim it across a partition: the higher term is the current one.
        futures::future::join_all(asks)
            .await
            .into_iter()
            .flatten()
            .max_by_key(|(term, _)| *term)
            .map(|(_, hint)| hint)
    }

    pub async fn call(&self, op: Op) -> Result<OpResult, FsError> {
        let op_bin = codec::encode(&op)?;
        let mode = match self.opts.follower_reads {
            FollowerReads::Off => None,
            FollowerReads::ReadYourWrites => Some(pb::ReadMode::Follower),
            FollowerReads::Linearizable => Some(pb::ReadMode::FollowerLinearizable),
        };
        if let (false, Some(mode)) = (op.is_write(), mode) {
            // One try on the next member in turn; anything retryable falls
            // back to the leader path below.
            let n = self.next_reader.fetch_add(1, Ordering::Relaxed) as usize;
            let target = self.members[n % self.members.len()].clone();
            let ctx = self.own_ctx(self.next_call_id.fetch_add(1, Ordering::Relaxed));
            match self.attempt(Rpc::Call, &target, &ctx, &op_bin, mode).await {
                Ok(r) => return Ok(r),
                Err(e) if e.is_retryable() => {
                    tracing::debug!(member = %target, error = %e, "follower read failed; reading from the leader")
                }
                Err(e) => return Err(e),
            }
        }
        let ctx = self.own_ctx(self.next_call_id.fetch_add(1, Ordering::Relaxed));
        self.run(Rpc::Call, &ctx, op_bin).await
    }

    /// Run one `haadmin` command on the leader (superuser only).
    pub async fn admin(&self, op: AdminOp) -> Result<AdminResult, FsError> {
        let ctx = self.own_ctx(self.next_call_id.fetch_add(1, Ordering::Relaxed));
        self.run(Rpc::Admin, &ctx, codec::encode(&op)?).await
    }

    /// Run `op` on the leader for the caller `ctx` names (see [`FileSystem::forward`]).
    pub async fn forward(&self, ctx: &pb::CallContext, op: &Op) -> Result<OpResult, FsError> {
        self.run(Rpc::Call, ctx, codec::encode(op)?).await
    }

    /// Run one logical call: find the leader, retry what is retryable with
    /// the same call id, give up at the deadline.
    async fn run<T: serde::de::DeserializeOwned + BlockTokenCarrier>(
        &self,
        rpc: Rpc,
        ctx: &pb::CallContext,
        op_bin: Vec<u8>,
    ) -> Result<T, FsError> {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(self.opts.call_deadline_ms);
        let mut backoff = self.opts.min_backoff_ms;
        let mut rotate = rand::thread_rng().gen_range(0..self.members.len());
        let mut last_err;
        loop {
            let target = self.leader.lock().expect("leader lock").clone().unwrap_or_else(|| {
                rotate = (rotate + 1) % self.members.len();
                self.members[rotate].clone()
            });
            match self.attempt_watched(rpc, &target, ctx, &op_bin).await {
                Ok(r) => return Ok(r),
                Err(FsError::NotLeader { leader: Some(hint) }) if hint.addr != target && !hint.addr.is_empty() => {
                    tracing::debug!(from = %target, to = %hint.addr, "following leader hint");
                    *self.leader.lock().expect("leader lock") = Some(hint.addr.clone());
                    last_err = FsError::NotLeader { leader: Some(hint) };
                    // A hint is a redirect, not a failure: no backoff.
                    if tokio::time::Instant::now() >= deadline {
                        break;
                    }
                    continue;
                }
                Err(e) if e.is_retryable() => {
                    tracing::debug!(member = %target, error = %e, "retrying");
                    *self.leader.lock().expect("leader lock") = None;
                    last_err = e;
                }
                Err(e) => return Err(e),
            }
            let jitter = rand::thread_rng().gen_range(0..=backoff / 2);
            let sleep = Duration::from_millis(backoff + jitter);
            if tokio::time::Instant::now() + sleep >= deadline {
                break;
            }
            tokio::time::sleep(sleep).await;
            backoff = (backoff * 2).min(self.opts.max_backoff_ms);
        }
        Err(FsError::Timeout(format!(
            "call did not complete within {} ms; last error: {last_err}",
            self.opts.call_deadline_ms
        )))
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
        if let Some(known) = *self.core.via_router.lock().expect("via router lock") {
            return known;
        }
        for addr in self.core.member_addrs() {
            if let Ok(info) = self.member_info(addr).await {
                let router = info.role == crate::ROUTER_ROLE;
                *self.core.via_router.lock().expect("via router lock") = Some(router);
                return router;
            }
        }
        true
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
