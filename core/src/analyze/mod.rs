//! Tick-to-trade analysis: classify frames into feeds and order sessions, decode them, arbitrate A/B
//! copies, correlate each order with the tick that triggered it, and keep honest statistics.
//!
//! [`Analyzer`] is fed frames in time order (from a file or a live source alike) and does no IO.
//! Matched pairs and closed one-second intervals are queued for the caller to drain (so memory stays
//! bounded by open orders and retained ticks, not by capture length); [`Analyzer::finish`] returns the
//! [`report::Report`].

mod accounts;
pub mod arbiter;
mod backlog;
mod bounded;
mod fast;
pub use fast::{PlainUdp, plain_udp, udp_shape};
pub mod flows;
pub mod orders;
pub mod report;
pub mod token;
pub mod tx;

use crate::dissect::{Dissection, Transport};
use crate::frame::Frame;
use crate::fxhash::FxHashMap;
use crate::proto::itch::LocateMap;
use crate::proto::market::{MessageKey, MoldItchDecoder};
use crate::proto::moldudp64::{SeqTracker, Session};
use crate::proto::{OrderDir, OrderId, OrderSummary, Symbol};
use crate::stats::{Latency, Tally};
use crate::time::{ClockQuality, TsSource, us_eastern_offset_s};
use arbiter::{Arbiter, Arrival, Ring, SessionRef};
use flows::{FeedSpec, FlowSpec, OrderProto, OrderSpec, looks_like_mold, starts_soupbin};
use orders::{FrameRef, OrderMsg, OrderStream};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;

/// How orders are matched to the ticks that triggered them.
#[derive(Debug, Clone)]
pub enum MatchRule {
    /// The order's ClOrdID / token carries the trigger's MoldUDP64 sequence in the regex's first group.
    Token(token::TokenRule),
    /// The last market-data message for the order's symbol before the order, within the window.
    Symbol {
        /// Window, ns.
        window_ns: i64,
    },
}

impl MatchRule {
    /// Parses `token:REGEX` or `symbol[:WINDOW]` (WINDOW like `500us`, `1ms`, `1s`, more than 0). The
    /// error says what is wrong; the caller says where the rule came from.
    pub fn parse(s: &str) -> Result<MatchRule, String> {
        if let Some(re) = s.strip_prefix("token:") {
            let r = regex::Regex::new(re).map_err(|e| format!("bad regular expression: {e}"))?;
            if r.captures_len() < 2 {
                return Err(
                    "the regular expression needs a capture group holding the sequence, e.g. token:T(\\d+)".to_owned()
                );
            }
            Ok(MatchRule::Token(token::TokenRule::new(&r)))
        } else if s == "symbol" {
            Ok(MatchRule::Symbol { window_ns: 1_000_000_000 })
        } else if let Some(w) = s.strip_prefix("symbol:") {
            let window_ns = parse_duration_ns(w).filter(|ns| *ns > 0).ok_or_else(|| {
                format!("`{w}` is not a duration above 0 with its unit (ns, us, ms, s; e.g. 500us, 2ms, 1s)")
            })?;
            Ok(MatchRule::Symbol { window_ns })
        } else {
            Err("expected token:REGEX or symbol[:WINDOW]".to_owned())
        }
    }

    fn name(&self) -> String {
        match self {
            MatchRule::Token(r) => format!("token:{}", r.as_str()),
            MatchRule::Symbol { window_ns } => format!("symbol:{}", crate::stats::format_ns(*window_ns)),
        }
    }
}

/// Parses `123ns`, `5us` (or `5µs`), `2ms`, `1s` into ns. A bare number is refused: `1` meant as a
/// second and read as a nanosecond gives a plausible, wrong report.
pub fn parse_duration_ns(s: &str) -> Option<i64> {
    let (num, mult) = if let Some(n) = s.strip_suffix("ns") {
        (n, 1)
    } else if let Some(n) = s.strip_suffix("us").or_else(|| s.strip_suffix("µs")) {
        (n, 1_000)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1_000_000)
    } else {
        (s.strip_suffix('s')?, 1_000_000_000)
    };
    let v: i64 = num.trim().parse().ok()?;
    v.checked_mul(mult).filter(|v| *v >= 0)
}

/// What to analyse and how.
#[derive(Debug, Clone)]
pub struct AnalyzeConfig {
    /// Feeds and order sessions; empty: detect them from the traffic.
    pub flows: Vec<FlowSpec>,
    /// Correlation rule.
    pub matching: MatchRule,
    /// Break tick-to-trade down by symbol too.
    pub by_symbol: bool,
    /// How long ticks are kept for correlation and arbitration, ns.
    pub tick_retain_ns: i64,
    /// How long an order waits for its response before it counts as unacknowledged, ns.
    pub ack_timeout_ns: i64,
    /// Length of one statistics interval (for interval logs), ns.
    pub interval_ns: i64,
    /// TX events ([`Analyzer::tx_event`]) will be fed: count the orders with and without an SND time.
    pub tx_events: bool,
    /// Queue every matched pair for [`Analyzer::drain_pairs`] (off: only counted and recorded, which
    /// saves building two strings per order when nobody reads them).
    pub keep_pairs: bool,
    /// Let [`Analyzer::frame_fast`] take the frames it can (off: every frame goes through
    /// [`Analyzer::frame`]; the results are the same, which tests check).
    pub fast_path: bool,
}

impl Default for AnalyzeConfig {
    fn default() -> Self {
        AnalyzeConfig {
            flows: Vec::new(),
            matching: MatchRule::Symbol { window_ns: 1_000_000_000 },
            by_symbol: false,
            tick_retain_ns: 1_000_000_000,
            ack_timeout_ns: 10_000_000_000,
            interval_ns: 1_000_000_000,
            tx_events: false,
            keep_pairs: true,
            fast_path: true,
        }
    }
}

/// One matched tick → order pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// Trigger's MoldUDP64 session.
    pub tick_session: Session,
    /// Trigger's sequence number.
    pub tick_seq: u64,
    /// Capture time of the trigger's earliest copy.
    pub tick_time_ns: i64,
    /// Order identifier (UserRefNum, or token), as text.
    pub order_id: String,
    /// ClOrdID / token text.
    pub token: String,
    /// Capture time of the frame carrying the order's first byte.
    pub order_time_ns: i64,
    /// Index of that frame.
    pub order_frame: u64,
    /// Index of the frame carrying the order's last byte.
    pub order_last_frame: u64,
    /// `order_time_ns - tick_time_ns`.
    pub latency_ns: i64,
}

/// The metrics wirestamp reports.
pub const METRICS: [&str; 6] =
    ["tick_to_trade", "order_to_ack", "feed_ab_delay", "exchange_to_capture", "tick_to_snd", "snd_to_wire"];
const T2T: usize = 0;
const O2A: usize = 1;
const AB: usize = 2;
const E2C: usize = 3;
/// Trigger tick → SND time of the write carrying the order's last byte.
const T2S: usize = 4;
/// SND time → capture time of the frame carrying the order's first byte.
const S2W: usize = 5;

/// One metric: total and per-dimension histograms.
///
/// Dimensions are slots addressed by index, their names built once per feed, connection or symbol.
/// A sample with several dimensions (tick_to_trade, order_to_ack: rare) is recorded into each slot
/// and into the analyzer's open interval. A sample with one dimension (exchange_to_capture,
/// feed_ab_delay: one per market-data message) is recorded once, into its feed's open-interval
/// [`Tally`] (`FeedState::open`); at the interval's close those are added to the interval and to
/// the slot. The total is the sum of the closed intervals, added at each close. Histogram sums are
/// exact, so every figure equals recording each sample everywhere, for two to three fewer records
/// per sample.
#[derive(Debug, Clone, Default)]
pub struct Metric {
    /// Samples of the closed intervals (the open one is added by [`Metric::total`]).
    closed: Latency,
    /// Per dimension (`feed:A`, `session:...`, `symbol:AAPL`), in order of first sample.
    slots: Vec<(String, Latency)>,
    by_name: HashMap<String, usize>,
}

impl Metric {
    /// The slot of dimension `name`, created on first use.
    fn slot(&mut self, name: String) -> usize {
        if let Some(&i) = self.by_name.get(&name) {
            return i;
        }
        self.slots.push((name.clone(), Latency::new()));
        self.by_name.insert(name, self.slots.len() - 1);
        self.slots.len() - 1
    }

    /// Records a sample of several dimensions into one of them (the caller records the interval).
    #[inline]
    fn record_slot(&mut self, ns: i64, slot: usize) {
        self.slots[slot].1.record(ns);
    }

    /// All samples: the closed intervals, `open` (the interval in progress) and `tallies`, its
    /// single-dimension samples by slot.
    pub fn total(&self, open: &Latency, tallies: &[(usize, &Tally)]) -> Latency {
        let mut t = self.closed.clone();
        t.merge(open);
        for (_, o) in tallies {
            t.add_tally(o);
        }
        t
    }

    /// Per-dimension histograms (with the open interval's `tallies`), sorted by name.
    pub fn dims(&self, tallies: &[(usize, &Tally)]) -> Vec<(String, Latency)> {
        let mut v: Vec<(String, Latency)> = self.slots.clone();
        for (slot, o) in tallies {
            v[*slot].1.add_tally(o);
        }
        v.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        v
    }
}

/// A closed statistics interval of one metric (for HdrHistogram interval logs).
#[derive(Debug, Clone)]
pub struct Interval {
    /// Metric name (one of [`METRICS`]).
    pub metric: &'static str,
    /// Interval start, ns since the epoch: a multiple of the interval length, or the capture's first
    /// time in the first interval.
    pub start_ns: i64,
    /// Interval length, ns: to the next multiple, or to the capture's last time in the last interval.
    pub len_ns: i64,
    /// The samples of the interval.
    pub latency: Latency,
}

#[derive(Debug)]
struct FeedState {
    spec: FeedSpec,
    detected: bool,
    /// Dimension slots of this feed in exchange_to_capture, feed_ab_delay and tick_to_trade.
    slots: [Option<usize>; 3],
    /// The open interval's samples in the first two slots (exchange_to_capture, feed_ab_delay),
    /// allocated on first use: a message records straight into its feed's.
    open: [Option<Box<Tally>>; 2],
    decoder: MoldItchDecoder,
    frames: u64,
    bad_packets: u64,
    first_bad_frame: Option<u64>,
    first_bad_reason: Option<String>,
    /// Lowest and highest message sequence seen.
    /// (`(u64::MAX, 0)` while none: see [`FeedState::seq_range`]).
    seq_span: (u64, u64),
    /// The session of the feed's latest packet, its stream in the sequence tracker and its session
    /// in the arbiter: the packets the fast path takes continue it ([`fast`]).
    lane: Option<(Session, usize, SessionRef)>,
    /// The sources that timed its frames ([`TsSource::clock_bit`]s): the clocks at its metrics' ends.
    clocks: u32,
    /// MoldUDP64 sessions it brought (at most [`MAX_FEED_SESSIONS`]).
    sessions: u32,
    /// Packets of further sessions, not analysed, and the first one's frame and session.
    sessions_beyond: u64,
    first_session_beyond: Option<(u64, Session)>,
    /// Packets the capture cut (its snap length), those of them cut inside their MoldUDP64 header,
    /// the messages their headers announce that were not captured whole, and the payload bytes cut.
    packets_captured_short: u64,
    headers_not_captured: u64,
    messages_not_captured: u64,
    bytes_not_captured: u64,
}

#[derive(Debug)]
struct SessionState {
    spec: OrderSpec,
    detected: bool,
    /// Detected, and no Enter Order seen yet to show the OUCH version (`spec.proto` a default).
    version_unknown: bool,
    /// Dimension slots of this session, by metric index (all its connections: a client that
    /// reconnects, or several client processes, are one session).
    slots: [Option<usize>; METRICS.len()],
    /// The sources that timed its frames to the exchange and from it ([`TsSource::clock_bit`]s).
    clocks: [u32; 2],
}

#[derive(Debug)]
struct Conn {
    session: usize,
    label: String,
    /// The connection's endpoints: client address, port, exchange address, port.
    key: ConnKey,
    to_exchange: OrderStream,
    from_exchange: OrderStream,
    frames: u64,
    /// A segment with RST was seen since the connection began: it was aborted.
    reset: bool,
    /// What [`Analyzer::holds`] and [`Analyzer::dues`] hold for it (`i64::MAX`: nothing).
    marks: (i64, i64),
    /// What each direction's reassembler holds, as [`Analyzer::held_by_age`] and
    /// [`Analyzer::held_tcp`] count it: (earliest piece's time, cost); to the exchange first,
    /// `(i64::MAX, 0)` when nothing.
    held: [(i64, usize); 2],
    /// What each direction's framing holds, as [`Analyzer::framing_by_age`] and
    /// [`Analyzer::held_framing`] count it ([`OrderStream::framing_held`]): (first byte's time,
    /// cost); to the exchange first, `(i64::MAX, 0)` when nothing.
    framing: [(i64, usize); 2],
}

type ConnKey = (IpAddr, u16, IpAddr, u16);

/// Whose orders a connection acts on, for what is remembered of them (symbols, Replace links): an
/// account, known by its SoupBinTCP login (session, client and exchange hosts, username), whose
/// connections share them (a client that reconnects replaces and cancels its earlier connection's
/// orders); without a login captured, the connection alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Owner {
    Login(usize, IpAddr, IpAddr, [u8; 6]),
    Conn(usize),
}

/// The TCP fields an order stream needs.
struct Segment<'a> {
    seq: u32,
    syn: bool,
    fin: bool,
    rst: bool,
    /// The acknowledgement number, when the ACK flag is set.
    ack: Option<u32>,
    /// The captured payload.
    payload: &'a [u8],
    /// Payload bytes after it the frame carried but the capture cut (its snap length): 0 in a frame
    /// captured whole.
    not_captured: u32,
}

/// Counters that qualify the figures; all reported.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Counters {
    /// Frames seen.
    pub frames: u64,
    /// Frames belonging to no feed or order session.
    pub other_frames: u64,
    /// Frames whose headers were malformed (dissection anomaly).
    pub malformed_frames: u64,
    /// IP fragments (not reassembled).
    pub ip_fragments: u64,
    /// Market-data messages, first copies (ticks).
    pub ticks: u64,
    /// Later copies of ticks on another feed than the first (A/B duplicates); a repeat on the same
    /// feed is that feed's duplicate.
    pub tick_copies: u64,
    /// Copies too late to arbitrate.
    pub stale_copies: u64,
    /// Sequence jumps too far ahead to index (more than the tick index holds): the session's index
    /// restarted there, so the ticks before the jump can no longer be arbitrated or matched.
    pub tick_index_resets: u64,
    /// Order actions sent (Enter/Replace/Cancel/Modify).
    pub orders: u64,
    /// Orders matched to a tick.
    pub matched: u64,
    /// Orders with no tick under the rule.
    pub unmatched_orders: u64,
    /// Orders whose trigger is ambiguous (several sessions, or several messages of the symbol at once).
    pub ambiguous: u64,
    /// Cancel and Modify requests: they act on an order already entered and carry no token or
    /// ClOrdID of their own (an OUCH 4.2 one repeats the order's), so no rule reads their trigger.
    /// `orders` = `matched` + `unmatched_orders` + `not_correlated`, + `ambiguous` under the token
    /// rule (under the symbol rule an ambiguous order is matched too).
    pub not_correlated: u64,
    /// Matched orders whose trigger is stamped after them (the token rule: the clocks of the taps of
    /// the feed and of the orders disagree): their negative latencies are in tick_to_trade.
    pub trigger_after_order: u64,
    /// Orders whose token carried no sequence the rule could read.
    pub no_token: u64,
    /// Exchange responses paired with an order.
    pub acked: u64,
    /// Orders that got no response within the timeout.
    pub unacked: u64,
    /// Orders still waiting for their response when the capture ended, sent less than the timeout
    /// before its last frame: not known to be unanswered (a capture cut, or rotated, after them).
    pub awaiting_at_end: u64,
    /// Responses that matched no pending order.
    pub unmatched_responses: u64,
    /// Order Canceled messages with no request waiting for them: the exchange canceled on its own (an
    /// IOC order's unfilled rest, a timeout, a supervisory cancel) or ended a Cancel Pending. Not a
    /// pairing failure, so not among `unmatched_responses`.
    pub unsolicited_cancels: u64,
    /// Frames whose timestamp came from each source (among frames used).
    pub ts_sources: BTreeMap<&'static str, u64>,
    /// Frames used whose clock carried a quality warning.
    pub degraded_clock_frames: u64,
    /// TX events fed (all kinds, from `--tx-events`).
    pub tx_events: u64,
    /// Orders joined to the SND time of the write carrying their last byte (with TX events only).
    pub orders_with_snd: u64,
    /// Orders with no such write among the TX events (with TX events only).
    pub orders_without_snd: u64,
    /// Writes of the TX events forgotten for room before their time ran out (a connection writing
    /// more than [`tx::TX_MAX_WRITES`] times in a second): orders in them count without SND.
    pub tx_writes_dropped: u64,
    /// Packets the input files record as lost while they were captured (pcapng interface statistics):
    /// samples the figures may miss.
    pub capture_drops: u64,
    /// Frames timed more than [`STEP_BACK_NS`] before the frame before them: the capture's clock
    /// stepped back (or frames were recorded far out of order). A latency across such a step is wrong
    /// by it.
    pub time_steps_back: u64,
    /// The largest of those steps, ns (0 when none).
    pub largest_step_back_ns: u64,
    /// The first of those frames (0-based over all inputs).
    pub first_step_back_frame: Option<u64>,
    /// Frames timed before a frame recorded earlier: recorded out of time order (within 1 ms the
    /// analysis waits for what comes so; steps back, beyond, are counted above too).
    pub reordered_frames: u64,
    /// The most any was timed before the latest time recorded before it, ns (0 when none).
    pub largest_reorder_ns: u64,
    /// Frames that look like MoldUDP64 on flows not analysed because [`MAX_DETECTED_FEEDS`] feeds were
    /// detected already.
    pub feeds_not_detected_frames: u64,
    /// Frames of order sessions' connections beyond the first [`MAX_CONNECTIONS`], not analysed.
    pub connections_not_analysed_frames: u64,
    /// Symbol rule: ticks of symbols beyond the first [`MAX_SYMBOLS`], not kept.
    pub symbols_not_tracked_ticks: u64,
    /// Frames that look like SoupBinTCP on flows not analysed because [`MAX_DETECTED_SESSIONS`]
    /// sessions were detected already.
    pub sessions_not_detected_frames: u64,
    /// Orders that stopped waiting before their time because as many as may wait did (a clock that
    /// stands still, or ticks 1 ns apart, packs more in than any real capture): those waiting the
    /// [`REORDER_NS`] allowance ([`MAX_WAITING_ORDERS`], [`MAX_WAITING_PER_SYMBOL`] of one symbol)
    /// are matched with what came so far, those parked for a trigger not seen yet (token rule,
    /// [`MAX_WAITING_ORDERS`]) are looked for one last time and otherwise unmatched. Each is among
    /// `matched`, `unmatched_orders` or `ambiguous` too.
    pub orders_released_for_room: u64,
    /// Requests no longer waited for a response because [`MAX_PENDING_REQUESTS`] did: neither
    /// acknowledged nor unacknowledged (a response to one is an unmatched response).
    pub requests_released_for_room: u64,
    /// Responses no longer waited for their request because [`MAX_EARLY_RESPONSES`] did: counted in
    /// `unmatched_responses` (or `unsolicited_cancels`) too.
    pub responses_released_for_room: u64,
    /// The first frame (0-based over all inputs) at which an order, request or response above was
    /// released for room.
    pub first_released_for_room_frame: Option<u64>,
    /// Ranges missing from order streams no longer waited for because the out-of-order bytes held
    /// behind missing ranges, all connections together, cost more than [`MAX_HELD_TCP`]: each a hole
    /// given up before its timeout (among its connection's `holes` too), the stream holding the
    /// oldest bytes first.
    pub tcp_gaps_released_for_room: u64,
    /// Bytes in those ranges (among their connections' `hole_bytes` too).
    pub tcp_gap_bytes_released_for_room: u64,
    /// The first frame (0-based over all inputs) at which a range was so given up.
    pub first_tcp_released_for_room_frame: Option<u64>,
    /// Times an order stream gave up what its framing held (a SoupBinTCP packet begun, or the bytes
    /// searched for a packet boundary while resynchronising) because the framing buffers of all
    /// connections together took more than [`MAX_HELD_FRAMING`], the stream holding the oldest byte
    /// first: as at a hole, what was held is lost and the stream resynchronises after.
    pub framing_released_for_room: u64,
    /// The bytes so lost (among their streams' `resync_skipped_bytes` too).
    pub framing_bytes_released_for_room: u64,
    /// The first frame (0-based over all inputs) at which a stream's framing was so given up.
    pub first_framing_released_for_room_frame: Option<u64>,
    /// Symbol rule: ticks forgotten because [`MAX_SYMBOL_TICKS`] of their symbol were kept (ticks at
    /// ever-new times faster than the allowance lets them go): an order whose match may have been
    /// one finds none, and is unmatched.
    pub symbol_ticks_forgotten: u64,
    /// Frames of the feeds and order sessions whose UDP or TCP payload the capture cut (its snap
    /// length: fewer bytes captured than the frame had on the wire). In the JSON only when not 0.
    #[serde(skip_serializing_if = "is_zero")]
    pub frames_captured_short: u64,
    /// The payload bytes those frames had on the wire beyond what was captured.
    #[serde(skip_serializing_if = "is_zero")]
    pub bytes_not_captured: u64,
    /// The most bytes captured of any of those frames (about the capture's snap length).
    #[serde(skip_serializing_if = "is_zero")]
    pub captured_short_max_bytes: u64,
}

