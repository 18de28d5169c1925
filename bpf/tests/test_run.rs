//! BPF_PROG_TEST_RUN of the tc programs on hand-built frames: flow matching, field extraction, timestamp
//! choice and the malformed-packet counters. Needs root (CAP_BPF); no network namespace.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::Duration;

use wirestamp_bpf::{
    CaptureStats, FlowSpec, HookDirection, L4Proto, StampSource, TCX_NEXT, TcCapture, TcOptions, TestSkb, VlanMatch,
};

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);
const GW: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 2);
const HOST: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 1);

// ---- frame builders (plain byte layouts from the RFCs; checksums are not checked by the program) ----

fn eth(ethertype: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

/// Ethernet with VLAN tags `(tpid, vid)` outermost first, then `ethertype`.
fn eth_vlan(tags: &[(u16, u16)], ethertype: u16) -> Vec<u8> {
    let mut f = vec![0x02, 0, 0, 0, 0, 2, 0x02, 0, 0, 0, 0, 1];
    for (i, &(tpid, vid)) in tags.iter().enumerate() {
        if i == 0 {
            f.extend_from_slice(&tpid.to_be_bytes());
        }
        f.extend_from_slice(&vid.to_be_bytes()); // PCP 0, DEI 0
        let next = tags.get(i + 1).map_or(ethertype, |t| t.0);
        f.extend_from_slice(&next.to_be_bytes());
    }
    f
}

/// IPv4 header with `options` (a multiple of 4 bytes) for an L4 segment of `l4_len` bytes.
fn ipv4(src: Ipv4Addr, dst: Ipv4Addr, proto: u8, options: &[u8], l4_len: usize) -> Vec<u8> {
    let ihl = (20 + options.len()) / 4;
    let tot = (20 + options.len() + l4_len) as u16;
    let mut h = vec![0x40 | ihl as u8, 0];
    h.extend_from_slice(&tot.to_be_bytes());
    h.extend_from_slice(&[0x12, 0x34, 0x40, 0x00, 64, proto, 0, 0]); // id, DF, ttl, proto, csum
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h.extend_from_slice(options);
    h
}

fn ipv6(src: Ipv6Addr, dst: Ipv6Addr, next: u8, payload_len: usize) -> Vec<u8> {
    let mut h = vec![0x60, 0, 0, 0];
    h.extend_from_slice(&(payload_len as u16).to_be_bytes());
    h.extend_from_slice(&[next, 64]);
    h.extend_from_slice(&src.octets());
    h.extend_from_slice(&dst.octets());
    h
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    h.extend_from_slice(&[0, 0]);
    h.extend_from_slice(payload);
    h
}

fn tcp(sport: u16, dport: u16, seq: u32, ack: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&sport.to_be_bytes());
    h.extend_from_slice(&dport.to_be_bytes());
    h.extend_from_slice(&seq.to_be_bytes());
    h.extend_from_slice(&ack.to_be_bytes());
    h.extend_from_slice(&[5 << 4, flags, 0xff, 0xff, 0, 0, 0, 0]); // doff 5, window, csum, urg
    h.extend_from_slice(payload);
    h
}

fn udp4_frame(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let l4 = udp(sport, dport, payload);
    [eth(0x0800), ipv4(src, dst, 17, &[], l4.len()), l4].concat()
}

fn tcp4_frame(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, seq: u32, flags: u8, payload: &[u8]) -> Vec<u8> {
    let l4 = tcp(sport, dport, seq, 1000, flags, payload);
    [eth(0x0800), ipv4(src, dst, 6, &[], l4.len()), l4].concat()
}

/// An ITCH-like payload: bytes 0, 1, 2, ...
fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| i as u8).collect()
}

fn flows() -> Vec<FlowSpec> {
    vec![
        FlowSpec::udp_feed(7, IpAddr::V4(GROUP), 30001),
        FlowSpec::tcp_session(9, IpAddr::V4(GW), 9000),
        FlowSpec::udp_feed(11, IpAddr::V4(GROUP), 30002).with_vlan(VlanMatch::Id(100)),
        FlowSpec::udp_feed(13, "ff02::1:3".parse().unwrap(), 5353),
        FlowSpec {
            id: 15,
            proto: L4Proto::Udp,
            addr: None,
            port: 40000,
            vlan: VlanMatch::Untagged,
            match_dst: true,
            match_src: false,
        },
    ]
}

