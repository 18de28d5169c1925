//! Test-only helpers: a minimal classic-pcap reader (the real capture readers live elsewhere) and
//! payload extraction through `wirestamp_core::dissect`.
#![allow(dead_code, reason = "each integration test uses a subset")]

use std::path::Path;
use wirestamp_core::LinkType;
use wirestamp_core::dissect::{Transport, dissect};

/// One pcap record.
pub struct Record {
    /// Timestamp, ns since the epoch.
    pub ts_ns: i64,
    /// Captured bytes.
    pub data: Vec<u8>,
}

/// A classic pcap file read whole: µs (a1b2c3d4) or ns (a1b23c4d) magic, either byte order.
pub struct Pcap {
    /// Link type of every record.
    pub link: LinkType,
    /// Records in file order.
    pub records: Vec<Record>,
}

pub fn read_pcap(path: &Path) -> Pcap {
    let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(b.len() >= 24, "{}: shorter than a pcap header", path.display());
    let magic = [b[0], b[1], b[2], b[3]];
    let (le, nanos) = match magic {
        [0xd4, 0xc3, 0xb2, 0xa1] => (true, false),
        [0xa1, 0xb2, 0xc3, 0xd4] => (false, false),
        [0x4d, 0x3c, 0xb2, 0xa1] => (true, true),
        [0xa1, 0xb2, 0x3c, 0x4d] => (false, true),
        m => panic!("{}: not a classic pcap (magic {m:02x?})", path.display()),
    };
    let u32_at = |at: usize| {
        let a = [b[at], b[at + 1], b[at + 2], b[at + 3]];
        if le { u32::from_le_bytes(a) } else { u32::from_be_bytes(a) }
    };
    let link = LinkType::from_u16((u32_at(20) & 0xffff) as u16);
    let mut records = Vec::new();
    let mut at = 24;
    while at + 16 <= b.len() {
        let (sec, frac, caplen) = (u32_at(at), u32_at(at + 4), u32_at(at + 8) as usize);
        let start = at + 16;
        assert!(start + caplen <= b.len(), "{}: record at {at} cut short", path.display());
        let frac_ns = if nanos { i64::from(frac) } else { i64::from(frac) * 1000 };
        records
            .push(Record { ts_ns: i64::from(sec) * 1_000_000_000 + frac_ns, data: b[start..start + caplen].to_vec() });
        at = start + caplen;
    }
    assert_eq!(at, b.len(), "{}: trailing bytes after the last record", path.display());
    Pcap { link, records }
}

/// A transport payload with its ports.
pub struct Payload {
    /// 1-based frame number (as tshark numbers frames).
    pub frame: usize,
    pub ts_ns: i64,
    pub udp: bool,
    pub sport: u16,
    pub dport: u16,
    /// `Dissection::payload`: the captured payload without padding or trailers.
    pub bytes: Vec<u8>,
}

/// Every UDP or TCP payload of the file, in order (frames without one are skipped).
pub fn payloads(path: &Path) -> (usize, Vec<Payload>) {
    let pcap = read_pcap(path);
    let mut out = Vec::new();
    for (i, r) in pcap.records.iter().enumerate() {
        let d = dissect(&r.data, pcap.link);
        let (udp, sport, dport) = match d.transport {
            Transport::Udp { sport, dport } => (true, sport, dport),
            Transport::Tcp { sport, dport, .. } => (false, sport, dport),
            Transport::None => continue,
        };
        out.push(Payload { frame: i + 1, ts_ns: r.ts_ns, udp, sport, dport, bytes: d.payload(&r.data).to_vec() });
    }
    (pcap.records.len(), out)
}

/// Parses an oracle CSV (plain comma-separated, no quoted commas in the columns we read) into
/// header and rows.
pub fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines = text.lines();
    let header = lines.next().expect("empty csv").split(',').map(str::to_owned).collect();
    let rows = lines.filter(|l| !l.is_empty()).map(|l| l.split(',').map(str::to_owned).collect()).collect();
    (header, rows)
}

/// Column index by name.
pub fn col(header: &[String], name: &str) -> usize {
    header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name} in {header:?}"))
}

/// An Ethernet + IPv4 + TCP frame (PSH|ACK, checksums zero: tshark does not verify them by
/// default) carrying `payload`, from 10.0.0.1 (client) or 10.0.0.2 (server).
pub fn tcp_frame(from_client: bool, sport: u16, dport: u16, seq: u32, payload: &[u8]) -> Vec<u8> {
    tcp_frame_flags(from_client, sport, dport, seq, 1, 0x18, payload)
}

/// As [`tcp_frame`], with explicit acknowledgement number and TCP flags (0x02 SYN, 0x12 SYN|ACK,
/// 0x18 PSH|ACK).
pub fn tcp_frame_flags(
    from_client: bool,
    sport: u16,
    dport: u16,
    seq: u32,
    ack: u32,
    flags: u8,
    payload: &[u8],
) -> Vec<u8> {
    let (src, dst) = if from_client { ([10, 0, 0, 1], [10, 0, 0, 2]) } else { ([10, 0, 0, 2], [10, 0, 0, 1]) };
    let mut f = Vec::new();
    f.extend_from_slice(&[2, 0, 0, 0, 0, if from_client { 2 } else { 1 }]);
    f.extend_from_slice(&[2, 0, 0, 0, 0, if from_client { 1 } else { 2 }]);
    f.extend_from_slice(&0x0800u16.to_be_bytes());
    let total = (20 + 20 + payload.len()) as u16;
    f.extend_from_slice(&[0x45, 0]);
    f.extend_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&[0, 0, 0x40, 0, 64, 6, 0, 0]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&dst);
    f.extend_from_slice(&sport.to_be_bytes());
    f.extend_from_slice(&dport.to_be_bytes());
    f.extend_from_slice(&seq.to_be_bytes());
    f.extend_from_slice(&ack.to_be_bytes());
    f.extend_from_slice(&[0x50, flags, 0xff, 0xff, 0, 0, 0, 0]);
    f.extend_from_slice(payload);
    f
}

/// Writes a little-endian µs classic pcap (Ethernet) with one record per frame, 1 ms apart.
pub fn write_pcap(path: &Path, frames: &[Vec<u8>]) {
    let mut b = Vec::new();
    b.extend_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    b.extend_from_slice(&2u16.to_le_bytes());
    b.extend_from_slice(&4u16.to_le_bytes());
    for v in [0u32, 0, 65_535, 1] {
        b.extend_from_slice(&v.to_le_bytes());
    }
    for (i, f) in frames.iter().enumerate() {
        for v in [1_700_000_000u32, (i as u32) * 1000, f.len() as u32, f.len() as u32] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(f);
    }
    std::fs::write(path, b).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

/// A fresh path in the temp dir for a generated capture (the process id keeps runs apart).
pub fn temp_pcap(name: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!("wirestamp-{}-{name}.pcap", std::process::id()))
}

/// Big-endian field builder for hand-built messages (fields in spec order).
#[derive(Default)]
pub struct B(pub Vec<u8>);

impl B {
    pub fn c(mut self, c: u8) -> B {
        self.0.push(c);
        self
    }
    pub fn u32(mut self, v: u32) -> B {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub fn u64(mut self, v: u64) -> B {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// ASCII text right-padded with spaces to `w`.
    pub fn s(mut self, t: &str, w: usize) -> B {
        self.0.extend_from_slice(t.as_bytes());
        self.0.resize(self.0.len() + w - t.len(), b' ');
        self
    }
}
