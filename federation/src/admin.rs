//! What routers and their callers exchange on the `RouterAdmin` gRPC
//! service (proto/raftfs.proto): bincode of these types inside
//! `RouterMessage`, replies as `Result<reply, RouterError>`.
//!
//! * [`FederationRequest`] → [`FederationReply`]: the federation (nameservices
//!   and mount table) as the router has applied it, once its version is past
//!   `since_version`: a long poll, which is how a change reaches every
//!   router's clients without a TTL.
//! * [`ChangeRequest`] → the federation's new version: a change, made by the
//!   leader router for the superuser only.
//! * [`RouterStatus`]: the router's Raft role, term, applied index, version,
//!   health and safe mode.
//! * [`SafeModeRequest`] → why the router is in safe mode (`None`: it is
//!   not): one router's safe mode, entered or left by the superuser.

use serde::{Deserialize, Serialize};

use crate::federation::{Federation, FederationChange};

/// Longest a federation request waits for a newer version, in milliseconds.
pub const MAX_FEDERATION_WAIT_MS: u64 = 30_000;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FederationRequest {
    /// Answer once the version is past this one (0: at once).
    pub since_version: u64,
    /// ... or after this long with the current one (at most [`MAX_FEDERATION_WAIT_MS`]).
    pub wait_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FederationReply {
    pub federation: Federation,
    /// The router that answered.
    pub router_id: u64,
    /// The routers' superuser, who owns the directories above the mount
    /// points (the SDK's direct mode answers for them as a router does).
    pub superuser: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeRequest {
    /// Who asks (under `--auth strong`, their certificate decides instead).
    pub user: String,
    pub change: FederationChange,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterStatus {
    pub router_id: u64,
    /// Leader, Follower, Candidate or Learner.
    pub state: String,
    pub term: u64,
    pub leader: Option<u64>,
    pub applied_index: u64,
    /// The federation's version as this router has applied it.
    pub version: u64,
    /// `HEALTHY` or `UNHEALTHY: <reason>`.
    pub health: String,
    /// Why the router refuses client calls, if it does.
    pub safe_mode: Option<String>,
}

/// What `routeradmin -safemode` asks of one router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SafeModeAction {
    Enter,
    Leave,
    Get,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SafeModeRequest {
    /// Who asks (under `--auth strong`, their certificate decides instead).
    pub user: String,
    pub action: SafeModeAction,
}
