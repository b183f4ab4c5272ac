#!/usr/bin/env bash
# The "start a local cluster" command of README.md: installs what the build
# needs, builds raftfs (same profile as scripts/test.sh), and runs
# `raftfs dev` with the arguments given (default directory ./dev-data).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --bin raftfs
has_dir=0
for a in "$@"; do [ "$a" = "--dir" ] && has_dir=1; done
if [ "$has_dir" = 0 ]; then set -- --dir ./dev-data "$@"; fi
exec target/debug/raftfs dev "$@"
