//! Cisco/Exablaze ExaLINK Fusion 32-bit counter timestamps and keyframes (formats.md §4.5).
//!
//! Sources: CiscoDevNet/n3550-timestamp-decoder `record_process.cpp` / `.hpp` (keyframe structs, tick
//! extension, FCS-based placement heuristic) and README. Verified against
//! `hwts_exablaze_n3550/exa.mode.{fcs,fcs-compat,append,append-compat}.pcap`.
//!
//! The mirror port stamps each frame with a 32-bit big-endian counter at 350 MHz:
//! ```text
//! mode fcs / fcs-compat:        ... payload | [padding] | counter (4)              (replaces the FCS)
//! mode append / append-compat:  ... payload | [padding] | counter (4) | FCS (4)    (FCS valid)
//! ```
//! The placement is decided per frame as the Cisco decoder does: when the last 4 bytes are a valid FCS
//! over the frame, the counter precedes them, otherwise it is the last 4 bytes (a frame whose FCS the
//! container declares present or absent is taken at its word).
//!
//! Keyframes, about 1 Hz, map the counter to UTC:
//! ```text
//! native (EtherType 0x88B5, or IPv4 proto 253 payload of 40 bytes), all u64 big-endian:
//!   magic "EXKF" (4) | version u8 = 1 | reserved (3) | utc ns u64 | counter u64 | freq Hz u64 | last_sync u64
//!   (older version 0: first word 01 00 00 00, version byte 0, same fields)
//! compat (IPv4 proto 253, 0.0.0.0 -> 255.255.255.255, 62 bytes): the Arista 7150 v2 keyframe
//!   (see [`super::arista7150`]); frames then carry the 7150's bit-7-free 31-bit tick.
//! ```
//! Native: `ns = (counter32 - keyframe.counter mod 2^32) * 10^9 / freq`. Compat: the 7150 formula with the
//! keyframe's skew (1/1 in every sample; the Cisco decoder refuses any other). `last_sync` of a native
//! keyframe is in counter ticks (equal to `counter` in the samples): its age flags sync loss; compat
//! keyframes send 0 there (not reported).

use super::rd;

/// EtherType of native keyframes.
pub const ETHERTYPE_KEYFRAME: u16 = 0x88B5;
/// Magic bytes at the start of a native keyframe.
pub const MAGIC: [u8; 4] = *b"EXKF";
/// Length of a native keyframe.
pub const NATIVE_LEN: usize = 40;

/// A decoded native keyframe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NativeKeyframe {
    /// UTC, ns since the epoch.
    pub utc: u64,
    /// 64-bit counter at `utc`.
    pub counter: u64,
    /// Counter frequency, Hz.
    pub freq: u64,
    /// Counter value at the last clock sync (0: not reported).
    pub last_sync: u64,
}

impl NativeKeyframe {
    /// Parses a native keyframe body (at least 40 bytes; Ethernet padding may follow).
    pub fn parse(p: &[u8]) -> Option<NativeKeyframe> {
        // Version 1 has the magic; the Cisco decoder also accepts the older version 0 whose first word
        // reads 1 on a little-endian host (bytes 01 00 00 00), as in `exnic-fcsu.pcap`.
        match (rd::bytes::<4>(p, 0)?, *p.get(4)?) {
            (MAGIC, 1) | ([1, 0, 0, 0], 0) => {}
            _ => return None,
        }
        Some(NativeKeyframe {
            utc: rd::u64(p, 8)?,
            counter: rd::u64(p, 16)?,
            freq: rd::u64(p, 24)?,
            last_sync: rd::u64(p, 32)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_keyframe_from_exa_mode_fcs_frame1() {
        let p: [u8; 40] = [
            0x45, 0x58, 0x4b, 0x46, 0x01, 0x00, 0x00, 0x00, 0x14, 0x35, 0xc3, 0x29, 0x9b, 0xd9, 0x2c, 0x00, 0x00, 0x00,
            0x01, 0x7e, 0x44, 0x02, 0x73, 0x9a, 0x00, 0x00, 0x00, 0x00, 0x14, 0xdc, 0x93, 0x80, 0x00, 0x00, 0x01, 0x7e,
            0x44, 0x02, 0x73, 0x9a,
        ];
        let k = NativeKeyframe::parse(&p).unwrap();
        assert_eq!(k.utc, 0x1435_c329_9bd9_2c00); // 1456284638000000000
        assert_eq!(k.utc, 1_456_284_638_000_000_000);
        assert_eq!((k.counter, k.freq, k.last_sync), (0x017e_4402_739a, 350_000_000, 0x017e_4402_739a));
        let mut bad = p;
        bad[4] = 2;
        assert_eq!(NativeKeyframe::parse(&bad), None);
        assert_eq!(NativeKeyframe::parse(&p[..39]), None);
    }
}
