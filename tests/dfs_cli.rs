//! `raftfs dfs` as a user sees it: output lines, error lines and exit
//! status, the way `hdfs dfs` prints them.

use crate::common;

/// Drop the date and time columns of an `-ls` line (they vary).
fn without_date(line: &str) -> String {
    let w: Vec<&str> = line.split_whitespace().collect();
    if w.len() >= 8 {
        format!("{} {} {} {} {} {}", w[0], w[1], w[2], w[3], w[4], w[7])
    } else {
        line.to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dfs_commands_behave_like_hdfs_dfs() {
    let c = common::Cluster::start(1, "rocksdb");
    c.wait_ready().await;
    let ok = |args: &[&str]| {
        let (code, out, err) = c.dfs("hdfs", args);
        assert_eq!(code, 0, "{args:?} failed: {err}");
        out
    };
    let fails = |user: &str, args: &[&str], want_err: &str| {
        let (code, _, err) = c.dfs(user, args);
        assert_eq!(code, 1, "{args:?} should fail with 1");
        assert_eq!(err.trim_end(), want_err, "{args:?}");
    };

    ok(&["-mkdir", "/a"]);
    fails("hdfs", &["-mkdir", "/a"], "mkdir: `/a': File exists");
    fails(
        "hdfs",
        &["-put", "/nonexistent/local", "/a"],
        "put: `/nonexistent/local': No such file or directory",
    );
    fails("hdfs", &["-mkdir", "/x/y"], "mkdir: `/x/y': No such file or directory");
    ok(&["-mkdir", "-p", "/x/y"]);
    ok(&["-touchz", "/a/f"]);
    // Hadoop's Mkdir: PathIsNotDirectoryException, with or without -p.
    fails("hdfs", &["-mkdir", "/a/f"], "mkdir: `/a/f': Is not a directory");
    fails("hdfs", &["-mkdir", "-p", "/a/f"], "mkdir: `/a/f': Is not a directory");

    let ls = ok(&["-ls", "/a"]);
    let lines: Vec<&str> = ls.lines().collect();
    assert_eq!(lines[0], "Found 1 items");
    assert!(
        lines[1].starts_with("-rw-r--r--   3 hdfs supergroup          0 "),
        "{:?}",
        lines[1]
    );
    assert_eq!(without_date(lines[1]), "-rw-r--r-- 3 hdfs supergroup 0 /a/f");
    let ls = ok(&["-ls", "-d", "/a"]);
    assert!(ls.starts_with("drwxr-xr-x   - hdfs supergroup          0 "), "{ls:?}");
    fails("hdfs", &["-ls", "/nope"], "ls: `/nope': No such file or directory");
    let ls = ok(&["-ls", "-R", "/x"]);
    assert_eq!(
        ls.lines().map(without_date).collect::<Vec<_>>(),
        vec!["drwxr-xr-x - hdfs supergroup 0 /x/y"]
    );

    assert_eq!(
        ok(&["-stat", "%F %u:%g %b %r %n %a %A", "/a/f"]).trim_end(),
        "regular empty file hdfs:supergroup 0 3 f 644 rw-r--r--"
    );
    assert_eq!(ok(&["-stat", "%F", "/a"]).trim_end(), "directory");

    ok(&["-mv", "/a/f", "/a/g"]);
    assert_eq!(c.dfs("hdfs", &["-test", "-e", "/a/g"]).0, 0);
    assert_eq!(c.dfs("hdfs", &["-test", "-e", "/a/f"]).0, 1);
    assert_eq!(c.dfs("hdfs", &["-test", "-d", "/a"]).0, 0);
    assert_eq!(c.dfs("hdfs", &["-test", "-f", "/a"]).0, 1);
    assert_eq!(c.dfs("hdfs", &["-test", "-z", "/a/g"]).0, 0);
    fails(
        "hdfs",
        &["-mv", "/nope", "/a"],
        "mv: `/nope': No such file or directory",
    );

    ok(&["-chmod", "700", "/a/g"]);
    assert_eq!(ok(&["-stat", "%a", "/a/g"]).trim_end(), "700");
    ok(&["-chmod", "-R", "go+r", "/a"]);
    assert_eq!(ok(&["-stat", "%A", "/a/g"]).trim_end(), "rwxr--r--");
    ok(&["-chown", "bob:staff", "/a/g"]);
    assert_eq!(ok(&["-stat", "%u:%g", "/a/g"]).trim_end(), "bob:staff");
    assert_eq!(ok(&["-setrep", "2", "/a/g"]).trim_end(), "Replication 2 set: /a/g");

    assert_eq!(
        ok(&["-count", "/x"]).trim_end(),
        "           2            0                  0 /x"
    );
    assert_eq!(
        ok(&["-count", "-q", "/x"]).trim_end(),
        "        none             inf            none             inf            2            0                  0 /x"
    );
    assert_eq!(ok(&["-du", "-s", "/x"]).trim_end(), "0  0  /x");

    fails("hdfs", &["-rm", "/a"], "rm: `/a': Is a directory");
    fails("hdfs", &["-rm", "/nope"], "rm: `/nope': No such file or directory");
    assert_eq!(c.dfs("hdfs", &["-rm", "-f", "/nope"]).0, 0);
    fails("hdfs", &["-rmdir", "/x"], "rmdir: `/x': Directory is not empty");
    assert_eq!(ok(&["-rm", "-r", "/a"]).trim_end(), "Deleted /a");

    fails(
        "bob",
        &["-mkdir", "/bobdir"],
        "mkdir: Permission denied: user=bob, access=WRITE, inode=\"/\":hdfs:supergroup:drwxr-xr-x",
    );
    let (code, _, err) = c.dfs("hdfs", &["-frobnicate"]);
    assert_eq!(code, 255);
    assert!(err.starts_with("-frobnicate: Unknown command"), "{err}");
}
