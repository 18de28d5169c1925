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
mod capture_time;
mod correlate;
mod counters;
mod eastern;
mod fast;
mod limits;
mod market;
mod segments;
mod symbols;
mod unmatched;
mod waiting;
pub use fast::{PlainUdp, plain_udp, udp_shape};
pub mod flows;
pub mod orders;
pub mod report;
pub mod token;
pub mod tx;

pub use counters::Counters;
pub use limits::{
    MAX_CONNECTIONS, MAX_DETECTED_FEEDS, MAX_DETECTED_SESSIONS, MAX_EARLY_RESPONSES, MAX_FEED_SESSIONS,
    MAX_HELD_FRAMING, MAX_HELD_TCP, MAX_PENDING_REQUESTS, MAX_RESENT_REMEMBERED, MAX_SYMBOL_ROWS, MAX_SYMBOL_TICKS,
    MAX_SYMBOLS, MAX_TICKS_KEPT, MAX_TIMED_OUT_REMEMBERED, MAX_WAITING_ORDERS, MAX_WAITING_PER_SYMBOL,
};
pub use unmatched::{Unmatched, UnmatchedReason};

use crate::dissect::{Dissection, Transport};
use crate::frame::Frame;
use crate::fxhash::FxHashMap;
use crate::proto::itch::LocateMap;
use crate::proto::moldudp64::{SeqTracker, Session};
use crate::proto::{OrderDir, OrderId, Symbol};
use crate::stats::{Latency, Tally};
use crate::time::{ClockQuality, TsSource};
use arbiter::Arbiter;
use eastern::EasternClock;
use flows::{FlowSpec, OrderProto, OrderSpec, looks_like_mold, starts_soupbin};
use limits::{LIMITS, Limits, UNCLAIMED_MAX};
use market::FeedState;
use orders::{FrameRef, OrderMsg, OrderStream};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::IpAddr;
use symbols::SymbolTicks;
use waiting::{EarlyResponse, Parked, ReorderQueue, Waiter, Waiting};

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
                format!("`{w}` is not a duration above 0 with its unit ({DURATION_UNITS}; e.g. 500us, 2ms, 1.5s)")
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

/// The units [`parse_duration_ns`] takes, for messages.
pub const DURATION_UNITS: &str = "ns, us, ms, s, min, h";

