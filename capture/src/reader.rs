//! [`CaptureReader`]: one input file of any supported format, compressed or not.
//!
//! The format is recognised from the content, never from the name: gzip (`1f 8b`) or zstd
//! (`28 b5 2f fd`) first, then pcap by its magic (`a1b2c3d4` µs, `a1b23c4d` ns, `a1b2cd34`
//! modified; either byte order), pcapng by its SHB type (`0a0d0d0a`), and otherwise ERF if the
//! first records are plausible ERF records (ERF has no file header).
//!
//! Semantics: a malformed record is an error returned after every good frame before it, and the
//! reader then ends (`Ok(None)`); a file cut short inside a record ends the stream with a
//! [`ReadWarning`], as does a compressed stream cut short, wherever its decoder stops; records that
//! carry no frame are counted in [`ReadStats::skipped`].

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use wirestamp_core::Frame;

use crate::buffer::ChunkBuffer;
use crate::decompress::{self, Compression};
use crate::erf::{self, ErfParser};
use crate::error::{ReadError, ReadErrorKind, ReadWarning, WarningKind};
use crate::interface::Interface;
use crate::live::stdin::{WaitingStream, Waits};
use crate::pcap::{ByteOrder, PcapMagic, PcapParser};
use crate::pcapng::PcapngParser;
use crate::raw::{RawFrame, Step};

/// The path that names standard input.
pub const STDIN: &str = "-";

/// Container format of an input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Container {
    /// Classic pcap.
    Pcap {
        /// Nanosecond timestamps (magic a1b23c4d) rather than µs.
        nanos: bool,
        /// Byte order of the file.
        byte_order: ByteOrder,
        /// The modified (Kuznetzov, a1b2cd34) format with 24-byte record headers.
        modified: bool,
    },
    /// pcapng (byte order is per section).
    Pcapng,
    /// Endace ERF records.
    Erf,
}

/// Format of an input: container and compression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileFormat {
    /// Container.
    pub container: Container,
    /// Compression around it.
    pub compression: Compression,
}

/// Counters of one input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Frames returned.
    pub frames: u64,
    /// Records/blocks read: frames, headers (pcapng SHB/IDB) and skipped ones.
    pub records: u64,
    /// pcapng sections (SHBs) read.
    pub sections: u32,
    /// Bytes of the (decompressed) stream consumed.
    pub bytes: u64,
    /// Records/blocks that carry no frame, by kind ("pcapng ISB", "pcapng NRB", "pcapng custom
    /// block", "pcapng unknown block", "erf META", "erf PAD", "erf non-Ethernet type", ...).
    pub skipped: BTreeMap<&'static str, u64>,
    /// Timestamps beyond the i64 ns range (before 1677 or after 2262), saturated to
    /// `i64::MIN`/`i64::MAX` and flagged `ClockQuality::RECORD_ERROR`.
    pub ts_out_of_range: u64,
    /// pcap records whose fraction of a second is 10^6 µs / 10^9 ns or more (flagged
    /// `ClockQuality::RECORD_ERROR`; the value carries into the seconds).
    pub ts_fraction_invalid: u64,
}

enum Parser {
    Pcap(PcapParser),
    Pcapng(PcapngParser),
    Erf(ErfParser),
}

/// Why [`CaptureReader::next_run`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// It took as many frames as it was allowed.
    Max,
    /// `take` declined a frame: [`CaptureReader::next_frame`] returns it next.
    Declined,
    /// The input ended (as [`CaptureReader::next_frame`] returning `None`).
    End,
}

/// Streaming reader of one capture file (pcap, pcapng or ERF; plain, gzip or zstd).
///
/// Memory stays bounded whatever the file size: records are parsed in a reusable 256 KiB buffer,
/// which only grows for a record larger than it, up to 256 MiB.
pub struct CaptureReader {
    name: String,
    buf: ChunkBuffer,
    parser: Parser,
    format: FileFormat,
    interfaces: Vec<Interface>,
    stats: ReadStats,
    warnings: Vec<ReadWarning>,
    done: bool,
    /// The frame [`CaptureReader::next_run`]'s `take` declined: the next one to return.
    declined: Option<RawFrame>,
    /// Read to its end (its last record, or a cut), not stopped by an error.
    ended: bool,
    input: usize,
    /// How a compressed stream ended ([`decompress::Ending`]): cut short, or followed by bytes that
    /// were ignored; a warning at the end.
    ending: Option<decompress::Ending>,
}

