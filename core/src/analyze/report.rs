//! The report model (what `--json` prints) and its terminal rendering.

use super::flows::OrderProto;
use super::orders::StreamCounters;
use super::{Analyzer, Counters, METRICS, Metric};
use crate::reasm::ReasmStats;
use crate::stats::{Latency, STABLE_TAIL_SAMPLES, Tally, format_ns, format_ns_3};
use crate::trailer::{TrailerKind, TrailerMode, TrailerStats};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::net::IpAddr;

/// One metric's figures (or one dimension's).
#[derive(Debug, Clone, Serialize)]
pub struct MetricReport {
    /// Metric name, or the dimension (`feed:...`, `session:...`, `symbol:...`).
    pub name: String,
    /// Samples.
    pub count: u64,
    /// Exact minimum (null without samples).
    pub min_ns: Option<i64>,
    /// Median.
    pub p50_ns: Option<i64>,
    /// 90th percentile.
    pub p90_ns: Option<i64>,
    /// 99th percentile.
    pub p99_ns: Option<i64>,
    /// 99.9th percentile.
    pub p99_9_ns: Option<i64>,
    /// 99.99th percentile.
    pub p99_99_ns: Option<i64>,
    /// Exact maximum.
    pub max_ns: Option<i64>,
    /// Mean (printed beside the percentiles, never instead).
    pub mean_ns: Option<i64>,
    /// Percentiles with fewer than 100 samples beyond them (not stable).
    pub unstable: Vec<&'static str>,
    /// Negative samples: the two ends' clocks disagree, or (`tick_to_trade`, `tick_to_snd`) the
    /// trigger's earlier copy came on a feed not analysed.
    pub negative: u64,
    /// Samples beyond an hour either way: counted in the histogram's top bucket (percentiles there
    /// are an hour's bucket), exact in `min_ns` and `max_ns`.
    pub saturated: u64,
    /// Per-dimension figures.
    pub dims: Vec<MetricReport>,
    /// The clocks its two ends were timed by (with samples; a feed's or a session's dimension, that
    /// one's at its end).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clocks: Option<Clocks>,
}

/// The clocks a metric's two ends were timed by: timestamp sources (`TsSource` names: `pcap`,
/// `metamako`, `kernel_hw`, ...), `exchange` (ITCH timestamps), `snd_sw` or `snd_hw` (`--tx-events`
/// SND times, the kernel's or the NIC's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Clocks {
    /// The start's (the tick, the order, the first copy, ...).
    pub from: Vec<&'static str>,
    /// The end's.
    pub to: Vec<&'static str>,
}

impl Clocks {
    /// More than one clock among `ends` (or none known): sources grouped by the clock behind them.
    fn mixed<'a>(ends: impl Iterator<Item = &'a &'static str>) -> bool {
        let mut all: Vec<&str> = ends.map(|n| clock_of(n)).collect();
        all.sort_unstable();
        all.dedup();
        all.len() != 1
    }
}

/// The clock behind a timestamp source's name: a capture's records, the kernel's stamps, a BPF
/// hook's time and software SND times are all the capturing host's system clock (as a capture host
/// writes them; records of several files may be several hosts', said apart); a NIC's stamps and
/// hardware SND times its PHC; an ERF card and each tap kind their own.
fn clock_of(name: &str) -> &str {
    match name {
        "pcap" | "pcapng" | "kernel_sw" | "kernel_none" | "bpf_hook" | "snd_sw" => "host",
        "kernel_hw" | "snd_hw" => "nic",
        other => other,
    }
}

/// Whether frames timed by `sources` were all timed on a host, by a capture point that may be on the
/// sending host itself (record times, the kernel's stamps, a BPF hook's time): not by a tap, an ERF
/// card or a NIC's hardware clock.
fn host_captured(sources: &[&str]) -> bool {
    !sources.is_empty() && sources.iter().all(|s| s != &"snd_sw" && clock_of(s) == "host")
}

impl MetricReport {
    fn from_latency(name: String, l: &Latency) -> MetricReport {
        let s = l.summary();
        let has = s.count > 0;
        let p = |i: usize| has.then(|| s.percentiles[i].value_ns);
        MetricReport {
            name,
            count: s.count,
            min_ns: has.then_some(s.min_ns),
            p50_ns: p(0),
            p90_ns: p(1),
            p99_ns: p(2),
            p99_9_ns: p(3),
            p99_99_ns: p(4),
            max_ns: has.then_some(s.max_ns),
            mean_ns: has.then_some(s.mean_ns),
            unstable: s
                .percentiles
                .iter()
                .filter(|p| has && p.tail_samples < STABLE_TAIL_SAMPLES)
                .map(|p| p.label)
                .collect(),
            negative: s.negative,
            saturated: s.saturated,
            dims: Vec::new(),
            clocks: None,
        }
    }

    fn from_metric(name: &str, m: &Metric, open: &Latency, tallies: &[(usize, &Tally)]) -> MetricReport {
        let mut r = Self::from_latency(name.to_owned(), &m.total(open, tallies));
        m.for_each_dim(tallies, |d, l| r.dims.push(Self::from_latency(d.to_owned(), l)));
        r
    }
}

/// One market-data feed.
#[derive(Debug, Clone, Serialize)]
pub struct FeedReport {
    /// `udp:GROUP:PORT`.
    pub feed: String,
    /// Detected from the traffic rather than given.
    pub detected: bool,
    /// Frames of this feed.
    pub frames: u64,
    /// MoldUDP64 packets (all sessions).
    pub packets: u64,
    /// New messages (per-feed first copies).
    pub messages: u64,
    /// Heartbeats.
    pub heartbeats: u64,
    /// Gap events.
    pub gaps: u64,
    /// Messages still missing.
    pub missing: u64,
    /// Duplicate packets.
    pub duplicates: u64,
    /// Packets out of order.
    pub out_of_order: u64,
    /// Gaps no longer tracked (more than 1,024 open at once): still counted in `missing`, and a late
    /// packet filling one counts as a duplicate, not as out of order.
    pub gaps_forgotten: u64,
    /// Packets that were not valid MoldUDP64 or held a malformed message block.
    pub malformed_packets: u64,
    /// First frame of this feed that was malformed, and why.
    pub first_bad_frame: Option<u64>,
    /// Why that frame was bad.
    pub first_bad_reason: Option<String>,
    /// ITCH messages by type letter.
    pub itch_types: BTreeMap<String, u64>,
    /// ITCH messages of unknown type.
    pub itch_unknown: u64,
    /// ITCH messages shorter than their type requires.
    pub itch_truncated: u64,
    /// MoldUDP64 sessions seen.
    pub sessions: Vec<String>,
    /// Packets of MoldUDP64 sessions beyond the feed's first [`super::MAX_FEED_SESSIONS`], not analysed.
    pub sessions_not_analysed_packets: u64,
    /// Lowest message sequence number seen.
    pub first_seq: Option<u64>,
    /// Highest message sequence number seen.
    pub last_seq: Option<u64>,
    /// Packets the capture cut (its snap length: fewer bytes captured than the frame had on the wire),
    /// not malformed for it. This and the three below are in the JSON only when not 0.
    #[serde(skip_serializing_if = "super::counters::is_zero")]
    pub packets_captured_short: u64,
    /// Those of them cut inside their MoldUDP64 header: their sequence and count unknown, their
    /// messages count as missing (in `gaps` and `missing`).
    #[serde(skip_serializing_if = "super::counters::is_zero")]
    pub headers_not_captured: u64,
    /// Messages their headers announce that were not captured whole (the sequence moves on past them:
    /// they are not missing; not in `itch_types`, no tick).
    #[serde(skip_serializing_if = "super::counters::is_zero")]
    pub messages_not_captured: u64,
    /// Their UDP payload bytes not captured.
    #[serde(skip_serializing_if = "super::counters::is_zero")]
    pub bytes_not_captured: u64,
}

impl FeedReport {
    /// Why the feed's traffic may not be what it was taken for: most of its packets malformed, or most
    /// of its messages of no ITCH 5.0 type or shorter than their type.
    fn doubt(&self) -> Option<String> {
        let bad_messages = self.itch_unknown + self.itch_truncated;
        if self.malformed_packets > 0 && self.malformed_packets * 2 >= self.frames {
            Some(format!(
                "{} of its {} {} a malformed packet",
                self.malformed_packets,
                n(self.frames, "frame", "frames"),
                one(self.malformed_packets, "holds", "hold")
            ))
        } else if bad_messages > 0 && bad_messages * 2 >= self.messages {
            Some(format!(
                "{bad_messages} of its {} {} of no ITCH 5.0 type or cut short",
                n(self.messages, "message", "messages"),
                one(bad_messages, "is", "are")
            ))
        } else {
            None
        }
    }
}

/// One direction of one order connection.
#[derive(Debug, Clone, Serialize)]
pub struct StreamReport {
    /// Framing and decoding counters.
    #[serde(flatten)]
    pub counters: StreamCounters,
    /// TCP reassembly counters.
    pub tcp: TcpReport,
}

/// TCP reassembly counters.
#[derive(Debug, Clone, Serialize)]
pub struct TcpReport {
    /// Segments.
    pub segments: u64,
    /// Payload bytes delivered.
    pub bytes: u64,
    /// Retransmitted segments.
    pub retransmitted_segments: u64,
    /// Out-of-order segments.
    pub out_of_order_segments: u64,
    /// Holes (bytes never captured).
    pub holes: u64,
    /// Bytes in holes.
    pub hole_bytes: u64,
}

