//! Pure pieces of the router's answers that combine several nameservices:
//! a directory listing merged from destinations and mount points, a
//! content summary summed over them, and the status a mount point or a
//! virtual directory shows.
//!
//! A mount point lists and stats as a directory with the owner, group and
//! mode of its mount entry (as RBF shows it) and, when its destination
//! exists, that directory's times, id and child count. A virtual directory
//! (above the mount points) belongs to the router's superuser, mode 0755,
//! with zero times.

use raftfs_federation::MountEntry;
use raftfs_proto::{ContentSummary, DirectoryListing, FileStatus, FileType, Permission};

/// The group a virtual directory shows (HDFS's default supergroup).
pub const VIRTUAL_DIR_GROUP: &str = "supergroup";
/// The mode a virtual directory shows.
pub const VIRTUAL_DIR_MODE: u16 = 0o755;

/// The last component of a normalized path (empty for the root).
pub fn last_component(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or_default()
}

/// A directory status named `name`: the mount entry's owner, group and
/// mode over `dest` (its destination's status, if it exists), or a virtual
/// directory's when `entry` is `None`. Without a destination status, its
/// children are the `mounts_below` mount points directly below it.
pub fn directory_status(
    name: &str,
    entry: Option<&MountEntry>,
    dest: Option<FileStatus>,
    superuser: &str,
    mounts_below: usize,
) -> FileStatus {
    let mut s = dest.unwrap_or(FileStatus {
        path_suffix: String::new(),
        file_type: FileType::Directory,
        length: 0,
        replication: 0,
        block_size: 0,
        modification_time: 0,
        access_time: 0,
        permission: Permission::new(VIRTUAL_DIR_MODE),
        owner: superuser.to_string(),
        group: VIRTUAL_DIR_GROUP.to_string(),
        file_id: 0,
        children_num: mounts_below as u64,
        under_construction: false,
    });
    s.path_suffix = name.to_string();
    match entry {
        Some(e) => {
            s.owner = e.owner.clone();
            s.group = e.group.clone();
            s.permission = Permission::new(e.mode);
        }
        None => {
            s.owner = superuser.to_string();
            s.group = VIRTUAL_DIR_GROUP.to_string();
            s.permission = Permission::new(VIRTUAL_DIR_MODE);
        }
    }
    s
}

/// Merge listing pages of one directory from several destinations with
/// the mount points below it (`mounts`, directory statuses), all after
/// `start_after`, into one page of at most `limit` entries in name order.
///
/// A page that has more entries after it bounds the merge: nothing past
/// its last name is returned (the next page, asked from its last entry,
/// brings what lies between), so no entry is ever skipped. A name in
/// several places appears once: a mount point first, then the first
/// destination's. `remaining_entries` is positive exactly when more
/// entries may follow (it may overcount names that repeat).
pub fn merge_listing(
    pages: Vec<DirectoryListing>,
    mounts: Vec<FileStatus>,
    start_after: &str,
    limit: usize,
) -> DirectoryListing {
    let cutoff: Option<String> = pages
        .iter()
        .filter(|p| p.remaining_entries > 0)
        .filter_map(|p| p.entries.last().map(|e| e.path_suffix.clone()))
        .min();
    let mut remaining: u64 = pages.iter().map(|p| p.remaining_entries).sum();
    let mut all: Vec<FileStatus> = mounts
        .into_iter()
        .filter(|m| m.path_suffix.as_str() > start_after)
        .collect();
    for p in pages {
        all.extend(p.entries);
    }
    // Stable: for equal names the mount point, then the first page's, stays first.
    all.sort_by(|a, b| a.path_suffix.cmp(&b.path_suffix));
    all.dedup_by(|later, first| later.path_suffix == first.path_suffix);
    let mut kept = Vec::with_capacity(all.len().min(limit));
    for s in all {
        let past_cutoff = cutoff.as_deref().is_some_and(|c| s.path_suffix.as_str() > c);
        if past_cutoff || kept.len() >= limit {
            remaining += 1;
        } else {
            kept.push(s);
        }
    }
    DirectoryListing {
        entries: kept,
        remaining_entries: remaining,
    }
}

