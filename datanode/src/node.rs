//! [`Node`]: what every part of a running DataNode shares: its storage,
//! identity, configuration, the queues of incremental block reports for
//! each member of each nameservice, channels to other DataNodes, and the
//! block keys that check the block access tokens callers present.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;
use tonic::transport::{Channel, Endpoint};

use raftfs_proto::pb::data_transfer_client::DataTransferClient;
use raftfs_proto::pb::datanode_protocol_client::DatanodeProtocolClient;
use raftfs_proto::{
    AccessMode, AccessModes, Block, BlockToken, BlockTokenProof, DataProtection, DatanodeId, FsError, IncrementalReport,
};
use raftfs_trust::clock::wall_clock_ms;
use raftfs_trust::{BlockKeyRing, Dialer, NodeSecurity, PeerRole, SeenProofs};

use crate::storage::Storage;

/// HTTP/2 flow-control window of one data stream, bytes: large enough that
/// a pipeline never waits for window updates at disk speed.
pub const STREAM_WINDOW_BYTES: u32 = 16 * 1024 * 1024;
/// HTTP/2 flow-control window of one connection, bytes.
pub const CONNECTION_WINDOW_BYTES: u32 = 64 * 1024 * 1024;
/// Largest HTTP/2 frame this node receives, bytes (the protocol's default
/// is 16 KiB): a 512 KiB read chunk goes out in one frame, so the sender
/// makes fewer frames and, under TLS, fills each write with whole records.
pub const MAX_FRAME_BYTES: u32 = 1024 * 1024;
/// Largest gRPC message on the data path, bytes (a packet plus its checksums and header).
pub const MAX_DATA_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Timeout to connect to another DataNode or a member.
pub const CONNECT_TIMEOUT_MS: u64 = 3_000;

#[derive(Debug, Clone)]
pub struct DatanodeConfig {
    pub dirs: Vec<PathBuf>,
    /// Where the data transfer service listens (HOST:PORT).
    pub listen: String,
    /// HOST:PORT that clients and other DataNodes use to reach this node.
    pub advertise: String,
    /// HOST:PORT of its HTTP endpoint (WebHDFS's data side), registered
    /// with every nameservice so their WebHDFS endpoints can redirect here;
    /// `None`: it serves no HTTP.
    pub http_advertise: Option<String>,
    /// HOST:PORT where it serves Hadoop's DataTransferProtocol
    /// ([`crate::hadoop_xfer`]), registered with every nameservice so their
    /// Hadoop RPC names it to Hadoop clients; `None`: it serves none.
    pub hadoop_xfer_advertise: Option<String>,
    /// Host name reported to metaservers (placement puts a writer's first replica on its own host).
    pub hostname: String,
    /// Every nameservice served: the member addresses of each.
    pub nameservices: Vec<Vec<String>>,
    /// Routers (HOST:PORT) whose registered nameservices the node serves,
    /// following changes ([`crate::federation_follower`]); empty: none.
    pub routers: Vec<String>,
    /// HDFS `dfs.heartbeat.interval` (3 s).
    pub heartbeat_ms: u64,
    /// HDFS `dfs.blockreport.intervalMsec` (6 h).
    pub block_report_interval_ms: u64,
    /// Bytes kept free per volume (HDFS `dfs.datanode.du.reserved`).
    pub reserved_bytes: u64,
    /// Wait for a member's answer this long.
    pub rpc_timeout_ms: u64,
    /// Check every replica's checksums this often (HDFS `dfs.datanode.scan.period.hours`, 3 weeks); 0 = never.
    pub scan_period_ms: u64,
    /// Unix socket for short-circuit local reads (HDFS `dfs.domain.socket.path`).
    pub domain_socket: Option<PathBuf>,
    /// OS users (uids) the short-circuit socket serves (HDFS's
    /// `dfs.block.local-path-access.user`); `None`: the DataNode's own user only.
    pub short_circuit_uids: Option<Vec<u32>>,
    /// How the node serves (mutual TLS with its DataNode certificate, or
    /// plaintext under `--insecure`) and dials members and other DataNodes.
    pub security: NodeSecurity,
    /// Failed volumes the node runs with before it stops offering service
    /// (HDFS `dfs.datanode.failed.volumes.tolerated`); `None`: as long as
    /// one volume works (HDFS's -1).
    pub failed_volumes_tolerated: Option<u32>,
}

