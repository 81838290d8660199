#!/usr/bin/env bash
# Runs Sluice's whole test suite on a fresh machine: checks that no crate's modules depend on
# each other in a cycle (tests/module_cycles.py), lints the SAM template and builds the
# Lambda functions with `sam build` in debug mode (infra/, tools from PyPI) while localstack/up.sh installs
# what the tests need (the tansu broker, moto_server, DuckDB and pydruid, cached under
# ~/.cache/sluice) and starts them on 127.0.0.1, and tests/browser/install.sh installs Debian's
# Chromium and chromedriver for the console's browser test; then runs every test of the
# workspace (the local Lambda test on the binaries sam built) and stops the services again.
#
# Cargo builds into ${CARGO_TARGET_DIR:-~/.cache/sluice/target}, shared by every checkout on
# the machine, so a fresh clone rebuilds only the workspace's own crates; the folder is
# emptied when it outgrows ${SLUICE_TARGET_MAX_GB:-40} GB. Each phase prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
cache="${SLUICE_TOOLS_CACHE:-$HOME/.cache/sluice}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$cache/target}"
mkdir -p "$CARGO_TARGET_DIR"
if (( $(du -s --block-size=1G "$CARGO_TARGET_DIR" | cut -f1) > ${SLUICE_TARGET_MAX_GB:-40} )); then
  echo "tests/run.sh: $CARGO_TARGET_DIR is over ${SLUICE_TARGET_MAX_GB:-40} GB; starting it afresh" >&2
  rm -rf "$CARGO_TARGET_DIR" && mkdir -p "$CARGO_TARGET_DIR"
fi
started=$SECONDS
phase() { echo "tests/run.sh: $1 done at $((SECONDS - started)) s" >&2; }

env_file=$(mktemp)
# Without the cache, the broker's build overlaps the functions' build.
localstack/up.sh > "$env_file" &
up_pid=$!
# Chromium and chromedriver for the console's browser test, installed while the workspace builds.
tests/browser/install.sh &
browser_pid=$!
trap 'kill "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; localstack/down.sh; rm -f "$env_file"' EXIT
python3 tests/module_cycles.py
infra/lint.sh
phase "template lint"
# The functions are built by `sam build` as a deployment builds them (cargo-lambda, Zig's
# linker, the template's architecture: arm64, cross-built with infra/cross.sh's tools and run
# by the local Lambda test under qemu-user), in debug mode: the tests run these binaries, and a
# release build's thin LTO of five binaries is most of a CI run's build time. infra/deploy.sh
# builds for release.
SAM_BUILD_MODE=debug infra/build.sh
phase "sam build"
export SLUICE_LAMBDA_BUILD_DIR="$PWD/.aws-sam/build"
# The tests' build needs no service: it overlaps the broker's build too.
cargo test --workspace --all-targets --locked --no-run
phase "test build"
wait "$up_pid"
wait "$browser_pid"
phase "services"
# shellcheck disable=SC1090
source "$env_file"
# A test that waits for ever fails the run after ${SLUICE_TEST_TIMEOUT_SECS:-2400} s, showing
# what the services were doing, instead of holding it until an outer limit kills it mute.
bounded() {
  local rc=0
  timeout --kill-after=30 "${SLUICE_TEST_TIMEOUT_SECS:-2400}" "$@" || rc=$?
  if (( rc == 124 || rc == 137 )); then
    echo "tests/run.sh: '$*' did not finish in ${SLUICE_TEST_TIMEOUT_SECS:-2400} s; connections to the services:" >&2
    ss -tnp 2>/dev/null | grep -E ":(${SLUICE_AWS_PORT:-4566}|${SLUICE_KAFKA_PORT:-9092})\b" >&2 || true
    for name in moto tansu; do
      echo "tests/run.sh: the end of $name's log:" >&2
      tail -n 20 "${SLUICE_RUN_DIR:-.sluice/services}/$name.log" >&2 || true
    done
  fi
  return "$rc"
}
if (( $# > 0 )); then
  bounded cargo test --workspace --all-targets --locked "$@"
else
  # The chaos suite (its schedules wait on the pipeline far more than they compute) runs beside
  # the other tests, with the same build; its output follows theirs.
  chaos=every_record_exactly_once_under_faults
  chaos_log=$(mktemp)
  # Criterion's benchmarks (run once each, as tests) take no test filter: they run on their own.
  bounded cargo test --workspace --tests --locked -- --exact "$chaos" > "$chaos_log" 2>&1 &
  chaos_pid=$!
  rc=0
  bounded cargo test --workspace --lib --bins --tests --examples --locked -- --skip "$chaos" || rc=$?
  bounded cargo test --workspace --benches --locked || rc=$?
  chaos_rc=0
  wait "$chaos_pid" || chaos_rc=$?
  echo "tests/run.sh: the chaos suite, run beside the other tests:" >&2
  grep -v "running 0 tests\|0 passed; 0 failed; 0 ignored; 0 measured; [0-9]* filtered out\|^$\|Running \|Doc-tests" "$chaos_log" || true
  rm -f "$chaos_log"
  (( rc == 0 && chaos_rc == 0 )) || exit 1
fi
# The stores as a build without the `aws` feature has them (the workspace turns it on).
bounded cargo test -p sluice-store --lib --features testsuite --locked
phase "tests"
