//! A trading-app stand-in for the robustness tests and for trying `probe_stats`: attaches to a session and
//! stamps from N threads.
//!
//! usage: probe-producer SESSION [--create] [--threads N] [--count N] [--gap-ns NS] [--forever] [--id N]
//!        [--values-only] [--threads-cap N] [--ring N] [--point-name NAME]
//! Each thread t (u = id + t) stamps, for i in 0..count: `value(100 + u, i)` then, unless --values-only, a
//! span `begin(1, key)`, `step(1, 1, key)`, `end(1, key)` with key = u << 32 | i; then busy-waits gap-ns. Prints "ready" once attached and
//! "done N" (stamps issued, all threads) at the end. Exit 3 with the error on stderr if attaching fails.

use std::io::Write;
use std::time::{Duration, Instant};

use wirestamp_probe::{AttachOptions, CreateOptions, Geometry};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(session) = args.first().cloned() else {
        eprintln!("usage: probe-producer SESSION [--create] [--threads N] [--count N] [--gap-ns NS] [--forever]");
        std::process::exit(2);
    };
    let flag = |name: &str| args.iter().any(|a| a == name);
    let num = |name: &str, default: u64| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).map_or(default, |v| {
            v.parse().unwrap_or_else(|_| {
                eprintln!("{name}: not a number: {v}");
                std::process::exit(2)
            })
        })
    };
    let threads = num("--threads", 1);
    let count = num("--count", 1000);
    let gap_ns = num("--gap-ns", 0);
    let forever = flag("--forever");
    let id = num("--id", 0);
    let values_only = flag("--values-only");
    let create = flag("--create").then(|| CreateOptions {
        geometry: Geometry {
            max_threads: num("--threads-cap", 8) as u32,
            ring_capacity: num("--ring", 1 << 16) as u32,
        },
        ..Default::default()
    });
    if let Err(e) = wirestamp_probe::attach(&session, &AttachOptions { create }) {
        eprintln!("probe-producer: {e}");
        std::process::exit(3);
    }
    let point_name = args.iter().position(|a| a == "--point-name").and_then(|i| args.get(i + 1));
    let _ = wirestamp_probe::name_point(1, point_name.map_or("tick_to_trade", String::as_str));
    let _ = wirestamp_probe::name_stage(1, 1, "decode");
    println!("ready");
    let _ = std::io::stdout().flush();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            std::thread::spawn(move || {
                let (u, mut i, mut stamps) = (id + t, 0u64, 0u64);
                while forever || i < count {
                    wirestamp_probe::value(100 + u as u16, i);
                    stamps += 1;
                    if !values_only {
                        let key = u << 32 | i;
                        wirestamp_probe::begin(1, key);
                        wirestamp_probe::step(1, 1, key);
                        wirestamp_probe::end(1, key);
                        stamps += 3;
                    }
                    i += 1;
                    if gap_ns > 0 {
                        let until = Instant::now() + Duration::from_nanos(gap_ns);
                        while Instant::now() < until {
                            std::hint::spin_loop();
                        }
                    }
                }
                stamps
            })
        })
        .collect();
    let total: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    wirestamp_probe::detach();
    println!("done {total}");
}