impl CaptureReader {
    /// Opens a file, or standard input for `-` (as tcpdump's `-r -`; a file named `-` is `./-`); the
    /// format and compression are recognised from the content. Standard input is named `stdin` in
    /// messages, and waited for if its descriptor is non-blocking ([`WaitingStream`]); its ERF records
    /// are judged once 100 ms pass without bytes, if too few came to tell before, as a FIFO's. Once
    /// open, a stream that has to wait for bytes waits ([`Waits::Block`]).
    pub fn open(path: &Path) -> Result<CaptureReader, ReadError> {
        CaptureReader::open_waiting(path, Waits::Block)
    }

    /// [`CaptureReader::open`], with what a stream that has to wait for bytes once open (standard
    /// input, a FIFO) does: with [`Waits::Tell`] the next frame is [`ReadError::would_block`] once
    /// before each wait, the reader left where it was, so that the caller can write out what it has
    /// (a live relay's output then shows as it comes); called again, the reader waits. A file never
    /// has to wait.
    pub fn open_waiting(path: &Path, waits: Waits) -> Result<CaptureReader, ReadError> {
        if path == Path::new(STDIN) {
            let err = |kind| ReadError {
                path: "stdin".into(),
                offset: 0,
                frame_index: 0,
                packets: 0,
                compressed: false,
                kind,
            };
            let (stdin, opened) = WaitingStream::stdin(waits).map_err(|e| err(ReadErrorKind::Open(e)))?;
            let r = CaptureReader::from_stdin(Box::new(stdin))?;
            opened.store(true, std::sync::atomic::Ordering::Relaxed);
            return Ok(r);
        }
        let name = path.display().to_string();
        let open_err =
            |kind| ReadError { path: name.clone(), offset: 0, frame_index: 0, packets: 0, compressed: false, kind };
        let f = File::open(path).map_err(|e| open_err(ReadErrorKind::Open(e)))?;
        let kind = f.metadata().map(|m| m.file_type());
        match kind {
            // Opening a directory succeeds; reading it fails with a less helpful message.
            Ok(k) if k.is_dir() => Err(open_err(ReadErrorKind::Directory)),
            // A relay through a FIFO (or a socket, `<(...)`'s pipe) may stall as standard input does.
            Ok(k) if k.is_fifo() || k.is_socket() => {
                let (stream, opened) = WaitingStream::new(f, waits);
                let r = CaptureReader::from_reader(name, Box::new(stream))?;
                opened.store(true, std::sync::atomic::Ordering::Relaxed);
                Ok(r)
            }
            _ => CaptureReader::from_reader(name, Box::new(f)),
        }
    }

    /// Reads from any byte stream (stdin, a FIFO, memory); `name` is used in messages.
    ///
    /// A stream that has nothing yet may say so once the reader is open: a read failing with
    /// `WouldBlock` (a polled stream that waited long enough: [`crate::live::PolledStdin`]) makes the
    /// next frame that error ([`ReadError::would_block`]), the reader left where it was, to be called
    /// again; the file header is waited for. A read failing with [`crate::Stopped`] (a stop asked for)
    /// fails the open with [`ReadErrorKind::StoppedBeforeHeader`], and a later frame with
    /// [`ReadErrorKind::Stopped`], placed where the stream was.
    pub fn from_reader(name: String, r: Box<dyn Read + Send>) -> Result<CaptureReader, ReadError> {
        CaptureReader::open_stream(name, r, false)
    }

    /// Standard input read through `r` ([`crate::live::PolledStdin`], say), named `stdin`: as
    /// [`CaptureReader::from_reader`], but a stream that ends before any byte is
    /// [`ReadErrorKind::EmptyStdin`] (nothing came: was the producer started?), not a file too short to
    /// identify.
    pub fn from_stdin(r: Box<dyn Read + Send>) -> Result<CaptureReader, ReadError> {
        CaptureReader::open_stream("stdin".to_owned(), r, true)
    }

