//! A/B feed arbitration and the tick index.
//!
//! The same (session, sequence) seen on several feeds is one tick, timed by its earliest copy; every
//! later copy's delay is reported. The index keeps each session's recent ticks in a ring addressed by
//! sequence number, so a lookup by sequence (an order token carrying it) is O(1), and memory is bounded
//! by the retention window, not by the capture length.

use crate::fxhash::FxHashMap;
use crate::proto::moldudp64::Session;

/// The first copy of a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// Capture time of the earliest copy, ns.
    pub time_ns: i64,
    /// Feed index (in the analyzer's feed table) of the earliest copy.
    pub feed: u16,
    /// Stock locate of the message (0 when unknown).
    pub locate: u16,
    /// The low 32 bits of the index of the frame that carried the earliest copy ([`Tick::frame_at`]).
    pub frame: u32,
}

impl Tick {
    /// The index of the frame that carried the earliest copy, for a lookup made while frame `now` is
    /// read: the latest index at or before `now` that ends in [`Tick::frame`]. Sure while `now` is
    /// below 2^32; past that, only for a tick less than 2^32 frames older, which nothing bounds (the
    /// window is capture time).
    pub fn frame_at(&self, now: u64) -> u64 {
        now - u64::from((now as u32).wrapping_sub(self.frame))
    }
}

/// What a copy turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    /// The first copy of this tick.
    First,
    /// A later copy: `delay_ns` after the first, which came on `first_feed`.
    Later {
        /// Delay behind the first copy.
        delay_ns: i64,
        /// Feed of the first copy.
        first_feed: u16,
    },
    /// Older than the retention window: too late to arbitrate.
    Stale,
}

/// A sequence's slot in its session's ring. Every slot inside the ring has a time: its first copy's
/// when seen, else the time the sequence was found missing (a later one arrived first), so that a
/// sequence lost on every feed leaves the window like the others instead of holding the ring open.
/// 16 bytes: whether it was seen is its feed ([`UNSEEN`] when not), which leaves room for the low 32
/// bits of its first copy's frame index (a tick is never 2^32 frames older than the frame asking).
#[derive(Debug, Clone, Copy)]
struct Slot {
    time_ns: i64,
    frame: u32,
    feed: u16,
    locate: u16,
}

/// The feed of a slot not seen: no feed has this index ([`MAX_FEEDS`]).
const UNSEEN: u16 = u16::MAX;

/// Feeds the arbiter tells apart, at most (their index is a `u16`, `u16::MAX` excluded: it marks a
/// sequence not seen).
pub const MAX_FEEDS: usize = UNSEEN as usize;

/// The value new capacity is filled with. Slots outside the ring are never read: an append sets every
/// field and a gap marks its slots missing, so what a slot held before it re-entered does not matter.
const EMPTY: Slot = Slot { time_ns: i64::MIN, frame: 0, feed: UNSEEN, locate: 0 };

impl Slot {
    /// The first copy of its tick (written field by field: see [`Ring::observe`]).
    #[inline(always)]
    fn set(&mut self, time_ns: i64, feed: u16, locate: u16, frame: u32) {
        self.time_ns = time_ns;
        self.frame = frame;
        self.feed = feed;
        self.locate = locate;
    }

    /// Whether a copy of its tick was seen (else it was found missing).
    #[inline(always)]
    fn seen(&self) -> bool {
        self.feed != UNSEEN
    }

    /// An unseen sequence found missing at `time_ns`.
    fn missing(time_ns: i64) -> Slot {
        Slot { time_ns, frame: 0, feed: UNSEEN, locate: 0 }
    }
}

/// One session's recent ticks: a ring of slots addressed by sequence number (a power-of-two
/// capacity, so that an index is a mask, not a division).
#[derive(Debug, Default, Clone)]
struct SessionTicks {
    /// Sequence number of the oldest slot.
    base: u64,
    /// Physical index of the oldest slot.
    head: usize,
    /// Slots in use.
    len: usize,
    /// `slots.len() - 1` (0 while empty).
    mask: usize,
    slots: Vec<Slot>,
    /// The lowest sequence the ring held, and whether it restarted: once `base` has moved past the
    /// first (a slot forgotten) or the ring restarted, a sequence below `base` may be one seen before.
    /// Until then none was, and one that comes is new (a feed lagging at the start). Slots left for
    /// room, or at a restart, move `first` to `base` and count as a restart: the sequences from
    /// `first` to `base` are exactly those that left the ring by time ([`Arbiter::older_than`]).
    /// (Kept in these two fields: one more made every packet's session lookup cost more.)
    first: u64,
    restarted: bool,
}

impl SessionTicks {
    fn new(base: u64) -> Self {
        SessionTicks { base, first: base, ..Default::default() }
    }

    /// The slot of `seq`, if the ring holds it (seen, or found missing).
    fn slot(&self, seq: u64) -> Option<&Slot> {
        let idx = usize::try_from(seq.checked_sub(self.base)?).ok()?;
        (idx < self.len).then(|| self.at(idx))
    }

    /// The tick `seq`, if held and seen.
    fn tick(&self, seq: u64) -> Option<Tick> {
        let slot = self.slot(seq)?;
        slot.seen().then_some(Tick { time_ns: slot.time_ns, feed: slot.feed, locate: slot.locate, frame: slot.frame })
    }

    #[inline(always)]
    fn at(&self, idx: usize) -> &Slot {
        &self.slots[(self.head + idx) & self.mask]
    }

    #[inline(always)]
    fn at_mut(&mut self, idx: usize) -> &mut Slot {
        &mut self.slots[(self.head + idx) & self.mask]
    }

