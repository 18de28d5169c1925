//! What the corrupt-stream tests (`corrupt_zstd.rs`, `corrupt_gzip.rs`) share: a capture of records
//! compressed one record a block, the peer tool run on bytes, and the check that a stream read whole
//! and in pieces, with reads not ready between them, gives the same frames and error.

use std::io::{self, Read, Write};
use std::process::Command;

use super::build::{pcap_header, pcap_record};
use super::temp_path;
use wirestamp_capture::CaptureReader;

/// Records in the capture, and the one whose block is corrupted.
pub const RECORDS: usize = 600;
pub const CORRUPT: usize = 450;

/// Record `k`'s data: 60 to 459 bytes from an 8-letter alphabet (compressible: each is coded, not
/// stored), different for every record.
pub fn record(k: usize) -> Vec<u8> {
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

/// Record `k` as a µs pcap record.
fn pcap_rec(k: usize) -> Vec<u8> {
    let data = record(k);
    pcap_record(1_700_000_000 + k as u32, k as u32, &data, data.len() as u32)
}

/// The capture: a µs pcap of the [`RECORDS`] records.
pub fn pcap() -> Vec<u8> {
    let mut f = pcap_header(0xa1b2_c3d4, 1);
    (0..RECORDS).for_each(|k| f.extend(pcap_rec(k)));
    f
}

/// The capture written to encoder `e`, flushed after the file header and after every record so that
/// each record's blocks begin anew; `len` is what `e` has written so far. Returns the encoder (to
/// finish) and where each record's first block begins.
pub fn flushed<E: Write>(mut e: E, len: impl Fn(&E) -> usize) -> (E, Vec<usize>) {
    e.write_all(&pcap_header(0xa1b2_c3d4, 1)).unwrap();
    e.flush().unwrap();
    let mut starts = Vec::new();
    for k in 0..RECORDS {
        starts.push(len(&e));
        e.write_all(&pcap_rec(k)).unwrap();
        e.flush().unwrap();
    }
    (e, starts)
}

/// What a reader gave: its frames' data and its error's message.
#[derive(Debug, PartialEq)]
pub struct Outcome {
    pub frames: Vec<Vec<u8>>,
    pub error: Option<String>,
}

pub fn read_all(mut r: CaptureReader) -> Outcome {
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
pub fn run(program: &str, args: &[&str], bytes: &[u8], name: &str) -> (Vec<u8>, String, bool) {
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
pub fn frames_of(plain: &[u8], name: &str) -> Vec<Vec<u8>> {
    let p = temp_path(name);
    std::fs::write(&p, plain).unwrap();
    let got = read_all(CaptureReader::open(&p).unwrap());
    std::fs::remove_file(&p).unwrap();
    got.frames
}

/// `z` read whole from a file and in 1..=64-byte pieces with reads not ready between them: each gives
/// `frames`, then the error `error`.
pub fn reads_alike(z: &[u8], frames: &[Vec<u8>], error: &str, what: &str) {
    let file = temp_path(&format!("corrupt-{}", what.replace(' ', "-")));
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
