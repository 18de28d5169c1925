//! `probe_stats` on a session filled by a real producer process with known stamps.

mod common;

use std::process::Command;
use std::time::Duration;

use common::Session;
use wirestamp_probe::reader::stats::{ProbeStatsArgs, probe_stats};
use wirestamp_probe::{CreateOptions, Geometry, shm};

const PRODUCER: &str = env!("CARGO_BIN_EXE_probe-producer");

fn run(s: &Session, json: bool) -> String {
    let mut out = Vec::new();
    let args =
        ProbeStatsArgs { session: s.0.clone(), interval: Duration::from_millis(100), count: None, once: true, json };
    probe_stats(args, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn table_and_json_report_every_stage_and_value() {
    let s = Session::new("stats");
    let opts = CreateOptions { geometry: Geometry { max_threads: 4, ring_capacity: 1 << 14 }, ..Default::default() };
    shm::create(&s.0, &opts).unwrap();
    // 1000 iterations: value(100, i) for i in 0..1000, span begin/step 1/end on point 1.
    let st = Command::new(PRODUCER).arg(&s.0).args(["--count", "1000"]).output().unwrap().status;
    assert!(st.success());
    let table = run(&s, false);
    let line = |stage: &str| {
        table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(stage))
            .unwrap_or_else(|| panic!("no {stage} row:\n{table}"))
    };
    for stage in ["decode", "end", "total"] {
        let f: Vec<&str> = line(stage).split_whitespace().collect();
        assert_eq!((f[0], f[2]), ("tick_to_trade", "1000"), "{table}");
    }
    // Values 0..999: exact min and max, median 499 (within 3 significant digits: exact here).
    let f: Vec<&str> = line("value").split_whitespace().collect();
    assert_eq!(&f[..8], ["point_100", "value", "1000", "0", "499", "989", "998", "999"], "{table}");
    // The total row carries the per-point anomaly counters (none); the session-wide lost (none) is
    // on the line above the table, once, not repeated on every row as if each point had lost it.
    let f: Vec<&str> = line("total").split_whitespace().collect();
    assert_eq!(&f[8..], ["0", "0", "0"], "{table}");
    assert!(table.contains("lost 0  corrupt 0"), "{table}");
    let header = table.lines().find(|l| l.starts_with("point")).expect("a header row");
    assert_eq!(header.split_whitespace().last(), Some("backwards"), "{table}");

    // The JSON form: same session re-read from the start is impossible (consumed), so refill first.
    let st = Command::new(PRODUCER).arg(&s.0).args(["--count", "10"]).output().unwrap().status;
    assert!(st.success());
    let json = run(&s, true);
    let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(v["counters"]["delivered"], 40);
    assert!(v["calibration"]["tsc_hz"].as_u64().unwrap() > 1_000_000_000);
    let rows = v["rows"].as_array().unwrap();
    let total = rows.iter().find(|r| r["stage"] == "total").unwrap();
    assert_eq!((total["count"].as_u64(), total["unit"].as_str()), (Some(10), Some("ns")));
    let value = rows.iter().find(|r| r["kind"] == "value").unwrap();
    assert_eq!((value["min"].as_u64(), value["max"].as_u64()), (Some(0), Some(9)));
}

/// A name is the app's: a control character in it (a newline, an escape sequence) is shown escaped,
/// on the row's line, not written raw to the terminal (it broke the table).
#[test]
fn names_are_escaped_in_the_table() {
    let s = Session::new("names");
    let opts = CreateOptions { geometry: Geometry { max_threads: 4, ring_capacity: 1 << 14 }, ..Default::default() };
    shm::create(&s.0, &opts).unwrap();
    let st =
        Command::new(PRODUCER).arg(&s.0).args(["--count", "10", "--point-name", "t2t\n\x1b[31m"]).status().unwrap();
    assert!(st.success());
    let table = run(&s, false);
    assert!(!table.contains('\x1b'), "{table:?}");
    let total = table.lines().find(|l| l.split_whitespace().nth(1) == Some("total")).expect("a total row");
    assert!(total.starts_with("t2t\\n\\u{1b}[31m"), "{table}");
}

/// The header says when the app that made the session has exited (its stamps are still read): it
/// showed its pid as if it were running.
#[test]
fn an_app_that_exited_is_said_so() {
    let s = Session::new("exited");
    let out = Command::new(PRODUCER).arg(&s.0).args(["--create", "--count", "10"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let table = run(&s, false);
    let header = table.lines().next().unwrap();
    assert!(header.contains(" (exited)  after "), "{header}");
    // The test process made this one: alive.
    let s = Session::new("alive");
    let opts = CreateOptions { geometry: Geometry { max_threads: 4, ring_capacity: 1 << 14 }, ..Default::default() };
    shm::create(&s.0, &opts).unwrap();
    let table = run(&s, false);
    assert!(!table.lines().next().unwrap().contains("exited"), "{table}");
}
