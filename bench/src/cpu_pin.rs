//! Pinning whole processes to one CPU each, for a bench that compares two
//! client libraries against one server: with the clients on one core and
//! the server on another, neither takes CPU from the other, as on
//! separate machines, so the rate measured is bounded by the server's own
//! cost per call and not by the sum of both sides' (which on a shared
//! machine charges the server for the client library's CPU).
//!
//! Every thread a process has is pinned (`/proc/PID/task`); threads it
//! starts later inherit their creator's CPU. Linux only.

use anyhow::{bail, Context};

/// The CPUs this machine has online (whatever this process is pinned to).
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// Pin every thread of process `pid` to CPU `cpu`.
pub fn pin_process(pid: u32, cpu: usize) -> anyhow::Result<()> {
    if cpu >= online_cpus() {
        bail!("CPU {cpu} is not online (this machine has {})", online_cpus());
    }
    // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `cpu` is below the number of CPUs online, within the set's size.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    let tasks = format!("/proc/{pid}/task");
    for entry in std::fs::read_dir(&tasks).with_context(|| format!("list {tasks}"))? {
        let name = entry?.file_name();
        let tid: libc::pid_t = name
            .to_string_lossy()
            .parse()
            .with_context(|| format!("{tasks}/{name:?} is not a thread id"))?;
        // SAFETY: `set` is a valid cpu_set_t of the size passed.
        let r = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
        if r != 0 {
            let e = std::io::Error::last_os_error();
            // A thread that ended since the listing is no matter.
            if e.raw_os_error() != Some(libc::ESRCH) {
                bail!("pin thread {tid} of process {pid} to CPU {cpu}: {e}");
            }
        }
    }
    Ok(())
}
