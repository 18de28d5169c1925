use super::limits::HOLD_MAX_NS;
use super::symbols::SymHistory;
use super::*;

/// A fixed pseudo-random sequence (an LCG from `seed`): each call gives a value below `m`.
pub(super) fn lcg(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed;
    move |m| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % m
    }
}

/// Ethernet (optionally with an 802.1Q tag) + IPv4 from 10.0.0.1 + UDP from port 12345 to
/// `dst:dport`, carrying `payload`.
pub(super) fn udp_frame(vlan: bool, dst: [u8; 4], dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    if vlan {
        f.extend([0x81, 0x00, 0x00, 0x05]);
    }
    f.extend([0x08, 0x00]);
    let total = 28 + payload.len();
    f.extend([0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1]);
    f.extend(dst);
    let ulen = 8 + payload.len();
    f.extend([0x30, 0x39]);
    f.extend(dport.to_be_bytes());
    f.extend([(ulen >> 8) as u8, ulen as u8, 0, 0]);
    f.extend_from_slice(payload);
    f
}

#[test]
fn match_rules_parse() {
    assert!(matches!(MatchRule::parse(r"token:T(\d+)"), Ok(MatchRule::Token(_))));
    assert!(matches!(MatchRule::parse("symbol"), Ok(MatchRule::Symbol { window_ns: 1_000_000_000 })));
    assert!(matches!(MatchRule::parse("symbol:250us"), Ok(MatchRule::Symbol { window_ns: 250_000 })));
    let e = MatchRule::parse(r"token:T\d+").unwrap_err();
    assert!(e.contains("capture group"), "{e}");
    assert!(MatchRule::parse("token:(").unwrap_err().contains("bad regular expression"));
    assert!(MatchRule::parse("symbol:soon").unwrap_err().contains("not a duration"));
    // A window of 1 ns or none matches nothing: a unit forgotten, or a window that cannot work.
    for w in ["symbol:1", "symbol:0", "symbol:0ns"] {
        assert!(MatchRule::parse(w).unwrap_err().contains("above 0 with its unit"), "{w}");
    }
    assert!(MatchRule::parse("seq").unwrap_err().contains("expected token:REGEX or symbol[:WINDOW]"));
}

#[test]
fn durations() {
    assert_eq!(parse_duration_ns("15"), None, "a bare number has no unit");
    // Decimals to the nanosecond, minutes and hours.
    assert_eq!(parse_duration_ns("1.5s"), Some(1_500_000_000));
    assert_eq!(parse_duration_ns("0.25ms"), Some(250_000));
    assert_eq!(parse_duration_ns(".5us"), Some(500));
    assert_eq!(parse_duration_ns("2.500us"), Some(2_500), "trailing zeros are no precision");
    assert_eq!(parse_duration_ns("1.000000001s"), Some(1_000_000_001));
    assert_eq!(parse_duration_ns("1.5min"), Some(90_000_000_000));
    assert_eq!(parse_duration_ns("0.9999999h"), Some(3_599_999_640_000));
    assert_eq!(parse_duration_ns("8h"), Some(28_800_000_000_000));
    assert_eq!(parse_duration_ns("1.5ns"), None, "not a whole nanosecond");
    assert_eq!(parse_duration_ns("1.0000000001s"), None, "not a whole nanosecond");
    for bad in ["1m", "1.s", ".s", "s", "1..5s", "1.-5s", "+1s", "1e3ns", "1,5s", " s", "0x10ns", "1.5e1s"] {
        assert_eq!(parse_duration_ns(bad), None, "{bad}");
    }
    // The largest: i64::MAX ns, 9,223,372,036,854,775,807 (about 292 years), refused beyond.
    assert_eq!(parse_duration_ns("9223372036.854775807s"), Some(i64::MAX));
    assert_eq!(parse_duration_ns("9223372036.854775808s"), None);
    assert_eq!(parse_duration_ns("2562048h"), None);
    assert_eq!(parse_duration_ns("3µs"), Some(3_000));
    assert_eq!(parse_duration_ns("15ns"), Some(15));
    assert_eq!(parse_duration_ns("3us"), Some(3_000));
    assert_eq!(parse_duration_ns("2ms"), Some(2_000_000));
    assert_eq!(parse_duration_ns("1s"), Some(1_000_000_000));
    assert_eq!(parse_duration_ns("-1s"), None);
    assert_eq!(parse_duration_ns("9999999999999s"), None, "overflow is refused, not wrapped");
}

#[test]
fn ouch_version_from_the_first_enter_order() {
    let soup = |msg: &[u8]| {
        let mut p = ((msg.len() + 1) as u16).to_be_bytes().to_vec();
        p.push(b'U');
        p.extend_from_slice(msg);
        p
    };
    let mut v5 = vec![b'O'];
    v5.resize(45, b' ');
    v5.extend_from_slice(&0u16.to_be_bytes());
    assert_eq!(detect_ouch_version(&soup(&v5)), Some(OrderProto::Ouch50));
    let mut v42 = vec![b'O'];
    v42.resize(49, b'1');
    assert_eq!(detect_ouch_version(&soup(&v42)), Some(OrderProto::Ouch42));
    assert_eq!(detect_ouch_version(&[0, 1, b'R']), None, "heartbeat: not yet known");
}

/// The hour-cached exchange-to-capture arithmetic against hand-computed cases: New York local time
/// is UTC−5 in winter and UTC−4 in summer, and ITCH counts ns since local midnight.
#[test]
fn exchange_to_capture_delay_across_midnight_and_dst() {
    const S: i64 = 1_000_000_000;
    const H: i64 = 3_600 * S;
    let mut c = EasternClock::EMPTY;
    // 2026-11-30T14:30:00Z = 09:30 EST; a message stamped 09:30:00 minus 1.26 ms local.
    let t = 1_796_049_000 * S;
    assert_eq!(c.delay(t, (9 * H + 30 * 60 * S - 1_260_000) as u64), 1_260_000);
    // 2026-12-01T04:59:59.999999Z is 23:59:59.999999 EST of Nov 30; 05:00:00.000002Z is 00:00:00.000002
    // of Dec 1. A message stamped 23:59:59.9999995 and captured after midnight is 2.5 µs late, not a day.
    let before = 1_796_101_200 * S - 1_000;
    let after = 1_796_101_200 * S + 2_000;
    let msg = (24 * H - 500) as u64;
    assert_eq!(c.delay(before, msg), -500);
    assert_eq!(c.delay(after, msg), 2_500);
    // Summer: 2026-07-01T13:30:00Z = 09:30 EDT (UTC−4).
    let summer = 1_782_912_600 * S;
    assert_eq!(c.delay(summer, (9 * H + 30 * 60 * S - 40_000) as u64), 40_000);
    // Back in winter after the summer value: the cache follows the hour.
    assert_eq!(c.delay(t + 5, (9 * H + 30 * 60 * S) as u64), 5);
}

#[test]
fn symbol_ticks_follow_the_symbol_whatever_the_locate() {
    let (aapl, msft, zero) = (Symbol(*b"AAPL    "), Symbol(*b"MSFT    "), Symbol([0; 8]));
    let s = 0u32;
    let mut ticks = SymbolTicks::new();
    // AAPL under locate 7; MSFT under locate 2; then locate 7 reused for MSFT (a new directory):
    // MSFT's history continues; AAPL's keeps its ticks. A symbol of zero bytes under a locate
    // never set (it holds a placeholder of zero bytes) is a symbol like any other.
    ticks.push(7, aapl, 100, (s, 1), 0, 0);
    ticks.push(2, msft, 200, (s, 2), 0, 0);
    ticks.push(7, msft, 300, (s, 3), 0, 0);
    ticks.push(7, aapl, 300, (s, 4), 0, 0);
    ticks.push(5, zero, 400, (s, 5), 0, 0);
    let newest = |sym, t| ticks.at_or_before(sym, t).map(|k| (k.0, k.2, k.3));
    assert_eq!(newest(aapl, 1_000), Some((300, 4, 1)));
    assert_eq!(newest(aapl, 299), Some((100, 1, 1)));
    assert_eq!(newest(msft, 1_000), Some((300, 3, 1)));
    assert_eq!(newest(msft, 250), Some((200, 2, 1)));
    assert_eq!(newest(zero, 1_000), Some((400, 5, 1)));
    assert_eq!(newest(Symbol(*b"IBM     "), 1_000), None);
}

