//! TSC ticks to wall-clock nanoseconds: a continuous least-squares fit of (TSC, CLOCK_REALTIME) pairs.
//!
//! Each pair is taken with the minimum-delay method: of `attempts` tries of `t1 = TSC; r = REALTIME;
//! t2 = TSC`, the one with the smallest `t2 - t1` is kept, its TSC taken as `(t1 + t2) / 2` and its
//! uncertainty as `(t2 - t1) / 2`. The fit is redone over a sliding window of pairs each time one is
//! added. Integer arithmetic only: the slope is nanoseconds per tick in Q32 fixed point (2^-32 ns per
//! tick: 2 ns over an hour at 2.6 GHz), sums in i128.
//!
//! Every converted time carries the fit's error bound: the largest residual of the window plus the
//! largest pair uncertainty.

use std::collections::VecDeque;

use crate::shm::realtime_ns;
use crate::tsc;

/// One (TSC, CLOCK_REALTIME) pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pair {
    /// TSC at the middle of the read.
    pub tsc: u64,
    /// CLOCK_REALTIME, ns since the Unix epoch.
    pub ns: i64,
    /// `t2 - t1` of the kept attempt, ticks.
    pub delay_ticks: u64,
}

/// Takes one pair with the minimum-delay method.
pub fn take_pair(attempts: u32) -> Pair {
    let mut best = Pair { tsc: 0, ns: 0, delay_ticks: u64::MAX };
    for _ in 0..attempts.max(1) {
        let t1 = tsc::rdtsc_fenced();
        let ns = realtime_ns();
        let t2 = tsc::rdtsc_fenced();
        let d = t2.wrapping_sub(t1);
        if d < best.delay_ticks {
            best = Pair { tsc: t1 + d / 2, ns, delay_ticks: d };
        }
    }
    best
}

/// A fitted line `ns = y0 + (tsc - x0) * slope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    pub x0: u64,
    pub y0: i64,
    /// ns per tick × 2^32.
    pub slope_q32: u64,
    /// Largest |pair - line| in the window, ns.
    pub residual_ns: u64,
    /// Largest pair uncertainty in the window, ns.
    pub half_delay_ns: u64,
    /// Pairs in the fit.
    pub samples: usize,
    /// Time covered by the window, ns.
    pub span_ns: i64,
}

/// A converted time with its error bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Converted {
    pub ns: i64,
    pub err_ns: u64,
}

impl Fit {
    /// CLOCK_REALTIME ns of a TSC value.
    pub fn to_ns(&self, tsc: u64) -> i64 {
        let dx = tsc as i128 - self.x0 as i128;
        (self.y0 as i128 + ((dx * self.slope_q32 as i128) >> 32)) as i64
    }

    /// A TSC value converted, with the fit's error bound.
    pub fn convert(&self, tsc: u64) -> Converted {
        Converted { ns: self.to_ns(tsc), err_ns: self.error_ns() }
    }

    /// A duration in ticks, in ns.
    pub fn ticks_to_ns(&self, ticks: u64) -> u64 {
        ((ticks as u128 * self.slope_q32 as u128) >> 32) as u64
    }

    /// Error bound of a converted time: largest residual plus largest pair uncertainty.
    pub fn error_ns(&self) -> u64 {
        self.residual_ns + self.half_delay_ns
    }

    /// TSC frequency implied by the slope, Hz.
    pub fn freq_hz(&self) -> u64 {
        ((1_000_000_000u128 << 32) / self.slope_q32.max(1) as u128) as u64
    }
}