/// For `skip_serializing_if`: a counter added to the JSON after its schema settled, present only when
/// it counts something (a capture without it keeps its JSON byte for byte).
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A frame timed this much before an earlier one is a step back of the capture's clock (smaller ones
/// are the reordering of multi-queue capture).
pub const STEP_BACK_NS: i64 = 1_000_000;

/// How long every order waits, in capture time past its first byte, for a trigger (or an earlier copy
/// of it) recorded after the order: the reordering a capture may have without a step back.
pub const REORDER_NS: i64 = STEP_BACK_NS;

/// A tick of one symbol: (time, session, seq, messages of that symbol at that time, feed of its
/// first copy). The feed is kept here: the tick may have left the arbiter, whose window is
/// `--tick-retention`, not the rule's.
type SymTick = (i64, Session, u64, u32, u16);

/// The ticks of one symbol an order still to be matched may match, in time order: the newest at or
/// before the earliest first byte such an order may have (its reach, [`SymbolTicks::reach_of`]) and
/// every one after it. In steady state a message pushes one and forgets one: a `Vec` read from
/// `start` on (forgetting is a step of `start`; what is forgotten goes once it is half the `Vec`),
/// so that the ticks are one slice, in order, for a search by time. (A ring of the last four recorded
/// with the ticks leaving it kept in a queue beside it cost a third more per message on a busy
/// symbol: the allowance for orders recorded late keeps a millisecond of ticks.)
///
/// At most [`MAX_SYMBOL_TICKS`] are kept: beyond, the oldest are forgotten for room, and what may
/// have matched one of them is not known any more. Every tick kept is newer than `forgot_to`, the
/// newest forgotten so: an order stamped before the oldest kept finds none (unmatched, not matched
/// to an older tick a forgotten one would have bettered), and a tick recorded late at or before
/// `forgot_to` is forgotten as well.
#[derive(Debug)]
struct SymHistory {
    ticks: Vec<SymTick>,
    start: usize,
    /// The time of the newest tick forgotten for room (`i64::MIN`: none).
    forgot_to: i64,
    /// Ticks forgotten for room.
    forgotten: u64,
}

impl Default for SymHistory {
    fn default() -> Self {
        SymHistory { ticks: Vec::new(), start: 0, forgot_to: i64::MIN, forgotten: 0 }
    }
}

impl SymHistory {
    /// A message of this symbol at `t`, and an order still to be matched starts at `reach` or later.
    /// Several at one time (one packet) cannot be told apart by a symbol match: one tick stands for
    /// them, the last recorded, and its count says how many shared the time. Ticks recorded out of
    /// order go in their place by time.
    #[inline(always)]
    fn push(&mut self, t: i64, session: Session, seq: u64, feed: u16, reach: i64) {
        // `forget_before` leaves a tick: the last of `ticks`, when there is one, is a live one.
        let tick = (t, session, seq, 1, feed);
        match self.ticks.last_mut() {
            Some(b) if b.0 == t => join(b, tick),
            Some(b) if b.0 > t => self.insert(tick),
            _ => self.ticks.push(tick),
        }
        self.forget_before(reach);
    }

    /// The ticks kept, in time order.
    fn live(&self) -> &[SymTick] {
        self.ticks.get(self.start..).unwrap_or_default()
    }

    /// A tick recorded after a newer one.
    #[cold]
    fn insert(&mut self, tick: SymTick) {
        if tick.0 <= self.forgot_to {
            return self.forget_late(tick.0);
        }
        let at = self.start + self.live().partition_point(|k| k.0 <= tick.0);
        let nearer_front_of_full = self.live().len() >= MAX_SYMBOL_TICKS && at - self.start < self.ticks.len() - at;
        match self.ticks[self.start..at].last_mut() {
            Some(k) if k.0 == tick.0 => join(k, tick),
            // Full, and nearer the front: the oldest makes room, and the ticks before the place
            // move instead of those after it (so a tick recorded late costs at most half the ticks
            // kept, not all of them).
            _ if nearer_front_of_full => {
                if at == self.start {
                    return self.forget_late(tick.0);
                }
                self.forget_oldest(1);
                self.ticks[self.start - 1..at].rotate_left(1);
                self.ticks[at - 1] = tick;
                self.start -= 1;
            }
            _ => self.ticks.insert(at, tick),
        }
    }

    /// A tick recorded late at `t`, older than a tick forgotten for room or than every tick kept when
    /// they are as many as may be: forgotten.
    #[cold]
    fn forget_late(&mut self, t: i64) {
        self.forgot_to = self.forgot_to.max(t);
        self.forgotten += 1;
    }

    /// More than [`MAX_SYMBOL_TICKS`] kept: the oldest go.
    #[cold]
    #[inline(never)]
    fn forget_for_room(&mut self) {
        self.forget_oldest(self.ticks.len() - self.start - MAX_SYMBOL_TICKS);
        if self.start * 2 >= self.ticks.len() {
            self.compact();
        }
    }

    /// Forgets the `n` oldest ticks kept (`n` at least 1, at most as many as are kept).
    fn forget_oldest(&mut self, n: usize) {
        self.start += n;
        self.forgot_to = self.ticks[self.start - 1].0;
        self.forgotten += n as u64;
    }

    /// Forgets the ticks no order starting at `from` or later can match: those followed by a tick at
    /// or before it (every such order has that one, or a newer one, as a better match). Beyond
    /// [`MAX_SYMBOL_TICKS`] (ticks at ever-new times faster than time forgets them: a clock of 1 ns,
    /// or a hold), the oldest.
    #[inline(always)]
    fn forget_before(&mut self, from: i64) {
        let mut s = self.start;
        while self.ticks.get(s + 1).is_some_and(|k| k.0 <= from) {
            s += 1;
        }
        if s != self.start {
            self.start = s;
            if s >= 16 && s * 2 >= self.ticks.len() {
                self.compact();
            }
        } else if self.ticks.len() - self.start > MAX_SYMBOL_TICKS {
            // Looked at only when none was forgotten: a push adds one tick at most, so only then can
            // the count pass the bound (a symbol whose ticks time lets go pays nothing for it).
            self.forget_for_room();
        }
    }

    #[cold]
    fn compact(&mut self) {
        self.ticks.drain(..self.start);
        self.start = 0;
    }

    /// Gives back the room of a `Vec` four times larger than what it holds (and more than a few
    /// ticks' worth).
    fn shrink(&mut self) {
        let len = self.ticks.len();
        if self.ticks.capacity() > 4 * len.max(16) {
            self.ticks.shrink_to(2 * len);
        }
    }

    /// The newest tick at or before `t`, by time (of two at one time, the one recorded last).
    fn at_or_before(&self, t: i64) -> Option<SymTick> {
        let live = self.live();
        match live.last() {
            Some(b) if b.0 <= t => Some(*b),
            _ => live.partition_point(|k| k.0 <= t).checked_sub(1).map(|i| live[i]),
        }
    }

    /// Gives tick `(session, seq)`, kept at time `old` (ticks are unique by time), the earlier time `t`
    /// (an earlier copy's) and feed `feed`; returns it if so (with `t` at or before
    /// [`SymHistory::forgot_to`] it is forgotten). Found by time and moved by rotating the ticks
    /// between, not by sorting them all: a copy earlier than every one of many kept would make that
    /// quadratic.
    #[cold]
    fn retime(&mut self, old: i64, session: Session, seq: u64, t: i64, feed: u16) -> Option<SymTick> {
        debug_assert!(t < old, "a tick is retimed to an earlier copy's time only");
        let i = self.start + self.live().partition_point(|k| k.0 < old);
        let k = self.ticks.get_mut(i).filter(|k| k.0 == old && (k.1, k.2) == (session, seq))?;
        (k.0, k.4) = (t, feed);
        let found = *k;
        if t <= self.forgot_to {
            self.ticks.remove(i);
            // The last kept gone, what is left is forgotten ticks: a push must not find one last.
            if self.start == self.ticks.len() {
                self.ticks.clear();
                self.start = 0;
            }
            self.forget_late(t);
            return Some(found);
        }
        // Its place among the ticks before it (at `i` itself when none is at `t` or later).
        let j = self.start + self.ticks[self.start..i].partition_point(|k| k.0 < t);
        match self.ticks.get_mut(j) {
            // Kept in time order, and one tick per time: moved onto another's time, the two are one
            // tick of both their messages (named by the one moved), as a symbol match cannot tell
            // them apart.
            Some(other) if j < i && other.0 == t => {
                join(other, found);
                self.ticks.remove(i);
            }
            _ => self.ticks[j..=i].rotate_right(1),
        }
        Some(found)
    }
}

/// `later`, a tick at `kept`'s time, joins it: one tick of both their messages, named by `later`.
fn join(kept: &mut SymTick, later: SymTick) {
    *kept = (later.0, later.1, later.2, kept.3 + later.3, later.4);
}

/// An order whose trigger (by its token) no session has reached yet: the feed's frames may be behind
/// the order's (another tap, a clock behind, a host recording frames out of order). It is looked for
/// again when due (its key in [`Analyzer::parked`]), and then every [`PARK_STEP_DIV`]th of the
/// retention until `give_up`: a trigger that comes is found soon, before the arbiter's window lets
/// it go.
///
/// Every order waits [`REORDER_NS`] of capture time past its first byte (in [`Analyzer::reorder`]):
/// under the symbol rule with its match so far in `best` (a tick of its symbol recorded after it,
/// stamped at or before it, may be a better one: `Analyzer::late_ticks`), under the token rule with
/// the trigger found in `found` (an earlier copy of it may come).
#[derive(Debug)]
struct Parked {
    give_up: i64,
    conn: usize,
    msg: OrderMsg,
    snd: Option<i64>,
    best: Option<SymTick>,
    /// Token rule: parked only because a copy of its trigger may be recorded late (every feed had
    /// passed it): a copy then found must be stamped at or before the order.
    late_only: bool,
    /// Token rule: the trigger found, waiting [`REORDER_NS`] for an earlier copy of it the capture may
    /// record late (the tick is then timed by that copy).
    found: Option<Found>,
}

/// A trigger found: session, sequence, time of its first copy, feed of that copy.
type Found = (Session, u64, i64, u16);

impl Parked {
    /// What [`Analyzer::correlate`] is told when it looks for this order again at capture time `now`.
    fn retry(&self, now: i64) -> Retry {
        Retry { now, give_up: self.give_up, best: self.best, late_only: self.late_only, found: self.found }
    }
}

/// A response read before any request it answers ([`Analyzer::early_responses`]): its request may come
/// within [`crate::reasm::REORDER_NS`] (frames recorded out of order, or its bytes behind a range that
/// waits that long); after that it is unmatched (or, a Canceled, unsolicited).
#[derive(Debug, Clone, Copy)]
struct EarlyResponse {
    due: i64,
    conn: usize,
    id: OrderId,
    time_ns: i64,
    cancel: bool,
}

/// Orders waiting the reorder allowance ([`Analyzer::reorder`]), by when they are due, then in the
/// order they came (the key's second part counts them). A queue sorted by inserting in place was
/// quadratic when frames alternate between two times, and a B-tree of the orders cost 2.5% more
/// instructions on a real capture (it moves its values, about 600 bytes each, as nodes fill): the
/// orders are in a slab, their keys appended to a queue while they come in time order (nearly
/// always), and kept in a B-tree when they come before the queue's last. An order leaving out of turn
/// (released for room) leaves its key in the queue, skipped, until those are as many as the orders.
#[derive(Debug, Default)]
struct ReorderQueue {
    in_order: VecDeque<((i64, u64), usize)>,
    out_of_order: BTreeMap<(i64, u64), usize>,
    slots: Vec<Option<((i64, u64), Parked)>>,
    free: Vec<usize>,
    live: usize,
    /// Keys in `in_order` whose order has left.
    stale: usize,
}

impl ReorderQueue {
    fn len(&self) -> usize {
        self.live
    }

    fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Whether `in_order`'s entry `e` is an order still waiting (a slot is reused under another key).
    fn holds(&self, e: &((i64, u64), usize)) -> bool {
        self.slots[e.1].as_ref().is_some_and(|(k, _)| *k == e.0)
    }

    /// The key of the order due first (`in_order`'s ends are never stale).
    fn first_key(&self) -> Option<(i64, u64)> {
        let queued = self.in_order.front().map(|e| e.0);
        match (queued, self.out_of_order.first_key_value()) {
            (Some(q), Some((&o, _))) => Some(q.min(o)),
            (q, o) => q.or(o.map(|(&k, _)| k)),
        }
    }

    /// The key of the order due last.
    fn last_key(&self) -> Option<(i64, u64)> {
        let queued = self.in_order.back().map(|e| e.0);
        match (queued, self.out_of_order.last_key_value()) {
            (Some(q), Some((&o, _))) => Some(q.max(o)),
            (q, o) => q.or(o.map(|(&k, _)| k)),
        }
    }

    fn insert(&mut self, key: (i64, u64), p: Parked) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some((key, p));
                i
            }
            None => {
                self.slots.push(Some((key, p)));
                self.slots.len() - 1
            }
        };
        self.live += 1;
        match self.in_order.back() {
            Some(&(last, _)) if key < last => {
                self.out_of_order.insert(key, slot);
            }
            _ => self.in_order.push_back((key, slot)),
        }
    }

    fn remove(&mut self, key: &(i64, u64)) -> Option<Parked> {
        let (slot, queued) = match self.out_of_order.remove(key) {
            Some(slot) => (slot, false),
            None => {
                let i = self.in_order.partition_point(|e| e.0 < *key);
                let &(_, slot) = self.in_order.get(i).filter(|e| e.0 == *key && self.holds(e))?;
                (slot, true)
            }
        };
        let (_, p) = self.slots[slot].take()?;
        self.live -= 1;
        self.free.push(slot);
        if queued {
            self.stale += 1;
            // The ends are kept live, so that the first and last keys are read without a check.
            while self.in_order.front().is_some_and(|e| !self.holds(e)) {
                self.in_order.pop_front();
                self.stale -= 1;
            }
            while self.in_order.back().is_some_and(|e| !self.holds(e)) {
                self.in_order.pop_back();
                self.stale -= 1;
            }
            if self.stale > self.live {
                let slots = &self.slots;
                self.in_order.retain(|e| slots[e.1].as_ref().is_some_and(|(k, _)| *k == e.0));
                self.stale = 0;
            }
        }
        Some(p)
    }

    fn pop_first(&mut self) -> Option<((i64, u64), Parked)> {
        let key = self.first_key()?;
        Some((key, self.remove(&key)?))
    }
}

/// Symbol rule: an order of [`Analyzer::reorder`] as the ticks of its symbol recorded late see it,
/// by its key there, in key order: its first byte's time and its match so far (its `Parked::best`
/// while it waits). Beside the others of its symbol, so that offering them a tick reads one slice.
#[derive(Debug, Clone, Copy)]
struct Waiter {
    key: (i64, u64),
    t: i64,
    best: Option<SymTick>,
}

