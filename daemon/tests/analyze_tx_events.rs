//! `wirestamp analyze --tx-events`: each order is joined to the SND time of the write whose TCP byte
//! range holds the order's last byte (as `wirestamp capture --tx-events` reports writes), giving
//! tick_to_snd and snd_to_wire. The capture and the CSV are built here, byte by byte, with known times.

use serde_json::Value;
use std::process::Command;

mod support;

use support::{T0, aapl_add, mold_packet, order, tcp, tmpdir, udp, write_pcap};

/// Sequence number of the client's first captured byte: 80 bytes before the 2^32 wrap.
const S0: u32 = 0xFFFF_FFB0;
const CLIENT: &str = "10.1.0.2:40001";
const EXCHANGE: &str = "10.1.0.1:8003";

/// Order 1 in one segment, with an Arista 7280 0xD28B header (64-bit UTC) that stamps it at `tap_ns`.
fn order_stamped_by_7280(tap_ns: i64) -> Vec<u8> {
    let plain = tcp(S0, &order(1));
    let mut header = vec![0xd2, 0x8b, 0x00, 0x01, 0x01, 0x10];
    header.extend(((tap_ns / 1_000_000_000) as u32).to_be_bytes());
    header.extend(((tap_ns % 1_000_000_000) as u32).to_be_bytes());
    [&plain[..12], &header, &plain[12..]].concat()
}

/// A TX-event CSV of one `snd_sw` event at `t` for order 1's write (its 50 bytes from S0).
fn one_snd(t: i64) -> String {
    format!(
        "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n{t},snd_sw,{CLIENT},{EXCHANGE},{},{},,\n",
        S0,
        S0.wrapping_add(49)
    )
}

fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_wirestamp")).args(args).output().unwrap()
}