    /// [`CaptureReader::from_reader`]; `stdin`: the stream is standard input.
    fn open_stream(name: String, r: Box<dyn Read + Send>, stdin: bool) -> Result<CaptureReader, ReadError> {
        // A stop while the stream is opened is one before its header.
        let err = |kind, compression| ReadError {
            path: name.clone(),
            offset: 0,
            frame_index: 0,
            packets: 0,
            compressed: compression != Compression::None,
            kind: match kind {
                ReadErrorKind::Stopped => ReadErrorKind::StoppedBeforeHeader,
                kind => kind,
            },
        };
        let (src, compression, ending) = decompress::wrap(r).map_err(|e| err(e.into(), Compression::None))?;
        let err = |kind| err(kind, compression);
        let mut buf = ChunkBuffer::new(src);
        let (parser, container, interfaces) = open_container(&mut buf).map_err(|why| {
            // A compressed stream cut short: the cut is why, whatever the decoded bytes lacked.
            let cut = ending.as_ref().and_then(|e| decompress::lock(e).cut_of(compression));
            match cut {
                Some(cut) => {
                    err(ReadErrorKind::CutBeforeCapture { cut, decoded: buf.read_so_far(), why: Box::new(why) })
                }
                // Not a byte came (a compressed stream came, whatever it decoded to).
                None if stdin && compression == Compression::None && matches!(why, ReadErrorKind::TooShort(0)) => {
                    err(ReadErrorKind::EmptyStdin)
                }
                None => err(why),
            }
        })?;
        let mut r = CaptureReader {
            name,
            buf,
            parser,
            format: FileFormat { container, compression },
            interfaces,
            stats: ReadStats::default(),
            warnings: Vec::new(),
            done: false,
            declined: None,
            ended: false,
            input: 0,
            ending,
        };
        r.stats.bytes = r.buf.offset();
        Ok(r)
    }

    /// The input's name (path).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Container format and compression.
    pub fn format(&self) -> FileFormat {
        self.format
    }

    /// Next frame, or `Ok(None)` at the end of the file (also after a cut-short record, which
    /// leaves a warning, and after an error, which was returned once). The exception: a stream not
    /// ready ([`ReadError::would_block`], only from a source that says so, such as
    /// [`crate::live::PolledStdin`]) is no end: the reader stays where it was, not finished (no end
    /// warnings yet), and gives that error again for as long as the stream has nothing.
    // The fast path is inlined into the caller's loop and the rest is a call: inlining it all made
    // a call whose ~60-byte result the caller read back through memory (a store-forwarding stall).
    #[inline(always)]
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, ReadError> {
        Ok(self.advance()?.map(|raw| self.frame(&raw)))
    }

    /// Offers the next frames to `take`, as long as it takes them and at most `max` of them: a run of
    /// frames in one call, not a call and a return per frame. Returns how many `take` took, and why
    /// the run ended: `max` frames taken, a frame declined (the one [`CaptureReader::next_frame`]
    /// returns next), the end of the input, or an error (as `next_frame` returns it, after the
    /// frames before it).
    #[inline(always)]
    pub fn next_run(&mut self, max: u64, mut take: impl FnMut(&Frame<'_>) -> bool) -> (u64, Result<RunEnd, ReadError>) {
        if self.declined.is_some() {
            return (0, Ok(RunEnd::Declined));
        }
        let mut taken = 0;
        // Frames the hot path read, counted at the end (or before the general path, whose errors
        // say how many frames came before them).
        let mut hot = 0;
        let end = loop {
            if taken == max {
                break Ok(RunEnd::Max);
            }
            let raw = match self.fast_raw() {
                Some(raw) => {
                    hot += 1;
                    raw
                }
                None => {
                    self.count_hot(std::mem::take(&mut hot));
                    match self.advance_slow() {
                        Ok(Some(raw)) => raw,
                        Ok(None) => break Ok(RunEnd::End),
                        Err(e) => break Err(e),
                    }
                }
            };
            if !take(&self.frame(&raw)) {
                self.declined = Some(raw);
                break Ok(RunEnd::Declined);
            }
            taken += 1;
        };
        self.count_hot(hot);
        (taken, end)
    }

    /// Counts `n` frames read by the hot path, as [`CaptureReader::fast`] counts one.
    #[inline(always)]
    fn count_hot(&mut self, n: u64) {
        self.stats.frames += n;
        self.stats.records += n;
        self.stats.bytes = self.buf.offset();
    }

    /// [`CaptureReader::next_frame`] with the frame's interface, as far as this input describes it
    /// (its timestamp resolution, say), looked up once the record is read (a pcapng interface is
    /// described in the same read as its first frame).
    pub fn next_frame_and_interface(&mut self) -> Result<Option<(Frame<'_>, Option<&Interface>)>, ReadError> {
        let Some(raw) = self.advance()? else { return Ok(None) };
        let iface = self.interfaces.get(raw.interface as usize);
        Ok(Some((self.frame(&raw), iface)))
    }

    /// Interfaces seen so far (pcapng IDBs and ERF interface numbers are added as they appear;
    /// complete once the file has been read).
    pub fn interfaces(&self) -> &[Interface] {
        &self.interfaces
    }

    /// Counters.
    pub fn stats(&self) -> &ReadStats {
        &self.stats
    }

    /// Whether the input was read to its end (its last record, or a cut inside one), not stopped by an
    /// error or left before it: what the file says of itself as a whole (its statistics blocks, say)
    /// has been read.
    pub fn ended(&self) -> bool {
        self.ended
    }

    /// Warnings so far (e.g. the file cut short inside a record).
    pub fn warnings(&self) -> &[ReadWarning] {
        &self.warnings
    }

    /// Bytes held by this reader's read buffer: 256 KiB, more only while a record larger than
    /// that has been met (never more than 256 MiB). Independent of the file size.
    pub fn buffer_len(&self) -> usize {
        self.buf.capacity()
    }

    /// Sets the input index recorded in the interface table (the merged reader's numbering).
    pub(crate) fn set_input(&mut self, input: usize) {
        self.input = input;
        for i in &mut self.interfaces {
            i.input = input;
        }
    }

    /// The frame at `raw`; valid until the next `advance`.
    #[inline(always)]
    pub(crate) fn frame(&self, raw: &RawFrame) -> Frame<'_> {
        Frame {
            data: self.buf.bytes().get(raw.start..raw.start + raw.len as usize).unwrap_or_default(),
            wire_len: raw.wire_len,
            ts_ns: raw.ts_ns,
            ts_source: raw.ts_source,
            link: raw.link,
            interface: raw.interface,
            direction: raw.direction,
            fcs_len: raw.fcs_len,
            quality: raw.quality,
        }
    }