/// What one record says, owned, for comparisons.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    flow: u32,
    dir: HookDirection,
    src: SocketAddr,
    dst: SocketAddr,
    proto: u8,
    vlans: Vec<u16>,
    n_vlan: u8,
    seq: u32,
    flags: u8,
    off: u16,
    len: u16,
    payload: Vec<u8>,
    side: u8,
}

struct Harness {
    cap: TcCapture,
}

impl Harness {
    fn new(snap_len: u16) -> Self {
        let opts = TcOptions { snap_len, ..TcOptions::default() };
        Self { cap: TcCapture::load(&flows(), &opts).expect("load (needs root / CAP_BPF)") }
    }

    /// Runs `frame` through the program of `dir` and returns the records it produced.
    fn run(&mut self, dir: HookDirection, frame: &[u8], skb: &TestSkb) -> Vec<Rec> {
        assert_eq!(self.cap.test_run(dir, frame, skb).unwrap(), TCX_NEXT, "program must always pass");
        let mut out = Vec::new();
        self.cap
            .poll(Duration::ZERO, |r| {
                out.push(Rec {
                    flow: r.flow_id(),
                    dir: r.direction(),
                    src: r.src(),
                    dst: r.dst(),
                    proto: r.proto(),
                    vlans: r.vlans().to_vec(),
                    n_vlan: r.vlan_count(),
                    seq: r.tcp_seq(),
                    flags: r.tcp_flags(),
                    off: r.l4_payload_offset(),
                    len: r.l4_payload_len(),
                    payload: r.payload().to_vec(),
                    side: r.match_side(),
                })
            })
            .unwrap();
        out
    }

    fn ingress(&mut self, frame: &[u8]) -> Vec<Rec> {
        self.run(HookDirection::Ingress, frame, &TestSkb::default())
    }

    fn stats(&self) -> CaptureStats {
        self.cap.stats().unwrap()
    }
}

fn sa(ip: Ipv4Addr, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(ip), port)
}

#[test]
fn udp_feed_matched_with_payload_prefix() {
    let mut h = Harness::new(32);
    let pl = payload(100);
    let recs = h.ingress(&udp4_frame(HOST, GROUP, 5000, 30001, &pl));
    assert_eq!(
        recs,
        vec![Rec {
            flow: 7,
            dir: HookDirection::Ingress,
            src: sa(HOST, 5000),
            dst: sa(GROUP, 30001),
            proto: 17,
            vlans: vec![],
            n_vlan: 0,
            seq: 0,
            flags: 0,
            off: 14 + 20 + 8,
            len: 100,
            payload: pl[..32].to_vec(),
            side: 1,
        }]
    );
    // A payload shorter than the snap length is kept whole; an empty one gives an empty prefix.
    let recs = h.run(HookDirection::Egress, &udp4_frame(HOST, GROUP, 5000, 30001, &pl[..5]), &TestSkb::default());
    assert_eq!((recs[0].dir, recs[0].payload.clone(), recs[0].len), (HookDirection::Egress, pl[..5].to_vec(), 5));
    let recs = h.ingress(&udp4_frame(HOST, GROUP, 5000, 30001, &[]));
    assert_eq!((recs.len(), recs[0].payload.len(), recs[0].len), (1, 0, 0));
    let s = h.stats();
    assert_eq!((s.seen, s.matched, s.delivered, s.ringbuf_full, s.malformed), (3, 3, 3, 0, 0));
}

