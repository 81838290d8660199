"""The query benchmark's peers: DuckDB over zstd Parquet and chdb (ClickHouse) over a MergeTree
table, on the rows `sluice bench query` exports, on THREADS threads (1 by default), each query
timed in process.

Usage: query_peers.py ROWS.ndjson QUERIES.json REPEAT [THREADS]
QUERIES.json maps a query name to {"duckdb": SQL, "chdb": SQL} over table `wiki`.
Prints JSON: per query and engine the best time in milliseconds and the first result row.
"""

import json
import os
import sys
import tempfile
import time

import chdb
import duckdb
from chdb import session


def best(run, repeat):
    times, first = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        rows = run()
        times.append((time.perf_counter() - start) * 1000)
        first = rows
    return min(times), first


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="sluice-query-peers-") as work:
        run(work)


def run(work: str) -> None:
    rows_path, queries_path, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    with open(queries_path, encoding="utf-8") as f:
        queries = json.load(f)
    parquet = os.path.join(work, "wiki.parquet")

    con = duckdb.connect()
    con.execute(f"SET threads TO {threads}")
    con.execute(
        f"""COPY (SELECT * REPLACE (CAST(__time AS TIMESTAMP) AS __time)
                  FROM read_json('{rows_path}', format = 'newline_delimited', sample_size = -1)
                  ORDER BY __time)
            TO '{parquet}' (FORMAT parquet, COMPRESSION zstd)"""
    )
    con.execute(f"CREATE VIEW wiki AS SELECT * FROM read_parquet('{parquet}')")

    sess = session.Session(os.path.join(work, "chdb"))
    sess.query("CREATE DATABASE IF NOT EXISTS bench ENGINE = Atomic")
    sess.query(
        f"CREATE TABLE bench.wiki ENGINE = MergeTree ORDER BY __time SETTINGS allow_nullable_key = 1 AS "
        f"SELECT * FROM file('{parquet}', Parquet) SETTINGS max_threads = {threads}"
    )

    out = {"duckdb_version": duckdb.__version__, "chdb_version": chdb.__version__,
           "parquet_bytes": os.path.getsize(parquet),
           "rows": con.execute("SELECT count(*) FROM wiki").fetchone()[0], "queries": {}}
    for name, q in queries.items():
        d_ms, d_rows = best(lambda: con.execute(q["duckdb"]).fetchall(), repeat)
        c_ms, c_rows = best(
            lambda: sess.query(q["chdb"].replace("FROM wiki", "FROM bench.wiki") + f" SETTINGS max_threads = {threads}", "JSONCompact"),
            repeat,
        )
        c_data = json.loads(c_rows.bytes())["data"] if c_rows is not None else []
        out["queries"][name] = {
            "duckdb_ms": d_ms, "chdb_ms": c_ms,
            "duckdb_first": [str(v) for v in d_rows[0]] if d_rows else None,
            "chdb_first": [str(v) for v in c_data[0]] if c_data else None,
            "duckdb_rows": len(d_rows), "chdb_rows": len(c_data),
        }
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
