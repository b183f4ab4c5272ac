//! Path parsing and validation (HDFS `DFSUtil.isValidName` rules plus our bounds).
//!
//! Accepted: absolute paths; repeated and trailing slashes are folded (as
//! Hadoop's `Path` does). Refused with [`FsError::InvalidPath`]: relative
//! paths, `.` and `..` components, `:` in a component, NUL bytes, a component
//! longer than [`MAX_NAME_LEN_BYTES`], a path longer than
//! [`MAX_PATH_LEN_BYTES`] or deeper than [`MAX_PATH_DEPTH`].
//!
//! `/.reserved/.inodes/<id>[/rest]` is parsed into a path that starts at inode
//! `<id>` instead of the root.

use compact_str::CompactString;
use raftfs_proto::limits::{MAX_NAME_LEN_BYTES, MAX_PATH_DEPTH, MAX_PATH_LEN_BYTES};
use raftfs_proto::{path_rules, FsError};

use crate::inode::InodeId;

/// The reserved top-level name (HDFS `/.reserved`).
pub const RESERVED_NAME: &str = ".reserved";
const INODES_NAME: &str = ".inodes";
/// Components a parsed path has room for before its list grows (NNThroughputBenchmark's
/// tree is 17 deep at 100k files).
const PATH_DEPTH_HINT: usize = 32;

/// A validated path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsPath {
    /// Where resolution starts: `None` for the root, `Some(id)` for `/.reserved/.inodes/<id>`.
    pub start: Option<InodeId>,
    /// Components below the start (inline up to 24 bytes: parsing a
    /// typical path allocates no string per component).
    pub components: Vec<CompactString>,
    /// The normalized text, for messages.
    pub text: String,
}

impl FsPath {
    pub fn parse(raw: &str) -> Result<FsPath, FsError> {
        if raw.len() > MAX_PATH_LEN_BYTES {
            return Err(path_rules::too_long(raw));
        }
        if !raw.starts_with('/') {
            return Err(path_rules::not_absolute(raw));
        }
        if raw.as_bytes().contains(&0) {
            return Err(path_rules::nul_byte(raw));
        }
        // One SIMD scan finds every '/' and ':' (memchr2); a component is
        // then checked as a whole (`.`, `..`, a colon seen, its length),
        // without a pass over its bytes. The normalized
        // text is the input itself unless slashes were folded. Splitting
        // byte by byte, or with `split` and a search per component, was a
        // fifth of a 17-deep getFileInfo on the memory store.
        let mut components = Vec::with_capacity(PATH_DEPTH_HINT);
        let mut folded = false;
        let mut start = 1;
        let mut colon = false;
        let bytes = raw.as_bytes();
        // The first hit is the leading '/'; the end of the text closes the last component.
        let hits = memchr::memchr2_iter(b'/', b':', bytes)
            .skip(1)
            .chain(std::iter::once(bytes.len()));
        for i in hits {
            if i < bytes.len() && bytes[i] == b':' {
                colon = true;
                continue;
            }
            if i == start {
                folded = true;
                start = i + 1;
                continue;
            }
            let c = &raw[start..i];
            if c == "." || c == ".." {
                return Err(path_rules::dot_component(raw, c));
            }
            if colon {
                return Err(path_rules::colon_component(raw, c));
            }
            check_name_len(c)?;
            if components.len() == MAX_PATH_DEPTH {
                return Err(path_rules::too_deep(raw));
            }
            components.push(CompactString::from(c));
            start = i + 1;
            colon = false;
        }
        let text = if !folded {
            raw.to_owned()
        } else if components.is_empty() {
            "/".to_owned()
        } else {
            let mut t = String::with_capacity(raw.len());
            for c in &components {
                t.push('/');
                t.push_str(c);
            }
            t
        };
        let mut start = None;
        if components.len() >= 2 && components[0] == RESERVED_NAME && components[1] == INODES_NAME {
            let id = components.get(2).and_then(|s| s.parse::<u64>().ok()).ok_or_else(|| {
                FsError::InvalidPath(format!(
                    "Invalid path name {raw}: expected /.reserved/.inodes/<inode id>"
                ))
            })?;
            start = Some(id);
            components.drain(..3);
        } else if components.first().map(CompactString::as_str) == Some(RESERVED_NAME) {
            return Err(FsError::InvalidPath(format!(
                "Invalid path name {raw}: only /.reserved/.inodes/<id> is supported under /.reserved"
            )));
        }
        Ok(FsPath {
            start,
            components,
            text,
        })
    }

    pub fn is_root(&self) -> bool {
        self.start.is_none() && self.components.is_empty()
    }

    /// The last component, if any.
    pub fn name(&self) -> Option<&str> {
        self.components.last().map(CompactString::as_str)
    }

    /// Text of the first `n` components (for messages about ancestors).
    pub fn prefix_text(&self, n: usize) -> String {
        let head = match self.start {
            None => String::new(),
            Some(id) => format!("/{RESERVED_NAME}/{INODES_NAME}/{id}"),
        };
        if n == 0 {
            return if head.is_empty() { "/".into() } else { head };
        }
        format!("{head}/{}", self.components[..n].join("/"))
    }
}

