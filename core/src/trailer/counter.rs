//! Keyframe engine shared by the wrapping-counter formats ([`super::fusion`], [`super::arista7150`]).
//!
//! Per device it keeps the newest keyframe: counter value `K`, UTC `U`, record time `R`, and the time
//! per tick as an exact fraction `num/den` ns. A frame's counter `c` (width 31 or 32 bits) becomes
//!
//! ```text
//! d0 = (c - K) mod 2^w                                   ticks since the keyframe, one wrap ambiguous
//! d  = d0 + n * 2^w, n chosen so d is nearest O + (record time - R) in ticks (multi-wrap, before-keyframe)
//!      (no record time: d0, or d0 - 2^w when d0 >= 3/4 * 2^w)
//! t  = U + d * num / den   -> time_ns = floor, sub_ns = remainder in 2^-32 ns   (integers only)
//! ```
//! where `O` is the time from the keyframe's UTC sample to its emission (7150 `kf_timestamp - asic_time`,
//! 0.5-0.7 s in the samples; 0 for Fusion), the moment its record time `R` refers to.
//! A candidate is accepted only when `t - U` agrees with `O + record time - R` within
//! `AGREE_NS + |record time - R| / 10^4` (clock drift of 100 ppm): garbage in the last 4 bytes of an
//! unstamped frame (LLDP, frames the switch generated) almost never does. With several devices the one
//! that agrees best wins. Quality:
//! - [`ClockQuality::EXTENDED`]: `d` lies outside the window `[-2^w/4, 3/4*2^w)` so the record clock chose
//!   the number of wraps;
//! - [`ClockQuality::STALE_KEYFRAME`]: the keyframe is more than [`STALE_AGE_NS`] older than the frame;
//!   beyond [`REJECT_AGE_NS`] the frame is not stamped at all;
//! - [`ClockQuality::UNSYNCED`]: the keyframe says the device last synchronised more than
//!   [`SYNC_LOST_NS`] before it.

use super::arista7150::{self, KEYFRAME_PROTO};
use super::fusion::{self, NativeKeyframe};
use super::{Bounds, TrailerKind, TrailerStamp, fcs_valid, near_record, rd};
use crate::dissect::Dissection;
use crate::frame::Frame;
use crate::time::ClockQuality;
use std::net::{IpAddr, Ipv4Addr};

/// Base tolerance between counter time and record time since the keyframe (the Cisco decoder: 10 ms).
pub const AGREE_NS: i64 = 10_000_000;
/// Keyframe older than this (record time): stamps are flagged stale (keyframes come at 1-2 Hz).
pub const STALE_AGE_NS: i64 = 5_000_000_000;
/// Keyframe older than this (record time): no stamp (SolarCapture's `no_sync_ms`).
pub const REJECT_AGE_NS: i64 = 60_000_000_000;
/// Time since the device's last clock sync beyond which stamps are flagged unsynced (SolarCapture's
/// `lost_sync_ms`).
pub const SYNC_LOST_NS: i64 = 10_000_000_000;
/// Keyframe UTC must lie within this of the record time (as the Metamako heuristic).
pub const KEYFRAME_WINDOW_S: i64 = 30 * 86_400;
/// v1 frequency estimation: shortest keyframe interval used, and largest error accepted.
const FREQ_MIN_INTERVAL_NS: i64 = 500_000_000;
const FREQ_MAX_ERR_PPM: u128 = 20_000;
/// Devices tracked per input (bounds hostile input).
const MAX_DEVICES: usize = 64;

/// Time per tick, `num / den` ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// Numerator.
    pub num: u128,
    /// Denominator (never 0).
    pub den: u128,
}

impl Rate {
    /// 350 MHz: 20/7 ns.
    pub const NOMINAL: Rate = Rate { num: 20, den: 7 };

    /// `ticks * num / den` as (floor ns, remainder in 2^-32 ns). `None` on overflow.
    pub fn ticks_to_ns(self, ticks: i64) -> Option<(i64, u32)> {
        let exact = (ticks as i128).checked_mul(i128::try_from(self.num).ok()?)?;
        let den = i128::try_from(self.den).ok()?;
        let ns = exact.div_euclid(den);
        let rem = exact.rem_euclid(den) as u128; // < den
        let sub = (rem.checked_mul(1 << 32)? / self.den) as u32;
        Some((i64::try_from(ns).ok()?, sub))
    }

    /// Record-time `ns` in ticks (rounded toward zero).
    fn ns_to_ticks(self, ns: i64) -> i128 {
        // num is never 0 for an accepted rate.
        (ns as i128).saturating_mul(self.den as i128) / (self.num.max(1) as i128)
    }

