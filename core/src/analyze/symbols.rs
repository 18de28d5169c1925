//! The symbol rule's tick histories: per symbol, the recent ticks an order still to be matched may match.

use super::REORDER_NS;
use super::limits::{HOLD_MAX_NS, MAX_SYMBOL_TICKS, MAX_SYMBOLS, MAX_TICKS_KEPT};
use crate::fxhash::FxHashMap;
use crate::proto::Symbol;

/// A tick of one symbol: (time, session (its place among the arbiter's,
/// [`SessionRef::index`](super::arbiter::SessionRef::index)), seq, messages of that symbol at that
/// time (at most `u16::MAX` counted), feed of its first copy, index of the frame that carried that
/// copy). The feed and the frame are kept here: the tick may have left the arbiter, whose window is
/// `--tick-retention`, not the rule's. 32 bytes, as when the session's 10 bytes were kept in place
/// of its place and the frame: a push writes no more.
pub(super) type SymTick = (i64, u32, u64, u16, u16, u64);

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
pub(super) struct SymHistory {
    pub(super) ticks: Vec<SymTick>,
    pub(super) start: usize,
    /// The time of the newest tick forgotten for room (`i64::MIN`: none).
    pub(super) forgot_to: i64,
    /// Ticks forgotten for room.
    pub(super) forgotten: u64,
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
    pub(super) fn push(&mut self, t: i64, session: u32, seq: u64, feed: u16, frame: u64, reach: i64) {
        // `forget_before` leaves a tick: the last of `ticks`, when there is one, is a live one.
        let tick = (t, session, seq, 1, feed, frame);
        match self.ticks.last_mut() {
            Some(b) if b.0 == t => join(b, tick),
            Some(b) if b.0 > t => self.insert(tick),
            _ => self.ticks.push(tick),
        }
        self.forget_before(reach);
    }

    /// The ticks kept, in time order.
    #[inline]
    pub(super) fn live(&self) -> &[SymTick] {
        self.ticks.get(self.start..).unwrap_or_default()
    }

