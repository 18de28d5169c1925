#!/usr/bin/env bash
# The whole test suite: formatting, lints, doc links, every crate's unit and integration tests (those against
# ../shared/data included; they fail loudly when that folder is missing).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all --check
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked
cargo test --workspace --locked