    /// Within `ppm` of nominal 350 MHz.
    fn near_nominal(self, ppm: u128) -> bool {
        // |num/den - 20/7| <= 20/7 * ppm/1e6  <=>  |7 num - 20 den| * 1e6 <= 20 den ppm
        let a = self.num.saturating_mul(7);
        let b = self.den.saturating_mul(20);
        a.abs_diff(b).saturating_mul(1_000_000) <= b.saturating_mul(ppm)
    }
}

/// One device's newest keyframe.
#[derive(Debug, Clone, Copy)]
struct Device {
    kind: TrailerKind,
    id: Option<u32>,
    /// Frame field is the 7150 bit-7-free tick (31 bits) rather than a plain 32-bit counter.
    compressed: bool,
    ticks: u64,
    utc_ns: i64,
    rec_ns: Option<i64>,
    /// Ticks from `ticks` (the UTC sample) to the moment the keyframe left the device, which is what its
    /// record time stamps (7150: `kf_timestamp - asic_time`, ~0.5-0.7 s in the samples; else 0).
    ref_off: i64,
    rate: Rate,
    sync_age_ns: Option<i64>,
    seq: u64,
    /// v1: the keyframe the next frequency estimate is measured from, and the current estimate.
    anchor: Option<(u64, i64)>,
    estimate: Option<Rate>,
}

impl Device {
    fn bits(&self) -> u32 {
        if self.compressed { 31 } else { 32 }
    }
}

/// Outcome of looking at a frame as a keyframe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyframeSeen {
    /// Not a keyframe.
    No,
    /// A keyframe of this kind, state updated.
    Accepted(TrailerKind),
    /// Shaped like a keyframe, but invalid.
    Rejected,
}

/// Why a counter was not decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CounterMiss {
    NoRoom,
    NoDevice,
    Disagrees,
    TooOld,
}

impl CounterMiss {
    pub(crate) fn reason(self) -> &'static str {
        match self {
            CounterMiss::NoRoom => "no room for a 4-byte counter after the packet",
            CounterMiss::NoDevice => "no keyframe of this kind yet",
            CounterMiss::Disagrees => {
                "the counter does not agree with the record clock since the last keyframe (more than 10 ms off): \
                 not a counter-stamped frame, or the wrong format"
            }
            CounterMiss::TooOld => "newest keyframe more than 60 s older than the frame",
        }
    }
}

/// Keyframe state of one input.
#[derive(Debug, Clone, Default)]
pub(crate) struct CounterState {
    devices: Vec<Device>,
    seq: u64,
}

/// Parsed keyframe before it is merged into the state.
struct Parsed {
    kind: TrailerKind,
    id: Option<u32>,
    compressed: bool,
    ticks: u64,
    utc: u64,
    ref_off: i64,
    rate: Option<Rate>,
    sync_age_ns: Option<i64>,
}

impl CounterState {
    pub(crate) fn is_empty(&self) -> bool {
        self.devices.is_empty()
    }

    /// Recognises and consumes a keyframe; `only` restricts to one kind.
    pub(crate) fn try_keyframe(
        &mut self,
        frame: &Frame<'_>,
        d: &Dissection,
        only: Option<TrailerKind>,
    ) -> KeyframeSeen {
        let Some(p) = parse_keyframe(frame.data, d) else { return KeyframeSeen::No };
        if only.is_some_and(|k| k != p.kind) {
            return KeyframeSeen::No;
        }
        let Ok(utc) = i64::try_from(p.utc) else { return KeyframeSeen::Rejected };
        if frame.has_ts() && !near_record(frame, utc.div_euclid(1_000_000_000), KEYFRAME_WINDOW_S) {
            return KeyframeSeen::Rejected;
        }
        if p.rate.is_some_and(|r| r.den == 0 || r.num == 0 || !r.near_nominal(500_000)) {
            // A tick 50 % off 350 MHz (or a zero field) is not a device we know.
            return KeyframeSeen::Rejected;
        }
        self.seq += 1;
        let rec_ns = frame.has_ts().then_some(frame.ts_ns);
        let pos = self.devices.iter().position(|x| x.kind == p.kind && x.id == p.id);
        let dev = match pos {
            Some(i) => &mut self.devices[i],
            None if self.devices.len() < MAX_DEVICES => {
                self.devices.push(Device {
                    kind: p.kind,
                    id: p.id,
                    compressed: p.compressed,
                    ticks: 0,
                    utc_ns: 0,
                    rec_ns: None,
                    ref_off: 0,
                    rate: Rate::NOMINAL,
                    sync_age_ns: None,
                    seq: 0,
                    anchor: None,
                    estimate: None,
                });
                self.devices.last_mut().unwrap_or_else(|| unreachable!("just pushed"))
            }
            None => return KeyframeSeen::Rejected,
        };
        let rate = match p.rate {
            Some(r) => r,
            None => {
                // v1: measure ticks per ns against an earlier keyframe at least 0.5 s before.
                match dev.anchor {
                    Some((t0, u0)) if utc - u0 >= FREQ_MIN_INTERVAL_NS => {
                        let est = Rate { num: (utc - u0) as u128, den: p.ticks.wrapping_sub(t0) as u128 };
                        if est.den != 0 && est.near_nominal(FREQ_MAX_ERR_PPM) && utc - u0 <= REJECT_AGE_NS {
                            dev.estimate = Some(est);
                        } else {
                            dev.estimate = None;
                        }
                        dev.anchor = Some((p.ticks, utc));
                    }
                    Some((_, u0)) if utc >= u0 => {}
                    _ => dev.anchor = Some((p.ticks, utc)),
                }
                dev.estimate.unwrap_or(Rate::NOMINAL)
            }
        };
        dev.compressed = p.compressed;
        dev.ticks = p.ticks & ((1u64 << dev.bits()) - 1);
        dev.utc_ns = utc;
        dev.rec_ns = rec_ns;
        dev.ref_off = p.ref_off;
        dev.rate = rate;
        dev.sync_age_ns = p.sync_age_ns;
        dev.seq = self.seq;
        KeyframeSeen::Accepted(p.kind)
    }

