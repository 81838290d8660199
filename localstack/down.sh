#!/usr/bin/env bash
# Stops exactly the processes localstack/up.sh started, by their PID files.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
run="${SLUICE_RUN_DIR:-$root/.sluice/services}"
for name in tansu moto; do
  pidfile="$run/$name.pid"
  [[ -f "$pidfile" ]] || continue
  pid=$(cat "$pidfile")
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then kill -9 "$pid"; fi
    echo "localstack/down.sh: stopped $name (pid $pid)" >&2
  fi
  rm -f "$pidfile"
done
