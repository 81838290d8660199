"""A supervisor monitor as Druid operators write them: standard library only, Druid's routes and fields.

Usage: druid_lag_monitor.py URL MAX_LAG
Lists the supervisors (GET /druid/indexer/v1/supervisor), reads each one's status report
(GET /druid/indexer/v1/supervisor/{id}/status) and prints one JSON line per supervisor with
payload.detailedState, payload.healthy and payload.aggregateLag. Exits 2 if any supervisor is
unhealthy or lags by more than MAX_LAG records, else 0.
"""

import json
import sys
import urllib.parse
import urllib.request


def get(url: str):
    with urllib.request.urlopen(url, timeout=30) as answer:
        return json.load(answer)


def main() -> int:
    base, max_lag = sys.argv[1].rstrip("/"), int(sys.argv[2])
    alarm = False
    for supervisor in get(f"{base}/druid/indexer/v1/supervisor"):
        report = get(f"{base}/druid/indexer/v1/supervisor/{urllib.parse.quote(supervisor, safe='')}/status")
        payload = report["payload"]
        lag = payload.get("aggregateLag") or 0
        healthy = bool(payload["healthy"])
        print(json.dumps({"id": report["id"], "state": payload["detailedState"], "healthy": healthy, "lag": lag}))
        alarm = alarm or not healthy or lag > max_lag
    return 2 if alarm else 0


if __name__ == "__main__":
    sys.exit(main())
