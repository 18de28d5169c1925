//! Timestamps and their provenance.
//!
//! A timestamp in wirestamp is an `i64` count of nanoseconds since the Unix epoch (1970-01-01T00:00:00,
//! in the clock's own timescale: UTC for capture files, TAI where a device says so). It is always
//! computed with integer arithmetic. Beside it travels where it came from ([`TsSource`]) and how much
//! to trust it ([`ClockQuality`]).

use serde::Serialize;

/// Nanoseconds in one second.
pub const NANOS_PER_SEC: i64 = 1_000_000_000;

/// Where a frame's timestamp was taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TsSource {
    /// A classic pcap record header (µs or ns resolution).
    PcapRecord,
    /// A pcapng Enhanced (or obsolete) Packet Block, scaled by its interface's `if_tsresol`/`if_tsoffset`.
    PcapngBlock,
    /// A pcapng Simple Packet Block: the format carries no timestamp at all.
    PcapngNone,
    /// An Endace ERF record header (64-bit binary fixed point).
    Erf,
    /// A tap timestamp trailer or header decoded from the frame's bytes.
    Trailer(crate::trailer::TrailerKind),
    /// Live capture: the NIC's raw hardware clock (AF_PACKET `TP_STATUS_TS_RAW_HARDWARE`, PHC time).
    KernelHardware,
    /// Live capture: the kernel's software receive/transmit stamp (`TP_STATUS_TS_SOFTWARE`, CLOCK_REALTIME).
    KernelSoftware,
    /// Live capture without a timestamp flag: the time the kernel copied the frame to the ring (or
    /// libpcap's host time), CLOCK_REALTIME but later than the wire.
    KernelNone,
    /// Live capture by a BPF program at its tc/XDP hook: `bpf_ktime_get_tai_ns()` when the program ran,
    /// less the kernel's TAI offset (so CLOCK_REALTIME). Used when the packet had no receive stamp
    /// (egress, TCP's departure schedule, ingress before the kernel's stamp is taken); a stamp the skb
    /// carried is [`TsSource::KernelSoftware`] / [`TsSource::KernelHardware`].
    BpfHook,
}

impl TsSource {
    /// Every source without a tap's, in [`TsSource::clock_bit`] order (tap kinds follow, in
    /// [`crate::trailer::TrailerKind::ALL`] order).
    const PLAIN: [TsSource; 8] = [
        TsSource::PcapRecord,
        TsSource::PcapngBlock,
        TsSource::PcapngNone,
        TsSource::Erf,
        TsSource::KernelHardware,
        TsSource::KernelSoftware,
        TsSource::KernelNone,
        TsSource::BpfHook,
    ];

    /// This source's bit in a set of sources (a `u32`: 8 plain kinds and 6 tap kinds).
    #[inline(always)]
    pub fn clock_bit(self) -> u32 {
        1 << match self {
            TsSource::PcapRecord => 0,
            TsSource::PcapngBlock => 1,
            TsSource::PcapngNone => 2,
            TsSource::Erf => 3,
            TsSource::KernelHardware => 4,
            TsSource::KernelSoftware => 5,
            TsSource::KernelNone => 6,
            TsSource::BpfHook => 7,
            TsSource::Trailer(k) => 8 + k as u32,
        }
    }

    /// The names of the sources in a set of [`TsSource::clock_bit`]s, in that order.
    pub fn names_in(set: u32) -> Vec<&'static str> {
        let taps = crate::trailer::TrailerKind::ALL.map(TsSource::Trailer);
        TsSource::PLAIN.iter().chain(&taps).filter(|s| set & s.clock_bit() != 0).map(|s| s.name()).collect()
    }

    /// Short stable name used in CSV/JSON output.
    pub fn name(self) -> &'static str {
        match self {
            TsSource::PcapRecord => "pcap",
            TsSource::PcapngBlock => "pcapng",
            TsSource::PcapngNone => "none",
            TsSource::Erf => "erf",
            TsSource::Trailer(k) => k.name(),
            TsSource::KernelHardware => "kernel_hw",
            TsSource::KernelSoftware => "kernel_sw",
            TsSource::KernelNone => "kernel_none",
            TsSource::BpfHook => "bpf_hook",
        }
    }
}

