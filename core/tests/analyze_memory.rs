//! What a metric row costs: a capture with a thousand feeds (real NASDAQ ITCH from elk_nasdaq.pcap,
//! its packets spread over 500 ports on two groups, A and B) is analysed under a counting global
//! allocator, and the peak of live heap bytes must stay near what the rows' values need. Each feed has
//! a row in exchange_to_capture (feed A's) or feed_ab_delay (feed B's) with values of about a
//! millisecond. With a histogram sized for 1 ns..1 h per row, per open tally and per tally's spill,
//! the peak was 817 MB here (and 2.6 GB for a user's capture of 1,000 feeds); 139 MB now.
//!
//! The same allocator measures what an order never answered costs: its symbol stays for a Replace
//! of it until the bound (2^20 orders), which took 299 of the 377 MB peak of 2.4 M orders never
//! answered.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use wirestamp_core::analyze::report::Report;
use wirestamp_core::analyze::{AnalyzeConfig, Analyzer, MatchRule};
use wirestamp_core::dissect::{Transport, dissect};
use wirestamp_core::{ClockQuality, Frame, LinkType, TsSource};

// Per thread: the tests of this file run in parallel, each on its own thread, and each frees what
// it allocates on that thread.
thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

struct Counting;

fn grew(n: usize) {
    let live = LIVE.with(|l| {
        l.set(l.get() + n as isize);
        l.get()
    });
    PEAK.with(|p| p.set(p.get().max(live)));
}

