//! Bad input to `wirestamp analyze`: a feed that is not what it was declared to be, a SoupBinTCP
//! length that runs past the stream, an ITCH message shorter than its type. Each is counted per flow
//! with the first offending frame, and the rest of the capture is still analysed.

use wirestamp_lab::encode::soup;

mod support;

use support::{
    T0, aapl_add, accepted, analyze_frames, analyze_json, exchange_ack, exchange_tcp, mold_packet, order, segment, tcp,
    tmpdir, udp, write_pcap,
};

#[test]
fn bad_flows_are_counted_with_their_first_frame() {
    let dir = tmpdir("bad");
    let path = dir.join("bad.pcap");
    let mut frames: Vec<Vec<u8>> = Vec::new();
    let good = [233, 54, 12, 111];
    // Frame 0: a good packet with one Add Order and one 'A' cut to 10 bytes (shorter than its 36).
    let add = aapl_add();
    frames.push(udp(good, 26477, &mold_packet(b"BADSESS001", 1, &[add.clone(), add[..10].to_vec()])));
    // Frames 1-2: "declared" feed on port 5000 that carries something else.
    frames.push(udp([239, 1, 1, 1], 5000, b"this is not moldudp64 at all"));
    frames.push(udp([239, 1, 1, 1], 5000, b"nor this"));
    // Frame 3: the good feed goes on.
    frames.push(udp(good, 26477, &mold_packet(b"BADSESS001", 3, std::slice::from_ref(&add))));
    // Frames 4-5: an order session whose second packet declares 200 bytes but the stream ends.
    let mut s1 = Vec::new();
    soup::packet(&mut s1, b'R', &[]);
    frames.push(tcp(1000, &s1));
    let mut s2 = vec![0, 200, b'U'];
    s2.extend_from_slice(b"short");
    frames.push(tcp(1000 + s1.len() as u32, &s2));
    // Frame 6: the feed once more, so that the cut packet is not in the capture's last frame.
    frames.push(udp(good, 26477, &mold_packet(b"BADSESS001", 4, &[add])));
    // 2 ms apart: a range acknowledged with bytes after it captured is a hole once 1 ms has passed (a
    // host may record frames out of order by that much).
    let timed: Vec<(i64, Vec<u8>)> =
        frames.into_iter().enumerate().map(|(i, f)| (T0 + i as i64 * 2_000_000, f)).collect();
    write_pcap(&path, &timed);

    let flows = ["--md", "udp:233.54.12.111:26477", "--md", "udp:239.1.1.1:5000", "--orders", "tcp:10.1.0.1:8003"];
    let r = analyze_json(&flows, &path);
    let good_feed = &r["feeds"][0];
    assert_eq!(good_feed["feed"], "udp:233.54.12.111:26477");
    assert_eq!(good_feed["packets"], 3);
    assert_eq!(good_feed["itch_truncated"], 1);
    assert_eq!(good_feed["itch_types"]["A"], 3, "the three complete Add Orders");
    // The short ITCH message is reported with its frame, not only counted.
    assert_eq!(good_feed["malformed_packets"], 1);
    assert_eq!(good_feed["first_bad_frame"], 0);
    assert_eq!(good_feed["first_bad_reason"], "ITCH 'A' Add Order at byte 0: truncated, need 36 bytes, have 10");
    let bad_feed = &r["feeds"][1];
    assert_eq!(bad_feed["feed"], "udp:239.1.1.1:5000");
    assert_eq!(bad_feed["malformed_packets"], 2);
    assert_eq!(bad_feed["first_bad_frame"], 1);
    assert!(bad_feed["first_bad_reason"].as_str().unwrap().contains("truncated"), "{}", bad_feed["first_bad_reason"]);
    let conn = &r["connections"][0];
    assert_eq!(conn["to_exchange"]["soup_packets"], 1);
    assert_eq!(conn["to_exchange"]["truncated_tail_bytes"], 8);
    // The frame holding the cut packet's length field, not the capture's last.
    assert_eq!(conn["to_exchange"]["first_bad_frame"], 5);
    // The table doubts the feed whose packets are all malformed, and only that one (1 of 3 frames
    // and 1 of 4 messages bad are a damaged feed, not another protocol).
    let text = support::analyze_text(&flows, &path);
    let doubts: Vec<&str> = text.lines().filter(|l| l.contains("may not be MoldUDP64")).collect();
    assert_eq!(doubts.len(), 1, "{text}");
    assert!(
        doubts[0].starts_with("  2 of its 2 frames hold a malformed packet: udp:239.1.1.1:5000 may not be"),
        "{text}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A MoldUDP64 packet whose header does not account for its bytes: blocks after the announced count,
/// a "heartbeat" (count 0) carrying a block, a datagram of zeros on a declared feed. Each is a
/// malformed packet with its frame: the bytes after the count are not messages anyone can trust.
#[test]
fn bytes_after_the_announced_blocks_make_a_malformed_packet() {
    let g = [233, 54, 12, 111];
    let add = aapl_add();
    let mut three_as_one = mold_packet(b"BADSESS001", 2, &[add.clone(), add.clone(), add.clone()]);
    three_as_one[18..20].copy_from_slice(&1u16.to_be_bytes());
    let mut loaded_heartbeat = mold_packet(b"BADSESS001", 3, std::slice::from_ref(&add));
    loaded_heartbeat[18..20].copy_from_slice(&0u16.to_be_bytes());
    let frames = [
        udp(g, 26477, &mold_packet(b"BADSESS001", 1, std::slice::from_ref(&add))),
        udp(g, 26477, &three_as_one),
        udp(g, 26477, &loaded_heartbeat),
        udp(g, 26477, &mold_packet(b"BADSESS001", 3, std::slice::from_ref(&add))),
        udp([239, 1, 1, 1], 5000, &[0; 64]),
    ];
    // 2 ms apart: a range acknowledged with bytes after it captured is a hole once 1 ms has passed (a
    // host may record frames out of order by that much).
    let timed: Vec<(i64, Vec<u8>)> =
        frames.into_iter().enumerate().map(|(i, f)| (T0 + i as i64 * 2_000_000, f)).collect();
    let r = analyze_frames("trailing", &timed, &["--md", "udp:233.54.12.111:26477", "--md", "udp:239.1.1.1:5000"]);
    let f = &r["feeds"][0];
    assert_eq!(f["malformed_packets"], 2, "{f}");
    assert_eq!(f["first_bad_frame"], 1);
    // The 38-byte block is 40 with its length: two of them follow the one announced.
    assert_eq!(f["first_bad_reason"], "76 bytes after the 1 message blocks its header announces");
    // The messages the header announces are still taken: seqs 1, 2 and 3, no gap.
    assert_eq!((f["messages"].as_u64(), f["gaps"].as_u64()), (Some(3), Some(0)));
    let zeros = &r["feeds"][1];
    assert_eq!(zeros["malformed_packets"], 1, "{zeros}");
    assert_eq!(zeros["first_bad_frame"], 4);
    assert_eq!(zeros["first_bad_reason"], "44 bytes after the 0 message blocks its header announces");
}

/// A feed whose packets each name a new MoldUDP64 session (garbage, or corrupt session names): the
/// first 64 sessions are analysed, the packets of further ones counted and noted with the first one's
/// frame and session, even after a malformed packet (each session's state cost about 1.5 KB: 200,000
/// such packets took 289 MB).
#[test]
fn a_feed_of_ever_new_sessions_is_bounded() {
    // Frame 0: a malformed packet (a header announcing 2 messages, holding 1), then 100 sessions.
    let mut bad = mold_packet(b"SESS000000", 1, &[aapl_add()]);
    bad[18..20].copy_from_slice(&2u16.to_be_bytes());
    let packets: Vec<(i64, Vec<u8>)> = std::iter::once(bad)
        .chain((0..100u64).map(|i| {
            let session: [u8; 10] = format!("SESS{i:06}").into_bytes().try_into().unwrap();
            mold_packet(&session, 1, &[aapl_add()])
        }))
        .enumerate()
        .map(|(i, p)| (T0 + i as i64 * 1_000, udp([233, 54, 12, 111], 26477, &p)))
        .collect();
    let r = analyze_frames("sessions", &packets, &["--md", "udp:233.54.12.111:26477"]);
    let f = &r["feeds"][0];
    assert_eq!((f["malformed_packets"].as_u64(), f["first_bad_frame"].as_u64()), (Some(1), Some(0)), "{f}");
    assert_eq!(f["sessions_not_analysed_packets"], 36, "{f}");
    assert_eq!(f["sessions"].as_array().unwrap().len(), 64);
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(
        notes.contains(
            &"feed udp:233.54.12.111:26477: 36 packets of MoldUDP64 sessions beyond its first 64 were not analysed, \
              the first at frame 65 (session SESS000064): a feed has one session a day (not MoldUDP64, or its \
              session names corrupt?)"
        ),
        "{notes:?}"
    );
}

/// Ever-new connections to an order session (a scan, garbage): the first 16,384 are analysed, the
/// frames of further ones counted and noted (each connection cost about 2.5 KB: 200,000 took 514 MB).
#[test]
fn ever_new_connections_are_bounded() {
    const MAX: u16 = 16_384;
    let frames: Vec<(i64, Vec<u8>)> = (0..MAX + 10)
        .map(|i| {
            // A SYN from client port 1024 + i (the TCP source port, after Ethernet and IPv4 headers).
            let mut f = segment(true, 1_000, 0, 0x02, &[]);
            f[34..36].copy_from_slice(&(1_024 + i).to_be_bytes());
            (T0 + i64::from(i) * 1_000, f)
        })
        .collect();
    let args = ["--orders", "tcp:10.1.0.1:8003@ouch50"];
    let r = analyze_frames("connections", &frames, &args);
    assert_eq!(r["counters"]["connections_not_analysed_frames"], 10);
    assert_eq!(r["connections"].as_array().unwrap().len(), usize::from(MAX));
    let dir = tmpdir("connections-text");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let text = support::analyze_text(&args, &cap);
    assert!(
        text.contains(
            "note: 16384 order connections were analysed, the most there can be: 10 frames of further connections \
             were not"
        ),
        "{}",
        &text[text.len().saturating_sub(2_000)..]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `analyze --json --orders tcp:10.1.0.1:8003@ouch50` of `conns` client connections (ports 1,024 on),
/// one after another, each writing its segments through `per_conn(write)`: `write(seq, flags, payload)`,
/// frames 1 us apart.
fn analyze_connections(name: &str, conns: u16, per_conn: impl Fn(&mut dyn FnMut(u32, u8, &[u8]))) -> serde_json::Value {
    let dir = tmpdir(name);
    let cap = dir.join("conns.pcap");
    let file = std::io::BufWriter::new(std::fs::File::create(&cap).unwrap());
    let mut w = wirestamp_capture::write::PcapWriter::new(file, wirestamp_core::LinkType::Ethernet, 65_535).unwrap();
    let mut index = 0i64;
    for k in 0..conns {
        let port = 1_024 + k;
        per_conn(&mut |seq, flags, payload| {
            let mut f = segment(true, seq, 1, flags, payload);
            f[34..36].copy_from_slice(&port.to_be_bytes());
            w.write(T0 + index * 1_000, &f, f.len() as u32).unwrap();
            index += 1;
        });
    }
    w.finish().unwrap();
    let r = analyze_json(&["--orders", "tcp:10.1.0.1:8003@ouch50"], &cap);
    std::fs::remove_dir_all(&dir).unwrap();
    r
}

/// Many connections, each with a segment missing and 1 MiB behind it (a damaged or hostile capture;
/// 4,000 took 4.4 GB before): the out-of-order bytes all connections hold together are bounded, 256 MiB,
/// each piece costing its bytes and 64 beside them. Each of 260 connections sends a SYN and a
/// heartbeat, misses a segment of 65,472 bytes, then sends 16 more of that size (a SoupBinTCP Debug
/// packet each): 16 x (65,472 + 64) = 1 MiB, so 256 connections fit. The first held segment of each
/// of the last 4 takes all past the bound, and the connection holding the oldest bytes (the first,
/// then the second...) gives up its missing range: 4 holes of 65,472 bytes, the first at frame
/// 256 x 18 + 2 = 4,610, counted and noted. Each hole, given up for room or at the end, is the frame
/// that showed it missing: its connection's first segment after it (connection k's SYN is frame 18k).
#[test]
fn out_of_order_bytes_held_by_all_connections_are_bounded() {
    const CONNS: u16 = 260;
    const SEG: usize = 65_472;
    let mut debug = (SEG as u16 - 2).to_be_bytes().to_vec();
    debug.push(b'+');
    debug.resize(SEG, b'x');
    // 4,680 frames in 5 ms, far within the 1 s a missing range is waited for.
    let r = analyze_connections("held-tcp", CONNS, |write| {
        write(1_000, 0x02, &[]);
        write(1_001, 0x18, &[0, 1, b'R']);
        // The segment at 1,004 is missing.
        for s in 1..=16 {
            write(1_004 + (s * SEG) as u32, 0x18, &debug);
        }
    });
    let c = &r["counters"];
    let keys = ["tcp_gaps_released_for_room", "tcp_gap_bytes_released_for_room", "first_tcp_released_for_room_frame"];
    assert_eq!(keys.map(|k| c[k].as_u64()), [Some(4), Some(4 * SEG as u64), Some(4_610)], "{c}");
    let conns = r["connections"].as_array().unwrap();
    assert_eq!(conns.len(), usize::from(CONNS));
    for (k, conn) in conns.iter().enumerate() {
        let tcp = &conn["to_exchange"]["tcp"];
        assert_eq!(counts(tcp, ["holes", "hole_bytes", "bytes"]), [1, SEG as u64, 3 + 16 * SEG as u64], "{k}: {tcp}");
        assert_eq!(conn["to_exchange"]["first_bad_frame"], 18 * k as u64 + 2, "{k}");
    }
    let note = "the order streams held more out-of-order TCP bytes at once than the analysis keeps (256 MiB, all \
                connections together: many connections each with a segment missing and much data behind it, a \
                damaged or hostile capture?): 4 missing ranges (261888 bytes) were given up as holes before the \
                gap timeout, the stream holding the oldest bytes first, the first at frame 4610 (bytes of them \
                captured later are not read; they are among the connections' holes)";
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.contains(&note), "{notes:?}");
}

/// Many connections, each leaving a SoupBinTCP packet unfinished (a damaged or hostile capture; 4,000
/// both ways took 581 MB before): the framing buffers of all connections together are bounded, 64 MiB.
/// Each of 1,028 connections sends a SYN, then in one segment the first 65,408 bytes of a Debug
/// packet declaring 65,535: the framer holds them in room for as many, and a piece of 32 bytes in
/// room for 4, 65,536 in all, so 1,024 connections fit. The begun packet of each of the last 4 takes
/// all past the bound, and the connection holding the oldest (the first, then the second...) gives it
/// up: 4 times 65,408 bytes lost, at frames 1,024 x 2 + 1 = 2,049 to 2,055, counted and noted; the
/// others' packets are cut by the capture's end. Either way a stream's anomaly is the frame its packet
/// began in (connection k's SYN is frame 2k), not the frame that took all past the bound.
#[test]
fn framing_held_by_all_connections_is_bounded() {
    const CONNS: u16 = 1_028;
    const BEGUN: usize = 65_408;
    let mut begun = u16::MAX.to_be_bytes().to_vec();
    begun.push(b'+');
    begun.resize(BEGUN, b'x');
    let r = analyze_connections("held-framing", CONNS, |write| {
        write(1_000, 0x02, &[]);
        write(1_001, 0x18, &begun);
    });
    let c = &r["counters"];
    let keys =
        ["framing_released_for_room", "framing_bytes_released_for_room", "first_framing_released_for_room_frame"];
    assert_eq!(keys.map(|k| c[k].as_u64()), [Some(4), Some(4 * BEGUN as u64), Some(2_049)], "{c}");
    let conns = r["connections"].as_array().unwrap();
    assert_eq!(conns.len(), usize::from(CONNS));
    for (k, conn) in conns.iter().enumerate() {
        let to = &conn["to_exchange"];
        let lost = if k < 4 { [BEGUN as u64, 0, 2 * k as u64 + 1] } else { [0, BEGUN as u64, 2 * k as u64 + 1] };
        assert_eq!(counts(to, ["resync_skipped_bytes", "truncated_tail_bytes", "first_bad_frame"]), lost, "{k}: {to}");
    }
    let note = "the order streams held more SoupBinTCP packets begun, or bytes searched for a packet boundary, at \
                once than the analysis keeps (64 MiB, all connections together: many connections each with a long \
                packet left unfinished, a damaged or hostile capture?): what a stream's framing held was given up \
                4 times (261632 bytes lost as at a hole, among the streams' resync_skipped_bytes), the stream \
                holding the oldest byte first, the first at frame 2049; each resynchronised after";
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.contains(&note), "{notes:?}");
}

/// Ticks of one symbol 1 ns apart, more than a symbol's history keeps (16,384; all are within the
/// 1 ms allowance, which keeps every tick an order recorded late may match): the 6 oldest of 16,390
/// are forgotten, counted and noted. An order stamped at the 3rd's time and recorded after them all
/// (16 us late, within the allowance) finds its match forgotten and is unmatched, not matched to an
/// older tick; one stamped at the 20th's time is matched to it (0 ns: a tick at every ns).
#[test]
fn ticks_beyond_what_a_symbol_keeps_are_forgotten_and_counted() {
    let n = 16_390u64;
    let mut frames = vec![(T0 - 1_000_000, segment(true, 0, 0, 0x02, &[]))];
    for seq in 1..=n {
        let md = mold_packet(b"SESSION001", seq, &[aapl_add()]);
        frames.push((T0 + seq as i64, udp([233, 54, 12, 111], 26477, &md)));
    }
    frames.push((T0 + 3, tcp(1, &order(1))));
    frames.push((T0 + 20, tcp(51, &order(2))));
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", "tcp:10.1.0.1:8003@ouch50", "--match", "symbol"];
    let r = analyze_frames("symbol-ticks-forgotten", &frames, &args);
    let c = &r["counters"];
    assert_eq!(counts(c, ["symbol_ticks_forgotten", "orders", "matched", "unmatched_orders"]), [6, 2, 1, 1], "{c}");
    let t2t = &r["metrics"][0];
    assert_eq!(
        (t2t["name"].as_str(), t2t["count"].as_u64(), t2t["max_ns"].as_i64()),
        (Some("tick_to_trade"), Some(1), Some(0))
    );
    let note = "the symbol rule keeps 16384 ticks of a symbol and about 2097152 of all symbols together, the most \
                there can be: 6 of the oldest ticks were forgotten";
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.iter().any(|n| n.starts_with(note)), "{notes:?}");
}

/// A clock that stands still (every frame at T0): orders waiting the 1 ms reorder allowance were
/// released by capture time only, so all were held (about 600 bytes each), and every tick of their
/// symbol recorded meanwhile was offered to each (300,000 frames took minutes). At most 1,024 of one
/// symbol wait: of 1,027 orders after one AAPL tick, the 3 oldest are matched when the 1,025th to
/// 1,027th come (frames 1,026 to 1,028, after the SYN, the tick and 1,024 orders), counted and noted.
#[test]
fn orders_waiting_under_a_frozen_clock_are_bounded() {
    let mut frames = vec![(T0, segment(true, 0, 0, 0x02, &[]))];
    frames.push((T0, udp([233, 54, 12, 111], 26477, &mold_packet(b"FROZEN0001", 1, &[aapl_add()]))));
    let mut seq = 1u32;
    for n in 1..=1_027 {
        frames.push((T0, tcp(seq, &order(n))));
        seq += 50;
    }
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", "tcp:10.1.0.1:8003@ouch50"];
    let r = analyze_frames("frozen-orders", &frames, &args);
    let c = &r["counters"];
    assert_eq!(counts(c, ["orders", "matched", "unmatched_orders"]), [1_027, 1_027, 0], "{c}");
    assert_eq!(counts(c, ["orders_released_for_room", "first_released_for_room_frame"]), [3, 1_026], "{c}");
    let note = "more orders or responses waited at once than the analysis keeps (the capture's clock stands still, \
                frames are packed closer than any link carries them, or, under the token rule, orders name ticks \
                of a feed not in the capture?): 3 orders stopped waiting (for the 1ms \
                reorder allowance, or a trigger not seen yet), the first at frame 1026 (such an order is matched \
                with what had come, or unmatched; a request is neither acked nor unacked; a response is \
                unmatched)";
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(notes.contains(&note), "{notes:?}");
    let dir = tmpdir("frozen-orders-text");
    let cap = dir.join("c.pcap");
    write_pcap(&cap, &frames);
    let text = support::analyze_text(&args, &cap);
    assert!(text.contains(&format!("note: {note}")), "{}", &text[text.len().saturating_sub(2_000)..]);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Traffic that looks like SoupBinTCP on ever-new ports (a Login Request to each): the first 256
/// sessions are detected, the frames of further ones counted and noted. Each TCP frame is looked up
/// among the sessions: 60,000 of them took 15 s for as many frames.
#[test]
fn sessions_detected_are_bounded() {
    let mut login = Vec::new();
    soup::packet(&mut login, b'L', &soup::login_request("user", "pass"));
    let frames: Vec<(i64, Vec<u8>)> = (0..300u16)
        .map(|i| {
            // To exchange port 2000 + i (the TCP destination port, after Ethernet and IPv4 headers).
            let mut f = segment(true, 1_000, 1, 0x18, &login);
            f[36..38].copy_from_slice(&(2_000 + i).to_be_bytes());
            (T0 + i64::from(i) * 1_000, f)
        })
        .collect();
    let r = analyze_frames("detected-sessions", &frames, &[]);
    assert_eq!(r["counters"]["sessions_not_detected_frames"], 44);
    assert_eq!(r["connections"].as_array().unwrap().len(), 256);
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(
        notes.contains(
            &"256 order sessions were detected, the most analysed from detection: 44 more frames that look like \
              SoupBinTCP went to other flows and were not analysed (give the sessions with --orders)"
        ),
        "{notes:?}"
    );
}

/// An order stream with capture loss: a lost segment is a hole; the stream resynchronises at the next
/// proven packet boundary (a segment's start, or a place in the bytes since the hole where packets of
/// their types' lengths follow), and counts the bytes it had to skip.
#[test]
fn tcp_holes_resynchronise_at_a_provable_boundary() {
    let dir = tmpdir("holes");
    let path = dir.join("holes.pcap");
    // Segments: [o1] [o2] [o3: lost] [o4's first 20 bytes] [o4's rest + o5] [o6] [o7's first 30 bytes:
    // lost] [o7's rest] [o8]. After the first hole, o4's first part is not a whole chain of packets; with
    // the next segment, o4 and o5 are two orders of their type's length to its end: a boundary, at o4's
    // start. After the second hole, o7's rest is skipped and o8 resynchronises.
    let o4 = order(4);
    let o7 = order(7);
    let mut seg5 = o4[20..].to_vec();
    seg5.extend_from_slice(&order(5));
    let segments: Vec<(Vec<u8>, bool)> = vec![
        (order(1), true),
        (order(2), true),
        (order(3), false),
        (o4[..20].to_vec(), true),
        (seg5, true),
        (order(6), true),
        (o7[..30].to_vec(), false),
        (o7[30..].to_vec(), true),
        (order(8), true),
    ];
    let mut frames = Vec::new();
    let mut seq = 5_000u32;
    let mut lost_bytes = 0u64;
    for (bytes, captured) in &segments {
        if *captured {
            frames.push(tcp(seq, bytes));
        } else {
            lost_bytes += bytes.len() as u64;
        }
        seq += bytes.len() as u32;
        // The exchange acknowledges every segment it received, the ones the capture missed included.
        frames.push(exchange_ack(seq));
    }
    // 2 ms apart: a range acknowledged with bytes after it captured is a hole once 1 ms has passed (a
    // host may record frames out of order by that much).
    let timed: Vec<(i64, Vec<u8>)> =
        frames.into_iter().enumerate().map(|(i, f)| (T0 + i as i64 * 2_000_000, f)).collect();
    write_pcap(&path, &timed);
    let r = analyze_json(&["--orders", "tcp:10.1.0.1:8003@ouch50"], &path);
    let s = &r["connections"][0]["to_exchange"];
    assert_eq!(s["tcp"]["holes"], 2);
    assert_eq!(s["tcp"]["hole_bytes"], lost_bytes);
    assert_eq!(s["resync_skipped_bytes"], (o7.len() - 30) as u64);
    // Orders 1, 2, 4, 5, 6 and 8 decoded; 3 and 7 lost in the holes.
    assert_eq!(s["ouch_messages"], 6);
    assert_eq!(r["counters"]["orders"], 6);
    // Frames: o1 0, ack 1, o2 2, ack 3, (o3 lost) ack 4, o4's first part 5, ack 6. The exchange's ACK
    // of o3 shows the range was sent; the bytes after it, captured, show the capture missed it: the hole
    // is given up 2 ms later, at frame 6, and is o4's first part's, which showed it.
    assert_eq!(s["first_bad_frame"], 5, "the segment after the ACKed range showed the first hole");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Sequence numbers at the top of the u64 range (garbage, or a hostile capture): no overflow panic,
/// the range saturates, and ticks older than the window are still swept out of arbitration. Found by
/// the `analyze` fuzz target (the range's end overflowed).
#[test]
fn sequences_at_the_top_of_the_range_do_not_overflow() {
    let dir = tmpdir("topseq");
    let path = dir.join("top.pcap");
    let msgs = vec![aapl_add(); 3];
    // Three messages from u64::MAX - 1 (the third one's sequence wraps to 0), on both feeds, then
    // again 2 s later, past the default 1 s window, so the ring is swept across the top.
    let frames: Vec<(i64, Vec<u8>)> = [0i64, 1_000, 2_000_000_000, 2_000_001_000]
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let (group, port) = if i % 2 == 0 { ([233, 54, 12, 111], 26477) } else { ([233, 54, 12, 112], 26478) };
            (T0 + t, udp(group, port, &mold_packet(b"TOPSESS001", u64::MAX - 1, &msgs)))
        })
        .collect();
    write_pcap(&path, &frames);
    let r = analyze_json(&[], &path);
    let feed = &r["feeds"][0];
    assert_eq!(feed["first_seq"].as_u64(), Some(u64::MAX - 1));
    assert_eq!(feed["last_seq"].as_u64(), Some(u64::MAX), "saturated, not wrapped");
    assert_eq!(r["counters"]["frames"], 4);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_sequence_jump_past_the_tick_index_is_counted_and_its_ticks_are_new() {
    let dir = tmpdir("seqjump");
    let path = dir.join("jump.pcap");
    let msgs = vec![aapl_add(); 2];
    // Feed A: sequences 1-2, then 5,000,001-5,000,002 (beyond the index's 4,194,304 sequences per
    // session), then 3-4 (now behind the restarted index); feed B repeats the jump's packet.
    let a = |seq| udp([233, 54, 12, 111], 26477, &mold_packet(b"JUMPSESS01", seq, &msgs));
    let b = |seq| udp([233, 54, 12, 112], 26478, &mold_packet(b"JUMPSESS01", seq, &msgs));
    let frames = vec![(T0, a(1)), (T0 + 1_000, a(5_000_001)), (T0 + 2_000, b(5_000_001)), (T0 + 3_000, a(3))];
    write_pcap(&path, &frames);
    let r = analyze_json(&[], &path);
    let c = &r["counters"];
    // Ticks: 1, 2, the jump's two (first on A), and 3 and 4, which fall behind the restarted index:
    // stale, not ticks. B's copies of the jump arbitrate against A's.
    assert_eq!(
        (c["tick_index_resets"].as_u64(), c["ticks"].as_u64(), c["tick_copies"].as_u64(), c["stale_copies"].as_u64()),
        (Some(1), Some(4), Some(2), Some(2))
    );
    let text = support::analyze_text(&[], &path);
    assert!(text.contains("sequence jumps past the tick index (restarted there): 1;"), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A pcapng whose interfaces' `if_tsoffset` puts their stamps beyond the i64 range (read as
/// saturated, with a warning): a tick at the range's end and the order it triggers at its start
/// (stamped before its trigger: a tick older than `--tick-retention` would be no match), and an
/// order at the end answered at the start, are analysed without overflow (the tests' build checks
/// it), each latency saturating instead of wrapping to the opposite sign.
#[test]
fn stamps_beyond_the_range_saturate_the_latencies() {
    let dir = tmpdir("tsrange");
    let path = dir.join("range.pcapng");
    let block = |kind: u32, body: &[u8]| {
        let len = (12 + body.len()) as u32;
        [&kind.to_le_bytes()[..], &len.to_le_bytes(), body, &len.to_le_bytes()].concat()
    };
    // Nanosecond interfaces shifted by ±9.3e9 s (i64 ns reach about ±9.22e9 s).
    let idb = |offset_s: i64| {
        let mut b = [&1u16.to_le_bytes()[..], &[0, 0], &65535u32.to_le_bytes()].concat();
        b.extend([9, 0, 1, 0, 9, 0, 0, 0]); // if_tsresol: 10^-9
        b.extend([14, 0, 8, 0]); // if_tsoffset
        b.extend(offset_s.to_le_bytes());
        b.extend([0; 4]);
        block(1, &b)
    };
    let epb = |iface: u32, data: &[u8]| {
        let mut b = [iface, 0, 1_000, data.len() as u32, data.len() as u32].map(u32::to_le_bytes).concat();
        b.extend(data);
        b.resize(b.len().next_multiple_of(4), 0);
        block(6, &b)
    };
    let shb = block(0x0A0D_0D0A, &[&0x1A2B_3C4Du32.to_le_bytes()[..], &[1, 0, 0, 0], &(-1i64).to_le_bytes()].concat());
    let (early, late) = (0, 1);
    let file = [
        shb,
        idb(-9_300_000_000),
        idb(9_300_000_000),
        epb(late, &udp([233, 54, 12, 111], 26477, &mold_packet(b"RANGESESS1", 1, &[aapl_add()]))),
        epb(early, &tcp(1, &order(1))),
        epb(early, &exchange_tcp(1, &accepted(1))),
        // No tick 2: the second order is only paired with its response, stamped at the range's start.
        epb(late, &tcp(51, &order(2))),
        epb(early, &exchange_tcp(1 + accepted(1).len() as u32, &accepted(2))),
    ]
    .concat();
    std::fs::write(&path, file).unwrap();
    let r = analyze_json(&["--match", r"token:T(\d+)"], &path);
    let metric = |name: &str| support::metric(&r, name).clone();
    let t2t = metric("tick_to_trade");
    assert_eq!((t2t["count"].as_u64(), t2t["min_ns"].as_i64()), (Some(1), Some(i64::MIN)));
    assert_eq!(r["counters"]["trigger_after_order"], 1);
    let o2a = metric("order_to_ack");
    assert_eq!((o2a["count"].as_u64(), o2a["min_ns"].as_i64()), (Some(2), Some(i64::MIN)));
    assert_eq!(r["counters"]["frames"], 5);
    assert_eq!((r["counters"]["matched"].as_u64(), r["counters"]["unmatched_orders"].as_u64()), (Some(1), Some(1)));
    // Under the symbol rule, no tick comes before the first order; the second shares the tick's
    // (saturated) time.
    let r = analyze_json(&[], &path);
    assert_eq!((r["counters"]["matched"].as_u64(), r["counters"]["unmatched_orders"].as_u64()), (Some(1), Some(1)));
    assert_eq!(support::metric(&r, "tick_to_trade")["max_ns"], 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The counters `keys` of a stream's report.
fn counts<const N: usize>(s: &serde_json::Value, keys: [&str; N]) -> [u64; N] {
    keys.map(|k| s[k].as_u64().unwrap())
}

/// The client's SYN (frame 0), then `segments` in order, 1 us apart.
fn after_syn(segments: &[Vec<u8>]) -> Vec<(i64, Vec<u8>)> {
    let mut frames = vec![(T0, segment(true, 0, 0, 0x02, &[]))];
    let mut seq = 1u32;
    for bytes in segments {
        frames.push((T0 + frames.len() as i64 * 1_000, tcp(seq, bytes)));
        seq += bytes.len() as u32;
    }
    frames
}

/// A SoupBinTCP length damaged in transit or by the capture loses its own packet, not the orders
/// after it. Each damaged packet below provably ends where its OUCH message (an Enter Order, 50 bytes
/// as a packet) ends: the bytes after it are whole packets, or its segment ends there.
/// - segment 0: orders 1, 2, 3, order 2's length raised to 1,024: 3 follows;
/// - segment 1: order 4 alone, its length raised to 8,192: segment 2 (order 5) starts a packet;
/// - segment 3: orders 6 and 7, order 6's length lowered to 20: 7 follows;
/// - segment 4: order 8 with an unknown packet type ('u'); segment 5 (order 9) starts a packet.
///
/// Orders 1, 3, 5, 7 and 9 are read; the four damaged packets (50 bytes each) are framing errors.
/// Before, order 2's length swallowed orders 3 to 9 (one order read).
#[test]
fn a_damaged_soupbintcp_length_loses_only_its_own_packet() {
    let with_len = |n: u32, len: u16| {
        let mut o = order(n);
        o[..2].copy_from_slice(&len.to_be_bytes());
        o
    };
    let mut bad_type = order(8);
    bad_type[2] = b'u';
    let segments = [
        [order(1), with_len(2, 1_024), order(3)].concat(),
        with_len(4, 8_192),
        order(5),
        [with_len(6, 20), order(7)].concat(),
        bad_type,
        order(9),
    ];
    let frames = after_syn(&segments);
    let r = analyze_frames("damaged-length", &frames, &["--orders", "tcp:10.1.0.1:8003@ouch50"]);
    let s = &r["connections"][0]["to_exchange"];
    let got = counts(
        s,
        ["ouch_messages", "ouch_malformed", "framing_errors", "resync_skipped_bytes", "truncated_tail_bytes"],
    );
    assert_eq!(got, [5, 0, 4, 200, 0], "{s}");
    assert_eq!(s["first_bad_frame"], 1);
    assert_eq!(r["counters"]["orders"], 5);
}

/// What the damaged-length check must not touch: a Debug packet of any length, split over segments;
/// an order split inside its fixed part, and one split right after it; an Unsequenced Data packet of
/// a type OUCH 5.0 does not know, longer than any OUCH message. All are framed by their lengths.
#[test]
fn long_and_split_packets_are_not_taken_for_damaged_ones() {
    let mut debug = Vec::new();
    soup::packet(&mut debug, b'+', &[b'd'; 3_000]);
    let mut unknown = Vec::new();
    soup::packet(&mut unknown, b'U', &[b'#'; 700]);
    let (o2, o3) = (order(2), order(3));
    let segments = [
        [order(1).as_slice(), &debug[..1_000]].concat(),
        debug[1_000..2_000].to_vec(),
        [&debug[2_000..], &o2[..20]].concat(),
        [&o2[20..], &o3[..49]].concat(),
        [&o3[49..], &unknown[..400]].concat(),
        [&unknown[400..], order(4).as_slice()].concat(),
    ];
    let frames = after_syn(&segments);
    let r = analyze_frames("long-split", &frames, &["--orders", "tcp:10.1.0.1:8003@ouch50"]);
    let s = &r["connections"][0]["to_exchange"];
    let got = counts(s, ["soup_packets", "ouch_messages", "ouch_unknown", "framing_errors", "resync_skipped_bytes"]);
    assert_eq!(got, [6, 4, 1, 0, 0], "{s}");
    assert_eq!(s["first_bad_frame"], serde_json::Value::Null);
}

/// A busy session: 120 orders in 1,448-byte segments (TCP cuts them anywhere), order k's length raised
/// to 1,024 or its type byte damaged, for every k of the first three segments' 87 (their ends fall at
/// every place in a packet); and in 300- and 20-byte segments (a slow link, tiny writes), for the first
/// 30. Each time only order k is lost: 119 read, one framing error, its 50 bytes skipped. Where the
/// proof of its end runs into later segments, the packet waits for them.
#[test]
fn in_a_busy_session_a_damaged_header_loses_only_its_own_packet() {
    let dir = tmpdir("busy-damage");
    let path = dir.join("busy.pcap");
    let runs = (1..=87u32).map(|k| (k, 1_448)).chain((1..=30).flat_map(|k| [(k, 300), (k, 20)]));
    for (k, size) in runs {
        for damage in ["length", "type"] {
            let stream: Vec<u8> = (1..=120)
                .flat_map(|n| {
                    let mut o = order(n);
                    if n == k {
                        match damage {
                            "length" => o[..2].copy_from_slice(&1_024u16.to_be_bytes()),
                            _ => o[2] = b'u',
                        }
                    }
                    o
                })
                .collect();
            let segments: Vec<Vec<u8>> = stream.chunks(size).map(<[u8]>::to_vec).collect();
            write_pcap(&path, &after_syn(&segments));
            let r = analyze_json(&["--orders", "tcp:10.1.0.1:8003@ouch50"], &path);
            let s = &r["connections"][0]["to_exchange"];
            let got =
                ["ouch_messages", "framing_errors", "resync_skipped_bytes", "ouch_malformed", "truncated_tail_bytes"]
                    .map(|k| s[k].as_u64().unwrap());
            assert_eq!(got, [119, 1, 50, 0, 0], "order {k}, {damage}, {size}-byte segments: {s}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What waits for more bytes is judged as at the end when none come, and bytes after a hole are searched
/// across segments. Orders of 50 bytes:
/// - order 5's type byte damaged, the capture ending 2 orders and 20 bytes after it: 6 orders read, one
///   framing error (its 50 bytes), the 20 bytes cut at the end;
/// - 40 orders in 20-byte segments, the 4th segment (stream bytes 60..80) missing: no segment after the
///   hole holds a whole order, but the bytes after it do: 39 read (all but order 2), 30 skipped (order
///   2's 10 bytes before the hole and 20 after).
#[test]
fn what_waits_is_judged_at_the_end_and_a_hole_resynchronises_across_segments() {
    let orders = |n: u32| (1..=n).flat_map(order).collect::<Vec<u8>>();
    let mut damaged = orders(8);
    damaged[4 * 50 + 2] = b'u';
    damaged.truncate(8 * 50 - 30);
    let frames = after_syn(&[damaged]);
    let r = analyze_frames("wait-at-end", &frames, &["--orders", "tcp:10.1.0.1:8003@ouch50"]);
    let s = &r["connections"][0]["to_exchange"];
    let got = counts(s, ["ouch_messages", "framing_errors", "resync_skipped_bytes", "truncated_tail_bytes"]);
    assert_eq!(got, [6, 1, 50, 20], "{s}");
    // 20-byte segments, the 4th (stream bytes 60..80) missing.
    let stream = orders(40);
    let mut frames = vec![(T0, segment(true, 0, 0, 0x02, &[]))];
    for (i, chunk) in stream.chunks(20).enumerate().filter(|(i, _)| *i != 3) {
        frames.push((T0 + (i as i64 + 1) * 1_000, tcp(1 + 20 * i as u32, chunk)));
    }
    let r = analyze_frames("hole-tiny", &frames, &["--orders", "tcp:10.1.0.1:8003@ouch50"]);
    let s = &r["connections"][0]["to_exchange"];
    let got = counts(s, ["ouch_messages", "framing_errors", "resync_skipped_bytes", "truncated_tail_bytes"]);
    assert_eq!(got, [39, 0, 30, 0], "{s}");
}
