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

/// The percentiles every summary reports, as (label, quantile in parts per ten thousand). Integers:
/// the rank `ceil(q × count)` computed in floating point lands one sample high for many counts
/// (0.5 × 29 is exact, but a quantile passed as `rank / count` and multiplied back is not).
pub const PERCENTILES: [(&str, u64); 5] =
    [("p50", 5_000), ("p90", 9_000), ("p99", 9_900), ("p99.9", 9_990), ("p99.99", 9_999)];

/// The 1-based rank of the percentile `q` (parts per ten thousand) among `count` samples:
/// `ceil(q × count / 10,000)`, at least 1, exact.
fn rank_of(q: u64, count: u64) -> u64 {
    (u128::from(q) * u128::from(count)).div_ceil(10_000).max(1) as u64
}

/// A percentile needs about this many samples beyond it to be stable (measurement.md).
pub const STABLE_TAIL_SAMPLES: u64 = 100;

/// One latency metric: a histogram plus exact side figures.
#[derive(Debug, Clone)]
pub struct Latency {
    hist: Histogram<u64>,
    min: i64,
    max: i64,
    sum: i128,
    /// The magnitudes of the values below zero (two clocks disagreeing), made at the first one: most
    /// metrics have none.
    neg_hist: Option<Box<Histogram<u64>>>,
    /// Values beyond [`MAX_TRACKABLE_NS`] either way: in a histogram's top bucket, exact in `min`/`max`.
    pub saturated: u64,
}

/// An empty histogram, grown as values need it: its counts cover the largest value recorded, not all
/// of 1 ns..1 h at once (220 KB), so that a metric row costs what its values need (a capture with
/// thousands of feeds holds thousands of rows). Values are clamped to [`MAX_TRACKABLE_NS`] before
/// they are recorded ([`record_clamped`]), so the buckets and every figure are those of a histogram
/// made for the whole range.
fn histogram() -> Histogram<u64> {
    let mut h = Histogram::new_with_bounds(1, 2, SIGFIG).unwrap_or_else(|_| unreachable!("constant bounds are valid"));
    h.auto(true);
    h
}

/// Records `n` samples of `v` (clamped to [`MAX_TRACKABLE_NS`]) into `h`, grown as needed. (The
/// crate's `saturating_record` would clamp to the histogram's current top instead of growing it.)
#[inline]
fn record_clamped(h: &mut Histogram<u64>, v: u64, n: u64) {
    // Cannot fail: a value up to the limit always fits after growing, and counts saturate.
    let _ = h.record_n(v.min(MAX_TRACKABLE_NS), n);
}

/// Adds the counts of a Tally's flat array, buckets `used`, into `h`.
fn add_counts(h: &mut Histogram<u64>, counts: &[u32], used: std::ops::RangeInclusive<usize>) {
    let start = *used.start();
    for (i, &c) in counts[used].iter().enumerate().filter(|(_, c)| **c > 0) {
        record_clamped(h, bucket_value(start + i), u64::from(c));
    }
}

