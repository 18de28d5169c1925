//! The frames of several AF_PACKET rings (one per interface) in time order.
//!
//! A TPACKET_V3 ring hands user space whole blocks: a block is retired when full or when its retire
//! timer (`RingConfig::retire_ms`) expires, so one interface's frames can be visible while another's,
//! stamped earlier, still sit in a block the kernel owns. Taking the rings in turn wrote frames up to
//! a retire time out of order, which a reader then sees as reordering (and tick-to-trade under the
//! symbol rule as a missed trigger).
//!
//! The merge takes the earliest head while every ring has a frame visible: a frame still held by the
//! kernel comes after its ring's visible head. When some ring has none, it waits: a frame that had
//! arrived by the time the wait began is visible once a retire time (and some slack) has passed. So
//! it notes what each ring had visible when it began to wait (an epoch) and, once settled, releases
//! those frames in time order with whatever the other rings show by then.

use super::ring::AfPacket;
use std::time::{Duration, Instant};

/// What to do next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// Take the next frame of this ring.
    Ring(usize),
    /// Some ring shows nothing yet: wait for it at most this long.
    Wait(Duration),
    /// No ring has a frame visible.
    Idle,
}

/// See the module documentation.
#[derive(Debug)]
pub struct RingMerge {
    settle: Duration,
    /// When the wait began, and what each ring had visible then.
    epoch: Option<(Instant, Vec<u64>)>,
    /// Frames per ring that may be taken without waiting (a settled epoch's, or all visible at a stop).
    safe: Vec<u64>,
}

impl RingMerge {
    /// For `rings` rings whose blocks retire after `retire_ms`.
    pub fn new(rings: usize, retire_ms: u32) -> RingMerge {
        // Twice the timer, plus 10 ms: the kernel's timer runs in jiffies and may fire late.
        let settle = Duration::from_millis(2 * u64::from(retire_ms) + 10);
        RingMerge { settle, epoch: None, safe: vec![0; rings] }
    }

    /// The next step over `rings` at `now`.
    pub fn pick(&mut self, rings: &mut [AfPacket], now: Instant) -> Pick {
        let heads: Vec<Option<i64>> = rings.iter_mut().map(AfPacket::head_time).collect();
        self.decide(&heads, |i| rings[i].visible(), now)
    }

    /// Lets every frame visible now be taken without waiting (at a stop: what the rings show is
    /// written, in time order). Returns whether there is any.
    pub fn flush(&mut self, rings: &[AfPacket]) -> bool {
        self.epoch = None;
        self.safe = rings.iter().map(AfPacket::visible).collect();
        self.safe.iter().any(|&n| n > 0)
    }

    /// Frames [`RingMerge::flush`] let through that are still to be taken.
    pub fn flushing(&self) -> bool {
        self.safe.iter().any(|&n| n > 0)
    }

    /// [`RingMerge::pick`] given each ring's head time and visible frames.
    pub fn decide(&mut self, heads: &[Option<i64>], visible: impl Fn(usize) -> u64, now: Instant) -> Pick {
        // The earliest head; of equal times, the first ring's.
        let Some((_, i)) = heads.iter().enumerate().filter_map(|(i, h)| h.map(|t| (t, i))).min() else {
            self.epoch = None;
            return Pick::Idle;
        };
        if heads.iter().all(Option::is_some) || self.safe.iter().any(|&n| n > 0) {
            return self.take(i);
        }
        if let Some((began, seen)) = &mut self.epoch {
            let waited = now.duration_since(*began);
            if waited < self.settle {
                return Pick::Wait(self.settle - waited);
            }
            // Settled: what was visible when the wait began (and is not taken yet) may go.
            self.safe = std::mem::take(seen);
            self.epoch = None;
            if self.safe.iter().any(|&n| n > 0) {
                return self.take(i);
            }
        }
        self.epoch = Some((now, (0..heads.len()).map(visible).collect()));
        Pick::Wait(self.settle)
    }

