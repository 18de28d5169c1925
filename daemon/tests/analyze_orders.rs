//! The order path on hand-built sessions: reassembly at the capture's edges, pairing requests with
//! responses, which actions are correlated. Each case's expected counts follow from how its frames
//! were built.

use wirestamp_lab::encode::{ouch, soup};

mod support;
use support::{
    MS, T0, aapl_tick, accepted, analyze_frames, conversation, count_min_max, dims, enter42, enter42_min, fates,
    metric, order, order_for, segment, soup_packet,
};

const ORDERS: &str = "tcp:10.1.0.1:8003";

/// Order 2 (client bytes 51..101) was not captured; order 3 waits behind it until the exchange's
/// ACK of 151 shows the range was sent. The frame carrying that ACK also carries the Accepted of all
/// three: order 3's is paired (the ACK releases it first), order 2's has no order.
#[test]
fn responses_in_the_frame_whose_ack_releases_their_orders_are_paired() {
    let responses = [accepted(1), accepted(2), accepted(3)].concat();
    let frames = vec![
        (T0, segment(true, 1, 1, 0x18, &order(1))),
        (T0 + 2 * MS, segment(true, 101, 1, 0x18, &order(3))),
        (T0 + 3 * MS, segment(false, 1, 151, 0x18, &responses)),
    ];
    let r = analyze_frames("released", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r), [2, 2, 0, 0, 1]);
    let o2a = metric(&r, "order_to_ack");
    assert_eq!(count_min_max(o2a), (Some(2), Some(MS), Some(3 * MS)));
}

/// A host that records order 2's segment after the exchange's ACK of it (and after order 3's), by
/// 200 us: the range is not a hole, the segment no retransmission, and order 2 is read and paired with
/// its Accepted, which came before it (order 2 vanished, a hole, and its Accepted was unmatched).
#[test]
fn an_order_recorded_after_its_ack_and_response_is_read_and_paired() {
    const US: i64 = 1_000;
    let responses = [accepted(1), accepted(2), accepted(3)].concat();
    let frames = vec![
        (T0, segment(true, 1, 1, 0x18, &order(1))),
        (T0 + 200 * US, segment(true, 101, 1, 0x18, &order(3))),
        (T0 + 300 * US, segment(false, 1, 151, 0x18, &responses)),
        (T0 + 100 * US, segment(true, 51, 1, 0x18, &order(2))),
        (T0 + 10 * MS, segment(false, 1 + responses.len() as u32, 151, 0x10, &[])),
    ];
    let r = analyze_frames("recorded-after-ack", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r), [3, 3, 0, 0, 0]);
    let tcp = &r["connections"][0]["to_exchange"]["tcp"];
    assert_eq!([&tcp["holes"], &tcp["retransmitted_segments"], &tcp["out_of_order_segments"]], [0, 0, 1]);
    let o2a = metric(&r, "order_to_ack");
    assert_eq!(count_min_max(o2a), (Some(3), Some(100 * US), Some(300 * US)));
}

/// Order 2's segment is recorded late and a later frame early, each by about half a millisecond (no
/// two consecutive frames a millisecond apart: no step back): the frame that ends the wait for the
/// acknowledged range comes 1.05 ms after the ACK, before the segment. The range waits 2 ms, so
/// order 2 is read and paired (with a 1 ms wait it was a hole).
#[test]
fn a_range_acknowledged_waits_for_a_segment_displaced_against_a_later_frame() {
    const US: i64 = 1_000;
    let responses = [accepted(1), accepted(2), accepted(3)].concat();
    let frames = vec![
        (T0, segment(true, 1, 1, 0x18, &order(1))),
        (T0 + 110 * US, segment(true, 101, 1, 0x18, &order(3))),
        (T0 + 150 * US, segment(false, 1, 151, 0x18, &responses)),
        (T0 + 600 * US, aapl_tick(1)),
        (T0 + 1_200 * US, aapl_tick(2)),
        (T0 + 700 * US, aapl_tick(3)),
        (T0 + 100 * US, segment(true, 51, 1, 0x18, &order(2))),
        (T0 + 10 * MS, aapl_tick(4)),
    ];
    let r = analyze_frames("displaced-both-ways", &frames, &["--md", "udp:233.54.12.111:26477", "--orders", ORDERS]);
    assert_eq!(r["counters"]["time_steps_back"], 0);
    assert_eq!(fates(&r), [3, 3, 0, 0, 0]);
    assert_eq!(r["connections"][0]["to_exchange"]["tcp"]["holes"], 0);
}

/// The exchange's ACK of each order captured 10 us before the order (the two directions on two taps
/// whose clocks differ by 20 us, merged; or frames recorded out of order): the ACK does not turn the
/// order's bytes into a hole before they come. Every order is read and paired with its Accepted
/// 10 us after it, nothing is a hole or a retransmission.
#[test]
fn an_ack_captured_before_the_bytes_it_acknowledges_loses_nothing() {
    const US: i64 = 1_000;
    let mut frames = Vec::new();
    let mut out_seq = 1;
    for n in 1..=3u32 {
        let t = T0 + i64::from(n) * MS;
        let end = 1 + 50 * n;
        let a = accepted(n);
        frames.push((t - 10 * US, segment(false, out_seq, end, 0x10, &[])));
        frames.push((t, segment(true, end - 50, 1, 0x18, &order(n))));
        frames.push((t + 10 * US, segment(false, out_seq, end, 0x18, &a)));
        out_seq += a.len() as u32;
    }
    let r = analyze_frames("ack-first", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r), [3, 3, 0, 0, 0]);
    let inbound = &r["connections"][0]["to_exchange"];
    let lost = ["holes", "hole_bytes", "retransmitted_segments"].map(|k| inbound["tcp"][k].as_u64());
    assert_eq!(lost, [Some(0), Some(0), Some(0)], "{inbound}");
    let o2a = metric(&r, "order_to_ack");
    assert_eq!(count_min_max(o2a), (Some(3), Some(10 * US), Some(10 * US)));
}

/// The answers to a Cancel, and the cancels nobody asked for (OUCH 5.0 §3.4, §3.9, §3.10): order 5's
/// Cancel is answered by Cancel Pending, and its Canceled comes later, unasked; order 6's Cancel by
/// Cancel Reject; order 7 (an IOC, say) is canceled by the exchange after its Accepted. Every
/// request is paired (Enter 1 ms, Cancel 1 or 2 ms), and the two unasked Canceled messages are
/// counted apart, not as unmatched responses.
#[test]
fn cancel_pending_and_reject_answer_a_cancel_and_unasked_cancels_are_no_pairing_failure() {
    let cancel = |n: u32| {
        let mut m = Vec::new();
        ouch::cancel_order(&mut m, n, 0);
        soup_packet(b'U', &m)
    };
    let answer = |ty: u8, n: u32| {
        let mut m = Vec::new();
        ouch::cancel_answer(&mut m, ty, 0, n);
        soup_packet(b'S', &m)
    };
    let canceled = |n: u32, reason: u8| {
        let mut m = Vec::new();
        ouch::canceled(&mut m, 0, n, 100, reason);
        soup_packet(b'S', &m)
    };
    // (ms, to the exchange, bytes)
    let script = [
        (0, true, order(5)),
        (1, false, accepted(5)),
        (2, true, cancel(5)),
        (3, false, answer(b'P', 5)),
        (4, false, canceled(5, b'U')),
        (5, true, order(6)),
        (6, false, accepted(6)),
        (7, true, cancel(6)),
        (9, false, answer(b'I', 6)),
        (10, true, order(7)),
        (11, false, accepted(7)),
        (12, false, canceled(7, b'I')),
    ];
    let r = analyze_frames("cancel-answers", &conversation(&script), &["--orders", ORDERS]);
    assert_eq!(fates(&r), [5, 5, 0, 0, 0]);
    assert_eq!(r["counters"]["unsolicited_cancels"], 2);
    let o2a = metric(&r, "order_to_ack");
    assert_eq!(count_min_max(o2a), (Some(5), Some(MS), Some(2 * MS)));
}

/// `--ack-timeout`: an Accepted 11 s after its order is past the default 10 s (the order unacknowledged,
/// the response late: neither paired nor unmatched), and paired with a 20 s timeout.
#[test]
fn the_ack_timeout_is_the_users() {
    const S: i64 = 1_000_000_000;
    let frames =
        vec![(T0, segment(true, 1, 1, 0x18, &order(1))), (T0 + 11 * S, segment(false, 1, 51, 0x18, &accepted(1)))];
    let r = analyze_frames("ack-timeout-default", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r), [1, 0, 1, 0, 0]);
    assert_eq!(r["counters"]["late_responses"], 1);
    let r = analyze_frames("ack-timeout-20s", &frames, &["--orders", ORDERS, "--ack-timeout", "20s"]);
    assert_eq!(fates(&r), [1, 1, 0, 0, 0]);
    assert_eq!(metric(&r, "order_to_ack")["max_ns"].as_i64(), Some(11 * S));
}

/// A capture that begins in the middle of the client's stream: its first segment holds the last 16
/// bytes of an order (which, read as SoupBinTCP, would frame what follows wrongly). Without a SYN the
/// start is not a proven packet boundary: those bytes are skipped, and the 20 whole orders after
/// them are all read.
#[test]
fn a_stream_first_seen_without_syn_starts_at_a_proven_packet_boundary() {
    let mut frames = vec![(T0, segment(true, 1_000, 1, 0x18, &order(0)[34..]))];
    for n in 1..=20u32 {
        frames.push((T0 + i64::from(n) * MS, segment(true, 1_016 + 50 * (n - 1), 1, 0x18, &order(n))));
    }
    let r = analyze_frames("midpacket", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r)[0], 20);
    let inbound = &r["connections"][0]["to_exchange"];
    assert_eq!((inbound["resync_skipped_bytes"].as_u64(), inbound["framing_errors"].as_u64()), (Some(16), Some(0)));
}

/// An OUCH 5.0 Cancel Order for UserRefNum 5 sent before the order's Accepted: the exchange answers
/// both in order, Accepted then Canceled, and each request is paired with its own response (the
/// Cancel was neither answered nor unanswered before).
#[test]
fn a_second_request_of_an_order_awaiting_its_response_is_paired_too() {
    let (mut cancel, mut canceled) = (Vec::new(), Vec::new());
    ouch::cancel_order(&mut cancel, 5, 0);
    ouch::canceled(&mut canceled, 0, 5, 100, b'U');
    let [cancel, canceled] = [(b'U', cancel), (b'S', canceled)].map(|(ty, m)| {
        let mut p = Vec::new();
        soup::packet(&mut p, ty, &m);
        p
    });
    let a5 = accepted(5);
    let frames = vec![
        (T0, segment(true, 1, 1, 0x18, &order(5))),
        (T0 + MS, segment(true, 51, 1, 0x18, &cancel)),
        (T0 + 3 * MS, segment(false, 1, 51 + cancel.len() as u32, 0x18, &a5)),
        (T0 + 5 * MS, segment(false, 1 + a5.len() as u32, 51 + cancel.len() as u32, 0x18, &canceled)),
    ];
    let r = analyze_frames("cancel", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r), [2, 2, 0, 0, 0]);
    let o2a = metric(&r, "order_to_ack");
    assert_eq!(count_min_max(o2a), (Some(2), Some(3 * MS), Some(4 * MS)));
}