impl DatanodeConfig {
    /// Why the node must stop offering service with `failed` of its volumes
    /// failed, if it must.
    pub fn too_many_failed_volumes(&self, failed: u32) -> Option<String> {
        let tolerated = self.failed_volumes_tolerated?;
        (failed > tolerated).then(|| {
            format!(
                "{failed} of {} volumes failed, {tolerated} tolerated (--failed-volumes-tolerated)",
                self.dirs.len()
            )
        })
    }

    pub fn heartbeat(&self) -> Duration {
        Duration::from_millis(self.heartbeat_ms.max(1))
    }
}

/// Incremental reports waiting to go to one member.
#[derive(Default)]
pub struct IbrQueue {
    pub pending: Mutex<IncrementalReport>,
    pub ready: Notify,
}

impl IbrQueue {
    /// Take everything queued.
    pub fn take(&self) -> IncrementalReport {
        std::mem::take(&mut *self.pending.lock())
    }

    /// Put back a report that could not be sent (before anything newer).
    pub fn put_back(&self, mut r: IncrementalReport) {
        let mut p = self.pending.lock();
        r.received.append(&mut p.received);
        r.receiving.append(&mut p.receiving);
        r.deleted.append(&mut p.deleted);
        *p = r;
    }
}

pub struct Node {
    pub cfg: DatanodeConfig,
    pub storage: Arc<Storage>,
    id: RwLock<Option<DatanodeId>>,
    /// Reads and writes in progress.
    xceivers: AtomicU32,
    /// Block pool → member address → the reports waiting for it.
    ibr: RwLock<HashMap<String, HashMap<String, Arc<IbrQueue>>>>,
    /// Block pool → its nameservice's member addresses.
    pub pool_members: RwLock<HashMap<String, Vec<String>>>,
    peers: Mutex<HashMap<String, DataTransferClient<Channel>>>,
    members: Mutex<HashMap<String, DatanodeProtocolClient<Channel>>>,
    /// The block keys the members of each pool handed over.
    pub block_keys: BlockKeyRing,
    /// The nonces of the block token proofs accepted over plaintext.
    pub seen_proofs: SeenProofs,
    /// Block requests admitted on TLS connections and on plaintext ones.
    pub admitted_tls: AtomicU64,
    pub admitted_plaintext: AtomicU64,
    /// Set once more volumes failed than the node tolerates: it stops.
    pub volumes_exhausted: tokio::sync::watch::Sender<Option<String>>,
    /// When the process made this node (its uptime's start).
    pub started: std::time::Instant,
}

/// Counts one transfer in progress for as long as it lives.
pub struct XceiverGuard<'a>(&'a AtomicU32);

impl Drop for XceiverGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An HTTP/2 endpoint for the data path to the DataNode at `addr`, with the
/// large windows.
pub fn data_endpoint(dialer: &Dialer, addr: &str) -> Result<Endpoint, FsError> {
    Ok(dialer
        .endpoint(addr, PeerRole::Datanode)
        .map_err(|e| FsError::InvalidArgument(format!("DataNode address {addr:?}: {e}")))?
        .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
        .tcp_nodelay(true)
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .max_frame_size(MAX_FRAME_BYTES))
}

impl Node {
    pub fn new(cfg: DatanodeConfig, storage: Arc<Storage>) -> Node {
        Node {
            cfg,
            storage,
            id: RwLock::new(None),
            xceivers: AtomicU32::new(0),
            ibr: RwLock::new(HashMap::new()),
            pool_members: RwLock::new(HashMap::new()),
            peers: Mutex::new(HashMap::new()),
            members: Mutex::new(HashMap::new()),
            block_keys: BlockKeyRing::new(),
            seen_proofs: SeenProofs::default(),
            admitted_tls: AtomicU64::new(0),
            admitted_plaintext: AtomicU64::new(0),
            volumes_exhausted: tokio::sync::watch::channel(None).0,
            started: std::time::Instant::now(),
        }
    }

    /// Whether this node asks for block access tokens: whenever it runs
    /// TLS (a plaintext `--insecure` node checks none, and its members mint none).
    pub fn checks_tokens(&self) -> bool {
        self.cfg.security.server.is_tls()
    }

    /// Refuse unless `token` grants `mode` on block `block_id` of pool `bpid`.
    pub fn check_token(
        &self,
        token: Option<&BlockToken>,
        bpid: &str,
        block_id: u64,
        mode: AccessMode,
    ) -> Result<(), FsError> {
        if !self.checks_tokens() {
            return Ok(());
        }
        let r = self.block_keys.check(token, bpid, block_id, mode, wall_clock_ms());
        if let Err(e) = &r {
            tracing::warn!(block_id, pool = bpid, access = mode.name(), error = %e, "block access refused");
        }
        r
    }