/// The `k`-th smallest value (1-based) `h` holds, as the highest value equivalent to its bucket.
/// Through the crate's (vectorised) scan with the quantile half a sample below rank `k`: it takes
/// `ceil(q × len)`, which for `q = (k - ½) / len` is `k` whatever the rounding (`k / len` multiplied
/// back lands on `k + 1` for many counts).
fn nth_value(h: &Histogram<u64>, k: u64) -> u64 {
    h.value_at_quantile((k as f64 - 0.5) / h.len() as f64)
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    /// An empty metric.
    pub fn new() -> Self {
        Latency { hist: histogram(), min: i64::MAX, max: i64::MIN, sum: 0, neg_hist: None, saturated: 0 }
    }

    /// Records one latency in ns.
    #[inline]
    pub fn record(&mut self, ns: i64) {
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += ns as i128;
        let v = ns.unsigned_abs();
        if v > MAX_TRACKABLE_NS {
            self.saturated += 1;
        }
        if ns < 0 {
            record_clamped(self.neg_hist.get_or_insert_with(|| Box::new(histogram())), v, 1);
            return;
        }
        record_clamped(&mut self.hist, v, 1);
    }

    /// Empties the metric, keeping its allocation (grown to the largest value it held).
    pub fn reset(&mut self) {
        self.hist.reset();
        if let Some(h) = self.neg_hist.as_mut() {
            h.reset();
        }
        self.min = i64::MAX;
        self.max = i64::MIN;
        self.sum = 0;
        self.saturated = 0;
    }

    /// Samples recorded (negative ones included).
    pub fn count(&self) -> u64 {
        self.hist.len() + self.negative()
    }

    /// Samples below zero (not in [`Latency::histogram`]).
    pub fn negative(&self) -> u64 {
        self.neg_hist.as_deref().map_or(0, Histogram::len)
    }

    /// Adds another metric's samples.
    /// Adds what `t` recorded, and empties it.
    pub fn absorb(&mut self, t: &mut Tally) {
        self.add_tally(t);
        t.clear();
    }

    /// Adds what `t` recorded.
    pub fn add_tally(&mut self, t: &Tally) {
        if t.n > 0 {
            if let Some(used) = t.used() {
                add_counts(&mut self.hist, &t.counts, used);
            }
            if let (Some(used), Some(neg)) = (t.neg_used(), t.neg.as_deref()) {
                add_counts(self.neg_hist.get_or_insert_with(|| Box::new(histogram())), neg, used);
            }
            self.min = self.min.min(t.min);
            self.max = self.max.max(t.max);
            self.sum += t.sum;
        }
        if let Some(spill) = t.spill.as_deref() {
            self.merge(spill);
        }
    }

    pub fn merge(&mut self, other: &Latency) {
        if other.count() == 0 {
            return;
        }
        // Both grow as needed: add cannot fail.
        let _ = self.hist.add(&other.hist);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        if let Some(o) = other.neg_hist.as_deref() {
            let _ = self.neg_hist.get_or_insert_with(|| Box::new(histogram())).add(o);
        }
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
        let pct = |rank: u64| {
            // The histogram only holds the non-negative samples; rank over all samples, so that negative
            // values sit below every recorded one.
            if let Some(h) = self.neg_hist.as_deref().filter(|h| rank <= h.len()) {
                // The negatives in ascending order are their magnitudes in descending order (within
                // the exact minimum and maximum: a saturated magnitude's bucket is an hour's).
                let neg = nth_value(h, h.len() - rank + 1);
                return (-(neg.min(i64::MAX as u64) as i64)).clamp(self.min, self.max);
            }
            // By rank ([`nth_value`]).
            (nth_value(&self.hist, rank - self.negative()).min(i64::MAX as u64) as i64).clamp(self.min, self.max)
        };
        let percentiles = PERCENTILES.map(|(label, q)| {
            let rank = rank_of(q, count);
            Percentile { label, value_ns: pct(rank), tail_samples: count - rank.min(count) }
        });
        Summary {
            count,
            min_ns: self.min,
            max_ns: self.max,
            // Rounded to the nearest ns (halves up), not truncated.
            mean_ns: {
                let c = count as i128;
                (self.sum.div_euclid(c) + i128::from(2 * self.sum.rem_euclid(c) >= c)) as i64
            },
            percentiles: percentiles.to_vec(),
            negative: self.negative(),
            saturated: self.saturated,
        }
    }
}

/// A recorder for the hot path: the same buckets as a [`Latency`]'s histogram (`hdrhistogram` with
/// lowest value 1 and [`SIGFIG`] digits), counted in a flat `u32` array with the bucket index computed
/// inline, then added into a [`Latency`] by [`Latency::absorb`]. The figures are identical to
/// recording each value into the `Latency` (a test compares them), for a fraction of the cost: the
/// crate's record goes through range checks, clamping and resize logic, and its `u64` counts take
/// twice the cache.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Grown to the bucket of the largest value recorded (a tally for a few µs holds a few K counts,
    /// not the 33 K that reach an hour).
    counts: Vec<u32>,
    /// The same for the magnitudes of negative values (made at the first: a capture clock behind the
    /// exchange's, or µs stamps, make half of exchange_to_capture negative).
    neg: Option<Vec<u32>>,
    /// Values the flat arrays do not take (beyond [`MAX_TRACKABLE_NS`] either way, or a bucket whose
    /// `u32` is full): recorded the slow way, made at the first.
    spill: Option<Box<Latency>>,
    min: i64,
    max: i64,
    sum: i128,
    n: u64,
}

