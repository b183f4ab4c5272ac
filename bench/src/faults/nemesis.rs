//! The nemesis: random faults drawn from a seeded generator, such that a
//! majority of members always stays up and connected.
//!
//! Faults: kill -9 of a member (restarted on its directory when the fault
//! ends), SIGSTOP of a member (SIGCONT at the end), a member isolated from
//! the others (every link through its proxies cut both ways), one directed
//! link cut, a slow disk (every fsync of a member's Raft log delayed), the
//! clients cut off from a member (their connections to it go through a
//! proxy of their own, [`Nemesis::client_routes`]), and a member's wall
//! clock stepped forward or back by minutes (and stepped back when the
//! fault ends; through `RAFTFS_FAILPOINT_CLOCK_OFFSET_DIR`), which must
//! neither expire retry records early (the checker would see a write
//! applied twice) nor break leases. Half the time the target is the leader
//! of the moment, else any member.
//!
//! Several at once: [`OVERLAP_PERCENT`] of the faults come with a second
//! one that starts and ends with it, chosen so that the members the first
//! spares still form a connected majority: the clients cut off from
//! another member, a slow disk or a stepped clock on another member, or a
//! link cut between the first's target and another member.
//!
//! Kinds are dealt from a shuffled deck of all seven, so any seven
//! consecutive faults are one of each kind, and every run reports how many
//! of each it drew ([`Nemesis::kinds_report`]), naming a kind it never drew
//! rather than passing quietly without it. The choices and durations come
//! from the seed; which member leads at
//! that moment depends on timing, so a replay repeats the schedule, not
//! necessarily the exact targets. Every fault is printed as it happens.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::Rng;

use super::proxy::LinkProxy;
use crate::localns::LocalNameservice;

/// Quiet time between two faults, ms (low, high).
pub const QUIET_MS: (u64, u64) = (500, 2000);
/// How long one fault lasts, ms (low, high).
pub const HOLD_MS: (u64, u64) = (1000, 5000);
/// Injected delay per fsync of a slow disk, ms (low, high).
pub const SLOW_FSYNC_MS: (u64, u64) = (100, 1500);
/// How far a member's wall clock is stepped, either way, ms (low, high):
/// 2 to 30 minutes, past the retry table's 10-minute window.
pub const CLOCK_STEP_MS: (u64, u64) = (120_000, 1_800_000);

/// The kinds of fault, in [`Fault::kind`] order, as reports name them.
pub const FAULT_KINDS: [&str; 7] = [
    "kill -9",
    "SIGSTOP",
    "partition",
    "cut link",
    "slow disk",
    "client partition",
    "clock step",
];
/// The members' log filter in a fault run: the default one, and every
/// read's index (`raftfs::reads` at debug).
pub const MEMBER_LOG_FILTER: &str = "info,openraft=warn,h2=warn,tower=warn,raftfs::reads=debug";
/// Share of faults that come with a second one at the same time, percent.
pub const OVERLAP_PERCENT: u32 = 40;

#[derive(Debug, Clone)]
pub enum Fault {
    Kill(u64),
    Pause(u64),
    Isolate(u64),
    CutLink {
        from: u64,
        to: u64,
    },
    SlowDisk {
        member: u64,
        delay_ms: u64,
    },
    /// Every client connection to the member cut.
    ClientPartition(u64),
    /// The member's wall clock off by `offset_ms` (either sign).
    ClockStep {
        member: u64,
        offset_ms: i64,
    },
}

impl Fault {
    /// This fault's index in [`FAULT_KINDS`].
    pub fn kind(&self) -> usize {
        match self {
            Fault::Kill(_) => 0,
            Fault::Pause(_) => 1,
            Fault::Isolate(_) => 2,
            Fault::CutLink { .. } => 3,
            Fault::SlowDisk { .. } => 4,
            Fault::ClientPartition(_) => 5,
            Fault::ClockStep { .. } => 6,
        }
    }