/// Parses `123ns`, `5us` (or `5µs`), `2ms`, `1s`, `2min`, `1h` into ns, with a decimal fraction where
/// it comes to whole nanoseconds (`1.5ms`, `0.25s`; `1.5ns` is refused). A bare number is refused: `1`
/// meant as a second and read as a nanosecond gives a plausible, wrong report. So is `1m` (a minute, or
/// a millisecond mistyped?).
pub fn parse_duration_ns(s: &str) -> Option<i64> {
    const UNITS: [(&str, i64); 7] = [
        ("ns", 1),
        ("us", 1_000),
        ("µs", 1_000),
        ("ms", 1_000_000),
        ("min", 60_000_000_000),
        ("h", 3_600_000_000_000),
        ("s", 1_000_000_000),
    ];
    let (num, mult) = UNITS.iter().find_map(|(u, m)| s.strip_suffix(u).map(|n| (n.trim(), *m)))?;
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    // Digits only (no sign, no exponent), and at least one before or after the point.
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(frac) || whole.len() + frac.len() == 0 || (num.contains('.') && frac.is_empty()) {
        return None;
    }
    let whole: i64 = if whole.is_empty() { 0 } else { whole.parse().ok()? };
    // The fraction's ns: exact, or refused (trailing zeros are no precision).
    let frac = frac.trim_end_matches('0');
    // (In i128: `0.9999999h` is whole nanoseconds, its digits times the unit's ns beyond i64.)
    let scale = 10i128.checked_pow(u32::try_from(frac.len()).ok()?)?;
    let part = if frac.is_empty() { 0 } else { frac.parse::<i128>().ok()?.checked_mul(i128::from(mult))? };
    if part % scale != 0 {
        return None;
    }
    whole.checked_mul(mult)?.checked_add(i64::try_from(part / scale).ok()?)
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
    /// Queue every order that ends without a pair, with why, for [`Analyzer::drain_unmatched`] (off:
    /// only counted).
    pub keep_unmatched: bool,
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
            keep_unmatched: false,
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
    /// Order identifier (UserRefNum, or token), as text: a token without its right padding (spaces
    /// or NULs), or whole when it is padding only, its bytes escaped as `--unmatched` writes them.
    pub order_id: String,
    /// ClOrdID / token text, as `order_id`'s token.
    pub token: String,
    /// Capture time of the frame carrying the order's first byte.
    pub order_time_ns: i64,
    /// Index of that frame.
    pub order_frame: u64,
    /// Index of the frame carrying the order's last byte.
    pub order_last_frame: u64,
    /// `order_time_ns - tick_time_ns`.
    pub latency_ns: i64,
    /// Index of the frame that carried the trigger's earliest copy (kept with the tick by the token
    /// rule's match and by the symbol rule's histories, however long before the pair it came). `None`
    /// only under the token rule for a pair made past the 2^32nd frame read, where the tick index's
    /// low 32 bits of it cannot name it for sure.
    pub tick_frame: Option<u64>,
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

    /// Each dimension's histogram (with the open interval's `tallies`) handed to `f`, sorted by name.
    /// One at a time, borrowed where no tally adds to it: a copy of them all doubled the memory a
    /// report took at the end (1,030 feeds: 83 MB more).
    pub fn for_each_dim(&self, tallies: &[(usize, &Tally)], mut f: impl FnMut(&str, &Latency)) {
        let mut order: Vec<usize> = (0..self.slots.len()).collect();
        order.sort_unstable_by(|&a, &b| self.slots[a].0.cmp(&self.slots[b].0));
        // By slot, to find a slot's tallies without a pass over all of them (65,535 feeds may each have one).
        let mut open = tallies.to_vec();
        open.sort_by_key(|(slot, _)| *slot);
        for i in order {
            let (name, latency) = &self.slots[i];
            let from = open.partition_point(|(slot, _)| *slot < i);
            let to = open.partition_point(|(slot, _)| *slot <= i);
            if from == to {
                f(name, latency);
                continue;
            }
            let mut with = latency.clone();
            for (_, o) in &open[from..to] {
                with.add_tally(o);
            }
            f(name, &with);
        }
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

/// A frame timed this much before an earlier one is a step back of the capture's clock (smaller ones
/// are the reordering of multi-queue capture).
pub const STEP_BACK_NS: i64 = 1_000_000;

/// How long every order waits, in capture time past its first byte, for a trigger (or an earlier copy
/// of it) recorded after the order: the reordering a capture may have without a step back.
pub const REORDER_NS: i64 = STEP_BACK_NS;

/// The analysis state.
pub struct Analyzer {
    cfg: AnalyzeConfig,
    feeds: Vec<FeedState>,
    /// The feeds beyond the first [`market::NEAR_FEEDS`] by destination (`None`: any group), each
    /// key's first: tested one by one on every datagram, 1,000 declared feeds made the analysis 22
    /// times slower.
    far_feeds: flows::FarIndex,
    sessions: Vec<SessionState>,
    /// The order sessions beyond the first [`segments::NEAR_SESSIONS`] by exchange end (`None`: any
    /// host), each end's first, as `far_feeds`.
    far_sessions: flows::FarIndex,
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
    /// Each MoldUDP64 session's stock locates (by the arbiter's [`SessionRef::index`](arbiter::SessionRef::index)),
    /// learnt under the symbol rule from the first copies of the messages that name their stock, whichever feed brought
    /// them: a feed that missed a Stock Directory or an Add Order still has its Executes and Deletes named (the locates
    /// are the session's, not a feed's).
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
    /// entries go (a Replace of one counts as unmatched). And the ids each account entered, which
    /// tell a retransmitted Enter ([`Counters::orders_resent`]).
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
    /// When the symbol histories' kept ticks are next pruned ([`PRUNE_EVERY_NS`](limits::PRUNE_EVERY_NS)).
    next_prune: i64,
    /// Responses whose request was not read yet, by arrival (and so by when they stop waiting for
    /// it: each waits as long from the latest time).
    early_responses: BTreeMap<u64, EarlyResponse>,
    /// The responses counted in `early_responses` so far.
    early_n: u64,
    /// Requests that went unacknowledged, by connection and order id, how many of each
    /// ([`MAX_TIMED_OUT_REMEMBERED`] at most, the latest): a response that comes after them is late,
    /// not unmatched ([`Counters::late_responses`]).
    timed_out: bounded::BoundedMap<(usize, OrderId), u32>,
    /// Enters taken for retransmissions, by connection and order id ([`MAX_RESENT_REMEMBERED`] at
    /// most, the latest): a response of that id on that connection finding no request answered one
    /// ([`Counters::resent_answered`]).
    resent: bounded::BoundedMap<(usize, OrderId), ()>,
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
    /// A/B delays of the packet being taken that belong to other feeds (see [`Copies`](market::Copies)).
    ab_elsewhere: Vec<(u16, i64)>,
    /// SND times of recent writes, by connection (see [`tx`]).
    tx_writes: FxHashMap<ConnKey, tx::ConnWrites>,
    interval_start: Option<i64>,
    closed: Vec<Interval>,
    pairs: Vec<Pair>,
    /// Orders ended without a pair, when [`AnalyzeConfig::keep_unmatched`] asks.
    unmatched: Vec<Unmatched>,
    /// Something waits in `pairs`, `unmatched` or `closed` ([`Analyzer::has_output`]: one flag read per
    /// frame, set where they are pushed).
    output: bool,
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
    /// The earliest capture time at which an order stream has something due
    /// ([`OrderStream::gap_deadline`]; `i64::MAX`: none has): a range it waits for to give up as a
    /// hole, or a look whether it ended or went quiet (a quiet direction gives its framing buffers
    /// back, the framer's room included). [`Analyzer::advance_time`] does it then, whatever flow the
    /// frame is of ([`Analyzer::expire_gaps`]), a hole before the ticks kept for what waits behind it go.
    gap_due: i64,
    /// By connection, the earliest time of an order byte its inbound stream holds
    /// ([`OrderStream::oldest_held`]) and the earliest due time of its streams
    /// ([`OrderStream::gap_deadline`]: a gap to give up, or the look at a quiet stream), ordered:
    /// their minimums are [`Analyzer::hold_from`] and [`Analyzer::gap_due`], kept per segment without
    /// a walk of every connection (tens of thousands in some captures).
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
    ///
    /// # Panics
    /// With more than [`arbiter::MAX_FEEDS`] feeds given (the tick index's feed is 16 bits; the
    /// command refuses them with a message first).
    pub fn new(cfg: AnalyzeConfig) -> Self {
        let given = cfg.flows.iter().filter(|f| matches!(f, FlowSpec::Feed(_))).count();
        assert!(given <= arbiter::MAX_FEEDS, "{given} feeds: at most {} are analysed at once", arbiter::MAX_FEEDS);
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
            far_feeds: market::far_feeds(&feeds),
            feeds,
            far_sessions: segments::far_sessions(&sessions),
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
            unmatched: Vec::new(),
            output: false,
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
            timed_out: bounded::BoundedMap::new(MAX_TIMED_OUT_REMEMBERED),
            resent: bounded::BoundedMap::new(MAX_RESENT_REMEMBERED),
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

    /// Whether pairs, unmatched orders or closed intervals wait to be drained (a cheap test for the
    /// per-frame loop).
    #[inline]
    pub fn has_output(&self) -> bool {
        self.output
    }

    /// Takes the pairs matched since the last call.
    pub fn drain_pairs(&mut self) -> std::vec::Drain<'_, Pair> {
        self.output = !self.closed.is_empty() || !self.unmatched.is_empty();
        self.pairs.drain(..)
    }

    /// Takes the orders that ended without a pair since the last call (queued only with
    /// [`AnalyzeConfig::keep_unmatched`]).
    pub fn drain_unmatched(&mut self) -> std::vec::Drain<'_, Unmatched> {
        self.output = !self.pairs.is_empty() || !self.closed.is_empty();
        self.unmatched.drain(..)
    }

    /// Takes the intervals closed since the last call.
    pub fn drain_intervals(&mut self) -> std::vec::Drain<'_, Interval> {
        self.output = !self.pairs.is_empty() || !self.unmatched.is_empty();
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
            self.known_feed(dst, dport).map(|i| (false, i))
        } else {
            self.session_of_end(dst, dport).map(|i| (true, i))
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

    fn record(&mut self, metric: usize, ns: i64, slots: &[usize]) {
        for &s in slots {
            self.metrics[metric].record_slot(ns, s);
        }
        self.interval[metric].record(ns);
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

fn fmt_ip(a: IpAddr) -> String {
    match a {
        IpAddr::V6(v6) => format!("[{v6}]"),
        v4 => v4.to_string(),
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
