//! Arista 7130 MetaWatch / Metamako timestamp trailer (formats.md §4.1).
//!
//! Sources: Wireshark `epan/dissectors/packet-metamako.c` (layout, TLV walk, heuristic), SolarCapture
//! `sc_cpacket_ts.c` (core word layout), Onload `ip_timestamp.h` (sub-ns tag). Verified against the OMI
//! OUCH 5.0 captures (device 19484, ports 45/46, flags 0x01/0x21, 3 bytes of Ethernet padding before the
//! trailer in the heartbeats).
//!
//! ```text
//! ... payload | [padding] | orig FCS (4) | [TLVs, 4*k, only if flags & 0x02] | seconds (4) | nanoseconds (4) |
//!     flags (1) | device (2) | port (1) | [new FCS (4)]
//!
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +---------------------------------------------------------------+
//! |                            Seconds                            |
//! +---------------------------------------------------------------+
//! |                          Nanoseconds                          |
//! +---------------+-------------------------------+---------------+
//! |     Flags     |           Device ID           |    Port ID    |
//! +---------------+-------------------------------+---------------+
//! ```
//! Flags: `0x01` original FCS valid, `0x02` TLV extensions present, `0x04` duplicate, `0x10` timestamp
//! degraded (→ [`ClockQuality::DEGRADED`]), `0x20` Clause-49 block type (NOT "has extensions": the OMI
//! files carry 0x21 with no TLV).
//!
//! TLVs are read backwards from just before `seconds`, each headed by the word nearest the core:
//! ```text
//! primary   | data (24) | len (2) | F (1) | tag (5) |       tag != 31; len extra words precede it
//! secondary | tag2 (16) | len (10) | F (1) | 11111 |      len + 1 extra words precede it
//! ```
//! `F` marks the last extension. Tag 1 is sub-nanoseconds: `data / 2^24` ns.

use super::{Bounds, Miss, TrailerKind, TrailerStamp, near_record, rd};
use crate::frame::Frame;
use crate::time::ClockQuality;

/// Heuristic window around the record time (Wireshark: 30 days).
pub const WINDOW_S: i64 = 30 * 86_400;
/// Flag: TLV extensions present.
pub const FLAG_TLV: u8 = 0x02;
/// Flag: timestamp degraded.
pub const FLAG_DEGRADED: u8 = 0x10;
/// TLV tag: sub-nanoseconds.
pub const TAG_SUB_NS: u32 = 1;
/// Longest TLV chain walked (bounds hostile input; real trailers carry a handful).
const MAX_TLVS: usize = 64;

/// The 12-byte core shared with cPacket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Core {
    /// Seconds since the epoch.
    pub sec: u32,
    /// Nanoseconds.
    pub nsec: u32,
    /// Flags (Metamako) or version/flags (cPacket).
    pub flags: u8,
    /// Device id.
    pub device: u16,
    /// Port id.
    pub port: u8,
}

impl Core {
    /// Reads the core whose `seconds` field starts at `at`.
    pub fn read(b: &[u8], at: usize) -> Option<Core> {
        Some(Core {
            sec: rd::u32(b, at)?,
            nsec: rd::u32(b, at + 4)?,
            flags: *b.get(at + 8)?,
            device: rd::u16(b, at + 9)?,
            port: *b.get(at + 11)?,
        })
    }

    /// Wireshark's plausibility test (nanoseconds < 10^9, within `WINDOW_S` of the record), with seconds
    /// after 2000 ([`super::MIN_TRAILER_SEC`]) instead of > 3600.
    pub fn plausible(&self, frame: &Frame<'_>) -> bool {
        self.sec > 3600 && self.nsec < 1_000_000_000 && near_record(frame, self.sec as i64, WINDOW_S)
    }

    /// Integer ns since the epoch.
    pub fn time_ns(&self) -> i64 {
        self.sec as i64 * 1_000_000_000 + self.nsec as i64
    }
}

/// Result of walking the TLV chain: where it starts and the sub-ns value, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tlvs {
    /// Offset of the first (outermost) TLV byte.
    pub start: usize,
    /// Tag 1 data (units of 2^-24 ns).
    pub sub_ns_24: Option<u32>,
}

