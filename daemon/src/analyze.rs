//! `wirestamp analyze`: the offline tick-to-trade report.

use crate::cli::{AnalyzeArgs, check_inputs, usage};
use crate::output::{STDOUT_WRITING, create_output, distinct, refuse_stdout, writing};
use crate::pipeline::{FastPath, Pipeline};
use crate::progress::ProgressLine;
use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hdrhistogram::serialization::{Serializer, V2DeflateSerializer};
use serde::Deserialize;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use wirestamp_core::Frame;
use wirestamp_core::analyze::PlainUdp;
use wirestamp_core::analyze::flows::FlowSpec;
use wirestamp_core::analyze::report::{InputStatus, n, one};
use wirestamp_core::analyze::tx::{TxEvent, TxKind};
use wirestamp_core::analyze::{AnalyzeConfig, Analyzer, Interval, MatchRule, Pair, Unmatched};
use wirestamp_core::trailer::TrailerStamp;

/// The `--config` file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ConfigFile {
    #[serde(default)]
    md: Vec<String>,
    #[serde(default)]
    orders: Vec<String>,
    #[serde(rename = "match")]
    matching: Option<String>,
    #[serde(default)]
    by: Vec<String>,
}

/// The analysis configuration `args` (and its `--config` file) ask for.
pub fn config(args: &AnalyzeArgs) -> Result<AnalyzeConfig> {
    let file = match &args.config {
        Some(p) => {
            let text = std::fs::read_to_string(p).with_context(|| format!("cannot read {}", p.display()))?;
            toml::from_str::<ConfigFile>(&text).map_err(|e| {
                // A regex in a basic string is the usual trap: TOML reads its backslashes as escapes.
                let hint = if e.message().contains("invalid escape") {
                    "\n(write a value holding backslashes, such as a token regex, in single quotes, a TOML literal \
                     string: match = 'token:T(\\d+)')"
                } else {
                    ""
                };
                anyhow::anyhow!("{}: not a valid wirestamp config: {e}{hint}", p.display())
            })?
        }
        None => ConfigFile::default(),
    };
    // The file's flows, then the command line's; the same flow twice is one. (Looked up by hash: a
    // generated config may give tens of thousands.)
    let mut flows = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut ends = std::collections::HashMap::new();
    let from_file = |key: &str, s: &str| match &args.config {
        Some(p) => format!("{}: {key} = \"{s}\"", p.display()),
        None => format!("{key} {s}"),
    };
    let sources = [
        (file.md.iter().map(|s| (from_file("md", s), s)).collect::<Vec<_>>(), true),
        (args.md.iter().map(|s| (format!("--md {s}"), s)).collect(), true),
        (file.orders.iter().map(|s| (from_file("orders", s), s)).collect(), false),
        (args.orders.iter().map(|s| (format!("--orders {s}"), s)).collect(), false),
    ];
    for (specs, feed) in sources {
        for (what, s) in specs {
            let (prefix, form) = if feed {
                ("udp:", "a market-data feed is udp:GROUP:PORT[@moldudp64]")
            } else {
                ("tcp:", "an order session is tcp:HOST:PORT[@ouch50|@ouch42]")
            };
            let f = match s.parse::<FlowSpec>() {
                Ok(f) => f,
                // `--md 233.54.12.111:26477`, the transport left out: said with the one the option takes.
                Err(_) if format!("{prefix}{s}").parse::<FlowSpec>().is_ok() => {
                    bail!("{what}: the {prefix} prefix is missing: {form}, here {prefix}{s}")
                }
                Err(e) => return Err(anyhow::Error::new(e).context(what)),
            };
            match (&f, feed) {
                (FlowSpec::Feed(_), true) | (FlowSpec::Orders(_), false) => {}
                _ => bail!("{what}: {form}"),
            }
            // One exchange end given twice with two OUCH versions: the first would win silently, and
            // the other be noted as without traffic.
            if let FlowSpec::Orders(o) = &f {
                match ends.get(&(o.host, o.port)) {
                    Some((proto, was)) if *proto != o.proto => {
                        bail!(
                            "{what}: this exchange end was already given with another OUCH version ({was}): give it once"
                        )
                    }
                    Some(_) => {}
                    None => {
                        ends.insert((o.host, o.port), (o.proto, what.clone()));
                    }
                }
            }
            if seen.insert(f) {
                flows.push(f);
            }
        }
    }
    // A feed is a 16-bit index in the tick index.
    let feeds = flows.iter().filter(|f| matches!(f, FlowSpec::Feed(_))).count();
    let max = wirestamp_core::analyze::arbiter::MAX_FEEDS;
    ensure!(feeds <= max, "{feeds} market-data feeds given (--md, md = ...): at most {max} are analysed at once");
    // Errors name where the value came from: the command line's flag, or the file's key.
    let (rule, rule_from) = match (&args.matching, &file.matching) {
        (Some(r), _) => (r.as_str(), format!("--match {r}")),
        (None, Some(r)) => (r.as_str(), from_file("match", r)),
        (None, None) => ("symbol", String::new()),
    };
    let matching = MatchRule::parse(rule).map_err(|e| anyhow::anyhow!("{rule_from}: {e}"))?;
    let mut by_symbol = false;
    let by = file.by.iter().map(|b| (b, from_file("by", b))).chain(args.by.iter().map(|b| (b, format!("--by {b}"))));
    for (b, what) in by {
        match b.as_str() {
            "symbol" => by_symbol = true,
            _ => bail!("{what}: the breakdowns are `symbol` (feed and session are always shown)"),
        }
    }
    let tick_retain_ns = positive_duration("--tick-retention", &args.tick_retention, "1s")?;
    let ack_timeout_ns = positive_duration("--ack-timeout", &args.ack_timeout, "10s")?;
    let tx_events = !args.tx_events.is_empty();
    let keep_pairs = args.pairs.is_some();
    let keep_unmatched = args.unmatched.is_some();
    Ok(AnalyzeConfig {
        flows,
        matching,
        by_symbol,
        tick_retain_ns,
        ack_timeout_ns,
        tx_events,
        keep_pairs,
        keep_unmatched,
        fast_path: !args.no_fast_path,
        ..AnalyzeConfig::default()
    })
}

