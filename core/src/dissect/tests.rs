use super::*;
use std::net::{Ipv4Addr, Ipv6Addr};

const DST: [u8; 6] = [0x01, 0x00, 0x5e, 0x36, 0x0c, 0x6f];
const SRC: [u8; 6] = [0x00, 0x1c, 0x73, 0xaa, 0xbb, 0xcc];

fn eth(tags: &[(u16, u16)], etype: u16) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&DST);
    f.extend_from_slice(&SRC);
    for &(tpid, vid) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&etype.to_be_bytes());
    f
}

fn ipv4(proto: u8, payload: &[u8], flags_frag: u16) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut h = vec![0x45, 0];
    h.extend_from_slice(&total.to_be_bytes());
    h.extend_from_slice(&[0, 1]);
    h.extend_from_slice(&flags_frag.to_be_bytes());
    h.extend_from_slice(&[64, proto, 0, 0, 10, 0, 0, 1, 233, 54, 12, 111]);
    h.extend_from_slice(payload);
    h
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend_from_slice(&sport.to_be_bytes());
    u.extend_from_slice(&dport.to_be_bytes());
    u.extend_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    u.extend_from_slice(&[0, 0]);
    u.extend_from_slice(payload);
    u
}

fn tcp(seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut t = Vec::new();
    t.extend_from_slice(&40000u16.to_be_bytes());
    t.extend_from_slice(&8003u16.to_be_bytes());
    t.extend_from_slice(&seq.to_be_bytes());
    t.extend_from_slice(&7u32.to_be_bytes());
    t.extend_from_slice(&[0x60, 0x18, 0xff, 0xff, 0, 0, 0, 0]);
    t.extend_from_slice(&[2, 4, 0x05, 0xb4]); // MSS option: 24-byte header
    t.extend_from_slice(payload);
    t
}

#[test]
fn qinq_udp_with_padding_and_trailer() {
    let mut f = eth(&[(0x88a8, 100), (0x8100, 3050)], 0x0800);
    f.extend(ipv4(17, &udp(52086, 26477, b"hello"), 0));
    let ip_end = f.len();
    f.extend_from_slice(&[0u8; 7]); // padding / trailer bytes beyond the datagram
    let d = dissect(&f, LinkType::Ethernet);
    assert_eq!(d.anomaly, None);
    assert_eq!(d.vlan_count, 2);
    assert_eq!(d.vlans, [100, 3050]);
    assert_eq!(d.ethertype, 0x0800);
    assert_eq!(d.l3_offset, 22);
    let ip = d.ip.unwrap();
    assert_eq!(ip.src, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 1)));
    assert_eq!(ip.dst, IpAddr::V4(Ipv4Addr::new(233, 54, 12, 111)));
    assert_eq!(ip.end, ip_end);
    assert_eq!(d.transport, Transport::Udp { sport: 52086, dport: 26477 });
    assert_eq!(d.payload_offset, 22 + 20 + 8);
    assert_eq!(d.payload(&f), b"hello");
}

#[test]
fn tcp_with_options() {
    let mut f = eth(&[], 0x0800);
    f.extend(ipv4(6, &tcp(0x01020304, b"\x00\x03U\x01\x02"), 0));
    let d = dissect(&f, LinkType::Ethernet);
    assert_eq!(d.anomaly, None);
    assert_eq!(d.transport, Transport::Tcp { sport: 40000, dport: 8003, seq: 0x01020304, ack: 7, flags: 0x18 });
    assert_eq!(d.payload_offset, 14 + 20 + 24);
    assert_eq!(d.payload_len, 5);
}

#[test]
fn ipv4_fragments_are_not_reassembled() {
    let mut first = eth(&[], 0x0800);
    first.extend(ipv4(17, &udp(1, 2, &[9; 16]), 0x2000));
    let d = dissect(&first, LinkType::Ethernet);
    assert_eq!(d.ip.unwrap().fragment, Fragment::First);
    assert_eq!(d.transport, Transport::Udp { sport: 1, dport: 2 });
    let mut later = eth(&[], 0x0800);
    later.extend(ipv4(17, &[9; 16], 3));
    let d = dissect(&later, LinkType::Ethernet);
    assert_eq!(d.ip.unwrap().fragment, Fragment::Later);
    assert_eq!(d.transport, Transport::None);
    assert_eq!(d.anomaly, None);
}