    /// Forgets the oldest slot. Its contents stay (see [`EMPTY`]): writing them would be a store to a
    /// line that left the cache a window ago.
    fn pop_front(&mut self) {
        self.head = (self.head + 1) & self.mask;
        self.len -= 1;
        // Wrapping: a hostile sequence near the top of the range must not panic here.
        self.base = self.base.wrapping_add(1);
    }

    /// Forgets every slot; the ring starts again at `base`.
    fn clear(&mut self, base: u64) {
        (self.base, self.head, self.len, self.restarted, self.first) = (base, 0, 0, true, base);
    }

    /// Room for `len` slots: capacity doubled (at least 64), never past `max` rounded up to a power of
    /// two. Grown in place (a `realloc`, which the allocator can do without a copy or a second
    /// buffer: building a new ring beside the old one raised the peak RSS by the old ring's size).
    fn reserve(&mut self, len: usize, max: usize) {
        let old_cap = self.slots.len();
        if len <= old_cap {
            return;
        }
        let cap = (old_cap * 2).max(len).max(64).next_power_of_two().min(max.next_power_of_two());
        self.slots.resize(cap, EMPTY);
        // The slots that wrapped past the old end follow on in the new space (the head stays put).
        let wrapped = (self.head + self.len).saturating_sub(old_cap);
        self.slots.copy_within(..wrapped, old_cap);
        self.mask = cap - 1;
    }
}

/// A session of the arbiter, looked up once per packet ([`Arbiter::packet`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionRef(usize);

impl SessionRef {
    /// The session's place among the arbiter's sessions (0, 1, ... in order of first appearance), for
    /// state kept beside them.
    pub fn index(self) -> usize {
        self.0
    }
}

/// Arbitration state for every session.
#[derive(Debug, Clone)]
pub struct Arbiter {
    /// Sessions in order of first appearance.
    sessions: Vec<(Session, SessionTicks)>,
    index: FxHashMap<Session, usize>,
    /// The session of the previous call: a feed has one session at a time, so this nearly always hits.
    last: usize,
    retain_ns: i64,
    max_slots: usize,
    /// The earliest time an order still to be correlated may have ([`Arbiter::hold`]): ticks are kept
    /// from `retain_ns` before it, not only before the latest packet (`i64::MAX`: none held).
    hold_from: i64,
    /// How far back a hold reaches at most, from the packet's time ([`Arbiter::hold`]).
    hold_max_ns: i64,
    /// For the packet being taken, while ticks are held: the time before which a copy's first copy
    /// (or a sequence found missing) lies outside the window, which without the hold would have left
    /// the ring: such a copy is too late to arbitrate, as it would have been (`i64::MIN`: none held).
    stale_before: i64,
    /// Copies older than the window.
    pub stale: u64,
    /// Sequence jumps too large to index (the ring restarted there).
    pub resets: u64,
    /// Slots the rings may still grow by, all sessions together ([`TOTAL_SLOTS`]).
    spare_slots: usize,
}

/// Slots all sessions' rings hold at most together (16 bytes each: 128 MiB). Each ring grows to what
/// its session needs up to `max_slots`, and keeps its room: two packets of a session far apart in
/// sequence grew a ring to `max_slots` (64 MiB), so garbage of many sessions took gigabytes. Past the
/// total, a ring keeps the newest ticks its room holds.
pub const TOTAL_SLOTS: usize = 1 << 23;

impl Arbiter {
    /// An arbiter keeping ticks for `retain_ns` of capture time, and at most `max_slots` per session.
    pub fn new(retain_ns: i64, max_slots: usize) -> Self {
        Arbiter {
            sessions: Vec::new(),
            index: FxHashMap::default(),
            last: usize::MAX,
            retain_ns,
            max_slots: max_slots.max(1),
            hold_from: i64::MAX,
            hold_max_ns: i64::MAX,
            stale_before: i64::MIN,
            stale: 0,
            resets: 0,
            spare_slots: TOTAL_SLOTS.max(max_slots),
        }
    }

    /// Starts a packet of `session` whose first message is `seq`, captured at `time_ns`: forgets the
    /// ticks older than the window (so every copy in the packet is judged against the same window)
    /// and returns the session for [`Arbiter::ring`].
    #[inline(always)]
    pub fn packet(&mut self, session: Session, seq: u64, time_ns: i64) -> SessionRef {
        let i = match self.sessions.get(self.last) {
            Some((s, _)) if *s == session => self.last,
            _ => self.find_or_add(session, seq),
        };
        self.last = i;
        self.packet_at(SessionRef(i), time_ns);
        SessionRef(i)
    }

    /// [`Arbiter::packet`] for a session already looked up (a caller that remembers it).
    #[inline(always)]
    pub fn packet_at(&mut self, session: SessionRef, time_ns: i64) {
        if self.hold_from != i64::MAX {
            return self.packet_held(session, time_ns);
        }
        let Some((_, s)) = self.sessions.get_mut(session.0) else { return };
        let horizon = time_ns.saturating_sub(self.retain_ns);
        // A tick whose first copy is older than the window goes, and so does a sequence found
        // missing longer ago than the window: a copy of it now would be that far behind.
        while s.len > 0 && s.at(0).time_ns < horizon {
            s.pop_front();
        }
    }

    /// [`Arbiter::packet_at`] while ticks are held ([`Arbiter::hold`]).
    #[cold]
    #[inline(never)]
    fn packet_held(&mut self, session: SessionRef, time_ns: i64) {
        let window = time_ns.saturating_sub(self.retain_ns);
        let hold = self.hold_from.max(time_ns.saturating_sub(self.hold_max_ns));
        self.stale_before = if hold < time_ns { window } else { i64::MIN };
        let Some((_, s)) = self.sessions.get_mut(session.0) else { return };
        let horizon = window.min(hold.saturating_sub(self.retain_ns));
        while s.len > 0 && s.at(0).time_ns < horizon {
            s.pop_front();
        }
    }

