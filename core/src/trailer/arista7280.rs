//! Arista 7280 (R/R2/R3) / DANZ TapAgg timestamp header, EtherType 0xD28B (formats.md §4.4).
//!
//! Sources: tcpdump `print-arista.c` (2026 snapshot: version nibbles), SolarCapture `sc_arista7280_ts.h`,
//! `sc_arista7280_48bit_ts.c`, `sc_arista7280_64bit_ts.c`; tcpdump issues #668, #774, #955. No sample
//! capture exists: the tests are byte literals built from this layout.
//!
//! ```text
//! dst MAC (6) | src MAC (6) | 0xD28B (2) | subtype 0x0001 (2) | version (2) | timestamp (8 or 6) | EtherType ...
//!
//! version: | timescale (8): 0 TAI, 1 UTC | format (4): 1 64-bit, 2 48-bit | hw (4): 0 R/R2, 1 R3 |
//!          0x0010 64b TAI, 0x0110 64b UTC, 0x0020 48b TAI, 0x0120 48b UTC; R3: 0x0011 0x0111 0x0021 0x0121
//! 64-bit:  seconds u32 | nanoseconds u32
//! 48-bit:  seconds u16 (low 16 bits) | nanoseconds u32 (30 bits used)
//! ```
//! The 48-bit form keeps only the low 16 bits of the seconds: the upper ones are restored from the record
//! time, choosing the value nearest it (valid while device and capture clocks differ by less than 2^15 s,
//! about 9 h), and the stamp is flagged [`ClockQuality::EXTENDED`]. [`dissect`](crate::dissect::dissect)
//! already skips the header, so `trailer_len` is 0. Any other subtype, timescale, format or hw value is not
//! decoded. TAI stamps are returned as TAI (`tai = true`), not converted.
//!
//! Not handled: the 48-bit variant that overwrites the source MAC (no EtherType marks it), and the
//! 64-bit "lower 34 bits rolled in transit" +4 s error SolarCapture corrects (the 64-bit form is
//! deprecated).

use super::{Miss, TrailerKind, TrailerStamp, rd};
use crate::dissect::Dissection;
use crate::frame::Frame;
use crate::time::ClockQuality;

/// Subtype of the timestamp header.
pub const SUBTYPE_TIMESTAMP: u16 = 0x0001;

/// Decoded version word.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version {
    /// True for TAI, false for UTC.
    pub tai: bool,
    /// True for the 64-bit form, false for 48-bit.
    pub full: bool,
    /// True for R3 hardware.
    pub r3: bool,
}

impl Version {
    /// Parses the version word; `None` for values no device is documented to send.
    pub fn parse(v: u16) -> Option<Version> {
        let tai = match v >> 8 {
            0 => true,
            1 => false,
            _ => return None,
        };
        let full = match (v >> 4) & 0xF {
            1 => true,
            2 => false,
            _ => return None,
        };
        let r3 = match v & 0xF {
            0 => false,
            1 => true,
            _ => return None,
        };
        Some(Version { tai, full, r3 })
    }
}

/// Restores the upper bits of 16-bit seconds from a reference: the value ≡ `sec16` (mod 2^16) nearest
/// `ref_sec`.
pub fn restore_seconds(sec16: u16, ref_sec: i64) -> i64 {
    let base = ref_sec - ref_sec.rem_euclid(1 << 16) + sec16 as i64;
    let d = base - ref_sec;
    if d > 1 << 15 {
        base - (1 << 16)
    } else if d <= -(1 << 15) {
        base + (1 << 16)
    } else {
        base
    }
}