impl From<&ReasmStats> for TcpReport {
    fn from(s: &ReasmStats) -> Self {
        TcpReport {
            segments: s.segments,
            bytes: s.bytes,
            retransmitted_segments: s.retransmitted_segments,
            out_of_order_segments: s.out_of_order_segments,
            holes: s.holes,
            hole_bytes: s.hole_bytes,
        }
    }
}

/// One order connection.
#[derive(Debug, Clone, Serialize)]
pub struct ConnReport {
    /// `client:port>exchange:port`.
    pub connection: String,
    /// The session spec it belongs to.
    pub session: String,
    /// Whether that session was detected.
    pub detected: bool,
    /// Frames.
    pub frames: u64,
    /// Client to exchange.
    pub to_exchange: StreamReport,
    /// Exchange to client.
    pub from_exchange: StreamReport,
}

/// The whole analysis.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The correlation rule.
    #[serde(rename = "match")]
    pub matching: String,
    /// The settings that shape the figures.
    pub settings: Settings,
    /// First frame time used, ns.
    pub first_time_ns: Option<i64>,
    /// Last frame time used, ns.
    pub last_time_ns: Option<i64>,
    /// The load the figures were measured under.
    pub load: Load,
    /// Metrics, in the order of [`METRICS`].
    pub metrics: Vec<MetricReport>,
    /// Counters qualifying them.
    pub counters: Counters,
    /// Feeds.
    pub feeds: Vec<FeedReport>,
    /// Order connections.
    pub connections: Vec<ConnReport>,
    /// TX events were given (`--tx-events`): their lines are shown even when none was read.
    #[serde(skip)]
    pub tx_given: bool,
    /// The first order token the token rule read no sequence from (the terminal's hint when none had
    /// one), as the wire holds it, padding included: quoted, its bytes escaped as `--unmatched` writes
    /// them (a quote inside as `\"`).
    #[serde(skip)]
    pub first_unreadable_token: Option<String>,
    /// How reading the inputs ended: every frame read, or where and why it stopped (set by the caller
    /// that reads them; the figures cover the frames before).
    pub input: InputStatus,
    /// What looks like a mistake in the feeds and sessions given, with what to try.
    pub notes: Vec<String>,
}

/// The settings that shape the figures ([`Report::settings`]): a report read later, or beside
/// another's, must say what it was made with (a shorter retention or timeout cuts the slowest samples).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Settings {
    /// `--tick-retention`: how long ticks are kept for arbitration and the token rule, ns.
    pub tick_retention_ns: i64,
    /// `--ack-timeout`: how long a request waits for its response, ns.
    pub ack_timeout_ns: i64,
    /// The symbol rule's window (`--match symbol:WINDOW`), ns; only under the symbol rule.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub symbol_window_ns: Option<i64>,
    /// The length of the interval log's intervals (and of `load`'s busiest intervals), ns.
    pub interval_ns: i64,
    /// `--by symbol`: tick_to_trade has a dimension per symbol.
    pub by_symbol: bool,
}

impl Settings {
    fn new(cfg: &super::AnalyzeConfig) -> Settings {
        Settings {
            tick_retention_ns: cfg.tick_retain_ns,
            ack_timeout_ns: cfg.ack_timeout_ns,
            symbol_window_ns: match cfg.matching {
                super::MatchRule::Symbol { window_ns } => Some(window_ns),
                super::MatchRule::Token(_) => None,
            },
            interval_ns: cfg.interval_ns,
            by_symbol: cfg.by_symbol,
        }
    }

    /// The terminal's line: the settings other than the defaults, as the flags that give them (`None`
    /// when all are), so that a table pasted with its lines says what it was made with.
    fn line(&self) -> Option<String> {
        let d = super::AnalyzeConfig::default();
        let default_window = match d.matching {
            super::MatchRule::Symbol { window_ns } => window_ns,
            super::MatchRule::Token(_) => 0,
        };
        let mut set = Vec::new();
        if let Some(w) = self.symbol_window_ns.filter(|&w| w != default_window) {
            set.push(format!("--match symbol:{}", flag_duration(w)));
        }
        if self.tick_retention_ns != d.tick_retain_ns {
            set.push(format!("--tick-retention {}", flag_duration(self.tick_retention_ns)));
        }
        if self.ack_timeout_ns != d.ack_timeout_ns {
            set.push(format!("--ack-timeout {}", flag_duration(self.ack_timeout_ns)));
        }
        if self.interval_ns != d.interval_ns {
            set.push(format!("intervals of {}", flag_duration(self.interval_ns)));
        }
        (!set.is_empty()).then(|| format!("settings (not the defaults): {}", set.join(", ")))
    }
}

/// A duration as a flag takes it, exactly: the largest unit that divides it (`100us`, `1500ms`).
pub fn flag_duration(ns: i64) -> String {
    match ns {
        0 => "0s".to_owned(),
        _ if ns % 1_000_000_000 == 0 => format!("{}s", ns / 1_000_000_000),
        _ if ns % 1_000_000 == 0 => format!("{}ms", ns / 1_000_000),
        _ if ns % 1_000 == 0 => format!("{}us", ns / 1_000),
        _ => format!("{ns}ns"),
    }
}

/// The load behind the figures ([`Report::load`]): a latency figure means little without the rate it
/// was measured at (measurement.md).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Load {
    /// From the first frame time used to the last, ns (`null` before any).
    pub span_ns: Option<i64>,
    /// Ticks (first copies) per second of capture time over the span (`null` for a span of 0).
    pub ticks_per_s: Option<f64>,
    /// Orders (requests read: Enter, Replace, Cancel, Modify) per second over the span.
    pub orders_per_s: Option<f64>,
    /// The interval of the interval log (a second of capture time, cut at the capture's ends) that
    /// counted the most ticks, and the one that counted the most orders (`null`: none counted).
    pub busiest_ticks: Option<Busiest>,
    pub busiest_orders: Option<Busiest>,
}

/// An interval and what it counted ([`Load`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Busiest {
    /// Its start (ns since the epoch: the first frame's time for the first interval).
    pub start_ns: i64,
    /// Its length, ns (shorter than a second at the capture's ends).
    pub len_ns: i64,
    /// Ticks or orders counted in it (an order when its last byte was read).
    pub count: u64,
}

impl Load {
    fn new(a: &Analyzer) -> Load {
        let span_ns = a.first_time.map(|f| a.last_time.saturating_sub(f));
        let per_s = |n: u64| span_ns.filter(|s| *s > 0).map(|s| n as f64 * 1e9 / s as f64);
        Load {
            span_ns,
            ticks_per_s: per_s(a.counters.ticks),
            orders_per_s: per_s(a.counters.orders),
            busiest_ticks: a.busiest[0],
            busiest_orders: a.busiest[1],
        }
    }

    /// The terminal's line: the span, the mean rates and the busiest intervals (their starts from
    /// `first_ns`, the first frame time used).
    fn line(&self, first_ns: i64) -> Option<String> {
        let mut s = format!("load: {} of capture", format_span(self.span_ns?));
        if let (Some(ticks), Some(orders)) = (self.ticks_per_s, self.orders_per_s) {
            s += &format!("; on average {} ticks/s and {} orders/s", rate(ticks), rate(orders));
        }
        let busiest: Vec<String> =
            [(self.busiest_ticks, ["tick", "ticks"]), (self.busiest_orders, ["order", "orders"])]
                .into_iter()
                .filter_map(|(b, what)| {
                    let b = b?;
                    let from = match b.start_ns.saturating_sub(first_ns) {
                        0 => "the start".to_owned(),
                        d => format!("+{}", format_span(d)),
                    };
                    Some(format!("{} in {} from {from}", n(b.count, what[0], what[1]), format_ns(b.len_ns)))
                })
                .collect();
        if !busiest.is_empty() {
            s += &format!("; busiest interval: {}", busiest.join(", "));
        }
        Some(s)
    }
}

/// `count` and its noun, the singular for exactly one ("1 gap", "0 gaps").
pub fn n(count: u64, singular: &str, plural: &str) -> String {
    format!("{count} {}", one(count, singular, plural))
}

/// The word that agrees with `count` (a verb, a pronoun): `singular` for exactly one.
pub fn one<'a>(count: u64, singular: &'a str, plural: &'a str) -> &'a str {
    if count == 1 { singular } else { plural }
}

/// A rate for people: 3 significant digits, with k or M; below 1, as many decimals as that takes
/// (a few orders over months are 0.0000327/s, not 0.00).
fn rate(r: f64) -> String {
    if r == 0.0 {
        return "0".to_owned();
    }
    // Below a ten-thousandth, decimals would run on ("0.0000000654"): 3 significant digits and a power of ten.
    if r < 1e-4 {
        return format!("{r:.2e}");
    }
    // Rounded to 3 significant digits first, so that the unit and decimals suit the rounded value:
    // 999.6 reads "1.00k", not "1000".
    let step = 10f64.powi(r.log10().floor() as i32 - 2);
    let r = (r / step).round() * step;
    let (v, unit) = if r >= 1e6 {
        (r / 1e6, "M")
    } else if r >= 1e3 {
        (r / 1e3, "k")
    } else {
        (r, "")
    };
    // Decimals after the first significant digit's place: 2 for 1 to 10, one more per decade below.
    let digits = (2 - v.log10().floor() as i32).max(0) as usize;
    format!("{v:.digits$}{unit}")
}

