//! US Eastern time for exchange-to-capture: an ITCH timestamp counts ns from Eastern midnight.

use crate::time::us_eastern_offset_s;

/// Exchange-to-capture arithmetic, cached per UTC hour: US Eastern's offset is whole hours, so within
/// one UTC hour the offset and the local midnight are constant (no division per message).
#[derive(Debug, Clone, Copy)]
pub(super) struct EasternClock {
    /// The cached UTC hour, as [start, end) in ns.
    pub(super) hour: (i64, i64),
    offset_ns: i64,
    /// Local midnight of this hour, ns on the local time line (modulo 2^64: see `local`).
    midnight_ns: i64,
}

impl EasternClock {
    pub(super) const EMPTY: EasternClock = EasternClock { hour: (0, 0), offset_ns: 0, midnight_ns: 0 };
    const DAY: i64 = 86_400_000_000_000;
    const HOUR: i64 = 3_600_000_000_000;

    /// Capture time `t` (UTC ns) on the Eastern local time line, ns since the local midnight of its
    /// UTC hour (the start of [`EasternClock::delay_from`]).
    #[inline(always)]
    pub(super) fn local(&mut self, t: i64) -> i64 {
        if t < self.hour.0 || t >= self.hour.1 {
            self.enter_hour(t);
        }
        // Modulo 2^64: `midnight_ns` may lie beyond the range near its ends (see `enter_hour`),
        // and the result, under a day and an hour, is exact all the same.
        t.wrapping_add(self.offset_ns).wrapping_sub(self.midnight_ns)
    }

    /// The US Eastern day of capture time `t` (UTC ns), numbered from 1970-01-01: the trading day
    /// whose order ids OUCH keeps unique.
    #[inline]
    pub(super) fn day(&mut self, t: i64) -> i32 {
        if t < self.hour.0 || t >= self.hour.1 {
            self.enter_hour(t);
        }
        // (Within ±106,751 days of 1970 for any i64 time: an i32.)
        self.midnight_ns.div_euclid(Self::DAY) as i32
    }

    #[inline(never)]
    fn enter_hour(&mut self, t: i64) {
        // In i128: near the ends of the range the hour and its local midnight lie beyond them.
        let (hour, day) = (i128::from(Self::HOUR), i128::from(Self::DAY));
        let start = i128::from(t).div_euclid(hour) * hour;
        let offset_ns = us_eastern_offset_s(t) * 1_000_000_000;
        let midnight_ns = (start + i128::from(offset_ns)).div_euclid(day) * day;
        let clamp = |v: i128| v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
        *self = EasternClock { hour: (clamp(start), clamp(start + hour)), offset_ns, midnight_ns: midnight_ns as i64 };
    }

    /// Capture time minus an ITCH timestamp (ns since Eastern midnight), from the capture's
    /// [`EasternClock::local`] time, taken to the nearest day so that a capture just after midnight
    /// and a message just before it stay close.
    #[inline(always)]
    pub(super) fn delay_from(local: i64, itch_ns: u64) -> i64 {
        let mut delay = local - itch_ns as i64;
        if delay > Self::DAY / 2 {
            delay -= Self::DAY;
        } else if delay < -Self::DAY / 2 {
            delay += Self::DAY;
        }
        delay
    }

    /// Capture time `t` (UTC ns) minus an ITCH timestamp (ns since Eastern midnight).
    #[cfg(test)]
    #[inline]
    pub(super) fn delay(&mut self, t: i64, itch_ns: u64) -> i64 {
        Self::delay_from(self.local(t), itch_ns)
    }
}

#[cfg(test)]
mod tests {
    use super::EasternClock;
    use crate::time::{NANOS_PER_SEC, days_from_civil};

    /// [`EasternClock::day`] turns at US Eastern midnight, EST (05:00 UTC) or EDT (04:00 UTC), on the
    /// days DST begins (2026-03-08) and ends (2026-11-01) and those after them, and in any order of
    /// look-ups (its hour cached): each UTC time by hand, its Eastern date the day before or the day.
    #[test]
    fn a_day_turns_at_eastern_midnight_across_dst() {
        let utc = |m, d, h: i64| (days_from_civil(2026, m, d) * 86_400 + h * 3_600) * NANOS_PER_SEC;
        let day = |m, d| days_from_civil(2026, m, d) as i32;
        let cases = [
            // Mar 8, 00:00 EST is 05:00 UTC; Mar 9, 00:00 EDT is 04:00 UTC.
            (utc(3, 8, 5) - 1, day(3, 7)),
            (utc(3, 8, 5), day(3, 8)),
            (utc(3, 8, 7), day(3, 8)), // 03:00 EDT, an hour after the change
            (utc(3, 9, 4) - 1, day(3, 8)),
            (utc(3, 9, 4), day(3, 9)),
            // Nov 1, 00:00 EDT is 04:00 UTC; Nov 2, 00:00 EST is 05:00 UTC.
            (utc(11, 1, 4) - 1, day(10, 31)),
            (utc(11, 1, 4), day(11, 1)),
            (utc(11, 2, 5) - 1, day(11, 1)),
            (utc(11, 2, 5), day(11, 2)),
        ];
        let mut c = EasternClock::EMPTY;
        for &(t, want) in cases.iter().chain(cases.iter().rev()) {
            assert_eq!(c.day(t), want, "{t}");
        }
    }
}
