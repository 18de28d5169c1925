//! The market-data side on hand-built feeds: arbitration windows and what each tick is attributed
//! to. Each case's expected counts follow from how its frames were built.

mod support;
use support::{T0, aapl_add, analyze_frames, dims, metric, mold_packet, udp};

const A: ([u8; 4], u16) = ([233, 54, 12, 111], 26477);
const B: ([u8; 4], u16) = ([233, 54, 12, 112], 26478);

/// A packet of one Add Order at sequence `seq` on `feed`, at `t`.
fn tick(feed: ([u8; 4], u16), seq: u64, t: i64) -> (i64, Vec<u8>) {
    (t, udp(feed.0, feed.1, &mold_packet(b"SESSION001", seq, &[aapl_add()])))
}

/// `--tick-retention 1us`: seq 1's B copy comes 500 ns after A's (arbitrated), seq 2's 1,001 ns after
/// (too late). The window is the same under every rule: the symbol rule's window (1 s by default)
/// used to stretch it.
#[test]
fn tick_retention_is_the_arbitration_window_under_every_rule() {
    let frames = [tick(A, 1, T0), tick(B, 1, T0 + 500), tick(A, 2, T0 + 5_000), tick(B, 2, T0 + 6_001)];
    for rule in [r"token:T(\d+)", "symbol", "symbol:5s", "symbol:1us"] {
        let r = analyze_frames("retention", &frames, &["--tick-retention", "1us", "--match", rule]);
        let c = &r["counters"];
        let counts = ["ticks", "tick_copies", "stale_copies"].map(|k| c[k].as_u64());
        assert_eq!(counts, [2, 1, 1].map(Some), "{rule}");
    }
}

/// Under the symbol rule an order is matched when its last byte arrives, which may be after its
/// trigger left the arbiter (its --tick-retention window, 1 s). The trigger, seq 6 whose first copy
/// came on feed B, is still the order's tick in the symbol's history, and tick_to_trade counts it
/// under feed B (it was put under the first feed, A, once the arbiter no longer had the tick).
#[test]
fn a_tick_keeps_its_feed_after_it_leaves_the_arbiter() {
    const MS: i64 = 1_000_000;
    let order = support::order(1);
    let frames = [
        (T0 - 200_000, support::segment(true, 0, 0, 0x02, &[])),
        tick(A, 5, T0 - 100_000),
        tick(B, 5, T0 - 99_000),
        tick(B, 6, T0),
        tick(A, 6, T0 + 1_000),
        (T0 + 500 * MS, support::tcp(1, &order[..20])),
        tick(A, 7, T0 + 1_200 * MS),
        tick(B, 7, T0 + 1_200 * MS + 1_000),
        (T0 + 1_300 * MS, support::tcp(21, &order[20..])),
    ];
    let flows = ["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478", "--orders", "tcp:10.1.0.1:8003"];
    let r = analyze_frames("feed-after-retention", &frames, &flows);
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!((t2t["count"].as_u64(), t2t["max_ns"].as_i64()), (Some(1), Some(500 * MS)));
    let feeds: Vec<_> = dims(t2t).into_iter().filter(|d| d.0.starts_with("feed:")).collect();
    assert_eq!(feeds, [("feed:udp:233.54.12.112:26478", 1)]);
}

/// Feed B lags A at the capture's start: B's seq 9 comes after A's seq 10, the first packet captured.
/// It is a tick (its A copy was sent before the capture began), not a copy too late to arbitrate.
/// Alone on one feed, packets below the first one captured are new and late, not duplicates.
#[test]
fn sequences_below_the_first_captured_are_new_ticks() {
    let frames =
        [tick(A, 10, T0), tick(B, 9, T0 + 100), tick(B, 10, T0 + 200), tick(A, 11, T0 + 300), tick(B, 11, T0 + 400)];
    let r = analyze_frames("lag", &frames, &[]);
    let c = &r["counters"];
    assert_eq!(["ticks", "tick_copies", "stale_copies"].map(|k| c[k].as_u64()), [3, 2, 0].map(Some));
    let feeds = r["feeds"].as_array().unwrap();
    let per_feed = |k: &str| feeds.iter().map(|f| f[k].as_u64().unwrap()).collect::<Vec<_>>();
    assert_eq!((per_feed("messages"), per_feed("duplicates")), (vec![2, 3], vec![0, 0]));

    let one = (T0 + 100, udp(A.0, A.1, &mold_packet(b"SESSION001", 1, &[aapl_add(), aapl_add()])));
    let frames = [tick(A, 3, T0), one, tick(A, 4, T0 + 200)];
    let r = analyze_frames("below", &frames, &[]);
    let f = &r["feeds"][0];
    let seq = ["messages", "duplicates", "out_of_order", "gaps", "missing"].map(|k| f[k].as_u64());
    assert_eq!(seq, [4, 0, 1, 0, 0].map(Some), "{f}");
    assert_eq!((r["counters"]["ticks"].as_u64(), r["counters"]["stale_copies"].as_u64()), (Some(4), Some(0)));
}

