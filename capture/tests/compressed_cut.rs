//! Compressed captures cut short (a copy stopped early, a download broken off): every frame the
//! decoder could give is read, then one warning says where the stream was cut and what it cost; a
//! cut before any of the capture could be decoded is an error that says so. What was decodable is
//! told by the peer tools (`zstd -d`, `gzip -d`) and by how the files were built.

mod common;

use std::process::Command;

use common::build::{pcap_header, pcap_record};
use common::temp_path;
use wirestamp_capture::{
    CaptureReader, CompressedCut, GzipCut, ReadError, ReadErrorKind, ReadWarning, WarningKind, ZstdCut, ZstdPart,
};
use wirestamp_testdata::data_file;

/// elk_nasdaq.pcap: 220,010 bytes, 2,047 records.
const ELK: &str = "pcap_market/elk_nasdaq.pcap";

/// `tool ARGS FILE` on `bytes` written to a file: its standard output, whatever its exit status (on a
/// cut stream, `-dc` writes what it decoded, then fails).
fn run(tool: &str, args: &[&str], bytes: &[u8]) -> Vec<u8> {
    // One file per call: tests run at once, and two compressing the same bytes shared a name (one
    // removed the other's file: a flaky NotFound).
    static CALLS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let call = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let p = temp_path(&format!("{tool}-input-{}-{call}", bytes.len()));
    std::fs::write(&p, bytes).unwrap();
    let out = Command::new(tool)
        .args(args)
        .arg(&p)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {tool} (scripts/setup.sh installs it): {e}"));
    std::fs::remove_file(&p).unwrap();
    out.stdout
}

fn zstd(bytes: &[u8]) -> Vec<u8> {
    let z = run("zstd", &["-q", "-c"], bytes);
    assert!(!z.is_empty());
    z
}

/// How many bytes `zstd -d` decodes from the first `len` bytes of `z`.
fn zstd_decodes(z: &[u8], len: usize) -> usize {
    run("zstd", &["-q", "-dc"], &z[..len]).len()
}

/// Where a classic pcap's records end, walked from their length fields (24-byte file header,
/// 16-byte record headers, little endian).
fn record_ends(pcap: &[u8]) -> Vec<usize> {
    let (mut at, mut ends) = (24, Vec::new());
    while at + 16 <= pcap.len() {
        at += 16 + u32::from_le_bytes(pcap[at + 8..at + 12].try_into().unwrap()) as usize;
        if at > pcap.len() {
            break;
        }
        ends.push(at);
    }
    ends
}

/// The records wholly inside the first `decoded` bytes of `pcap`, and where the next one begins.
fn whole_records(pcap: &[u8], decoded: usize) -> (u64, u64) {
    let ends: Vec<usize> = record_ends(pcap).into_iter().filter(|&e| e <= decoded).collect();
    (ends.len() as u64, ends.last().map_or(24, |&e| e as u64))
}

/// Reads `bytes` as the file `cut.pcap.z`: the frames read and the warnings.
fn read(bytes: &[u8]) -> Result<(u64, Vec<ReadWarning>), ReadError> {
    let mut r = CaptureReader::from_reader("cut.pcap.z".into(), Box::new(std::io::Cursor::new(bytes.to_vec())))?;
    let mut n = 0;
    while r.next_frame()?.is_some() {
        n += 1;
    }
    Ok((n, r.warnings().to_vec()))
}

/// The one warning a cut stream leaves: at the record after the `frames` whole ones (at `offset`),
/// saying `detail` after the cut.
fn assert_cut(warnings: &[ReadWarning], frames: u64, offset: u64, kind: WarningKind, detail: &str) {
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    assert_eq!((w.offset, w.frame_index, w.packets), (offset, frames, frames));
    assert_eq!(w.kind, kind);
    let s = if frames == 1 { "" } else { "s" };
    assert_eq!(
        w.to_string(),
        format!(
            "at decompressed byte {offset} (record {frames}, after {frames} packet{s}): compressed stream ends early (file cut short){detail}"
        )
    );
}

