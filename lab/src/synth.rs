//! `synth`: a deterministic synthetic market with ground truth.
//!
//! The model: a MoldUDP64 source emits packets of 1..=N ITCH 5.0 messages (Add/Execute/Cancel/Delete,
//! Stock Directory at start, heartbeats every millisecond), in bursts now and then; two feeds (A and B)
//! carry copies with different delays, and now and then B arrives first. A strategy reacts to some
//! messages: it draws a latency from a log-normal body with rare stalls, and sends an OUCH 5.0 Enter
//! Order over SoupBinTCP whose ClOrdID carries the trigger's MoldUDP64 sequence (`T` + 13 digits). It
//! sends in order (a stalled order delays the ones behind it, as a single-threaded strategy does),
//! sometimes coalesces two orders into one segment, sometimes splits one across two segments, and one
//! segment is retransmitted. The exchange answers each order with an Accepted message. Noise traffic
//! (HSRP-like multicast, tagged with VLAN 3050, on feed A's interface) is mixed in.
//!
//! Ground truth, per order: tick time = capture time of the earliest copy (A or B) of the packet that
//! carried the trigger message; order time = capture time of the frame that carried the order's first
//! byte (STAC start-of-frame); latency = order time − tick time; ack time = capture time of the frame
//! carrying the first byte of the Accepted message.

use crate::encode::{itch, mold, ouch, soup};
use crate::packet::{self, TcpHdr};
use crate::rng::Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use wirestamp_capture::write::{IfaceSpec, PcapWriter, PcapngWriter};
use wirestamp_core::{Direction, LinkType};

/// Output container.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// Classic pcap, nanosecond magic, one link type.
    Pcap,
    /// pcapng with one interface per capture point (feed A, feed B, order session), ns resolution.
    Pcapng,
}

/// Tick-to-trade latency distribution: log-normal body plus rare stalls.
#[derive(Debug, Clone, Copy)]
pub struct LatencyModel {
    /// Median of the log-normal body, ns.
    pub median_ns: f64,
    /// Shape of the body (standard deviation of the log).
    pub sigma: f64,
    /// Probability that an order stalls.
    pub stall_prob: f64,
    /// Typical stall length, ns (drawn uniformly in [0.5, 1.5] × this).
    pub stall_ns: f64,
}

/// What to generate.
#[derive(Debug, Clone)]
pub struct SynthConfig {
    /// RNG seed: equal seeds give byte-identical output.
    pub seed: u64,
    /// Market-data packets (each sent on feed A, and on feed B when enabled).
    pub packets: u64,
    /// Capture start, ns since the epoch.
    pub start_ns: i64,
    /// Mean gap between market-data packets outside bursts, ns.
    pub mean_gap_ns: u64,
    /// Probability that a packet starts a burst.
    pub burst_prob: f64,
    /// Packets in a burst (uniform in this range).
    pub burst_len: (u64, u64),
    /// Gap between packets inside a burst, ns.
    pub burst_gap_ns: u64,
    /// Messages per packet (uniform in 1..=this), except the opening Stock Directory packet (one
    /// message per symbol).
    pub max_msgs: u64,
    /// Send a B copy of every packet.
    pub feed_b: bool,
    /// VLAN id of feed A frames.
    pub vlan_a: Option<u16>,
    /// VLAN id of feed B frames.
    pub vlan_b: Option<u16>,
    /// One noise frame every this many packets (0: none).
    pub noise_every: u64,
    /// Probability that a packet triggers an order.
    pub order_prob: f64,
    /// Tick-to-trade latency.
    pub latency: LatencyModel,
    /// Exchange order-to-ack latency range, ns.
    pub ack_ns: (u64, u64),
    /// Probability that an order is held and coalesced with the next one (if due within 20 µs).
    pub coalesce_prob: f64,
    /// Probability that an order is split across two segments.
    pub split_prob: f64,
    /// The order segment (0-based) that is retransmitted 200 µs later, if any (the first unsplit one
    /// from there when that one is split).
    pub retransmit: Option<u64>,
    /// Output container.
    pub container: Container,
}