/// The value of duration option `flag` in ns, above 0, or an error saying what is expected (`example`
/// is a typical value).
fn positive_duration(flag: &str, value: &str, example: &str) -> Result<i64> {
    wirestamp_core::analyze::parse_duration_ns(value).filter(|ns| *ns > 0).ok_or_else(|| {
        anyhow::anyhow!(
            "{flag} {value}: not a duration above 0 with its unit ({}; e.g. {example}, 500ms, 1.5s)",
            wirestamp_core::analyze::DURATION_UNITS
        )
    })
}

/// `analyze`'s progress: frames, rate, and the fraction of the input read when the sizes tell it.
/// Frames between two looks at the progress line's clock.
const PROGRESS_EVERY: u64 = 65_536;

pub struct Progress {
    line: ProgressLine,
    total_bytes: u64,
    /// The frame count at which the line is looked at next (every 65,536 frames: the loop counts
    /// frames in runs, so the count passes a multiple rather than stopping on it).
    next_at: u64,
}

impl Progress {
    /// Progress over `files` (their sizes give the fraction done); `quiet` turns it off.
    pub fn new(files: &[std::path::PathBuf], quiet: bool) -> Progress {
        let total_bytes = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
        Progress { line: ProgressLine::new(quiet), total_bytes, next_at: PROGRESS_EVERY }
    }

    fn tick(&mut self, frames: u64, bytes: u64) {
        if frames >= self.next_at {
            self.next_at = (frames / PROGRESS_EVERY + 1) * PROGRESS_EVERY;
            self.draw(frames, bytes);
        }
    }

    /// Redraws the line if due.
    fn draw(&mut self, frames: u64, bytes: u64) {
        let Some(elapsed) = self.line.due() else { return };
        let rate = frames as f64 / elapsed.as_secs_f64() / 1e6;
        // Compressed inputs count decompressed bytes, so the fraction is only shown when it is one.
        let pct = if bytes <= self.total_bytes && self.total_bytes > 0 {
            format!("{:>5.1}% ", 100.0 * bytes as f64 / self.total_bytes as f64)
        } else {
            String::new()
        };
        self.line.show(&format!("{pct}{frames} frames, {rate:.1} M/s"));
    }
}

/// A CSV field (RFC 4180): quoted, its quotes doubled, when it holds a comma, a quote, a line break
/// or a NUL, or begins or ends with white space, a space, a tab or any other (a blank token or
/// symbol, written as the wire holds it, then reads as itself to a reader that trims unquoted fields,
/// as .NET's `TextFieldParser` does by default, not as the empty field of one not known). Tokens and
/// symbols come escaped (a NUL or a tab as `\xhh`), so only a space, a comma or a quote is met there.
fn csv_field(s: &str) -> std::borrow::Cow<'_, str> {
    let spaced = s.starts_with(char::is_whitespace) || s.ends_with(char::is_whitespace);
    if spaced || s.contains([',', '"', '\n', '\r', '\0']) {
        format!("\"{}\"", s.replace('"', "\"\"")).into()
    } else {
        s.into()
    }
}