    /// Refuse unless the request's credential grants `mode` on block
    /// `block_id` of pool `bpid`: over mutual TLS a token (or a proof);
    /// over plaintext (`over_plaintext`, data protection `authentication`)
    /// only a proof, fresh, never seen before, of a token the members
    /// signed for plaintext. Returns the token shown or proven (to pass
    /// down a pipeline over TLS); `None` when this node checks no tokens.
    pub fn check_credential(
        &self,
        token: Option<&BlockToken>,
        proof: Option<&BlockTokenProof>,
        over_plaintext: bool,
        bpid: &str,
        block_id: u64,
        mode: AccessMode,
    ) -> Result<Option<BlockToken>, FsError> {
        if !self.checks_tokens() {
            return Ok(None);
        }
        let r = match (token, proof) {
            (Some(_), _) if over_plaintext => Err(FsError::InvalidToken(
                "a block token was sent over plaintext, where its password can be read: \
                 over plaintext show a proof of it (the SDK does), or dial in TLS"
                    .into(),
            )),
            (Some(t), _) => self
                .block_keys
                .check(Some(t), bpid, block_id, mode, wall_clock_ms())
                .map(|()| t.clone()),
            (None, Some(p)) => self.check_proof(p, over_plaintext, bpid, block_id, mode),
            (None, None) => Err(FsError::InvalidToken(format!(
                "Block token is missing: {} access to blk_{block_id} of {bpid} needs one",
                mode.name()
            ))),
        };
        match &r {
            Ok(_) if over_plaintext => self.admitted_plaintext.fetch_add(1, Ordering::Relaxed),
            Ok(_) => self.admitted_tls.fetch_add(1, Ordering::Relaxed),
            Err(e) => {
                tracing::warn!(block_id, pool = bpid, access = mode.name(), plaintext = over_plaintext, error = %e, "block access refused");
                0
            }
        };
        r.map(Some)
    }

    fn check_proof(
        &self,
        p: &BlockTokenProof,
        over_plaintext: bool,
        bpid: &str,
        block_id: u64,
        mode: AccessMode,
    ) -> Result<BlockToken, FsError> {
        let token = self.block_keys.check_proof(p, bpid, block_id, mode, wall_clock_ms())?;
        if over_plaintext && token.identifier.protection != DataProtection::Authentication {
            return Err(FsError::InvalidToken(format!(
                "{token} is for data protection {}: show it in TLS, not over plaintext",
                token.identifier.protection
            )));
        }
        self.seen_proofs.first_sight(&p.nonce, std::time::Instant::now())?;
        Ok(token)
    }

    /// A token this node signs to write a copy of block `block_id` to
    /// another DataNode; `None` when tokens are off.
    pub fn copy_token(&self, bpid: &str, block_id: u64) -> Result<Option<BlockToken>, FsError> {
        if !self.checks_tokens() {
            return Ok(None);
        }
        let me = format!("DataNode {}", self.id().map(|i| i.uuid).unwrap_or_default());
        self.block_keys
            .mint(
                bpid,
                &me,
                block_id,
                AccessModes::of(&[AccessMode::Write]),
                wall_clock_ms(),
            )
            .map(Some)
    }

    /// This node's identity once it belongs to a cluster.
    pub fn id(&self) -> Option<DatanodeId> {
        self.id.read().clone()
    }

    pub fn set_uuid(&self, uuid: &str) {
        *self.id.write() = Some(DatanodeId {
            uuid: uuid.to_string(),
            addr: self.cfg.advertise.clone(),
            hostname: self.cfg.hostname.clone(),
            domain_socket: self
                .cfg
                .domain_socket
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
        });
    }

