//! The terminal report line by line, on hand-built captures whose every figure follows from how they
//! were built: what detection chose, the table's header and rows (units, the `*` of a percentile with
//! fewer than 100 samples beyond it), and the lines of counters under it (ticks and responses, each
//! feed, each direction of each order session, frames and their clocks).

mod support;
use support::{
    MS, T0, aapl_add, accepted, analyze_json, analyze_text, exchange_ack, metric, mold_packet, order, order_for,
    segment, tcp, tmpdir, udp, with_trailer, write_pcap,
};

const FEED_A: &str = "udp:233.54.12.111:26477";

/// A packet of feed A (233.54.12.111:26477), session SESSION001, carrying one AAPL Add Order at `seq`.
fn tick_a(seq: u64) -> Vec<u8> {
    udp([233, 54, 12, 111], 26477, &mold_packet(b"SESSION001", seq, &[aapl_add()]))
}

/// The report's lines split into whitespace-separated cells.
fn cells(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// The row of the table whose first cell is `name`.
fn row<'a>(text: &'a str, name: &str) -> Vec<&'a str> {
    text.lines().map(cells).find(|c| c.first() == Some(&name)).unwrap_or_else(|| panic!("no row {name}:\n{text}"))
}

/// The line starting with `prefix`.
fn line<'a>(text: &'a str, prefix: &str) -> &'a str {
    text.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("no line {prefix}:\n{text}"))
}

