//! A gzip stream corrupt in a later deflate block: every byte inflated before the corrupt data
//! reaches the reader, then the error, whether the input is there at once or comes in pieces with
//! reads that are not ready between them (`capture --source stdin`'s polled standard input). flate2's
//! `GzDecoder` returned the error of the read that met the corrupt data instead of the bytes that read
//! had inflated: the frames before the error depended on how the input came.
//!
//! What was decodable is told by the peer, `gzip -dc`: of the bytes before the corrupt block (a
//! capture whose encoder flushed after every record, so that each record's blocks begin on a byte),
//! and of a capture compressed by `gzip` with a byte of a later block changed (its CRC-32 then fails).

mod common;

use std::io::{self, Read, Write};
use std::process::Command;

use common::build::{pcap_header, pcap_record};
use common::temp_path;
use wirestamp_capture::CaptureReader;

/// Records in the capture, and the one whose block is corrupted.
const RECORDS: usize = 600;
const CORRUPT: usize = 450;

/// Record `k`'s data: 60 to 459 bytes from an 8-letter alphabet (compressible: deflate codes them
/// with Huffman tables of its own, a dynamic block), different for every record.
fn record(k: usize) -> Vec<u8> {
    let mut x = (k as u32).wrapping_mul(2_654_435_761) | 1;
    (0..60 + (k * 37) % 400)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            b"abcdefgh"[(x % 8) as usize]
        })
        .collect()
}

/// The capture: a µs pcap of the records.
fn pcap() -> Vec<u8> {
    let mut f = pcap_header(0xa1b2_c3d4, 1);
    for k in 0..RECORDS {
        let data = record(k);
        f.extend(pcap_record(1_700_000_000 + k as u32, k as u32, &data, data.len() as u32));
    }
    f
}

/// The capture compressed with the encoder flushed (a sync flush: an empty stored block that ends on
/// a byte) after the file header and after every record, so that each record's blocks begin on a
/// byte; and where each record's first block begins in it.
fn flushed() -> (Vec<u8>, Vec<usize>) {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(&pcap_header(0xa1b2_c3d4, 1)).unwrap();
    e.flush().unwrap();
    let mut starts = Vec::new();
    for k in 0..RECORDS {
        starts.push(e.get_ref().len());
        let data = record(k);
        e.write_all(&pcap_record(1_700_000_000 + k as u32, k as u32, &data, data.len() as u32)).unwrap();
        e.flush().unwrap();
    }
    (e.finish().unwrap(), starts)
}

/// What a reader gave: its frames' data and its error's message.
#[derive(Debug, PartialEq)]
struct Outcome {
    frames: Vec<Vec<u8>>,
    error: Option<String>,
}

fn read_all(mut r: CaptureReader) -> Outcome {
    let mut frames = Vec::new();
    let error = loop {
        match r.next_frame() {
            Ok(Some(f)) => frames.push(f.data.to_vec()),
            Ok(None) => break None,
            Err(e) if e.would_block() => {}
            Err(e) => break Some(e.to_string()),
        }
    };
    Outcome { frames, error }
}

/// `data` at most `piece` bytes a read, every read after the first `opened` bytes preceded by one
/// that is not ready.
struct Pieces {
    data: Vec<u8>,
    at: usize,
    piece: usize,
    opened: usize,
    ready: bool,
}

