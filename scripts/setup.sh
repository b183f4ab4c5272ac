#!/usr/bin/env bash
# Installs what building and testing raftfs needs on a fresh Debian machine and
# does nothing when it is already there: libclang for librocksdb-sys's bindgen,
# curl for the tests that read the nodes' HTTP pages as an operator would.
# protoc is not needed (protoc-bin-vendored ships it inside a crate).
set -euo pipefail

have_libclang() {
  ldconfig -p 2>/dev/null | grep -q 'libclang\(-[0-9.]*\)\?\.so' && return 0
  ls /usr/lib/llvm-*/lib/libclang.so* >/dev/null 2>&1 && return 0
  ls /usr/lib/x86_64-linux-gnu/libclang*.so* 2>/dev/null | grep -q 'libclang-[0-9]*\.so\|libclang\.so' && return 0
  return 1
}

if ! have_libclang; then
  echo "setup: libclang not found; installing it (needed by RocksDB's bindgen)" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    libclang1-14 libclang-common-14-dev >/dev/null
fi
if ! command -v curl >/dev/null 2>&1; then
  echo "setup: curl not found; installing it (the HTTP page tests use it)" >&2
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl ca-certificates >/dev/null
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo not found; install a Rust toolchain (rustup) first" >&2
  exit 1
fi