/// A capture's span or an offset into it for people: [`format_ns`] below a minute; beyond, whole units
/// cut down, the largest two ("12m 5s", "3h 20m", "354d 2h"), not 30596047.619s.
fn format_span(ns: i64) -> String {
    const S: i64 = 1_000_000_000;
    let s = ns / S;
    let (d, h, m) = (s / 86_400, s / 3_600 % 24, s / 60 % 60);
    if s < 60 {
        format_ns(ns)
    } else if s < 3_600 {
        format!("{m}m {}s", s % 60)
    } else if s < 86_400 {
        format!("{h}h {m}m")
    } else {
        format!("{d}d {h}h")
    }
}

/// How reading the inputs ended ([`Report::input`]).
#[derive(Debug, Clone, Default, Serialize)]
pub struct InputStatus {
    /// Every input read to its end (cut-short files included, see `warnings`).
    pub complete: bool,
    /// Why reading stopped early, if it did.
    pub stopped: Option<String>,
    /// What the readers found wrong without stopping (a file cut short, packets recorded as lost).
    pub warnings: Vec<String>,
    /// The inputs cut short (ending inside a record, or a compressed stream ending early), read up to
    /// their last whole record: said in `warnings` too, here for a program. Absent when none was, so
    /// that the report of whole inputs is as it was.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cut_short: Vec<CutShort>,
    /// The inputs written by `wirestamp capture` with interfaces that have no statistics block (it
    /// writes one for each when it closes a file): never closed (killed) or cut short, so the packets
    /// lost while capturing them are unknown; or whose block has no loss counters (the capture's source
    /// gave none). Said in `warnings` too; absent when none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub losses_unknown: Vec<LossesUnknown>,
    /// Records that carry no frame, by kind, all inputs together ("erf META", "erf non-Ethernet type",
    /// "pcapng custom block", "pcapng unknown block", "pcapng NRB", ...; not the pcapng statistics
    /// blocks, whose counts are read): nothing in them was analysed. Absent when none.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub records_without_frame: BTreeMap<String, u64>,
    /// Frames without any timestamp (pcapng Simple Packet Blocks), not analysed.
    pub frames_without_time: u64,
    /// What the tap-trailer check found in each input, in the order given.
    pub trailers: Vec<InputTrailers>,
    /// The granularity of each input's record timestamps, in the order given.
    pub resolutions: Vec<InputResolution>,
}

/// The line that says which records carried no frame ([`InputStatus::records_without_frame`]), for
/// `analyze` and `frames` alike.
pub fn records_without_frame_line(kinds: &BTreeMap<String, u64>) -> String {
    let total: u64 = kinds.values().sum();
    let each: Vec<String> = kinds.iter().map(|(k, v)| format!("{k} {v}")).collect();
    format!(
        "{} carried no frame and {} not analysed: {}",
        n(total, "record", "records"),
        one(total, "was", "were"),
        each.join(", ")
    )
}

/// An input cut short ([`InputStatus::cut_short`]): where its last whole record ends, as its warning
/// says it ("at byte B (record R, after P packets)", "at decompressed byte B" for gzip or zstd).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CutShort {
    /// The input file.
    pub file: String,
    /// Where the cut record begins in the (decompressed) stream: the end of the last whole record.
    pub at_byte: u64,
    /// The records before it (a pcapng's header and interface blocks counted too).
    pub record: u64,
    /// The packets before it (tshark numbers the cut one `after_packets + 1`).
    pub after_packets: u64,
}

/// An input of `wirestamp capture` whose losses are unknown ([`InputStatus::losses_unknown`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LossesUnknown {
    /// The input file.
    pub file: String,
    /// The interfaces without a statistics block, or whose block has no loss counters, by their names
    /// in the file (`#N`, the interface's number in the file, for one without a name).
    pub interfaces: Vec<String>,
}

/// The unit of one input's record timestamps ([`InputStatus::resolutions`]): a frame timed by its
/// record carries it into every figure it enters.
#[derive(Debug, Clone, Serialize)]
pub struct InputResolution {
    /// The input file.
    pub file: String,
    /// The coarsest unit among its interfaces, whole ns rounded up (1: a nanosecond or finer).
    pub record_resolution_ns: u64,
}

/// What the tap-trailer check found in one input ([`InputStatus::trailers`]): the frames a tap
/// stamped, and every candidate stamp that was not used (the frame then keeps its record time).
#[derive(Debug, Clone, Serialize)]
pub struct InputTrailers {
    /// The input file.
    pub file: String,
    /// `--trailer` mode for it: `auto`, `none`, or the kind forced.
    #[serde(serialize_with = "mode_name")]
    pub mode: TrailerMode,
    /// The decoder's counters.
    #[serde(flatten)]
    pub stats: TrailerStats,
}

impl InputTrailers {
    /// The counters of `file`'s decoder, run in `mode`.
    pub fn new(file: String, mode: TrailerMode, stats: TrailerStats) -> InputTrailers {
        InputTrailers { file, mode, stats }
    }

    /// Whether the terminal report has something to say of it: a stamp found or refused, a trailer
    /// made unreadable by the capture's snap length, or a kind forced.
    pub fn worth_a_line(&self) -> bool {
        let s = &self.stats;
        self.mode != TrailerMode::Off
            && (self.mode != TrailerMode::Auto
                || s.stamped.total() + s.keyframes.total() > 0
                || self.refused().iter().any(|r| r.0 > 0))
    }

    /// What the trailer check refused, each count with its noun (singular, plural).
    fn refused(&self) -> [(u64, &'static str, &'static str); 5] {
        let s = &self.stats;
        [
            (s.keyframes_rejected, "keyframe refused", "keyframes refused"),
            (s.rejected, "candidate stamp refused", "candidate stamps refused"),
            (s.before_keyframe, "counter frame before the first keyframe", "counter frames before the first keyframe"),
            (
                s.keyframe_too_old,
                "counter frame with its keyframe too old",
                "counter frames with their keyframe too old",
            ),
            (
                s.truncated,
                "frame captured short (a trailer at its end, if any, unreadable)",
                "frames captured short (a trailer at their end, if any, unreadable)",
            ),
        ]
    }

    /// The terminal report's line (`analyze`'s report, `frames`' summary): the frames stamped, then
    /// only the counts that are not zero (the JSON has them all), so that a clean file's line is short.
    pub fn line(&self) -> String {
        let s = &self.stats;
        // "metamako 3, arista7150 2": the kinds counted.
        let by_kind = |c: &crate::trailer::KindCounts| -> Vec<String> {
            TrailerKind::ALL.iter().filter(|&&k| c.get(k) > 0).map(|&k| format!("{} {}", k.name(), c.get(k))).collect()
        };
        let stamped = by_kind(&s.stamped);
        let stamped = if stamped.is_empty() { String::new() } else { format!(" ({})", stamped.join(", ")) };
        let mut line = format!(
            "tap trailers in {} (--trailer {}): {} of {} stamped{stamped}",
            self.file,
            self.mode.name(),
            s.stamped.total(),
            n(s.frames, "frame", "frames")
        );
        let mut keyframes = by_kind(&s.keyframes);
        if s.freq_rejected > 0 {
            keyframes.push(format!(
                "{} with {} tick frequency off nominal: nominal used",
                s.freq_rejected,
                one(s.freq_rejected, "its", "their")
            ));
        }
        if !keyframes.is_empty() {
            let _ = write!(line, ", {} ({})", n(s.keyframes.total(), "keyframe", "keyframes"), keyframes.join("; "));
        }
        for (k, singular, plural) in self.refused().into_iter().filter(|r| r.0 > 0) {
            let _ = write!(line, ", {}", n(k, singular, plural));
        }
        let flagged: Vec<String> =
            [(s.stale, "stale keyframe"), (s.unsynced, "unsynced"), (s.degraded, "degraded"), (s.extended, "extended")]
                .into_iter()
                .filter(|f| f.0 > 0)
                .map(|(k, what)| format!("{k} {what}"))
                .collect();
        if !flagged.is_empty() {
            let _ = write!(line, "; stamps flagged: {}", flagged.join(", "));
        }
        line
    }
}

fn mode_name<S: serde::Serializer>(mode: &TrailerMode, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(mode.name())
}

