//! What waits for capture time: orders parked for a trigger not seen yet, orders waiting the reorder
//! allowance, and requests awaiting their response.

use super::orders::OrderMsg;
use super::symbols::SymTick;
use crate::proto::OrderId;
use crate::proto::moldudp64::Session;
use std::collections::{BTreeMap, VecDeque};

/// An order whose trigger (by its token) no session has reached yet: the feed's frames may be behind the order's
/// (another tap, a clock behind, a host recording frames out of order). It is looked for again when due (its key in
/// [`Analyzer::parked`](super::Analyzer::parked)), and then every [`PARK_STEP_DIV`](super::limits::PARK_STEP_DIV)th of
/// the retention until `give_up`: a trigger that comes is found soon, before the arbiter's window lets it go.
///
/// Every order waits [`REORDER_NS`](super::REORDER_NS) of capture time past its first byte (in
/// [`Analyzer::reorder`](super::Analyzer::reorder)): under the symbol rule with its match so far in `best` (a tick of
/// its symbol recorded after it, stamped at or before it, may be a better one: `Analyzer::late_ticks`), under the token
/// rule with the trigger found in `found` (an earlier copy of it may come).
#[derive(Debug)]
pub(super) struct Parked {
    pub(super) give_up: i64,
    pub(super) conn: usize,
    pub(super) msg: OrderMsg,
    pub(super) snd: Option<i64>,
    pub(super) best: Option<SymTick>,
    /// Symbol rule: the time of the newest tick of its symbol known before `best` (`i64::MIN`: none), so
    /// that the report can say whether the rule had an earlier candidate ([`Counters::symbol_matches_with_earlier_ticks`](super::Counters::symbol_matches_with_earlier_ticks)).
    pub(super) prev: i64,
    /// Token rule: parked only because a copy of its trigger may be recorded late (every feed had
    /// passed it): a copy then found must be stamped at or before the order.
    pub(super) late_only: bool,
    /// Token rule: the trigger found, waiting [`REORDER_NS`](super::REORDER_NS) for an earlier copy of it the capture
    /// may record late (the tick is then timed by that copy).
    pub(super) found: Option<Found>,
}

/// A trigger found: session, sequence, time of its first copy, feed of that copy, index of the frame
/// that carried it (when known: [`Pair::tick_frame`](super::Pair::tick_frame)).
pub(super) type Found = (Session, u64, i64, u16, Option<u64>);

impl Parked {
    /// What [`Analyzer::correlate`](super::Analyzer::correlate) is told when it looks for this order again at capture
    /// time `now`.
    #[inline]
    pub(super) fn retry(&self, now: i64) -> Retry {
        Retry {
            now,
            give_up: self.give_up,
            best: self.best,
            prev: self.prev,
            late_only: self.late_only,
            found: self.found,
            for_room: false,
        }
    }

    /// [`Parked::retry`] for an order that stops waiting before its time because as many wait as may.
    #[inline]
    pub(super) fn retry_for_room(&self, now: i64) -> Retry {
        Retry { for_room: true, ..self.retry(now) }
    }
}

/// A response read before any request it answers ([`Analyzer::early_responses`](super::Analyzer::early_responses)): its
/// request may come within [`crate::reasm::REORDER_NS`] (frames recorded out of order, or its bytes behind a range that
/// waits that long); after that it is unmatched (or, a Canceled, unsolicited).
#[derive(Debug, Clone, Copy)]
pub(super) struct EarlyResponse {
    pub(super) due: i64,
    pub(super) conn: usize,
    pub(super) id: OrderId,
    pub(super) time_ns: i64,
    pub(super) cancel: bool,
}

