#!/usr/bin/env bash
# The indexer's rows/s and Lambda cost per row against the function's memory size.
# Lambda gives a function min(M / 1,769, 6) vCPUs for M MB: each size runs `sluice bench
# indexer` in a cgroup (v1 `cpu` controller, root) whose CFS quota is that share of a core, so
# its threads (the indexing thread, the persist beside it, librdkafka's, and the in-process
# mock broker's, which a deployed indexer does not carry) get the CPU time Lambda would give.
# Sizes above this machine's cores are skipped. Prints, per size, the speed pass (one persist
# per task) and a pass persisting every 16 MiB (persists beside reading): rows/s, GB-seconds
# per million rows, and dollars per billion rows at the x86_64 and arm64 GB-second prices of
# `bench/src/prices.rs` (arm64 at the speed measured here: Graviton's is not).
#
#   bench/memory_sweep.sh [SIZES_MB...]      (default: 512 1024 1769 2654 3538)
set -euo pipefail
cd "$(dirname "$0")/.."
sizes=("$@")
(( ${#sizes[@]} )) || sizes=(512 1024 1769 2654 3538)
cgroups=/sys/fs/cgroup/cpu
if [[ ! -w $cgroups ]]; then
  echo "bench/memory_sweep.sh: needs a writable cgroup v1 cpu controller at $cgroups (run as root)" >&2
  exit 2
fi
cargo build --release -p sluice --locked >&2
sluice="${CARGO_TARGET_DIR:-$PWD/target}/release/sluice"
x86=$(sed -n 's/^pub const LAMBDA_X86_64_GB_SECOND: f64 = \([0-9_.]*\);/\1/p' bench/src/prices.rs | tr -d _)
arm=$(sed -n 's/^pub const LAMBDA_ARM64_GB_SECOND: f64 = \([0-9_.]*\);/\1/p' bench/src/prices.rs | tr -d _)
cores=$(nproc)
work=$(mktemp -d)
group="$cgroups/sluice-sweep-$$"
mkdir "$group"
trap 'rmdir "$group" 2>/dev/null || true; rm -rf "$work"' EXIT
echo "memory_mb vcpus pass rows_per_sec gb_seconds_per_million_rows usd_per_billion_rows_x86_64 usd_per_billion_rows_arm64"
for mb in "${sizes[@]}"; do
  vcpus=$(python3 -c "print(min($mb / 1769, 6))")
  if python3 -c "import sys; sys.exit(0 if $vcpus <= $cores else 1)"; then :; else
    echo "bench/memory_sweep.sh: $mb MB ($vcpus vCPUs) is above this machine's $cores cores: skipped" >&2
    continue
  fi
  period=$(cat "$group/cpu.cfs_period_us")
  quota=$(python3 -c "print(int($vcpus * $period))")
  echo "$quota" > "$group/cpu.cfs_quota_us"
  (cd "$work" && rm -rf .sluice && echo $BASHPID > "$group/cgroup.procs" \
    && exec "$sluice" bench indexer --memory-budgets 16 --json 2>/dev/null) > "$work/out.json"
  python3 - "$mb" "$vcpus" "$x86" "$arm" "$work/out.json" <<'EOF'
import json, sys
mb, vcpus, x86, arm = float(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
out = json.load(open(sys.argv[5]))
for name, p in [("speed", out["speed"]), ("16MiB", out["memory"][0]["pass"])]:
    rate = p["rows"] / p["task_secs"]
    gb_secs = mb / 1024 * 1e6 / rate
    print(f"{mb:.0f} {vcpus:.2f} {name} {rate:.0f} {gb_secs:.2f} {gb_secs * x86 * 1e3:.3f} {gb_secs * arm * 1e3:.3f}")
EOF
done