impl Default for SynthConfig {
    fn default() -> Self {
        SynthConfig {
            seed: 1,
            packets: 100_000,
            start_ns: 1_796_049_000_000_000_000, // 2026-11-30T14:30:00Z
            mean_gap_ns: 4_000,
            burst_prob: 0.01,
            burst_len: (5, 40),
            burst_gap_ns: 250,
            max_msgs: 3,
            feed_b: true,
            vlan_a: None,
            vlan_b: Some(3050),
            noise_every: 50,
            order_prob: 0.05,
            latency: LatencyModel { median_ns: 6_000.0, sigma: 0.35, stall_prob: 0.002, stall_ns: 250_000.0 },
            ack_ns: (25_000, 60_000),
            coalesce_prob: 0.02,
            split_prob: 0.02,
            retransmit: Some(3),
            container: Container::Pcapng,
        }
    }
}

/// One matched pair of the ground truth.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruthPair {
    /// MoldUDP64 sequence of the trigger message.
    pub tick_seq: u64,
    /// Capture time of the earliest copy of the trigger's packet.
    pub tick_time_ns: i64,
    /// Which feed's copy came first: `'A'` or `'B'`.
    pub first_feed: char,
    /// OUCH UserRefNum of the order.
    pub user_ref_num: u32,
    /// OUCH ClOrdID of the order.
    pub cl_ord_id: String,
    /// Capture time of the frame carrying the order's first byte.
    pub order_time_ns: i64,
    /// `order_time_ns - tick_time_ns`.
    pub latency_ns: i64,
    /// Capture time of the frame carrying the first byte of the Accepted message.
    pub ack_time_ns: i64,
    /// Whether the order shared its segment with another order.
    pub coalesced: bool,
    /// Whether the order was split across two segments.
    pub split: bool,
}

/// Counts of what was generated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SynthSummary {
    /// Frames written.
    pub frames: u64,
    /// Market-data packets (A copies).
    pub md_packets: u64,
    /// ITCH messages (excluding heartbeats).
    pub md_messages: u64,
    /// MoldUDP64 heartbeats per feed.
    pub heartbeats: u64,
    /// Noise frames.
    pub noise: u64,
    /// Orders sent.
    pub orders: u64,
    /// Order segments (TCP data segments client→exchange, retransmission included).
    pub order_segments: u64,
    /// The MoldUDP64 session.
    pub session: String,
    /// First and last sequence numbers.
    pub first_seq: u64,
    /// Last sequence number used.
    pub last_seq: u64,
    /// Drawn latencies above [`MAX_LATENCY_NS`], clamped to it.
    pub clamped_latencies: u64,
    /// Orders written later than their drawn latency (behind earlier orders, 100 ns apart at least,
    /// or behind a stall): their truth is their actual time.
    pub delayed_orders: u64,
}

const SESSION: &[u8; 10] = b"SYNTH00001";
const FEED_A_SRC: [u8; 4] = [206, 200, 127, 138];
const FEED_A_GRP: [u8; 4] = [233, 54, 12, 111];
const FEED_A_PORT: u16 = 26477;
const FEED_B_SRC: [u8; 4] = [206, 200, 127, 139];
const FEED_B_GRP: [u8; 4] = [233, 54, 12, 112];
const FEED_B_PORT: u16 = 26478;
const HOST: [u8; 4] = [10, 1, 0, 2];
const EXCHANGE: [u8; 4] = [10, 1, 0, 1];
const HOST_PORT: u16 = 40001;
const OUCH_PORT: u16 = 8003;
const HOST_MAC: packet::Mac = [0x02, 0, 0, 0, 0, 0x02];
const EXCHANGE_MAC: packet::Mac = [0x02, 0, 0, 0, 0, 0x01];
const FEED_MAC: packet::Mac = [0x00, 0x1c, 0x73, 0x00, 0x00, 0x99];
const SYMBOLS: [&str; 8] = ["AAPL", "MSFT", "NVDA", "AMZN", "GOOGL", "META", "TSLA", "QQQ"];
/// Frames are written once generation has moved this far past them; all delays are shorter.
const HORIZON_NS: i64 = 50_000_000;
/// The longest tick-to-trade latency synth writes: drawn ones above it are clamped (and counted).
pub const MAX_LATENCY_NS: i64 = HORIZON_NS / 4;
/// An order held for coalescing waits at most this long for a companion.
const COALESCE_WINDOW_NS: i64 = 20_000;
/// First data byte's sequence number of each side; the client's is near the top of the sequence space,
/// so the order stream wraps.
const CLIENT_ISN: u32 = 0xFFFF_F000;
const SERVER_ISN: u32 = 0x1000_0000;
const IFACE_A: u32 = 0;
const IFACE_B: u32 = 1;
const IFACE_ORDERS: u32 = 2;