/// Least-squares fit of `pairs` (at least two with distinct TSC), or None.
pub fn fit(pairs: &[Pair]) -> Option<Fit> {
    let n = pairs.len() as i128;
    if n < 2 {
        return None;
    }
    let (bx, by) = (pairs[0].tsc, pairs[0].ns);
    let xs = pairs.iter().map(|p| p.tsc as i128 - bx as i128);
    let ys = pairs.iter().map(|p| p.ns as i128 - by as i128);
    let mx = xs.clone().sum::<i128>() / n;
    let my = ys.clone().sum::<i128>() / n;
    let (mut sxx, mut sxy) = (0i128, 0i128);
    for (x, y) in xs.zip(ys) {
        let (dx, dy) = (x - mx, y - my);
        sxx = sxx.checked_add(dx.checked_mul(dx)?)?;
        sxy = sxy.checked_add(dx.checked_mul(dy)?)?;
    }
    // Keep (sxy << 32) inside i128.
    while sxy.unsigned_abs() >= 1 << 94 {
        sxy >>= 1;
        sxx >>= 1;
    }
    if sxx <= 0 || sxy <= 0 {
        return None;
    }
    let slope_q32 = u64::try_from((sxy << 32) / sxx).ok()?;
    let mut f = Fit {
        x0: (bx as i128 + mx) as u64,
        y0: (by as i128 + my) as i64,
        slope_q32,
        residual_ns: 0,
        half_delay_ns: 0,
        samples: pairs.len(),
        span_ns: pairs.iter().map(|p| p.ns).max()? - pairs.iter().map(|p| p.ns).min()?,
    };
    f.residual_ns = pairs.iter().map(|p| (p.ns - f.to_ns(p.tsc)).unsigned_abs()).max()?;
    f.half_delay_ns = pairs.iter().map(|p| f.ticks_to_ns(p.delay_ticks.div_ceil(2))).max()?;
    Some(f)
}

/// The continuous fit: add a pair now and then (e.g. every 100 ms), read the current fit.
#[derive(Debug, Clone)]
pub struct Calibrator {
    pairs: VecDeque<Pair>,
    /// Pairs kept in the window.
    pub window: usize,
    /// Attempts per pair (minimum-delay method).
    pub attempts: u32,
    fit: Option<Fit>,
    /// Whether the CPU declares an invariant TSC.
    pub invariant: bool,
}

impl Calibrator {
    /// A calibrator over `window` pairs; checks the invariant TSC (see [`Calibrator::invariant`]).
    pub fn new(window: usize) -> Self {
        Calibrator {
            pairs: VecDeque::new(),
            window: window.max(2),
            attempts: 16,
            fit: None,
            invariant: tsc::invariant_tsc(),
        }
    }

    /// Takes a pair and refits.
    pub fn sample(&mut self) -> Option<&Fit> {
        let p = take_pair(self.attempts);
        self.add(p)
    }

    /// Adds a pair and refits.
    pub fn add(&mut self, p: Pair) -> Option<&Fit> {
        self.pairs.push_back(p);
        while self.pairs.len() > self.window {
            self.pairs.pop_front();
        }
        let v: Vec<Pair> = self.pairs.iter().copied().collect();
        if let Some(f) = fit(&v) {
            self.fit = Some(f);
        }
        self.fit.as_ref()
    }

    /// The current fit.
    pub fn fit(&self) -> Option<&Fit> {
        self.fit.as_ref()
    }
}

/// The kernel's idea of the TSC frequency, in kHz, and where it came from: sysfs `tsc_freq_khz`, else the
/// `tsc: Refined TSC clocksource calibration` / `tsc: Detected ... MHz` line of the kernel log, else CPUID.
pub fn kernel_tsc_khz() -> Option<(u64, String)> {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/tsc_freq_khz")
        && let Ok(k) = s.trim().parse()
    {
        return Some((k, "sysfs tsc_freq_khz".into()));
    }
    for cmd in [&["dmesg"][..], &["journalctl", "-k", "-b", "--no-pager", "-q"][..]] {
        let Ok(out) = std::process::Command::new(cmd[0]).args(&cmd[1..]).output() else { continue };
        let log = String::from_utf8_lossy(&out.stdout);
        for needle in ["Refined TSC clocksource calibration: ", "tsc: Detected "] {
            if let Some(line) = log.lines().rfind(|l| l.contains(needle)) {
                let tail = &line[line.find(needle)? + needle.len()..];
                if let Some(khz) = tail.split_whitespace().next().and_then(parse_mhz_as_khz) {
                    return Some((khz, format!("{}: {}", cmd[0], line.trim())));
                }
            }
        }
    }
    tsc::cpuid_tsc_khz().map(|k| (k, "cpuid leaf 0x15/0x16".into()))
}

