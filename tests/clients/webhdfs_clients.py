"""Real WebHDFS clients against a raftfs cluster: HdfsCLI (`hdfs` on PyPI)
and fsspec's WebHDFS filesystem, each doing what a user's script does --
directories, uploads and downloads of several sizes (one over a block),
ranges, listing, status, rename, append, checksum, delete -- and the
errors a user meets, as each client's own exceptions.

Run by tests/webhdfs_clients.rs with the virtual environment
scripts/setup.sh makes (target/python-clients). Exits non-zero, saying
which step failed, if anything is not as HDFS would have it.
"""

import argparse
import os
import sys

import fsspec
import requests
from hdfs import HdfsError, InsecureClient

BLOCK = 1 << 20  # the smallest block size a nameservice takes
SIZES = [0, 1, 4096, 3 * BLOCK + 17]  # the last spans four blocks


def data(n, seed):
    return bytes((i * 31 + seed * 7 + (i >> 10)) & 0xFF for i in range(n))


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_error(fn, what, **attrs):
    """Run fn, which must fail with an exception of kind attrs['kind']
    (HdfsCLI: HdfsError whose .exception is attrs['exception'])."""
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the kind is checked below
        kind = attrs.get("kind")
        if kind is not None and not isinstance(e, kind):
            raise AssertionError(f"{what}: raised {type(e).__name__}: {e}, not {kind.__name__}")
        if "exception" in attrs and getattr(e, "exception", None) != attrs["exception"]:
            raise AssertionError(f"{what}: HdfsError of {getattr(e, 'exception', None)!r}: {e}")
        print(f"  {what}: {type(e).__name__}: {str(e)[:100]}")
        return
    raise AssertionError(f"{what}: did not fail")


def hdfscli(urls, ca, user, home):
    print(f"HdfsCLI {urls}")
    session = requests.Session()
    session.verify = ca
    c = InsecureClient(urls, user=user, session=session)
    base = f"{home}/hdfscli"
    c.makedirs(base)
    check(c.status(base)["type"] == "DIRECTORY", "makedirs made a directory")
    for n in SIZES:
        body = data(n, n % 251)
        path = f"{base}/f{n}"
        c.write(path, data=body, blocksize=BLOCK, replication=2)
        with c.read(path) as r:
            check(r.read() == body, f"read back {n} bytes")
        st = c.status(path)
        check((st["type"], st["length"], st["replication"]) == ("FILE", n, 2), f"status of {path}: {st}")
    big = f"{base}/f{SIZES[-1]}"
    whole = data(SIZES[-1], SIZES[-1] % 251)
    with c.read(big, offset=BLOCK - 5, length=100) as r:
        check(r.read() == whole[BLOCK - 5 : BLOCK + 95], "a range across a block boundary")
    check(sorted(c.list(base)) == sorted(f"f{n}" for n in SIZES), f"list: {c.list(base)}")
    c.rename(big, f"{base}/moved")
    check(c.status(big, strict=False) is None, "rename moved the file away")
    c.write(f"{base}/moved", data=b"tail", append=True)
    with c.read(f"{base}/moved") as r:
        check(r.read() == whole + b"tail", "append added to the end")
    sum1 = c.checksum(f"{base}/moved")
    check(sum1["algorithm"].startswith("MD5-of-") and sum1["length"] == 28, f"checksum: {sum1}")
    check(len(sum1["bytes"]) == 56, f"checksum bytes: {sum1}")
    check(c.checksum(f"{base}/f1") != sum1, "different files, different checksums")
    check(c.delete(f"{base}/moved") is True, "delete says it deleted")
    check(c.status(f"{base}/moved", strict=False) is None, "deleted")
    expect_error(lambda: c.status(f"{base}/missing"), "status of a missing path", kind=HdfsError,
                 exception="FileNotFoundException")
    expect_error(lambda: c.write(f"{base}/f1", data=b"again"), "create over an existing file", kind=HdfsError,
                 exception="FileAlreadyExistsException")
    other = InsecureClient(urls, user="mallory", session=session)
    expect_error(lambda: other.write(f"{base}/intruder", data=b"x"), "write in another's directory",
                 kind=HdfsError, exception="AccessControlException")
    check(c.status(f"{base}/intruder", strict=False) is None, "a refused write made nothing")
    expect_error(lambda: c.makedirs(f"{base}/f1/sub"), "a directory under a file", kind=HdfsError)


