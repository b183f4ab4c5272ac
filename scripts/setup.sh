#!/usr/bin/env bash
# Installs what building and testing raftfs needs on a fresh Debian machine and
# does nothing when it is already there: libclang for librocksdb-sys's bindgen,
# curl for the tests that read the nodes' HTTP pages as an operator would,
# chromium for the test that loads the status pages in a browser, a Python
# virtual environment with the WebHDFS and Hadoop RPC clients HDFS users run,
# and Java with Hadoop's own client jars (`hadoop fs`).
# protoc is not needed (protoc-bin-vendored ships it inside a crate).
set -euo pipefail

# Install Debian packages (as root, or through sudo).
apt_install() {
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

have_libclang() {
  ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so' && return 0
  ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 && return 0
  ls /usr/lib/x86_64-linux-gnu/libclang*.so* 2>/dev/null | grep -q 'libclang-[0-9]*\.so\|libclang\.so' && return 0
  return 1
}

if ! have_libclang; then
  echo "setup: libclang not found; installing it (needed by RocksDB's bindgen)" >&2
  apt_install libclang1-14 libclang-common-14-dev
fi
if ! command -v curl >/dev/null 2>&1; then
  echo "setup: curl not found; installing it (the HTTP page tests use it)" >&2
  apt_install curl ca-certificates
fi
# The status pages' test (tests/status_pages.rs) loads every page in a real
# browser: Debian's headless-capable chromium.
if ! command -v chromium >/dev/null 2>&1; then
  echo "setup: chromium not found; installing it (the status pages' test loads them in it)" >&2
  apt_install chromium
fi
# The WebHDFS client tests (tests/webhdfs_clients.rs) drive real Python
# clients, HdfsCLI and fsspec, and the Hadoop RPC test
# (tests/hadoop_clients/mod.rs) drives hdfs-native, all from PyPI, in a virtual
# environment of their own under target/ (made once; remade if a client is
# missing).
PY_CLIENTS=target/python-clients
PY_CLIENT_PACKAGES="hdfs==2.7.3 fsspec==2026.9.0 requests==2.34.2 hdfs-native==0.14.7"
if ! "$PY_CLIENTS/bin/python" -c "import hdfs, fsspec, requests, hdfs_native" >/dev/null 2>&1; then
  echo "setup: making $PY_CLIENTS with HdfsCLI and fsspec (the WebHDFS client tests use them)" >&2
  if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c "import ensurepip" >/dev/null 2>&1; then
    apt_install python3 python3-venv
  fi
  rm -rf "$PY_CLIENTS"
  mkdir -p target
  python3 -m venv "$PY_CLIENTS"
  # shellcheck disable=SC2086 # the package list is words
  "$PY_CLIENTS/bin/pip" install -q --disable-pip-version-check $PY_CLIENT_PACKAGES
fi
# The Java client test (tests/hadoop_clients/java_fs_shell.rs) runs Hadoop's
# own FsShell (what `hadoop fs` runs) on a JVM: Debian's Java if the machine
# has none, and Hadoop 3.3.4's shaded client jars (Apache-2.0), taken out of
# PySpark 3.5.3's source archive on PyPI (checked against its hash) into
# target/hadoop-java/jars, once.
HADOOP_JARS=target/hadoop-java/jars
HADOOP_JAR_NAMES="hadoop-client-api-3.3.4.jar hadoop-client-runtime-3.3.4.jar commons-logging-1.1.3.jar
  slf4j-api-2.0.7.jar log4j-1.2-api-2.20.0.jar log4j-api-2.20.0.jar log4j-core-2.20.0.jar log4j-slf4j2-impl-2.20.0.jar"
PYSPARK_PIN="pyspark==3.5.3 --hash=sha256:68b7cc0c0c570a7d8644f49f40d2da8709b01d30c9126cc8cf93b4f84f3d9747"
if ! command -v java >/dev/null 2>&1; then
  echo "setup: java not found; installing it (the Java Hadoop client test runs FsShell)" >&2
  apt_install openjdk-17-jre-headless
fi
missing_jar=""
for j in $HADOOP_JAR_NAMES; do [ -s "$HADOOP_JARS/$j" ] || missing_jar="$j"; done
if [ -n "$missing_jar" ]; then
  echo "setup: fetching Hadoop's client jars into $HADOOP_JARS (the Java Hadoop client test uses them)" >&2
  download=$(mktemp -d)
  echo "$PYSPARK_PIN" > "$download/requirements.txt"
  "$PY_CLIENTS/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
    --require-hashes -r "$download/requirements.txt" -d "$download"
  rm -rf "$HADOOP_JARS"
  mkdir -p "$HADOOP_JARS"
  # shellcheck disable=SC2086 # the jar list is words
  tar -xzf "$download"/pyspark-3.5.3.tar.gz --no-same-owner -C "$HADOOP_JARS" --strip-components=3 \
    $(for j in $HADOOP_JAR_NAMES; do printf 'pyspark-3.5.3/deps/jars/%s ' "$j"; done)
  rm -rf "$download"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install a Rust toolchain (rustup) first" >&2
  exit 1
fi
