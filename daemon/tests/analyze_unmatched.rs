//! `analyze --unmatched FILE.csv`: every order without a pair in `--pairs`, once, with why. The rows of
//! each reason are as many as the report's counter of it (checked in every test), and each row is
//! the one the capture calls for: from how hand-built frames were made, or from synth's truth (which
//! orders' triggers were dropped from the capture, as tshark's MoldUDP64 dissector places them; which
//! tokens the regex cannot read; which orders are slower than the retention).

use serde_json::Value;
use std::path::Path;
use wirestamp_core::analyze::UnmatchedReason;
use wirestamp_lab::encode::ouch;

mod support;
use support::{
    MS, T0, aapl_order, analyze_json, order_of, segment, soup_packet, symbol_tick, tcp, tmpdir, udp, with_orders,
    write_pcap,
};

const US: i64 = 1_000;
const FEED_A: &str = "udp:233.54.12.111:26477";
const ORDERS: &str = "tcp:10.1.0.1:8003";
const SESSION: &str = "tcp:10.1.0.1:8003@ouch50";
const TOKEN: &str = r"token:T(\d+)";
const HEADER: &str = "order_frame,order_time_ns,session,order_id,token,symbol,reason,tick_seq";

/// One row: order_frame, order_time_ns, session, order_id, token, symbol, reason, tick_seq.
type Row = (u64, i64, String, String, String, String, String, String);

/// The fields of one CSV line (RFC 4180: a quoted field's doubled quotes are one).
fn fields(line: &str) -> Vec<String> {
    let (mut out, mut cur, mut quoted, mut chars) = (Vec::new(), String::new(), false, line.chars().peekable());
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// The rows of an `--unmatched` file, by order_frame (the file has them in the order the orders
/// were settled), after its header.
fn rows(path: &Path) -> Vec<Row> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(HEADER));
    let mut rows: Vec<Row> = lines
        .map(|l| {
            let f = fields(l);
            assert_eq!(f.len(), 8, "{l}");
            let [frame, time, session, id, token, symbol, reason, seq] = <[String; 8]>::try_from(f).unwrap();
            (frame.parse().unwrap(), time.parse().unwrap(), session, id, token, symbol, reason, seq)
        })
        .collect();
    rows.sort();
    rows
}

fn row(frame: u64, time: i64, id: &str, token: &str, symbol: &str, reason: &str, seq: &str) -> Row {
    let s = |x: &str| x.to_owned();
    (frame, time, s(SESSION), s(id), s(token), s(symbol), s(reason), s(seq))
}

fn counter(r: &Value, key: &str) -> u64 {
    r["counters"].get(key).map_or(0, |v| v.as_u64().unwrap())
}

/// The reasons counted among `unmatched_orders` (the others, `not_correlated` and `ambiguous`, are not
/// in it; `trigger_not_seen` is its rest).
fn among_unmatched(reason: UnmatchedReason) -> bool {
    !matches!(reason, UnmatchedReason::NotCorrelated | UnmatchedReason::Ambiguous | UnmatchedReason::TriggerNotSeen)
}

/// The report's counter `key` of the rows of a reason: there when any row has that reason (so that a
/// name `counted_in` gives that the report does not have fails here), else 0 when absent (the report
/// leaves out some counters of the rule not in use).
fn counter_of(r: &Value, key: &str, rows: &[Row], reason: UnmatchedReason) -> u64 {
    match r["counters"].get(key) {
        Some(v) => v.as_u64().unwrap(),
        None if rows.iter().all(|row| row.6 != reason.as_str()) => 0,
        None => panic!("{} rows, and no counter {key}: {}", reason.as_str(), r["counters"]),
    }
}

/// The rows of each reason are as many as its counter says (README; the counter the library names,
/// `UnmatchedReason::counted_in`, looked up by name in the report), and with the pairs they are every
/// order: `trigger_not_seen` is `unmatched_orders` less the reasons counted among it; `ambiguous` rows
/// only under the token rule (under the symbol rule an ambiguous order is matched).
fn check_counters(r: &Value, rows: &[Row], token_rule: bool) {
    let n = |reason: &str| rows.iter().filter(|r| r.6 == reason).count() as u64;
    let among = UnmatchedReason::ALL
        .iter()
        .filter(|&&k| among_unmatched(k))
        .map(|&k| counter_of(r, k.counted_in().unwrap(), rows, k))
        .sum::<u64>();
    let want: Vec<(&str, u64)> = UnmatchedReason::ALL
        .iter()
        .map(|&k| {
            let count = match k.counted_in() {
                Some(_) if k == UnmatchedReason::Ambiguous && !token_rule => 0,
                Some(key) => counter_of(r, key, rows, k),
                None => counter(r, "unmatched_orders") - among,
            };
            (k.as_str(), count)
        })
        .collect();
    let got: Vec<(&str, u64)> = want.iter().map(|&(k, _)| (k, n(k))).collect();
    assert_eq!(got, want, "{}", r["counters"]);
    assert_eq!(want.iter().map(|w| w.1).sum::<u64>(), rows.len() as u64, "a row of another reason");
    assert_eq!(counter(r, "matched") + rows.len() as u64, counter(r, "orders"), "every order is a pair or a row");
}

