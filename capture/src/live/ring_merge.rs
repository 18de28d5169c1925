//! The frames of several AF_PACKET rings (one per interface) in time order.
//!
//! A TPACKET_V3 ring hands user space whole blocks: a block is retired when full or when its retire
//! timer (`RingConfig::retire_ms`) expires, so one interface's frames can be visible while another's,
//! stamped earlier, still sit in a block the kernel owns. Taking the rings in turn wrote frames up to
//! a retire time out of order, which a reader then sees as reordering (and tick-to-trade under the
//! symbol rule as a missed trigger).
//!
//! Every frame a ring shows is copied out at once (its block goes back to the kernel: holding blocks
//! for the wait below made small rings drop), into that ring's queue. The merge takes the earliest
//! queued frame while every queue holds one: a frame still in the kernel comes after its ring's
//! queued ones. When some queue is empty, it waits: a frame that had arrived by the time the wait
//! began is visible once a retire time (and some slack) has passed. So it notes what each queue held
//! when it began to wait (an epoch) and, once settled, releases those frames in time order with
//! whatever the other rings show by then. The queues hold at most `cap` bytes: past that, frames go
//! in time order without waiting (counted: `forced`).
//!
//! Each interface's stamps must come from comparable clocks (the system clock, or PHCs that ptp4l
//! keeps on it): the merge orders by them.

use super::error::LiveError;
use super::ring::AfPacket;
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use wirestamp_core::{Frame, OwnedFrame};

/// What [`RingMerge::next`] found.
#[derive(Debug)]
pub enum Step<'a> {
    /// The next frame in time order.
    Frame(Frame<'a>),
    /// Some ring shows nothing yet: wait for it at most this long.
    Wait(Duration),
    /// No ring has a frame.
    Idle,
}

/// What to do next ([`RingMerge::decide`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Pick {
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
    /// When the wait began, and what each queue held then.
    epoch: Option<(Instant, Vec<u64>)>,
    /// Frames per queue that may be taken without waiting (a settled epoch's, or all held at a stop).
    safe: Vec<u64>,
    queues: Vec<VecDeque<OwnedFrame>>,
    /// Buffers of frames written, for the next copies.
    pool: Vec<Vec<u8>>,
    /// The frame last returned (its buffer goes back to the pool at the next call).
    out: Option<OwnedFrame>,
    held_bytes: usize,
    cap: usize,
    /// Each queue's first frame's time, rebuilt at each step (kept: no allocation per frame).
    heads: Vec<Option<i64>>,
    /// Frames taken without waiting because the queues were full.
    pub forced: u64,
}

impl RingMerge {
    /// For `rings` rings whose blocks retire after `retire_ms`, the queues holding at most `cap` bytes.
    pub fn new(rings: usize, retire_ms: u32, cap: usize) -> RingMerge {
        // Twice the timer, plus 10 ms: the kernel's timer runs in jiffies and may fire late.
        let settle = Duration::from_millis(2 * u64::from(retire_ms) + 10);
        RingMerge {
            settle,
            epoch: None,
            safe: vec![0; rings],
            queues: (0..rings).map(|_| VecDeque::new()).collect(),
            pool: Vec::new(),
            out: None,
            held_bytes: 0,
            cap,
            heads: Vec::with_capacity(rings),
            forced: 0,
        }
    }

    /// How long a ring showing nothing is waited for: frames may be out of time order by this much
    /// when the queues are full ([`RingMerge::forced`]).
    pub fn settle(&self) -> Duration {
        self.settle
    }

    /// The next frame of `rings` in time order at `now`, if it may go now.
    pub fn next(&mut self, rings: &mut [AfPacket], now: Instant) -> Result<Step<'_>, LiveError> {
        if let Some(done) = self.out.take() {
            self.held_bytes -= done.data.len();
            self.pool.push(done.data);
        }
        self.pull(rings)?;
        let mut heads = std::mem::take(&mut self.heads);
        heads.clear();
        heads.extend(self.queues.iter().map(|q| q.front().map(|h| h.meta.ts_ns)));
        let full = self.held_bytes >= self.cap;
        let pick = if full && heads.iter().any(Option::is_some) {
            // Full: the earliest goes without waiting for the rings that show nothing.
            self.forced += 1;
            heads
                .iter()
                .enumerate()
                .filter_map(|(i, h)| h.map(|t| (t, i)))
                .min()
                .map_or(Pick::Idle, |(_, i)| self.take(i))
        } else {
            // Out for the call (a move, not a copy): `decide` reads their lengths only when a wait begins.
            let queues = std::mem::take(&mut self.queues);
            let pick = self.decide(&heads, |i| queues[i].len() as u64, now);
            self.queues = queues;
            pick
        };
        self.heads = heads;
        Ok(match pick {
            Pick::Ring(i) => {
                self.out = self.queues[i].pop_front();
                match &self.out {
                    Some(h) => Step::Frame(h.frame()),
                    None => Step::Idle,
                }
            }
            Pick::Wait(d) => Step::Wait(d),
            Pick::Idle => Step::Idle,
        })
    }

    /// Copies every frame the rings show into their queues (up to `cap`), giving their blocks back.
    fn pull(&mut self, rings: &mut [AfPacket]) -> Result<(), LiveError> {
        for (ring, q) in rings.iter_mut().zip(&mut self.queues) {
            while self.held_bytes < self.cap && ring.ready() {
                let Some(f) = ring.next_frame(Duration::ZERO)? else { break };
                let copy = OwnedFrame::copy_of(&f, self.pool.pop().unwrap_or_default());
                self.held_bytes += copy.data.len();
                q.push_back(copy);
            }
            ring.release_consumed();
        }
        Ok(())
    }

    /// Frames copied out of the rings and not taken yet (left at a stop by `-c`, say).
    pub fn held(&self) -> u64 {
        self.queues.iter().map(|q| q.len() as u64).sum()
    }

    /// Lets every frame held now be taken without waiting (at a stop: what the rings showed is
    /// written, in time order). Returns whether there is any.
    pub fn flush(&mut self, rings: &mut [AfPacket]) -> Result<bool, LiveError> {
        self.pull(rings)?;
        self.epoch = None;
        self.safe = self.queues.iter().map(|q| q.len() as u64).collect();
        Ok(self.safe.iter().any(|&n| n > 0))
    }

    /// Frames [`RingMerge::flush`] let through that are still to be taken.
    pub fn flushing(&self) -> bool {
        self.safe.iter().any(|&n| n > 0)
    }

    /// The next step given each queue's first frame's time and its frames.
    fn decide(&mut self, heads: &[Option<i64>], visible: impl Fn(usize) -> u64, now: Instant) -> Pick {
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
        let mut m = RingMerge::new(3, 10, usize::MAX);
        let now = Instant::now();
        assert_eq!(m.decide(&[Some(30), Some(10), Some(20)], |_| 1, now), Pick::Ring(1));
        // Equal times: the first ring's.
        assert_eq!(m.decide(&[Some(10), Some(10), Some(20)], |_| 1, now), Pick::Ring(0));
        assert_eq!(m.decide(&[None, None, None], |_| 0, now), Pick::Idle);
    }

    #[test]
    fn with_a_ring_empty_what_was_visible_waits_a_retire_time_then_goes_in_time_order() {
        // Settle: 2 x 10 + 10 = 30 ms.
        let mut m = RingMerge::new(2, 10, usize::MAX);
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
        let mut m = RingMerge::new(2, 10, usize::MAX);
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
        let mut m = RingMerge::new(2, 10, usize::MAX);
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
