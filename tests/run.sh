#!/usr/bin/env bash
# Runs Sluice's whole test suite on a fresh machine: lints the SAM template and builds the four
# Lambda functions with `sam build` (infra/, tools from PyPI), installs what the tests need (the
# tansu broker, moto_server, DuckDB and pydruid, cached under ~/.cache/sluice), starts them on
# 127.0.0.1 with localstack/up.sh, runs every test of the workspace (the local Lambda test on the
# binaries sam built), and stops the services again.
set -euo pipefail
cd "$(dirname "$0")/.."
infra/lint.sh
infra/build.sh
export SLUICE_LAMBDA_BUILD_DIR="$PWD/.aws-sam/build"
env_file=$(mktemp)
trap 'localstack/down.sh; rm -f "$env_file"' EXIT
localstack/up.sh > "$env_file"
# shellcheck disable=SC1090
source "$env_file"
cargo test --workspace --all-targets --locked "$@"