/// A CSV output (`--pairs`, `--unmatched`): its file, and the option that named it, for errors.
pub struct CsvSink {
    out: BufWriter<std::fs::File>,
    path: PathBuf,
    option: &'static str,
}

impl CsvSink {
    /// Creates the file `p` given with `option` and writes `header` (an earlier file of ours is
    /// recognised by its header's first part, `ours`, and replaced).
    pub fn create(p: &Path, option: &'static str, ours: &str, header: &str) -> Result<CsvSink> {
        let out = BufWriter::new(create_output(p, option, ours)?);
        let mut sink = CsvSink { out, path: p.to_owned(), option };
        sink.write(|w| writeln!(w, "{header}"))?;
        Ok(sink)
    }

    /// Runs `f` on the file; an error says which output failed.
    fn write(&mut self, f: impl FnOnce(&mut BufWriter<std::fs::File>) -> std::io::Result<()>) -> Result<()> {
        f(&mut self.out).with_context(|| writing(self.option, &self.path))
    }
}

fn write_pair(w: &mut impl Write, p: &Pair) -> std::io::Result<()> {
    writeln!(
        w,
        "{},{},{},{},{},{},{},{},{},{}",
        csv_field(&p.tick_session.to_string()),
        p.tick_seq,
        p.tick_time_ns,
        csv_field(&p.order_id),
        csv_field(&p.token),
        p.order_time_ns,
        p.order_frame,
        p.order_last_frame,
        p.latency_ns,
        p.tick_frame.map_or_else(String::new, |f| f.to_string())
    )
}

fn write_unmatched(w: &mut impl Write, u: &Unmatched) -> std::io::Result<()> {
    writeln!(
        w,
        "{},{},{},{},{},{},{},{}",
        u.order_frame,
        u.order_time_ns,
        csv_field(&u.session),
        csv_field(&u.order_id),
        csv_field(&u.token),
        csv_field(&u.symbol),
        u.reason,
        u.tick_seq.map_or_else(String::new, |s| s.to_string())
    )
}

/// Where the per-frame loop sends what it finds besides the report.
#[derive(Default)]
pub struct Sinks {
    /// `--pairs`: matched pairs as CSV.
    pub pairs: Option<CsvSink>,
    /// `--unmatched`: the orders without a pair as CSV.
    pub unmatched: Option<CsvSink>,
    /// `--hlog`: closed intervals as an HdrHistogram log.
    pub hlog: Option<HlogSink>,
}

/// What [`process`] went through.
pub struct Outcome {
    /// Frames read.
    pub frames: u64,
    /// Frames without a timestamp (pcapng SPB), not analysed.
    pub no_time: u64,
    /// The reader or trailer error that stopped the loop early, if any (the analysis covers the
    /// frames before it).
    pub failure: Option<anyhow::Error>,
}

/// The per-frame loop of `wirestamp analyze`: every frame of `pipe` through `analyzer`, pairs and
/// intervals drained into `sinks` as they come (so memory does not grow with the capture), then
/// [`Analyzer::finish`] and the last drain. The report is left in `analyzer`. Errors are sink IO only.
pub fn process(
    pipe: &mut Pipeline,
    analyzer: &mut Analyzer,
    sinks: &mut Sinks,
    progress: &mut Progress,
) -> Result<Outcome> {
    process_with_tx(pipe, analyzer, sinks, progress, &mut TxFeed::default())
}

/// [`process`], with TX events fed to the analyzer ahead of the frames (see [`TxFeed`]).
/// Frames the fast path takes in one call at most ([`Pipeline::next_run`]): how often the loop drains
/// the analyzer's output and moves the progress bar while only market data comes.
const RUN_FRAMES: u64 = 1024;

/// The fast path's frames ([`Analyzer::frame_fast`]), for [`Pipeline::next_run`].
struct Fast;

type LoopState<'a> = (&'a mut Analyzer, &'a mut TxFeed, &'a mut u64, &'a mut u64);

