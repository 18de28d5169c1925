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

use common::corrupt::{CORRUPT, RECORDS, flushed as flushed_into, frames_of, pcap, reads_alike, record, run};

/// The capture compressed with the encoder flushed (a sync flush: an empty stored block that ends on
/// a byte) after the file header and after every record, so that each record's blocks begin on a
/// byte; and where each record's first block begins in it.
fn flushed() -> (Vec<u8>, Vec<usize>) {
    let e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    let (e, starts) = flushed_into(e, |e| e.get_ref().len());
    (e.finish().unwrap(), starts)
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
        "corrupt: at decompressed byte {offset} (record {CORRUPT}, after {CORRUPT} packets): read failed: the gzip member from compressed byte 0: corrupt deflate data"
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
        "corrupt: at decompressed byte {offset} (record {n}, after {n} packets): read failed: the gzip member from compressed byte \
         0: corrupt: the CRC-32 in its trailer does not match its data"
    );
    reads_alike(&z, &frames, &error, "crc");
}