/// Orders waiting the reorder allowance ([`Analyzer::reorder`](super::Analyzer::reorder)), by when they are due, then
/// in the order they came (the key's second part counts them). A queue sorted by inserting in place was quadratic when
/// frames alternate between two times, and a B-tree of the orders cost 2.5% more instructions on a real capture (it
/// moves its values, about 600 bytes each, as nodes fill): the orders are in a slab, their keys appended to a queue
/// while they come in time order (nearly always), and kept in a B-tree when they come before the queue's last. An order
/// leaving out of turn (released for room) leaves its key in the queue, skipped, until those are as many as the orders.
#[derive(Debug, Default)]
pub(super) struct ReorderQueue {
    pub(super) in_order: VecDeque<((i64, u64), usize)>,
    pub(super) out_of_order: BTreeMap<(i64, u64), usize>,
    pub(super) slots: Vec<Option<((i64, u64), Parked)>>,
    free: Vec<usize>,
    pub(super) live: usize,
    /// Keys in `in_order` whose order has left.
    pub(super) stale: usize,
}

impl ReorderQueue {
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.live
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Whether `in_order`'s entry `e` is an order still waiting (a slot is reused under another key).
    #[inline]
    pub(super) fn holds(&self, e: &((i64, u64), usize)) -> bool {
        self.slots[e.1].as_ref().is_some_and(|(k, _)| *k == e.0)
    }

    /// The key of the order due first (`in_order`'s ends are never stale).
    #[inline]
    pub(super) fn first_key(&self) -> Option<(i64, u64)> {
        let queued = self.in_order.front().map(|e| e.0);
        match (queued, self.out_of_order.first_key_value()) {
            (Some(q), Some((&o, _))) => Some(q.min(o)),
            (q, o) => q.or(o.map(|(&k, _)| k)),
        }
    }

    /// The key of the order due last.
    #[inline]
    pub(super) fn last_key(&self) -> Option<(i64, u64)> {
        let queued = self.in_order.back().map(|e| e.0);
        match (queued, self.out_of_order.last_key_value()) {
            (Some(q), Some((&o, _))) => Some(q.max(o)),
            (q, o) => q.or(o.map(|(&k, _)| k)),
        }
    }

    #[inline]
    pub(super) fn insert(&mut self, key: (i64, u64), p: Parked) {
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

    #[inline]
    pub(super) fn remove(&mut self, key: &(i64, u64)) -> Option<Parked> {
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

    #[inline]
    pub(super) fn pop_first(&mut self) -> Option<((i64, u64), Parked)> {
        let key = self.first_key()?;
        Some((key, self.remove(&key)?))
    }
}

/// Symbol rule: an order of [`Analyzer::reorder`](super::Analyzer::reorder) as the ticks of its symbol recorded late
/// see it, by its key there, in key order: its first byte's time and its match so far (its `Parked::best` while it
/// waits). Beside the others of its symbol, so that offering them a tick reads one slice.
#[derive(Debug, Clone, Copy)]
pub(super) struct Waiter {
    pub(super) key: (i64, u64),
    pub(super) t: i64,
    pub(super) best: Option<SymTick>,
    /// [`Parked::prev`].
    pub(super) prev: i64,
}

/// An order looked for again ([`Parked`]): the capture time now (`i64::MAX` at the end: no more
/// parking), and what it was parked with.
#[derive(Debug, Clone, Copy)]
pub(super) struct Retry {
    pub(super) now: i64,
    pub(super) give_up: i64,
    pub(super) best: Option<SymTick>,
    pub(super) prev: i64,
    pub(super) late_only: bool,
    pub(super) found: Option<Found>,
    /// It stopped waiting before its time, for room: unmatched, it is
    /// [`UnmatchedReason::ReleasedForRoom`](super::UnmatchedReason::ReleasedForRoom) unless a reason the rule
    /// found says more.
    pub(super) for_room: bool,
}

/// The requests of one order id awaiting a response: (time, request number) of the oldest, and the
/// later ones by number (the exchange answers them in the order sent). A second one is rare (a
/// cancel sent before the order's acceptance) and the only one that allocates. The number is the
/// request's in `Analyzer::pending_order` too, so that an entry there tells whether its request
/// still waits even when requests of one id come out of time order.
#[derive(Debug)]
pub(super) struct Waiting {
    pub(super) oldest: (i64, u64),
    pub(super) later: BTreeMap<u64, i64>,
}

impl Waiting {
    /// Whether request `n` still waits.
    #[inline]
    pub(super) fn holds(&self, n: u64) -> bool {
        self.oldest.1 == n || self.later.contains_key(&n)
    }
}