impl FastPath<LoopState<'_>> for Fast {
    #[inline(always)]
    fn take(&mut self, (analyzer, tx, _, index): &mut LoopState<'_>, f: &Frame<'_>) -> bool {
        // TX events up to the frame's time first, once the frame is known to be taken: a frame left
        // to the general path may be timed by a tap's stamp instead.
        let feed_tx = |a: &mut Analyzer| tx.feed_until(a, f.ts_ns.saturating_add(TX_LEAD_NS));
        let took = analyzer.frame_fast(**index, f, feed_tx);
        **index += u64::from(took);
        took
    }

    #[inline(always)]
    fn take_stamped(
        &mut self,
        (analyzer, tx, _, index): &mut LoopState<'_>,
        f: &Frame<'_>,
        udp: PlainUdp<'_>,
        stamp: &TrailerStamp,
    ) -> bool {
        // Timed by the tap's stamp, as the general path times it.
        let feed_tx = |a: &mut Analyzer| tx.feed_until(a, stamp.time_ns.saturating_add(TX_LEAD_NS));
        let took = analyzer.frame_stamped(**index, f, udp, stamp, feed_tx);
        **index += u64::from(took);
        took
    }
}

pub fn process_with_tx(
    pipe: &mut Pipeline,
    analyzer: &mut Analyzer,
    sinks: &mut Sinks,
    progress: &mut Progress,
    tx: &mut TxFeed,
) -> Result<Outcome> {
    let mut index = 0u64;
    let mut no_time = 0u64;
    let mut failure = None;
    loop {
        // Market data of known feeds in the common shape takes the analyzer's fast path, from the
        // frame's bytes, a run of such frames in one call; the rest is dissected, trailer-checked and
        // analysed in full. Each closure counts the frame it handles.
        let step = pipe.next_run(
            &mut (&mut *analyzer, &mut *tx, &mut no_time, &mut index),
            RUN_FRAMES,
            &mut Fast,
            |(analyzer, tx, no_time, index), s| {
                match s.best_time() {
                    Some(t) => {
                        tx.feed_until(analyzer, t.saturating_add(TX_LEAD_NS));
                        analyzer.frame(**index, t, &s.frame, &s.dissection, s.ts_source(), s.quality())
                    }
                    None => **no_time += 1,
                }
                **index += 1;
            },
        );
        match step {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(e) => match sinks.waited(e, analyzer, pipe, progress, index)? {
                None => continue,
                Some(e) => {
                    failure = Some(e);
                    break;
                }
            },
        }
        if analyzer.has_output() {
            sinks.drain(analyzer)?;
        }
        if progress.line.on() {
            let bytes = pipe.inputs().iter().map(|r| r.stats().bytes).sum();
            progress.tick(index, bytes);
        }
    }
    progress.line.finish();
    tx.feed_until(analyzer, i64::MAX);
    analyzer.finish();
    sinks.drain(analyzer)?;
    sinks.flush_csv()?;
    if let Some(h) = sinks.hlog.as_mut() {
        h.finish(analyzer.first_time())?;
    }
    Ok(Outcome { frames: index, no_time, failure })
}

impl Sinks {
    /// Writes out what `--pairs` and `--unmatched` hold.
    fn flush_csv(&mut self) -> Result<()> {
        for w in [self.pairs.as_mut(), self.unmatched.as_mut()].into_iter().flatten() {
            w.write(|w| w.flush())?;
        }
        Ok(())
    }

    /// `e` says that the input has to wait (a relay on standard input, idle: [`Pipeline::is_wait`]):
    /// what the run wrote so far goes out, so that `tail -f` of a `--pairs` file follows the relay, and
    /// the progress line is brought up to date (`None`); else it is the error that stops the run. Out of
    /// line: once per wait, never per frame.
    #[cold]
    #[inline(never)]
    fn waited(
        &mut self,
        e: anyhow::Error,
        analyzer: &mut Analyzer,
        pipe: &Pipeline,
        progress: &mut Progress,
        frames: u64,
    ) -> Result<Option<anyhow::Error>> {
        if !Pipeline::is_wait(&e) {
            return Ok(Some(e));
        }
        // What the frames of the run before the wait queued.
        self.drain(analyzer)?;
        self.flush_csv()?;
        if let Some(h) = self.hlog.as_mut() {
            h.flush()?;
        }
        if progress.line.on() {
            progress.draw(frames, pipe.inputs().iter().map(|r| r.stats().bytes).sum());
        }
        Ok(None)
    }

