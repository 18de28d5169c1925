use super::*;

#[test]
fn match_rules_parse() {
    assert!(matches!(MatchRule::parse(r"token:T(\d+)"), Ok(MatchRule::Token(_))));
    assert!(matches!(MatchRule::parse("symbol"), Ok(MatchRule::Symbol { window_ns: 1_000_000_000 })));
    assert!(matches!(MatchRule::parse("symbol:250us"), Ok(MatchRule::Symbol { window_ns: 250_000 })));
    let e = MatchRule::parse(r"token:T\d+").unwrap_err();
    assert!(e.contains("capture group"), "{e}");
    assert!(MatchRule::parse("token:(").unwrap_err().contains("bad regular expression"));
    assert!(MatchRule::parse("symbol:soon").unwrap_err().contains("not a duration"));
    assert!(MatchRule::parse("seq").unwrap_err().contains("expected token:REGEX or symbol[:WINDOW]"));
}

#[test]
fn durations() {
    assert_eq!(parse_duration_ns("15"), Some(15));
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
    assert_eq!(detect_ouch_version(&soup(&v5)), OrderProto::Ouch50);
    let mut v42 = vec![b'O'];
    v42.resize(49, b'1');
    assert_eq!(detect_ouch_version(&soup(&v42)), OrderProto::Ouch42);
    assert_eq!(detect_ouch_version(&[0, 1, b'R']), OrderProto::Ouch50, "heartbeat: assume the current version");
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
    let s = Session(*b"SESSION001");
    let mut ticks = SymbolTicks::default();
    // AAPL under locate 7; MSFT under locate 2; then locate 7 reused for MSFT (a new directory):
    // MSFT's history continues; AAPL's keeps its ticks. A symbol of zero bytes under a locate
    // never set (it holds a placeholder of zero bytes) is a symbol like any other.
    ticks.push(7, aapl, 100, s, 1);
    ticks.push(2, msft, 200, s, 2);
    ticks.push(7, msft, 300, s, 3);
    ticks.push(7, aapl, 300, s, 4);
    ticks.push(5, zero, 400, s, 5);
    let newest = |sym, t| ticks.get(sym).and_then(|h| h.at_or_before(t)).map(|k| (k.0, k.2, k.3));
    assert_eq!(newest(aapl, 1_000), Some((300, 4, 1)));
    assert_eq!(newest(aapl, 299), Some((100, 1, 1)));
    assert_eq!(newest(msft, 1_000), Some((300, 3, 1)));
    assert_eq!(newest(msft, 250), Some((200, 2, 1)));
    assert_eq!(newest(zero, 1_000), Some((400, 5, 1)));
    assert_eq!(newest(Symbol(*b"IBM     "), 1_000), None);
}
