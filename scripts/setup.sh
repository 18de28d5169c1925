#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks to build and test wirestamp. Idempotent and quiet when
# everything is already there.
set -euo pipefail

# Build: clang-19, libelf-dev, zlib1g-dev, pkg-config, make and a C compiler build bpf/ (vendored libbpf +
# BPF C); libpcap-dev the pcap crate. Tests: iproute2 makes the veth pairs of the namespace tests, linuxptp's ptp4l and pmc are a real PTP peer; tshark,
# capinfos (wireshark-common), tcpdump, HdrHistogram's Java HistogramLogProcessor and Python's csv module are
# oracles; ethtool turns an interface's offloads on and off.
apt_pkgs=(clang-19 libelf-dev libpcap-dev pkg-config zlib1g-dev make gcc libc6-dev tshark wireshark-common tcpdump
  gzip zstd iproute2 linuxptp util-linux default-jre-headless libhdrhistogram-java ethtool python3)
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