    /// A tick recorded after a newer one.
    #[cold]
    pub(super) fn insert(&mut self, tick: SymTick) {
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
    #[inline]
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

    /// Drops the ticks let go but the newest of them, the one before the oldest kept, for
    /// [`SymHistory::before`] (a field for it made the history larger, and every push dearer).
    #[cold]
    pub(super) fn compact(&mut self) {
        let keep = self.start.min(1);
        self.ticks.drain(..self.start - keep);
        self.start = keep;
    }

    /// The time of the newest tick of this symbol before `t` (strictly) that the history knows of,
    /// kept or let go (`i64::MIN`: none): ticks leave the history in time order, and compaction keeps
    /// the one just before the oldest kept, the newest let go. Read once per order, when it is matched.
    #[inline]
    pub(super) fn before(&self, t: i64) -> i64 {
        let live = self.live();
        self.before_place(live.partition_point(|k| k.0 < t), t)
    }

    /// [`SymHistory::before`] `t` where the first kept at or after `t` is the `i`th kept.
    #[inline]
    fn before_place(&self, i: usize, t: i64) -> i64 {
        if let Some(i) = i.checked_sub(1) {
            return self.live()[i].0;
        }
        // (A tick recorded late, older than one already let go, may sit first: none is known then.)
        match self.start.checked_sub(1).map(|i| self.ticks[i].0) {
            Some(gone) if gone < t => gone,
            _ => i64::MIN,
        }
    }

    /// Gives back the room of a `Vec` four times larger than what it holds (and more than a few
    /// ticks' worth).
    #[inline]
    fn shrink(&mut self) {
        let len = self.ticks.len();
        if self.ticks.capacity() > 4 * len.max(16) {
            self.ticks.shrink_to(2 * len);
        }
    }

    /// [`SymHistory::at_or_before`] `t`, and the time of the tick before it ([`SymHistory::before`]),
    /// found in one search.
    #[inline]
    pub(super) fn at_or_before_with_prev(&self, t: i64) -> Option<(SymTick, i64)> {
        let live = self.live();
        let i = match live.last() {
            Some(b) if b.0 <= t => live.len() - 1,
            _ => live.partition_point(|k| k.0 <= t).checked_sub(1)?,
        };
        // Ticks are one per time: the one before it in the history is the one before it in time.
        Some((live[i], self.before_place(i, live[i].0)))
    }

    /// The newest tick at or before `t`, by time (of two at one time, the one recorded last).
    #[inline]
    pub(super) fn at_or_before(&self, t: i64) -> Option<SymTick> {
        let live = self.live();
        match live.last() {
            Some(b) if b.0 <= t => Some(*b),
            _ => live.partition_point(|k| k.0 <= t).checked_sub(1).map(|i| live[i]),
        }
    }

    /// Gives tick `(session, seq)`, kept at time `old` (ticks are unique by time), the earlier time `t`
    /// (an earlier copy's), feed `feed` and frame `frame`; returns it if so (with `t` at or before
    /// [`SymHistory::forgot_to`] it is forgotten). Found by time and moved by rotating the ticks
    /// between, not by sorting them all: a copy earlier than every one of many kept would make that
    /// quadratic.
    #[cold]
    pub(super) fn retime(
        &mut self,
        old: i64,
        (session, seq): (u32, u64),
        t: i64,
        feed: u16,
        frame: u64,
    ) -> Option<SymTick> {
        debug_assert!(t < old, "a tick is retimed to an earlier copy's time only");
        let i = self.start + self.live().partition_point(|k| k.0 < old);
        let k = self.ticks.get_mut(i).filter(|k| k.0 == old && (k.1, k.2) == (session, seq))?;
        (k.0, k.4, k.5) = (t, feed, frame);
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
pub(super) fn join(kept: &mut SymTick, later: SymTick) {
    *kept = (later.0, later.1, later.2, kept.3.saturating_add(later.3), later.4, later.5);
}

/// Recent ticks by symbol (`SymHistory`), found through the message's stock locate: a locate
/// keeps its symbol for the day, so the symbol map is consulted once per locate, not per tick.
#[derive(Debug)]
pub(super) struct SymbolTicks {
    pub(super) index: FxHashMap<Symbol, u32>,
    pub(super) histories: Vec<SymHistory>,
    /// By stock locate: the symbol last pushed under it and its history (grown to the largest
    /// locate seen: at most 65,536 entries).
    by_locate: Vec<(Symbol, u32)>,
    /// The earliest first byte an order held by reassembly may have
    /// ([`Analyzer::hold_from`](super::Analyzer::hold_from); `i64::MAX`: none). With an order recorded up to
    /// [`REORDER_NS`] late, that and the allowance make how far back an order still to come may start
    /// ([`SymbolTicks::reach_of`]): the histories keep what such an order may match.
    pub(super) hold_from: i64,
    /// The latest first byte of an order parked under the symbol rule (`i64::MIN`: none): a tick at
    /// or before it, recorded from now on, may be a parked order's match, and waits in `late`.
    pub(super) parked_to: i64,
    /// Such ticks (or a tick's new time, [`SymbolTicks::retime`]), for `Analyzer::late_ticks`.
    pub(super) late: Vec<(Symbol, SymTick)>,
    /// Ticks of symbols beyond the first [`MAX_SYMBOLS`], not kept.
    pub(super) untracked: u64,
    /// Ticks all histories together keep at most ([`MAX_TICKS_KEPT`]; tests lower it), counted every
    /// eighth of it pushed ([`SymbolTicks::bound_all`]).
    max_kept: usize,
    /// Ticks to push before they are counted again.
    until_count: usize,
}

impl SymbolTicks {
    #[inline]
    pub(super) fn new() -> Self {
        Self::keeping(MAX_TICKS_KEPT)
    }

    /// Keeping at most `max_kept` ticks of all symbols together (and an eighth of it more).
    #[inline]
    pub(super) fn keeping(max_kept: usize) -> Self {
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

    /// A tick of `symbol` (stock locate `locate`) at `t`: `(session, seq)`, its first copy on `feed`
    /// in frame `frame`. Returns whether it may be the match of an order parked already (it is then in
    /// [`SymbolTicks::late`]).
    #[inline(always)]
    pub(super) fn push(
        &mut self,
        locate: u16,
        symbol: Symbol,
        t: i64,
        tick: (u32, u64),
        feed: u16,
        frame: u64,
    ) -> bool {
        let late = t <= self.parked_to;
        if late {
            self.late.push((symbol, (t, tick.0, tick.1, 1, feed, frame)));
        }
        self.push_history(locate, symbol, t, tick, feed, frame);
        late
    }

    #[inline(always)]
    fn push_history(&mut self, locate: u16, symbol: Symbol, t: i64, (session, seq): (u32, u64), feed: u16, frame: u64) {
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
            return h.push(t, session, seq, feed, frame, reach);
        }
        let Some(i) = self.find(locate, symbol) else { return };
        self.histories[i as usize].push(t, session, seq, feed, frame, reach);
    }

    /// How far back an order still to be matched may start, at capture time `now`: one held by
    /// reassembly (at most [`HOLD_MAX_NS`] back), or one the capture records up to [`REORDER_NS`]
    /// late.
    #[inline(always)]
    pub(super) fn reach_of(hold_from: i64, now: i64) -> i64 {
        hold_from.min(now.saturating_sub(REORDER_NS)).max(now.saturating_sub(HOLD_MAX_NS))
    }

    /// Sets [`SymbolTicks::hold_from`]. (The ticks kept for an order held go as time passes: `push`
    /// and `prune`.)
    #[inline]
    pub(super) fn hold(&mut self, from: i64) {
        self.hold_from = from;
    }

    /// Forgets the ticks no order starting at `from` or later can match, whatever their symbol.
    #[inline]
    pub(super) fn prune(&mut self, from: i64) {
        for h in &mut self.histories {
            h.forget_before(from);
        }
    }

    /// The newest tick of `symbol` at or before `t`, by time.
    #[inline]
    pub(super) fn at_or_before(&self, symbol: Symbol, t: i64) -> Option<SymTick> {
        self.histories[*self.index.get(&symbol)? as usize].at_or_before(t)
    }

    /// The newest tick of `symbol` at or before `t`, by time, and the time of the newest tick of it
    /// known before that one ([`SymHistory::before`]; `i64::MIN`: none).
    #[inline]
    pub(super) fn at_or_before_with_prev(&self, symbol: Symbol, t: i64) -> Option<(SymTick, i64)> {
        self.histories[*self.index.get(&symbol)? as usize].at_or_before_with_prev(t)
    }

    /// [`SymHistory::before`] of `symbol`'s history.
    #[inline]
    pub(super) fn before(&self, symbol: Symbol, t: i64) -> i64 {
        self.index.get(&symbol).map_or(i64::MIN, |&i| self.histories[i as usize].before(t))
    }

    /// The time of the newest tick of `symbol` forgotten for room ([`SymHistory::forgot_to`]).
    #[inline]
    pub(super) fn forgot_to(&self, symbol: Symbol) -> i64 {
        self.index.get(&symbol).map_or(i64::MIN, |&i| self.histories[i as usize].forgot_to)
    }

    /// Ticks forgotten for room, all symbols.
    #[inline]
    pub(super) fn forgotten(&self) -> u64 {
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
    pub(super) fn find(&mut self, locate: u16, symbol: Symbol) -> Option<u32> {
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
    /// `old`), was first copied at `t` on `feed`, in frame `frame`.
    /// A parked order may match it at its new time: it is then in [`SymbolTicks::late`] too.
    #[inline]
    pub(super) fn retime(&mut self, locate: u16, old: i64, tick: (u32, u64), t: i64, feed: u16, frame: u64) {
        let Some(&(symbol, i)) = self.by_locate.get(usize::from(locate)) else { return };
        let found = self.histories.get_mut(i as usize).and_then(|h| h.retime(old, tick, t, feed, frame));
        if let Some(k) = found.filter(|_| t <= self.parked_to) {
            self.late.push((symbol, k));
        }
    }
}
