//! eBPF live source: wirestamp's tc programs (`wirestamp-bpf`'s [`TcCapture`]) on one or more interfaces
//! pick the packets of the configured market-data feeds and order sessions, stamp them at the hook and
//! copy a prefix of each into a BPF ring buffer; this module turns the ring's records into [`Frame`]s.
//!
//! ```text
//!  -i IFACE ─▶ TcCapture (tcx ingress + egress, frame-prefix mode) ─▶ ring ─▶ queue ─▶ Frame
//!              flows: --md udp:GROUP:PORT (dst), --orders tcp:HOST:PORT (dst and src)
//! ```
//!
//! What a frame holds, and how it differs from an AF_PACKET frame:
//! - **Truncated**: `data` is the frame from its Ethernet header through `snap_len` bytes of L4 payload
//!   (at most [`PAYLOAD_MAX`] bytes in all), so `data.len()` < `wire_len` whenever the payload is
//!   longer. `wire_len` is the skb's length (plus 4 for a restored VLAN tag).
//! - **Timestamp** ([`ts_source_of`]): the skb's hardware stamp ([`TsSource::KernelHardware`]), its
//!   REALTIME/TAI receive stamp ([`TsSource::KernelSoftware`]), else the program's own
//!   `bpf_ktime_get_tai_ns()` at the hook less the kernel's TAI offset ([`TsSource::BpfHook`]: egress,
//!   TCP, and ingress before the kernel's stamp).
//! - **Direction** from the hook (ingress = inbound, egress = outbound), interface = index of `-i`.
//! - A VLAN tag the stack had taken out of the data (offload) is put back (TPID 0x8100), as the
//!   AF_PACKET source does.
//! - A GSO skb (TCP egress of several segments at once) is one record and one frame: counted in
//!   [`EbpfStats::gso_records`].
//!
//! With a cgroup ([`EbpfConfig::cgroup`]), the order sessions' TX timestamps come too: `wirestamp-bpf`'s
//! sockops program ([`TxTimestamping`], Linux 6.15+) on the trading app's cgroup v2 reports each write's
//! SCHED, SND (software or hardware) and ACK times keyed by the sequence number of its last byte;
//! [`EbpfSource::take_tx_events`] hands them out as [`TxEvent`]s with the write's whole byte range
//! (from the previous write's end, or the connection's first byte), so that a write's SND time can be
//! put beside the egress frame whose `seq + len - 1` is the write's last byte.
//!
//! Inbound packets may instead be picked up by a device-bound XDP program ([`RxHook::Xdp`]), which reads
//! the NIC's RX hardware timestamp through the driver's metadata kfunc before any skb exists. Only an
//! interface that reports hardware RX timestamping can give one; on any other (veth, most virtual NICs),
//! or when XDP cannot attach, inbound packets go through the tc path and [`EbpfSource::rx_choices`] says
//! why. Outbound packets always go through tc egress.
//!
//! Losses are counted: records the kernel could not write (ring full), records dropped here because the
//! queue between the ring and the caller was full, and those still queued at exit. Dropping the source
//! detaches the programs; a second capture on an interface is refused by the bpf crate.

use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Where cgroup v2 is mounted (for `--cgroup`; `wirestamp doctor` says it too).
pub use wirestamp_bpf::cgroup2_mount;
/// The mounts of a mountinfo text, as `--cgroup` reads them (`wirestamp doctor` reads them so too).
pub use wirestamp_bpf::mounts;
/// This process's mountinfo text, as bytes (a mount point need not be UTF-8).
pub use wirestamp_bpf::read_mountinfo;
use wirestamp_bpf::{
    CaptureStats, HookDirection, PAYLOAD_MAX, PacketRecord, StampSource, TcCapture, TcOptions, TxKind, TxRecord,
    TxStats, TxTimestamping, XdpCapture,
};
use wirestamp_core::analyze::flows::FlowSpec;
use wirestamp_core::{ClockQuality, Direction, Frame, LinkType, OwnedFrame, TsSource};

use super::error::LiveError;

/// Records held between the ring and the caller at most; beyond, they are dropped and counted.
pub const QUEUE_MAX: usize = 1 << 16;

