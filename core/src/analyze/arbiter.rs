//! A/B feed arbitration and the tick index.
//!
//! The same (session, sequence) seen on several feeds is one tick, timed by its earliest copy; every
//! later copy's delay is reported. The index keeps each session's recent ticks in a ring addressed by
//! sequence number, so a lookup by sequence (an order token carrying it) is O(1), and memory is bounded
//! by the retention window, not by the capture length.

use crate::fxhash::FxHashMap;
use crate::proto::moldudp64::Session;
use std::collections::VecDeque;

/// The first copy of a tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tick {
    /// Capture time of the earliest copy, ns.
    pub time_ns: i64,
    /// Feed index (in the analyzer's feed table) of the earliest copy.
    pub feed: u16,
    /// Stock locate of the message (0 when unknown).
    pub locate: u16,
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

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// `i64::MIN`: not seen.
    time_ns: i64,
    feed: u16,
    locate: u16,
}

const EMPTY: Slot = Slot { time_ns: i64::MIN, feed: 0, locate: 0 };

#[derive(Debug, Default)]
struct SessionTicks {
    /// Sequence number of `slots[0]`.
    base: u64,
    slots: VecDeque<Slot>,
}

/// Arbitration state for every session.
#[derive(Debug)]
pub struct Arbiter {
    /// Sessions in order of first appearance.
    sessions: Vec<(Session, SessionTicks)>,
    index: FxHashMap<Session, usize>,
    /// The session of the previous call: a feed has one session at a time, so this nearly always hits.
    last: usize,
    retain_ns: i64,
    max_slots: usize,
    /// Copies older than the window.
    pub stale: u64,
    /// Sequence jumps too large to index (the ring restarted there).
    pub resets: u64,
}

impl Arbiter {
    /// An arbiter keeping ticks for `retain_ns` of capture time, and at most `max_slots` per session.
    pub fn new(retain_ns: i64, max_slots: usize) -> Self {
        Arbiter {
            sessions: Vec::new(),
            index: FxHashMap::default(),
            last: usize::MAX,
            retain_ns,
            max_slots: max_slots.max(1),
            stale: 0,
            resets: 0,
        }
    }

    #[inline]
    fn session_mut(&mut self, session: Session, seq: u64) -> &mut SessionTicks {
        let i = match self.sessions.get(self.last) {
            Some((s, _)) if *s == session => self.last,
            _ => match self.index.get(&session) {
                Some(&i) => i,
                None => {
                    self.sessions.push((session, SessionTicks { base: seq, slots: VecDeque::new() }));
                    self.index.insert(session, self.sessions.len() - 1);
                    self.sessions.len() - 1
                }
            },
        };
        self.last = i;
        &mut self.sessions[i].1
    }

    /// Records a copy of `(session, seq)` seen at `time_ns` on `feed`.
    #[inline]
    pub fn observe(&mut self, session: Session, seq: u64, feed: u16, locate: u16, time_ns: i64) -> Arrival {
        let (max_slots, retain_ns) = (self.max_slots, self.retain_ns);
        let s = self.session_mut(session, seq);
        if seq < s.base {
            self.stale += 1;
            return Arrival::Stale;
        }
        let mut idx = (seq - s.base) as usize;
        let mut reset = false;
        if idx >= max_slots + s.slots.len() {
            // A jump far beyond the ring (a new day, garbage): start over at this sequence.
            s.slots.clear();
            s.base = seq;
            idx = 0;
            reset = true;
        }
        let new = Slot { time_ns, feed, locate };
        // One test decides both "grow the ring" and "first copy" for a new sequence number: which
        // copy comes first is as random as the feeds' race, so each such branch mispredicts often.
        let arrival = if idx >= s.slots.len() {
            if idx > s.slots.len() || s.slots.len() == s.slots.capacity() {
                // Grow by doubling, but never past the bound (+1: the ring briefly holds one more
                // before evicting): a full ring of 2^22 ticks is 64 MiB, and doubling would reserve 128.
                let need = idx + 1 - s.slots.len();
                let cap = s.slots.capacity();
                if s.slots.len() + need > cap {
                    let want = (cap * 2).max(s.slots.len() + need).max(64).min(max_slots + 1);
                    s.slots.reserve_exact(want.max(s.slots.len() + need) - s.slots.len());
                }
                s.slots.resize(idx, EMPTY);
            }
            s.slots.push_back(new);
            Arrival::First
        } else {
            let slot = &mut s.slots[idx];
            if slot.time_ns == i64::MIN {
                *slot = new;
                Arrival::First
            } else if time_ns < slot.time_ns {
                // Captures from several taps are merged by time, so this only happens with clock skew
                // between inputs: the earlier copy still wins.
                let first_feed = slot.feed;
                let delay_ns = slot.time_ns - time_ns;
                *slot = new;
                Arrival::Later { delay_ns: -delay_ns, first_feed }
            } else {
                Arrival::Later { delay_ns: time_ns - slot.time_ns, first_feed: slot.feed }
            }
        };
        // Evict what is older than the window, and bound the ring.
        let horizon = time_ns - retain_ns;
        while let Some(front) = s.slots.front() {
            let old = front.time_ns != i64::MIN && front.time_ns < horizon;
            if !(old || s.slots.len() > max_slots) {
                break;
            }
            s.slots.pop_front();
            s.base += 1;
        }
        self.resets += u64::from(reset);
        arrival
    }

    /// The tick `(session, seq)`, if still retained.
    pub fn get(&self, session: Session, seq: u64) -> Option<Tick> {
        let s = match self.sessions.get(self.last) {
            Some((k, s)) if *k == session => s,
            _ => &self.sessions[*self.index.get(&session)?].1,
        };
        let idx = seq.checked_sub(s.base)? as usize;
        let slot = s.slots.get(idx)?;
        (slot.time_ns != i64::MIN).then_some(Tick { time_ns: slot.time_ns, feed: slot.feed, locate: slot.locate })
    }

    /// The tick with sequence `seq` in whichever session has it: `Ok(None)` when none does,
    /// `Err(n)` when `n > 1` sessions do (ambiguous).
    pub fn find(&self, seq: u64) -> Result<Option<(Session, Tick)>, usize> {
        let mut found = None;
        let mut n = 0;
        for &(session, _) in self.sessions.iter() {
            if let Some(t) = self.get(session, seq) {
                n += 1;
                found = Some((session, t));
            }
        }
        if n > 1 { Err(n) } else { Ok(found) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Session = Session(*b"SESSION001");

    #[test]
    fn earliest_copy_wins_and_later_delay_is_reported() {
        let mut a = Arbiter::new(1_000_000_000, 1 << 16);
        assert_eq!(a.observe(S, 10, 0, 5, 1_000), Arrival::First);
        assert_eq!(a.observe(S, 10, 1, 5, 1_700), Arrival::Later { delay_ns: 700, first_feed: 0 });
        assert_eq!(a.observe(S, 11, 1, 5, 2_000), Arrival::First);
        assert_eq!(a.observe(S, 11, 0, 5, 2_050), Arrival::Later { delay_ns: 50, first_feed: 1 });
        assert_eq!(a.get(S, 10), Some(Tick { time_ns: 1_000, feed: 0, locate: 5 }));
        assert_eq!(a.get(S, 11).unwrap().feed, 1);
        assert_eq!(a.get(S, 12), None);
        assert_eq!(a.find(11), Ok(Some((S, Tick { time_ns: 2_000, feed: 1, locate: 5 }))));
        let other = Session(*b"SESSION002");
        a.observe(other, 11, 0, 0, 3_000);
        assert_eq!(a.find(11), Err(2));
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
}
