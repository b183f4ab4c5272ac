//! Sizes, ages and times as the status pages print them.

/// `bytes` in binary units with two decimals (`1.50 GiB`), as HDFS's UI
/// prints capacities.
pub fn bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

/// `part` of `whole` as a percentage (`12.50%`; `0.00%` of nothing).
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0.00%".into()
    } else {
        format!("{:.2}%", part as f64 * 100.0 / whole as f64)
    }
}

/// An age in milliseconds as the largest whole unit (`42 s`, `3 min`, `2 h`, `5 d`).
pub fn age(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..=119 => format!("{s} s"),
        120..=7199 => format!("{} min", s / 60),
        7200..=172_799 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

/// Milliseconds since the epoch as a UTC time (`2026-12-05 16:20:01 UTC`).
pub fn utc_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_ages_and_times_print_as_people_read_them() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.50 KiB");
        assert_eq!(bytes(3 << 30), "3.00 GiB");
        assert_eq!(percent(1, 8), "12.50%");
        assert_eq!(percent(1, 0), "0.00%");
        assert_eq!(age(5_999), "5 s");
        assert_eq!(age(600_000), "10 min");
        assert_eq!(age(3 * 86_400_000), "3 d");
        assert_eq!(utc_time(0), "1970-01-01 00:00:00 UTC");
    }
}
