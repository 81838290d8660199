#!/usr/bin/env bash
# The `bench pipeline` reports `sluice bench cost` prices the planned ranges from, all from one
# binary in one sitting (their differences are what the model fits, so they are measured
# together): the base run, the supervisor's scale runs, the spilled, checkpointed and
# segmented runs, and the sized task. Every task of the first six reads 80,000 records (5,000
# per partition per wave on 16 partitions), as the model's fits assume. Each run's local
# stores start empty.
# Usage: bench/cost_reports.sh [OUT_DIR, default bench/results]; SLUICE=path/to/sluice to
# measure a built binary instead of building one.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-bench/results}")"
mkdir -p "$out"
if [[ -z "${SLUICE:-}" ]]; then
  cargo build --release --quiet -p sluice
  SLUICE="${CARGO_TARGET_DIR:-$PWD/target}/release/sluice"
fi
sluice="$(realpath "$SLUICE")"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {
  local name="$1"
  shift
  rm -rf "$work/.sluice"
  (cd "$work" && "$sluice" bench pipeline "$@" --out "$out/$name.json" > "$work/$name.log" 2>&1) ||
    { cat "$work/$name.log" >&2; exit 1; }
  echo "$name: $(grep -m1 '^indexer only' "$work/$name.log")"
}
sample="$PWD/data/wikiticker-2015-09-12-sampled.json.gz"
run pipeline --sample "$sample"
run pipeline-16p --sample "$sample" --partitions 16 --wave 5000
run pipeline-16p-4g --sample "$sample" --partitions 16 --wave 5000 --task-count 4
run pipeline-8p --sample "$sample" --max-rows-in-memory 10000
run pipeline-8p-4c --sample "$sample" --max-rows-in-memory 10000 --max-total-rows 20000
run pipeline-8p-4s --sample "$sample" --max-rows-in-memory 10000 --max-total-rows 20000 --max-rows-per-segment 40000
run pipeline-2m --sample "$sample" --rows 2000000 --partitions 128 --wave 15625
