//! The bounds on what the analysis holds at once (detected flows, connections, bytes held by reassembly
//! and framing, waiting orders and requests, ticks kept): what each costs, and what happens beyond it.

use super::orders;

/// How often, in capture time, the ticks kept for orders still to come are pruned of those no such
/// order can match, whatever their symbol.
pub(super) const PRUNE_EVERY_NS: i64 = 100_000_000;

/// How far back an order byte held by reassembly keeps ticks: the gap timeout, after which a missing
/// range is given up (a packet begun whose stream then went quiet is not waited for longer; its order,
/// should it complete, may find its trigger gone).
pub(super) const HOLD_MAX_NS: i64 = orders::GAP_TIMEOUT_NS;

/// Feeds detected at most: each costs its histograms and state (about 150 KB: 1,030 feeds of garbage took
/// 155 MB at their peak, the report's), and noise that looks like MoldUDP64 on thousands of ports must
/// not take gigabytes. Give more with `--md`.
pub const MAX_DETECTED_FEEDS: usize = 1_024;

/// Order sessions detected at most: every TCP frame is looked up among them, and traffic that looks
/// like SoupBinTCP on thousands of ports must not make the analysis quadratic (60,000 took 15 s for
/// as many frames). Give more with `--orders`.
pub const MAX_DETECTED_SESSIONS: usize = 256;

/// Symbols whose ticks the symbol rule keeps, at most: a day's feed names at most 65,536 (a symbol
/// per stock locate), and garbage naming ever-new ones must not take gigabytes (each costs about
/// 200 bytes). The ticks of further symbols are counted, not kept: their orders are unmatched.
pub const MAX_SYMBOLS: usize = 1 << 16;

/// Order connections analysed at most (each costs about 2.5 KB, and while live its framing buffers up to twice
/// [`orders::FRAMING_SLACK`] more, not counted in [`MAX_HELD_FRAMING`]: a capture of ever-new connections, a scan or
/// garbage, must not take gigabytes; a client reconnecting every minute for a week stays within it, its ended
/// connections' framing given back): the frames of further ones are counted, not analysed.
pub const MAX_CONNECTIONS: usize = 16_384;

/// What the out-of-order TCP bytes held by all order streams together may cost, at most
/// ([`crate::reasm::Reassembler::held`]: their bytes and [`crate::reasm::PIECE_COST`] per piece).
/// Each direction holds up to [`crate::reasm::DEFAULT_MAX_PENDING`] (1 MiB, and a piece per 64 bytes
/// of it), so [`MAX_CONNECTIONS`] could hold 32 GiB and more: 1,000 connections, each with a segment
/// missing and 1 MiB behind it, took 1.1 GB, 4,000 took 4.4 GB. This is 256 directions at their bound
/// at once, more than a real capture holds (a missing segment is waited for 1 s at most, and most
/// connections carry far less in that time). Beyond, the stream holding the oldest bytes gives up the
/// ranges it waits for, first to last, as its own bound would, until all hold no more than this
/// ([`Counters::tcp_gaps_released_for_room`](super::Counters::tcp_gaps_released_for_room)).
pub const MAX_HELD_TCP: usize = 256 << 20;

/// What the framing buffers of all order streams together may take, at most
/// ([`OrderStream::framing_held`](super::orders::OrderStream::framing_held): a SoupBinTCP packet begun, up to 64 KiB,
/// in room up to twice that, the resynchronisation window, and a piece of 32 bytes per segment in them; a direction
/// taking [`orders::FRAMING_SLACK`], 17 KiB, or less is not counted: the room its framer keeps for the packets split
/// across segments, which a busy session reuses, so that its segments neither allocate nor move it in the count;
/// [`MAX_CONNECTIONS`] both ways so keep 544 MiB at most beside this, all live: a direction that ended (its FIN
/// reached, a new connection on its ports) or took no byte for a gap timeout holding none gives it all back, found
/// within two timeouts; one quiet with a packet begun keeps it until more bytes or its end). Nothing else bounded
/// them: 4,000 connections,
/// each way a 64 KiB packet begun, took 581 MB (16,384 would take 2.4 GB). This is 512 to 1,024 directions with a
/// whole 64 KiB packet begun at once, or 3,854 just past the slack, far more than a real capture holds (OUCH packets
/// take tens of bytes, split over two segments at most). Beyond, the stream holding the oldest byte gives up what its
/// framing holds, as at a hole, until all take no more than this
/// ([`Counters::framing_released_for_room`](super::Counters::framing_released_for_room)).
pub const MAX_HELD_FRAMING: usize = 64 << 20;

/// MoldUDP64 sessions analysed per feed, at most (a feed has one a day): the packets of further ones are counted
/// ([`report::FeedReport::sessions_not_analysed_packets`](super::report::FeedReport::sessions_not_analysed_packets))
/// and noted.
pub const MAX_FEED_SESSIONS: u32 = 64;

