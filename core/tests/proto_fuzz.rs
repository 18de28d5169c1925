//! Deterministic fuzzing of every protocol decoder entry point: pseudo-random and mutated inputs,
//! a few hundred thousand iterations bounded in time, asserting no panic and basic invariants
//! (what a decoder reports stays inside its input).

use std::time::{Duration, Instant};
use wirestamp_core::proto::market::MoldItchDecoder;
use wirestamp_core::proto::moldudp64::{self, Packet, SeqTracker, Session};
use wirestamp_core::proto::soupbin::{Framer, SoupPacket};
use wirestamp_core::proto::{OrderDir, ProtoError, itch, ouch5, ouch42};
use wirestamp_testdata::Rng;

/// Type bytes of all the formats, so random messages often reach the typed decoders.
const TYPES: &[u8] = b"SRHYLVWKJhAFECXDUPQBINO+AJSHZLURO MTQ";

/// A buffer that is random, or starts with a known type byte, or wraps random messages in
/// MoldUDP64 / SoupBinTCP framing with plausible lengths.
fn input(r: &mut Rng, buf: &mut Vec<u8>) {
    buf.clear();
    let len = match r.below(4) {
        0 => r.below(8),
        1 | 2 => r.below(90),
        _ => r.below(1600),
    };
    for _ in 0..len {
        buf.push(r.byte());
    }
    match r.below(4) {
        0 if !buf.is_empty() => buf[0] = TYPES[r.below(TYPES.len())],
        1 => {
            // MoldUDP64 header with a small count and length-prefixed random blocks.
            let mut p = vec![b'S'; 10];
            p.extend_from_slice(&r.next_u64().to_be_bytes());
            let count: u16 = if r.below(8) == 0 { 0xFFFF } else { r.below(6) as u16 };
            p.extend_from_slice(&count.to_be_bytes());
            for _ in 0..r.below(7) {
                let l = r.below(60);
                p.extend_from_slice(&((l + r.below(3)) as u16).to_be_bytes());
                p.push(TYPES[r.below(TYPES.len())]);
                for _ in 1..l {
                    p.push(r.byte());
                }
            }
            *buf = p;
        }
        2 => {
            // SoupBinTCP packets back to back, lengths sometimes lying.
            let mut p = Vec::new();
            for _ in 0..r.below(5) {
                let l = r.below(80);
                let declared = if r.below(6) == 0 { r.below(300) } else { l + 1 };
                p.extend_from_slice(&(declared as u16).to_be_bytes());
                p.push(TYPES[r.below(TYPES.len())]);
                for _ in 0..l {
                    p.push(r.byte());
                }
            }
            *buf = p;
        }
        _ => {}
    }
}

fn check_err_in_bounds(e: ProtoError, len: usize) {
    match e {
        ProtoError::Truncated { offset, need, have, .. } => {
            assert!(have < need, "{e}");
            assert!(offset + have <= len, "{e} (input {len})");
        }
        ProtoError::Malformed { offset, .. } => assert!(offset < len.max(1), "{e} (input {len})"),
    }
}

fn exercise(buf: &[u8], mold: &mut MoldItchDecoder, tracker: &mut SeqTracker<u8>, r: &mut Rng) {
    // ITCH.
    match itch::parse(buf) {
        Ok(m) => {
            let _ = m.summary();
            let _ = m.header();
            assert!(m.bytes().len() == buf.len());
        }
        Err(e) => check_err_in_bounds(e, buf.len()),
    }
    // MoldUDP64.
    if let Ok(p) = Packet::new_checked(buf) {
        let mut it = p.messages();
        let mut n = 0usize;
        for (_, m) in it.by_ref() {
            assert!(m.len() < buf.len());
            n += 1;
        }
        assert!(n <= usize::from(p.messages_announced()));
        assert!(it.offset() <= buf.len());
        if let Some(e) = it.error() {
            check_err_in_bounds(e, buf.len());
        }
        let _ = tracker.observe(r.byte() & 1, p.session(), p.sequence() % 1000, p.message_count());
    }
    let mut total = 0;
    for item in moldudp64::split_stream(buf) {
        match item {
            Ok((off, p)) => {
                assert_eq!(off, total);
                total += p.declared_len().unwrap();
                assert!(total <= buf.len());
            }
            Err(e) => check_err_in_bounds(e, buf.len()),
        }
    }
    let _ = mold.packet(buf, |m| assert!(m.itch.msg_type != itch::MessageType::Unknown(0)));
    // SoupBinTCP.
    match SoupPacket::parse(buf) {
        Ok(_) => {}
        Err(e) => check_err_in_bounds(e, buf.len()),
    }
    // OUCH 5.0 and 4.2, both directions, with appendages.
    for dir in [OrderDir::Inbound, OrderDir::Outbound] {
        match ouch5::summarize(dir, buf) {
            Ok(_) => {}
            Err(e) => check_err_in_bounds(e, buf.len()),
        }
        match ouch42::summarize(dir, buf) {
            Ok(_) => {}
            Err(e) => check_err_in_bounds(e, buf.len()),
        }
    }
    if let Ok(ouch5::Inbound::EnterOrder(o)) = ouch5::parse_inbound(buf) {
        let mut it = o.options();
        for t in it.by_ref() {
            let _ = (t.as_u64(), t.as_i32(), t.size_ok());
        }
        if let Some(e) = it.error() {
            check_err_in_bounds(e, buf.len());
        }
    }
    if let Ok(ouch5::Outbound::OrderAccepted(o)) = ouch5::parse_outbound(buf) {
        for t in o.options() {
            assert!(t.value.len() < buf.len());
        }
    }
}

