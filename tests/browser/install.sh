#!/usr/bin/env bash
# Installs what the console's browser test drives (functions/cli/tests/cli/console_browser.rs):
# Debian's Chromium and its WebDriver, /usr/bin/chromium and /usr/bin/chromedriver. Idempotent:
# nothing is fetched when both are there and of one version. tests/run.sh runs it in the
# background while the workspace builds. Needs root (or sudo) and a Debian mirror.
set -euo pipefail
log() { echo "tests/browser/install.sh: $*" >&2; }

version() { "$1" --version 2>/dev/null | grep -oE '[0-9]+(\.[0-9]+){3}' | head -n1; }
if [[ -x /usr/bin/chromium && -x /usr/bin/chromedriver ]] \
  && [[ -n "$(version /usr/bin/chromium)" && "$(version /usr/bin/chromium)" == "$(version /usr/bin/chromedriver)" ]]; then
  exit 0
fi
sudo=()
if (( EUID != 0 )); then
  command -v sudo > /dev/null || { log "chromium is missing and this is not root (no sudo to install it)"; exit 1; }
  sudo=(sudo)
fi
log "installing chromium and chromium-driver from Debian (once)"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine's package lists may be stale or absent.
"${sudo[@]}" apt-get update -qq >&2
"${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium chromium-driver fonts-dejavu-core >&2
log "$(/usr/bin/chromium --version) and $(/usr/bin/chromedriver --version | head -n1)"
