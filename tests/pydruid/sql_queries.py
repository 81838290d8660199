"""Druid SQL through pydruid's DB-API and its SQLAlchemy dialect, against a Druid API.

Usage: sql_queries.py URL DATASOURCE
Lists tables and columns as SQLAlchemy's inspector does, runs the query tutorial's SQL
(top pages, lines deleted per hour, added lines per channel), a parameterised count and a
query naming a column that does not exist, and prints what came back as one JSON object.
"""

import json
import sys
import warnings
from urllib.parse import urlparse

import sqlalchemy
from pydruid.db import connect
from pydruid.db.exceptions import ProgrammingError

DAY = "\"__time\" BETWEEN TIMESTAMP '2015-09-12 00:00:00' AND TIMESTAMP '2015-09-13 00:00:00'"


def main() -> None:
    # pydruid 0.6.9's dialect predates SQLAlchemy 2's statement cache and import_dbapi.
    warnings.simplefilter("ignore")
    url, datasource = sys.argv[1], sys.argv[2]
    where = urlparse(url)
    table = '"' + datasource.replace('"', '""') + '"'
    out = {}

    # DB-API: pydruid.db.connect, a cursor, rows as named tuples.
    cursor = connect(host=where.hostname, port=where.port, path="/druid/v2/sql/", scheme="http").cursor()
    cursor.execute(
        f"SELECT page, COUNT(*) AS Edits FROM {table} WHERE {DAY} GROUP BY page ORDER BY Edits DESC LIMIT 10"
    )
    out["description"] = [d[0] for d in cursor.description]
    out["top_pages"] = [[row.page, row.Edits] for row in cursor.fetchall()]
    cursor.execute(
        f"SELECT FLOOR(__time TO HOUR) AS HourTime, SUM(deleted) AS LinesDeleted FROM {table} WHERE {DAY} GROUP BY 1"
    )
    out["deleted_by_hour"] = [list(row) for row in cursor.fetchall()]
    cursor.execute(
        f"SELECT COUNT(*) AS n FROM {table} WHERE channel = %(channel)s AND added > %(least)s",
        {"channel": "#en.wikipedia", "least": 100},
    )
    out["parameterised"] = cursor.fetchone().n
    try:
        cursor.execute(f"SELECT nothing FROM {table}")
        out["error"] = None
    except ProgrammingError as e:
        out["error"] = str(e)

    # SQLAlchemy: the druid:// dialect's inspector and a query through an engine.
    engine = sqlalchemy.create_engine(f"druid://{where.hostname}:{where.port}/druid/v2/sql/")
    inspector = sqlalchemy.inspect(engine)
    out["schemas"] = inspector.get_schema_names()
    out["tables"] = inspector.get_table_names(schema="druid")
    with engine.connect() as c:
        # pydruid 0.6.9's has_table predates SQLAlchemy 2's inspector arguments: ask the dialect.
        out["has_table"] = bool(engine.dialect.has_table(c, datasource))
    out["columns"] = {c["name"]: str(c["type"]) for c in inspector.get_columns(datasource)}
    with engine.connect() as c:
        rows = c.execute(
            sqlalchemy.text(
                f"SELECT channel, SUM(added) AS added FROM {table} WHERE {DAY} GROUP BY channel ORDER BY added DESC LIMIT 5"
            )
        ).fetchall()
    out["channels"] = [list(r) for r in rows]
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
