//! What a busy order session's framing allocates per segment, and how often the analysis's count of
//! framing held changes: a counting global allocator (per thread) watches one [`OrderStream`] fed MSS-sized
//! segments of back-to-back OUCH 5.0 Enter Orders, most of them ending inside a packet, driven as the
//! analyzer drives it (after a segment that changed what it holds, `framing_held`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use wirestamp_core::analyze::flows::OrderProto;
use wirestamp_core::analyze::orders::{FrameRef, OrderMsg, OrderStream};
use wirestamp_core::proto::OrderDir;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; the only addition is a
// thread-local counter with const initialisation, which itself never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}

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

/// MSS-sized segments (1,448 bytes: a 1,500-byte MTU less 20 of IPv4 and 32 of TCP with timestamps)
/// of 50-byte packets. 1,448 = 28 × 50 + 48, so segment k ends on a packet boundary only when 48 (k + 1)
/// is a multiple of 50, when k + 1 is a multiple of 25: 24 of every 25 end inside a packet.
const MSS: usize = 1_448;
const CYCLE: usize = 25;

/// Feeds `segments` segments after `warm_up` ones; returns the allocations, the held transitions and
/// the orders read over the `segments`.
fn busy_session(warm_up: usize, segments: usize) -> (u64, Held, u64) {
    let total = (warm_up + segments) * MSS;
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
    let mut was: Option<i64> = None;
    let mut held = Held::default();
    let (mut before, mut read_before) = (0, 0);
    for (k, seg) in stream[..total].chunks(MSS).enumerate() {
        if k == warm_up {
            held = Held::default();
            (before, read_before) = (allocs(), read.get());
        }
        let frame = FrameRef { index: k as u64 + 1, time_ns: 1_000 * (k as i64 + 1) };
        s.segment(1 + (k * MSS) as u32, false, seg, frame, &mut out);
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
    (allocs() - before, held, read.get() - read_before)
}

/// Over 250 segments (10 cycles) after one cycle's warm-up. With `FRAMING_SLACK` at 1,024 bytes of room,
/// below what the framer keeps for a packet joined with a whole segment, each cycle (by hand, the tail
/// held after segment j of a cycle being 48 - 2j bytes, j from 0) allocates 3 times: the pieces' buffer
/// and the framer's for the first tail (48 bytes), both freed at the cycle's end, and the framer's grown
/// for the tail joined with the next segment (96 bytes doubled is less than 1,496). From the second
/// segment its room takes 1,496 + 4 pieces × 32 = 1,624 bytes: counted (held), then the first byte held
/// moves at every segment until the 25th ends on a boundary, where the buffers are freed (unheld).
#[test]
fn a_busy_sessions_framing_allocations_and_count() {
    let (allocations, held, orders) = busy_session(CYCLE, 10 * CYCLE);
    // 10 cycles of 25 segments carry 10 × 724 packets (36,200 bytes each).
    assert_eq!(orders, 10 * 724);
    assert_eq!((allocations, held), (10 * 3, Held { held: 10, unheld: 10, moved: 10 * 22 }));
}
