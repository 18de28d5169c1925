#!/usr/bin/env bash
# Profile-guided builds of wirestamp (rustc's -Cprofile-generate / -Cprofile-use).
#
#   scripts/pgo.sh build   target/pgo/release/wirestamp, trained on synth captures run through
#                          `analyze` (both rules, pcap and pcapng, one and several messages per packet)
#   scripts/pgo.sh bench   the analyze bench (daemon/benches/analyze.rs), built with the profile of a
#                          short run of itself, then run with this environment (WIRESTAMP_BENCH_*)
#
# Profiles only move code (which branch falls through, what is inlined, what is cold): results are the
# same as a plain build's, and the bench's floor is trained by the same run as the analysis, so its
# ratios stay paired between like builds. Needs llvm-profdata of rustc's own LLVM (the llvm-tools
# component; installed here with rustup when missing). Each build is a full one (about 5-7 minutes on
# 2 cores), in target/pgo-gen and target/pgo, apart from the usual target/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
mode=${1:-}
case "$mode" in
  build | bench) ;;
  *)
    echo "usage: scripts/pgo.sh build|bench   (see the comment at the top of this script)" >&2
    exit 2
    ;;
esac

host=$(rustc -vV | sed -n 's/^host: //p')
profdata="$(rustc --print sysroot)/lib/rustlib/$host/bin/llvm-profdata"
if [ ! -x "$profdata" ]; then
  echo "pgo: llvm-profdata missing; installing rustup's llvm-tools component" >&2
  rustup component add llvm-tools >&2
fi
[ -x "$profdata" ] || { echo "pgo: $profdata still missing: install the llvm-tools component of $(rustc -V)" >&2; exit 1; }

raw="$root/target/pgo-data/raw"
merged="$root/target/pgo-data/merged.profdata"
rm -rf "$raw" && mkdir -p "$raw"
gen=(env "RUSTFLAGS=${RUSTFLAGS:-} -Cprofile-generate=$raw" cargo)
use=(env "RUSTFLAGS=${RUSTFLAGS:-} -Cprofile-use=$merged -Cllvm-args=-pgo-warn-missing-function=false" WIRESTAMP_PGO=1 cargo)

if [ "$mode" = build ]; then
  echo "pgo: instrumented build (target/pgo-gen)" >&2
  "${gen[@]}" build --release --locked -p wirestamp --target-dir target/pgo-gen
  bin=target/pgo-gen/release/wirestamp
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  echo "pgo: training on synth captures" >&2
  "$bin" synth --packets 100000 --seed 11 "$work/t.pcapng" >/dev/null
  "$bin" synth --packets 100000 --seed 12 --pcap "$work/t.pcap" >/dev/null
  "$bin" synth --packets 100000 --seed 13 --pcap --max-msgs 1 "$work/one.pcap" >/dev/null
  for f in "$work/t.pcapng" "$work/t.pcap" "$work/one.pcap"; do
    "$bin" analyze -q --match 'token:T(\d+)' "$f" >/dev/null
    "$bin" analyze -q "$f" >/dev/null
  done
  "$profdata" merge -o "$merged" "$raw"
  echo "pgo: optimised build (target/pgo)" >&2
  "${use[@]}" build --release --locked -p wirestamp --target-dir target/pgo
  echo "pgo: built target/pgo/release/wirestamp" >&2
else
  echo "pgo: instrumented bench (target/pgo-gen), trained on a 200,000-frame run of itself" >&2
  "${gen[@]}" bench --locked -p wirestamp --bench analyze --target-dir target/pgo-gen --no-run
  (cd daemon && WIRESTAMP_BENCH_PACKETS=200000 WIRESTAMP_BENCH_RUNS=1 \
    WIRESTAMP_BENCH_TSHARK=0 "${gen[@]}" bench --locked -p wirestamp --bench analyze --target-dir ../target/pgo-gen >/dev/null)
  "$profdata" merge -o "$merged" "$raw"
  echo "pgo: optimised bench (target/pgo)" >&2
  "${use[@]}" bench --locked -p wirestamp --bench analyze --target-dir target/pgo
fi
