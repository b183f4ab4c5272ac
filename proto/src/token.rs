//! Block access tokens as they travel (HDFS `BlockTokenIdentifier`,
//! `BlockKey`, `ExportedBlockKeys`): what a member hands a client with a
//! block's locations, what the client shows a DataNode, and the keys a
//! member hands its DataNodes so they can check what it minted.
//!
//! Minting and checking live in `raftfs_trust::block_token`; these are only
//! the shapes. A [`BlockKey`] carries its secret, so it travels only over
//! mutual TLS between a member and a DataNode, and its `Debug` output never
//! shows the secret.

use serde::{Deserialize, Serialize};

/// What a block token allows (HDFS `BlockTokenIdentifier.AccessMode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum AccessMode {
    /// Read the replica (reads, replica queries, block checksums, short-circuit).
    Read,
    /// Write the replica (a pipeline: create, append, recovery).
    Write,
    /// Copy the replica to other DataNodes (a writer's pipeline recovery).
    Copy,
    /// Replace a replica (the balancer's move; not used yet).
    Replace,
}

impl AccessMode {
    fn bit(self) -> u8 {
        match self {
            AccessMode::Read => 1,
            AccessMode::Write => 2,
            AccessMode::Copy => 4,
            AccessMode::Replace => 8,
        }
    }

    /// HDFS's name of the mode.
    pub fn name(self) -> &'static str {
        match self {
            AccessMode::Read => "READ",
            AccessMode::Write => "WRITE",
            AccessMode::Copy => "COPY",
            AccessMode::Replace => "REPLACE",
        }
    }

    const ALL: [AccessMode; 4] = [
        AccessMode::Read,
        AccessMode::Write,
        AccessMode::Copy,
        AccessMode::Replace,
    ];
}

/// A set of [`AccessMode`]s (HDFS's `EnumSet<AccessMode>`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AccessModes(u8);

impl AccessModes {
    pub fn of(modes: &[AccessMode]) -> AccessModes {
        AccessModes(modes.iter().fold(0, |b, m| b | m.bit()))
    }

    pub fn contains(self, m: AccessMode) -> bool {
        self.0 & m.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::fmt::Display for AccessModes {
    /// `READ,WRITE`, as HDFS prints a token's modes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = AccessMode::ALL
            .iter()
            .filter(|m| self.contains(**m))
            .map(|m| m.name())
            .collect();
        write!(f, "{}", names.join(","))
    }
}

/// What a token says (HDFS `BlockTokenIdentifier`): signed whole by the
/// key `key_id` names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockTokenIdentifier {
    /// Unix milliseconds after which the token is refused (the minting
    /// member's clock; DataNodes compare with theirs).
    pub expiry_ms: i64,
    /// The block key that signed it.
    pub key_id: u64,
    /// Who it was issued to (for the DataNode's log; HDFS `userId`).
    pub user: String,
    pub block_pool_id: String,
    pub block_id: u64,
    pub modes: AccessModes,
    /// How the token may travel to a DataNode: signed with the rest, so a
    /// client cannot show a `Privacy` token over plaintext.
    pub protection: DataProtection,
}

/// How a cluster protects the data path between clients and DataNodes
/// (HDFS `dfs.data.transfer.protection`, and `dfs.encrypt.data.transfer`
/// for `privacy`). The members decide it and sign it into every block
/// token; traffic between DataNodes, and between members and DataNodes,
/// is mutual TLS at either level.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DataProtection {
    /// Clients read and write blocks in plaintext (HTTP/2 without TLS);
    /// every request proves it holds a block token without sending its
    /// password ([`BlockTokenProof`]). Data is checksummed end to end
    /// (CRC32C) but an eavesdropper can read it and an active attacker on
    /// the path can alter it, as with HDFS's `authentication` level.
    #[default]
    Authentication,
    /// Clients reach DataNodes in TLS (HDFS's `privacy`: encrypted and
    /// integrity-protected), the token itself travelling inside it.
    Privacy,
}

impl DataProtection {
    /// HDFS's name of the level.
    pub fn name(self) -> &'static str {
        match self {
            DataProtection::Authentication => "authentication",
            DataProtection::Privacy => "privacy",
        }
    }

    /// Parse HDFS's name of a level.
    pub fn parse(s: &str) -> Result<DataProtection, String> {
        match s {
            "authentication" => Ok(DataProtection::Authentication),
            "privacy" => Ok(DataProtection::Privacy),
            other => Err(format!(
                "data protection {other:?}: expected authentication or privacy \
                 (integrity is not offered: use privacy)"
            )),
        }
    }
}

impl std::fmt::Display for DataProtection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a client shows a DataNode over plaintext instead of a token: the
/// token's identifier and an HMAC-SHA256, under the token's password, of
/// a fresh nonce and the client's clock (a Kerberos authenticator's shape:
/// the DataNode recomputes the password from its block key, accepts a
/// time within its skew window and each nonce once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockTokenProof {
    pub identifier: BlockTokenIdentifier,
    pub nonce: [u8; 16],
    /// Unix milliseconds on the client's clock when it made the proof.
    pub time_ms: i64,
    pub mac: Vec<u8>,
}

/// A block access token: the identifier and its HMAC-SHA256 under the key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockToken {
    pub identifier: BlockTokenIdentifier,
    pub password: Vec<u8>,
}

