#!/usr/bin/env bash
# Runs Sluice's whole test suite on a fresh machine: lints the SAM template and builds the four
# Lambda functions with `sam build` (infra/, tools from PyPI) while localstack/up.sh installs
# what the tests need (the tansu broker, moto_server, DuckDB and pydruid, cached under
# ~/.cache/sluice) and starts them on 127.0.0.1; then runs every test of the workspace (the
# local Lambda test on the binaries sam built) and stops the services again.
set -euo pipefail
cd "$(dirname "$0")/.."
env_file=$(mktemp)
# Without the cache, the broker's build overlaps the functions' build.
localstack/up.sh > "$env_file" &
up_pid=$!
trap 'kill "$up_pid" 2>/dev/null || true; wait "$up_pid" 2>/dev/null || true; localstack/down.sh; rm -f "$env_file"' EXIT
infra/lint.sh
infra/build.sh
export SLUICE_LAMBDA_BUILD_DIR="$PWD/.aws-sam/build"
wait "$up_pid"
# shellcheck disable=SC1090
source "$env_file"
cargo test --workspace --all-targets --locked "$@"