/// Clock-quality flags attached to a timestamp. Empty means "nothing known to be wrong".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct ClockQuality(pub u16);

impl ClockQuality {
    /// The device said its timestamp is degraded (Metamako flag 0x10).
    pub const DEGRADED: ClockQuality = ClockQuality(1 << 0);
    /// The device's clock was not synchronised (keyframe sync lost, no keyframe yet).
    pub const UNSYNCED: ClockQuality = ClockQuality(1 << 1);
    /// The timestamp was extended from a wrapping counter using a keyframe older than the decoder's bound.
    pub const STALE_KEYFRAME: ClockQuality = ClockQuality(1 << 2);
    /// The upper bits of a truncated timestamp were restored from another clock (48-bit 7280, counters).
    pub const EXTENDED: ClockQuality = ClockQuality(1 << 3);
    /// The container marked the record as damaged (ERF RX/DS error, truncated).
    pub const RECORD_ERROR: ClockQuality = ClockQuality(1 << 4);
    /// The timestamp went backwards relative to the previous one of the same source.
    pub const BACKWARDS: ClockQuality = ClockQuality(1 << 5);
    /// A record time moved onto a tap's clock by the host's offset from the tap, as the input's last
    /// stamped frame showed it (a frame the tap did not stamp in an input it stamps): an estimate, off
    /// by how much the capture host's delay varies.
    pub const HOST_OFFSET: ClockQuality = ClockQuality(1 << 6);

    /// No flag set.
    pub const fn is_clean(self) -> bool {
        self.0 == 0
    }
    /// True if every flag of `other` is set in `self`.
    pub const fn contains(self, other: ClockQuality) -> bool {
        self.0 & other.0 == other.0
    }
    const NAMES: [&str; 7] =
        ["degraded", "unsynced", "stale_keyframe", "extended", "record_error", "backwards", "host_offset"];

    /// The flags [`ClockQuality::names`] wrote (unknown names are ignored).
    pub fn from_names(s: &str) -> ClockQuality {
        ClockQuality(
            s.split('|').filter_map(|n| Self::NAMES.iter().position(|k| *k == n)).fold(0, |q, bit| q | (1 << bit)),
        )
    }

    /// Flag names, for display: `"degraded|unsynced"`, or `""` when clean.
    pub fn names(self) -> String {
        let mut out = String::new();
        for (bit, name) in Self::NAMES.iter().enumerate() {
            if self.0 & (1 << bit) != 0 {
                if !out.is_empty() {
                    out.push('|');
                }
                out.push_str(name);
            }
        }
        out
    }
}

impl core::ops::BitOr for ClockQuality {
    type Output = ClockQuality;
    fn bitor(self, rhs: ClockQuality) -> ClockQuality {
        ClockQuality(self.0 | rhs.0)
    }
}

impl core::ops::BitOrAssign for ClockQuality {
    fn bitor_assign(&mut self, rhs: ClockQuality) {
        self.0 |= rhs.0;
    }
}