#[test]
fn other_ports_groups_and_protocols_not_matched() {
    let mut h = Harness::new(64);
    let pl = payload(20);
    assert!(h.ingress(&udp4_frame(HOST, GROUP, 5000, 30003, &pl)).is_empty(), "other port");
    assert!(h.ingress(&udp4_frame(HOST, Ipv4Addr::new(239, 1, 1, 2), 5000, 30001, &pl)).is_empty(), "other group");
    // The group's port as a source does not match: the feed is matched as destination only.
    assert!(h.ingress(&udp4_frame(GROUP, HOST, 30001, 5000, &pl)).is_empty(), "feed as source");
    // The gateway's endpoint over UDP is not the TCP session.
    assert!(h.ingress(&udp4_frame(HOST, GW, 5000, 9000, &pl)).is_empty(), "udp to the tcp endpoint");
    // Flow 11 is on VLAN 100 only: untagged does not match.
    assert!(h.ingress(&udp4_frame(HOST, GROUP, 5000, 30002, &pl)).is_empty(), "untagged vs vlan 100");
    // ARP is not IP.
    let mut arp = eth(0x0806);
    arp.extend_from_slice(&[0; 28]);
    assert!(h.ingress(&arp).is_empty());
    let s = h.stats();
    assert_eq!((s.seen, s.matched, s.unsupported, s.malformed), (6, 0, 1, 0));
}

#[test]
fn tcp_session_both_directions_with_seq_and_flags() {
    let mut h = Harness::new(64);
    let order = b"OENTER-ORDER-0001";
    let out =
        h.run(HookDirection::Egress, &tcp4_frame(HOST, GW, 40123, 9000, 0xdead_beef, 0x18, order), &TestSkb::default());
    assert_eq!(out.len(), 1);
    assert_eq!((out[0].flow, out[0].side, out[0].seq, out[0].flags), (9, 1, 0xdead_beef, 0x18));
    assert_eq!((out[0].off, out[0].len, out[0].payload.as_slice()), (54, order.len() as u16, &order[..]));
    let back = h.ingress(&tcp4_frame(GW, HOST, 9000, 40123, 7, 0x10, b""));
    assert_eq!(back.len(), 1);
    assert_eq!((back[0].flow, back[0].side, back[0].src, back[0].dst), (9, 2, sa(GW, 9000), sa(HOST, 40123)));
    assert_eq!((back[0].len, back[0].flags), (0, 0x10));
    // Another port on the gateway is another session.
    assert!(h.ingress(&tcp4_frame(GW, HOST, 9001, 40123, 7, 0x10, b"x")).is_empty());
}

#[test]
fn ipv4_options_shift_the_l4_header() {
    let mut h = Harness::new(64);
    let pl = payload(12);
    let l4 = udp(5000, 30001, &pl);
    // 8 bytes of options: NOP NOP, then a 6-byte timestamp-ish option body (content irrelevant).
    let frame = [eth(0x0800), ipv4(HOST, GROUP, 17, &[1, 1, 68, 6, 5, 0, 0, 0], l4.len()), l4].concat();
    let recs = h.ingress(&frame);
    assert_eq!(recs.len(), 1);
    assert_eq!(
        (recs[0].off, recs[0].len, recs[0].payload.clone(), recs[0].dst),
        (14 + 28 + 8, 12, pl, sa(GROUP, 30001))
    );
}