/// "2596.144" (MHz, up to 3 decimals) -> 2596144 (kHz).
pub fn parse_mhz_as_khz(s: &str) -> Option<u64> {
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if frac.len() > 3 || int.is_empty() {
        return None;
    }
    let frac_khz: u64 = if frac.is_empty() { 0 } else { frac.parse::<u64>().ok()? * 10u64.pow(3 - frac.len() as u32) };
    Some(int.parse::<u64>().ok()? * 1000 + frac_khz)
}

/// The kernel's NTP rate adjustment of CLOCK_REALTIME against its clocksource, in parts per billion:
/// `freq` (ppm with a 16-bit fraction) plus the `tick` deviation from its nominal 1e6/USER_HZ µs.
pub fn realtime_rate_adjust_ppb() -> Option<i64> {
    // SAFETY: a zeroed timex with modes = 0 only reads the kernel's state.
    let mut tx: libc::timex = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::adjtimex(&mut tx) } < 0 {
        return None;
    }
    let freq_ppb = tx.freq as i64 * 1000 / 65536;
    // SAFETY: sysconf has no preconditions.
    let user_hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as i64;
    let nominal_tick = 1_000_000 / user_hz;
    let tick_ppb = (tx.tick as i64 - nominal_tick) * 1_000_000_000 / nominal_tick;
    Some(freq_ppb + tick_ppb)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_is_recovered() {
        // ns = 1e18 + (tsc - 1000) * 0.5 exactly: slope 0.5 ns/tick = 2 GHz.
        let pairs: Vec<Pair> = (0..10)
            .map(|i| Pair {
                tsc: 1000 + i * 2_000_000,
                ns: 1_000_000_000_000_000_000 + i as i64 * 1_000_000,
                delay_ticks: 40,
            })
            .collect();
        let f = fit(&pairs).unwrap();
        assert_eq!(f.slope_q32, 1 << 31);
        assert_eq!(f.freq_hz(), 2_000_000_000);
        assert_eq!(f.residual_ns, 0);
        assert_eq!(f.half_delay_ns, 10); // 20 ticks at 0.5 ns
        assert_eq!(f.to_ns(1000 + 4_000_000), 1_000_000_000_002_000_000);
        assert_eq!(f.ticks_to_ns(2600), 1300);
        assert_eq!(f.span_ns, 9_000_000);
    }

    #[test]
    fn residual_is_the_largest_deviation() {
        // Two pairs at the same TSC, 30 ns above and below the line ns = tsc, between two on it: the
        // least-squares line stays ns = tsc (slope 1) and the largest residual is 30.
        let p = |tsc: u64, ns: i64| Pair { tsc, ns, delay_ticks: 0 };
        let pairs = [p(0, 0), p(1000, 1030), p(1000, 970), p(2000, 2000)];
        let f = fit(&pairs).unwrap();
        assert_eq!(f.slope_q32, 1 << 32);
        assert_eq!(f.residual_ns, 30);
    }

    #[test]
    fn mhz_parsing() {
        assert_eq!(parse_mhz_as_khz("2596.144"), Some(2_596_144));
        assert_eq!(parse_mhz_as_khz("2600"), Some(2_600_000));
        assert_eq!(parse_mhz_as_khz("2600.5"), Some(2_600_500));
        assert_eq!(parse_mhz_as_khz("x"), None);
    }
}
