#!/usr/bin/env bash
# The fan-out benchmark: the query benchmark's queries over 20M rows of segments on moto's S3
# (metadata in moto's DynamoDB), by one function and fanned out to 1, 2 and 4 query-worker
# processes behind the local Lambda service. Starts the services with localstack/up.sh (and
# leaves them running; localstack/down.sh stops them).
# Usage: bench/fanout.sh [extra `sluice bench fanout` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(localstack/up.sh)"
cargo build --release --quiet -p sluice --features aws
"${CARGO_TARGET_DIR:-target}/release/sluice" --storage "$SLUICE_STORAGE/bench-fanout-$(date +%s)" \
  --metadata "$SLUICE_METADATA" bench fanout "$@"
