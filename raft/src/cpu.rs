//! The CPU time this process has used, for benchmarks: on a shared, noisy
//! two-core machine a rate moves by a third between identical runs, while
//! the CPU time an operation costs each process moves far less, and it says
//! where a cluster's time goes (the leader, each follower, the client).
//!
//! Caveat: this counts the whole process, background work (RocksDB
//! compaction, snapshots, heartbeats) included, so a figure per op is only
//! meaningful over a run long enough for the op's own work to dominate.

/// User plus system CPU time of this process since it started, in
/// microseconds; `None` if the kernel refused (`getrusage` does not fail
/// for `RUSAGE_SELF` on Linux, but the error is not ours to assume away).
pub fn process_cpu_time_us() -> Option<u64> {
    // SAFETY: `rusage` is plain data, so all-zero bytes are a valid value;
    // getrusage writes into the struct we pass and keeps no reference to it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF is a valid `who`, and `usage` is a valid pointer
    // to writable memory of the right type for the duration of the call.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) } != 0 {
        return None;
    }
    let us = |t: libc::timeval| (t.tv_sec.max(0) as u64) * 1_000_000 + t.tv_usec.max(0) as u64;
    Some(us(usage.ru_utime) + us(usage.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grows_with_work_done() {
        let before = process_cpu_time_us().expect("getrusage of this process");
        // Spin for 30 ms of wall time: CPU time must grow by a good part of it
        // (less only if the machine took the core away meanwhile).
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < std::time::Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        let after = process_cpu_time_us().expect("getrusage of this process");
        assert!(after >= before, "CPU time went backwards: {before} -> {after}");
        assert!(
            after - before >= 1_000,
            "30 ms of spinning used only {} µs of CPU",
            after - before
        );
    }
}