/// The smallest cut of `z` after which `zstd -d` decodes anything: the end of its first block.
fn first_block_end(z: &[u8]) -> usize {
    let (mut lo, mut hi) = (0, z.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if zstd_decodes(z, mid) > 0 { hi = mid } else { lo = mid + 1 }
    }
    lo
}

/// A cut inside a later block: the blocks before it are read whole, the cut one is lost (a compressed
/// block is decoded only once whole), and the warning says how many compressed bytes could not be
/// decoded and how many bytes of the capture are missing (the frame header gives its size). The
/// audit's figures: 1,181 of 2,047 records read whatever the cut in the second block (the file
/// missing only 86 bytes included); a warning without the loss before.
#[test]
fn zstd_cut_in_a_later_block_reads_the_blocks_before_and_says_what_was_lost() {
    let pcap = std::fs::read(data_file(ELK)).unwrap();
    let z = zstd(&pcap);
    let block_end = first_block_end(&z);
    let decoded = zstd_decodes(&z, block_end);
    assert_eq!((decoded, pcap.len()), (131_072, 220_010), "one 128 KiB block, then the rest");
    let (frames, offset) = whole_records(&pcap, decoded);
    assert_eq!(frames, 1_181);
    let missing = (pcap.len() - decoded) as u64;
    // At the block's end, 2 bytes into the next block's header, inside the next block, 86 bytes short.
    for cut in [block_end, block_end + 2, 40_000, z.len() - 86] {
        assert_eq!(zstd_decodes(&z, cut), decoded, "cut at {cut}");
        let (n, warnings) = read(&z[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert_eq!(n, frames, "cut at {cut}");
        let undecoded = (cut - block_end) as u64;
        let zstd_cut =
            ZstdCut { undecoded, part: ZstdPart::Block, content_size: Some(220_010), decoded: decoded as u64 };
        let what = if undecoded == 0 {
            "all of the zstd stream present was decoded".to_owned()
        } else {
            format!(
                "the last {undecoded} compressed bytes, an incomplete zstd block, could not be decoded (a compressed block is \
                 decoded only whole)"
            )
        };
        let detail = format!(": {what}; {missing} of the frame's 220010 decoded bytes are missing");
        assert_cut(&warnings, frames, offset, WarningKind::CompressedStreamCut(CompressedCut::Zstd(zstd_cut)), &detail);
        assert_eq!(warnings[0].missing(), missing);
    }
}

/// A cut inside the first block leaves nothing decoded (`zstd -d` writes nothing either): not even
/// the capture's header, so the file cannot be read, an error that says why (it was "read failed:
/// incomplete frame" at byte 0), naming the compressed bytes that could not be decoded: all after the
/// 9-byte frame header (magic, descriptor, 4-byte content size). A cut inside the frame header too.
#[test]
fn zstd_cut_in_its_first_block_is_an_error_that_says_so() {
    let pcap = std::fs::read(data_file(ELK)).unwrap();
    let z = zstd(&pcap);
    // Descriptor a4: a 4-byte content size, a single segment (no window byte), a checksum.
    assert_eq!(z[4], 0xa4);
    let block_end = first_block_end(&z);
    for cut in [5, 100, 30_000, block_end - 1] {
        assert_eq!(zstd_decodes(&z, cut), 0, "cut at {cut}");
        let e = read(&z[..cut]).expect_err("nothing to read");
        let (part, undecoded, content_size) =
            if cut < 9 { (ZstdPart::FrameHeader, cut, None) } else { (ZstdPart::Block, cut - 9, Some(220_010)) };
        let ReadErrorKind::CutBeforeCapture { cut: zstd, decoded, why } = &e.kind else { panic!("{e}") };
        let want = ZstdCut { undecoded: undecoded as u64, part, content_size, decoded: 0 };
        assert_eq!((*zstd, *decoded), (CompressedCut::Zstd(want), 0));
        assert!(matches!(**why, ReadErrorKind::TooShort(0)), "{why}");
        let what = match part {
            ZstdPart::FrameHeader => {
                format!("the last {cut} compressed bytes, an incomplete zstd frame header, could not be decoded")
            }
            _ => format!(
                "the last {undecoded} compressed bytes, an incomplete zstd block, could not be decoded (a compressed block is \
                 decoded only whole); 220010 of the frame's 220010 decoded bytes are missing"
            ),
        };
        assert_eq!(
            e.to_string(),
            format!(
                "cut.pcap.z: at decompressed byte 0 (record 0, after 0 packets): compressed stream ends early (file cut short): \
                 {what}: nothing of the capture was decoded"
            )
        );
    }
}

/// A cut inside the checksum after the last block (`zstd -l` says the frame has one: its last 4
/// bytes) leaves every block whole: every record is read, and the warning says the data went
/// unchecked. (`zstd -d` writes nothing of the last block there: it waits for the checksum.)
#[test]
fn zstd_cut_in_the_checksum_reads_every_record() {
    let pcap = std::fs::read(data_file(ELK)).unwrap();
    let z = zstd(&pcap);
    let frames = record_ends(&pcap).len() as u64;
    assert_eq!(frames, 2_047);
    let (n, warnings) = read(&z[..z.len() - 2]).unwrap();
    assert_eq!(n, frames);
    let zstd_cut = ZstdCut { undecoded: 2, part: ZstdPart::Checksum, content_size: Some(220_010), decoded: 220_010 };
    let detail = ": all of the zstd frame's data was decoded, its checksum is cut (2 of 4 bytes present)";
    let kind = WarningKind::CompressedStreamCut(CompressedCut::Zstd(zstd_cut));
    assert_cut(&warnings, frames, pcap.len() as u64, kind, detail);
    assert_eq!(warnings[0].missing(), 0);
}

/// A pcap of 300 records of noise, their headers too: zstd stores it as is (raw blocks), whose bytes
/// are decoded as they arrive, so a cut loses no more than the cut itself, as with `zstd -d`.
#[test]
fn zstd_cut_in_a_raw_block_reads_up_to_the_cut() {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut noise = || {
        // xorshift64: bytes zstd cannot compress.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 32) as u32
    };
    let mut pcap = pcap_header(0xa1b2_c3d4, 1);
    for _ in 0..300 {
        let len = 500 + noise() % 1_000;
        let data: Vec<u8> = (0..len).map(|_| noise() as u8).collect();
        pcap.extend(pcap_record(noise(), noise() % 1_000_000, &data, len + 1 + noise() % 1_000));
    }
    let z = zstd(&pcap);
    assert!(z.len() > pcap.len(), "stored as is: {} of {} bytes", z.len(), pcap.len());
    // Inside the second 128 KiB block.
    let cut = 200_000;
    let decoded = zstd_decodes(&z, cut);
    let (frames, offset) = whole_records(&pcap, decoded);
    assert!(decoded > 131_072 && decoded < pcap.len(), "{decoded} of {} bytes", pcap.len());
    let (n, warnings) = read(&z[..cut]).unwrap();
    assert_eq!(n, frames);
    let size = pcap.len() as u64;
    let zstd_cut = ZstdCut { undecoded: 0, part: ZstdPart::Block, content_size: Some(size), decoded: decoded as u64 };
    let missing = size - decoded as u64;
    let detail = format!(
        ": all of the zstd stream present was decoded; {missing} of the frame's {size} decoded bytes are missing"
    );
    assert_cut(&warnings, frames, offset, WarningKind::CompressedStreamCut(CompressedCut::Zstd(zstd_cut)), &detail);
}

/// Two frames (`cat a.zst b.zst`), a skippable frame between them or not, cut inside what follows
/// the first: its records are read whole, and the warning names the part cut (the second frame's
/// size is unknown before its header: none is claimed missing).
#[test]
fn zstd_cut_in_a_later_frame_names_the_part_cut() {
    let pcap = std::fs::read(data_file(ELK)).unwrap();
    let half = record_ends(&pcap)[999];
    let first = zstd(&pcap[..half]);
    let skippable = [&[0x50, 0x2a, 0x4d, 0x18, 100, 0, 0, 0][..], &[0u8; 100]].concat();
    // (bytes after the first frame, bytes cut after it, the part cut, its message)
    let frame_header = "the last 6 compressed bytes, an incomplete zstd frame header, could not be decoded";
    let skipped = "the last 58 compressed bytes, part of a skippable frame (no capture data), were ignored";
    let cases = [
        (zstd(&pcap[half..]), 6, ZstdPart::FrameHeader, frame_header),
        ([&skippable[..], &zstd(&pcap[half..])].concat(), 58, ZstdPart::SkippableFrame, skipped),
    ];
    for (rest, cut, part, what) in cases {
        let bytes = [&first[..], &rest[..cut]].concat();
        let (n, warnings) = read(&bytes).unwrap();
        assert_eq!(n, 1_000);
        let zstd_cut = ZstdCut { undecoded: cut as u64, part, content_size: None, decoded: 0 };
        let kind = WarningKind::CompressedStreamCut(CompressedCut::Zstd(zstd_cut));
        assert_cut(&warnings, 1_000, half as u64, kind, &format!(": {what}"));
    }
}

/// A stream cut inside the next member's magic (1 to 3 bytes of it after a whole member) is read as
/// that member cut short, not as bytes after the stream: it may have held all the rest of the capture.
/// (`gzip -d` and `zstd -d` fail on these bytes as on any after the stream, so they tell nothing here.)
/// The first member's 1,000 records are read, and the warning says the stream was cut (for zstd, the
/// bytes of the frame header cut).
#[test]
fn a_cut_inside_the_next_members_magic_is_a_cut() {
    let pcap = std::fs::read(data_file(ELK)).unwrap();
    let half = record_ends(&pcap)[999];
    let (gz1, gz2) = (run("gzip", &["-c"], &pcap[..half]), run("gzip", &["-c"], &pcap[half..]));
    let (z1, z2) = (zstd(&pcap[..half]), zstd(&pcap[half..]));
    for cut in 1..=3u64 {
        for (tool, first, second) in [("gzip", &gz1, &gz2), ("zstd", &z1, &z2)] {
            let bytes = [&first[..], &second[..cut as usize]].concat();
            let (n, warnings) = read(&bytes).unwrap_or_else(|e| panic!("{tool} cut {cut}: {e}"));
            assert_eq!(n, 1_000, "{tool} cut {cut}");
            let (kind, what) = match tool {
                "gzip" => {
                    let gzip = GzipCut { member_start: gz1.len() as u64, present: cut, undecoded: cut, decoded: 0 };
                    let what = format!(
                        ": the last {cut} bytes, the start of a gzip member (from byte {} of the file) cut inside its \
                         magic, could not be decoded; {GZIP_SIZE_UNKNOWN}",
                        gz1.len()
                    );
                    (WarningKind::CompressedStreamCut(CompressedCut::Gzip(gzip)), what)
                }
                _ => (
                    WarningKind::CompressedStreamCut(CompressedCut::Zstd(ZstdCut {
                        undecoded: cut,
                        part: ZstdPart::FrameHeader,
                        content_size: None,
                        decoded: 0,
                    })),
                    format!(": the last {cut} compressed bytes, an incomplete zstd frame header, could not be decoded"),
                ),
            };
            assert_cut(&warnings, 1_000, half as u64, kind, &what);
        }
    }
}

/// The end of a cut gzip stream's warning: a member's size is in its trailer.
const GZIP_SIZE_UNKNOWN: &str =
    "the member's size, in the trailer at its end, is cut off: how much of the capture is missing is unknown";

/// What the warning says of a gzip member from `start` cut after `present` compressed bytes that gave
/// `decoded`.
fn gzip_detail(start: usize, present: usize, decoded: usize) -> String {
    format!(
        ": the decoder took all of the gzip stream present (deflate is decoded as it arrives, all but a last \
         incomplete code or block header): the cut member's {present} compressed bytes, from byte {start} of the \
         file, gave {decoded} bytes; {GZIP_SIZE_UNKNOWN}"
    )
}

/// How many bytes zlib decodes from `gz`, a gzip stream cut short: `zstd -d --format=gzip` (zlib's
/// inflate) writes them before it fails. (`gzip -d` may write a byte less: its decoder reads a code's
/// table bits ahead, and stops without the last code when they are not there.)
fn zlib_decodes(gz: &[u8]) -> usize {
    run("zstd", &["-q", "-dc", "--format=gzip"], gz).len()
}

/// gzip for comparison: deflate is decoded as it arrives, so a cut stream gives the records that
/// zlib decodes before it fails, and the warning says where the cut member began, how many of its
/// compressed bytes were present (all taken by the decoder: the file's length from the member's start)
/// and what they gave (as zlib), the member's size being in its trailer. In one member, in the
/// second of two (`cat a.gz b.gz`), in the trailer (every record read); a cut before any of the capture
/// was decoded is an error that says so.
#[test]
fn gzip_cut_reads_what_gzip_decodes() {
    let pcap = std::fs::read(data_file(ELK)).unwrap();
    let gz = run("gzip", &["-c"], &pcap);
    let half = record_ends(&pcap)[999];
    let (gz1, gz2) = (run("gzip", &["-c"], &pcap[..half]), run("gzip", &["-c"], &pcap[half..]));
    let two = [&gz1[..], &gz2[..]].concat();
    // (the stream, where the cut member begins in it, the cut)
    let cuts = [
        (&gz, 0, 3_000),
        (&gz, 0, 20_000),
        (&gz, 0, gz.len() - 20),
        (&gz, 0, gz.len() - 4),
        (&two, gz1.len(), gz1.len() + 7_000),
    ];
    for (stream, start, cut) in cuts {
        let decoded = zlib_decodes(&stream[..cut]);
        let (frames, offset) = whole_records(&pcap, decoded);
        assert!(frames > 0 && frames <= 2_047, "cut at {cut}: {frames}");
        let (n, warnings) = read(&stream[..cut]).unwrap_or_else(|e| panic!("cut at {cut}: {e}"));
        assert_eq!(n, frames, "cut at {cut}");
        let in_member = decoded - if start > 0 { half } else { 0 };
        let gzip = GzipCut {
            member_start: start as u64,
            present: (cut - start) as u64,
            undecoded: 0,
            decoded: in_member as u64,
        };
        let kind = WarningKind::CompressedStreamCut(CompressedCut::Gzip(gzip));
        assert_cut(&warnings, frames, offset, kind, &gzip_detail(start, cut - start, in_member));
        assert_eq!(warnings[0].missing(), 0, "unknown");
    }
    // In the trailer: every record was decoded.
    assert_eq!(zlib_decodes(&gz[..gz.len() - 4]), pcap.len());
    // In the header (10 bytes) or in the deflate stream's first block: nothing decoded.
    for cut in [5, 20] {
        let e = read(&gz[..cut]).expect_err("nothing to read");
        let gzip = GzipCut { member_start: 0, present: cut as u64, undecoded: 0, decoded: 0 };
        assert!(
            matches!(&e.kind, ReadErrorKind::CutBeforeCapture { cut: CompressedCut::Gzip(g), decoded: 0, .. } if *g == gzip),
            "{e}"
        );
        assert_eq!(
            e.to_string(),
            format!(
                "cut.pcap.z: at decompressed byte 0 (record 0, after 0 packets): compressed stream ends early (file cut short){}: \
                 nothing of the capture was decoded",
                gzip_detail(0, cut, 0)
            )
        );
    }
}
