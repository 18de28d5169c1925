//! Per-point and per-stage statistics and the `probe-stats` command.