pub(super) fn build(a: &Analyzer) -> Report {
    let dims = a.dims_by_name();
    let metrics = (0..METRICS.len())
        .map(|i| {
            let mut r = MetricReport::from_metric(METRICS[i], &a.metrics[i], &a.interval[i], &a.open_tallies(i));
            r.clocks = (r.count > 0).then(|| a.metric_clocks(i, super::Dim::Whole));
            for d in r.dims.iter_mut().filter(|d| d.count > 0) {
                d.clocks = Some(a.metric_clocks(i, dims.get(&d.name).copied().unwrap_or(super::Dim::Whole)));
            }
            r
        })
        .collect();
    let feeds = a
        .feeds
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let mut r = FeedReport {
                feed: f.spec.to_string(),
                detected: f.detected,
                frames: f.frames,
                packets: 0,
                messages: 0,
                heartbeats: 0,
                gaps: 0,
                missing: 0,
                duplicates: 0,
                out_of_order: 0,
                gaps_forgotten: 0,
                malformed_packets: f.bad_packets,
                first_bad_frame: f.first_bad_frame,
                first_bad_reason: f.first_bad_reason.clone(),
                itch_types: BTreeMap::new(),
                itch_unknown: f.decoder.itch.unknown_by_type.iter().sum(),
                itch_truncated: f.decoder.itch.truncated,
                sessions: Vec::new(),
                sessions_not_analysed_packets: f.sessions_beyond,
                first_seq: f.seq_range().map(|r| r.0),
                last_seq: f.seq_range().map(|r| r.1),
                packets_captured_short: f.packets_captured_short,
                headers_not_captured: f.headers_not_captured,
                messages_not_captured: f.messages_not_captured,
                bytes_not_captured: f.bytes_not_captured,
            };
            for (feed, session, c) in a.seq.iter() {
                if feed as usize != i {
                    continue;
                }
                r.sessions.push(session.to_string());
                r.packets += c.packets;
                r.messages += c.messages;
                r.heartbeats += c.heartbeats;
                r.gaps += c.gaps;
                // Saturating: hostile sequences leave gaps of nearly 2^64 in each of several sessions.
                r.missing = r.missing.saturating_add(c.missing);
                r.duplicates += c.duplicates;
                r.out_of_order += c.out_of_order;
                r.gaps_forgotten += c.gaps_forgotten;
            }
            for (t, &n) in f.decoder.itch.by_type.iter().enumerate() {
                if n > 0 {
                    r.itch_types.insert((t as u8 as char).to_string(), n);
                }
            }
            r
        })
        .collect();
    let connections = a
        .conn_list
        .iter()
        .map(|c| {
            let s = &a.sessions[c.session];
            ConnReport {
                connection: c.label.clone(),
                session: s.spec.to_string(),
                detected: s.detected,
                frames: c.frames,
                to_exchange: StreamReport { counters: *c.to_exchange.counters(), tcp: c.to_exchange.reasm().into() },
                from_exchange: StreamReport {
                    counters: *c.from_exchange.counters(),
                    tcp: c.from_exchange.reasm().into(),
                },
            }
        })
        .collect();
    Report {
        matching: a.cfg.matching.name(),
        settings: Settings::new(&a.cfg),
        first_time_ns: a.first_time,
        last_time_ns: (a.last_time != i64::MIN).then_some(a.last_time),
        load: Load::new(a),
        metrics,
        counters: a.counters(),
        feeds,
        connections,
        tx_given: a.cfg.tx_events,
        first_unreadable_token: a.first_unreadable_token.clone(),
        input: InputStatus { complete: true, ..InputStatus::default() },
        notes: flow_notes(a),
    }
}

/// The notes on flows given that look mistaken: a feed or session that saw no traffic (and what
/// traffic there was that looks like one), a spec of the wrong kind, a session given by its client's
/// end, or of the other OUCH version.
fn flow_notes(a: &Analyzer) -> Vec<String> {
    let mut notes = Vec::new();
    notes.extend(bound_notes(a));
    notes.extend(captured_short_note(a));
    notes.extend(holes_note(a));
    if a.counters.feeds_not_detected_frames > 0 {
        notes.push(format!(
            "{} feeds were detected, the most analysed from detection: {} more {} like MoldUDP64 went to other \
             flows and {} not analysed (give the feeds with --md)",
            super::MAX_DETECTED_FEEDS,
            a.counters.feeds_not_detected_frames,
            one(a.counters.feeds_not_detected_frames, "frame that looks", "frames that look"),
            one(a.counters.feeds_not_detected_frames, "was", "were")
        ));
    }
    for f in &a.feeds {
        if let Some((frame, session)) = f.first_session_beyond {
            notes.push(format!(
                "feed {}: {} of MoldUDP64 sessions beyond its first {} {} not analysed, the first at frame {frame} \
                 (session {session}): a feed has one session a day (not MoldUDP64, or its session names corrupt?)",
                f.spec,
                n(f.sessions_beyond, "packet", "packets"),
                super::MAX_FEED_SESSIONS,
                one(f.sessions_beyond, "was", "were")
            ));
        }
    }
    if a.counters.sessions_not_detected_frames > 0 {
        notes.push(format!(
            "{} order sessions were detected, the most analysed from detection: {} more {} like SoupBinTCP went \
             to other flows and {} not analysed (give the sessions with --orders)",
            super::MAX_DETECTED_SESSIONS,
            a.counters.sessions_not_detected_frames,
            one(a.counters.sessions_not_detected_frames, "frame that looks", "frames that look"),
            one(a.counters.sessions_not_detected_frames, "was", "were")
        ));
    }
    if a.last_by_symbol.untracked > 0 {
        notes.push(format!(
            "the symbol rule keeps the ticks of {} symbols, the most there can be: {} of further symbols {} not \
             kept, and orders of those symbols are unmatched",
            super::MAX_SYMBOLS,
            n(a.last_by_symbol.untracked, "tick", "ticks"),
            one(a.last_by_symbol.untracked, "was", "were")
        ));
    }
    let c = &a.counters;
    if let Some(frame) = c.first_released_for_room_frame {
        let mut what = Vec::new();
        for (k, kind) in [
            (
                c.orders_released_for_room,
                ["order", "orders", " stopped waiting (for the 1ms reorder allowance, or a trigger not seen yet)"],
            ),
            (c.requests_released_for_room, ["request", "requests", " stopped waiting for a response"]),
            (
                c.responses_released_for_room,
                [
                    "response",
                    "responses",
                    &format!(
                        " stopped waiting for {}",
                        one(c.responses_released_for_room, "its request", "their requests")
                    ),
                ],
            ),
        ] {
            if k > 0 {
                what.push(format!("{}{}", n(k, kind[0], kind[1]), kind[2]));
            }
        }
        notes.push(format!(
            "more orders or responses waited at once than the analysis keeps (the capture's clock stands still, \
             frames are packed closer than any link carries them, or, under the token rule, orders name ticks \
             of a feed not in the capture?): {}, the first at frame {frame} (such an \
             order is matched with what had come, or unmatched; a request is neither acked nor unacked; a \
             response is unmatched)",
            what.join(", ")
        ));
    }
    if let Some(frame) = c.first_tcp_released_for_room_frame {
        let gaps = c.tcp_gaps_released_for_room;
        notes.push(format!(
            "the order streams held more out-of-order TCP bytes at once than the analysis keeps ({} MiB, all \
             connections together: many connections each with a segment missing and much data behind it, a \
             damaged or hostile capture?): {} ({}) {} given up as {} before the gap timeout, the stream holding \
             the oldest bytes first, the first at frame {frame} (bytes of {} captured later are not read; {} \
             among the connections' holes)",
            super::MAX_HELD_TCP >> 20,
            n(gaps, "missing range", "missing ranges"),
            n(c.tcp_gap_bytes_released_for_room, "byte", "bytes"),
            one(gaps, "was", "were"),
            one(gaps, "a hole", "holes"),
            one(gaps, "it", "them"),
            one(gaps, "it is", "they are"),
        ));
    }
    if let Some(frame) = c.first_framing_released_for_room_frame {
        notes.push(format!(
            "the order streams held more SoupBinTCP packets begun, or bytes searched for a packet boundary, at \
             once than the analysis keeps ({} MiB, all connections together: many connections each with a long \
             packet left unfinished, a damaged or hostile capture?): what a stream's framing held was given up \
             {} ({} lost as at a hole, among the streams' resync_skipped_bytes), the stream holding the oldest \
             byte first, the first at frame {frame}; each resynchronised after",
            super::MAX_HELD_FRAMING >> 20,
            n(c.framing_released_for_room, "time", "times"),
            n(c.framing_bytes_released_for_room, "byte", "bytes"),
        ));
    }
    let forgotten = a.last_by_symbol.forgotten();
    if forgotten > 0 {
        notes.push(format!(
            "the symbol rule keeps {} ticks of a symbol and about {} of all symbols together, the most there can \
             be: {forgotten} of the oldest {} forgotten (a clock of too fine a step, or ticks that many \
             within the 1 s an order held behind a capture hole keeps them?), and orders that may have matched \
             them are unmatched",
            super::MAX_SYMBOL_TICKS,
            super::MAX_TICKS_KEPT,
            one(forgotten, "tick was", "ticks were"),
        ));
    }
    if a.counters.connections_not_analysed_frames > 0 {
        notes.push(format!(
            "{} order connections were analysed, the most there can be: {} of further connections {} not",
            super::MAX_CONNECTIONS,
            n(a.counters.connections_not_analysed_frames, "frame", "frames"),
            one(a.counters.connections_not_analysed_frames, "was", "were")
        ));
    }
    if a.symbol_slots.len() >= super::MAX_SYMBOL_ROWS
        && let Some(others) = a.metrics[super::T2T].slots.iter().find(|(n, _)| n == super::limits::OTHER_SYMBOLS)
    {
        notes.push(format!(
            "--by symbol: {} symbols have a row each; {} of further symbols {} in {}",
            super::MAX_SYMBOL_ROWS,
            n(others.1.count(), "order", "orders"),
            one(others.1.count(), "is", "are"),
            super::limits::OTHER_SYMBOLS
        ));
    }
    // A feed (`tcp` false) or session (true) given that no traffic went to: what went to it of the other
    // kind, and where traffic that looks like it went.
    let no_traffic = |tcp: bool, i: usize, head: String| {
        let (other, of_kind, looks) = if tcp {
            (
                ["UDP datagram", "UDP datagrams"],
                "a session is TCP: a feed is --md udp:...",
                "segments that look like SoupBinTCP",
            )
        } else {
            (
                ["TCP segment", "TCP segments"],
                "a feed is UDP: an order session is --orders tcp:...",
                "datagrams that look like MoldUDP64",
            )
        };
        let mut note = head;
        if let Some(&k) = a.wrong_kind.get(&(tcp, i)) {
            note += &format!("; {} went to it ({of_kind})", n(k, other[0], other[1]));
        }
        let mut seen: Vec<(&IpAddr, &u16, &u64)> =
            a.unclaimed.iter().filter(|((t, ..), _)| *t == tcp).map(|((_, ip, port), n)| (ip, port, n)).collect();
        if !seen.is_empty() {
            seen.sort_by(|x, y| y.2.cmp(x.2).then((x.0, x.1).cmp(&(y.0, y.1))));
            let kind = if tcp { "tcp" } else { "udp" };
            let flows: Vec<String> =
                seen.iter().map(|(ip, port, k)| format!("{kind}:{}:{port} ({k})", super::fmt_ip(**ip))).collect();
            note += &format!("; {looks} went to {}", flows.join(", "));
        }
        note
    };
    for (i, f) in a.feeds.iter().enumerate().filter(|(_, f)| !f.detected && f.frames == 0) {
        notes.push(no_traffic(false, i, format!("feed {}: no datagram to it", f.spec)));
    }
    for (i, s) in a.sessions.iter().enumerate().filter(|(_, s)| !s.detected) {
        if !a.conn_list.iter().any(|c| c.session == i) {
            notes.push(no_traffic(true, i, format!("orders {}: no TCP segment to or from this end", s.spec)));
        }
    }
    for c in &a.conn_list {
        let (to, from) = (c.to_exchange.counters(), c.from_exchange.counters());
        let others = to.other_ends_packets + from.other_ends_packets;
        if others > 0 {
            notes.push(format!(
                "connection {}: {} of a type only the other end sends (Sequenced Data or \
                 Login Accepted toward the end given as the exchange's, Login Request or client heartbeats from it): \
                 the exchange may be the other end, --orders tcp:{}:{}",
                c.label,
                n(others, "SoupBinTCP packet", "SoupBinTCP packets"),
                super::fmt_ip(c.key.0),
                c.key.1
            ));
        }
        let fits = to.other_version_fits + from.other_version_fits;
        if let Some(p) = c.to_exchange.proto().filter(|_| fits > 0) {
            let (given, other) = match p {
                OrderProto::Ouch50 => ("OUCH 5.0", "ouch42"),
                OrderProto::Ouch42 => ("OUCH 4.2", "ouch50"),
            };
            notes.push(format!(
                "connection {}: {} malformed as {given} {} well-formed in the other version: is the session \
                 @{other}?",
                c.label,
                n(fits, "message", "messages"),
                one(fits, "is", "are")
            ));
        }
    }
    // Judged on the feeds' final ranges: one that grew over the order's sequence since makes no case.
    if let Some((token, seq)) = a.first_token_outside.as_ref().filter(|(_, seq)| a.seq_outside_feeds(*seq)) {
        let ranges: Vec<String> =
            a.feeds.iter().filter_map(|f| f.seq_range().map(|(lo, hi)| format!("{} {lo}..{hi}", f.spec))).collect();
        let mut why = Vec::new();
        if *seq == 0 {
            why.push("MoldUDP64 numbers messages from 1".to_owned());
        }
        if !ranges.is_empty() {
            why.push(format!("the feeds brought {}", ranges.join(", ")));
        }
        let readable = a.counters.unmatched_orders - a.counters.no_token;
        notes.push(format!(
            "{} with a readable token unmatched under {}: the first whose sequence no feed brought, {token}, gave \
             sequence {seq} ({}): check that the regex's first group captures the trigger's whole MoldUDP64 \
             sequence (decimal) in the order token",
            n(readable, "order", "orders"),
            a.cfg.matching.name(),
            why.join("; ")
        ));
    }
    notes
}

