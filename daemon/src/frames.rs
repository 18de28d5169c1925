//! `wirestamp frames`: one line per frame with its timestamp, provenance and L3/L4 summary.

use crate::cli::{Format, FramesArgs};
use crate::output::{STDOUT_WRITING, create_output, writing};
use crate::pipeline::{Pipeline, Stamped};
use anyhow::{Context, Result};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::process::ExitCode;
use wirestamp_core::Direction;
use wirestamp_core::analyze::report::{n, one};
use wirestamp_core::dissect::Transport;
use wirestamp_core::trailer::Decoded;

/// Column names, in order; the CSV header row.
pub const COLUMNS: [&str; 22] = [
    "index",
    "time_ns",
    "caplen",
    "wirelen",
    "interface",
    "direction",
    "ts_source",
    "trailer",
    "trailer_time_ns",
    "device",
    "port",
    "src",
    "dst",
    "proto",
    "sport",
    "dport",
    "payload_len",
    "record_time_ns",
    "quality",
    "vlan",
    "anomaly",
    "input",
];

/// One output line. Field names are the column names.
#[derive(Debug, Serialize)]
struct Row {
    index: u64,
    time_ns: Option<i64>,
    caplen: u32,
    wirelen: u32,
    interface: u32,
    /// Absent when unknown.
    direction: Option<&'static str>,
    ts_source: &'static str,
    trailer: Option<&'static str>,
    trailer_time_ns: Option<i64>,
    device: Option<u32>,
    port: Option<u32>,
    src: Option<String>,
    dst: Option<String>,
    proto: Option<u8>,
    sport: Option<u16>,
    dport: Option<u16>,
    payload_len: Option<usize>,
    record_time_ns: Option<i64>,
    /// Absent (null in JSON, as every absent value is) when no flag is set.
    quality: Option<String>,
    /// Absent when the frame has no tag.
    vlan: Option<String>,
    anomaly: Option<String>,
    input: usize,
}

impl Row {
    fn new(index: u64, s: &Stamped<'_>) -> Row {
        let (f, d, stamp) = (&s.frame, &s.dissection, s.stamp());
        let record_time = f.has_ts().then_some(f.ts_ns);
        let (time_ns, ts_source) = (s.best_time(), s.ts_source());
        let direction = if f.direction == Direction::Unknown { d.link_direction } else { f.direction };
        let (sport, dport) = d.transport.ports().unzip();
        let quality = Some(s.quality().names()).filter(|q| !q.is_empty());
        let vlans = &d.vlans[..(d.vlan_count as usize).min(2)];
        let vlan = (!vlans.is_empty()).then(|| vlans.iter().map(u16::to_string).collect::<Vec<_>>().join("/"));
        Row {
            index,
            time_ns,
            caplen: f.caplen(),
            wirelen: f.wire_len,
            interface: f.interface,
            direction: Some(direction.name()).filter(|d| !d.is_empty()),
            ts_source: ts_source.name(),
            trailer: stamp.map(|s| s.kind.name()),
            trailer_time_ns: stamp.map(|s| s.time_ns),
            device: stamp.and_then(|s| s.device),
            port: stamp.and_then(|s| s.port),
            src: d.ip.map(|ip| ip.src.to_string()),
            dst: d.ip.map(|ip| ip.dst.to_string()),
            proto: d.ip.map(|ip| ip.proto),
            sport,
            dport,
            payload_len: (!matches!(d.transport, Transport::None)).then_some(d.payload_len),
            record_time_ns: record_time,
            quality,
            vlan,
            anomaly: d.anomaly.map(|a| a.to_string()),
            input: s.input,
        }
    }

    fn write_csv(&self, w: &mut dyn Write) -> std::io::Result<()> {
        fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
            v.as_ref().map(T::to_string).unwrap_or_default()
        }
        writeln!(
            w,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            self.index,
            opt(&self.time_ns),
            self.caplen,
            self.wirelen,
            self.interface,
            opt(&self.direction),
            self.ts_source,
            opt(&self.trailer),
            opt(&self.trailer_time_ns),
            opt(&self.device),
            opt(&self.port),
            opt(&self.src),
            opt(&self.dst),
            opt(&self.proto),
            opt(&self.sport),
            opt(&self.dport),
            opt(&self.payload_len),
            opt(&self.record_time_ns),
            opt(&self.quality),
            opt(&self.vlan),
            csv_quote(self.anomaly.as_deref().unwrap_or("")),
            self.input,
        )
    }
}

/// Quotes a CSV field when it holds a comma or a quote.
fn csv_quote(s: &str) -> std::borrow::Cow<'_, str> {
    if s.contains([',', '"', '\n']) { format!("\"{}\"", s.replace('"', "\"\"")).into() } else { s.into() }
}

