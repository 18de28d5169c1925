//! A busy order session's framing neither allocates per segment nor churns the analysis's count of
//! framing held: a counting global allocator (per thread) watches one [`OrderStream`] fed MSS-sized
//! segments of back-to-back OUCH 5.0 Enter Orders, most of them ending inside a packet, driven as the
//! analyzer drives it (after a segment that changed what it holds, `framing_held`).

mod support;

use std::cell::Cell;
use support::counting_alloc::{Counting, allocs};
use wirestamp_core::analyze::flows::OrderProto;
use wirestamp_core::analyze::orders::{FrameRef, OrderMsg, OrderStream};
use wirestamp_core::proto::OrderDir;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A SoupBinTCP Unsequenced Data packet (50 bytes) holding an OUCH 5.0 Enter Order without appendage
/// (47 bytes, OUCH 5.0 §2.1.1: the offsets below), UserRefNum `urn`.
fn enter_order(urn: u32) -> Vec<u8> {
    let mut m = vec![b'O'];
    m.extend(urn.to_be_bytes());
    m.push(b'B');
    m.extend(100u32.to_be_bytes());
    m.extend(b"AAPL    ");
    m.extend(1_500_000u64.to_be_bytes());
    m.extend(b"0YANN");
    m.extend(format!("T{urn:<13}").as_bytes());
    m.extend(0u16.to_be_bytes());
    assert_eq!(m.len(), 47);
    let mut p = 48u16.to_be_bytes().to_vec();
    p.push(b'U');
    p.extend(m);
    p
}

/// What the analyzer's count of a direction's framing does over some segments (`Analyzer::update_held`
/// moves the direction's entry in its by-age set when the time of its first byte held changes).
#[derive(Debug, Default, PartialEq, Eq)]
struct Held {
    /// Turned counted (`framing_held` from `None` to `Some`): an insertion in the set.
    held: u64,
    /// Turned uncounted: a removal.
    unheld: u64,
    /// Counted before and after, from another first byte: a removal and an insertion.
    moved: u64,
}

/// What phases of segments did: allocations, the count's changes and the orders read.
#[derive(Debug, Default, PartialEq, Eq)]
struct Phase {
    allocations: u64,
    held: Held,
    orders: u64,
    /// Looks the stream was due for, taken as the analyzer takes them before a frame (`expire`).
    looks: u64,
}

/// Feeds an order stream (SYN, then back-to-back 50-byte Enter Orders) in `mss`-byte segments `gap_ns`
/// apart, and returns what each phase of `phases` segments did, one after another.
fn busy_session(mss: usize, gap_ns: i64, phases: &[usize]) -> Vec<Phase> {
    let total = phases.iter().sum::<usize>() * mss;
    let mut stream = Vec::with_capacity(total + 50);
    let mut urn = 1;
    while stream.len() < total {
        stream.extend(enter_order(urn));
        urn += 1;
    }
    let mut s = OrderStream::new(OrderDir::Inbound, Some(OrderProto::Ouch50));
    let read = Cell::new(0u64);
    let mut out = |_m: OrderMsg| read.set(read.get() + 1);
    s.segment(0, true, &[], FrameRef { index: 0, time_ns: 0 }, &mut out);
    let mut segments = stream[..total].chunks(mss).enumerate();
    let mut was: Option<i64> = None;
    let mut done = Vec::new();
    for &n in phases {
        let (before, read_before) = (allocs(), read.get());
        let (mut held, mut looks) = (Held::default(), 0);
        for (k, seg) in segments.by_ref().take(n) {
            let frame = FrameRef { index: k as u64 + 1, time_ns: gap_ns * (k as i64 + 1) };
            if s.gap_deadline().is_some_and(|due| frame.time_ns >= due) {
                s.expire(frame, &mut out);
                looks += 1;
            }
            s.segment(1 + (k * mss) as u32, false, seg, frame, &mut out);
            if s.take_held_change() {
                let now = s.framing_held().map(|(t, _)| t);
                match (was, now) {
                    (None, Some(_)) => held.held += 1,
                    (Some(_), None) => held.unheld += 1,
                    (Some(a), Some(b)) if a != b => held.moved += 1,
                    _ => {}
                }
                was = now;
            }
        }
        done.push(Phase { allocations: allocs() - before, held, orders: read.get() - read_before, looks });
    }
    done
}