/// What makes the figures better than the truth: the symbol rule's choice of the newest tick (lower
/// bounds), and the slowest orders and responses cut off by the window, the retention or the ack
/// timeout (the tail excluded).
fn bound_notes(a: &Analyzer) -> Vec<String> {
    let c = &a.counters;
    let mut notes = Vec::new();
    if let super::MatchRule::Symbol { window_ns } = a.cfg.matching {
        let window = flag_duration(window_ns);
        if c.matched > 0 {
            let earlier = c.symbol_matches_with_earlier_ticks;
            notes.push(format!(
                "the symbol rule timed each order from the newest tick of its symbol before it: where the \
                 strategy reacted to an earlier tick, its latency is longer than shown, so the tick_to_trade \
                 figures are lower bounds; {earlier} of {} matched orders had earlier ticks of their symbol in the \
                 {window} window ({} of them one no further before the tick matched than the order came after \
                 it); for exact correlation, carry the trigger's sequence in the order token and use \
                 --match token:REGEX",
                c.matched, c.symbol_matches_with_earlier_ticks_within_latency
            ));
        }
        let k = c.unmatched_beyond_window;
        if k > 0 {
            notes.push(format!(
                "{} unmatched under the symbol rule: the newest tick of {} symbol before {} came more than \
                 {window} before; if ticks triggered {}, {} latencies exceed the window and the figures exclude \
                 {} (the slowest, by construction): widen the window (--match symbol:WINDOW) to include {}",
                n(k, "order", "orders"),
                one(k, "its", "their"),
                one(k, "it", "them"),
                one(k, "it", "them"),
                one(k, "its", "their"),
                one(k, "it", "them"),
                one(k, "it", "them"),
            ));
        }
    }
    let k = c.unmatched_beyond_retention;
    if k > 0 {
        // The default, or ten times a retention already at it or beyond.
        let d = super::AnalyzeConfig::default().tick_retain_ns;
        let raise = a.cfg.tick_retain_ns.saturating_mul(10).max(d);
        notes.push(format!(
            "{} unmatched because {} trigger, which a feed brought, was older than --tick-retention ({}) \
             before {}: these are the slowest orders by construction, so the tick_to_trade figures exclude the \
             tail; raise --tick-retention (to {}, say: memory grows with it)",
            n(k, "order", "orders"),
            one(k, "its", "their"),
            flag_duration(a.cfg.tick_retain_ns),
            one(k, "it", "them"),
            flag_duration(raise),
        ));
    }
    let k = c.resent_answered;
    if k > 0 {
        notes.push(format!(
            "{} answered, on {} own connection, {} taken for {} (an id already entered that day: \
             orders_resent) and paired with no request: replayed after a reconnect, or the exchange acted on {} \
             as new {} (one that lets UserRefNums start again at a new login, as a simulator may; a capture \
             clock off US Eastern days), which then {} in no count: no order, sample or pair",
            n(k, "response", "responses"),
            one(k, "its", "their"),
            one(k, "an Enter", "Enters"),
            one(k, "a retransmission", "retransmissions"),
            one(k, "it", "them"),
            one(k, "order", "orders"),
            one(k, "is", "are"),
        ));
    }
    let k = c.late_responses;
    if k > 0 {
        notes.push(format!(
            "{} came after {} request had gone unacknowledged (--ack-timeout {}): order_to_ack excludes {}, \
             the slowest acknowledgements, and {} among the unacknowledged; raise --ack-timeout to pair {}",
            n(k, "response", "responses"),
            one(k, "its", "their"),
            flag_duration(a.cfg.ack_timeout_ns),
            one(k, "it", "them"),
            one(k, "its request is", "their requests are"),
            one(k, "it", "them"),
        ));
    }
    notes
}

/// The holes of the order streams: an order lost in one is in no count (nothing says it was sent but
/// the connection's hole and the response left unmatched), nor is a response lost in one.
fn holes_note(a: &Analyzer) -> Option<String> {
    let holes = |to_exchange: bool| {
        a.conn_list
            .iter()
            .map(|c| if to_exchange { &c.to_exchange } else { &c.from_exchange })
            .fold((0, 0), |(h, b), s| (h + s.reasm().holes, b + s.reasm().hole_bytes))
    };
    let mut lost = Vec::new();
    let (k, bytes) = holes(true);
    if k > 0 {
        lost.push(format!(
            "orders may have been lost in {} ({}) of the order streams (to the exchange): the matching counts \
             cover only the orders read, and a response to a lost order is unmatched",
            n(k, "hole", "holes"),
            n(bytes, "byte", "bytes")
        ));
    }
    let (k, bytes) = holes(false);
    if k > 0 {
        lost.push(format!(
            "responses may have been lost in {} ({}) of the response streams (from the exchange): an order \
             whose response was lost shows as unacknowledged, or awaiting a response at the capture's end",
            n(k, "hole", "holes"),
            n(bytes, "byte", "bytes")
        ));
    }
    (!lost.is_empty()).then(|| lost.join("; "))
}