#[test]
fn vlan_tags_and_stacks() {
    let mut h = Harness::new(64);
    let pl = payload(4);
    let l4 = udp(5000, 30002, &pl);
    let ip = ipv4(HOST, GROUP, 17, &[], l4.len());
    let tagged = |tags: &[(u16, u16)]| [eth_vlan(tags, 0x0800), ip.clone(), l4.clone()].concat();
    // VLAN 100 matches flow 11, VLAN 200 does not.
    let recs = h.ingress(&tagged(&[(0x8100, 100)]));
    assert_eq!((recs.len(), recs[0].flow, recs[0].vlans.clone(), recs[0].off), (1, 11, vec![100], 14 + 4 + 28));
    assert!(h.ingress(&tagged(&[(0x8100, 200)])).is_empty());
    // QinQ (802.1ad outer 100, 802.1Q inner 20): matched on the outer id, both kept.
    let recs = h.ingress(&tagged(&[(0x88a8, 100), (0x8100, 20)]));
    assert_eq!((recs.len(), recs[0].vlans.clone(), recs[0].n_vlan, recs[0].off), (1, vec![100, 20], 2, 14 + 8 + 28));
    // Flow 7 (any VLAN) matches through a QinQ stack too.
    let l4_7 = udp(5000, 30001, &pl);
    let f7 = [eth_vlan(&[(0x88a8, 5), (0x8100, 6)], 0x0800), ipv4(HOST, GROUP, 17, &[], 12), l4_7].concat();
    assert_eq!(h.ingress(&f7)[0].flow, 7);
    // Three in-data tags: more than the program walks, counted as unsupported.
    assert!(h.ingress(&tagged(&[(0x88a8, 100), (0x8100, 20), (0x8100, 30)])).is_empty());
    // Flow 15: any address, port 40000, untagged only.
    let any = udp4_frame(HOST, Ipv4Addr::new(192, 0, 2, 9), 1, 40000, &pl);
    assert_eq!(h.ingress(&any)[0].flow, 15);
    let any_tagged = [eth_vlan(&[(0x8100, 7)], 0x0800), ipv4(HOST, GROUP, 17, &[], 12), udp(1, 40000, &pl)].concat();
    assert!(h.ingress(&any_tagged).is_empty());
    let s = h.stats();
    assert_eq!((s.seen, s.matched, s.unsupported), (7, 4, 1));
}

#[test]
fn ipv6_udp_and_extension_headers() {
    let mut h = Harness::new(64);
    let pl = payload(9);
    let l4 = udp(5353, 5353, &pl);
    let src: Ipv6Addr = "fe80::1".parse().unwrap();
    let dst: Ipv6Addr = "ff02::1:3".parse().unwrap();
    let frame = [eth(0x86dd), ipv6(src, dst, 17, l4.len()), l4.clone()].concat();
    let recs = h.ingress(&frame);
    assert_eq!(recs.len(), 1);
    assert_eq!(
        (recs[0].flow, recs[0].dst, recs[0].off, recs[0].len),
        (13, SocketAddr::new(IpAddr::V6(dst), 5353), 62, 9)
    );
    // A hop-by-hop header (next header 0) is not walked: unsupported, not misparsed.
    let mut hbh = vec![17, 0, 1, 4, 0, 0, 0, 0];
    hbh.extend_from_slice(&l4);
    let frame = [eth(0x86dd), ipv6(src, dst, 0, hbh.len()), hbh].concat();
    assert!(h.ingress(&frame).is_empty());
    assert_eq!(h.stats().unsupported, 1);
}