/// While an order may start as early as `hold_from`, the ticks of a symbol that may be its match
/// are kept (not those followed by a tick at or before it); moving the hold on and pruning forgets
/// those no order can match any more, and with no hold, those no order recorded up to `REORDER_NS`
/// late can. (Ticks 10 ms apart: beyond the reorder allowance, which keeps the last millisecond's.)
#[test]
fn ticks_an_order_held_may_match_are_kept_until_it_is_given_out() {
    const U: i64 = 100_000;
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let mut ticks = SymbolTicks::new();
    ticks.hold(250 * U);
    // Ticks at 100, 200, ..., 900.
    for n in 1..=9u64 {
        ticks.push(7, aapl, n as i64 * 100 * U, (s, n), 0, 0);
    }
    let newest = |ticks: &SymbolTicks, t: i64| ticks.at_or_before(aapl, t * U).map(|k| (k.0 / U, k.2));
    let kept = |ticks: &SymbolTicks| ticks.histories[0].live().iter().map(|k| k.0 / U).collect::<Vec<_>>();
    // 200 (followed by 300, after the hold's 250) and everything after it were kept; 100 (followed by
    // 200) was not: no order starting at 250 or later matches it.
    assert_eq!(newest(&ticks, 260), Some((200, 2)));
    assert_eq!(newest(&ticks, 450), Some((400, 4)));
    assert_eq!(newest(&ticks, 199), None);
    assert_eq!(kept(&ticks), [200, 300, 400, 500, 600, 700, 800, 900]);
    // The hold moves on to 420: 200 and 300 (followed by ticks at or before 420) go.
    ticks.hold(420 * U);
    ticks.prune(420 * U);
    assert_eq!(kept(&ticks), [400, 500, 600, 700, 800, 900]);
    assert_eq!(newest(&ticks, 450), Some((400, 4)));
    // No order held: only what an order recorded late may match (from 900 less the allowance on:
    // 800, the newest at or before 890, and 900).
    ticks.hold(i64::MAX);
    ticks.prune(SymbolTicks::reach_of(i64::MAX, 900 * U));
    assert_eq!(kept(&ticks), [800, 900]);
    assert_eq!(newest(&ticks, 450), None);
    assert_eq!(newest(&ticks, 899), Some((800, 8)));
    // A tick followed by none at or before the hold stays, however old: the tick at 4,000 is the match
    // of an order at 5,000 (the next is at 9,000); whether it is within the rule's window is the rule's
    // to judge.
    let mut ticks = SymbolTicks::new();
    ticks.hold(5_000 * U);
    for (n, t) in [1_000, 2_000, 3_000, 4_000, 9_000, 9_100, 9_200, 9_300].into_iter().enumerate() {
        ticks.push(7, aapl, t * U, (s, n as u64), 0, 0);
    }
    assert_eq!(kept(&ticks), [4_000, 9_000, 9_100, 9_200, 9_300]);
}

/// Ticks recorded out of time order (a host reordering frames): the match is the newest by time, not
/// the one recorded last; while an order is held, the newest tick at or before the hold and those
/// after it are kept, in time order, whatever the order they were recorded in; moving the hold on
/// forgets what is older than an order from then on would match; a tick recorded late at the time of
/// one kept joins it (one tick of two messages). (Ticks 10 ms apart.)
#[test]
fn ticks_recorded_out_of_order_are_matched_by_time() {
    const U: i64 = 100_000;
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let newest = |ticks: &SymbolTicks, t: i64| ticks.at_or_before(aapl, t * U).map(|k| (k.0 / U, k.2));
    let kept = |ticks: &SymbolTicks| ticks.histories[0].live().iter().map(|k| k.0 / U).collect::<Vec<_>>();
    let mut ticks = SymbolTicks::new();
    for (n, t) in [(1, 100), (3, 300), (2, 200)] {
        ticks.push(7, aapl, t * U, (s, n), 0, 0);
    }
    assert_eq!(newest(&ticks, 1_000), Some((300, 3)));
    assert_eq!(newest(&ticks, 250), Some((200, 2)));
    assert_eq!(newest(&ticks, 150), Some((100, 1)));

    let mut ticks = SymbolTicks::new();
    ticks.hold(250 * U);
    // Recorded: 100, 300, 200, 400, ..., 700.
    for (n, t) in [(1, 100), (3, 300), (2, 200), (4, 400), (5, 500), (6, 600), (7, 700)] {
        ticks.push(7, aapl, t * U, (s, n), 0, 0);
    }
    // 100 is followed by 200, at or before the hold: gone. The rest, in time order.
    assert_eq!(kept(&ticks), [200, 300, 400, 500, 600, 700]);
    assert_eq!(newest(&ticks, 260), Some((200, 2)));
    assert_eq!(newest(&ticks, 350), Some((300, 3)));
    assert_eq!(newest(&ticks, 450), Some((400, 4)));
    assert_eq!(newest(&ticks, 199), None);
    // From 320 on, an order matches 300 or newer: 200 goes, though it was recorded after 300.
    ticks.hold(320 * U);
    ticks.prune(320 * U);
    assert_eq!(kept(&ticks), [300, 400, 500, 600, 700]);
    assert_eq!(newest(&ticks, 350), Some((300, 3)));
    // A tick recorded late at 500 joins the one kept there: two messages at that time, named by the
    // one recorded last.
    ticks.push(7, aapl, 500 * U, (s, 8), 0, 0);
    assert_eq!(kept(&ticks), [300, 400, 500, 600, 700]);
    assert_eq!(ticks.at_or_before(aapl, 550 * U).map(|k| (k.0 / U, k.2, k.3)), Some((500, 8, 2)));
}

/// An order recorded after newer ticks of its symbol (a host reordering frames by less than a
/// millisecond): with no order held, the ticks that left the ring within the allowance are kept,
/// and the order finds its trigger; older ones are not.
#[test]
fn ticks_an_order_recorded_late_may_match_are_kept() {
    const US: i64 = 1_000;
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let mut ticks = SymbolTicks::new();
    // A tick every 10 us for 2 ms.
    for n in 0..200u64 {
        ticks.push(7, aapl, n as i64 * 10 * US, (s, n), 0, 0);
    }
    // An order at 1,995 us recorded now matches 1,990 us (in the ring); one at 1,205 us, 120 (kept:
    // every tick from 1 ms before the newest on is).
    assert_eq!(ticks.at_or_before(aapl, 1_995 * US).map(|k| k.2), Some(199));
    assert_eq!(ticks.at_or_before(aapl, 1_205 * US).map(|k| k.2), Some(120));
    // 1 ms before the newest (1,990 us) is 990 us: the tick at 990 us is kept, those before it not.
    assert_eq!(ticks.at_or_before(aapl, 995 * US).map(|k| k.2), Some(99));
    assert_eq!(ticks.at_or_before(aapl, 985 * US), None);
}

/// A hold that nothing ends (an order's stream went quiet holding bytes) keeps ticks at most
/// `HOLD_MAX_NS` back: each tick kept trims its symbol's kept ticks to the newest at or before that
/// bound on, so they stay within a second's worth, not every tick since the hold began (10,000 here).
#[test]
fn a_hold_keeps_ticks_at_most_its_bound_back() {
    const MS: i64 = 1_000_000;
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let mut ticks = SymbolTicks::new();
    ticks.hold(0);
    let mut most = 0;
    for n in 1..=10_000u64 {
        let t = n as i64 * MS;
        ticks.push(7, aapl, t, (s, n), 0, 0);
        if n % 1_000 == 0 {
            ticks.prune(0i64.max(t - HOLD_MAX_NS));
        }
        most = most.max(ticks.histories[0].live().len());
    }
    // Kept from the newest tick at or before the bound (now - 1 s) on: that one and the 1,000 after it.
    assert_eq!(most, 1_001);
    assert_eq!(ticks.histories[0].live().len(), 1_001);
}

/// Times at the ends of the i64 range (a pcapng whose `if_tsoffset` takes its stamps beyond the
/// range is read as saturated, with a warning): the analysis neither panics (overflow checks are on
/// in tests) nor loses a frame; intervals start on multiples of their length, but the first, clamped
/// to the range's start, and the last, which would end past the range and lasts to its end; the
/// exchange-to-capture delay is exact there too.
#[test]
fn times_at_the_ends_of_the_range_are_analysed_without_overflow() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    const S: i64 = 1_000_000_000;
    // MoldUDP64 packets of one ITCH Add Order each (stamped 1 ns after midnight) to feed A,
    // 233.1.2.3:26477 (or B, 233.1.2.4:26478), sequences 1, 2, ...: each a new tick.
    let frame = |seq: u64, b: bool| {
        let mut itch = vec![b'A', 0, 7, 0, 0, 0, 0, 0, 0, 0, 1];
        itch.resize(36, b' ');
        let mut mold = b"SESSION001".to_vec();
        mold.extend(seq.to_be_bytes());
        mold.extend(1u16.to_be_bytes());
        mold.extend((itch.len() as u16).to_be_bytes());
        mold.extend(&itch);
        if b { udp_frame(false, [233, 1, 2, 4], 26478, &mold) } else { udp_frame(false, [233, 1, 2, 3], 26477, &mold) }
    };
    // 2026-11-30T14:30:00Z is 09:30 EST; the epoch is 19:00 EST the day before; i64::MIN is 1677-09-21T00:12:43.145224192Z, 20:12:43.145224192
    // EDT (today's rules) the day before; i64::MAX is 2262-04-11T23:47:16.854775807Z, 19:47:16.854775807
    // EDT. The message's stamp, 1 ns after midnight, is within half a day before each (or after, then
    // the delay is negative: 20:12 and 19:47 are more than 12 h after midnight).
    let t2026 = 1_796_049_000 * S;
    let hms = |h: i64, m: i64, s: i64, ns: i64| ((h * 60 + m) * 60 + s) * S + ns;
    // Then the last tick again on feed B, back at the range's start: a copy earlier than the first,
    // by more than i64::MAX: the first copy, and A's trails it by a delay that saturates.
    let times = [i64::MIN, i64::MIN + 1, -1, 0, t2026, i64::MAX - 1, i64::MAX, i64::MIN];
    let delays = [
        hms(20, 12, 43, 145_224_192) - 1 - 86_400 * S,
        hms(20, 12, 43, 145_224_193) - 1 - 86_400 * S,
        hms(19, 0, 0, -1) - 1 - 86_400 * S,
        hms(19, 0, 0, 0) - 1 - 86_400 * S,
        hms(9, 30, 0, 0) - 1,
        hms(19, 47, 16, 854_775_806) - 1 - 86_400 * S,
        hms(19, 47, 16, 854_775_807) - 1 - 86_400 * S,
    ];
    let last_start = i64::MAX - 854_775_807;
    let e2c = "exchange_to_capture";
    let want = [
        (i64::MIN, e2c, vec![delays[0], delays[1]]),
        (-S, e2c, vec![delays[2]]),
        (0, e2c, vec![delays[3]]),
        (t2026, e2c, vec![delays[4]]),
        (last_start, "feed_ab_delay", vec![i64::MAX]),
        (last_start, e2c, vec![delays[5], delays[6]]),
    ];
    for fast_path in [true, false] {
        let mut a = Analyzer::new(AnalyzeConfig { fast_path, ..AnalyzeConfig::default() });
        for (i, &t) in times.iter().enumerate() {
            let data = frame(i.min(6) as u64 + 1, i == 7);
            let f = Frame::record(&data, t, LinkType::Ethernet);
            if !a.frame_fast(i as u64, &f, |_| {}) {
                a.frame(i as u64, t, &f, &dissect(&data, f.link), TsSource::PcapRecord, ClockQuality::default());
            }
        }
        a.finish();
        let got: Vec<_> = a
            .drain_intervals()
            .map(|i| {
                // The last interval lasts to the range's end, where the capture's last time is.
                let len = if i.start_ns == last_start { i64::MAX - last_start } else { S };
                assert_eq!(i.len_ns, len, "{} at {}", i.metric, i.start_ns);
                let s = i.latency.summary();
                (i.start_ns, i.metric, s.count, s.min_ns, s.max_ns)
            })
            .collect();
        let want: Vec<_> =
            want.iter().map(|(start, m, d)| (*start, *m, d.len() as u64, d[0], *d.last().unwrap())).collect();
        assert_eq!(got, want, "fast path {fast_path}");
        assert_eq!(a.report().counters.frames, times.len() as u64);
    }
}