fn shrank(n: usize) {
    LIVE.with(|l| l.set(l.get() - n as isize));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the only addition is two
// thread-local counters with const initialisation, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrank(layout.size());
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        shrank(layout.size());
        grew(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// elk_nasdaq's MoldUDP64 packets (real NASDAQ ITCH), each given by `copies(k)` (k: the packet's
/// number) as copies of (last byte of the destination address, destination port, ns later), with
/// the capture's link type.
fn elk_feed_copies(copies: impl Fn(usize) -> Vec<(u8, u16, i64)>) -> (Vec<(i64, Vec<u8>)>, LinkType) {
    let pcap = support::read_pcap(&wirestamp_testdata::data_file("pcap_market/elk_nasdaq.pcap"));
    let mut frames = Vec::new();
    let mut k = 0;
    for r in &pcap.records {
        let d = dissect(&r.data, pcap.link);
        let (Some(ip), Transport::Udp { dport: 26477, .. }) = (d.ip, d.transport) else { continue };
        assert!(ip.dst.is_ipv4(), "elk_nasdaq's feed is IPv4");
        for (addr_last, port, later) in copies(k) {
            let mut data = r.data.clone();
            // The UDP checksum is not checked.
            data[d.l3_offset + 19] = addr_last;
            data[d.payload_offset - 6..d.payload_offset - 4].copy_from_slice(&port.to_be_bytes());
            frames.push((r.ts_ns + later, data));
        }
        k += 1;
    }
    assert_eq!(k, 2_036, "elk_nasdaq's MoldUDP64 packets (data README)");
    (frames, pcap.link)
}

/// The report of `frames` analysed as `analyze` takes them (the fast path, else the general one).
fn analyze(frames: &[(i64, Vec<u8>)], link: LinkType) -> Report {
    let mut a = Analyzer::new(AnalyzeConfig::default());
    for (i, (t, data)) in frames.iter().enumerate() {
        let f = Frame::record(data, *t, link);
        if !a.frame_fast(i as u64, &f, |_| {}) {
            let d = dissect(data, link);
            a.frame(i as u64, *t, &f, &d, TsSource::PcapRecord, ClockQuality::default());
        }
    }
    a.finish();
    a.report()
}

#[test]
fn a_thousand_feeds_cost_what_their_values_need() {
    const PORTS: u16 = 500;
    // Each packet to port 20000 + k % 500 of group A (.1), and 1 us later to the same port of group B
    // (.2): 1,000 feeds, each with first copies (exchange_to_capture) or later ones (feed_ab_delay).
    let (frames, link) = elk_feed_copies(|k| {
        let port = 20_000 + k as u16 % PORTS;
        vec![(1, port, 0), (2, port, 1_000)]
    });
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let report = analyze(&frames, link);
    let peak = (PEAK.with(Cell::get) - before) as usize;
    assert_eq!(report.feeds.len(), 2 * usize::from(PORTS));
    let rows = |name: &str| report.metrics.iter().find(|m| m.name == name).map_or(0, |m| m.dims.len());
    // First copies come on A (exchange_to_capture rows), later ones on B (feed_ab_delay rows).
    assert_eq!((rows("exchange_to_capture"), rows("feed_ab_delay")), (500, 500));
    assert!(peak < 250 << 20, "peak heap {} MB for 1,000 feeds", peak >> 20);
}

/// Detection takes at most 1,024 feeds: elk_nasdaq's packets spread over 1,100 ports (in turn, so
/// ports 0..1,099 appear in that order), feeds are detected for the first 1,024, and the frames to
/// the other 76 are counted as not analysed, with a note.
#[test]
fn detection_stops_at_1024_feeds() {
    const PORTS: usize = 1_100;
    // One group (.111) for all.
    let (frames, link) = elk_feed_copies(|k| vec![(111, 20_000 + (k % PORTS) as u16, 0)]);
    let beyond = (0..frames.len()).filter(|i| i % PORTS >= 1_024).count() as u64;
    let r = analyze(&frames, link);
    assert_eq!(r.feeds.len(), 1_024);
    assert_eq!(r.counters.feeds_not_detected_frames, beyond);
    assert!(
        r.notes.iter().any(|n| n.contains(&format!("{beyond} more frames that look like MoldUDP64"))),
        "{:?}",
        r.notes
    );
}

/// One SoupBinTCP Unsequenced Data packet holding an OUCH 5.0 Enter Order: UserRefNum `n`, buy 100
/// AAPL, a ClOrdID without digits (no trigger to look for under the token rule).
fn enter_order(n: u32) -> Vec<u8> {
    let m = support::B::default()
        .c(b'O')
        .u32(n)
        .c(b'B')
        .u32(100)
        .s("AAPL", 8)
        .u64(1_000_000)
        .s("0YPNN", 5)
        .s("NODIGITS", 14)
        .c(0)
        .c(0);
    assert_eq!(m.0.len(), 47);
    let mut p = ((m.0.len() + 1) as u16).to_be_bytes().to_vec();
    p.push(b'U');
    p.extend_from_slice(&m.0);
    p
}

/// What an order never answered costs to remember for a Replace of it (its symbol, kept under the
/// symbol rule only): 100,000 Enter Orders 10 us apart on one connection, none answered, analysed
/// under each rule. Beyond what the token rule keeps of them (requests awaiting a response, the
/// same under both), the symbol rule's peak heap is 41 bytes an order, at most 64 allowed. With the
/// owner (48 bytes) and the id's enum (16) in each key, in the table and again in the queue that
/// bounds it, it was 191.
#[test]
fn an_order_never_answered_costs_little_to_remember() {
    const ORDERS: u32 = 100_000;
    let mut seq = 1;
    let frames: Vec<(i64, Vec<u8>)> = (1..=ORDERS)
        .map(|n| {
            let p = enter_order(n);
            let f = support::tcp_frame(true, 40001, 8003, seq, &p);
            seq += p.len() as u32;
            (1_796_049_000_000_000_000 + i64::from(n) * 10_000, f)
        })
        .collect();
    let peak = |matching: MatchRule| {
        let before = LIVE.with(Cell::get);
        PEAK.with(|p| p.set(before));
        let mut a = Analyzer::new(AnalyzeConfig { matching, ..AnalyzeConfig::default() });
        for (i, (t, data)) in frames.iter().enumerate() {
            let f = Frame::record(data, *t, LinkType::Ethernet);
            let d = dissect(data, LinkType::Ethernet);
            a.frame(i as u64, *t, &f, &d, TsSource::PcapRecord, ClockQuality::default());
        }
        a.finish();
        let r = a.report();
        assert_eq!((r.counters.orders, r.counters.awaiting_at_end), (u64::from(ORDERS), u64::from(ORDERS)));
        (PEAK.with(Cell::get) - before) as usize
    };
    let symbol = peak(MatchRule::parse("symbol").unwrap());
    let token = peak(MatchRule::parse(r"token:T(\d+)").unwrap());
    let per_order = symbol.saturating_sub(token) / ORDERS as usize;
    assert!(per_order <= 64, "{per_order} bytes an order (peak {symbol} under the symbol rule, {token} token)");
}
