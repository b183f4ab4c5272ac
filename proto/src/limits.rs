//! Named bounds shared by clients and servers (DESIGN.md §8).
//!
//! The server enforces them; the client may check early to fail fast. Values
//! follow HDFS defaults where HDFS has one.

/// Longest accepted path, in bytes. HDFS has no such limit; we bound it so that
/// one request can never carry an unbounded key.
pub const MAX_PATH_LEN_BYTES: usize = 8000;
/// Longest accepted path component, in bytes (HDFS `dfs.namenode.fs-limits.max-component-length`).
pub const MAX_NAME_LEN_BYTES: usize = 255;
/// Deepest accepted path, in components.
pub const MAX_PATH_DEPTH: usize = 1000;
/// Most entries returned by one getListing page (HDFS `dfs.ls.limit`).
pub const MAX_LISTING_ENTRIES: usize = 1000;
/// Largest encoded gRPC message accepted or sent, in bytes.
pub const MAX_RPC_BYTES: usize = 64 * 1024 * 1024;
/// Longest user or group name, in bytes.
pub const MAX_PRINCIPAL_LEN_BYTES: usize = 256;
/// Most source files one `concat` joins to its target (HDFS has no bound;
/// one call's log entry and the directory lock it holds stay bounded).
pub const MAX_CONCAT_SOURCES: usize = 1024;
/// Most groups a caller may name.
pub const MAX_GROUPS_PER_CALLER: usize = 64;
/// Largest replication factor accepted (HDFS `dfs.replication.max`).
pub const MAX_REPLICATION: u16 = 512;
/// Smallest block size accepted, in bytes (HDFS `dfs.namenode.fs-limits.min-block-size`).
pub const MIN_BLOCK_SIZE_BYTES: u64 = 1024 * 1024;
/// Most children one directory may hold (HDFS `dfs.namenode.fs-limits.max-directory-items`).
pub const MAX_DIRECTORY_ITEMS: u64 = 1024 * 1024;
/// Largest block size accepted, in bytes.
pub const MAX_BLOCK_SIZE_BYTES: u64 = 1 << 40;
/// Block sizes are multiples of this (HDFS `dfs.bytes-per-checksum`).
pub const BYTES_PER_CHECKSUM: u64 = 512;
/// Longest member address (`HOST:PORT`), in bytes.
pub const MAX_MEMBER_ADDR_LEN_BYTES: usize = 300;

/// Default replication of new files (HDFS `dfs.replication`): the SDK's,
/// and what a member tells Hadoop clients (`getServerDefaults`).
pub const DEFAULT_REPLICATION: u16 = 3;
/// Default block size of new files, bytes (HDFS `dfs.blocksize`).
pub const DEFAULT_BLOCK_SIZE_BYTES: u64 = 128 * 1024 * 1024;
