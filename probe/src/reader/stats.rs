//! Per-point and per-stage statistics (HdrHistogram, 3 significant digits, exact min and max) and the
//! `probe-stats` command: a live table per point and stage, as slick-perfmon's summary prints it.
//!
//! ```text
//! lost 0  corrupt 0  ring resyncs 0  producers gone 0 (mid-write 0)  ...
//! point            stage          count   min_ns   p50_ns   p99_ns  p99.9_ns   max_ns  orphans  abandoned  backwards
//! tick_to_trade    decode          1000       21       25       40        61      180        -          -          -
//! tick_to_trade    end             1000       ...
//! tick_to_trade    total           1000       ...                                                0          0          0
//! queue_depth      value           1000        0      499      989       998      999        -          -          -
//! ```
//!
//! Latencies are recorded in TSC ticks and converted with the current calibration fit at print time;
//! `value` rows are the numbers as recorded. Anomaly counters are per point, on its `total` row; `lost`
//! (records overwritten before the reader got to them) is session-wide, on the line above the table: a
//! lost record's point is unknown, so no row can own it.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::calibrate::{Calibrator, Fit};
use super::spans::{Event, PointCounters};
use super::{Reader, ReaderConfig};
use crate::error::{ProbeError, Result};
use crate::layout::END_STAGE;
use crate::shm;

/// Stage key of a span's total.
const TOTAL: u16 = 256;
/// Stage key of value samples.
const VALUE: u16 = 257;

/// One distribution: HdrHistogram plus the exact extremes.
#[derive(Debug, Clone)]
pub struct Dist {
    pub hist: Histogram<u64>,
    pub min: u64,
    pub max: u64,
}

impl Dist {
    fn new() -> Self {
        Dist { hist: Histogram::new(3).expect("3 significant digits is valid"), min: u64::MAX, max: 0 }
    }

    fn record(&mut self, v: u64) {
        // Auto-resizing histogram: recording cannot fail for a u64.
        let _ = self.hist.record(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Quantile `q`, never above the exact maximum.
    pub fn quantile(&self, q: f64) -> u64 {
        self.hist.value_at_quantile(q).min(self.max)
    }
}

/// Accumulates reader events.
#[derive(Debug, Default)]
pub struct Stats {
    /// (point, stage | TOTAL | VALUE) -> distribution (ticks for latencies, raw for values).
    pub dists: BTreeMap<(u16, u16), Dist>,
    /// Links seen.
    pub links: u64,
}

impl Stats {
    /// Records one event.
    pub fn record(&mut self, e: &Event) {
        let (key, v) = match *e {
            Event::Interval { point, stage, start_tsc, end_tsc, .. } => ((point, stage as u16), end_tsc - start_tsc),
            Event::Total { point, begin_tsc, end_tsc, .. } => ((point, TOTAL), end_tsc - begin_tsc),
            Event::Value { point, value } => ((point, VALUE), value),
            Event::Link { .. } => {
                self.links += 1;
                return;
            }
        };
        self.dists.entry(key).or_insert_with(Dist::new).record(v);
    }
}

/// One line of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub point: u16,
    pub point_name: String,
    pub stage: String,
    /// "latency" (figures in ns) or "value" (figures as recorded).
    pub kind: &'static str,
    pub count: u64,
    pub min: u64,
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
    /// Per-point anomalies, on the total row only.
    pub counters: Option<PointCounters>,
}

/// Names from the segment: point -> name, (point, stage) -> name.
#[derive(Debug, Default, Clone)]
pub struct Names {
    pub points: BTreeMap<u16, String>,
    pub stages: BTreeMap<(u16, u8), String>,
}

impl Names {
    /// Reads the segment's name table.
    pub fn read(m: &shm::Mapping) -> Self {
        let mut n = Names::default();
        for (point, stage, name) in shm::read_names(m) {
            match stage {
                None => n.points.insert(point, name),
                Some(s) => n.stages.insert((point, s), name),
            };
        }
        n
    }

    fn point(&self, p: u16) -> String {
        self.points.get(&p).cloned().unwrap_or_else(|| format!("point_{p}"))
    }