/// An order looked for again ([`Parked`]): the capture time now (`i64::MAX` at the end: no more
/// parking), and what it was parked with.
#[derive(Debug, Clone, Copy)]
struct Retry {
    now: i64,
    give_up: i64,
    best: Option<SymTick>,
    late_only: bool,
    found: Option<Found>,
}

/// How often, in capture time, the ticks kept for orders still to come are pruned of those no such
/// order can match, whatever their symbol.
const PRUNE_EVERY_NS: i64 = 100_000_000;

/// How far back an order byte held by reassembly keeps ticks: the gap timeout, after which a missing
/// range is given up (a packet begun whose stream then went quiet is not waited for longer; its order,
/// should it complete, may find its trigger gone).
const HOLD_MAX_NS: i64 = orders::GAP_TIMEOUT_NS;

/// Feeds detected at most: each costs its histograms and state (about 140 KB), and noise that looks
/// like MoldUDP64 on thousands of ports must not take gigabytes. Give more with `--md`.
pub const MAX_DETECTED_FEEDS: usize = 1_024;

/// Order sessions detected at most: every TCP frame is looked up among them, and traffic that looks
/// like SoupBinTCP on thousands of ports must not make the analysis quadratic (60,000 took 15 s for
/// as many frames). Give more with `--orders`.
pub const MAX_DETECTED_SESSIONS: usize = 256;

/// Symbols whose ticks the symbol rule keeps, at most: a day's feed names at most 65,536 (a symbol
/// per stock locate), and garbage naming ever-new ones must not take gigabytes (each costs about
/// 200 bytes). The ticks of further symbols are counted, not kept: their orders are unmatched.
pub const MAX_SYMBOLS: usize = 1 << 16;

/// Order connections analysed at most (each costs about 2.5 KB: a capture of ever-new connections,
/// a scan or garbage, must not take gigabytes; a client reconnecting every minute for a week stays
/// within it): the frames of further ones are counted, not analysed.
pub const MAX_CONNECTIONS: usize = 16_384;

/// What the out-of-order TCP bytes held by all order streams together may cost, at most
/// ([`crate::reasm::Reassembler::held`]: their bytes and [`crate::reasm::PIECE_COST`] per piece).
/// Each direction holds up to [`crate::reasm::DEFAULT_MAX_PENDING`] (1 MiB, and a piece per 64 bytes
/// of it), so [`MAX_CONNECTIONS`] could hold 32 GiB and more: 1,000 connections, each with a segment
/// missing and 1 MiB behind it, took 1.1 GB, 4,000 took 4.4 GB. This is 256 directions at their bound
/// at once, more than a real capture holds (a missing segment is waited for 1 s at most, and most
/// connections carry far less in that time). Beyond, the stream holding the oldest bytes gives up the
/// ranges it waits for, first to last, as its own bound would, until all hold no more than this
/// ([`Counters::tcp_gaps_released_for_room`]).
pub const MAX_HELD_TCP: usize = 256 << 20;

/// What the framing buffers of all order streams together may take, at most
/// ([`OrderStream::framing_held`]: a SoupBinTCP packet begun, up to 64 KiB, in room up to twice that,
/// the resynchronisation window, and a piece of 32 bytes per segment in them; a direction taking
/// [`orders::FRAMING_SLACK`] or less is not counted). Nothing else bounded them: 4,000 connections,
/// each way a 64 KiB packet begun, took 581 MB (16,384 would take 2.4 GB). This is 512 to 1,024
/// directions with a whole 64 KiB packet begun at once, or 16,384 connections each way with a 2 KiB
/// one, far more than a real capture holds (OUCH packets take tens of bytes, split over two segments
/// at most). Beyond, the stream holding the oldest byte gives up what its framing holds, as at a hole,
/// until all take no more than this ([`Counters::framing_released_for_room`]).
pub const MAX_HELD_FRAMING: usize = 64 << 20;

/// MoldUDP64 sessions analysed per feed, at most (a feed has one a day): the packets of further ones
/// are counted ([`report::FeedReport::sessions_not_analysed_packets`]) and noted.
pub const MAX_FEED_SESSIONS: u32 = 64;

/// Flows in no feed or session given that look like one, noted at most ([`Analyzer::unclaimed`]).
const UNCLAIMED_MAX: usize = 16;

/// The `--by symbol` row of orders whose symbol is not known (no symbol has parentheses).
const UNKNOWN_SYMBOL: &str = "symbol:(unknown)";

/// Symbols given a `--by symbol` row of their own, at most; orders of any further ones share
/// `symbol:(others)`.
pub const MAX_SYMBOL_ROWS: usize = 1_024;

/// The `--by symbol` row shared by the symbols beyond the first [`MAX_SYMBOL_ROWS`].
const OTHER_SYMBOLS: &str = "symbol:(others)";

/// Orders waiting at once for the [`REORDER_NS`] allowance (`Analyzer::reorder`), at most, and
/// orders parked for a trigger not seen yet (`Analyzer::parked`), at most: each costs about 600
/// bytes, and those are released by capture time only, so a clock that stands still would hold every
/// order of the capture. More than any real capture holds (65,536 orders in 1 ms); beyond, the one
/// due first stops waiting ([`Counters::orders_released_for_room`]).
pub const MAX_WAITING_ORDERS: usize = 1 << 16;

/// Orders of one symbol waiting the allowance at once, at most (symbol rule): each tick of the
/// symbol recorded late is offered to every one of them, so that many stamped at one time made the
/// ticks cost orders x ticks. An order a microsecond on one symbol stays below it.
pub const MAX_WAITING_PER_SYMBOL: usize = 1_024;

/// Requests awaiting a response at once, at most: those are released by the timeout in capture time
/// only, and a clock that stands still held them all (about 300 bytes each: 2.4 M orders never
/// answered took 853 MB with 1 M of them held, 618 MB with this bound, most of it the symbols kept for
/// Replaces, since made smaller: `accounts`). A session answered within the 10 s timeout stays
/// below it at 26,000 orders a second. Beyond, the oldest is no longer waited for
/// ([`Counters::requests_released_for_room`]).
pub const MAX_PENDING_REQUESTS: usize = 1 << 18;

/// Responses waiting for their request at once, at most (`Analyzer::early_responses`); beyond, the
/// oldest is unmatched ([`Counters::responses_released_for_room`]).
pub const MAX_EARLY_RESPONSES: usize = 1 << 16;

/// Ticks one symbol's history keeps, at most (`SymHistory`): a busy symbol's ticks over the 1 s an
/// order held by reassembly keeps them, well beyond its millisecond of the allowance; each costs 40
/// bytes, and a tick recorded late moves up to half of them. Beyond, the oldest are forgotten
/// ([`Counters::symbol_ticks_forgotten`]).
pub const MAX_SYMBOL_TICKS: usize = 1 << 14;

/// Ticks all symbols together keep, at most, give or take an eighth (`SymbolTicks`): 65,536 symbols
/// of [`MAX_SYMBOL_TICKS`] each would take 43 GB, and a feed at a million messages a second keeps a
/// million over the 1 s an order held by reassembly keeps them (84 MB at this bound). Beyond, the
/// oldest of all go (each symbol keeps its newest), counted in [`Counters::symbol_ticks_forgotten`].
pub const MAX_TICKS_KEPT: usize = 1 << 21;

/// The bounds on what waits for capture time ([`Analyzer::limits`]): the constants above, which the
/// tests lower.
#[derive(Debug, Clone, Copy)]
struct Limits {
    waiting: usize,
    per_symbol: usize,
    pending: usize,
    early: usize,
    held_tcp: usize,
    held_framing: usize,
}

const LIMITS: Limits = Limits {
    waiting: MAX_WAITING_ORDERS,
    per_symbol: MAX_WAITING_PER_SYMBOL,
    pending: MAX_PENDING_REQUESTS,
    early: MAX_EARLY_RESPONSES,
    held_tcp: MAX_HELD_TCP,
    held_framing: MAX_HELD_FRAMING,
};

/// Parked orders are retried every `--tick-retention / PARK_STEP_DIV`, for half the retention.
const PARK_STEP_DIV: i64 = 32;

/// The requests of one order id awaiting a response: (time, request number) of the oldest, and the
/// later ones by number (the exchange answers them in the order sent). A second one is rare (a
/// cancel sent before the order's acceptance) and the only one that allocates. The number is the
/// request's in `Analyzer::pending_order` too, so that an entry there tells whether its request
/// still waits even when requests of one id come out of time order.
#[derive(Debug)]
struct Waiting {
    oldest: (i64, u64),
    later: BTreeMap<u64, i64>,
}

impl Waiting {
    /// Whether request `n` still waits.
    fn holds(&self, n: u64) -> bool {
        self.oldest.1 == n || self.later.contains_key(&n)
    }
}

/// Recent ticks by symbol (`SymHistory`), found through the message's stock locate: a locate
/// keeps its symbol for the day, so the symbol map is consulted once per locate, not per tick.
#[derive(Debug)]
struct SymbolTicks {
    index: FxHashMap<Symbol, u32>,
    histories: Vec<SymHistory>,
    /// By stock locate: the symbol last pushed under it and its history (grown to the largest
    /// locate seen: at most 65,536 entries).
    by_locate: Vec<(Symbol, u32)>,
    /// The earliest first byte an order held by reassembly may have ([`Analyzer::hold_from`];
    /// `i64::MAX`: none). With an order recorded up to [`REORDER_NS`] late, that and the allowance
    /// make how far back an order still to come may start ([`SymbolTicks::reach_of`]): the histories
    /// keep what such an order may match.
    hold_from: i64,
    /// The latest first byte of an order parked under the symbol rule (`i64::MIN`: none): a tick at
    /// or before it, recorded from now on, may be a parked order's match, and waits in `late`.
    parked_to: i64,
    /// Such ticks (or a tick's new time, [`SymbolTicks::retime`]), for `Analyzer::late_ticks`.
    late: Vec<(Symbol, SymTick)>,
    /// Ticks of symbols beyond the first [`MAX_SYMBOLS`], not kept.
    untracked: u64,
    /// Ticks all histories together keep at most ([`MAX_TICKS_KEPT`]; tests lower it), counted every
    /// eighth of it pushed ([`SymbolTicks::bound_all`]).
    max_kept: usize,
    /// Ticks to push before they are counted again.
    until_count: usize,
}

impl SymbolTicks {
    fn new() -> Self {
        Self::keeping(MAX_TICKS_KEPT)
    }

    /// Keeping at most `max_kept` ticks of all symbols together (and an eighth of it more).
    fn keeping(max_kept: usize) -> Self {
        SymbolTicks {
            index: FxHashMap::default(),
            histories: Vec::new(),
            by_locate: Vec::new(),
            hold_from: i64::MAX,
            parked_to: i64::MIN,
            late: Vec::new(),
            untracked: 0,
            max_kept,
            until_count: max_kept / 8 + 1,
        }
    }

    /// A tick of `symbol` (stock locate `locate`) at `t`. Returns whether it may be the match of an
    /// order parked already (it is then in [`SymbolTicks::late`]).
    #[inline(always)]
    fn push(&mut self, locate: u16, symbol: Symbol, t: i64, session: Session, seq: u64, feed: u16) -> bool {
        let late = t <= self.parked_to;
        if late {
            self.late.push((symbol, (t, session, seq, 1, feed)));
        }
        self.push_history(locate, symbol, t, session, seq, feed);
        late
    }

    #[inline(always)]
    fn push_history(&mut self, locate: u16, symbol: Symbol, t: i64, session: Session, seq: u64, feed: u16) {
        let reach = Self::reach_of(self.hold_from, t);
        // Counted, not summed per push: a history's count changes in too many places for a running
        // total to stay cheap and true.
        self.until_count -= 1;
        if self.until_count == 0 {
            self.bound_all();
        }
        // An unset locate holds no history index (`u32::MAX`), whatever its symbol bytes.
        if let Some(&(s, i)) = self.by_locate.get(usize::from(locate))
            && s == symbol
            && let Some(h) = self.histories.get_mut(i as usize)
        {
            return h.push(t, session, seq, feed, reach);
        }
        let Some(i) = self.find(locate, symbol) else { return };
        self.histories[i as usize].push(t, session, seq, feed, reach);
    }

    /// How far back an order still to be matched may start, at capture time `now`: one held by
    /// reassembly (at most [`HOLD_MAX_NS`] back), or one the capture records up to [`REORDER_NS`]
    /// late.
    #[inline(always)]
    fn reach_of(hold_from: i64, now: i64) -> i64 {
        hold_from.min(now.saturating_sub(REORDER_NS)).max(now.saturating_sub(HOLD_MAX_NS))
    }

    /// Sets [`SymbolTicks::hold_from`]. (The ticks kept for an order held go as time passes: `push`
    /// and `prune`.)
    fn hold(&mut self, from: i64) {
        self.hold_from = from;
    }

    /// Forgets the ticks no order starting at `from` or later can match, whatever their symbol.
    fn prune(&mut self, from: i64) {
        for h in &mut self.histories {
            h.forget_before(from);
        }
    }

    /// The newest tick of `symbol` at or before `t`, by time.
    fn at_or_before(&self, symbol: Symbol, t: i64) -> Option<SymTick> {
        self.histories[*self.index.get(&symbol)? as usize].at_or_before(t)
    }

    /// The time of the newest tick of `symbol` forgotten for room ([`SymHistory::forgot_to`]).
    fn forgot_to(&self, symbol: Symbol) -> i64 {
        self.index.get(&symbol).map_or(i64::MIN, |&i| self.histories[i as usize].forgot_to)
    }

    /// Ticks forgotten for room, all symbols.
    fn forgotten(&self) -> u64 {
        self.histories.iter().map(|h| h.forgotten).sum()
    }

    /// Every eighth of [`SymbolTicks::max_kept`] pushed: more kept than that, the oldest of all symbols
    /// go, down to half of it; and a history's room that a burst left behind (its `Vec` four times
    /// what it holds) is given back, so that what all hold stays bounded whatever the order of
    /// their bursts.
    #[cold]
    #[inline(never)]
    fn bound_all(&mut self) {
        self.until_count = self.max_kept / 8 + 1;
        let kept: usize = self.histories.iter().map(|h| h.live().len()).sum();
        if kept > self.max_kept {
            self.forget_oldest_of_all(kept - self.max_kept / 2);
        }
        for h in &mut self.histories {
            h.shrink();
        }
    }

    /// Forgets at least `n` ticks, the oldest of all symbols (those up to a time found by bisection;
    /// all at that time go together), but each symbol's newest: an order on a quiet symbol still
    /// matches its last tick. Fewer when only the newest are left.
    fn forget_oldest_of_all(&mut self, n: usize) {
        let old = |h: &SymHistory, c: i64| h.live().partition_point(|k| k.0 <= c).min(h.live().len().saturating_sub(1));
        let upto = |c: i64| -> usize { self.histories.iter().map(|h| old(h, c)).sum() };
        let ends = self.histories.iter().filter_map(|h| Some((h.live().first()?.0, h.live().last()?.0)));
        let (mut lo, mut hi) = ends.fold((i64::MAX, i64::MIN), |(lo, hi), (a, b)| (lo.min(a), hi.max(b)));
        if lo > hi {
            return;
        }
        // The earliest time up to which at least `n` would go (the newest of all when none is).
        while lo < hi {
            let mid = lo + ((hi as i128 - lo as i128) / 2) as i64;
            if upto(mid) >= n { hi = mid } else { lo = mid + 1 }
        }
        for h in &mut self.histories {
            let k = old(h, lo);
            if k > 0 {
                h.forget_oldest(k);
                if h.start * 2 >= h.ticks.len() {
                    h.compact();
                }
            }
        }
    }

    /// The history of `symbol`, made on its first tick (none beyond [`MAX_SYMBOLS`]: counted), and
    /// set as `locate`'s.
    #[cold]
    fn find(&mut self, locate: u16, symbol: Symbol) -> Option<u32> {
        let i = match self.index.get(&symbol) {
            Some(&i) => i,
            None if self.histories.len() >= MAX_SYMBOLS => {
                self.untracked += 1;
                return None;
            }
            None => {
                let i = self.histories.len() as u32;
                self.index.insert(symbol, i);
                self.histories.push(SymHistory::default());
                i
            }
        };
        let at = usize::from(locate);
        if self.by_locate.len() <= at {
            self.by_locate.resize(at + 1, (Symbol([0; 8]), u32::MAX));
        }
        self.by_locate[at] = (symbol, i);
        Some(i)
    }

    /// Tick `(session, seq)` of the symbol of stock locate `locate`, if still in its history (at time
    /// `old`), was first copied at `t` on `feed`.
    /// A parked order may match it at its new time: it is then in [`SymbolTicks::late`] too.
    fn retime(&mut self, locate: u16, old: i64, session: Session, seq: u64, t: i64, feed: u16) {
        let Some(&(symbol, i)) = self.by_locate.get(usize::from(locate)) else { return };
        let found = self.histories.get_mut(i as usize).and_then(|h| h.retime(old, session, seq, t, feed));
        if let Some(k) = found.filter(|_| t <= self.parked_to) {
            self.late.push((symbol, k));
        }
    }
}

/// Exchange-to-capture arithmetic, cached per UTC hour: US Eastern's offset is whole hours, so within
/// one UTC hour the offset and the local midnight are constant (no division per message).
#[derive(Debug, Clone, Copy)]
struct EasternClock {
    /// The cached UTC hour, as [start, end) in ns.
    hour: (i64, i64),
    offset_ns: i64,
    /// Local midnight of this hour, ns on the local time line (modulo 2^64: see `local`).
    midnight_ns: i64,
}

impl EasternClock {
    const EMPTY: EasternClock = EasternClock { hour: (0, 0), offset_ns: 0, midnight_ns: 0 };
    const DAY: i64 = 86_400_000_000_000;
    const HOUR: i64 = 3_600_000_000_000;

    /// Capture time `t` (UTC ns) on the Eastern local time line, ns since the local midnight of its
    /// UTC hour (the start of [`EasternClock::delay_from`]).
    #[inline(always)]
    fn local(&mut self, t: i64) -> i64 {
        if t < self.hour.0 || t >= self.hour.1 {
            self.enter_hour(t);
        }
        // Modulo 2^64: `midnight_ns` may lie beyond the range near its ends (see `enter_hour`),
        // and the result, under a day and an hour, is exact all the same.
        t.wrapping_add(self.offset_ns).wrapping_sub(self.midnight_ns)
    }