    /// The member the fault is aimed at (a cut link's sender).
    pub fn target(&self) -> u64 {
        match self {
            Fault::Kill(m) | Fault::Pause(m) | Fault::Isolate(m) | Fault::ClientPartition(m) => *m,
            Fault::CutLink { from, .. } => *from,
            Fault::SlowDisk { member, .. } | Fault::ClockStep { member, .. } => *member,
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::Kill(m) => write!(f, "kill -9 member {m}, restart after"),
            Fault::Pause(m) => write!(f, "SIGSTOP member {m}"),
            Fault::Isolate(m) => write!(f, "partition member {m} from the others"),
            Fault::CutLink { from, to } => write!(f, "cut link {from} -> {to}"),
            Fault::SlowDisk { member, delay_ms } => write!(f, "slow disk on member {member}: +{delay_ms} ms per fsync"),
            Fault::ClientPartition(m) => write!(f, "cut the clients off from member {m}"),
            Fault::ClockStep { member, offset_ms } => {
                write!(
                    f,
                    "step member {member}'s clock by {:+.1} min",
                    *offset_ms as f64 / 60_000.0
                )
            }
        }
    }
}

pub struct Nemesis {
    pub ns: LocalNameservice,
    /// Proxies by (from, to) member.
    pub links: BTreeMap<(u64, u64), LinkProxy>,
    /// The clients' proxy to each member.
    pub client_links: BTreeMap<u64, LinkProxy>,
    /// Faults that came with a second one at once.
    pub overlapping: usize,
    rng: StdRng,
    started: Instant,
    /// What was done, with times since the start, for the run's report.
    pub done: Vec<String>,
    /// Kinds still to deal before the deck is shuffled again.
    deck: Vec<usize>,
    /// Faults drawn of each kind ([`FAULT_KINDS`] order).
    pub drawn: [usize; FAULT_KINDS.len()],
    /// The process whose clock each stepped member's offset file names.
    stepped_pids: BTreeMap<u64, u32>,
}

fn slow_file(ns: &LocalNameservice, m: u64) -> std::path::PathBuf {
    ns.root().join(format!("slow-disk-m{m}"))
}

/// Where members' clock offsets live (`<dir>/<pid>`, see `raftfs_trust::clock`).
fn clock_dir(ns: &LocalNameservice) -> std::path::PathBuf {
    ns.root().join("clock-offsets")
}

impl Nemesis {
    /// Put a proxy on every directed link and point each member's peer
    /// routes and slow-disk file at them (before the members start).
    pub async fn wire(mut ns: LocalNameservice, rng: StdRng, started: Instant) -> anyhow::Result<Nemesis> {
        let ids: Vec<u64> = ns.members.iter().map(|m| m.id).collect();
        let mut links = BTreeMap::new();
        let mut client_links = BTreeMap::new();
        let clocks = clock_dir(&ns);
        std::fs::create_dir_all(&clocks).context("make the clock offset directory")?;
        for &m in &ids {
            let target = ns.member(m).addr.parse().context("member address")?;
            client_links.insert(m, LinkProxy::start(target).await.context("start client proxy")?);
        }
        for &from in &ids {
            let mut routes = Vec::new();
            for &to in ids.iter().filter(|&&t| t != from) {
                let target = ns.member(to).addr.parse().context("member address")?;
                let p = LinkProxy::start(target).await.context("start link proxy")?;
                routes.push(format!("{to}={}", p.listen));
                links.insert((from, to), p);
            }
            let slow = slow_file(&ns, from);
            let m = ns.member(from);
            m.env.push(("RAFTFS_FAILPOINT_PEER_ROUTES".into(), routes.join(",")));
            m.env
                .push(("RAFTFS_FAILPOINT_SLOW_DISK_FILE".into(), slow.display().to_string()));
            m.env.push((
                raftfs_trust::clock::ENV_CLOCK_OFFSET_DIR.into(),
                clocks.display().to_string(),
            ));
            // Each read's index in the member's log (a kept run's logs then
            // say, for a read the checker faults, which index it waited
            // for and what the member had applied), unless the caller chose.
            if std::env::var_os("RUST_LOG").is_none() {
                m.env.push(("RUST_LOG".into(), MEMBER_LOG_FILTER.into()));
            }
        }
        Ok(Nemesis {
            ns,
            links,
            client_links,
            overlapping: 0,
            rng,
            started,
            done: Vec::new(),
            deck: Vec::new(),
            drawn: [0; FAULT_KINDS.len()],
            stepped_pids: BTreeMap::new(),
        })
    }

