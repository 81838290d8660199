#!/usr/bin/env bash
# Makes this x86_64 machine build and run the arm64 (Graviton) Lambda binaries: Rust's
# aarch64-unknown-linux-gnu standard library (rustup), Debian's aarch64 cross compilers for
# librdkafka (its `configure` takes CC, CXX and AR, not the per-target variables
# cargo-lambda sets for the `cc` crate, so without them it is built for the host), and
# qemu-user to run the binaries in tests. Installs what is missing (apt-get needs root or
# sudo), then prints the variables to export for the build.
set -euo pipefail
packages=()
command -v aarch64-linux-gnu-gcc >/dev/null || packages+=(gcc-aarch64-linux-gnu)
command -v aarch64-linux-gnu-g++ >/dev/null || packages+=(g++-aarch64-linux-gnu)
command -v qemu-aarch64-static >/dev/null || packages+=(qemu-user-static)
if (( ${#packages[@]} )); then
  echo "infra/cross.sh: installing ${packages[*]} from Debian" >&2
  "$(dirname "$0")/debian-install.sh" "${packages[@]}"
fi
rustup target list --installed | grep -qx aarch64-unknown-linux-gnu \
  || rustup target add aarch64-unknown-linux-gnu >&2
echo "export CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ AR=aarch64-linux-gnu-ar"
