//! Arista 7150 (FM6000) 31-bit tick timestamps and keyframes (formats.md §4.3).
//!
//! Sources: Xilinx-CNS/solarcapture `src/components/sc_arista7150_ts.c` (keyframe structs, tick
//! extraction, sync states, frequency estimation), arista-eosext/PCAPDecoder `pcaptd` v5.1 (skew factor,
//! use of the previous keyframe for frames stamped before the newest one), EOS "timestamping on the
//! 7150 series". Verified against `hwts_arista7150/` (PTP-synced before-FCS and replace-FCS captures,
//! `test-1.pcap` with v1 keyframes, `test-2.pcap` with v2 keyframes).
//!
//! Every frame leaving a tool port carries a 4-byte field, big-endian, either **replacing the FCS**
//! (`mac timestamp replace-fcs`) or **before the FCS** (`before-fcs`):
//! ```text
//!  31                          8   7   6           0
//! +-----------------------------+---+-------------+
//! |        ticks[30:7]          | x |  ticks[6:0] |     ticks = ((field & 0xFFFFFF00) >> 1) | (field & 0x7F)
//! +-----------------------------+---+-------------+
//! ```
//! A 31-bit tick at 350 MHz nominal wraps every 2^31 / 350 MHz ≈ 6.14 s. The switch sends keyframes
//! (IPv4, protocol 253, to a configured address, at 1-2 Hz) mapping its 64-bit ASIC tick to UTC; all
//! fields big-endian:
//! ```text
//! v1 (46 bytes): asic_time u64 | utc_nanos u64 | last_sync_nanos u64 | kf_timestamp u64 | drops u64 |
//!                device u16 | interface u16 | fcs_type u8 (0 off, 1 before FCS, 2 replaces FCS) | reserved u8
//! v2 (62 bytes): asic_time | utc_nanos | last_sync_nanos | skew_numerator | skew_denominator |
//!                kf_timestamp | drops | device u16 | interface u16 | fcs_type u8 | reserved u8
//! ```
//! `asic_time` counts in the same (bit-7-free) tick units as the frame field. Time per tick is
//! `10^9 / 350 MHz * skew_numerator / skew_denominator` ns for v2 (the PCAPDecoder formula: the PTP
//! captures carry skew ≈ 1.1, i.e. a 318 MHz tick, which their keyframes confirm); for v1 it is measured
//! between keyframes at least 0.5 s apart (SolarCapture's estimation), nominal 350 MHz until then or
//! when the estimate is more than 2 % off nominal.
//!
//! Sync: in all three sample files `kf_timestamp` counts 350 MHz ticks of the same local clock in which
//! `last_sync_nanos` is in ns, so `kf_timestamp * 20/7 - last_sync_nanos` is the time since the switch
//! last heard PTP (0.6-1.0 s in the samples; an inference from the data, not a documented rule). When
//! it exceeds [`counter::SYNC_LOST_NS`](super::counter::SYNC_LOST_NS) the stamps are flagged
//! [`UNSYNCED`](crate::time::ClockQuality::UNSYNCED).
//!
//! The Exablaze Fusion "compat" mode sends the same v2 keyframe (from 0.0.0.0 to 255.255.255.255) and the
//! same bit-7-free tick; [`super::fusion`] reuses this parser.

use super::rd;

/// IP protocol of keyframes.
pub const KEYFRAME_PROTO: u8 = 253;
/// Length of a v1 keyframe payload.
pub const V1_LEN: usize = 46;
/// Length of a v2 keyframe payload.
pub const V2_LEN: usize = 62;
/// Nominal tick frequency.
pub const NOMINAL_HZ: u64 = 350_000_000;

