//! Live capture for real, between two network namespaces joined by a veth pair (needs root).
//! veth has no hardware timestamping (kernel.md 3a/3b), so these exercise the software path and the
//! EOPNOTSUPP fallback as they happen on this kernel.

mod netns;

use netns::{ADDR_A, ADDR_B, VethPair, netstamp_holder, realtime_ns};
use std::net::UdpSocket;
use std::time::Duration;
use wirestamp_capture::live::{AfPacket, HwTsGuard, Ioctl, LiveError, RingConfig, TsMode, ts_info};
use wirestamp_core::{Direction, TsSource};

const N: u32 = 25;
const PORT: u16 = 40000;

#[test]
fn veth_has_software_timestamping_only_and_hw_enable_falls_back() {
    let pair = VethPair::new();
    let (info, mode, state_left) = pair.a.run(|| {
        let dir = std::env::temp_dir().join(format!("wirestamp-live-state-{}", std::process::id()));
        let info = ts_info("va").unwrap();
        let g = HwTsGuard::enable(Ioctl::new().unwrap(), "va", &dir, false).unwrap();
        let left = dir.join("hwtstamp-va.state").exists();
        (info, g.mode.clone(), left)
    });
    // kernel.md 3b: veth answers so_timestamping 0x1a, phc_index -1, no tx types, no rx filters.
    assert_eq!(info.so_timestamping, 0x1a);
    assert_eq!(info.phc_index, None);
    assert_eq!((info.tx_types, info.rx_filters), (0, 0));
    assert_eq!(info.capability_names(), ["software-transmit", "software-receive", "software-system-clock"]);
    // kernel.md 3a: SIOCGHWTSTAMP on veth is EOPNOTSUPP (95).
    match &mode {
        TsMode::Software { reason } => assert!(reason.contains("os error 95"), "{reason}"),
        m => panic!("expected the software fallback, got {m:?}"),
    }
    assert!(mode.describe("va").starts_with("va: SOFTWARE timestamps"));
    assert!(!state_left, "nothing changed, so nothing to restore");
    let e = pair.a.run(|| ts_info("nosuch0").unwrap_err());
    assert!(matches!(e, LiveError::NoSuchInterface { .. }), "{e}");
}

/// Sends N datagrams from `src` to `dst:PORT`, each tagged with `tag` and its index; returns the
/// CLOCK_REALTIME interval around each send.
fn send_all(src: &UdpSocket, dst: &str, tag: u8) -> Vec<(i64, i64)> {
    (0..N)
        .map(|i| {
            let mut msg = *b"wirestamp-test-_0000";
            msg[15] = tag;
            msg[16..20].copy_from_slice(&i.to_be_bytes());
            let t0 = realtime_ns();
            src.send_to(&msg, (dst, PORT)).unwrap();
            let t1 = realtime_ns();
            std::thread::sleep(Duration::from_millis(2));
            (t0, t1)
        })
        .collect()
}

