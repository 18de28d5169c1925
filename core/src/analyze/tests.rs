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
