//! Cisco/Exablaze ExaLINK Fusion HPT timestamp trailer (formats.md §4.6).
//!
//! Sources: Wireshark `epan/dissectors/packet-exablaze.c`, CiscoDevNet/n3550-timestamp-decoder
//! `record_process.cpp` (`exablaze_timestamp_trailer`, one-week heuristic, tries without then with an
//! FCS). Verified against `hwts_exablaze_n3550/fusion_hpt_example.pcap`.
//!
//! ```text
//! ... payload | [padding] | orig FCS (4) | device (1) | port (1) | seconds (4) |
//!     fraction of a second (5, units of 2^-40 s) | reserved (1) | [new FCS (4)]
//! ```
//! Heuristic: seconds within a week of the record time and after 2000 ([`super::MIN_TRAILER_SEC`]).
//! The fraction converts exactly with integers: `f * 10^9 / 2^40` ns; the quotient is `time_ns`'s
//! sub-second part and the remainder, scaled to 2^-32 ns, is `sub_ns`.

use super::{Bounds, Miss, TrailerKind, TrailerStamp, near_record, rd};
use crate::frame::Frame;
use crate::time::ClockQuality;

/// Heuristic window around the record time (Wireshark and the Cisco decoder: one week).
pub const WINDOW_S: i64 = 7 * 86_400;
/// Trailer length without a new FCS.
pub const LEN: usize = 16;

/// Splits a 40-bit fraction of a second (units 2^-40 s) into whole ns and 2^-32 ns.
pub fn frac40_to_ns(frac: u64) -> (i64, u32) {
    let scaled = (frac & ((1 << 40) - 1)) as u128 * 1_000_000_000;
    let ns = (scaled >> 40) as i64;
    let rem = scaled & ((1 << 40) - 1); // units of 2^-40 ns
    (ns, (rem >> 8) as u32)
}

/// Looks for an HPT trailer at the end of `frame`.
pub(crate) fn find(frame: &Frame<'_>, bounds: &Bounds) -> Result<TrailerStamp, Miss> {
    let b = frame.data;
    let mut why: Miss = "frame too short for a 16-byte trailer";
    for &fcs in bounds.fcs_options() {
        let Some(start) = b.len().checked_sub(LEN + fcs) else { continue };
        if start < bounds.min_start {
            why = "no room for a trailer after the packet";
            continue;
        }
        let (Some(device), Some(port), Some(sec), Some(f)) =
            (b.get(start + 4), b.get(start + 5), rd::u32(b, start + 6), rd::bytes::<5>(b, start + 10))
        else {
            continue;
        };
        if !near_record(frame, sec as i64, WINDOW_S) {
            why = "no plausible trailer: seconds not within a week of the record time (tried without and with a \
                   trailing FCS)";
            continue;
        }
        let frac = f.iter().fold(0u64, |a, &x| (a << 8) | x as u64);
        let (ns, sub_ns) = frac40_to_ns(frac);
        return Ok(TrailerStamp {
            kind: TrailerKind::ExablazeHpt,
            time_ns: sec as i64 * 1_000_000_000 + ns,
            sub_ns,
            device: Some(*device as u32),
            port: Some(*port as u32),
            quality: ClockQuality::default(),
            trailer_len: b.len() - start,
            keyframe_age_ns: None,
            tai: false,
        });
    }
    Err(why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::LinkType;

    #[test]
    fn fraction_conversion_exact() {
        assert_eq!(frac40_to_ns(0), (0, 0));
        assert_eq!(frac40_to_ns(1 << 39), (500_000_000, 0)); // half a second
        // One unit = 10^9 / 2^40 ns = 0.000909494701772928 ns = 3906250/2^32 ns exactly.
        assert_eq!(frac40_to_ns(1), (0, 3_906_250));
        assert_eq!(frac40_to_ns((1 << 40) - 1), (999_999_999, (((1u128 << 40) - 1_000_000_000) >> 8) as u32));
    }

    #[test]
    fn trailer_from_fusion_hpt_example_frame1() {
        // Last 16 bytes of frame 1 of fusion_hpt_example.pcap.
        let mut v = vec![0u8; 102];
        v.extend_from_slice(&[
            0x0a, 0x56, 0xd0, 0x3e, 0x00, 0x2f, 0x5b, 0x0c, 0x9a, 0x4d, 0x2b, 0x9f, 0xa0, 0x23, 0xf4, 0x00,
        ]);
        let f = Frame::record(&v, 1_527_552_589_170_404_442, LinkType::Ethernet);
        let s = find(&f, &Bounds { min_start: 98, fcs_len: None }).unwrap();
        // 0x5b0c9a4d = 1527552589 s; 0x2b9fa023f4 * 10^9 / 2^40 = 170404442.575... ns (tshark:
        // 0.170404442575091 s).
        assert_eq!(s.time_ns, 1_527_552_589_170_404_442);
        assert_eq!((s.device, s.port, s.trailer_len), (Some(0), Some(47), 16));
        let frac_ns_1e6 = (s.sub_ns as u64 * 1_000_000) >> 32;
        assert!((575_090..=575_091).contains(&frac_ns_1e6), "{frac_ns_1e6}");
    }
}
