"""Druid's tutorial queries through pydruid, a Druid client from PyPI, against a Druid API.

Usage: tutorial_queries.py URL DATASOURCE
Runs the tutorial's topN (top pages), timeseries (lines deleted per hour) and groupBy (added
per channel, top five) with pydruid's query builders, and prints their results as one JSON
object {"topn": ..., "timeseries": ..., "groupby": ...}.
"""

import json
import sys
import urllib.request  # noqa: F401 (pydruid 0.6.9 calls urllib.request without importing it)

from pydruid.client import PyDruid
from pydruid.utils.aggregators import count, longsum


def main() -> None:
    url, datasource = sys.argv[1], sys.argv[2]
    client = PyDruid(url, "druid/v2")
    day = "2015-09-12/2015-09-13"
    topn = client.topn(
        datasource=datasource,
        granularity="all",
        intervals=day,
        aggregations={"count": count("page")},
        dimension="page",
        metric="count",
        threshold=10,
    )
    timeseries = client.timeseries(
        datasource=datasource,
        granularity="hour",
        intervals="2015-09-12T00:00:00.000Z/2015-09-13T00:00:00.001Z",
        aggregations={"LinesDeleted": longsum("deleted")},
    )
    groupby = client.groupby(
        datasource=datasource,
        granularity="all",
        intervals="2015-09-12T00:00:00.000Z/2015-09-13T00:00:00.001Z",
        dimensions=["channel"],
        aggregations={"added": longsum("added")},
        limit_spec={
            "type": "default",
            "limit": 5,
            "columns": [{"dimension": "added", "direction": "descending", "dimensionOrder": "numeric"}],
        },
    )
    json.dump({"topn": topn.result, "timeseries": timeseries.result, "groupby": groupby.result}, sys.stdout)


if __name__ == "__main__":
    main()
