#!/usr/bin/env bash
# The test command of README.md: installs what the build needs, checks
# formatting and lints, then runs every test of the workspace (unit, golden
# conformance, openraft storage suite, multi-process cluster tests). Same
# profile and features as scripts/dev.sh, so a fresh machine builds RocksDB
# once.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo fmt --all -- --check
# --timings: target/cargo-timings/ says which crates a clean build waits on.
cargo build --workspace --all-targets --timings
cargo clippy --workspace --all-targets -- -D warnings
mkdir -p target
# The clusters the tests start write under $TMPDIR and members stop
# campaigning below 100 MiB free: say how much room there is before and,
# on a failure, after, so that a full disk reads as one.
free_space() { df -h "${TMPDIR:-/tmp}" . | sed "s/^/disk ($1): /"; }
free_space "before the tests"
set +e
cargo test --workspace --no-fail-fast -- --test-threads=2 2>&1 | tee target/test-output.txt
status=${PIPESTATUS[0]}
set -e
# cargo prints one "test result" line per test binary, the last often of a
# crate with no tests: close with the totals of them all.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i == "passed;") p += $(i-1); if ($i == "failed;") f += $(i-1) } }
     END { printf "%d passed, %d failed\n", p, f }' target/test-output.txt
[ "$status" -eq 0 ] || free_space "after the tests"
exit "$status"
