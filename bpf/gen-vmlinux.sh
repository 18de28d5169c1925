#!/usr/bin/env bash
# Regenerates src/bpf/vmlinux.h from the running kernel's BTF (needs bpftool: apt-get install bpftool).
# Run only to pick up newer kernel types; the build itself never needs bpftool.
set -euo pipefail
cd "$(dirname "$0")"
bpftool btf dump file /sys/kernel/btf/vmlinux format c > src/bpf/vmlinux.h
echo "wrote src/bpf/vmlinux.h from $(uname -r)"
