"""Answers SQL queries with DuckDB over rows given as JSON lines.

Usage: duckdb_oracle.py ROWS.jsonl QUERIES.json
ROWS.jsonl holds one object per row (t: epoch milliseconds, country, device, user, n, bytes,
latency); QUERIES.json is a list of SQL texts over table `r`. Prints a JSON list with one
result per query: a list of rows, each a list of values.
"""

import json
import sys

import duckdb


def main() -> None:
    rows_path, queries_path = sys.argv[1], sys.argv[2]
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE r AS SELECT * FROM read_json(?, format = 'newline_delimited', columns = {"
        "t: 'BIGINT', country: 'VARCHAR', device: 'VARCHAR', \"user\": 'VARCHAR', n: 'BIGINT', "
        "bytes: 'BIGINT', latency: 'DOUBLE'})",
        [rows_path],
    )
    with open(queries_path, encoding="utf-8") as f:
        queries = json.load(f)
    out = []
    for sql in queries:
        out.append([[v if not isinstance(v, float) or v == v else None for v in row] for row in con.execute(sql).fetchall()])
    json.dump(out, sys.stdout, default=str)


if __name__ == "__main__":
    main()
