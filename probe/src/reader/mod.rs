//! The reader the daemon uses: drain every ring, merge the rings in TSC order, reconstruct spans.
//!
//! Spans may begin on one thread and end on another, so records from different rings are merged by TSC
//! before pairing. A record is only processed once every ring has been drained past its timestamp: the
//! reader reads the TSC (`now`) before draining and holds back records newer than `now - grace` (a
//! producer reads the TSC a few ns before it publishes). Value and link records carry no TSC; they are
//! ordered at the TSC of the previous timed record of their ring.
//!
//! `consumed` in each ring header is kept at the oldest record not yet processed, so a reader started
//! after this one dies picks up where the records are.

pub mod calibrate;
pub mod drain;
pub mod spans;
pub mod stats;

use std::collections::VecDeque;
use std::time::{Duration, Instant};

pub use drain::{DrainCounters, Drainer, RawRecord};
pub use spans::{Event, PointCounters, SpanBuilder};
pub use stats::{ProbeStatsArgs, probe_stats};

use crate::error::Result;
use crate::layout::kind;
use crate::tsc;

/// Reader settings.
#[derive(Debug, Clone, Copy)]
pub struct ReaderConfig {
    /// Open spans kept at most.
    pub max_open_spans: usize,
    /// A span with no stamp for this many ticks is abandoned.
    pub span_timeout_ticks: u64,
    /// Records newer than `now - grace_ticks` wait for the next poll (cross-ring ordering).
    pub grace_ticks: u64,
    /// How often producer liveness is checked (reads /proc).
    pub liveness_every: Duration,
}

impl Default for ReaderConfig {
    /// 1 M open spans; 5 s timeout and 1 ms grace at a nominal 3 GHz.
    fn default() -> Self {
        ReaderConfig {
            max_open_spans: 1 << 20,
            span_timeout_ticks: 15_000_000_000,
            grace_ticks: 3_000_000,
            liveness_every: Duration::from_millis(100),
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    order: u64,
    rec: RawRecord,
}

/// Drainer + cross-ring merge + span builder.
pub struct Reader {
    drainer: Drainer,
    pending: Vec<VecDeque<Pending>>,
    last_tsc: Vec<u64>,
    spans: SpanBuilder,
    cfg: ReaderConfig,
    last_liveness: Option<Instant>,
    /// Timed records whose TSC was below the previous one of their ring.
    pub ring_backwards: u64,
}

impl Reader {
    /// Opens `session`.
    pub fn open(session: &str, cfg: ReaderConfig) -> Result<Self> {
        Ok(Self::with_drainer(Drainer::open(session)?, cfg))
    }

    /// Wraps a drainer.
    pub fn with_drainer(drainer: Drainer, cfg: ReaderConfig) -> Self {
        let n = drainer.rings() as usize;
        Reader {
            drainer,
            pending: vec![VecDeque::new(); n],
            last_tsc: vec![0; n],
            spans: SpanBuilder::new(cfg.max_open_spans, cfg.span_timeout_ticks),
            cfg,
            last_liveness: None,
            ring_backwards: 0,
        }
    }

    /// Drain counters.
    pub fn drain_counters(&self) -> DrainCounters {
        self.drainer.counters
    }

    /// The drainer.
    pub fn drainer(&self) -> &Drainer {
        &self.drainer
    }

    /// The span builder (per-point counters, open spans).
    pub fn spans(&self) -> &SpanBuilder {
        &self.spans
    }

    /// Records drained but held back for ordering.
    pub fn held_back(&self) -> usize {
        self.pending.iter().map(VecDeque::len).sum()
    }

    fn collect(&mut self) -> usize {
        let Reader { drainer, pending, last_tsc, ring_backwards, .. } = self;
        let mut sink = |r: RawRecord| {
            let i = r.ring as usize;
            let order = match r.kind {
                kind::BEGIN | kind::STEP | kind::END => {
                    if r.word0 < last_tsc[i] {
                        *ring_backwards += 1;
                    }
                    last_tsc[i] = r.word0;
                    r.word0
                }
                _ => last_tsc[i],
            };
            pending[i].push_back(Pending { order, rec: r });
        };
        let n = drainer.drain_all(&mut sink);
        let due = self.last_liveness.is_none_or(|t| t.elapsed() >= self.cfg.liveness_every);
        if due {
            self.last_liveness = Some(Instant::now());
            self.drainer.check_producers(&mut sink);
        }
        n
    }

    /// Processes held-back records with an order key below `limit`, in order across rings.
    fn process(&mut self, limit: u64, out: &mut impl FnMut(Event)) -> usize {
        let mut n = 0;
        loop {
            // The ring with the oldest front, and the next-oldest front among the others.
            let (mut best, mut best_key, mut second) = (usize::MAX, u64::MAX, u64::MAX);
            for (i, q) in self.pending.iter().enumerate() {
                if let Some(p) = q.front() {
                    if p.order < best_key {
                        second = best_key;
                        best_key = p.order;
                        best = i;
                    } else if p.order < second {
                        second = p.order;
                    }
                }
            }
            if best == usize::MAX || best_key >= limit {
                break;
            }
            // Take the whole run of this ring up to the next ring's front.
            let upto = second.min(limit);
            let q = &mut self.pending[best];
            while let Some(p) = q.front() {
                if p.order > upto || p.order >= limit {
                    break;
                }
                let p = q.pop_front().expect("front exists");
                self.spans.push(&p.rec, out);
                n += 1;
            }
            let next = q.front().map_or(self.drainer.tail(best as u32), |p| p.rec.index);
            self.drainer.commit(best as u32, next);
        }
        // Rings with nothing held back are processed up to their tail (lost records included).
        for (i, q) in self.pending.iter().enumerate() {
            if q.is_empty() {
                self.drainer.commit(i as u32, self.drainer.tail(i as u32));
            }
        }
        n
    }

    /// One reader cycle: drain every ring, process what is old enough, abandon stale spans. Returns the
    /// number of records processed.
    pub fn poll(&mut self, out: &mut impl FnMut(Event)) -> usize {
        let now = tsc::rdtsc_fenced();
        self.collect();
        let n = self.process(now.saturating_sub(self.cfg.grace_ticks), out);
        self.spans.expire(now);
        n
    }

    /// Drains and processes everything there is, without holding anything back (producers stopped).
    pub fn poll_all(&mut self, out: &mut impl FnMut(Event)) -> usize {
        let mut n = 0;
        while self.collect() > 0 {
            n += self.process(u64::MAX, out);
        }
        self.last_liveness = None;
        self.collect();
        n + self.process(u64::MAX, out)
    }

    /// Abandons spans idle for longer than the timeout at `now_tsc`.
    pub fn expire(&mut self, now_tsc: u64) -> u64 {
        self.spans.expire(now_tsc)
    }
}