/// `hdrhistogram`'s layout for lowest value 1, 3 significant digits: 2,048 sub-buckets (half of them,
/// 1,024, per bucket above the first), unit magnitude 0.
const SUB_HALF_MAG: u32 = 10;
const SUB_MASK: u64 = (1 << (SUB_HALF_MAG + 1)) - 1;
const LZ_BASE: u32 = 64 - (SUB_HALF_MAG + 1);
/// Counts covering every value up to [`MAX_TRACKABLE_NS`] (2^42 > 3.6e12: 32 buckets).
const TALLY_LEN: usize = (32 + 1) << SUB_HALF_MAG;

#[inline(always)]
fn bucket_index(v: u64) -> usize {
    let b = LZ_BASE - (v | SUB_MASK).leading_zeros();
    let sub = (v >> b) as usize;
    (((b + 1) as usize) << SUB_HALF_MAG) + sub - (1 << SUB_HALF_MAG)
}

/// The lowest value of bucket `i` (the inverse of [`bucket_index`]).
fn bucket_value(i: usize) -> u64 {
    let half = 1usize << SUB_HALF_MAG;
    let b = (i >> SUB_HALF_MAG) as i64 - 1;
    let sub = (i & (half - 1)) + half;
    if b < 0 { (sub - half) as u64 } else { (sub as u64) << b }
}

/// The count of bucket `i` in `counts`, the array grown to hold it (whole buckets of sub-buckets at a
/// time, doubling, never past [`TALLY_LEN`]).
#[cold]
#[inline(never)]
fn grown(counts: &mut Vec<u32>, i: usize) -> &mut u32 {
    let half = 1usize << SUB_HALF_MAG;
    let len = (i + 1).next_multiple_of(half).max(2 * counts.len()).min(TALLY_LEN);
    counts.resize(len, 0);
    &mut counts[i]
}

/// The count of bucket `i` in `counts`, grown as needed.
#[inline(always)]
fn count_at(counts: &mut Vec<u32>, i: usize) -> &mut u32 {
    // Checked either way: the branch that used to panic now grows the array.
    if i < counts.len() { &mut counts[i] } else { grown(counts, i) }
}

impl Default for Tally {
    fn default() -> Self {
        Tally { counts: Vec::new(), neg: None, spill: None, min: i64::MAX, max: i64::MIN, sum: 0, n: 0 }
    }
}

impl Tally {
    /// Records one value, ns.
    #[inline(always)]
    pub fn record(&mut self, ns: i64) {
        // One test for the common case: a negative value is above the limit as a u64.
        if ns as u64 > MAX_TRACKABLE_NS {
            return self.record_other(ns);
        }
        let c = count_at(&mut self.counts, bucket_index(ns as u64));
        if *c == u32::MAX {
            return self.spilled(ns);
        }
        *c += 1;
        self.add(ns);
    }

    /// Records `ns` into the spill histogram.
    #[cold]
    #[inline(never)]
    fn spilled(&mut self, ns: i64) {
        self.spill.get_or_insert_with(Box::default).record(ns);
    }

    /// Records `ns` `n` times: the same as `n` calls of [`Tally::record`] (a packet's later copies,
    /// which share one delay).
    #[inline(always)]
    pub fn record_n(&mut self, ns: i64, n: u16) {
        if ns as u64 <= MAX_TRACKABLE_NS && n > 0 {
            let c = count_at(&mut self.counts, bucket_index(ns as u64));
            // `record` fills a bucket up to u32::MAX exactly, then spills: one at a time past that.
            if let Some(v) = c.checked_add(u32::from(n)) {
                *c = v;
                self.add_n(ns, n);
                return;
            }
        }
        for _ in 0..n {
            self.record(ns);
        }
    }

    #[inline(always)]
    fn add(&mut self, ns: i64) {
        self.add_n(ns, 1);
    }

    /// The side figures of `n` samples of `ns` (the counts are the caller's).
    #[inline(always)]
    fn add_n(&mut self, ns: i64, n: u16) {
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
        self.sum += i128::from(ns) * i128::from(n);
        self.n += u64::from(n);
    }