/// A tick at the range's start (a saturated stamp) is a tick like any other for the symbol rule:
/// an empty slot is told by its count of messages, not by its time.
#[test]
fn a_tick_at_the_start_of_the_range_is_found_by_symbol() {
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let mut ticks = SymbolTicks::new();
    ticks.push(7, aapl, i64::MIN, (s, 1), 3, 0);
    let newest = |t| ticks.at_or_before(aapl, t).map(|k| (k.0, k.2, k.3, k.4));
    assert_eq!(newest(i64::MIN), Some((i64::MIN, 1, 1, 3)));
    assert_eq!(newest(0), Some((i64::MIN, 1, 1, 3)));
    assert_eq!(SymHistory::default().at_or_before(i64::MIN), None);
}

/// Two sessions of one feed, each with a gap of nearly 2^64 sequences (hostile or corrupt
/// sequences): the feed's missing count saturates instead of overflowing (a debug build panicked
/// adding the sessions' counts; a release build wrapped to a small number).
#[test]
fn missing_counts_of_a_feeds_sessions_saturate() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    let frame = |session: &[u8; 10], seq: u64| {
        let mut itch = vec![b'A', 0, 7, 0, 0, 0, 0, 0, 0, 0, 1];
        itch.resize(36, b' ');
        let mut mold = session.to_vec();
        mold.extend(seq.to_be_bytes());
        mold.extend(1u16.to_be_bytes());
        mold.extend((itch.len() as u16).to_be_bytes());
        mold.extend(&itch);
        udp_frame(false, [233, 1, 2, 3], 26477, &mold)
    };
    let packets =
        [(b"SESSION001", 1), (b"SESSION001", u64::MAX - 1), (b"SESSION002", 1), (b"SESSION002", u64::MAX - 1)];
    for fast_path in [true, false] {
        let mut a = Analyzer::new(AnalyzeConfig { fast_path, ..AnalyzeConfig::default() });
        for (i, (session, seq)) in packets.iter().enumerate() {
            let data = frame(session, *seq);
            let t = 1_796_049_000_000_000_000 + i as i64;
            let f = Frame::record(&data, t, LinkType::Ethernet);
            if !a.frame_fast(i as u64, &f, |_| {}) {
                a.frame(i as u64, t, &f, &dissect(&data, f.link), TsSource::PcapRecord, ClockQuality::default());
            }
        }
        a.finish();
        let r = a.report();
        // Each session skipped 2..=2^64-2: 2^64 - 3 sequences, twice.
        assert_eq!((r.feeds[0].gaps, r.feeds[0].missing), (2, u64::MAX), "fast path {fast_path}");
    }
}

/// Ticks of ever-new symbols (garbage names) are kept for the first `MAX_SYMBOLS` symbols only; those
/// of further symbols are counted, and a symbol kept already still gets its ticks.
#[test]
fn symbols_kept_are_bounded() {
    let s = 0u32;
    let mut ticks = SymbolTicks::new();
    let name = |n: usize| Symbol(format!("{n:08}").into_bytes().try_into().unwrap());
    for n in 0..MAX_SYMBOLS + 3 {
        ticks.push((n % 65_536) as u16, name(n), n as i64, (s, n as u64), 0, 0);
    }
    assert_eq!((ticks.histories.len(), ticks.untracked), (MAX_SYMBOLS, 3));
    assert_eq!(ticks.at_or_before(name(MAX_SYMBOLS), i64::MAX), None);
    ticks.push(9, name(9), 1 << 40, (s, 1 << 40), 0, 0);
    assert_eq!(ticks.at_or_before(name(9), i64::MAX).map(|k| k.2), Some(1 << 40));
    assert_eq!(ticks.untracked, 3);
}

/// A symbol history's tick keeps its frame at no cost in room: 32 bytes, as it was with the session's
/// 10 bytes in place of its place in the arbiter and the frame (a push writes no more).
#[test]
fn a_symbol_tick_with_its_frame_is_32_bytes() {
    use crate::proto::moldudp64::Session;
    assert_eq!(std::mem::size_of::<super::symbols::SymTick>(), 32);
    assert_eq!(std::mem::size_of::<(i64, Session, u64, u32, u16)>(), 32);
}

/// A tick given an earlier copy's time that another tick kept has already: one tick of both their
/// messages (ambiguous to a symbol match), named by the one retimed, with the earlier copy's feed and
/// frame (5); times stay in order.
#[test]
fn a_tick_retimed_onto_anothers_time_joins_it() {
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let mut ticks = SymbolTicks::new();
    for (seq, t, frame) in [(1, 100, 10), (2, 200, 20), (3, 300, 30)] {
        ticks.push(7, aapl, t, (s, seq), 0, frame);
    }
    ticks.retime(7, 300, (s, 3), 100, 1, 5);
    let kept: Vec<_> = ticks.histories[0].live().iter().map(|k| (k.0, k.2, k.3, k.4, k.5)).collect();
    assert_eq!(kept, [(100, 3, 2, 1, 5), (200, 2, 1, 0, 20)]);
    assert_eq!(ticks.at_or_before(aapl, 250).map(|k| (k.0, k.2, k.3)), Some((200, 2, 1)));
    assert_eq!(ticks.at_or_before(aapl, 150).map(|k| (k.0, k.2, k.3)), Some((100, 3, 2)));
}

/// An order session (client 10.1.0.2:40001, exchange 10.1.0.1:8003, OUCH 5.0) and a MoldUDP64 feed,
/// built frame by frame for [`frozen`].
struct Frames {
    frames: Vec<Vec<u8>>,
    client_seq: u32,
    exchange_seq: u32,
}

impl Frames {
    /// The connection's SYN and SYN-ACK.
    fn new() -> Self {
        let mut f = Frames { frames: Vec::new(), client_seq: 1_000, exchange_seq: 5_000 };
        f.frames.push(tcp_frame(true, 1_000, 0, 0x02, &[]));
        f.frames.push(tcp_frame(false, 5_000, 1_001, 0x12, &[]));
        (f.client_seq, f.exchange_seq) = (1_001, 5_001);
        f
    }

    /// A SoupBinTCP packet of type `ty` carrying `msg`, to the exchange or from it.
    fn soup(&mut self, to_exchange: bool, ty: u8, msg: &[u8]) {
        let mut p = ((msg.len() + 1) as u16).to_be_bytes().to_vec();
        p.push(ty);
        p.extend_from_slice(msg);
        let (seq, ack) =
            if to_exchange { (self.client_seq, self.exchange_seq) } else { (self.exchange_seq, self.client_seq) };
        self.frames.push(tcp_frame(to_exchange, seq, ack, 0x18, &p));
        *if to_exchange { &mut self.client_seq } else { &mut self.exchange_seq } += p.len() as u32;
    }

    /// An OUCH 5.0 Enter Order: UserRefNum `urn`, `symbol`, ClOrdID `token`.
    fn order(&mut self, urn: u32, symbol: &[u8], token: &[u8]) {
        let mut m = vec![b'O'];
        m.extend(urn.to_be_bytes());
        m.push(b'B');
        m.extend(100u32.to_be_bytes());
        m.extend(format!("{:<8}", std::str::from_utf8(symbol).unwrap()).as_bytes());
        m.extend(10_000u64.to_be_bytes());
        m.extend(b"0YP N");
        m.extend(format!("{:<14}", std::str::from_utf8(token).unwrap()).as_bytes());
        m.extend(0u16.to_be_bytes());
        self.soup(true, b'U', &m);
    }

    /// An OUCH 5.0 Cancel Order Request (§2.3, 9 bytes) of UserRefNum `urn`, to 0 shares.
    fn cancel(&mut self, urn: u32) {
        let mut m = vec![b'X'];
        m.extend(urn.to_be_bytes());
        m.extend(0u32.to_be_bytes());
        self.soup(true, b'U', &m);
    }

    /// An OUCH 5.0 Order Accepted of UserRefNum `urn`.
    fn accepted(&mut self, urn: u32) {
        let mut m = vec![b'A'];
        m.extend(0u64.to_be_bytes());
        m.extend(urn.to_be_bytes());
        m.push(b'B');
        m.extend(100u32.to_be_bytes());
        m.extend(b"AAPL    ");
        m.extend(10_000u64.to_be_bytes());
        m.extend(b"0Y");
        m.extend(u64::from(urn).to_be_bytes());
        m.extend(b"PN L");
        m.extend([b' '; 14]);
        m.extend(0u16.to_be_bytes());
        self.soup(false, b'S', &m);
    }

