//! Span reconstruction: pair begin/step/end records by (point, key) into stage intervals and totals.
//!
//! A span is `begin → [step s1 → step s2 …] → end`. The interval that ENDS at a step is reported under
//! that step's stage; the last one (to `end`) under [`END_STAGE`]; `begin → end` is the total. Records
//! must be fed in TSC order across rings (the [`super::Reader`] merges them).
//!
//! Anomalies, counted per point, never silently dropped: a step or end with no open span (orphan), a
//! span not ended within the timeout or replaced by a new begin on the same key (abandoned), a stamp
//! earlier than the previous stamp of its span (backwards: no interval is emitted for it), and a begin
//! refused because the open-span table is full.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::layout::{BEGIN_STAGE, END_STAGE, kind};

use super::drain::RawRecord;

/// What span reconstruction produces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// One stage of a span: from the stamp of `from_stage` to the stamp of `stage`.
    Interval { point: u16, from_stage: u8, stage: u8, key: u64, start_tsc: u64, end_tsc: u64 },
    /// A whole span, begin to end.
    Total { point: u16, key: u64, begin_tsc: u64, end_tsc: u64 },
    /// A value sample.
    Value { point: u16, value: u64 },
    /// The order `order_key` was triggered by the tick `tick_key`.
    Link { tick_key: u64, order_key: u64 },
}

/// Per-point anomaly counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PointCounters {
    pub orphan_steps: u64,
    pub orphan_ends: u64,
    /// Steps of a stage outside 1..=254 (0 is `begin`'s, 255 `end`'s): counted, not taken for one.
    pub bad_stages: u64,
    pub abandoned: u64,
    pub backwards: u64,
    pub table_full: u64,
}

impl PointCounters {
    /// Records that fit no span: orphan steps and ends, and steps of a stage outside 1..=254.
    pub fn orphans(&self) -> u64 {
        self.orphan_steps + self.orphan_ends + self.bad_stages
    }
}

#[derive(Debug, Clone, Copy)]
struct Open {
    begin_tsc: u64,
    last_tsc: u64,
    last_stage: u8,
}

/// FxHash-style multiply-rotate hasher: the keys are two integers, and SipHash would dominate the cost.
#[derive(Default)]
pub struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_u16(&mut self, v: u16) {
        self.write_u64(v as u64)
    }
}

/// Pairs records into spans.
pub struct SpanBuilder {
    open: HashMap<(u16, u64), Open, BuildHasherDefault<FastHasher>>,
    counters: Vec<PointCounters>,
    /// Open spans above which new begins are refused (counted as `table_full`).
    pub max_open: usize,
    /// A span whose last stamp is older than this many ticks (against the caller's clock) is abandoned.
    pub timeout_ticks: u64,
}

impl SpanBuilder {
    /// A builder with the given limits.
    pub fn new(max_open: usize, timeout_ticks: u64) -> Self {
        SpanBuilder {
            // Small and growing: a table sized for the worst case spreads a handful of open spans over
            // megabytes, and every lookup becomes a cache miss.
            open: HashMap::with_capacity_and_hasher(max_open.min(4096), Default::default()),
            counters: Vec::new(),
            max_open,
            timeout_ticks,
        }
    }

    fn count(&mut self, point: u16) -> &mut PointCounters {
        let i = point as usize;
        if i >= self.counters.len() {
            self.counters.resize(i + 1, PointCounters::default());
        }
        &mut self.counters[i]
    }

    /// Counters of `point`.
    pub fn counters(&self, point: u16) -> PointCounters {
        self.counters.get(point as usize).copied().unwrap_or_default()
    }