/// One feed whose packet of seq 1-2 is captured twice, 700 ns apart (a SPAN port's duplicate, a
/// resend): the feed counts a duplicate; there is no A/B copy and no feed_ab_delay sample.
#[test]
fn a_repeat_on_the_same_feed_is_no_ab_copy() {
    let packet = udp(A.0, A.1, &mold_packet(b"SESSION001", 1, &[aapl_add(), aapl_add()]));
    let frames = [(T0, packet.clone()), (T0 + 700, packet), tick(A, 3, T0 + 1_000)];
    let r = analyze_frames("repeat", &frames, &[]);
    let c = &r["counters"];
    assert_eq!(["ticks", "tick_copies", "stale_copies"].map(|k| c[k].as_u64()), [3, 0, 0].map(Some));
    let ab = metric(&r, "feed_ab_delay");
    assert_eq!(ab["count"], 0);
    assert_eq!(r["feeds"][0]["duplicates"], 1);
}

/// 1,100 packets with every other sequence missing leave 1,099 gaps open, more than the 1,024 a feed
/// tracks: the oldest 75 are forgotten, and the report says so (a late packet filling one, seq 2
/// here, then counts as a duplicate; its message was counted missing and stays so).
#[test]
fn gaps_no_longer_tracked_are_reported() {
    let mut frames: Vec<_> = (0..1_100u64).map(|k| tick(A, 1 + 2 * k, T0 + k as i64 * 1_000)).collect();
    frames.push(tick(A, 2, T0 + 1_100_000));
    let r = analyze_frames("forgotten", &frames, &[]);
    let f = &r["feeds"][0];
    let counts = ["messages", "gaps", "missing", "gaps_forgotten", "duplicates", "out_of_order"].map(|k| f[k].as_u64());
    assert_eq!(counts, [1_100, 1_099, 1_099, 75, 1, 0].map(Some), "{f}");
}

/// A copy stamped before the one seen first (taps merged with different clocks, or one tap's frames
/// recorded out of order by its host) is the tick's first copy. The symbol rule times the trigger by
/// it and names its feed (it kept the first-seen copy's time, 5 µs late, so the latency read 5 µs
/// short), and the A/B delay is the later copy's, positive, under its feed (it was -5 µs under the
/// earlier copy's feed, and counted as two clocks disagreeing).
#[test]
fn a_copy_stamped_before_the_first_seen_is_the_first_copy() {
    let frames = [
        (T0 - 100_000, support::segment(true, 0, 0, 0x02, &[])),
        tick(A, 1, T0 + 5_000),
        tick(B, 1, T0),
        (T0 + 10_000, support::tcp(1, &support::order(1))),
    ];
    let flows = ["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478", "--orders", "tcp:10.1.0.1:8003"];
    let r = analyze_frames("earlier-copy", &frames, &flows);
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!((t2t["count"].as_u64(), t2t["max_ns"].as_i64()), (Some(1), Some(10_000)));
    assert_eq!(t2t["dims"][0]["name"], "feed:udp:233.54.12.112:26478");
    let ab = metric(&r, "feed_ab_delay");
    let ab_fig = (ab["count"].as_u64(), ab["min_ns"].as_i64(), ab["max_ns"].as_i64(), ab["negative"].as_u64());
    assert_eq!(ab_fig, (Some(1), Some(5_000), Some(5_000), Some(0)));
    assert_eq!(dims(ab), [("feed:udp:233.54.12.111:26477", 1)]);
}