/// Walks the TLVs backwards from `end` (the offset of `seconds`), never below `floor`.
pub fn walk_tlvs(b: &[u8], end: usize, floor: usize) -> Result<Tlvs, Miss> {
    let mut p = end;
    let mut sub = None;
    for _ in 0..MAX_TLVS {
        if p < floor + 4 {
            return Err("TLV extensions run into the packet");
        }
        let w = rd::u32(b, p - 4).ok_or("TLV outside the frame")?;
        let tag = w & 0x1F;
        let extra = if tag == 0x1F { ((w >> 6) & 0x3FF) + 1 } else { (w >> 6) & 0x3 } as usize;
        let words = 1 + extra;
        if p < floor + 4 * words {
            return Err("TLV extensions run into the packet");
        }
        if tag == TAG_SUB_NS {
            sub = Some(w >> 8);
        }
        p -= 4 * words;
        if (w >> 5) & 1 == 1 {
            return Ok(Tlvs { start: p, sub_ns_24: sub });
        }
    }
    Err("more TLV extensions than any device writes")
}

/// Looks for a Metamako trailer at the end of `frame`.
pub(crate) fn find(frame: &Frame<'_>, bounds: &Bounds) -> Result<TrailerStamp, Miss> {
    let b = frame.data;
    let mut why: Miss = "frame too short for a 16-byte trailer";
    for &fcs in bounds.fcs_options() {
        // Core 12 + original FCS 4 + optional new FCS.
        let Some(core_at) = b.len().checked_sub(12 + fcs) else { continue };
        if core_at < bounds.min_start + 4 {
            why = "no room for a trailer after the packet";
            continue;
        }
        let Some(core) = Core::read(b, core_at) else { continue };
        if !core.plausible(frame) {
            why = "no plausible trailer: seconds not within 30 days of the record time, or nanoseconds >= 10^9 \
                   (tried without and with a trailing FCS)";
            continue;
        }
        let (start, sub24) = if core.flags & FLAG_TLV != 0 {
            match walk_tlvs(b, core_at, bounds.min_start + 4) {
                Ok(t) => (t.start, t.sub_ns_24),
                Err(e) => {
                    why = e;
                    continue;
                }
            }
        } else {
            (core_at, None)
        };
        let fcs_at = start - 4; // walk_tlvs kept 4 bytes above the floor
        let mut quality = ClockQuality::default();
        if core.flags & FLAG_DEGRADED != 0 {
            quality |= ClockQuality::DEGRADED;
        }
        return Ok(TrailerStamp {
            kind: TrailerKind::Metamako,
            time_ns: core.time_ns(),
            sub_ns: sub24.map_or(0, |s| (s & 0xFF_FFFF) << 8),
            device: Some(core.device as u32),
            port: Some(core.port as u32),
            quality,
            trailer_len: b.len() - fcs_at,
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

    const T: i64 = 1_714_407_847_483_428_074;

    fn frame(data: &[u8], fcs_len: Option<u8>) -> Frame<'_> {
        Frame { fcs_len, ..Frame::record(data, T, LinkType::Ethernet) }
    }

    /// 14-byte Ethernet header + 46 bytes of payload, then what the test appends.
    fn base() -> Vec<u8> {
        let mut v = vec![0u8; 60];
        v[12] = 0x88;
        v[13] = 0xB5;
        v
    }
    const CORE: [u8; 12] = [0x66, 0x2f, 0xc9, 0xa7, 0x1c, 0xd0, 0x86, 0xea, 0x01, 0x4c, 0x1c, 0x2e];
    const BOUNDS: Bounds = Bounds { min_start: 14, fcs_len: None };

    #[test]
    fn basic_trailer_from_omi_cancel_order() {
        // Trailer bytes of OMI CancelOrderMessage.pcap: orig FCS 7dd269fc, 0x662fc9a7 s, 0x1cd086ea ns,
        // flags 0x01, device 0x4c1c = 19484, port 0x2e = 46.
        let mut v = base();
        v.extend_from_slice(&[0x7d, 0xd2, 0x69, 0xfc]);
        v.extend_from_slice(&CORE);
        let s = find(&frame(&v, None), &BOUNDS).unwrap();
        assert_eq!(s.time_ns, 1_714_407_847_483_428_074);
        assert_eq!((s.device, s.port, s.sub_ns, s.trailer_len), (Some(19484), Some(46), 0, 16));
        assert!(s.quality.is_clean());
        // With a new FCS after it: found on the second try, trailer_len counts the FCS.
        v.extend_from_slice(&[1, 2, 3, 4]);
        let s = find(&frame(&v, None), &BOUNDS).unwrap();
        assert_eq!((s.time_ns, s.trailer_len), (T, 20));
        // The container says there is no FCS: the misaligned read is all that is tried, and fails.
        assert!(find(&frame(&v, Some(0)), &Bounds { fcs_len: Some(0), ..BOUNDS }).is_err());
    }

    #[test]
    fn tlvs_sub_ns_and_degraded() {
        let mut v = base();
        v.extend_from_slice(&[0xAA, 0xBB, 0xCC, 0xDD]); // orig FCS
        // Secondary TLV (tag string): data word, then header tag2=0, len=0 (1 data word), F=0, 11111.
        v.extend_from_slice(b"ABCD");
        v.extend_from_slice(&[0x00, 0x00, 0x00, 0x1F]);
        // Primary tag 0 (seq num) with one extra word: header len=1 -> 0x40, tag 0.
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(&[0x12, 0x34, 0x00, 0x40]);
        // Primary tag 1 (sub-ns), F=1, data 0x800000 = 0.5 ns: 0x80 0x00 0x00 | 0b00_1_00001.
        v.extend_from_slice(&[0x80, 0x00, 0x00, 0x21]);
        let mut core = CORE;
        core[8] = FLAG_TLV | FLAG_DEGRADED | 0x20;
        v.extend_from_slice(&core);
        let s = find(&frame(&v, Some(0)), &BOUNDS).unwrap();
        // The F bit stops the walk at the sub-ns word: the other TLVs are left out of the trailer.
        assert_eq!(s.trailer_len, 4 + 4 + 12);
        assert_eq!(s.sub_ns, 1 << 31); // 0.5 ns in 2^-32 ns
        assert!(s.quality.contains(ClockQuality::DEGRADED));

        // Reorder: sub-ns first (nearest the core, F=0), then seq num, then the secondary with F=1.
        let mut v = base();
        v.extend_from_slice(&[0xAA, 0xBB, 0xCC, 0xDD]);
        v.extend_from_slice(b"ABCD");
        v.extend_from_slice(&[0x00, 0x00, 0x00, 0x3F]); // secondary, F=1
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(&[0x12, 0x34, 0x00, 0x40]);
        v.extend_from_slice(&[0x40, 0x00, 0x00, 0x01]); // sub-ns 0.25 ns, F=0
        v.extend_from_slice(&core);
        let s = find(&frame(&v, Some(0)), &BOUNDS).unwrap();
        assert_eq!(s.trailer_len, 4 + 8 + 8 + 4 + 12);
        assert_eq!(s.sub_ns, 1 << 30);
    }

    #[test]
    fn flag_0x20_is_not_extensions() {
        let mut v = base();
        v.extend_from_slice(&[0x8e, 0xa8, 0xc7, 0x89]);
        let mut core = CORE;
        core[8] = 0x21;
        v.extend_from_slice(&core);
        let s = find(&frame(&v, None), &BOUNDS).unwrap();
        assert_eq!(s.trailer_len, 16);
        assert!(s.quality.is_clean());
    }

    #[test]
    fn rejects_implausible_and_overlapping() {
        let mut v = base();
        v.extend_from_slice(&[0; 4]);
        let mut core = CORE;
        core[4] = 0x3B; // nsec 0x3Bd086ea >= 1e9
        v.extend_from_slice(&core);
        assert!(find(&frame(&v, None), &BOUNDS).is_err());
        // 31 days away from the record time.
        let mut v = base();
        v.extend_from_slice(&[0; 4]);
        let sec = (T / 1_000_000_000 + 31 * 86_400) as u32;
        let mut core = CORE;
        core[..4].copy_from_slice(&sec.to_be_bytes());
        v.extend_from_slice(&core);
        assert!(find(&frame(&v, None), &BOUNDS).is_err());
        // Good trailer, but the IP datagram claims the bytes: not a trailer.
        let mut v = base();
        v.extend_from_slice(&[0; 4]);
        v.extend_from_slice(&CORE);
        let b = Bounds { min_start: v.len() - 8, fcs_len: None };
        assert!(find(&frame(&v, None), &b).is_err());
        // TLV flag set but the chain never ends before the packet: rejected.
        let mut v = base();
        v.extend_from_slice(&[0; 4]);
        let mut core = CORE;
        core[8] = FLAG_TLV;
        v.extend_from_slice(&core);
        assert!(find(&frame(&v, Some(0)), &Bounds { min_start: 56, fcs_len: Some(0) }).is_err());
    }
}
