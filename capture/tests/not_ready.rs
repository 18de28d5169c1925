//! A stream that is not ready (its read fails with `WouldBlock`, as `capture --source stdin`'s polled
//! standard input does while idle) leaves the reader where it was: read on, it gives every frame, as
//! the records are in the file (walked from their length fields here, or as written), for a pcap and
//! a pcapng, plain, in two gzip members with bytes after them, and in two zstd frames.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use wirestamp_capture::write::{IfaceSpec, PcapngWriter};
use wirestamp_capture::{CaptureReader, Compression, WarningKind};
use wirestamp_core::{Direction, LinkType};
use wirestamp_testdata::data_file;

/// `data` 7 bytes a read, every read after the stream is armed preceded by one that is not ready.
struct NotReady {
    data: Vec<u8>,
    at: usize,
    armed: Arc<AtomicBool>,
    ready: bool,
}

impl Read for NotReady {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.armed.load(Ordering::Relaxed) && !std::mem::replace(&mut self.ready, false) {
            self.ready = true;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = out.len().min(7).min(self.data.len() - self.at);
        out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The frames read from `bytes` through [`NotReady`], the times the reader said it was not ready,
/// and its warnings.
fn read(bytes: Vec<u8>) -> (Vec<Vec<u8>>, u64, Vec<WarningKind>) {
    let armed = Arc::new(AtomicBool::new(false));
    let src = NotReady { data: bytes, at: 0, armed: armed.clone(), ready: false };
    let mut r = CaptureReader::from_reader("not-ready".into(), Box::new(src)).unwrap();
    armed.store(true, Ordering::Relaxed);
    let (mut frames, mut not_ready) = (Vec::new(), 0);
    loop {
        match r.next_frame() {
            Ok(Some(f)) => frames.push(f.data.to_vec()),
            Ok(None) => break,
            Err(e) if e.would_block() => not_ready += 1,
            Err(e) => panic!("{e}"),
        }
    }
    (frames, not_ready, r.warnings().iter().map(|w| w.kind.clone()).collect())
}

/// A classic pcap's record data, walked from its length fields (24-byte file header, 16-byte
/// little-endian record headers), and where each record ends.
fn pcap_records(pcap: &[u8]) -> (Vec<Vec<u8>>, Vec<usize>) {
    let (mut at, mut data, mut ends) = (24, Vec::new(), Vec::new());
    while at < pcap.len() {
        let caplen = u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        data.push(pcap[at + 16..at + 16 + caplen].to_vec());
        at += 16 + caplen;
        ends.push(at);
    }
    (data, ends)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn a_stream_not_ready_is_read_on_where_it_was() {
    let pcap = std::fs::read(data_file("pcap_market/elk_nasdaq.pcap")).unwrap();
    let (records, ends) = pcap_records(&pcap);
    assert_eq!(
        (records.len(), ends.last(), pcap[..4].to_vec()),
        (2_047, Some(&pcap.len()), vec![0xd4, 0xc3, 0xb2, 0xa1])
    );
    // Two members (or frames) split at the 1,000th record's end; 5 zero bytes after the gzip stream.
    let (a, b) = pcap.split_at(ends[999]);
    let gz = [gzip(a), gzip(b), vec![0; 5]].concat();
    let zst = [zstd::encode_all(a, 3).unwrap(), zstd::encode_all(b, 3).unwrap()].concat();
    for (name, bytes, warnings) in [
        ("pcap", pcap.clone(), vec![]),
        ("gzip", gz, vec![WarningKind::TrailingData { bytes: 5, compression: Compression::Gzip }]),
        ("zstd", zst, vec![]),
    ] {
        let (frames, not_ready, got_warnings) = read(bytes);
        assert!(frames == records, "{name}: {} frames read of {}", frames.len(), records.len());
        assert!(not_ready > 0, "{name}");
        assert_eq!(got_warnings, warnings, "{name}");
    }
    // A pcapng: 500 frames of 60 to 559 bytes, each byte its frame's number.
    let mut w = PcapngWriter::new(Vec::new(), None).unwrap();
    let spec = IfaceSpec { link: LinkType::Ethernet, name: "e".into(), description: None, snaplen: 0 };
    let id = w.add_interface(&spec).unwrap();
    let written: Vec<Vec<u8>> = (0..500).map(|k| vec![k as u8; 60 + k]).collect();
    for (k, data) in written.iter().enumerate() {
        w.write(id, 1_796_049_000_000_000_000 + k as i64, data, data.len() as u32, Direction::Inbound).unwrap();
    }
    let (frames, not_ready, warnings) = read(w.finish().unwrap());
    assert!(frames == written, "pcapng: {} frames read of 500", frames.len());
    assert!(not_ready > 0);
    assert_eq!(warnings, []);
}
