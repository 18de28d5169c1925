//! tc capture between two network namespaces joined by a veth pair (needs root): UDP market data to a
//! multicast group and a TCP order session, among unconfigured traffic. An AF_PACKET socket on the same
//! interface is the independent oracle of what crossed it; the senders' and receiver's own
//! SO_TIMESTAMPING stamps are the oracle of when.

mod support;

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4, TcpListener, TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::thread;
use std::time::Duration;

use support::*;
use wirestamp_bpf::{BpfError, FlowSpec, HookDirection, StampSource, TcAttachMode, TcCapture, TcOptions, XdpCapture};

const GROUP: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);
const FEED_PORT: u16 = 30001;
const GW_PORT: u16 = 9000;
const N_FEED: u64 = 20;
const N_ORDERS: usize = 10;
const ORDER_LEN: usize = 40;
const REPLY_LEN: usize = 20;
const SNAP: u16 = 64;
/// Upper bound between a stamp taken at the tc hook and one the kernel takes further down the same
/// transmit path (both run with bottom halves disabled; the bound is generous for a loaded CI machine).
const SAME_PATH_NS: i64 = 10_000_000;

fn b_addr() -> Ipv4Addr {
    Ipv4Addr::from(B_ADDR)
}

fn flows() -> Vec<FlowSpec> {
    vec![FlowSpec::udp_feed(1, IpAddr::V4(GROUP), FEED_PORT), FlowSpec::tcp_session(2, IpAddr::V4(b_addr()), GW_PORT)]
}

/// The test's own statement of the configured flows, applied to the oracle's packets.
fn in_flows(p: &Pkt) -> bool {
    let gw = SocketAddrV4::new(b_addr(), GW_PORT);
    (p.proto == 17 && p.dst == SocketAddrV4::new(GROUP, FEED_PORT)) || (p.proto == 6 && (p.dst == gw || p.src == gw))
}

/// One packet as the oracle or a record describes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Pkt {
    egress: bool,
    proto: u8,
    src: SocketAddrV4,
    dst: SocketAddrV4,
    seq: u32,
    flags: u8,
    payload_len: usize,
    prefix: Vec<u8>,
}

/// Parses an Ethernet/IPv4/UDP-or-TCP frame (RFC 791, 768, 793 layouts) independently of the program.
fn parse_frame(egress: bool, f: &[u8]) -> Option<Pkt> {
    if f.len() < 34 || f[12..14] != [0x08, 0x00] {
        return None;
    }
    let ihl = usize::from(f[14] & 0x0f) * 4;
    let end = 14 + usize::from(u16::from_be_bytes([f[16], f[17]]));
    let proto = f[23];
    let src = Ipv4Addr::new(f[26], f[27], f[28], f[29]);
    let dst = Ipv4Addr::new(f[30], f[31], f[32], f[33]);
    let l4 = &f[14 + ihl..end.min(f.len())];
    let port = |i: usize| u16::from_be_bytes([l4[i], l4[i + 1]]);
    let (seq, flags, payload) = match proto {
        17 => (0, 0, &l4[8..]),
        6 => {
            let doff = usize::from(l4[12] >> 4) * 4;
            (u32::from_be_bytes([l4[4], l4[5], l4[6], l4[7]]), l4[13], &l4[doff..])
        }
        _ => return None,
    };
    Some(Pkt {
        egress,
        proto,
        src: SocketAddrV4::new(src, port(0)),
        dst: SocketAddrV4::new(dst, port(2)),
        seq,
        flags,
        payload_len: payload.len(),
        prefix: payload[..payload.len().min(usize::from(SNAP))].to_vec(),
    })
}

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(a) => panic!("unexpected IPv6 {a}"),
    }
}

/// A record, plus its timestamp facts.
#[derive(Debug, Clone)]
struct Seen {
    pkt: Pkt,
    flow: u32,
    epoch_ns: i64,
    source: StampSource,
    skb_tstamp: (u64, u8),
}

