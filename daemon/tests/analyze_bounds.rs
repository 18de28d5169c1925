//! What makes the figures look better than the truth, said in the report: the symbol rule's choice of
//! the newest tick (its figures are lower bounds), orders cut off by the symbol window or the tick
//! retention, responses cut off by the ack timeout, and the settings that did it. Each expected value
//! follows from how the frames were built, or from synth's truth.

mod support;
use support::{
    MS, T0, accepted, analyze_json, analyze_text, conversation, fates, metric, order_for, order_of, symbol_tick,
    synth_pcap, tmpdir, with_orders, write_pcap,
};

const US: i64 = 1_000;
const FEED_A: &str = "udp:233.54.12.111:26477";
const ORDERS: &str = "tcp:10.1.0.1:8003";
const TOKEN: &str = r"token:T(\d+)";

fn counter(r: &serde_json::Value, key: &str) -> Option<u64> {
    r["counters"].get(key).map(|v| v.as_u64().unwrap())
}

fn notes(r: &serde_json::Value) -> Vec<String> {
    r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap().to_owned()).collect()
}

/// The symbol rule's note, for `earlier` of `matched` orders with an earlier tick in `window`,
/// `within` of them within the latency.
fn symbol_note(earlier: u64, matched: u64, window: &str, within: u64) -> String {
    format!(
        "the symbol rule timed each order from the newest tick of its symbol before it: where the strategy \
         reacted to an earlier tick, its latency is longer than shown, so the tick_to_trade figures are lower \
         bounds; {earlier} of {matched} matched orders had earlier ticks of their symbol in the {window} window \
         ({within} of them one no further before the tick matched than the order came after it); for exact \
         correlation, carry the trigger's sequence in the order token and use --match token:REGEX"
    )
}