    #[inline(never)]
    fn enter_hour(&mut self, t: i64) {
        // In i128: near the ends of the range the hour and its local midnight lie beyond them.
        let (hour, day) = (i128::from(Self::HOUR), i128::from(Self::DAY));
        let start = i128::from(t).div_euclid(hour) * hour;
        let offset_ns = us_eastern_offset_s(t) * 1_000_000_000;
        let midnight_ns = (start + i128::from(offset_ns)).div_euclid(day) * day;
        let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        *self = EasternClock { hour: (clamp(start), clamp(start + hour)), offset_ns, midnight_ns: midnight_ns as i64 };
    }

    /// Capture time minus an ITCH timestamp (ns since Eastern midnight), from the capture's
    /// [`EasternClock::local`] time, taken to the nearest day so that a capture just after midnight
    /// and a message just before it stay close.
    #[inline(always)]
    fn delay_from(local: i64, itch_ns: u64) -> i64 {
        let mut delay = local - itch_ns as i64;
        if delay > Self::DAY / 2 {
            delay -= Self::DAY;
        } else if delay < -Self::DAY / 2 {
            delay += Self::DAY;
        }
        delay
    }

    /// Capture time `t` (UTC ns) minus an ITCH timestamp (ns since Eastern midnight).
    #[cfg(test)]
    fn delay(&mut self, t: i64, itch_ns: u64) -> i64 {
        Self::delay_from(self.local(t), itch_ns)
    }
}

/// The copies of one market-data packet as both paths ([`Analyzer::frame`] and the fast path,
/// [`fast`]) arbitrate and record them: one place for what a message does.
struct Copies<'a> {
    /// The packet's session in the arbiter, and its ring.
    arb: SessionRef,
    ring: Ring<'a>,
    feed: u16,
    spec: &'a FeedSpec,
    /// The feed's dimension slots and open tallies ([`FeedState::slots`], [`FeedState::open`]).
    slots: &'a mut [Option<usize>; 3],
    open: &'a mut [Option<Box<Tally>>; 2],
    t: i64,
    session: Session,
    /// The capture time on the Eastern local time line ([`EasternClock::local`]).
    capture_local: i64,
    metrics: &'a mut [Metric; METRICS.len()],
    counters: &'a mut Counters,
    last_by_symbol: &'a mut SymbolTicks,
    /// The packet's session's locates ([`Analyzer::locates`]), under the symbol rule only.
    locates: Option<&'a mut LocateMap>,
    track_symbols: bool,
    /// A/B delays that belong to another feed than the packet's ([`Copies::earlier_copy`]), recorded
    /// before the next frame: `wake_at` is set so that its time step takes the slow path, which does
    /// (no check per packet for what is rare).
    ab_elsewhere: &'a mut Vec<(u16, i64)>,
    wake_at: &'a mut i64,
    /// For a packet that starts below the sequence its feed expects (the general walk's only): the
    /// tracker, to tell a repeat of a message this feed brought already (its duplicate, not an A/B
    /// copy) from a copy of what another feed brought first.
    repeats: Option<&'a SeqTracker<u16>>,
}

/// A packet's session in the arbiter, for [`Copies::new`].
enum ArbSession {
    /// Known, and started at the packet's time by [`Arbiter::packet_at`] (the fast path's lane).
    Started(SessionRef),
    /// To look up, the packet starting at this sequence.
    Find(u64),
}

impl<'a> Copies<'a> {
    /// Starts a packet of `session`, captured at `t` on feed `fi`.
    #[inline(always)]
    fn new(
        a: &'a mut Analyzer,
        fi: usize,
        session: Session,
        arb: ArbSession,
        t: i64,
    ) -> (Copies<'a>, &'a mut MoldItchDecoder) {
        let track_symbols = matches!(a.cfg.matching, MatchRule::Symbol { .. });
        let Analyzer {
            feeds,
            arbiter,
            last_by_symbol,
            locates,
            metrics,
            counters,
            eastern,
            ab_elsewhere,
            wake_at,
            seq,
            ..
        } = a;
        let FeedState { spec, slots, open, decoder, .. } = &mut feeds[fi];
        let (arb, repeats) = match arb {
            ArbSession::Started(r) => (r, None),
            ArbSession::Find(sequence) => {
                let behind = seq.next_expected(fi as u16, session).is_some_and(|next| sequence < next);
                (arbiter.packet(session, sequence, t), behind.then_some(&*seq))
            }
        };
        // The map is the session's; only the symbol rule reads it.
        let locates = track_symbols.then(|| {
            if locates.len() <= arb.index() {
                locates.resize_with(arb.index() + 1, LocateMap::default);
            }
            &mut locates[arb.index()]
        });
        let copies = Copies {
            locates,
            arb,
            ring: arbiter.ring(arb),
            feed: fi as u16,
            spec,
            slots,
            open,
            t,
            session,
            capture_local: eastern.local(t),
            metrics,
            counters,
            last_by_symbol,
            track_symbols,
            ab_elsewhere,
            wake_at,
            repeats,
        };
        (copies, decoder)
    }

    /// One message of the packet: the first copy of its tick, a later copy, or a stale one.
    #[inline(always)]
    fn message(&mut self, m: MessageKey) {
        let t = self.t;
        match self.ring.observe(m.seq, self.feed, m.stock_locate, t) {
            Arrival::First => {
                self.counters.ticks += 1;
                if let Some(locates) = self.locates.as_deref_mut()
                    && let Some(sym) = locates.learn(m.stock_locate, m.symbol)
                    && self.last_by_symbol.push(m.stock_locate, sym, t, self.session, m.seq, self.feed)
                {
                    // Offered to the parked orders before the next frame (`Analyzer::late_ticks`).
                    *self.wake_at = i64::MIN;
                }
                // Exchange (ITCH timestamp, Eastern time) to capture.
                let delay = EasternClock::delay_from(self.capture_local, m.timestamp_ns);
                match &mut self.open[0] {
                    Some(tally) => tally.record(delay),
                    None => self.first_sample(0, delay),
                }
            }
            // A repeat of what this feed brought already is its duplicate (the tracker counts it).
            Arrival::Later { .. } if self.repeats.is_some_and(|r| r.has_seen(self.feed, self.session, m.seq)) => {}
            Arrival::Later { delay_ns, first_feed } if first_feed != self.feed => {
                self.counters.tick_copies += 1;
                if delay_ns < 0 {
                    return self.earlier_copy(m.seq, m.stock_locate, first_feed, -delay_ns);
                }
                match &mut self.open[1] {
                    Some(tally) => tally.record(delay_ns),
                    None => self.first_sample(1, delay_ns),
                }
            }
            // A repeat on the feed of the first copy is no A/B copy: the feed counts it as a duplicate.
            Arrival::Later { .. } => {}
            Arrival::Stale => self.counters.stale_copies += 1,
        }
    }

    /// A copy stamped before the one seen first (merged taps whose clocks differ, or one tap's frames
    /// recorded out of order by the host): it is the tick's first copy, and the copy seen first on
    /// `first_feed` trails it by `delay_ns`. The arbiter took its time; the symbol history does too,
    /// and the A/B delay goes to the feed of the later copy (as a positive delay, where a copy in
    /// order puts it), once the packet is done.
    #[cold]
    #[inline(never)]
    fn earlier_copy(&mut self, seq: u64, locate: u16, first_feed: u16, delay_ns: i64) {
        // Scalars, not the message's keys: passing those made the hot loop build them on the stack.
        if self.track_symbols {
            // `wake_at` is set below: a retimed tick for the parked orders is offered them then.
            let old = self.t.saturating_add(delay_ns);
            self.last_by_symbol.retime(locate, old, self.session, seq, self.t, self.feed);
        }
        self.ab_elsewhere.push((first_feed, delay_ns));
        *self.wake_at = i64::MIN;
    }

    /// The feed's first sample in exchange_to_capture (`k` 0) or feed_ab_delay (1).
    #[cold]
    fn first_sample(&mut self, k: usize, ns: i64) {
        record_feed_sample(self.spec, &mut *self.slots, &mut *self.open, &mut self.metrics[..], k, ns);
    }
}

/// Records `ns` in the open tally of feed `spec` in exchange_to_capture (`k` 0) or feed_ab_delay (1),
/// the feed's slot in the metric and its tally made on first use.
fn record_feed_sample(
    spec: &FeedSpec,
    slots: &mut [Option<usize>; 3],
    open: &mut [Option<Box<Tally>>; 2],
    metrics: &mut [Metric],
    k: usize,
    ns: i64,
) {
    slots[k].get_or_insert_with(|| metrics[[E2C, AB][k]].slot(format!("feed:{spec}")));
    open[k].get_or_insert_with(Box::default).record(ns);
}

/// The analysis state.
pub struct Analyzer {
    cfg: AnalyzeConfig,
    feeds: Vec<FeedState>,
    sessions: Vec<SessionState>,
    detect: bool,
    conns: FxHashMap<ConnKey, usize>,
    conn_list: Vec<Conn>,
    seq: SeqTracker<u16>,
    arbiter: Arbiter,
    /// Recent ticks per symbol, newest first: (time, session, seq, messages of that symbol at that time).
    /// A few are kept because an order is correlated when its last byte arrives, which may be after
    /// later ticks of its symbol; the match is the newest tick at or before its first byte.
    /// Kept only under the symbol rule, the only reader.
    last_by_symbol: SymbolTicks,
    /// Each MoldUDP64 session's stock locates (by the arbiter's [`SessionRef::index`]), learnt under the
    /// symbol rule from the first copies of the messages that name their stock, whichever feed brought
    /// them: a feed that missed a Stock Directory or an Add Order still has its Executes and Deletes
    /// named (the locates are the session's, not a feed's).
    locates: Vec<LocateMap>,
    /// While detecting: the latest segments of TCP connections no session claims yet.
    backlog: backlog::Backlog,
    /// The earliest capture time of an order byte held by the order streams, not yet in an order
    /// given out (a packet begun, segments behind a gap: [`OrderStream::oldest_held`]); `i64::MAX`
    /// when none is. Ticks an order to come may match are kept from there on: the arbiter's
    /// window and the symbol histories reach back from it, not only from the latest frame, so that
    /// an order held behind a hole for up to the gap timeout still finds its trigger.
    hold_from: i64,
    /// Per account: the symbol of each order not known to have ended, for the Replace that refers to
    /// it (a Replace carries no symbol: it keeps its order's), kept only when a symbol is read (the
    /// symbol rule, `by_symbol`); and Replace requests by the order they replace, the new order's id
    /// (an invalid Replace is answered by a Canceled of the order it would replace, OUCH 5.0 §2.2,
    /// which pairs with the Replace through this). Beyond [`accounts::ORDERS_MAX`] the oldest
    /// entries go (a Replace of one counts as unmatched).
    accounts: accounts::Accounts,
    /// When flows are given (no detection): frames in no feed or session that look like one, by kind
    /// (`true`: TCP), destination address and port, for the report's notes (a feed or session given
    /// with the wrong group, host or port). At most [`UNCLAIMED_MAX`] flows.
    unclaimed: FxHashMap<(bool, IpAddr, u16), u64>,
    /// Given feeds that TCP segments went to, and given sessions' ends that UDP datagrams went to
    /// (`true`: a session), with how many: a spec of the wrong kind.
    wrong_kind: FxHashMap<(bool, usize), u64>,
    /// tick_to_trade slot per symbol (with `by_symbol`).
    symbol_slots: FxHashMap<Symbol, usize>,
    /// Requests awaiting their response, by connection and order id.
    pending: FxHashMap<(usize, OrderId), Waiting>,
    /// The same requests by time, then arrival (the key's second part counts them), for their
    /// timeouts; answered ones leave lazily. (A queue kept sorted by inserting in place was
    /// quadratic when frames alternated between two times.)
    pending_order: BTreeMap<(i64, u64), (usize, OrderId)>,
    pending_n: u64,
    metrics: [Metric; METRICS.len()],
    interval: [Latency; METRICS.len()],
    /// Orders waiting for a trigger that may still come ([`Parked`]), by when they are due and then
    /// in arrival order (the count of orders parked so far).
    /// Boxed: a `Parked` is some 600 bytes, and a B-tree moves its values within a node on every
    /// insert and removal (an order parked again at each step of its wait moved kilobytes).
    parked: std::collections::BTreeMap<(i64, u64), Box<Parked>>,
    parked_n: u64,
    /// Every order while it waits [`REORDER_NS`] past its first byte, by when it is due, then in the
    /// order parked (the key's second part counts them). (A queue kept sorted by inserting in place
    /// was quadratic when frames alternated between two times.)
    reorder: ReorderQueue,
    reorder_n: u64,
    /// Symbol rule: each symbol's orders in `reorder` ([`Waiter`]), so that a tick recorded late is
    /// offered to the orders of its symbol only.
    reorder_by_symbol: FxHashMap<Symbol, VecDeque<Waiter>>,
    /// Requests in `pending` ([`MAX_PENDING_REQUESTS`]).
    pending_n_live: usize,
    /// How many orders, requests and responses may wait at once.
    limits: Limits,
    /// When the symbol histories' kept ticks are next pruned ([`PRUNE_EVERY_NS`]).
    next_prune: i64,
    /// Responses whose request was not read yet, by arrival (and so by when they stop waiting for
    /// it: each waits as long from the latest time).
    early_responses: BTreeMap<u64, EarlyResponse>,
    /// The responses counted in `early_responses` so far.
    early_n: u64,
    /// Each (connection, order id)'s responses in `early_responses`, by arrival: an order takes its
    /// id's first without a scan (a scan per order, or one for its position, was quadratic when many
    /// responses wait).
    early_ids: FxHashMap<(usize, OrderId), VecDeque<u64>>,
    /// A step back of the capture's clock: every order in `reorder` is matched at the next frame.
    release_reorder: bool,
    /// The first order token the token rule read no sequence from: the report shows it when no order
    /// had one (a regex that does not fit the firm's tokens).
    first_unreadable_token: Option<String>,
    /// The first unmatched order whose token gave a sequence no feed brought (or 0), and that
    /// sequence: a regex capturing the wrong part of the token (a note says so).
    first_token_outside: Option<(String, u64)>,
    /// A/B delays of the packet being taken that belong to other feeds (see [`Copies`]).
    ab_elsewhere: Vec<(u16, i64)>,
    /// SND times of recent writes, by connection (see [`tx`]).
    tx_writes: FxHashMap<ConnKey, tx::ConnWrites>,
    interval_start: Option<i64>,
    closed: Vec<Interval>,
    pairs: Vec<Pair>,
    counters: Counters,
    /// Run of frames with the same timestamp source not yet added to `counters.ts_sources` (a
    /// capture has one or two sources, so this saves a map update per frame).
    ts_run: (TsSource, u64),
    /// SND events fed: software (the kernel's clock), hardware (the NIC's).
    snd_kinds: [bool; 2],
    /// `ts_run`'s source's [`TsSource::clock_bit`] (an enum's match costs the fast path ~14
    /// instructions a frame; the run changes rarely).
    run_bit: u32,
    /// Exchange-to-capture cache.
    eastern: EasternClock,
    first_time: Option<i64>,
    last_time: i64,
    /// The time of the previous frame (for [`Counters::time_steps_back`]).
    prev_time: i64,
    /// The feeds of the fast path's two latest new IPv4 destinations (a hit does not reorder them),
    /// as `(address << 16 | port, feed)`
    /// ([`Analyzer::known_feed`] remembered: feeds are only ever added, so a match stays the first).
    feed_cache: [(u64, usize); 2],
    /// Frames [`Analyzer::frame_fast`] took.
    fast_frames: u64,
    /// Packets of frames the general path took that took the plain walk ([`Analyzer::plain_lane`]).
    plain_packets: u64,
    /// The earliest capture time at which an order stream gives up the range it waits for
    /// ([`OrderStream::gap_deadline`]; `i64::MAX`: none waits): [`Analyzer::advance_time`] expires
    /// it then, whatever flow the frame is of, before the ticks kept for what waits behind it go.
    gap_due: i64,
    /// By connection, the earliest time of an order byte its inbound stream holds
    /// ([`OrderStream::oldest_held`]) and the earliest gap deadline of its streams, ordered: their
    /// minimums are [`Analyzer::hold_from`] and [`Analyzer::gap_due`], kept per segment without a walk
    /// of every connection (tens of thousands in some captures).
    holds: std::collections::BTreeSet<(i64, usize)>,
    dues: std::collections::BTreeSet<(i64, usize)>,
    /// The order streams whose reassembler holds out-of-order bytes, by the time of the earliest,
    /// then connection and direction (0: to the exchange): the first gives up first beyond
    /// [`MAX_HELD_TCP`].
    held_by_age: std::collections::BTreeSet<(i64, usize, usize)>,
    /// What they hold costs, all together ([`crate::reasm::Reassembler::held`]).
    held_tcp: usize,
    /// The order streams whose framing holds bytes in more than [`orders::FRAMING_SLACK`] of room,
    /// by the time of the first, then connection and direction: the first gives up first beyond
    /// [`MAX_HELD_FRAMING`].
    framing_by_age: std::collections::BTreeSet<(i64, usize, usize)>,
    /// What their buffers take, all together ([`OrderStream::framing_held`]).
    held_framing: usize,
    /// The capture time at which [`Analyzer::advance_time`] has more to do than keep the latest
    /// time: the open interval's end, or the timeout of the order at the front of `pending_order`
    /// (the only one it looks at, as it always did).
    wake_at: i64,
    last_frame: u64,
    scratch: Vec<OrderMsg>,
    /// A frame of a feed or order session captured short was seen ([`Analyzer::captured_short`]):
    /// order segments take the path that handles cut ones from then on.
    cut_seen: bool,
    /// Ticks and orders counted when the open interval began, and the interval that counted the most
    /// of each so far: the load behind the figures (measurement.md: a latency without its rate means
    /// nothing).
    load_marks: [u64; 2],
    busiest: [Option<report::Busiest>; 2],
}

