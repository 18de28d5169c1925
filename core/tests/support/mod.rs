//! Test-only helpers shared by core's integration tests: a classic pcap reader (µs and ns magic, both
//! byte orders; not product code: core cannot dev-depend on the capture crate, which depends on it),
//! payload extraction through `dissect`, tshark output parsing, and builders for hand-made captures.
//! Panics on malformed files, which is what a test wants.
#![allow(dead_code, reason = "each integration test uses a subset")]

pub mod counting_alloc;

use std::path::Path;
use wirestamp_core::dissect::{Transport, dissect};
use wirestamp_core::{Frame, LinkType};

/// One record, owning its bytes.
pub struct Record {
    pub ts_ns: i64,
    pub data: Vec<u8>,
    pub wire_len: u32,
}

/// A whole pcap file in memory.
pub struct Pcap {
    pub link: LinkType,
    pub records: Vec<Record>,
}

impl Pcap {
    pub fn read(path: &Path) -> Pcap {
        let b = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(b.len() >= 24, "{}: no pcap header", path.display());
        let magic = [b[0], b[1], b[2], b[3]];
        let (le, nanos) = match magic {
            [0xd4, 0xc3, 0xb2, 0xa1] => (true, false),
            [0x4d, 0x3c, 0xb2, 0xa1] => (true, true),
            [0xa1, 0xb2, 0xc3, 0xd4] => (false, false),
            [0xa1, 0xb2, 0x3c, 0x4d] => (false, true),
            _ => panic!("{}: not a classic pcap (magic {magic:02x?})", path.display()),
        };
        let u32_at = |at: usize| {
            let w = [b[at], b[at + 1], b[at + 2], b[at + 3]];
            if le { u32::from_le_bytes(w) } else { u32::from_be_bytes(w) }
        };
        let link = LinkType::from_u16(u32_at(20) as u16);
        let mut records = Vec::new();
        let mut off = 24;
        while off + 16 <= b.len() {
            let (sec, frac, caplen, wire_len) = (u32_at(off), u32_at(off + 4), u32_at(off + 8), u32_at(off + 12));
            off += 16;
            let end = off + caplen as usize;
            assert!(end <= b.len(), "{}: record at {} runs past the end", path.display(), off - 16);
            let frac_ns = if nanos { frac as i64 } else { frac as i64 * 1000 };
            records.push(Record { ts_ns: sec as i64 * 1_000_000_000 + frac_ns, data: b[off..end].to_vec(), wire_len });
            off = end;
        }
        Pcap { link, records }
    }

    /// The record as a [`Frame`] (FCS presence unknown, as in classic pcap).
    pub fn frame(&self, i: usize) -> Frame<'_> {
        let r = &self.records[i];
        Frame { wire_len: r.wire_len, ..Frame::record(&r.data, r.ts_ns, self.link) }
    }
}

/// Every frame's bytes as tshark prints them with `-x` (hex dump blocks separated by blank lines).
/// Independent of [`Pcap::read`]: the oracle for the bytes the tests compute expected values from.
pub fn tshark_bytes(path: &Path) -> Vec<Vec<u8>> {
    let out = std::process::Command::new("tshark")
        .arg("-n")
        .arg("-r")
        .arg(path)
        .arg("-x")
        .output()
        .unwrap_or_else(|e| panic!("cannot run tshark: {e}"));
    assert!(out.status.success(), "tshark -x failed on {}", path.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let mut frames = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            if !cur.is_empty() {
                frames.push(std::mem::take(&mut cur));
            }
            continue;
        }
        // "0010  4b 46 01 ...   KF..": offset, two spaces, up to 16 "xx" separated by one space, ASCII.
        let hex = &line[6.min(line.len())..53.min(line.len())];
        for tok in hex.split_whitespace() {
            cur.push(u8::from_str_radix(tok, 16).unwrap_or_else(|_| panic!("bad hex dump line {line:?}")));
        }
    }
    if !cur.is_empty() {
        frames.push(cur);
    }
    frames
}

/// Parses tshark's absolute time `"Apr 29, 2024 16:24:07.483428074 UTC"` into ns since the epoch
/// (days-from-civil, integers only).
pub fn parse_tshark_abs_time(s: &str) -> i64 {
    let parts: Vec<&str> = s.split_whitespace().collect();
    assert_eq!(parts.len(), 5, "unexpected time {s:?}");
    assert_eq!(parts[4], "UTC", "tshark must run in UTC: {s:?}");
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .iter()
        .position(|m| *m == parts[0])
        .unwrap_or_else(|| panic!("month in {s:?}")) as i64
        + 1;
    let day: i64 = parts[1].trim_end_matches(',').parse().unwrap();
    let year: i64 = parts[2].parse().unwrap();
    let (hms, frac) = parts[3].split_once('.').unwrap_or((parts[3], "0"));
    let hms: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    let frac_ns: i64 = format!("{frac:0<9}").parse().unwrap();
    // Howard Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    ((days * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]) * 1_000_000_000) + frac_ns
}

/// Decodes a hex string (tshark bytes fields, with or without `0x` and `:` separators).
pub fn unhex(s: &str) -> Vec<u8> {
    let s: String = s.trim_start_matches("0x").chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap()).collect()
}

/// Reads a whole classic pcap (see [`Pcap::read`]).
pub fn read_pcap(path: &Path) -> Pcap {
    Pcap::read(path)
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
