#!/usr/bin/env bash
# Runs Sluice's whole test suite on a fresh machine: installs what the tests need (the tansu
# broker and moto_server, cached under ~/.cache/sluice), starts them on 127.0.0.1 with
# localstack/up.sh, runs every test of the workspace, and stops the services again.
set -euo pipefail
cd "$(dirname "$0")/.."
env_file=$(mktemp)
trap 'localstack/down.sh; rm -f "$env_file"' EXIT
localstack/up.sh > "$env_file"
# shellcheck disable=SC1090
source "$env_file"
cargo test --workspace --all-targets --locked "$@"
