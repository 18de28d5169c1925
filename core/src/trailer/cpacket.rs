//! cPacket timestamp footer (formats.md §4.2).
//!
//! Sources: SolarCapture `src/components/cpacket_offsets.h` and `sc_cpacket_ts.c` (which treats
//! Metamako as "cPacket + TLVs"), Onload `ip_timestamp.h` `struct cpacket`. No sample capture exists: the
//! tests are byte literals built from this layout.
//!
//! ```text
//! ... payload | [padding] | orig FCS (4) | seconds (4) | nanoseconds (4) | version/flags (1) |
//!     device (2) | port (1) | [new FCS (4)]
//! ```
//! Same plausibility test as Metamako (seconds > 3600, ns < 10^9, within 30 days of the record time). The
//! version/flags byte has no documented quality bit, so no quality flag is derived from it. Only
//! `--trailer cpacket` reports this kind; `auto` reports the identical core as Metamako.

use super::metamako::Core;
use super::{Bounds, Miss, TrailerKind, TrailerStamp};
use crate::frame::Frame;
use crate::time::ClockQuality;

/// Looks for a cPacket footer at the end of `frame`.
pub(crate) fn find(frame: &Frame<'_>, bounds: &Bounds) -> Result<TrailerStamp, Miss> {
    let b = frame.data;
    let mut why: Miss = "frame too short for a 16-byte footer";
    for &fcs in bounds.fcs_options() {
        let Some(core_at) = b.len().checked_sub(12 + fcs) else { continue };
        if core_at < bounds.min_start + 4 {
            why = "no room for a footer after the packet";
            continue;
        }
        let Some(core) = Core::read(b, core_at) else { continue };
        if !core.plausible(frame) {
            why = "no plausible footer: seconds not within 30 days of the record time, or nanoseconds >= 10^9 \
                   (tried without and with a trailing FCS)";
            continue;
        }
        return Ok(TrailerStamp {
            kind: TrailerKind::Cpacket,
            time_ns: core.time_ns(),
            sub_ns: 0,
            device: Some(core.device as u32),
            port: Some(core.port as u32),
            quality: ClockQuality::default(),
            trailer_len: b.len() - (core_at - 4),
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

    fn frame(data: &[u8]) -> Frame<'_> {
        Frame::record(data, 1_600_000_000_000_000_000, LinkType::Ethernet)
    }

    #[test]
    fn footer_with_and_without_new_fcs() {
        let mut v = vec![0u8; 60];
        v.extend_from_slice(&[0xDE, 0xAD, 0xBE, 0xEF]); // orig FCS
        v.extend_from_slice(&1_600_000_005u32.to_be_bytes()); // 0x5F5E1005
        v.extend_from_slice(&999_999_999u32.to_be_bytes());
        v.extend_from_slice(&[0x02, 0x01, 0x02, 0x07]); // version 2, device 0x0102, port 7
        let b = Bounds { min_start: 14, fcs_len: None };
        let s = find(&frame(&v), &b).unwrap();
        assert_eq!(s.kind, TrailerKind::Cpacket);
        assert_eq!(s.time_ns, 1_600_000_005_999_999_999);
        assert_eq!((s.device, s.port, s.trailer_len), (Some(258), Some(7), 16));
        // Version byte 0x02 is not a TLV flag for cPacket: nothing before the core is consumed.
        v.extend_from_slice(&[9, 9, 9, 9]);
        let s = find(&frame(&v), &b).unwrap();
        assert_eq!((s.time_ns, s.trailer_len), (1_600_000_005_999_999_999, 20));
        // No room left by the packet.
        assert!(find(&frame(&v), &Bounds { min_start: 61, fcs_len: None }).is_err());
    }
}
