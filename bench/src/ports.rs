//! Ports for the local servers that tests and benchmarks start.
//!
//! Guarantees: a port handed out was free when it was handed out, lies
//! below the kernel's ephemeral range, and is reserved, against every
//! other process (and every other reservation in this one) that reserves
//! ports here, until this process exits ([`reserve`]) or until the
//! [`PortReservation`] is dropped ([`reserve_held`], for a process such as
//! the one integration test binary, which starts servers test after test).
//!
//! Why: binding port 0 and releasing it (what this replaced) returns a port
//! from the ephemeral range, which any outgoing connection may take as its
//! local port before the server binds it; under parallel tests a member
//! then failed with "Address already in use". Ports below the range are
//! never given to outgoing connections, and an exclusive `flock` on
//! `$TMPDIR/raftfs-test-ports/PORT` keeps concurrent processes apart.
//!
//! Caveat: a server that is not ours may still bind a port between the
//! check and our server's bind; nothing here can prevent that.

use std::os::unix::io::AsRawFd;
use std::sync::Mutex;

use anyhow::{bail, Context};

/// Lowest port handed out.
pub const MIN_PORT: u16 = 20_000;
/// Fewest ports there must be between [`MIN_PORT`] and the ephemeral range.
pub const MIN_PORTS: u16 = 2_000;
/// Where the kernel says its ephemeral range starts.
const EPHEMERAL_RANGE_FILE: &str = "/proc/sys/net/ipv4/ip_local_port_range";
/// The ephemeral range's usual start, if the kernel does not say.
const DEFAULT_EPHEMERAL_LOW: u16 = 32_768;

/// Lock files held for the life of this process: one per port reserved.
static RESERVED: Mutex<Vec<std::fs::File>> = Mutex::new(Vec::new());

/// One free port, reserved for this process.
pub fn free_port() -> anyhow::Result<u16> {
    reserve(1)
}

/// The first of `n` consecutive free ports, all reserved for this process.
pub fn reserve(n: usize) -> anyhow::Result<u16> {
    let r = reserve_held(n)?;
    let base = r.base;
    RESERVED.lock().unwrap_or_else(|e| e.into_inner()).extend(r.locks);
    Ok(base)
}

/// `n` consecutive free ports, reserved until the [`PortReservation`] is
/// dropped (for a process that starts many servers one after another, such
/// as one test binary running every test: holding every port for the life
/// of the process would use up the range).
pub struct PortReservation {
    /// The first port.
    pub base: u16,
    locks: Vec<std::fs::File>,
}

/// [`reserve`], held by the returned value instead of the process.
pub fn reserve_held(n: usize) -> anyhow::Result<PortReservation> {
    let ephemeral_low = std::fs::read_to_string(EPHEMERAL_RANGE_FILE)
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_LOW);
    if ephemeral_low < MIN_PORT + MIN_PORTS {
        bail!("the ephemeral port range starts at {ephemeral_low}: no room for local servers below it");
    }
    let span = (ephemeral_low - MIN_PORT) as usize;
    if n == 0 || n >= span {
        bail!("{n} consecutive ports wanted; {span} available");
    }
    let dir = std::env::temp_dir().join("raftfs-test-ports");
    std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
    // Start where other processes are unlikely to be probing.
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() as usize);
    let seed = std::process::id() as usize * 7919 + nanos;
    let slots = span - n;
    for attempt in 0..slots {
        let base = MIN_PORT + ((seed + attempt * n) % slots) as u16;
        let mut held = Vec::with_capacity(n);
        for port in base..base + n as u16 {
            match lock_if_free(&dir, port) {
                Some(f) => held.push(f),
                None => break,
            }
        }
        if held.len() == n {
            return Ok(PortReservation { base, locks: held });
        }
    }
    bail!("no {n} consecutive free ports in {MIN_PORT}..{ephemeral_low}")
}

/// The lock on `port`, if no other process holds it and the port binds now.
fn lock_if_free(dir: &std::path::Path, port: u16) -> Option<std::fs::File> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(dir.join(port.to_string()))
        .ok()?;
    // SAFETY: flock on a descriptor we own; the lock goes when `f` closes.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        return None;
    }
    std::net::TcpListener::bind(("127.0.0.1", port)).ok()?;
    Some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_bindable_and_below_the_ephemeral_range() {
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..20 {
            let p = free_port().expect("a port");
            assert!(p >= MIN_PORT, "{p}");
            assert!(seen.insert(p), "port {p} handed out twice");
            std::net::TcpListener::bind(("127.0.0.1", p)).expect("a reserved port binds");
        }
        let base = reserve(5).expect("a block");
        for p in base..base + 5 {
            assert!(seen.insert(p), "port {p} handed out twice");
        }
    }

    #[test]
    fn a_held_reservation_is_released_when_dropped() {
        let r = reserve_held(3).expect("a block");
        let dir = std::env::temp_dir().join("raftfs-test-ports");
        let base = r.base;
        assert!(lock_if_free(&dir, base).is_none(), "port {base} is held");
        drop(r);
        assert!(lock_if_free(&dir, base).is_some(), "port {base} is free again");
    }

    #[test]
    fn a_port_locked_elsewhere_is_not_handed_out() {
        let base = reserve(1).expect("a port");
        let dir = std::env::temp_dir().join("raftfs-test-ports");
        // Another descriptor on the same file cannot take the lock, as
        // another process could not.
        assert!(lock_if_free(&dir, base).is_none(), "port {base} is held");
    }
}