fn drain(cap: &mut TcCapture, tai_offset: i64) -> Vec<Seen> {
    let mut out = Vec::new();
    loop {
        let n = cap
            .poll(Duration::from_millis(50), |r| {
                out.push(Seen {
                    pkt: Pkt {
                        egress: r.direction() == HookDirection::Egress,
                        proto: r.proto(),
                        src: v4(r.src()),
                        dst: v4(r.dst()),
                        seq: r.tcp_seq(),
                        flags: r.tcp_flags(),
                        payload_len: usize::from(r.l4_payload_len()),
                        prefix: r.payload().to_vec(),
                    },
                    flow: r.flow_id(),
                    epoch_ns: r.epoch_ns(tai_offset),
                    source: r.ts_source(),
                    skb_tstamp: r.skb_tstamp(),
                });
            })
            .unwrap();
        if n == 0 {
            return out;
        }
    }
}

/// AF_PACKET socket seeing every frame of `ifindex` in both directions (opened in its namespace).
fn packet_socket(ifindex: u32) -> OwnedFd {
    let proto = (libc::ETH_P_ALL as u16).to_be();
    // SAFETY: plain socket syscall.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
    assert!(fd >= 0, "AF_PACKET socket: {}", io::Error::last_os_error());
    // SAFETY: `fd` is a new descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: an all-zero sockaddr_ll is valid; the fields bound are set below.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: a valid sockaddr_ll of the given size.
    let rc = unsafe {
        libc::bind(fd.as_raw_fd(), (&raw const sll).cast(), size_of::<libc::sockaddr_ll>() as libc::socklen_t)
    };
    assert_eq!(rc, 0, "bind AF_PACKET: {}", io::Error::last_os_error());
    let rcvbuf: i32 = 8 << 20;
    // SAFETY: valid socket and an int option.
    unsafe { libc::setsockopt(fd.as_raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, (&raw const rcvbuf).cast(), 4) };
    fd
}

/// Every frame queued on the AF_PACKET socket, parsed; (frames read, parsed IPv4 UDP/TCP packets).
fn drain_packets(fd: &OwnedFd) -> (usize, Vec<Pkt>) {
    let mut buf = vec![0u8; 65536];
    let mut frames = 0;
    let mut out = Vec::new();
    loop {
        // SAFETY: an all-zero sockaddr_ll is a valid output buffer.
        let mut from: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: buffers valid for the given lengths.
        let n = unsafe {
            libc::recvfrom(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
                (&raw mut from).cast(),
                &mut len,
            )
        };
        if n < 0 {
            return (frames, out);
        }
        frames += 1;
        let egress = from.sll_pkttype == libc::PACKET_OUTGOING;
        if let Some(p) = parse_frame(egress, &buf[..n as usize]) {
            out.push(p);
        }
    }
}

/// MoldUDP64-like datagram: session (10 bytes), sequence number (u64 BE), message count, message.
fn feed_datagram(seq: u64) -> Vec<u8> {
    let mut d = b"SESSION001".to_vec();
    d.extend_from_slice(&seq.to_be_bytes());
    d.extend_from_slice(&1u16.to_be_bytes());
    d.extend_from_slice(&[b'A'; 30]);
    d
}

fn feed_seq(payload: &[u8]) -> u64 {
    u64::from_be_bytes(payload[10..18].try_into().unwrap())
}

fn order(k: usize) -> Vec<u8> {
    let mut o = format!("O{k:04}").into_bytes();
    o.resize(ORDER_LEN, b'x');
    o
}