/// The sum of summaries of disjoint subtrees; the quotas are the first's
/// (the path's own destination), or none (-1) when there is no first.
pub fn sum_summaries(own: Option<ContentSummary>, others: impl IntoIterator<Item = ContentSummary>) -> ContentSummary {
    let mut total = own.unwrap_or(ContentSummary {
        length: 0,
        file_count: 0,
        directory_count: 0,
        quota: -1,
        space_consumed: 0,
        space_quota: -1,
    });
    for s in others {
        total.length += s.length;
        total.file_count += s.file_count;
        total.directory_count += s.directory_count;
        total.space_consumed += s.space_consumed;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(name: &str, len: u64) -> FileStatus {
        let mut s = directory_status(name, None, None, "hdfs", 0);
        s.length = len;
        s
    }

    fn page(names: &[&str], remaining: u64, len: u64) -> DirectoryListing {
        DirectoryListing {
            entries: names.iter().map(|n| st(n, len)).collect(),
            remaining_entries: remaining,
        }
    }

    fn names(l: &DirectoryListing) -> Vec<&str> {
        l.entries.iter().map(|e| e.path_suffix.as_str()).collect()
    }

    #[test]
    fn merged_pages_never_skip_an_entry() {
        // ns1 has a b c d e f (page of 3), ns2 has b2 c2 (all of it), a mount point "m".
        let l = merge_listing(
            vec![page(&["a", "b", "c"], 3, 1), page(&["b2", "c2"], 0, 2)],
            vec![st("m", 0)],
            "",
            3,
        );
        assert_eq!(names(&l), ["a", "b", "b2"]);
        assert!(l.remaining_entries > 0);
        // The page of ns1 ends at c: nothing after c may be returned yet.
        let l = merge_listing(vec![page(&["a", "b", "c"], 3, 1), page(&["d"], 0, 2)], vec![], "", 10);
        assert_eq!(names(&l), ["a", "b", "c"]);
        assert!(l.remaining_entries > 0, "d and ns1's rest follow");
        let l = merge_listing(vec![page(&["a"], 0, 1), page(&["b"], 0, 2)], vec![st("c", 0)], "", 10);
        assert_eq!(names(&l), ["a", "b", "c"]);
        assert_eq!(l.remaining_entries, 0);
    }

    #[test]
    fn a_mount_point_hides_an_entry_of_its_name() {
        let l = merge_listing(vec![page(&["data", "x"], 0, 7)], vec![st("data", 0)], "", 10);
        assert_eq!(names(&l), ["data", "x"]);
        assert_eq!(l.entries[0].length, 0, "the mount point's status, not the entry's");
        let l = merge_listing(vec![page(&["x"], 0, 7)], vec![st("data", 0)], "data", 10);
        assert_eq!(names(&l), ["x"], "mount points before start_after are not repeated");
    }

    #[test]
    fn summaries_add_up_and_keep_the_own_quota() {
        let s = |n: u64, q: i64| ContentSummary {
            length: n,
            file_count: n,
            directory_count: 1,
            quota: q,
            space_consumed: 3 * n,
            space_quota: q,
        };
        let t = sum_summaries(Some(s(10, 100)), [s(5, 7), s(1, 9)]);
        assert_eq!(
            (t.length, t.file_count, t.directory_count, t.space_consumed, t.quota),
            (16, 16, 3, 48, 100)
        );
        assert_eq!(sum_summaries(None, [s(2, 5)]).quota, -1);
    }

    #[test]
    fn mount_points_show_their_entry() {
        let mut e = raftfs_federation::MountEntry {
            source: "/data".into(),
            destinations: vec![],
            order: raftfs_federation::Order::Hash,
            read_only: false,
            owner: "alice".into(),
            group: "eng".into(),
            mode: 0o750,
            quota: Default::default(),
        };
        let mut dest = st("d2", 0);
        dest.modification_time = 42;
        let s = directory_status("data", Some(&e), Some(dest), "hdfs", 0);
        assert_eq!(
            (
                s.path_suffix.as_str(),
                s.owner.as_str(),
                s.group.as_str(),
                s.permission.bits(),
                s.modification_time
            ),
            ("data", "alice", "eng", 0o750, 42)
        );
        e.mode = 0o700;
        assert_eq!(
            directory_status("x", Some(&e), None, "hdfs", 0).permission.bits(),
            0o700
        );
        let v = directory_status("", None, None, "hdfs", 2);
        assert_eq!((v.owner.as_str(), v.is_dir(), v.children_num), ("hdfs", true, 2));
    }
}