    /// A negative value (into `neg`), or one beyond the limit (spilled).
    #[inline(never)]
    fn record_other(&mut self, ns: i64) {
        let v = ns.unsigned_abs();
        if ns >= 0 || v > MAX_TRACKABLE_NS {
            return self.spilled(ns);
        }
        let c = count_at(self.neg.get_or_insert_with(Vec::new), bucket_index(v));
        if *c == u32::MAX {
            return self.spilled(ns);
        }
        *c += 1;
        self.add(ns);
    }

    /// Forgets every value.
    pub fn clear(&mut self) {
        if let Some(used) = self.used() {
            self.counts[used].iter_mut().for_each(|c| *c = 0);
        }
        if let (Some(used), Some(neg)) = (self.neg_used(), self.neg.as_mut()) {
            neg[used].iter_mut().for_each(|c| *c = 0);
        }
        if let Some(spill) = self.spill.as_mut().filter(|s| s.count() > 0) {
            spill.reset();
        }
        (self.min, self.max, self.sum, self.n) = (i64::MAX, i64::MIN, 0, 0);
    }

    /// Values recorded since the last [`Latency::absorb`].
    pub fn count(&self) -> u64 {
        self.n + self.spill.as_ref().map_or(0, |s| s.count())
    }

    /// The buckets of `counts` that may hold counts: those of `min..=max`, or of 0..=max when some
    /// values are negative (an interval's values span a few of the 33 K, and the close visits only
    /// them). `None` when no value is positive or 0.
    fn used(&self) -> Option<std::ops::RangeInclusive<usize>> {
        (self.n > 0 && self.max >= 0).then(|| bucket_index(self.min.max(0) as u64)..=bucket_index(self.max as u64))
    }

