"""hdfs-native (the Rust/Python HDFS client, from PyPI) against raftfs dev's
Hadoop RPC: it finds the leader (or a router) through HADOOP_CONF_DIR's HA
settings and acts as HADOOP_USER_NAME. Prints one line per check; exits non-zero on the
first failure."""

import argparse
import os
import signal
import sys

from hdfs_native import Client, WriteOptions

LISTED_ENTRIES = 1005  # over one getListing page (1000)
RANGE_AT = 1024 * 1024 - 1000  # as tests/hadoop_clients/mod.rs
RANGE_LEN = 5000
WRITE_SIZES = [1, 70_000, 3 * 1024 * 1024 + 17]  # as tests/hadoop_clients/mod.rs
WRITE_BLOCK_SIZE = 1024 * 1024
APPENDED = 1000  # bytes of the appended file's first write


def pattern(n):
    """As tests/hadoop_clients/mod.rs's pattern()."""
    return bytes((i * 31 + (i >> 9)) & 0xFF for i in range(n))


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
    p.add_argument("--url", help="the file system (default: fs.defaultFS from HADOOP_CONF_DIR)")
    p.add_argument("--home", required=True)
    p.add_argument("--others", required=True, help="a directory the user may not write")
    p.add_argument("--read", action="append", default=[], help="a file to read into --read-dir")
    p.add_argument("--read-dir")
    p.add_argument("--write-dir", help="where to write files of WRITE_SIZES for the SDK to check")
    p.add_argument("--kill-mid-write", help="the pid file of the leader, killed (-9) in the middle of a write")
    a = p.parse_args()
    # The nameservice's NameNodes (members or routers) from HADOOP_CONF_DIR.
    c = Client(a.url) if a.url else Client()
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

    if a.write_dir:
        for n in WRITE_SIZES:
            opts = WriteOptions(block_size=WRITE_BLOCK_SIZE, replication=3)
            with c.create(f"{a.write_dir}/w{n}", opts) as w:
                w.write(pattern(n))
            assert c.get_file_info(f"{a.write_dir}/w{n}").length == n
            with c.read(f"{a.write_dir}/w{n}") as r:
                assert r.read() == pattern(n), n
            print(f"wrote {n} bytes and read them back")
        # Append: the last block is reopened and written on.
        whole = pattern(WRITE_SIZES[-1])
        with c.create(f"{a.write_dir}/appended") as w:
            w.write(whole[:APPENDED])
        with c.append(f"{a.write_dir}/appended") as w:
            w.write(whole[APPENDED : 2 * APPENDED])
        with c.read(f"{a.write_dir}/appended") as r:
            assert r.read() == whole[: 2 * APPENDED]
        print("append: ok")

    assert c.delete(f"{home}/a", recursive=True)
    assert c.delete(f"{home}/many", recursive=True)
    assert not c.delete(f"{home}/a", recursive=True)
    print("delete: ok")

    if a.kill_mid_write:
        # The leader dies while a file is written: the pipeline does not
        # need it, and addBlock and complete go to the new leader (Hadoop's
        # failover proxy, from HADOOP_CONF_DIR's NameNodes; or the router,
        # which forwards to the new leader).
        whole = pattern(WRITE_SIZES[-1])
        half = len(whole) // 2
        opts = WriteOptions(block_size=WRITE_BLOCK_SIZE, replication=3)
        with c.create(f"{a.write_dir}/across-failover", opts) as w:
            w.write(whole[:half])
            with open(a.kill_mid_write) as f:
                os.kill(int(f.read().strip()), signal.SIGKILL)
            w.write(whole[half:])
        with c.read(f"{a.write_dir}/across-failover") as r:
            assert r.read() == whole
        print("a write across the leader's kill -9: ok")
    print("hdfs-native: ok")


if __name__ == "__main__":
    main()