    /// Takes the analyzer's queued pairs and intervals (dropping them when there is no sink).
    #[inline]
    fn drain(&mut self, analyzer: &mut Analyzer) -> Result<()> {
        match self.pairs.as_mut() {
            Some(w) => {
                for p in analyzer.drain_pairs() {
                    w.write(|w| write_pair(w, &p))?;
                }
            }
            None => analyzer.drain_pairs().for_each(drop),
        }
        match self.unmatched.as_mut() {
            Some(w) => {
                for u in analyzer.drain_unmatched() {
                    w.write(|w| write_unmatched(w, &u))?;
                }
            }
            None => analyzer.drain_unmatched().for_each(drop),
        }
        match self.hlog.as_mut() {
            Some(h) => {
                for i in analyzer.drain_intervals() {
                    h.write(&i)?;
                }
            }
            None => analyzer.drain_intervals().for_each(drop),
        }
        Ok(())
    }
}

/// Refuses `--pairs`, `--unmatched` or `--hlog` named `-`, and two of them on one file: the command
/// line's fault.
fn check_outputs(args: &AnalyzeArgs) -> Result<()> {
    let outputs = [("--pairs", &args.pairs), ("--unmatched", &args.unmatched), ("--hlog", &args.hlog)];
    let mut given = Vec::new();
    for (flag, p) in outputs {
        if let Some(p) = p {
            refuse_stdout(p, flag)?;
            given.push((flag, p.as_path()));
        }
    }
    distinct(&given)
}

pub fn run(args: &AnalyzeArgs) -> Result<ExitCode> {
    let cfg = config(args).map_err(usage)?;
    check_inputs(&args.files, &args.trailer)?;
    check_outputs(args).map_err(usage)?;
    let detect = cfg.flows.is_empty();
    let declared = |feed: bool| cfg.flows.iter().any(|f| matches!(f, FlowSpec::Feed(_)) == feed);
    // Detection runs only with neither given: with one side alone, the other is not looked for.
    let undetected = match (declared(true), declared(false)) {
        (true, false) => Some("order sessions (--orders)"),
        (false, true) => Some("market-data feeds (--md)"),
        _ => None,
    };
    let mut pipe = Pipeline::open(&args.files, &args.trailer)?;
    let mut analyzer = Analyzer::new(cfg);
    let mut tx = TxFeed::read(&args.tx_events)?;

    let mut sinks = Sinks::default();
    if let Some(p) = &args.pairs {
        sinks.pairs = Some(CsvSink::create(p, "--pairs", PAIRS_HEADER_SHARED, PAIRS_HEADER)?);
    }
    if let Some(p) = &args.unmatched {
        sinks.unmatched = Some(CsvSink::create(p, "--unmatched", UNMATCHED_HEADER, UNMATCHED_HEADER)?);
    }
    if let Some(p) = &args.hlog {
        sinks.hlog = Some(HlogSink::create(p)?);
    }
    let mut progress = Progress::new(&args.files, args.quiet);
    let Outcome { frames: index, no_time, failure } =
        process_with_tx(&mut pipe, &mut analyzer, &mut sinks, &mut progress, &mut tx)?;
    tracing::info!(
        frames = index,
        fast = analyzer.fast_frames(),
        plain = analyzer.plain_packets(),
        "frames taken by the analyzer's fast path, and packets of the others by its plain walk"
    );
    let detected = analyzer.detected_flows();
    analyzer.set_capture_drops(pipe.recorded_drops());
    let mut report = analyzer.report();
    // How reading ended, in the report itself: a JSON reader must not take a run that stopped early,
    // or read a file cut short, for a whole one.
    report.input = InputStatus {
        complete: failure.is_none(),
        stopped: failure.as_ref().map(|e| format!("stopped after {}: {e:#}", n(index, "frame", "frames"))),
        warnings: pipe.warnings().into_iter().chain(tx.warnings.iter().cloned()).collect(),
        cut_short: pipe.cut_short(),
        losses_unknown: pipe.losses_unknown(),
        records_without_frame: pipe.records_without_frame(),
        frames_without_time: no_time,
        trailers: pipe.trailers(),
        resolutions: pipe.resolutions(),
    };
    // Made whole first, then written with `write_all`, never `print!` (which panics on a closed pipe or
    // a full disk): an error here ends the run like any other, and a closed pipe quietly (main).
    let mut out = Vec::new();
    if args.json {
        out = serde_json::to_vec_pretty(&report)?;
        out.push(b'\n');
    } else {
        // Reading stopped before any frame (a forced trailer that does not fit, a malformed first record):
        // that nothing was detected says nothing, and would send the reader to --md first.
        if detect && (index > 0 || failure.is_none()) {
            if detected.is_empty() {
                writeln!(out, "detected no MoldUDP64 feed and no SoupBinTCP session: give them with --md / --orders")?;
            } else {
                writeln!(out, "detected from the traffic: {}", detected.join(", "))?;
            }
        }
        write!(out, "{}", report.render())?;
        if let Some(other) = undetected.filter(|_| report.counters.other_frames > 0) {
            writeln!(
                out,
                "note: {other} were not given, and are only detected when neither feeds nor sessions are: \
                 the {} frames in no feed or session may hold them",
                report.counters.other_frames
            )?;
        }
    }
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(&out).and_then(|()| stdout.flush()).context(STDOUT_WRITING)?;
    drop(stdout);
    pipe.print_warnings();
    for w in &tx.warnings {
        crate::note!("wirestamp: warning: {w}");
    }
    match failure {
        Some(e) => Err(e.context(format!(
            "stopped after {}; the report covers {}",
            n(index, "frame", "frames"),
            one(index, "it", "those")
        ))),
        None => Ok(ExitCode::SUCCESS),
    }
}