/// AAPL ticks at 0, 100 and 200 us; AAPL orders at 50 us (after the first tick only), 150 us (100 us
/// after an earlier tick, 50 us after its match) and 400 us (100 us between the ticks, 200 us after its
/// match); an MSFT tick at 150 ms (time moves on: the AAPL history lets its old ticks go) and an AAPL
/// order at 300 ms, whose match (the 200 us tick) is then the oldest tick kept, the one before it let
/// go; and an MSFT order at 301 ms, 151 ms after its symbol's only tick. Under `symbol` (1 s): orders 2,
/// 3 and 4 had an earlier tick in the window; 3 and 4 one within their latency (100 us between the ticks
/// against 200 us and 299.8 ms after the match), 2 not (100 us against 50 us). Under `symbol:250us`:
/// order 2 only (its earlier tick 150 us before it; order 3's is 300 us before it), not within its
/// latency, and orders 4 and 5 lie beyond the window (unmatched, their symbol's newest tick older).
#[test]
fn the_symbol_rule_counts_orders_it_could_have_timed_from_an_earlier_tick() {
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
    ];
    let dir = tmpdir("bounds-symbol");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &with_orders(ticks, &orders));
    let args = |rule: &'static str| ["--md", FEED_A, "--orders", ORDERS, "--match", rule];

    let r = analyze_json(&args("symbol"), &cap);
    assert_eq!(counter(&r, "matched"), Some(5));
    assert_eq!(counter(&r, "symbol_matches_with_earlier_ticks"), Some(3));
    assert_eq!(counter(&r, "symbol_matches_with_earlier_ticks_within_latency"), Some(2));
    assert_eq!(counter(&r, "unmatched_beyond_window"), None, "present only when not 0");
    assert_eq!(notes(&r), [symbol_note(3, 5, "1s", 2)]);
    assert_eq!(
        r["settings"],
        serde_json::json!({
            "tick_retention_ns": 1_000_000_000i64, "ack_timeout_ns": 10_000_000_000i64,
            "symbol_window_ns": 1_000_000_000i64, "interval_ns": 1_000_000_000i64, "by_symbol": false
        })
    );
    let text = analyze_text(&args("symbol"), &cap);
    assert!(text.lines().any(|l| l == format!("note: {}", symbol_note(3, 5, "1s", 2))), "{text}");
    assert!(!text.contains("settings"), "all settings are the defaults:\n{text}");

    let r = analyze_json(&args("symbol:250us"), &cap);
    assert_eq!([counter(&r, "matched"), counter(&r, "unmatched_orders")], [Some(3), Some(2)]);
    assert_eq!(counter(&r, "symbol_matches_with_earlier_ticks"), Some(1));
    assert_eq!(counter(&r, "symbol_matches_with_earlier_ticks_within_latency"), None);
    assert_eq!(counter(&r, "unmatched_beyond_window"), Some(2));
    let beyond = "2 orders unmatched under the symbol rule: the newest tick of their symbol before them came more \
                  than 250us before; if ticks triggered them, their latencies exceed the window and the figures \
                  exclude them (the slowest, by construction): widen the window (--match symbol:WINDOW) to include \
                  them";
    assert_eq!(notes(&r), [symbol_note(1, 3, "250us", 0), beyond.to_owned()]);
    assert_eq!(r["settings"]["symbol_window_ns"], 250_000);
    let text = analyze_text(&args("symbol:250us"), &cap);
    assert!(text.lines().any(|l| l == "settings (not the defaults): --match symbol:250us"), "{text}");

    // The token rule has neither counter nor note, and no window.
    let r = analyze_json(&args(TOKEN), &cap);
    assert_eq!(counter(&r, "symbol_matches_with_earlier_ticks"), None);
    assert!(r["settings"].get("symbol_window_ns").is_none(), "{}", r["settings"]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Under the token rule with `--tick-retention 100us`: ticks 1, 3 and 4 at 0, 200 and 400 us (2 lost);
/// an order naming 1 at 150 us (tick 1 still held, 150 us old), one naming 1 at 350 us (tick 1 let go
/// when tick 3 came, 100 us past it), one naming 3 at 450 us (250 us old, held), one naming 2 at 460 us
/// (lost: no feed brought it) and one naming 4 at 420 us (20 us: matched). Four unmatched, three of them
/// beyond the retention. With the default retention all but the lost one are matched.
#[test]
fn orders_whose_trigger_is_older_than_the_retention_are_counted_and_noted() {
    let ticks = vec![
        (T0, symbol_tick(1, "AAPL")),
        (T0 + 200 * US, symbol_tick(3, "AAPL")),
        (T0 + 400 * US, symbol_tick(4, "AAPL")),
    ];
    let orders = [
        (T0 + 150 * US, order_for(1, 1)),
        (T0 + 350 * US, order_for(2, 1)),
        (T0 + 420 * US, order_for(3, 4)),
        (T0 + 450 * US, order_for(4, 3)),
        (T0 + 460 * US, order_for(5, 2)),
    ];
    let dir = tmpdir("bounds-retention");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &with_orders(ticks, &orders));
    let args = ["--md", FEED_A, "--orders", ORDERS, "--match", TOKEN, "--tick-retention", "100us"];
    let r = analyze_json(&args, &cap);
    assert_eq!([counter(&r, "matched"), counter(&r, "unmatched_orders")], [Some(1), Some(4)]);
    assert_eq!(counter(&r, "unmatched_beyond_retention"), Some(3));
    let note = "3 orders unmatched because their trigger, which a feed brought, was older than --tick-retention \
                (100us) before them: these are the slowest orders by construction, so the tick_to_trade figures \
                exclude the tail; raise --tick-retention (to 1s, say: memory grows with it)";
    assert_eq!(notes(&r), [note]);
    assert_eq!(r["settings"]["tick_retention_ns"], 100_000);
    let text = analyze_text(&args, &cap);
    assert!(text.lines().any(|l| l == format!("note: {note}")), "{text}");
    assert!(text.lines().any(|l| l == "settings (not the defaults): --tick-retention 100us"), "{text}");

    let r = analyze_json(&args[..6], &cap);
    assert_eq!([counter(&r, "matched"), counter(&r, "unmatched_orders")], [Some(4), Some(1)]);
    assert_eq!(counter(&r, "unmatched_beyond_retention"), None, "present only when not 0");
    assert_eq!(notes(&r), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// synth's truth: with `--tick-retention 100us`, the orders unmatched are exactly those whose true
/// latency exceeds 100 us, all counted as beyond the retention; the figures' maximum is then below it.
#[test]
fn on_synth_the_orders_beyond_the_retention_are_the_truths_slowest() {
    let dir = tmpdir("bounds-retention-synth");
    let cap = synth_pcap(&dir, "s.pcap", 100_000);
    let text = std::fs::read_to_string(dir.join("s.pcap.truth.csv")).unwrap();
    let mut lines = text.lines();
    let col = lines.next().unwrap().split(',').position(|h| h == "latency_ns").unwrap();
    let lat: Vec<i64> = lines.map(|l| l.split(',').nth(col).unwrap().parse().unwrap()).collect();
    let slow = lat.iter().filter(|&&l| l > 100 * US).count() as u64;
    assert!(slow > 0, "synth has orders slower than 100us");
    let r = analyze_json(&["--match", TOKEN, "--tick-retention", "100us"], &cap);
    assert_eq!(counter(&r, "unmatched_orders"), Some(slow));
    assert_eq!(counter(&r, "unmatched_beyond_retention"), Some(slow));
    assert_eq!(metric(&r, "tick_to_trade")["count"], lat.len() as u64 - slow);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--ack-timeout 10ms`: order 1 answered at 20 ms (late: its request unacknowledged, the response
/// neither paired nor unmatched), order 2 at 25 ms answered at 30 ms (paired), and an Accepted of order
/// 9, never sent (unmatched). With the default timeout the late one is paired.
#[test]
fn responses_after_the_ack_timeout_are_late_not_unmatched() {
    let script = [(0, true, order_for(1, 1)), (20, false, accepted(1)), (25, true, order_for(2, 1))];
    let mut script = script.to_vec();
    script.push((30, false, accepted(2)));
    script.push((31, false, accepted(9)));
    let frames = conversation(&script);
    let dir = tmpdir("bounds-ack");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let args = ["--orders", ORDERS, "--ack-timeout", "10ms"];
    let r = analyze_json(&args, &cap);
    // orders, acked, unacked, awaiting at the end, unmatched responses.
    assert_eq!(fates(&r), [2, 1, 1, 0, 1]);
    assert_eq!(counter(&r, "late_responses"), Some(1));
    assert_eq!(metric(&r, "order_to_ack")["count"], 1);
    let note = "1 response came after its request had gone unacknowledged (--ack-timeout 10ms): order_to_ack \
                excludes it, the slowest acknowledgements, and its request is among the unacknowledged; raise \
                --ack-timeout to pair it";
    assert_eq!(notes(&r), [note]);
    assert_eq!(r["settings"]["ack_timeout_ns"], 10 * MS);
    let text = analyze_text(&args, &cap);
    assert!(text.lines().any(|l| l == format!("note: {note}")), "{text}");
    assert!(text.lines().any(|l| l == "settings (not the defaults): --ack-timeout 10ms"), "{text}");
    // What "unacknowledged" means, beside the count.
    let responses = text.lines().find(|l| l.starts_with("ticks: ")).unwrap().split("; responses: ").nth(1).unwrap();
    assert_eq!(responses, "1 paired, 1 order unacknowledged (no response within 10ms), 1 response unmatched");

    let r = analyze_json(&args[..2], &cap);
    assert_eq!(fates(&r), [2, 2, 0, 0, 1]);
    assert_eq!(counter(&r, "late_responses"), None, "present only when not 0");
    std::fs::remove_dir_all(&dir).unwrap();
}