/// Reads this socket's next TX software stamp from its error queue: (OPT_ID key, ns).
fn next_tx_stamp(sock: &impl AsRawFd) -> (u32, i64) {
    let mut buf = [0u8; 256];
    loop {
        let r = recv_ts(sock, &mut buf, true, Duration::from_secs(2)).expect("TX timestamp on the error queue");
        // ee_info 0 = SCM_TSTAMP_SND (only TX_SOFTWARE was asked for).
        if let (Some(key), Some(ns), Some(0)) = (r.ee_data, r.sw_ns, r.ee_info) {
            return (key, ns);
        }
    }
}

#[test]
fn tc_capture_of_feed_and_order_session_between_namespaces() {
    let net = VethPair::new();
    let tai = tai_offset();
    let opts = TcOptions { snap_len: SNAP, ..TcOptions::default() };
    let (va, vb) = (net.va, net.vb);
    let (fl, o2) = (flows(), opts.clone());
    let mut cap_a = net.a.run(move || TcCapture::attach(va, &fl, &o2)).expect("attach on va");
    let (fl, o2) = (flows(), opts.clone());
    let mut cap_b = net.b.run(move || TcCapture::attach(vb, &fl, &o2)).expect("attach on vb");
    let oracle = net.a.run(move || packet_socket(va));

    // Receivers in B: the feed (with kernel RX stamps), the gateway, and an unconfigured service.
    let (feed_rx, gw, other) = net.b.run(|| {
        let rx = UdpSocket::bind((Ipv4Addr::UNSPECIFIED, FEED_PORT)).unwrap();
        rx.join_multicast_v4(&GROUP, &Ipv4Addr::from(B_ADDR)).unwrap();
        set_timestamping(rx.as_raw_fd(), SOF_TIMESTAMPING_RX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE);
        let gw = TcpListener::bind((Ipv4Addr::from(B_ADDR), GW_PORT)).unwrap();
        let other = TcpListener::bind((Ipv4Addr::from(B_ADDR), 9100)).unwrap();
        (rx, gw, other)
    });
    // The RX-stamping socket turns the kernel's timestamp key on asynchronously: let it settle (see
    // kernel.md 2e) so every feed datagram gets its skb->tstamp.
    thread::sleep(Duration::from_millis(100));

    let feed_thread = thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut stamps = HashMap::new();
        for _ in 0..N_FEED {
            let r = recv_ts(&feed_rx, &mut buf, false, Duration::from_secs(2)).expect("feed datagram");
            stamps.insert(feed_seq(&buf[..r.len]), r.sw_ns.expect("RX software stamp"));
        }
        stamps
    });
    let gw_thread = thread::spawn(move || {
        let (mut s, _) = gw.accept().unwrap();
        let mut o = [0u8; ORDER_LEN];
        for _ in 0..N_ORDERS {
            s.read_exact(&mut o).unwrap();
            s.write_all(&[b'R'; REPLY_LEN]).unwrap();
        }
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
    });
    let other_thread = thread::spawn(move || {
        let (mut s, _) = other.accept().unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).unwrap();
    });

    // Senders in A.
    let (feed_tx, noise_tx) = net.a.run(|| {
        let tx = UdpSocket::bind((Ipv4Addr::from(A_ADDR), 0)).unwrap();
        tx.set_multicast_loop_v4(false).unwrap();
        set_timestamping(
            tx.as_raw_fd(),
            SOF_TIMESTAMPING_TX_SOFTWARE
                | SOF_TIMESTAMPING_SOFTWARE
                | SOF_TIMESTAMPING_OPT_ID
                | SOF_TIMESTAMPING_OPT_TSONLY,
        );
        (tx, UdpSocket::bind((Ipv4Addr::from(A_ADDR), 0)).unwrap())
    });
    let mut feed_snd = HashMap::new();
    for seq in 0..N_FEED {
        feed_tx.send_to(&feed_datagram(seq), (GROUP, FEED_PORT)).unwrap();
        let (key, ns) = next_tx_stamp(&feed_tx);
        assert_eq!(u64::from(key), seq, "OPT_ID counts datagrams");
        feed_snd.insert(seq, ns);
        // Unconfigured: the same group on another port, and the gateway's address over UDP.
        noise_tx.send_to(b"noise-other-port", (GROUP, FEED_PORT + 1)).unwrap();
        noise_tx.send_to(b"noise-unicast", (b_addr(), 9001)).unwrap();
    }

    let mut client = net.a.run(|| TcpStream::connect((Ipv4Addr::from(B_ADDR), GW_PORT)).unwrap());
    client.set_nodelay(true).unwrap();
    set_timestamping(
        client.as_raw_fd(),
        SOF_TIMESTAMPING_TX_SOFTWARE
            | SOF_TIMESTAMPING_SOFTWARE
            | SOF_TIMESTAMPING_OPT_ID
            | SOF_TIMESTAMPING_OPT_TSONLY,
    );
    let mut order_snd = HashMap::new();
    let mut reply = [0u8; REPLY_LEN];
    for k in 0..N_ORDERS {
        client.write_all(&order(k)).unwrap();
        let (key, ns) = next_tx_stamp(&client);
        assert_eq!(key as usize, (k + 1) * ORDER_LEN - 1, "OPT_ID on TCP is the last byte's offset");
        order_snd.insert(k, ns);
        client.read_exact(&mut reply).unwrap();
    }
    drop(client);
    let mut other_client = net.a.run(|| TcpStream::connect((Ipv4Addr::from(B_ADDR), 9100)).unwrap());
    for k in 0..3 {
        other_client.write_all(&order(100 + k)).unwrap();
    }
    drop(other_client);
    let feed_rx_ns = feed_thread.join().unwrap();
    gw_thread.join().unwrap();
    other_thread.join().unwrap();
    thread::sleep(Duration::from_millis(100)); // FINs and last ACKs

    let seen_a = drain(&mut cap_a, tai);
    let seen_b = drain(&mut cap_b, tai);
    let (frames, oracle_pkts) = drain_packets(&oracle);

    eprintln!(
        "va: {frames} frames on AF_PACKET, {} parsed, {} records; vb: {} records",
        oracle_pkts.len(),
        seen_a.len(),
        seen_b.len()
    );
    // --- what: every packet of the configured flows once, none of the others ---
    let mut want_a: Vec<Pkt> = oracle_pkts.iter().filter(|p| in_flows(p)).cloned().collect();
    want_a.sort();
    let unconfigured = oracle_pkts.iter().filter(|p| !in_flows(p)).count();
    assert!(unconfigured >= 2 * N_FEED as usize + 4, "the oracle saw the noise too ({unconfigured} packets)");
    let mut got_a: Vec<Pkt> = seen_a.iter().map(|s| s.pkt.clone()).collect();
    got_a.sort();
    assert_eq!(got_a, want_a, "va: records vs AF_PACKET ({frames} frames)");
    // vb sees the same packets in the other direction.
    let mut want_b: Vec<Pkt> = want_a.iter().map(|p| Pkt { egress: !p.egress, ..p.clone() }).collect();
    want_b.sort();
    let mut got_b: Vec<Pkt> = seen_b.iter().map(|s| s.pkt.clone()).collect();
    got_b.sort();
    assert_eq!(got_b, want_b, "vb: records vs va's AF_PACKET, mirrored");

    // Independently of the oracle: the traffic this test made.
    let feed_a: Vec<&Seen> = seen_a.iter().filter(|s| s.flow == 1).collect();
    assert_eq!(feed_a.len(), N_FEED as usize);
    assert!(
        feed_a
            .iter()
            .all(|s| s.pkt.egress && s.pkt.payload_len == 50 && s.pkt.prefix == feed_datagram(feed_seq(&s.pkt.prefix)))
    );
    let orders_out: Vec<&Seen> =
        seen_a.iter().filter(|s| s.flow == 2 && s.pkt.egress && s.pkt.payload_len > 0).collect();
    assert_eq!(
        orders_out.iter().map(|s| s.pkt.prefix.clone()).collect::<Vec<_>>(),
        (0..N_ORDERS).map(order).collect::<Vec<_>>()
    );
    let replies_in = seen_a.iter().filter(|s| s.flow == 2 && !s.pkt.egress && s.pkt.payload_len > 0).count();
    assert_eq!(replies_in, N_ORDERS);
    assert!(
        seen_a.iter().any(|s| s.pkt.flags & 0x02 != 0) && seen_a.iter().any(|s| s.pkt.flags & 0x01 != 0),
        "SYN and FIN captured"
    );

    // --- when: consistent with the sockets' own stamps ---
    let feed_b: HashMap<u64, &Seen> =
        seen_b.iter().filter(|s| s.flow == 1).map(|s| (feed_seq(&s.pkt.prefix), s)).collect();
    for s in feed_a {
        let seq = feed_seq(&s.pkt.prefix);
        let snd = feed_snd[&seq];
        assert_eq!(s.source, StampSource::HookTai, "UDP egress has no skb stamp");
        assert!(
            s.epoch_ns <= snd && snd - s.epoch_ns < SAME_PATH_NS,
            "seq {seq}: egress hook {} then SND {snd}",
            s.epoch_ns
        );
        let rx = &feed_b[&seq];
        // The receive stamp the kernel put on the skb is the one the receiving socket reports.
        assert_eq!((rx.source, rx.epoch_ns), (StampSource::SkbRealtime, feed_rx_ns[&seq]), "seq {seq}");
        assert!(rx.epoch_ns >= snd && rx.epoch_ns - snd < SAME_PATH_NS, "seq {seq}: SND {snd} then RX {}", rx.epoch_ns);
    }
    for s in seen_a.iter().chain(&seen_b).filter(|s| s.flow == 2) {
        // TCP's skb->tstamp is its MONOTONIC departure time (kept across veth): not used as the stamp.
        assert_eq!(s.source, StampSource::HookTai, "{s:?}");
        assert!(s.skb_tstamp.0 == 0 || s.skb_tstamp.1 == 1, "{s:?}");
    }
    for (k, o) in orders_out.iter().enumerate() {
        let snd = order_snd[&k];
        assert!(o.epoch_ns <= snd && snd - o.epoch_ns < SAME_PATH_NS, "order {k}: egress {} SND {snd}", o.epoch_ns);
        let rx = seen_b.iter().find(|s| !s.pkt.egress && s.pkt.prefix == order(k)).expect("order seen on vb");
        assert!(
            rx.epoch_ns >= snd && rx.epoch_ns - snd < SAME_PATH_NS,
            "order {k}: SND {snd} vb ingress {}",
            rx.epoch_ns
        );
    }

    let stats = cap_a.stats().unwrap();
    assert_eq!(
        (stats.matched, stats.delivered, stats.ringbuf_full, stats.bad_records),
        (want_a.len() as u64, want_a.len() as u64, 0, 0)
    );
    assert!(stats.seen >= frames as u64, "seen {} vs {frames} frames on va", stats.seen);
    net.a.run(move || drop(cap_a));
    net.b.run(move || drop(cap_b));
}

