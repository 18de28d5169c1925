//! Latency statistics: HdrHistograms with exact count, min, max and sum beside them, summarised into the
//! figures every report prints (measurement.md: the shape, not the mean; the sample count behind each
//! percentile; the maximum exact, never a bucket edge).

use hdrhistogram::Histogram;
use serde::Serialize;

/// Significant digits kept by every histogram (0.1 % relative precision).
pub const SIGFIG: u8 = 3;
/// Largest latency a histogram holds without saturating: one hour. Larger values are clamped into the
/// top bucket and counted in [`Latency::saturated`]; the exact maximum is kept regardless.
pub const MAX_TRACKABLE_NS: u64 = 3_600 * 1_000_000_000;

/// The percentiles every summary reports, as (label, quantile).
pub const PERCENTILES: [(&str, f64); 5] =
    [("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("p99.9", 0.999), ("p99.99", 0.9999)];

/// A percentile needs about this many samples beyond it to be stable (measurement.md).
pub const STABLE_TAIL_SAMPLES: u64 = 100;

/// One latency metric: a histogram plus exact side figures.
#[derive(Debug, Clone)]
pub struct Latency {
    hist: Histogram<u64>,
    min: i64,
    max: i64,
    sum: i128,
    /// Values below zero (two clocks disagreeing): counted, and not in the histogram.
    pub negative: u64,
    /// Values above [`MAX_TRACKABLE_NS`]: in the histogram's top bucket, exact in `max`.
    pub saturated: u64,
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty metric.
    pub fn new() -> Self {
        Latency {
            hist: Histogram::new_with_bounds(1, MAX_TRACKABLE_NS, SIGFIG)
                .unwrap_or_else(|_| unreachable!("constant bounds are valid")),
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            negative: 0,
            saturated: 0,
        }
    }

    /// Records one latency in ns.
    #[inline]
    pub fn record(&mut self, ns: i64) {
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as i128;
        if ns < 0 {
            self.negative += 1;
            return;
        }
        let v = ns as u64;
        if v > MAX_TRACKABLE_NS {
            self.saturated += 1;
        }
        self.hist.saturating_record(v.max(1));
    }

    /// Empties the metric, keeping its allocation (a histogram is ~220 KB).
    pub fn reset(&mut self) {
        self.hist.reset();
        self.min = i64::MAX;
        self.max = i64::MIN;
        self.sum = 0;
        self.negative = 0;
        self.saturated = 0;
    }

    /// Samples recorded (negative ones included).
    pub fn count(&self) -> u64 {
        self.hist.len() + self.negative
    }

    /// Adds another metric's samples.
    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides: add cannot fail.
        let _ = self.hist.add(&other.hist);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.negative += other.negative;
        self.saturated += other.saturated;
    }

    /// The underlying histogram (non-negative samples only).
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The figures a report prints.
    pub fn summary(&self) -> Summary {
        let count = self.count();
        if count == 0 {
            return Summary::default();
        }
        let pct = |q: f64| {
            // The histogram only holds the non-negative samples; rank over all samples, so that negative
            // values sit below every recorded one.
            let rank = ((q * count as f64).ceil() as u64).max(1);
            if rank <= self.negative {
                return self.min;
            }
            let q_in = (rank - self.negative) as f64 / self.hist.len() as f64;
            (self.hist.value_at_quantile(q_in.min(1.0)) as i64).min(self.max)
        };
        let percentiles = PERCENTILES.map(|(label, q)| Percentile {
            label,
            value_ns: pct(q),
            tail_samples: count - ((q * count as f64).ceil() as u64).min(count),
        });
        Summary {
            count,
            min_ns: self.min,
            max_ns: self.max,
            mean_ns: (self.sum / count as i128) as i64,
            percentiles: percentiles.to_vec(),
            negative: self.negative,
            saturated: self.saturated,
        }
    }
}

/// One percentile of a summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Percentile {
    /// `p50`, `p99.9`, ...
    pub label: &'static str,
    /// The value (HdrHistogram precision: within 0.1 %; never above the exact maximum).
    pub value_ns: i64,
    /// Samples above this percentile's rank; fewer than [`STABLE_TAIL_SAMPLES`] means unstable.
    pub tail_samples: u64,
}

