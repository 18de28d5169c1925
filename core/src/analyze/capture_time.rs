//! Capture time moving on: timestamp sources counted, frames out of order and steps back, and what
//! falls due (gap timeouts, intervals, unanswered requests, waiting orders).

use super::limits::PRUNE_EVERY_NS;
use super::orders::FrameRef;
use super::symbols::SymbolTicks;
use super::{AB, Analyzer, E2C, Interval, METRICS, STEP_BACK_NS, report};
use crate::time::{ClockQuality, TsSource};

/// The start of the interval of length `len` holding `t`: a multiple of `len`, or the start of the
/// range for the part of the first interval that lies beyond it.
fn interval_of(t: i64, len: i64) -> i64 {
    t.saturating_sub(t.rem_euclid(len))
}

impl Analyzer {
    /// Counts a frame of a feed or order session that the capture cut: `caplen` bytes captured,
    /// `not_captured` payload bytes past them.
    #[cold]
    #[inline(never)]
    pub(super) fn captured_short(&mut self, caplen: usize, not_captured: usize) {
        self.cut_seen = true;
        let c = &mut self.counters;
        c.frames_captured_short += 1;
        c.bytes_not_captured += not_captured as u64;
        c.captured_short_max_bytes = c.captured_short_max_bytes.max(caplen as u64);
    }

    /// Counts a frame of a feed or order session: its timestamp's source and quality.
    #[inline(always)]
    pub(super) fn used(&mut self, ts_source: TsSource, quality: ClockQuality) {
        // The container's own sources first: a derived `==` on this enum costs ~20 instructions.
        let same = match (self.ts_run.0, ts_source) {
            (TsSource::PcapRecord, TsSource::PcapRecord)
            | (TsSource::PcapngBlock, TsSource::PcapngBlock)
            | (TsSource::Erf, TsSource::Erf) => true,
            (a, b) => a == b,
        };
        if same {
            self.ts_run.1 += 1;
        } else {
            self.flush_ts_run();
            self.ts_run = (ts_source, 1);
            self.run_bit = ts_source.clock_bit();
        }
        if !quality.is_clean() {
            self.counters.degraded_clock_frames += 1;
        }
    }

    #[inline]
    fn flush_ts_run(&mut self) {
        let (source, n) = std::mem::replace(&mut self.ts_run, (TsSource::PcapRecord, 0));
        if n > 0 {
            *self.counters.ts_sources.entry(source.name()).or_default() += n;
        }
    }

    /// Capture time moves to `t`: the first time, the interval's close, orders that wait too long.
    /// Only the latest time is kept per frame; the rest waits for `wake_at`.
    #[inline(always)]
    pub(super) fn advance_time(&mut self, t: i64) {
        // (A step back is one: the frame before is never later than the latest.)
        if t < self.last_time {
            self.reordered(t);
        }
        self.prev_time = t;
        self.last_time = self.last_time.max(t);
        if t >= self.wake_at {
            self.advance_time_slow(t);
        }
    }

    /// A frame at `t`, before the latest time recorded: counted.
    #[cold]
    #[inline(never)]
    fn reordered(&mut self, t: i64) {
        let c = &mut self.counters;
        c.reordered_frames += 1;
        c.largest_reorder_ns = c.largest_reorder_ns.max(self.last_time.abs_diff(t));
        if t < self.prev_time.saturating_sub(STEP_BACK_NS) {
            self.stepped_back(t);
        }
    }

    /// A frame at `t`, more than [`STEP_BACK_NS`] before the frame before it: counted.
    #[inline]
    fn stepped_back(&mut self, t: i64) {
        let c = &mut self.counters;
        c.time_steps_back += 1;
        c.largest_step_back_ns = c.largest_step_back_ns.max(self.prev_time.abs_diff(t));
        c.first_step_back_frame.get_or_insert(self.last_frame);
        // What comes after a step back is not waited for: the orders waiting the reorder allowance are
        // matched now, before this frame (its ticks, stamped before theirs, would be taken for late ones).
        if !self.reorder.is_empty() {
            self.release_reorder = true;
            self.wake_at = i64::MIN;
        }
    }