/// What to capture.
#[derive(Debug, Clone)]
pub struct EbpfConfig {
    /// Interfaces; a frame's `interface` is its index here.
    pub ifaces: Vec<String>,
    /// Feeds (matched as destination) and order sessions (both directions).
    pub flows: Vec<FlowSpec>,
    /// L4 payload bytes kept per frame, after the headers (0..=256; the record holds 256 bytes in all).
    pub snap_len: u16,
    /// BPF ring buffer size per interface, bytes (a power of two).
    pub ring_bytes: u32,
    /// The trading app's cgroup v2 directory: attach the sockops TX timestamping of the order sessions.
    pub cgroup: Option<PathBuf>,
    /// Where inbound packets are picked up.
    pub rx_hook: RxHook,
}

/// The hook that picks up inbound packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RxHook {
    /// tc ingress (tcx, else clsact): any interface; the skb's stamps.
    #[default]
    Tc,
    /// Device-bound XDP, for the NIC's RX hardware timestamp, on an interface that reports hardware RX
    /// timestamping (`ethtool -T`); elsewhere, or when XDP cannot attach, tc ingress, and
    /// [`EbpfSource::rx_choices`] says why.
    Xdp,
    /// XDP whatever the interface reports (a driver that stamps without saying so; tests on veth): a
    /// packet the driver gives no hardware stamp carries the hook's time, counted in `no_hw_rx_stamp`.
    XdpAlways,
}

/// How one interface's inbound packets are picked up, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RxChoice {
    /// `"xdp"` or `"tc"`.
    pub hook: &'static str,
    /// Why XDP was not used, when it was asked for.
    pub fallback: Option<String>,
}

/// One interface's programs: tc (egress, and ingress unless XDP has it) and maybe XDP (ingress).
struct Hooks {
    tc: TcCapture,
    xdp: Option<XdpCapture>,
}

/// One sockops TX timestamp of an order session's write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxEvent {
    /// ns since the epoch: the callback's TAI time less the TAI offset, or the NIC's stamp (`snd_hw`).
    pub time_ns: i64,
    /// `established`, `sched`, `snd_sw`, `snd_hw`, `ack`.
    pub kind: &'static str,
    /// The app's end of the connection.
    pub local: SocketAddr,
    /// The exchange's end.
    pub remote: SocketAddr,
    /// Sequence number of the write's first byte: the byte after the previous write's last (None when
    /// the connection was established before the capture started and this is its first write seen).
    /// For `established`: the connection's first data byte (ISN + 1).
    pub seq_first: Option<u32>,
    /// Sequence number of the write's last byte (the kernel's tskey); `established`: as `seq_first`.
    pub seq_last: u32,
    /// Offsets of the write's first and last byte in the stream (0 = first data byte), when the
    /// connection's establishment was seen.
    pub stream: Option<(u32, u32)>,
}

/// Per-socket state that turns tskeys into byte ranges.
#[derive(Default)]
struct SockTx {
    isn1: Option<u32>,
    next_first: Option<u32>,
    /// Writes seen and not yet acknowledged: last byte → first byte.
    open: HashMap<u32, u32>,
}

fn tx_kind_name(k: TxKind) -> &'static str {
    match k {
        TxKind::Established => "established",
        TxKind::Sched => "sched",
        TxKind::SndSoftware => "snd_sw",
        TxKind::SndHardware => "snd_hw",
        TxKind::Ack => "ack",
        TxKind::Unknown(_) => "unknown",
    }
}

/// The sockops side: program, per-socket ranges, events not yet taken.
struct TxSide {
    tx: TxTimestamping,
    socks: HashMap<u64, SockTx>,
    events: Vec<TxEvent>,
}

impl TxSide {
    fn record(socks: &mut HashMap<u64, SockTx>, events: &mut Vec<TxEvent>, r: &TxRecord<'_>, tai_offset_ns: i64) {
        let sock = socks.entry(r.socket_cookie()).or_default();
        let key = r.seq();
        let seq_first = match r.kind() {
            TxKind::Established => {
                sock.isn1 = Some(key);
                sock.next_first = Some(key);
                Some(key)
            }
            kind => {
                let first = match sock.open.get(&key) {
                    Some(&f) => Some(f),
                    None => {
                        let f = sock.next_first;
                        if let Some(f) = f {
                            sock.open.insert(key, f);
                        }
                        sock.next_first = Some(key.wrapping_add(1));
                        f
                    }
                };
                if kind == TxKind::Ack {
                    sock.open.remove(&key);
                }
                first
            }
        };
        let stream = match (sock.isn1, seq_first) {
            (Some(base), Some(first)) => Some((first.wrapping_sub(base), key.wrapping_sub(base))),
            _ => None,
        };
        events.push(TxEvent {
            time_ns: r.epoch_ns(tai_offset_ns),
            kind: tx_kind_name(r.kind()),
            local: r.local(),
            remote: r.remote(),
            seq_first,
            seq_last: key,
            stream,
        });
    }
}