    /// What the clients dial instead of each member (its proxy), for `ClientOptions::dial_via`.
    pub fn client_routes(&self) -> std::collections::HashMap<String, String> {
        self.ns
            .members
            .iter()
            .map(|m| (m.addr.clone(), self.client_links[&m.id].listen.to_string()))
            .collect()
    }

    fn between(&mut self, (lo, hi): (u64, u64)) -> u64 {
        self.rng.gen_range(lo..=hi)
    }

    async fn pick_target(&mut self) -> u64 {
        let ids: Vec<u64> = self.ns.members.iter().map(|m| m.id).collect();
        let any = ids[self.rng.gen_range(0..ids.len())];
        if self.rng.gen_bool(0.5) {
            self.ns.current_leader().await.unwrap_or(any)
        } else {
            any
        }
    }

    /// The next kind from the deck (shuffled again once dealt out).
    fn deal(&mut self) -> usize {
        if self.deck.is_empty() {
            self.deck = (0..FAULT_KINDS.len()).collect();
            self.deck.shuffle(&mut self.rng);
        }
        self.deck.pop().expect("a refilled deck is not empty")
    }

    /// "fault kinds: kill -9 2, SIGSTOP 1, ..." (second faults included),
    /// when the run missed some "; none drawn of: ...", and "; N with a
    /// second fault at once".
    pub fn kinds_report(&self) -> String {
        let counts: Vec<String> = FAULT_KINDS
            .iter()
            .zip(self.drawn)
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        let missing: Vec<&str> = FAULT_KINDS
            .iter()
            .zip(self.drawn)
            .filter(|(_, n)| *n == 0)
            .map(|(k, _)| *k)
            .collect();
        let mut s = format!("fault kinds: {}", counts.join(", "));
        if !missing.is_empty() {
            s.push_str(&format!("; none drawn of: {}", missing.join(", ")));
        }
        s.push_str(&format!("; {} with a second fault at once", self.overlapping));
        s
    }

    async fn draw(&mut self) -> Fault {
        let kind = self.deal();
        let target = self.pick_target().await;
        match kind {
            0 => Fault::Kill(target),
            1 => Fault::Pause(target),
            2 => Fault::Isolate(target),
            3 => {
                let others: Vec<u64> = self.ns.members.iter().map(|m| m.id).filter(|&m| m != target).collect();
                let to = others[self.rng.gen_range(0..others.len())];
                // Either direction of a link touching the target.
                if self.rng.gen_bool(0.5) {
                    Fault::CutLink { from: target, to }
                } else {
                    Fault::CutLink { from: to, to: target }
                }
            }
            4 => {
                let delay_ms = self.between(SLOW_FSYNC_MS);
                Fault::SlowDisk {
                    member: target,
                    delay_ms,
                }
            }
            5 => Fault::ClientPartition(target),
            _ => self.clock_step(target),
        }
    }

    fn clock_step(&mut self, member: u64) -> Fault {
        let magnitude = self.between(CLOCK_STEP_MS) as i64;
        let offset_ms = if self.rng.gen_bool(0.5) { magnitude } else { -magnitude };
        Fault::ClockStep { member, offset_ms }
    }