#[test]
fn malformed_frames_are_counted_not_matched() {
    let mut h = Harness::new(64);
    let pl = payload(10);
    let good = udp4_frame(HOST, GROUP, 5000, 30001, &pl);
    let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
    // BPF_PROG_TEST_RUN refuses an IPv4 (IPv6) ethertype with less than 20 (40) bytes after the Ethernet
    // header, so truncated IP headers are built behind a VLAN tag, where the kernel does not look.
    let tagged = [eth_vlan(&[(0x8100, 100)], 0x0800), good[14..].to_vec()].concat();
    cases.push(("ipv4 header of 1 byte behind a vlan tag", tagged[..19].to_vec()));
    cases.push(("ipv4 header cut at 10 bytes behind a vlan tag", tagged[..18 + 10].to_vec()));
    let v6 =
        [eth_vlan(&[(0x8100, 100)], 0x86dd), ipv6("fe80::1".parse().unwrap(), "ff02::1:3".parse().unwrap(), 17, 8)]
            .concat();
    cases.push(("ipv6 header cut at 39 bytes behind a vlan tag", v6[..18 + 39].to_vec()));
    cases.push(("udp header cut at 4 bytes", good[..14 + 20 + 4].to_vec()));
    let mut ihl4 = good.clone();
    ihl4[14] = 0x44;
    cases.push(("ihl 4", ihl4));
    let mut v5 = good.clone();
    v5[14] = 0x55;
    cases.push(("ip version 5", v5));
    let mut tot_short = good.clone();
    tot_short[16..18].copy_from_slice(&16u16.to_be_bytes());
    cases.push(("total length below the header", tot_short));
    let mut udp_long = good.clone();
    udp_long[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&200u16.to_be_bytes());
    cases.push(("udp length past the datagram", udp_long));
    let mut udp_tiny = good.clone();
    udp_tiny[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&4u16.to_be_bytes());
    cases.push(("udp length below 8", udp_tiny));
    let mut doff = tcp4_frame(HOST, GW, 1, 9000, 1, 0x18, b"abc");
    doff[14 + 20 + 12] = 4 << 4;
    cases.push(("tcp data offset 4", doff));
    let mut doff_long = tcp4_frame(HOST, GW, 1, 9000, 1, 0x18, b"abc");
    doff_long[14 + 20 + 12] = 15 << 4;
    cases.push(("tcp header past the datagram", doff_long));
    cases.push(("vlan tag cut", eth_vlan(&[(0x8100, 100)], 0x0800)[..16].to_vec()));
    let n = cases.len() as u64;
    for (what, frame) in &cases {
        let rc = h.cap.test_run(HookDirection::Ingress, frame, &TestSkb::default());
        assert_eq!(rc.as_ref().ok(), Some(&TCX_NEXT), "{what}: {rc:?}");
        assert_eq!(h.cap.poll(Duration::ZERO, |r| panic!("{what}: unexpected record {r:?}")).unwrap(), 0);
    }
    let s = h.stats();
    assert_eq!((s.seen, s.malformed, s.matched), (n, n, 0));
    // A non-first fragment has no UDP header: counted as a fragment.
    let mut frag = good.clone();
    frag[20..22].copy_from_slice(&0x0001u16.to_be_bytes()); // offset 8 bytes
    assert!(h.ingress(&frag).is_empty());
    assert_eq!(h.stats().fragments, 1);
}

/// BPF_PROG_TEST_RUN can set skb->tstamp and the hardware stamp but not tstamp_type (always REALTIME
/// here); the MONOTONIC case (TCP's departure time) is covered by the netns test.
#[test]
fn timestamp_source_choice() {
    let mut h = Harness::new(0);
    let frame = udp4_frame(HOST, GROUP, 5000, 30001, &payload(3));
    let mut stamps = Vec::new();
    let cases = [
        (
            TestSkb { hwtstamp: 1_700_000_000_123_456_789, tstamp: 5, ..TestSkb::default() },
            StampSource::Hardware,
            Some(1_700_000_000_123_456_789),
        ),
        (
            TestSkb { tstamp: 1_700_000_000_000_000_001, ..TestSkb::default() },
            StampSource::SkbRealtime,
            Some(1_700_000_000_000_000_001),
        ),
        (TestSkb::default(), StampSource::HookTai, None),
    ];
    for (skb, want_src, want_ts) in cases {
        let before = clock_tai_ns();
        assert_eq!(h.cap.test_run(HookDirection::Ingress, &frame, &skb).unwrap(), TCX_NEXT);
        let after = clock_tai_ns();
        h.cap
            .poll(Duration::ZERO, |r| {
                assert_eq!(r.ts_source(), want_src, "{skb:?}");
                assert_eq!(r.skb_tstamp(), (skb.tstamp, 0));
                assert_eq!(r.skb_hwtstamp(), skb.hwtstamp);
                assert!(r.hook_tai_ns() >= before && r.hook_tai_ns() <= after, "hook time within the call");
                assert_eq!(r.ts_ns(), want_ts.unwrap_or(r.hook_tai_ns()));
                assert!(r.payload().is_empty(), "snap_len 0 keeps no payload");
                stamps.push(r.ts_ns());
            })
            .unwrap();
    }
    assert_eq!(stamps.len(), 3);
}

