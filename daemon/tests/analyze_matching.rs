//! Correlation as the README defines it, on hand-built captures: which orders are ambiguous under each
//! rule, where the symbol rule's window ends, which responses answer a request (an OUCH 5.0 Rejected by
//! UserRefNum, OUCH 4.2 responses by order token), and which frames `--pairs` names for an order. Each
//! expected value follows from how the frames were built.

use wirestamp_lab::encode::itch;

mod support;
use support::{
    MS, T0, aapl_add, aapl_tick, analyze_frames, analyze_json, analyze_text, conversation, count_min_max, enter42,
    fates, metric, mold_packet, order, order_for, segment, soup_packet, tmpdir, udp, write_pcap,
};

const US: i64 = 1_000;
const FEED_A: &str = "udp:233.54.12.111:26477";
const FEED_B: &str = "udp:233.54.12.112:26478";
const ORDERS: &str = "tcp:10.1.0.1:8003";
const TOKEN: &str = r"token:T(\d+)";

/// The matching counters: orders, matched, unmatched, ambiguous.
fn matching(r: &serde_json::Value) -> [u64; 4] {
    ["orders", "matched", "unmatched_orders", "ambiguous"].map(|k| r["counters"][k].as_u64().unwrap())
}

/// An ITCH Add Order for `symbol` at stock locate `locate`.
fn add(locate: u16, symbol: &str) -> Vec<u8> {
    let mut m = Vec::new();
    itch::add_order(&mut m, locate, 1, 7, b'B', 100, symbol, 1_000_000);
    m
}