/// Flows in no feed or session given that look like one, noted at most
/// ([`Analyzer::unclaimed`](super::Analyzer::unclaimed)).
pub(super) const UNCLAIMED_MAX: usize = 16;

/// The `--by symbol` row of orders whose symbol is not known (no symbol's row begins with a
/// parenthesis: its own `(` is written `\x28`).
pub(super) const UNKNOWN_SYMBOL: &str = "symbol:(unknown)";

/// The `--by symbol` row of the orders of a symbol blank on the wire (its 8 bytes spaces or NULs).
pub(super) const BLANK_SYMBOL: &str = "symbol:(blank)";

/// Symbols given a `--by symbol` row of their own, at most; orders of any further ones share
/// `symbol:(others)`.
pub const MAX_SYMBOL_ROWS: usize = 1_024;

/// The `--by symbol` row shared by the symbols beyond the first [`MAX_SYMBOL_ROWS`].
pub(super) const OTHER_SYMBOLS: &str = "symbol:(others)";

/// Orders waiting at once for the [`REORDER_NS`](super::REORDER_NS) allowance (`Analyzer::reorder`), at most, and
/// orders parked for a trigger not seen yet (`Analyzer::parked`), at most: each costs about 600
/// bytes, and those are released by capture time only, so a clock that stands still would hold every
/// order of the capture. More than any real capture holds (65,536 orders in 1 ms); beyond, the one
/// due first stops waiting ([`Counters::orders_released_for_room`](super::Counters::orders_released_for_room)).
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
/// ([`Counters::requests_released_for_room`](super::Counters::requests_released_for_room)).
pub const MAX_PENDING_REQUESTS: usize = 1 << 18;

/// Responses waiting for their request at once, at most (`Analyzer::early_responses`); beyond, the
/// oldest is unmatched ([`Counters::responses_released_for_room`](super::Counters::responses_released_for_room)).
pub const MAX_EARLY_RESPONSES: usize = 1 << 16;

/// Requests that went unacknowledged (their `--ack-timeout` ran out) remembered at once, at most, so
/// that a response that comes after is told apart from one that answers nothing
/// ([`Counters::late_responses`](super::Counters::late_responses)): each costs about 70 bytes (5 MB in
/// all); beyond, the oldest is forgotten, and a response to it counts as unmatched.
pub const MAX_TIMED_OUT_REMEMBERED: usize = 1 << 16;

/// Enters taken for retransmissions remembered at once, at most, by connection and order id, so that
/// a response of that id on that connection which finds no request is said to have answered one
/// ([`Counters::resent_answered`](super::Counters::resent_answered)): each costs 64 bytes, about 100
/// with its table's free room (6.4 MB in all, taken only as resends come); beyond, the oldest is
/// forgotten, and a response to it is only unmatched.
pub const MAX_RESENT_REMEMBERED: usize = 1 << 16;

/// Ticks one symbol's history keeps, at most (`SymHistory`): a busy symbol's ticks over the 1 s an
/// order held by reassembly keeps them, well beyond its millisecond of the allowance; each costs 40
/// bytes, and a tick recorded late moves up to half of them. Beyond, the oldest are forgotten
/// ([`Counters::symbol_ticks_forgotten`](super::Counters::symbol_ticks_forgotten)).
pub const MAX_SYMBOL_TICKS: usize = 1 << 14;

/// Ticks all symbols together keep, at most, give or take an eighth (`SymbolTicks`): 65,536 symbols of
/// [`MAX_SYMBOL_TICKS`] each would take 43 GB, and a feed at a million messages a second keeps a million over the 1 s
/// an order held by reassembly keeps them (84 MB at this bound). Beyond, the oldest of all go (each symbol keeps its
/// newest), counted in [`Counters::symbol_ticks_forgotten`](super::Counters::symbol_ticks_forgotten).
pub const MAX_TICKS_KEPT: usize = 1 << 21;

/// The bounds on what waits for capture time ([`Analyzer::limits`](super::Analyzer::limits)): the constants above,
/// which the tests lower.
#[derive(Debug, Clone, Copy)]
pub(super) struct Limits {
    pub(super) waiting: usize,
    pub(super) per_symbol: usize,
    pub(super) pending: usize,
    pub(super) early: usize,
    pub(super) held_tcp: usize,
    pub(super) held_framing: usize,
}

pub(super) const LIMITS: Limits = Limits {
    waiting: MAX_WAITING_ORDERS,
    per_symbol: MAX_WAITING_PER_SYMBOL,
    pending: MAX_PENDING_REQUESTS,
    early: MAX_EARLY_RESPONSES,
    held_tcp: MAX_HELD_TCP,
    held_framing: MAX_HELD_FRAMING,
};

/// Parked orders are retried every `--tick-retention / PARK_STEP_DIV`, for half the retention.
pub(super) const PARK_STEP_DIV: i64 = 32;
