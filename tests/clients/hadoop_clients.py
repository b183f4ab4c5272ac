"""hdfs-native (the Rust/Python HDFS client, from PyPI) against raftfs dev's
Hadoop RPC: it finds the leader through HADOOP_CONF_DIR's HA settings and
acts as HADOOP_USER_NAME. Prints one line per check; exits non-zero on the
first failure."""

import argparse
import os
import sys

from hdfs_native import Client

LISTED_ENTRIES = 1005  # over one getListing page (1000)
RANGE_AT = 1024 * 1024 - 1000  # as tests/hadoop_clients.rs
RANGE_LEN = 5000


def expect_error(what, call, kind, text):
    try:
        call()
    except kind as e:
        if text not in str(e):
            sys.exit(f"{what}: {type(e).__name__} without {text!r}: {e}")
        print(f"{what}: {type(e).__name__}: {text}")
        return
    sys.exit(f"{what}: no error")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--home", required=True)
    p.add_argument("--others", required=True, help="a directory the user may not write")
    p.add_argument("--read", action="append", default=[], help="a file to read into --read-dir")
    p.add_argument("--read-dir")
    a = p.parse_args()
    c = Client()  # fs.defaultFS and the nameservice's members from HADOOP_CONF_DIR
    home = a.home

    root = c.get_file_info("/")
    assert root.isdir, root
    c.mkdirs(f"{home}/a/b", create_parent=True)
    info = c.get_file_info(f"{home}/a")
    assert info.isdir and info.owner == "alice", info
    print(f"mkdirs and getFileInfo: ok (owner {info.owner}, group {info.group}, permission {oct(info.permission)})")

    c.rename(f"{home}/a/b", f"{home}/a/c")
    names = [s.path.rsplit("/", 1)[-1] for s in c.list_status(f"{home}/a")]
    assert names == ["c"], names
    c.set_permission(f"{home}/a/c", 0o700)
    assert c.get_file_info(f"{home}/a/c").permission == 0o700
    c.set_times(f"{home}/a/c", 1_000_000, 2_000_000)
    t = c.get_file_info(f"{home}/a/c")
    assert (t.modification_time, t.access_time) == (1_000_000, 2_000_000), t
    print("rename, setPermission, setTimes: ok")

    with c.create(f"{home}/a/empty") as w:
        pass
    e = c.get_file_info(f"{home}/a/empty")
    assert not e.isdir and e.length == 0, e
    assert c.set_replication(f"{home}/a/empty", 2)
    assert c.get_file_info(f"{home}/a/empty").replication == 2
    print("create and complete of an empty file, setReplication: ok")

    for i in range(LISTED_ENTRIES):
        c.mkdirs(f"{home}/many/d{i:04}", create_parent=True)
    listed = [s.path.rsplit("/", 1)[-1] for s in c.list_status(f"{home}/many")]
    assert listed == [f"d{i:04}" for i in range(LISTED_ENTRIES)], (len(listed), listed[:3])
    print(f"a listing of {len(listed)} entries over two pages: ok")

    cs = c.get_content_summary(f"{home}/many")
    assert (cs.directory_count, cs.file_count, cs.length) == (LISTED_ENTRIES + 1, 0, 0), cs
    cs = c.get_content_summary(f"{home}/a")
    assert (cs.directory_count, cs.file_count, cs.length) == (2, 1, 0), cs
    print(f"content summary: ok ({cs.directory_count} directories, {cs.file_count} file)")

    expect_error("info of a missing path", lambda: c.get_file_info(f"{home}/none"), FileNotFoundError, "")
    expect_error(
        "mkdir in another's directory",
        lambda: c.mkdirs(f"{a.others}/x"),
        Exception,
        "org.apache.hadoop.security.AccessControlException",
    )
    expect_error("an ACL call", lambda: c.get_acl_status(home), Exception, "org.apache.hadoop.hdfs.protocol.AclException")
    expect_error(
        "rename onto an existing file without overwrite",
        lambda: c.rename(f"{home}/a/c", f"{home}/a/empty"),
        FileExistsError,  # hdfs-native's for FileAlreadyExistsException
        "already exists",
    )

    for path in a.read:
        name = path.rsplit("/", 1)[-1]
        with c.read(path) as r:
            data = r.read()
        with open(os.path.join(a.read_dir, name), "wb") as out:
            out.write(data)
        if len(data) > RANGE_AT:
            with c.read(path) as r:
                part = r.read_range(RANGE_AT, min(RANGE_LEN, len(data) - RANGE_AT))
            with open(os.path.join(a.read_dir, name + ".range"), "wb") as out:
                out.write(part)
        print(f"read {path}: {len(data)} bytes")

    assert c.delete(f"{home}/a", recursive=True)
    assert c.delete(f"{home}/many", recursive=True)
    assert not c.delete(f"{home}/a", recursive=True)
    print("delete: ok")
    print("hdfs-native: ok")


if __name__ == "__main__":
    main()