/// The frames the capture cut (its snap length), what that lost, and how to capture them whole.
fn captured_short_note(a: &Analyzer) -> Option<String> {
    let c = &a.counters;
    if c.frames_captured_short == 0 {
        return None;
    }
    let mut lost = Vec::new();
    let (packets, messages, headers) = a.feeds.iter().fold((0, 0, 0), |(p, m, h), f| {
        (p + f.packets_captured_short, m + f.messages_not_captured, h + f.headers_not_captured)
    });
    if packets > 0 {
        let mut s = format!(
            "{} lost {} (counted per feed as not captured, not as gaps or malformed: no tick, nothing matched to \
             them",
            n(packets, "market-data packet", "market-data packets"),
            n(messages, "message", "messages"),
        );
        if headers > 0 {
            let _ = write!(
                s,
                "; {headers} lost even {} MoldUDP64 header, and {} messages show as missing",
                one(headers, "its", "their"),
                one(headers, "its", "their")
            );
        }
        s.push(')');
        lost.push(s);
    }
    let (segments, bytes) =
        a.conn_list.iter().flat_map(|c| [&c.to_exchange, &c.from_exchange]).fold((0, 0), |(s, b), d| {
            let k = d.counters();
            (s + k.segments_captured_short, b + k.bytes_not_captured)
        });
    if segments > 0 {
        lost.push(format!(
            "{} of order sessions lost {} (skipped as after a hole, not counted as holes: an order or response \
             cut is not read, so orders may be unmatched and acks missing)",
            n(segments, "TCP segment", "TCP segments"),
            n(bytes, "byte", "bytes")
        ));
    }
    Some(format!(
        "{} of the feeds and order sessions {} captured short, at most {} of each: {} of payload not captured; \
         {}; an order whose trigger was not captured is unmatched. Capture with a larger snap length \
         (tcpdump -s 0, capture --snaplen 0); capture --source ebpf keeps the headers and --snap-payload bytes \
         (64 by default), 256 bytes of frame at most: for larger packets, capture --source afpacket",
        n(c.frames_captured_short, "frame", "frames"),
        one(c.frames_captured_short, "was", "were"),
        n(c.captured_short_max_bytes, "byte", "bytes"),
        n(c.bytes_not_captured, "byte", "bytes"),
        lost.join("; ")
    ))
}

/// Width of the table's name column; longer names are cut to it, with a `~`.
const NAME_WIDTH: usize = 44;

/// A row's name in the table: indented, control characters escaped (a symbol's bytes are the feed's),
/// cut to [`NAME_WIDTH`] characters (never inside an escape).
fn table_name(indent: &str, name: &str) -> String {
    let pieces: Vec<String> = indent.chars().chain(name.chars()).map(escaped_char).collect();
    let width = |p: &[String]| p.iter().map(|x| x.chars().count()).sum::<usize>();
    if width(&pieces) <= NAME_WIDTH {
        return pieces.concat();
    }
    let mut out = String::new();
    let mut used = 0;
    for p in &pieces {
        let w = p.chars().count();
        if used + w > NAME_WIDTH - 1 {
            break;
        }
        out.push_str(p);
        used += w;
    }
    out.push('~');
    out
}

/// `c`, or its escape when it is a control character (which would act on the terminal).
fn escaped_char(c: char) -> String {
    if c.is_control() { c.escape_default().collect() } else { c.to_string() }
}

/// `name` with its control characters escaped, for the lines under the table.
fn escaped(name: &str) -> String {
    name.chars().map(escaped_char).collect()
}