/// Counters of one interface's capture.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EbpfStats {
    /// The kernel side's counters and the records read from the ring (tc programs).
    pub bpf: CaptureStats,
    /// The XDP program's, when it picks up inbound packets.
    pub xdp: Option<CaptureStats>,
    /// Records dropped in user space: the queue toward the writer held [`QUEUE_MAX`].
    pub queue_drops: u64,
    /// Records handed out as frames.
    pub frames: u64,
    /// Records still queued (read from the ring, not yet handed out).
    pub queued: u64,
    /// Frames whose record was a GSO skb (several wire segments in one frame).
    pub gso_records: u64,
    /// Frames whose offloaded VLAN tag was put back.
    pub vlan_restored: u64,
}

/// The eBPF source: one attached [`TcCapture`] per interface, plus an [`XdpCapture`] where it takes
/// the inbound packets.
pub struct EbpfSource {
    caps: Vec<Hooks>,
    rx: Vec<RxChoice>,
    ifaces: Vec<String>,
    queue: VecDeque<OwnedFrame>,
    current: Option<OwnedFrame>,
    spare: Vec<Vec<u8>>,
    tai_offset_ns: i64,
    stats: Vec<EbpfStats>,
    next: usize,
    tx: Option<TxSide>,
}

impl std::fmt::Debug for EbpfSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EbpfSource").field("ifaces", &self.ifaces).finish()
    }
}

/// The bpf crate's flows for the configured feeds and sessions (ids 1, 2, ... in order).
pub fn bpf_flows(flows: &[FlowSpec]) -> Vec<wirestamp_bpf::FlowSpec> {
    flows
        .iter()
        .zip(1u32..)
        .map(|(f, id)| {
            let (proto, addr, port, match_src) = match f {
                FlowSpec::Feed(s) => (wirestamp_bpf::L4Proto::Udp, s.group, s.port, false),
                FlowSpec::Orders(s) => (wirestamp_bpf::L4Proto::Tcp, s.host, s.port, true),
            };
            wirestamp_bpf::FlowSpec {
                id,
                proto,
                addr,
                port,
                vlan: wirestamp_bpf::VlanMatch::Any,
                match_dst: true,
                match_src,
            }
        })
        .collect()
}

/// A record's timestamp provenance.
pub fn ts_source_of(s: StampSource) -> TsSource {
    match s {
        StampSource::Hardware => TsSource::KernelHardware,
        // The kernel's receive stamp (REALTIME), or one set in TAI (SO_TXTIME users): both software.
        StampSource::SkbRealtime | StampSource::SkbTai => TsSource::KernelSoftware,
        StampSource::HookTai => TsSource::BpfHook,
        StampSource::Unknown(_) => TsSource::KernelNone,
    }
}

/// VLAN tags present in the data of an Ethernet frame (at most 3 looked at).
fn tags_in_data(data: &[u8]) -> u8 {
    let mut n = 0;
    let mut off = 12;
    while n < 3 {
        match data.get(off..off + 2) {
            Some([0x81, 0x00]) | Some([0x88, 0xa8]) => {
                n += 1;
                off += 4;
            }
            _ => break,
        }
    }
    n
}