/// A decoded v1 or v2 keyframe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keyframe {
    /// 1 or 2.
    pub version: u8,
    /// ASIC tick (bit-7-free units) at `utc_nanos`.
    pub asic_time: u64,
    /// UTC, ns since the epoch.
    pub utc_nanos: u64,
    /// Last PTP sync, ns in the switch's local clock.
    pub last_sync_nanos: u64,
    /// v2 skew (numerator, denominator).
    pub skew: Option<(u64, u64)>,
    /// When the keyframe was emitted, in 350 MHz ticks of the switch's local clock (see module docs).
    pub kf_timestamp: u64,
    /// Drops on the emitting interface.
    pub drops: u64,
    /// Device id (configurable).
    pub device: u16,
    /// Interface the keyframe left on.
    pub interface: u16,
    /// 0 off, 1 before FCS, 2 replaces FCS.
    pub fcs_type: u8,
}

impl Keyframe {
    /// Parses an IPv4 payload of exactly 46 (v1) or 62 (v2) bytes.
    pub fn parse(p: &[u8]) -> Option<Keyframe> {
        let (version, tail) = match p.len() {
            V1_LEN => (1, 40),
            V2_LEN => (2, 56),
            _ => return None,
        };
        let (skew, kt_at) = if version == 2 { (Some((rd::u64(p, 24)?, rd::u64(p, 32)?)), 40) } else { (None, 24) };
        Some(Keyframe {
            version,
            asic_time: rd::u64(p, 0)?,
            utc_nanos: rd::u64(p, 8)?,
            last_sync_nanos: rd::u64(p, 16)?,
            skew,
            kf_timestamp: rd::u64(p, kt_at)?,
            drops: rd::u64(p, kt_at + 8)?,
            device: rd::u16(p, tail)?,
            interface: rd::u16(p, tail + 2)?,
            fcs_type: *p.get(tail + 4)?,
        })
    }

    /// Time since the switch last synchronised, when both fields are set (see module docs).
    pub fn sync_age_ns(&self) -> Option<i64> {
        if self.kf_timestamp == 0 || self.last_sync_nanos == 0 {
            return None;
        }
        let now = self.kf_timestamp as i128 * 20 / 7;
        let age = now - self.last_sync_nanos as i128;
        (0..=i64::MAX as i128).contains(&age).then_some(age as i64)
    }
}

/// The 31-bit tick carried in a frame's 4-byte field (bit 7 skipped).
#[inline]
pub fn ticks_from_field(field: u32) -> u32 {
    ((field & 0xFFFF_FF00) >> 1) | (field & 0x7F)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_field() {
        assert_eq!(ticks_from_field(0x0000_007F), 0x7F);
        assert_eq!(ticks_from_field(0x0000_0080), 0); // bit 7 is not part of the tick
        assert_eq!(ticks_from_field(0x0000_0100), 0x80);
        assert_eq!(ticks_from_field(0xFFFF_FFFF), 0x7FFF_FFFF);
        // test-1.pcap frame 2: field e9a92441 -> ((0xe9a92400 >> 1) | 0x41).
        assert_eq!(ticks_from_field(0xe9a9_2441), 0x74D4_9241);
    }

    #[test]
    fn keyframe_v1_from_test1_frame1() {
        // IPv4 payload of test-1.pcap frame 1 (device 0, interface 7, fcs_type 1).
        let mut p = Vec::new();
        for v in [0xef0de23d1d54u64, 1426864293290678387, 750979545130082, 262843149785641, 0] {
            p.extend_from_slice(&v.to_be_bytes());
        }
        p.extend_from_slice(&[0, 0, 0, 7, 1, 0]);
        let k = Keyframe::parse(&p).unwrap();
        assert_eq!((k.version, k.asic_time, k.device, k.interface, k.fcs_type), (1, 0xef0de23d1d54, 0, 7, 1));
        assert_eq!(k.utc_nanos, 1426864293290678387);
        // 262843149785641 * 20 / 7 = 750980427958974.2 ns; minus last sync 750979545130082 = 0.88 s.
        assert_eq!(k.sync_age_ns(), Some(882_828_892));
        assert_eq!(Keyframe::parse(&p[..45]), None);
    }
}
