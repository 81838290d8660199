#!/usr/bin/env bash
# Builds the seven functions (six binaries: api serves two) with `sam build` (cargo-lambda, release, stripped) into .aws-sam/build,
# one `bootstrap` per function (SAM_BUILD_MODE=debug: a debug build, as the tests use). Extra
# arguments go to sam build (e.g. --parameter-overrides Architecture=x86_64). The template's
# default architecture is arm64: on an x86_64 host, infra/cross.sh provides the cross
# compilers librdkafka is built with.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(infra/tools.sh):$PATH"
export SAM_CLI_TELEMETRY=0
if [[ " $* " != *"Architecture=x86_64"* && $(uname -m) != aarch64 ]]; then
  eval "$(infra/cross.sh)"
fi
# Lambda binaries carry no symbols either: only what the function runs.
export CARGO_PROFILE_RELEASE_STRIP=symbols
sam build --template-file template.yaml "$@"
ls -l .aws-sam/build/*/bootstrap >&2