/// A Cancel or Modify acts on an order already entered: an OUCH 4.2 Cancel repeats the order's
/// token, and read as a trade it would put a second sample (500 ms) into tick_to_trade; an OUCH 5.0
/// Cancel carries no ClOrdID, and read as a trade it would count as an order without a token.
/// Neither is correlated; both are counted, and paired with responses like any request.
#[test]
fn cancels_are_counted_but_not_correlated() {
    let md = support::mold_packet(b"SESSION001", 1, &[support::aapl_add()]);
    let tick = (T0, support::udp([233, 54, 12, 111], 26477, &md));
    let (enter, cancel) = (enter42(b"T0000000000001"), {
        let mut m = vec![b'X'];
        m.extend_from_slice(b"T0000000000001");
        m.extend_from_slice(&0u32.to_be_bytes());
        let mut p = Vec::new();
        soup::packet(&mut p, b'U', &m);
        p
    });
    let v42 = [
        tick.clone(),
        (T0 + 10_000, segment(true, 1, 1, 0x18, &enter)),
        (T0 + 500 * MS, segment(true, 1 + enter.len() as u32, 1, 0x18, &cancel)),
    ];
    let mut cancel5 = Vec::new();
    soup::packet(&mut cancel5, b'U', &{
        let mut m = Vec::new();
        ouch::cancel_order(&mut m, 1, 0);
        m
    });
    let v50 = [
        tick,
        (T0 + 10_000, segment(true, 1, 1, 0x18, &order(1))),
        (T0 + 500 * MS, segment(true, 51, 1, 0x18, &cancel5)),
    ];
    for (name, frames, proto) in [("cancel42", v42, "@ouch42"), ("cancel50", v50, "@ouch50")] {
        let orders = format!("{ORDERS}{proto}");
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", &orders, "--match", r"token:T(\d+)"];
        let r = analyze_frames(name, &frames, &args);
        let c = &r["counters"];
        let counts = ["orders", "matched", "unmatched_orders", "no_token", "not_correlated"].map(|k| c[k].as_u64());
        assert_eq!(counts, [2, 1, 0, 0, 1].map(Some), "{name}");
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!((t2t["count"].as_u64(), t2t["max_ns"].as_i64()), (Some(1), Some(10_000)), "{name}");
    }
}

/// A client reconnecting from the same port: a second SYN on the same addresses and ports opens a
/// new connection with its own sequence numbers, lower or higher than the first's. Its orders are
/// read from its own start (they were taken for retransmissions, or held behind a 2 GiB gap).
#[test]
fn a_new_connection_on_the_same_ports_starts_its_own_stream() {
    for (name, isn2) in [("lower", 5_000u32), ("higher", 3_000_000_000)] {
        let mut frames = vec![(T0, segment(true, 100_000, 0, 0x02, &[]))];
        for n in 1..=3u32 {
            frames.push((T0 + i64::from(n) * MS, segment(true, 100_001 + 50 * (n - 1), 1, 0x18, &order(n))));
        }
        frames.push((T0 + 10 * MS, segment(true, 100_151, 1, 0x11, &[])));
        frames.push((T0 + 20 * MS, segment(true, isn2, 0, 0x02, &[])));
        for n in 4..=6u32 {
            let seq = isn2.wrapping_add(1 + 50 * (n - 4));
            frames.push((T0 + 20 * MS + i64::from(n) * MS, segment(true, seq, 1, 0x18, &order(n))));
        }
        let r = analyze_frames(name, &frames, &["--orders", ORDERS]);
        assert_eq!(fates(&r), [6, 0, 0, 6, 0], "{name}");
        let inbound = &r["connections"][0]["to_exchange"];
        let tcp = ["retransmitted_segments", "holes"].map(|k| inbound["tcp"][k].as_u64());
        assert_eq!(tcp, [Some(0), Some(0)], "{name}: {inbound}");
    }
}

/// A connection reset by the client (RST), then a new one on the same ports whose SYN the capture
/// missed, its first sequence far behind or ahead of the old stream's (a new connection's is random
/// over 2^32): its orders are read as a new stream's (they were dropped as retransmissions, or put
/// after a hole of a billion bytes). Data near the stream after a reset is its own: continuing it,
/// or a retransmission of what the reset cut (which must not be read twice).
#[test]
fn after_a_reset_data_that_does_not_continue_the_stream_is_a_new_connections() {
    for (name, isn2) in [("behind", 100_000u32.wrapping_sub(1 << 30)), ("ahead", 1_000_100_000)] {
        let mut frames = vec![(T0, segment(true, 100_000, 0, 0x02, &[]))];
        for n in 1..=3u32 {
            frames.push((T0 + i64::from(n) * MS, segment(true, 100_001 + 50 * (n - 1), 1, 0x18, &order(n))));
        }
        frames.push((T0 + 10 * MS, segment(true, 100_151, 1, 0x14, &[])));
        for n in 4..=6u32 {
            let seq = isn2.wrapping_add(1 + 50 * (n - 4));
            frames.push((T0 + 20 * MS + i64::from(n) * MS, segment(true, seq, 1, 0x18, &order(n))));
        }
        let r = analyze_frames(name, &frames, &["--orders", ORDERS]);
        assert_eq!(fates(&r)[0], 6, "{name}");
        let inbound = &r["connections"][0]["to_exchange"];
        let tcp = ["retransmitted_segments", "holes"].map(|k| inbound["tcp"][k].as_u64());
        assert_eq!(tcp, [Some(0), Some(0)], "{name}: {inbound}");
    }
    // The same with the stream continuing after the reset: one stream, no restart.
    let mut frames = vec![(T0, segment(true, 100_000, 0, 0x02, &[]))];
    frames.push((T0 + MS, segment(true, 100_001, 1, 0x18, &order(1))));
    frames.push((T0 + 2 * MS, segment(false, 1, 100_051, 0x14, &[])));
    frames.push((T0 + 3 * MS, segment(true, 100_051, 1, 0x18, &order(2))));
    let r = analyze_frames("continues", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r)[0], 2);
    // The exchange resets after acknowledging order 1 only; the client retransmits order 2.
    let mut frames = vec![(T0, segment(true, 100_000, 0, 0x02, &[]))];
    frames.push((T0 + MS, segment(true, 100_001, 1, 0x18, &order(1))));
    frames.push((T0 + 2 * MS, segment(true, 100_051, 1, 0x18, &order(2))));
    frames.push((T0 + 3 * MS, segment(false, 1, 100_051, 0x14, &[])));
    frames.push((T0 + 4 * MS, segment(true, 100_051, 1, 0x18, &order(2))));
    let r = analyze_frames("retransmitted", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r)[0], 2);
    assert_eq!(r["connections"][0]["to_exchange"]["tcp"]["retransmitted_segments"], 1);
}

/// A damaged segment whose flags read SYN and FIN, with data, at a sequence far from the stream's is
/// not a new connection (taking it for one would throw away the orders after it as retransmissions).
#[test]
fn a_damaged_syn_with_data_does_not_restart_the_stream() {
    let mut frames = vec![(T0, segment(true, 100_000, 0, 0x02, &[]))];
    for n in 1..=6u32 {
        if n == 4 {
            frames.push((T0 + 4 * MS - 1, segment(true, 500_000, 1, 0x03, &[0x5a; 19])));
        }
        frames.push((T0 + i64::from(n) * MS, segment(true, 100_001 + 50 * (n - 1), 1, 0x18, &order(n))));
    }
    let r = analyze_frames("damaged-syn", &frames, &["--orders", ORDERS]);
    assert_eq!(fates(&r)[0], 6);
}

/// A session detected from the traffic whose first packet is a heartbeat: the OUCH version is read
/// from its first Enter Order (4.2 here), not assumed to be 5.0 (which read both orders' tokens as
/// one UserRefNum).
#[test]
fn a_detected_session_takes_its_version_from_its_first_enter_order() {
    let heartbeat = [0u8, 1, b'R'];
    let (p1, p2) = (enter42(b"T0000000000001"), enter42(b"T0000000000002"));
    let frames = [
        (T0, segment(true, 1, 1, 0x18, &heartbeat)),
        (T0 + MS, segment(true, 4, 1, 0x18, &p1)),
        (T0 + 2 * MS, segment(true, 4 + p1.len() as u32, 1, 0x18, &p2)),
    ];
    let r = analyze_frames("detect42", &frames, &[]);
    assert_eq!(r["connections"][0]["session"], "tcp:10.1.0.1:8003@ouch42");
    assert_eq!(fates(&r), [2, 0, 0, 2, 0]);
    assert_eq!(r["connections"][0]["to_exchange"]["ouch_messages"], 2);
}

/// An OUCH 4.2 Enter Order whose minimum quantity ends in 0x0002 has the length of a 5.0 one with a
/// 2-byte appendage (47 + 2 = 49). Its last two bytes are no TagValue (a length of 'N', 78 bytes,
/// runs past the message): the session is 4.2, and both tokens are read.
#[test]
fn a_42_order_with_the_length_of_a_50_one_is_read_as_42() {
    for min_qty in [2, 65_538] {
        let (p1, p2) = (enter42_min(b"T0000000000001", min_qty), enter42_min(b"T0000000000002", min_qty));
        let frames =
            [(T0, segment(true, 1, 1, 0x18, &p1)), (T0 + MS, segment(true, 1 + p1.len() as u32, 1, 0x18, &p2))];
        let r = analyze_frames("minqty42", &frames, &["--match", r"token:T(\d+)"]);
        assert_eq!(r["connections"][0]["session"], "tcp:10.1.0.1:8003@ouch42", "min_qty {min_qty}");
        assert_eq!(r["counters"]["no_token"], 0, "min_qty {min_qty}");
        assert_eq!(r["connections"][0]["to_exchange"]["ouch_messages"], 2, "min_qty {min_qty}");
    }
}

/// OUCH messages have a fixed length (plus an announced appendage): an OUCH 4.2 Cancel (19 bytes) on
/// a session declared 5.0 is no 5.0 Cancel (9 bytes) with extra bytes. It is malformed, with its
/// frame, not an order with a garbage UserRefNum.
#[test]
fn a_message_longer_than_its_type_is_malformed() {
    let mut x = vec![b'X'];
    x.extend_from_slice(b"T0000000000001");
    x.extend_from_slice(&0u32.to_be_bytes());
    let mut cancel42 = Vec::new();
    soup::packet(&mut cancel42, b'U', &x);
    let frames = [(T0, segment(true, 1, 1, 0x18, &order(1))), (T0 + MS, segment(true, 51, 1, 0x18, &cancel42))];
    let orders = format!("{ORDERS}@ouch50");
    let r = analyze_frames("long50", &frames, &["--orders", &orders]);
    let s = &r["connections"][0]["to_exchange"];
    assert_eq!((s["ouch_messages"].as_u64(), s["ouch_malformed"].as_u64()), (Some(1), Some(1)), "{s}");
    assert_eq!(s["first_bad_frame"], 1);
    assert_eq!((r["counters"]["orders"].as_u64(), r["counters"]["not_correlated"].as_u64()), (Some(1), Some(0)));
}

/// SoupBinTCP's Unsequenced Data goes both ways: an exchange's one seen first must not make the
/// exchange the client (which lost every order of the session). Its message is an outbound OUCH
/// Order Accepted; a packet whose message tells nothing waits for the next.
#[test]
fn unsequenced_data_from_the_exchange_does_not_make_it_the_client() {
    let mut from_exchange = Vec::new();
    soup::packet(&mut from_exchange, b'U', &{
        let mut m = Vec::new();
        ouch::accepted(&mut m, 0, &support::aapl_order(7), 7);
        m
    });
    let mut opaque = Vec::new();
    soup::packet(&mut opaque, b'U', b"hello from the exchange");
    for (name, first) in [("u-accepted", &from_exchange), ("u-opaque", &opaque)] {
        let frames = [(T0, segment(false, 5_000, 1, 0x18, first)), (T0 + MS, segment(true, 1, 5_001, 0x18, &order(1)))];
        let r = analyze_frames(name, &frames, &[]);
        assert_eq!(r["connections"][0]["session"], "tcp:10.1.0.1:8003@ouch50", "{name}");
        assert_eq!(r["counters"]["orders"], 1, "{name}");
    }
}

/// A session's dimension holds all its connections: a client reconnecting from another port, or
/// several client processes, are one session (the dimension was per connection, and a reconnect split
/// the session's figures in two, none of them the session's).
#[test]
fn a_session_dimension_holds_every_connection() {
    let md = support::mold_packet(b"SESSION001", 1, &[support::aapl_add()]);
    let tick = (T0, support::udp([233, 54, 12, 111], 26477, &md));
    // The second connection: the same segment from client port 40002 (bytes 34-35, the TCP source port
    // of an untagged IPv4 frame; checksums are not checked).
    let mut second = segment(true, 1, 1, 0x18, &order(2));
    second[34..36].copy_from_slice(&40_002u16.to_be_bytes());
    let frames = [tick, (T0 + 10_000, segment(true, 1, 1, 0x18, &order(1))), (T0 + 30_000, second)];
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", "symbol"];
    let r = analyze_frames("session-dim", &frames, &args);
    assert_eq!(r["connections"].as_array().unwrap().len(), 2);
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!(dims(t2t), [("feed:udp:233.54.12.111:26477", 2), ("session:tcp:10.1.0.1:8003@ouch50", 2)]);
    assert_eq!((t2t["min_ns"].as_i64(), t2t["max_ns"].as_i64()), (Some(10_000), Some(30_000)));
}