impl Read for Pieces {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.at >= self.opened && !std::mem::replace(&mut self.ready, false) {
            self.ready = true;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let n = out.len().min(self.piece).min(self.data.len() - self.at);
        out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// `program args FILE` on `bytes` written to a file: its standard output and error, and whether it
/// succeeded.
fn run(program: &str, args: &[&str], bytes: &[u8], name: &str) -> (Vec<u8>, String, bool) {
    let p = temp_path(name);
    std::fs::write(&p, bytes).unwrap();
    let out = Command::new(program)
        .args(args)
        .arg(&p)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} (scripts/setup.sh installs it): {e}"));
    std::fs::remove_file(&p).unwrap();
    (out.stdout, String::from_utf8_lossy(&out.stderr).into_owned(), out.status.success())
}

/// The frames the reader gives of `plain` (a peer's output), as a file.
fn frames_of(plain: &[u8], name: &str) -> Vec<Vec<u8>> {
    let p = temp_path(name);
    std::fs::write(&p, plain).unwrap();
    let got = read_all(CaptureReader::open(&p).unwrap());
    std::fs::remove_file(&p).unwrap();
    got.frames
}

/// `z` read whole from a file and in 1..=64-byte pieces with reads not ready between them: each gives
/// `frames`, then the error `error`.
fn reads_alike(z: &[u8], frames: &[Vec<u8>], error: &str, what: &str) {
    let file = temp_path(&format!("corrupt-{what}.pcap.gz"));
    std::fs::write(&file, z).unwrap();
    let got =
        read_all(CaptureReader::from_reader("corrupt".into(), Box::new(std::fs::File::open(&file).unwrap())).unwrap());
    std::fs::remove_file(&file).unwrap();
    assert!(got.frames == frames, "{what}, whole: {} frames of {}", got.frames.len(), frames.len());
    assert_eq!(got.error.as_deref(), Some(error), "{what}, whole");
    for piece in 1..=64 {
        let src = Pieces { data: z.to_vec(), at: 0, piece, opened: 64, ready: false };
        let got = read_all(CaptureReader::from_reader("corrupt".into(), Box::new(src)).unwrap());
        assert!(got.frames == frames, "{what}, {piece}-byte pieces: {} frames of {}", got.frames.len(), frames.len());
        assert_eq!(got.error.as_deref(), Some(error), "{what}, {piece}-byte pieces");
    }
}

/// Record 450's first block (a dynamic one, RFC 1951 §3.2.7) corrupt in its type (made 3, reserved)
/// or in its code length code lengths (all made 7: an incomplete code, which inflaters refuse): the
/// 450 records before it (the generator's), which are what `gzip -dc` decodes of the bytes before the
/// block, then the error.
#[test]
fn a_corrupt_block_loses_nothing_inflated_before_it() {
    let expected: Vec<Vec<u8>> = (0..CORRUPT).map(record).collect();
    // Where the corrupt record begins in the capture, after 450 whole records (header 24, record 16 + data).
    let offset = 24 + expected.iter().map(|d| 16 + d.len()).sum::<usize>();
    let error = format!(
        "corrupt: at byte {offset} (record {CORRUPT}, after {CORRUPT} packets): read failed: the gzip member from compressed byte 0: corrupt deflate data"
    );
    for header in [true, false] {
        let (mut z, starts) = flushed();
        let at = starts[CORRUPT];
        // The block is what it was built as: dynamic (BTYPE 2), not the last.
        assert_eq!((z[at] >> 1 & 3, z[at] & 1), (2, 0));
        let what = if header { "block type" } else { "code lengths" };
        match header {
            true => z[at] |= 0b110,
            // HCLEN's top 3 bits and every 3-bit code length code length after them.
            false => z[at + 1..at + 9].fill(0xff),
        }
        // The peer: what gzip decodes of the bytes before the corrupt block.
        let (before, _, whole) = run("gzip", &["-dc"], &z[..at], &format!("before-{header}.gz"));
        assert!(!whole, "{what}: the bytes before the corrupt block are not a whole member");
        assert!(frames_of(&before, &format!("before-{header}.pcap")) == expected, "{what}: gzip -dc");
        // gzip -dc of the whole corrupt file fails saying so.
        let (dc, err, ok) = run("gzip", &["-dc"], &z, &format!("corrupt-{header}.gz"));
        assert!(!ok && err.contains("invalid compressed data"), "{what}: {err}");
        assert!(before.starts_with(&dc), "{what}");
        reads_alike(&z, &expected, &error, what);
    }
}

/// The capture compressed by `gzip` (blocks of its choosing, not on bytes), a byte three quarters
/// into the compressed data changed: inflated, it gives other bytes, not an invalid code (gzip's codes
/// are complete), and the member's CRC-32 does not match. Every byte inflated, which `gzip -dc` writes
/// before it says so, then the error (flate2's reader gave it in place of the read's bytes, whose
/// number depended on how the input came).
#[test]
fn a_member_whose_crc_does_not_match_gives_its_bytes_then_the_error() {
    let plain = pcap();
    let (z, _, ok) = run("gzip", &["-c", "-9"], &plain, "whole.pcap");
    assert!(ok);
    let mut z = z;
    let at = z.len() * 3 / 4;
    z[at] ^= 0x5a;
    let (inflated, err, ok) = run("gzip", &["-dc"], &z, "crc.gz");
    assert!(!ok && err.contains("crc error"), "gzip: {err}");
    // The change is far into the data: the records before it are the generator's, not the rest.
    let frames = frames_of(&inflated, "crc.pcap");
    let whole = frames.iter().zip(0..).take_while(|&(f, k)| *f == record(k)).count();
    assert!(whole > CORRUPT / 2 && whole < RECORDS, "{whole}");
    // The reader ends at the member's end, after its last record.
    let (n, offset) = (frames.len(), 24 + frames.iter().map(|d| 16 + d.len()).sum::<usize>());
    assert_eq!(offset, inflated.len());
    let error = format!(
        "corrupt: at byte {offset} (record {n}, after {n} packets): read failed: the gzip member from compressed byte \
         0: corrupt: the CRC-32 in its trailer does not match its data"
    );
    reads_alike(&z, &frames, &error, "crc");
}
