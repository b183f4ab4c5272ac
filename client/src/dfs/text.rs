//! The text the shell reads and writes besides paths: `-chmod` modes
//! (octal or symbolic), `-stat` formats, human-readable sizes, dates, and
//! `-setQuota`-style numbers.

use chrono::{Local, TimeZone};

use raftfs_proto::{FileStatus, Permission, QuotaSetting};

/// A size as `-h` prints it (`1.5 K`).
pub(super) fn human(n: u64) -> String {
    const UNITS: [&str; 6] = ["", "K", "M", "G", "T", "P"];
    if n < 1024 {
        return n.to_string();
    }
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// A time as `-ls` (minutes) or `-stat` (seconds) prints it.
pub(super) fn date(ms: i64, seconds: bool) -> String {
    let fmt = if seconds { "%Y-%m-%d %H:%M:%S" } else { "%Y-%m-%d %H:%M" };
    match Local.timestamp_millis_opt(ms) {
        chrono::LocalResult::Single(t) => t.format(fmt).to_string(),
        _ => "1970-01-01 00:00".to_string(),
    }
}

/// `-chmod` modes: octal (`755`, `1777`) or symbolic (`u+x,go-w`, `a=rX`).
#[derive(Clone)]
pub enum Mode {
    Octal(Permission),
    Symbolic(Vec<(u16, char, u16, bool)>),
}

impl Mode {
    pub fn parse(s: &str) -> Option<Mode> {
        if let Some(p) = Permission::parse_octal(s) {
            return Some(Mode::Octal(p));
        }
        let mut clauses = Vec::new();
        for clause in s.split(',') {
            let op_at = clause.find(['+', '-', '='])?;
            let (who, rest) = clause.split_at(op_at);
            let mut mask = 0u16;
            for c in who.chars() {
                mask |= match c {
                    'u' => 0o4700,
                    'g' => 0o2070,
                    'o' => 0o1007,
                    'a' => 0o7777,
                    _ => return None,
                };
            }
            if who.is_empty() {
                mask = 0o7777;
            }
            let op = rest.chars().next()?;
            let (mut bits, mut cap_x) = (0u16, false);
            for c in rest[1..].chars() {
                bits |= match c {
                    'r' => 0o444,
                    'w' => 0o222,
                    'x' => 0o111,
                    'X' => {
                        cap_x = true;
                        0
                    }
                    't' => 0o1000,
                    _ => return None,
                };
            }
            clauses.push((mask, op, bits, cap_x));
        }
        Some(Mode::Symbolic(clauses))
    }

    pub fn apply(&self, cur: Permission, is_dir: bool) -> Permission {
        match self {
            Mode::Octal(p) => *p,
            Mode::Symbolic(clauses) => {
                let mut b = cur.bits();
                for (mask, op, bits, cap_x) in clauses {
                    let mut bits = *bits;
                    if *cap_x && (is_dir || b & 0o111 != 0) {
                        bits |= 0o111;
                    }
                    let bits = bits & mask;
                    match op {
                        '+' => b |= bits,
                        '-' => b &= !bits,
                        _ => b = (b & !(mask & 0o1777)) | bits,
                    }
                }
                Permission::new(b)
            }
        }
    }
}

/// `-stat` format: %a %A %b %F %g %n %o %r %u %x %X %y %Y.
pub fn stat_format(format: &str, path: &str, s: &FileStatus) -> String {
    let mut out = String::new();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push_str(&s.permission.octal()),
            Some('A') => out.push_str(&s.permission.to_string()),
            Some('b') => out.push_str(&s.length.to_string()),
            Some('F') => out.push_str(if s.is_dir() {
                "directory"
            } else if s.length == 0 {
                "regular empty file"
            } else {
                "regular file"
            }),
            Some('g') => out.push_str(&s.group),
            Some('n') => out.push_str(path.rsplit('/').find(|x| !x.is_empty()).unwrap_or("/")),
            Some('o') => out.push_str(&s.block_size.to_string()),
            Some('r') => out.push_str(&s.replication.to_string()),
            Some('u') => out.push_str(&s.owner),
            Some('x') => out.push_str(&date(s.access_time, true)),
            Some('X') => out.push_str(&s.access_time.to_string()),
            Some('y') => out.push_str(&date(s.modification_time, true)),
            Some('Y') => out.push_str(&s.modification_time.to_string()),
            Some(o) => {
                out.push('%');
                out.push(o);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Parse a `-setQuota`-style number for the SDK callers.
pub fn quota_setting(s: &str) -> Option<QuotaSetting> {
    match s {
        "clear" | "-1" => Some(QuotaSetting::Clear),
        n => n.parse().ok().filter(|v| *v > 0).map(QuotaSetting::Set),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_modes() {
        let m = Mode::parse("u+x,go-w").unwrap();
        assert_eq!(m.apply(Permission(0o666), false), Permission(0o744));
        let m = Mode::parse("a=rX").unwrap();
        assert_eq!(m.apply(Permission(0o700), true), Permission(0o555));
        assert_eq!(m.apply(Permission(0o600), false), Permission(0o444));
        assert!(Mode::parse("q+x").is_none());
        assert_eq!(
            Mode::parse("1777").unwrap().apply(Permission(0), true),
            Permission(0o1777)
        );
        assert_eq!(
            Mode::parse("+t").unwrap().apply(Permission(0o777), true),
            Permission(0o1777)
        );
    }

    #[test]
    fn human_sizes() {
        assert_eq!(human(1023), "1023");
        assert_eq!(human(1536), "1.5 K");
        assert_eq!(human(128 * 1024 * 1024), "128.0 M");
    }
}