    fn stage(&self, p: u16, s: u16) -> String {
        match s {
            TOTAL => "total".into(),
            VALUE => "value".into(),
            _ => match self.stages.get(&(p, s as u8)) {
                Some(n) => n.clone(),
                None if s == END_STAGE as u16 => "end".into(),
                None => format!("stage_{s}"),
            },
        }
    }
}

/// Builds the table rows: latencies converted with `fit` (ticks if there is none yet).
pub fn rows(stats: &Stats, counters: &BTreeMap<u16, PointCounters>, names: &Names, fit: Option<&Fit>) -> Vec<Row> {
    let ns = |t: u64| fit.map_or(t, |f| f.ticks_to_ns(t));
    let mut out = Vec::new();
    let mut points: Vec<u16> = stats.dists.keys().map(|k| k.0).chain(counters.keys().copied()).collect();
    points.sort_unstable();
    points.dedup();
    for p in points {
        let mut has_total = false;
        for (&(_, s), d) in stats.dists.range((p, 0)..=(p, VALUE)) {
            let value = s == VALUE;
            let conv = |v: u64| if value { v } else { ns(v) };
            has_total |= s == TOTAL;
            out.push(Row {
                point: p,
                point_name: names.point(p),
                stage: names.stage(p, s),
                kind: if value { "value" } else { "latency" },
                count: d.hist.len(),
                min: conv(d.min),
                p50: conv(d.quantile(0.5)),
                p99: conv(d.quantile(0.99)),
                p999: conv(d.quantile(0.999)),
                max: conv(d.max),
                counters: (s == TOTAL).then(|| counters.get(&p).copied().unwrap_or_default()),
            });
        }
        // A point that only produced anomalies still gets a row, so its counts cannot hide.
        if let (false, Some(c)) = (has_total, counters.get(&p)) {
            out.push(Row {
                point: p,
                point_name: names.point(p),
                stage: "total".into(),
                kind: "latency",
                count: 0,
                min: 0,
                p50: 0,
                p99: 0,
                p999: 0,
                max: 0,
                counters: Some(*c),
            });
        }
    }
    out
}

/// Arguments of `probe-stats` (independent of any CLI parser).
#[derive(Debug, Clone)]
pub struct ProbeStatsArgs {
    /// Session name (`/dev/shm/<session>`).
    pub session: String,
    /// Time between tables.
    pub interval: Duration,
    /// Tables to print before returning (None: until the process is stopped).
    pub count: Option<u64>,
    /// Print one table after one interval and return (same as count = 1).
    pub once: bool,
    /// One JSON object per refresh instead of a table.
    pub json: bool,
}

/// Everything one refresh prints.
struct Snapshot<'a> {
    session: &'a str,
    reader: &'a Reader,
    cal: &'a Calibrator,
    rows: Vec<Row>,
    links: u64,
    elapsed: Duration,
}

