//! `raftfs bench mounttable`: what resolving a path through the mount
//! table costs a client (issue 17's figure: at most 2 µs per call at
//! 10,000 mount points).
//!
//! Builds a federation of `--nameservices` nameservices and `--entries`
//! mount points (single-destination entries at depths 2 and 3, and one
//! entry in `--multi-every` spread over two nameservices with HASH_ALL),
//! then resolves `--lookups` paths 1 to 4 components below random mount
//! points, and as many paths no mount point covers, per run. Each
//! resolution is the SDK's whole job: the longest prefix, the destination
//! order, and every candidate's translated path. Prints the mean per run
//! and the median over `--runs`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Instant;

use clap::Args;
use raftfs_router::federation::{Federation, FederationChange, NameserviceRecord};
use raftfs_router::mount_table::{Destination, MountEntry, MountQuota, MountTableChange, Order};
use rand::{Rng, SeedableRng};

/// The figure the issue sets, in nanoseconds per resolution.
const TARGET_NS_PER_RESOLVE: f64 = 2_000.0;

#[derive(Args, Debug, Clone)]
pub struct MountTableArgs {
    /// Mount points in the table.
    #[arg(long, default_value_t = 10_000)]
    pub entries: usize,
    #[arg(long, default_value_t = 4)]
    pub nameservices: usize,
    /// One entry in this many spreads over two nameservices (HASH_ALL).
    #[arg(long = "multi-every", default_value_t = 10)]
    pub multi_every: usize,
    /// Resolutions per run.
    #[arg(long, default_value_t = 1_000_000)]
    pub lookups: usize,
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// Seed of the paths looked up (printed; the same seed, the same paths).
    #[arg(long)]
    pub seed: Option<u64>,
}

fn federation(a: &MountTableArgs) -> anyhow::Result<Federation> {
    let mut f = Federation::new();
    for n in 0..a.nameservices {
        f.apply(FederationChange::AddNameservice(NameserviceRecord {
            name: format!("ns{n}"),
            namespace_id: n as u64 + 1,
            block_pool_id: format!("BP-{n}"),
            members: BTreeMap::from([(1, format!("127.0.0.1:{}", 9000 + n))]),
        }))?;
    }
    for i in 0..a.entries {
        let source = match i % 2 {
            0 => format!("/projects/p{i}"),
            _ => format!("/users/u{}/d{i}", i % 97),
        };
        let ns = i % a.nameservices;
        let mut destinations = vec![Destination {
            nameservice: format!("ns{ns}"),
            path: source.clone(),
        }];
        if a.multi_every > 0 && i % a.multi_every == 0 && a.nameservices > 1 {
            destinations.push(Destination {
                nameservice: format!("ns{}", (ns + 1) % a.nameservices),
                path: source.clone(),
            });
        }
        f.apply(FederationChange::Mount(MountTableChange::Add(MountEntry {
            source,
            destinations,
            order: Order::HashAll,
            read_only: false,
            owner: "hdfs".into(),
            group: "supergroup".into(),
            mode: 0o755,
            quota: MountQuota::default(),
        })))?;
    }
    Ok(f)
}

pub fn run(a: MountTableArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        a.entries > 0 && a.nameservices > 0 && a.lookups > 0 && a.runs > 0,
        "counts must be positive"
    );
    let f = federation(&a)?;
    let sources: Vec<String> = f.mounts().entries().map(|e| e.source.clone()).collect();
    let seed = a.seed.unwrap_or_else(|| rand::thread_rng().gen());
    println!(
        "mount table: {} entries over {} nameservices; {} lookups per run, half under a mount point; seed {seed}",
        sources.len(),
        a.nameservices,
        a.lookups
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let paths: Vec<String> = (0..a.lookups)
        .map(|i| {
            let depth = rng.gen_range(1..=4);
            let below: String = (0..depth)
                .map(|d| format!("/c{d}x{}", rng.gen_range(0..1000)))
                .collect();
            if i % 2 == 0 {
                format!("{}{below}", sources[rng.gen_range(0..sources.len())])
            } else {
                format!("/unmounted{below}")
            }
        })
        .collect();
    let mut per_run = Vec::with_capacity(a.runs);
    for run in 1..=a.runs {
        let started = Instant::now();
        let mut found = 0usize;
        for p in &paths {
            if let Some(r) = black_box(f.mounts().resolve(black_box(p))) {
                found += r.candidates.len();
            }
        }
        let ns = started.elapsed().as_nanos() as f64 / paths.len() as f64;
        anyhow::ensure!(
            found >= a.lookups / 2,
            "only {found} candidates for {} mounted paths",
            a.lookups / 2
        );
        println!("run {run}: {ns:.0} ns per resolution");
        per_run.push(ns);
    }
    per_run.sort_by(|x, y| x.total_cmp(y));
    let median = per_run[per_run.len() / 2];
    println!(
        "median {median:.0} ns per resolution (min {:.0}, max {:.0}) at {} mount points; target <= {TARGET_NS_PER_RESOLVE:.0} ns: {}",
        per_run[0],
        per_run[per_run.len() - 1],
        sources.len(),
        if median <= TARGET_NS_PER_RESOLVE { "met" } else { "NOT met" }
    );
    Ok(())
}
