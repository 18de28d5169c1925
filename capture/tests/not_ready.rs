//! A stream that is not ready (its read fails with `WouldBlock`, as `capture --source stdin`'s polled
//! standard input does while idle) leaves the reader where it was: read on, it gives every frame, as
//! the records are in the file (walked from their length fields here, or as written), for a pcap and
//! a pcapng, plain, in two gzip members with bytes after them, and in two zstd frames. A pause
//! inside the bytes after a compressed stream leaves them as judged: the same frames and warning as
//! without it, never a cut or another member found inside them.

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

/// Scripted reads once the stream is armed: `Some(bytes)` served (over as many reads as the reader's
/// buffer takes), `None` one read not ready (skipped while the reader opens the stream).
struct Script {
    items: Vec<Option<Vec<u8>>>,
    armed: Arc<AtomicBool>,
}

impl Read for Script {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.items.first_mut() {
                None => return Ok(0),
                Some(None) => {
                    self.items.remove(0);
                    if self.armed.load(Ordering::Relaxed) {
                        return Err(io::ErrorKind::WouldBlock.into());
                    }
                }
                Some(Some(d)) => {
                    let n = out.len().min(d.len());
                    out[..n].copy_from_slice(&d[..n]);
                    d.drain(..n);
                    if d.is_empty() {
                        self.items.remove(0);
                    }
                    return Ok(n);
                }
            }
        }
    }
}

/// What a scripted stream read to its end gives: the frames, the warnings and the error (if any).
#[derive(Debug, PartialEq)]
struct Outcome {
    frames: Vec<Vec<u8>>,
    warnings: Vec<WarningKind>,
    error: Option<String>,
}

/// `items` read through [`Script`], with its pauses (`paused`) or without them.
fn read_script(items: &[Option<Vec<u8>>], paused: bool) -> Outcome {
    let armed = Arc::new(AtomicBool::new(false));
    let src = Script { items: items.to_vec(), armed: armed.clone() };
    let mut r = CaptureReader::from_reader("script".into(), Box::new(src)).unwrap();
    armed.store(paused, Ordering::Relaxed);
    let (mut frames, mut error) = (Vec::new(), None);
    loop {
        match r.next_frame() {
            Ok(Some(f)) => frames.push(f.data.to_vec()),
            Ok(None) => break,
            Err(e) if e.would_block() => {}
            Err(e) => {
                error = Some(e.to_string());
                break;
            }
        }
    }
    Outcome { frames, warnings: r.warnings().iter().map(|w| w.kind.clone()).collect(), error }
}

/// A little-endian µs pcap (24-byte header, LINKTYPE_ETHERNET) of one 60-byte record of 0xab bytes.
fn one_record_pcap() -> Vec<u8> {
    let mut p = Vec::new();
    p.extend(0xa1b2_c3d4u32.to_le_bytes());
    p.extend(2u16.to_le_bytes());
    p.extend(4u16.to_le_bytes());
    p.extend([0u8; 8]);
    p.extend(65_535u32.to_le_bytes());
    p.extend(1u32.to_le_bytes());
    p.extend(1_700_000_000u32.to_le_bytes());
    p.extend(0u32.to_le_bytes());
    p.extend(60u32.to_le_bytes());
    p.extend(60u32.to_le_bytes());
    p.extend([0xabu8; 60]);
    p
}

/// [`one_record_pcap`] under one compression.
struct Compressed {
    compression: Compression,
    /// The file compressed.
    stream: Vec<u8>,
    /// Its record alone compressed: a second member, which continues the first's file.
    second: Vec<u8>,
    /// 4 bytes that begin a member (gzip: its magic and method 0, which is not deflate's 8, so that a
    /// member opened there fails; zstd: its magic).
    head: [u8; 4],
}

/// [`Compressed`] by gzip and by zstd.
fn compressed() -> [Compressed; 2] {
    let (pcap, record) = (one_record_pcap(), one_record_pcap()[24..].to_vec());
    [
        Compressed {
            compression: Compression::Gzip,
            stream: gzip(&pcap),
            second: gzip(&record),
            head: [0x1f, 0x8b, 0x00, 0x00],
        },
        Compressed {
            compression: Compression::Zstd,
            stream: zstd::encode_all(&pcap[..], 3).unwrap(),
            second: zstd::encode_all(&record[..], 3).unwrap(),
            head: [0x28, 0xb5, 0x2f, 0xfd],
        },
    ]
}

/// The stream, a pause, `00 00 00 00 00`, a pause, and `tail`: read without and with its pauses.
fn paused_in_trailing_bytes(stream: &[u8], tail: &[u8]) -> (Outcome, Outcome) {
    let items = [Some(stream.to_vec()), None, Some(vec![0; 5]), None, Some(tail.to_vec())];
    (read_script(&items, false), read_script(&items, true))
}

/// Both reads of [`paused_in_trailing_bytes`] as they should be: the one record, `bytes` ignored.
fn ignored(bytes: u64, compression: Compression) -> (Outcome, Outcome) {
    let outcome = || Outcome {
        frames: vec![vec![0xab; 60]],
        warnings: vec![WarningKind::TrailingData { bytes, compression }],
        error: None,
    };
    (outcome(), outcome())
}