/// `name` with its control characters escaped (`\n`, `\u{1b}`), and nothing else: "Bob's feed" stays.
fn escape_controls(name: &str) -> String {
    name.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

fn write_table(s: &Snapshot, out: &mut dyn Write) -> std::io::Result<()> {
    let c = s.reader.drain_counters();
    let h = s.reader.drainer().mapping().header();
    let app_pid = h.app_pid.load(std::sync::atomic::Ordering::Relaxed);
    let clock = match s.cal.fit() {
        Some(f) => format!(
            "tsc {}.{:03} MHz ({}), fit error ±{} ns over {} pairs",
            f.freq_hz() / 1_000_000,
            f.freq_hz() / 1000 % 1000,
            if s.cal.invariant { "invariant" } else { "NOT INVARIANT: figures unreliable" },
            f.error_ns(),
            f.samples
        ),
        None => "tsc not calibrated yet: figures in TICKS".into(),
    };
    // The app that made the session may have exited since (its stamps are still read).
    let exited = app_pid != 0 && !std::path::Path::new(&format!("/proc/{app_pid}")).exists();
    writeln!(
        out,
        "wirestamp probe-stats  session {}  app pid {app_pid}{}  after {:.1} s  {clock}",
        s.session,
        if exited { " (exited)" } else { "" },
        s.elapsed.as_secs_f64()
    )?;
    writeln!(
        out,
        "lost {}  corrupt {}  ring resyncs {}  producers gone {} (mid-write {})  no-slot drops {}  open spans {}  \
         links {}  held back {}",
        c.lost,
        c.corrupt_records,
        c.ring_resyncs,
        c.producers_gone,
        c.died_mid_write,
        c.no_slot_drops,
        s.reader.spans().open_spans(),
        s.links,
        s.reader.held_back()
    )?;
    writeln!(
        out,
        "{:<20} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9} {:>9}",
        "point", "stage", "count", "min", "p50", "p99", "p99.9", "max", "orphans", "abandoned", "backwards"
    )?;
    for r in &s.rows {
        let unit = if r.kind == "value" { "" } else { "ns" };
        let f = |v: u64| format!("{v}{unit}");
        let (o, a, b) = match r.counters {
            Some(c) => (c.orphans().to_string(), c.abandoned.to_string(), c.backwards.to_string()),
            None => ("-".into(), "-".into(), "-".into()),
        };
        writeln!(
            out,
            "{:<20} {:<16} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>8} {:>9} {:>9}",
            // Names are the app's: escaped, so that a control character cannot break the table or
            // reach the terminal.
            escape_controls(&r.point_name),
            escape_controls(&r.stage),
            r.count,
            f(r.min),
            f(r.p50),
            f(r.p99),
            f(r.p999),
            f(r.max),
            o,
            a,
            b,
        )?;
    }
    writeln!(out)
}

fn write_json(s: &Snapshot, out: &mut dyn Write) -> std::io::Result<()> {
    let c = s.reader.drain_counters();
    let fit = s.cal.fit().map(|f| {
        serde_json::json!({
            "tsc_hz": f.freq_hz(), "slope_ns_per_tick_q32": f.slope_q32, "offset_tsc": f.x0, "offset_ns": f.y0,
            "error_ns": f.error_ns(), "residual_ns": f.residual_ns, "pairs": f.samples, "span_ns": f.span_ns,
        })
    });
    let rows: Vec<_> = s
        .rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "point": r.point, "point_name": r.point_name, "stage": r.stage, "kind": r.kind,
                "unit": if r.kind == "value" { "" } else if fit.is_some() { "ns" } else { "ticks" },
                "count": r.count, "min": r.min, "p50": r.p50, "p99": r.p99, "p99_9": r.p999, "max": r.max,
                "orphan_steps": r.counters.map(|c| c.orphan_steps), "orphan_ends": r.counters.map(|c| c.orphan_ends),
                "abandoned": r.counters.map(|c| c.abandoned), "backwards": r.counters.map(|c| c.backwards),
                "table_full": r.counters.map(|c| c.table_full), "bad_stages": r.counters.map(|c| c.bad_stages),
            })
        })
        .collect();
    let v = serde_json::json!({
        "session": s.session, "elapsed_ms": s.elapsed.as_millis() as u64, "invariant_tsc": s.cal.invariant,
        "calibration": fit, "links": s.links, "open_spans": s.reader.spans().open_spans(),
        "counters": {
            "delivered": c.delivered, "lost": c.lost, "corrupt_records": c.corrupt_records,
            "ring_resyncs": c.ring_resyncs, "bad_slot_states": c.bad_slot_states,
            "producers_gone": c.producers_gone, "died_mid_write": c.died_mid_write, "no_slot_drops": c.no_slot_drops,
        },
        "rows": rows,
    });
    writeln!(out, "{v}")
}

/// `wirestamp probe-stats SESSION`: drains the session continuously and prints a table (or a JSON line)
/// per point and stage every `interval`, `count` times (or once, or forever).
pub fn probe_stats(args: ProbeStatsArgs, out: &mut dyn Write) -> Result<()> {
    let mut reader = Reader::open(&args.session, ReaderConfig::default())?;
    let mut cal = Calibrator::new(600);
    if !cal.invariant {
        eprintln!(
            "wirestamp probe-stats: WARNING: this CPU does not declare an invariant TSC; latencies are unreliable"
        );
    }
    cal.sample();
    let mut stats = Stats::default();
    let start = Instant::now();
    let refreshes = if args.once { Some(1) } else { args.count };
    let mut printed = 0u64;
    let io_err = |e: std::io::Error| ProbeError::Io {
        what: "writing the table for",
        path: shm::segment_path(&args.session),
        source: e,
    };
    while refreshes.is_none_or(|n| printed < n) {
        let until = Instant::now() + args.interval;
        while Instant::now() < until {
            if reader.poll(&mut |e| stats.record(&e)) == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        cal.sample();
        let names = Names::read(reader.drainer().mapping());
        let counters: BTreeMap<u16, PointCounters> = reader.spans().all_counters().collect();
        let snap = Snapshot {
            session: &args.session,
            reader: &reader,
            cal: &cal,
            rows: rows(&stats, &counters, &names, cal.fit()),
            links: stats.links,
            elapsed: start.elapsed(),
        };
        if args.json { write_json(&snap, out) } else { write_table(&snap, out) }.map_err(io_err)?;
        out.flush().map_err(io_err)?;
        printed += 1;
    }
    Ok(())
}