    /// The buckets of `neg` that may hold counts: magnitudes 1..=-min. `None` when no value is negative.
    fn neg_used(&self) -> Option<std::ops::RangeInclusive<usize>> {
        (self.n > 0 && self.min < 0).then(|| bucket_index(1)..=bucket_index(self.min.unsigned_abs()))
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
    /// Arithmetic mean (rounded to the nearest ns, halves up); printed only beside the percentiles.
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
    // Rounded to the digits shown, the unit chosen after rounding (999,999 ns is 1.000ms, not
    // 1000.00us). Values are far below u64::MAX, so the added halves cannot overflow.
    if a < 1_000 {
        format!("{sign}{a}ns")
    } else if a < 999_995 {
        let r = (a + 5) / 10;
        format!("{sign}{}.{:02}us", r / 100, r % 100)
    } else if a < 999_999_500 {
        let r = (a + 500) / 1_000;
        format!("{sign}{}.{:03}ms", r / 1_000, r % 1_000)
    } else {
        let r = a / 1_000_000 + u64::from(a % 1_000_000 >= 500_000);
        format!("{sign}{}.{:03}s", r / 1_000, r % 1_000)
    }
}

/// A percentile for people: [`format_ns`]'s units, to 3 significant digits, which is what the
/// histogram keeps (a bucket is a 1/2,048 of its value wide: `324.86us` would claim ten times more).
/// Below 1 us the ns are whole and shown as they are.
pub fn format_ns_3(ns: i64) -> String {
    let a = ns.unsigned_abs();
    let sign = if ns < 0 { "-" } else { "" };
    if a < 1_000 {
        return format!("{sign}{a}ns");
    }
    // Rounded to 3 significant digits (halves up), the unit chosen after rounding (999,600 ns is
    // 1.00ms).
    let step = 10u64.pow(a.ilog10() - 2);
    let r = (a + step / 2) / step * step;
    let (unit, name) = match r {
        ..1_000_000 => (1_000, "us"),
        1_000_000..1_000_000_000 => (1_000_000, "ms"),
        _ => (1_000_000_000, "s"),
    };
    let whole = r / unit;
    // Decimals that make 3 digits with the whole part (none beyond 100 units).
    let decimals = 3u32.saturating_sub(whole.ilog10() + 1);
    if decimals == 0 {
        return format!("{sign}{whole}{name}");
    }
    let frac = r % unit / (unit / 10u64.pow(decimals));
    format!("{sign}{whole}.{frac:0width$}{name}", width = decimals as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Percentiles to 3 significant digits, each case by hand: the unit follows the rounding, whole ns
    /// below a microsecond, negatives alike.
    #[test]
    fn percentiles_show_the_three_digits_the_histogram_keeps() {
        let cases = [
            (0, "0ns"),
            (999, "999ns"),
            (1_000, "1.00us"),
            (1_433, "1.43us"),
            (1_435, "1.44us"),
            (6_150, "6.15us"),
            (18_670, "18.7us"),
            (99_949, "99.9us"),
            (99_950, "100us"),
            (324_863, "325us"),
            (999_499, "999us"),
            (999_500, "1.00ms"),
            (12_345_678, "12.3ms"),
            (999_600_000, "1.00s"),
            (1_234_000_000_000, "1230s"),
            (-18_670, "-18.7us"),
        ];
        for (ns, want) in cases {
            assert_eq!(format_ns_3(ns), want, "{ns}");
        }
    }

    /// Each percentile is the sample of rank ceil(q × n) (1-based), whatever n: 29 samples' p50 is the
    /// 15th. The samples are 1 to n ns: below 2,048 every value has a bucket of its own, so a
    /// percentile is exactly one sample. Ranks are counted here with integers on the sorted samples;
    /// the rank through a float quantile landed one sample high for hundreds of these counts.
    #[test]
    fn each_percentile_is_the_sample_of_its_rank() {
        let qs = [(1, 2), (9, 10), (99, 100), (999, 1_000), (9_999, 10_000)];
        for n in 1..=2_047u64 {
            let mut l = Latency::new();
            // Recorded in a shuffled order (7,919 is prime: a permutation of 1..=n), not sorted.
            for i in 0..n {
                l.record(((i * 7_919) % n + 1) as i64);
            }
            let s = l.summary();
            for (p, (num, den)) in s.percentiles.iter().zip(qs) {
                let rank = ((num * n).div_ceil(den)).max(1);
                assert_eq!(p.value_ns, rank as i64, "n {n} {}", p.label);
                assert_eq!(p.tail_samples, n - rank, "n {n} {}", p.label);
            }
        }
    }

    /// 0 ns is a latency of its own, not 1 ns: a µs capture stamps many A/B copies in one µs. 60 zeros
    /// and 40 samples of 5 µs: p50 is 0 and the histogram holds 60 at 0; the same through a Tally.
    #[test]
    fn zero_is_its_own_value() {
        let values: Vec<i64> = [vec![0; 60], vec![5_000; 40]].concat();
        let mut direct = Latency::new();
        let mut t = Tally::default();
        for &v in &values {
            direct.record(v);
            t.record(v);
        }
        let mut via = Latency::new();
        via.absorb(&mut t);
        for l in [&direct, &via] {
            assert_eq!(l.histogram().count_at(0), 60);
            assert_eq!(l.histogram().count_at(1), 0);
            let s = l.summary();
            let p: Vec<(&str, i64)> = s.percentiles.iter().map(|p| (p.label, p.value_ns)).collect();
            assert_eq!(p, [("p50", 0), ("p90", 5_000), ("p99", 5_000), ("p99.9", 5_000), ("p99.99", 5_000)]);
        }
    }

    #[test]
    fn a_tally_clears_every_bucket_it_used() {
        // Absorbing visits and clears only the buckets of min..=max: each interval must start empty,
        // whatever the ranges of the intervals before it.
        let intervals: [&[i64]; 5] = [
            &[0, 1, 1_000, 1_100, 2_047, 2_048, 40_000],
            &[1_000_000, 1_000_001, 5_000_000],
            &[0, 7, 2_048, 1 << 40],
            // Only zeros, then a 1 beside them.
            &[0, 0],
            &[1],
        ];
        let mut t = Tally::default();
        for values in intervals {
            values.iter().for_each(|v| t.record(*v));
            let mut l = Latency::new();
            l.absorb(&mut t);
            let mut direct = Latency::new();
            values.iter().for_each(|v| direct.record(*v));
            assert!(l.histogram() == direct.histogram(), "only this interval's values: {values:?}");
            assert_eq!(l.count(), values.len() as u64);
        }
    }

    /// A Tally absorbed into a Latency gives exactly what recording each value into the Latency gives:
    /// the histogram's every bucket, the side figures and the summary. Values span every bucket
    /// boundary kind: 0, the unit-resolution range, each power of two, the saturation limit and beyond,
    /// and negatives.
    #[test]
    fn tally_equals_recording_into_the_histogram() {
        let mut values: Vec<i64> = vec![0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096, -1, -5_000];
        for p in 11..43 {
            let v = 1i64 << p;
            values.extend([v - 1, v, v + 1, v + (v >> 11), v + (v >> 10) - 1]);
        }
        values.extend([MAX_TRACKABLE_NS as i64 - 1, MAX_TRACKABLE_NS as i64, MAX_TRACKABLE_NS as i64 + 1, i64::MAX]);
        // Pseudo-random values of every magnitude (a fixed LCG), a third of them negative.
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for k in 0..200_000 {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = ((x >> 20) >> (x % 44)) as i64;
            values.push(if k % 3 == 0 { -v } else { v });
        }
        let mut direct = Latency::new();
        let mut via = Latency::new();
        let mut t = Tally::default();
        for (k, &v) in values.iter().enumerate() {
            direct.record(v);
            t.record(v);
            if k % 50_000 == 0 {
                via.absorb(&mut t);
                assert_eq!(t.count(), 0);
            }
        }
        let last_absorb = (values.len() - 1) / 50_000 * 50_000;
        assert_eq!(t.count() as usize, values.len() - 1 - last_absorb);
        via.absorb(&mut t);
        assert!(direct.histogram() == via.histogram(), "every bucket equal");
        assert!(direct.neg_hist == via.neg_hist, "every bucket of the negatives equal");
        assert_eq!(direct.summary(), via.summary());
        assert_eq!((direct.negative(), direct.saturated), (via.negative(), via.saturated));
        assert_eq!(via.count(), values.len() as u64);
    }

    /// `record_n(v, n)` is `n` calls of `record(v)`, for values of every kind (0, in range, the limit
    /// and beyond, negatives) and for a bucket that fills up: it counts to u32::MAX exactly, then spills.
    #[test]
    fn recording_n_times_at_once_is_recording_n_times() {
        let values = [0, 1, 3_299, 1 << 30, MAX_TRACKABLE_NS as i64, MAX_TRACKABLE_NS as i64 + 1, -12, i64::MIN];
        for v in values {
            for n in [0, 1, 2, 7, 300] {
                // Empty, or a bucket 0, 1, 6 or 299 short of full: `record` counts to u32::MAX, then spills.
                for short in [None, Some(0), Some(1), Some(6), Some(299)] {
                    let (mut once, mut each) = (Tally::default(), Tally::default());
                    if let Some(short) = short {
                        let b = bucket_index((v.max(0) as u64).min(MAX_TRACKABLE_NS));
                        *count_at(&mut once.counts, b) = u32::MAX - short;
                        *count_at(&mut each.counts, b) = u32::MAX - short;
                    }
                    once.record_n(v, n);
                    (0..n).for_each(|_| each.record(v));
                    let what = format!("{v} x{n}, {short:?} short of full");
                    assert_eq!(once.counts, each.counts, "{what}");
                    assert_eq!(once.neg, each.neg, "{what}");
                    assert_eq!(
                        (once.min, once.max, once.sum, once.n),
                        (each.min, each.max, each.sum, each.n),
                        "{what}"
                    );
                    let spill = |t: &Tally| t.spill.as_deref().map(|s| (s.histogram().clone(), s.count()));
                    assert!(spill(&once) == spill(&each), "{what}");
                }
            }
        }
    }

    /// The mean is rounded to the nearest ns, halves up (it was truncated: 8,536.74 printed 8,536).
    #[test]
    fn the_mean_is_rounded() {
        let mean = |v: &[i64]| {
            let mut l = Latency::new();
            v.iter().for_each(|&x| l.record(x));
            l.summary().mean_ns
        };
        assert_eq!(mean(&[1, 2]), 2);
        assert_eq!(mean(&[1, 1, 2]), 1);
        assert_eq!(mean(&[1, 2, 2]), 2);
        assert_eq!(mean(&[-1, -2]), -1);
        assert_eq!(mean(&[-1, -2, -2]), -2);
        assert_eq!(mean(&[8_536, 8_537, 8_537, 8_537]), 8_537);
    }

    /// Every percentile lies within the exact minimum and maximum, saturated samples too: beyond an
    /// hour, the top bucket's value (an hour) was printed as a p50 below the minimum.
    #[test]
    fn percentiles_stay_within_min_and_max() {
        let mut l = Latency::new();
        for s in [7_200i64, 7_300, 7_400] {
            l.record(s * 1_000_000_000);
        }
        let s = l.summary();
        assert_eq!(s.saturated, 3);
        for p in &s.percentiles {
            assert!((s.min_ns..=s.max_ns).contains(&p.value_ns), "{}: {}", p.label, p.value_ns);
        }
        assert_eq!(s.percentiles[0].value_ns, 7_200_000_000_000);
    }

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

    /// Nearest rank over all samples, the negative ones included: a percentile that falls among
    /// them is theirs (it was the minimum), exact below 2,048 ns in magnitude, within 3 significant
    /// digits beyond, never below the exact minimum; through a merge and a Tally too.
    #[test]
    fn percentiles_among_negative_samples_are_theirs() {
        let pcts = |values: &[i64]| {
            let mut l = Latency::new();
            values.iter().for_each(|&v| l.record(v));
            let mut via = Latency::new();
            let mut t = Tally::default();
            values.iter().for_each(|&v| t.record(v));
            via.absorb(&mut t);
            assert_eq!(l.summary(), via.summary());
            l.summary().percentiles.iter().map(|p| p.value_ns).collect::<Vec<_>>()
        };
        // Ranks 2, 4, 4, 4, 4 of 4.
        assert_eq!(pcts(&[-100, -50, -10, 5]), [-50, 5, 5, 5, 5]);
        assert_eq!(pcts(&[-10, -100, 5, -50]), [-50, 5, 5, 5, 5], "whatever the order");
        // All negative (a capture clock behind the exchange's): ranks 2, 3, 3, 3, 3 of 3.
        assert_eq!(pcts(&[-300, -200, -100]), [-200, -100, -100, -100, -100]);
        // 1..=1000 µs below zero: p50 is the 500th smallest, -501 µs (within 0.1 %, its bucket's far
        // edge), p99.99 the 1000th, -1 µs.
        let values: Vec<i64> = (1..=1000).map(|i| -i * 1_000).collect();
        let p = pcts(&values);
        assert!((-501_000 - 501..=-501_000).contains(&p[0]), "{}", p[0]);
        assert_eq!(p[4], -1_000);
        // Beyond an hour either way a value is saturated (counted so): its percentile is the top
        // bucket's, as for positive values.
        let top = -(MAX_TRACKABLE_NS as i64);
        assert!((top - top / -1000..=top).contains(&pcts(&[i64::MIN, 1])[0]));
        // ... but never above the exact maximum: a lone sample of -2 h is every percentile.
        assert_eq!(pcts(&[2 * top]), [2 * top; 5]);
        // Merged: the negatives of both sides.
        let (mut a, mut b) = (Latency::new(), Latency::new());
        a.record(-30);
        b.record(-20);
        b.record(-10);
        a.merge(&b);
        assert_eq!(a.summary().percentiles[0].value_ns, -20);
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
        assert_eq!(format_ns(12_345), "12.35us", "rounded half up");
        assert_eq!(format_ns(12_344), "12.34us");
        assert_eq!(format_ns(1_262_000), "1.262ms");
        assert_eq!(format_ns(2_500_000_000), "2.500s");
        assert_eq!(format_ns(-1_500), "-1.50us");
        // Each unit's edges: rounding, not truncation, and the unit chosen after rounding.
        let edges = [
            (999, "999ns"),
            (1_000, "1.00us"),
            (1_999, "2.00us"),
            (9_999, "10.00us"),
            (999_994, "999.99us"),
            (999_995, "1.000ms"),
            (999_999, "1.000ms"),
            (999_999_499, "999.999ms"),
            (999_999_500, "1.000s"),
            (4_999_999_999_999, "5000.000s"),
        ];
        for (ns, text) in edges {
            assert_eq!(format_ns(ns), text, "{ns}");
            assert_eq!(format_ns(-ns), format!("-{text}"), "{}", -ns);
        }
        assert_eq!(format_ns(i64::MIN), "-9223372036.855s");
        assert_eq!(format_ns(i64::MAX), "9223372036.855s");
    }
}