/// The load the figures were measured under is reported beside them: the span, the mean rates, and
/// the interval (a second of capture time, cut at the capture's ends) with the most ticks and the one
/// with the most orders. The capture: a SYN at +0.5 s opens it; 1 tick in [0.5 s, 1 s), 3 in
/// [1 s, 2 s), then 2 orders and 1 tick in [2 s, 2.25 s], the last frame. So 1.75 s, 5 ticks and 2
/// orders: 2.86 ticks/s and 1.14 orders/s; the most ticks, 3, in the second from +0.5 s; the most
/// orders, 2, in the last 250 ms, from +1.5 s.
#[test]
fn the_load_is_reported_beside_the_figures() {
    const MS: i64 = 1_000_000;
    let (o1, o2) = (support::order(1), support::order(2));
    let frames = [
        (T0 + 500 * MS, support::segment(true, 0, 0, 0x02, &[])),
        tick(A, 1, T0 + 600 * MS),
        tick(A, 2, T0 + 1_100 * MS),
        tick(A, 3, T0 + 1_200 * MS),
        tick(A, 4, T0 + 1_300 * MS),
        (T0 + 2_100 * MS, support::tcp(1, &o1)),
        (T0 + 2_200 * MS, support::tcp(1 + o1.len() as u32, &o2)),
        tick(A, 5, T0 + 2_250 * MS),
    ];
    let flows = ["--md", "udp:233.54.12.111:26477", "--orders", "tcp:10.1.0.1:8003"];
    let dir = support::tmpdir("load");
    let cap = dir.join("frames.pcap");
    support::write_pcap(&cap, &frames);
    let r = support::analyze_json(&flows, &cap);
    let text = support::analyze_text(&flows, &cap);
    std::fs::remove_dir_all(&dir).unwrap();

    let (c, load) = (&r["counters"], &r["load"]);
    assert_eq!((c["ticks"].as_u64(), c["orders"].as_u64()), (Some(5), Some(2)));
    assert_eq!(load["span_ns"], 1_750 * MS);
    assert_eq!(load["ticks_per_s"].as_f64(), Some(5.0 / 1.75));
    assert_eq!(load["orders_per_s"].as_f64(), Some(2.0 / 1.75));
    let busiest = |k: &str| {
        let b = &load[k];
        (b["start_ns"].as_i64(), b["len_ns"].as_i64(), b["count"].as_u64())
    };
    assert_eq!(busiest("busiest_ticks"), (Some(T0 + 1_000 * MS), Some(1_000 * MS), Some(3)));
    assert_eq!(busiest("busiest_orders"), (Some(T0 + 2_000 * MS), Some(250 * MS), Some(2)));
    let line = "load: 1.750s of capture; on average 2.86 ticks/s and 1.14 orders/s; \
                busiest interval: 3 ticks in 1.000s from +500.000ms, 2 orders in 250.000ms from +1.500s";
    assert!(text.lines().any(|l| l == line), "{text}");
}

/// A capture taken during the day holds no Stock Directory: the symbol rule learns a locate's symbol
/// from any message that names it (here an Add Order), so that a later Order Executed, which names
/// only the locate, is the symbol's last message. Ticks: AAPL's Add on locate 1 at T0 (seq 1), an
/// Execute on locate 1 at T0 + 100 ms (seq 2), a Delete on locate 2, never named, 1 µs later (seq 3);
/// an AAPL order 5 µs after the Execute. Its trigger is seq 2, 5 µs before (it was the Add, 100 ms
/// before), on the fast path and the general one alike.
#[test]
fn a_symbol_is_learnt_from_any_message_that_names_it() {
    use wirestamp_lab::encode::itch;
    const MS: i64 = 1_000_000;
    let (mut exec, mut delete) = (Vec::new(), Vec::new());
    itch::executed(&mut exec, 1, 8, 7, 100, 1);
    itch::delete(&mut delete, 2, 9, 70);
    let md = |seq, msg: &Vec<u8>, t| (t, udp(A.0, A.1, &mold_packet(b"SESSION001", seq, std::slice::from_ref(msg))));
    let order = support::order(1);
    let frames = [
        (T0 - MS, support::segment(true, 0, 0, 0x02, &[])),
        md(1, &aapl_add(), T0),
        md(2, &exec, T0 + 100 * MS),
        md(3, &delete, T0 + 100 * MS + 1_000),
        (T0 + 100 * MS + 5_000, support::tcp(1, &order)),
    ];
    let flows = ["--md", "udp:233.54.12.111:26477", "--orders", "tcp:10.1.0.1:8003", "--match", "symbol"];
    for fast in [true, false] {
        let args: Vec<&str> = flows.iter().copied().chain((!fast).then_some("--no-fast-path")).collect();
        let r = analyze_frames("symbol-learnt", &frames, &args);
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!((t2t["count"].as_u64(), t2t["max_ns"].as_i64()), (Some(1), Some(5_000)), "fast path {fast}");
    }
}