/// A pair whose tick has left the tick index (`--tick-retention 1ms`, a later packet 5 ms on sweeps it)
/// before the order matched it under the symbol rule (a 1 s window) names its frame (0, the capture's
/// first) as one whose tick is still held does: the symbol history keeps the frame with the tick.
#[test]
fn a_pair_whose_tick_left_the_index_names_its_frame() {
    let mut msft = Vec::new();
    wirestamp_lab::encode::itch::add_order(&mut msft, 2, 2, 7, b'B', 100, "MSFT", 1_000_000);
    let tick = |seq: u64, msg: &[u8]| {
        support::udp([233, 54, 12, 111], 26477, &support::mold_packet(b"SESSION001", seq, &[msg.to_vec()]))
    };
    let mut o = support::aapl_order(1);
    o.cl_ord_id = "T0000000000001".into();
    let mut m = Vec::new();
    ouch::enter_order(&mut m, &o);
    let mut p = Vec::new();
    soup::packet(&mut p, b'U', &m);
    let frames = vec![
        (T0, tick(1, &support::aapl_add())),
        (T0 + 5 * MS, tick(2, &msft)),
        (T0 + 6 * MS, segment(true, 1, 1, 0x18, &p)),
    ];
    let dir = support::tmpdir("pairs-tick-gone");
    let pairs = dir.join("pairs.csv");
    let run = |retention: &str| {
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", "symbol:1s", "--tick-retention"];
        let mut args = args.to_vec();
        args.extend([retention, "--pairs", pairs.to_str().unwrap()]);
        let r = analyze_frames("pairs-tick-gone-run", &frames, &args);
        assert_eq!(r["counters"]["matched"], 1);
        std::fs::read_to_string(&pairs).unwrap().lines().nth(1).unwrap().rsplit(',').next().unwrap().to_owned()
    };
    assert_eq!(run("1ms"), "0");
    assert_eq!(run("1s"), "0");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `--pairs` is CSV: a ClOrdID holding a comma or a quote (damaged traffic, or a firm's own
/// alphabet) is quoted, its quotes doubled (RFC 4180), and the file still reads as one row per pair.
#[test]
fn pairs_quote_what_would_break_the_csv() {
    let md = support::mold_packet(b"SESSION001", 1, &[support::aapl_add()]);
    let mut frames = vec![(T0, support::udp([233, 54, 12, 111], 26477, &md))];
    let mut seq = 1;
    for (n, id) in [(1, "T,00000000001\""), (2, "T0000000000002")] {
        let mut o = support::aapl_order(n);
        o.cl_ord_id = id.into();
        let mut m = Vec::new();
        ouch::enter_order(&mut m, &o);
        let mut p = Vec::new();
        soup::packet(&mut p, b'U', &m);
        frames.push((T0 + i64::from(n) * 1_000, segment(true, seq, 1, 0x18, &p)));
        seq += p.len() as u32;
    }
    let dir = support::tmpdir("pairs-csv-out");
    let pairs = dir.join("pairs.csv");
    let args = [
        "--md",
        "udp:233.54.12.111:26477",
        "--orders",
        ORDERS,
        "--match",
        "symbol",
        "--pairs",
        pairs.to_str().unwrap(),
    ];
    let r = analyze_frames("pairs-csv", &frames, &args);
    assert_eq!(r["counters"]["matched"], 2);
    let text = std::fs::read_to_string(&pairs).unwrap();
    let rows: Vec<&str> = text.lines().collect();
    assert_eq!(rows.len(), 3, "{text}");
    // The last column: the tick's frame, the capture's first (frame 0).
    assert_eq!(rows[1], format!("SESSION001,1,{T0},1,\"T,00000000001\"\"\",{},1,1,1000,0", T0 + 1_000));
    assert_eq!(rows[2], format!("SESSION001,1,{T0},2,T0000000000002,{},2,2,2000,0", T0 + 2_000));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The token rule when the orders' tap is ahead of the feed's (a clock offset between taps): a
/// trigger stamped after its order is a pair with a negative latency, which the table and
/// `negative` show (it was counted unmatched, and the skew hidden). An order processed before its
/// trigger (the feed's frames behind) is looked for again once `--tick-retention` old; one whose
/// trigger never comes, or comes later than that, is unmatched.
#[test]
fn a_trigger_stamped_after_its_order_is_a_negative_sample() {
    let md = |seq: u64| {
        support::udp([233, 54, 12, 111], 26477, &support::mold_packet(b"SESSION001", seq, &[support::aapl_add()]))
    };
    let us = 1_000;
    // In file order: order 1 (token seq 1) 5 µs before tick 1, which follows it in the file; tick 2,
    // then order 2 stamped 3 µs before it; order 3 for seq 9, never sent; order 4 for seq 3, which
    // comes 2 s later.
    let o = |n: u32, seq: u32| {
        let mut ord = support::aapl_order(n);
        ord.cl_ord_id = format!("T{:013}", seq);
        let mut m = Vec::new();
        ouch::enter_order(&mut m, &ord);
        let mut p = Vec::new();
        soup::packet(&mut p, b'U', &m);
        p
    };
    let orders = [o(1, 1), o(2, 2), o(3, 9), o(4, 3)];
    let at = |k: usize| 1 + orders[..k].iter().map(|p| p.len() as u32).sum::<u32>();
    let frames = [
        (T0 - 5 * us, segment(true, at(0), 1, 0x18, &orders[0])),
        (T0, md(1)),
        (T0 + 100 * us, md(2)),
        (T0 + 97 * us, segment(true, at(1), 1, 0x18, &orders[1])),
        (T0 + 200 * us, segment(true, at(2), 1, 0x18, &orders[2])),
        (T0 + 300 * us, segment(true, at(3), 1, 0x18, &orders[3])),
        (T0 + 2_000 * MS, md(3)),
    ];
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", r"token:T(\d+)"];
    let r = analyze_frames("after-order", &frames, &args);
    let c = &r["counters"];
    let counts = ["orders", "matched", "trigger_after_order", "unmatched_orders"].map(|k| c[k].as_u64());
    assert_eq!(counts, [4, 2, 2, 2].map(Some));
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!(
        (t2t["count"].as_u64(), t2t["min_ns"].as_i64(), t2t["max_ns"].as_i64(), t2t["negative"].as_u64()),
        (Some(2), Some(-5_000), Some(-3_000), Some(2))
    );
}

/// A host that records frames out of order (the order's frame written before its trigger's, both
/// stamped right): the parked order is looked for again soon, not only once `--tick-retention` old,
/// by when a packet of the feed had already let its trigger go (it was unmatched).
#[test]
fn a_parked_order_finds_its_trigger_before_the_window_lets_it_go() {
    let md = |seq: u64| {
        support::udp([233, 54, 12, 111], 26477, &support::mold_packet(b"SESSION001", seq, &[support::aapl_add()]))
    };
    let frames = [
        (T0 + 5_000, segment(true, 1, 1, 0x18, &order(1))),
        (T0, md(1)),
        (T0 + 40 * MS, md(2)),
        // Past the window of tick 1 (1 s), before the order is a window old: tick 1 leaves.
        (T0 + 1_000 * MS + 2_000, md(3)),
        (T0 + 1_100 * MS, md(4)),
    ];
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", r"token:T(\d+)"];
    let r = analyze_frames("parked-retry", &frames, &args);
    let c = &r["counters"];
    assert_eq!(["matched", "unmatched_orders", "trigger_after_order"].map(|k| c[k].as_u64()), [1, 0, 0].map(Some));
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!((t2t["count"].as_u64(), t2t["max_ns"].as_i64()), (Some(1), Some(5_000)));
}

/// Under the symbol rule, an order split over two segments 20 us apart, its symbol ticking every 5 us:
/// it is correlated when its last byte comes, by when four newer ticks of the symbol have come, but
/// its match is the newest tick before its first byte (2 us before), not none (the symbol's recent
/// ticks were four, and that one had left them).
#[test]
fn a_split_order_finds_its_trigger_however_many_ticks_come_before_its_last_byte() {
    const US: i64 = 1_000;
    let o = order_for(1, 3);
    let mut frames: Vec<(i64, Vec<u8>)> = (1..=13).map(|n| (T0 + (n as i64 - 1) * 5 * US, aapl_tick(n))).collect();
    // The connection's SYN: its first byte starts a packet.
    frames.push((T0 - MS, segment(true, 0, 0, 0x02, &[])));
    frames.push((T0 + 12 * US, segment(true, 1, 1, 0x18, &o[..20])));
    frames.push((T0 + 32 * US, segment(true, 21, 1, 0x18, &o[20..])));
    frames.sort_by_key(|f| f.0);
    for rule in ["symbol", r"token:T(\d+)"] {
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", rule];
        let r = analyze_frames("split-symbol", &frames, &args);
        let c = &r["counters"];
        assert_eq!(["orders", "matched", "unmatched_orders"].map(|k| c[k].as_u64()), [1, 1, 0].map(Some), "{rule}");
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!((t2t["count"].as_u64(), t2t["max_ns"].as_i64()), (Some(1), Some(2 * US)), "{rule}");
    }
}

/// A host that records frames out of order by less than a millisecond (the multi-queue reordering
/// `time_steps_back` does not count): the trigger of an order, stamped 5 us before it, is recorded
/// after it, once alone and once after four newer ticks of its symbol (which push it out of the
/// symbol's recent ticks). Under either rule the order is paired with it (the symbol rule paired
/// it with the older tick before it, 105 us before the order). Recorded 2 ms late, a step back of
/// the capture's clock that is counted, it is not waited for: the symbol rule pairs the older tick.
#[test]
fn a_trigger_recorded_after_its_order_is_found_within_a_millisecond() {
    const US: i64 = 1_000;
    // Ticks recorded after the order and before the trigger: (time after T0, seq).
    type Between = &'static [(i64, u64)];
    // (those ticks, how late the trigger is recorded, the latency expected under both rules)
    let cases: [(Between, i64, Option<i64>); 3] = [
        (&[], 300 * US, Some(5 * US)),
        (&[(110 * US, 3), (120 * US, 4), (130 * US, 5), (140 * US, 6)], 400 * US, Some(5 * US)),
        (&[(2_200 * US, 3)], 2_300 * US, None),
    ];
    for (between, late, expect) in cases {
        let mut frames = vec![
            (T0 - MS, segment(true, 0, 0, 0x02, &[])),
            (T0, aapl_tick(1)),
            (T0 + 105 * US, segment(true, 1, 1, 0x18, &order_for(1, 2))),
        ];
        frames.extend(between.iter().map(|&(at, seq)| (T0 + at, aapl_tick(seq))));
        // The trigger, stamped right, recorded `late` after it.
        frames.push((T0 + 100 * US, aapl_tick(2)));
        frames.push((T0 + late + 10 * MS, aapl_tick(7)));
        for rule in ["symbol", r"token:T(\d+)"] {
            let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", rule];
            let r = analyze_frames("reordered-trigger", &frames, &args);
            let c = &r["counters"];
            let steps = u64::from(late > MS);
            assert_eq!(c["time_steps_back"].as_u64(), Some(steps), "{rule} {late}");
            // Recorded out of time order: the trigger, after the order (5 us) or after the newest tick
            // before it (40 us, 2.1 ms).
            let by = between.last().map_or(5 * US, |&(at, _)| at - 100 * US);
            assert_eq!([&c["reordered_frames"], &c["largest_reorder_ns"]], [1, by], "{rule} {late}");
            let t2t = metric(&r, "tick_to_trade");
            match (expect, rule) {
                (Some(ns), _) => assert_eq!(count_min_max(t2t), (Some(1), Some(ns), Some(ns)), "{rule} {late}"),
                // Not waited for: the symbol rule's newest tick before the order is tick 1.
                (None, "symbol") => {
                    assert_eq!(count_min_max(t2t), (Some(1), Some(105 * US), Some(105 * US)), "{rule} {late}")
                }
                // The token rule names its trigger, and finds it in the arbiter's window.
                (None, _) => assert_eq!(count_min_max(t2t), (Some(1), Some(5 * US), Some(5 * US)), "{rule} {late}"),
            }
        }
    }
}

/// Feed B's copy of an order's trigger, stamped 10 us before A's, recorded after the order: the
/// tick's time is its earliest copy, and either rule, waiting, pairs the order with that (15 us, not
/// 5 us from A's copy, credited to A). A/B: B's copy 10 us ahead of A's, as when recorded in order.
#[test]
fn an_earlier_copy_recorded_after_the_order_times_its_trigger() {
    const US: i64 = 1_000;
    let tick_b =
        support::udp([233, 54, 12, 112], 26478, &support::mold_packet(b"SESSION001", 1, &[support::aapl_add()]));
    let frames = [
        (T0 - MS, segment(true, 0, 0, 0x02, &[])),
        (T0 + 100 * US, aapl_tick(1)),
        (T0 + 105 * US, segment(true, 1, 1, 0x18, &order_for(1, 1))),
        (T0 + 90 * US, tick_b),
        (T0 + 10 * MS, aapl_tick(2)),
    ];
    for rule in ["symbol", r"token:T(\d+)"] {
        let args =
            ["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478", "--orders", ORDERS, "--match", rule];
        let r = analyze_frames("earlier-copy-late", &frames, &args);
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!(count_min_max(t2t), (Some(1), Some(15 * US), Some(15 * US)), "{rule}");
        assert_eq!(r["counters"]["matched"].as_u64(), Some(1), "{rule}");
        // Credited to feed B, whose copy came first.
        let feeds: Vec<_> = dims(t2t).into_iter().filter(|d| d.0.starts_with("feed:")).collect();
        assert_eq!(feeds, [("feed:udp:233.54.12.112:26478", 1)], "{rule}");
        let ab = metric(&r, "feed_ab_delay");
        assert_eq!(count_min_max(ab), (Some(1), Some(10 * US), Some(10 * US)), "{rule}");
    }
}

/// An order waiting the symbol rule's reorder allowance when the capture's clock steps back 0.5 s:
/// what comes after the step is not waited for. The order is matched with tick 1, 105 us before it,
/// under either rule (ticks recorded after the step, stamped before the order, were taken for late
/// ones: 55 us from tick 4).
#[test]
fn after_a_step_back_of_the_clock_nothing_is_waited_for() {
    const US: i64 = 1_000;
    let frames = [
        (T0 - MS, segment(true, 0, 0, 0x02, &[])),
        (T0, aapl_tick(1)),
        (T0 + 105 * US, segment(true, 1, 1, 0x18, &order_for(1, 1))),
        (T0 - 499 * MS, aapl_tick(2)),
        (T0 - 200 * MS, aapl_tick(3)),
        (T0 + 50 * US, aapl_tick(4)),
        (T0 + 2 * MS, aapl_tick(5)),
    ];
    for rule in ["symbol", r"token:T(\d+)"] {
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", rule];
        let r = analyze_frames("step-back-parked", &frames, &args);
        assert_eq!(r["counters"]["time_steps_back"].as_u64(), Some(1), "{rule}");
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!(count_min_max(t2t), (Some(1), Some(105 * US), Some(105 * US)), "{rule}");
    }
}

/// Feed B's copy of tick 2, stamped 20 us before feed A's, recorded after an order; tick 1, between
/// the two copies' times, has no B copy. Tick 2's first copy is then B's, before tick 1: the newest
/// tick before the order is tick 1 (15 us), as with the same frames in time order (tick 2 at its new
/// time was kept as the match: 25 us).
#[test]
fn a_match_given_an_earlier_time_yields_to_a_newer_tick() {
    const US: i64 = 1_000;
    let tick_b =
        support::udp([233, 54, 12, 112], 26478, &support::mold_packet(b"SESSION001", 2, &[support::aapl_add()]));
    let reordered = vec![
        (T0 - MS, segment(true, 0, 0, 0x02, &[])),
        (T0 + 100 * US, aapl_tick(1)),
        (T0 + 110 * US, aapl_tick(2)),
        (T0 + 115 * US, segment(true, 1, 1, 0x18, &order_for(1, 1))),
        (T0 + 90 * US, tick_b),
        (T0 + 10 * MS, aapl_tick(3)),
    ];
    let mut sorted = reordered.clone();
    sorted.sort_by_key(|f| f.0);
    let args = ["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478", "--orders", ORDERS];
    for (name, frames) in [("reordered", &reordered), ("sorted", &sorted)] {
        let r = analyze_frames("retimed-match", frames, &args);
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!(count_min_max(t2t), (Some(1), Some(15 * US), Some(15 * US)), "{name}");
    }
}

/// Both feeds' copies of an order's trigger recorded after the order, which is recorded after the
/// next sequence on both feeds (both passed the trigger: a gap on each, which the late copies fill):
/// under either rule the order is paired with it, 5 us (the token rule counted it unmatched at once).
#[test]
fn a_trigger_both_feeds_record_late_is_waited_for() {
    const US: i64 = 1_000;
    let tick_b = |seq: u64| {
        support::udp([233, 54, 12, 112], 26478, &support::mold_packet(b"SESSION001", seq, &[support::aapl_add()]))
    };
    let frames = [
        (T0 - MS, segment(true, 0, 0, 0x02, &[])),
        (T0, aapl_tick(1)),
        (T0 + US, tick_b(1)),
        (T0 + 110 * US, aapl_tick(3)),
        (T0 + 111 * US, tick_b(3)),
        (T0 + 105 * US, segment(true, 1, 1, 0x18, &order_for(1, 2))),
        (T0 + 100 * US, aapl_tick(2)),
        (T0 + 101 * US, tick_b(2)),
        (T0 + 10 * MS, aapl_tick(4)),
    ];
    for rule in ["symbol", r"token:T(\d+)"] {
        let args =
            ["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478", "--orders", ORDERS, "--match", rule];
        let r = analyze_frames("both-feeds-late", &frames, &args);
        assert_eq!(r["counters"]["unmatched_orders"].as_u64(), Some(0), "{rule}");
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!(count_min_max(t2t), (Some(1), Some(5 * US), Some(5 * US)), "{rule}");
    }
}

/// An order recorded after six newer ticks of its symbol (a host reordering frames by 60 us): under
/// either rule it is paired with its trigger, 5 us before it (the symbol rule had let the trigger go
/// from the symbol's four recent ticks: unmatched).
#[test]
fn an_order_recorded_after_newer_ticks_of_its_symbol_finds_its_trigger() {
    const US: i64 = 1_000;
    let mut frames = vec![(T0 - MS, segment(true, 0, 0, 0x02, &[])), (T0 + 100 * US, aapl_tick(1))];
    frames.extend((2..=7u64).map(|n| (T0 + (100 + 10 * n as i64) * US, aapl_tick(n))));
    frames.push((T0 + 105 * US, segment(true, 1, 1, 0x18, &order_for(1, 1))));
    frames.push((T0 + 10 * MS, aapl_tick(8)));
    for rule in ["symbol", r"token:T(\d+)"] {
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", rule];
        let r = analyze_frames("order-recorded-late", &frames, &args);
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!(count_min_max(t2t), (Some(1), Some(5 * US), Some(5 * US)), "{rule}");
    }
}

/// The trigger's packet carries two messages of the order's symbol; feed A's copy is recorded
/// before the order, feed B's, stamped 20 us earlier, after it (both feeds' copies late in the
/// second case, B's first). The pair names the packet's newest message (sequence 2) and times it by
/// B's copy: 25 us.
#[test]
fn a_trigger_packet_of_two_messages_recorded_late_is_named_by_its_newest() {
    const US: i64 = 1_000;
    let two = |seq: u64| support::mold_packet(b"SESSION001", seq, &[support::aapl_add(), support::aapl_add()]);
    let a = support::udp([233, 54, 12, 111], 26477, &two(1));
    let b = support::udp([233, 54, 12, 112], 26478, &two(1));
    let order = (T0 + 115 * US, segment(true, 1, 1, 0x18, &order_for(1, 2)));
    let start = (T0 - MS, segment(true, 0, 0, 0x02, &[]));
    let end = (T0 + 10 * MS, aapl_tick(3));
    let cases = [
        vec![start.clone(), (T0 + 110 * US, a.clone()), order.clone(), (T0 + 90 * US, b.clone()), end.clone()],
        vec![start, order, (T0 + 90 * US, b), (T0 + 110 * US, a), end],
    ];
    let args = ["--md", "udp:233.54.12.111:26477", "--md", "udp:233.54.12.112:26478", "--orders", ORDERS];
    for (k, frames) in cases.iter().enumerate() {
        let dir = support::tmpdir("two-late");
        let cap = dir.join("f.pcap");
        support::write_pcap(&cap, frames);
        let pairs = dir.join("p.csv");
        let mut a = args.to_vec();
        let p = pairs.display().to_string();
        a.extend(["--pairs", &p]);
        let r = support::analyze_json(&a, &cap);
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!(count_min_max(t2t), (Some(1), Some(25 * US), Some(25 * US)), "case {k}");
        let text = std::fs::read_to_string(&pairs).unwrap();
        let row: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(row[1], "2", "case {k}: the packet's newest message names the tick: {text}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// A one-way tap (no ACKs) missed the segment of order 1; orders 2 to 5, 10 ms apart, wait behind
/// the hole, the feed ticking every millisecond, and no other segment comes. Each is correlated with
/// its trigger, 2 us before it, under either rule: the triggers were kept while the orders were held
/// (they had left the 1 s window by the end, and every order was unmatched). With the capture ending
/// 1.5 s later, the orders are read at its end; with 3 s of ticks, when the hole's gap timeout
/// (1 s) passes, by the feed's frames (they waited for a segment of their own stream, and the
/// triggers had gone by then: the symbol rule matched none). Either way the hole's frame is order 2's,
/// the segment that showed it missing (the SYN and 20 ticks before it: frame 21), not the last frame
/// nor the tick whose time ended the wait.
#[test]
fn orders_held_behind_a_hole_find_their_triggers() {
    for ms in [1_500, 3_000] {
        orders_held_behind_a_hole_with_the_feed_ticking_for(ms);
    }
}

fn orders_held_behind_a_hole_with_the_feed_ticking_for(ms: u64) {
    const US: i64 = 1_000;
    let mut frames: Vec<(i64, Vec<u8>)> = (1..=ms).map(|n| (T0 + n as i64 * MS, aapl_tick(n))).collect();
    // The connection's SYN: the stream starts at 1, where order 1's bytes go missing.
    frames.push((T0, segment(true, 0, 0, 0x02, &[])));
    let mut seq = 1u32;
    let mut after_hole = Vec::new();
    for k in 1..=5u64 {
        let o = order_for(k as u32, 10 * k);
        if k > 1 {
            let s = segment(true, seq, 1, 0x18, &o);
            if k == 2 {
                after_hole = s.clone();
            }
            frames.push((T0 + 10 * k as i64 * MS + 2 * US, s));
        }
        seq += o.len() as u32;
    }
    frames.sort_by_key(|f| f.0);
    let shown = frames.iter().position(|f| f.1 == after_hole).unwrap();
    assert_eq!(shown, 21);
    for rule in ["symbol", r"token:T(\d+)"] {
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", rule];
        let r = analyze_frames("held", &frames, &args);
        let c = &r["counters"];
        assert_eq!(
            ["orders", "matched", "unmatched_orders"].map(|k| c[k].as_u64()),
            [4, 4, 0].map(Some),
            "{rule} {ms}"
        );
        let t2t = metric(&r, "tick_to_trade");
        assert_eq!(count_min_max(t2t), (Some(4), Some(2 * US), Some(2 * US)), "{rule} {ms}");
        assert_eq!(r["connections"][0]["to_exchange"]["tcp"]["holes"], 1, "{rule} {ms}");
        assert_eq!(r["connections"][0]["to_exchange"]["first_bad_frame"], shown, "{rule} {ms}");
    }
}

/// Order 2 (client bytes 51..101) was not captured, nor anything after it; the exchange acknowledged
/// it twice (frames 2 and 3). The range is a hole at the end, or, with the feed ticking on for 1.5 s,
/// when the gap timeout passes at a tick: either way the frame that showed it missing is the first
/// ACK of it, frame 2 (tshark's "ACKed segment that wasn't captured"). A note says that orders may
/// have been lost in it: the matching counts (1 order) cover only those read, and order 2's Accepted
/// is unmatched.
#[test]
fn a_hole_with_nothing_captured_after_it_is_the_first_ack_of_it() {
    for ticks in [0, 15] {
        let mut frames = vec![
            (T0, segment(true, 1, 1, 0x18, &order(1))),
            (T0 + MS, segment(false, 1, 51, 0x18, &accepted(1))),
            (T0 + 2 * MS, segment(false, 1 + accepted(1).len() as u32, 101, 0x18, &accepted(2))),
            (T0 + 3 * MS, segment(false, 1 + 2 * accepted(1).len() as u32, 101, 0x10, &[])),
        ];
        frames.extend((1..=ticks).map(|n| (T0 + n as i64 * 100 * MS, aapl_tick(n))));
        let feed = ["--md", "udp:233.54.12.111:26477"];
        let args = [if ticks > 0 { &feed[..] } else { &[] }, &["--orders", ORDERS]].concat();
        let r = analyze_frames("acked-hole", &frames, &args);
        let s = &r["connections"][0]["to_exchange"];
        assert_eq!((s["tcp"]["holes"].as_u64(), s["tcp"]["hole_bytes"].as_u64()), (Some(1), Some(50)), "{ticks}");
        assert_eq!(s["first_bad_frame"], 2, "{ticks}");
        assert_eq!(fates(&r), [1, 1, 0, 0, 1], "{ticks}");
        assert_eq!(
            r["notes"],
            serde_json::json!([
                "orders may have been lost in 1 hole (50 bytes) of the order streams (to the exchange): the \
                 matching counts cover only the orders read, and a response to a lost order is unmatched"
            ]),
            "{ticks}"
        );
    }
}

/// Orders 1 to 3 captured, the exchange's Accepted of order 2 not (its Accepted of 3 after it): the
/// response stream's hole is noted, and order 2 awaits a response at the capture's end.
#[test]
fn a_hole_in_the_responses_is_noted() {
    let a = accepted(1).len() as u32;
    let frames = vec![
        (T0, segment(true, 1, 1, 0x18, &order(1))),
        (T0 + MS, segment(true, 51, 1, 0x18, &order(2))),
        (T0 + 2 * MS, segment(true, 101, 1, 0x18, &order(3))),
        (T0 + 3 * MS, segment(false, 1, 151, 0x18, &accepted(1))),
        (T0 + 5 * MS, segment(false, 1 + 2 * a, 151, 0x18, &accepted(3))),
    ];
    let r = analyze_frames("response-hole", &frames, &["--orders", ORDERS]);
    assert_eq!(r["connections"][0]["from_exchange"]["tcp"]["hole_bytes"], a);
    assert_eq!(fates(&r), [3, 2, 0, 1, 0]);
    let note = format!(
        "responses may have been lost in 1 hole ({a} bytes) of the response streams (from the exchange): an \
         order whose response was lost shows as unacknowledged, or awaiting a response at the capture's end"
    );
    assert_eq!(r["notes"], serde_json::json!([note]));
}

/// A Replace carries no symbol: it keeps its order's (OUCH 5.0 §2.2). Under the symbol rule, order 1
/// (AAPL) and its Replace by order 2, then order 2's Replace by order 3, each 3 us after an AAPL tick,
/// are all matched, and `--by symbol` counts the three under AAPL (the Replaces were unmatched, and
/// left out of the symbol's row).
#[test]
fn a_replace_is_matched_by_its_orders_symbol() {
    const US: i64 = 1_000;
    let replace = |orig: u32, n: u32| {
        let mut m = Vec::new();
        ouch::replace_order(&mut m, orig, &support::aapl_order(n));
        soup_packet(b'U', &m)
    };
    let requests = [order(1), replace(1, 2), replace(2, 3)];
    let mut frames = vec![(T0 - MS, segment(true, 0, 0, 0x02, &[]))];
    let mut seq = 1u32;
    for (k, r) in requests.iter().enumerate() {
        let t = T0 + k as i64 * MS;
        frames.push((t, aapl_tick(k as u64 + 1)));
        frames.push((t + 3 * US, segment(true, seq, 1, 0x18, r)));
        seq += r.len() as u32;
    }
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--by", "symbol"];
    let r = analyze_frames("replace-symbol", &frames, &args);
    let c = &r["counters"];
    assert_eq!(["orders", "matched", "unmatched_orders"].map(|k| c[k].as_u64()), [3, 3, 0].map(Some));
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!((t2t["min_ns"].as_i64(), t2t["max_ns"].as_i64()), (Some(3 * US), Some(3 * US)));
    assert!(dims(t2t).contains(&("symbol:AAPL", 3)), "{:?}", dims(t2t));
}

/// An invalid Replace is answered by a Canceled of the order it would replace (OUCH 5.0 §2.2, case 2):
/// order 1 is accepted after 1 ms; its Replace by order 2, 2 ms in, is answered 3 ms later by order
/// 1's Canceled. Both requests are answered (the Replace was unacknowledged, and the Canceled
/// unmatched).
#[test]
fn an_invalid_replace_is_answered_by_its_orders_canceled() {
    let (mut replace, mut canceled) = (Vec::new(), Vec::new());
    ouch::replace_order(&mut replace, 1, &support::aapl_order(2));
    ouch::canceled(&mut canceled, 0, 1, 100, b'U');
    let script = [
        (0, true, order(1)),
        (1, false, accepted(1)),
        (2, true, soup_packet(b'U', &replace)),
        (5, false, soup_packet(b'S', &canceled)),
    ];
    let r = analyze_frames("replace-invalid", &conversation(&script), &["--orders", ORDERS]);
    assert_eq!(fates(&r), [2, 2, 0, 0, 0]);
    assert_eq!(r["counters"]["unsolicited_cancels"], 0);
    let o2a = metric(&r, "order_to_ack");
    assert_eq!(count_min_max(o2a), (Some(2), Some(MS), Some(3 * MS)));
}

/// An OUCH 5.0 Replace Order Request packet: order `orig` replaced by order `n` (ClOrdID `T` + `n`).
fn replace(orig: u32, n: u32) -> Vec<u8> {
    let mut m = Vec::new();
    ouch::replace_order(&mut m, orig, &support::aapl_order(n));
    soup_packet(b'U', &m)
}

/// OUCH 5.0 responses built from the spec's layouts (§3.3, §3.4, §3.6, §3.8), in Sequenced Data
/// packets: Replaced (68 bytes: order `orig` replaced by `n`, `qty` outstanding, order state `state`),
/// Canceled, Executed (36) and Rejected (29) of `qty` shares of order `n`.
fn replaced(orig: u32, n: u32, qty: u32, state: u8) -> Vec<u8> {
    let mut m = vec![b'U'];
    m.extend(0u64.to_be_bytes());
    m.extend(orig.to_be_bytes());
    m.extend(n.to_be_bytes());
    m.push(b'B');
    m.extend(qty.to_be_bytes());
    m.extend(b"AAPL    ");
    m.extend(1_000_000u64.to_be_bytes());
    m.extend(b"0Y");
    m.extend(u64::from(n).to_be_bytes()); // order reference number
    m.extend([b'P', b'N', b'N', state]);
    m.extend(format!("T{n:013}").as_bytes());
    m.extend(0u16.to_be_bytes());
    assert_eq!(m.len(), 68);
    soup_packet(b'S', &m)
}

fn canceled(n: u32, qty: u32) -> Vec<u8> {
    let mut m = Vec::new();
    ouch::canceled(&mut m, 0, n, qty, b'U');
    soup_packet(b'S', &m)
}

fn executed(n: u32, qty: u32) -> Vec<u8> {
    let mut m = vec![b'E'];
    m.extend(0u64.to_be_bytes());
    m.extend(n.to_be_bytes());
    m.extend(qty.to_be_bytes());
    m.extend(1_000_000u64.to_be_bytes());
    m.push(b'A'); // liquidity flag: added
    m.extend(7u64.to_be_bytes()); // match number
    m.extend(0u16.to_be_bytes());
    assert_eq!(m.len(), 36);
    soup_packet(b'S', &m)
}

fn rejected(n: u32) -> Vec<u8> {
    let mut m = vec![b'J'];
    m.extend(0u64.to_be_bytes());
    m.extend(n.to_be_bytes());
    m.extend(1u16.to_be_bytes()); // reason
    m.extend(format!("T{n:013}").as_bytes());
    assert_eq!(m.len(), 29);
    soup_packet(b'S', &m)
}

/// An order session from a script of (ms after T0, to the exchange, bytes), each order preceded by
/// 3 us by an AAPL tick whose sequence its ClOrdID names (`ticks`: (ms, sequence)), in time order.
fn with_ticks(script: &[(i64, bool, Vec<u8>)], ticks: &[(i64, u64)]) -> Vec<(i64, Vec<u8>)> {
    let mut frames = conversation(script);
    frames.extend(ticks.iter().map(|&(ms, seq)| (T0 + ms * MS - 3_000, aapl_tick(seq))));
    frames.sort_by_key(|f| f.0);
    frames
}

/// A Replace of an order that ended (OUCH 5.0 §2.2, case 1: the exchange ignores it) has no symbol:
/// order 1 (100 AAPL) is entered 3 us after tick 1, answered, and replaced by order 2 10 ms in, 3 us
/// after tick 2. Canceled in part (40 shares), order 1 lives: the Replace takes its symbol and both
/// are matched. Canceled whole, executed whole (60 then 40), accepted dead, or rejected, it ended:
/// the Replace is unmatched under the symbol rule; under the token rule it is matched, in the
/// `symbol:(unknown)` row of `--by symbol` (README, `--match`).
#[test]
fn a_replace_of_an_order_that_ended_has_no_symbol() {
    let mut dead = accepted(1);
    // The Order State of the Accepted (offset 47, after the 3 bytes of the SoupBinTCP header).
    assert_eq!(dead[50], b'L');
    dead[50] = b'D';
    let cases = [
        ("canceled-in-part", vec![accepted(1), canceled(1, 40)], true),
        ("canceled", vec![accepted(1), canceled(1, 100)], false),
        ("executed", vec![accepted(1), executed(1, 60), executed(1, 40)], false),
        ("dead", vec![dead], false),
        ("rejected", vec![rejected(1)], false),
    ];
    for (name, responses, lives) in cases {
        let mut script = vec![(0, true, order(1))];
        script.extend(responses.into_iter().enumerate().map(|(k, r)| (k as i64 + 1, false, r)));
        script.push((10, true, replace(1, 2)));
        let frames = with_ticks(&script, &[(0, 1), (10, 2)]);
        let md = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--by", "symbol"];
        let r = analyze_frames(&format!("replace-ended-{name}"), &frames, &md);
        assert_eq!(r["connections"][0]["from_exchange"]["ouch_malformed"], 0, "{name}");
        let c = &r["counters"];
        let matched = if lives { 2 } else { 1 };
        let got = ["orders", "matched", "unmatched_orders"].map(|k| c[k].as_u64().unwrap());
        assert_eq!(got, [2, matched, 2 - matched], "{name}");
        assert!(dims(metric(&r, "tick_to_trade")).contains(&("symbol:AAPL", matched)), "{name}");
        let token = [&md[..], &["--match", r"token:T(\d+)"]].concat();
        let r = analyze_frames(&format!("replace-ended-token-{name}"), &frames, &token);
        assert_eq!(r["counters"]["matched"], 2, "{name}");
        let rows: Vec<(&str, u64)> =
            dims(metric(&r, "tick_to_trade")).into_iter().filter(|d| d.0.starts_with("symbol:")).collect();
        let want = if lives { vec![("symbol:AAPL", 2)] } else { vec![("symbol:(unknown)", 1), ("symbol:AAPL", 1)] };
        assert_eq!(rows, want, "{name}");
    }
}

/// A Replace chain with its answers: order 1 (100 AAPL) accepted, replaced by 2 (100 outstanding),
/// 2 executed 30 and replaced by 3 (70 outstanding): each Replace finds the symbol, though the
/// orders it came through were replaced. Order 3, executed 70, has ended: its Replace by order 4 is
/// unmatched. Each request 3 us after its tick; the Enter and the two Replaces answered are acked,
/// the last Replace awaits its answer at the end.
#[test]
fn a_replace_chain_keeps_its_symbol_until_its_order_ends() {
    let script = [
        (0, true, order(1)),
        (1, false, accepted(1)),
        (2, true, replace(1, 2)),
        (3, false, replaced(1, 2, 100, b'L')),
        (4, false, executed(2, 30)),
        (5, true, replace(2, 3)),
        (6, false, replaced(2, 3, 70, b'L')),
        (7, false, executed(3, 70)),
        (8, true, replace(3, 4)),
    ];
    let frames = with_ticks(&script, &[(0, 1), (2, 2), (5, 3), (8, 4)]);
    let md = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--by", "symbol"];
    let r = analyze_frames("replace-chain-answered", &frames, &md);
    assert_eq!(r["connections"][0]["from_exchange"]["ouch_malformed"], 0);
    let c = &r["counters"];
    assert_eq!(["orders", "matched", "unmatched_orders"].map(|k| c[k].as_u64().unwrap()), [4, 3, 1]);
    assert_eq!(fates(&r), [4, 3, 0, 1, 0]);
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!(count_min_max(t2t), (Some(3), Some(3_000), Some(3_000)));
    assert!(dims(t2t).contains(&("symbol:AAPL", 3)), "{:?}", dims(t2t));
}

/// A busy session whose writes TCP cut anywhere: no segment holds whole packets only. The capture
/// starts 20 bytes into order 1 (no SYN) and ends 30 bytes into order 61; the segments cover stream
/// bytes 20..500, 500..1230, 1230..1960, 1960..2690 and 2690..3030 (orders are 50 bytes: only 500
/// starts a packet, and its segment holds 14 whole ones, then 30 bytes of the 15th).
/// - Given: the stream starts at 50, inside the first segment, where orders of their type's length
///   follow to its end: orders 2 to 60 are read, 30 bytes skipped, order 61's 30 cut at the end.
/// - Detected from the traffic, at the segment that begins with whole packets (500), the segments
///   before it held meanwhile: the same.
///
/// Before, neither found a boundary: every byte was skipped, and no session was detected.
#[test]
fn a_session_whose_segments_all_end_inside_a_packet_is_read() {
    let stream: Vec<u8> = (1..=61).flat_map(order).collect();
    let cuts = [20, 500, 1230, 1960, 2690, 3030];
    let frames: Vec<(i64, Vec<u8>)> = cuts
        .windows(2)
        .enumerate()
        .map(|(i, w)| (T0 + i as i64 * MS, segment(true, 1_000 + w[0] as u32, 1, 0x18, &stream[w[0]..w[1]])))
        .collect();
    for (name, args) in [("straddled-given", &["--orders", ORDERS][..]), ("straddled-detected", &[][..])] {
        let r = analyze_frames(name, &frames, args);
        let s = &r["connections"][0]["to_exchange"];
        let got = ["ouch_messages", "resync_skipped_bytes", "truncated_tail_bytes", "framing_errors"]
            .map(|k| s[k].as_u64().unwrap());
        // Detected, the segments before the one that proved a boundary are read too (they were the
        // session's from then on only: 50 orders).
        assert_eq!(got, [59, 30, 30, 0], "{name}: {s}");
        assert_eq!(r["counters"]["orders"], 59, "{name}");
    }
}

/// A client that reconnects: connection 1 (port 40001) logs in as TRADR1 and enters order 1 (AAPL);
/// connection 2 (port 40002) logs in as TRADR1 again and replaces order 1 by order 2. Under the
/// symbol rule the Replace takes order 1's symbol: both matched, 3 us after their AAPL ticks. Had
/// connection 2 logged in as another user, order 1 would not be its own: the Replace is unmatched,
/// and under the token rule matched in a `symbol:(unknown)` row.
#[test]
fn a_client_that_reconnects_replaces_its_earlier_connections_orders() {
    const US: i64 = 1_000;
    let from = |port: u16, seq: u32, flags: u8, payload: &[u8]| {
        let mut f = Vec::new();
        wirestamp_lab::packet::ethernet(&mut f, [2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], None);
        let h = wirestamp_lab::packet::TcpHdr { sport: port, dport: 8003, seq, ack: 1, flags };
        wirestamp_lab::packet::ipv4_tcp(&mut f, [10, 1, 0, 2], [10, 1, 0, 1], h, 1, payload);
        wirestamp_lab::packet::pad_min(&mut f);
        f
    };
    let mut replace = Vec::new();
    ouch::replace_order(&mut replace, 1, &support::aapl_order(2));
    let replace = soup_packet(b'U', &replace);
    for (second_user, matched) in [("TRADR1", 2), ("OTHER1", 1)] {
        let login = |user: &str| soup_packet(b'L', &soup::login_request(user, "pw"));
        let (login1, login2) = (login("TRADR1"), login(second_user));
        let frames = vec![
            (T0 - 2 * MS, from(40001, 0, 0x02, &[])),
            (T0 - MS, from(40001, 1, 0x18, &login1)),
            (T0, aapl_tick(1)),
            (T0 + 3 * US, from(40001, 1 + login1.len() as u32, 0x18, &order(1))),
            (T0 + MS, from(40002, 500, 0x02, &[])),
            (T0 + 2 * MS, from(40002, 501, 0x18, &login2)),
            (T0 + 3 * MS, aapl_tick(2)),
            (T0 + 3 * MS + 3 * US, from(40002, 501 + login2.len() as u32, 0x18, &replace)),
        ];
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--by", "symbol"];
        let r = analyze_frames(&format!("reconnect-{second_user}"), &frames, &args);
        let c = &r["counters"];
        let got = ["orders", "matched", "unmatched_orders"].map(|k| c[k].as_u64().unwrap());
        assert_eq!(got, [2, matched, 2 - matched], "{second_user}");
        assert!(dims(metric(&r, "tick_to_trade")).contains(&("symbol:AAPL", matched)), "{second_user}");
        // Under the token rule both are matched; a Replace whose order's symbol is not known has a
        // row of its own, so that the rows add up.
        let token =
            ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--by", "symbol", "--match", r"token:T(\d+)"];
        let r = analyze_frames(&format!("reconnect-token-{second_user}"), &frames, &token);
        assert_eq!(r["counters"]["matched"], 2);
        let rows: Vec<(&str, u64)> =
            dims(metric(&r, "tick_to_trade")).into_iter().filter(|d| d.0.starts_with("symbol:")).collect();
        let want: Vec<(&str, u64)> =
            if matched == 2 { vec![("symbol:AAPL", 2)] } else { vec![("symbol:(unknown)", 1), ("symbol:AAPL", 1)] };
        assert_eq!(rows, want, "{second_user}");
    }
}

/// `--by symbol` gives 1,024 symbols a row each; orders of further symbols share `symbol:(others)`,
/// said in a note (each row is a histogram: a day of every listed symbol took gigabytes). 1,026 orders
/// of 1,026 symbols, each matched by its token: 1,024 rows of 1, and 2 in the shared row.
#[test]
fn symbol_rows_stop_at_1024_and_the_rest_share_one() {
    let mut frames = vec![(T0 - MS, segment(true, 0, 0, 0x02, &[]))];
    let mut seq = 1u32;
    for n in 1..=1_026u32 {
        let t = T0 + i64::from(n) * MS;
        frames.push((t, aapl_tick(u64::from(n))));
        let mut o = support::aapl_order(n);
        o.symbol = format!("S{n}");
        let mut m = Vec::new();
        ouch::enter_order(&mut m, &o);
        let p = soup_packet(b'U', &m);
        frames.push((t + 1_000, segment(true, seq, 1, 0x18, &p)));
        seq += p.len() as u32;
    }
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--by", "symbol", "--match", r"token:T(\d+)"];
    let r = analyze_frames("symbol-rows", &frames, &args);
    assert_eq!(r["counters"]["matched"], 1_026);
    let rows: Vec<(&str, u64)> =
        dims(metric(&r, "tick_to_trade")).into_iter().filter(|d| d.0.starts_with("symbol:")).collect();
    assert_eq!(rows.len(), 1_025);
    assert!(rows.contains(&("symbol:(others)", 2)) && rows.contains(&("symbol:S1024", 1)));
    assert_eq!(rows.iter().map(|r| r.1).sum::<u64>(), 1_026);
    let notes: Vec<&str> = r["notes"].as_array().unwrap().iter().map(|n| n.as_str().unwrap()).collect();
    assert!(
        notes
            .contains(&"--by symbol: 1024 symbols have a row each; 2 orders of further symbols are in symbol:(others)"),
        "{notes:?}"
    );
}

/// A session detected from the exchange's heartbeats, its version unknown, whose client stream the
/// capture begins 7 bytes into order 1, cut anywhere at first (stream bytes 7..70, 70..130, 130..200),
/// then one order per segment (orders 5 to 10). A boundary is proven by either version's lengths and
/// across segments: orders 2 to 10 are read, order 1's 43 bytes skipped. Before, with the version
/// unknown no order proved a boundary, and the bytes held kept a segment's start from proving one: 0.
#[test]
fn a_detected_session_begun_mid_packet_resynchronises_without_its_version() {
    let stream: Vec<u8> = (1..=10).flat_map(order).collect();
    let cuts = [7, 70, 130, 200, 250, 300, 350, 400, 450, 500];
    let mut frames = vec![(T0, segment(false, 1, 1, 0x18, &[0, 1, b'H']))];
    for (i, w) in cuts.windows(2).enumerate() {
        frames.push((T0 + (i as i64 + 1) * MS, segment(true, 1_000 + w[0] as u32, 4, 0x18, &stream[w[0]..w[1]])));
    }
    let r = analyze_frames("midstart-unknown-version", &frames, &[]);
    let s = &r["connections"][0]["to_exchange"];
    let got = ["ouch_messages", "resync_skipped_bytes", "framing_errors"].map(|k| s[k].as_u64().unwrap());
    assert_eq!(got, [9, 43, 0], "{s}");
}

/// A session detected from the traffic reads what its connection carried before the segment it was
/// detected on, as a session given does: the handshake, and order 1 split over two segments, neither
/// a whole SoupBinTCP packet (detection waits for one: order 2's segment). Both orders are matched,
/// 3 us after their ticks, and the handshake is the session's, not "in no feed or session" (order 1
/// was lost, its Accepted unmatched, and the SYN counted as another flow's).
#[test]
fn a_detected_session_reads_what_came_before_it_was_detected() {
    const US: i64 = 1_000;
    let (o1, o2) = (order_for(1, 1), order_for(2, 2));
    let frames = vec![
        (T0, segment(true, 0, 0, 0x02, &[])),
        (T0 + 10 * US, segment(false, 0, 1, 0x12, &[])),
        (T0 + 100 * US, aapl_tick(1)),
        (T0 + 103 * US, segment(true, 1, 1, 0x18, &o1[..20])),
        (T0 + 104 * US, segment(true, 21, 1, 0x18, &o1[20..])),
        (T0 + 200 * US, aapl_tick(2)),
        (T0 + 203 * US, segment(true, 1 + o1.len() as u32, 1, 0x18, &o2)),
        (
            T0 + 300 * US,
            segment(false, 1, 1 + (o1.len() + o2.len()) as u32, 0x18, &[accepted(1), accepted(2)].concat()),
        ),
    ];
    let given = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", r"token:T(\d+)"];
    let r_given = analyze_frames("detected-backlog-given", &frames, &given);
    let r = analyze_frames("detected-backlog", &frames, &given[4..]);
    for (r, how) in [(&r, "detected"), (&r_given, "given")] {
        assert_eq!(fates(r), [2, 2, 0, 0, 0], "{how}");
        let t2t = metric(r, "tick_to_trade");
        assert_eq!(count_min_max(t2t), (Some(2), Some(3 * US), Some(3 * US)), "{how}");
        assert_eq!(r["counters"]["other_frames"], 0, "{how}");
        assert_eq!(r["connections"][0]["frames"], 6, "{how}");
    }
    assert_eq!(r["connections"][0]["to_exchange"], r_given["connections"][0]["to_exchange"]);
    assert_eq!(r["connections"][0]["from_exchange"], r_given["connections"][0]["from_exchange"]);
}

/// Feed A lost tick 2 and brought tick 3 before the order whose token names tick 2; feed B's copy of
/// tick 2 comes 1 us after the order. Tick 2 may still come while a feed lacks it: the order waits
/// for it, and is matched to it, 1 us after the order (a negative latency, counted). It was
/// unmatched, when A's tick 3 came before the order, and matched so when after.
#[test]
fn an_order_waits_for_a_trigger_one_feed_lost_and_another_may_still_bring() {
    const US: i64 = 1_000;
    let b_tick = |seq| {
        support::udp([233, 54, 12, 112], 26478, &support::mold_packet(b"SESSION001", seq, &[support::aapl_add()]))
    };
    for a3_first in [true, false] {
        let a3 = if a3_first { T0 + 3 * US } else { T0 + 5 * US };
        let mut frames = vec![
            (T0 - MS, segment(true, 0, 0, 0x02, &[])),
            (T0 + US, aapl_tick(1)),
            (T0 + 2 * US, b_tick(1)),
            (a3, aapl_tick(3)),
            (T0 + 4 * US, segment(true, 1, 1, 0x18, &order_for(1, 2))),
            (T0 + 5 * US + 1, b_tick(2)),
            (T0 + 6 * US, b_tick(3)),
        ];
        frames.sort_by_key(|f| f.0);
        let args = [
            "--md",
            "udp:233.54.12.111:26477",
            "--md",
            "udp:233.54.12.112:26478",
            "--orders",
            ORDERS,
            "--match",
            r"token:T(\d+)",
        ];
        let r = analyze_frames("lost-on-a", &frames, &args);
        let c = &r["counters"];
        let got = ["matched", "unmatched_orders", "trigger_after_order"].map(|k| c[k].as_u64());
        assert_eq!(got, [1, 0, 1].map(Some), "A's tick 3 before the order: {a3_first}");
        assert_eq!(metric(&r, "tick_to_trade")["max_ns"], -(US + 1), "{a3_first}");
    }
}

/// On one feed, tick 2 is missing when the order naming it is sent (tick 3 came 10 us before); tick
/// 2 comes late on the same feed, 30 us after the order. No feed may still bring it before the
/// order: the order is unmatched, not paired with a late copy at a negative latency (a review of the
/// change above found it paired at -30 us).
#[test]
fn a_tick_its_only_feed_passed_is_not_waited_for() {
    const US: i64 = 1_000;
    let frames = vec![
        (T0, segment(true, 0, 0, 0x02, &[])),
        (T0 + US, aapl_tick(1)),
        (T0 + 10 * US, aapl_tick(3)),
        (T0 + 20 * US, segment(true, 1, 1, 0x18, &order_for(1, 2))),
        (T0 + 50 * US, aapl_tick(2)),
        (T0 + 100 * US, aapl_tick(4)),
    ];
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", r"token:T(\d+)"];
    let r = analyze_frames("late-on-its-feed", &frames, &args);
    let c = &r["counters"];
    let got = ["matched", "unmatched_orders", "trigger_after_order"].map(|k| c[k].as_u64());
    assert_eq!(got, [0, 1, 0].map(Some));
}

/// Orders 1, 3 and 5 captured, 2 and 4 missed by a one-way tap, each order 2 us after its tick (the
/// feed ticks every millisecond for 3 s); the client then sends nothing more. With no ACK, with the
/// exchange's pure ACK of order 3's end before order 5's segment, or after it: order 2's range is a
/// hole, order 4's is given up 1 s after order 5 came, and the three are matched, 2 us, under either
/// rule. (An ACK after order 5 cleared the stream's wait, which nothing restarted: order 5 was read
/// at the capture's end, its trigger gone; with no ACK, order 4's range was waited for from the first
/// hole's end, 2 s in all.)
#[test]
fn every_range_missed_is_given_up_a_timeout_after_what_waits_behind_it_came() {
    const US: i64 = 1_000;
    for ack_at in [None, Some(40 * MS), Some(50 * MS + 500_000)] {
        let mut frames: Vec<(i64, Vec<u8>)> = (1..=3_000u64).map(|n| (T0 + n as i64 * MS, aapl_tick(n))).collect();
        frames.push((T0, segment(true, 0, 0, 0x02, &[])));
        for (k, n) in [(0u32, 10u64), (2, 30), (4, 50)] {
            let o = order_for(k + 1, n);
            frames.push((T0 + n as i64 * MS + 2 * US, segment(true, 1 + 50 * k, 1, 0x18, &o)));
        }
        if let Some(at) = ack_at {
            frames.push((T0 + at, segment(false, 1, 151, 0x10, &[])));
        }
        frames.sort_by_key(|f| f.0);
        for rule in ["symbol", r"token:T(\d+)"] {
            let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", rule];
            let r = analyze_frames("two-holes", &frames, &args);
            let c = &r["counters"];
            let got = ["orders", "matched", "unmatched_orders"].map(|k| c[k].as_u64());
            assert_eq!(got, [3, 3, 0].map(Some), "{rule}, ACK at {ack_at:?}");
            assert_eq!(count_min_max(metric(&r, "tick_to_trade")), (Some(3), Some(2 * US), Some(2 * US)), "{rule}");
            assert_eq!(r["connections"][0]["to_exchange"]["tcp"]["holes"], 2, "{rule}, ACK at {ack_at:?}");
        }
    }
}

/// A segment between client 10.1.0.2:`cport` and exchange `ex`:`eport`.
fn segment_to(ex: ([u8; 4], u16), cport: u16, to_exchange: bool, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    use wirestamp_lab::packet::{self, TcpHdr};
    let client = ([2, 0, 0, 0, 0, 1], [10, 1, 0, 2], cport);
    let exchange = ([2, 0, 0, 0, 0, 2], ex.0, ex.1);
    let (src, dst) = if to_exchange { (client, exchange) } else { (exchange, client) };
    let mut f = Vec::new();
    packet::ethernet(&mut f, src.0, dst.0, None);
    let ack = if to_exchange { 1 } else { 54 };
    packet::ipv4_tcp(&mut f, src.1, dst.1, TcpHdr { sport: src.2, dport: dst.2, seq, ack, flags }, 1, payload);
    packet::pad_min(&mut f);
    f
}

/// Two sessions. S1: an order at +5 s, never answered. S2: an order split over two segments at
/// +2 ms, before S2 is detected (by a heartbeat at +6 s), its Accepted at +11 s, past the 10 s
/// timeout. Detected as given, S2's order is unacknowledged and the Accepted late; S1's order
/// still awaits its answer at the end. (Read from the detection backlog, S2's order waited for its
/// timeout behind S1's newer one, and was paired 11 s after it was sent.)
#[test]
fn an_order_read_late_times_out_in_time_order() {
    const S: i64 = 1_000_000_000;
    let (s1, s2) = (([10, 1, 0, 1], 8003u16), ([10, 1, 0, 5], 9000u16));
    let o = order(7);
    let frames = vec![
        (T0 + MS, segment_to(s2, 41000, true, 0, 0x02, &[])),
        (T0 + 2 * MS, segment_to(s2, 41000, true, 1, 0x18, &o[..20])),
        (T0 + 3 * MS, segment_to(s2, 41000, true, 21, 0x18, &o[20..])),
        (T0 + 5 * S, segment_to(s1, 40001, true, 1, 0x18, &order(1))),
        (T0 + 6 * S, segment_to(s2, 41000, true, 51, 0x18, &[0, 1, b'R'])),
        (T0 + 11 * S, segment_to(s2, 41000, false, 1, 0x18, &accepted(7))),
    ];
    let given = ["--orders", "tcp:10.1.0.1:8003", "--orders", "tcp:10.1.0.5:9000"];
    for (how, args) in [("given", &given[..]), ("detected", &[][..])] {
        let r = analyze_frames("read-late", &frames, args);
        assert_eq!(fates(&r), [2, 0, 1, 1, 0], "{how}");
        assert_eq!(r["counters"]["late_responses"], 1, "{how}");
    }
}

/// `--by symbol` names the row of a symbol blank on the wire `symbol:(blank)`, in the JSON and the
/// table (it was `symbol:`, which reads as a name left out). Under the token rule, OUCH 4.2 orders
/// `T1` (symbol 8 spaces) and `T2` (8 NULs), 1 ms after AAPL ticks 1 and 2 at T0: both paired, both
/// in the blank row.
#[test]
fn a_blank_symbol_has_a_row_that_says_so() {
    let script = [
        (1, true, support::enter42_of(b"T1            ", b"        ")),
        (2, true, support::enter42_of(b"T2            ", &[0; 8])),
    ];
    let mut frames = conversation(&script);
    frames.splice(0..0, [(T0, aapl_tick(1)), (T0 + MS, aapl_tick(2))]);
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", "tcp:10.1.0.1:8003@ouch42", "--by", "symbol"];
    let args: Vec<&str> = args.into_iter().chain(["--match", r"token:T(\d+)"]).collect();
    let r = analyze_frames("blank-symbol", &frames, &args);
    let t2t = metric(&r, "tick_to_trade");
    assert_eq!(count_min_max(t2t), (Some(2), Some(MS), Some(MS)));
    assert_eq!(dims(t2t).last(), Some(&("symbol:(blank)", 2)), "{:?}", dims(t2t));
    let dir = support::tmpdir("blank-symbol-table");
    let cap = dir.join("c.pcap");
    support::write_pcap(&cap, &frames);
    let text = support::analyze_text(&args, &cap);
    assert!(text.lines().any(|l| l.starts_with("  symbol:(blank) ")), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// OUCH 5.0 Enter Order (§2.1, 47 bytes), by hand: UserRefNum `urn`, buy 100 AAPL at 100.0000, day,
/// ClOrdID `T` and tick `seq` in 13 digits; in a SoupBinTCP Unsequenced Data packet.
fn enter50(urn: u32, seq: u64) -> Vec<u8> {
    let mut m = vec![b'O'];
    m.extend(urn.to_be_bytes());
    m.push(b'B');
    m.extend(100u32.to_be_bytes());
    m.extend(b"AAPL    ");
    m.extend(1_000_000u64.to_be_bytes());
    m.extend(b"0YPNN"); // time in force, display, capacity, intermarket sweep, cross type
    m.extend(format!("T{seq:013}").as_bytes());
    m.extend(0u16.to_be_bytes()); // appendage length
    assert_eq!(m.len(), 47);
    soup_packet(b'U', &m)
}

/// OUCH 5.0 Order Accepted (§3.2, 64 bytes) of [`enter50`]`(urn, seq)`, live; in a Sequenced Data
/// packet.
fn accepted50(urn: u32, seq: u64) -> Vec<u8> {
    let mut m = vec![b'A'];
    m.extend(0u64.to_be_bytes()); // timestamp
    m.extend(urn.to_be_bytes());
    m.push(b'B');
    m.extend(100u32.to_be_bytes());
    m.extend(b"AAPL    ");
    m.extend(1_000_000u64.to_be_bytes());
    m.extend(b"0Y");
    m.extend(u64::from(urn).to_be_bytes()); // order reference number
    m.extend(b"PNNL"); // capacity, intermarket sweep, cross type, order state (live)
    m.extend(format!("T{seq:013}").as_bytes());
    m.extend(0u16.to_be_bytes());
    assert_eq!(m.len(), 64);
    soup_packet(b'S', &m)
}

/// A request to cancel a whole order and its answer, by hand: OUCH 5.0 Cancel Order (§2.3, 9 bytes:
/// UserRefNum, quantity 0) and Order Canceled (§3.4, 18 bytes: 100 shares, reason `U`, user
/// requested); OUCH 4.2 Cancel Order (19 bytes: token, shares 0) and Canceled (28 bytes).
fn cancel_and_canceled(id: &Id) -> (Vec<u8>, Vec<u8>) {
    let key: Vec<u8> = match id {
        Id::Ref(n) => n.to_be_bytes().to_vec(),
        Id::Token(t) => t.to_vec(),
    };
    let mut x = vec![b'X'];
    x.extend(&key);
    x.extend(0u32.to_be_bytes());
    let mut c = vec![b'C'];
    c.extend(0u64.to_be_bytes());
    c.extend(&key);
    c.extend(100u32.to_be_bytes());
    c.push(b'U');
    let (xl, cl) = if matches!(id, Id::Ref(_)) { (9, 18) } else { (19, 28) };
    assert_eq!((x.len(), c.len()), (xl, cl));
    (soup_packet(b'U', &x), soup_packet(b'S', &c))
}

/// The id of an order: an OUCH 5.0 UserRefNum or an OUCH 4.2 token.
enum Id {
    Ref(u32),
    Token([u8; 14]),
}

/// Order 1 (UserRefNum 1, or OUCH 4.2 token `T0000000000001`: both name tick 1 for the token rule),
/// its Enter and its Accepted; and the session spec of its version.
fn order_one(id: &Id) -> (Vec<u8>, Vec<u8>, String) {
    match id {
        Id::Ref(n) => (enter50(*n, 1), accepted50(*n, 1), format!("{ORDERS}@ouch50")),
        Id::Token(t) => (enter42(t), support::accepted42(t, b"AAPL    "), format!("{ORDERS}@ouch42")),
    }
}

/// A client SoupBinTCP Heartbeat (`R`): bytes that move capture time on.
fn heartbeat() -> Vec<u8> {
    soup_packet(b'R', &[])
}

/// An Enter resent (the client unsure it arrived, OUCH 5.0 §2: inbound messages may be repeated
/// benignly) is ignored by the exchange, which answers the first: OUCH 5.0 and 4.2, tick 1 at T0, the
/// Enter of order 1 at 1 ms, the same Enter again at 3 ms, its Accepted at 7 ms, a heartbeat 11 s on
/// (past the 10 s timeout). One order, matched (tick_to_trade 1 ms, one pair, no `--unmatched` row),
/// acked from the first (order_to_ack 7 - 1 = 6 ms), none unacked; the resend counted in
/// `orders_resent`, and said in the table. (The resend was a second order and pair, its request
/// unacked.)
#[test]
fn a_resent_enter_is_no_order_and_its_order_is_acked_from_the_first() {
    let dir = support::tmpdir("resent-enter");
    let (cap, pairs, unmatched) = (dir.join("c.pcap"), dir.join("p.csv"), dir.join("u.csv"));
    for id in [Id::Ref(1), Id::Token(*b"T0000000000001")] {
        let (enter, acc, session) = order_one(&id);
        let script = [(1, true, enter.clone()), (3, true, enter), (7, false, acc), (11_000, true, heartbeat())];
        let mut frames = conversation(&script);
        frames.insert(0, (T0, aapl_tick(1)));
        support::write_pcap(&cap, &frames);
        let (p, u) = (pairs.to_str().unwrap(), unmatched.to_str().unwrap());
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", &session, "--match", r"token:T(\d+)"];
        let with_files: Vec<&str> = args.iter().copied().chain(["--pairs", p, "--unmatched", u]).collect();
        let r = support::analyze_json(&with_files, &cap);
        assert_eq!(fates(&r), [1, 1, 0, 0, 0], "{session}");
        assert_eq!([&r["counters"]["matched"], &r["counters"]["orders_resent"]], [1, 1], "{session}");
        assert!(r["counters"]["resent_answered"].is_null(), "{session}: the Accepted answers the first");
        assert_eq!(count_min_max(metric(&r, "tick_to_trade")), (Some(1), Some(MS), Some(MS)), "{session}");
        assert_eq!(count_min_max(metric(&r, "order_to_ack")), (Some(1), Some(6 * MS), Some(6 * MS)), "{session}");
        assert_eq!(std::fs::read_to_string(&pairs).unwrap().lines().count(), 2, "{session}: a header and one pair");
        assert_eq!(std::fs::read_to_string(&unmatched).unwrap().lines().count(), 1, "{session}: a header alone");
        let text = support::analyze_text(&args, &cap);
        let want = "1 order, 1 matched, 0 unmatched (0 without a readable token), 0 ambiguous, 0 cancels and \
                    modifies (not correlated); 1 retransmitted Enter the exchange ignores (an order id already \
                    entered that day): not orders";
        assert!(text.lines().any(|l| l.ends_with(want)), "{session}: {text}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// OUCH 5.0 §1.2: the exchange ignores an Enter whose UserRefNum is not above the last it processed
/// that day, taking it for a retransmission. The capture begins mid-day: tick n at n ms, 3 us before
/// Enters of UserRefNums 5 (the first seen: the start), 3 (below it, never seen: ignored), 6; their
/// Accepted, of 5 and 6, at 10 ms; a heartbeat 11 s on. The next day (24 h on, 09:30 EST of Dec 1) the
/// numbers start again: Enter 1 is a new order, answered 1 ms on. Three orders, all matched (3 us)
/// and acked (9, 7 and 1 ms); the Enter of 3 counted in `orders_resent`. (It was a fourth order,
/// matched, its request unacked.)
#[test]
fn an_enter_whose_user_ref_num_is_not_above_the_last_is_ignored() {
    const DAY: i64 = 86_400_000;
    let script = [
        (1, true, enter50(5, 1)),
        (2, true, enter50(3, 2)),
        (3, true, enter50(6, 3)),
        (10, false, [accepted50(5, 1), accepted50(6, 3)].concat()),
        (11_000, true, heartbeat()),
        (DAY + 4, true, enter50(1, 4)),
        (DAY + 5, false, accepted50(1, 4)),
    ];
    let ticks = [(1, 1), (2, 2), (3, 3), (DAY + 4, 4)];
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", r"token:T(\d+)"];
    let r = analyze_frames("user-ref-num-not-above", &with_ticks(&script, &ticks), &args);
    assert_eq!(fates(&r), [3, 3, 0, 0, 0]);
    assert_eq!([&r["counters"]["matched"], &r["counters"]["orders_resent"]], [3, 1]);
    assert_eq!(count_min_max(metric(&r, "tick_to_trade")), (Some(3), Some(3_000), Some(3_000)));
    assert_eq!(count_min_max(metric(&r, "order_to_ack")), (Some(3), Some(MS), Some(9 * MS)));
}

/// A resend after its order ended is ignored too: a UserRefNum not above the last (OUCH 5.0 §1.2),
/// an OUCH 4.2 token day-unique, whatever became of the order. Tick 1 at T0; order 1 entered at 1 ms,
/// accepted at 2 ms; a Cancel of it at 3 ms, Canceled whole at 4 ms; the Enter resent at 5 ms (a
/// client recovering, say); a heartbeat 11 s on. Two orders (the Enter, matched, and the Cancel, not
/// correlated), both acked; the resend counted apart. (It was a new order, matched again, its
/// request unacked.)
#[test]
fn a_resent_enter_after_its_order_ended_is_ignored() {
    for id in [Id::Ref(1), Id::Token(*b"T0000000000001")] {
        let (enter, acc, session) = order_one(&id);
        let (cancel, canceled) = cancel_and_canceled(&id);
        let script = [
            (1, true, enter.clone()),
            (2, false, acc),
            (3, true, cancel),
            (4, false, canceled),
            (5, true, enter),
            (11_000, true, heartbeat()),
        ];
        let mut frames = conversation(&script);
        frames.insert(0, (T0, aapl_tick(1)));
        let args = ["--md", "udp:233.54.12.111:26477", "--orders", &session, "--match", r"token:T(\d+)"];
        let r = analyze_frames("resent-after-end", &frames, &args);
        let c = &r["counters"];
        assert_eq!(fates(&r), [2, 2, 0, 0, 0], "{session}");
        let got = ["matched", "not_correlated", "unsolicited_cancels", "orders_resent"].map(|k| c[k].as_u64());
        assert_eq!(got, [1, 1, 0, 1].map(Some), "{session}");
        assert!(c["resent_answered"].is_null(), "{session}: nothing answers the resend");
        assert_eq!(count_min_max(metric(&r, "order_to_ack")), (Some(2), Some(MS), Some(MS)), "{session}");
    }
}

/// Requests are paired with responses on their own connection, a resent Enter's order too: a client
/// logged in as TRADR1 enters order 1 on connection 1 (port 40001) at 1 ms, reconnects (port 40002,
/// TRADR1 again: the same account) and resends it at 4 ms; the exchange answers on connection 2 at
/// 6 ms. The resend is no order (`orders_resent`), so the Accepted finds no request on its
/// connection (unmatched; `resent_answered`, as the exchange's answer to the resend would be) and
/// order 1's goes unanswered past the 10 s timeout (unacked): each counted, none paired (the resend was
/// a second order, paired 2 ms on, tick-to-trade counted twice).
#[test]
fn a_resend_on_a_new_connection_leaves_its_order_unacked_and_the_response_unmatched() {
    let ex = ([10, 1, 0, 1], 8003);
    let login = soup_packet(b'L', &soup::login_request("TRADR1", "pw"));
    let enter = enter50(1, 1);
    let (l, e) = (login.len() as u32, enter.len() as u32);
    let frames = vec![
        (T0 - 2 * MS, segment_to(ex, 40001, true, 0, 0x02, &[])),
        (T0 - MS, segment_to(ex, 40001, true, 1, 0x18, &login)),
        (T0, aapl_tick(1)),
        (T0 + MS, segment_to(ex, 40001, true, 1 + l, 0x18, &enter)),
        (T0 + 2 * MS, segment_to(ex, 40002, true, 0, 0x02, &[])),
        (T0 + 3 * MS, segment_to(ex, 40002, true, 1, 0x18, &login)),
        (T0 + 4 * MS, segment_to(ex, 40002, true, 1 + l, 0x18, &enter)),
        (T0 + 6 * MS, segment_to(ex, 40002, false, 1, 0x18, &accepted50(1, 1))),
        (T0 + 11_000 * MS, segment_to(ex, 40002, true, 1 + l + e, 0x18, &heartbeat())),
    ];
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", r"token:T(\d+)"];
    let r = analyze_frames("resent-elsewhere", &frames, &args);
    assert_eq!(fates(&r), [1, 0, 1, 0, 1]);
    let c = &r["counters"];
    assert_eq!([&c["matched"], &c["orders_resent"], &c["resent_answered"]], [1, 1, 1]);
    assert_eq!(count_min_max(metric(&r, "tick_to_trade")), (Some(1), Some(MS), Some(MS)));
}

/// An Enter taken for a retransmission that the exchange answers on its own connection is said to
/// be: an exchange that lets UserRefNums start again at a new login (a simulator may; Nasdaq ignores
/// them, OUCH 5.0 §1.2) acts on them as new orders, which the analysis drops. A client logged in as
/// TRADR1 enters orders 1 and 2 on connection 1 (port 40001: 1 and 3 ms after tick 1 at T0), each
/// accepted 1 ms on; it logs in again on connection 2 (port 40002) and enters 1 and 2 again (7 and 9
/// ms), each accepted 1 ms on, there. Two orders (acked: 1 ms), two resent, and the two Accepted of
/// connection 2 unmatched: both counted in `resent_answered`, and the note says what they may be.
/// (Nothing said so: the table's line had the exchange ignore them.)
#[test]
fn a_resent_enter_the_exchange_answers_is_said_so() {
    let ex = ([10, 1, 0, 1], 8003);
    let login = soup_packet(b'L', &soup::login_request("TRADR1", "pw"));
    let (e1, e2, a1, a2) = (enter50(1, 1), enter50(2, 1), accepted50(1, 1), accepted50(2, 1));
    let (l, e, a) = (login.len() as u32, e1.len() as u32, a1.len() as u32);
    let mut frames = vec![(T0, aapl_tick(1))];
    for (port, at) in [(40001, 0), (40002, 6)] {
        let t = |ms: i64| T0 + (at + ms) * MS;
        frames.extend([
            (t(-2), segment_to(ex, port, true, 0, 0x02, &[])),
            (t(-1), segment_to(ex, port, true, 1, 0x18, &login)),
            (t(1), segment_to(ex, port, true, 1 + l, 0x18, &e1)),
            (t(2), segment_to(ex, port, false, 1, 0x18, &a1)),
            (t(3), segment_to(ex, port, true, 1 + l + e, 0x18, &e2)),
            (t(4), segment_to(ex, port, false, 1 + a, 0x18, &a2)),
        ]);
    }
    frames.push((T0 + 11_000 * MS, segment_to(ex, 40002, true, 1 + l + 2 * e, 0x18, &heartbeat())));
    frames.sort_by_key(|f| f.0);
    let args = ["--md", "udp:233.54.12.111:26477", "--orders", ORDERS, "--match", r"token:T(\d+)"];
    let dir = support::tmpdir("resent-answered");
    let cap = dir.join("c.pcap");
    support::write_pcap(&cap, &frames);
    let r = support::analyze_json(&args, &cap);
    assert_eq!(fates(&r), [2, 2, 0, 0, 2]);
    let c = &r["counters"];
    assert_eq!(["orders_resent", "resent_answered"].map(|k| c[k].as_u64()), [Some(2), Some(2)]);
    assert_eq!(count_min_max(metric(&r, "order_to_ack")), (Some(2), Some(MS), Some(MS)));
    let want = "2 responses answered, on their own connection, Enters taken for retransmissions";
    assert!(r["notes"].as_array().unwrap().iter().any(|n| n.as_str().unwrap().starts_with(want)), "{}", r["notes"]);
    let text = support::analyze_text(&args, &cap);
    assert!(text.contains(&format!("note: {want}")), "{text}");
    std::fs::remove_dir_all(&dir).unwrap();
}
