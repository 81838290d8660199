#!/usr/bin/env bash
# Installs what the console's browser test drives (functions/cli/tests/cli/console_browser.rs):
# Debian's Chromium and its WebDriver, /usr/bin/chromium and /usr/bin/chromedriver, and the font
# `sluice bench cost --plot` and its test lay text out with (fonts-dejavu-core). Idempotent:
# nothing is fetched when all three are there and the two of one version. tests/run.sh runs it in the
# background while the workspace builds. Needs root (or sudo) and a Debian mirror.
set -euo pipefail
log() { echo "tests/browser/install.sh: $*" >&2; }

version() { "$1" --version 2>/dev/null | grep -oE '[0-9]+(\.[0-9]+){3}' | head -n1; }
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver && -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]] \
  && [[ -n "$(version /usr/bin/chromium)" && "$(version /usr/bin/chromium)" == "$(version /usr/bin/chromedriver)" ]]; then
  exit 0
fi
log "installing chromium and chromium-driver from Debian (once)"
"$(dirname "$0")/../../infra/debian-install.sh" chromium chromium-driver fonts-dejavu-core
log "$(/usr/bin/chromium --version) and $(/usr/bin/chromedriver --version | head -n1)"
