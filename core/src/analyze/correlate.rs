//! Orders and responses: each request paired with its response, and each order with the tick that
//! triggered it under the rule in force (token or symbol).

use super::counters::Counters;
use super::limits::{MAX_SYMBOL_ROWS, OTHER_SYMBOLS, PARK_STEP_DIV, UNKNOWN_SYMBOL};
use super::market::FeedState;
use super::orders::OrderMsg;
use super::symbols::SymTick;
use super::unmatched::{UnmatchedReason, quoted, symbol_dim};
use super::waiting::{EarlyResponse, Found, Parked, Retry, Waiter, Waiting};
use super::{Analyzer, MatchRule, O2A, Owner, Pair, REORDER_NS, S2W, T2S, T2T};
use crate::proto::{OrderDir, OrderId, OrderSummary};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, VecDeque};

/// What a token rule reads: OUCH 5.0 ClOrdID, else the OUCH 4.x order token, without its right
/// padding.
pub(super) fn token_bytes(s: &OrderSummary) -> Option<&[u8]> {
    token_wire(s).map(crate::proto::trim_alpha)
}

/// [`token_bytes`] as the wire holds it, padding included.
pub(super) fn token_wire(s: &OrderSummary) -> Option<&[u8]> {
    match (&s.cl_ord_id, &s.id) {
        (Some(c), _) | (None, Some(OrderId::Token(c))) => Some(c),
        _ => None,
    }
}

/// Whose orders connection `ci`, `c`, acts on while its login is `login`.
#[inline]
fn owner_of(c: &super::Conn, ci: usize, login: Option<[u8; 6]>) -> Owner {
    match login {
        Some(user) => Owner::Login(c.session, c.key.0, c.key.2, user),
        None => Owner::Conn(ci),
    }
}

impl Analyzer {
    /// Order `m` waits [`REORDER_NS`] past its first byte in [`Analyzer::reorder`], with its match so far (`best` under
    /// the symbol rule, `found` under the token rule). At most
    /// [`MAX_WAITING_ORDERS`](super::limits::MAX_WAITING_ORDERS) wait,
    /// [`MAX_WAITING_PER_SYMBOL`](super::limits::MAX_WAITING_PER_SYMBOL) of one symbol: beyond, the one due first is
    /// matched now.
    fn wait_reorder(
        &mut self,
        ci: usize,
        m: &OrderMsg,
        snd: Option<i64>,
        (best, prev): (Option<SymTick>, i64),
        found: Option<Found>,
    ) {
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
        let p = Parked { give_up: until, conn: ci, msg: *m, snd, best, prev, late_only: false, found };
        self.reorder_n += 1;
        let key = (until, self.reorder_n);
        self.reorder.insert(key, p);
        if let Some(s) = symbol {
            let waiters = self.reorder_by_symbol.entry(s).or_default();
            let at = waiters.partition_point(|w| w.key < key);
            waiters.insert(at, Waiter { key, t: m.first.time_ns, best, prev });
        }
        self.wake_at = self.wake_at.min(until);
        self.watch_parked();
    }