/// Trailing bytes `00 00 00 00 00 | 1f` (gzip) or `.. | 28` (zstd), paused at the `|`: the last byte
/// begins a magic at the input's end, which, looked at afresh after the pause, read as a stream cut
/// short (beside 5 bytes ignored). Both reads give the one record and 6 bytes ignored (5 + 1, counted by hand).
#[test]
fn a_pause_in_trailing_bytes_does_not_make_them_a_cut() {
    let got = compressed().map(|c| (c.compression, paused_in_trailing_bytes(&c.stream, &c.head[..1])));
    assert_eq!(got, [Compression::Gzip, Compression::Zstd].map(|c| (c, ignored(6, c))));
}

/// Trailing bytes `00 00 00 00 00 | ` then 4 bytes that begin a member and 8 zero bytes, paused at the
/// `|`: looked at afresh, they began another member (gzip: "invalid gzip header"; zstd: a stream cut
/// short). Both reads give the one record and 17 bytes ignored (5 + 4 + 8, counted by hand).
#[test]
fn a_pause_in_trailing_bytes_does_not_open_a_member_in_them() {
    let tail = |head: [u8; 4]| [&head[..], &[0; 8]].concat();
    let got = compressed().map(|c| (c.compression, paused_in_trailing_bytes(&c.stream, &tail(c.head))));
    assert_eq!(got, [Compression::Gzip, Compression::Zstd].map(|c| (c, ignored(17, c))));
}

/// A pause between the first and the other bytes of a second member's magic: the look at what follows
/// the first member resumes with the byte it had, and the second member is read: two records, no
/// warning, as without the pause.
#[test]
fn a_pause_inside_the_next_members_magic_opens_it() {
    for Compressed { compression, stream, second, .. } in compressed() {
        let items = [Some(stream), None, Some(second[..1].to_vec()), None, Some(second[1..].to_vec())];
        let expected = Outcome { frames: vec![vec![0xab; 60]; 2], warnings: vec![], error: None };
        assert_eq!(read_script(&items, false), expected, "{compression:?} without pauses");
        assert_eq!(read_script(&items, true), expected, "{compression:?} with pauses");
    }
}

/// An Enhanced Packet Block whose total length is 0 is named by the EPB's own minimum (32: its 28
/// bytes of header and its trailing length), whether the stream paused before its first 12 bytes or
/// they had all come (the fuzz target `capture_reader_not_ready` found the two worded apart: "at least
/// 12" when the block header had not all come).
#[test]
fn a_malformed_block_is_named_alike_however_much_of_it_had_come() {
    let mut w = PcapngWriter::new(Vec::new(), None).unwrap();
    let spec = IfaceSpec { link: LinkType::Ethernet, name: "e".into(), description: None, snaplen: 0 };
    w.add_interface(&spec).unwrap();
    let head = w.finish().unwrap();
    let at = head.len();
    // Block type 6 (EPB), total length 0, then 4 bytes of what would be its interface.
    let epb = [6u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let error = format!(
        "script: at byte {at} (record 2, after 0 packets): malformed pcapng EPB block: total length 0 is not a multiple of 4 of at least 32"
    );
    let whole = read_script(&[Some([&head[..], &epb[..]].concat())], false);
    assert_eq!(whole.error.as_deref(), Some(error.as_str()));
    let paused = read_script(&[Some(head.clone()), Some(epb[..4].to_vec()), None, Some(epb[4..].to_vec())], true);
    assert_eq!(paused.error.as_deref(), Some(error.as_str()));
}

/// An ERF Ethernet record of a 60-byte frame of `tag` bytes (16-byte header, 2-byte pad, 2 zeros to 80).
fn erf_record(tag: u8) -> Vec<u8> {
    let mut r = (1_796_049_000u64 << 32).to_le_bytes().to_vec();
    r.extend([2, 0, 0, 80, 0, 0, 0, 60, 0, 0]);
    r.extend([tag; 60]);
    r.extend([0, 0]);
    r
}

/// While a stream is opened, a read that finds nothing (`WouldBlock`) is waited out, but ERF, which has
/// no header, is judged on the whole records that came (a live stream's records need not fill the 64
/// KiB a file's judgement may read): one record, a pause, a second record: the stream opens as ERF
/// after the first, and both frames are read. A record not yet whole is waited for: half a record, a
/// pause, its other half: one frame. And a pcap header paused inside opens as without the pause.
#[test]
fn a_pause_while_the_stream_opens_judges_erf_on_its_whole_records() {
    let open = |items: Vec<Option<Vec<u8>>>| {
        let armed = Arc::new(AtomicBool::new(true));
        let mut r = CaptureReader::from_reader("open".into(), Box::new(Script { items, armed })).unwrap();
        let container = r.format().container;
        let mut frames = Vec::new();
        loop {
            match r.next_frame() {
                Ok(Some(f)) => frames.push(f.data.to_vec()),
                Ok(None) => break,
                Err(e) if e.would_block() => {}
                Err(e) => panic!("{e}"),
            }
        }
        (container, frames)
    };
    let (one, two) = (erf_record(1), erf_record(2));
    let erf = wirestamp_capture::Container::Erf;
    assert_eq!(open(vec![Some(one.clone()), None, Some(two)]), (erf, vec![vec![1; 60], vec![2; 60]]));
    assert_eq!(open(vec![Some(one[..40].to_vec()), None, Some(one[40..].to_vec())]), (erf, vec![vec![1; 60]]));
    let pcap = one_record_pcap();
    let (container, frames) = open(vec![Some(pcap[..10].to_vec()), None, Some(pcap[10..].to_vec())]);
    assert_eq!((matches!(container, wirestamp_capture::Container::Pcap { .. }), frames), (true, vec![vec![0xab; 60]]));
}

/// `data`, then reads that fail with [`wirestamp_capture::Stopped`] (a stop asked for).
struct ThenStopped(io::Cursor<Vec<u8>>);

impl Read for ThenStopped {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        match self.0.read(out)? {
            0 if !out.is_empty() => Err(io::Error::other(wirestamp_capture::Stopped)),
            n => Ok(n),
        }
    }
}

