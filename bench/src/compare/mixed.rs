//! The `mixed` op of `bench compare`: half the callers create files in one
//! hot directory while the other half read (getFileInfo) files elsewhere,
//! as long as the creates last; `mixedSpread` is the same load with the
//! creates spread over many directories (a few files each), the baseline
//! of the hot directory's ratio. Reports creates per second (a create is
//! create + complete), the reads' p99 latency, CPU per create (the reads'
//! CPU included) and writes per log entry. With `--exec leader` the
//! creates share their parent's READ locks and plan in parallel; the reads
//! take no locks at all.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use raftfs_proto::{FsError, Op, Permission};

use super::Sample;
use crate::names::Names;
use crate::nnthroughput::{create_work, leader_log_index, CpuMark};
use crate::target::{run_parallel, Bench};

/// Most files the readers read from (spread over a tree, created before
/// timing; as many as the run creates, up to this).
const MAX_READ_FILES: u64 = 10_000;

fn p99(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[(v.len() * 99 / 100).min(v.len() - 1)])
}

/// Where the creators create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Creates {
    /// All in one directory.
    Hot,
    /// Over many directories of `files_per_dir` files each.
    Spread { files_per_dir: u64 },
}

/// Each creator's share of the files to create.
fn creator_work(base: &str, files: u64, creators: usize, creates: Creates) -> Vec<Vec<Op>> {
    let mut shares = vec![Vec::new(); creators];
    let spread = match creates {
        Creates::Hot => None,
        Creates::Spread { files_per_dir } => Some(Names::new(&format!("{base}/spread"), files, files_per_dir)),
    };
    for n in 0..files {
        let path = match &spread {
            None => format!("{base}/hot/f{n}"),
            Some(names) => names.file(n),
        };
        shares[n as usize % creators].extend(create_work(path));
    }
    shares
}