/// Segments of a 1,500-byte MTU (1,448 bytes: less 20 of IPv4 and 32 of TCP with timestamps), 250 (10
/// cycles) after one cycle's warm-up: no allocation, and the direction never counted. 1,448 = 28 × 50 +
/// 48, so segment k ends on a packet boundary only when 48 (k + 1) is a multiple of 50, when k + 1 is a
/// multiple of 25: 24 of every 25 end inside a packet, the tail after segment j of a cycle 48 - 2j bytes
/// (j from 0). The framer keeps its room, 1,496 bytes (the first tail joined with a segment; each later
/// tail is shorter), and the pieces theirs, 4 × 32: 1,624 bytes, within `FRAMING_SLACK`. Before (a slack
/// of 1,024 bytes), each cycle allocated 3 times (the pieces' and the framer's buffers for the first
/// tail, both freed at the cycle's end, and the framer's grown for that tail joined with the next
/// segment), and from its second segment the direction was counted (held), the first byte held moving
/// at every segment until the 25th ended on a boundary and freed the buffers (unheld): 30 allocations,
/// held and unheld 10 times each, moved 220 times.
#[test]
fn a_busy_session_frames_without_allocating_or_churning_the_count() {
    let phases = busy_session(1_448, 1_000, &[25, 250]);
    // 10 cycles of 25 segments carry 10 × 724 packets (36,200 bytes each).
    assert_eq!(phases[1], Phase { allocations: 0, held: Held::default(), orders: 10 * 724, looks: 0 });
}

/// The same segments 10 ms apart (2.75 s in all): the stream is looked at to give back its room once
/// quiet (a gap timeout, 1 s, after its first segment, then 1 s and 1 ns after each look), which a
/// busy one never is: each look finds bytes came since, and nothing is given back, nor allocated. The
/// first look is due at 10 ms + 1 s + 1 ns, taken at the first segment after, the 102nd (1.02 s);
/// the next due at 2.02 s and 1 ns, taken at the 203rd (2.03 s): both in the second phase.
#[test]
fn a_busy_session_looked_at_keeps_its_room() {
    let phases = busy_session(1_448, 10_000_000, &[25, 250]);
    assert_eq!(phases[1], Phase { allocations: 0, held: Held::default(), orders: 10 * 724, looks: 2 });
}

/// Jumbo frames (a 9,000-byte MTU, 8,960-byte segments without TCP timestamps: 179 × 50 + 10, so the
/// tails are 10, 20, 30, 40 and 0 bytes, a cycle of 5 segments, 896 packets) fit the framer's room too,
/// which it cuts to `RETAINED` itself. First cycle, by hand: the pieces' buffer (4) and the framer's for
/// the first tail (10 bytes), the framer's grown for it joined with a segment (8,970) and for the next
/// tail joined (8,980: doubled, 17,940), then cut to 16,384 (more than twice the 30 bytes then held):
/// 5 allocations, and with the pieces 16,512 bytes at most, within `FRAMING_SLACK`, never counted. Then
/// nothing. (Before, at a slack of 1,024, counted from the second segment of each cycle to its last.)
#[test]
fn jumbo_segments_settle_within_the_retained_room() {
    let phases = busy_session(8_960, 1_000, &[5, 50]);
    assert_eq!(phases[0], Phase { allocations: 5, held: Held::default(), orders: 896, looks: 0 });
    assert_eq!(phases[1], Phase { allocations: 0, held: Held::default(), orders: 10 * 896, looks: 0 });
}