/// (A macro, so that the two headers are one text: `concat!` takes literals only.)
macro_rules! pairs_header_shared {
    () => {
        "tick_session,tick_seq,tick_time_ns,order_id,token,order_time_ns,order_frame,order_last_frame,latency_ns"
    };
}

/// The first line of a `--pairs` file.
const PAIRS_HEADER: &str = concat!(pairs_header_shared!(), ",tick_frame");
/// What every version's `--pairs` header begins with (before `tick_frame` came): an earlier output of
/// any is replaced.
const PAIRS_HEADER_SHARED: &str = pairs_header_shared!();
/// The first line of an `--unmatched` file.
const UNMATCHED_HEADER: &str = "order_frame,order_time_ns,session,order_id,token,symbol,reason,tick_seq";
/// The first line of a `--hlog` file.
const HLOG_HEADER: &str = "#[Histogram log format version 1.3]";

/// The `--hlog` writer: HdrHistogram interval log format 1.3, readable by HistogramLogProcessor.
/// Lines: `Tag=METRIC,start_s,length_s,max_ms,base64(V2+deflate histogram)`, times relative to
/// the StartTime header (the first interval's start), maxima in ms (the processor's default ratio).
pub struct HlogSink {
    out: BufWriter<std::fs::File>,
    path: PathBuf,
    serializer: V2DeflateSerializer,
    start_ns: Option<i64>,
    buf: Vec<u8>,
}

/// `ns` in whole milliseconds, to the nearest (the log's times have three decimals, as Java's writer
/// prints them with `%.3f`: truncated, an interval ending a whole second after a start 0.1 ms past
/// one was placed 1 ms early).
fn round_ms(ns: i64) -> i64 {
    ns.saturating_add(500_000).div_euclid(1_000_000)
}

/// An interval's start relative to the log's StartTime (`log_start_ns`) and its length, in ms: both
/// ends rounded as absolute times, then subtracted, as the reader adds them back to the StartTime (a
/// log starting on a half millisecond put every boundary 1 ms late when the difference was rounded).
fn hlog_span(log_start_ns: i64, start_ns: i64, len_ns: i64) -> (i64, i64) {
    let start_ms = round_ms(start_ns);
    (start_ms - round_ms(log_start_ns), round_ms(start_ns.saturating_add(len_ns)) - start_ms)
}

impl HlogSink {
    /// Creates the log file `p`.
    pub fn create(p: &Path) -> Result<HlogSink> {
        let out = BufWriter::new(create_output(p, "--hlog", HLOG_HEADER)?);
        let path = p.to_owned();
        Ok(HlogSink { out, path, serializer: V2DeflateSerializer::new(), start_ns: None, buf: Vec::new() })
    }

    /// The log's header, its StartTime at `start_ns`.
    fn header(&mut self, start_ns: i64) -> std::io::Result<()> {
        let ms = round_ms(start_ns);
        let (secs, ms) = (ms.div_euclid(1_000), ms.rem_euclid(1_000));
        writeln!(self.out, "{HLOG_HEADER}")?;
        writeln!(self.out, "#[StartTime: {secs}.{ms:03} (seconds since epoch)]")?;
        writeln!(
            self.out,
            "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
        )?;
        self.start_ns = Some(start_ns);
        Ok(())
    }

    /// Ends the log: a log without a sample still gets its header (StartTime at `first_ns`, the
    /// capture's first time, or the epoch), so that it reads as an empty log, not as no log.
    fn finish(&mut self, first_ns: Option<i64>) -> Result<()> {
        let mut end = || {
            if self.start_ns.is_none() {
                self.header(first_ns.unwrap_or(0))?;
            }
            self.out.flush()
        };
        end().with_context(|| writing("--hlog", &self.path))
    }