pub(crate) async fn run(
    bench: Arc<Bench>,
    base: &str,
    files: u64,
    callers: usize,
    creates: Creates,
) -> anyhow::Result<Sample> {
    let held = bench.clone();
    let fs = held.remote_fs();
    let creators = callers / 2;
    let reader_count = callers - creators;
    let read_files = files.clamp(1, MAX_READ_FILES);
    let names = Names::new(&format!("{base}/read"), read_files, 4);
    let readable: Arc<Vec<String>> = Arc::new((0..read_files).map(|n| names.file(n)).collect());
    run_parallel(
        &bench,
        creators.max(1),
        readable.iter().cloned().map(create_work).collect(),
    )
    .await?;
    bench
        .call(
            0,
            Op::Mkdirs {
                path: format!("{base}/hot"),
                permission: Permission(0o755),
                create_parent: true,
            },
        )
        .await?;
    let shares = creator_work(base, files, creators, creates);
    let done = Arc::new(AtomicBool::new(false));
    let log0 = match fs {
        Some(fs) => leader_log_index(fs).await,
        None => bench.raft_log_index(),
    };
    let batches0 = bench.engine_batch_stats();
    let cpu = CpuMark::take(fs).await;
    let start = Instant::now();
    let mut latencies = Vec::new();
    if bench.is_engine() {
        let spawn_reader = |r: usize| {
            let (b, done, readable) = (bench.clone(), done.clone(), readable.clone());
            std::thread::spawn(move || -> Result<Vec<f64>, FsError> {
                let mut rng = StdRng::seed_from_u64(r as u64);
                let mut ctx = b.worker_ctx(1000 + r);
                let mut lat = Vec::new();
                while !done.load(Ordering::Relaxed) {
                    let p = readable[rng.gen_range(0..readable.len())].clone();
                    let t = Instant::now();
                    b.call_sync(&mut ctx, Op::GetFileInfo { path: p })?;
                    lat.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                Ok(lat)
            })
        };
        let readers: Vec<_> = (0..reader_count).map(spawn_reader).collect();
        let writers: Vec<_> = shares
            .into_iter()
            .enumerate()
            .map(|(w, ops)| {
                let b = bench.clone();
                std::thread::spawn(move || -> Result<(), FsError> {
                    let mut ctx = b.worker_ctx(w);
                    for op in ops {
                        b.call_sync(&mut ctx, op)?;
                    }
                    Ok(())
                })
            })
            .collect();
        for w in writers {
            w.join().map_err(|_| anyhow::anyhow!("creator panicked"))??;
        }
        done.store(true, Ordering::Relaxed);
        for r in readers {
            latencies.extend(r.join().map_err(|_| anyhow::anyhow!("reader panicked"))??);
        }
    } else {
        let mut readers = tokio::task::JoinSet::new();
        for r in 0..reader_count {
            let (b, done, readable) = (bench.clone(), done.clone(), readable.clone());
            readers.spawn(async move {
                let mut rng = StdRng::seed_from_u64(r as u64);
                let mut lat = Vec::new();
                while !done.load(Ordering::Relaxed) {
                    let p = readable[rng.gen_range(0..readable.len())].clone();
                    let t = Instant::now();
                    b.call(1000 + r, Op::GetFileInfo { path: p }).await?;
                    lat.push(t.elapsed().as_secs_f64() * 1000.0);
                }
                Ok::<_, FsError>(lat)
            });
        }
        let mut writers = tokio::task::JoinSet::new();
        for (w, ops) in shares.into_iter().enumerate() {
            let b = bench.clone();
            writers.spawn(async move {
                for op in ops {
                    b.call(w, op).await?;
                }
                Ok::<_, FsError>(())
            });
        }
        while let Some(r) = writers.join_next().await {
            r??;
        }
        done.store(true, Ordering::Relaxed);
        while let Some(r) = readers.join_next().await {
            latencies.extend(r??);
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    let cpu = cpu.split(fs, files).await;
    let writes = 2 * files;
    let writes_per_entry = match (bench.engine_batch_stats(), batches0) {
        (Some((b, w)), Some((b0, w0))) => (b > b0).then(|| (w - w0) as f64 / (b - b0) as f64),
        _ => {
            let log1 = match fs {
                Some(fs) => leader_log_index(fs).await,
                None => bench.raft_log_index(),
            };
            match (log0, log1) {
                (Some(l0), Some(l1)) if l1 > l0 => Some(writes as f64 / (l1 - l0) as f64),
                _ => None,
            }
        }
    };
    Ok(Sample {
        rate: files as f64 / elapsed,
        cpu,
        writes_per_entry,
        read_p99_ms: p99(latencies),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p99_picks_the_99th_percentile() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(p99(v), Some(100.0));
        let v: Vec<f64> = (1..=1000).map(f64::from).collect();
        assert_eq!(p99(v), Some(991.0));
        assert_eq!(p99(Vec::new()), None);
    }

    #[test]
    fn creators_share_the_hot_directory() {
        let w = creator_work("/b", 10, 3, Creates::Hot);
        assert_eq!(w.len(), 3);
        assert_eq!(w.iter().map(Vec::len).sum::<usize>(), 20, "create + complete each");
        assert!(w.iter().flatten().all(|op| op.src_path().starts_with("/b/hot/f")));
    }

    #[test]
    fn spread_creators_use_many_directories() {
        let w = creator_work("/b", 40, 4, Creates::Spread { files_per_dir: 4 });
        let dirs: std::collections::BTreeSet<String> = w
            .iter()
            .flatten()
            .map(|op| {
                let p = op.src_path();
                assert!(p.starts_with("/b/spread/"), "{p}");
                p[..p.rfind('/').unwrap()].to_string()
            })
            .collect();
        assert_eq!(w.iter().map(Vec::len).sum::<usize>(), 80, "create + complete each");
        assert!(dirs.len() >= 10, "{dirs:?}");
    }
}