    /// A MoldUDP64 packet of one ITCH Add Order of `symbol` (stock locate 1), sequence `seq`.
    fn tick(&mut self, seq: u64, symbol: &[u8; 8]) {
        let mut itch = vec![b'A', 0, 1, 0, 0, 0, 0, 0, 0, 0, 7];
        itch.extend(seq.to_be_bytes());
        itch.push(b'B');
        itch.extend(100u32.to_be_bytes());
        itch.extend(symbol);
        itch.extend(1_000u32.to_be_bytes());
        let mut mold = b"SESSION001".to_vec();
        mold.extend(seq.to_be_bytes());
        mold.extend(1u16.to_be_bytes());
        mold.extend((itch.len() as u16).to_be_bytes());
        mold.extend(&itch);
        self.frames.push(udp_frame(false, [233, 1, 2, 3], 26477, &mold));
    }
}

/// Ethernet + IPv4 + TCP (no options) between the client 10.1.0.2:40001 and the exchange
/// 10.1.0.1:8003, either way, carrying `payload`.
fn tcp_frame(to_exchange: bool, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let (client, exchange) = (([10, 1, 0, 2], 40001u16), ([10, 1, 0, 1], 8003u16));
    let (src, dst) = if to_exchange { (client, exchange) } else { (exchange, client) };
    let mut f = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00];
    let total = 40 + payload.len();
    f.extend([0x45, 0, (total >> 8) as u8, total as u8, 0, 1, 0x40, 0, 64, 6, 0, 0]);
    f.extend(src.0);
    f.extend(dst.0);
    f.extend(src.1.to_be_bytes());
    f.extend(dst.1.to_be_bytes());
    f.extend(seq.to_be_bytes());
    f.extend(ack.to_be_bytes());
    f.extend([5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// [`tcp_frame`] from (or to) the client port `client_port` instead of 40001.
fn tcp_frame_from(to_exchange: bool, client_port: u16, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = tcp_frame(to_exchange, seq, ack, flags, payload);
    let at = if to_exchange { 34 } else { 36 };
    f[at..at + 2].copy_from_slice(&client_port.to_be_bytes());
    f
}

/// `frames` analysed under `rule` with `limits`, every one stamped at one time (a clock that stands
/// still): the counters.
fn frozen(frames: &Frames, rule: &str, limits: Limits) -> Counters {
    timed(frames, |_| 0, rule, limits)
}

/// [`frozen`], frame `i` stamped `offset(i)` ns after one time.
fn timed(frames: &Frames, offset: impl Fn(usize) -> i64, rule: &str, limits: Limits) -> Counters {
    let mut a = Analyzer::new(AnalyzeConfig { matching: MatchRule::parse(rule).unwrap(), ..AnalyzeConfig::default() });
    a.limits = limits;
    analyse(&mut a, &frames.frames, offset);
    a.counters()
}

/// `frames` through `a` (the fast path first, as the command does), frame `i` stamped `offset(i)` ns
/// after one time; then the end.
fn analyse(a: &mut Analyzer, frames: &[Vec<u8>], offset: impl Fn(usize) -> i64) {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    for (i, data) in frames.iter().enumerate() {
        let t = 1_796_049_000_000_000_000 + offset(i);
        let f = Frame::record(data, t, LinkType::Ethernet);
        if !a.frame_fast(i as u64, &f, |_| {}) {
            a.frame(i as u64, t, &f, &dissect(data, f.link), TsSource::PcapRecord, ClockQuality::default());
        }
    }
    a.finish();
}

/// A pair never names a wrong tick frame, however many frames came between them. Frames 0 to 2: the
/// SYN, the SYN-ACK, an AAPL tick of sequence 1; then 2^32 frames that change nothing here (left out:
/// the indices skip them); then frame 2^32 + 3, 1 us after the tick, an AAPL order whose token names
/// sequence 1. The symbol rule's history keeps the whole index: tick_frame 2. The token rule's tick
/// index keeps its low 32 bits, which past the 2^32nd frame cannot tell 2 from 2^32 + 2: none (it
/// named 2^32 + 2). Before that it names it: the same frames with no gap, tick_frame 2.
#[test]
fn a_pair_names_no_wrong_tick_frame_past_2_pow_32_frames() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    let mut f = Frames::new();
    f.tick(1, b"AAPL    ");
    f.order(1, b"AAPL", b"T1");
    let token = r"token:T(\d+)";
    for (rule, gap, want) in [(token, 1 << 32, None), ("symbol", 1 << 32, Some(2)), (token, 0, Some(2))] {
        let mut a =
            Analyzer::new(AnalyzeConfig { matching: MatchRule::parse(rule).unwrap(), ..AnalyzeConfig::default() });
        for (i, data) in f.frames.iter().enumerate() {
            let index = if i > 2 { i as u64 + gap } else { i as u64 };
            let t = 1_796_049_000_000_000_000 + i as i64 * 1_000;
            let fr = Frame::record(data, t, LinkType::Ethernet);
            if !a.frame_fast(index, &fr, |_| {}) {
                a.frame(index, t, &fr, &dissect(data, fr.link), TsSource::PcapRecord, ClockQuality::default());
            }
        }
        a.finish();
        let pairs: Vec<_> = a.drain_pairs().map(|p| (p.tick_seq, p.tick_frame, p.order_frame)).collect();
        assert_eq!(pairs, [(1, want, 3 + gap)], "{rule}, gap {gap}");
    }
}

/// Under a clock that stands still, orders waiting the reorder allowance are released by count, not
/// only by capture time: beyond the bound of one symbol's, or of all, the one due first is matched
/// with what came so far, counted with the frame where that began.
#[test]
fn orders_waiting_the_allowance_are_bounded() {
    let mut f = Frames::new();
    f.tick(1, b"AAPL    ");
    // Frames 3..=7: AAPL orders; the 4th and 5th each release the oldest AAPL one (3 of a symbol).
    for urn in 1..=5 {
        f.order(urn, b"AAPL", b"X");
    }
    // Frames 8..=10: MSFT orders (no tick of it); the third finds 5 waiting and releases the one due
    // first (all at one time: the oldest, AAPL order 3).
    for urn in 6..=8 {
        f.order(urn, b"MSFT", b"X");
    }
    let c = frozen(&f, "symbol", Limits { waiting: 5, per_symbol: 3, ..LIMITS });
    assert_eq!((c.orders, c.matched, c.unmatched_orders, c.ambiguous), (8, 5, 3, 0));
    assert_eq!((c.orders_released_for_room, c.first_released_for_room_frame), (3, Some(6)));
    // The same under the token rule (no symbol bound): orders whose trigger is found wait too.
    let mut f = Frames::new();
    f.tick(1, b"AAPL    ");
    for urn in 1..=4 {
        f.order(urn, b"AAPL", b"T1");
    }
    let c = frozen(&f, r"token:T(\d+)", Limits { waiting: 2, ..LIMITS });
    assert_eq!((c.orders, c.matched, c.orders_released_for_room, c.first_released_for_room_frame), (4, 4, 2, Some(5)));
}

/// Token rule, under a clock that stands still: orders whose trigger no session has reached are
/// parked until capture time passes; beyond the bound, the one due first is looked for one last time
/// and, its trigger not come, unmatched.
#[test]
fn orders_parked_for_their_trigger_are_bounded() {
    let mut f = Frames::new();
    f.tick(1, b"AAPL    ");
    for (urn, token) in [(1, b"T100"), (2, b"T101"), (3, b"T102"), (4, b"T1  ")] {
        f.order(urn, b"AAPL", token);
    }
    let c = frozen(&f, r"token:T(\d+)", Limits { waiting: 2, ..LIMITS });
    assert_eq!((c.orders, c.matched, c.unmatched_orders), (4, 1, 3));
    assert_eq!((c.orders_released_for_room, c.first_released_for_room_frame), (1, Some(5)));
    // The one released is unmatched for that; the other two at the end, their trigger never seen.
    assert_eq!(c.unmatched_released_for_room, 1);
}

/// With `keep_unmatched`, every order without a pair is queued once with its reason (the order
/// released for room as such, the one whose token holds no sequence, the two whose trigger never
/// came), and [`Analyzer::has_output`] says so until each queue is drained; without it, none is
/// queued and the counters are the same.
#[test]
fn unmatched_orders_are_queued_with_their_reason_when_asked() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    let mut f = Frames::new();
    f.tick(1, b"AAPL    ");
    for (urn, token) in [(1, &b"T100"[..]), (2, b"T101"), (3, b"T102"), (4, b"T1"), (5, b"NOSEQ")] {
        f.order(urn, b"AAPL", token);
    }
    let run = |keep_unmatched: bool| {
        let rule = MatchRule::parse(r"token:T(\d+)").unwrap();
        let mut a = Analyzer::new(AnalyzeConfig { matching: rule, keep_unmatched, ..AnalyzeConfig::default() });
        a.limits = Limits { waiting: 2, ..LIMITS };
        for (i, data) in f.frames.iter().enumerate() {
            let t = 1_796_049_000_000_000_000;
            let fr = Frame::record(data, t, LinkType::Ethernet);
            a.frame(i as u64, t, &fr, &dissect(data, fr.link), TsSource::PcapRecord, ClockQuality::default());
        }
        a.finish();
        a
    };
    let mut a = run(true);
    assert!(a.has_output());
    let mut rows: Vec<(String, UnmatchedReason, Option<u64>)> =
        a.drain_unmatched().map(|u| (u.order_id, u.reason, u.tick_seq)).collect();
    rows.sort();
    use UnmatchedReason::{NoToken, ReleasedForRoom, TriggerNotSeen};
    let want = [
        ("1".to_owned(), ReleasedForRoom, Some(100)),
        ("2".to_owned(), TriggerNotSeen, Some(101)),
        ("3".to_owned(), TriggerNotSeen, Some(102)),
        ("5".to_owned(), NoToken, None),
    ];
    assert_eq!(rows, want);
    // The pair and the closed intervals still wait.
    assert!(a.has_output());
    assert_eq!(a.drain_pairs().map(|p| p.order_id).collect::<Vec<_>>(), ["4"]);
    assert!(a.has_output());
    assert!(a.drain_intervals().count() > 0);
    assert!(!a.has_output());
    let c = a.counters();
    assert_eq!((c.unmatched_orders, c.no_token, c.unmatched_released_for_room), (4, 1, 1));
    let mut b = run(false);
    assert_eq!(b.drain_unmatched().count(), 0);
    assert_eq!(format!("{:?}", b.counters()), format!("{c:?}"));
}