#[test]
fn second_attach_on_an_interface_is_refused() {
    let net = VethPair::new();
    let va = net.va;
    let msg = net.a.run(move || {
        let first = TcCapture::attach(va, &flows(), &TcOptions::default()).expect("first attach");
        let second = TcCapture::attach(va, &flows(), &TcOptions::default());
        let err = second.expect_err("second attach must be refused");
        let msg = err.to_string();
        assert!(matches!(&err, BpfError::AlreadyAttached { ifindex, hook: "tcx ingress", program, .. } if *ifindex == va && program == "ws_tc_ingress"), "{err:?}");
        // Egress only is refused too.
        let egress_only = TcOptions { ingress: false, ..TcOptions::default() };
        let err = TcCapture::attach(va, &flows(), &egress_only).expect_err("egress taken");
        assert!(matches!(err, BpfError::AlreadyAttached { hook: "tcx egress", .. }), "{err:?}");
        drop(first);
        // Detached on drop: attaching again works.
        TcCapture::attach(va, &flows(), &TcOptions::default()).expect("attach after the first capture dropped");
        msg
    });
    assert!(
        msg.starts_with(&format!(
            "ifindex {va} already has wirestamp's ws_tc_ingress attached (tcx ingress, BPF prog id "
        )),
        "{msg}"
    );
    assert!(msg.contains("another wirestamp capture is running on this interface; stop it (or detach prog "), "{msg}");
}

