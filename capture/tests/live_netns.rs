//! Live capture for real, between two network namespaces joined by a veth pair (needs root).
//! veth has no hardware timestamping (kernel.md 3a/3b), so these exercise the software path and the
//! EOPNOTSUPP fallback as they happen on this kernel.

mod netns;

use netns::{ADDR_A, ADDR_B, VethPair, netstamp_holder, realtime_ns};
use std::net::UdpSocket;
use std::time::Duration;
use wirestamp_capture::live::{AfPacket, HwTsGuard, Ioctl, LiveError, RingConfig, TsMode, filter, nl, ts_info};
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
        let left = std::fs::read_dir(&dir).is_ok_and(|mut d| d.next().is_some());
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
    // The ethtool netlink TSINFO_GET answers the same (kernel.md 3c: no PHC_INDEX attribute).
    let (nl, nl_err) = pair.a.run(|| (nl::tsinfo("va").unwrap(), nl::tsinfo("nosuch0").unwrap_err()));
    assert_eq!(nl, info);
    assert_eq!(nl_err.raw_os_error(), Some(libc::ENODEV));
    // TSCONFIG_GET exists in this kernel but veth has no hardware timestamping: EOPNOTSUPP (kernel.md 3c).
    let e = pair.a.run(|| nl::tsconfig("va").unwrap_err());
    assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");
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

/// One TX timestamp report from the socket's error queue: (OPT_ID counter, SCM_TSTAMP_* kind, ns).
fn read_errqueue(fd: std::os::fd::RawFd) -> Vec<(u32, u32, i64)> {
    let mut out = Vec::new();
    loop {
        let mut data = [0u8; 64];
        let mut ctrl = [0u64; 64];
        let mut iov = libc::iovec { iov_base: data.as_mut_ptr() as *mut libc::c_void, iov_len: data.len() };
        // SAFETY: msghdr is plain data; zero is a valid start, then the buffers are filled in.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = ctrl.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = std::mem::size_of_val(&ctrl);
        // SAFETY: `msg` points at live buffers of the sizes it states.
        let n = unsafe { libc::recvmsg(fd, &mut msg, libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT) };
        if n < 0 {
            return out;
        }
        let (mut ts, mut id, mut kind) = (None, None, None);
        // SAFETY: the CMSG_* walk stays inside msg_control/msg_controllen as set by the kernel.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                let d = libc::CMSG_DATA(c);
                match ((*c).cmsg_level, (*c).cmsg_type) {
                    // SCM_TIMESTAMPING: struct timespec ts[3]; ts[0] is the software stamp.
                    (libc::SOL_SOCKET, 37) => {
                        let t = (d as *const libc::timespec).read_unaligned();
                        ts = Some(t.tv_sec * 1_000_000_000 + t.tv_nsec);
                    }
                    // IP_RECVERR: struct sock_extended_err {errno u32, origin u8, type u8, code u8, pad u8, info u32, data u32}.
                    (libc::SOL_IP, libc::IP_RECVERR) => {
                        let e = (d as *const libc::sock_extended_err).read_unaligned();
                        assert_eq!((e.ee_errno, e.ee_origin), (libc::ENOMSG as u32, 4), "SO_EE_ORIGIN_TIMESTAMPING");
                        kind = Some(e.ee_info);
                        id = Some(e.ee_data);
                    }
                    _ => {}
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        if let (Some(t), Some(i), Some(k)) = (ts, id, kind) {
            out.push((i, k, t));
        }
    }
}

#[test]
fn sender_tx_timestamps_bracket_the_captured_outgoing_frames() {
    use std::os::fd::AsRawFd;
    const SCHED: u32 = 1; // SCM_TSTAMP_SCHED
    const SND: u32 = 0; // SCM_TSTAMP_SND
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let sa = pair.a.run(|| UdpSocket::bind((ADDR_A, PORT)).unwrap());
    let _sb = pair.b.run(|| UdpSocket::bind((ADDR_B, PORT)).unwrap());
    // TX_SCHED | TX_SOFTWARE | SOFTWARE | OPT_ID | OPT_TSONLY (kernel.md 2b).
    let flags: libc::c_int = (1 << 8) | (1 << 1) | (1 << 4) | (1 << 7) | (1 << 11);
    // SAFETY: valid socket, c_int option of the right size.
    let rc =
        unsafe { libc::setsockopt(sa.as_raw_fd(), libc::SOL_SOCKET, 37, &flags as *const _ as *const libc::c_void, 4) };
    assert_eq!(rc, 0);
    let mut ring = pair.a.run(|| {
        let mut c = RingConfig::new("va");
        c.filter = Some(format!("udp dst port {PORT}"));
        c.block_size = 1 << 16;
        c.block_nr = 4;
        AfPacket::open(&c).unwrap()
    });
    let (captured, reports) = std::thread::scope(|sc| {
        let reader = sc.spawn(|| {
            let mut ts = Vec::new();
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while ts.len() < N as usize && std::time::Instant::now() < deadline {
                if let Some(f) = ring.next_frame(Duration::from_millis(50)).unwrap() {
                    assert_eq!(f.direction, Direction::Outbound);
                    ts.push(f.ts_ns);
                }
            }
            ts
        });
        send_all(&sa, ADDR_B, b'A');
        std::thread::sleep(Duration::from_millis(20));
        let reports = read_errqueue(sa.as_raw_fd());
        (reader.join().unwrap(), reports)
    });
    assert_eq!(captured.len(), N as usize);
    assert_eq!(reports.len(), 2 * N as usize, "one SCHED and one SND per datagram: {reports:?}");
    for (i, cap) in captured.iter().enumerate() {
        let find = |k: u32| reports.iter().find(|r| r.0 == i as u32 && r.1 == k).map(|r| r.2).unwrap();
        let (sched, snd) = (find(SCHED), find(SND));
        // veth (noqueue): SCHED at dev_queue_xmit, then the AF_PACKET tap, then SND in veth_xmit.
        assert!(sched <= *cap && *cap <= snd, "#{i}: sched {sched} <= captured {cap} <= snd {snd}");
    }
}

/// Builds an 802.1Q-tagged Ethernet/IPv4/UDP frame (checksum 0 = none) from vb to va, port PORT.
fn tagged_frame(tci: u16, payload: &[u8]) -> Vec<u8> {
    let mac = |s: &str| -> Vec<u8> { s.split(':').map(|h| u8::from_str_radix(h, 16).unwrap()).collect() };
    let mut f = mac(netns::MAC_A);
    f.extend(mac(netns::MAC_B));
    f.extend([0x81, 0x00]);
    f.extend(tci.to_be_bytes());
    f.extend([0x08, 0x00]);
    let total = (20 + 8 + payload.len()) as u16;
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 77, 0, 2, 10, 77, 0, 1];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    let sum = ip.chunks(2).map(|w| u32::from(u16::from_be_bytes([w[0], w[1]]))).sum::<u32>();
    let sum = !(((sum & 0xffff) + (sum >> 16)) as u16);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    f.extend(ip);
    f.extend(PORT.to_be_bytes());
    f.extend(PORT.to_be_bytes());
    f.extend(((8 + payload.len()) as u16).to_be_bytes());
    f.extend([0, 0]);
    f.extend(payload);
    f
}