    /// Writes out the intervals so far (a log without one yet has no header: its StartTime is the
    /// first interval's).
    fn flush(&mut self) -> Result<()> {
        self.out.flush().with_context(|| writing("--hlog", &self.path))
    }

    fn write(&mut self, i: &Interval) -> Result<()> {
        let start_ns = match self.start_ns {
            Some(s) => s,
            None => {
                self.header(i.start_ns).with_context(|| writing("--hlog", &self.path))?;
                i.start_ns
            }
        };
        self.buf.clear();
        self.serializer.serialize(i.latency.histogram(), &mut self.buf).context("cannot compress a histogram")?;
        let (rel_ms, len_ms) = hlog_span(start_ns, i.start_ns, i.len_ns);
        // The maximum of what the histogram holds (its non-negative samples): an interval of negative
        // samples only has an empty histogram, and its maximum is 0, not a negative value beside it.
        let max_ns = if i.latency.histogram().is_empty() { 0 } else { i.latency.summary().max_ns.max(0) };
        let max_ms = max_ns as f64 / 1e6;
        writeln!(
            self.out,
            "Tag={},{}.{:03},{}.{:03},{:.3},{}",
            i.metric,
            rel_ms / 1000,
            rel_ms % 1000,
            len_ms / 1000,
            len_ms % 1000,
            max_ms,
            BASE64.encode(&self.buf)
        )
        .with_context(|| writing("--hlog", &self.path))
    }
}

/// How far ahead of the frames TX events are fed: a write's SND time and the capture time of its frames
/// differ by microseconds, far less than this, so each write's SND is known when its order completes.
pub const TX_LEAD_NS: i64 = 1_000_000_000;

/// The `--tx-events` CSVs (`time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last`, as
/// `wirestamp capture --tx-events` writes them), merged in time order and fed to the analyzer ahead of
/// the frames. They are read whole: three or four short rows per write, far smaller than the capture.
#[derive(Debug, Default)]
pub struct TxFeed {
    events: Vec<TxEvent>,
    next: usize,
    /// What was read past without stopping: a file's last row cut short (a capture killed while writing it).
    pub warnings: Vec<String>,
}

impl TxFeed {
    /// Reads and merges `files`; a malformed row is an error naming the file, line and field, except a
    /// file's last row cut short (no newline after it, and fewer fields than the row before it, or not
    /// readable): that is what a capture killed while writing leaves, so it is left out with a warning.
    pub fn read(files: &[std::path::PathBuf]) -> Result<TxFeed> {
        let mut events = Vec::new();
        let mut warnings = Vec::new();
        for f in files {
            let text =
                std::fs::read_to_string(f).with_context(|| format!("--tx-events: cannot read {}", f.display()))?;
            let mut lines = text.lines().enumerate();
            match lines.next() {
                Some((_, h)) if h.starts_with("time_ns,event,local,remote,seq_first,seq_last") => {}
                _ => bail!(
                    "--tx-events {}: line 1 is not the header time_ns,event,local,remote,seq_first,seq_last,... \
                     (the CSV of `wirestamp capture --source ebpf --tx-events`)",
                    f.display()
                ),
            }
            let ends_cut = !text.ends_with('\n');
            let count = text.lines().count();
            let (mut fields_before, mut rows) = (0, 0);
            for (i, line) in lines {
                if line.is_empty() {
                    continue;
                }
                let fields = line.split(',').count();
                let row = parse_tx_row(line);
                if ends_cut && i + 1 == count && (row.is_err() || fields < fields_before) {
                    warnings.push(format!(
                        "--tx-events {}: line {} is cut short (no newline at the file's end; {fields} fields{}: was \
                         the capture killed while writing it?): left out, the {} rows before it are read: `{line}`",
                        f.display(),
                        i + 1,
                        if fields_before > 0 { format!(", the row before has {fields_before}") } else { String::new() },
                        rows
                    ));
                    break;
                }
                (fields_before, rows) = (fields, rows + 1);
                let e = row
                    .map_err(|what| anyhow::anyhow!("--tx-events {} line {}: {what}: `{line}`", f.display(), i + 1))?;
                events.extend(e);
            }
        }
        // Stable: a file's rows of equal time keep their order.
        events.sort_by_key(|e| e.time_ns);
        Ok(TxFeed { events, next: 0, warnings })
    }