#[test]
fn attach_to_a_missing_interface_names_the_namespace_problem() {
    let w = NsWorker::new();
    let err = w.run(|| TcCapture::attach(4242, &flows(), &TcOptions::default())).expect_err("no such interface");
    let msg = err.to_string();
    assert!(matches!(err, BpfError::Query { ifindex: 4242, hook: "tcx ingress", .. }), "{msg}");
    assert!(msg.contains("no such interface in the calling thread's network namespace"), "{msg}");
}

#[test]
fn xdp_device_bound_capture_reports_no_hardware_stamp_on_veth() {
    let net = VethPair::new();
    // A jumbo MTU on the peer needs a frags-aware XDP program on veth (kernel.md 6a).
    net.a.run(|| sh("ip link set va mtu 9000"));
    net.b.run(|| sh("ip link set vb mtu 9000"));
    let vb = net.vb;
    let opts = TcOptions { snap_len: SNAP, ..TcOptions::default() };
    let o2 = opts.clone();
    let mut cap = net.b.run(move || XdpCapture::attach(vb, &flows(), &o2)).expect("device-bound XDP on vb");
    // One XDP program per interface: a second capture is refused, and says why.
    let o2 = opts.clone();
    let err = net.b.run(move || XdpCapture::attach(vb, &flows(), &o2)).expect_err("second XDP attach");
    assert!(err.to_string().contains("the interface already has an XDP program"), "{err}");

    let tx = net.a.run(|| UdpSocket::bind((Ipv4Addr::from(A_ADDR), 0)).unwrap());
    tx.set_multicast_loop_v4(false).unwrap();
    let before = clock_realtime_ns();
    for seq in 0..N_FEED {
        tx.send_to(&feed_datagram(seq), (GROUP, FEED_PORT)).unwrap();
        tx.send_to(b"noise-other-port", (GROUP, FEED_PORT + 1)).unwrap();
        tx.send_to(b"noise-unicast", (b_addr(), 9001)).unwrap();
    }
    thread::sleep(Duration::from_millis(100));
    let after = clock_realtime_ns();
    let seen = drain_xdp(&mut cap, tai_offset());
    let seqs: Vec<u64> = seen.iter().map(|s| feed_seq(&s.pkt.prefix)).collect();
    assert_eq!(seqs, (0..N_FEED).collect::<Vec<_>>(), "every feed datagram once, in order, nothing else");
    for s in &seen {
        assert_eq!((s.flow, s.pkt.egress, s.pkt.payload_len), (1, false, 50));
        // veth's rx_timestamp kfunc answers 0: "none", so the hook's own time is used.
        assert_eq!((s.source, s.skb_tstamp), (StampSource::HookTai, (0, 0)), "{s:?}");
        assert!(s.epoch_ns >= before && s.epoch_ns <= after, "hook time within the sends");
    }
    let st = cap.stats().unwrap();
    assert_eq!((st.matched, st.no_hw_rx_stamp, st.delivered, st.ringbuf_full), (N_FEED, N_FEED, N_FEED, 0));
    assert!(st.seen >= 3 * N_FEED, "the noise was seen too: {st:?}");
    net.b.run(move || drop(cap));
}