    /// Order `key` of [`Analyzer::reorder`] left it: out of the index by symbol, with its match so far.
    #[inline]
    pub(super) fn unindex_reorder(&mut self, key: (i64, u64), p: &mut Parked) {
        let Some(s) = p.msg.summary.symbol.filter(|_| matches!(self.cfg.matching, MatchRule::Symbol { .. })) else {
            return;
        };
        if let Some(waiters) = self.reorder_by_symbol.get_mut(&s) {
            let at = waiters.partition_point(|w| w.key < key);
            // Only the order's own entry (none other, should the index ever be out of step).
            if waiters.get(at).is_some_and(|w| w.key == key)
                && let Some(w) = waiters.remove(at)
            {
                (p.best, p.prev) = (w.best, w.prev);
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
        self.correlate(p.conn, &p.msg, p.snd, Some(p.retry_for_room(self.last_time)));
    }

    /// Counts an order, request or response released for room, and the first frame that did.
    #[inline]
    fn released_for_room(&mut self, counter: fn(&mut Counters) -> &mut u64) {
        *counter(&mut self.counters) += 1;
        self.counters.first_released_for_room_frame.get_or_insert(self.last_frame);
    }

    /// The first response of order `id` on connection `ci` left [`Analyzer::early_responses`].
    #[inline]
    fn early_gone(&mut self, ci: usize, id: OrderId) {
        if let Some(q) = self.early_ids.get_mut(&(ci, id)) {
            q.pop_front();
            if q.is_empty() {
                self.early_ids.remove(&(ci, id));
            }
        }
    }

    /// Request `id` on connection `ci` went unacknowledged: remembered, so that a response that
    /// comes after it counts as late.
    #[cold]
    pub(super) fn timed_out(&mut self, ci: usize, id: OrderId) {
        match self.timed_out.get_mut(&(ci, id)) {
            Some(n) => *n += 1,
            None => self.timed_out.insert((ci, id), 1),
        }
    }

    /// The oldest response waiting for its request ([`EarlyResponse`]) stops waiting: late, when a
    /// request of its order id went unacknowledged (it takes the oldest), else unmatched.
    #[inline]
    pub(super) fn early_response_unmatched(&mut self) {
        // The oldest of all is the first of its id's.
        if let Some((_, e)) = self.early_responses.pop_first() {
            self.early_gone(e.conn, e.id);
            if let Some(n) = self.timed_out.get_mut(&(e.conn, e.id)) {
                *n -= 1;
                if *n == 0 {
                    self.timed_out.remove(&(e.conn, e.id));
                }
                self.counters.late_responses += 1;
                return;
            }
            match e.cancel {
                true => self.counters.unsolicited_cancels += 1,
                false => {
                    self.counters.unmatched_responses += 1;
                    if self.resent.remove(&(e.conn, e.id)).is_some() {
                        self.counters.resent_answered += 1;
                    }
                }
            }
        }
    }

    /// Tells the symbol histories the latest first byte of an order parked under the symbol rule
    /// (all wait [`REORDER_NS`] past it: the last to be retried).
    #[inline]
    pub(super) fn watch_parked(&mut self) {
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
    pub(super) fn late_ticks(&mut self) {
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
                let best = match p.best {
                    Some(b) if forgotten && (b.1, b.2) == (k.1, k.2) => ticks.at_or_before(symbol, t),
                    Some(b) if forgotten && b.0 > k.0 => Some(b),
                    _ if forgotten => None,
                    // The match given an earlier time: another tick kept may now be newer.
                    Some(b) if (b.1, b.2) == (k.1, k.2) => {
                        let retimed = (k.0, b.1, b.2, b.3, k.4, k.5);
                        match ticks.at_or_before(symbol, t) {
                            Some(o) if o.0 > retimed.0 => Some(o),
                            _ => Some(retimed),
                        }
                    }
                    // Several at one time: the newest message names the tick, as in the history.
                    Some(mut b) if b.0 == k.0 => {
                        super::symbols::join(&mut b, k);
                        Some(b)
                    }
                    Some(b) if b.0 > k.0 => Some(b),
                    _ => Some(k),
                };
                // The newest tick known before the match: an earlier one offered now, or, the match
                // moved, the history's before it (ticks it let go included), the old match and what
                // was known before that, whichever is newest and before the new match.
                p.prev = match (p.best, best) {
                    (_, None) => i64::MIN,
                    (Some(b), Some(n)) if b.0 == n.0 => match k.0 < n.0 {
                        true => p.prev.max(k.0),
                        false => p.prev,
                    },
                    (old, Some(n)) => [old.map_or(i64::MIN, |o| o.0), p.prev, k.0]
                        .into_iter()
                        .filter(|&c| c < n.0)
                        .fold(ticks.before(symbol, n.0), i64::max),
                };
                p.best = best;
            }
        }
    }

    /// The dimension slot in `metric` of connection `ci`'s session.
    #[inline]
    fn conn_slot(&mut self, ci: usize, metric: usize) -> usize {
        let s = &mut self.sessions[self.conn_list[ci].session];
        *s.slots[metric].get_or_insert_with(|| self.metrics[metric].slot(format!("session:{}", s.spec)))
    }

    /// The SND time of the write holding order `m`'s last byte, on connection `ci`, if TX events say.
    #[inline]
    pub(super) fn snd_of(&self, ci: usize, m: &OrderMsg) -> Option<i64> {
        if self.tx_writes.is_empty() {
            return None;
        }
        let c = &self.conn_list[ci];
        let writes = self.tx_writes.get(&c.key)?;
        writes.snd_of(c.to_exchange.seq_at(m.end.checked_sub(1)?)?)
    }

    pub(super) fn order_msg(&mut self, ci: usize, mut m: OrderMsg) {
        // A retransmitted Enter (its id entered before, `Accounts::enter_resent`) the exchange
        // ignores: it answers the first, so order-to-ack runs from that one, and this is no order
        // (no sample, pair or row) and awaits no response. Counted apart.
        if m.summary.msg_type == b'O' && m.summary.dir == OrderDir::Inbound && self.enter_resent(ci, &m) {
            self.counters.orders_resent += 1;
            // (A response of its id here that finds no request may say the exchange acted on it.)
            if let Some(id) = m.summary.id {
                self.resent.insert((ci, id), ());
            }
            return;
        }
        let owner = self.owner(ci);
        // (`--unmatched` names a Replace's symbol too.)
        if matches!(self.cfg.matching, MatchRule::Symbol { .. }) || self.cfg.by_symbol || self.cfg.keep_unmatched {
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
                    self.unmatched_row(ci, &m, UnmatchedReason::NotCorrelated, None);
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

    /// Whether Enter `m` on connection `ci` retransmits one its account entered
    /// ([`Accounts::enter_resent`](super::accounts::Accounts::enter_resent)).
    #[inline]
    fn enter_resent(&mut self, ci: usize, m: &OrderMsg) -> bool {
        let Some(id) = m.summary.id else { return false };
        let c = &self.conn_list[ci];
        let login = c.to_exchange.login_user();
        self.accounts.enter_resent(ci, login, || owner_of(c, ci, login), id, m.first.time_ns)
    }

    /// Whose orders connection `ci` acts on ([`Owner`]).
    #[inline]
    pub(super) fn owner(&self, ci: usize) -> Owner {
        let c = &self.conn_list[ci];
        owner_of(c, ci, c.to_exchange.login_user())
    }

    /// More than [`MAX_PENDING_REQUESTS`](super::limits::MAX_PENDING_REQUESTS) await a response: the oldest by time of
    /// those in the timeout queue is no longer waited for.
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
    #[inline]
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
    #[inline]
    pub(super) fn take_request(&mut self, ci: usize, id: OrderId, n: u64) -> Option<i64> {
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
    #[inline]
    fn may_still_come(&self, seq: u64) -> bool {
        self.arbiter.ahead_of_all(seq)
            || self.arbiter.missing_in(seq).any(|session| {
                (0..self.feeds.len())
                    .any(|fi| self.seq.next_expected(fi as u16, session).is_some_and(|next| next <= seq))
            })
    }

    /// An order whose token gives sequence `seq` was found unmatched (token rule): its token (`wire`,
    /// as the wire holds it) remembered when the sequence lies outside every feed's range seen, unless
    /// one remembered still does (ranges grow).
    #[cold]
    fn unmatched_token(&mut self, wire: &[u8], seq: u64) {
        if self.first_token_outside.as_ref().is_some_and(|&(_, seq)| self.seq_outside_feeds(seq)) {
            return;
        }
        if self.seq_outside_feeds(seq) {
            self.first_token_outside = Some((quoted(wire), seq));
        }
    }

    /// Whether tick `seq`, the trigger of an order at `t` left unmatched, is older than the retention:
    /// held with its first copy more than `--tick-retention` before `t`, or let go by time after a
    /// feed brought it ([`Arbiter::older_than`](super::arbiter::Arbiter::older_than)).
    #[cold]
    fn beyond_retention(&self, seq: u64, t: i64) -> bool {
        let brought = |session| (0..self.feeds.len()).any(|fi| self.seq.has_seen(fi as u16, session, seq));
        self.arbiter
            .older_than(seq, t.saturating_sub(self.cfg.tick_retain_ns))
            .any(|(session, held)| held || brought(session))
    }

    /// Whether `seq` is 0 (MoldUDP64 numbers messages from 1) or, some feed having brought messages,
    /// lies outside the sequence range of each.
    #[inline]
    pub(super) fn seq_outside_feeds(&self, seq: u64) -> bool {
        let mut ranges = self.feeds.iter().filter_map(FeedState::seq_range).peekable();
        seq == 0 || (ranges.peek().is_some() && ranges.all(|(lo, hi)| seq < lo || seq > hi))
    }

    /// Parks order `p` until `until` ([`Parked`]). At most [`MAX_WAITING_ORDERS`](super::limits::MAX_WAITING_ORDERS)
    /// are: beyond, the one due first is looked for one last time now, and unmatched if its trigger has not come.
    #[inline]
    fn park(&mut self, until: i64, p: Parked) {
        if self.parked.len() >= self.limits.waiting
            && let Some((_, first)) = self.parked.pop_first()
        {
            self.released_for_room(|c| &mut c.orders_released_for_room);
            self.correlate(first.conn, &first.msg, first.snd, Some(first.retry_for_room(i64::MAX)));
        }
        self.parked_n += 1;
        self.parked.insert((until, self.parked_n), Box::new(p));
        self.wake_at = self.wake_at.min(until);
    }

    /// The index of the frame that carried tick `k`'s first copy, when the tick index's low 32 bits of
    /// it ([`Tick::frame`](super::arbiter::Tick::frame)) name it for sure: while fewer than 2^32 frames
    /// were read. Past that a tick kept that long (a clock standing still, a long `--tick-retention`)
    /// would be named 2^32 frames late: none is named (more bits per slot cost every message).
    fn tick_frame(&self, k: &super::arbiter::Tick) -> Option<u64> {
        (self.last_frame >> 32 == 0).then(|| k.frame_at(self.last_frame))
    }

    /// Finds order `m`'s trigger under the rule and records the pair. Every order first waits
    /// [`REORDER_NS`] past its first byte ([`Analyzer::wait_reorder`]); under the token rule, an order
    /// whose trigger no session has reached yet is parked ([`Parked`]): the feed's frames may be behind
    /// the order's. `retry`: what it was parked with, for an order looked for again.
    pub(super) fn correlate(&mut self, ci: usize, m: &OrderMsg, snd: Option<i64>, retry: Option<Retry>) {
        let s = &m.summary;
        let t = m.first.time_ns;
        let token = token_bytes(s);
        // Under the token rule, the token and the sequence it gives, for an order left unmatched.
        let mut read = None;
        // Under the symbol rule, the sequence of an order's symbol's newest tick when it lay beyond the
        // window.
        let mut beyond_window = None;
        let found = match &mut self.cfg.matching {
            MatchRule::Token(rule) => {
                let Some((tok, seq)) = token.and_then(|tok| Some((tok, rule.seq_of(tok)?))) else {
                    self.counters.no_token += 1;
                    self.counters.unmatched_orders += 1;
                    if self.first_unreadable_token.is_none() {
                        self.first_unreadable_token = token_wire(s).map(quoted);
                    }
                    return self.unmatched_row(ci, m, UnmatchedReason::NoToken, None);
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
                        let found = Some((session, seq, tick.time_ns, tick.feed, self.tick_frame(&tick)));
                        return self.wait_reorder(ci, m, snd, (None, i64::MIN), found);
                    }
                    Ok(Some((session, tick))) => Some((session, seq, tick.time_ns, tick.feed, self.tick_frame(&tick))),
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
                        let p = Parked {
                            give_up,
                            conn: ci,
                            msg: *m,
                            snd,
                            best: None,
                            prev: i64::MIN,
                            late_only,
                            found: None,
                        };
                        return self.park(until, p);
                    }
                    Ok(None) => None,
                    Err(_) => {
                        self.counters.ambiguous += 1;
                        return self.unmatched_row(ci, m, UnmatchedReason::Ambiguous, Some(seq));
                    }
                }
            }
            MatchRule::Symbol { window_ns } => {
                // A trigger recorded after its order (a host reordering frames by up to
                // REORDER_NS) is waited for: the order waits until capture time has passed its first
                // byte by that much, offered the ticks of its symbol recorded meanwhile.
                let window = *window_ns;
                let (newest_before, prev) = match retry {
                    Some(r) => (r.best, r.prev),
                    None => match s.symbol.and_then(|sym| self.last_by_symbol.at_or_before_with_prev(sym, t)) {
                        Some((b, prev)) => (Some(b), prev),
                        None => (None, i64::MIN),
                    },
                };
                if retry.is_none() && self.last_time < t.saturating_add(REORDER_NS) && s.symbol.is_some() {
                    // Its match so far, which a tick recorded from now on may better (`late_ticks`).
                    return self.wait_reorder(ci, m, snd, (newest_before, prev), None);
                }
                match newest_before {
                    Some((tt, session, seq, n, feed, frame)) if t.saturating_sub(tt) <= window => {
                        if n > 1 {
                            self.counters.ambiguous += 1;
                        }
                        // The rule cannot tell which of the ticks in its window triggered the order: an
                        // earlier one would make the latency longer than the one recorded.
                        if prev != i64::MIN && t.saturating_sub(prev) <= window {
                            self.counters.symbol_matches_with_earlier_ticks += 1;
                            if prev >= tt.saturating_sub(t.saturating_sub(tt)) {
                                self.counters.symbol_matches_with_earlier_ticks_within_latency += 1;
                            }
                        }
                        // (The arbiter gave the place: it is there.)
                        self.arbiter.session_at(session).map(|session| (session, seq, tt, feed, Some(frame)))
                    }
                    // Its symbol ticked before it, but only longer ago than the window.
                    Some((_, _, seq, _, _, _)) => {
                        self.counters.unmatched_beyond_window += 1;
                        beyond_window = Some(seq);
                        None
                    }
                    None => None,
                }
            }
        };
        let Some((session, seq, tick_time, feed, tick_frame)) = found else {
            self.counters.unmatched_orders += 1;
            let mut reason = beyond_window.map(|_| UnmatchedReason::BeyondWindow);
            if let Some((tok, seq)) = read {
                if self.beyond_retention(seq, t) {
                    self.counters.unmatched_beyond_retention += 1;
                    reason = Some(UnmatchedReason::BeyondRetention);
                }
                self.unmatched_token(token_wire(s).unwrap_or(tok), seq);
            }
            let reason = match reason {
                Some(r) => r,
                None if retry.is_some_and(|r| r.for_room) => {
                    self.counters.unmatched_released_for_room += 1;
                    UnmatchedReason::ReleasedForRoom
                }
                None if s.symbol.is_none() && matches!(self.cfg.matching, MatchRule::Symbol { .. }) => {
                    self.counters.unmatched_without_symbol += 1;
                    UnmatchedReason::NoSymbol
                }
                None => UnmatchedReason::TriggerNotSeen,
            };
            // The sequence the token named, or the symbol's newest tick beyond the window.
            return self.unmatched_row(ci, m, reason, read.map(|(_, seq)| seq).or(beyond_window));
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
                        *self.symbol_slots.entry(sym).or_insert_with(|| metric.slot(symbol_dim(&sym)))
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
            order_id: super::unmatched::order_id_text(s),
            token: super::unmatched::token_text(s),
            order_time_ns: t,
            order_frame: m.first.index,
            order_last_frame: m.last.index,
            latency_ns: latency,
            tick_frame,
        });
        self.output = true;
    }
}