#[test]
fn vlan_tag_taken_out_by_the_kernel_is_put_back() {
    let pair = VethPair::new();
    let mut ring = pair.a.run(|| {
        let mut c = RingConfig::new("va");
        // `vlan 100` only matches a live socket when compiled for one (SKF_AD_VLAN_TAG loads).
        c.filter = Some(format!("vlan 100 and udp port {PORT}"));
        c.block_size = 1 << 16;
        c.block_nr = 2;
        AfPacket::open(&c).unwrap()
    });
    let sent = tagged_frame(0x2064, b"tagged-frame"); // priority 1, VLAN 100
    let frame = sent.clone();
    pair.b.run(move || {
        // SAFETY: plain socket/sendto on a raw packet socket; `sll` and `frame` are valid for the call.
        unsafe {
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(fd >= 0);
            let mut sll: libc::sockaddr_ll = std::mem::zeroed();
            sll.sll_family = libc::AF_PACKET as u16;
            sll.sll_ifindex = libc::if_nametoindex(c"vb".as_ptr()) as i32;
            sll.sll_halen = 6;
            let rc = libc::sendto(
                fd,
                frame.as_ptr() as *const libc::c_void,
                frame.len(),
                0,
                &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
                size_of::<libc::sockaddr_ll>() as u32,
            );
            assert_eq!(rc, frame.len() as isize, "{}", std::io::Error::last_os_error());
            libc::close(fd);
        }
    });
    // The receiving stack strips the tag into skb metadata (skb_vlan_untag); the ring reports it in
    // tp_vlan_tci with TP_STATUS_VLAN_VALID, and the source restores the bytes as they were on the wire.
    let f = ring.next_frame(Duration::from_secs(2)).unwrap().expect("the tagged frame");
    assert_eq!(f.direction, Direction::Inbound);
    assert_eq!(f.data, &sent[..]);
    assert_eq!(f.wire_len as usize, sent.len());
    assert_eq!(ring.stats().unwrap().vlan_restored, 1, "the tag came through the ring's metadata");
    // The live program reads the tag from metadata: ancillary loads at SKF_AD_OFF (-0x1000) + 44/48
    // (SKF_AD_VLAN_TAG, SKF_AD_VLAN_TAG_PRESENT), which the file ("dead") program has none of.
    let anc = |p: &[libc::sock_filter]| p.iter().filter(|i| i.k == 0xffff_f000 + 44 || i.k == 0xffff_f000 + 48).count();
    let live = pair.a.run(|| filter::compile_for("va", "vlan 100", 65535).unwrap());
    assert!(anc(&live) >= 2, "{}", live.len());
    assert_eq!(anc(&filter::compile("vlan 100").unwrap()), 0);
}