struct Pending {
    time: i64,
    order: u64,
    iface: u32,
    dir: Direction,
    bytes: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, o: &Self) -> bool {
        (self.time, self.order) == (o.time, o.order)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Pending {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.time, self.order).cmp(&(o.time, o.order))
    }
}

enum Sink {
    Pcap(PcapWriter<BufWriter<File>>),
    Pcapng(PcapngWriter<BufWriter<File>>),
}

/// An order waiting to be written into the TCP stream.
struct OrderMsg {
    tick_seq: u64,
    tick_time: i64,
    first_feed: char,
    order: ouch::Order,
    due: i64,
}

struct Gen<'a> {
    cfg: &'a SynthConfig,
    rng: Rng,
    heap: BinaryHeap<Reverse<Pending>>,
    next_order: u64,
    sink: Sink,
    ip_id: u16,
    sum: SynthSummary,
    truth: Vec<TruthPair>,
    // TCP state: client (host -> exchange) and server sequence numbers.
    client_seq: u32,
    server_seq: u32,
    /// (send time, sequence after the segment) of each data segment, for ACK numbers.
    client_log: VecDeque<(i64, u32)>,
    server_log: VecDeque<(i64, u32)>,
    last_client_send: i64,
    last_server_send: i64,
    order_segments: u64,
    /// The retransmission was written.
    retransmitted: bool,
    held: Option<OrderMsg>,
    user_ref: u32,
    order_ref: u64,
    soup_seq: u64,
    last_a: i64,
    last_b: i64,
}