impl std::fmt::Display for BlockToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.identifier;
        write!(
            f,
            "block token (user={}, pool={}, block={}, access={}, expiry={}, key={:#x})",
            i.user, i.block_pool_id, i.block_id, i.modes, i.expiry_ms, i.key_id
        )
    }
}

/// A secret a member signs tokens with (HDFS `BlockKey`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockKey {
    pub key_id: u64,
    /// Unix milliseconds after which no token it signed is valid.
    pub expiry_ms: i64,
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for BlockKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockKey")
            .field("key_id", &format_args!("{:#x}", self.key_id))
            .field("expiry_ms", &self.expiry_ms)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// The keys a member hands a DataNode with every registration and
/// heartbeat reply (HDFS `ExportedBlockKeys`): the one it signs with now,
/// the next one (so DataNodes know it before it signs anything), and the
/// retired ones whose tokens may still be out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportedBlockKeys {
    pub block_pool_id: String,
    /// The key the member signs with now (a DataNode signs its own copies with it too).
    pub current_key_id: u64,
    pub keys: Vec<BlockKey>,
    /// How long a token the member mints lives (HDFS `dfs.block.access.token.lifetime`).
    pub token_lifetime_ms: u64,
}

/// A call's result that may name blocks: its tokens come off it before it
/// is encoded and go back on after it is decoded (they travel in
/// `CallReply.block_tokens_bin`, beside the result).
pub trait BlockTokenCarrier {
    /// The tokens on the blocks this result names.
    fn block_tokens(&self) -> Vec<BlockToken>;
    /// Put each token on the block it is for.
    fn put_block_tokens(&mut self, tokens: Vec<BlockToken>);
}

impl BlockTokenCarrier for crate::OpResult {
    fn block_tokens(&self) -> Vec<BlockToken> {
        self.located_blocks()
            .into_iter()
            .filter_map(|lb| lb.token.clone())
            .collect()
    }

    fn put_block_tokens(&mut self, tokens: Vec<BlockToken>) {
        if tokens.is_empty() {
            return;
        }
        for lb in self.located_blocks_mut() {
            lb.token = tokens.iter().find(|t| t.identifier.block_id == lb.block.id).cloned();
        }
    }
}

impl BlockTokenCarrier for crate::AdminResult {
    fn block_tokens(&self) -> Vec<BlockToken> {
        Vec::new()
    }

    fn put_block_tokens(&mut self, _tokens: Vec<BlockToken>) {}
}

/// What a delegation token says (HDFS `DelegationTokenIdentifier`): signed
/// whole by the master key `key_id` names. The nameservice keeps a record
/// of every live token in its replicated state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationTokenIdentifier {
    /// The user the token authenticates as.
    pub owner: String,
    /// The user allowed to renew it (HDFS: the job tracker, YARN's RM).
    pub renewer: String,
    /// Who asked for it, when not the owner (HDFS `realUser`; empty otherwise).
    pub real_user: String,
    /// Log time it was issued, Unix ms.
    pub issue_ms: i64,
    /// It can never be renewed past this, Unix ms.
    pub max_ms: i64,
    /// Unique within the nameservice.
    pub sequence_number: u64,
    pub key_id: u64,
}

/// A delegation token: the identifier, its HMAC-SHA256 under the master
/// key, and the nameservice it is for (HDFS `Token<DelegationTokenIdentifier>`,
/// kind `HDFS_DELEGATION_TOKEN`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationToken {
    pub identifier: DelegationTokenIdentifier,
    pub password: Vec<u8>,
    /// The nameservice that issued it (HDFS's `service`).
    pub service: String,
}

impl DelegationToken {
    /// The token as text (URL-safe base64 of its encoding, as HDFS's
    /// `Token.encodeToUrlString`): for token files and `delegation=` parameters.
    pub fn encode_url(&self) -> Result<String, crate::FsError> {
        use base64::Engine;
        Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(crate::codec::encode(self)?))
    }

    /// A token from [`DelegationToken::encode_url`]'s text.
    pub fn decode_url(text: &str) -> Result<DelegationToken, crate::FsError> {
        use base64::Engine;
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text.trim())
            .map_err(|e| crate::FsError::InvalidArgument(format!("a delegation token is URL-safe base64: {e}")))?;
        crate::codec::decode(&raw, "delegation token")
    }
}

impl std::fmt::Display for DelegationToken {
    /// HDFS's way of printing one: kind, service and identifier.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let i = &self.identifier;
        write!(
            f,
            "Kind: HDFS_DELEGATION_TOKEN, Service: {}, Ident: (token for {}: owner={}, renewer={}, realUser={}, issueDate={}, maxDate={}, sequenceNumber={}, masterKeyId={})",
            self.service, i.owner, i.owner, i.renewer, i.real_user, i.issue_ms, i.max_ms, i.sequence_number, i.key_id
        )
    }
}

/// A master key delegation tokens are signed with (HDFS `DelegationKey`),
/// kept in the replicated state.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DelegationKey {
    pub key_id: u64,
    /// Log time it was made, Unix ms (the newest key signs new tokens).
    pub created_ms: i64,
    /// After this no token it signed is valid, Unix ms.
    pub expiry_ms: i64,
    pub secret: Vec<u8>,
}

impl std::fmt::Debug for DelegationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelegationKey")
            .field("key_id", &self.key_id)
            .field("created_ms", &self.created_ms)
            .field("expiry_ms", &self.expiry_ms)
            .field("secret", &"<redacted>")
            .finish()
    }
}