/// Requests awaiting a response are bounded: beyond, the oldest is no longer waited for (neither
/// acknowledged nor not), and a response to it is unmatched.
#[test]
fn requests_awaiting_a_response_are_bounded() {
    let mut f = Frames::new();
    for urn in 1..=4 {
        f.order(urn, b"AAPL", b"X");
    }
    f.accepted(1);
    f.accepted(4);
    let c = frozen(&f, "symbol", Limits { pending: 2, ..LIMITS });
    assert_eq!((c.requests_released_for_room, c.first_released_for_room_frame), (2, Some(4)));
    assert_eq!((c.acked, c.unacked, c.awaiting_at_end, c.unmatched_responses), (1, 0, 1, 1));
}

/// Out-of-order TCP bytes held by all connections together are bounded (here 400, each piece
/// costing 100 bytes and 64 beside them): beyond, the stream holding the oldest gives up the range it
/// waits for, a hole, and what it held is read then. Three connections each send a heartbeat, miss
/// 100 bytes, then send a 100-byte Debug packet: B's first (frame 6), then A's (7), then C's (8),
/// which takes them to 492: B, the oldest, gives up (not A, the first connection). A's second packet
/// (frame 9, right after its first) takes A to 328 and all to 492: A, now the oldest, gives up, both
/// of its packets read. C's range is a hole only at the end. Each hole's frame is the one that showed
/// it missing, its connection's Debug packet after it (A 7, B 6, C 8), not where it was given up.
#[test]
fn tcp_bytes_held_by_all_connections_are_bounded() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    let seg = |client_port: u16, seq: u32, flags: u8, payload: &[u8]| {
        let mut f = tcp_frame(true, seq, 0, flags, payload);
        f[34..36].copy_from_slice(&client_port.to_be_bytes());
        f
    };
    let mut debug = 98u16.to_be_bytes().to_vec();
    debug.push(b'+');
    debug.extend([b'x'; 97]);
    let (a, b, c) = (40001, 40002, 40003);
    let mut frames = Vec::new();
    for port in [a, b, c] {
        frames.push(seg(port, 1_000, 0x02, &[]));
    }
    for port in [a, b, c] {
        frames.push(seg(port, 1_001, 0x18, &[0, 1, b'R']));
    }
    // 1,004..1,104 missing on each.
    for (port, seq) in [(b, 1_104), (a, 1_104), (c, 1_104), (a, 1_204)] {
        frames.push(seg(port, seq, 0x18, &debug));
    }
    let flows = vec!["tcp:10.1.0.1:8003@ouch50".parse().unwrap()];
    let mut an = Analyzer::new(AnalyzeConfig { flows, ..AnalyzeConfig::default() });
    an.limits = Limits { held_tcp: 400, ..LIMITS };
    let holes = |an: &Analyzer| an.conn_list.iter().map(|c| c.to_exchange.reasm().holes).collect::<Vec<_>>();
    let mut seen = Vec::new();
    for (i, data) in frames.iter().enumerate() {
        let t = 1_796_049_000_000_000_000 + i as i64 * 1_000;
        let f = Frame::record(data, t, LinkType::Ethernet);
        an.frame(i as u64, t, &f, &dissect(data, f.link), TsSource::PcapRecord, ClockQuality::default());
        seen.push((an.held_tcp, holes(&an)));
    }
    let (none, one_b, both) = (vec![0, 0, 0], vec![0, 1, 0], vec![1, 1, 0]);
    assert_eq!(
        seen[5..],
        [(0, none.clone()), (164, none.clone()), (328, none), (328, one_b), (164, both)],
        "held, and holes of A, B, C, after frames 5 to 9"
    );
    an.finish();
    let co = an.counters();
    assert_eq!(
        (co.tcp_gaps_released_for_room, co.tcp_gap_bytes_released_for_room, co.first_tcp_released_for_room_frame),
        (2, 200, Some(8))
    );
    let packets: Vec<_> = an.conn_list.iter().map(|c| c.to_exchange.counters().soup_packets).collect();
    assert_eq!((holes(&an), packets), (vec![1, 1, 1], vec![3, 2, 2]), "C's range a hole at the end, all read");
    let bad: Vec<_> = an.conn_list.iter().map(|c| c.to_exchange.counters().first_bad_frame).collect();
    assert_eq!(bad, [Some(7), Some(6), Some(8)]);
}

/// The framing buffers of all connections together are bounded (here 80,000; a direction taking
/// `FRAMING_SLACK`, 17,408, or less is not counted). Each of B, A (clients) and C (the exchange,
/// toward its client) begins a Debug packet of 40,002 bytes with 30,000 of them: 30,000 bytes of room
/// and 4 pieces of 32, 30,128. C's (frame 6) takes all to 90,384: B, the oldest, gives up its 30,000
/// bytes, not A (the first connection) nor C (the newest). A's next 8,000 bytes (frame 7) take its
/// room to 60,000 (doubled), 60,128, and all to 90,256: A, now the oldest, gives up its 38,000 bytes.
/// A's stream then resynchronises on the packet's last 2,002 bytes and 4 heartbeats (frame 8): the
/// heartbeats are framed. C's packet is cut by the end. A stream's anomaly is the frame its packet
/// given up began in (A 5, B 4), not the frame that took all over.
#[test]
fn framing_held_by_all_connections_is_bounded() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    let seg = tcp_frame_from;
    let mut debug = 40_000u16.to_be_bytes().to_vec();
    debug.push(b'+');
    debug.resize(40_002, b'x');
    let (a, b, c) = (40001, 40002, 40003);
    let mut rest = debug[38_000..].to_vec();
    for _ in 0..4 {
        rest.extend([0, 1, b'R']);
    }
    let frames = [
        seg(true, a, 1_000, 0, 0x02, &[]),
        seg(true, b, 1_000, 0, 0x02, &[]),
        seg(true, c, 1_000, 0, 0x02, &[]),
        seg(false, c, 5_000, 1_001, 0x12, &[]),
        seg(true, b, 1_001, 0, 0x18, &debug[..30_000]),
        seg(true, a, 1_001, 0, 0x18, &debug[..30_000]),
        seg(false, c, 5_001, 1_001, 0x18, &debug[..30_000]),
        seg(true, a, 31_001, 0, 0x18, &debug[30_000..38_000]),
        seg(true, a, 39_001, 0, 0x18, &rest),
    ];
    let flows = vec!["tcp:10.1.0.1:8003@ouch50".parse().unwrap()];
    let mut an = Analyzer::new(AnalyzeConfig { flows, ..AnalyzeConfig::default() });
    an.limits = Limits { held_framing: 80_000, ..LIMITS };
    let mut seen = Vec::new();
    for (i, data) in frames.iter().enumerate() {
        let t = 1_796_049_000_000_000_000 + i as i64 * 1_000;
        let f = Frame::record(data, t, LinkType::Ethernet);
        an.frame(i as u64, t, &f, &dissect(data, f.link), TsSource::PcapRecord, ClockQuality::default());
        let given_up = an.conn_list.iter().map(|c| c.to_exchange.counters().resync_skipped_bytes).collect::<Vec<_>>();
        seen.push((an.held_framing, an.framing_by_age.len(), given_up));
    }
    assert_eq!(
        seen[4..],
        [
            (30_128, 1, vec![0, 0, 0]),
            (60_256, 2, vec![0, 0, 0]),
            (60_256, 2, vec![0, 30_000, 0]),
            (30_128, 1, vec![38_000, 30_000, 0]),
            (30_128, 1, vec![40_002, 30_000, 0]),
        ],
        "held, directions counted, and the bytes skipped toward the exchange by A, B, C, after frames 4 to 8"
    );
    assert_eq!(an.framing_by_age.first().map(|&(_, ci, dir)| (ci, dir)), Some((2, 1)), "C's, from the exchange");
    an.finish();
    let co = an.counters();
    assert_eq!(
        (co.framing_released_for_room, co.framing_bytes_released_for_room, co.first_framing_released_for_room_frame),
        (2, 68_000, Some(6))
    );
    let to: Vec<_> = an.conn_list.iter().map(|c| *c.to_exchange.counters()).collect();
    assert_eq!(
        to.iter().map(|c| (c.soup_packets, c.first_bad_frame)).collect::<Vec<_>>(),
        [(4, Some(5)), (0, Some(4)), (0, None)]
    );
    let from = an.conn_list[2].from_exchange.counters();
    assert_eq!((from.resync_skipped_bytes, from.truncated_tail_bytes), (0, 30_000), "C's packet cut by the end");
}

