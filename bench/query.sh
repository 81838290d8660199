#!/usr/bin/env bash
# The query benchmark: Druid queries over Druid's Wikipedia sample repeated to ~400k rows,
# single-threaded, beside DuckDB over zstd Parquet and chdb over a MergeTree table measured in
# the same run. Installs duckdb and chdb once into ${SLUICE_TOOLS_CACHE:-~/.cache/sluice}/venv-bench.
# Usage: bench/query.sh [extra `sluice bench query` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${SLUICE_TOOLS_CACHE:-$HOME/.cache/sluice}/venv-bench"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import duckdb, chdb" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "duckdb==2.0.1" "chdb==4.4.0"
fi
cargo build --release --quiet -p sluice
"${CARGO_TARGET_DIR:-target}/release/sluice" bench query --python "$venv/bin/python" "$@"
