"""Joins and lookups against DuckDB: random lookups over the Wikipedia sample's columns (keys
some of the column's values and some it lacks, values shared between keys or not), created through
Druid's lookup API, and random queries joining to them (INNER and LEFT JOIN to `lookup.<name>`,
LOOKUP() with and without a replacement, a join to a grouped subquery), each answered by the API
and by DuckDB joining the same rows to the same maps.

Usage: joins.py URL DATA.json.gz SEED CASES
URL is a Druid API (`sluice serve --allow-operations`) holding the sample as datasource
`wikipedia`; DATA is the sample. Prints one JSON object (the seed, the cases passed, the first
failure); exits 1 when a case fails.
"""

import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "superset"))
from charts import compare, duck, plain, post  # noqa: E402

COLUMNS = ["channel", "countryName", "cityName", "page"]


def make_lookups(rng: random.Random, con, url: str) -> dict:
    """Lookup name -> (column, map), created through the API and as DuckDB tables."""
    lookups = {}
    for i in range(4):
        column = rng.choice(COLUMNS)
        values = [r[0] for r in con.execute(f'SELECT DISTINCT "{column}" FROM wikipedia WHERE "{column}" IS NOT NULL').fetchall()]
        # At most 5,000 keys: the API takes 2 MiB of JSON per request.
        keys = rng.sample(values, min(5000, max(1, int(len(values) * rng.choice([0.05, 0.3, 0.9])))))
        keys += [f"absent-{i}-{n}" for n in range(3)]
        shared = rng.random() < 0.5
        mapping = {k: (f"g{rng.randrange(4)}" if shared else f"v-{k}") for k in keys}
        name = f"lk{i}"
        # A lookup of an earlier run is replaced whatever its version.
        post(url, f"/druid/coordinator/v1/lookups/config/__default/{name}", None, "DELETE")
        status, text = post(url, f"/druid/coordinator/v1/lookups/config/__default/{name}",
                            {"version": f"v{time.time_ns():020d}", "lookupExtractorFactory": {"type": "map", "map": mapping}})
        if status != 202:
            raise SystemExit(f"creating lookup {name}: {status} {text}")
        con.execute(f"CREATE TABLE {name} (k VARCHAR, v VARCHAR)")
        con.executemany(f"INSERT INTO {name} VALUES (?, ?)", list(mapping.items()))
        lookups[name] = (column, mapping)
    return lookups


def case(rng: random.Random, lookups: dict) -> tuple[str, str]:
    """One query: (Druid SQL, DuckDB SQL)."""
    name = rng.choice(sorted(lookups))
    column, mapping = lookups[name]
    kind = rng.choice(["INNER", "LEFT"])
    agg = rng.choice(["COUNT(*)", "SUM(added)", "SUM(delta), COUNT(*)", "MAX(added)"])
    some_value = rng.choice(sorted(set(mapping.values()))).replace("'", "''")
    shape = rng.randrange(5)
    if shape == 0:
        sql = f'SELECT l.v, {agg} FROM wikipedia w {kind} JOIN lookup.{name} l ON w."{column}" = l.k GROUP BY 1'
        return sql, sql.replace(f"lookup.{name}", name)
    if shape == 1:
        other = rng.choice(["isRobot", "channel"])
        sql = (f'SELECT l.v, w."{other}", {agg} FROM wikipedia w {kind} JOIN lookup.{name} l ON l.k = w."{column}" '
               f"WHERE l.v = '{some_value}' GROUP BY 1, 2")
        return sql, sql.replace(f"lookup.{name}", name)
    if shape == 2:
        missing = rng.choice([None, "none"])
        call = f"LOOKUP(\"{column}\", '{name}'" + (f", '{missing}')" if missing else ")")
        sql = f"SELECT {call}, {agg} FROM wikipedia GROUP BY 1"
        value = f"COALESCE(l.v, '{missing}')" if missing else "l.v"
        return sql, f'SELECT {value}, {agg} FROM wikipedia w LEFT JOIN {name} l ON w."{column}" = l.k GROUP BY 1'
    if shape == 3:
        sql = f"SELECT COUNT(*) FROM wikipedia WHERE LOOKUP(\"{column}\", '{name}') = '{some_value}'"
        return sql, f"SELECT COUNT(*) FROM wikipedia w JOIN {name} l ON w.\"{column}\" = l.k WHERE l.v = '{some_value}'"
    key = rng.choice(["channel", "countryName"])
    sql = (f'SELECT w.isRobot, SUM(s.n), COUNT(*) FROM wikipedia w {kind} JOIN '
           f'(SELECT "{key}", COUNT(*) AS n FROM wikipedia GROUP BY 1) s ON w."{key}" = s."{key}" GROUP BY 1')
    return sql, sql


def main() -> None:
    url, data, seed, cases = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    con = duck(data)
    lookups = make_lookups(rng, con, url)
    passed, failure = 0, None
    for n in range(cases):
        sql, duck_sql = case(rng, lookups)
        status, text = post(url, "/druid/v2/sql", {"query": sql, "resultFormat": "array"})
        if status != 200:
            failure = {"case": n, "sql": sql, "error": f"{status} {text[:300]}"}
            break
        ours = [[plain(v) for v in row] for row in json.loads(text)]
        theirs = [[plain(v) for v in row] for row in con.execute(duck_sql).fetchall()]
        difference = compare(ours, theirs, "set")
        if difference:
            failure = {"case": n, "sql": sql, "duckdb": duck_sql, "difference": difference}
            break
        passed += 1
    json.dump({"seed": seed, "passed": f"{passed} of {cases}", "failure": failure}, sys.stdout, indent=1)
    sys.exit(1 if failure else 0)


if __name__ == "__main__":
    main()
