#!/usr/bin/env bash
# Installs Debian packages (apt-get; root, or sudo): `infra/debian-install.sh PACKAGE...`.
# tests/run.sh installs the cross compilers (infra/cross.sh) and Chromium
# (tests/browser/install.sh) at the same time; dpkg takes one installer at a time, so the
# installers take turns on one lock file here, and wait for any other apt-get besides.
set -euo pipefail
(( $# )) || exit 0
sudo=()
if (( EUID != 0 )); then
  command -v sudo > /dev/null || { echo "infra/debian-install.sh: $* missing; not root and no sudo to install them" >&2; exit 1; }
  sudo=(sudo)
fi
exec 9> "${TMPDIR:-/tmp}/sluice-debian-install.lock"
flock 9
wait_lock=(-o DPkg::Lock::Timeout=600)
export DEBIAN_FRONTEND=noninteractive
# A fresh machine's package lists may be stale or absent.
"${sudo[@]}" apt-get "${wait_lock[@]}" update -qq >&2
"${sudo[@]}" apt-get "${wait_lock[@]}" install -y -qq "$@" >&2