impl Percentile {
    /// Whether enough samples lie beyond this percentile for it to be stable.
    pub fn is_stable(&self) -> bool {
        self.tail_samples >= STABLE_TAIL_SAMPLES
    }
}

/// A metric's summary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Exact number of samples.
    pub count: u64,
    /// Exact minimum.
    pub min_ns: i64,
    /// Exact maximum.
    pub max_ns: i64,
    /// Arithmetic mean (truncated to ns); printed only beside the percentiles.
    pub mean_ns: i64,
    /// p50, p90, p99, p99.9, p99.99.
    pub percentiles: Vec<Percentile>,
    /// Negative samples (clock disagreement), counted in `count`.
    pub negative: u64,
    /// Samples beyond the histogram's range, counted in `count`.
    pub saturated: u64,
}

/// Formats a duration in ns with a unit chosen for readability: `812ns`, `12.34us`, `1.262ms`, `2.500s`.
pub fn format_ns(ns: i64) -> String {
    let a = ns.unsigned_abs();
    let sign = if ns < 0 { "-" } else { "" };
    if a < 1_000 {
        format!("{sign}{a}ns")
    } else if a < 1_000_000 {
        format!("{sign}{}.{:02}us", a / 1_000, (a % 1_000) / 10)
    } else if a < 1_000_000_000 {
        format!("{sign}{}.{:03}ms", a / 1_000_000, (a % 1_000_000) / 1_000)
    } else {
        format!("{sign}{}.{:03}s", a / 1_000_000_000, (a % 1_000_000_000) / 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_side_figures_and_percentiles() {
        let mut l = Latency::new();
        // 1..=1000 µs, in ns: nearest-rank p50 = 500 µs, p99 = 990 µs.
        for i in 1..=1000i64 {
            l.record(i * 1_000);
        }
        let s = l.summary();
        assert_eq!(s.count, 1000);
        assert_eq!(s.min_ns, 1_000);
        assert_eq!(s.max_ns, 1_000_000);
        assert_eq!(s.mean_ns, 500_500);
        let p = |label: &str| s.percentiles.iter().find(|p| p.label == label).unwrap().value_ns;
        // HdrHistogram with 3 significant digits reports the bucket's highest equivalent value.
        assert!((500_000..=500_000 + 500).contains(&p("p50")), "{}", p("p50"));
        assert!((990_000..=990_000 + 990).contains(&p("p99")), "{}", p("p99"));
        assert_eq!(p("p99.99"), 1_000_000, "never above the exact maximum");
        let p50 = s.percentiles[0];
        assert_eq!(p50.tail_samples, 500);
        assert!(p50.is_stable());
        assert!(!s.percentiles[3].is_stable(), "p99.9 of 1000 samples has 1 beyond it");
    }

    #[test]
    fn max_is_exact_not_a_bucket_edge() {
        let mut l = Latency::new();
        l.record(123_456_789);
        let s = l.summary();
        assert_eq!(s.max_ns, 123_456_789);
        assert_eq!(s.percentiles[0].value_ns, 123_456_789);
    }

    #[test]
    fn negatives_and_saturation_are_counted() {
        let mut l = Latency::new();
        l.record(-5);
        l.record(10);
        l.record(MAX_TRACKABLE_NS as i64 + 7);
        let s = l.summary();
        assert_eq!(s.count, 3);
        assert_eq!(s.negative, 1);
        assert_eq!(s.saturated, 1);
        assert_eq!(s.min_ns, -5);
        assert_eq!(s.max_ns, MAX_TRACKABLE_NS as i64 + 7);
        assert_eq!(s.percentiles[0].value_ns, 10, "rank 2 of 3 is the 10 ns sample");
        let mut m = Latency::new();
        m.record(1);
        m.merge(&l);
        assert_eq!(m.count(), 4);
        assert_eq!(m.summary().min_ns, -5);
    }

    #[test]
    fn units() {
        assert_eq!(format_ns(812), "812ns");
        assert_eq!(format_ns(12_345), "12.34us");
        assert_eq!(format_ns(1_262_000), "1.262ms");
        assert_eq!(format_ns(2_500_000_000), "2.500s");
        assert_eq!(format_ns(-1_500), "-1.50us");
    }
}