    fn take(&mut self, i: usize) -> Pick {
        // A ring's frames come in order: those counted first are the first taken.
        if let Some(n) = self.safe.get_mut(i) {
            *n = n.saturating_sub(1);
        }
        if let Some((_, seen)) = &mut self.epoch
            && let Some(n) = seen.get_mut(i)
        {
            *n = n.saturating_sub(1);
        }
        Pick::Ring(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_earliest_head_is_taken_while_every_ring_shows_one() {
        let mut m = RingMerge::new(3, 10);
        let now = Instant::now();
        assert_eq!(m.decide(&[Some(30), Some(10), Some(20)], |_| 1, now), Pick::Ring(1));
        // Equal times: the first ring's.
        assert_eq!(m.decide(&[Some(10), Some(10), Some(20)], |_| 1, now), Pick::Ring(0));
        assert_eq!(m.decide(&[None, None, None], |_| 0, now), Pick::Idle);
    }

    #[test]
    fn with_a_ring_empty_what_was_visible_waits_a_retire_time_then_goes_in_time_order() {
        // Settle: 2 x 10 + 10 = 30 ms.
        let mut m = RingMerge::new(2, 10);
        let t0 = Instant::now();
        // Ring 0 shows 2 frames, ring 1 none: wait.
        assert_eq!(m.decide(&[Some(100), None], |i| [2, 0][i], t0), Pick::Wait(30 * MS));
        assert_eq!(m.decide(&[Some(100), None], |i| [3, 0][i], t0 + 10 * MS), Pick::Wait(20 * MS));
        // Settled, ring 1 now shows a frame stamped earlier (its block retired): it goes first,
        // then ring 0's two frames seen when the wait began, while ring 1 shows nothing more.
        assert_eq!(m.decide(&[Some(100), Some(90)], |i| [3, 1][i], t0 + 30 * MS), Pick::Ring(1));
        assert_eq!(m.decide(&[Some(100), None], |i| [3, 0][i], t0 + 30 * MS), Pick::Ring(0));
        assert_eq!(m.decide(&[Some(101), None], |i| [2, 0][i], t0 + 30 * MS), Pick::Ring(0));
        // The third arrived during the wait: a new one begins.
        assert_eq!(m.decide(&[Some(102), None], |i| [1, 0][i], t0 + 30 * MS), Pick::Wait(30 * MS));
    }

    #[test]
    fn once_settled_the_frames_seen_at_the_wait_go_and_the_next_wait_begins() {
        let mut m = RingMerge::new(2, 10);
        let t0 = Instant::now();
        assert_eq!(m.decide(&[Some(100), None], |i| [2, 0][i], t0), Pick::Wait(30 * MS));
        let t1 = t0 + 31 * MS;
        // The two frames seen, then a third (arrived during the wait) waits for the next epoch.
        assert_eq!(m.decide(&[Some(100), None], |i| [3, 0][i], t1), Pick::Ring(0));
        assert_eq!(m.decide(&[Some(101), None], |i| [2, 0][i], t1), Pick::Ring(0));
        assert_eq!(m.decide(&[Some(102), None], |i| [1, 0][i], t1), Pick::Wait(30 * MS));
    }

    #[test]
    fn frames_taken_while_every_ring_showed_one_leave_the_epoch() {
        let mut m = RingMerge::new(2, 10);
        let t0 = Instant::now();
        assert_eq!(m.decide(&[Some(100), None], |i| [2, 0][i], t0), Pick::Wait(30 * MS));
        // Ring 1 shows a frame: free merging takes ring 0's 100 (one of the two seen) and then 105.
        assert_eq!(m.decide(&[Some(100), Some(105)], |_| 1, t0 + MS), Pick::Ring(0));
        assert_eq!(m.decide(&[Some(101), Some(105)], |_| 1, t0 + MS), Pick::Ring(0));
        // Ring 0 shows nothing now (it may hold one before 105): wait.
        assert_eq!(m.decide(&[None, Some(105)], |i| [0, 1][i], t0 + MS), Pick::Wait(29 * MS));
        assert_eq!(m.decide(&[Some(110), Some(105)], |_| 1, t0 + 40 * MS), Pick::Ring(1));
        // Settled, but the two seen have gone: a new frame of ring 0 waits for a new epoch.
        assert_eq!(m.decide(&[Some(110), None], |i| [1, 0][i], t0 + 40 * MS), Pick::Wait(30 * MS));
    }
}