impl Gen<'_> {
    fn push(&mut self, time: i64, iface: u32, dir: Direction, bytes: Vec<u8>) {
        self.next_order += 1;
        self.heap.push(Reverse(Pending { time, order: self.next_order, iface, dir, bytes }));
    }

    fn flush_before(&mut self, t: i64) -> io::Result<()> {
        // Sends older than the horizon no longer decide any ACK number but the latest of them.
        for log in [&mut self.client_log, &mut self.server_log] {
            while log.len() > 1 && log[1].0 < t - HORIZON_NS {
                log.pop_front();
            }
        }
        while let Some(Reverse(p)) = self.heap.peek() {
            if p.time >= t {
                break;
            }
            let Some(Reverse(p)) = self.heap.pop() else { break };
            let len = p.bytes.len() as u32;
            match &mut self.sink {
                Sink::Pcap(w) => w.write(p.time, &p.bytes, len)?,
                Sink::Pcapng(w) => w.write(p.iface, p.time, &p.bytes, len, p.dir)?,
            }
            self.sum.frames += 1;
        }
        Ok(())
    }

    fn next_ip_id(&mut self) -> u16 {
        self.ip_id = self.ip_id.wrapping_add(1);
        self.ip_id
    }

    fn md_frame(&mut self, b_feed: bool, payload: &[u8]) -> Vec<u8> {
        let (src, grp, port, vlan) = if b_feed {
            (FEED_B_SRC, FEED_B_GRP, FEED_B_PORT, self.cfg.vlan_b)
        } else {
            (FEED_A_SRC, FEED_A_GRP, FEED_A_PORT, self.cfg.vlan_a)
        };
        let mut f = Vec::with_capacity(64 + payload.len());
        packet::ethernet(&mut f, packet::multicast_mac(grp), FEED_MAC, vlan);
        let id = self.next_ip_id();
        packet::ipv4_udp(&mut f, src, grp, 52086, port, id, payload);
        packet::pad_min(&mut f);
        f
    }

    /// Sends a Mold packet on feed A and B; returns (tick time, first feed).
    fn send_md(&mut self, source_time: i64, payload: &[u8]) -> (i64, char) {
        let (mut a, mut b) =
            (source_time + self.rng.range(0, 300) as i64, source_time + self.rng.range(1_000, 6_000) as i64);
        if self.rng.chance(0.1) {
            std::mem::swap(&mut a, &mut b);
            a += 1_500;
        }
        // Each feed delivers its packets in order, whatever the per-packet delay.
        a = a.max(self.last_a + 50);
        b = b.max(self.last_b + 50);
        self.last_a = a;
        if self.cfg.feed_b {
            self.last_b = b;
        }
        let fa = self.md_frame(false, payload);
        self.push(a, IFACE_A, Direction::Inbound, fa);
        if self.cfg.feed_b {
            let fb = self.md_frame(true, payload);
            self.push(b, IFACE_B, Direction::Inbound, fb);
            if b < a { (b, 'B') } else { (a, 'A') }
        } else {
            (a, 'A')
        }
    }

    /// A segment sent at `t`. Its ACK number covers what the other side sent at least 1 µs before `t`
    /// (frames are generated ahead of their times, so the other side's sequence number so far may
    /// include bytes that are only sent later).
    fn tcp_frame(&mut self, from_host: bool, flags: u8, payload: &[u8], seq: u32, t: i64) -> Vec<u8> {
        let acked = |log: &VecDeque<(i64, u32)>, initial: u32| {
            let n = log.partition_point(|&(sent, _)| sent + 1_000 <= t);
            if n == 0 { initial } else { log[n - 1].1 }
        };
        let mut f = Vec::with_capacity(54 + payload.len());
        let id = self.next_ip_id();
        if from_host {
            packet::ethernet(&mut f, EXCHANGE_MAC, HOST_MAC, None);
            let h = TcpHdr { sport: HOST_PORT, dport: OUCH_PORT, seq, ack: acked(&self.server_log, SERVER_ISN), flags };
            packet::ipv4_tcp(&mut f, HOST, EXCHANGE, h, id, payload);
        } else {
            packet::ethernet(&mut f, HOST_MAC, EXCHANGE_MAC, None);
            let h = TcpHdr { sport: OUCH_PORT, dport: HOST_PORT, seq, ack: acked(&self.client_log, CLIENT_ISN), flags };
            packet::ipv4_tcp(&mut f, EXCHANGE, HOST, h, id, payload);
        }
        packet::pad_min(&mut f);
        f
    }

    /// Client data segment at `t` (at least 100 ns after the previous one); returns its time.
    fn client_send(&mut self, t: i64, payload: &[u8]) -> i64 {
        let t = t.max(self.last_client_send + 100);
        let seq = self.client_seq;
        let f = self.tcp_frame(true, 0x18, payload, seq, t);
        self.push(t, IFACE_ORDERS, Direction::Outbound, f);
        self.client_seq = self.client_seq.wrapping_add(payload.len() as u32);
        self.client_log.push_back((t, self.client_seq));
        self.last_client_send = t;
        t
    }

    fn server_send(&mut self, t: i64, payload: &[u8]) -> i64 {
        let t = t.max(self.last_server_send + 100);
        let seq = self.server_seq;
        let f = self.tcp_frame(false, 0x18, payload, seq, t);
        self.push(t, IFACE_ORDERS, Direction::Inbound, f);
        self.server_seq = self.server_seq.wrapping_add(payload.len() as u32);
        self.server_log.push_back((t, self.server_seq));
        self.last_server_send = t;
        t
    }

    fn handshake(&mut self, t: i64) {
        let syn = self.tcp_frame(true, 0x02, &[], self.client_seq.wrapping_sub(1), t);
        self.push(t, IFACE_ORDERS, Direction::Outbound, syn);
        let synack = self.tcp_frame(false, 0x12, &[], self.server_seq.wrapping_sub(1), t + 20_000);
        self.push(t + 20_000, IFACE_ORDERS, Direction::Inbound, synack);
        let ack = self.tcp_frame(true, 0x10, &[], self.client_seq, t + 21_000);
        self.push(t + 21_000, IFACE_ORDERS, Direction::Outbound, ack);
        self.last_client_send = t + 21_000;
        self.last_server_send = t + 20_000;
        let mut login = Vec::new();
        soup::packet(&mut login, b'L', &soup::login_request("WSTAMP", "secret"));
        self.client_send(t + 22_000, &login);
        let mut acc = Vec::new();
        soup::packet(&mut acc, b'A', &soup::login_accepted("OUCHSES001", 1));
        self.server_send(t + 60_000, &acc);
    }

    /// Writes one or two orders as one segment (or split in two); records the truth.
    fn emit_orders(&mut self, msgs: Vec<OrderMsg>) {
        let due = msgs.iter().map(|m| m.due).max().unwrap_or(0);
        let coalesced = msgs.len() > 1;
        let mut payload = Vec::new();
        for m in &msgs {
            let mut body = Vec::with_capacity(47);
            ouch::enter_order(&mut body, &m.order);
            soup::packet(&mut payload, b'U', &body);
        }
        // The retransmission is due at the first segment from its index on: a split order before it
        // takes two indices, and may step over the index itself.
        let retransmit = !self.retransmitted && self.cfg.retransmit.is_some_and(|n| self.order_segments >= n);
        let split = !coalesced && !retransmit && self.rng.chance(self.cfg.split_prob);
        let seq_before = self.client_seq;
        let behind = self.last_client_send + 100 > due;
        let t = if split {
            let cut = self.rng.range(1, payload.len() as u64 - 1) as usize;
            let t = self.client_send(due, &payload[..cut]);
            self.client_send(t + 500, &payload[cut..]);
            self.order_segments += 2;
            t
        } else {
            let t = self.client_send(due, &payload);
            if retransmit {
                self.retransmitted = true;
                let f = self.tcp_frame(true, 0x18, &payload, seq_before, t + 200_000);
                self.push(t + 200_000, IFACE_ORDERS, Direction::Outbound, f);
                self.sum.order_segments += 1;
            }
            self.order_segments += 1;
            t
        };
        if behind {
            self.sum.delayed_orders += msgs.len() as u64;
        }
        for m in msgs {
            let ack_t = t + self.rng.range(self.cfg.ack_ns.0, self.cfg.ack_ns.1) as i64;
            self.order_ref += 1;
            let mut body = Vec::with_capacity(64);
            ouch::accepted(&mut body, ns_since_midnight(ack_t), &m.order, self.order_ref);
            let mut pkt = Vec::new();
            soup::packet(&mut pkt, b'S', &body);
            let ack_t = self.server_send(ack_t, &pkt);
            self.soup_seq += 1;
            self.truth.push(TruthPair {
                tick_seq: m.tick_seq,
                tick_time_ns: m.tick_time,
                first_feed: m.first_feed,
                user_ref_num: m.order.user_ref_num,
                cl_ord_id: m.order.cl_ord_id.clone(),
                order_time_ns: t,
                latency_ns: t - m.tick_time,
                ack_time_ns: ack_t,
                coalesced,
                split,
            });
            self.sum.orders += 1;
        }
    }

    fn sample_latency(&mut self) -> i64 {
        let m = self.cfg.latency;
        let mut l = m.median_ns * (m.sigma * self.rng.normal()).exp();
        if self.rng.chance(m.stall_prob) {
            l += m.stall_ns * (0.5 + self.rng.unit());
        }
        if l > MAX_LATENCY_NS as f64 {
            self.sum.clamped_latencies += 1;
        }
        l.clamp(100.0, MAX_LATENCY_NS as f64) as i64
    }

    fn order_for(&mut self, tick_seq: u64, tick_time: i64, first_feed: char, symbol: &str) {
        let due = tick_time + self.sample_latency();
        self.user_ref += 1;
        let msg = OrderMsg {
            tick_seq,
            tick_time,
            first_feed,
            order: ouch::Order {
                user_ref_num: self.user_ref,
                side: if self.rng.chance(0.5) { b'B' } else { b'S' },
                quantity: 100 * self.rng.range(1, 10) as u32,
                symbol: symbol.to_owned(),
                price: 1_000_000 + self.rng.below(5_000_000),
                cl_ord_id: format!("T{tick_seq:013}"),
            },
            due,
        };
        match self.held.take() {
            Some(h) if msg.due - h.due <= COALESCE_WINDOW_NS => self.emit_orders(vec![h, msg]),
            Some(h) => {
                self.emit_orders(vec![h]);
                self.hold_or_emit(msg);
            }
            None => self.hold_or_emit(msg),
        }
    }

    fn hold_or_emit(&mut self, msg: OrderMsg) {
        if self.rng.chance(self.cfg.coalesce_prob) {
            self.held = Some(msg);
        } else {
            self.emit_orders(vec![msg]);
        }
    }
}