/// Formats `ns` since the epoch as `seconds.nanoseconds` (9 digits) exactly as tshark's
/// `frame.time_epoch` does: whole seconds rounded toward minus infinity and a positive fraction, so
/// -6.5 s prints as `-7.500000000`.
pub fn format_epoch(ns: i64) -> String {
    format!("{}.{:09}", ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each source has a bit of its own, and the names of a set are its sources', in order.
    #[test]
    fn each_source_has_a_clock_bit_of_its_own() {
        let taps = crate::trailer::TrailerKind::ALL.map(TsSource::Trailer);
        let all: Vec<TsSource> = TsSource::PLAIN.iter().chain(&taps).copied().collect();
        let set = all.iter().fold(0u32, |a, s| {
            assert_eq!(a & s.clock_bit(), 0, "{s:?} shares a bit");
            a | s.clock_bit()
        });
        assert_eq!(set, (1 << 14) - 1);
        for s in &all {
            assert_eq!(TsSource::names_in(s.clock_bit()), [s.name()]);
        }
        let two =
            TsSource::Trailer(crate::trailer::TrailerKind::Metamako).clock_bit() | TsSource::PcapRecord.clock_bit();
        assert_eq!(TsSource::names_in(two), ["pcap", "metamako"]);
    }

    #[test]
    fn epoch_formatting() {
        assert_eq!(format_epoch(1_527_552_589_170_404_442), "1527552589.170404442");
        assert_eq!(format_epoch(0), "0.000000000");
        assert_eq!(format_epoch(-1_500_000_000), "-2.500000000");
        assert_eq!(format_epoch(-6_500_000_000), "-7.500000000");
    }

    #[test]
    fn quality_names() {
        assert_eq!(ClockQuality::default().names(), "");
        assert_eq!((ClockQuality::DEGRADED | ClockQuality::EXTENDED).names(), "degraded|extended");
        // Read back: every combination of the six flags; unknown names are ignored.
        for bits in 0..64u16 {
            assert_eq!(ClockQuality::from_names(&ClockQuality(bits).names()), ClockQuality(bits));
        }
        assert_eq!(ClockQuality::from_names("unsynced|future_flag"), ClockQuality::UNSYNCED);
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The (year, month, day) of a day count since 1970-01-01 (Hinnant's `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, m, d)
}

/// UTC offset of US Eastern time (New York, where NASDAQ's ITCH timestamps are kept) at `utc_ns`:
/// −4 h during daylight saving time (second Sunday of March 02:00 local to first Sunday of November
/// 02:00 local, the rule since 2007), −5 h otherwise. In seconds.
pub fn us_eastern_offset_s(utc_ns: i64) -> i64 {
    const H: i64 = 3_600;
    let secs = utc_ns.div_euclid(NANOS_PER_SEC);
    let (year, _, _) = civil_from_days(secs.div_euclid(86_400));
    // Weekday of a day count: 1970-01-01 was a Thursday (4, with Sunday = 0).
    let sunday_on_or_after = |days: i64| days + (7 - (days + 4).rem_euclid(7)) % 7;
    let march_8 = days_from_civil(year, 3, 8);
    let nov_1 = days_from_civil(year, 11, 1);
    // 02:00 EST = 07:00 UTC; 02:00 EDT = 06:00 UTC.
    let dst_start = sunday_on_or_after(march_8) * 86_400 + 7 * H;
    let dst_end = sunday_on_or_after(nov_1) * 86_400 + 6 * H;
    if (dst_start..dst_end).contains(&secs) { -4 * H } else { -5 * H }
}

#[cfg(test)]
mod civil_tests {
    use super::*;

    #[test]
    fn civil_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2016, 9, 13), 17_057);
        for z in [-1_000_000i64, -1, 0, 17_057, 20_000, 2_932_896] {
            let (y, m, d) = civil_from_days(z);
            assert_eq!(days_from_civil(y, m, d), z);
        }
    }

    #[test]
    fn eastern_dst_edges() {
        let at = |y, mo, d, h: i64, mi: i64| (days_from_civil(y, mo, d) * 86_400 + h * 3_600 + mi * 60) * NANOS_PER_SEC;
        // 2016: DST from 2016-03-13 07:00 UTC to 2016-11-06 06:00 UTC.
        assert_eq!(us_eastern_offset_s(at(2016, 3, 13, 6, 59)), -5 * 3_600);
        assert_eq!(us_eastern_offset_s(at(2016, 3, 13, 7, 0)), -4 * 3_600);
        assert_eq!(us_eastern_offset_s(at(2016, 9, 13, 20, 50)), -4 * 3_600);
        assert_eq!(us_eastern_offset_s(at(2016, 11, 6, 5, 59)), -4 * 3_600);
        assert_eq!(us_eastern_offset_s(at(2016, 11, 6, 6, 0)), -5 * 3_600);
        // 2026: second Sunday of March is the 8th, first Sunday of November the 1st.
        assert_eq!(us_eastern_offset_s(at(2026, 3, 8, 7, 0)), -4 * 3_600);
        assert_eq!(us_eastern_offset_s(at(2026, 11, 1, 6, 0)), -5 * 3_600);
        assert_eq!(us_eastern_offset_s(at(2026, 11, 30, 14, 30)), -5 * 3_600);
    }
}