    /// Rejected v1 frequency estimates so far are not tracked per device; see `TrailerStats`.
    /// Decodes the counter at the end of `frame` against the keyframes of kind `only` (or any).
    pub(crate) fn decode(
        &self,
        frame: &Frame<'_>,
        d: &Dissection,
        only: Option<TrailerKind>,
    ) -> Result<TrailerStamp, CounterMiss> {
        let b = frame.data;
        let bounds = Bounds::of(frame, d);
        let with_fcs = match frame.fcs_len {
            Some(4) => true,
            Some(0) => false,
            _ => fcs_valid(b),
        };
        let trailer_len = if with_fcs { 8 } else { 4 };
        let at = b.len().checked_sub(trailer_len).ok_or(CounterMiss::NoRoom)?;
        if at < bounds.min_start.max(14) {
            return Err(CounterMiss::NoRoom);
        }
        let field = rd::u32(b, at).ok_or(CounterMiss::NoRoom)?;
        let rec = frame.has_ts().then_some(frame.ts_ns);

        let mut best: Option<(i64, u64, TrailerStamp)> = None; // (|residual|, seq, stamp)
        let mut too_old = false;
        for dev in self.devices.iter().filter(|x| only.is_none_or(|k| k == x.kind)) {
            match decode_with(dev, field, rec) {
                Ok((resid, stamp)) => {
                    let better = match &best {
                        None => true,
                        Some((r, seq, _)) => resid < *r || (resid == *r && dev.seq > *seq),
                    };
                    if better {
                        best = Some((resid, dev.seq, TrailerStamp { trailer_len, ..stamp }));
                    }
                }
                Err(CounterMiss::TooOld) => too_old = true,
                Err(_) => {}
            }
        }
        match best {
            Some((_, _, s)) => Ok(s),
            None if too_old => Err(CounterMiss::TooOld),
            None if self.devices.iter().all(|x| only.is_some_and(|k| k != x.kind)) => Err(CounterMiss::NoDevice),
            None => Err(CounterMiss::Disagrees),
        }
    }
}

/// Extends and converts `field` against one device's keyframe: (|residual| ns, stamp).
fn decode_with(dev: &Device, field: u32, rec: Option<i64>) -> Result<(i64, TrailerStamp), CounterMiss> {
    let bits = dev.bits();
    let wrap = 1i64 << bits;
    let c = if dev.compressed { arista7150::ticks_from_field(field) as i64 } else { field as i64 };
    let d0 = (c - dev.ticks as i64).rem_euclid(wrap);
    let rec_delta = match (rec, dev.rec_ns) {
        (Some(r), Some(k)) => Some(r.saturating_sub(k)),
        _ => None,
    };
    if rec_delta.is_some_and(|x| x.saturating_abs() > REJECT_AGE_NS) {
        return Err(CounterMiss::TooOld);
    }
    // Device time since the UTC sample that the record clock predicts for this frame.
    let expect_ns = rec_delta.map(|rd| dev.rate.ticks_to_ns(dev.ref_off).map_or(rd, |(o, _)| o.saturating_add(rd)));
    let delta = match expect_ns {
        Some(e) => {
            let expect = dev.rate.ns_to_ticks(e);
            let n = (expect - d0 as i128 + (wrap as i128 / 2)).div_euclid(wrap as i128);
            d0 as i128 + n * wrap as i128
        }
        None if d0 >= wrap / 4 * 3 => (d0 - wrap) as i128,
        None => d0 as i128,
    };
    let delta = i64::try_from(delta).map_err(|_| CounterMiss::Disagrees)?;
    let (ns, sub_ns) = dev.rate.ticks_to_ns(delta).ok_or(CounterMiss::Disagrees)?;
    let resid = match (rec_delta, expect_ns) {
        (Some(rd), Some(e)) => {
            let r = ns.saturating_sub(e).saturating_abs();
            if r > AGREE_NS + rd.saturating_abs() / 10_000 {
                return Err(CounterMiss::Disagrees);
            }
            r
        }
        _ => 0,
    };
    let mut quality = ClockQuality::default();
    if !(-(wrap / 4)..wrap / 4 * 3).contains(&delta) {
        quality |= ClockQuality::EXTENDED;
    }
    if rec_delta.unwrap_or(ns).saturating_abs() > STALE_AGE_NS {
        quality |= ClockQuality::STALE_KEYFRAME;
    }
    if dev.sync_age_ns.is_some_and(|a| a > SYNC_LOST_NS) {
        quality |= ClockQuality::UNSYNCED;
    }
    let stamp = TrailerStamp {
        kind: dev.kind,
        time_ns: dev.utc_ns.saturating_add(ns),
        sub_ns,
        device: dev.id,
        port: None,
        quality,
        trailer_len: 0,
        keyframe_age_ns: Some(ns),
        tai: false,
    };
    Ok((resid, stamp))
}