/// Two feeds and an order session, none given: the first line names them, feeds first, the session
/// with the OUCH version of its first Enter Order; a capture with neither says so and what to give.
#[test]
fn what_detection_chose_is_the_first_line() {
    let mut frames = Vec::new();
    for seq in 1..=3u64 {
        let t = T0 + seq as i64 * MS;
        let md = mold_packet(b"SESSION001", seq, &[aapl_add()]);
        frames.push((t, udp([233, 54, 12, 111], 26477, &md)));
        frames.push((t + 1_000, udp([233, 54, 12, 112], 26478, &md)));
        frames.push((t + 2_000, segment(true, 1 + 50 * (seq as u32 - 1), 1, 0x18, &order(seq as u32))));
    }
    let dir = tmpdir("detected-line");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let text = analyze_text(&[], &cap);
    assert_eq!(
        text.lines().next(),
        Some("detected from the traffic: udp:233.54.12.111:26477, udp:233.54.12.112:26478, tcp:10.1.0.1:8003@ouch50")
    );
    // Datagrams that are not MoldUDP64 (a 5-byte payload cannot hold its 20-byte header).
    let noise: Vec<(i64, Vec<u8>)> = (0..3).map(|i| (T0 + i * MS, udp([239, 1, 1, 1], 5000, b"hello"))).collect();
    write_pcap(&cap, &noise);
    let text = analyze_text(&[], &cap);
    assert_eq!(
        text.lines().next(),
        Some("detected no MoldUDP64 feed and no SoupBinTCP session: give them with --md / --orders")
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// One feed with a gap, a duplicate and the late packet that fills the gap, and one order session whose
/// client sends four orders in five segments (order 3's segment before order 2's, then order 2's again)
/// and gets one Accepted. A count of exactly one takes the singular ("1 gap", "1 segment"). Under the token rule the four orders' latencies are 100, 400, 300 and 1,500 ns
/// (below 2,048 ns every value has an HdrHistogram bucket of its own, so percentiles are exact), and
/// each percentile is the sample of rank ceil(q x n): p50 the 2nd of 4 (300 ns), p90 and above the 4th.
#[test]
fn the_table_and_its_counter_lines_say_what_the_capture_holds() {
    let (o1, o2, o3, o4) = (order_for(1, 1), order_for(2, 4), order_for(3, 4), order_for(4, 3));
    let frames = vec![
        (T0, tick_a(1)),
        (T0 + 100, segment(true, 1, 1, 0x18, &o1)),
        (T0 + 2_100, segment(false, 1, 51, 0x18, &accepted(1))),
        (T0 + MS, tick_a(2)),
        (T0 + 2 * MS, tick_a(4)),
        (T0 + 2 * MS + 300, segment(true, 101, 1, 0x18, &o3)),
        (T0 + 2 * MS + 400, segment(true, 51, 1, 0x18, &o2)),
        (T0 + 2 * MS + 500, segment(true, 51, 1, 0x18, &o2)),
        (T0 + 3 * MS, tick_a(2)),
        (T0 + 4 * MS, tick_a(3)),
        (T0 + 4 * MS + 1_500, segment(true, 151, 1, 0x18, &o4)),
    ];
    let dir = tmpdir("table");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let args = ["--md", FEED_A, "--orders", "tcp:10.1.0.1:8003@ouch50", "--match", r"token:T(\d+)"];
    let text = analyze_text(&args, &cap);
    std::fs::remove_dir_all(&dir).unwrap();

    assert_eq!(
        cells(text.lines().next().unwrap()),
        ["metric", "count", "min", "p50", "p90", "p99", "p99.9", "p99.99", "max", "mean"]
    );
    // Fewer than 100 samples beyond every percentile of 4: each is marked.
    let t2t = ["4", "100ns", "300ns*", "1.50us*", "1.50us*", "1.50us*", "1.50us*", "1.50us", "575ns"];
    assert_eq!(row(&text, "tick_to_trade")[1..], t2t);
    assert_eq!(row(&text, "feed:udp:233.54.12.111:26477")[1..], t2t);
    assert_eq!(row(&text, "session:tcp:10.1.0.1:8003@ouch50")[1..], t2t);
    let o2a = ["1", "2.00us", "2.00us*", "2.00us*", "2.00us*", "2.00us*", "2.00us*", "2.00us", "2.00us"];
    assert_eq!(row(&text, "order_to_ack")[1..], o2a);
    assert_eq!(row(&text, "feed_ab_delay")[1..], ["0", "-", "-", "-", "-", "-", "-", "-", "-"]);
    assert!(text.lines().any(|l| l == "* fewer than 100 samples beyond this percentile: not stable"));

    assert_eq!(
        line(&text, "ticks:"),
        "ticks: 4 (first copies), 0 later copies, 0 too late to arbitrate; responses: 1 paired, 0 orders \
         unacknowledged (3 more awaiting a response at the capture's end, sent less than the timeout before it), \
         0 responses unmatched"
    );
    // Sequences 1, 2, 4 (a gap: 3 missing), 2 again (a duplicate), 3 (late: the gap filled, none missing).
    assert_eq!(
        line(&text, "feed "),
        "feed udp:233.54.12.111:26477: 5 packets, 4 messages (A 5) seq 1..4, 0 heartbeats, 1 gap (0 missing), \
         1 duplicate, 1 out of order, 0 malformed packets, 0 unknown and 0 truncated ITCH messages"
    );
    assert_eq!(
        line(&text, "orders 10.1.0.2:40001>10.1.0.1:8003 ->"),
        "orders 10.1.0.2:40001>10.1.0.1:8003 -> tcp:10.1.0.1:8003@ouch50: 4 SoupBinTCP packets, 4 OUCH messages \
         (0 unknown, 0 malformed), TCP: 5 segments, 1 retransmitted, 1 out of order, 0 holes (0 bytes), 0 bytes \
         skipped to resync, 0 framing errors, 0 bytes cut at the end"
    );
    assert_eq!(
        line(&text, "orders 10.1.0.2:40001>10.1.0.1:8003 <-"),
        "orders 10.1.0.2:40001>10.1.0.1:8003 <- tcp:10.1.0.1:8003@ouch50: 1 SoupBinTCP packet, 1 OUCH message \
         (0 unknown, 0 malformed), TCP: 1 segment, 0 retransmitted, 0 out of order, 0 holes (0 bytes), 0 bytes \
         skipped to resync, 0 framing errors, 0 bytes cut at the end"
    );
    assert_eq!(
        line(&text, "frames:"),
        "frames: 11 (0 not in any feed or session, 0 with malformed headers, 0 IP fragments); timestamps used: \
         pcap 11; with clock warnings: 0"
    );
}

/// Frames stamped by an Arista 7130 / Metamako trailer whose flags say the timestamp is degraded
/// (0x10, formats.md) are counted as frames with clock warnings: 2 of 5 here, in the JSON and on the
/// `frames:` line; with every flag clean, none.
#[test]
fn frames_whose_tap_says_its_clock_is_degraded_are_counted() {
    for degraded in [0usize, 2] {
        let frames: Vec<(i64, Vec<u8>)> = (1..=5u64)
            .map(|seq| {
                let t = T0 + seq as i64 * MS;
                let mut f = with_trailer(&tick_a(seq), t + 500);
                if (seq as usize) <= degraded {
                    // The flags byte: the 4th from the end (flags, device (2), port).
                    let at = f.len() - 4;
                    f[at] |= 0x10;
                }
                (t, f)
            })
            .collect();
        let dir = tmpdir(&format!("degraded-{degraded}"));
        let cap = dir.join("c.pcap");
        write_pcap(&cap, &frames);
        let args = ["--md", FEED_A, "--trailer", "metamako"];
        let r = analyze_json(&args, &cap);
        assert_eq!(r["counters"]["degraded_clock_frames"], degraded as u64);
        assert_eq!(r["counters"]["ts_sources"]["metamako"], 5);
        let text = analyze_text(&args, &cap);
        let want = format!(
            "frames: 5 (0 not in any feed or session, 0 with malformed headers, 0 IP fragments); timestamps used: \
             metamako 5; with clock warnings: {degraded}"
        );
        assert_eq!(line(&text, "frames:"), want);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Tick 1 on feed B (not given) at T0, an order naming it 5 us later, and tick 1 on feed A 5 us after
/// that: the order's tick_to_trade is -5 us (its trigger's first copy among the feeds analysed is A's).
fn negative_tick_to_trade() -> Vec<(i64, Vec<u8>)> {
    let md = mold_packet(b"SESSION001", 1, &[aapl_add()]);
    vec![
        (T0 - MS, segment(true, 0, 0, 0x02, &[])),
        (T0, udp([233, 54, 12, 112], 26478, &md)),
        (T0 + 5_000, segment(true, 1, 1, 0x18, &order_for(1, 1))),
        (T0 + 10_000, tick_a(1)),
    ]
}

/// Tick 1 comes on feed B (not given) 5 us before an order naming it, and on feed A 5 us after: the
/// order's tick_to_trade is -5 us, and the lines under the table name both causes a negative sample
/// of it can have, clocks and a trigger's earlier copy on a feed not analysed, as the matching line does.
#[test]
fn a_negative_tick_to_trade_names_a_feed_not_analysed_as_well_as_the_clocks() {
    let frames = negative_tick_to_trade();
    let dir = tmpdir("negative-t2t");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let args = ["--md", FEED_A, "--orders", "tcp:10.1.0.1:8003@ouch50", "--match", r"token:T(\d+)"];
    let r = analyze_json(&args, &cap);
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!([&t2t["count"], &t2t["negative"], &t2t["min_ns"]], [1, 1, -5_000]);
    let text = analyze_text(&args, &cap);
    std::fs::remove_dir_all(&dir).unwrap();
    for name in [
        "tick_to_trade",
        "tick_to_trade feed:udp:233.54.12.111:26477",
        "tick_to_trade session:tcp:10.1.0.1:8003@ouch50",
    ] {
        let want = format!(
            "{name}: 1 of 1 sample negative (the clocks of the two ends disagree, or the trigger's earlier copy came \
             on a feed not analysed)"
        );
        assert!(text.lines().any(|l| l == want), "no line {want:?} in\n{text}");
    }
    assert!(
        line(&text, "matching").starts_with(
            "matching (token:T(\\d+)): 1 order, 1 matched (1 to a trigger stamped after it: the clocks of the feed's \
             and the orders' taps disagree, or the trigger's earlier copy came on a feed not analysed), 0 unmatched"
        ),
        "{text}"
    );
}

/// The same frames, and a synth capture, written with microsecond record times (a pcap of magic
/// a1b2c3d4, each time cut down to its µs): a negative sample within one unit of zero is put down to
/// the rounding, one beyond it to the clocks as before.
#[test]
fn negative_samples_within_a_record_unit_are_put_down_to_rounding() {
    let dir = tmpdir("negative-rounding");
    // Synth's exchange-to-capture delays are 0 to 6 us, its record times exact ns: cut to whole us,
    // a record time falls by less than 1 us, so every negative sample lies within one unit.
    let ns = support::synth_pcap(&dir, "ns.pcap", 2_000);
    let us = dir.join("us.pcap");
    write_pcap_us(&us, &read_pcap_ns(&ns));
    let args = ["--match", r"token:T(\d+)"];
    let e2c = metric(&analyze_json(&args, &ns), "exchange_to_capture").clone();
    assert_eq!(e2c["negative"], 0, "the ns capture has none");
    let r = analyze_json(&args, &us);
    let e2c = metric(&r, "exchange_to_capture");
    let negative = e2c["negative"].as_u64().unwrap();
    assert!(negative > 0 && e2c["min_ns"].as_i64().unwrap() > -1_000, "{e2c}");
    let text = analyze_text(&args, &us);
    let want = format!(
        "exchange_to_capture: {negative} of {} samples negative (the record times count in units of 1.00us, and \
         every negative sample lies within one: rounding alone can do that)",
        e2c["count"]
    );
    assert!(text.lines().any(|l| l == want), "no line {want:?} in\n{text}");
    // -5 us on a us capture (every time a whole us): beyond one unit, the clocks (or a feed not analysed).
    let frames = negative_tick_to_trade();
    let cap = dir.join("c.pcap");
    write_pcap_us(&cap, &frames);
    let args = ["--md", FEED_A, "--orders", "tcp:10.1.0.1:8003@ouch50", "--match", r"token:T(\d+)"];
    let text = analyze_text(&args, &cap);
    std::fs::remove_dir_all(&dir).unwrap();
    let want = "tick_to_trade: 1 of 1 sample negative (the clocks of the two ends disagree, or the trigger's earlier \
                copy came on a feed not analysed)";
    assert!(text.lines().any(|l| l == want), "no line {want:?} in\n{text}");
}

/// The records of a nanosecond little-endian pcap (as `write_pcap` and synth write them).
fn read_pcap_ns(path: &std::path::Path) -> Vec<(i64, Vec<u8>)> {
    let b = std::fs::read(path).unwrap();
    assert_eq!(&b[..4], &0xa1b2_3c4du32.to_le_bytes(), "a nanosecond little-endian pcap");
    let word = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().unwrap());
    let (mut at, mut out) = (24, Vec::new());
    while at < b.len() {
        let (sec, ns, caplen) = (word(at) as i64, word(at + 4) as i64, word(at + 8) as usize);
        out.push((sec * 1_000_000_000 + ns, b[at + 16..at + 16 + caplen].to_vec()));
        at += 16 + caplen;
    }
    out
}

/// Writes `(time_ns, frame)` records as a microsecond pcap (magic a1b2c3d4), each time cut down to its µs.
fn write_pcap_us(path: &std::path::Path, frames: &[(i64, Vec<u8>)]) {
    let mut b = Vec::new();
    for w in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65_535, 1] {
        b.extend_from_slice(&w.to_le_bytes());
    }
    // (Version 2.4 as two u16 words: major 2, minor 4; thiszone, sigfigs, snaplen, Ethernet.)
    b[4..8].copy_from_slice(&[2, 0, 4, 0]);
    for (t, f) in frames {
        let us = t.div_euclid(1_000);
        for w in [(us / 1_000_000) as u32, (us % 1_000_000) as u32, f.len() as u32, f.len() as u32] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).unwrap();
}

/// Orders 1 and 3 captured, order 2 between them not, each acknowledged by the exchange: one hole and
/// nothing else wrong. The direction's line does not call the frame that revealed the hole a bad frame:
/// it names it as where the first anomaly was found. Frames: o1 0, ack 1, (o2 lost) its ack 2, o3 3,
/// ack 4; the ACK of o2's range with o3 captured after it makes a hole once 2 ms have passed (at frame
/// 4), and o3, the segment after the range, showed it missing: frame 3 (tshark's "previous segment
/// not captured"). A note says that orders lost in it are in no count.
#[test]
fn a_connection_whose_only_fault_is_a_hole_names_where_it_was_found() {
    // Orders are 50 bytes: o1 at sequence 1,000, o2 at 1,050 (lost), o3 at 1,100.
    let frames =
        [tcp(1_000, &order(1)), exchange_ack(1_050), exchange_ack(1_100), tcp(1_100, &order(3)), exchange_ack(1_150)];
    // 2 ms apart: past the 1 ms a host may record frames out of order by.
    let timed: Vec<(i64, Vec<u8>)> = frames.into_iter().enumerate().map(|(i, f)| (T0 + i as i64 * 2 * MS, f)).collect();
    let dir = tmpdir("hole-only");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &timed);
    let args = ["--orders", "tcp:10.1.0.1:8003@ouch50"];
    let r = analyze_json(&args, &cap);
    assert_eq!(r["connections"][0]["to_exchange"]["first_bad_frame"], 3);
    assert_eq!(
        r["notes"],
        serde_json::json!([
            "orders may have been lost in 1 hole (50 bytes) of the order streams (to the exchange): the matching \
             counts cover only the orders read, and a response to a lost order is unmatched"
        ])
    );
    let text = analyze_text(&args, &cap);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        line(&text, "orders 10.1.0.2:40001>10.1.0.1:8003 ->"),
        "orders 10.1.0.2:40001>10.1.0.1:8003 -> tcp:10.1.0.1:8003@ouch50: 2 SoupBinTCP packets, 2 OUCH messages \
         (0 unknown, 0 malformed), TCP: 2 segments, 0 retransmitted, 0 out of order, 1 hole (50 bytes), 0 bytes \
         skipped to resync, 0 framing errors, 0 bytes cut at the end; first anomaly found at frame 3"
    );
}