/// Locates are the session's, not a feed's: AAPL's Add (seq 1, locate 1) came on feed A only, and the
/// Execute on locate 1 (seq 2) came first on feed B, 400 ns before A's copy. The AAPL order 5 µs after
/// B's copy is triggered by it (it was the Add, 100 ms before: feed B had never seen locate 1 named).
#[test]
fn a_symbol_learnt_on_one_feed_names_the_ticks_another_feed_brings_first() {
    use wirestamp_lab::encode::itch;
    const MS: i64 = 1_000_000;
    let mut exec = Vec::new();
    itch::executed(&mut exec, 1, 8, 7, 100, 1);
    let md = |feed: ([u8; 4], u16), seq, msg: &Vec<u8>, t| {
        (t, udp(feed.0, feed.1, &mold_packet(b"SESSION001", seq, std::slice::from_ref(msg))))
    };
    let order = support::order(1);
    let frames = [
        (T0 - MS, support::segment(true, 0, 0, 0x02, &[])),
        md(A, 1, &aapl_add(), T0),
        md(B, 2, &exec, T0 + 100 * MS),
        md(A, 2, &exec, T0 + 100 * MS + 400),
        (T0 + 100 * MS + 5_000, support::tcp(1, &order)),
    ];
    let flows = [
        ["--md", "udp:233.54.12.111:26477"],
        ["--md", "udp:233.54.12.112:26478"],
        ["--orders", "tcp:10.1.0.1:8003"],
        ["--match", "symbol"],
    ];
    for fast in [true, false] {
        let args: Vec<&str> = flows.iter().flatten().copied().chain((!fast).then_some("--no-fast-path")).collect();
        let r = analyze_frames("symbol-across-feeds", &frames, &args);
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!((t2t["count"].as_u64(), t2t["max_ns"].as_i64()), (Some(1), Some(5_000)), "fast path {fast}");
        let feeds: Vec<_> = dims(t2t).into_iter().filter(|d| d.0.starts_with("feed:")).collect();
        assert_eq!(feeds, [("feed:udp:233.54.12.112:26478", 1)], "fast path {fast}");
    }
}

/// IP fragments are not reassembled, so not analysed: tick 2's packet, sent as a first fragment
/// (More Fragments set, offset 0) and a later one, is missing from the feed (a gap of 1), not read
/// as whole from the first fragment's part of it (it was: no gap, tick 2 counted).
#[test]
fn an_ip_fragment_is_counted_not_analysed() {
    const US: i64 = 1_000;
    // Ethernet 14 bytes, then IPv4: flags and fragment offset at bytes 20-21.
    let mut first = tick(A, 2, T0 + 2 * US);
    first.1[20] = 0x20;
    let mut later = tick(A, 2, T0 + 2 * US + 1);
    later.1[21] = 0x04;
    let frames = [tick(A, 1, T0 + US), first, later, tick(A, 3, T0 + 3 * US)];
    let r = analyze_frames("fragments", &frames, &["--md", "udp:233.54.12.111:26477"]);
    let c = &r["counters"];
    assert_eq!(
        (c["ip_fragments"].as_u64(), c["ticks"].as_u64(), c["other_frames"].as_u64()),
        (Some(2), Some(2), Some(0))
    );
    let feed = &r["feeds"][0];
    assert_eq!(
        (feed["gaps"].as_u64(), feed["missing"].as_u64(), feed["messages"].as_u64()),
        (Some(1), Some(1), Some(2))
    );
}
