//! Helpers shared by the capture reader's integration tests: reading a whole file into rows, and
//! the same rows from tshark 4.0.17 as an independent oracle.

#![allow(dead_code)]

use std::path::{Path, PathBuf};

use wirestamp_capture::{CaptureReader, Container, ContainerKind, Interface, ReadError};
use wirestamp_testdata::tshark_fields;

/// One frame as both readers can describe it: timestamp (None without one), interface number as
/// tshark numbers it, wire length, captured length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub ts_ns: Option<i64>,
    pub iface: u32,
    pub wire_len: u32,
    pub cap_len: u32,
}

/// Everything read from one file.
pub struct Read {
    pub rows: Vec<Row>,
    pub data: Vec<Vec<u8>>,
    pub interfaces: Vec<Interface>,
    pub container: Container,
    pub error: Option<ReadError>,
    pub reader: CaptureReader,
}

/// The interface number tshark 4.0.17 prints as `frame.interface_id`: ERF interfaces in order of
/// first appearance (= our row), pcapng the IDB's index inside its own section (tshark 4.0 does
/// not renumber interfaces of later sections), pcap 0.
pub fn tshark_iface(ifaces: &[Interface], row: u32) -> u32 {
    let i = &ifaces[row as usize];
    match i.container {
        ContainerKind::Pcapng => {
            ifaces.iter().filter(|o| o.section == i.section && o.local_id < i.local_id).count() as u32
        }
        ContainerKind::Erf => row,
        ContainerKind::Pcap => 0,
    }
}

/// Reads a whole file; an error is kept (not a panic) so tests can look at it.
pub fn read_all(path: &Path) -> Read {
    let mut reader = CaptureReader::open(path).unwrap_or_else(|e| panic!("cannot open: {e}"));
    let container = reader.format().container;
    let mut raw = Vec::new();
    let mut data = Vec::new();
    let error = loop {
        match reader.next_frame() {
            Ok(Some(f)) => {
                raw.push((f.has_ts().then_some(f.ts_ns), f.interface, f.wire_len, f.caplen()));
                data.push(f.data.to_vec());
            }
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    let interfaces = reader.interfaces().to_vec();
    let rows = raw
        .into_iter()
        .map(|(ts_ns, row, wire_len, cap_len)| Row { ts_ns, iface: tshark_iface(&interfaces, row), wire_len, cap_len })
        .collect();
    Read { rows, data, interfaces, container, error, reader }
}

/// Parses tshark 4.0's `frame.time_epoch`. Negative times print as `-S.F` meaning -S + 0.F (the
/// nstime seconds, then the positive nanoseconds), e.g. -6.5 s prints `-7.500000000`.
pub fn tshark_epoch(s: &str) -> i64 {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let (sec, frac) = body.split_once('.').unwrap_or((body, ""));
    assert!(frac.len() <= 9, "more than 9 fractional digits in {s}");
    let sec: i64 = sec.parse().unwrap_or_else(|_| panic!("bad epoch {s}"));
    let frac: i64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().expect("bad fraction") };
    (if neg { -sec } else { sec }) * 1_000_000_000 + frac
}

/// tshark's rows for a file. Records that are not packets are dropped: pcapng custom blocks
/// (CB/DCB), which tshark 4.0 lists as records without an interface, and ERF META (27) and PAD
/// (48) records, which it lists as frames.
pub fn tshark_rows(path: &Path) -> Vec<Row> {
    let is_pcapng = std::fs::read(path).map(|b| b.starts_with(&[0x0a, 0x0d, 0x0d, 0x0a])).unwrap_or(false);
    let fields = ["frame.time_epoch", "frame.interface_id", "frame.len", "frame.cap_len", "erf.types.type"];
    tshark_fields(path, &[], &fields)
        .into_iter()
        .filter(|r| !(is_pcapng && r[1].is_empty()))
        .filter(|r| r[4] != "27" && r[4] != "48")
        .map(|r| Row {
            ts_ns: (!r[0].is_empty()).then(|| tshark_epoch(&r[0])),
            iface: if r[1].is_empty() { 0 } else { r[1].parse().unwrap() },
            wire_len: r[2].parse().unwrap(),
            cap_len: r[3].parse().unwrap(),
        })
        .collect()
}

/// Reads `path` and asserts every frame equals tshark's (timestamp to the ns, interface, wire
/// and captured lengths); returns our read for further checks.
pub fn assert_same_as_tshark(path: &Path) -> Read {
    let ours = read_all(path);
    assert!(ours.error.is_none(), "{}: {:?}", path.display(), ours.error);
    let theirs = tshark_rows(path);
    assert_eq!(ours.rows.len(), theirs.len(), "{}: frame count differs from tshark", path.display());
    for (i, (a, b)) in ours.rows.iter().zip(&theirs).enumerate() {
        assert_eq!(a, b, "{}: frame {} differs from tshark", path.display(), i + 1);
    }
    assert!(!theirs.is_empty() || ours.rows.is_empty());
    ours
}

/// Temporary file path for generated captures (unique per test name and process).
pub fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wirestamp-capture-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// `bytes` written to [`temp_path`]`(name)`, that path.
pub fn written(name: &str, bytes: &[u8]) -> PathBuf {
    let p = temp_path(name);
    std::fs::write(&p, bytes).unwrap();
    p
}
pub mod build;
pub mod corrupt;
