#!/usr/bin/env bash
# The segment engine's figures on Druid's Wikipedia sample repeated to ~400k rows, single
# threaded, with the size of the same rows written as zstd Parquet by DuckDB measured in the
# same run, for the repeated rows and for the sample as it is. Usage: bench/segment.sh [extra `sluice bench segment` flags]
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${SLUICE_TOOLS_CACHE:-$HOME/.cache/sluice}/venv-bench"
if [[ ! -x "$venv/bin/python" ]] || ! "$venv/bin/python" -c "import duckdb" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "duckdb==2.0.1"
fi
cargo build --release --quiet -p sluice
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${CARGO_TARGET_DIR:-target}/release/sluice" bench segment "$@"
# The sizes again for the sample as it is (39,244 rows, no repeated values for zstd to find).
for rows in 400000 39244; do
  "${CARGO_TARGET_DIR:-target}/release/sluice" bench segment --repeat 1 --rows "$rows" --json --export-rows "$work/rows-$rows.ndjson" \
    > "$work/sluice-$rows.json"
  "$venv/bin/python" bench/parquet_size.py "$work/rows-$rows.ndjson" > "$work/parquet-$rows.json"
  "$venv/bin/python" - "$work/sluice-$rows.json" "$work/parquet-$rows.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
p = json.load(open(sys.argv[2]))
rows = s["merge_rows"]
assert p["parquet_rows"] == rows, (p["parquet_rows"], rows)
print(f"{rows} rows in one segment:")
print(f"  parquet (DuckDB {p['duckdb']}, zstd) {p['parquet_bytes'] / rows:8.1f} bytes/row ({p['parquet_bytes']} bytes)")
for codec in ("lz4", "zstd"):
    ratio = s[f"segment_bytes_{codec}"] / p["parquet_bytes"]
    print(f"  segment ({codec}) / parquet (zstd)  {ratio:8.2f}x")
sparse = s["sparse_segment_bytes_zstd"] / p["parquet_bytes"]
print(f"  segment (zstd) without bitmaps on {', '.join(s['without_bitmaps'])} / parquet (zstd)  {sparse:8.2f}x")
PY
done
