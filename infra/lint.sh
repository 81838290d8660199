#!/usr/bin/env bash
# Lints the SAM template: `sam validate --lint` (SAM's transform and cfn-lint's rules on the
# transformed template) and cfn-lint on the template itself. Tools come from infra/tools.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
PATH="$(infra/tools.sh):$PATH"
export SAM_CLI_TELEMETRY=0
sam validate --lint --template-file template.yaml
cfn-lint template.yaml
echo "infra/lint.sh: template.yaml passes sam validate --lint and cfn-lint" >&2