    /// A second fault to run with `first` (see the module docs), or none.
    fn second(&mut self, first: &Fault) -> Option<Fault> {
        if self.rng.gen_range(0..100) >= OVERLAP_PERCENT {
            return None;
        }
        let x = first.target();
        let others: Vec<u64> = self.ns.members.iter().map(|m| m.id).filter(|&m| m != x).collect();
        let y = others[self.rng.gen_range(0..others.len())];
        let f = match self.rng.gen_range(0..4) {
            0 => Fault::ClientPartition(y),
            1 => Fault::SlowDisk {
                member: y,
                delay_ms: self.between(SLOW_FSYNC_MS),
            },
            2 => self.clock_step(y),
            _ if self.rng.gen_bool(0.5) => Fault::CutLink { from: x, to: y },
            _ => Fault::CutLink { from: y, to: x },
        };
        // The very link the first one cuts: no second fault this time.
        match (first, &f) {
            (Fault::CutLink { from: a, to: b }, Fault::CutLink { from: c, to: d }) if (a, b) == (c, d) => None,
            _ => Some(f),
        }
    }

    fn set_links(&self, member: u64, up: bool) {
        for ((from, to), p) in &self.links {
            if *from == member || *to == member {
                p.set_up(up);
            }
        }
    }

    /// Start (`active`) or end a fault: each fault's two halves side by side.
    fn set_fault(&mut self, f: &Fault, active: bool) -> anyhow::Result<()> {
        match f {
            Fault::Kill(m) if active => self.ns.kill(*m),
            Fault::Kill(m) => self.ns.start(*m),
            Fault::Pause(m) => self.ns.signal_pause(*m, active),
            Fault::Isolate(m) => {
                self.set_links(*m, !active);
                Ok(())
            }
            Fault::CutLink { from, to } => {
                self.links[&(*from, *to)].set_up(!active);
                Ok(())
            }
            Fault::SlowDisk { member, delay_ms } if active => {
                std::fs::write(slow_file(&self.ns, *member), delay_ms.to_string()).context("write slow-disk file")
            }
            Fault::SlowDisk { member, .. } => {
                std::fs::remove_file(slow_file(&self.ns, *member)).context("remove slow-disk file")
            }
            Fault::ClientPartition(m) => {
                self.client_links[m].set_up(!active);
                Ok(())
            }
            Fault::ClockStep { member, offset_ms } if active => {
                let Some(pid) = self.ns.pid(*member) else {
                    return Ok(()); // not running: nothing to step
                };
                self.stepped_pids.insert(*member, pid);
                let file = clock_dir(&self.ns).join(pid.to_string());
                std::fs::write(file, offset_ms.to_string()).context("write clock offset file")
            }
            Fault::ClockStep { member, .. } => match self.stepped_pids.remove(member) {
                Some(pid) => {
                    std::fs::remove_file(clock_dir(&self.ns).join(pid.to_string())).context("remove clock offset file")
                }
                None => Ok(()),
            },
        }
    }

    fn secs(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Inject faults until `until`, then leave everything healed. A member
    /// that exits by itself is an error (a crash).
    pub async fn run_until(&mut self, until: Instant) -> anyhow::Result<()> {
        loop {
            let quiet = self.between(QUIET_MS);
            tokio::time::sleep(Duration::from_millis(quiet)).await;
            self.check_no_crash()?;
            if Instant::now() >= until {
                return Ok(());
            }
            let fault = self.draw().await;
            self.drawn[fault.kind()] += 1;
            let second = self.second(&fault);
            let hold = self.between(HOLD_MS);
            let mut line = format!("  t={:6.2}s  {fault}", self.secs());
            if let Some(f) = &second {
                self.drawn[f.kind()] += 1;
                self.overlapping += 1;
                line.push_str(&format!(" and at once {f}"));
            }
            line.push_str(&format!(" for {:.1}s", hold as f64 / 1000.0));
            println!("{line}");
            self.done.push(line);
            self.set_fault(&fault, true)?;
            if let Some(f) = &second {
                self.set_fault(f, true)?;
            }
            tokio::time::sleep(Duration::from_millis(hold)).await;
            self.set_fault(&fault, false)?;
            if let Some(f) = &second {
                self.set_fault(f, false)?;
            }
        }
    }

    fn check_no_crash(&mut self) -> anyhow::Result<()> {
        let crashed = self.ns.exited();
        if !crashed.is_empty() {
            anyhow::bail!("members exited by themselves (crash): {crashed:?}");
        }
        Ok(())
    }
}