    /// Every point that has counters, with them.
    pub fn all_counters(&self) -> impl Iterator<Item = (u16, PointCounters)> + '_ {
        self.counters.iter().enumerate().filter(|(_, c)| **c != PointCounters::default()).map(|(i, c)| (i as u16, *c))
    }

    /// Spans currently open.
    pub fn open_spans(&self) -> usize {
        self.open.len()
    }

    /// Feeds one record.
    #[inline]
    pub fn push(&mut self, r: &RawRecord, out: &mut impl FnMut(Event)) {
        let (point, key, tsc) = (r.point, r.key, r.word0);
        match r.kind {
            kind::BEGIN => {
                if self.open.len() >= self.max_open && !self.open.contains_key(&(point, key)) {
                    self.count(point).table_full += 1;
                    return;
                }
                let fresh = Open { begin_tsc: tsc, last_tsc: tsc, last_stage: 0 };
                if self.open.insert((point, key), fresh).is_some() {
                    self.count(point).abandoned += 1;
                }
            }
            kind::STEP if r.stage == BEGIN_STAGE || r.stage == END_STAGE => self.count(point).bad_stages += 1,
            kind::STEP => match self.open.get_mut(&(point, key)) {
                None => self.count(point).orphan_steps += 1,
                Some(o) => {
                    let (from, start) = (o.last_stage, o.last_tsc);
                    o.last_tsc = tsc;
                    o.last_stage = r.stage;
                    if tsc < start {
                        self.count(point).backwards += 1;
                    } else {
                        out(Event::Interval {
                            point,
                            from_stage: from,
                            stage: r.stage,
                            key,
                            start_tsc: start,
                            end_tsc: tsc,
                        });
                    }
                }
            },
            kind::END => match self.open.remove(&(point, key)) {
                None => self.count(point).orphan_ends += 1,
                Some(o) => {
                    if tsc < o.last_tsc || tsc < o.begin_tsc {
                        self.count(point).backwards += 1;
                    } else {
                        out(Event::Interval {
                            point,
                            from_stage: o.last_stage,
                            stage: END_STAGE,
                            key,
                            start_tsc: o.last_tsc,
                            end_tsc: tsc,
                        });
                        out(Event::Total { point, key, begin_tsc: o.begin_tsc, end_tsc: tsc });
                    }
                }
            },
            kind::VALUE => out(Event::Value { point, value: r.word0 }),
            kind::LINK => out(Event::Link { tick_key: r.key, order_key: r.word0 }),
            _ => {}
        }
    }

    /// Abandons every span whose last stamp is more than `timeout_ticks` before `now_tsc`.
    pub fn expire(&mut self, now_tsc: u64) -> u64 {
        let cutoff = now_tsc.saturating_sub(self.timeout_ticks);
        let mut gone: Vec<u16> = Vec::new();
        self.open.retain(|&(point, _), o| {
            let keep = o.last_tsc >= cutoff;
            if !keep {
                gone.push(point);
            }
            keep
        });
        for &p in &gone {
            self.count(p).abandoned += 1;
        }
        gone.len() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(kind: u8, point: u16, stage: u8, key: u64, tsc: u64) -> RawRecord {
        RawRecord { ring: 0, index: 0, word0: tsc, key, point, stage, kind }
    }

    /// A step of stage 0 or 255 (`begin`'s and `end`'s, not a step's) is counted, and neither closes
    /// the span nor becomes an interval: the span's real end still does (the 255 was taken for it).
    #[test]
    fn a_step_of_a_reserved_stage_is_counted_not_taken_for_an_end() {
        let mut b = SpanBuilder::new(16, 1000);
        let mut ev = Vec::new();
        let mut out = |e| ev.push(e);
        b.push(&rec(kind::BEGIN, 1, 0, 7, 100), &mut out);
        b.push(&rec(kind::STEP, 1, 255, 7, 120), &mut out);
        b.push(&rec(kind::STEP, 1, 0, 7, 130), &mut out);
        b.push(&rec(kind::END, 1, 255, 7, 200), &mut out);
        let c = b.counters(1);
        assert_eq!((c.bad_stages, c.orphans(), c.orphan_ends), (2, 2, 0));
        let totals: Vec<_> = ev.iter().filter(|e| matches!(e, Event::Total { .. })).collect();
        assert_eq!(totals.len(), 1);
        assert!(
            matches!(ev[0], Event::Interval { from_stage: 0, stage: 255, start_tsc: 100, end_tsc: 200, .. }),
            "{ev:?}"
        );
    }

    #[test]
    fn pairs_stages_and_counts_anomalies() {
        let mut b = SpanBuilder::new(16, 1000);
        let mut ev = Vec::new();
        let mut out = |e| ev.push(e);
        // Span (1, 7): begin 100, decode (stage 1) 130, encode (stage 2) 180, end 200.
        b.push(&rec(kind::BEGIN, 1, 0, 7, 100), &mut out);
        b.push(&rec(kind::STEP, 1, 1, 7, 130), &mut out);
        b.push(&rec(kind::STEP, 1, 2, 7, 180), &mut out);
        b.push(&rec(kind::END, 1, 255, 7, 200), &mut out);
        // Orphans: a step and an end with no begin.
        b.push(&rec(kind::STEP, 1, 1, 8, 210), &mut out);
        b.push(&rec(kind::END, 1, 255, 9, 220), &mut out);
        // Backwards: span (1, 10) whose step is earlier than its begin.
        b.push(&rec(kind::BEGIN, 1, 0, 10, 300), &mut out);
        b.push(&rec(kind::STEP, 1, 1, 10, 290), &mut out);
        b.push(&rec(kind::END, 1, 255, 10, 320), &mut out);
        // Abandoned: begin (2, 1) at 400, then a clock at 1401 with a 1000-tick timeout.
        b.push(&rec(kind::BEGIN, 2, 0, 1, 400), &mut out);
        b.push(&rec(kind::VALUE, 3, 0, 0, 55), &mut out);
        b.push(&RawRecord { ring: 0, index: 0, word0: 9001, key: 42, point: 0, stage: 0, kind: kind::LINK }, &mut out);
        assert_eq!(b.expire(1401), 1);
        assert_eq!(
            ev,
            vec![
                Event::Interval { point: 1, from_stage: 0, stage: 1, key: 7, start_tsc: 100, end_tsc: 130 },
                Event::Interval { point: 1, from_stage: 1, stage: 2, key: 7, start_tsc: 130, end_tsc: 180 },
                Event::Interval { point: 1, from_stage: 2, stage: 255, key: 7, start_tsc: 180, end_tsc: 200 },
                Event::Total { point: 1, key: 7, begin_tsc: 100, end_tsc: 200 },
                // Span 10: the step went backwards (no interval), the end is after the step: 290 -> 320.
                Event::Interval { point: 1, from_stage: 1, stage: 255, key: 10, start_tsc: 290, end_tsc: 320 },
                Event::Total { point: 1, key: 10, begin_tsc: 300, end_tsc: 320 },
                Event::Value { point: 3, value: 55 },
                Event::Link { tick_key: 42, order_key: 9001 },
            ]
        );
        assert_eq!(
            b.counters(1),
            PointCounters { orphan_steps: 1, orphan_ends: 1, bad_stages: 0, abandoned: 0, backwards: 1, table_full: 0 }
        );
        assert_eq!(b.counters(2).abandoned, 1);
        assert_eq!(b.open_spans(), 0);
    }

    #[test]
    fn table_full_and_replaced_begin() {
        let mut b = SpanBuilder::new(1, u64::MAX);
        let mut out = |_e| {};
        b.push(&rec(kind::BEGIN, 1, 0, 1, 10), &mut out);
        b.push(&rec(kind::BEGIN, 1, 0, 2, 11), &mut out); // refused: table holds 1
        b.push(&rec(kind::BEGIN, 1, 0, 1, 12), &mut out); // same key again: the first is abandoned
        assert_eq!(b.counters(1).table_full, 1);
        assert_eq!(b.counters(1).abandoned, 1);
        assert_eq!(b.open_spans(), 1);
    }
}