def fsspec_webhdfs(host, port, ca, user, home):
    print(f"fsspec webhdfs https://{host}:{port}")
    fs = fsspec.filesystem("webhdfs", host=host, port=port, user=user, use_https=True, session_verify=ca,
                           skip_instance_cache=True)
    base = f"{home}/fsspec"
    fs.mkdir(base)
    check(fs.isdir(base), "mkdir made a directory")
    for n in SIZES:
        body = data(n, n % 241)
        path = f"{base}/f{n}"
        # CREATE, then one APPEND per 1 MiB chunk, as fsspec writes.
        with fs.open(path, "wb", block_size=BLOCK, autocommit=True) as f:
            f.write(body)
        check(fs.cat(path) == body, f"cat {n} bytes")
        check(fs.info(path)["size"] == n, f"info of {path}: {fs.info(path)}")
    big = f"{base}/f{SIZES[-1]}"
    whole = data(SIZES[-1], SIZES[-1] % 241)
    check(fs.cat_file(big, start=BLOCK - 3, end=BLOCK + 3) == whole[BLOCK - 3 : BLOCK + 3], "a range")
    names = sorted(os.path.basename(p) for p in fs.ls(base, detail=False))
    check(names == sorted(f"f{n}" for n in SIZES), f"ls: {names}")
    fs.mv(big, f"{base}/moved")
    check(not fs.exists(big) and fs.exists(f"{base}/moved"), "mv")
    # (Appending is what fsspec's writes above did: CREATE, then one APPEND
    # per chunk. Its own "ab" mode never sets the DataNode location it
    # posts to, against any WebHDFS server, so it is not used here.)
    check(fs.cat(f"{base}/moved") == whole, "the moved file's bytes")
    k = fs.ukey(f"{base}/moved")
    check(k["algorithm"].startswith("MD5-of-") and len(k["bytes"]) == 56, f"checksum: {k}")
    fs.rm(f"{base}/moved")
    check(not fs.exists(f"{base}/moved"), "rm")
    expect_error(lambda: fs.info(f"{base}/missing"), "info of a missing path", kind=FileNotFoundError)
    other = fsspec.filesystem("webhdfs", host=host, port=port, user="mallory", use_https=True, session_verify=ca,
                              skip_instance_cache=True)
    expect_error(lambda: other.mkdir(f"{base}/intruder"), "mkdir in another's directory", kind=PermissionError)
    expect_error(lambda: fs.cat(f"{base}/missing"), "cat of a missing path", kind=FileNotFoundError)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--hdfscli-urls", required=True, help="https://HOST:PORT;... of every member")
    p.add_argument("--fsspec-host", required=True)
    p.add_argument("--fsspec-port", type=int, required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--user", required=True)
    p.add_argument("--home", required=True)
    a = p.parse_args()
    # requests lets REQUESTS_CA_BUNDLE (and CURL_CA_BUNDLE) override a
    # session's own `verify`: point them at the cluster CA, as a user of
    # these clients against a private CA does.
    os.environ["REQUESTS_CA_BUNDLE"] = a.ca
    os.environ["CURL_CA_BUNDLE"] = a.ca
    hdfscli(a.hdfscli_urls, a.ca, a.user, a.home)
    fsspec_webhdfs(a.fsspec_host, a.fsspec_port, a.ca, a.user, a.home)
    print("both clients: ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e}", file=sys.stderr)
        sys.exit(1)