/// A stop is labelled by where the stream was: after the 100-byte pcap's one record (24-byte header,
/// 16-byte record header, 60 bytes), "stopped as asked" at byte 100, after 1 packet; inside the header
/// (its first 10 bytes), "stopped before the stream's header". (Every stop read "before the header".)
#[test]
fn a_stop_is_labelled_by_where_the_stream_was() {
    let pcap = one_record_pcap();
    let mut r = CaptureReader::from_reader("s".into(), Box::new(ThenStopped(io::Cursor::new(pcap.clone())))).unwrap();
    assert_eq!(r.next_frame().unwrap().map(|f| f.data.to_vec()), Some(vec![0xab; 60]));
    let e = r.next_frame().unwrap_err();
    assert!(matches!(e.kind, wirestamp_capture::ReadErrorKind::Stopped));
    assert_eq!(
        e.to_string(),
        "s: at byte 100 (record 1, after 1 packet): stopped as asked (the stream's reader was told to stop)"
    );
    let Err(e) = CaptureReader::from_reader("s".into(), Box::new(ThenStopped(io::Cursor::new(pcap[..10].to_vec()))))
    else {
        panic!("opened a stream stopped inside its header")
    };
    assert_eq!(
        e.to_string(),
        "s: at byte 0 (record 0, after 0 packets): stopped before the stream's header (no frame read)"
    );
}

/// A classic pcap (µs, little-endian) of `n` 60-byte frames, frame k at `first_us + 2k` µs, each byte
/// of it `tag` + k.
fn every_other_us(n: usize, first_us: u32, tag: u8) -> Vec<u8> {
    let mut out = vec![0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0];
    out.extend([0u8; 8]);
    out.extend(65_535u32.to_le_bytes());
    out.extend(1u32.to_le_bytes());
    for k in 0..n {
        let us = first_us + 2 * k as u32;
        for v in [1_000_000_000 + us / 1_000_000, us % 1_000_000, 60, 60] {
            out.extend(v.to_le_bytes());
        }
        out.extend([tag.wrapping_add(k as u8); 60]);
    }
    out
}

/// A merge of a stream not ready before every read and a file leaves the stream where it was each
/// time: read on, it gives the frames in time order, as they were written: frames at even µs in the
/// stream (input 0), at odd µs in the file (input 1), so they alternate, 0 first, 300 of each.
#[test]
fn a_merge_with_a_stream_not_ready_is_read_on_where_it_was() {
    use wirestamp_capture::MergedReader;
    let armed = Arc::new(AtomicBool::new(false));
    let (stream, file) = (every_other_us(300, 0, 0), every_other_us(300, 1, 100));
    let src = NotReady { data: stream, at: 0, armed: armed.clone(), ready: false };
    let inputs = vec![
        CaptureReader::from_reader("not-ready".into(), Box::new(src)).unwrap(),
        CaptureReader::from_reader("file".into(), Box::new(io::Cursor::new(file))).unwrap(),
    ];
    armed.store(true, Ordering::Relaxed);
    let mut m = MergedReader::from_readers(inputs);
    let (mut got, mut not_ready) = (Vec::new(), 0);
    loop {
        match m.next_frame() {
            Ok(Some((input, f))) => got.push((input, f.ts_ns, f.data.to_vec())),
            Ok(None) => break,
            Err(e) if e.would_block() => not_ready += 1,
            Err(e) => panic!("{e}"),
        }
    }
    let want: Vec<(usize, i64, Vec<u8>)> = (0..600)
        .map(|i| {
            let (input, k) = (i % 2, i / 2);
            let us = 2 * k as i64 + input as i64;
            (input, 1_000_000_000 * 1_000_000_000 + us * 1_000, vec![(100 * input + k) as u8; 60])
        })
        .collect();
    assert!(not_ready > 0);
    assert_eq!(got.len(), 600);
    assert!(got == want, "the merge's frames differ from the ones written");
}
