"""Answers SQL queries with DuckDB over rows given as JSON lines.

Usage: duckdb_oracle.py ROWS.jsonl QUERIES.json [DATASOURCE]
ROWS.jsonl holds one object per row (t: epoch milliseconds, country, device, user, n, bytes,
latency); QUERIES.json is a list of SQL texts over table `r`, or over a view named DATASOURCE
when one is given: the rows as Sluice's SQL sees them (`__time` a TIMESTAMP, then the columns).
Prints a JSON list with one result per query: a list of rows, each a list of values
(TIMESTAMPs as ISO 8601 with milliseconds and Z, as Druid SQL writes them).
"""

import datetime
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
    if len(sys.argv) > 3:
        view = '"' + sys.argv[3].replace('"', '""') + '"'
        con.execute(
            f"CREATE VIEW {view} AS SELECT make_timestamp(t * 1000) AS __time, country, device, \"user\", n, "
            "bytes, latency FROM r"
        )
    with open(queries_path, encoding="utf-8") as f:
        queries = json.load(f)
    out = []
    for sql in queries:
        out.append([[v if not isinstance(v, float) or v == v else None for v in row] for row in con.execute(sql).fetchall()])
    json.dump(out, sys.stdout, default=iso)


def iso(v):
    if isinstance(v, datetime.datetime):
        return v.strftime("%Y-%m-%dT%H:%M:%S.") + f"{v.microsecond // 1000:03d}Z"
    return str(v)


if __name__ == "__main__":
    main()
