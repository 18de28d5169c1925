#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test wirestamp. Idempotent and quiet when
# everything is already there.
set -euo pipefail

apt_pkgs=(clang-19 libelf-dev libpcap-dev pkg-config zlib1g-dev make tshark tcpdump gzip zstd iproute2 linuxptp util-linux)
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
  echo "setup: cargo not found; install Rust (rustup) first" >&2
  exit 1
fi
