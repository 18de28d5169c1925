//! A zstd stream corrupt in a later block: every byte decoded before the corrupt block reaches the
//! reader, then the decoder's error, whether the input is there at once or comes in pieces with
//! reads that are not ready between them (`capture --source stdin`'s polled standard input). What
//! was decodable is told by how the file was built (one block per record: the encoder flushed after
//! each) and by the peer tool: `zstd -dc` of the bytes before the corrupt block.

mod common;

use std::io::{self, Read, Write};
use std::process::Command;

use common::build::{pcap_header, pcap_record};
use common::temp_path;
use wirestamp_capture::CaptureReader;

/// Records in the capture, and the one whose block is corrupted.
const RECORDS: usize = 600;
const CORRUPT: usize = 450;

/// Record `k`'s data: 60 to 459 bytes from an 8-letter alphabet (compressible: zstd stores each as a
/// compressed block, not raw), different for every record.
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

/// The capture (a µs pcap) compressed with the zstd encoder flushed after the file header and after
/// every record, so that each record is one block; and where each record's block begins in it.
fn compressed() -> (Vec<u8>, Vec<usize>) {
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.include_checksum(true).unwrap();
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

/// `zstd -dc` on `bytes`: its standard output and standard error, and whether it succeeded.
fn zstd_dc(bytes: &[u8], name: &str) -> (Vec<u8>, String, bool) {
    let p = temp_path(name);
    std::fs::write(&p, bytes).unwrap();
    let out = Command::new("zstd")
        .args(["-q", "-dc"])
        .arg(&p)
        .output()
        .unwrap_or_else(|e| panic!("cannot run zstd (scripts/setup.sh installs it): {e}"));
    std::fs::remove_file(&p).unwrap();
    (out.stdout, String::from_utf8_lossy(&out.stderr).into_owned(), out.status.success())
}

/// The record's block with one byte changed: `header` its block header's type made 3 (reserved, RFC
/// 8878 §3.1.1.2.2), else the first byte of its content (the literals section header) made 0xff.
fn corrupt(header: bool) -> (Vec<u8>, usize) {
    let (mut z, starts) = compressed();
    let at = starts[CORRUPT];
    // The block is what it was built as: compressed (type 2), not the last.
    assert_eq!((z[at] >> 1 & 3, z[at] & 1), (2, 0));
    match header {
        true => z[at] |= 0b110,
        false => z[at + 3] = 0xff,
    }
    (z, at)
}

#[test]
fn a_corrupt_block_loses_nothing_decoded_before_it() {
    let expected: Vec<Vec<u8>> = (0..CORRUPT).map(record).collect();
    // Where the corrupt record begins in the capture, after 450 whole records (header 24, record 16 + data).
    let offset = 24 + expected.iter().map(|d| 16 + d.len()).sum::<usize>();
    for header in [true, false] {
        let (z, at) = corrupt(header);
        let what = if header { "block header" } else { "block content" };
        // The peer: what zstd decodes of the bytes before the corrupt block, read from a file.
        let (before, _, whole) = zstd_dc(&z[..at], &format!("before-{header}.zst"));
        assert!(!whole, "{what}: the bytes before the corrupt block are not a whole frame");
        let plain = temp_path(&format!("before-{header}.pcap"));
        std::fs::write(&plain, &before).unwrap();
        let peer = read_all(CaptureReader::open(&plain).unwrap());
        std::fs::remove_file(&plain).unwrap();
        assert!(peer.frames == expected, "{what}: zstd -dc gave {} records of {CORRUPT}", peer.frames.len());
        // zstd -dc of the whole corrupt file fails saying so, having written a part of that (what it
        // decoded in its last call, which failed, it never writes).
        let (dc, err, ok) = zstd_dc(&z, &format!("corrupt-{header}.zst"));
        assert!(!ok && err.contains("Data corruption detected"), "{what}: {err}");
        assert!(before.starts_with(&dc), "{what}");
        let error = format!(
            "corrupt: at byte {offset} (record {CORRUPT}, after {CORRUPT} packets): read failed: corrupt data in the zstd frame from compressed byte 0: Data corruption detected"
        );
        let file = temp_path(&format!("corrupt-{header}.pcap.zst"));
        std::fs::write(&file, &z).unwrap();
        let got = read_all(
            CaptureReader::from_reader("corrupt".into(), Box::new(std::fs::File::open(&file).unwrap())).unwrap(),
        );
        std::fs::remove_file(&file).unwrap();
        assert!(got.frames == peer.frames, "{what}, whole: {} frames of {CORRUPT}", got.frames.len());
        assert_eq!(got.error.as_deref(), Some(error.as_str()), "{what}, whole");
        for piece in 1..=64 {
            let src = Pieces { data: z.clone(), at: 0, piece, opened: 64, ready: false };
            let got = read_all(CaptureReader::from_reader("corrupt".into(), Box::new(src)).unwrap());
            assert!(got.frames == peer.frames, "{what}, {piece}-byte pieces: {} frames of {CORRUPT}", got.frames.len());
            assert_eq!(got.error.as_deref(), Some(error.as_str()), "{what}, {piece}-byte pieces");
        }
    }
}

/// A frame that is not corrupt but needs what the reader is not given says so and how to read it: one
/// naming a dictionary (RFC 8878 §3.1.1.1.3: the descriptor's Dictionary_ID_Flag and a 1-byte ID,
/// made by hand), after a whole frame of 3 records, and one whose window is 256 MiB (Window_Descriptor
/// exponent 18 + 10), more than the 128 MiB `zstd -d` takes without `--long=31`. `zstd -dc` refuses both.
#[test]
fn a_frame_needing_a_dictionary_or_a_large_window_says_how_to_read_it() {
    let mut pcap = pcap_header(0xa1b2_c3d4, 1);
    for k in 0..3 {
        let data = record(k);
        pcap.extend(pcap_record(1_700_000_000 + k as u32, 0, &data, data.len() as u32));
    }
    let first = zstd::encode_all(&pcap[..], 3).unwrap();
    let mut dict = zstd::encode_all(&b"more"[..], 3).unwrap();
    // No ID yet; the ID goes after the Window_Descriptor, absent from a single-segment frame.
    assert_eq!(dict[4] & 3, 0);
    let id_at = 5 + usize::from(dict[4] & 0x20 == 0);
    dict[4] |= 1;
    dict.insert(id_at, 7);
    let file = [first.clone(), dict].concat();
    let (_, err, ok) = zstd_dc(&file, "dict.zst");
    assert!(!ok && err.contains("Dictionary mismatch"), "{err}");
    let got = read_all(CaptureReader::from_reader("d".into(), Box::new(io::Cursor::new(file))).unwrap());
    assert_eq!(got.frames, (0..3).map(record).collect::<Vec<_>>());
    let at = pcap.len();
    let start = first.len();
    assert_eq!(
        got.error.as_deref(),
        Some(
            format!(
                "d: at byte {at} (record 3, after 3 packets): read failed: the zstd frame from compressed byte {start} \
                 was compressed with a dictionary (zstd -D), which cannot be given here: decompress the file with \
                 `zstd -d -D DICTIONARY` and read that (Dictionary mismatch)"
            )
            .as_str()
        )
    );
    // Magic, descriptor 0 (a Window_Descriptor, no size, no checksum), exponent 18, then a last raw
    // block of the pcap header.
    let mut window = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 18 << 3];
    window.extend([(24 << 3 | 1) as u8, 0, 0]);
    window.extend(&pcap[..24]);
    let (_, err, ok) = zstd_dc(&window, "window.zst");
    assert!(!ok && err.contains("Window size larger than maximum"), "{err}");
    let e = CaptureReader::from_reader("w".into(), Box::new(io::Cursor::new(window))).err().unwrap();
    assert_eq!(
        e.to_string(),
        "w: at byte 0 (record 0, after 0 packets): read failed: the zstd frame from compressed byte 0 needs a window \
         larger than 128 MiB (zstd --long=31 writes one): decompress the file with `zstd -d --long=31` and read that \
         (Frame requires too much memory for decoding)"
    );
}