/// Validate one name (a path component, or a new name given alone).
pub fn check_name(name: &str) -> Result<(), FsError> {
    if name.is_empty() {
        return Err(FsError::InvalidPath("empty name".into()));
    }
    check_name_len(name)?;
    if name.contains('/') || name.contains('\0') {
        return Err(FsError::InvalidPath(format!("name {name:?} contains '/' or NUL")));
    }
    Ok(())
}

fn check_name_len(name: &str) -> Result<(), FsError> {
    if name.len() > MAX_NAME_LEN_BYTES {
        return Err(path_rules::name_too_long(name));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_slashes() {
        let p = FsPath::parse("//a///b/").unwrap();
        assert_eq!(p.components, vec!["a", "b"]);
        assert_eq!(p.text, "/a/b");
        assert!(FsPath::parse("/").unwrap().is_root());
        for (raw, text) in [
            ("/a/b", "/a/b"),
            ("/a/b/", "/a/b"),
            ("//", "/"),
            ("/", "/"),
            ("/a//b", "/a/b"),
        ] {
            assert_eq!(FsPath::parse(raw).unwrap().text, text, "{raw:?}");
        }
    }

    /// The plain reading of the rules, to hold the one-scan parser to.
    fn reference(raw: &str) -> Result<(Vec<String>, String), String> {
        let mut comps = Vec::new();
        for c in raw[1..].split('/').filter(|c| !c.is_empty()) {
            if c == "." || c == ".." {
                return Err(format!("`{c}' is not allowed"));
            }
            if c.contains(':') {
                return Err(format!("`{c}' contains a colon"));
            }
            comps.push(c.to_string());
        }
        let text = format!("/{}", comps.join("/"));
        Ok((comps, text))
    }

    #[test]
    fn parse_matches_the_plain_reading() {
        use rand::{Rng, SeedableRng};
        let seed = 7;
        println!("seed {seed}");
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let alphabet = [b'a', b'b', b'/', b'/', b':', b'.'];
        for _ in 0..20_000 {
            let len = rng.gen_range(0..12);
            let tail: Vec<u8> = (0..len).map(|_| alphabet[rng.gen_range(0..alphabet.len())]).collect();
            let raw = format!("/{}", String::from_utf8(tail).expect("ascii"));
            match (FsPath::parse(&raw), reference(&raw)) {
                (Ok(p), Ok((comps, text))) => {
                    assert_eq!(p.components, comps, "{raw:?}");
                    assert_eq!(p.text, text, "{raw:?}");
                }
                (Err(e), Err(want)) => assert!(e.to_string().contains(&want), "{raw:?}: {e} (want {want})"),
                (got, want) => panic!("{raw:?}: parsed {got:?}, expected {want:?}"),
            }
        }
    }

    #[test]
    fn refuses_bad_paths() {
        for bad in ["", "a/b", "/a/../b", "/a/./b", "/a:b", "/a\0b"] {
            assert!(matches!(FsPath::parse(bad), Err(FsError::InvalidPath(_))), "{bad:?}");
        }
        let long = format!("/{}", "x".repeat(MAX_NAME_LEN_BYTES + 1));
        assert!(matches!(FsPath::parse(&long), Err(FsError::InvalidPath(_))));
        let ok = format!("/{}", "x".repeat(MAX_NAME_LEN_BYTES));
        assert!(FsPath::parse(&ok).is_ok());
        let huge = "/a".repeat(MAX_PATH_LEN_BYTES);
        assert!(matches!(FsPath::parse(&huge), Err(FsError::InvalidPath(_))));
    }

    #[test]
    fn names_the_component_that_is_refused() {
        let e = FsPath::parse("/a/b:c/d").unwrap_err().to_string();
        assert!(e.contains("`b:c'") && e.contains("colon"), "{e}");
        // The colon flag belongs to its component, not to those after it.
        assert_eq!(FsPath::parse("/a/b/c").unwrap().components, vec!["a", "b", "c"]);
        let e = FsPath::parse("/a/../b").unwrap_err().to_string();
        assert!(e.contains("`..'"), "{e}");
        let e = FsPath::parse(&format!("/a/{}/c", "y".repeat(MAX_NAME_LEN_BYTES + 1))).unwrap_err();
        assert!(e.to_string().contains("component name limit"), "{e}");
    }

    #[test]
    fn depth_limit_is_exact() {
        let deepest = "/d".repeat(MAX_PATH_DEPTH);
        let p = FsPath::parse(&deepest).unwrap();
        assert_eq!(p.components.len(), MAX_PATH_DEPTH);
        assert_eq!(p.text, deepest);
        let e = FsPath::parse(&format!("{deepest}/d")).unwrap_err().to_string();
        assert!(e.contains("deeper than"), "{e}");
    }

    #[test]
    fn reserved_inodes() {
        let p = FsPath::parse("/.reserved/.inodes/16385/a").unwrap();
        assert_eq!(p.start, Some(16385));
        assert_eq!(p.components, vec!["a"]);
        assert!(FsPath::parse("/.reserved/.inodes/x").is_err());
        assert!(FsPath::parse("/.reserved/foo").is_err());
    }
}