impl Analyzer {
    /// A new analysis.
    pub fn new(cfg: AnalyzeConfig) -> Self {
        let mut feeds = Vec::new();
        let mut sessions = Vec::new();
        for f in &cfg.flows {
            match *f {
                FlowSpec::Feed(spec) => feeds.push(FeedState::new(spec, false)),
                FlowSpec::Orders(spec) => sessions.push(SessionState {
                    spec,
                    detected: false,
                    version_unknown: false,
                    slots: [None; METRICS.len()],
                    clocks: [0; 2],
                }),
            }
        }
        let detect = cfg.flows.is_empty();
        // The arbitration window is --tick-retention whatever the rule (the symbol rule keeps its
        // own history, with the feed of each tick).
        let arbiter = Arbiter::new(cfg.tick_retain_ns, 1 << 22);
        let last_by_symbol = SymbolTicks::new();
        Analyzer {
            cfg,
            feeds,
            sessions,
            detect,
            conns: FxHashMap::default(),
            conn_list: Vec::new(),
            seq: SeqTracker::new(1024),
            arbiter,
            last_by_symbol,
            locates: Vec::new(),
            backlog: backlog::Backlog::default(),
            gap_due: i64::MAX,
            holds: Default::default(),
            dues: Default::default(),
            held_by_age: Default::default(),
            held_tcp: 0,
            framing_by_age: Default::default(),
            held_framing: 0,
            hold_from: i64::MAX,
            accounts: accounts::Accounts::new(),
            unclaimed: FxHashMap::default(),
            wrong_kind: FxHashMap::default(),
            symbol_slots: FxHashMap::default(),
            pending: FxHashMap::default(),
            pending_order: BTreeMap::new(),
            pending_n: 0,
            metrics: Default::default(),
            interval: Default::default(),
            tx_writes: FxHashMap::default(),
            interval_start: None,
            closed: Vec::new(),
            pairs: Vec::new(),
            counters: Counters::default(),
            ts_run: (TsSource::PcapRecord, 0),
            run_bit: TsSource::PcapRecord.clock_bit(),
            snd_kinds: [false; 2],
            eastern: EasternClock::EMPTY,
            first_time: None,
            last_time: i64::MIN,
            prev_time: i64::MIN,
            wake_at: i64::MIN,
            parked: std::collections::BTreeMap::new(),
            parked_n: 0,
            reorder: ReorderQueue::default(),
            reorder_n: 0,
            reorder_by_symbol: FxHashMap::default(),
            pending_n_live: 0,
            limits: LIMITS,
            early_responses: BTreeMap::new(),
            early_n: 0,
            early_ids: FxHashMap::default(),
            next_prune: i64::MIN,
            release_reorder: false,
            first_unreadable_token: None,
            first_token_outside: None,
            ab_elsewhere: Vec::new(),
            feed_cache: [(u64::MAX, 0); 2],
            fast_frames: 0,
            plain_packets: 0,
            last_frame: 0,
            scratch: Vec::new(),
            cut_seen: false,
            load_marks: [0; 2],
            busiest: [None; 2],
        }
    }

    /// Whether pairs or closed intervals wait to be drained (a cheap test for the per-frame loop).
    #[inline]
    pub fn has_output(&self) -> bool {
        !self.pairs.is_empty() || !self.closed.is_empty()
    }