/// The XDP program for `iface`'s inbound packets when `hook` asks for it and it can give what it is for;
/// otherwise `None`, with the reason.
fn attach_xdp(
    hook: RxHook,
    iface: &str,
    idx: u32,
    flows: &[wirestamp_bpf::FlowSpec],
    opts: &TcOptions,
) -> (Option<XdpCapture>, RxChoice) {
    let tc = |fallback: Option<String>| RxChoice { hook: "tc", fallback };
    match hook {
        RxHook::Tc => return (None, tc(None)),
        RxHook::Xdp => match super::tstamp::ts_info(iface) {
            Ok(info) if info.hardware_rx() => {}
            Ok(_) => {
                let why = "the interface reports no hardware RX timestamping (ethtool -T), so XDP could only give \
                           the hook's time; tc ingress gives the kernel's software receive stamp while a socket on \
                           this host has RX timestamping on (the kernel then stamps every packet), else the hook's \
                           time as well (counted as bpf_hook)";
                return (None, tc(Some(why.into())));
            }
            Err(e) => return (None, tc(Some(format!("its timestamping capabilities are unknown: {e}")))),
        },
        RxHook::XdpAlways => {}
    }
    match XdpCapture::attach(idx, flows, opts) {
        Ok(x) => (Some(x), RxChoice { hook: "xdp", fallback: None }),
        Err(e) => (None, tc(Some(format!("the XDP program could not attach: {e}")))),
    }
}

fn ifindex(iface: &str) -> Result<u32, LiveError> {
    let name = CString::new(iface).map_err(|_| LiveError::NoSuchInterface { iface: iface.into() })?;
    // SAFETY: `name` is a valid NUL-terminated string.
    let idx = unsafe { libc::if_nametoindex(name.as_ptr()) };
    if idx == 0 { Err(LiveError::NoSuchInterface { iface: iface.into() }) } else { Ok(idx) }
}

impl EbpfSource {
    /// Loads and attaches the programs on every interface (in the calling thread's network namespace).
    /// Fails, naming the interface, when one does not exist, when the programs cannot be loaded or
    /// attached (with the missing capability or kernel feature), or when another wirestamp capture is
    /// attached there already.
    pub fn open(cfg: &EbpfConfig) -> Result<EbpfSource, LiveError> {
        if cfg.flows.is_empty() {
            return Err(LiveError::Sys {
                what: "eBPF capture",
                iface: cfg.ifaces.join(","),
                source: std::io::Error::other(
                    "no flow configured: give --md udp:GROUP:PORT and/or --orders tcp:HOST:PORT",
                ),
            });
        }
        wirestamp_bpf::install_libbpf_logger();
        let flows = bpf_flows(&cfg.flows);
        let opts = TcOptions {
            snap_len: cfg.snap_len,
            ring_bytes: cfg.ring_bytes,
            frame_prefix: true,
            ..TcOptions::default()
        };
        let mut caps = Vec::new();
        let mut rx = Vec::new();
        for iface in &cfg.ifaces {
            let idx = ifindex(iface)?;
            let (xdp, choice) = attach_xdp(cfg.rx_hook, iface, idx, &flows, &opts);
            let tc_opts = TcOptions { ingress: xdp.is_none(), ..opts.clone() };
            let tc = TcCapture::attach(idx, &flows, &tc_opts).map_err(|e| LiveError::Sys {
                what: "eBPF tc capture",
                iface: iface.clone(),
                source: std::io::Error::other(e.to_string()),
            })?;
            caps.push(Hooks { tc, xdp });
            rx.push(choice);
        }
        let tai_offset_ns = wirestamp_bpf::tai_offset_ns().map_err(|e| LiveError::sys("adjtimex", "", e))?;
        let tx = match &cfg.cgroup {
            None => None,
            Some(cg) => {
                let tcp: Vec<_> = flows.iter().filter(|f| f.proto == wirestamp_bpf::L4Proto::Tcp).cloned().collect();
                let err = |reason: String| LiveError::Sys {
                    what: "sockops TX timestamps",
                    iface: cg.display().to_string(),
                    source: std::io::Error::other(reason),
                };
                if tcp.is_empty() {
                    return Err(err("no order session: give --orders tcp:HOST:PORT".into()));
                }
                let tx = TxTimestamping::attach(cg, &tcp).map_err(|e| err(e.to_string()))?;
                Some(TxSide { tx, socks: HashMap::new(), events: Vec::new() })
            }
        };
        Ok(EbpfSource {
            stats: vec![EbpfStats::default(); caps.len()],
            caps,
            rx,
            ifaces: cfg.ifaces.clone(),
            queue: VecDeque::new(),
            current: None,
            spare: Vec::new(),
            tai_offset_ns,
            next: 0,
            tx,
        })
    }