/// One order 18,000 ns after its trigger: min, max and mean are exact and shown so (`18.00us`); the
/// percentiles (here the sample itself, a percentile never lying beyond the exact max) are shown to the
/// 3 significant digits the histogram keeps (`18.0us`): at that size its buckets are 16 ns wide.
#[test]
fn percentiles_are_shown_to_the_digits_the_histogram_keeps() {
    let frames = vec![
        (T0 - MS, segment(true, 0, 0, 0x02, &[])),
        (T0, tick_a(1)),
        (T0 + 18_000, segment(true, 1, 1, 0x18, &order_for(1, 1))),
    ];
    let dir = tmpdir("percentile-digits");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let args = ["--md", FEED_A, "--orders", "tcp:10.1.0.1:8003@ouch50", "--match", r"token:T(\d+)"];
    let r = analyze_json(&args, &cap);
    let text = analyze_text(&args, &cap);
    std::fs::remove_dir_all(&dir).unwrap();
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!([&t2t["min_ns"], &t2t["p50_ns"], &t2t["max_ns"]], [18_000, 18_000, 18_000]);
    assert_eq!(
        row(&text, "tick_to_trade"),
        ["tick_to_trade", "1", "18.00us", "18.0us*", "18.0us*", "18.0us*", "18.0us*", "18.0us*", "18.00us", "18.00us"]
    );
}