#[test]
fn both_directions_with_software_timestamps_inside_the_send_interval() {
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let sock_a = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let sock_b = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());

    let mut ring = pair.a.run(|| {
        let mut c = RingConfig::new("va");
        c.filter = Some(format!("udp port {PORT}"));
        c.block_size = 1 << 16;
        c.block_nr = 4;
        c.interface_id = 3;
        AfPacket::open(&c).unwrap()
    });
    // The reader runs while the datagrams are sent, as a capture does.
    let (seen, stats, out_iv, in_iv) = std::thread::scope(|sc| {
        let reader = sc.spawn(|| {
            let mut seen: Vec<(u8, u32, i64, Direction, TsSource, u32)> = Vec::new();
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while seen.len() < 2 * N as usize && std::time::Instant::now() < deadline {
                let Some(f) = ring.next_frame(Duration::from_millis(50)).unwrap() else { continue };
                // Ethernet 14 + IPv4 20 + UDP 8, then the 20-byte message.
                let p = &f.data[42..];
                assert_eq!(&p[..15], b"wirestamp-test-", "only the test's datagrams pass the filter");
                let idx = u32::from_be_bytes(p[16..20].try_into().unwrap());
                assert_eq!(f.interface, 3);
                assert_eq!(f.wire_len, 62);
                seen.push((p[15], idx, f.ts_ns, f.direction, f.ts_source, f.caplen()));
            }
            // Nothing more arrives.
            assert!(ring.next_frame(Duration::from_millis(100)).unwrap().is_none());
            (seen, ring.stats().unwrap())
        });
        let out_iv = send_all(&sock_a, ADDR_B, b'A');
        let in_iv = send_all(&sock_b, ADDR_A, b'B');
        let (seen, stats) = reader.join().unwrap();
        (seen, stats, out_iv, in_iv)
    });
    let outb: Vec<_> = seen.iter().filter(|s| s.3 == Direction::Outbound).collect();
    let inb: Vec<_> = seen.iter().filter(|s| s.3 == Direction::Inbound).collect();
    assert_eq!((outb.len(), inb.len()), (N as usize, N as usize), "{stats:?} {seen:?}");
    assert_eq!((stats.kernel_packets, stats.kernel_drops), (2 * N as u64, 0));
    assert_eq!(stats.ts_software, 2 * N as u64, "every frame carries TP_STATUS_TS_SOFTWARE");
    for (dir, frames, iv, tag) in [("out", &outb, &out_iv, b'A'), ("in", &inb, &in_iv, b'B')] {
        for (k, f) in frames.iter().enumerate() {
            assert_eq!((f.0, f.1 as usize), (tag, k), "{dir}: frames in send order");
            assert_eq!(f.4, TsSource::KernelSoftware);
            assert_eq!(f.5, 62);
            let (t0, t1) = iv[k];
            assert!(t0 <= f.2 && f.2 <= t1, "{dir} #{k}: ts {} outside the send interval [{t0}, {t1}]", f.2);
            if k > 0 {
                assert!(f.2 > frames[k - 1].2, "{dir}: timestamps increase");
            }
        }
    }
}

#[test]
fn open_errors_are_clear() {
    let pair = VethPair::new();
    let e = pair.a.run(|| AfPacket::open(&RingConfig::new("nosuch0")).err().unwrap());
    assert!(matches!(e, LiveError::NoSuchInterface { .. }), "{e}");
    assert!(e.to_string().contains("\"nosuch0\" does not exist"), "{e}");
    pair.a.ip(&["link", "set", "va", "down"]);
    let e = pair.a.run(|| AfPacket::open(&RingConfig::new("va")).err().unwrap());
    assert!(matches!(e, LiveError::InterfaceDown { .. }), "{e}");
    assert!(e.to_string().contains("ip link set va up"), "{e}");
    let e = pair.b.run(|| {
        let mut c = RingConfig::new("vb");
        c.filter = Some("udp port notaport".into());
        AfPacket::open(&c).err().unwrap()
    });
    assert!(matches!(e, LiveError::BadFilter { .. }), "{e}");
}

#[test]
fn a_ring_nobody_reads_counts_exactly_what_it_dropped() {
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let sock_a = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sock_b = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    let mut ring = pair.a.run(|| {
        let mut c = RingConfig::new("va");
        c.filter = Some(format!("udp port {PORT}"));
        c.block_size = 1 << 16;
        c.block_nr = 2;
        AfPacket::open(&c).unwrap()
    });
    send_all(&sock_a, ADDR_B, b'A'); // 2 ms apart: blocks retire (10 ms) and the 2-block ring fills.
    let mut delivered = 0u64;
    while ring.next_frame(Duration::from_millis(100)).unwrap().is_some() {
        delivered += 1;
    }
    let st = ring.stats().unwrap();
    assert_eq!(st.kernel_packets, N as u64, "every sent datagram passed the filter");
    assert!(st.kernel_drops > 0, "{st:?}");
    assert_eq!(delivered + st.kernel_drops, N as u64, "delivered + dropped = sent: {st:?}");
}