/// Recognises the three keyframe shapes.
fn parse_keyframe(b: &[u8], d: &Dissection) -> Option<Parsed> {
    if d.ethertype == fusion::ETHERTYPE_KEYFRAME {
        return native(b.get(d.l3_offset..)?);
    }
    let ip = d.ip?;
    if ip.proto != KEYFRAME_PROTO {
        return None;
    }
    let (IpAddr::V4(src), IpAddr::V4(dst)) = (ip.src, ip.dst) else { return None };
    let ihl = ((*b.get(ip.offset)? & 0x0F) as usize) * 4;
    let payload = b.get(ip.offset + ihl..ip.end)?;
    if payload.len() == fusion::NATIVE_LEN {
        return native(payload);
    }
    let k = arista7150::Keyframe::parse(payload)?;
    let kind = if src == Ipv4Addr::UNSPECIFIED && dst == Ipv4Addr::BROADCAST {
        TrailerKind::ExablazeFusion
    } else {
        TrailerKind::Arista7150
    };
    let rate = k.skew.map(|(n, dd)| Rate { num: 20 * n as u128, den: 7 * dd as u128 });
    // kf_timestamp counts the same ticks as asic_time and marks when the keyframe was sent; trusted when
    // it is 0..10 s after the UTC sample (at the 350 MHz nominal).
    let ref_off = k.kf_timestamp.wrapping_sub(k.asic_time) as i64;
    let ref_off = if (0..=3_500_000_000).contains(&ref_off) { ref_off } else { 0 };
    Some(Parsed {
        kind,
        id: Some(k.device as u32),
        compressed: true,
        ticks: k.asic_time,
        utc: k.utc_nanos,
        ref_off,
        rate,
        sync_age_ns: if kind == TrailerKind::Arista7150 { k.sync_age_ns() } else { None },
    })
}

fn native(p: &[u8]) -> Option<Parsed> {
    let k = NativeKeyframe::parse(p)?;
    let sync_age_ns = if k.last_sync != 0 && k.last_sync <= k.counter && k.freq != 0 {
        let ticks = (k.counter - k.last_sync) as u128;
        i64::try_from(ticks * 1_000_000_000 / k.freq as u128).ok()
    } else {
        None
    };
    Some(Parsed {
        kind: TrailerKind::ExablazeFusion,
        id: None,
        compressed: false,
        ticks: k.counter,
        utc: k.utc,
        ref_off: 0,
        rate: Some(Rate { num: 1_000_000_000, den: k.freq as u128 }),
        sync_age_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_conversion_exact() {
        // 7 ticks at 350 MHz = 20 ns exactly; 1 tick = 2 + 6/7 ns.
        assert_eq!(Rate::NOMINAL.ticks_to_ns(7), Some((20, 0)));
        assert_eq!(Rate::NOMINAL.ticks_to_ns(1), Some((2, ((6u128 << 32) / 7) as u32)));
        // Negative: -1 tick = -2.857 ns = -3 + 1/7.
        assert_eq!(Rate::NOMINAL.ticks_to_ns(-1), Some((-3, ((1u128 << 32) / 7) as u32)));
        assert!(Rate::NOMINAL.near_nominal(1));
        assert!(Rate { num: 1_000_000_000, den: 350_000_000 }.near_nominal(0));
        assert!(!Rate { num: 1_000_000_000, den: 318_000_000 }.near_nominal(20_000));
    }
}