    pub fn xceiver(&self) -> XceiverGuard<'_> {
        self.xceivers.fetch_add(1, Ordering::Relaxed);
        XceiverGuard(&self.xceivers)
    }

    pub fn xceivers(&self) -> u32 {
        self.xceivers.load(Ordering::Relaxed)
    }

    /// Forget everything kept for talking to pool `bpid`'s members (its
    /// nameservice is no longer served).
    pub fn forget_pool(&self, bpid: &str) {
        self.ibr.write().remove(bpid);
        self.pool_members.write().remove(bpid);
    }

    /// The queue for member `addr` of pool `bpid` (created on first use).
    pub fn ibr_queue(&self, bpid: &str, addr: &str) -> Arc<IbrQueue> {
        self.ibr
            .write()
            .entry(bpid.to_string())
            .or_default()
            .entry(addr.to_string())
            .or_default()
            .clone()
    }

    fn each_queue(&self, bpid: &str, f: impl Fn(&mut IncrementalReport)) {
        if let Some(list) = self.ibr.read().get(bpid) {
            for q in list.values() {
                f(&mut q.pending.lock());
                q.ready.notify_one();
            }
        }
    }

    pub fn report_received(&self, bpid: &str, b: Block) {
        self.each_queue(bpid, |r| r.received.push(b));
    }

    pub fn report_receiving(&self, bpid: &str, b: Block) {
        self.each_queue(bpid, |r| r.receiving.push(b));
    }

    pub fn report_deleted(&self, bpid: &str, b: Block) {
        self.each_queue(bpid, |r| r.deleted.push(b));
    }

    /// Report the replicas of volumes that failed since the last call as
    /// deleted (see [`crate::storage::Storage::take_lost_replicas`]), and
    /// say the node must stop once more volumes failed than it tolerates.
    pub fn handle_volume_failures(&self) {
        let lost = self.storage.take_lost_replicas();
        if !lost.is_empty() {
            tracing::error!(
                replicas = lost.len(),
                failed_volumes = self.storage.failed_volumes(),
                "the replicas on failed volumes are reported lost; the nameservices copy them from other replicas"
            );
            for (bpid, b) in lost {
                self.report_deleted(&bpid, b);
            }
        }
        if let Some(why) = self.cfg.too_many_failed_volumes(self.storage.failed_volumes()) {
            self.volumes_exhausted.send_if_modified(|w| {
                if w.is_some() {
                    return false;
                }
                *w = Some(why);
                true
            });
        }
    }

    /// Wait until more volumes failed than the node tolerates; why.
    pub async fn wait_volumes_exhausted(&self) -> String {
        let mut rx = self.volumes_exhausted.subscribe();
        loop {
            if let Some(why) = rx.borrow_and_update().clone() {
                return why;
            }
            if rx.changed().await.is_err() {
                return "the DataNode is stopping".into();
            }
        }
    }

    /// Every address of a file system this node serves or follows: its
    /// nameservices' members (configured, and learned per block pool) and
    /// its routers.
    pub fn known_namespace_addrs(&self) -> Vec<String> {
        let mut addrs: Vec<String> = self.cfg.nameservices.iter().flatten().cloned().collect();
        addrs.extend(self.cfg.routers.iter().cloned());
        addrs.extend(self.pool_members.read().values().flatten().cloned());
        addrs.sort();
        addrs.dedup();
        addrs
    }

    /// A client of a metaserver member's DataNode protocol (one channel each).
    pub fn member(&self, addr: &str) -> Result<DatanodeProtocolClient<Channel>, FsError> {
        let mut members = self.members.lock();
        if let Some(c) = members.get(addr) {
            return Ok(c.clone());
        }
        let ep = self
            .cfg
            .security
            .dialer
            .endpoint(addr, PeerRole::Member)
            .map_err(|e| FsError::InvalidArgument(format!("member address {addr:?}: {e}")))?
            .connect_timeout(Duration::from_millis(CONNECT_TIMEOUT_MS))
            .timeout(Duration::from_millis(self.cfg.rpc_timeout_ms))
            .tcp_nodelay(true);
        let c = DatanodeProtocolClient::new(ep.connect_lazy())
            .max_decoding_message_size(raftfs_proto::limits::MAX_RPC_BYTES)
            .max_encoding_message_size(raftfs_proto::limits::MAX_RPC_BYTES);
        members.insert(addr.to_string(), c.clone());
        Ok(c)
    }

    /// A client of another DataNode's data transfer service (one channel each).
    pub fn peer(&self, addr: &str) -> Result<DataTransferClient<Channel>, FsError> {
        let mut peers = self.peers.lock();
        if let Some(c) = peers.get(addr) {
            return Ok(c.clone());
        }
        let c = DataTransferClient::new(data_endpoint(&self.cfg.security.dialer, addr)?.connect_lazy())
            .max_decoding_message_size(MAX_DATA_MESSAGE_BYTES)
            .max_encoding_message_size(MAX_DATA_MESSAGE_BYTES);
        peers.insert(addr.to_string(), c.clone());
        Ok(c)
    }
}