    /// Moves to the next frame and returns where it lies in the buffer.
    #[inline(always)]
    pub(crate) fn advance(&mut self) -> Result<Option<RawFrame>, ReadError> {
        // Read and counted already; its bytes are still where they were.
        if let Some(raw) = self.declined.take() {
            return Ok(Some(raw));
        }
        match self.fast() {
            Some(raw) => Ok(Some(raw)),
            None => self.advance_slow(),
        }
    }

    /// The hot path of plain pcap records, pcapng EPBs and ERF records, without the general step
    /// machinery (returning its larger step/error types through every layer halved the speed).
    /// `None`: anything unusual, or the end; the general path decides and reports.
    #[inline(always)]
    fn fast(&mut self) -> Option<RawFrame> {
        let raw = self.fast_raw()?;
        self.count_hot(1);
        Some(raw)
    }

    /// [`CaptureReader::fast`] without its counts (the caller's).
    #[inline(always)]
    fn fast_raw(&mut self) -> Option<RawFrame> {
        if self.done {
            return None;
        }
        match &self.parser {
            Parser::Pcap(p) => p.fast(&mut self.buf),
            Parser::Pcapng(p) => p.fast(&mut self.buf),
            Parser::Erf(p) => p.fast(&mut self.buf),
        }
    }

    /// The general path: headers, skipped blocks, refills, the end and errors.
    #[inline(never)]
    fn advance_slow(&mut self) -> Result<Option<RawFrame>, ReadError> {
        if self.done {
            return Ok(None);
        }
        loop {
            let step = match &mut self.parser {
                Parser::Pcap(p) => p.next(&mut self.buf, &mut self.stats, &mut self.interfaces),
                Parser::Pcapng(p) => p.next(&mut self.buf, &mut self.interfaces, &mut self.stats, self.input),
                Parser::Erf(p) => p.next(&mut self.buf, &mut self.interfaces, self.input),
            };
            match step {
                Ok(Step::Frame(f)) => {
                    self.stats.frames += 1;
                    self.stats.records += 1;
                    self.stats.bytes = self.buf.offset();
                    return Ok(Some(f));
                }
                Ok(Step::Skipped(kind)) => {
                    self.stats.records += 1;
                    *self.stats.skipped.entry(kind).or_default() += 1;
                }
                Ok(Step::Header) => self.stats.records += 1,
                // The decoded stream of a compressed file cut short ends where the decoder stopped,
                // at a record's end or inside one: the cut is what to report.
                Ok(Step::Eof) => {
                    let cut = self.compressed_cut();
                    self.ended = true;
                    return Ok(self.finish(cut));
                }
                Ok(Step::Cut { needed, have }) => {
                    let w = self.compressed_cut().unwrap_or(WarningKind::Truncated { needed, have });
                    self.ended = true;
                    return Ok(self.finish(Some(w)));
                }
                // Nothing to read yet, nothing consumed (every parser reads a record whole before
                // taking it): the caller may come back.
                Err(ReadErrorKind::Io(e)) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(self.error(ReadErrorKind::Io(e)));
                }
                Err(kind) => {
                    self.finish(None);
                    return Err(self.error(kind));
                }
            }
        }
    }

    /// The error `kind` at the read position.
    fn error(&self, kind: ReadErrorKind) -> ReadError {
        ReadError {
            path: self.name.clone(),
            offset: self.buf.offset(),
            frame_index: self.stats.records,
            packets: self.stats.frames,
            compressed: self.format.compression != Compression::None,
            kind,
        }
    }

    /// The warning for a compressed stream cut short, if it was.
    fn compressed_cut(&self) -> Option<WarningKind> {
        let cut = decompress::lock(self.ending.as_ref()?).cut_of(self.format.compression)?;
        Some(WarningKind::CompressedStreamCut(cut))
    }

    #[cold]
    fn finish(&mut self, warning: Option<WarningKind>) -> Option<RawFrame> {
        self.done = true;
        let compressed = self.format.compression != Compression::None;
        self.stats.bytes = self.buf.offset();
        if let Some(kind) = warning {
            let (offset, frame_index, packets) = (self.buf.offset(), self.stats.records, self.stats.frames);
            self.warnings.push(ReadWarning { offset, frame_index, packets, compressed, kind });
        }
        let ignored = self.ending.as_ref().map_or(0, |e| decompress::lock(e).trailing);
        if ignored > 0 {
            let kind = WarningKind::TrailingData { bytes: ignored, compression: self.format.compression };
            let (offset, frame_index, packets) = (self.buf.offset(), self.stats.records, self.stats.frames);
            self.warnings.push(ReadWarning { offset, frame_index, packets, compressed, kind });
        }
        None
    }
}

