//! How fast one core drains and decodes tc capture records, with zero loss (issue 6, "Cost").
//!
//! Fills a 256 MiB ring with records of a constructed UDP market-data frame through
//! BPF_PROG_TEST_RUN (the kernel loops, nothing is read meanwhile, so nothing competes with the drain),
//! checks none was lost, then times one thread draining the whole ring and reading every record's
//! fields and payload prefix. Run once, as root, in release:
//!
//!     cargo run --release -p wirestamp-bpf --example drain_rate
//!
//! Prints records, seconds, records per second, and ns per record.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use wirestamp_bpf::{FlowSpec, HookDirection, TcCapture, TcOptions, TestSkb};

fn main() {
    let flows = [FlowSpec::udp_feed(1, IpAddr::V4(Ipv4Addr::new(239, 1, 1, 1)), 30001)];
    let opts = TcOptions { snap_len: 64, ring_bytes: 256 << 20, ..TcOptions::default() };
    let mut cap = TcCapture::load(&flows, &opts).expect("load (root needed)");
    // Ethernet, IPv4 (10.0.0.1 -> 239.1.1.1), UDP 5000 -> 30001, 64-byte payload.
    let mut frame = vec![0x01, 0x00, 0x5e, 0x01, 0x01, 0x01, 0x02, 0, 0, 0, 0, 1, 0x08, 0x00];
    frame.extend_from_slice(&[0x45, 0, 0, 92, 0, 0, 0x40, 0, 1, 17, 0, 0, 10, 0, 0, 1, 239, 1, 1, 1]);
    frame.extend_from_slice(&[0x13, 0x88, 0x75, 0x31, 0, 72, 0, 0]);
    frame.extend((0..64u8).map(|i| i.wrapping_mul(7)));
    // 376 bytes per record (368 + the ring's 8-byte header): 700 000 fit in 256 MiB.
    let n: u32 = 700_000;
    let t0 = Instant::now();
    cap.test_run_repeat(HookDirection::Ingress, &frame, &TestSkb::default(), n).expect("test run");
    let fill = t0.elapsed();
    let before = cap.stats().unwrap();
    assert_eq!((before.matched, before.ringbuf_full), (u64::from(n), 0), "ring filled without loss");

    let mut sum = 0u64;
    let mut records = 0u64;
    let t1 = Instant::now();
    while cap
        .poll(Duration::ZERO, |r| {
            records += 1;
            sum = sum
                .wrapping_add(r.ts_ns())
                .wrapping_add(u64::from(r.flow_id()))
                .wrapping_add(u64::from(r.dst().port()))
                .wrapping_add(r.payload().iter().map(|&b| u64::from(b)).sum::<u64>());
        })
        .unwrap()
        > 0
    {}
    let drain = t1.elapsed();
    let after = cap.stats().unwrap();
    assert_eq!((records, after.bad_records, after.ringbuf_full), (u64::from(n), 0, 0));
    let ns = drain.as_nanos() as u64;
    println!(
        "fill: {n} records in {:.3} s; drain+decode: {records} records in {:.3} s = {} records/s ({} ns/record) [checksum {sum}]",
        fill.as_secs_f64(),
        drain.as_secs_f64(),
        u64::from(n) * 1_000_000_000 / ns.max(1),
        ns / records.max(1),
    );
}