    /// Takes the pairs matched since the last call.
    pub fn drain_pairs(&mut self) -> std::vec::Drain<'_, Pair> {
        self.pairs.drain(..)
    }

    /// Takes the intervals closed since the last call.
    pub fn drain_intervals(&mut self) -> std::vec::Drain<'_, Interval> {
        self.closed.drain(..)
    }

    /// Feeds one TX event of an order connection's write. Events may come in any order relative to
    /// frames as long as each write's SND event is fed before the frame completing its order (the
    /// caller feeds them ahead of the frames by a margin: SND and capture times differ by far less).
    pub fn tx_event(&mut self, e: tx::TxEvent) {
        self.counters.tx_events += 1;
        if matches!(e.kind, tx::TxKind::SndSoftware | tx::TxKind::SndHardware) {
            self.snd_kinds[usize::from(e.kind == tx::TxKind::SndHardware)] = true;
            let key = (tx::canonical(e.local.ip()), e.local.port(), tx::canonical(e.remote.ip()), e.remote.port());
            self.tx_writes.entry(key).or_default().add(&e);
        }
    }

    /// The open interval's single-dimension samples of `metric`, by slot (see [`Metric`]).
    fn open_tallies(&self, metric: usize) -> Vec<(usize, &Tally)> {
        let k = match metric {
            E2C => 0,
            AB => 1,
            _ => return Vec::new(),
        };
        self.feeds.iter().filter_map(|f| Some((f.slots[k]?, f.open[k].as_deref()?))).collect()
    }

    /// Frames the fast path took ([`Analyzer::frame_fast`]), of [`Counters::frames`].
    pub fn fast_frames(&self) -> u64 {
        self.fast_frames
    }

    /// Market-data packets of frames the general path took (a tap trailer, say) that took the fast
    /// path's plain walk.
    pub fn plain_packets(&self) -> u64 {
        self.plain_packets
    }

    /// Packets the input files record as lost while they were captured (the caller reads them from the
    /// files' interface statistics), reported with the counters.
    pub fn set_capture_drops(&mut self, n: u64) {
        self.counters.capture_drops = n;
    }

    /// Flows detected from the traffic so far, as specs (for printing what was chosen).
    pub fn detected_flows(&self) -> Vec<String> {
        let f = self.feeds.iter().filter(|f| f.detected).map(|f| f.spec.to_string());
        let s = self.sessions.iter().filter(|s| s.detected).map(|s| s.spec.to_string());
        f.chain(s).collect()
    }

    /// Feeds one frame. `time_ns` is its best timestamp (a tap trailer's, else the record's), with
    /// `ts_source` and `quality` saying where it came from.
    pub fn frame(
        &mut self,
        index: u64,
        time_ns: i64,
        f: &Frame<'_>,
        d: &Dissection,
        ts_source: TsSource,
        quality: ClockQuality,
    ) {
        self.counters.frames += 1;
        self.last_frame = index;
        if d.anomaly.is_some() {
            self.counters.malformed_frames += 1;
        }
        // Borrowed, not copied: the dissection was just written field by field, and a copy read it
        // back in wider unaligned pieces that store forwarding could not serve.
        let Some(ip) = &d.ip else {
            self.counters.other_frames += 1;
            return;
        };
        if ip.fragment != crate::dissect::Fragment::No {
            // Not reassembled, so not analysed: a first fragment holds only part of its datagram,
            // which decoded would pass for the whole (the sequences it announces counted as received,
            // part of a segment's bytes as the stream's). What it carried shows as missing.
            self.counters.ip_fragments += 1;
            return;
        }
        self.advance_time(time_ns);
        let payload = d.payload(f.data);
        // The payload bytes the frame had past those captured (a snap length): missing, not malformed.
        let not_captured = match f.data.len() < f.wire_len as usize {
            true => d.payload_len.saturating_sub(payload.len()),
            false => 0,
        };
        let used = match d.transport {
            Transport::Udp { dport, .. } => match self.feed_for(ip.dst, dport, payload, not_captured) {
                Some(fi) => {
                    self.feeds[fi].clocks |= ts_source.clock_bit();
                    if not_captured > 0 {
                        self.captured_short(f.data.len(), not_captured);
                    }
                    self.market_data(fi, index, time_ns, payload, not_captured);
                    true
                }
                None => false,
            },
            Transport::Tcp { sport, dport, seq, ack, flags } => {
                let sessions = self.sessions.len();
                match self.session_for(ip.src, sport, ip.dst, dport, payload) {
                    Some((si, to_exchange)) => {
                        if self.sessions.len() > sessions {
                            self.replay_backlog(si);
                        }
                        let key =
                            if to_exchange { (ip.src, sport, ip.dst, dport) } else { (ip.dst, dport, ip.src, sport) };
                        let syn = flags & crate::wire::tcp::flags::SYN != 0;
                        let fin = flags & crate::wire::tcp::flags::FIN != 0;
                        let ack = (flags & crate::wire::tcp::flags::ACK != 0).then_some(ack);
                        let rst = flags & crate::wire::tcp::flags::RST != 0;
                        let not_captured = not_captured as u32;
                        let seg = Segment { seq, syn, fin, rst, ack, payload, not_captured };
                        if not_captured > 0 {
                            self.captured_short(f.data.len(), not_captured as usize);
                        }
                        self.sessions[si].clocks[usize::from(!to_exchange)] |= ts_source.clock_bit();
                        let frame = FrameRef { index, time_ns };
                        match self.cut_seen {
                            false => self.order_segment::<false>(si, key, to_exchange, seg, frame),
                            true => self.order_segment::<true>(si, key, to_exchange, seg, frame),
                        }
                        true
                    }
                    None => {
                        if self.detect {
                            let payload = self.backlog.buffer(payload);
                            self.backlog.hold(backlog::HeldSegment {
                                index,
                                time_ns,
                                ts_source,
                                quality,
                                src: ip.src,
                                sport,
                                dst: ip.dst,
                                dport,
                                seq,
                                ack,
                                flags,
                                payload,
                                not_captured: not_captured as u32,
                                caplen: f.data.len() as u32,
                            });
                        }
                        false
                    }
                }
            }
            Transport::None => false,
        };
        if used {
            self.used(ts_source, quality);
        } else {
            self.counters.other_frames += 1;
            if !self.detect {
                self.unclaimed_frame(ip.dst, d.transport, payload);
            }
        }
    }

    /// A session just detected (`si`): the segments its connections carried before, held while no
    /// session claimed them ([`backlog`]), are read first, as they would have been had it been given.
    #[cold]
    #[inline(never)]
    fn replay_backlog(&mut self, si: usize) {
        let spec = self.sessions[si].spec;
        let held = self.backlog.take(|h| spec.direction(h.src, h.sport, h.dst, h.dport).is_some());
        for h in held {
            let Some(to_exchange) = spec.direction(h.src, h.sport, h.dst, h.dport) else { continue };
            let key = if to_exchange { (h.src, h.sport, h.dst, h.dport) } else { (h.dst, h.dport, h.src, h.sport) };
            let has = |f: u8| h.flags & f != 0;
            use crate::wire::tcp::flags::{ACK, FIN, RST, SYN};
            let seg = Segment {
                seq: h.seq,
                syn: has(SYN),
                fin: has(FIN),
                rst: has(RST),
                ack: has(ACK).then_some(h.ack),
                payload: &h.payload,
                not_captured: h.not_captured,
            };
            if h.not_captured > 0 {
                self.captured_short(h.caplen as usize, h.not_captured as usize);
            }
            self.sessions[si].clocks[usize::from(!to_exchange)] |= h.ts_source.clock_bit();
            let frame = FrameRef { index: h.index, time_ns: h.time_ns };
            match self.cut_seen {
                false => self.order_segment::<false>(si, key, to_exchange, seg, frame),
                true => self.order_segment::<true>(si, key, to_exchange, seg, frame),
            }
            // Counted as in no feed or session when it came: it is the session's now.
            self.counters.other_frames -= 1;
            self.used(h.ts_source, h.quality);
        }
    }

    /// A frame in no feed or session given: noted when it looks like one, or goes where a spec of the
    /// other kind points ([`Analyzer::unclaimed`], [`Analyzer::wrong_kind`]).
    #[cold]
    #[inline(never)]
    fn unclaimed_frame(&mut self, dst: IpAddr, transport: Transport, payload: &[u8]) {
        let (tcp, dport) = match transport {
            Transport::Udp { dport, .. } => (false, dport),
            Transport::Tcp { dport, .. } => (true, dport),
            Transport::None => return,
        };
        let wrong = if tcp {
            self.feeds.iter().position(|f| f.spec.matches(dst, dport)).map(|i| (false, i))
        } else {
            self.sessions.iter().position(|s| s.spec.is_exchange_end(dst, dport)).map(|i| (true, i))
        };
        if let Some(k) = wrong {
            *self.wrong_kind.entry(k).or_default() += 1;
        }
        let looks = if tcp { starts_soupbin(payload) } else { looks_like_mold(payload) };
        let key = (tcp, dst, dport);
        if looks && (self.unclaimed.len() < UNCLAIMED_MAX || self.unclaimed.contains_key(&key)) {
            *self.unclaimed.entry(key).or_default() += 1;
        }
    }

    /// Counts a frame of a feed or order session that the capture cut: `caplen` bytes captured,
    /// `not_captured` payload bytes past them.
    #[cold]
    #[inline(never)]
    fn captured_short(&mut self, caplen: usize, not_captured: usize) {
        self.cut_seen = true;
        let c = &mut self.counters;
        c.frames_captured_short += 1;
        c.bytes_not_captured += not_captured as u64;
        c.captured_short_max_bytes = c.captured_short_max_bytes.max(caplen as u64);
    }

    /// Counts a frame of a feed or order session: its timestamp's source and quality.
    #[inline(always)]
    fn used(&mut self, ts_source: TsSource, quality: ClockQuality) {
        // The container's own sources first: a derived `==` on this enum costs ~20 instructions.
        let same = match (self.ts_run.0, ts_source) {
            (TsSource::PcapRecord, TsSource::PcapRecord)
            | (TsSource::PcapngBlock, TsSource::PcapngBlock)
            | (TsSource::Erf, TsSource::Erf) => true,
            (a, b) => a == b,
        };
        if same {
            self.ts_run.1 += 1;
        } else {
            self.flush_ts_run();
            self.ts_run = (ts_source, 1);
            self.run_bit = ts_source.clock_bit();
        }
        if !quality.is_clean() {
            self.counters.degraded_clock_frames += 1;
        }
    }

    fn flush_ts_run(&mut self) {
        let (source, n) = std::mem::replace(&mut self.ts_run, (TsSource::PcapRecord, 0));
        if n > 0 {
            *self.counters.ts_sources.entry(source.name()).or_default() += n;
        }
    }

    /// The counters, the pending run of timestamp sources included.
    fn counters(&self) -> Counters {
        let mut c = self.counters.clone();
        c.tick_index_resets = self.arbiter.resets;
        c.tx_writes_dropped = self.tx_writes.values().map(|w| w.dropped).sum();
        c.symbols_not_tracked_ticks = self.last_by_symbol.untracked;
        c.symbol_ticks_forgotten = self.last_by_symbol.forgotten();
        if self.ts_run.1 > 0 {
            *c.ts_sources.entry(self.ts_run.0.name()).or_default() += self.ts_run.1;
        }
        c
    }

    /// Capture time moves to `t`: the first time, the interval's close, orders that wait too long.
    /// Only the latest time is kept per frame; the rest waits for `wake_at`.
    #[inline(always)]
    fn advance_time(&mut self, t: i64) {
        // (A step back is one: the frame before is never later than the latest.)
        if t < self.last_time {
            self.reordered(t);
        }
        self.prev_time = t;
        self.last_time = self.last_time.max(t);
        if t >= self.wake_at {
            self.advance_time_slow(t);
        }
    }

    /// A frame at `t`, before the latest time recorded: counted.
    #[cold]
    #[inline(never)]
    fn reordered(&mut self, t: i64) {
        let c = &mut self.counters;
        c.reordered_frames += 1;
        c.largest_reorder_ns = c.largest_reorder_ns.max(self.last_time.abs_diff(t));
        if t < self.prev_time.saturating_sub(STEP_BACK_NS) {
            self.stepped_back(t);
        }
    }

    /// A frame at `t`, more than [`STEP_BACK_NS`] before the frame before it: counted.
    fn stepped_back(&mut self, t: i64) {
        let c = &mut self.counters;
        c.time_steps_back += 1;
        c.largest_step_back_ns = c.largest_step_back_ns.max(self.prev_time.abs_diff(t));
        c.first_step_back_frame.get_or_insert(self.last_frame);
        // What comes after a step back is not waited for: the orders waiting the reorder allowance are
        // matched now, before this frame (its ticks, stamped before theirs, would be taken for late ones).
        if !self.reorder.is_empty() {
            self.release_reorder = true;
            self.wake_at = i64::MIN;
        }
    }

    #[inline(never)]
    fn advance_time_slow(&mut self, t: i64) {
        self.first_time.get_or_insert(t);
        if t >= self.gap_due {
            self.expire_gaps(t);
        }
        // A hold no segment ends (its stream went quiet) reaches back at most HOLD_MAX_NS: the ticks
        // kept for it are let go as time passes, not only when a segment comes.
        // Every 100 ms of capture time (each symbol's kept ticks are trimmed as it ticks: these are
        // the ones of symbols gone quiet).
        if t >= self.next_prune {
            self.last_by_symbol.prune(SymbolTicks::reach_of(self.hold_from, t));
            self.next_prune = t.saturating_add(PRUNE_EVERY_NS);
        }
        // Before the interval can close: they belong to the packet before this frame.
        if !self.ab_elsewhere.is_empty() {
            self.record_ab_elsewhere();
        }
        let len = self.cfg.interval_ns;
        let start = *self.interval_start.get_or_insert_with(|| interval_of(t, len));
        // An interval that would end past the range's end lasts to the end.
        if start.checked_add(len).is_some_and(|end| t >= end) {
            self.close_interval(start, start + len);
            self.interval_start = Some(interval_of(t, len));
        }
        // Orders waiting too long for a response are unacknowledged.
        while let Some((&(at, n), &(conn, id))) = self.pending_order.first_key_value() {
            if t < self.ack_deadline(at) {
                break;
            }
            self.pending_order.pop_first();
            if self.take_request(conn, id, n).is_some() {
                self.counters.unacked += 1;
            }
        }
        // Ticks recorded after orders parked under the symbol rule that they may be the match of.
        if !self.last_by_symbol.late.is_empty() {
            self.late_ticks();
        }
        // Orders whose trigger may have come since they were parked.
        while let Some(e) = self.parked.first_entry().filter(|e| t >= e.key().0) {
            let p = e.remove();
            self.correlate(p.conn, &p.msg, p.snd, Some(p.retry(t)));
        }
        while self.early_responses.first_key_value().is_some_and(|(_, e)| t >= e.due) {
            self.early_response_unmatched();
        }
        let all = std::mem::take(&mut self.release_reorder);
        if self.reorder.first_key().is_some_and(|(due, _)| all || t >= due) {
            while let Some((key, mut p)) =
                self.reorder.first_key().filter(|k| all || t >= k.0).and_then(|_| self.reorder.pop_first())
            {
                self.unindex_reorder(key, &mut p);
                self.correlate(p.conn, &p.msg, p.snd, Some(p.retry(t)));
            }
            self.watch_parked();
        }
        let interval_end = self.interval_start.and_then(|s| s.checked_add(len)).unwrap_or(i64::MAX);
        let timeout = self.pending_order.first_key_value().map_or(i64::MAX, |(&(at, _), _)| self.ack_deadline(at));
        let parked = self.parked.first_key_value().map_or(i64::MAX, |(&(until, _), _)| until);
        let reorder = self.reorder.first_key().map_or(i64::MAX, |(due, _)| due);
        let early = self.early_responses.first_key_value().map_or(i64::MAX, |(_, e)| e.due);
        self.wake_at = interval_end.min(timeout).min(parked).min(reorder).min(early).min(self.gap_due);
    }

    /// Gives up, at capture time `t`, the ranges order streams waited for longer than the gap timeout:
    /// the orders and responses behind them are read now, while the ticks they may match are kept.
    #[cold]
    #[inline(never)]
    fn expire_gaps(&mut self, t: i64) {
        let frame = FrameRef { index: self.last_frame, time_ns: t };
        let mut msgs = std::mem::take(&mut self.scratch);
        let due: Vec<usize> = self.dues.range(..=(t, usize::MAX)).map(|&(_, ci)| ci).collect();
        for ci in due {
            let c = &mut self.conn_list[ci];
            for stream in [&mut c.to_exchange, &mut c.from_exchange] {
                if stream.gap_deadline().is_some_and(|due| t >= due) {
                    stream.expire(frame, &mut |m| msgs.push(m));
                }
            }
            for m in msgs.drain(..) {
                self.order_msg(ci, m);
            }
            self.update_hold(ci);
            self.update_held(ci);
        }
        self.scratch = msgs;
        // What came after a hole may be held by the framing (a packet begun, a window).
        if self.held_framing > self.limits.held_framing {
            self.framing_for_room(frame);
        }
    }

    /// The first time at which an order sent at `at` and still unanswered is unacknowledged (or
    /// the end of the range).
    fn ack_deadline(&self, at: i64) -> i64 {
        at.saturating_add(self.cfg.ack_timeout_ns).saturating_add(1)
    }

    /// Closes the interval starting at `start` whose samples end at `end` (the next interval's start,
    /// or the capture's last time): an interval log must not claim a whole interval for the part of
    /// the first and last intervals the capture covers.
    fn close_interval(&mut self, start: i64, end: i64) {
        let start = start.max(self.first_time.unwrap_or(start));
        let len_ns = end.saturating_sub(start).max(0);
        let counted = [self.counters.ticks, self.counters.orders];
        for ((busiest, mark), now) in self.busiest.iter_mut().zip(self.load_marks).zip(counted) {
            let count = now - mark;
            if count > busiest.map_or(0, |b| b.count) {
                *busiest = Some(report::Busiest { start_ns: start, len_ns, count });
            }
        }
        self.load_marks = counted;
        // The feeds' single-dimension samples go to the interval and to their slots.
        for f in &mut self.feeds {
            for (k, metric) in [E2C, AB].into_iter().enumerate() {
                if let (Some(slot), Some(t)) = (f.slots[k], f.open[k].as_mut())
                    && t.count() > 0
                {
                    self.interval[metric].add_tally(t);
                    self.metrics[metric].slots[slot].1.absorb(t);
                }
            }
        }
        for (i, l) in self.interval.iter_mut().enumerate() {
            if l.count() > 0 {
                let latency = std::mem::take(l);
                self.metrics[i].closed.merge(&latency);
                self.closed.push(Interval { metric: METRICS[i], start_ns: start, len_ns, latency });
            }
        }
    }

    fn record(&mut self, metric: usize, ns: i64, slots: &[usize]) {
        for &s in slots {
            self.metrics[metric].record_slot(ns, s);
        }
        self.interval[metric].record(ns);
    }

    /// The feed a datagram to `dst:dport` belongs to, detected from `payload` (`not_captured` bytes
    /// after it cut by the capture) while detecting.
    fn feed_for(&mut self, dst: IpAddr, dport: u16, payload: &[u8], not_captured: usize) -> Option<usize> {
        // Through the fast path's cache (not with `--no-fast-path`, which checks the one against the other).
        let known = match dst {
            IpAddr::V4(v4) if self.cfg.fast_path => self.cached_feed(v4, dport),
            _ => self.known_feed(dst, dport),
        };
        if known.is_some() {
            return known;
        }
        let looks = |p| match not_captured {
            0 => looks_like_mold(p),
            cut => flows::looks_like_cut_mold(p, p.len() + cut),
        };
        if self.detect && looks(payload) {
            if self.feeds.len() >= MAX_DETECTED_FEEDS {
                self.counters.feeds_not_detected_frames += 1;
                return None;
            }
            let spec = FeedSpec { group: Some(dst), port: dport, proto: flows::FeedProto::MoldItch50 };
            self.feeds.push(FeedState::new(spec, true));
            return Some(self.feeds.len() - 1);
        }
        None
    }

    /// The first feed (in order) that a datagram to `dst:dport` belongs to.
    #[inline(always)]
    fn known_feed(&self, dst: IpAddr, dport: u16) -> Option<usize> {
        // Every feed is tested (no early exit) and the first match taken from a bit mask: A and B
        // frames interleave as their race goes, so an early exit would mispredict on most frames.
        let mut mask = 0u64;
        for (i, f) in self.feeds.iter().take(64).enumerate() {
            mask |= u64::from(f.spec.port == dport) << i;
        }
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            if self.feeds[i].spec.matches(dst, dport) {
                return Some(i);
            }
            mask &= mask - 1;
        }
        if self.feeds.len() > 64 {
            return self.feeds.iter().skip(64).position(|f| f.spec.matches(dst, dport)).map(|i| 64 + i);
        }
        None
    }

    fn session_for(
        &mut self,
        src: IpAddr,
        sport: u16,
        dst: IpAddr,
        dport: u16,
        payload: &[u8],
    ) -> Option<(usize, bool)> {
        for (i, s) in self.sessions.iter().enumerate() {
            if let Some(to) = s.spec.direction(src, sport, dst, dport) {
                return Some((i, to));
            }
        }
        if !self.detect || !starts_soupbin(payload) {
            return None;
        }
        // Which end is the exchange: clients send Login Request, heartbeats, Logout; Unsequenced Data
        // goes both ways (SoupBinTCP 4.1), so its OUCH message tells.
        let to_exchange = match payload[2] {
            b'L' | b'R' | b'O' => true,
            b'U' => unsequenced_direction(payload)?,
            b'A' | b'J' | b'S' | b'H' | b'Z' => false,
            _ => return None,
        };
        if self.sessions.len() >= MAX_DETECTED_SESSIONS {
            self.counters.sessions_not_detected_frames += 1;
            return None;
        }
        let (host, port) = if to_exchange { (dst, dport) } else { (src, sport) };
        // The version, from an Enter Order in this first packet; else 5.0 (the current one) until one
        // shows it.
        let first = detect_ouch_version(payload);
        let proto = first.unwrap_or(OrderProto::Ouch50);
        let spec = OrderSpec { host: Some(host), port, proto };
        self.sessions.push(SessionState {
            spec,
            detected: true,
            version_unknown: first.is_none(),
            slots: [None; METRICS.len()],
            clocks: [0; 2],
        });
        Some((self.sessions.len() - 1, to_exchange))
    }

    /// One packet of feed `fi`: `payload` the captured UDP payload, `not_captured` the bytes after it
    /// the capture cut (0: captured whole). A packet captured short is read as far as it was captured:
    /// its header moves the sequence on as usual, its messages captured whole are used as any, and
    /// those the capture cut are counted as not captured ([`FeedState::cut`]), not as malformed.
    fn market_data(&mut self, fi: usize, index: u64, t: i64, payload: &[u8], not_captured: usize) {
        // A packet in the common shape takes the plain walk, as on the fast path; `--no-fast-path`
        // keeps the general walk for every packet, to check the one against the other.
        if self.cfg.fast_path
            && not_captured == 0
            && let Some((lane, sequence)) = self.plain_lane(fi, payload)
        {
            self.plain_packets += 1;
            return self.market_plain(fi, t, payload, lane, sequence);
        }
        self.feeds[fi].frames += 1;
        let truncated = self.feeds[fi].decoder.itch.truncated;
        let datagram = payload.len() + not_captured;
        let mut w = match self.feeds[fi].decoder.walk_keys(payload) {
            Ok(w) => w,
            Err(e) => {
                let feed = &mut self.feeds[fi];
                if not_captured > 0 {
                    feed.cut(0, not_captured);
                    if datagram >= crate::proto::moldudp64::HEADER_LEN {
                        // Its sequence and count not captured: its messages show as missing after it.
                        feed.headers_not_captured += 1;
                        return;
                    }
                }
                return feed.bad_packet(index, &e);
            }
        };
        if self.seq.next_expected(fi as u16, w.session()).is_none() {
            // Each session costs its state (about 1.5 KB): a stream of garbage session names must
            // not take gigabytes.
            let feed = &mut self.feeds[fi];
            if feed.sessions >= MAX_FEED_SESSIONS {
                feed.sessions_beyond += 1;
                feed.first_session_beyond.get_or_insert((index, w.session()));
                return;
            }
            feed.sessions += 1;
        }
        let (mut copies, decoder) = Copies::new(self, fi, w.session(), ArbSession::Find(w.sequence()), t);
        while let Some(m) = decoder.next_key(&mut w, copies.track_symbols) {
            copies.message(m);
        }
        let info = decoder.end_keys(&w);
        let arb = copies.arb;
        self.seq.observe(fi as u16, info.session, info.sequence, info.count);
        self.feeds[fi].lane = Some((info.session, self.seq.last_stream(), arb));
        self.feeds[fi].add_seq_range(info.sequence, info.count);
        let feed = &mut self.feeds[fi];
        // Captured short: a block that would have ended inside the datagram was cut by the capture, and
        // every one after it (one running past the datagram is malformed all the same).
        let cut = not_captured > 0
            && match info.error {
                Some(crate::proto::ProtoError::Truncated { offset, need, .. }) => offset + need <= datagram,
                Some(_) => false,
                None => info.trailing == 0,
            };
        if not_captured > 0 {
            let announced = if info.count == crate::proto::moldudp64::END_OF_SESSION { 0 } else { info.count };
            let lost = if cut { u64::from(announced.saturating_sub(info.blocks)) } else { 0 };
            feed.cut(lost, not_captured);
        }
        if let Some(e) = info.error.filter(|_| !cut) {
            feed.bad_packet(index, &e);
        } else if info.trailing > 0 {
            let why = format!("{} bytes after the {} message blocks its header announces", info.trailing, info.count);
            feed.bad_packet(index, &why);
        } else if feed.decoder.itch.truncated > truncated
            && let Some(e) = feed.decoder.itch.last_error
        {
            feed.bad_packet(index, &e);
        }
    }

    /// One segment of order session `si`'s connection `key`. `CUT`: a frame captured short was seen
    /// ([`Analyzer::cut_seen`]), so the segment may be one, or one cut before may wait for the stream
    /// ([`OrderStream::segment_cut`]); a capture without (the usual) keeps the path it had before.
    fn order_segment<const CUT: bool>(
        &mut self,
        si: usize,
        key: ConnKey,
        to_exchange: bool,
        seg: Segment<'_>,
        frame: FrameRef,
    ) {
        let ci = match self.conns.get(&key) {
            Some(&c) => c,
            None if self.conn_list.len() >= MAX_CONNECTIONS => {
                self.counters.connections_not_analysed_frames += 1;
                return;
            }
            None => {
                let s = &self.sessions[si];
                let proto = (!s.version_unknown).then_some(s.spec.proto);
                self.conn_list.push(Conn {
                    session: si,
                    label: format!("{}:{}>{}:{}", fmt_ip(key.0), key.1, fmt_ip(key.2), key.3),
                    key,
                    to_exchange: OrderStream::new(OrderDir::Inbound, proto),
                    from_exchange: OrderStream::new(OrderDir::Outbound, proto),
                    frames: 0,
                    reset: false,
                    marks: (i64::MAX, i64::MAX),
                    held: [(i64::MAX, 0); 2],
                    framing: [(i64::MAX, 0); 2],
                });
                self.conns.insert(key, self.conn_list.len() - 1);
                self.conn_list.len() - 1
            }
        };
        let mut msgs = std::mem::take(&mut self.scratch);
        let conn = &mut self.conn_list[ci];
        conn.frames += 1;
        let (this, other) = if to_exchange {
            (&mut conn.to_exchange, &mut conn.from_exchange)
        } else {
            (&mut conn.from_exchange, &mut conn.to_exchange)
        };
        let new_connection = if seg.syn {
            // A new connection on the same addresses and ports (a client reconnecting from a fixed
            // port): the old one ends here, both ways, as at the capture's end. A SYN with data or
            // a FIN is not taken for one (a damaged segment: it would throw the stream off).
            !seg.fin && seg.payload.is_empty() && this.is_new_connection(seg.seq)
        } else {
            // After a reset, data far from the stream is a new connection's whose SYN the capture
            // missed (near it: a retransmission, or a segment after a loss).
            conn.reset && !seg.payload.is_empty() && this.far_from(seg.seq)
        };
        if new_connection {
            this.restart(frame.index, &mut |m| msgs.push(m));
            other.restart(frame.index, &mut |m| msgs.push(m));
            conn.reset = false;
        }
        if seg.rst {
            conn.reset = true;
        }
        // The ACK first: data of the other direction waiting behind a range the capture missed is
        // released by it, and this segment may carry the responses to those orders.
        if let Some(ack) = seg.ack {
            other.acked(ack, frame, &mut |m| msgs.push(m));
        }
        if CUT && this.takes_cut(seg.not_captured) {
            this.segment_cut(seg.seq, seg.syn, seg.payload, seg.not_captured, frame, &mut |m| msgs.push(m));
        } else {
            this.segment(seg.seq, seg.syn, seg.payload, frame, &mut |m| msgs.push(m));
        }
        if seg.fin {
            // The FIN follows every byte the segment carried, captured or not.
            let cut = if CUT { seg.not_captured as usize } else { 0 };
            this.fin(seg.seq, seg.payload.len() + cut);
        }
        if let (Some(proto), None) = (this.proto(), other.proto()) {
            // An Enter Order showed the session's version: the responses are read in it too.
            other.set_proto(proto);
            let s = &mut self.sessions[si];
            if s.version_unknown {
                (s.spec.proto, s.version_unknown) = (proto, false);
            }
        }
        // (Looked at here, not in `update_hold`: the segment's path stays as short.)
        let held_changed = this.held_changed() | other.held_changed();
        for m in msgs.drain(..) {
            self.order_msg(ci, m);
        }
        self.scratch = msgs;
        self.update_hold(ci);
        if held_changed {
            self.update_held(ci);
            if self.held_tcp > self.limits.held_tcp {
                self.held_tcp_for_room(frame);
            }
            if self.held_framing > self.limits.held_framing {
                self.framing_for_room(frame);
            }
        }
    }

    /// The framing buffers of all order streams take more than [`MAX_HELD_FRAMING`] at `frame`: the
    /// stream holding the oldest byte gives up what its framing holds, as at a hole (then the next
    /// oldest, until all take no more).
    #[cold]
    #[inline(never)]
    fn framing_for_room(&mut self, frame: FrameRef) {
        let mut msgs = std::mem::take(&mut self.scratch);
        while self.held_framing > self.limits.held_framing {
            let Some(&(_, ci, dir)) = self.framing_by_age.first() else { break };
            let c = &mut self.conn_list[ci];
            let stream = if dir == 0 { &mut c.to_exchange } else { &mut c.from_exchange };
            let bytes = stream.give_up_framing(frame, &mut |m| msgs.push(m));
            self.counters.framing_released_for_room += 1;
            self.counters.framing_bytes_released_for_room += bytes;
            self.counters.first_framing_released_for_room_frame.get_or_insert(frame.index);
            for m in msgs.drain(..) {
                self.order_msg(ci, m);
            }
            let held = self.conn_list[ci].framing[dir];
            self.update_hold(ci);
            self.update_held(ci);
            if self.conn_list[ci].framing[dir] == held {
                // Nothing given up (never so: the buffers were freed): not a loop forever.
                break;
            }
        }
        self.scratch = msgs;
    }

    /// The out-of-order bytes held by all order streams cost more than [`MAX_HELD_TCP`] at `frame`:
    /// the stream holding the oldest gives up the ranges it waits for, first to last, until all hold
    /// no more (then the next oldest, if it did not suffice), each a hole, what follows read.
    #[cold]
    #[inline(never)]
    fn held_tcp_for_room(&mut self, frame: FrameRef) {
        let mut msgs = std::mem::take(&mut self.scratch);
        while self.held_tcp > self.limits.held_tcp {
            let Some(&(_, ci, dir)) = self.held_by_age.first() else { break };
            let over = self.held_tcp - self.limits.held_tcp;
            let c = &mut self.conn_list[ci];
            let stream = if dir == 0 { &mut c.to_exchange } else { &mut c.from_exchange };
            let (holes, bytes) = stream.give_up(over, frame, &mut |m| msgs.push(m));
            self.counters.tcp_gaps_released_for_room += holes;
            self.counters.tcp_gap_bytes_released_for_room += bytes;
            self.counters.first_tcp_released_for_room_frame.get_or_insert(frame.index);
            for m in msgs.drain(..) {
                self.order_msg(ci, m);
            }
            let held = self.conn_list[ci].held[dir];
            self.update_hold(ci);
            self.update_held(ci);
            if self.conn_list[ci].held[dir] == held {
                // Nothing given up (never so: a stream in the index holds bytes): not a loop forever.
                break;
            }
        }
        self.scratch = msgs;
    }

    /// [`Analyzer::held_by_age`] and [`Analyzer::held_tcp`] follow what connection `ci`'s reassemblers
    /// hold, [`Analyzer::framing_by_age`] and [`Analyzer::held_framing`] what its framing holds, after
    /// a segment, an expiry or a release for room (when it changed).
    #[cold]
    #[inline(never)]
    fn update_held(&mut self, ci: usize) {
        let c = &mut self.conn_list[ci];
        if !(c.to_exchange.take_held_change() | c.from_exchange.take_held_change()) {
            return;
        }
        for (dir, stream) in [&mut c.to_exchange, &mut c.from_exchange].into_iter().enumerate() {
            let now = stream.held().unwrap_or((i64::MAX, 0));
            let was = std::mem::replace(&mut c.held[dir], now);
            self.held_tcp = self.held_tcp - was.1 + now.1;
            follow(&mut self.held_by_age, (ci, dir), was.0, now.0);
            let now = stream.framing_held().unwrap_or((i64::MAX, 0));
            let was = std::mem::replace(&mut c.framing[dir], now);
            self.held_framing = self.held_framing - was.1 + now.1;
            follow(&mut self.framing_by_age, (ci, dir), was.0, now.0);
        }

        /// Moves direction `at`'s entry in `by_age` from time `was` to `now` (`i64::MAX`: none).
        fn follow(
            by_age: &mut std::collections::BTreeSet<(i64, usize, usize)>,
            at: (usize, usize),
            was: i64,
            now: i64,
        ) {
            if was != now {
                if was != i64::MAX {
                    by_age.remove(&(was, at.0, at.1));
                }
                if now != i64::MAX {
                    by_age.insert((now, at.0, at.1));
                }
            }
        }
    }

    /// Recomputes [`Analyzer::hold_from`] and [`Analyzer::gap_due`] after an order segment, an
    /// expiry or a release for room on connection `ci` (the only things that change them) and tells
    /// the arbiter and the symbol histories.
    fn update_hold(&mut self, ci: usize) {
        let c = &mut self.conn_list[ci];
        let held = c.to_exchange.oldest_held().unwrap_or(i64::MAX);
        let due = [&c.to_exchange, &c.from_exchange].into_iter().filter_map(OrderStream::gap_deadline).min();
        let marks = (held, due.unwrap_or(i64::MAX));
        if marks != c.marks {
            let old = std::mem::replace(&mut c.marks, marks);
            for (set, was, now) in [(&mut self.holds, old.0, marks.0), (&mut self.dues, old.1, marks.1)] {
                if was != now {
                    set.remove(&(was, ci));
                    if now != i64::MAX {
                        set.insert((now, ci));
                    }
                }
            }
        }
        self.gap_due = self.dues.first().map_or(i64::MAX, |&(t, _)| t);
        self.wake_at = self.wake_at.min(self.gap_due);
        let from = self.holds.first().map_or(i64::MAX, |&(t, _)| t);
        if from != self.hold_from {
            self.hold_from = from;
            // Only what the rule reads: the arbiter's ticks under the token rule, the symbol
            // histories under the symbol rule.
            match self.cfg.matching {
                MatchRule::Token { .. } => self.arbiter.hold(from, HOLD_MAX_NS),
                MatchRule::Symbol { .. } => self.last_by_symbol.hold(from),
            }
        }
    }

    /// Order `m` waits [`REORDER_NS`] past its first byte in [`Analyzer::reorder`], with its match so
    /// far (`best` under the symbol rule, `found` under the token rule).
    /// At most [`MAX_WAITING_ORDERS`] wait, [`MAX_WAITING_PER_SYMBOL`] of one symbol: beyond, the one
    /// due first is matched now.
    fn wait_reorder(&mut self, ci: usize, m: &OrderMsg, snd: Option<i64>, best: Option<SymTick>, found: Option<Found>) {
        let until = m.first.time_ns.saturating_add(REORDER_NS);
        let symbol = m.summary.symbol.filter(|_| matches!(self.cfg.matching, MatchRule::Symbol { .. }));
        // (Never more of one symbol than of all: the common case looks nothing up.)
        let many = self.reorder.len() >= self.limits.per_symbol;
        let per_symbol = self.limits.per_symbol;
        if let Some(first) = symbol
            .filter(|_| many)
            .and_then(|s| self.reorder_by_symbol.get(&s))
            .filter(|waiters| waiters.len() >= per_symbol)
            .and_then(|waiters| waiters.front())
        {
            self.release_for_room(first.key);
        }
        if self.reorder.len() >= self.limits.waiting
            && let Some(first) = self.reorder.first_key()
        {
            self.release_for_room(first);
        }
        let p = Parked { give_up: until, conn: ci, msg: *m, snd, best, late_only: false, found };
        self.reorder_n += 1;
        let key = (until, self.reorder_n);
        self.reorder.insert(key, p);
        if let Some(s) = symbol {
            let waiters = self.reorder_by_symbol.entry(s).or_default();
            let at = waiters.partition_point(|w| w.key < key);
            waiters.insert(at, Waiter { key, t: m.first.time_ns, best });
        }
        self.wake_at = self.wake_at.min(until);
        self.watch_parked();
    }

    /// Order `key` of [`Analyzer::reorder`] left it: out of the index by symbol, with its match so far.
    fn unindex_reorder(&mut self, key: (i64, u64), p: &mut Parked) {
        let Some(s) = p.msg.summary.symbol.filter(|_| matches!(self.cfg.matching, MatchRule::Symbol { .. })) else {
            return;
        };
        if let Some(waiters) = self.reorder_by_symbol.get_mut(&s) {
            let at = waiters.partition_point(|w| w.key < key);
            // Only the order's own entry (none other, should the index ever be out of step).
            if waiters.get(at).is_some_and(|w| w.key == key)
                && let Some(w) = waiters.remove(at)
            {
                p.best = w.best;
            }
            // Kept empty for the symbol's next order (no allocation per order), unless there are many
            // (symbols of orders are any bytes).
            if waiters.is_empty() && self.reorder_by_symbol.len() > 1_024 {
                self.reorder_by_symbol.remove(&s);
            }
        }
    }

    /// Order `key` stops waiting the allowance for room: matched now with what came so far (the
    /// ticks recorded late offered it first), as a step back of the clock would.
    #[cold]
    fn release_for_room(&mut self, key: (i64, u64)) {
        if !self.last_by_symbol.late.is_empty() {
            self.late_ticks();
        }
        let Some(mut p) = self.reorder.remove(&key) else { return };
        self.unindex_reorder(key, &mut p);
        self.released_for_room(|c| &mut c.orders_released_for_room);
        self.correlate(p.conn, &p.msg, p.snd, Some(p.retry(self.last_time)));
    }

    /// Counts an order, request or response released for room, and the first frame that did.
    fn released_for_room(&mut self, counter: fn(&mut Counters) -> &mut u64) {
        *counter(&mut self.counters) += 1;
        self.counters.first_released_for_room_frame.get_or_insert(self.last_frame);
    }

    /// The first response of order `id` on connection `ci` left [`Analyzer::early_responses`].
    fn early_gone(&mut self, ci: usize, id: OrderId) {
        if let Some(q) = self.early_ids.get_mut(&(ci, id)) {
            q.pop_front();
            if q.is_empty() {
                self.early_ids.remove(&(ci, id));
            }
        }
    }

    /// The oldest response waiting for its request ([`EarlyResponse`]) stops waiting: unmatched.
    fn early_response_unmatched(&mut self) {
        // The oldest of all is the first of its id's.
        if let Some((_, e)) = self.early_responses.pop_first() {
            self.early_gone(e.conn, e.id);
            match e.cancel {
                true => self.counters.unsolicited_cancels += 1,
                false => self.counters.unmatched_responses += 1,
            }
        }
    }

    /// Tells the symbol histories the latest first byte of an order parked under the symbol rule
    /// (all wait [`REORDER_NS`] past it: the last to be retried).
    fn watch_parked(&mut self) {
        if matches!(self.cfg.matching, MatchRule::Symbol { .. }) {
            let last = self.reorder.last_key().map(|(due, _)| due.saturating_sub(REORDER_NS));
            self.last_by_symbol.parked_to = last.unwrap_or(i64::MIN);
        }
    }

    /// Offers the ticks recorded since the last frame that may be the match of orders parked under the
    /// symbol rule (stamped at or before their first byte) to those orders: each keeps the newest by
    /// time (a tick given a new time, an earlier copy's, takes it where it was the match).
    #[cold]
    #[inline(never)]
    fn late_ticks(&mut self) {
        let Analyzer { last_by_symbol: ticks, reorder_by_symbol, .. } = self;
        for (symbol, k) in std::mem::take(&mut ticks.late) {
            let Some(waiters) = reorder_by_symbol.get_mut(&symbol) else { continue };
            // A tick forgotten for room (or given such a time): a forgotten one may be newer than
            // it, so an order it would better has no match known.
            let forgotten = k.0 <= ticks.forgot_to(symbol);
            for p in waiters.iter_mut() {
                let t = p.t;
                if k.0 > t {
                    continue;
                }
                p.best = match p.best {
                    Some(b) if forgotten && (b.1, b.2) == (k.1, k.2) => ticks.at_or_before(symbol, t),
                    Some(b) if forgotten && b.0 > k.0 => Some(b),
                    _ if forgotten => None,
                    // The match given an earlier time: another tick kept may now be newer.
                    Some(b) if (b.1, b.2) == (k.1, k.2) => {
                        let retimed = (k.0, b.1, b.2, b.3, k.4);
                        match ticks.at_or_before(symbol, t) {
                            Some(o) if o.0 > retimed.0 => Some(o),
                            _ => Some(retimed),
                        }
                    }
                    // Several at one time: the newest message names the tick, as in the history.
                    Some(b) if b.0 == k.0 => Some((b.0, k.1, k.2, b.3 + k.3, k.4)),
                    Some(b) if b.0 > k.0 => Some(b),
                    _ => Some(k),
                };
            }
        }
    }

    /// The dimension slot in `metric` of connection `ci`'s session.
    fn conn_slot(&mut self, ci: usize, metric: usize) -> usize {
        let s = &mut self.sessions[self.conn_list[ci].session];
        *s.slots[metric].get_or_insert_with(|| self.metrics[metric].slot(format!("session:{}", s.spec)))
    }

    /// The SND time of the write holding order `m`'s last byte, on connection `ci`, if TX events say.
    fn snd_of(&self, ci: usize, m: &OrderMsg) -> Option<i64> {
        if self.tx_writes.is_empty() {
            return None;
        }
        let c = &self.conn_list[ci];
        let writes = self.tx_writes.get(&c.key)?;
        writes.snd_of(c.to_exchange.seq_at(m.end.checked_sub(1)?)?)
    }

    fn order_msg(&mut self, ci: usize, mut m: OrderMsg) {
        let owner = self.owner(ci);
        if matches!(self.cfg.matching, MatchRule::Symbol { .. }) || self.cfg.by_symbol {
            self.accounts.order_symbol(owner, &mut m.summary);
        }
        let s = m.summary;
        match s.dir {
            OrderDir::Inbound => {
                if !matches!(s.msg_type, b'O' | b'U' | b'X' | b'M') {
                    return;
                }
                self.counters.orders += 1;
                let snd = self.snd_of(ci, &m);
                if let Some(snd) = snd {
                    self.counters.orders_with_snd += 1;
                    let slot = self.conn_slot(ci, S2W);
                    self.record(S2W, m.first.time_ns.saturating_sub(snd), &[slot]);
                } else if self.cfg.tx_events {
                    self.counters.orders_without_snd += 1;
                }
                if matches!(s.msg_type, b'X' | b'M') {
                    self.counters.not_correlated += 1;
                } else {
                    self.correlate(ci, &m, snd, None);
                }
                if let (b'U', Some(id), Some(orig)) = (s.msg_type, s.id, s.orig_id) {
                    self.accounts.replace_sent(owner, orig, id);
                }
                if let Some(id) = s.id {
                    let t = m.first.time_ns;
                    self.pending_n += 1;
                    let n = self.pending_n;
                    match self.pending.entry((ci, id)) {
                        Entry::Occupied(mut w) => {
                            w.get_mut().later.insert(n, t);
                        }
                        Entry::Vacant(v) => {
                            v.insert(Waiting { oldest: (t, n), later: BTreeMap::new() });
                        }
                    }
                    self.pending_n_live += 1;
                    if self.pending_n_live > self.limits.pending {
                        self.release_oldest_request();
                    }
                    // Answered orders leave the front of the timeout queue here, not at their timeout
                    // only: the queue holds the unanswered ones (and those behind them), not every
                    // order of the last timeout's worth of capture.
                    while let Some((&(_, n), &(conn, id))) = self.pending_order.first_key_value() {
                        if self.pending.get(&(conn, id)).is_some_and(|w| w.holds(n)) {
                            break;
                        }
                        self.pending_order.pop_first();
                    }
                    // In time order: an order read late (replayed from the detection backlog, or
                    // in a frame recorded out of order) must not wait behind newer ones, whose
                    // timeouts are the only ones looked at.
                    self.pending_order.insert((t, n), (ci, id));
                    // The front may have changed either way: answered orders left it (the one now
                    // there may be older than those, when frames come out of time order), or the
                    // queue was empty.
                    if let Some((&(at, _), _)) = self.pending_order.first_key_value() {
                        self.wake_at = self.wake_at.min(self.ack_deadline(at));
                    }
                    // Its response, recorded before it (frames out of order), waits for it.
                    if let Some(&k) = self.early_ids.get(&(ci, id)).and_then(VecDeque::front)
                        && let Some(e) = self.early_responses.remove(&k)
                    {
                        self.early_gone(ci, id);
                        if let Some(t) = self.answer_oldest(ci, id) {
                            self.counters.acked += 1;
                            let slot = self.conn_slot(ci, O2A);
                            self.record(O2A, e.time_ns.saturating_sub(t), &[slot]);
                        }
                    }
                }
            }
            OrderDir::Outbound => {
                // Responses that acknowledge an order action: Accepted, Rejected, Replaced, Canceled,
                // Modified; Cancel Pending and Cancel Reject answer a Cancel (OUCH 5.0 §3.9, §3.10).
                if !matches!(s.msg_type, b'A' | b'J' | b'U' | b'C' | b'M' | b'P' | b'I') {
                    return;
                }
                let Some(id) = s.id else { return };
                // A Replaced ends its Replace's entry (the order it replaced is gone).
                if s.msg_type == b'U'
                    && let Some(orig) = s.orig_id
                {
                    self.accounts.replace_answered(owner, orig);
                }
                // The oldest request of the id: the exchange answers an order's requests in order. A
                // Canceled with none may answer a Replace of that order that was invalid.
                let answered = self.answer_oldest(ci, id).or_else(|| {
                    let new = (s.msg_type == b'C').then(|| self.accounts.replace_answered(owner, id)).flatten()?;
                    self.answer_oldest(ci, new)
                });
                match answered {
                    Some(t) => {
                        self.counters.acked += 1;
                        let slot = self.conn_slot(ci, O2A);
                        self.record(O2A, m.first.time_ns.saturating_sub(t), &[slot]);
                    }
                    // Its request may be recorded after it (frames out of order), or be held behind a
                    // range reassembly waits for: it waits as long as such a range (`reasm::REORDER_NS`).
                    None => {
                        if self.early_responses.len() >= self.limits.early {
                            self.released_for_room(|c| &mut c.responses_released_for_room);
                            self.early_response_unmatched();
                        }
                        let due = self.last_time.saturating_add(crate::reasm::REORDER_NS);
                        let cancel = s.msg_type == b'C';
                        let e = EarlyResponse { due, conn: ci, id, time_ns: m.first.time_ns, cancel };
                        self.early_n += 1;
                        self.early_responses.insert(self.early_n, e);
                        self.early_ids.entry((ci, id)).or_default().push_back(self.early_n);
                        self.wake_at = self.wake_at.min(due);
                    }
                }
            }
        }
    }

    /// Whose orders connection `ci` acts on ([`Owner`]).
    fn owner(&self, ci: usize) -> Owner {
        let c = &self.conn_list[ci];
        match c.to_exchange.login_user() {
            Some(user) => Owner::Login(c.session, c.key.0, c.key.2, user),
            None => Owner::Conn(ci),
        }
    }

    /// More than [`MAX_PENDING_REQUESTS`] await a response: the oldest by time of those in the
    /// timeout queue is no longer waited for.
    #[cold]
    fn release_oldest_request(&mut self) {
        while let Some(((_, n), (conn, id))) = self.pending_order.pop_first() {
            if self.take_request(conn, id, n).is_some() {
                self.released_for_room(|c| &mut c.requests_released_for_room);
                return;
            }
        }
    }

    /// Takes the oldest request of order `id` on connection `ci` awaiting a response: its time.
    fn answer_oldest(&mut self, ci: usize, id: OrderId) -> Option<i64> {
        let w = self.pending.get_mut(&(ci, id))?;
        self.pending_n_live -= 1;
        let (oldest, _) = w.oldest;
        match w.later.pop_first() {
            Some((n, t)) => w.oldest = (t, n),
            None => {
                self.pending.remove(&(ci, id));
            }
        }
        Some(oldest)
    }

    /// Takes request `n` of order `id` on connection `ci` if it still awaits a response (its time):
    /// the one whose timeout came, or the one released for room, which need not be the oldest sent
    /// when requests of one id come out of time order.
    fn take_request(&mut self, ci: usize, id: OrderId, n: u64) -> Option<i64> {
        let w = self.pending.get_mut(&(ci, id))?;
        if w.oldest.1 == n {
            return self.answer_oldest(ci, id);
        }
        let t = w.later.remove(&n)?;
        self.pending_n_live -= 1;
        Some(t)
    }

    /// Whether tick `seq`, not found, may still come: no session has reached it (the feed's frames
    /// behind the order's), or a session lacks it while one of its feeds has not passed it yet (A lost
    /// it, B's copy may still come). A tick a feed passed, lacking it, and no other feed may bring
    /// does not: its late copy on that feed is no trigger the order could have seen.
    fn may_still_come(&self, seq: u64) -> bool {
        self.arbiter.ahead_of_all(seq)
            || self.arbiter.missing_in(seq).any(|session| {
                (0..self.feeds.len())
                    .any(|fi| self.seq.next_expected(fi as u16, session).is_some_and(|next| next <= seq))
            })
    }

    /// An order whose token `tok` gives sequence `seq` was found unmatched (token rule): remembered when
    /// the sequence lies outside every feed's range seen, unless one remembered still does (ranges
    /// grow).
    #[cold]
    fn unmatched_token(&mut self, tok: &[u8], seq: u64) {
        if self.first_token_outside.as_ref().is_some_and(|&(_, seq)| self.seq_outside_feeds(seq)) {
            return;
        }
        if self.seq_outside_feeds(seq) {
            self.first_token_outside = Some((String::from_utf8_lossy(tok).into_owned(), seq));
        }
    }

    /// Whether `seq` is 0 (MoldUDP64 numbers messages from 1) or, some feed having brought messages,
    /// lies outside the sequence range of each.
    fn seq_outside_feeds(&self, seq: u64) -> bool {
        let mut ranges = self.feeds.iter().filter_map(FeedState::seq_range).peekable();
        seq == 0 || (ranges.peek().is_some() && ranges.all(|(lo, hi)| seq < lo || seq > hi))
    }

    /// Parks order `p` until `until` ([`Parked`]). At most [`MAX_WAITING_ORDERS`] are: beyond, the one
    /// due first is looked for one last time now, and unmatched if its trigger has not come.
    fn park(&mut self, until: i64, p: Parked) {
        if self.parked.len() >= self.limits.waiting
            && let Some((_, first)) = self.parked.pop_first()
        {
            self.released_for_room(|c| &mut c.orders_released_for_room);
            self.correlate(first.conn, &first.msg, first.snd, Some(first.retry(i64::MAX)));
        }
        self.parked_n += 1;
        self.parked.insert((until, self.parked_n), Box::new(p));
        self.wake_at = self.wake_at.min(until);
    }

    /// Finds order `m`'s trigger under the rule and records the pair. Every order first waits
    /// [`REORDER_NS`] past its first byte ([`Analyzer::wait_reorder`]); under the token rule, an order
    /// whose trigger no session has reached yet is parked ([`Parked`]): the feed's frames may be behind
    /// the order's. `retry`: what it was parked with, for an order looked for again.
    fn correlate(&mut self, ci: usize, m: &OrderMsg, snd: Option<i64>, retry: Option<Retry>) {
        let s = &m.summary;
        let t = m.first.time_ns;
        let token = token_bytes(s);
        // Under the token rule, the token and the sequence it gives, for an order left unmatched.
        let mut read = None;
        let found = match &mut self.cfg.matching {
            MatchRule::Token(rule) => {
                let Some((tok, seq)) = token.and_then(|tok| Some((tok, rule.seq_of(tok)?))) else {
                    self.counters.no_token += 1;
                    self.counters.unmatched_orders += 1;
                    if self.first_unreadable_token.is_none() {
                        self.first_unreadable_token = token.map(|t| String::from_utf8_lossy(t).into_owned());
                    }
                    return;
                };
                read = Some((tok, seq));
                // A trigger older than the retention is no match, whether or not newer ticks have pushed
                // it out of the arbiter yet (that depends on the feed's traffic after it, and on orders
                // held by reassembly): nor does it make the order ambiguous.
                match self.arbiter.find(seq, t.saturating_sub(self.cfg.tick_retain_ns)) {
                    // Waited for only as a copy the capture may record late: one stamped after the
                    // order is a late delivery, no trigger the order could have seen.
                    Ok(Some((_, tick))) if retry.is_some_and(|r| r.late_only) && tick.time_ns > t => None,
                    // Found: it waits REORDER_NS of capture time past the order's first byte for an
                    // earlier copy the capture may record late, then takes the tick's time then.
                    Ok(Some((session, tick))) if retry.is_none() && self.last_time < t.saturating_add(REORDER_NS) => {
                        let found = Some((session, seq, tick.time_ns, tick.feed));
                        return self.wait_reorder(ci, m, snd, None, found);
                    }
                    Ok(Some((session, tick))) => Some((session, seq, tick.time_ns, tick.feed)),
                    // Found before, no longer in the window (a retention shorter than the wait).
                    Ok(None) | Err(_) if retry.is_some_and(|r| r.found.is_some()) => retry.and_then(|r| r.found),
                    // Or a copy the capture records up to REORDER_NS late (a host reordering frames), though
                    // every feed has passed it: looked for again once that is over.
                    Ok(None)
                        if retry.is_none_or(|r| r.now < r.give_up)
                            && (self.last_time < t.saturating_add(REORDER_NS) || self.may_still_come(seq)) =>
                    {
                        let step = (self.cfg.tick_retain_ns / PARK_STEP_DIV).max(1);
                        let (now, give_up) =
                            retry.map_or((t, t.saturating_add(self.cfg.tick_retain_ns / 2)), |r| (r.now, r.give_up));
                        let late_only = !self.may_still_come(seq);
                        let until = match late_only {
                            false => now.saturating_add(step),
                            true => t.saturating_add(REORDER_NS).min(now.saturating_add(step)),
                        };
                        let p = Parked { give_up, conn: ci, msg: *m, snd, best: None, late_only, found: None };
                        return self.park(until, p);
                    }
                    Ok(None) => None,
                    Err(_) => {
                        self.counters.ambiguous += 1;
                        return;
                    }
                }
            }
            MatchRule::Symbol { window_ns } => {
                // A trigger recorded after its order (a host reordering frames by up to
                // REORDER_NS) is waited for: the order waits until capture time has passed its first
                // byte by that much, offered the ticks of its symbol recorded meanwhile.
                let window = *window_ns;
                let newest_before = match retry {
                    Some(r) => r.best,
                    None => s.symbol.and_then(|sym| self.last_by_symbol.at_or_before(sym, t)),
                };
                if retry.is_none() && self.last_time < t.saturating_add(REORDER_NS) && s.symbol.is_some() {
                    // Its match so far, which a tick recorded from now on may better (`late_ticks`).
                    return self.wait_reorder(ci, m, snd, newest_before, None);
                }
                match newest_before {
                    Some((tt, session, seq, n, feed)) if t.saturating_sub(tt) <= window => {
                        if n > 1 {
                            self.counters.ambiguous += 1;
                        }
                        Some((session, seq, tt, feed))
                    }
                    _ => None,
                }
            }
        };
        let Some((session, seq, tick_time, feed)) = found else {
            self.counters.unmatched_orders += 1;
            if let Some((tok, seq)) = read {
                self.unmatched_token(tok, seq);
            }
            return;
        };
        // A trigger stamped after its order: the two taps' clocks disagree. The pair stands, its
        // latency negative, where the table shows it (it was dropped, and the skew hidden).
        if tick_time > t {
            self.counters.trigger_after_order += 1;
        }
        self.counters.matched += 1;
        // Saturating: times more than 292 years apart (saturated stamps) are beyond every metric.
        let latency = t.saturating_sub(tick_time);
        let feed_slot = match self.feeds.get_mut(feed as usize) {
            Some(f) => {
                let spec = f.spec;
                *f.slots[2].get_or_insert_with(|| self.metrics[T2T].slot(format!("feed:{spec}")))
            }
            None => self.metrics[T2T].slot("feed:".to_owned()),
        };
        let mut dims = [feed_slot, self.conn_slot(ci, T2T), 0];
        let mut n = 2;
        if self.cfg.by_symbol {
            let metric = &mut self.metrics[T2T];
            // An order whose symbol is not known (a Replace of an order entered before the capture)
            // has a row of its own, so that the rows add up to the metric.
            // Beyond MAX_SYMBOL_ROWS symbols, the others share a row: each row is a histogram of up to
            // ~100 KB, and a day's capture may hold every listed symbol.
            let rows = self.symbol_slots.len();
            dims[2] = match s.symbol {
                Some(sym) => match self.symbol_slots.get(&sym) {
                    Some(&slot) => slot,
                    None if rows < MAX_SYMBOL_ROWS => {
                        *self.symbol_slots.entry(sym).or_insert_with(|| metric.slot(format!("symbol:{sym}")))
                    }
                    None => metric.slot(OTHER_SYMBOLS.to_owned()),
                },
                None => metric.slot(UNKNOWN_SYMBOL.to_owned()),
            };
            n = 3;
        }
        self.record(T2T, latency, &dims[..n]);
        if let Some(snd) = snd {
            // The order's wire-out time as the kernel saw it, per feed and connection like tick_to_trade.
            let feed_slot = match self.feeds.get(feed as usize) {
                Some(f) => self.metrics[T2S].slot(format!("feed:{}", f.spec)),
                None => self.metrics[T2S].slot("feed:".to_owned()),
            };
            let conn_slot = self.conn_slot(ci, T2S);
            self.record(T2S, snd.saturating_sub(tick_time), &[feed_slot, conn_slot]);
        }
        if !self.cfg.keep_pairs {
            return;
        }
        self.pairs.push(Pair {
            tick_session: session,
            tick_seq: seq,
            tick_time_ns: tick_time,
            order_id: match s.id {
                Some(OrderId::UserRefNum(n)) => n.to_string(),
                Some(OrderId::Token(tok)) => String::from_utf8_lossy(crate::proto::trim_alpha(&tok)).into_owned(),
                None => String::new(),
            },
            token: token.map(|t| String::from_utf8_lossy(t).into_owned()).unwrap_or_default(),
            order_time_ns: t,
            order_frame: m.first.index,
            order_last_frame: m.last.index,
            latency_ns: latency,
        });
    }

    /// Ends the analysis: flushes the order streams (pairs found there are queued) and closes the last
    /// interval. Call once, after the last frame; then drain, then [`Analyzer::report`].
    pub fn finish(&mut self) {
        let last = self.last_frame;
        let mut msgs = Vec::new();
        for ci in 0..self.conn_list.len() {
            let c = &mut self.conn_list[ci];
            c.to_exchange.finish(last, &mut |m| msgs.push(m));
            c.from_exchange.finish(last, &mut |m| msgs.push(m));
            for m in msgs.drain(..) {
                self.order_msg(ci, m);
            }
        }
        if !self.ab_elsewhere.is_empty() {
            self.record_ab_elsewhere();
        }
        // Responses whose request never came.
        while !self.early_responses.is_empty() {
            self.early_response_unmatched();
        }
        // Orders still waiting for their trigger: the capture has ended, it did not come.
        if !self.last_by_symbol.late.is_empty() {
            self.late_ticks();
        }
        while let Some((key, mut p)) = self.reorder.pop_first() {
            self.unindex_reorder(key, &mut p);
            self.correlate(p.conn, &p.msg, p.snd, Some(p.retry(i64::MAX)));
        }
        while let Some((_, p)) = self.parked.pop_first() {
            self.correlate(p.conn, &p.msg, p.snd, Some(p.retry(i64::MAX)));
        }
        let last = self.last_time;
        self.pending_n_live = 0;
        for w in std::mem::take(&mut self.pending).values() {
            for at in std::iter::once(&w.oldest.0).chain(w.later.values()) {
                if self.ack_deadline(*at) > last {
                    self.counters.awaiting_at_end += 1;
                } else {
                    self.counters.unacked += 1;
                }
            }
        }
        if let Some(start) = self.interval_start.take() {
            self.close_interval(start, self.last_time.max(start));
        }
    }

    /// Records the A/B delays a packet found for other feeds ([`Copies::earlier_copy`]).
    #[cold]
    fn record_ab_elsewhere(&mut self) {
        let Analyzer { feeds, metrics, ab_elsewhere, .. } = self;
        for (feed, delay) in ab_elsewhere.drain(..) {
            if let Some(f) = feeds.get_mut(usize::from(feed)) {
                record_feed_sample(&f.spec, &mut f.slots, &mut f.open, metrics, 1, delay);
            }
        }
    }

    /// The time of the first frame analysed, if any.
    pub fn first_time(&self) -> Option<i64> {
        self.first_time
    }

    /// The report of everything seen so far.
    pub fn report(&self) -> report::Report {
        report::build(self)
    }

    /// The clocks metric `m`'s ends were timed by: those of the feeds and sessions with samples in it
    /// (of every feed for an A/B delay's first copy), "exchange" for ITCH timestamps, and "snd_sw" and
    /// "snd_hw" for `--tx-events` SND times (the kernel's, the NIC's). For one of its dimensions
    /// (`dim`: a feed's or a session's), that feed or session's own at its end.
    fn metric_clocks(&self, m: usize, dim: Dim) -> report::Clocks {
        // A feed has a dimension in the metric (`k`: its slot in tick_to_trade, A/B delays or
        // exchange_to_capture; tick_to_snd's are looked up by name), or any feed (`None`).
        let in_metric = |f: &FeedState, k: Option<usize>| match (m, k) {
            (T2S, _) => self.metrics[T2S].by_name.contains_key(&format!("feed:{}", f.spec)),
            (_, k) => k.is_none_or(|k| f.slots[k].is_some()),
        };
        let feeds = |k: Option<usize>| match dim {
            Dim::Feed(i) if k.is_some() => self.feeds[i].clocks,
            _ => self.feeds.iter().filter(|f| in_metric(f, k)).fold(0, |a, f| a | f.clocks),
        };
        let sessions = |m: usize, dir: usize| match dim {
            Dim::Session(i) => self.sessions[i].clocks[dir],
            _ => self.sessions.iter().filter(|s| s.slots[m].is_some()).fold(0, |a, s| a | s.clocks[dir]),
        };
        let names = TsSource::names_in;
        let snd: Vec<&'static str> =
            ["snd_sw", "snd_hw"].into_iter().zip(self.snd_kinds).filter(|k| k.1).map(|k| k.0).collect();
        let (from, to) = match m {
            T2T => (names(feeds(Some(2))), names(sessions(T2T, 0))),
            O2A => (names(sessions(O2A, 0)), names(sessions(O2A, 1))),
            AB => (names(feeds(None)), names(feeds(Some(1)))),
            E2C => (vec!["exchange"], names(feeds(Some(0)))),
            T2S => (names(feeds(Some(2))), snd),
            _ => (snd, names(sessions(S2W, 0))),
        };
        report::Clocks { from, to }
    }

    /// What each dimension name of the metrics stands for.
    fn dims_by_name(&self) -> FxHashMap<String, Dim> {
        let feeds = self.feeds.iter().enumerate().map(|(i, f)| (format!("feed:{}", f.spec), Dim::Feed(i)));
        let sessions = self.sessions.iter().enumerate().map(|(i, s)| (format!("session:{}", s.spec), Dim::Session(i)));
        feeds.chain(sessions).collect()
    }
}