/// The table's rows, names left-aligned, figures right-aligned; each column as wide as its widest
/// cell, no narrower than the usual widths (the exact extremes of garbage timestamps, and the counts of
/// a day's capture, are wider: they widen their column instead of shifting their row).
fn lay_out(cells: &[[String; 10]]) -> String {
    let mut widths = [NAME_WIDTH, 8, 11, 11, 11, 11, 11, 11, 11, 11];
    for r in cells {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut o = String::new();
    for r in cells {
        let _ = write!(o, "{:<w$}", r[0], w = widths[0]);
        for (cell, w) in r[1..].iter().zip(&widths[1..]) {
            let _ = write!(o, " {cell:>w$}");
        }
        o.push('\n');
    }
    o
}

impl Report {
    /// The terminal table: every metric with its percentiles and, beside them, the counters that
    /// qualify them. Percentiles with fewer than 100 samples beyond them carry a `*`.
    pub fn render(&self) -> String {
        let mut o = String::new();
        let c = &self.counters;
        let header = ["metric", "count", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean"];
        let mut cells: Vec<[String; 10]> = vec![header.map(str::to_owned)];
        let mut any_unstable = false;
        // Samples that qualify a row's figures, said under the table.
        let mut notes = Vec::new();
        // The coarsest record-time unit among the inputs, when record times were used at all.
        let records_used = c.ts_sources.keys().any(|k| TrailerKind::ALL.iter().all(|t| t.name() != *k));
        let coarsest_record_unit =
            self.input.resolutions.iter().map(|r| r.record_resolution_ns).max().filter(|_| records_used);
        let mut row = |parent: Option<&str>, m: &MetricReport| {
            let (indent, full) = match parent {
                Some(p) => ("  ", escaped(&format!("{p} {}", m.name))),
                None => ("", escaped(&m.name)),
            };
            if m.negative > 0 {
                // A trigger's time is its first copy among the feeds analysed: one that came first on
                // another feed leaves the order before it, as the matching line says.
                let metric = parent.unwrap_or(&m.name);
                let or_feed = if matches!(metric, "tick_to_trade" | "tick_to_snd") {
                    ", or the trigger's earlier copy came on a feed not analysed"
                } else {
                    ""
                };
                let or_back =
                    if self.counters.time_steps_back > 0 { ", or the capture's clock stepped back" } else { "" };
                // Record times coarser than the samples: rounding alone makes some negative (a µs pcap of
                // delays of a few µs), whatever the clocks.
                let rounding = match coarsest_record_unit.filter(|&u| u > 1) {
                    Some(u) if m.min_ns.is_some_and(|v| v >= -(u as i64)) => {
                        format!(
                            "the record times count in units of {}, and every negative sample lies within one",
                            format_ns(u as i64)
                        )
                    }
                    _ => String::new(),
                };
                let why = match m.clocks.as_ref().filter(|_| metric == METRICS[super::S2W]) {
                    Some(c) if host_captured(&c.to) => format!(
                        "the order frames are timed on a host ({}): a capture on the sending host (AF_PACKET, \
                         a tc/eBPF hook, libpcap) runs before the driver's send stamp, so its frames precede SND \
                         by construction, on one clock; snd_to_wire needs a tap, or a hardware-stamped capture, \
                         downstream of the NIC (captured by another host, that host's clock and the sender's \
                         disagree){or_back}",
                        c.to.join("+")
                    ),
                    _ if !rounding.is_empty() => format!("{rounding}: rounding alone can do that{or_feed}{or_back}"),
                    _ => format!("the clocks of the two ends disagree{or_feed}{or_back}"),
                };
                notes.push(format!("{full}: {} of {} negative ({why})", m.negative, n(m.count, "sample", "samples")));
            }
            if m.saturated > 0 {
                notes.push(format!(
                    "{full}: {} beyond an hour either way (percentiles there are an hour's bucket; min and max exact)",
                    n(m.saturated, "sample", "samples")
                ));
            }
            // Percentiles to the 3 digits the histogram keeps; min, max and mean are exact.
            let mut f = |v: Option<i64>, label: &str| match v {
                None => "-".to_owned(),
                Some(v) if m.unstable.contains(&label) => {
                    any_unstable = true;
                    format!("{}*", format_ns_3(v))
                }
                Some(v) if label.is_empty() => format_ns(v),
                Some(v) => format_ns_3(v),
            };
            cells.push([
                table_name(indent, &m.name),
                m.count.to_string(),
                f(m.min_ns, ""),
                f(m.p50_ns, "p50"),
                f(m.p90_ns, "p90"),
                f(m.p99_ns, "p99"),
                f(m.p99_9_ns, "p99.9"),
                f(m.p99_99_ns, "p99.99"),
                f(m.max_ns, ""),
                f(m.mean_ns, ""),
            ]);
        };
        for m in &self.metrics {
            // The TX-event metrics only when TX events were given (the table is unchanged otherwise).
            if !self.tx_given && matches!(m.name.as_str(), "tick_to_snd" | "snd_to_wire") {
                continue;
            }
            row(None, m);
            for d in &m.dims {
                row(Some(&m.name), d);
            }
        }
        o.push_str(&lay_out(&cells));
        if any_unstable {
            let _ = writeln!(o, "* fewer than 100 samples beyond this percentile: not stable");
        }
        // Which clocks each figure subtracts (measurement.md: the clock domain of each end).
        let clocked: Vec<(&str, &Clocks)> =
            self.metrics.iter().filter_map(|m| Some((m.name.as_str(), m.clocks.as_ref()?))).collect();
        if !clocked.is_empty() {
            let ends = |v: &[&str]| if v.is_empty() { "?".to_owned() } else { v.join("+") };
            let each: Vec<String> =
                clocked.iter().map(|(n, c)| format!("{n} {} -> {}", ends(&c.from), ends(&c.to))).collect();
            let _ = writeln!(o, "clocks: {}", each.join(", "));
            // Record times of several files may be several host clocks under one name.
            let files = self.input.resolutions.len();
            let records = |v: &[&str]| v.iter().any(|n| clock_of(n) == "host");
            if files > 1 && clocked.iter().any(|(n, c)| *n != METRICS[3] && (records(&c.from) || records(&c.to))) {
                let _ = writeln!(
                    o,
                    "clocks: record times come from {files} input files: if different hosts recorded them (not one \
                     capture rotated), a sample whose two ends are in different files subtracts one host's clock \
                     from another's"
                );
            }
            // The exchange's clock against the capture's is what exchange_to_capture measures: only its
            // capture end is judged.
            let mixed = |n: &str, c: &Clocks| match n == METRICS[3] {
                true => Clocks::mixed(c.to.iter()),
                false => Clocks::mixed(c.from.iter().chain(&c.to)),
            };
            for (n, c) in clocked.iter().filter(|(n, c)| mixed(n, c)) {
                let _ = writeln!(
                    o,
                    "clocks: {n} subtracts {} times from {} times: more than one clock, whose offsets from one \
                     another are in the samples between them (wirestamp does not align them; per dimension in \
                     --json)",
                    ends(&c.from),
                    ends(&c.to)
                );
            }
        }
        for n in notes {
            let _ = writeln!(o, "{n}");
        }
        if let Some(line) = self.load.line(self.first_time_ns.unwrap_or(0)) {
            let _ = writeln!(o, "{line}");
        }
        if let Some(line) = self.settings.line() {
            let _ = writeln!(o, "{line}");
        }
        if self.tx_given {
            let dropped = match c.tx_writes_dropped {
                0 => String::new(),
                k => format!(
                    "; {} forgotten for room before {} came",
                    n(k, "write", "writes"),
                    one(k, "its order", "their orders")
                ),
            };
            // Events that join nothing are a wrong file or swapped ends, not a run without them.
            let none = if c.orders_with_snd == 0 && c.orders > 0 {
                "; no order joined: do the events' local (client) and remote (exchange) ends name a connection of the capture?"
            } else {
                ""
            };
            let _ = writeln!(
                o,
                "\nTX events: {}; orders joined to the SND time of the write carrying their last byte: {}, without: {}{dropped}{none}",
                c.tx_events, c.orders_with_snd, c.orders_without_snd
            );
        }
        let _ = writeln!(
            o,
            "\nmatching ({}): {}, {} matched{}, {} unmatched{}, {} ambiguous, {} (not correlated){}",
            self.matching,
            n(c.orders, "order", "orders"),
            c.matched,
            match c.trigger_after_order {
                0 => String::new(),
                k => format!(
                    " ({k} to a trigger stamped after {}: the clocks of the feed's and the orders' taps disagree, \
                     or the trigger's earlier copy came on a feed not analysed{})",
                    one(k, "it", "them"),
                    if c.time_steps_back > 0 { ", or the capture's clock stepped back" } else { "" }
                ),
            },
            c.unmatched_orders,
            if self.matching.starts_with("token") {
                format!(" ({} without a readable token)", c.no_token)
            } else {
                String::new()
            },
            c.ambiguous,
            n(c.not_correlated, "cancel or modify", "cancels and modifies"),
            // Not orders, so in none of the counts before: said, so that none is lost silently.
            match c.orders_resent {
                0 => String::new(),
                k => format!(
                    "; {} the exchange ignores (an order id already entered that day): not orders",
                    n(k, "retransmitted Enter", "retransmitted Enters")
                ),
            }
        );
        // Every order without a readable token: the regex does not fit the firm's tokens. Say what
        // one looks like, so that the fix is one look away.
        if c.orders > 0 && c.no_token == c.orders {
            let _ = writeln!(
                o,
                "  no order's token gave a sequence under {}: {}; the regex's first group must capture \
                 the trigger's MoldUDP64 sequence (decimal) in the ClOrdID / order token",
                self.matching,
                match &self.first_unreadable_token {
                    Some(t) => format!("the first was {t}"),
                    None => "the orders carry no token".to_owned(),
                }
            );
        }
        // Index restarts are rare (a sequence jump past the index's bound): named only when they happened.
        let resets = match c.tick_index_resets {
            0 => String::new(),
            k => format!(", sequence jumps past the tick index (restarted there): {k}"),
        };
        let unsolicited = match c.unsolicited_cancels {
            0 => String::new(),
            k => format!(", {} the exchange sent unasked", n(k, "cancel", "cancels")),
        };
        let awaiting = match c.awaiting_at_end {
            0 => String::new(),
            k => {
                format!(" ({k} more awaiting a response at the capture's end, sent less than the timeout before it)")
            }
        };
        // What "unacknowledged" means here, beside the count: no response within --ack-timeout.
        let within = match c.unacked {
            0 => String::new(),
            _ => format!(" (no response within {})", flag_duration(self.settings.ack_timeout_ns)),
        };
        let _ = writeln!(
            o,
            "ticks: {} ({}), {}, {} too late to arbitrate{resets}; responses: {} paired, {} unacknowledged{within}{awaiting}, {} unmatched{unsolicited}",
            c.ticks,
            one(c.ticks, "first copy", "first copies"),
            n(c.tick_copies, "later copy", "later copies"),
            c.stale_copies,
            c.acked,
            n(c.unacked, "order", "orders"),
            n(c.unmatched_responses, "response", "responses")
        );
        for f in &self.feeds {
            let types: Vec<String> = f.itch_types.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(
                o,
                "feed {}{}: {}, {} ({}) seq {}, {}, {} ({} missing{}), {}, {} out of order, {}, {} unknown and {}{}",
                f.feed,
                if f.detected { " (detected)" } else { "" },
                n(f.packets, "packet", "packets"),
                n(f.messages, "message", "messages"),
                types.join(", "),
                match (f.first_seq, f.last_seq) {
                    (Some(a), Some(b)) => format!("{a}..{b}"),
                    _ => "-".to_owned(),
                },
                n(f.heartbeats, "heartbeat", "heartbeats"),
                n(f.gaps, "gap", "gaps"),
                f.missing,
                match f.gaps_forgotten {
                    0 => String::new(),
                    k => format!(
                        "; {} no longer tracked: late packets filling {} count as duplicates",
                        n(k, "gap", "gaps"),
                        one(k, "it", "them")
                    ),
                },
                n(f.duplicates, "duplicate", "duplicates"),
                f.out_of_order,
                n(f.malformed_packets, "malformed packet", "malformed packets"),
                f.itch_unknown,
                // The noun goes with the nearer count ("1 unknown and 0 truncated ITCH messages").
                n(f.itch_truncated, "truncated ITCH message", "truncated ITCH messages"),
                match (&f.first_bad_frame, &f.first_bad_reason) {
                    (Some(i), Some(r)) => format!("; first bad frame {i}: {r}"),
                    _ => String::new(),
                }
            );
            if f.packets_captured_short > 0 {
                let _ = writeln!(
                    o,
                    "  {} captured short: {} not captured{}",
                    n(f.packets_captured_short, "packet", "packets"),
                    n(f.messages_not_captured, "message", "messages"),
                    match f.headers_not_captured {
                        0 => String::new(),
                        h => format!(", {h} cut inside {} header", one(h, "its", "their")),
                    }
                );
            }
            if let Some(why) = f.doubt() {
                let _ = writeln!(
                    o,
                    "  {why}: {} may not be MoldUDP64 carrying NASDAQ ITCH 5.0, and then its counts, gaps and \
                     samples mean nothing (a feed is detected by its MoldUDP64 framing alone)",
                    f.feed
                );
            }
        }
        for conn in &self.connections {
            for (dir, s) in [("->", &conn.to_exchange), ("<-", &conn.from_exchange)] {
                let k = &s.counters;
                let _ = writeln!(
                    o,
                    "orders {} {dir} {}{}: {}, {} ({} unknown, {} malformed), TCP: {}, {} retransmitted, {} out of order, {} ({}), {} skipped to resync, {}, {} cut at the end{}",
                    conn.connection,
                    conn.session,
                    if conn.detected { " (detected)" } else { "" },
                    n(k.soup_packets, "SoupBinTCP packet", "SoupBinTCP packets"),
                    n(k.ouch_messages, "OUCH message", "OUCH messages"),
                    k.ouch_unknown,
                    k.ouch_malformed,
                    n(s.tcp.segments, "segment", "segments"),
                    s.tcp.retransmitted_segments,
                    s.tcp.out_of_order_segments,
                    n(s.tcp.holes, "hole", "holes"),
                    n(s.tcp.hole_bytes, "byte", "bytes"),
                    n(k.resync_skipped_bytes, "byte", "bytes"),
                    n(k.framing_errors, "framing error", "framing errors"),
                    n(k.truncated_tail_bytes, "byte", "bytes"),
                    // The earliest frame of a hole (the one that showed it missing), framing error,
                    // malformed message, bytes not captured or cut tail.
                    k.first_bad_frame.map(|i| format!("; first anomaly found at frame {i}")).unwrap_or_default()
                );
                if k.segments_captured_short > 0 {
                    let _ = writeln!(
                        o,
                        "  {} captured short: {} not captured",
                        n(k.segments_captured_short, "segment", "segments"),
                        n(k.bytes_not_captured, "byte", "bytes")
                    );
                }
            }
        }
        let srcs: Vec<String> = c.ts_sources.iter().map(|(k, v)| format!("{k} {v}")).collect();
        let _ = writeln!(
            o,
            "frames: {} ({} not in any feed or session, {} with {}, {}); timestamps used: {}; with clock warnings: {}",
            c.frames,
            c.other_frames,
            c.malformed_frames,
            one(c.malformed_frames, "a malformed header", "malformed headers"),
            n(c.ip_fragments, "IP fragment", "IP fragments"),
            if srcs.is_empty() { "none".to_owned() } else { srcs.join(", ") },
            c.degraded_clock_frames
        );
        if !self.input.records_without_frame.is_empty() {
            let _ = writeln!(o, "{}", records_without_frame_line(&self.input.records_without_frame));
        }
        if self.input.frames_without_time > 0 {
            let _ = writeln!(
                o,
                "{} no timestamp (pcapng Simple Packet Blocks) and {} not used",
                n(self.input.frames_without_time, "frame had", "frames had"),
                one(self.input.frames_without_time, "was", "were")
            );
        }
        for t in self.input.trailers.iter().filter(|t| t.worth_a_line()) {
            let _ = writeln!(o, "{}", t.line());
        }
        // The clock's granularity beside the figures it limits (measurement.md): said when coarser
        // than a nanosecond and record times (not only taps') were used.
        for r in self.input.resolutions.iter().filter(|r| records_used && r.record_resolution_ns > 1) {
            let _ = writeln!(
                o,
                "the record timestamps of {} count in units of {}: a figure within a few units of it is no finer",
                r.file,
                format_ns(r.record_resolution_ns as i64)
            );
        }
        for n in &self.notes {
            let _ = writeln!(o, "note: {n}");
        }
        // What went wrong reading the inputs, in the report too (stderr has it as well): a saved report
        // must not pass for one of whole captures.
        if let Some(stopped) = &self.input.stopped {
            let _ = writeln!(o, "input: {stopped}: the figures cover only the frames before it");
        }
        for w in &self.input.warnings {
            let _ = writeln!(o, "input: {w}");
        }
        if c.reordered_frames > 0 {
            // Beyond the allowance with no step back: frames drift out of order a little at a time.
            let waited = if c.largest_reorder_ns <= super::REORDER_NS.unsigned_abs() {
                "what comes up to 1ms out of order is waited for"
            } else if c.time_steps_back == 0 {
                "more than the 1ms the analysis waits for: a trigger, order or response recorded that far out of \
                 order may be unmatched or paired with another"
            } else {
                // Every frame after a step back is behind the latest time before it.
                "the step back below, and what comes up to 1ms out of order besides is waited for"
            };
            let _ = writeln!(
                o,
                "time: {} recorded after a frame timed later (out of time order, by up to {}): {waited}",
                n(c.reordered_frames, "frame was", "frames were"),
                format_ns(i64::try_from(c.largest_reorder_ns).unwrap_or(i64::MAX))
            );
        }
        if c.time_steps_back > 0 {
            let _ = writeln!(
                o,
                "time: {} timed more than 1ms before the frame before {} (the capture's clock stepped back, or \
                 frames were recorded far out of order; the largest step {}, first at frame {}): a latency across a \
                 step is wrong by it",
                n(c.time_steps_back, "frame is", "frames are"),
                one(c.time_steps_back, "it", "them"),
                format_ns(i64::try_from(c.largest_step_back_ns).unwrap_or(i64::MAX)),
                c.first_step_back_frame.unwrap_or(0)
            );
        }
        if c.capture_drops > 0 {
            let _ = writeln!(
                o,
                "capture: the input records {} lost while it was captured (pcapng interface statistics, ERF loss \
                 counters): the figures may miss {}",
                n(c.capture_drops, "packet", "packets"),
                one(c.capture_drops, "it", "them")
            );
        }
        o
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trailer::KindCounts;

    /// A clean file's tap-trailer line is its stamps alone; every other count is named only when it
    /// is not zero, a count of one in the singular. The JSON keeps every key (serde, not this line).
    #[test]
    fn the_tap_trailer_line_names_only_counts_not_zero() {
        let line = |mode, stats| InputTrailers::new("t.pcap".to_owned(), mode, stats).line();
        let clean = TrailerStats {
            frames: 84,
            stamped: KindCounts { arista7150: 70, ..KindCounts::default() },
            keyframes: KindCounts { arista7150: 14, ..KindCounts::default() },
            no_trailer: 14,
            ..TrailerStats::default()
        };
        assert_eq!(
            line(TrailerMode::Auto, clean),
            "tap trailers in t.pcap (--trailer auto): 70 of 84 frames stamped (arista7150 70), 14 keyframes (arista7150 14)"
        );
        let none = TrailerStats { frames: 5, no_trailer: 5, ..TrailerStats::default() };
        assert_eq!(
            line(TrailerMode::Forced(TrailerKind::Metamako), none),
            "tap trailers in t.pcap (--trailer metamako): 0 of 5 frames stamped"
        );
        let all = TrailerStats {
            frames: 1,
            stamped: KindCounts { metamako: 1, ..KindCounts::default() },
            keyframes: KindCounts { arista7280: 1, ..KindCounts::default() },
            keyframes_rejected: 1,
            freq_rejected: 1,
            no_trailer: 0,
            rejected: 2,
            before_keyframe: 1,
            keyframe_too_old: 3,
            truncated: 1,
            stale: 1,
            unsynced: 0,
            degraded: 2,
            extended: 1,
        };
        assert_eq!(
            line(TrailerMode::Auto, all),
            "tap trailers in t.pcap (--trailer auto): 1 of 1 frame stamped (metamako 1), 1 keyframe (arista7280 1; 1 \
             with its tick frequency off nominal: nominal used), 1 keyframe refused, 2 candidate stamps refused, 1 \
             counter frame before the first keyframe, 3 counter frames with their keyframe too old, 1 frame captured \
             short (a trailer at its end, if any, unreadable); stamps flagged: 1 stale keyframe, 2 degraded, 1 extended"
        );
    }

    /// The load line of a capture spanning 354 days with 2 orders and no tick (OMI's samples, as
    /// their record times give it): the span in days and hours, the order rate in 3 significant digits
    /// (2 / 30,596,047.619 s = 6.537e-8, below a ten-thousandth: with a power of ten), none shown as a zero it is not; a busiest interval of one order in the
    /// singular, a day and 5 s after the start.
    #[test]
    fn the_load_line_reads_long_spans_and_small_rates() {
        const S: i64 = 1_000_000_000;
        let span = 30_596_047_619_000_000;
        let load = Load {
            span_ns: Some(span),
            ticks_per_s: Some(0.0),
            orders_per_s: Some(2e9 / span as f64),
            busiest_ticks: None,
            busiest_orders: Some(Busiest { start_ns: 7 + 86_405 * S, len_ns: 988_926_000, count: 1 }),
        };
        assert_eq!(
            load.line(7).unwrap(),
            "load: 354d 2h of capture; on average 0 ticks/s and 6.54e-8 orders/s; busiest interval: 1 order in 988.926ms \
             from +1d 0h"
        );
        // Below a minute as every figure; beyond, the largest two whole units, cut down.
        let spans = [335_514_000, 59_999 * S / 1_000, 60 * S, 3_599 * S + S / 2, 3_600 * S, 86_399 * S, 86_400 * S];
        assert_eq!(spans.map(format_span), ["335.514ms", "59.999s", "1m 0s", "59m 59s", "1h 0m", "23h 59m", "1d 0h"]);
        // 3 significant digits at every size.
        let rates = [0.0, 0.000_123_4, 0.5, 9.876, 12.34, 596_000.0, 14_500.0, 2_500_000.0];
        assert_eq!(rates.map(rate), ["0", "0.000123", "0.500", "9.88", "12.3", "596k", "14.5k", "2.50M"]);
        // Rounded first: a value that rounds up to the next power of ten takes its unit and decimals.
        let up = [9.996, 999.6, 999_999.0, 0.099_96];
        assert_eq!(up.map(rate), ["10.0", "1.00k", "1.00M", "0.100"]);
    }

    /// Sources of one clock are one clock: the host's records, kernel stamps, hook times and software
    /// SND times; a NIC's stamps and hardware SND times; a tap's. Two of these are mixed.
    #[test]
    fn sources_are_judged_by_the_clock_behind_them() {
        let mixed = |v: &[&'static str]| Clocks::mixed(v.iter());
        assert!(!mixed(&["kernel_sw", "bpf_hook", "pcap", "snd_sw"]));
        assert!(!mixed(&["kernel_hw", "snd_hw"]));
        assert!(!mixed(&["metamako", "metamako"]));
        assert!(mixed(&["pcap", "snd_hw"]));
        assert!(mixed(&["pcap", "metamako"]));
        assert!(mixed(&["metamako", "cpacket"]));
        assert!(mixed(&["erf", "pcap"]));
        assert!(mixed(&[]));
    }

    /// A count of a billion samples and a maximum of 30 years are wider than their columns: the
    /// columns widen, every row alike. A name with a newline (a symbol's bytes) stays on its row,
    /// escaped; a long one is cut, with a `~`.
    #[test]
    fn wide_cells_widen_their_column_and_names_stay_on_their_row() {
        let row = |name: &str, count: &str, max: &str| {
            let mut r: [String; 10] = std::array::from_fn(|_| "1ns".to_owned());
            r[0] = name.to_owned();
            r[1] = count.to_owned();
            r[8] = max.to_owned();
            r
        };
        let cells = [row("a", "1000000000", "946080000.000s"), row(&table_name("  ", "symbol:A\nB"), "7", "1ns")];
        let ones = |n: usize| vec!["1ns"; n].iter().map(|c| format!(" {c:>11}")).collect::<String>();
        let want = format!(
            "{:<44} 1000000000{} 946080000.000s {:>11}\n{:<44} {:>10}{} {:>14} {:>11}\n",
            "a",
            ones(6),
            "1ns",
            "  symbol:A\\nB",
            "7",
            ones(6),
            "1ns",
            "1ns"
        );
        assert_eq!(lay_out(&cells), want);
        let long = "x".repeat(50);
        assert_eq!(table_name("", &long), format!("{}~", "x".repeat(43)));
        // An escape is never cut: one that would cross the width goes whole.
        let esc = format!("{}\u{1b}yyyy", "x".repeat(40));
        assert_eq!(table_name("", &esc), format!("{}~", "x".repeat(40)));
        assert_eq!(table_name("  ", "é".repeat(50).as_str()).chars().count(), 44);
    }
}