#[test]
fn orders_are_joined_to_the_snd_time_of_the_write_holding_their_last_byte() {
    let dir = tmpdir("txjoin");
    let pcap = dir.join("t.pcap");

    // Frame 0 at T0: the trigger, one Add Order of AAPL on the feed.
    let mut frames = vec![(T0, udp([233, 54, 12, 111], 26477, &mold_packet(b"TXJOINSESS", 1, &[aapl_add()])))];

    // The client's stream (offset k = sequence S0 + k, wrapping after offset 79):
    //   A  +10 us  bytes   0.. 49  order 1                  write 1 [0, 49]     SND sw +9 us
    //   B  +20 us  bytes  50..149  orders 2 and 3 (wraps)    write 2 [50, 149]   SND sw +18.5 us, hw +19 us
    //   C  +30 us  bytes 150..169  order 4, first 20 bytes   write 3 [150, 169]  SND sw +29 us
    //   D  +31 us  bytes 170..199  order 4, last 30 bytes    write 4 [170, 199]  SND sw +30.7 us
    //   E  +40 us  bytes 200..249  order 5                   no SND on this connection
    let o4 = order(4);
    let segs: [(i64, u32, Vec<u8>); 5] = [
        (10_000, 0, order(1)),
        (20_000, 50, [order(2), order(3)].concat()),
        (30_000, 150, o4[..20].to_vec()),
        (31_000, 170, o4[20..].to_vec()),
        (40_000, 200, order(5)),
    ];
    frames.extend(segs.iter().map(|(t, off, payload)| (T0 + t, tcp(S0.wrapping_add(*off), payload))));
    write_pcap(&pcap, &frames);

    let seq = |off: u32| S0.wrapping_add(off);
    let mut csv = String::from("time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n");
    let mut row = |t: i64, ev: &str, local: &str, first: Option<u32>, last: u32| {
        let first = first.map(|f| seq(f).to_string()).unwrap_or_default();
        csv += &format!("{},{ev},{local},{EXCHANGE},{first},{},,\n", T0 + t, seq(last));
    };
    for (k, (a, b, snd)) in
        [(0, 49, 9_000), (50, 149, 18_500), (150, 169, 29_000), (170, 199, 30_700)].iter().enumerate()
    {
        row(snd - 500, "sched", CLIENT, Some(*a), *b);
        row(*snd, "snd_sw", CLIENT, Some(*a), *b);
        if k == 1 {
            row(19_000, "snd_hw", CLIENT, Some(*a), *b);
        }
        row(snd + 60_000, "ack", CLIENT, Some(*a), *b);
    }
    // Order 5's bytes, but written on another connection (another client port): not order 5's write.
    row(39_000, "snd_sw", "10.1.0.2:40002", Some(200), 249);
    // 14 rows in one file, 1 in a second: --tx-events is repeatable.
    let tx1 = dir.join("tx1.csv");
    std::fs::write(&tx1, &csv).unwrap();
    let tx2 = dir.join("tx2.csv");
    std::fs::write(
        &tx2,
        format!(
            "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n{},unknown,{CLIENT},{EXCHANGE},,{},,\n{},established,{CLIENT},{EXCHANGE},{},{},0,0\n",
            T0,
            seq(0),
            T0 - 1_000_000,
            seq(0),
            seq(0)
        ),
    )
    .unwrap();

    let base = ["analyze", "-q", "--json", "--md", "udp:233.54.12.111:26477", "--orders", "tcp:10.1.0.1:8003"];
    let mut args = base.to_vec();
    let (p, a, b) = (pcap.to_str().unwrap(), tx1.to_str().unwrap(), tx2.to_str().unwrap());
    args.extend(["--tx-events", a, "--tx-events", b, p]);
    let out = run(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let metric = |name: &str| support::metric(&r, name).clone();
    let c = &r["counters"];
    assert_eq!(c["orders"], 5);
    assert_eq!(c["matched"], 5);
    // 4 sched + 5 snd_sw + 1 snd_hw + 4 ack rows, 1 established; the `unknown` row is skipped.
    assert_eq!(c["tx_events"], 15);
    assert_eq!(c["orders_with_snd"], 4);
    assert_eq!(c["orders_without_snd"], 1);

    // tick_to_snd = SND - T0: order 1 9 us; orders 2, 3 19 us (the hardware stamp); order 4 30.7 us
    // (its last byte is in write 4).
    let t2s = metric("tick_to_snd");
    assert_eq!(
        (t2s["count"].as_u64(), t2s["min_ns"].as_i64(), t2s["max_ns"].as_i64()),
        (Some(4), Some(9_000), Some(30_700))
    );
    // snd_to_wire = first byte's frame - SND: 1 us for orders 1-3, 30 - 30.7 = -0.7 us for order 4 (a max
    // of 1 us also shows orders 2 and 3 took write 2's hardware stamp: its software one gives 1.5 us).
    let s2w = metric("snd_to_wire");
    assert_eq!(
        (s2w["count"].as_u64(), s2w["min_ns"].as_i64(), s2w["max_ns"].as_i64()),
        (Some(4), Some(-700), Some(1_000))
    );
    assert_eq!(s2w["negative"], 1);
    assert_eq!(s2w["dims"][0]["name"], format!("session:tcp:{EXCHANGE}@ouch50"));
    // The clocks at their ends: the capture's records, and SND times of both kinds (software and
    // the NIC's were fed).
    let clocks = |from: &[&str], to: &[&str]| serde_json::json!({"from": from, "to": to});
    assert_eq!(t2s["clocks"], clocks(&["pcap"], &["snd_sw", "snd_hw"]));
    assert_eq!(s2w["clocks"], clocks(&["snd_sw", "snd_hw"], &["pcap"]));
    // tick_to_trade is unchanged by the join: first byte's frame - T0.
    let t2t = metric("tick_to_trade");
    assert_eq!(
        (t2t["count"].as_u64(), t2t["min_ns"].as_i64(), t2t["max_ns"].as_i64()),
        (Some(5), Some(10_000), Some(40_000))
    );

    // Without --tx-events: the same report, with no TX figures.
    let out = run(&[&base[..], &[p]].concat());
    let r0: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r0["counters"]["tx_events"], 0);
    assert_eq!(r0["counters"]["orders_without_snd"], 0);
    assert_eq!(r0["metrics"][4]["name"], "tick_to_snd");
    assert_eq!(r0["metrics"][4]["count"], 0);
    assert_eq!(r0["metrics"][0], r["metrics"][0]);

    // A malformed row is an error naming the file and line.
    std::fs::write(
        &tx2,
        "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n1,snd_sw,nowhere,x,1,2,,\n",
    )
    .unwrap();
    let out = run(&[&base[..], &["--tx-events", b, p]].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("tx2.csv line 2: local `nowhere` is not ADDR:PORT"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_frame_timed_by_its_tap_header_sees_only_the_tx_events_up_to_that_time() {
    let dir = tmpdir("txtap");
    let pcap = dir.join("t.pcap");
    // One order, recorded at T0 + 10 us, carrying an Arista 0xD28B header (64-bit UTC) that stamps it
    // 2 s earlier: its time is the tap's. Its write's SND, at T0 + 9 us, lies 2 s after that, beyond
    // the 1 s that TX events are fed ahead of frames: not joined (clocks this far apart are not one
    // timescale). The frame must not be fed up to its record time first.
    write_pcap(&pcap, &[(T0 + 10_000, order_stamped_by_7280(T0 + 10_000 - 2_000_000_000))]);
    let csv = one_snd(T0 + 9_000);
    let tx = dir.join("tx.csv");
    std::fs::write(&tx, csv).unwrap();
    let out = run(&[
        "analyze",
        "-q",
        "--json",
        "--orders",
        "tcp:10.1.0.1:8003",
        "--tx-events",
        tx.to_str().unwrap(),
        pcap.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let c = &r["counters"];
    assert_eq!(c["ts_sources"]["arista7280"], 1, "timed by the tap header: {c}");
    assert_eq!(
        (c["orders"].as_u64(), c["orders_with_snd"].as_u64(), c["orders_without_snd"].as_u64()),
        (Some(1), Some(0), Some(1))
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// TX events that cannot be right or that join nothing are said, not taken silently: a row whose
/// byte range is reversed (it would hold almost every byte of the connection, and gave SND to
/// nearly every order) is refused with its line; events whose ends name no connection of the
/// capture (local and remote swapped) still show the TX line, with a hint; so does a file with no
/// event at all.
#[test]
fn tx_events_that_cannot_be_right_or_join_nothing_are_said() {
    let dir = tmpdir("txbad");
    let pcap = dir.join("t.pcap");
    write_pcap(&pcap, &[(T0, tcp(S0, &order(1)))]);
    let tx = dir.join("tx.csv");
    let header = "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n";
    let p = pcap.to_str().unwrap();
    let t = tx.to_str().unwrap();
    let args = ["analyze", "-q", "--orders", "tcp:10.1.0.1:8003", "--tx-events", t, p];
    std::fs::write(&tx, format!("{header}{T0},snd_sw,{CLIENT},{EXCHANGE},100,50,,\n")).unwrap();
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success()
            && err.contains("tx.csv line 2: seq_first 100 is after seq_last 50: not a write's byte range"),
        "{err}"
    );
    let (a, b) = (S0, S0.wrapping_add(49));
    for (rows, want) in [
        (
            format!("{T0},snd_sw,{EXCHANGE},{CLIENT},{a},{b},,\n"),
            "TX events: 1; orders joined to the SND time of the write carrying their last byte: 0, without: 1; no order joined: do the events' local (client) and remote (exchange) ends name a connection of the capture?",
        ),
        (
            String::new(),
            "TX events: 0; orders joined to the SND time of the write carrying their last byte: 0, without: 1; no order joined",
        ),
    ] {
        std::fs::write(&tx, format!("{header}{rows}")).unwrap();
        let out = run(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let table = String::from_utf8(out.stdout).unwrap();
        assert!(table.contains(want), "{want} in {table}");
        assert!(table.contains("\ntick_to_snd "), "{table}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A CSV whose last row is cut short (no newline at its end, fewer fields than the row before: what a
/// capture killed while writing leaves) is read with a warning that says so, the row left out; the same
/// row followed by a newline, or in the middle, is still an error. A last row that is whole but for its
/// newline is read.
#[test]
fn a_cut_last_row_is_left_out_with_a_warning() {
    let dir = tmpdir("txcut");
    let pcap = dir.join("t.pcap");
    write_pcap(&pcap, &[(T0, tcp(S0, &order(1)))]);
    let tx = dir.join("tx.csv");
    let header = "time_ns,event,local,remote,seq_first,seq_last,stream_first,stream_last\n";
    let (a, b) = (S0, S0.wrapping_add(49));
    let whole = format!("{},snd_sw,{CLIENT},{EXCHANGE},{a},{b},0,49", T0 - 1_000);
    let cut = format!("{},snd_sw,10.1.0.2", T0 + 5_000);
    let (p, t) = (pcap.to_str().unwrap(), tx.to_str().unwrap());
    let args = ["analyze", "--json", "--orders", "tcp:10.1.0.1:8003", "--tx-events", t, p];

    std::fs::write(&tx, format!("{header}{whole}\n{cut}")).unwrap();
    let out = run(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let warning = format!(
        "--tx-events {t}: line 3 is cut short (no newline at the file's end; 3 fields, the row before has 8: was the \
         capture killed while writing it?): left out, the 1 rows before it are read: `{cut}`"
    );
    assert!(err.contains(&format!("wirestamp: warning: {warning}\n")), "{err}");
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["counters"]["tx_events"], 1, "{r}");
    assert_eq!(r["counters"]["orders_with_snd"], 1, "{r}");
    assert!(r["input"]["warnings"].as_array().unwrap().iter().any(|w| w == &Value::from(warning.clone())), "{r}");

    for (text, line) in [(format!("{header}{whole}\n{cut}\n"), 3), (format!("{header}{cut}\n{whole}"), 2)] {
        std::fs::write(&tx, &text).unwrap();
        let out = run(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{text}: {err}");
        assert!(err.contains(&format!("line {line}: 3 fields, expected 8 (at least the first 6)")), "{err}");
    }
    std::fs::write(&tx, format!("{header}{whole}\n{whole}")).unwrap();
    let out = run(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["counters"]["tx_events"], 2, "{r}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A negative snd_to_wire is explained by where the order frames were timed: on a host (record times
/// here, as a capture on the sending host gives them), the capture point precedes the driver's send
/// stamp by construction, and the metric needs a tap downstream of the NIC; stamped by a tap (an
/// Arista 0xD28B header), the clocks of the two ends disagree.
#[test]
fn negative_snd_to_wire_is_explained_by_where_the_order_frames_were_timed() {
    let dir = tmpdir("txneg");
    let pcap = dir.join("t.pcap");
    let tx = dir.join("tx.csv");
    // One order whose frame is timed at T0 + 10 us; its write's SND at T0 + 12 us: -2 us.
    std::fs::write(&tx, one_snd(T0 + 12_000)).unwrap();
    let plain = tcp(S0, &order(1));
    let stamped = order_stamped_by_7280(T0 + 10_000);
    let session = format!("session:tcp:{EXCHANGE}@ouch50");
    let host = "the order frames are timed on a host (pcap): a capture on the sending host (AF_PACKET, a \
                tc/eBPF hook, libpcap) runs before the driver's send stamp, so its frames precede SND by \
                construction, on one clock; snd_to_wire needs a tap, or a hardware-stamped capture, \
                downstream of the NIC (captured by another host, that host's clock and the sender's disagree)";
    for (frame, why) in [(plain.clone(), host), (stamped, "the clocks of the two ends disagree")] {
        write_pcap(&pcap, &[(T0 + 10_000, frame)]);
        let out = run(&[
            "analyze",
            "-q",
            "--orders",
            "tcp:10.1.0.1:8003",
            "--tx-events",
            tx.to_str().unwrap(),
            pcap.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| l.contains("negative")).collect();
        assert_eq!(
            lines,
            [
                format!("snd_to_wire: 1 of 1 sample negative ({why})"),
                format!("snd_to_wire {session}: 1 of 1 sample negative ({why})")
            ],
            "{text}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