/// A metric's dimension, for its clocks ([`Analyzer::metric_clocks`]): a feed's, a session's, or
/// another (a symbol's) or the metric's own, which take the metric's.
#[derive(Debug, Clone, Copy)]
enum Dim {
    Feed(usize),
    Session(usize),
    Whole,
}

impl FeedState {
    /// Widens the range of sequences seen by a packet's header (`count` as on the wire).
    #[inline(always)]
    fn add_seq_range(&mut self, sequence: u64, count: u16) {
        if count > 0 && count != crate::proto::moldudp64::END_OF_SESSION {
            // Saturating: a hostile sequence near the top of the range must not wrap the range.
            let last = sequence.saturating_add(u64::from(count) - 1);
            self.seq_span = (self.seq_span.0.min(sequence), self.seq_span.1.max(last));
        }
    }

    /// Lowest and highest message sequence seen, if any.
    fn seq_range(&self) -> Option<(u64, u64)> {
        (self.seq_span.0 <= self.seq_span.1).then_some(self.seq_span)
    }

    /// Counts a packet captured short: `messages` its header announces not captured whole, `bytes` of
    /// its payload.
    #[cold]
    #[inline(never)]
    fn cut(&mut self, messages: u64, bytes: usize) {
        self.packets_captured_short += 1;
        self.messages_not_captured += messages;
        self.bytes_not_captured += bytes as u64;
    }