    #[inline(never)]
    fn advance_time_slow(&mut self, t: i64) {
        self.first_time.get_or_insert(t);
        if t >= self.gap_due {
            self.expire_gaps(t);
        }
        // A hold no segment ends (its stream went quiet) reaches back at most HOLD_MAX_NS: the ticks
        // kept for it are let go as time passes, not only when a segment comes.
        // Every 100 ms of capture time (each symbol's kept ticks are trimmed as it ticks: these are
        // the ones of symbols gone quiet).
        if t >= self.next_prune {
            self.last_by_symbol.prune(SymbolTicks::reach_of(self.hold_from, t));
            self.next_prune = t.saturating_add(PRUNE_EVERY_NS);
        }
        // Before the interval can close: they belong to the packet before this frame.
        if !self.ab_elsewhere.is_empty() {
            self.record_ab_elsewhere();
        }
        let len = self.cfg.interval_ns;
        let start = *self.interval_start.get_or_insert_with(|| interval_of(t, len));
        // An interval that would end past the range's end lasts to the end.
        if start.checked_add(len).is_some_and(|end| t >= end) {
            self.close_interval(start, start + len);
            self.interval_start = Some(interval_of(t, len));
        }
        // Orders waiting too long for a response are unacknowledged.
        while let Some((&(at, n), &(conn, id))) = self.pending_order.first_key_value() {
            if t < self.ack_deadline(at) {
                break;
            }
            self.pending_order.pop_first();
            if self.take_request(conn, id, n).is_some() {
                self.counters.unacked += 1;
                self.timed_out(conn, id);
            }
        }
        // Ticks recorded after orders parked under the symbol rule that they may be the match of.
        if !self.last_by_symbol.late.is_empty() {
            self.late_ticks();
        }
        // Orders whose trigger may have come since they were parked.
        while let Some(e) = self.parked.first_entry().filter(|e| t >= e.key().0) {
            let p = e.remove();
            self.correlate(p.conn, &p.msg, p.snd, Some(p.retry(t)));
        }
        while self.early_responses.first_key_value().is_some_and(|(_, e)| t >= e.due) {
            self.early_response_unmatched();
        }
        let all = std::mem::take(&mut self.release_reorder);
        if self.reorder.first_key().is_some_and(|(due, _)| all || t >= due) {
            while let Some((key, mut p)) =
                self.reorder.first_key().filter(|k| all || t >= k.0).and_then(|_| self.reorder.pop_first())
            {
                self.unindex_reorder(key, &mut p);
                self.correlate(p.conn, &p.msg, p.snd, Some(p.retry(t)));
            }
            self.watch_parked();
        }
        let interval_end = self.interval_start.and_then(|s| s.checked_add(len)).unwrap_or(i64::MAX);
        let timeout = self.pending_order.first_key_value().map_or(i64::MAX, |(&(at, _), _)| self.ack_deadline(at));
        let parked = self.parked.first_key_value().map_or(i64::MAX, |(&(until, _), _)| until);
        let reorder = self.reorder.first_key().map_or(i64::MAX, |(due, _)| due);
        let early = self.early_responses.first_key_value().map_or(i64::MAX, |(_, e)| e.due);
        self.wake_at = interval_end.min(timeout).min(parked).min(reorder).min(early).min(self.gap_due);
    }

    /// Does, at capture time `t`, what order streams have due
    /// ([`OrderStream::expire`](super::orders::OrderStream::expire)): gives up the ranges they waited
    /// for longer than the gap timeout (the orders and responses behind them are read now, while the
    /// ticks they may match are kept), and looks at those whose look is due: one that reached its FIN
    /// ends, one quiet since the look was set (no byte, none held) gives back its framing buffers, the
    /// framer's room included.
    #[cold]
    #[inline(never)]
    fn expire_gaps(&mut self, t: i64) {
        let frame = FrameRef { index: self.last_frame, time_ns: t };
        let mut msgs = std::mem::take(&mut self.scratch);
        let due: Vec<usize> = self.dues.range(..=(t, usize::MAX)).map(|&(_, ci)| ci).collect();
        for ci in due {
            let c = &mut self.conn_list[ci];
            for stream in [&mut c.to_exchange, &mut c.from_exchange] {
                if stream.gap_deadline().is_some_and(|due| t >= due) {
                    stream.expire(frame, &mut |m| msgs.push(m));
                }
            }
            for m in msgs.drain(..) {
                self.order_msg(ci, m);
            }
            self.update_hold(ci);
            self.update_held(ci);
        }
        self.scratch = msgs;
        // What came after a hole may be held by the framing (a packet begun, a window).
        if self.held_framing > self.limits.held_framing {
            self.framing_for_room(frame);
        }
    }

    /// The first time at which an order sent at `at` and still unanswered is unacknowledged (or
    /// the end of the range).
    #[inline]
    pub(super) fn ack_deadline(&self, at: i64) -> i64 {
        at.saturating_add(self.cfg.ack_timeout_ns).saturating_add(1)
    }

    /// Closes the interval starting at `start` whose samples end at `end` (the next interval's start,
    /// or the capture's last time): an interval log must not claim a whole interval for the part of
    /// the first and last intervals the capture covers.
    pub(super) fn close_interval(&mut self, start: i64, end: i64) {
        let start = start.max(self.first_time.unwrap_or(start));
        let len_ns = end.saturating_sub(start).max(0);
        let counted = [self.counters.ticks, self.counters.orders];
        for ((busiest, mark), now) in self.busiest.iter_mut().zip(self.load_marks).zip(counted) {
            let count = now - mark;
            if count > busiest.map_or(0, |b| b.count) {
                *busiest = Some(report::Busiest { start_ns: start, len_ns, count });
            }
        }
        self.load_marks = counted;
        // The feeds' single-dimension samples go to the interval and to their slots.
        for f in &mut self.feeds {
            for (k, metric) in [E2C, AB].into_iter().enumerate() {
                if let (Some(slot), Some(t)) = (f.slots[k], f.open[k].as_mut())
                    && t.count() > 0
                {
                    self.interval[metric].add_tally(t);
                    self.metrics[metric].slots[slot].1.absorb(t);
                }
            }
        }
        for (i, l) in self.interval.iter_mut().enumerate() {
            if l.count() > 0 {
                let latency = std::mem::take(l);
                self.metrics[i].closed.merge(&latency);
                self.closed.push(Interval { metric: METRICS[i], start_ns: start, len_ns, latency });
                self.output = true;
            }
        }
    }
}
