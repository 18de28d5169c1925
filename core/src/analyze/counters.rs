//! The counters that qualify the report's figures ([`Counters`]).

use std::collections::BTreeMap;

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
    /// more than [`tx::TX_MAX_WRITES`](super::tx::TX_MAX_WRITES) times in a second): orders in them count without SND.
    pub tx_writes_dropped: u64,
    /// Packets the input files record as lost while they were captured (pcapng interface statistics):
    /// samples the figures may miss.
    pub capture_drops: u64,
    /// Frames timed more than [`STEP_BACK_NS`](super::STEP_BACK_NS) before the frame before them: the capture's clock
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
    /// Frames that look like MoldUDP64 on flows not analysed because [`MAX_DETECTED_FEEDS`](super::MAX_DETECTED_FEEDS)
    /// feeds were detected already.
    pub feeds_not_detected_frames: u64,
    /// Frames of order sessions' connections beyond the first [`MAX_CONNECTIONS`](super::MAX_CONNECTIONS), not
    /// analysed.
    pub connections_not_analysed_frames: u64,
    /// Symbol rule: ticks of symbols beyond the first [`MAX_SYMBOLS`](super::MAX_SYMBOLS), not kept.
    pub symbols_not_tracked_ticks: u64,
    /// Frames that look like SoupBinTCP on flows not analysed because
    /// [`MAX_DETECTED_SESSIONS`](super::MAX_DETECTED_SESSIONS) sessions were detected already.
    pub sessions_not_detected_frames: u64,
    /// Orders that stopped waiting before their time because as many as may wait did (a clock that stands still, or
    /// ticks 1 ns apart, packs more in than any real capture): those waiting the [`REORDER_NS`](super::REORDER_NS)
    /// allowance ([`MAX_WAITING_ORDERS`](super::MAX_WAITING_ORDERS),
    /// [`MAX_WAITING_PER_SYMBOL`](super::MAX_WAITING_PER_SYMBOL) of one symbol) are matched with what came so far,
    /// those parked for a trigger not seen yet (token rule, [`MAX_WAITING_ORDERS`](super::MAX_WAITING_ORDERS)) are
    /// looked for one last time and otherwise unmatched. Each is among `matched`, `unmatched_orders` or `ambiguous`
    /// too.
    pub orders_released_for_room: u64,
    /// Requests no longer waited for a response because [`MAX_PENDING_REQUESTS`](super::MAX_PENDING_REQUESTS) did:
    /// neither acknowledged nor unacknowledged (a response to one is an unmatched response).
    pub requests_released_for_room: u64,
    /// Responses no longer waited for their request because [`MAX_EARLY_RESPONSES`](super::MAX_EARLY_RESPONSES) did:
    /// counted in `unmatched_responses` (or `unsolicited_cancels`) too.
    pub responses_released_for_room: u64,
    /// The first frame (0-based over all inputs) at which an order, request or response above was
    /// released for room.
    pub first_released_for_room_frame: Option<u64>,
    /// Ranges missing from order streams no longer waited for because the out-of-order bytes held behind missing
    /// ranges, all connections together, cost more than [`MAX_HELD_TCP`](super::MAX_HELD_TCP): each a hole given up
    /// before its timeout (among its connection's `holes` too), the stream holding the oldest bytes first.
    pub tcp_gaps_released_for_room: u64,
    /// Bytes in those ranges (among their connections' `hole_bytes` too).
    pub tcp_gap_bytes_released_for_room: u64,
    /// The first frame (0-based over all inputs) at which a range was so given up.
    pub first_tcp_released_for_room_frame: Option<u64>,
    /// Times an order stream gave up what its framing held (a SoupBinTCP packet begun, or the bytes searched for a
    /// packet boundary while resynchronising) because the framing buffers of all connections together took more than
    /// [`MAX_HELD_FRAMING`](super::MAX_HELD_FRAMING), the stream holding the oldest byte first: as at a hole, what was
    /// held is lost and the stream resynchronises after.
    pub framing_released_for_room: u64,
    /// The bytes so lost (among their streams' `resync_skipped_bytes` too).
    pub framing_bytes_released_for_room: u64,
    /// The first frame (0-based over all inputs) at which a stream's framing was so given up.
    pub first_framing_released_for_room_frame: Option<u64>,
    /// Symbol rule: ticks forgotten because [`MAX_SYMBOL_TICKS`](super::MAX_SYMBOL_TICKS) of their symbol were kept
    /// (ticks at ever-new times faster than the allowance lets them go): an order whose match may have been one finds
    /// none, and is unmatched.
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
    /// Symbol rule: matched orders for which the rule had more than one candidate: another tick of the
    /// order's symbol, stamped before the tick matched (not at its time: one packet's messages are
    /// `ambiguous`), lay within the window before the order. The rule takes the newest; where the
    /// strategy reacted to an earlier one, the latency is longer than the one recorded. In the JSON
    /// only when not 0, as are the counters below.
    #[serde(skip_serializing_if = "is_zero")]
    pub symbol_matches_with_earlier_ticks: u64,
    /// Those of them whose earlier tick came no longer before the tick matched than the order came
    /// after it (`matched - earlier <= order - matched`): the latency from that tick would be at most
    /// twice the one recorded, a reaction time as plausible as the one recorded.
    #[serde(skip_serializing_if = "is_zero")]
    pub symbol_matches_with_earlier_ticks_within_latency: u64,
    /// Symbol rule: orders unmatched (among `unmatched_orders`) whose symbol's newest tick before
    /// them lay further back than the window: if a tick triggered them, their latency exceeds it.
    #[serde(skip_serializing_if = "is_zero")]
    pub unmatched_beyond_window: u64,
    /// Token rule: orders unmatched (among `unmatched_orders`) whose trigger a feed brought but the
    /// tick index no longer offered: its first copy more than `--tick-retention` before the order,
    /// or let go from the index as older than the retention before a later packet (not for room,
    /// nor at a restart of the index). The slowest orders, by construction.
    #[serde(skip_serializing_if = "is_zero")]
    pub unmatched_beyond_retention: u64,
    /// Orders unmatched (among `unmatched_orders`, and not beyond the window or the retention) that
    /// had stopped waiting before their time for room (among `orders_released_for_room`): a trigger,
    /// or a tick recorded late, that came after may have matched them.
    #[serde(skip_serializing_if = "is_zero")]
    pub unmatched_released_for_room: u64,
    /// Symbol rule: orders unmatched (among `unmatched_orders`) whose symbol is not known: a Replace
    /// of an order not seen (entered before the capture) or no longer remembered.
    #[serde(skip_serializing_if = "is_zero")]
    pub unmatched_without_symbol: u64,
    /// Responses that came after their request had gone unacknowledged (`--ack-timeout` ran out; the
    /// request is among `unacked`): a response, with no request of its order id awaiting one, of an
    /// order id with a request timed out among the last
    /// [`MAX_TIMED_OUT_REMEMBERED`](super::limits::MAX_TIMED_OUT_REMEMBERED) (the oldest first). Not in
    /// `unmatched_responses` nor `unsolicited_cancels`; `order_to_ack` has no sample of them.
    #[serde(skip_serializing_if = "is_zero")]
    pub late_responses: u64,
    /// Enter Orders that retransmit one of their account's that trading day (an OUCH 5.0 UserRefNum
    /// not above the last entered, an OUCH 4.x token entered before): the exchange ignores them
    /// and answers the first, so they are no orders (not in `orders`, no sample, pair or
    /// `--unmatched` row) and await no response (order-to-ack runs from the first).
    #[serde(skip_serializing_if = "is_zero")]
    pub orders_resent: u64,
    /// Responses (among `unmatched_responses`) of an order id an Enter taken for a retransmission
    /// (`orders_resent`) sent on their connection, that found no request: replayed after a reconnect,
    /// or the exchange acted on that Enter as a new order (one that lets UserRefNums start again, as
    /// a simulator may; a capture clock off US Eastern days), which then is in no count. Of the
    /// last [`MAX_RESENT_REMEMBERED`](super::limits::MAX_RESENT_REMEMBERED) such Enters.
    #[serde(skip_serializing_if = "is_zero")]
    pub resent_answered: u64,
}

/// For `skip_serializing_if`: a counter added to the JSON after its schema settled, present only when
/// it counts something (a capture without it keeps its JSON byte for byte).
pub(crate) fn is_zero(n: &u64) -> bool {
    *n == 0
}
