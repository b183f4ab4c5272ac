//! The clients of a fault run and the history they record.
//!
//! Each client reaches the members through the nemesis's client proxies
//! (so it can be cut off from one). Each is its own SDK `FileSystem` (its own client id, so its
//! retries are answered from the retry table) and draws its calls from its
//! own seeded generator: mostly calls on a few contended paths
//! (`<base>/k<i>`: create, mkdirs, delete, setPermission, getFileInfo, and
//! rename2 to the other path of its pair `k<i^1>`) whose history the
//! checker verifies, and some creates of paths only it writes
//! (`<base>/u/c<client>-<n>`), which must all exist at the end and must
//! each have answered "created" exactly once. Half the clients read from
//! followers with read-index (linearizable) reads, so that path is checked
//! too.
//!
//! Times are nanoseconds since the run's start on this process's monotonic
//! clock. A call that ends with a retryable error (the SDK gave up after
//! its deadline) has an unknown outcome and no return time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use raftfs_client::{ClientOptions, FileSystem, FollowerReads, Identity};
use raftfs_proto::{FsError, Permission};

use super::checker::{Input, Op, Output, Value};

/// What one client did.
#[derive(Debug, Default)]
pub struct ClientLog {
    pub ops: Vec<Op>,
    /// Unique creates acknowledged as created.
    pub unique_acked: Vec<String>,
    /// Unique creates that answered "already exists": applied twice.
    pub unique_twice: Vec<String>,
    /// Unique creates with an unknown outcome (may or may not exist).
    pub unique_unknown: Vec<String>,
    /// Unique creates refused with another error (a bug).
    pub unique_failed: Vec<(String, String)>,
}

pub struct Workload {
    pub base: String,
    pub keys: usize,
    pub started: Instant,
}

impl Workload {
    pub fn key_path(&self, k: usize) -> String {
        format!("{}/k{k}", self.base)
    }

    pub fn unique_dir(&self) -> String {
        format!("{}/u", self.base)
    }

    fn now_ns(&self) -> u64 {
        self.started.elapsed().as_nanos() as u64
    }

    /// Run client `c` until `stop`, from generator seed `seed`.
    pub async fn client(
        self: Arc<Self>,
        fs_uri: String,
        // TLS and the routes through the nemesis's client proxies.
        base: ClientOptions,
        identity: Identity,
        c: usize,
        seed: u64,
        stop: Arc<AtomicBool>,
    ) -> anyhow::Result<ClientLog> {
        let opts = ClientOptions {
            follower_reads: if c % 2 == 1 {
                FollowerReads::Linearizable
            } else {
                FollowerReads::Off
            },
            ..base
        };
        let fs = FileSystem::connect(&fs_uri, identity, opts)?;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut log = ClientLog::default();
        let mut n = 0u64;
        while !stop.load(Ordering::Relaxed) {
            if rng.gen_range(0..100) < UNIQUE_PERCENT {
                let p = format!("{}/c{c}-{n}", self.unique_dir());
                n += 1;
                match fs.create(&p, false).await {
                    Ok(_) => log.unique_acked.push(p),
                    Err(FsError::FileAlreadyExists(_)) => log.unique_twice.push(p),
                    Err(e) if e.is_retryable() => log.unique_unknown.push(p),
                    Err(e) => log.unique_failed.push((p, e.to_string())),
                }
                continue;
            }
            let key = rng.gen_range(0..self.keys);
            let input = match rng.gen_range(0..100) {
                0..18 => Input::Create,
                18..31 => Input::Mkdir,
                31..49 => Input::Delete,
                49..65 => Input::Chmod(rng.gen_range(0o100..=0o777)),
                65..80 => Input::Rename,
                _ => Input::Stat,
            };
            let path = self.key_path(key);
            let call_ns = self.now_ns();
            let output = call(&fs, &path, &self.key_path(key ^ 1), input).await;
            let ret_ns = output.as_ref().map(|_| self.now_ns());
            log.ops.push(Op {
                client: c,
                key,
                input,
                output,
                call_ns,
                ret_ns,
            });
        }
        Ok(log)
    }
}

/// Share of calls that are unique creates, percent.
const UNIQUE_PERCENT: u32 = 20;

/// Make one keyed call on `path` (`other`: the other path of its pair, a
/// rename's destination); `None` when its outcome is unknown.
pub async fn call(fs: &FileSystem, path: &str, other: &str, input: Input) -> Option<Output> {
    let r = match input {
        Input::Create => fs.create(path, false).await.map(|_| Output::Done),
        Input::Rename => fs.rename2(path, other, false).await.map(|_| Output::Done),
        Input::Mkdir => fs.mkdirs(path, None).await.map(|made| {
            if made {
                Output::Done
            } else {
                Output::Other("mkdirs returned false".into())
            }
        }),
        Input::Delete => fs.delete(path, true).await.map(Output::Deleted),
        Input::Chmod(m) => fs.set_permission(path, Permission::new(m)).await.map(|_| Output::Done),
        Input::Stat => fs.get_file_info(path).await.map(|s| {
            Output::Stat(match s {
                None => Value::Absent,
                Some(s) if s.is_dir() => Value::Dir(s.permission.bits()),
                Some(s) => Value::File(s.permission.bits()),
            })
        }),
    };
    match r {
        Ok(o) => Some(o),
        Err(FsError::FileAlreadyExists(_) | FsError::AlreadyBeingCreated(_)) => Some(Output::Exists),
        Err(FsError::FileNotFound(_)) => Some(Output::FileNotFound),
        Err(e) if e.is_retryable() => None,
        Err(e) => Some(Output::Other(format!("{}: {e}", e.exception_name()))),
    }
}
