//! The fault harness in the test suite: `raftfs bench faults` (real member
//! processes, a fault-injecting proxy on every link and between the clients
//! and each member, kill -9, SIGSTOP, partitions, slow disk, clients cut
//! off, wall clocks stepped by minutes, sometimes two at once) with fixed seeds, short runs, both stores, in
//! the default execution mode (`--exec leader`) and in `--exec apply`. The
//! acceptance soak is the same command by hand:
//! `raftfs bench faults --seed 1 --runs 20 --secs 60 --clients 16`.
//! A failure prints the seed and the command that replays it, and keeps
//! the run's directory (logs, data, history.txt).

use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_raftfs");
/// Seconds of faults per run in the suite (the soak uses 60).
const SECS: &str = "20";
/// Snapshots every few hundred entries with a short log behind them, so a
/// member that was killed, paused or cut off usually catches up by snapshot
/// transfer, under the same faults.
const METASERVER_ARGS: &str = "--snapshot-logs 300 --snapshot-keep-logs 20";

fn faults(store: &str, seed: u64, exec: &str) {
    println!("fault run: store {store}, seed {seed}, --exec {exec}");
    let out = Command::new(BIN)
        .args(["bench", "faults", "--runs", "1", "--secs", SECS, "--clients", "16"])
        .args(["--seed", &seed.to_string(), "--store", store])
        .args(["--metaserver-args", &format!("{METASERVER_ARGS} --exec {exec}")])
        .output()
        .expect("run raftfs bench faults");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}{stderr}");
    assert!(out.status.success(), "fault run failed (seed {seed}, store {store})");
    assert!(stdout.contains("linearizable: yes"), "{stdout}");
    assert!(
        stdout.contains("acknowledged creates lost: 0; applied twice: 0; unexpected errors: 0;"),
        "{stdout}"
    );
    let faults: usize = stdout.lines().filter(|l| l.trim_start().starts_with("t=")).count();
    // A fault and the quiet before it take at most ~10 s (hold 5 s, quiet
    // 2 s, probes of paused members): two always start within 20 s.
    assert!(faults >= 2, "a {SECS} s run injects several faults, saw {faults}");
    // Kinds are dealt from a deck: the first seven faults are one of each
    // (second faults at once only add kinds).
    let kinds = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("fault kinds: "))
        .unwrap_or_else(|| panic!("no fault kinds line: {stdout}"));
    let distinct = kinds
        .split(';')
        .next()
        .unwrap_or("")
        .split(", ")
        .filter(|k| !k.ends_with(" 0"))
        .count();
    assert!(distinct >= faults.min(7), "{faults} faults of kinds {kinds}");
    // Faults at once: the report says how many (any run may have none).
    assert!(kinds.contains("with a second fault at once"), "{kinds}");
}

#[test]
fn random_faults_rocksdb() {
    faults("rocksdb", 101, "leader");
}

#[test]
fn random_faults_memory() {
    faults("memory", 202, "leader");
}

#[test]
fn random_faults_rocksdb_exec_apply() {
    faults("rocksdb", 303, "apply");
}

#[test]
fn random_faults_memory_exec_apply() {
    faults("memory", 404, "apply");
}