    /// Orders to come may start as early as `from` (capture time; `i64::MAX`: none held), but no
    /// earlier than `max_ns` before the latest packet: the ticks they may match, from
    /// `--tick-retention` before that, stay. A copy is still judged against the window from its own
    /// packet's time.
    pub fn hold(&mut self, from: i64, max_ns: i64) {
        self.hold_from = from;
        self.hold_max_ns = max_ns;
        if from == i64::MAX {
            self.stale_before = i64::MIN;
        }
    }

    #[cold]
    fn find_or_add(&mut self, session: Session, seq: u64) -> usize {
        match self.index.get(&session) {
            Some(&i) => i,
            None => {
                self.sessions.push((session, SessionTicks::new(seq)));
                self.index.insert(session, self.sessions.len() - 1);
                self.sessions.len() - 1
            }
        }
    }

    /// Records a copy of `seq` of the packet's session, seen at `time_ns` on `feed` (one copy:
    /// [`Arbiter::ring`] serves a packet's), in a frame whose index ends in `time_ns`'s low 32 bits (the
    /// tests' frames: each copy's its own, so that a tick's frame shows which copy it kept).
    #[cfg(test)]
    fn observe_in(&mut self, session: SessionRef, seq: u64, feed: u16, locate: u16, time_ns: i64) -> Arrival {
        self.ring(session).observe(seq, feed, locate, time_ns, time_ns as u32)
    }

    /// The ring of a session looked up by [`Arbiter::packet`], for the copies of one packet (a caller
    /// with many saves looking the session up again for each).
    #[inline(always)]
    pub fn ring(&mut self, session: SessionRef) -> Ring<'_> {
        let Arbiter { sessions, max_slots, stale, resets, stale_before, spare_slots, .. } = self;
        Ring {
            s: &mut sessions[session.0].1,
            max_slots: *max_slots,
            stale_before: *stale_before,
            stale,
            resets,
            spare: spare_slots,
        }
    }

    /// Records a copy of `(session, seq)` seen at `time_ns` on `feed` (a packet of one message).
    #[cfg(test)]
    fn observe(&mut self, session: Session, seq: u64, feed: u16, locate: u16, time_ns: i64) -> Arrival {
        let r = self.packet(session, seq, time_ns);
        self.observe_in(r, seq, feed, locate, time_ns)
    }

    /// Whether the `count` messages from `seq` on of a packet of `session`, seen at `time_ns` on `feed`,
    /// are all later copies of first copies seen at one time on one other feed (one packet's, in
    /// practice): every slot held, seen at one time no later than `time_ns`, on one feed not `feed`. Then [`Ring::observe`] would return `Arrival::Later` with the
    /// returned `(delay_ns, first_feed)` for each and change nothing (a later copy writes no slot).
    /// `None` otherwise. After [`Arbiter::packet_at`], like `observe`.
    #[inline(always)]
    pub fn later_copies(
        &self,
        session: SessionRef,
        seq: u64,
        count: u16,
        feed: u16,
        time_ns: i64,
    ) -> Option<(i64, u16)> {
        let s = &self.sessions.get(session.0)?.1;
        let idx = usize::try_from(seq.checked_sub(s.base)?).ok()?;
        let n = usize::from(count);
        if n == 0 || idx.checked_add(n)? > s.len {
            return None;
        }
        let first = s.at(idx);
        let (t0, f0) = (first.time_ns, first.feed);
        if !first.seen() || f0 == feed || time_ns < t0 || t0 < self.stale_before {
            return None;
        }
        // No early exit: a packet is a few slots, and a branch per slot would be one more to predict.
        let mut same = true;
        for i in 1..n {
            let x = s.at(idx + i);
            // (`f0` is a feed, so the same feed is a slot seen.)
            same &= (x.time_ns == t0) & (x.feed == f0);
        }
        same.then_some((time_ns - t0, f0))
    }

    /// The session at place `index` ([`SessionRef::index`]; sessions are never dropped, so a place
    /// once given stays its session's).
    pub fn session_at(&self, index: u32) -> Option<Session> {
        self.sessions.get(index as usize).map(|(s, _)| *s)
    }

    /// The tick `(session, seq)`, if still retained.
    pub fn get(&self, session: Session, seq: u64) -> Option<Tick> {
        let s = match self.sessions.get(self.last) {
            Some((k, s)) if *k == session => s,
            _ => &self.sessions[*self.index.get(&session)?].1,
        };
        s.tick(seq)
    }

    /// Slots the ring of `session` holds (retained ticks and the unseen sequences among them).
    #[cfg(test)]
    fn retained(&self, session: Session) -> usize {
        self.index.get(&session).map_or(0, |&i| self.sessions[i].1.len)
    }

    /// Whether no session has reached sequence `seq` (none holds it or a later one): a tick that may
    /// still come, when the frames of its tap are behind an order's. With no session yet, any may.
    pub fn ahead_of_all(&self, seq: u64) -> bool {
        self.sessions.iter().all(|(_, s)| s.base.checked_add(s.len as u64).is_some_and(|end| seq >= end))
    }

    /// The sessions that found tick `seq` missing (a later one came first): another feed's copy may
    /// still bring it.
    pub fn missing_in(&self, seq: u64) -> impl Iterator<Item = Session> + '_ {
        self.sessions.iter().filter_map(move |(session, s)| s.slot(seq).is_some_and(|x| !x.seen()).then_some(*session))
    }

    /// The sessions whose tick `seq` is older than `not_before`: held, its first copy before that
    /// (`true`), or let go by time (`false`: ticks leave a ring in sequence order once older than the
    /// retention before a later packet, or before the hold; the slot may have been a sequence found
    /// missing, which the caller asks the feeds about).
    pub fn older_than(&self, seq: u64, not_before: i64) -> impl Iterator<Item = (Session, bool)> + '_ {
        self.sessions.iter().filter_map(move |(session, s)| match s.slot(seq) {
            Some(x) => (x.seen() && x.time_ns < not_before).then_some((*session, true)),
            None => (seq >= s.first && seq < s.base).then_some((*session, false)),
        })
    }

    /// The tick with sequence `seq`, first copied at `not_before` or later, in whichever session has
    /// it: `Ok(None)` when none does, `Err(n)` when `n > 1` sessions do (ambiguous). (Older ticks may
    /// be held for another order: they must not make this one ambiguous.)
    pub fn find(&self, seq: u64, not_before: i64) -> Result<Option<(Session, Tick)>, usize> {
        let mut found = None;
        let mut n = 0;
        // Each session's ring directly: a lookup by name per session made an order cost a hash per
        // session ever seen (tens of thousands in a garbage capture).
        for (session, s) in &self.sessions {
            if let Some(t) = s.tick(seq).filter(|t| t.time_ns >= not_before) {
                n += 1;
                found = Some((*session, t));
            }
        }
        if n > 1 { Err(n) } else { Ok(found) }
    }
}

