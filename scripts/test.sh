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
cargo build --workspace --all-targets
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --no-fail-fast -- --test-threads=2