    /// Counts a malformed packet, keeping the first one's frame and reason for the report.
    fn bad_packet(&mut self, frame: u64, why: &dyn std::fmt::Display) {
        self.bad_packets += 1;
        if self.first_bad_frame.is_none() {
            self.first_bad_frame = Some(frame);
            self.first_bad_reason = Some(why.to_string());
        }
    }

    fn new(spec: FeedSpec, detected: bool) -> Self {
        FeedState {
            spec,
            detected,
            slots: [None; 3],
            open: [None, None],
            decoder: MoldItchDecoder::new(),
            frames: 0,
            bad_packets: 0,
            first_bad_frame: None,
            first_bad_reason: None,
            seq_span: (u64::MAX, 0),
            lane: None,
            clocks: 0,
            sessions: 0,
            sessions_beyond: 0,
            first_session_beyond: None,
            packets_captured_short: 0,
            headers_not_captured: 0,
            messages_not_captured: 0,
            bytes_not_captured: 0,
        }
    }
}

fn fmt_ip(a: IpAddr) -> String {
    match a {
        IpAddr::V6(v6) => format!("[{v6}]"),
        v4 => v4.to_string(),
    }
}

/// The start of the interval of length `len` holding `t`: a multiple of `len`, or the start of the
/// range for the part of the first interval that lies beyond it.
fn interval_of(t: i64, len: i64) -> i64 {
    t.saturating_sub(t.rem_euclid(len))
}

/// What a token rule reads: OUCH 5.0 ClOrdID, else the OUCH 4.x order token (as text, lossy UTF-8).
fn token_bytes(s: &OrderSummary) -> Option<&[u8]> {
    match (&s.cl_ord_id, &s.id) {
        (Some(c), _) | (None, Some(OrderId::Token(c))) => Some(crate::proto::trim_alpha(c)),
        _ => None,
    }
}

/// Whether the OUCH message in the Unsequenced Data packet at the start of `payload` goes to the
/// exchange (`Some(true)`) or from it: a well-formed message of a known type in one direction only,
/// in OUCH 5.0 or 4.2. `None` when it does not tell (cut short, or well-formed both ways).
fn unsequenced_direction(payload: &[u8]) -> Option<bool> {
    let msg = unsequenced_message(payload)?;
    let known = |dir| {
        matches!(crate::proto::ouch5::summarize(dir, msg), Ok(Some(_)))
            || matches!(crate::proto::ouch42::summarize(dir, msg), Ok(Some(_)))
    };
    match (known(OrderDir::Inbound), known(OrderDir::Outbound)) {
        (true, false) => Some(true),
        (false, true) => Some(false),
        _ => None,
    }
}

/// OUCH 4.2 or 5.0, from the first SoupBinTCP packet of a session when it is an Unsequenced Data
/// packet holding an Enter Order ([`orders::ouch_version`]); `None` otherwise.
fn detect_ouch_version(payload: &[u8]) -> Option<OrderProto> {
    orders::ouch_version(unsequenced_message(payload)?)
}

/// The message of the SoupBinTCP packet at the start of `payload` when it is a whole Unsequenced
/// Data packet.
fn unsequenced_message(payload: &[u8]) -> Option<&[u8]> {
    let len = usize::from(u16::from_be_bytes([*payload.first()?, *payload.get(1)?]));
    (payload.get(2) == Some(&b'U')).then(|| payload.get(3..2 + len)).flatten()
}

#[cfg(test)]
mod tests;
