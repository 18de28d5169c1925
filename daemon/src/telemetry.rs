//! Logging: `tracing` to stderr, filtered by `--log` or `RUST_LOG` (default `warn`). Hot loops never log;
//! they count, and the counts are reported.

use tracing_subscriber::EnvFilter;

pub fn init(level: Option<&str>) {
    let filter = match level {
        Some(l) => EnvFilter::new(l),
        None => EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
    };
    let _ =
        tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_target(false).try_init();
}