/// What the summary on stderr counts.
#[derive(Default)]
struct Summary {
    frames: u64,
    by_trailer: BTreeMap<&'static str, u64>,
    keyframes: u64,
    anomalies: BTreeMap<&'static str, u64>,
    no_timestamp: u64,
}

pub fn run(args: &FramesArgs) -> Result<ExitCode> {
    let mut pipe = Pipeline::open(&args.files, &args.trailer)?;
    // An earlier `-o` output may be replaced, a capture (an input, say) never.
    let first_line = match args.format {
        Format::Csv => COLUMNS.join(","),
        Format::Json => "{\"index\":".to_owned(),
    };
    let sink: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(create_output(p, "-o", &first_line)?),
        None => Box::new(std::io::stdout().lock()),
    };
    // A failed write names its output (`-o FILE`, or standard output).
    let what = args.output.as_deref().map_or_else(|| STDOUT_WRITING.to_owned(), |p| writing("-o", p));
    let mut out = BufWriter::with_capacity(1 << 16, sink);
    if args.format == Format::Csv {
        writeln!(out, "{}", COLUMNS.join(",")).context(what.clone())?;
    }

    let mut summary = Summary::default();
    let limit = args.count.unwrap_or(u64::MAX);
    let mut failure = None;
    while summary.frames < limit {
        let s = match pipe.next() {
            Ok(Some(s)) => s,
            Ok(None) => break,
            Err(e) => match waited(e, &mut out, &what)? {
                None => continue,
                Some(e) => {
                    failure = Some(e);
                    break;
                }
            },
        };
        match &s.decoded {
            Decoded::Stamp(st) => *summary.by_trailer.entry(st.kind.name()).or_default() += 1,
            Decoded::Keyframe(..) => summary.keyframes += 1,
            Decoded::None => {}
        }
        if let Some(a) = s.dissection.anomaly {
            *summary.anomalies.entry(a.layer.name()).or_default() += 1;
        }
        if !s.frame.has_ts() {
            summary.no_timestamp += 1;
        }
        let row = Row::new(summary.frames, &s);
        let written = match args.format {
            Format::Csv => row.write_csv(&mut out),
            // As an I/O error, so that a closed pipe (`| head`) ends quietly, as for CSV.
            Format::Json => {
                serde_json::to_writer(&mut out, &row).map_err(std::io::Error::from).and_then(|()| out.write_all(b"\n"))
            }
        };
        written.with_context(|| what.clone())?;
        summary.frames += 1;
    }
    out.flush().context(what)?;

    if !args.quiet {
        print_summary(&summary, args.files.len());
        let skipped = pipe.records_without_frame();
        if !skipped.is_empty() {
            crate::note!("wirestamp: {}", wirestamp_core::analyze::report::records_without_frame_line(&skipped));
        }
        // Per input, what the trailer check found and what it refused (analyze's report says the same).
        for t in pipe.trailers().iter().filter(|t| t.worth_a_line()) {
            crate::note!("wirestamp: {}", t.line());
        }
        pipe.print_warnings();
    }
    match failure {
        Some(e) => Err(e.context(format!("stopped after {}", n(summary.frames, "frame", "frames")))),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// `e` says that the input has to wait (a relay on standard input, idle: [`Pipeline::is_wait`]): the
/// lines so far go out (`None`); else it is the error that stops the run. Out of line: the per-frame
/// loop stays as it was (inline, it took 33 instructions a frame from the loop).
#[cold]
#[inline(never)]
fn waited(e: anyhow::Error, out: &mut impl Write, what: &str) -> Result<Option<anyhow::Error>> {
    if !Pipeline::is_wait(&e) {
        return Ok(Some(e));
    }
    out.flush().with_context(|| what.to_owned())?;
    Ok(None)
}

fn print_summary(s: &Summary, inputs: usize) {
    let mut line = format!(
        "wirestamp: {} from {inputs} {}",
        n(s.frames, "frame", "frames"),
        one(inputs as u64, "input", "inputs")
    );
    if !s.by_trailer.is_empty() {
        let t: Vec<String> = s.by_trailer.iter().map(|(k, v)| format!("{k} {v}")).collect();
        line += &format!("; trailer timestamps: {}", t.join(", "));
    }
    if s.keyframes > 0 {
        line += &format!("; keyframes: {}", s.keyframes);
    }
    if !s.anomalies.is_empty() {
        let a: Vec<String> = s.anomalies.iter().map(|(k, v)| format!("{k} {v}")).collect();
        line += &format!("; malformed headers: {}", a.join(", "));
    }
    if s.no_timestamp > 0 {
        line += &format!("; frames without a timestamp (pcapng SPB): {}", s.no_timestamp);
    }
    crate::note!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quoting() {
        assert_eq!(csv_quote("udp header at byte 38: truncated"), "udp header at byte 38: truncated");
        assert_eq!(csv_quote("a,b"), "\"a,b\"");
    }
}