fn clock_realtime_ns() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    i64::try_from(now.as_nanos()).unwrap()
}

fn drain_xdp(cap: &mut XdpCapture, tai_offset: i64) -> Vec<Seen> {
    let mut out = Vec::new();
    while cap
        .poll(Duration::from_millis(50), |r| {
            out.push(Seen {
                pkt: Pkt {
                    egress: r.direction() == HookDirection::Egress,
                    proto: r.proto(),
                    src: v4(r.src()),
                    dst: v4(r.dst()),
                    seq: r.tcp_seq(),
                    flags: r.tcp_flags(),
                    payload_len: usize::from(r.l4_payload_len()),
                    prefix: r.payload().to_vec(),
                },
                flow: r.flow_id(),
                epoch_ns: r.epoch_ns(tai_offset),
                source: r.ts_source(),
                skb_tstamp: r.skb_tstamp(),
            });
        })
        .unwrap()
        > 0
    {}
    out
}

/// A broadcast Ethernet frame with VLAN `tags` ((TPID, VID), outermost first) carrying IPv4/UDP from
/// 10.202.0.1:6999 to 10.202.0.2:7000 with `payload` (RFC 791/768 layouts, checksums left 0).
fn tagged_udp_frame(tags: &[(u16, u16)], payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    for &(tpid, vid) in tags {
        f.extend_from_slice(&tpid.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&[0x08, 0x00]);
    let udp_len = 8 + payload.len() as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&(20 + udp_len).to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0, 10, 202, 0, 1, 10, 202, 0, 2]);
    f.extend_from_slice(&6999u16.to_be_bytes());
    f.extend_from_slice(&7000u16.to_be_bytes());
    f.extend_from_slice(&udp_len.to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(payload);
    f
}