    /// How the tc programs are attached on each interface ("tcx" or "clsact").
    pub fn attach_kinds(&self) -> Vec<&'static str> {
        self.caps.iter().map(|c| c.tc.attach_kind().unwrap_or("none")).collect()
    }

    /// How each interface's inbound packets are picked up, and why when XDP was asked for and not used.
    pub fn rx_choices(&self) -> &[RxChoice] {
        &self.rx
    }

    /// TAI − UTC used to convert the hook's TAI time, ns.
    pub fn tai_offset_ns(&self) -> i64 {
        self.tai_offset_ns
    }

    fn push(&mut self, i: usize, rec: &PacketRecord<'_>) {
        let st = &mut self.stats[i];
        if self.queue.len() >= QUEUE_MAX {
            st.queue_drops += 1;
            return;
        }
        let mut data = self.spare.pop().unwrap_or_default();
        data.clear();
        let bytes = rec.captured();
        let mut wire_len = rec.skb_len();
        if rec.captured_offset() == 0 && rec.vlan_count() > tags_in_data(bytes) && bytes.len() >= 12 {
            // The stack had taken the outer tag out of the data (offload): put it back where it was.
            data.extend_from_slice(&bytes[..12]);
            data.extend_from_slice(&0x8100u16.to_be_bytes());
            data.extend_from_slice(&rec.offloaded_tci().to_be_bytes());
            data.extend_from_slice(&bytes[12..]);
            wire_len += 4;
            st.vlan_restored += 1;
        } else {
            data.extend_from_slice(bytes);
        }
        if rec.gso_segs() > 1 {
            st.gso_records += 1;
        }
        let direction = match rec.direction() {
            HookDirection::Ingress => Direction::Inbound,
            HookDirection::Egress => Direction::Outbound,
            HookDirection::Unknown(_) => Direction::Unknown,
        };
        let meta = Frame {
            data: &[],
            wire_len,
            ts_ns: rec.epoch_ns(self.tai_offset_ns),
            ts_source: ts_source_of(rec.ts_source()),
            link: LinkType::Ethernet,
            interface: i as u32,
            direction,
            fcs_len: Some(0),
            quality: ClockQuality::default(),
        };
        self.queue.push_back(OwnedFrame { data, meta });
    }

    /// The next frame, waiting up to `timeout` (shared among the interfaces); `None` when none arrived
    /// (or a signal interrupted the wait).
    pub fn next_frame(&mut self, timeout: Duration) -> Result<Option<Frame<'_>>, LiveError> {
        if let Some(done) = self.current.take() {
            self.spare.push(done.data);
        }
        // The sockops ring is read whenever the frame queue runs dry, and every 1024 frames under load.
        if self.tx.is_some() && self.stats.iter().map(|s| s.frames).sum::<u64>() % 1024 == 1023 {
            self.poll_tx(Duration::ZERO)?;
        }
        if self.queue.is_empty() {
            self.poll_tx(Duration::ZERO)?;
            self.wait_for_records(timeout)?;
        }
        let Some(p) = self.queue.pop_front() else { return Ok(None) };
        self.stats[p.meta.interface as usize].frames += 1;
        Ok(Some(self.current.insert(p).frame()))
    }

    /// Reads the rings until one gives a record or `timeout` passes: first every ring without waiting,
    /// then waiting on each in turn. One ring is waited on for the whole time (its poll reads it every
    /// drain interval anyway). With several, records below a ring's wakeup threshold signal nothing, so
    /// none is waited on longer than the drain interval at a time while another may hold records.
    fn wait_for_records(&mut self, timeout: Duration) -> Result<(), LiveError> {
        let n = self.caps.len();
        let rings = n + self.caps.iter().filter(|c| c.xdp.is_some()).count();
        let turn = if rings == 1 { timeout } else { wirestamp_bpf::DRAIN_INTERVAL_DEFAULT };
        let start = Instant::now();
        let mut wait = Duration::ZERO;
        loop {
            for k in 0..n {
                let i = (self.next + k) % n;
                self.poll_one(i, wait)?;
                if !self.queue.is_empty() {
                    self.next = (i + 1) % n;
                    return Ok(());
                }
            }
            let left = timeout.saturating_sub(start.elapsed());
            if left.is_zero() {
                return Ok(());
            }
            wait = turn.min(left) / n.max(1) as u32;
        }
    }

    fn poll_one(&mut self, i: usize, wait: Duration) -> Result<(), LiveError> {
        // The callback cannot borrow `self` while the capture is borrowed: take the capture out.
        let mut cap = self.caps.swap_remove(i);
        let res = match &mut cap.xdp {
            None => cap.tc.poll(wait, |rec| self.push(i, rec)),
            // Two rings, half the wait each (a poll reads what is there before it waits); tc is only
            // read, not waited on, once XDP gave records.
            Some(xdp) => xdp.poll(wait / 2, |rec| self.push(i, rec)).and_then(|n| {
                let tc_wait = if n > 0 { Duration::ZERO } else { wait / 2 };
                Ok(n + cap.tc.poll(tc_wait, |rec| self.push(i, rec))?)
            }),
        };
        self.caps.push(cap);
        let last = self.caps.len() - 1;
        self.caps.swap(i, last);
        res.map(|_| ()).map_err(|e: wirestamp_bpf::BpfError| LiveError::Sys {
            what: "eBPF ring poll",
            iface: self.ifaces[i].clone(),
            source: std::io::Error::other(e.to_string()),
        })
    }

    /// Reads the sockops ring (when attached), waiting up to `timeout`; returns the events read.
    pub fn poll_tx(&mut self, timeout: Duration) -> Result<usize, LiveError> {
        let Some(side) = self.tx.as_mut() else { return Ok(0) };
        let tai = self.tai_offset_ns;
        let TxSide { tx, socks, events } = side;
        let n = tx.poll(timeout, |r| TxSide::record(socks, events, r, tai)).map_err(|e| LiveError::Sys {
            what: "sockops ring poll",
            iface: String::new(),
            source: std::io::Error::other(e.to_string()),
        })?;
        Ok(n)
    }

    /// The TX events read so far, in ring order (empty without a cgroup).
    pub fn take_tx_events(&mut self) -> Vec<TxEvent> {
        self.tx.as_mut().map(|s| std::mem::take(&mut s.events)).unwrap_or_default()
    }

    /// The sockops counters, when attached.
    pub fn tx_stats(&self) -> Result<Option<TxStats>, LiveError> {
        match &self.tx {
            None => Ok(None),
            Some(s) => s.tx.stats().map(Some).map_err(|e| LiveError::Sys {
                what: "sockops stats",
                iface: String::new(),
                source: std::io::Error::other(e.to_string()),
            }),
        }
    }

    /// Counters per interface (in `-i` order), read now.
    pub fn stats(&self) -> Result<Vec<EbpfStats>, LiveError> {
        self.caps
            .iter()
            .zip(&self.stats)
            .zip(&self.ifaces)
            .enumerate()
            .map(|(i, ((cap, st), iface))| {
                let err = |e: wirestamp_bpf::BpfError| LiveError::Sys {
                    what: "eBPF stats",
                    iface: iface.clone(),
                    source: std::io::Error::other(e.to_string()),
                };
                let bpf = cap.tc.stats().map_err(err)?;
                let xdp = cap.xdp.as_ref().map(|x| x.stats()).transpose().map_err(err)?;
                let queued = self.queue.iter().filter(|p| p.meta.interface as usize == i).count() as u64;
                Ok(EbpfStats { bpf, xdp, queued, ..*st })
            })
            .collect()
    }
}

