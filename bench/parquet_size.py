"""Writes the rows exported by `sluice bench segment --export-rows` as zstd Parquet with DuckDB
and prints the Parquet size, so the bench script can compare it with Sluice's segment size."""

import json
import os
import sys
import tempfile

import duckdb


def main() -> None:
    rows_path = sys.argv[1]
    out = os.path.join(tempfile.mkdtemp(prefix="sluice-parquet-"), "rows.parquet")
    con = duckdb.connect()
    con.execute("SET threads TO 1")
    # Column types as the segment holds them: time as TIMESTAMP, string dimensions as VARCHAR,
    # long dimensions as BIGINT; the row order is the segment's (time, dimensions).
    con.execute(
        f"""
        COPY (
            SELECT * REPLACE (CAST(__time AS TIMESTAMP) AS __time)
            FROM read_json('{rows_path}', format = 'newline_delimited', sample_size = -1)
        ) TO '{out}' (FORMAT parquet, COMPRESSION zstd)
        """
    )
    rows = con.execute(f"SELECT count(*) FROM '{out}'").fetchone()[0]
    print(json.dumps({"parquet_bytes": os.path.getsize(out), "parquet_rows": rows, "duckdb": duckdb.__version__}))


if __name__ == "__main__":
    main()