/// A client reconnecting again and again keeps the framing room of one live stream at most. Each of
/// 20 connections (a new client port each, 10 ms apart) sends 20,000 heartbeats in two GRO-merged
/// segments, 29,999 and 30,001 bytes, the first ending inside a heartbeat: its framer grows a room
/// for the bytes held joined with the second, cut to `RETAINED` (16,384) once framed, and the pieces'
/// buffer takes 4 of 32: 16,512 bytes, within `FRAMING_SLACK`, counted nowhere. 18 close with a FIN;
/// the 19th is aborted (RST) and the 20th reconnects from its port (a SYN of another sequence): 19
/// connections analysed. Those ended keep nothing; the live one its 16,512 (before, each kept them:
/// 19 x 16,512 = 313,728). Its first look is due a gap timeout (T) after its first segment, at t + T +
/// 1: an ACK of the exchange 1.5 s after it finds bytes came since, so it is looked at again T + 1
/// after that one; the next, 3 s after, finds it quiet: nothing is kept.
#[test]
fn a_reconnecting_clients_streams_keep_one_live_streams_room_at_most() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    let seg = tcp_frame_from;
    let beats = [0u8, 1, b'R'].repeat(20_000);
    let (a, b) = beats.split_at(29_999);
    let t0 = 1_796_049_000_000_000_000;
    let mut frames = Vec::new();
    let mut connect = |k: i64, port: u16, isn: u32, end: u8| {
        let t = t0 + k * 10_000_000;
        frames.push((t, seg(true, port, isn, 0, 0x02, &[])));
        frames.push((t + 1_000, seg(true, port, isn + 1, 0, 0x18, a)));
        frames.push((t + 2_000, seg(true, port, isn + 30_000, 0, 0x18, b)));
        if end != 0 {
            frames.push((t + 3_000, seg(true, port, isn + 60_001, 0, end, &[])));
        }
    };
    for k in 0..18 {
        connect(k, 41_000 + k as u16, 1_000, 0x01);
    }
    connect(18, 42_000, 1_000, 0x04);
    connect(19, 42_000, 7_000, 0);
    let live_since = t0 + 19 * 10_000_000 + 1_000;
    for after in [1_500_000_000, 3_000_000_000] {
        frames.push((live_since + after, seg(false, 42_000, 5_000, 67_001, 0x10, &[])));
    }
    let flows = vec!["tcp:10.1.0.1:8003@ouch50".parse().unwrap()];
    let mut an = Analyzer::new(AnalyzeConfig { flows, ..AnalyzeConfig::default() });
    let kept = |an: &Analyzer| -> usize {
        an.conn_list.iter().map(|c| c.to_exchange.framing_cost() + c.from_exchange.framing_cost()).sum()
    };
    let mut seen = Vec::new();
    for (i, (t, data)) in frames.iter().enumerate() {
        let f = Frame::record(data, *t, LinkType::Ethernet);
        an.frame(i as u64, *t, &f, &dissect(data, f.link), TsSource::PcapRecord, ClockQuality::default());
        seen.push(kept(&an));
    }
    let n = frames.len();
    assert_eq!(seen[n - 3..], [16_512, 16_512, 0], "kept after all connections, then after each ACK");
    assert_eq!((an.conn_list.len(), an.held_framing, an.framing_by_age.len()), (19, 0, 0));
    let packets: Vec<_> = an.conn_list.iter().map(|c| c.to_exchange.counters().soup_packets).collect();
    assert_eq!(packets, [20_000; 18].into_iter().chain([40_000]).collect::<Vec<_>>());
}

/// A busy session's framing is not counted against the framing budget: a client sends back-to-back
/// 50-byte Enter Orders in MSS-sized segments (1,448 bytes = 28 × 50 + 48, so 24 of every 25 end
/// inside a packet, each joined with the next whole segment). Over 11 cycles of 25 segments the
/// framing by age stays empty and what it holds 0: the room the framer keeps, 1,496 bytes (the first
/// tail, 48 bytes, and a segment), and 4 pieces of 32 take 1,624, within `FRAMING_SLACK`. (At a slack
/// of 1,024 the direction was counted from each cycle's second segment to its 25th, which ends on a
/// boundary and freed the room: 11 times counted, 11 times not, and its entry moved at the 22 segments
/// in between.)
#[test]
fn a_busy_sessions_framing_is_not_counted() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    const MSS: usize = 1_448;
    let mut stream = Vec::new();
    for urn in 1u32.. {
        if stream.len() >= 11 * 25 * MSS {
            break;
        }
        stream.extend(48u16.to_be_bytes());
        stream.extend(b"UO");
        stream.extend(urn.to_be_bytes());
        stream.push(b'B');
        stream.extend(100u32.to_be_bytes());
        stream.extend(b"AAPL    ");
        stream.extend(10_000u64.to_be_bytes());
        stream.extend(b"0YP N");
        stream.extend(format!("T{urn:<13}").as_bytes());
        stream.extend(0u16.to_be_bytes());
    }
    let mut frames = vec![tcp_frame(true, 1_000, 0, 0x02, &[]), tcp_frame(false, 5_000, 1_001, 0x12, &[])];
    for (k, seg) in stream[..11 * 25 * MSS].chunks(MSS).enumerate() {
        frames.push(tcp_frame(true, 1_001 + (k * MSS) as u32, 5_001, 0x18, seg));
    }
    let flows = vec!["tcp:10.1.0.1:8003@ouch50".parse().unwrap()];
    let mut an = Analyzer::new(AnalyzeConfig { flows, ..AnalyzeConfig::default() });
    let (mut counted, mut uncounted, mut moved, mut most) = (0, 0, 0, 0);
    let mut was = None;
    for (i, data) in frames.iter().enumerate() {
        let t = 1_796_049_000_000_000_000 + i as i64 * 1_000;
        let f = Frame::record(data, t, LinkType::Ethernet);
        an.frame(i as u64, t, &f, &dissect(data, f.link), TsSource::PcapRecord, ClockQuality::default());
        let now = an.framing_by_age.first().copied();
        match (was, now) {
            (None, Some(_)) => counted += 1,
            (Some(_), None) => uncounted += 1,
            (Some(a), Some(b)) if a != b => moved += 1,
            _ => {}
        }
        was = now;
        most = most.max(an.held_framing);
    }
    assert_eq!((counted, uncounted, moved, most), (0, 0, 0, 0));
    an.finish();
    let c = an.conn_list[0].to_exchange.counters();
    assert_eq!((c.ouch_messages, c.framing_errors, c.resync_skipped_bytes), (11 * 724, 0, 0));
}

/// Where [`aapl_ticks_2ns_apart`] begins: 10 ms, so that a time before it is still positive.
const HISTORY_T0: i64 = 10_000_000;

/// `n` AAPL ticks (stock locate 7, sequences from 0) 2 ns apart from [`HISTORY_T0`], the gaps left for
/// ticks recorded late.
fn aapl_ticks_2ns_apart(n: i64) -> SymbolTicks {
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let mut ticks = SymbolTicks::new();
    for i in 0..n {
        ticks.push(7, aapl, HISTORY_T0 + 2 * i, (s, i as u64), 0, 0);
    }
    ticks
}

/// A retime that forgets the one tick a symbol still kept, while ticks pruned before it are still in
/// its history's `Vec` (fewer than compaction waits for): the next tick of the symbol is kept, and
/// found (it was joined to a forgotten tick at its time, and lost). Found by review.
#[test]
fn a_tick_after_a_retime_forgot_the_last_kept_is_kept() {
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    // One more than the bound: the first is forgotten for room (`forgot_to` is T0).
    let n = MAX_SYMBOL_TICKS as i64 + 1;
    let mut ticks = aapl_ticks_2ns_apart(n);
    let ta = HISTORY_T0 + 2 * n + 100;
    // Pruned to the newest at or before ta - 1, then 10 newer ticks, pruned to the last of them (9
    // left behind in the `Vec`, too few to compact).
    ticks.prune(ta - 1);
    for j in 0..10 {
        ticks.push(7, aapl, ta + 2 * j, (s, 100_000 + j as u64), 0, 0);
    }
    ticks.prune(ta + 100);
    // Its one kept tick given a time before the forgotten one: forgotten too, none kept.
    ticks.retime(7, ta + 18, (s, 100_009), HISTORY_T0 - 5, 1, 0);
    assert_eq!(ticks.at_or_before(aapl, i64::MAX), None);
    // A new tick at the time of one left behind.
    ticks.push(7, aapl, ta + 16, (s, 200_000), 0, 0);
    assert_eq!(ticks.at_or_before(aapl, ta + 16).map(|k| k.2), Some(200_000));
}

/// Requests of one order id recorded in falling time order (each 1 ns before the one before it, no
/// step back): the timeout queue holds each of them, not only the id's first, so the bound of 2 holds
/// whatever the order: of 4 never answered (an Enter and three Cancels of its order: an Enter again
/// would be a retransmission, no request), 2 are released (at the third's frame, 4: the SYN and
/// SYN-ACK come first) and 2 await a response at the end. (Only 1 was released, the queue having
/// dropped the entries of requests behind their id's first.)
#[test]
fn requests_of_one_id_out_of_time_order_are_bounded_too() {
    let mut f = Frames::new();
    f.order(7, b"AAPL", b"X");
    for _ in 0..3 {
        f.cancel(7);
    }
    let c = timed(&f, |i| 10 - i as i64, "symbol", Limits { pending: 2, ..LIMITS });
    assert_eq!((c.orders, c.requests_released_for_room, c.first_released_for_room_frame), (4, 2, Some(4)));
    assert_eq!((c.acked, c.unacked, c.awaiting_at_end, c.unmatched_responses), (0, 0, 2, 0));
}