#[test]
fn ipv6_udp_over_sll() {
    let mut f = vec![0, 4, 0, 1, 0, 6, 1, 2, 3, 4, 5, 6, 0, 0, 0x86, 0xdd];
    let payload = udp(5000, 5001, b"xyz");
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    f.extend_from_slice(&[17, 64]);
    f.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
    f.extend_from_slice(&"2001:db8::2".parse::<Ipv6Addr>().unwrap().octets());
    f.extend(payload);
    let d = dissect(&f, LinkType::LinuxSll);
    assert_eq!(d.anomaly, None);
    assert_eq!(d.link_direction, Direction::Outbound);
    assert_eq!(d.ip.unwrap().dst, "2001:db8::2".parse::<IpAddr>().unwrap());
    assert_eq!(d.payload(&f), b"xyz");
}

#[test]
fn null_and_raw_links() {
    let ip = ipv4(17, &udp(1, 2, b"a"), 0);
    let mut le = vec![2, 0, 0, 0];
    le.extend_from_slice(&ip);
    assert_eq!(dissect(&le, LinkType::Null).transport, Transport::Udp { sport: 1, dport: 2 });
    let mut be = vec![0, 0, 0, 2];
    be.extend_from_slice(&ip);
    assert_eq!(dissect(&be, LinkType::Loop).transport, Transport::Udp { sport: 1, dport: 2 });
    assert_eq!(dissect(&ip, LinkType::Raw).transport, Transport::Udp { sport: 1, dport: 2 });
    // A null header holding an EtherType in the "wrong" order (seen in pcapplusplus's null_loopback.pcap).
    let mut et = vec![0x0f, 0x00, 0x08, 0x00];
    et.extend_from_slice(&ip);
    assert_eq!(dissect(&et, LinkType::Null).transport, Transport::Udp { sport: 1, dport: 2 });
    // Big-endian AF_INET6 (Darwin's 30) on LINKTYPE_NULL.
    assert_eq!(null_family([0, 0, 0, 30]), 30);
    assert_eq!(null_family([30, 0, 0, 0]), 30);
    assert_eq!(dissect(&ip, LinkType::Ipv4).l3_offset, 0);
}

#[test]
fn arista_7280_header_is_skipped() {
    // 64-bit UTC header: subtype 1, version 0x0110, sec, ns, then the IPv4 EtherType.
    let mut f = eth(&[], 0xd28b);
    f.extend_from_slice(&[0, 1, 0x01, 0x10]);
    f.extend_from_slice(&1_700_000_000u32.to_be_bytes());
    f.extend_from_slice(&123_456_789u32.to_be_bytes());
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend(ipv4(17, &udp(7, 8, b"q"), 0));
    let d = dissect(&f, LinkType::Ethernet);
    assert_eq!(d.anomaly, None);
    assert_eq!(d.tap_header, Some(TapHeader { offset: 12, len: 14 }));
    assert_eq!(d.l3_offset, 28);
    assert_eq!(d.payload(&f), b"q");
}

#[test]
fn anomalies_name_layer_and_offset() {
    let mut f = eth(&[(0x8100, 5)], 0x0800);
    f.extend(ipv4(17, &udp(1, 2, b"abc"), 0));
    // Cut inside the UDP header.
    let d = dissect(&f[..18 + 20 + 4], LinkType::Ethernet);
    assert_eq!(
        d.anomaly,
        Some(Anomaly { layer: Layer::Udp, offset: 38, error: WireError::Truncated { need: 8, have: 4 } })
    );
    assert!(d.ip.is_some());
    // Cut inside the VLAN tag.
    let d = dissect(&f[..16], LinkType::Ethernet);
    assert_eq!(d.anomaly.unwrap().layer, Layer::Vlan);
    assert_eq!(d.anomaly.unwrap().offset, 12);
    // UDP length longer than the datagram.
    let mut bad = f.clone();
    bad[18 + 20 + 5] = 200;
    let d = dissect(&bad, LinkType::Ethernet);
    assert_eq!(d.anomaly.unwrap().layer, Layer::Udp);
    // Garbage: every prefix of a frame and every byte value at every position never panics.
    for cut in 0..f.len() {
        let _ = dissect(&f[..cut], LinkType::Ethernet);
    }
    for pos in 0..f.len() {
        for v in [0u8, 0x0f, 0x45, 0x4f, 0xff] {
            let mut g = f.clone();
            g[pos] = v;
            for link in [LinkType::Ethernet, LinkType::LinuxSll, LinkType::LinuxSll2, LinkType::Raw, LinkType::Null] {
                let _ = dissect(&g, link);
            }
        }
    }
}
