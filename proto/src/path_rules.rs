//! HDFS's rules for the text of a path (`DFSUtil.isValidName`, plus our
//! bounds from [`crate::limits`]) and the [`FsError::InvalidPath`]
//! messages that refuse one.
//!
//! Shared by the namespace, which parses every path it is given (with a
//! faster scanner of its own that uses these messages), and by whatever
//! routes paths before a namespace sees them (routers, the SDK in direct
//! mode) or keeps them (mount entries), so a bad path is refused with the
//! same words wherever it is refused. [`normalize`] is the routing side's whole check.
//!
//! Caveat: `/.reserved` paths are the namespace's business (their inode
//! ids are per nameservice); [`normalize`] treats them as ordinary names.

use std::borrow::Cow;

use crate::limits::{MAX_NAME_LEN_BYTES, MAX_PATH_DEPTH, MAX_PATH_LEN_BYTES};
use crate::FsError;

/// `raw` is longer than [`MAX_PATH_LEN_BYTES`].
pub fn too_long(raw: &str) -> FsError {
    FsError::InvalidPath(format!(
        "path is {} bytes long, more than the limit of {MAX_PATH_LEN_BYTES}",
        raw.len()
    ))
}

/// `raw` does not start with `/`.
pub fn not_absolute(raw: &str) -> FsError {
    FsError::InvalidPath(format!("Invalid path name {raw}: not an absolute path"))
}

/// `raw` holds a NUL byte.
pub fn nul_byte(raw: &str) -> FsError {
    FsError::InvalidPath(format!(
        "Invalid path name {}: contains a NUL byte",
        raw.replace('\0', "\\0")
    ))
}

/// Component `c` of `raw` is `.` or `..`.
pub fn dot_component(raw: &str, c: &str) -> FsError {
    FsError::InvalidPath(format!(
        "Invalid path name {raw}: `{c}' is not allowed as a path component"
    ))
}

/// Component `c` of `raw` holds a colon.
pub fn colon_component(raw: &str, c: &str) -> FsError {
    FsError::InvalidPath(format!("Invalid path name {raw}: `{c}' contains a colon"))
}

/// `raw` has more than [`MAX_PATH_DEPTH`] components.
pub fn too_deep(raw: &str) -> FsError {
    FsError::InvalidPath(format!(
        "Invalid path name {raw}: deeper than {MAX_PATH_DEPTH} components"
    ))
}

/// `name` is longer than [`MAX_NAME_LEN_BYTES`] (HDFS's
/// `MaxComponentLengthExceededException` text).
pub fn name_too_long(name: &str) -> FsError {
    FsError::InvalidPath(format!(
        "The maximum path component name limit of {}... is exceeded: limit={MAX_NAME_LEN_BYTES} length={}",
        name.chars().take(32).collect::<String>(),
        name.len()
    ))
}

/// `raw` checked by every rule above, repeated and trailing slashes folded.
pub fn normalize(raw: &str) -> Result<String, FsError> {
    normalized(raw).map(Cow::into_owned)
}

/// [`normalize`], borrowing `raw` when it is already normal (the common
/// case, checked without allocating: what routing does on every call).
pub fn normalized(raw: &str) -> Result<Cow<'_, str>, FsError> {
    if raw.len() > MAX_PATH_LEN_BYTES {
        return Err(too_long(raw));
    }
    if !raw.starts_with('/') {
        return Err(not_absolute(raw));
    }
    if raw.as_bytes().contains(&0) {
        return Err(nul_byte(raw));
    }
    // Normal already: no empty component but the root's, no trailing slash.
    let mut normal = raw == "/" || !raw.ends_with('/');
    let mut depth = 0;
    for c in raw[1..].split('/') {
        if c.is_empty() {
            normal &= raw == "/";
            continue;
        }
        if c == "." || c == ".." {
            return Err(dot_component(raw, c));
        }
        if c.contains(':') {
            return Err(colon_component(raw, c));
        }
        if c.len() > MAX_NAME_LEN_BYTES {
            return Err(name_too_long(c));
        }
        depth += 1;
        if depth > MAX_PATH_DEPTH {
            return Err(too_deep(raw));
        }
    }
    if normal {
        return Ok(Cow::Borrowed(raw));
    }
    let mut out = String::with_capacity(raw.len());
    for c in raw.split('/').filter(|c| !c.is_empty()) {
        out.push('/');
        out.push_str(c);
    }
    if out.is_empty() {
        out.push('/');
    }
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_slashes_and_refuses_what_hdfs_refuses() {
        assert_eq!(normalize("/").unwrap(), "/");
        assert_eq!(normalize("//a///b/").unwrap(), "/a/b");
        for (bad, says) in [
            ("a/b", "not an absolute path"),
            ("/a/../b", "`..' is not allowed"),
            ("/a/./b", "`.' is not allowed"),
            ("/a:b", "`a:b' contains a colon"),
            ("/a\0b", "contains a NUL byte"),
        ] {
            match normalize(bad) {
                Err(FsError::InvalidPath(m)) => assert!(m.contains(says), "{bad:?}: {m}"),
                other => panic!("{bad:?} gave {other:?}"),
            }
        }
        let long = format!("/{}", "x".repeat(MAX_NAME_LEN_BYTES + 1));
        assert!(matches!(normalize(&long), Err(FsError::InvalidPath(m)) if m.contains("component name limit")));
        let deep = "/d".repeat(MAX_PATH_DEPTH + 1);
        assert!(matches!(normalize(&deep), Err(FsError::InvalidPath(m)) if m.contains("deeper than")));
        assert!(normalize(&"/d".repeat(MAX_PATH_DEPTH)).is_ok());
    }

    #[test]
    fn a_normal_path_is_borrowed_and_any_other_rebuilt() {
        for normal in ["/", "/a", "/a/b.c/d"] {
            assert!(
                matches!(normalized(normal), Ok(Cow::Borrowed(p)) if p == normal),
                "{normal}"
            );
        }
        for (raw, want) in [
            ("//", "/"),
            ("/a/", "/a"),
            ("//a", "/a"),
            ("/a//b", "/a/b"),
            ("/a/b//", "/a/b"),
        ] {
            assert!(matches!(normalized(raw), Ok(Cow::Owned(p)) if p == want), "{raw}");
        }
        assert!(matches!(normalized("/a/../b"), Err(FsError::InvalidPath(_))));
    }
}