/// README's table of reasons under `--unmatched` is the library's: every reason of
/// `UnmatchedReason::ALL`, in its order and no other, each counted in the counter `counted_in` names
/// (the rest, `trigger_not_seen`, as `unmatched_orders` less the counters of the reasons among it). That
/// those counters are the report's is checked by every run here (`check_counters`).
#[test]
fn readme_lists_every_reason_with_its_counter() {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md")).unwrap();
    let at = readme.find("- `--unmatched FILE.csv`").expect("the --unmatched section");
    let table: Vec<Vec<&str>> = readme[at..]
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("| `reason`"))
        .skip(2)
        .take_while(|l| l.trim_start().starts_with('|'))
        .map(|l| l.trim().trim_matches('|').split(" | ").map(str::trim).collect())
        .collect();
    let listed: Vec<&str> = table.iter().map(|c| c[0].trim_matches('`')).collect();
    let all: Vec<&str> = UnmatchedReason::ALL.iter().map(|r| r.as_str()).collect();
    assert_eq!(listed, all);
    // Distinct, so that a reason is found by its word.
    assert_eq!(all.iter().collect::<std::collections::BTreeSet<_>>().len(), all.len());
    let rest = UnmatchedReason::ALL
        .iter()
        .filter(|&&k| among_unmatched(k))
        .map(|k| format!("`{}`", k.counted_in().unwrap()))
        .collect::<Vec<_>>();
    let rest = format!("`unmatched_orders` less {} and {}", rest[..rest.len() - 1].join(", "), rest[rest.len() - 1]);
    for (cells, reason) in table.iter().zip(UnmatchedReason::ALL) {
        let want = reason.counted_in().map_or(rest.clone(), |k| format!("`{k}`"));
        assert_eq!(cells[2], want, "{}", reason.as_str());
    }
}

/// `analyze -q --json ARGS --unmatched DIR/u.csv CAPTURE`: the report and the rows, the counters checked
/// against the rows; the report is the one the same run without `--unmatched` gives.
fn analyze_unmatched(dir: &Path, args: &[&str], cap: &Path, token_rule: bool) -> (Value, Vec<Row>) {
    let path = dir.join("u.csv");
    let with: Vec<&str> = args.iter().copied().chain(["--unmatched", path.to_str().unwrap()]).collect();
    let r = analyze_json(&with, cap);
    assert_eq!(r, analyze_json(args, cap), "--unmatched changed the report");
    let rows = rows(&path);
    check_counters(&r, &rows, token_rule);
    (r, rows)
}

/// An OUCH 5.0 Replace Order packet: order `orig` replaced by UserRefNum `n` with ClOrdID `T` + `n`.
fn replace(orig: u32, n: u32) -> Vec<u8> {
    let mut m = Vec::new();
    ouch::replace_order(&mut m, orig, &aapl_order(n));
    soup_packet(b'U', &m)
}

/// An OUCH 5.0 Cancel Order packet for order `n`.
fn cancel(n: u32) -> Vec<u8> {
    let mut m = Vec::new();
    ouch::cancel_order(&mut m, n, 0);
    soup_packet(b'U', &m)
}

/// An AAPL Enter Order packet, UserRefNum `n`, with ClOrdID `cl_ord_id`.
fn order_with(n: u32, cl_ord_id: &str) -> Vec<u8> {
    let mut o = aapl_order(n);
    o.cl_ord_id = cl_ord_id.into();
    let mut m = Vec::new();
    ouch::enter_order(&mut m, &o);
    soup_packet(b'U', &m)
}

/// Frames (0-based, after the SYN at T0 − 1 ms): AAPL ticks 1, 2, 3 at 0, 100, 200 us (frames 1, 3,
/// 5), an MSFT tick 4 at 150 ms (7); Enter Orders `T` + n, UserRefNum n: 1 to 3 for AAPL at 50, 150 and
/// 400 us (2, 4, 6), 4 for AAPL at 300 ms (8), 5 for MSFT at 301 ms (9), 6 for NVDA (never ticked) at
/// 302 ms (10); at 303 ms a Replace of order 99 (never seen) by 7 (11); at 304 ms a Cancel of order 1
/// (12); at 305 ms an AAPL order 9 whose ClOrdID `A,B"C` holds no sequence, and a comma and a quote
/// (13).
fn orders_of_every_kind() -> Vec<(i64, Vec<u8>)> {
    let ticks = vec![
        (T0, symbol_tick(1, "AAPL")),
        (T0 + 100 * US, symbol_tick(2, "AAPL")),
        (T0 + 200 * US, symbol_tick(3, "AAPL")),
        (T0 + 150 * MS, symbol_tick(4, "MSFT")),
    ];
    let orders = [
        (T0 + 50 * US, order_of(1, "AAPL")),
        (T0 + 150 * US, order_of(2, "AAPL")),
        (T0 + 400 * US, order_of(3, "AAPL")),
        (T0 + 300 * MS, order_of(4, "AAPL")),
        (T0 + 301 * MS, order_of(5, "MSFT")),
        (T0 + 302 * MS, order_of(6, "NVDA")),
        (T0 + 303 * MS, replace(99, 7)),
        (T0 + 304 * MS, cancel(1)),
        (T0 + 305 * MS, order_with(9, "A,B\"C")),
    ];
    with_orders(ticks, &orders)
}

