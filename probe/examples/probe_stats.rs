//! `probe_stats SESSION [--interval-ms N] [--count N] [--once] [--json]`: the `wirestamp probe-stats`
//! command as a standalone example (the daemon's CLI wires the same `probe_stats` function).

use std::time::Duration;

use wirestamp_probe::reader::stats::{ProbeStatsArgs, probe_stats};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(session) = args.first().cloned() else {
        eprintln!("usage: probe_stats SESSION [--interval-ms N] [--count N] [--once] [--json]");
        std::process::exit(2);
    };
    let num = |name: &str| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map(|v| {
            v.parse::<u64>().unwrap_or_else(|_| {
                eprintln!("{name}: not a number: {v}");
                std::process::exit(2)
            })
        })
    };
    let a = ProbeStatsArgs {
        session,
        interval: Duration::from_millis(num("--interval-ms").unwrap_or(1000)),
        count: num("--count"),
        once: args.iter().any(|a| a == "--once"),
        json: args.iter().any(|a| a == "--json"),
    };
    if let Err(e) = probe_stats(a, &mut std::io::stdout().lock()) {
        eprintln!("probe_stats: {e}");
        std::process::exit(1);
    }
}
