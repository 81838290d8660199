#!/usr/bin/env bash
# Starts, on 127.0.0.1 only, a Kafka-protocol broker on :9092 (tansu, SQLite storage) and an S3 +
# DynamoDB endpoint on :4566 (moto_server), creates the bucket and table through the same init
# hook LocalStack runs, and prints the environment as `export` lines:
#     eval "$(localstack/up.sh)"
# Idempotent: services already running (by their PID files) are reused. Tools are installed
# once into ${SLUICE_TOOLS_CACHE:-~/.cache/sluice} and reused. Logs and PID files live in
# ${SLUICE_RUN_DIR:-.sluice/services}. Stop with localstack/down.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
cache="${SLUICE_TOOLS_CACHE:-$HOME/.cache/sluice}"
run="${SLUICE_RUN_DIR:-$root/.sluice/services}"
tansu_version="0.6.0"
moto_version="5.2.5"
duckdb_version="2.0.1"
pydruid_version="0.6.9"
sqlalchemy_version="2.0.44"
confluent_kafka_version="2.16.1"
msk_signer_version="1.0.2"
plywood_version="0.33.3"
plywood_requester_version="3.0.2"
kafka_port="${SLUICE_KAFKA_PORT:-9092}"
aws_port="${SLUICE_AWS_PORT:-4566}"
bucket="${SLUICE_BUCKET:-sluice-local}"
table="${SLUICE_TABLE:-sluice-local}"
mkdir -p "$cache/tools" "$run"
log() { echo "localstack/up.sh: $*" >&2; }

# Alive: the PID exists and is not a zombie (a killed process nobody has reaped yet).
alive() {
  [[ -f "$run/$1.pid" ]] || return 1
  local pid state
  pid=$(cat "$run/$1.pid")
  [[ -r "/proc/$pid/stat" ]] || return 1
  state=$(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null | cut -c1) || return 1
  [[ -n "$state" && "$state" != Z ]]
}
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_for() {
  local name=$1 port=$2
  for _ in $(seq 1 150); do
    if port_open "$port"; then return 0; fi
    if ! alive "$name"; then log "$name exited; its log:"; tail -n 30 "$run/$name.log" >&2; return 1; fi
    sleep 0.2
  done
  log "$name did not open port $port in 30 s; its log:"; tail -n 30 "$run/$name.log" >&2; return 1
}

# Tools: the tansu broker built from crates.io, moto_server and the AWS CLI in their own venv,
# and in another the Python clients the tests check answers and records with: DuckDB (the query
# oracle), pydruid (a Druid client, with its SQLAlchemy dialect), confluent-kafka (Confluent's
# serializers, which write the Avro and Protobuf records of the format tests) and AWS's MSK IAM signer (the
# tokens Sluice makes are checked against its); and from npm, Turnilo's engine (plywood).
tansu="$cache/tools/bin/tansu"
if [[ ! -x "$tansu" ]] || [[ "$("$tansu" --version 2>/dev/null)" != *"$tansu_version"* ]]; then
  log "building tansu $tansu_version from crates.io (a few minutes, once)"
  # Its own temporary build folder: tests/run.sh's shared CARGO_TARGET_DIR would make this
  # build wait for the functions' build (cargo locks a build folder) instead of overlapping it.
  # A test broker needs no full optimisation: opt-level 1 builds it in less CPU time.
  env -u CARGO_TARGET_DIR CARGO_PROFILE_RELEASE_OPT_LEVEL=1 \
    cargo install tansu --version "$tansu_version" --locked --features libsql --root "$cache/tools" >&2
fi
venv="$cache/venv-moto"
if [[ ! -x "$venv/bin/moto_server" ]] || ! "$venv/bin/python" -c "import moto, sys; sys.exit(moto.__version__ != '$moto_version')" 2>/dev/null; then
  log "installing moto $moto_version and the AWS CLI into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "moto[server,s3,dynamodb]==$moto_version" awscli >&2
