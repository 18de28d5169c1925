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
}

impl TsSource {
    /// Short stable name used in CSV/JSON output.
    pub fn name(self) -> &'static str {
        match self {
            TsSource::PcapRecord => "pcap",
            TsSource::PcapngBlock => "pcapng",
            TsSource::PcapngNone => "none",
            TsSource::Erf => "erf",
            TsSource::Trailer(k) => k.name(),
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

    /// No flag set.
    pub const fn is_clean(self) -> bool {
        self.0 == 0
    }
    /// True if every flag of `other` is set in `self`.
    pub const fn contains(self, other: ClockQuality) -> bool {
        self.0 & other.0 == other.0
    }
    /// Flag names, for display: `"degraded|unsynced"`, or `""` when clean.
    pub fn names(self) -> String {
        const NAMES: [&str; 6] = ["degraded", "unsynced", "stale_keyframe", "extended", "record_error", "backwards"];
        let mut out = String::new();
        for (bit, name) in NAMES.iter().enumerate() {
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

/// Formats `ns` since the epoch as `seconds.nanoseconds` (9 digits), like tshark's `frame.time_epoch`.
/// Negative values (before 1970) print with a leading `-` and a positive fraction of the remaining
/// second, e.g. `-1.500000000` for -1.5 s.
pub fn format_epoch(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let abs = ns.unsigned_abs();
    format!("{sign}{}.{:09}", abs / 1_000_000_000, abs % 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_formatting() {
        assert_eq!(format_epoch(1_527_552_589_170_404_442), "1527552589.170404442");
        assert_eq!(format_epoch(0), "0.000000000");
        assert_eq!(format_epoch(-1_500_000_000), "-1.500000000");
    }

    #[test]
    fn quality_names() {
        assert_eq!(ClockQuality::default().names(), "");
        assert_eq!((ClockQuality::DEGRADED | ClockQuality::EXTENDED).names(), "degraded|extended");
    }
}