/// Responses waiting for their request are bounded: beyond, the oldest is unmatched now.
#[test]
fn responses_waiting_for_their_request_are_bounded() {
    let mut f = Frames::new();
    for urn in 11..=14 {
        f.accepted(urn);
    }
    f.order(11, b"AAPL", b"X");
    f.order(14, b"AAPL", b"X");
    let c = frozen(&f, "symbol", Limits { early: 2, ..LIMITS });
    assert_eq!((c.responses_released_for_room, c.first_released_for_room_frame), (2, Some(4)));
    assert_eq!((c.acked, c.awaiting_at_end, c.unmatched_responses), (1, 1, 3));
}

/// A symbol's history keeps at most `MAX_SYMBOL_TICKS` ticks: beyond, the oldest are forgotten,
/// counted, and an order stamped before the oldest kept finds none (not an older tick that a
/// forgotten one would have bettered); a tick recorded late at or before a forgotten one is forgotten
/// too, and one recorded late among those kept takes the place of the oldest.
#[test]
fn symbol_ticks_kept_are_bounded() {
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    // The allowance (1 ms) keeps them all, the bound does not.
    let (t0, n) = (HISTORY_T0, MAX_SYMBOL_TICKS as i64 + 5);
    let mut ticks = aapl_ticks_2ns_apart(n);
    let h = &ticks.histories[0];
    assert_eq!((h.live().len(), h.forgotten, h.forgot_to), (MAX_SYMBOL_TICKS, 5, t0 + 8));
    let seq_at = |ticks: &SymbolTicks, t| ticks.at_or_before(aapl, t).map(|k| k.2);
    assert_eq!(seq_at(&ticks, t0 + 9), None, "its match, tick 4, is forgotten");
    assert_eq!(seq_at(&ticks, t0 + 10), Some(5));
    // Late, before a forgotten one: forgotten too. Late, among those kept: the oldest makes room.
    ticks.push(7, aapl, t0 + 3, (s, 1_000_000), 0, 0);
    ticks.push(7, aapl, t0 + 13, (s, 1_000_001), 0, 0);
    let h = &ticks.histories[0];
    assert_eq!((h.live().len(), h.forgotten, h.forgot_to), (MAX_SYMBOL_TICKS, 7, t0 + 10));
    assert_eq!(seq_at(&ticks, t0 + 11), None, "tick 5 is forgotten");
    assert_eq!(seq_at(&ticks, t0 + 12), Some(6));
    assert_eq!(seq_at(&ticks, t0 + 13), Some(1_000_001));
    assert!(h.live().windows(2).all(|w| w[0].0 < w[1].0), "in time order");
    // A tick given an earlier copy's time at or before a forgotten one is forgotten.
    let newest = t0 + 2 * (n - 1);
    ticks.retime(7, newest, (s, n as u64 - 1), t0 + 1, 1, 0);
    let h = &ticks.histories[0];
    assert_eq!((h.live().len(), h.forgotten), (MAX_SYMBOL_TICKS - 1, 8));
    assert_eq!(seq_at(&ticks, newest), Some(n as u64 - 2));
    assert_eq!(ticks.forgotten(), 8);
}

/// The reorder queue against a B-tree of the same keys: orders come mostly in time order, some
/// before the last (recorded out of order), and leave first-due-first or out of turn (released for
/// room); the first and last keys, the count and the order given back agree throughout.
#[test]
fn the_reorder_queue_gives_orders_back_by_key() {
    use crate::proto::OrderDir;
    let parked = |id: i64| Parked {
        give_up: id,
        conn: 0,
        msg: OrderMsg {
            summary: crate::proto::OrderSummary::new(OrderDir::Inbound, b'O'),
            first: FrameRef::default(),
            last: FrameRef::default(),
            end: 0,
        },
        snd: None,
        best: None,
        prev: i64::MIN,
        late_only: false,
        found: None,
    };
    let mut rand = lcg(7);
    let (mut q, mut model) = (ReorderQueue::default(), BTreeMap::new());
    let mut due = 0;
    for n in 0..20_000u64 {
        match rand(10) {
            0..=5 => {
                due += rand(3) as i64;
                // One in eight comes before the latest.
                let key = (if rand(8) == 0 { due - rand(50) as i64 } else { due }, n);
                q.insert(key, parked(n as i64));
                model.insert(key, n as i64);
            }
            6 | 7 if !model.is_empty() => {
                let key = *model.keys().nth(rand(model.len() as u64) as usize).unwrap();
                assert_eq!(q.remove(&key).map(|p| p.give_up), model.remove(&key), "{key:?}");
            }
            _ => assert_eq!(q.pop_first().map(|(k, p)| (k, p.give_up)), model.pop_first()),
        }
        assert_eq!(
            (q.len(), q.first_key(), q.last_key()),
            (model.len(), model.first_key_value().map(|(k, _)| *k), model.last_key_value().map(|(k, _)| *k))
        );
        assert!(q.stale <= q.live.max(1), "the keys left behind stay as many as the orders at most");
    }
    assert_eq!(q.remove(&(-1, 0)).map(|p| p.give_up), None, "a key not there");
}

/// Symbol `i`'s name: `S` and `i` in decimal, padded.
fn sym(i: usize) -> Symbol {
    let mut b = *b"        ";
    let name = format!("S{i}");
    b[..name.len()].copy_from_slice(name.as_bytes());
    Symbol(b)
}

/// The ticks of all symbols together are bounded: counted when more than an eighth of the bound have
/// been pushed since the last count, and beyond the bound the oldest of all go, down to half of it.
/// With a bound of 1,000 the 1,008th push finds 1,007 kept (counts at the 126th, 252nd, ... pushes):
/// the 507 oldest go. Ten symbols in turn, 1 ns apart (the allowance keeps them all, and no symbol
/// reaches its own bound).
#[test]
fn ticks_of_all_symbols_together_are_bounded() {
    let s = 0u32;
    let mut ticks = SymbolTicks::keeping(1_000);
    for i in 0..1_008usize {
        ticks.push(i as u16 % 10, sym(i % 10), HISTORY_T0 + i as i64, (s, i as u64), 0, 0);
    }
    let kept: usize = ticks.histories.iter().map(|h| h.live().len()).sum();
    assert_eq!((kept, ticks.forgotten()), (1_008 - 507, 507));
    // Ticks 0..=506 are forgotten: symbol 6's newest forgotten is 506, its oldest kept 516; symbol 7's
    // oldest kept is 507.
    let seq_at = |sym_i: usize, t: i64| ticks.at_or_before(sym(sym_i), HISTORY_T0 + t).map(|k| k.2);
    assert_eq!(seq_at(6, 515), None, "its match, tick 506, is forgotten");
    assert_eq!(seq_at(6, 516), Some(516));
    assert_eq!(seq_at(7, 507), Some(507));
    assert_eq!(seq_at(7, 506), None);
    assert_eq!(ticks.forgot_to(sym(6)), HISTORY_T0 + 506);
    // Before 1,134 pushes no further count: 501 + 125 kept.
    for i in 1_008..1_133usize {
        ticks.push(i as u16 % 10, sym(i % 10), HISTORY_T0 + i as i64, (s, i as u64), 0, 0);
    }
    assert_eq!(ticks.forgotten(), 507);
}

/// Forgetting the oldest of all leaves every symbol its newest tick: an order on a quiet symbol still
/// matches it. Bound 80 (a count every 11th push): 60 symbols with one tick each, then one busy
/// symbol; at the 88th push 87 are kept, 47 should go, but only the busy symbol's 26 older ticks can.
#[test]
fn forgetting_the_oldest_of_all_leaves_each_symbol_its_newest() {
    let s = 0u32;
    let mut ticks = SymbolTicks::keeping(80);
    for i in 0..60usize {
        ticks.push(i as u16, sym(i), HISTORY_T0 + i as i64, (s, i as u64), 0, 0);
    }
    for i in 60..88usize {
        ticks.push(60, sym(60), HISTORY_T0 + 100 + i as i64, (s, i as u64), 0, 0);
    }
    assert_eq!(ticks.forgotten(), 26);
    for i in 0..60 {
        assert_eq!(ticks.at_or_before(sym(i), i64::MAX).map(|k| k.2), Some(i as u64), "symbol {i}");
    }
    let busy = &ticks.histories[60];
    assert_eq!(busy.live().iter().map(|k| k.2).collect::<Vec<_>>(), [86, 87]);
    assert_eq!(ticks.at_or_before(sym(60), HISTORY_T0 + 185), None);
}

/// A burst's room is given back once time has let its ticks go, at the next count: what all symbols
/// hold stays bounded whatever the order of their bursts (each burst left its `Vec`'s room behind).
#[test]
fn the_room_a_burst_left_is_given_back() {
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let mut ticks = SymbolTicks::keeping(8_000);
    for i in 0..900i64 {
        ticks.push(7, aapl, HISTORY_T0 + i, (s, i as u64), 0, 0);
    }
    let burst = ticks.histories[0].ticks.capacity();
    assert!(burst >= 900, "{burst}");
    // 2 ms on, time forgets the burst but its newest (the newest at or before the reach, 1 ms back);
    // another symbol's ticks bring the next count.
    ticks.push(7, aapl, HISTORY_T0 + 2_000_000, (s, 900), 0, 0);
    for i in 0..200u64 {
        ticks.push(1, sym(1), HISTORY_T0 + 2_000_000 + i as i64, (s, 1_000 + i), 0, 0);
    }
    let h = &ticks.histories[0];
    assert_eq!(h.live().iter().map(|k| k.2).collect::<Vec<_>>(), [899, 900]);
    assert!(h.ticks.capacity() <= 64, "{} of {burst} kept", h.ticks.capacity());
}