/// Under the token rule each order names the tick of its UserRefNum: 1 to 4 are matched (the MSFT
/// tick is 4); 5, 6 and the Replace's 7 name sequences no feed brought (trigger_not_seen, the
/// sequence in tick_seq), the Cancel is not correlated, and order 9's token holds no sequence
/// (no_token, its token quoted as RFC 4180 has it). The Replace's symbol is not known (its order was
/// never seen); the Cancel has that of order 1, which it cancels (AAPL).
#[test]
fn under_the_token_rule_each_unmatched_order_is_listed_with_why() {
    let dir = tmpdir("unmatched-token");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &orders_of_every_kind());
    let (r, got) = analyze_unmatched(&dir, &["--md", FEED_A, "--orders", ORDERS, "--match", TOKEN], &cap, true);
    assert_eq!([counter(&r, "orders"), counter(&r, "matched")], [9, 4]);
    let at = |ms: i64| T0 + ms * MS;
    assert_eq!(
        got,
        [
            row(9, at(301), "5", "T0000000000005", "MSFT", "trigger_not_seen", "5"),
            row(10, at(302), "6", "T0000000000006", "NVDA", "trigger_not_seen", "6"),
            row(11, at(303), "7", "T0000000000007", "", "trigger_not_seen", "7"),
            row(12, at(304), "1", "", "AAPL", "not_correlated", ""),
            row(13, at(305), "9", "A,B\"C", "AAPL", "no_token", ""),
        ]
    );
    // The field holding a comma and a quote, as written.
    let text = std::fs::read_to_string(dir.join("u.csv")).unwrap();
    assert!(text.lines().any(|l| l == format!("13,{},{SESSION},9,\"A,B\"\"C\",AAPL,no_token,", at(305))), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Under `symbol:250us`: orders 1 to 3 are matched (50, 50 and 200 us after their symbol's newest
/// tick); orders 4 and 9 (AAPL, its newest tick at 200 us) and 5 (MSFT, 151 ms before) lie beyond the
/// window; NVDA never ticked (trigger_not_seen); the Replace of an order never seen has no symbol
/// (no_symbol); the Cancel is not correlated (AAPL: order 1's). Under the default 1 s window 4, 5 and
/// 9 are matched. The symbol rule reads no token: tick_seq is the sequence of the newest tick beyond
/// the window (AAPL's is 3, MSFT's 4), and empty for the other reasons.
#[test]
fn under_the_symbol_rule_each_unmatched_order_is_listed_with_why() {
    let dir = tmpdir("unmatched-symbol");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &orders_of_every_kind());
    let at = |ms: i64| T0 + ms * MS;
    let always = [
        row(10, at(302), "6", "T0000000000006", "NVDA", "trigger_not_seen", ""),
        row(11, at(303), "7", "T0000000000007", "", "no_symbol", ""),
        row(12, at(304), "1", "", "AAPL", "not_correlated", ""),
    ];
    let args = |rule| ["--md", FEED_A, "--orders", ORDERS, "--match", rule];
    let (r, got) = analyze_unmatched(&dir, &args("symbol:250us"), &cap, false);
    assert_eq!([counter(&r, "matched"), counter(&r, "unmatched_beyond_window")], [3, 3]);
    let mut want = vec![
        row(8, at(300), "4", "T0000000000004", "AAPL", "beyond_window", "3"),
        row(9, at(301), "5", "T0000000000005", "MSFT", "beyond_window", "4"),
        row(13, at(305), "9", "A,B\"C", "AAPL", "beyond_window", "3"),
    ];
    want.extend(always.iter().cloned());
    want.sort();
    assert_eq!(got, want);
    let (r, got) = analyze_unmatched(&dir, &args("symbol"), &cap, false);
    assert_eq!(counter(&r, "matched"), 6);
    assert_eq!(got, always);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Under the token rule with `--tick-retention 100us` (the capture of analyze_bounds' retention
/// test): ticks 1, 3 and 4 at 0, 200 and 400 us (2 lost); orders naming 1 at 150 us and at 350 us and
/// naming 3 at 450 us are beyond the retention, the one naming 2 at 460 us never saw its trigger, the
/// one naming 4 at 420 us is matched. With two MoldUDP64 sessions carrying sequence 4 (a feed B whose
/// session is another), the order naming 4 is ambiguous.
#[test]
fn orders_beyond_the_retention_and_ambiguous_ones_are_listed() {
    let mut ticks = vec![(T0, symbol_tick(1, "AAPL")), (T0 + 200 * US, symbol_tick(3, "AAPL"))];
    ticks.push((T0 + 400 * US, symbol_tick(4, "AAPL")));
    let orders = [
        (T0 + 150 * US, support::order_for(1, 1)),
        (T0 + 350 * US, support::order_for(2, 1)),
        (T0 + 420 * US, support::order_for(3, 4)),
        (T0 + 450 * US, support::order_for(4, 3)),
        (T0 + 460 * US, support::order_for(5, 2)),
    ];
    let dir = tmpdir("unmatched-retention");
    let cap = dir.join("c.pcap");
    // Frames: SYN, tick 1, order 1, tick 3, order 2, tick 4, order 3, order 4, order 5.
    write_pcap(&cap, &with_orders(ticks.clone(), &orders));
    let args = ["--md", FEED_A, "--orders", ORDERS, "--match", TOKEN, "--tick-retention", "100us"];
    let (_, got) = analyze_unmatched(&dir, &args, &cap, true);
    let at = |us: i64| T0 + us * US;
    let lost = row(8, at(460), "5", "T0000000000002", "AAPL", "trigger_not_seen", "2");
    assert_eq!(
        got,
        [
            row(2, at(150), "1", "T0000000000001", "AAPL", "beyond_retention", "1"),
            row(4, at(350), "2", "T0000000000001", "AAPL", "beyond_retention", "1"),
            row(7, at(450), "4", "T0000000000003", "AAPL", "beyond_retention", "3"),
            lost.clone(),
        ]
    );
    // Feed B's session SESSIONB carries sequence 4 too, at 401 us (frame 6: the frames after it move
    // one on).
    let mut md = Vec::new();
    wirestamp_lab::encode::itch::add_order(&mut md, 1, 1, 7, b'B', 100, "AAPL", 1_000_000);
    let b = udp([233, 54, 12, 112], 26478, &support::mold_packet(b"SESSIONB  ", 4, &[md]));
    ticks.push((T0 + 401 * US, b));
    write_pcap(&cap, &with_orders(ticks, &orders));
    let args = ["--md", FEED_A, "--md", "udp:233.54.12.112:26478", "--orders", ORDERS, "--match", TOKEN];
    let (r, got) = analyze_unmatched(&dir, &args, &cap, true);
    assert_eq!(counter(&r, "ambiguous"), 1);
    let (mut lost, ambiguous) = (lost, row(7, at(420), "3", "T0000000000004", "AAPL", "ambiguous", "4"));
    lost.0 = 9;
    assert_eq!(got, [ambiguous, lost]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A clock that stands still (every frame at T0, as in analyze_bad_input's frozen-clock test), under
/// the symbol rule: 1,027 AAPL orders after one MSFT tick; at most 1,024 of one symbol wait the reorder
/// allowance, so orders 1 to 3 (frames 2 to 4) stop waiting for room when orders 1,025 to 1,027 come:
/// nothing matched them then (released_for_room); the other 1,024 find no AAPL tick at the end
/// (trigger_not_seen).
#[test]
fn orders_released_for_room_are_listed_as_such() {
    let mut frames = vec![(T0, segment(true, 0, 0, 0x02, &[])), (T0, symbol_tick(1, "MSFT"))];
    let mut seq = 1u32;
    for n in 1..=1_027 {
        frames.push((T0, tcp(seq, &support::order(n))));
        seq += 50;
    }
    let dir = tmpdir("unmatched-room");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let (r, got) = analyze_unmatched(&dir, &["--md", FEED_A, "--orders", ORDERS], &cap, false);
    assert_eq!([counter(&r, "orders_released_for_room"), counter(&r, "unmatched_released_for_room")], [3, 3]);
    let want: Vec<Row> = (1..=1_027u32)
        .map(|n| {
            let reason = if n <= 3 { "released_for_room" } else { "trigger_not_seen" };
            row(u64::from(n) + 1, T0, &n.to_string(), &format!("T{n:013}"), "AAPL", reason, "")
        })
        .collect();
    assert_eq!(got, want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An OUCH 5.0 Modify Order Request 'M' (10 bytes: UserRefNum, side, quantity; OUCH 5.0 §2.4) of
/// order `n`, to `qty` shares.
fn modify(n: u32, qty: u32) -> Vec<u8> {
    let mut m = vec![b'M'];
    m.extend(n.to_be_bytes());
    m.push(b'B');
    m.extend(qty.to_be_bytes());
    soup_packet(b'U', &m)
}

/// An OUCH 4.2 request naming only an order token: Cancel 'X' (token, shares: 19 bytes) or Modify 'M'
/// (token, side, shares: 20 bytes), OUCH 4.2 §2.3 and §2.4.
fn by_token42(ty: u8, token: &[u8; 14]) -> Vec<u8> {
    let mut m = vec![ty];
    m.extend(token);
    if ty == b'M' {
        m.push(b'B');
    }
    m.extend(0u32.to_be_bytes());
    assert_eq!(m.len(), if ty == b'M' { 20 } else { 19 });
    soup_packet(b'U', &m)
}

/// A Cancel or Modify names only the order it acts on: its row has that order's symbol while the order
/// is remembered (as a Replace has), and none (empty) for an order never seen or ended. OUCH 5.0,
/// frames 0-based 1 ms apart, client to exchange but frame 7: 0 order 1 MSFT; 1 Cancel of 1 (MSFT);
/// 2 Modify of 1 (MSFT); 3 Cancel of 99, never entered (empty); 4 order 2 NVDA; 5 Replace of 2 by 3,
/// which keeps 2's symbol (NVDA); 6 Cancel of 3 (NVDA); 7 from the exchange, Order Canceled of all
/// 100 shares of order 1, which ends it; 8 Cancel of 1 again (empty). No feed: the orders find no tick
/// (trigger_not_seen). OUCH 4.2 by token likewise: an AAPL order, its Cancel and Modify (AAPL), a
/// Cancel of a token never entered (empty).
#[test]
fn a_cancel_or_modify_has_the_symbol_of_its_order() {
    let dir = tmpdir("unmatched-cancel-symbol");
    let cap = dir.join("c.pcap");
    let mut out = Vec::new();
    ouch::canceled(&mut out, 0, 1, 100, b'U');
    let script = [
        (0, true, order_of(1, "MSFT")),
        (1, true, cancel(1)),
        (2, true, modify(1, 50)),
        (3, true, cancel(99)),
        (4, true, order_of(2, "NVDA")),
        (5, true, replace(2, 3)),
        (6, true, cancel(3)),
        (7, false, soup_packet(b'S', &out)),
        (8, true, cancel(1)),
    ];
    write_pcap(&cap, &support::conversation(&script));
    let (_, got) = analyze_unmatched(&dir, &["--orders", ORDERS], &cap, false);
    let at = |ms: i64| T0 + ms * MS;
    let (lost, nc) = ("trigger_not_seen", "not_correlated");
    assert_eq!(
        got,
        [
            row(0, at(0), "1", "T0000000000001", "MSFT", lost, ""),
            row(1, at(1), "1", "", "MSFT", nc, ""),
            row(2, at(2), "1", "", "MSFT", nc, ""),
            row(3, at(3), "99", "", "", nc, ""),
            row(4, at(4), "2", "T0000000000002", "NVDA", lost, ""),
            row(5, at(5), "3", "T0000000000003", "NVDA", lost, ""),
            row(6, at(6), "3", "", "NVDA", nc, ""),
            row(8, at(8), "1", "", "", nc, ""),
        ]
    );

    let t1 = b"ORDER000000001";
    let script = [
        (0, true, support::enter42(t1)),
        (1, true, by_token42(b'X', t1)),
        (2, true, by_token42(b'M', t1)),
        (3, true, by_token42(b'X', b"ORDER000000099")),
    ];
    write_pcap(&cap, &support::conversation(&script));
    let args = ["--orders", "tcp:10.1.0.1:8003@ouch42", "--match", TOKEN];
    let (_, got) = analyze_unmatched(&dir, &args, &cap, true);
    let session = "tcp:10.1.0.1:8003@ouch42".to_owned();
    let row42 = |frame: u64, token: &str, symbol: &str, reason: &str| {
        let s = |x: &str| x.to_owned();
        (frame, at(frame as i64), session.clone(), s(token), s(token), s(symbol), s(reason), String::new())
    };
    assert_eq!(
        got,
        [
            row42(0, "ORDER000000001", "AAPL", "no_token"),
            row42(1, "ORDER000000001", "AAPL", nc),
            row42(2, "ORDER000000001", "AAPL", nc),
            row42(3, "ORDER000000099", "", nc),
        ]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A field blank on the wire is not a field not known: a symbol of 8 spaces, a ClOrdID or an OUCH
/// 4.2 token of 14 spaces are written as the wire holds them, quoted (a reader that trims unquoted
/// fields keeps them), where an empty field says none is known or carried. Under the symbol rule, a
/// feed's tick 1 (symbol 8 spaces) at T0 pairs with order 1 (that symbol, ClOrdID 14 spaces) 1 ms
/// on; order 2 (that symbol) 2 s on lies beyond the 1 s window (its tick_seq 1, the blank symbol's
/// tick); a Replace of order 99 (never seen) has no symbol known. OUCH 4.2: an order of token 14
/// spaces and its Cancel (order_id and token blank, symbol AAPL).
#[test]
fn a_blank_field_is_written_as_the_wire_holds_it() {
    let dir = tmpdir("unmatched-blank");
    let cap = dir.join("c.pcap");
    let pairs = dir.join("p.csv");
    let enter = |n: u32, cl_ord_id: &str| {
        let mut o = aapl_order(n);
        (o.symbol, o.cl_ord_id) = (String::new(), cl_ord_id.into());
        let mut m = Vec::new();
        ouch::enter_order(&mut m, &o);
        soup_packet(b'U', &m)
    };
    let orders =
        [(T0 + MS, enter(1, "")), (T0 + 2_000 * MS, enter(2, "T0000000000002")), (T0 + 2_001 * MS, replace(99, 3))];
    // Frames: SYN, tick, order 1, order 2, the Replace.
    write_pcap(&cap, &with_orders(vec![(T0, symbol_tick(1, ""))], &orders));
    let args = ["--md", FEED_A, "--orders", ORDERS, "--pairs", pairs.to_str().unwrap()];
    let (r, got) = analyze_unmatched(&dir, &args, &cap, false);
    assert_eq!(counter(&r, "matched"), 1);
    let (blank8, blank14) = (" ".repeat(8), " ".repeat(14));
    assert_eq!(
        got,
        [
            row(3, T0 + 2_000 * MS, "2", "T0000000000002", &blank8, "beyond_window", "1"),
            row(4, T0 + 2_001 * MS, "3", "T0000000000003", "", "no_symbol", ""),
        ]
    );
    let text = std::fs::read_to_string(dir.join("u.csv")).unwrap();
    let line = format!("3,{},{SESSION},2,T0000000000002,\"{blank8}\",beyond_window,1", T0 + 2_000 * MS);
    assert!(text.lines().any(|l| l == line), "{text}");
    // tick_session,tick_seq,tick_time_ns,order_id,token,order_time_ns,order_frame,order_last_frame,latency_ns,tick_frame
    let text = std::fs::read_to_string(&pairs).unwrap();
    let line = format!("SESSION001,1,{T0},1,\"{blank14}\",{},2,2,{MS},1", T0 + MS);
    assert_eq!(text.lines().nth(1), Some(&*line), "{text}");

    let script = [(0, true, support::enter42(&[b' '; 14])), (1, true, by_token42(b'X', &[b' '; 14]))];
    write_pcap(&cap, &support::conversation(&script));
    let (_, got) = analyze_unmatched(&dir, &["--orders", "tcp:10.1.0.1:8003@ouch42"], &cap, false);
    let session = "tcp:10.1.0.1:8003@ouch42".to_owned();
    let (lost, nc) = ("trigger_not_seen".to_owned(), "not_correlated".to_owned());
    let aapl = "AAPL".to_owned();
    assert_eq!(
        got,
        [
            (0, T0, session.clone(), blank14.clone(), blank14.clone(), aapl.clone(), lost, String::new()),
            (1, T0 + MS, session, blank14.clone(), blank14.clone(), aapl, nc, String::new()),
        ]
    );
    let text = std::fs::read_to_string(dir.join("u.csv")).unwrap();
    assert!(
        text.lines().any(
            |l| l.starts_with(&format!("1,{},tcp:10.1.0.1:8003@ouch42,\"{blank14}\",\"{blank14}\",AAPL,", T0 + MS))
        ),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A token or symbol whose bytes are not all printable (a NUL, a tab, a byte above 0x7E) or hold a
/// backslash is written as printable text that loses nothing: a backslash as `\\`, any other byte
/// outside printable ASCII as `\xhh`; right padding trimmed, a field of padding only kept whole (so
/// 14 NULs are `\x00` 14 times, and an empty field still means none). OUCH 4.2, one AAPL tick at T0
/// (frame 0), then orders 1 ms apart (frames 1 to 4): token `AB` NUL `CD` (AAPL: paired with the
/// tick), 14 NULs (symbol 8 NULs), `A\B` (symbol `M` NUL `SFT`), `T` 0xE9 tab `1` (NVDA); the last
/// three find no tick of their symbol (trigger_not_seen). Python's csv module reads both files, and
/// `codecs.escape_decode` gives back each field's wire bytes, as written here; neither file holds a
/// byte but printable ASCII and line feeds (Python 3.10 and older refuse a NUL in a CSV file).
#[test]
fn a_field_not_printable_is_escaped_and_loses_nothing() {
    let dir = tmpdir("unmatched-escaped");
    let (cap, pairs) = (dir.join("c.pcap"), dir.join("p.csv"));
    let pad14 = |t: &[u8]| -> [u8; 14] {
        let mut a = [b' '; 14];
        a[..t.len()].copy_from_slice(t);
        a
    };
    let orders: [([u8; 14], [u8; 8]); 4] = [
        (pad14(b"AB\0CD"), *b"AAPL    "),
        ([0; 14], [0; 8]),
        (pad14(br"A\B"), *b"M\0SFT   "),
        (pad14(b"T\xe9\t1"), *b"NVDA    "),
    ];
    let script: Vec<(i64, bool, Vec<u8>)> =
        orders.iter().zip(1..).map(|((t, sym), ms)| (ms, true, support::enter42_of(t, sym))).collect();
    let mut frames = support::conversation(&script);
    frames.insert(0, (T0, symbol_tick(1, "AAPL")));
    write_pcap(&cap, &frames);
    let session = "tcp:10.1.0.1:8003@ouch42";
    let args = ["--md", FEED_A, "--orders", session, "--pairs", pairs.to_str().unwrap()];
    let (r, _) = analyze_unmatched(&dir, &args, &cap, false);
    assert_eq!([counter(&r, "orders"), counter(&r, "matched")], [4, 1]);
    let u = dir.join("u.csv");
    let at = |ms: i64| T0 + ms * MS;
    let z14 = r"\x00".repeat(14);
    let want = [
        HEADER.to_owned(),
        format!("2,{},{session},{z14},{z14},{},trigger_not_seen,", at(2), r"\x00".repeat(8)),
        format!(r"3,{},{session},A\\B,A\\B,M\x00SFT,trigger_not_seen,", at(3)),
        format!(r"4,{},{session},T\xe9\x091,T\xe9\x091,NVDA,trigger_not_seen,", at(4)),
    ];
    let text = std::fs::read_to_string(&u).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[1..].sort();
    assert_eq!(lines, want);
    let text = std::fs::read_to_string(&pairs).unwrap();
    let line = format!(r"SESSION001,1,{T0},AB\x00CD,AB\x00CD,{},1,1,{MS},0", at(1));
    assert_eq!(text.lines().nth(1), Some(&*line), "{text}");
    for f in [&u, &pairs] {
        let bytes = std::fs::read(f).unwrap();
        assert!(bytes.iter().all(|&b| b == b'\n' || (0x20..0x7f).contains(&b)), "{}", f.display());
    }
    // Python reads each file and decodes the escapes: order_id, token (and symbol) as hex.
    let py = "import codecs, csv, sys\n\
              for path, cols in ((sys.argv[1], (3, 4, 5)), (sys.argv[2], (3, 4))):\n\
              \x20   rows = list(csv.reader(open(path, newline='')))[1:]\n\
              \x20   for row in sorted(rows, key=lambda r: r[0]):\n\
              \x20       print(' '.join(codecs.escape_decode(row[c].encode('ascii'))[0].hex() for c in cols))\n";
    let out = std::process::Command::new("python3")
        .args(["-c", py])
        .arg(&u)
        .arg(&pairs)
        .output()
        .expect("python3 (scripts/setup.sh installs it)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
    let trimmed = |b: &[u8]| -> Vec<u8> {
        let end = b.iter().rposition(|&c| c != b' ' && c != 0).map_or(b.len(), |i| i + 1);
        b[..end].to_vec()
    };
    let mut want = Vec::new();
    for (t, sym) in &orders[1..] {
        let t = hex(&trimmed(t));
        want.push(format!("{t} {t} {}", hex(&trimmed(sym))));
    }
    let t = hex(&trimmed(&orders[0].0));
    want.push(format!("{t} {t}"));
    assert_eq!(String::from_utf8(out.stdout).unwrap().lines().collect::<Vec<_>>(), want);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An OUCH 4.2 Enter of a token its account entered that day is a retransmission, which the exchange
/// ignores (OUCH's inbound messages may be resent benignly; order tokens are day-unique): no order, no
/// response answers it, so the order keeps its symbol, and a response of that token answers the order
/// itself. Frames (0-based) 1 ms apart after an AAPL tick (0) and an MSFT tick (1) at T0: 2 Enter T1
/// AAPL; 3 its Accepted; 4 Enter T1 MSFT (resent); 5 Cancel of T1; 6 Enter T2 AAPL; 7 Enter T2 AAPL
/// again, before any answer (resent); 8 Rejected of T2; 9 Cancel of T2; 10 Enter T3 AAPL; 11 Rejected
/// of T3; 12 Enter T3 MSFT (resent: the token is spent); 13 an Accepted of T3, which answers no request
/// (unmatched: a request recorded up to 2 ms after its response is waited for); 14, at 20 ms, Cancel
/// of T3. Under the symbol rule with `--by symbol` the three first Enters are
/// orders, paired with the AAPL tick; the resends are no orders (`orders_resent`). The Cancel of T1
/// acts on the live order, AAPL (it had MSFT: the resend's Enter took the order's symbol); T2 and T3
/// were rejected, never lived: their Cancels have no symbol (T2's had AAPL: the Rejected was taken for
/// the resend's; T3's MSFT: the resend was taken for a new order).
#[test]
fn a_resent_enter_leaves_the_order_its_symbol() {
    let dir = tmpdir("unmatched-duplicate");
    let cap = dir.join("c.pcap");
    let (t1, t2, t3) = (b"ORDER000000001", b"ORDER000000002", b"ORDER000000003");
    let script = [
        (1, true, support::enter42_of(t1, b"AAPL    ")),
        (2, false, support::accepted42(t1, b"AAPL    ")),
        (3, true, support::enter42_of(t1, b"MSFT    ")),
        (4, true, by_token42(b'X', t1)),
        (5, true, support::enter42_of(t2, b"AAPL    ")),
        (6, true, support::enter42_of(t2, b"AAPL    ")),
        (7, false, support::rejected42(t2)),
        (8, true, by_token42(b'X', t2)),
        (9, true, support::enter42_of(t3, b"AAPL    ")),
        (10, false, support::rejected42(t3)),
        (11, true, support::enter42_of(t3, b"MSFT    ")),
        (12, false, support::accepted42(t3, b"MSFT    ")),
        (20, true, by_token42(b'X', t3)),
    ];
    let mut frames = support::conversation(&script);
    frames.splice(0..0, [(T0, symbol_tick(1, "AAPL")), (T0, symbol_tick(2, "MSFT"))]);
    write_pcap(&cap, &frames);
    let session = "tcp:10.1.0.1:8003@ouch42";
    let (r, got) = analyze_unmatched(&dir, &["--md", FEED_A, "--orders", session, "--by", "symbol"], &cap, false);
    // (The Accepted of T3, after its resend, answered it: `resent_answered`.)
    let c = ["orders", "matched", "orders_resent", "unmatched_responses", "resent_answered"].map(|k| counter(&r, k));
    assert_eq!(c, [6, 3, 3, 1, 1]);
    let t2t = support::metric(&r, "tick_to_trade");
    let symbols: Vec<_> = support::dims(t2t).into_iter().filter(|d| d.0.starts_with("symbol:")).collect();
    assert_eq!(symbols, [("symbol:AAPL", 3)]);
    let row42 = |frame: u64, ms: i64, token: &[u8], symbol: &str| {
        let (s, token) = (|x: &str| x.to_owned(), String::from_utf8(token.to_vec()).unwrap());
        (frame, T0 + ms * MS, s(session), token.clone(), token, s(symbol), s("not_correlated"), String::new())
    };
    assert_eq!(got, [row42(5, 4, t1, "AAPL"), row42(9, 8, t2, ""), row42(14, 20, t3, "")]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A classic pcap's records (nanosecond, little endian, as synth and `write_pcap` write them): (time
/// ns, frame).
fn pcap_records(path: &Path) -> Vec<(i64, Vec<u8>)> {
    let bytes = std::fs::read(path).unwrap();
    assert_eq!(bytes[..4], 0xa1b2_3c4du32.to_le_bytes(), "a nanosecond pcap");
    let (mut at, mut out) = (24, Vec::new());
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
    while at + 16 <= bytes.len() {
        let t = i64::from(u32_at(at)) * 1_000_000_000 + i64::from(u32_at(at + 4));
        let len = u32_at(at + 8) as usize;
        out.push((t, bytes[at + 16..at + 16 + len].to_vec()));
        at += 16 + len;
    }
    out
}

/// Truth rows (after the header) of synth's truth file beside `cap`.
fn truth(cap: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(format!("{}.truth.csv", cap.display())).unwrap();
    text.lines().skip(1).map(|l| l.split(',').map(str::to_owned).collect()).collect()
}

/// Each row's order_frame is the frame that carried the order's first byte: a TCP segment to the
/// exchange's port 8003 recorded at order_time_ns (synth's order frames carry no VLAN tag).
fn check_order_frames(rows: &[Row], records: &[(i64, Vec<u8>)]) {
    for r in rows {
        let (t, f) = &records[r.0 as usize];
        assert_eq!((*t, f[23], u16::from_be_bytes([f[36], f[37]])), (r.1, 6, 8003), "{r:?}");
    }
}

/// synth (one feed, no B copy) with every fourth MoldUDP64 packet that carries messages dropped from
/// the capture (the first, the Stock Directory, kept), analysed with a token regex that reads only
/// even sequences. From the truth, and tshark's MoldUDP64 dissection of the capture before the drop:
/// an order whose trigger is odd is no_token; an even one in a dropped packet is trigger_not_seen
/// (its sequence in tick_seq); every other order is matched. Each row names the order's UserRefNum,
/// ClOrdID and time as the truth does.
#[test]
fn on_synth_orders_whose_trigger_was_dropped_or_token_unread_are_the_truths() {
    let dir = tmpdir("unmatched-synth-drop");
    let full = dir.join("full.pcap");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wirestamp"))
        .args(["synth", "--pcap", "--no-feed-b", "-n", "20000", "--seed", "7", "--order-prob", "0.1"])
        .arg(&full)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let moldudp64 = ["-d", "udp.port==26477,moldudp64"];
    let fields = ["frame.number", "moldudp64.sequence", "moldudp64.count"];
    let mut packets = Vec::new();
    for r in wirestamp_testdata::tshark_fields(&full, &moldudp64, &fields) {
        let (Ok(first), Ok(count)) = (r[1].parse::<u64>(), r[2].parse::<u64>()) else { continue };
        if count > 0 {
            packets.push((r[0].parse::<usize>().unwrap() - 1, first, count));
        }
    }
    assert!(packets.len() > 19_000, "{} packets", packets.len());
    let dropped: Vec<(usize, u64, u64)> = packets.iter().skip(1).step_by(4).copied().collect();
    let lost = |seq: u64| dropped.iter().any(|&(_, first, n)| (first..first + n).contains(&seq));
    let drop_frames: std::collections::HashSet<usize> = dropped.iter().map(|d| d.0).collect();
    let records: Vec<(i64, Vec<u8>)> =
        pcap_records(&full).into_iter().enumerate().filter(|(i, _)| !drop_frames.contains(i)).map(|r| r.1).collect();
    let cap = dir.join("dropped.pcap");
    write_pcap(&cap, &records);

    // truth: tick_seq, tick_time_ns, first_feed, user_ref_num, cl_ord_id, order_time_ns, latency_ns, ...
    let truth = truth(&full);
    let (r, got) = analyze_unmatched(&dir, &["--match", r"token:^T(\d*[02468])$"], &cap, true);
    let mut want: Vec<(i64, String, String, String, String)> = Vec::new();
    for t in &truth {
        let seq: u64 = t[0].parse().unwrap();
        let reason = match (seq % 2, lost(seq)) {
            (1, _) => ("no_token", String::new()),
            (_, true) => ("trigger_not_seen", seq.to_string()),
            _ => continue,
        };
        want.push((t[5].parse().unwrap(), t[3].clone(), t[4].clone(), reason.0.to_owned(), reason.1));
    }
    let mut ours: Vec<(i64, String, String, String, String)> =
        got.iter().map(|r| (r.1, r.3.clone(), r.4.clone(), r.6.clone(), r.7.clone())).collect();
    want.sort();
    ours.sort();
    assert!(want.iter().filter(|w| w.3 == "trigger_not_seen").count() > 50, "few triggers dropped");
    assert_eq!(ours, want);
    assert_eq!(counter(&r, "matched") as usize, truth.len() - want.len());
    assert!(got.iter().all(|r| r.2 == SESSION && !r.5.is_empty()), "session and symbol of every row");
    check_order_frames(&got, &records);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// synth with `--tick-retention 5us`: the orders unmatched are exactly the truth's slower than 5 us,
/// each beyond the retention with the sequence of its true trigger.
#[test]
fn on_synth_orders_beyond_the_retention_are_the_truths_slower_ones() {
    let dir = tmpdir("unmatched-synth-retention");
    let cap = support::synth_pcap(&dir, "s.pcap", 30_000);
    let truth = truth(&cap);
    let (_, got) = analyze_unmatched(&dir, &["--match", TOKEN, "--tick-retention", "5us"], &cap, true);
    let mut want: Vec<(i64, String, String, String, String)> = truth
        .iter()
        .filter(|t| t[6].parse::<i64>().unwrap() > 5 * US)
        .map(|t| (t[5].parse().unwrap(), t[3].clone(), t[4].clone(), "beyond_retention".to_owned(), t[0].clone()))
        .collect();
    let mut ours: Vec<(i64, String, String, String, String)> =
        got.iter().map(|r| (r.1, r.3.clone(), r.4.clone(), r.6.clone(), r.7.clone())).collect();
    want.sort();
    ours.sort();
    assert!(want.len() > 100, "{} slower than 5us", want.len());
    assert_eq!(ours, want);
    check_order_frames(&got, &pcap_records(&cap));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--unmatched` is an output as `--pairs` is: an earlier one (or an empty file) is replaced, a
/// capture is not (exit 1); `-` and a file another output names are the command line's fault (exit
/// 2); a full disk is an error naming it (exit 1).
#[test]
fn the_unmatched_file_is_an_output_like_the_others() {
    let dir = tmpdir("unmatched-output");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &orders_of_every_kind());
    let (c, u) = (cap.to_str().unwrap(), dir.join("u.csv"));
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(["analyze", "-q"]).args(args).output().unwrap()
    };
    let us = u.to_str().unwrap();
    std::fs::write(&u, format!("{HEADER}\n1,2,x,3,T,AAPL,no_token,\n")).unwrap();
    assert!(run(&["--unmatched", us, c]).status.success());
    assert_eq!(rows(&u).len(), 3, "the symbol rule's three rows replaced the earlier file's");
    std::fs::write(&u, b"").unwrap();
    assert!(run(&["--unmatched", us, c]).status.success());
    assert_eq!(rows(&u).len(), 3);
    let copy = dir.join("copy.pcap");
    std::fs::copy(&cap, &copy).unwrap();
    let out = run(&["--unmatched", copy.to_str().unwrap(), c]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not an earlier --unmatched output: refusing to overwrite"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read(&copy).unwrap(), std::fs::read(&cap).unwrap());
    for (args, why) in [
        (vec!["--unmatched", "-", c], "--unmatched -: outputs are written to a named file"),
        (vec!["--pairs", us, "--unmatched", us, c], "--pairs and --unmatched name the same file"),
        (vec!["--unmatched", us, "--hlog", us, c], "--unmatched and --hlog name the same file"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains(why), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let out = run(&["--unmatched", "/dev/full", c]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "wirestamp: error: --unmatched /dev/full: writing: No space left on device (os error 28)\n"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