#[test]
fn tcp_tx_sched_snd_and_ack_timestamps_match_the_captured_segments() {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    const WRITES: usize = 3;
    let _holder = netstamp_holder();
    let pair = VethPair::new();
    let listener = pair.b.run(|| TcpListener::bind((ADDR_B, PORT)).unwrap());
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        let mut buf = vec![0u8; 100 * WRITES];
        s.read_exact(&mut buf).unwrap();
        buf.len()
    });
    let mut c = pair.a.run(|| TcpStream::connect((ADDR_B, PORT)).unwrap());
    c.set_nodelay(true).unwrap();
    // TX_SCHED | TX_SOFTWARE | TX_ACK | SOFTWARE | OPT_ID | OPT_TSONLY; the id counts bytes (kernel.md 2c).
    let flags: libc::c_int = (1 << 8) | (1 << 1) | (1 << 9) | (1 << 4) | (1 << 7) | (1 << 11);
    // SAFETY: valid socket, c_int option of the right size.
    let rc =
        unsafe { libc::setsockopt(c.as_raw_fd(), libc::SOL_SOCKET, 37, &flags as *const _ as *const libc::c_void, 4) };
    assert_eq!(rc, 0);
    let mut ring = pair.a.run(|| {
        let mut c = RingConfig::new("va");
        c.filter = Some(format!("tcp port {PORT}"));
        c.block_size = 1 << 16;
        c.block_nr = 4;
        AfPacket::open(&c).unwrap()
    });
    // (direction, seq, ack, payload length, ts)
    let (frames, reports) = std::thread::scope(|sc| {
        let reader = sc.spawn(|| {
            let mut v = Vec::new();
            while let Some(f) = ring.next_frame(Duration::from_millis(300)).unwrap() {
                let ip = &f.data[14..];
                let ihl = usize::from(ip[0] & 0x0f) * 4;
                let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
                let tcp = &ip[ihl..];
                let doff = usize::from(tcp[12] >> 4) * 4;
                let seq = u32::from_be_bytes(tcp[4..8].try_into().unwrap());
                let ack = u32::from_be_bytes(tcp[8..12].try_into().unwrap());
                v.push((f.direction, seq, ack, total - ihl - doff, f.ts_ns));
            }
            v
        });
        for _ in 0..WRITES {
            c.write_all(&[0x42; 100]).unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        let reports = read_errqueue(c.as_raw_fd());
        (reader.join().unwrap(), reports)
    });
    assert_eq!(server.join().unwrap(), 100 * WRITES);
    let data: Vec<_> = frames.iter().filter(|f| f.0 == Direction::Outbound && f.3 == 100).collect();
    assert_eq!(data.len(), WRITES, "{frames:?}");
    let isn = data[0].1;
    for (i, seg) in data.iter().enumerate() {
        assert_eq!(seg.1, isn.wrapping_add(100 * i as u32), "segments in order, no retransmission");
        // OPT_ID on TCP: the id is the offset of the write's last byte: 99, 199, 299.
        let id = 100 * i as u32 + 99;
        let find = |k: u32| {
            reports
                .iter()
                .find(|r| r.0 == id && r.1 == k)
                .map(|r| r.2)
                .unwrap_or_else(|| panic!("{id}/{k}: {reports:?}"))
        };
        let (sched, snd, ack) = (find(1), find(0), find(2));
        assert!(sched <= seg.4 && seg.4 <= snd, "#{i}: sched {sched} <= captured {} <= snd {snd}", seg.4);
        // The peer's ACK for this write, captured on the way in, precedes the ACK report.
        let end = seg.1.wrapping_add(100);
        let peer_ack = frames.iter().find(|f| f.0 == Direction::Inbound && f.2 == end).expect("the peer's ACK");
        assert!(
            snd <= peer_ack.4 && peer_ack.4 <= ack,
            "#{i}: snd {snd} <= peer ACK {} <= ACK report {ack}",
            peer_ack.4
        );
    }
}