/// [`PAYLOAD_MAX`]: the longest frame this source hands out (the pcapng interface's snap length).
pub const FRAME_MAX: u32 = PAYLOAD_MAX as u32;

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{IpAddr, Ipv4Addr};

    #[test]
    fn flows_convert_feeds_to_destinations_and_sessions_to_both_sides() {
        let specs: Vec<FlowSpec> =
            ["udp:239.1.1.1:30001", "tcp:10.0.0.2:9000", "udp:*:26477"].iter().map(|s| s.parse().unwrap()).collect();
        let got = bpf_flows(&specs);
        let g = IpAddr::V4(Ipv4Addr::new(239, 1, 1, 1));
        assert_eq!(got[0], wirestamp_bpf::FlowSpec::udp_feed(1, g, 30001));
        assert_eq!(got[1], wirestamp_bpf::FlowSpec::tcp_session(2, IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2)), 9000));
        assert_eq!(got[2].addr, None);
        assert_eq!((got[2].id, got[2].port, got[2].match_dst, got[2].match_src), (3, 26477, true, false));
    }

    /// A `struct ws_tx_event` (events.h) built by hand: ts_ns @0, sk_cookie @8, seq @16, flow_id @20,
    /// local_port @24, remote_port @26, kind @28, ip_version @29, local_addr @32, remote_addr @48.
    fn tx_event(kind: u8, seq: u32, ts: u64) -> [u64; 8] {
        let mut b = [0u8; 64];
        b[0..8].copy_from_slice(&ts.to_ne_bytes());
        b[8..16].copy_from_slice(&77u64.to_ne_bytes());
        b[16..20].copy_from_slice(&seq.to_ne_bytes());
        b[24..26].copy_from_slice(&40000u16.to_ne_bytes());
        b[26..28].copy_from_slice(&9000u16.to_ne_bytes());
        b[28] = kind;
        b[29] = 4;
        b[42..48].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 1]);
        b[58..64].copy_from_slice(&[0xff, 0xff, 10, 0, 0, 2]);
        let mut w = [0u64; 8];
        for (i, c) in b.chunks(8).enumerate() {
            w[i] = u64::from_ne_bytes(c.try_into().unwrap());
        }
        w
    }

    #[test]
    fn tx_keys_become_byte_ranges_per_write() {
        let (mut socks, mut events) = (HashMap::new(), Vec::new());
        // ISN + 1 = 0xffff_fff0 (wraps), then two writes of 10 and 20 bytes: keys = their last bytes.
        let seq = [(1u8, 0xffff_fff0u32), (2, 0xffff_fff9), (3, 0xffff_fff9), (2, 0x0000_000d), (5, 0xffff_fff9)];
        for (kind, s) in seq {
            let w = tx_event(kind, s, 1_000);
            // SAFETY: reinterpreting initialised u64s as bytes (u8 has no alignment or validity requirement).
            let bytes = unsafe { std::slice::from_raw_parts(w.as_ptr().cast::<u8>(), 64) };
            TxSide::record(&mut socks, &mut events, &TxRecord::from_bytes(bytes).unwrap(), 37_000_000_000);
        }
        let got: Vec<_> = events.iter().map(|e| (e.kind, e.seq_first, e.seq_last, e.stream)).collect();
        assert_eq!(
            got,
            vec![
                ("established", Some(0xffff_fff0), 0xffff_fff0, Some((0, 0))),
                ("sched", Some(0xffff_fff0), 0xffff_fff9, Some((0, 9))),
                ("snd_sw", Some(0xffff_fff0), 0xffff_fff9, Some((0, 9))),
                ("sched", Some(0xffff_fffa), 0x0000_000d, Some((10, 29))),
                ("ack", Some(0xffff_fff0), 0xffff_fff9, Some((0, 9))),
            ]
        );
        assert_eq!(events[0].time_ns, 1_000 - 37_000_000_000, "TAI less the offset");
        assert_eq!(events[0].local, "10.0.0.1:40000".parse().unwrap());
        assert_eq!(events[0].remote, "10.0.0.2:9000".parse().unwrap());
        assert!(socks[&77].open.len() == 1, "the acknowledged write is forgotten");
    }

    #[test]
    fn vlan_tags_in_data_are_counted() {
        let mut f = vec![0u8; 12];
        f.extend_from_slice(&[0x08, 0x00]);
        assert_eq!(tags_in_data(&f), 0);
        let mut q = vec![0u8; 12];
        q.extend_from_slice(&[0x88, 0xa8, 0, 1, 0x81, 0x00, 0, 2, 0x08, 0x00]);
        assert_eq!(tags_in_data(&q), 2);
        assert_eq!(tags_in_data(&q[..14]), 1, "a cut frame: only what is there");
    }

    #[test]
    fn stamp_sources_map_to_their_provenance() {
        assert_eq!(ts_source_of(StampSource::Hardware), TsSource::KernelHardware);
        assert_eq!(ts_source_of(StampSource::SkbRealtime), TsSource::KernelSoftware);
        assert_eq!(ts_source_of(StampSource::HookTai), TsSource::BpfHook);
        assert_eq!(ts_source_of(StampSource::Unknown(9)), TsSource::KernelNone);
    }
}