/// One session's ring, for the copies of one packet ([`Arbiter::ring`]).
#[derive(Debug)]
pub struct Ring<'a> {
    s: &'a mut SessionTicks,
    max_slots: usize,
    /// [`Arbiter::stale_before`].
    stale_before: i64,
    stale: &'a mut u64,
    resets: &'a mut u64,
    /// [`Arbiter::spare_slots`].
    spare: &'a mut usize,
}

impl Ring<'_> {
    /// The most slots this ring may hold now: `max_slots`, within its room and what all rings may
    /// still grow by (a power of two: the ring's capacity is one).
    fn room(&self) -> usize {
        let cap = self.s.slots.len();
        let avail = cap.saturating_add(*self.spare);
        let pow = if avail == 0 { 0 } else { 1 << (usize::BITS - 1 - avail.leading_zeros()) };
        self.max_slots.min(pow.max(cap)).max(1)
    }

    /// [`SessionTicks::reserve`], taking what it grows by from the rings' spare slots.
    fn reserve(&mut self, len: usize, max: usize) {
        let before = self.s.slots.len();
        self.s.reserve(len, max);
        *self.spare = self.spare.saturating_sub(self.s.slots.len() - before);
    }

    /// Records a copy of `seq`, seen at `time_ns` on `feed` in the frame whose index ends in `frame`
    /// (its low 32 bits).
    #[inline(always)]
    pub fn observe(&mut self, seq: u64, feed: u16, locate: u16, time_ns: i64, frame: u32) -> Arrival {
        debug_assert_ne!(feed, UNSEEN, "at most MAX_FEEDS feeds");
        let s = &mut *self.s;
        let Some(idx) = seq.checked_sub(s.base) else {
            return self.below(seq, Slot { time_ns, frame, feed, locate });
        };
        let idx = idx as usize;
        // The common cases: the next sequence on the first feed (append), a copy of a known one. The
        // slot is written field by field: a `Slot` value built first went through the stack, and its
        // 16-byte reload could not be forwarded from the narrower stores (a stall per message).
        if idx < s.len {
            let slot = s.at_mut(idx);
            if slot.time_ns < self.stale_before {
                // Held for an order (see `Arbiter::hold`), but outside this copy's window.
                *self.stale += 1;
                Arrival::Stale
            } else if !slot.seen() {
                slot.set(time_ns, feed, locate, frame);
                Arrival::First
            } else if time_ns < slot.time_ns {
                // Captures from several taps are merged by time, so this only happens with clock skew
                // between inputs: the earlier copy still wins.
                let first_feed = slot.feed;
                let delay_ns = slot.time_ns.saturating_sub(time_ns);
                slot.set(time_ns, feed, locate, frame);
                Arrival::Later { delay_ns: -delay_ns, first_feed }
            } else {
                Arrival::Later { delay_ns: time_ns - slot.time_ns, first_feed: slot.feed }
            }
        } else if idx == s.len && s.len < s.slots.len() && s.len < self.max_slots {
            s.len += 1;
            s.at_mut(idx).set(time_ns, feed, locate, frame);
            Arrival::First
        } else {
            self.extend(idx, Slot { time_ns, frame, feed, locate });
            Arrival::First
        }
    }

    /// A sequence below the ring's first: new if the ring never moved on (the ring grows down to it,
    /// the sequences between marked missing), else too late to arbitrate.
    #[cold]
    fn below(&mut self, seq: u64, new: Slot) -> Arrival {
        let max = self.room();
        let k = self.s.base - seq;
        if self.s.base != self.s.first || self.s.restarted || k > max.saturating_sub(self.s.len) as u64 {
            *self.stale += 1;
            return Arrival::Stale;
        }
        let k = k as usize;
        self.reserve(self.s.len + k, max);
        let s = &mut *self.s;
        // `reserve` left room for `k` slots before the head.
        s.head = (s.head + s.slots.len() - k) & s.mask;
        (s.base, s.first, s.len) = (seq, seq, s.len + k);
        *s.at_mut(0) = new;
        for i in 1..k {
            *s.at_mut(i) = Slot::missing(new.time_ns);
        }
        Arrival::First
    }

    /// A sequence at `idx` past the ring's end: grow it (the sequences jumped over marked missing),
    /// forget the oldest beyond `max_slots`, or restart the ring at a jump too far to index (a new
    /// day, garbage).
    #[cold]
    fn extend(&mut self, mut idx: usize, new: Slot) {
        let max = self.room();
        let s = &mut *self.s;
        if idx >= max + s.len {
            s.clear(s.base + idx as u64);
            idx = 0;
            *self.resets += 1;
        }
        // Keep at most `max` slots: the oldest go first.
        while idx + 1 > max {
            s.pop_front();
            idx -= 1;
            (s.first, s.restarted) = (s.base, true);
        }
        self.reserve(idx + 1, max);
        let s = &mut *self.s;
        // The sequences jumped over are missing as of this copy's time.
        for i in s.len..idx {
            *s.at_mut(i) = Slot::missing(new.time_ns);
        }
        s.len = idx + 1;
        *s.at_mut(idx) = new;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Session = Session(*b"SESSION001");

    /// Sessions whose two packets lie far apart in sequence (garbage): each ring grew to `max_slots`
    /// (4 M slots, 64 MiB) and kept it, 64 sessions 4 GiB. All rings together now hold at most
    /// `TOTAL_SLOTS` (and a slot each for its newest tick); every message is still a first copy, and
    /// the ring of a session out of room restarts at such a jump (counted).
    #[test]
    fn all_rings_together_are_bounded() {
        let mut a = Arbiter::new(i64::MAX, 1 << 22);
        for n in 0..64u32 {
            let session = Session(*format!("S{n:09}").as_bytes().first_chunk().unwrap());
            for seq in [1, 4_190_000] {
                assert_eq!(a.observe(session, seq, 0, 1, 0), Arrival::First, "session {n}, seq {seq}");
            }
        }
        // (A ring out of room still holds its newest tick: one slot each beyond the total.)
        let held: usize = a.sessions.iter().map(|(_, s)| s.slots.len()).sum();
        assert!(held <= TOTAL_SLOTS + 64, "{held} slots");
        assert_eq!(a.spare_slots, 0);
        // Two rings of 4 M took the whole room; the other 62 restarted at their jump.
        assert_eq!(a.resets, 62);
    }

    /// A feed lagging at the start: sequences below the first one seen are new ticks while nothing
    /// has left the ring (the ring grows down to them, the sequences between missing), and too late
    /// once something has.
    #[test]
    fn a_sequence_below_the_first_is_new_until_the_ring_moves_on() {
        let mut a = Arbiter::new(1_000, 1 << 16);
        assert_eq!(a.observe(S, 10, 0, 5, 0), Arrival::First);
        assert_eq!(a.observe(S, 9, 1, 5, 100), Arrival::First);
        assert_eq!(a.observe(S, 10, 1, 5, 200), Arrival::Later { delay_ns: 200, first_feed: 0 });
        assert_eq!(a.observe(S, 9, 0, 5, 250), Arrival::Later { delay_ns: 150, first_feed: 1 });
        assert_eq!(a.observe(S, 6, 0, 5, 300), Arrival::First);
        assert_eq!(a.retained(S), 5, "6..=10, 7 and 8 missing");
        assert_eq!(a.get(S, 7), None);
        assert_eq!(a.observe(S, 7, 1, 5, 400), Arrival::First);
        assert_eq!(a.get(S, 6).map(|t| (t.time_ns, t.feed)), Some((300, 0)));
        assert_eq!(a.stale, 0);
        // At 1.301 µs, 6 (first copy at 300 ns) leaves the 1 µs window: a sequence below the ring is
        // then too late (it may be one seen before), whatever it is.
        assert_eq!(a.observe(S, 11, 0, 5, 1_301), Arrival::First);
        assert_eq!(a.observe(S, 5, 0, 5, 1_302), Arrival::Stale);
        assert_eq!(a.stale, 1);
    }

    /// `later_copies` says a packet's messages are all later copies of one packet exactly when
    /// observing each would return `Later` with one delay (not negative) and one other feed, and
    /// then observing them changes nothing. Packets of 1 to 4 messages on 3 feeds, overlapping at
    /// random, some stamped earlier than copies already seen, with a window and a slot limit small
    /// enough for ticks to leave and copies to be stale.
    #[test]
    fn later_copies_is_what_observing_each_copy_would_say() {
        let mut next = super::super::tests::lcg(0x2545_F491_4F6C_DD1D);
        let (mut some, mut none) = (0, 0);
        for retain in [50, 100_000] {
            let mut a = Arbiter::new(retain, 64);
            let mut t = 0i64;
            let mut top = 1000u64;
            for _ in 0..20_000 {
                t += next(20) as i64;
                let feed = next(3) as u16;
                let count = 1 + next(4) as u16;
                // Mostly near the newest sequence, sometimes a new one, now and then a stale one.
                let seq = match next(10) {
                    0 => top + 1,
                    1 => top.saturating_sub(100),
                    _ => top.saturating_sub(next(8)),
                };
                top = top.max(seq + u64::from(count) - 1);
                let at = t - [0, 0, 0, 5][next(4) as usize];
                let r = a.packet(S, seq, at);
                let said = a.later_copies(r, seq, count, feed, at);
                let before = format!("{a:?}");
                let mut b = a.clone();
                let each: Vec<Arrival> = (0..count).map(|i| b.observe_in(r, seq + u64::from(i), feed, 9, at)).collect();
                let all_later = match each[0] {
                    Arrival::Later { delay_ns, first_feed } if delay_ns >= 0 && first_feed != feed => {
                        each.iter().all(|&e| e == each[0]).then_some((delay_ns, first_feed))
                    }
                    _ => None,
                };
                assert_eq!(said, all_later, "seq {seq} x{count} on {feed} at {at}: {each:?}");
                if said.is_some() {
                    assert_eq!(format!("{b:?}"), before, "later copies change nothing");
                    some += 1;
                } else {
                    none += 1;
                }
                a = b;
            }
        }
        assert!(some > 1_000 && none > 1_000, "both cases met: {some} and {none}");
    }

    #[test]
    fn earliest_copy_wins_and_later_delay_is_reported() {
        let mut a = Arbiter::new(1_000_000_000, 1 << 16);
        assert_eq!(a.observe(S, 10, 0, 5, 1_000), Arrival::First);
        assert_eq!(a.observe(S, 10, 1, 5, 1_700), Arrival::Later { delay_ns: 700, first_feed: 0 });
        assert_eq!(a.observe(S, 11, 1, 5, 2_000), Arrival::First);
        assert_eq!(a.observe(S, 11, 0, 5, 2_050), Arrival::Later { delay_ns: 50, first_feed: 1 });
        assert_eq!(a.get(S, 10), Some(Tick { time_ns: 1_000, feed: 0, locate: 5, frame: 1_000 }));
        assert_eq!(a.get(S, 11).unwrap().feed, 1);
        assert_eq!(a.get(S, 12), None);
        assert_eq!(a.find(11, i64::MIN), Ok(Some((S, Tick { time_ns: 2_000, feed: 1, locate: 5, frame: 2_000 }))));
        let other = Session(*b"SESSION002");
        a.observe(other, 11, 0, 0, 3_000);
        assert_eq!(a.find(11, i64::MIN), Err(2));
        // Only ticks first copied at or after `not_before` count: an older one (kept for an order held
        // elsewhere) neither matches nor makes the match ambiguous.
        assert_eq!(a.find(11, 2_500).map(|f| f.map(|(s, t)| (s, t.time_ns))), Ok(Some((other, 3_000))));
        assert_eq!(a.find(11, 3_001), Ok(None));
    }

    /// A hold that nothing ends (an order's stream went quiet holding bytes) reaches back at most
    /// `max_ns` from the latest packet: the ring keeps that and the window, not every tick since.
    #[test]
    fn a_hold_reaches_back_at_most_its_bound() {
        const MS: i64 = 1_000_000;
        let mut a = Arbiter::new(100 * MS, 1 << 22);
        a.hold(0, 1_000 * MS);
        // 10 s of ticks, one per ms.
        for k in 0..10_000u64 {
            a.observe(S, k, 0, 0, k as i64 * MS);
        }
        // From 9.999 s - 1 s (the bound) - 100 ms (the window): 1,100 ticks (a few more at the edges).
        let kept = a.retained(S);
        assert!((1_100..=1_102).contains(&kept), "{kept}");
    }

    #[test]
    fn window_and_bounds() {
        let mut a = Arbiter::new(1_000, 4);
        for seq in 0..10u64 {
            a.observe(S, seq, 0, 0, seq as i64 * 100);
        }
        // Only the last 4 sequence numbers are kept (slot bound).
        assert_eq!(a.get(S, 5), None);
        assert!(a.get(S, 6).is_some() && a.get(S, 9).is_some());
        assert_eq!(a.observe(S, 2, 1, 0, 1_000), Arrival::Stale);
        assert_eq!(a.stale, 1);
        // Time window: a tick 2 µs later evicts everything older than 1 µs before it.
        a.observe(S, 10, 0, 0, 3_000);
        assert_eq!(a.get(S, 9), None);
        assert!(a.get(S, 10).is_some());
        // A jump far ahead restarts the ring instead of allocating the gap.
        a.observe(S, 1_000_000_000, 0, 0, 3_100);
        assert_eq!(a.resets, 1);
        assert!(a.get(S, 1_000_000_000).is_some());
    }

    #[test]
    fn every_copy_of_a_packet_is_judged_against_the_same_window() {
        let mut a = Arbiter::new(1_000, 1 << 16);
        let p = a.packet(S, 10, 0);
        for seq in 10..14 {
            assert_eq!(a.observe_in(p, seq, 0, 0, 0), Arrival::First);
        }
        // The B copy of that packet comes 5 us later, past the 1 us window: every message is stale,
        // not just the ones after the first (the window is applied once, before the packet).
        let p = a.packet(S, 10, 5_000);
        for seq in 10..14 {
            assert_eq!(a.observe_in(p, seq, 1, 0, 5_000), Arrival::Stale);
        }
        assert_eq!(a.stale, 4);
        // A copy exactly at the window's edge still arbitrates.
        let p = a.packet(S, 14, 6_000);
        assert_eq!(a.observe_in(p, 14, 0, 0, 6_000), Arrival::First);
        let p = a.packet(S, 14, 7_000);
        assert_eq!(a.observe_in(p, 14, 1, 0, 7_000), Arrival::Later { delay_ns: 1_000, first_feed: 0 });
    }

    /// While an order to come may start at 500 ns, ticks from `retain` before it stay (an order held
    /// behind a TCP hole finds them), yet copies are judged against their own packet's window as
    /// without the hold: a later copy, or the first copy of a sequence found missing, more than the
    /// window after is stale, and `later_copies` leaves them to `observe`. Without the hold they
    /// leave as before.
    #[test]
    fn ticks_are_held_for_an_order_yet_copies_keep_their_window() {
        let mut a = Arbiter::new(1_000, 1 << 16);
        a.hold(500, i64::MAX);
        // Sequence 0 at 0 and 2 at 100 on feed 0 (1 found missing at 100), then 3 at 5 us.
        assert_eq!(a.observe(S, 0, 0, 0, 0), Arrival::First);
        assert_eq!(a.observe(S, 2, 0, 0, 100), Arrival::First);
        assert_eq!(a.observe(S, 3, 0, 0, 5_000), Arrival::First);
        // Held: 0 and 2 are still found (from 1 us before the hold at 500 ns on).
        assert_eq!(a.get(S, 0).map(|t| t.time_ns), Some(0));
        assert_eq!(a.get(S, 2).map(|t| t.time_ns), Some(100));
        // Feed 1's copies at 5.05 us: of 0, 1 and 2, too late (more than 1 us after); of 3, in time.
        let r = a.packet(S, 0, 5_050);
        assert_eq!(a.later_copies(r, 2, 1, 1, 5_050), None);
        assert_eq!(a.observe_in(r, 0, 1, 0, 5_050), Arrival::Stale);
        assert_eq!(a.observe_in(r, 1, 1, 0, 5_050), Arrival::Stale);
        assert_eq!(a.observe_in(r, 2, 1, 0, 5_050), Arrival::Stale);
        assert_eq!(a.later_copies(r, 3, 1, 1, 5_050), Some((50, 0)));
        assert_eq!(a.observe_in(r, 3, 1, 0, 5_050), Arrival::Later { delay_ns: 50, first_feed: 0 });
        assert_eq!(a.stale, 3);
        // The hold ends: the next packet's window lets 0..=2 go.
        a.hold(i64::MAX, i64::MAX);
        a.packet(S, 4, 5_100);
        assert_eq!((a.get(S, 0), a.get(S, 2)), (None, None));
        assert!(a.get(S, 3).is_some());
    }

    #[test]
    fn the_ring_wraps_and_grows_without_losing_a_tick() {
        // 100 slots at most (capacity 128 once grown past 64); A then B copy of each sequence, with
        // a gap every 7th sequence that only B fills.
        let mut a = Arbiter::new(i64::MAX / 2, 100);
        for seq in 0..1_000u64 {
            let t = seq as i64 * 10;
            if seq % 7 != 0 {
                assert_eq!(a.observe(S, seq, 0, seq as u16, t), Arrival::First, "seq {seq}");
                assert_eq!(a.observe(S, seq, 1, seq as u16, t + 3), Arrival::Later { delay_ns: 3, first_feed: 0 });
            } else {
                assert_eq!(a.observe(S, seq, 1, seq as u16, t + 3), Arrival::First, "seq {seq}");
            }
        }
        for seq in 900..1_000u64 {
            let feed = if seq % 7 != 0 { 0 } else { 1 };
            let time_ns = seq as i64 * 10 + 3 * i64::from(feed);
            assert_eq!(
                a.get(S, seq),
                Some(Tick { time_ns, feed, locate: seq as u16, frame: time_ns as u32 }),
                "seq {seq}"
            );
        }
        assert_eq!(a.get(S, 899), None);
        assert_eq!(a.observe(S, 899, 0, 0, 10_000), Arrival::Stale);
        // A jump within reach keeps the ring (gaps as empty slots); one beyond it restarts it.
        assert_eq!(a.observe(S, 1_050, 0, 0, 10_000), Arrival::First);
        assert_eq!((a.get(S, 1_000), a.get(S, 1_049), a.resets), (None, None, 0));
        // The bound of 100 slots pushed out 900..=950.
        assert_eq!(
            (a.get(S, 950), a.get(S, 951).map(|t| t.time_ns), a.get(S, 999).map(|t| t.time_ns)),
            (None, Some(9_510), Some(9_990))
        );
        assert_eq!(a.observe(S, 1_300, 0, 0, 10_000), Arrival::First);
        assert_eq!((a.resets, a.get(S, 1_050)), (1, None));
        assert!(a.get(S, 1_300).is_some());
    }

    #[test]
    fn a_sequence_lost_on_every_feed_leaves_the_window_like_the_others() {
        // 1 us window, one tick every 10 ns on both feeds, sequence 50 lost on both. The ring must
        // keep holding about 100 ticks: the lost sequence must not hold it open (it used to stop the
        // eviction, so the ring grew to its bound and kept ticks older than the window).
        let mut a = Arbiter::new(1_000, 1 << 20);
        for seq in 0..1_000u64 {
            if seq == 50 {
                continue;
            }
            let t = seq as i64 * 10;
            assert_eq!(a.observe(S, seq, 0, 0, t), Arrival::First);
            assert_eq!(a.observe(S, seq, 1, 0, t + 2), Arrival::Later { delay_ns: 2, first_feed: 0 });
        }
        assert!(a.retained(S) <= 102, "{} slots retained", a.retained(S));
        assert_eq!(a.get(S, 100), None, "older than the window");
        assert!(a.get(S, 950).is_some());
        // A copy of the lost sequence now is far more than the window behind: stale.
        assert_eq!(a.observe(S, 50, 1, 0, 10_000), Arrival::Stale);

        // Within the window, a late copy of a sequence found missing is its first copy.
        let mut a = Arbiter::new(1_000, 1 << 20);
        assert_eq!(a.observe(S, 1, 0, 0, 0), Arrival::First);
        assert_eq!(a.observe(S, 3, 0, 0, 100), Arrival::First);
        assert_eq!(a.get(S, 2), None);
        assert_eq!(a.observe(S, 2, 1, 0, 900), Arrival::First);
        assert_eq!(a.get(S, 2).map(|t| (t.time_ns, t.feed)), Some((900, 1)));
        // Found missing at 100: past 1,100 it has left the window (and so have 1 and 2).
        assert_eq!(a.observe(S, 5, 0, 0, 1_150), Arrival::First);
        assert_eq!(a.observe(S, 4, 1, 0, 1_160), Arrival::First, "found missing at 1,150: still in the window");
        assert_eq!((a.get(S, 1), a.get(S, 3).map(|t| t.time_ns)), (None, Some(100)));
    }

    #[test]
    fn the_ring_grows_in_place_while_wrapped() {
        // A 1 us window: sequences 0..60 at 10 ns apart, then at 1,300 ns the window has dropped the
        // first 40 (the ring's head has moved on), then a burst of 200 at once wraps the 64-slot ring
        // and grows it twice with its head in the middle. Every retained tick must keep its time.
        let mut a = Arbiter::new(1_000, 1 << 20);
        for seq in 0..60u64 {
            assert_eq!(a.observe(S, seq, 0, seq as u16, seq as i64 * 10), Arrival::First);
        }
        for seq in 60..260u64 {
            assert_eq!(a.observe(S, seq, 0, seq as u16, 1_300), Arrival::First);
        }
        // 1,300 - 1,000 = 300: sequences 0..30 are older than the window.
        assert_eq!(a.retained(S), 230);
        for seq in 30..260u64 {
            let time_ns = if seq < 60 { seq as i64 * 10 } else { 1_300 };
            assert_eq!(
                a.get(S, seq),
                Some(Tick { time_ns, feed: 0, locate: seq as u16, frame: time_ns as u32 }),
                "seq {seq}"
            );
            assert_eq!(a.observe(S, seq, 1, 0, 1_300), Arrival::Later { delay_ns: 1_300 - time_ns, first_feed: 0 });
        }
        assert_eq!(a.get(S, 29), None);
    }

    /// The arbiter's rules restated over a plain `VecDeque` (no power-of-two ring, no wrap, no
    /// growth), to check the ring's mechanics against: one session, slots from `base`.
    struct Model {
        retain_ns: i64,
        max: usize,
        base: u64,
        /// (time, feed, locate, seen): unseen slots hold the time they were found missing.
        slots: std::collections::VecDeque<(i64, u16, u16, bool)>,
        started: bool,
        stale: u64,
        resets: u64,
    }

    impl Model {
        fn packet(&mut self, seq: u64, t: i64) {
            if !self.started {
                (self.started, self.base) = (true, seq);
            }
            let horizon = t.saturating_sub(self.retain_ns);
            while self.slots.front().is_some_and(|s| s.0 < horizon) {
                self.slots.pop_front();
                self.base += 1;
            }
        }

        fn observe(&mut self, seq: u64, feed: u16, locate: u16, t: i64) -> Arrival {
            if seq < self.base {
                self.stale += 1;
                return Arrival::Stale;
            }
            let mut idx = (seq - self.base) as usize;
            if idx >= self.max + self.slots.len() {
                self.slots.clear();
                (self.base, idx) = (seq, 0);
                self.resets += 1;
            }
            if idx >= self.slots.len() {
                while self.slots.len() < idx {
                    self.slots.push_back((t, 0, 0, false));
                }
                self.slots.push_back((t, feed, locate, true));
                while self.slots.len() > self.max {
                    self.slots.pop_front();
                    self.base += 1;
                }
                return Arrival::First;
            }
            let slot = &mut self.slots[idx];
            if !slot.3 {
                *slot = (t, feed, locate, true);
                Arrival::First
            } else if t < slot.0 {
                let a = Arrival::Later { delay_ns: t - slot.0, first_feed: slot.1 };
                *slot = (t, feed, locate, true);
                a
            } else {
                Arrival::Later { delay_ns: t - slot.0, first_feed: slot.1 }
            }
        }

        fn get(&self, seq: u64) -> Option<Tick> {
            let s = self.slots.get(usize::try_from(seq.checked_sub(self.base)?).ok()?)?;
            s.3.then_some(Tick { time_ns: s.0, feed: s.1, locate: s.2, frame: s.0 as u32 })
        }
    }

    #[test]
    fn the_ring_agrees_with_a_plain_model_on_random_feeds() {
        // Two feeds racing over one session: packets of 1-4 messages, each feed losing, repeating
        // and reordering some, gaps on both, jumps far ahead (a reset) and back, clock skew
        // between the copies. Small bounds and windows, so that eviction, wrap-around, growth in
        // place and the slot bound all happen many times.
        let mut rng = wirestamp_testdata::Rng(0x0005_EED0_FA11);
        for (max, retain) in [(37, 400), (64, 1_000), (100, 5_000), (1 << 12, 300), (1 << 12, 50_000)] {
            let mut a = Arbiter::new(retain, max);
            let mut m = Model {
                retain_ns: retain,
                max,
                base: 0,
                slots: Default::default(),
                started: false,
                stale: 0,
                resets: 0,
            };
            let (mut next, mut t) = (1_000u64, 1_000_000i64);
            for step in 0..40_000 {
                let n = 1 + rng.below(4) as u64;
                let first = match rng.below(200) {
                    0 => next + 10 * max as u64,                         // a jump past the ring's reach
                    1 => next.saturating_sub(rng.below(3 * max) as u64), // an old packet again
                    2..=5 => next + 1 + rng.below(6) as u64,             // a gap
                    _ => next,
                };
                next = next.max(first + n);
                t += rng.below(30) as i64;
                for feed in [0u16, 1] {
                    if rng.below(10) == 0 {
                        continue; // lost on this feed
                    }
                    let tc = t + rng.below(40) as i64 - 10; // either copy may be first
                    let r = a.packet(S, first, tc);
                    m.packet(first, tc);
                    for seq in first..first + n {
                        let locate = (seq % 1_000) as u16;
                        let want = m.observe(seq, feed, locate, tc);
                        assert_eq!(a.observe_in(r, seq, feed, locate, tc), want, "max {max} step {step} seq {seq}");
                    }
                }
                if step % 97 == 0 {
                    for seq in next.saturating_sub(2 * max as u64)..next {
                        assert_eq!(a.get(S, seq), m.get(seq), "max {max} step {step} get {seq}");
                    }
                    assert_eq!(a.retained(S), m.slots.len(), "max {max} step {step}");
                }
            }
            assert_eq!((a.stale, a.resets), (m.stale, m.resets), "max {max}");
            assert!(m.resets > 0 && m.stale > 0, "the walk reached the rare paths (max {max})");
        }
    }
}
