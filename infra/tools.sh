#!/usr/bin/env bash
# Installs the deployment tools once into their own venv under ${SLUICE_TOOLS_CACHE:-~/.cache/sluice}
# (AWS SAM CLI, cargo-lambda with its Zig linker, cfn-lint, all from PyPI) and prints the
# venv's bin folder, for `PATH="$(infra/tools.sh):$PATH"`.
set -euo pipefail
cache="${SLUICE_TOOLS_CACHE:-$HOME/.cache/sluice}"
venv="$cache/venv-sam"
sam_version="1.170.0"
cargo_lambda_version="1.9.2"
cfn_lint_version="1.58.0"
if ! "$venv/bin/sam" --version 2>/dev/null | grep -q "$sam_version" \
  || ! "$venv/bin/cargo-lambda" lambda --version 2>/dev/null | grep -q "$cargo_lambda_version" \
  || ! "$venv/bin/cfn-lint" --version 2>/dev/null | grep -q "$cfn_lint_version"; then
  echo "infra/tools.sh: installing aws-sam-cli $sam_version, cargo-lambda $cargo_lambda_version and cfn-lint $cfn_lint_version into $venv" >&2
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "aws-sam-cli==$sam_version" "cargo-lambda==$cargo_lambda_version" "cfn-lint==$cfn_lint_version" >&2
fi
echo "$venv/bin"
