//! A zstd stream corrupt in a later block: every byte decoded before the corrupt block reaches the
//! reader, then the decoder's error, whether the input is there at once or comes in pieces with
//! reads that are not ready between them (`capture --source stdin`'s polled standard input). What
//! was decodable is told by how the file was built (one block per record: the encoder flushed after
//! each) and by the peer tool: `zstd -dc` of the bytes before the corrupt block.

mod common;

use std::io;

use common::build::{pcap_header, pcap_record};
use common::corrupt::{CORRUPT, flushed, frames_of, reads_alike, record, run};

/// The capture compressed with the zstd encoder flushed after the file header and after every
/// record, so that each record is one block; and where each record's block begins in it.
fn compressed() -> (Vec<u8>, Vec<usize>) {
    let mut e = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    e.include_checksum(true).unwrap();
    let (e, starts) = flushed(e, |e| e.get_ref().len());
    (e.finish().unwrap(), starts)
}

/// `zstd -dc` on `bytes`: its standard output and standard error, and whether it succeeded.
fn zstd_dc(bytes: &[u8], name: &str) -> (Vec<u8>, String, bool) {
    run("zstd", &["-q", "-dc"], bytes, name)
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
        let peer = frames_of(&before, &format!("before-{header}.pcap"));
        assert!(peer == expected, "{what}: zstd -dc gave {} records of {CORRUPT}", peer.len());
        // zstd -dc of the whole corrupt file fails saying so, having written a part of that (what it
        // decoded in its last call, which failed, it never writes).
        let (dc, err, ok) = zstd_dc(&z, &format!("corrupt-{header}.zst"));
        assert!(!ok && err.contains("Data corruption detected"), "{what}: {err}");
        assert!(before.starts_with(&dc), "{what}");
        let error = format!(
            "corrupt: at decompressed byte {offset} (record {CORRUPT}, after {CORRUPT} packets): read failed: corrupt data in the zstd frame from compressed byte 0: Data corruption detected"
        );
        reads_alike(&z, &peer, &error, what);
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
    let got = common::corrupt::read_all(
        wirestamp_capture::CaptureReader::from_reader("d".into(), Box::new(io::Cursor::new(file))).unwrap(),
    );
    assert_eq!(got.frames, (0..3).map(record).collect::<Vec<_>>());
    let at = pcap.len();
    let start = first.len();
    assert_eq!(
        got.error.as_deref(),
        Some(
            format!(
                "d: at decompressed byte {at} (record 3, after 3 packets): read failed: the zstd frame from compressed byte {start} \
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
    let e = wirestamp_capture::CaptureReader::from_reader("w".into(), Box::new(io::Cursor::new(window))).err().unwrap();
    assert_eq!(
        e.to_string(),
        "w: at decompressed byte 0 (record 0, after 0 packets): read failed: the zstd frame from compressed byte 0 needs a window \
         larger than 128 MiB (zstd --long=31 writes one): decompress the file with `zstd -d --long=31` and read that \
         (Frame requires too much memory for decoding)"
    );
}
