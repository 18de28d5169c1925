#!/usr/bin/env bash
# wirestamp's main job on a built-in default: generate a small capture, then read it back.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo build --release --locked -p wirestamp
exec target/release/wirestamp demo "$@"
