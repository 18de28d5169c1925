//! Logging: `tracing` to stderr, filtered by `--log` or `RUST_LOG` (default `warn`). Hot loops never log;
//! they count, and the counts are reported.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

pub fn init(level: Option<&str>) {
    let filter = match level {
        Some(l) => EnvFilter::new(l),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    // Colour codes only for a terminal: a log redirected to a file or a pipe stays plain text.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false)
        .try_init();
}