    /// Feeds the events up to `until_ns` (inclusive).
    #[inline(always)]
    pub fn feed_until(&mut self, analyzer: &mut Analyzer, until_ns: i64) {
        // Inline, the check alone: it runs per frame, and most analyses have no events left.
        if self.events.get(self.next).is_some_and(|e| e.time_ns <= until_ns) {
            self.feed_from(analyzer, until_ns);
        }
    }

    #[inline(never)]
    fn feed_from(&mut self, analyzer: &mut Analyzer, until_ns: i64) {
        while let Some(e) = self.events.get(self.next).filter(|e| e.time_ns <= until_ns) {
            analyzer.tx_event(*e);
            self.next += 1;
        }
    }
}

/// One CSV row; `Ok(None)` for an event kind this version does not use (`unknown`).
fn parse_tx_row(line: &str) -> std::result::Result<Option<TxEvent>, String> {
    let f: Vec<&str> = line.split(',').collect();
    if f.len() < 6 {
        return Err(format!("{} fields, expected 8 (at least the first 6)", f.len()));
    }
    let time_ns = f[0].parse::<i64>().map_err(|_| format!("time_ns `{}` is not an integer", f[0]))?;
    let Some(kind) = TxKind::parse(f[1]) else {
        return if f[1] == "unknown" { Ok(None) } else { Err(format!("unknown event `{}`", f[1])) };
    };
    let addr =
        |name: &str, v: &str| v.parse::<std::net::SocketAddr>().map_err(|_| format!("{name} `{v}` is not ADDR:PORT"));
    let local = addr("local", f[2])?;
    let remote = addr("remote", f[3])?;
    let seq =
        |name: &str, v: &str| v.parse::<u32>().map_err(|_| format!("{name} `{v}` is not a 32-bit sequence number"));
    let seq_first = if f[4].is_empty() { None } else { Some(seq("seq_first", f[4])?) };
    let seq_last = seq("seq_last", f[5])?;
    // A write is far shorter than half the sequence space: a longer range is a reversed one, which
    // would hold almost every byte of the connection.
    if let Some(first) = seq_first
        && seq_last.wrapping_sub(first) >= 1 << 31
    {
        return Err(format!("seq_first {first} is after seq_last {seq_last}: not a write's byte range"));
    }
    Ok(Some(TxEvent { time_ns, kind, local, remote, seq_first, seq_last }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 4180: a field holding a comma, a quote or a line break is quoted, its quotes doubled; so is
    /// one beginning or ending with white space (a space, a tab, a no-break or ideographic space: what a
    /// reader that trims unquoted fields takes away), or holding a NUL; a plain or empty field is not,
    /// nor one with white space inside.
    #[test]
    fn csv_fields_are_quoted_where_a_reader_would_misread_them() {
        let cases = [
            ("AAPL", "AAPL"),
            ("", ""),
            ("A B", "A B"),
            ("A\tB", "A\tB"),
            ("A,B", "\"A,B\""),
            ("A\"B", "\"A\"\"B\""),
            ("A\nB", "\"A\nB\""),
            ("        ", "\"        \""),
            (" T1", "\" T1\""),
            ("T1\t", "\"T1\t\""),
            ("\tT1", "\"\tT1\""),
            ("T1\u{a0}", "\"T1\u{a0}\""),
            ("\u{3000}", "\"\u{3000}\""),
            ("\0\0\0\0\0\0\0\0", "\"\0\0\0\0\0\0\0\0\""),
        ];
        for (field, want) in cases {
            assert_eq!(csv_field(field), want, "{field:?}");
        }
    }

    /// The reader adds each interval's start to the StartTime: the sum must be the boundary rounded.
    /// A log starting at 0.7505 s (StartTime 0.751, half up) has its second interval at 1.000 s: start
    /// 0.249, not 0.250 (which read back as 1.001 s). Boundaries of whole seconds read back whole.
    #[test]
    fn interval_times_add_back_to_their_boundaries() {
        const MS: i64 = 1_000_000;
        let log_start = 750 * MS + MS / 2;
        assert_eq!(round_ms(log_start), 751);
        assert_eq!(hlog_span(log_start, log_start, 1_000 * MS - log_start), (0, 249));
        assert_eq!(hlog_span(log_start, 1_000 * MS, 1_000 * MS), (249, 1_000));
        assert_eq!(hlog_span(log_start, 2_000 * MS, 123 * MS + 400_000), (1_249, 123));
        for k in 1..5i64 {
            let (rel, len) = hlog_span(log_start, k * 1_000 * MS, 1_000 * MS);
            assert_eq!((round_ms(log_start) + rel, len), (k * 1_000, 1_000));
        }
    }
}
