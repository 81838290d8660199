#!/usr/bin/env bash
# Runs Sluice's whole test suite on a fresh machine. Today every test runs in-process
# (no broker or AWS endpoint yet), so this is the workspace's cargo tests.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets --locked "$@"