/// ITCH and OUCH timestamps: ns since midnight, US Eastern time (where NASDAQ keeps its clocks).
fn ns_since_midnight(t: i64) -> u64 {
    let local = t + wirestamp_core::time::us_eastern_offset_s(t) * 1_000_000_000;
    local.rem_euclid(86_400 * 1_000_000_000) as u64
}

/// Generates the capture at `out` and returns the truth, in order-time order, and a summary.
pub fn synth(cfg: &SynthConfig, out: &Path) -> io::Result<(Vec<TruthPair>, SynthSummary)> {
    synth_with_progress(cfg, out, &mut |_| {})
}

/// How often [`synth_with_progress`] reports: every this many market-data packets.
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// [`synth`], calling `progress` with the market-data packets generated so far every
/// [`PROGRESS_EVERY`] of them (a long run's progress line).
pub fn synth_with_progress(
    cfg: &SynthConfig,
    out: &Path,
    progress: &mut dyn FnMut(u64),
) -> io::Result<(Vec<TruthPair>, SynthSummary)> {
    let file = BufWriter::with_capacity(1 << 20, File::create(out)?);
    let sink = match cfg.container {
        Container::Pcap => Sink::Pcap(PcapWriter::new(file, LinkType::Ethernet, 65_535)?),
        Container::Pcapng => {
            let mut w = PcapngWriter::new(file, Some("wirestamp synth: synthetic market with ground truth"))?;
            for (name, desc) in [
                ("tap-md-a", "feed A (MoldUDP64/ITCH 5.0)"),
                ("tap-md-b", "feed B (MoldUDP64/ITCH 5.0)"),
                ("tap-orders", "order session (SoupBinTCP/OUCH 5.0)"),
            ] {
                w.add_interface(&IfaceSpec {
                    link: LinkType::Ethernet,
                    name: name.into(),
                    description: Some(desc.into()),
                    snaplen: 65_535,
                })?;
            }
            Sink::Pcapng(w)
        }
    };
    let mut g = Gen {
        cfg,
        rng: Rng::new(cfg.seed),
        heap: BinaryHeap::new(),
        next_order: 0,
        sink,
        ip_id: 0,
        sum: SynthSummary { session: String::from_utf8_lossy(SESSION).into_owned(), ..Default::default() },
        truth: Vec::new(),
        client_seq: CLIENT_ISN,
        server_seq: SERVER_ISN,
        client_log: VecDeque::new(),
        server_log: VecDeque::new(),
        last_client_send: i64::MIN / 2,
        last_server_send: i64::MIN / 2,
        order_segments: 0,
        retransmitted: false,
        held: None,
        user_ref: 0,
        order_ref: 0,
        soup_seq: 1,
        last_a: i64::MIN / 2,
        last_b: i64::MIN / 2,
    };

    let mut t = cfg.start_ns;
    g.handshake(t);
    t += 100_000;
    let mut seq: u64 = 1;
    g.sum.first_seq = seq;
    // Stock directory for every symbol, one packet.
    let mut payload = Vec::new();
    mold::header(&mut payload, SESSION, seq, SYMBOLS.len() as u16);
    for (i, s) in SYMBOLS.iter().enumerate() {
        let mut m = Vec::new();
        itch::stock_directory(&mut m, i as u16 + 1, ns_since_midnight(t), s);
        mold::block(&mut payload, &m);
    }
    g.send_md(t, &payload);
    seq += SYMBOLS.len() as u64;
    g.sum.md_packets += 1;
    g.sum.md_messages += SYMBOLS.len() as u64;

    let mut live: Vec<(u64, u16)> = Vec::new(); // (order ref, locate) of resting orders
    let mut next_ref: u64 = 1;
    let mut match_no: u64 = 1;
    let mut burst_left = 0u64;
    let mut next_heartbeat = t + 1_000_000;
    while g.sum.md_packets < cfg.packets {
        // Advance time.
        let gap = if burst_left > 0 {
            burst_left -= 1;
            cfg.burst_gap_ns as i64
        } else {
            if g.rng.chance(cfg.burst_prob) {
                burst_left = g.rng.range(cfg.burst_len.0, cfg.burst_len.1);
            }
            // Exponential gaps, capped so that held orders are never written late.
            ((-(1.0 - g.rng.unit()).ln()) * cfg.mean_gap_ns as f64).min(1_000_000.0) as i64 + 50
        };
        t += gap;
        if let Some(h) = g.held.take() {
            if h.due + COALESCE_WINDOW_NS < t {
                g.emit_orders(vec![h]);
            } else {
                g.held = Some(h);
            }
        }
        g.flush_before(t - HORIZON_NS)?;
        while t >= next_heartbeat {
            let mut hb = Vec::new();
            mold::header(&mut hb, SESSION, seq, 0);
            g.send_md(next_heartbeat, &hb);
            g.sum.heartbeats += 1;
            let mut cli = Vec::new();
            soup::packet(&mut cli, b'R', &[]);
            g.client_send(next_heartbeat, &cli);
            let mut srv = Vec::new();
            soup::packet(&mut srv, b'H', &[]);
            g.server_send(next_heartbeat + 3_000, &srv);
            next_heartbeat += 1_000_000;
        }
        if cfg.noise_every > 0 && g.rng.below(cfg.noise_every) == 0 {
            let mut f = Vec::new();
            packet::ethernet(&mut f, [0x01, 0x00, 0x5e, 0, 0, 0x66], [0x00, 0x00, 0x0c, 0x9f, 0xf0, 0x01], Some(3050));
            let id = g.next_ip_id();
            packet::ipv4_udp(&mut f, [143, 131, 118, 229], [224, 0, 0, 102], 1985, 1985, id, &[0u8; 20]);
            g.push(t - 10, IFACE_A, Direction::Inbound, f);
            g.sum.noise += 1;
        }

        let n = g.rng.range(1, cfg.max_msgs);
        let mut payload = Vec::with_capacity(20 + 40 * n as usize);
        mold::header(&mut payload, SESSION, seq, n as u16);
        let mut symbols = Vec::with_capacity(n as usize);
        let ts = ns_since_midnight(t);
        for _ in 0..n {
            let mut m = Vec::with_capacity(36);
            let kind = g.rng.below(100);
            if kind < 50 || live.is_empty() {
                let locate = g.rng.range(1, SYMBOLS.len() as u64) as u16;
                let sym = SYMBOLS[locate as usize - 1];
                let side = if g.rng.chance(0.5) { b'B' } else { b'S' };
                let shares = 100 * g.rng.range(1, 20) as u32;
                let price = 1_000_000 + g.rng.below(5_000_000) as u32;
                itch::add_order(&mut m, locate, ts, next_ref, side, shares, sym, price);
                live.push((next_ref, locate));
                if live.len() > 4096 {
                    live.swap_remove(0);
                }
                next_ref += 1;
                symbols.push(sym);
            } else {
                let i = g.rng.below(live.len() as u64) as usize;
                let (r, locate) = live[i];
                match kind {
                    50..=64 => {
                        itch::executed(&mut m, locate, ts, r, 100, match_no);
                        match_no += 1;
                    }
                    65..=74 => itch::cancel(&mut m, locate, ts, r, 100),
                    _ => {
                        itch::delete(&mut m, locate, ts, r);
                        live.swap_remove(i);
                    }
                }
                symbols.push(SYMBOLS[locate as usize - 1]);
            }
            mold::block(&mut payload, &m);
        }
        let (tick_time, first) = g.send_md(t, &payload);
        g.sum.md_packets += 1;
        g.sum.md_messages += n;
        if g.sum.md_packets.is_multiple_of(PROGRESS_EVERY) {
            progress(g.sum.md_packets);
        }
        if g.rng.chance(cfg.order_prob) {
            let idx = g.rng.below(n) as usize;
            g.order_for(seq + idx as u64, tick_time, first, symbols[idx]);
        }
        seq += n;
    }
    if let Some(h) = g.held.take() {
        g.emit_orders(vec![h]);
    }
    g.sum.last_seq = seq - 1;
    g.sum.order_segments += g.order_segments;
    g.flush_before(i64::MAX)?;
    match g.sink {
        Sink::Pcap(w) => w.finish()?.flush()?,
        Sink::Pcapng(w) => w.finish()?.flush()?,
    }
    let mut truth = g.truth;
    truth.sort_by_key(|p| (p.order_time_ns, p.user_ref_num));
    Ok((truth, g.sum))
}

/// The truth CSV's header row.
pub const TRUTH_HEADER: &str = "tick_seq,tick_time_ns,first_feed,user_ref_num,cl_ord_id,order_time_ns,latency_ns,\
ack_time_ns,order_to_ack_ns,coalesced,split";

/// Writes the truth as CSV with a header row.
pub fn write_truth(truth: &[TruthPair], out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{TRUTH_HEADER}")?;
    for p in truth {
        writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{}",
            p.tick_seq,
            p.tick_time_ns,
            p.first_feed,
            p.user_ref_num,
            p.cl_ord_id,
            p.order_time_ns,
            p.latency_ns,
            p.ack_time_ns,
            p.ack_time_ns - p.order_time_ns,
            p.coalesced,
            p.split
        )?;
    }
    Ok(())
}