fn clock_tai_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write to.
    assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_TAI, &mut ts) }, 0);
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[test]
fn ring_full_is_counted() {
    let opts = TcOptions { ring_bytes: 4096, ..TcOptions::default() };
    let cap = TcCapture::load(&flows(), &opts).unwrap();
    let frame = udp4_frame(HOST, GROUP, 5000, 30001, &payload(8));
    // 4096 bytes hold 10 records of 368 + 8 header bytes; the rest of 20 must be counted as lost.
    for _ in 0..20 {
        cap.test_run(HookDirection::Ingress, &frame, &TestSkb::default()).unwrap();
    }
    let s = cap.stats().unwrap();
    assert_eq!((s.matched, s.ringbuf_full), (20, 10));
}

#[test]
fn a_panicking_callback_unwinds_through_poll() {
    let h = Harness::new(8);
    let frame = udp4_frame(HOST, GROUP, 5000, 30001, &payload(8));
    h.cap.test_run(HookDirection::Ingress, &frame, &TestSkb::default()).unwrap();
    h.cap.test_run(HookDirection::Ingress, &frame, &TestSkb::default()).unwrap();
    let mut cap = h.cap;
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        cap.poll(Duration::ZERO, |_| panic!("callback bug")).unwrap();
    }));
    let msg = caught.expect_err("the panic reaches the caller").downcast::<&str>().unwrap();
    assert_eq!(*msg, "callback bug");
    // The record being handled when the panic happened was consumed; the next one is still there.
    assert_eq!(cap.poll(Duration::ZERO, |r| assert_eq!(r.flow_id(), 7)).unwrap(), 1);
}

#[test]
fn frame_prefix_mode_copies_the_headers_then_the_snap_length_of_payload() {
    let snap = 20u16;
    let opts = TcOptions { snap_len: snap, frame_prefix: true, ..TcOptions::default() };
    let mut cap = TcCapture::load(&flows(), &opts).expect("load (needs root / CAP_BPF)");
    let run = |cap: &mut TcCapture, frame: &[u8]| {
        assert_eq!(cap.test_run(HookDirection::Ingress, frame, &TestSkb::default()).unwrap(), TCX_NEXT);
        let mut out = Vec::new();
        cap.poll(Duration::ZERO, |r| {
            out.push((r.captured().to_vec(), r.captured_offset(), r.payload().to_vec(), r.skb_len()))
        })
        .unwrap();
        out
    };
    // UDP over IPv4 with 8 bytes of options: 14 + 28 + 8 = 50 header bytes, then 20 of the 100 payload.
    let p = payload(100);
    let l4 = udp(5555, 30001, &p);
    let frame = [eth(0x0800), ipv4(HOST, GROUP, 17, &[1, 1, 1, 0, 1, 1, 1, 0], l4.len()), l4].concat();
    let got = run(&mut cap, &frame);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, frame[..70].to_vec(), "headers then 20 payload bytes");
    assert_eq!(got[0].1, 0, "from the Ethernet header");
    assert_eq!(got[0].2, p[..20].to_vec(), "payload() is the L4 payload in either mode");
    assert_eq!(got[0].3, 150, "wire length 14 + 28 + 8 + 100");
    // A short payload: the whole frame, no more.
    let frame = tcp4_frame(HOST, GW, 40001, 9000, 7, 0x18, &p[..5]);
    let got = run(&mut cap, &frame);
    assert_eq!(got[0].0, frame, "59 bytes: 14 + 20 + 20 + 5");
    assert_eq!(got[0].2, p[..5].to_vec());
    // 40 bytes of IPv4 options: 14 + 60 + 8 header bytes, then 20 of payload.
    let l4 = udp(5555, 30001, &payload(300));
    let frame = [eth(0x0800), ipv4(HOST, GROUP, 17, &[1u8; 40], l4.len()), l4].concat();
    let got = run(&mut cap, &frame);
    assert_eq!(got[0].0, frame[..102].to_vec());
    // The record holds 256 bytes at most: at snap 256, the frame is cut there, headers included.
    let big = TcOptions { snap_len: 256, frame_prefix: true, ..TcOptions::default() };
    let mut cap = TcCapture::load(&flows(), &big).unwrap();
    let p = payload(300);
    let frame = udp4_frame(HOST, GROUP, 5555, 30001, &p);
    let got = run(&mut cap, &frame);
    assert_eq!(got[0].0, frame[..256].to_vec());
    assert_eq!(got[0].2, p[..256 - 42].to_vec());
}