/// Recognises the container from the first bytes in `buf` and reads its file header.
///
/// A stream that has nothing yet (a read failing with `WouldBlock`: [`crate::live::PolledStdin`] and
/// `-`'s standard input say so after 100 ms without bytes while the stream is opened) is waited for,
/// but for ERF, which has no header: its records are judged as soon as enough of them came to tell, or
/// on what came once the stream pauses (a live relay's records need not fill the 64 KiB a file's
/// judgement may read).
fn open_container(buf: &mut ChunkBuffer) -> Result<(Parser, Container, Vec<Interface>), ReadErrorKind> {
    fill_waiting(buf, 4)?;
    let Some(&magic) = buf.avail().first_chunk::<4>() else {
        return Err(ReadErrorKind::TooShort(buf.avail().len()));
    };
    let mut interfaces = Vec::new();
    let (parser, container) = if let Some(m) = PcapMagic::detect(magic) {
        fill_waiting(buf, crate::pcap::FILE_HEADER_LEN)?;
        let (p, iface) = PcapParser::open(buf, m)?;
        interfaces.push(iface);
        (Parser::Pcap(p), Container::Pcap { nanos: m.nanos, byte_order: m.byte_order, modified: m.modified })
    } else if magic == [0x0a, 0x0d, 0x0d, 0x0a] {
        fill_waiting(buf, 16)?;
        crate::pcapng::check_first_section(buf.avail())?;
        (Parser::Pcapng(PcapngParser::new()), Container::Pcapng)
    } else {
        // ERF has no file header: look at the first records (a short file is fine; a FIFO
        // only blocks here for non-pcap content).
        let head = judge_erf_records(buf)?;
        if !erf::judge_erf(head).0 {
            return Err(ReadErrorKind::UnknownFormat(head[..head.len().min(8)].to_vec()));
        }
        (Parser::Erf(ErfParser::new()), Container::Erf)
    };
    Ok((parser, container, interfaces))
}

/// [`ChunkBuffer::fill`], waiting out reads that find nothing yet.
fn fill_waiting(buf: &mut ChunkBuffer, n: usize) -> io::Result<bool> {
    loop {
        match buf.fill(n) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            r => return r,
        }
    }
}

/// The first bytes of a stream to judge as ERF records: up to 64 KiB, fewer once the judgement is
/// final (`erf::judge_erf`), or once the stream pauses (a read finds nothing) after records that look
/// like ERF came (a pause says nothing against ERF: a record not yet whole is waited for, as in a file).
fn judge_erf_records(buf: &mut ChunkBuffer) -> io::Result<&[u8]> {
    const ENOUGH: usize = 1 << 16;
    loop {
        let have = buf.avail().len();
        let (looks, fin) = erf::judge_erf(buf.avail());
        if have >= ENOUGH || fin {
            break;
        }
        match buf.fill(have + 1) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && looks => break,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(buf.avail())
}