/// VLAN tags on real traffic (this kernel has no 8021q devices, so tagged frames are sent raw through an
/// AF_PACKET socket): on va's egress the tags are in the data; on vb's ingress the kernel has already
/// moved the outer tag into skb metadata (skb_vlan_untag), the path a NIC's VLAN offload takes.
#[test]
fn tc_capture_matches_vlan_tags_in_data_and_offloaded() {
    let net = VethPair::new();
    // Port 7000 on VLAN 100, any address: the same datagrams on VLAN 200 or untagged must not match.
    let flows = vec![FlowSpec {
        id: 3,
        proto: wirestamp_bpf::L4Proto::Udp,
        addr: None,
        port: 7000,
        vlan: wirestamp_bpf::VlanMatch::Id(100),
        match_dst: true,
        match_src: false,
    }];
    let (va, vb) = (net.va, net.vb);
    let f2 = flows.clone();
    let mut cap_a = net.a.run(move || TcCapture::attach(va, &f2, &TcOptions::default())).unwrap();
    let f2 = flows.clone();
    let mut cap_b = net.b.run(move || TcCapture::attach(vb, &f2, &TcOptions::default())).unwrap();
    let raw = net.a.run(move || packet_socket(va));
    let send = |frame: &[u8]| {
        // SAFETY: a bound packet socket and a buffer of the given length.
        let n = unsafe { libc::send(raw.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
        assert_eq!(n, frame.len() as isize, "AF_PACKET send: {}", io::Error::last_os_error());
    };
    for i in 0..3u8 {
        send(&tagged_udp_frame(&[(0x8100, 100)], &[b'V', i]));
        send(&tagged_udp_frame(&[(0x88a8, 100), (0x8100, 20)], &[b'Q', i]));
        send(&tagged_udp_frame(&[(0x8100, 200)], &[b'X', i]));
        send(&tagged_udp_frame(&[], &[b'U', i]));
    }
    thread::sleep(Duration::from_millis(100));
    let collect = |cap: &mut TcCapture| {
        let mut got = Vec::new();
        while cap
            .poll(Duration::from_millis(50), |r| {
                got.push((r.flow_id(), r.direction(), r.vlans().to_vec(), r.l4_payload_offset(), r.payload().to_vec()));
            })
            .unwrap()
            > 0
        {}
        got
    };
    let (got_a, got_b) = (collect(&mut cap_a), collect(&mut cap_b));
    let mut want_a = Vec::new();
    let mut want_b = Vec::new();
    for i in 0..3u8 {
        // va egress: tags in the data (payload after 14 + 4·tags + 20 + 8 bytes).
        want_a.push((3, HookDirection::Egress, vec![100], 46, vec![b'V', i]));
        want_a.push((3, HookDirection::Egress, vec![100, 20], 50, vec![b'Q', i]));
        // vb ingress: the outer tag moved to metadata, the inner one still in the data.
        want_b.push((3, HookDirection::Ingress, vec![100], 42, vec![b'V', i]));
        want_b.push((3, HookDirection::Ingress, vec![100, 20], 46, vec![b'Q', i]));
    }
    assert_eq!(got_a, want_a);
    assert_eq!(got_b, want_b);
    net.a.run(move || drop(cap_a));
    net.b.run(move || drop(cap_b));
}

fn tc_filters(dev: &str, dir: &str) -> String {
    let out = std::process::Command::new("tc").args(["filter", "show", "dev", dev, dir]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The clsact path kernels without tcx (before 6.6) take, forced here: same records, refusal of a second
/// capture (in either mode), and detach on drop from a thread outside the interface's namespace.
#[test]
fn tc_capture_as_clsact_filters() {
    let net = VethPair::new();
    let va = net.va;
    let opts = TcOptions { attach: TcAttachMode::Clsact, ..TcOptions::default() };
    let o2 = opts.clone();
    let mut cap = net.a.run(move || TcCapture::attach(va, &flows(), &o2)).expect("clsact attach");
    assert_eq!(cap.attach_kind(), Some("clsact"));
    let shown = net.a.run(|| tc_filters("va", "ingress") + &tc_filters("va", "egress"));
    assert!(
        shown.contains("ws_tc_ingress") && shown.contains("ws_tc_egress") && shown.contains("direct-action"),
        "{shown}"
    );
    for mode in [TcAttachMode::Clsact, TcAttachMode::Tcx] {
        let o2 = TcOptions { attach: mode, ..TcOptions::default() };
        let err = net.a.run(move || TcCapture::attach(va, &flows(), &o2)).expect_err("second capture");
        assert!(
            matches!(&err, BpfError::AlreadyAttached { hook: "clsact ingress", program, .. } if program == "ws_tc_ingress"),
            "{mode:?}: {err}"
        );
    }

    let tx = net.a.run(|| UdpSocket::bind((Ipv4Addr::from(A_ADDR), 0)).unwrap());
    tx.set_multicast_loop_v4(false).unwrap();
    for seq in 0..5 {
        tx.send_to(&feed_datagram(seq), (GROUP, FEED_PORT)).unwrap();
        tx.send_to(b"noise", (GROUP, FEED_PORT + 1)).unwrap();
    }
    thread::sleep(Duration::from_millis(50));
    let seen = drain(&mut cap, tai_offset());
    let seqs: Vec<u64> = seen.iter().map(|s| feed_seq(&s.pkt.prefix)).collect();
    assert_eq!(seqs, (0..5).collect::<Vec<_>>());
    assert!(seen.iter().all(|s| s.flow == 1 && s.pkt.egress));

    drop(cap); // on this thread, outside the namespace
    let shown = net.a.run(|| tc_filters("va", "ingress") + &tc_filters("va", "egress"));
    assert!(!shown.contains("ws_tc_"), "filters left after drop: {shown}");
    let cap = net.a.run(move || TcCapture::attach(va, &flows(), &TcOptions::default())).expect("tcx after clsact");
    assert_eq!(cap.attach_kind(), Some("tcx"));
    net.a.run(move || drop(cap));
}