/// `SymbolTicks::before` (the tick an order's match had before it, for
/// `symbol_matches_with_earlier_ticks`) against every tick pushed: ticks in time order at random gaps
/// (some at one time: one tick), the history pruned to random reaches as an order's allowance or hold
/// would (ticks let go, their `Vec` compacted again and again), each kept tick's predecessor is the
/// newest tick pushed before it, whether that one is still kept or let go (a compaction keeps it);
/// and at a time between ticks, the newest before it.
#[test]
fn the_tick_before_a_kept_one_is_known_however_the_history_let_it_go() {
    let (aapl, s) = (Symbol(*b"AAPL    "), 0u32);
    let mut rand = lcg(11);
    let mut ticks = SymbolTicks::new();
    let mut pushed: Vec<i64> = Vec::new();
    let mut t = HISTORY_T0;
    let mut compacted = 0;
    for i in 0..20_000u64 {
        t += rand(4) as i64 * 1_000;
        ticks.push(7, aapl, t, (s, i), 0, 0);
        if pushed.last() != Some(&t) {
            pushed.push(t);
        }
        if rand(3) == 0 {
            ticks.prune(t - rand(8) as i64 * 1_000);
        }
        let h = &ticks.histories[0];
        let live: Vec<i64> = h.live().iter().map(|k| k.0).collect();
        let model = |x: i64| pushed.partition_point(|&p| p < x).checked_sub(1).map_or(i64::MIN, |j| pushed[j]);
        // The first kept (whose predecessor was let go), and a few after it.
        for &k in live.iter().take(4).chain(live.last()) {
            assert_eq!(ticks.before(aapl, k), model(k), "push {i}: before {k}, kept {live:?}");
        }
        assert_eq!(ticks.before(aapl, t + 1), t, "push {i}");
        let (b, prev) = ticks.at_or_before_with_prev(aapl, t + 500).unwrap();
        assert_eq!((b.0, prev), (t, model(t)));
        // Just compacted: the one tick let go that is left is the one before the oldest kept.
        if h.start == 1 && live.first() != pushed.get(1) {
            compacted += 1;
        }
    }
    assert!(compacted > 100, "{compacted}");
}

/// The analysis of `frames` with `flows` given, every frame at one time: its report.
fn with_flows(flows: &[&str], frames: &[Vec<u8>]) -> report::Report {
    let flows = flows.iter().map(|s| s.parse().unwrap()).collect();
    let mut a = Analyzer::new(AnalyzeConfig { flows, ..AnalyzeConfig::default() });
    analyse(&mut a, frames, |_| 0);
    a.report()
}

/// A report built while an interval is open has each feed's samples in its dimension, as after the
/// end: feed 1 (233.1.1.1:30001) brings 3 ITCH messages captured 1, 2 and 3 us after their
/// timestamps, feed 2 (233.2.2.2:30002, its own session) 2 captured 5 and 7 us after. All frames at
/// 09:30:00 EST (2026-11-30T14:30:00Z), each message stamped that time minus its delay.
#[test]
fn a_report_of_an_open_interval_has_every_feeds_samples_in_its_dimension() {
    use crate::dissect::dissect;
    use crate::{ClockQuality, Frame, LinkType, TsSource};
    const NINE_THIRTY: i64 = (9 * 3_600 + 30 * 60) * 1_000_000_000;
    let packet = |session: &[u8; 10], seq: u64, delay: i64| {
        let mut itch = vec![b'A', 0, 7, 0, 0];
        itch.extend(&((NINE_THIRTY - delay) as u64).to_be_bytes()[2..]);
        itch.resize(36, b' ');
        let mut mold = session.to_vec();
        mold.extend(seq.to_be_bytes());
        mold.extend(1u16.to_be_bytes());
        mold.extend((itch.len() as u16).to_be_bytes());
        mold.extend(&itch);
        mold
    };
    let frames = [
        udp_frame(false, [233, 1, 1, 1], 30_001, &packet(b"SESSION001", 1, 1_000)),
        udp_frame(false, [233, 2, 2, 2], 30_002, &packet(b"SESSION002", 1, 5_000)),
        udp_frame(false, [233, 1, 1, 1], 30_001, &packet(b"SESSION001", 2, 2_000)),
        udp_frame(false, [233, 2, 2, 2], 30_002, &packet(b"SESSION002", 2, 7_000)),
        udp_frame(false, [233, 1, 1, 1], 30_001, &packet(b"SESSION001", 3, 3_000)),
    ];
    let flows = ["udp:233.1.1.1:30001", "udp:233.2.2.2:30002"].iter().map(|s| s.parse().unwrap()).collect();
    let mut a = Analyzer::new(AnalyzeConfig { flows, ..AnalyzeConfig::default() });
    let t = 1_796_049_000_000_000_000;
    for (i, data) in frames.iter().enumerate() {
        let f = Frame::record(data, t, LinkType::Ethernet);
        if !a.frame_fast(i as u64, &f, |_| {}) {
            a.frame(i as u64, t, &f, &dissect(data, f.link), TsSource::PcapRecord, ClockQuality::default());
        }
    }
    let dims = |r: &report::Report| {
        let m = r.metrics.iter().find(|m| m.name == "exchange_to_capture").expect("metric");
        let dims: Vec<_> = m.dims.iter().map(|d| (d.name.clone(), d.count, d.min_ns, d.max_ns)).collect();
        (m.count, dims)
    };
    let expected = (
        5,
        vec![
            ("feed:udp:233.1.1.1:30001".to_owned(), 3, Some(1_000), Some(3_000)),
            ("feed:udp:233.2.2.2:30002".to_owned(), 2, Some(5_000), Some(7_000)),
        ],
    );
    assert_eq!(dims(&a.report()), expected, "open interval");
    a.finish();
    assert_eq!(dims(&a.report()), expected, "after the end");
}

/// A datagram goes to the first feed given that it belongs to, whether that is among the first 64
/// (tested one by one) or beyond (looked up by destination), of its group or of any. 110 feeds: 0 to
/// 99 `233.9.0.i:20000+i`, except 10, `*:30003`; then 100 `*:30001`, 101 `233.5.5.5:30001`, 102
/// `233.6.6.6:30002`, 103 `*:30002`, 104 `233.8.8.8:30003`. Sent, and where each must go by that
/// rule: 1 to 233.9.0.70:20070 (feed 70), 2 to 233.5.5.5:30001 (100: the any-group feed came first),
/// 3 to 233.6.6.6:30002 (102), 4 to 233.7.7.7:30002 (103), 5 to 233.9.0.5:20005 (5), 6 to
/// 233.8.8.8:30003 (10, among the first 64), and 7 to 233.9.0.70:20071, no feed's.
#[test]
fn a_datagram_goes_to_the_first_feed_it_belongs_to_among_many() {
    let mut flows: Vec<String> = (0..100).map(|i| format!("udp:233.9.0.{i}:{}", 20_000 + i)).collect();
    flows[10] = "udp:*:30003".into();
    flows.extend(
        ["udp:*:30001", "udp:233.5.5.5:30001", "udp:233.6.6.6:30002", "udp:*:30002", "udp:233.8.8.8:30003"]
            .map(String::from),
    );
    let heartbeat = |seq: u64| {
        let mut mold = b"SESSION001".to_vec();
        mold.extend(seq.to_be_bytes());
        mold.extend(0u16.to_be_bytes());
        mold
    };
    let sent: [([u8; 4], u16, usize); 7] = [
        ([233, 9, 0, 70], 20_070, 1),
        ([233, 5, 5, 5], 30_001, 2),
        ([233, 6, 6, 6], 30_002, 3),
        ([233, 7, 7, 7], 30_002, 4),
        ([233, 9, 0, 5], 20_005, 5),
        ([233, 8, 8, 8], 30_003, 6),
        ([233, 9, 0, 70], 20_071, 7),
    ];
    let frames: Vec<Vec<u8>> = sent
        .iter()
        .flat_map(|&(dst, port, n)| (0..n).map(move |s| udp_frame(false, dst, port, &heartbeat(s as u64 + 1))))
        .collect();
    let r = with_flows(&flows.iter().map(String::as_str).collect::<Vec<_>>(), &frames);
    let got: Vec<(usize, u64)> =
        r.feeds.iter().enumerate().filter(|(_, f)| f.frames > 0).map(|(i, f)| (i, f.frames)).collect();
    assert_eq!(got, [(5, 5), (10, 6), (70, 1), (100, 2), (102, 3), (103, 4)]);
    assert_eq!(r.feeds.len(), 105);
}

/// A segment goes to the first order session given that either of its ends is the exchange end of,
/// among the first 64 or beyond: 100 sessions `10.9.0.i:9000+i`, but for 80, the exchange of
/// [`Frames`] (10.1.0.1:8003), and with 79 `*:8003` too, which comes first. The connection's frames
/// (its SYN, SYN-ACK, an order and its Accepted: 4) are the session's either way.
#[test]
fn a_segment_goes_to_the_first_session_it_belongs_to_among_many() {
    let mut f = Frames::new();
    f.order(1, b"AAPL", b"T1");
    f.accepted(1);
    for (wildcard, session) in [(false, "tcp:10.1.0.1:8003@ouch50"), (true, "tcp:*:8003@ouch50")] {
        let mut flows: Vec<String> = (0..100).map(|i| format!("tcp:10.9.0.{i}:{}@ouch50", 9_000 + i)).collect();
        flows[80] = "tcp:10.1.0.1:8003@ouch50".into();
        if wildcard {
            flows[79] = "tcp:*:8003@ouch50".into();
        }
        let r = with_flows(&flows.iter().map(String::as_str).collect::<Vec<_>>(), &f.frames);
        let conns: Vec<(&str, &str, u64)> =
            r.connections.iter().map(|c| (c.connection.as_str(), c.session.as_str(), c.frames)).collect();
        assert_eq!(conns, [("10.1.0.2:40001>10.1.0.1:8003", session, 4)], "wildcard: {wildcard}");
    }
}
