//! [`ClientOptions`]: how a client connects, retries, reads and
//! authenticates, and the defaults of the files it creates.

use std::collections::HashMap;

use crate::delegation::DelegationTokenSource;
use crate::tls::ClientTls;

/// Client-side umask applied to new files and directories (Hadoop's default 022).
pub const DEFAULT_UMASK: u16 = 0o022;
pub use raftfs_proto::limits::{DEFAULT_BLOCK_SIZE_BYTES, DEFAULT_REPLICATION};

#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Give up on one call after this long, retries included (rides through a failover).
    pub call_deadline_ms: u64,
    /// Timeout of one RPC attempt.
    pub rpc_timeout_ms: u64,
    /// First backoff between retries; doubles up to `max_backoff_ms`, with jitter.
    pub min_backoff_ms: u64,
    pub max_backoff_ms: u64,
    pub connect_timeout_ms: u64,
    /// Where reads go: the leader (default), or any member.
    pub follower_reads: FollowerReads,
    /// While a call to the leader is unanswered this long, ask the other
    /// members whether another one leads now (a paused leader does not
    /// reset its connections the way a dead one does).
    pub leader_check_after_ms: u64,
    /// Read replicas on this host straight from their files, handed over by
    /// the DataNode (HDFS `dfs.client.read.shortcircuit`).
    pub short_circuit: bool,
    /// How to verify the cluster (TLS against its CA, or plaintext).
    pub tls: ClientTls,
    /// A delegation token to authenticate with (by default the file
    /// `RAFTFS_DELEGATION_TOKEN` names, if set): calls then act as its owner.
    pub delegation_token: DelegationTokenSource,
    /// Member addresses to reach through another address (a TCP proxy in
    /// front of the member): member HOST:PORT → proxy HOST:PORT. Leader
    /// hints name members, so they go through the proxy too. The fault
    /// harness cuts clients off from members this way.
    pub dial_via: HashMap<String, String>,
    /// Through routers' addresses: whether the SDK routes each call itself
    /// (the default) or sends it to a router. Ignored for a nameservice's
    /// own members.
    pub routing: Routing,
}

/// How the SDK sends calls when its addresses are routers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Routing {
    /// Keep the routers' mount table current and send each call straight
    /// to the leader of the nameservice that owns its path (one hop fewer).
    #[default]
    Direct,
    /// Send every call to a router, which routes it.
    ViaRouter,
}

impl std::str::FromStr for Routing {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "direct" => Ok(Routing::Direct),
            "router" | "via-router" => Ok(Routing::ViaRouter),
            other => Err(format!("unknown routing {other:?}: expected direct or router")),
        }
    }
}

/// Reads from followers (HDFS observer reads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FollowerReads {
    /// Every read on the leader, linearizable.
    #[default]
    Off,
    /// Reads spread over all members; each member answers once it has
    /// applied the highest log index this client has seen, so the client
    /// reads its own writes (and never goes back in time).
    ReadYourWrites,
    /// Reads spread over all members, each after a read index from the
    /// leader: linearizable, at the price of one small leader round trip.
    Linearizable,
}

impl std::str::FromStr for FollowerReads {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" | "leader" => Ok(FollowerReads::Off),
            "ryw" | "read-your-writes" | "followers" => Ok(FollowerReads::ReadYourWrites),
            "linearizable" | "followers-linearizable" => Ok(FollowerReads::Linearizable),
            other => Err(format!(
                "unknown follower read mode {other:?}: expected leader, followers or followers-linearizable"
            )),
        }
    }
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            call_deadline_ms: 30_000,
            rpc_timeout_ms: 10_000,
            min_backoff_ms: 20,
            max_backoff_ms: 250,
            connect_timeout_ms: 1_000,
            follower_reads: FollowerReads::Off,
            leader_check_after_ms: 1_000,
            short_circuit: true,
            tls: ClientTls::FromEnv,
            delegation_token: DelegationTokenSource::FromEnv,
            dial_via: HashMap::new(),
            routing: Routing::Direct,
        }
    }
}