/// Feeds `buf` to a framer in random chunks; complete packets must tile the consumed bytes.
fn exercise_framer(buf: &[u8], r: &mut Rng) {
    let max = 1 + r.below(400);
    let mut f = Framer::new(max);
    let mut at = 0;
    let mut emitted = 0usize;
    while at < buf.len() {
        let n = 1 + r.below(buf.len() - at);
        let res = f.feed(&buf[at..at + n], |p| {
            emitted += p.bytes().len();
            let _ = SoupPacket::parse(p.bytes());
        });
        if res.is_err() {
            f.reset();
        }
        at += n;
    }
    assert!(emitted <= buf.len());
    // The buffer bound: a partial packet is shorter than the largest packet allowed.
    assert!(f.pending() < max.max(3));
}

#[test]
fn fuzz_all_decoders_no_panic() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut buf = Vec::new();
    let mut mold = MoldItchDecoder::new();
    let mut tracker = SeqTracker::<u8>::new(64);
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut iterations = 0u64;
    while iterations < 300_000 && Instant::now() < deadline {
        for _ in 0..256 {
            input(&mut r, &mut buf);
            exercise(&buf, &mut mold, &mut tracker, &mut r);
            if iterations.is_multiple_of(4) {
                exercise_framer(&buf, &mut r);
            }
            iterations += 1;
        }
    }
    assert!(iterations >= 50_000, "only {iterations} iterations in the time bound");
    // The generator must actually reach the decoders, not only their length checks.
    assert!(
        mold.packets > 1_000 && mold.itch.decoded() > 100,
        "{} packets, {} messages",
        mold.packets,
        mold.itch.decoded()
    );
}

#[test]
fn fuzz_mutations_of_valid_messages() {
    // Valid seeds: one message per family, then truncated, extended and bit-flipped.
    let mut seeds: Vec<Vec<u8>> = vec![
        // ITCH 'A' Add Order.
        [
            &b"A\x00\x01\x00\x02\x00\x00\x00\x00\x00\x05"[..],
            &[0, 0, 0, 0, 0, 0, 0, 9],
            b"B",
            &[0, 0, 0, 100],
            b"AAPL    ",
            &[0, 0, 1, 0],
        ]
        .concat(),
        // OUCH 5.0 Enter Order with a Firm option (the OMI frame body).
        hexbytes(
            "4f0000007154000000e143564c54202020200000000000099db83059414e4e4838465542384956202020202020000605024c494d45",
        ),
        // OUCH 5.0 Order Accepted (the OMI frame body).
        hexbytes(
            "410000289b4d64af8700753a8d42000000284144424520202020000000000048e7483559000000000f56b4f5414e4e4c3736383237303120202020202020000905024d4c524f021230",
        ),
        // SoupBinTCP Login Accepted.
        [&[0u8, 31, b'A'][..], b"    SESS01", b"                   1"].concat(),
    ];
    let mut mold_pkt = vec![b'S'; 10];
    mold_pkt.extend_from_slice(&7u64.to_be_bytes());
    mold_pkt.extend_from_slice(&1u16.to_be_bytes());
    mold_pkt.extend_from_slice(&(seeds[0].len() as u16).to_be_bytes());
    mold_pkt.extend_from_slice(&seeds[0]);
    seeds.push(mold_pkt);

    let mut r = Rng(42);
    let mut mold = MoldItchDecoder::new();
    let mut tracker = SeqTracker::<u8>::new(8);
    let mut buf = Vec::new();
    for i in 0..100_000 {
        let seed = &seeds[i % seeds.len()];
        buf.clear();
        buf.extend_from_slice(seed);
        match r.below(3) {
            0 => buf.truncate(r.below(seed.len() + 1)),
            1 => {
                for _ in 0..1 + r.below(4) {
                    let at = r.below(buf.len());
                    buf[at] ^= 1 << r.below(8);
                }
            }
            _ => {
                for _ in 0..r.below(40) {
                    buf.push(r.byte());
                }
            }
        }
        exercise(&buf, &mut mold, &mut tracker, &mut r);
        exercise_framer(&buf, &mut r);
    }
    // Sequence tracker with hostile sequence numbers (wrap-around, huge jumps).
    let s = Session(*b"0000000001");
    for _ in 0..100_000 {
        let seq = match r.below(4) {
            0 => u64::MAX - r.below(5) as u64,
            1 => r.next_u64(),
            _ => r.below(50) as u64,
        };
        let count = [0u16, 1, 2, 0xFFFF, 0xFFFE][r.below(5)];
        let _ = tracker.observe(r.byte() & 3, s, seq, count);
    }
    assert!(tracker.iter().count() >= 4);
}

fn hexbytes(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}