/// Whether the kernel has signalled the capture's ring (its epoll fd readable), waiting up to 20 ms for
/// the wakeup's irq_work to land.
fn signalled(cap: &TcCapture) -> bool {
    let mut p = libc::pollfd { fd: cap.wait_fd().as_raw_fd(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, 20) };
    assert!(n >= 0, "poll: {}", std::io::Error::last_os_error());
    n == 1
}

#[test]
fn batched_wakeup_signals_the_reader_only_when_the_backlog_crosses_wake_bytes() {
    // A ring record is the 368-byte sample plus the ring's 8-byte header: 376 bytes. The threshold is
    // four records' worth, so the fourth record crosses it.
    let opts = TcOptions { ring_bytes: 64 << 10, wake_bytes: 4 * 376, ..TcOptions::default() };
    let mut cap = TcCapture::load(&flows(), &opts).unwrap();
    let frame = udp4_frame(HOST, GROUP, 5000, 30001, &payload(8));
    let one = |cap: &TcCapture| cap.test_run(HookDirection::Ingress, &frame, &TestSkb::default()).unwrap();
    for _ in 0..3 {
        one(&cap);
    }
    assert!(!signalled(&cap), "3 records (1128 bytes) under the 1504-byte threshold: no wakeup");
    one(&cap);
    assert!(signalled(&cap), "the 4th record reaches 1504 bytes: one wakeup");
    one(&cap);
    assert_eq!(cap.poll(Duration::ZERO, |r| assert_eq!(r.flow_id(), 7)).unwrap(), 5);
    // Drained. (Checking the epoll fd on the empty ring also drops the ring from epoll's ready list,
    // where the last wakeup left it: from here only a new wakeup makes it readable.)
    assert!(!signalled(&cap), "an empty ring is not readable");
    // A single record is not signalled, yet a waiting poll finds it (the reader's timer).
    one(&cap);
    assert!(!signalled(&cap), "1 record after draining: no wakeup");
    let t = std::time::Instant::now();
    assert_eq!(cap.poll(Duration::from_secs(5), |_| {}).unwrap(), 1);
    assert!(t.elapsed() < Duration::from_secs(1), "found at once, not at the poll's timeout: {:?}", t.elapsed());
    // An endless timeout (no deadline) still returns as soon as a record is there.
    one(&cap);
    assert_eq!(cap.poll(Duration::MAX, |_| {}).unwrap(), 1);
    // Nothing there: the poll waits its whole timeout, reading the ring each millisecond meanwhile.
    let t = std::time::Instant::now();
    assert_eq!(cap.poll(Duration::from_millis(30), |_| {}).unwrap(), 0);
    assert!(t.elapsed() >= Duration::from_millis(30), "returned early: {:?}", t.elapsed());
    let s = cap.stats().unwrap();
    assert_eq!((s.matched, s.delivered, s.ringbuf_full), (7, 7, 0));
}

#[test]
fn wake_bytes_zero_keeps_the_kernels_wakeup_per_record() {
    let opts = TcOptions { wake_bytes: 0, ..TcOptions::default() };
    let mut cap = TcCapture::load(&flows(), &opts).unwrap();
    let frame = udp4_frame(HOST, GROUP, 5000, 30001, &payload(8));
    assert!(!signalled(&cap), "an empty ring is not signalled");
    cap.test_run(HookDirection::Ingress, &frame, &TestSkb::default()).unwrap();
    assert!(signalled(&cap), "one record: one wakeup (the reader was caught up)");
    assert_eq!(cap.poll(Duration::from_secs(1), |_| {}).unwrap(), 1);
}

#[test]
fn a_drain_interval_under_a_millisecond_is_refused() {
    let opts = TcOptions { drain_interval: Duration::from_micros(500), ..TcOptions::default() };
    let err = TcCapture::load(&flows(), &opts).unwrap_err().to_string();
    assert!(err.contains("drain_interval 500µs under 1 ms"), "{err}");
}