fi
query_venv="$cache/venv-query"
if ! "$query_venv/bin/python" -c "import sys, importlib.metadata as m, google.protobuf; sys.exit((m.version('duckdb'), m.version('pydruid'), m.version('sqlalchemy'), m.version('confluent-kafka'), m.version('aws-msk-iam-sasl-signer-python')) != ('$duckdb_version', '$pydruid_version', '$sqlalchemy_version', '$confluent_kafka_version', '$msk_signer_version'))" 2>/dev/null; then
  log "installing duckdb $duckdb_version, pydruid $pydruid_version, sqlalchemy $sqlalchemy_version, confluent-kafka $confluent_kafka_version and aws-msk-iam-sasl-signer-python $msk_signer_version into $query_venv"
  python3 -m venv "$query_venv"
  "$query_venv/bin/pip" install --quiet "duckdb==$duckdb_version" "pydruid==$pydruid_version" "sqlalchemy==$sqlalchemy_version" \
    "confluent-kafka[avro,protobuf,schemaregistry]==$confluent_kafka_version" "aws-msk-iam-sasl-signer-python==$msk_signer_version" >&2
fi

# Turnilo's query engine, plywood, with its Druid requester (npm): a Druid tool the tests run
# against `sluice serve` as it is.
node_tools="$cache/node-tools"
installed() { node -e "process.exit(require('$node_tools/node_modules/$1/package.json').version === '$2' ? 0 : 1)" 2>/dev/null; }
if ! installed plywood "$plywood_version" || ! installed plywood-druid-requester "$plywood_requester_version"; then
  log "installing plywood $plywood_version and plywood-druid-requester $plywood_requester_version into $node_tools"
  mkdir -p "$node_tools"
  npm install --prefix "$node_tools" --no-audit --no-fund --no-save --silent \
    "plywood@$plywood_version" "plywood-druid-requester@$plywood_requester_version" >&2
fi

if alive tansu; then
  log "tansu already running (pid $(cat "$run/tansu.pid"))"
else
  if port_open "$kafka_port"; then log "port $kafka_port is taken by another process"; exit 1; fi
  # tansu wants a relative SQLite path: run it from the run folder.
  (cd "$run" && exec nohup "$tansu" broker \
      --storage-engine "sqlite://tansu.db" \
      --listener-url "tcp://127.0.0.1:$kafka_port" \
      --advertised-listener-url "tcp://127.0.0.1:$kafka_port" \
      > tansu.log 2>&1 < /dev/null) &
  echo $! > "$run/tansu.pid"
  wait_for tansu "$kafka_port"
  log "tansu listening on 127.0.0.1:$kafka_port (pid $(cat "$run/tansu.pid"))"
fi

if alive moto; then
  log "moto_server already running (pid $(cat "$run/moto.pid"))"
else
  if port_open "$aws_port"; then log "port $aws_port is taken by another process"; exit 1; fi
  # One request thread: see moto_serial.py.
  nohup "$venv/bin/python" "$here/moto_serial.py" -H 127.0.0.1 -p "$aws_port" > "$run/moto.log" 2>&1 < /dev/null &
  echo $! > "$run/moto.pid"
  wait_for moto "$aws_port"
  log "moto_server listening on 127.0.0.1:$aws_port (pid $(cat "$run/moto.pid"))"
fi

export AWS_ENDPOINT_URL="http://127.0.0.1:$aws_port" AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
  AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test SLUICE_BUCKET="$bucket" SLUICE_TABLE="$table"
PATH="$venv/bin:$PATH"
for hook in "$here"/init/ready.d/*.sh; do
  bash "$hook" >&2
done

cat <<ENV
export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL
export AWS_REGION=us-east-1
export AWS_DEFAULT_REGION=us-east-1
export AWS_ACCESS_KEY_ID=test
export AWS_SECRET_ACCESS_KEY=test
export SLUICE_STORAGE=s3://$bucket/sluice
export SLUICE_METADATA=dynamodb://$table
export SLUICE_KAFKA=127.0.0.1:$kafka_port
export SLUICE_KAFKA_SQLITE=$(cd "$run" && pwd)/tansu.db
export SLUICE_PYTHON=$query_venv/bin/python
export SLUICE_PLYWOOD=$node_tools/node_modules
ENV