/// Decodes the 0xD28B header that `dissect` located.
pub(crate) fn decode(frame: &Frame<'_>, d: &Dissection) -> Result<TrailerStamp, Miss> {
    let h = d.tap_header.ok_or("no Arista 0xD28B header")?;
    let b = frame.data;
    let at = h.offset + 2;
    if rd::u16(b, at) != Some(SUBTYPE_TIMESTAMP) {
        return Err("0xD28B header subtype is not 1 (timestamp)");
    }
    let v = rd::u16(b, at + 2).ok_or("0xD28B header cut short")?;
    let ver = Version::parse(v).ok_or("0xD28B header has an unknown version word")?;
    let ts = at + 4;
    let mut quality = ClockQuality::default();
    let (sec, nsec) = if ver.full {
        let sec = rd::u32(b, ts).ok_or("0xD28B header cut short")? as i64;
        (sec, rd::u32(b, ts + 4).ok_or("0xD28B header cut short")?)
    } else {
        let sec16 = rd::u16(b, ts).ok_or("0xD28B header cut short")?;
        let ns = rd::u32(b, ts + 2).ok_or("0xD28B header cut short")? & 0x3FFF_FFFF;
        if !frame.has_ts() {
            return Err("48-bit 0xD28B timestamp needs the record time to restore its seconds");
        }
        quality |= ClockQuality::EXTENDED;
        (restore_seconds(sec16, frame.ts_ns.div_euclid(1_000_000_000)), ns)
    };
    if nsec >= 1_000_000_000 {
        return Err("0xD28B nanoseconds >= 10^9");
    }
    let time_ns = sec.checked_mul(1_000_000_000).ok_or("0xD28B seconds out of range")? + nsec as i64;
    Ok(TrailerStamp {
        kind: TrailerKind::Arista7280,
        time_ns,
        sub_ns: 0,
        device: None,
        port: None,
        quality,
        trailer_len: 0,
        keyframe_age_ns: None,
        tai: ver.tai,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dissect::dissect;
    use crate::frame::LinkType;

    fn frame(data: &[u8], ts_ns: i64) -> Frame<'_> {
        Frame::record(data, ts_ns, LinkType::Ethernet)
    }

    /// MACs, 0xD28B, subtype 1, `version`, `ts`, then IPv4 EtherType and a minimal header.
    fn build(version: u16, ts: &[u8]) -> Vec<u8> {
        let mut v = vec![0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2, 0xD2, 0x8B, 0x00, 0x01];
        v.extend_from_slice(&version.to_be_bytes());
        v.extend_from_slice(ts);
        v.extend_from_slice(&[0x08, 0x00]);
        v.extend_from_slice(&[0x45, 0, 0, 20, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
        v
    }

    #[test]
    fn versions() {
        assert_eq!(Version::parse(0x0010), Some(Version { tai: true, full: true, r3: false }));
        assert_eq!(Version::parse(0x0121), Some(Version { tai: false, full: false, r3: true }));
        for bad in [0x0000, 0x0030, 0x0012, 0x0210, 0xFF10] {
            assert_eq!(Version::parse(bad), None, "{bad:#06x}");
        }
    }

    #[test]
    fn full_64_bit_tai_utc_r3() {
        // 0x6000_0000 s = 1610612736; 0x1DCD_64FF ns = 499_999_999.
        let ts = [0x60, 0, 0, 0, 0x1D, 0xCD, 0x64, 0xFF];
        for (version, tai) in [(0x0010, true), (0x0110, false), (0x0011, true), (0x0111, false)] {
            let v = build(version, &ts);
            let d = dissect(&v, LinkType::Ethernet);
            assert!(d.ip.is_some());
            let s = decode(&frame(&v, 1_610_612_700_000_000_000), &d).unwrap();
            assert_eq!(s.time_ns, 1_610_612_736_499_999_999);
            assert_eq!((s.tai, s.trailer_len, s.quality), (tai, 0, ClockQuality::default()));
        }
    }

    #[test]
    fn short_48_bit_restores_across_2_16_boundary() {
        // Device seconds 1_610_678_272 = 0x6001_0000 + 0 -> low 16 bits 0x0000; 0x3B9A_C9FF ns with
        // the two unused top bits set in the wire value must be masked: 0xFB9A_C9FF & 0x3FFF_FFFF.
        let ts = [0x00, 0x00, 0xFB, 0x9A, 0xC9, 0xFF];
        let v = build(0x0120, &ts);
        let d = dissect(&v, LinkType::Ethernet);
        // Record time 3 s before the boundary (low bits 0xFFFD): the nearest is across the boundary.
        let s = decode(&frame(&v, (0x6001_0000 - 3) * 1_000_000_000), &d).unwrap();
        assert_eq!(s.time_ns, 0x6001_0000 * 1_000_000_000 + 0x3B9A_C9FF);
        assert!(s.quality.contains(ClockQuality::EXTENDED));
        assert!(!s.tai);
        // Seconds 0xFFFF seen just after the boundary: restored to the previous block.
        let v = build(0x0021, &[0xFF, 0xFF, 0, 0, 0, 5]);
        let d = dissect(&v, LinkType::Ethernet);
        let s = decode(&frame(&v, (0x6001_0000 + 2) * 1_000_000_000), &d).unwrap();
        assert_eq!(s.time_ns, (0x6001_0000 - 1) * 1_000_000_000 + 5);
        assert!(s.tai);
        // 0x7FFF s away is still restored; the record clock is the reference.
        assert_eq!(restore_seconds(0x7FFF, 0x6001_0000), 0x6001_7FFF);
        assert_eq!(restore_seconds(0x8001, 0x6001_0000), 0x6000_8001);
    }

    #[test]
    fn unknown_versions_and_bad_ns_not_decoded() {
        for version in [0x0030, 0x0210, 0x0013] {
            let v = build(version, &[0; 8]);
            let d = dissect(&v, LinkType::Ethernet);
            // dissect() can only skip formats 1 and 2; format 3 is an anomaly with no header located.
            assert!(decode(&frame(&v, 1_000_000_000_000_000_000), &d).is_err(), "{version:#06x}");
        }
        let v = build(0x0010, &[0x60, 0, 0, 0, 0x3B, 0x9A, 0xCA, 0x00]);
        let d = dissect(&v, LinkType::Ethernet);
        assert!(decode(&frame(&v, 1_610_612_700_000_000_000), &d).is_err());
        // Wrong subtype.
        let mut v = build(0x0010, &[0x60, 0, 0, 0, 0, 0, 0, 1]);
        v[15] = 2;
        let d = dissect(&v, LinkType::Ethernet);
        assert!(decode(&frame(&v, 1_610_612_700_000_000_000), &d).is_err());
    }
}