/// Under the symbol rule, an order whose symbol ticked twice at the same time (two AAPL Add Orders in
/// one packet, 10 us before it) is matched to the newer of the two (sequence 2) and counted ambiguous
/// as well; with the second message for another symbol, it is matched and not ambiguous. The terminal
/// report's matching line says the same.
#[test]
fn two_ticks_of_the_symbol_at_once_make_a_symbol_match_ambiguous() {
    for (second, ambiguous) in [(aapl_add(), 1), (add(2, "MSFT"), 0)] {
        let md = mold_packet(b"SESSION001", 1, &[aapl_add(), second]);
        let frames = vec![
            (T0 - MS, segment(true, 0, 0, 0x02, &[])),
            (T0, udp([233, 54, 12, 111], 26477, &md)),
            (T0 + 10 * US, segment(true, 1, 1, 0x18, &order(1))),
            (T0 + 5 * MS, aapl_tick(3)),
        ];
        let args = ["--md", FEED_A, "--orders", ORDERS, "--match", "symbol"];
        let dir = tmpdir(&format!("ambiguous-symbol-{ambiguous}"));
        let (cap, pairs) = (dir.join("c.pcap"), dir.join("pairs.csv"));
        write_pcap(&cap, &frames);
        let r = analyze_json(&[&args[..], &["--pairs", pairs.to_str().unwrap()]].concat(), &cap);
        assert_eq!(matching(&r), [1, 1, 0, ambiguous]);
        assert_eq!(count_min_max(metric(&r, "tick_to_trade")), (Some(1), Some(10 * US), Some(10 * US)));
        // The newest message for AAPL: the second when both are AAPL, else the first.
        let row = std::fs::read_to_string(&pairs).unwrap().lines().nth(1).unwrap().to_owned();
        let seq: u64 = row.split(',').nth(1).unwrap().parse().unwrap();
        assert_eq!(seq, if ambiguous == 1 { 2 } else { 1 });
        let text = analyze_text(&args, &cap);
        let want = format!("matching (symbol:1.000s): 1 order, 1 matched, 0 unmatched, {ambiguous} ambiguous,");
        assert!(text.lines().any(|l| l.starts_with(&want)), "{want}\n{text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Under the token rule, a token naming sequence 5 when two MoldUDP64 sessions (one per feed) both
/// carry a sequence 5: the trigger is ambiguous, so the order is neither matched nor unmatched
/// (README: every order is in one of matched, unmatched_orders, not_correlated and, under the token
/// rule, ambiguous). With the second session at 6, the order is matched to session A's tick.
#[test]
fn a_sequence_two_sessions_carry_makes_a_token_match_ambiguous() {
    for (b_seq, want) in [(5, [1, 0, 0, 1]), (6, [1, 1, 0, 0])] {
        let frames = vec![
            (T0 - MS, segment(true, 0, 0, 0x02, &[])),
            (T0, udp([233, 54, 12, 111], 26477, &mold_packet(b"SESSIONA  ", 5, &[aapl_add()]))),
            (T0 + US, udp([233, 54, 12, 112], 26478, &mold_packet(b"SESSIONB  ", b_seq, &[aapl_add()]))),
            (T0 + 10 * US, segment(true, 1, 1, 0x18, &order_for(1, 5))),
            (T0 + 5 * MS, udp([233, 54, 12, 111], 26477, &mold_packet(b"SESSIONA  ", 6, &[aapl_add()]))),
        ];
        let args = ["--md", FEED_A, "--md", FEED_B, "--orders", ORDERS, "--match", TOKEN];
        let r = analyze_frames("ambiguous-token", &frames, &args);
        assert_eq!(matching(&r), want, "session B at {b_seq}");
        let t2t = count_min_max(metric(&r, "tick_to_trade"));
        assert_eq!(t2t, if want[1] == 1 { (Some(1), Some(10 * US), Some(10 * US)) } else { (Some(0), None, None) });
    }
}

/// `symbol:WINDOW`: an order `after` its symbol's one tick is matched when `after` is within WINDOW
/// (the bound included) and unmatched one nanosecond beyond it; the bare rule's window is 1 s.
#[test]
fn the_symbol_window_ends_where_the_rule_says() {
    let cases = [
        ("symbol:1ms", MS, true),
        ("symbol:1ms", MS + 1, false),
        ("symbol:5ms", 2 * MS, true),
        ("symbol:5ms", 5 * MS + 1, false),
        ("symbol", 1_000 * MS, true),
        ("symbol", 1_000 * MS + 1, false),
    ];
    for (rule, after, matched) in cases {
        let frames = vec![
            (T0 - MS, segment(true, 0, 0, 0x02, &[])),
            (T0, aapl_tick(1)),
            (T0 + after, segment(true, 1, 1, 0x18, &order(1))),
            (T0 + after + 5 * MS, udp([233, 54, 12, 111], 26477, &mold_packet(b"SESSION001", 2, &[add(2, "MSFT")]))),
        ];
        let r = analyze_frames("symbol-window", &frames, &["--md", FEED_A, "--orders", ORDERS, "--match", rule]);
        let want = if matched { [1, 1, 0, 0] } else { [1, 0, 1, 0] };
        assert_eq!(matching(&r), want, "{rule}, order {after} ns after the tick");
        let t2t = count_min_max(metric(&r, "tick_to_trade"));
        assert_eq!(t2t, if matched { (Some(1), Some(after), Some(after)) } else { (Some(0), None, None) }, "{rule}");
    }
}

/// An OUCH 5.0 Rejected (OUCH 5.0 §3.8: type J, timestamp, UserRefNum, reason, ClOrdID) answers the
/// Enter Order of its UserRefNum: order 9 is acknowledged 3 ms after it was sent; a Rejected for
/// UserRefNum 10, never sent, answers nothing.
#[test]
fn a_rejected_answers_the_order_of_its_user_ref_num() {
    let rejected = |n: u32| {
        let mut m = vec![b'J'];
        m.extend(0u64.to_be_bytes()); // timestamp
        m.extend(n.to_be_bytes());
        m.extend(1u16.to_be_bytes()); // reason
        m.extend(format!("T{n:013}").as_bytes());
        assert_eq!(m.len(), 29);
        soup_packet(b'S', &m)
    };
    let script = [(0, true, order(9)), (3, false, rejected(9)), (4, false, rejected(10))];
    let r = analyze_frames("rejected", &conversation(&script), &["--orders", ORDERS]);
    // orders, acked, unacked, awaiting at the end, unmatched responses
    assert_eq!(fates(&r), [1, 1, 0, 0, 1]);
    assert_eq!(count_min_max(metric(&r, "order_to_ack")), (Some(1), Some(3 * MS), Some(3 * MS)));
}

/// OUCH 4.2 responses carry the order token: an Accepted (the layout tshark's OUCH dissector reads in
/// core/tests/proto_tshark_ouch42.rs) answers the Enter Order with its token 2 ms later, a Rejected
/// (type J, timestamp, token, reason) the other order 1 ms later, and an Accepted of a token never
/// sent answers nothing.
#[test]
fn ouch42_responses_answer_the_order_of_their_token() {
    let t1 = b"T0000000000001";
    let t2 = b"T0000000000002";
    let head = |ty: u8, token: &[u8; 14]| {
        let mut m = vec![ty];
        m.extend(0u64.to_be_bytes()); // timestamp
        m.extend(token);
        m
    };
    let accepted = |token: &[u8; 14]| {
        let mut m = head(b'A', token);
        m.push(b'B');
        m.extend(100u32.to_be_bytes());
        m.extend(b"AAPL    ");
        m.extend(1_000_000u32.to_be_bytes());
        m.extend(99_999u32.to_be_bytes()); // time in force
        m.extend(b"FIRM");
        m.push(b'Y'); // display
        m.extend(42u64.to_be_bytes()); // order reference number
        m.extend(b"PN"); // capacity, intermarket sweep
        m.extend(0u32.to_be_bytes()); // minimum quantity
        m.extend(b"NL "); // cross type, order state, BBO weight indicator
        assert_eq!(m.len(), 66);
        soup_packet(b'S', &m)
    };
    let rejected = |token: &[u8; 14]| {
        let mut m = head(b'J', token);
        m.push(b'H'); // reason: halted
        soup_packet(b'S', &m)
    };
    let script = [
        (0, true, enter42(t1)),
        (2, false, accepted(t1)),
        (3, true, enter42(t2)),
        (4, false, rejected(t2)),
        (5, false, accepted(b"T0000000000003")),
    ];
    let r = analyze_frames("ouch42-responses", &conversation(&script), &["--orders", "tcp:10.1.0.1:8003@ouch42"]);
    assert_eq!(fates(&r), [2, 2, 0, 0, 1]);
    assert_eq!(count_min_max(metric(&r, "order_to_ack")), (Some(2), Some(MS), Some(2 * MS)));
}

/// `--pairs` names the frame carrying an order's first byte and the one carrying its last (0-based,
/// as the capture holds them): for an order split over frames 2 and 4, with a tick between, 2 and 4,
/// its time the first's; for an order in one segment (frame 6), 6 and 6. The same under both rules.
#[test]
fn pairs_name_the_frames_of_an_orders_first_and_last_bytes() {
    let (o1, o2) = (order_for(1, 1), order_for(2, 3));
    let frames = vec![
        (T0 - MS, segment(true, 0, 0, 0x02, &[])),
        (T0, aapl_tick(1)),
        (T0 + 10 * US, segment(true, 1, 1, 0x18, &o1[..20])),
        (T0 + 20 * US, aapl_tick(2)),
        (T0 + 30 * US, segment(true, 21, 1, 0x18, &o1[20..])),
        (T0 + 40 * US, aapl_tick(3)),
        (T0 + 45 * US, segment(true, 51, 1, 0x18, &o2)),
        (T0 + 10 * MS, aapl_tick(4)),
    ];
    let dir = tmpdir("pairs-frames");
    let (cap, pairs) = (dir.join("c.pcap"), dir.join("pairs.csv"));
    write_pcap(&cap, &frames);
    for rule in [TOKEN, "symbol"] {
        let args = ["--md", FEED_A, "--orders", ORDERS, "--match", rule, "--pairs", pairs.to_str().unwrap()];
        analyze_json(&args, &cap);
        let text = std::fs::read_to_string(&pairs).unwrap();
        // tick_seq, order_time_ns, order_frame, order_last_frame, latency_ns of each row
        let rows: Vec<[i64; 5]> = text
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                [1, 5, 6, 7, 8].map(|i| f[i].parse().unwrap())
            })
            .collect();
        assert_eq!(rows, [[1, T0 + 10 * US, 2, 4, 10 * US], [3, T0 + 45 * US, 6, 6, 5 * US]], "{rule}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The note on a token regex that reads a sequence no feed brought, as the report words it (`token`:
/// the 14 bytes of the ClOrdID or order token, escaped, which the note quotes).
fn token_note(orders: u64, rule: &str, token: &str, seq: u64, why: &str) -> String {
    let noun = if orders == 1 { "order" } else { "orders" };
    format!(
        "{orders} {noun} with a readable token unmatched under {rule}: the first whose sequence no feed brought, \
         \"{token}\", gave sequence {seq} ({why}): check that the regex's first group captures the trigger's whole \
         MoldUDP64 sequence (decimal) in the order token"
    )
}

/// Ticks 1 to 3 on feed A and two orders naming ticks 2 and 3 (ClOrdIDs `T0000000000002`,
/// `T0000000000003`). A regex whose group captures one digit reads both as sequence 0, which
/// MoldUDP64 never numbers: both are unmatched, and a note (JSON and terminal) quotes the first token
/// and what it gave. The right regex matches both, and there is no note.
#[test]
fn a_token_regex_reading_sequences_no_feed_brought_is_noted() {
    let mut frames = vec![(T0 - MS, segment(true, 0, 0, 0x02, &[]))];
    frames.extend((1..=3u64).map(|seq| (T0 + seq as i64 * MS, aapl_tick(seq))));
    frames.push((T0 + 3 * MS + 10 * US, segment(true, 1, 1, 0x18, &order_for(1, 2))));
    frames.push((T0 + 3 * MS + 20 * US, segment(true, 51, 1, 0x18, &order_for(2, 3))));
    let dir = tmpdir("token-outside");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let args = |rule: &'static str| ["--md", FEED_A, "--orders", ORDERS, "--match", rule];
    let r = analyze_json(&args(r"token:(\d)"), &cap);
    assert_eq!(matching(&r), [2, 0, 2, 0]);
    let want = token_note(
        2,
        r"token:(\d)",
        "T0000000000002",
        0,
        "MoldUDP64 numbers messages from 1; the feeds brought udp:233.54.12.111:26477 1..3",
    );
    assert_eq!(r["notes"], serde_json::json!([want]));
    let text = analyze_text(&args(r"token:(\d)"), &cap);
    assert!(text.lines().any(|l| l == format!("note: {want}")), "{want:?} in\n{text}");
    let r = analyze_json(&args(TOKEN), &cap);
    assert_eq!(matching(&r), [2, 2, 0, 0]);
    assert_eq!(r["notes"], serde_json::json!([]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The terminal's hint when no order's token gave a sequence quotes the first token as the wire holds
/// it, padding included, its bytes escaped as `--unmatched` writes them: OUCH 4.2 orders of tokens
/// `X` NUL `1` and `T"1`, each padded to 14 bytes with spaces, 1 and 2 ms after an AAPL tick 5, under
/// `token:T(\d+)` (the second is no `T` and digits either). The note on a regex reading sequences no
/// feed brought quotes its token so too: under `token:(\d)` both read sequence 1, outside the feed's
/// 5..5.
#[test]
fn a_token_in_a_note_is_shown_as_the_wire_holds_it() {
    let script = [
        (1, true, support::enter42_of(b"X\x001           ", b"AAPL    ")),
        (2, true, support::enter42_of(b"T\"1           ", b"AAPL    ")),
    ];
    let mut frames = conversation(&script);
    frames.insert(0, (T0, aapl_tick(5)));
    let dir = tmpdir("token-as-wire");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let args = |rule: &'static str| ["--md", FEED_A, "--orders", "tcp:10.1.0.1:8003@ouch42", "--match", rule];
    let text = analyze_text(&args(TOKEN), &cap);
    let hint =
        r#"  no order's token gave a sequence under token:T(\d+): the first was "X\x001           "; the regex's"#;
    assert!(text.lines().any(|l| l.starts_with(hint)), "{hint:?} in\n{text}");
    let r = analyze_json(&args(r"token:(\d)"), &cap);
    let want = token_note(2, r"token:(\d)", r"X\x001           ", 1, "the feeds brought udp:233.54.12.111:26477 5..5");
    assert_eq!(r["notes"], serde_json::json!([want]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The note judges an order's sequence against the feeds' ranges at the capture's end. Ticks 1 to 3,
/// an order naming 5 (found unmatched 2 s later, half the 1 s retention past its time, when the feed
/// has brought 1 to 3 only), then ticks 4 to 6: 5 was brought after all, so no note. With a second
/// order after them naming 0, that one is quoted instead.
#[test]
fn the_token_note_judges_the_ranges_the_feeds_ended_with() {
    let mut frames = vec![(T0 - MS, segment(true, 0, 0, 0x02, &[]))];
    frames.extend((1..=3u64).map(|seq| (T0 + seq as i64 * MS, aapl_tick(seq))));
    frames.push((T0 + 3 * MS + 10 * US, segment(true, 1, 1, 0x18, &order_for(1, 5))));
    frames.extend((4..=6u64).map(|seq| (T0 + 2_000 * MS + seq as i64 * MS, aapl_tick(seq))));
    let dir = tmpdir("token-outside-ranges");
    let cap = dir.join("c.pcap");
    let args = ["--md", FEED_A, "--orders", ORDERS, "--match", TOKEN];
    write_pcap(&cap, &frames);
    let r = analyze_json(&args, &cap);
    assert_eq!(matching(&r), [1, 0, 1, 0]);
    assert_eq!(r["notes"], serde_json::json!([]));
    frames.push((T0 + 2_010 * MS, segment(true, 51, 1, 0x18, &order_for(2, 0))));
    write_pcap(&cap, &frames);
    let r = analyze_json(&args, &cap);
    assert_eq!(matching(&r), [2, 0, 2, 0]);
    let why = "MoldUDP64 numbers messages from 1; the feeds brought udp:233.54.12.111:26477 1..6";
    assert_eq!(r["notes"], serde_json::json!([token_note(2, TOKEN, "T0000000000000", 0, why)]));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An order naming a tick the feed lost (ticks 1 and 3: 2 is missing) is unmatched, but its sequence
/// lies within what the feed brought: no note on the regex. Named sequence 9, beyond it, it is noted.
#[test]
fn a_token_naming_a_lost_tick_is_no_case_against_the_regex() {
    for (named, note) in [(2, false), (9, true)] {
        let frames = vec![
            (T0 - MS, segment(true, 0, 0, 0x02, &[])),
            (T0 + MS, aapl_tick(1)),
            (T0 + 2 * MS, aapl_tick(3)),
            (T0 + 2 * MS + 10 * US, segment(true, 1, 1, 0x18, &order_for(1, named))),
        ];
        let r = analyze_frames(
            &format!("token-lost-{named}"),
            &frames,
            &["--md", FEED_A, "--orders", ORDERS, "--match", TOKEN],
        );
        assert_eq!(matching(&r), [1, 0, 1, 0], "{named}");
        let want = match note {
            false => serde_json::json!([]),
            true => serde_json::json!([token_note(
                1,
                TOKEN,
                "T0000000000009",
                9,
                "the feeds brought udp:233.54.12.111:26477 1..3"
            )]),
        };
        assert_eq!(r["notes"], want, "{named}");
    }
}
