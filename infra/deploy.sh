#!/usr/bin/env bash
# Lints, builds and deploys the stack with the defaults of samconfig.toml (`--guided` on the
# first deployment asks for the parameters and saves them). Needs AWS credentials.
set -euo pipefail
cd "$(dirname "$0")/.."
infra/lint.sh
infra/build.sh
PATH="$(infra/tools.sh):$PATH"
export SAM_CLI_TELEMETRY=0
sam deploy "$@"
