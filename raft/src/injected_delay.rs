//! Delays the fault tests inject by writing a number into a file (slow
//! log fsyncs, slow applies): read at each use, so a test turns a delay on
//! and off while the process runs. Never read unless a failpoint's
//! environment variable names the file.

use std::path::Path;
use std::time::Duration;

/// The delay `file` holds now, in milliseconds, at most `max_ms`; none
/// without the file, without a number in it, or for zero.
pub fn injected_delay(file: &Path, max_ms: u64) -> Option<Duration> {
    let ms = std::fs::read_to_string(file)
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()?
        .min(max_ms);
    (ms > 0).then(|| Duration::from_millis(ms))
}
