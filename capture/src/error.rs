//! Errors and warnings of the capture-file readers.
//!
//! An error ends one input: every good frame before it has already been returned. A file cut short
//! in the middle of a record is not an error but a [`ReadWarning`]: real captures are often copied
//! while still being written, and the frames before the cut are fine.

use crate::Compression;
use std::fmt;

/// A malformed or unreadable input, with where it went wrong.
#[derive(Debug, thiserror::Error)]
pub struct ReadError {
    /// The input's name (its path, or the name given to `from_reader`).
    pub path: String,
    /// Byte offset of the bad record/block in the (decompressed) stream.
    pub offset: u64,
    /// Number of records (frames and skipped records/blocks) read before it.
    pub frame_index: u64,
    /// Number of packets (frames) read before it: tshark numbers the next one `packets + 1`.
    pub packets: u64,
    /// The input is gzip or zstd: `offset` counts its decompressed bytes (and messages say so).
    pub compressed: bool,
    /// What was wrong.
    pub kind: ReadErrorKind,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            // Nothing was read: no place in the file to name.
            ReadErrorKind::Open(e) => write!(f, "{}: cannot open it: {e}", self.path),
            ReadErrorKind::Directory => write!(f, "{}: {}", self.path, self.kind),
            // Its own words name it, and there is no place in it.
            ReadErrorKind::EmptyStdin => write!(f, "{}", self.kind),
            kind => {
                let at = place(self.offset, self.frame_index, self.packets, self.compressed);
                write!(f, "{}: {at}: {kind}", self.path)
            }
        }
    }
}

impl ReadError {
    /// The stream had nothing to read yet (its read failed with `WouldBlock`): not an error of the
    /// input, whose reader is where it was; read on ([`crate::CaptureReader::from_reader`]).
    pub fn would_block(&self) -> bool {
        matches!(&self.kind, ReadErrorKind::Io(e) if e.kind() == std::io::ErrorKind::WouldBlock)
    }
}

/// The payload of an `io::Error` by which a stream's read says it was asked to stop: to the reader,
/// [`ReadErrorKind::StoppedBeforeHeader`] while it opens the stream, [`ReadErrorKind::Stopped`] after.
/// (Not `Interrupted`, which the reader retries.)
#[derive(Debug, thiserror::Error)]
#[error("the stream's reader was asked to stop")]
pub struct Stopped;

impl From<std::io::Error> for ReadErrorKind {
    fn from(e: std::io::Error) -> ReadErrorKind {
        match e.get_ref() {
            Some(inner) if inner.is::<Stopped>() => ReadErrorKind::Stopped,
            _ => ReadErrorKind::Io(e),
        }
    }
}

/// What was wrong with an input.
#[derive(Debug, thiserror::Error)]
pub enum ReadErrorKind {
    /// The file could not be opened.
    #[error("cannot open it: {0}")]
    Open(std::io::Error),
    /// The path names a directory.
    #[error("is a directory: give the capture files in it (DIR/*.pcap)")]
    Directory,
    /// The OS or the decompressor failed.
    #[error("read failed: {0}")]
    Io(#[source] std::io::Error),
    /// The stream was stopped while the reader waited for its header: a read failed with [`Stopped`]
    /// ([`crate::live::PolledStdin`] once its stop flag is set). Nothing of the stream was read.
    #[error("stopped before the stream's header (no frame read)")]
    StoppedBeforeHeader,
    /// The stream was stopped after it was opened: a read failed with [`Stopped`]
    /// ([`crate::live::PolledStdin`] once its stop flag is set, when a wait for bytes ends without
    /// any). The error's place says where the stream was.
    #[error("stopped as asked (the stream's reader was told to stop)")]
    Stopped,
    /// Standard input ended before any byte ([`crate::CaptureReader::from_stdin`]): nothing was
    /// written to it, which for a file is [`ReadErrorKind::TooShort`].
    #[error("standard input ended before any byte (nothing to read; was the producer started?)")]
    EmptyStdin,
    /// The file is empty or too short to hold any known header.
    #[error("file too short to identify ({0} bytes): not a pcap, pcapng or ERF capture")]
    TooShort(usize),
    /// The first bytes match no known capture format.
    #[error(
        "unknown file format (first bytes, hex: {}): expected pcap (a1b2c3d4/a1b23c4d/a1b2cd34), \
         pcapng (0a0d0d0a) or ERF records, optionally gzip/zstd compressed", hex(.0)
    )]
    UnknownFormat(Vec<u8>),
    /// The file header is cut short.
    #[error("file header cut short: {needed} bytes needed, {have} present")]
    HeaderTruncated {
        /// Header size.
        needed: usize,
        /// Bytes present.
        have: usize,
    },
    /// A pcap file header with a version this reader does not know.
    #[error("unsupported pcap version {major}.{minor} (expected 2.2 to 2.4)")]
    PcapVersion {
        /// Major version.
        major: u16,
        /// Minor version.
        minor: u16,
    },
    /// A pcap file header field is invalid.
    #[error("bad pcap file header: {0}")]
    BadHeader(String),
    /// A pcapng section header with a version this reader does not know.
    #[error("unsupported pcapng section version {major}.{minor} (expected 1.0 or 1.2)")]
    PcapngVersion {
        /// Major version.
        major: u16,
        /// Minor version.
        minor: u16,
    },
    /// A record or block declares a length beyond the reader's bound.
    #[error("{what} length {len} exceeds the maximum of {max} bytes (corrupt length field?)")]
    TooLarge {
        /// Which length.
        what: &'static str,
        /// Declared length.
        len: u64,
        /// The reader's bound.
        max: u64,
    },
    /// A pcapng block is malformed.
    #[error("malformed pcapng {block} block: {what}")]
    BadBlock {
        /// Block name.
        block: &'static str,
        /// What is wrong.
        what: String,
    },
    /// An ERF record is malformed.
    #[error("malformed ERF record: {0}")]
    BadErf(String),
    /// The compressed stream is cut short before what it decoded could begin a capture (a zstd
    /// stream cut inside its first block, a gzip stream inside its first deflate block).
    #[error("compressed stream ends early (file cut short){}: {}", .cut, before_capture(*.decoded, .why))]
    CutBeforeCapture {
        /// What the stream lost, or where it was cut.
        cut: CompressedCut,
        /// Bytes decoded.
        decoded: u64,
        /// Why they could not be read (too few to identify or hold the capture's header).
        why: Box<ReadErrorKind>,
    },
}

/// The end of [`ReadErrorKind::CutBeforeCapture`]'s message.
fn before_capture(decoded: u64, why: &ReadErrorKind) -> String {
    if decoded == 0 {
        "nothing of the capture was decoded".to_owned()
    } else {
        format!("the {decoded} bytes decoded cannot be read: {why}")
    }
}

/// What a compressed stream cut short lost, or where it was cut: one of its compression's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompressedCut {
    /// What a zstd stream lost.
    Zstd(ZstdCut),
    /// Where a gzip stream was cut (its decoder yields what it can as it goes).
    Gzip(GzipCut),
    /// Not known (a zstd stream whose frames could not be followed to the cut).
    Unknown,
}

/// ": " and what the stream lost, or nothing (not known).
impl fmt::Display for CompressedCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompressedCut::Zstd(z) => write!(f, ": {z}"),
            CompressedCut::Gzip(g) => write!(f, ": {g}"),
            CompressedCut::Unknown => Ok(()),
        }
    }
}

/// Where a gzip stream was cut (RFC 1952: members of a header, a deflate stream and an 8-byte trailer
/// holding the member's CRC-32 and size). Deflate is decoded as its bits arrive, so the decoder takes
/// every compressed byte present (only a last incomplete code yields nothing); bytes it did not take
/// are the start of a member cut inside its magic. The member's size is in the trailer, cut off with
/// its end: how much of the capture is missing is unknown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GzipCut {
    /// Where the cut member begins in the compressed file.
    pub member_start: u64,
    /// Compressed bytes of the cut member present in the file (to the file's end).
    pub present: u64,
    /// Of them, the last ones the decoder could not take (the start of a member cut inside its
    /// magic; 0 when the cut falls inside a member's header, deflate stream or trailer).
    pub undecoded: u64,
    /// Bytes the cut member decoded.
    pub decoded: u64,
}

impl fmt::Display for GzipCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (start, present, decoded) = (self.member_start, self.present, self.decoded);
        match self.undecoded {
            0 => write!(
                f,
                "the decoder took all of the gzip stream present (deflate is decoded as it arrives, all but a last \
                 incomplete code or block header): the cut member's {present} compressed bytes, from byte {start} of \
                 the file, gave {decoded} bytes"
            )?,
            n => write!(
                f,
                "the last {n} bytes, the start of a gzip member (from byte {start} of the file) cut inside its \
                 magic, could not be decoded"
            )?,
        }
        write!(
            f,
            "; the member's size, in the trailer at its end, is cut off: how much of the capture is missing is unknown"
        )
    }
}

/// Where a zstd stream was cut, and what could not be decoded: a compressed block is decoded only
/// once whole (its sequences are read from its end), so a cut inside one loses all of it; a block
/// stored as is is decoded up to the cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZstdCut {
    /// The compressed bytes at the end that could not be decoded (0: the cut fell between two
    /// blocks, or inside a block stored as is).
    pub undecoded: u64,
    /// What those bytes begin.
    pub part: ZstdPart,
    /// The cut frame's content size, when its header gives it (`zstd FILE` writes it).
    pub content_size: Option<u64>,
    /// Bytes the cut frame decoded.
    pub decoded: u64,
}

impl ZstdCut {
    /// Decoded bytes of the cut frame that are missing, when its header gives its size.
    pub fn missing(&self) -> Option<u64> {
        self.content_size.map(|size| size.saturating_sub(self.decoded))
    }
}

/// Parts of a zstd frame (RFC 8878 §3.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZstdPart {
    /// The frame header.
    FrameHeader,
    /// A block (header and content).
    Block,
    /// The content checksum after the last block.
    Checksum,
    /// A skippable frame (no capture data).
    SkippableFrame,
}

impl fmt::Display for ZstdCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.undecoded;
        match self.part {
            ZstdPart::Checksum => {
                write!(f, "all of the zstd frame's data was decoded, its checksum is cut ({n} of 4 bytes present)")?
            }
            _ if n == 0 => write!(f, "all of the zstd stream present was decoded")?,
            ZstdPart::Block => write!(
                f,
                "the last {n} compressed bytes, an incomplete zstd block, could not be decoded (a compressed block is \
                 decoded only whole)"
            )?,
            ZstdPart::FrameHeader => {
                write!(f, "the last {n} compressed bytes, an incomplete zstd frame header, could not be decoded")?
            }
            ZstdPart::SkippableFrame => {
                write!(f, "the last {n} compressed bytes, part of a skippable frame (no capture data), were ignored")?
            }
        }
        match (self.missing(), self.content_size) {
            (Some(lost), Some(size)) if lost > 0 => {
                write!(f, "; {lost} of the frame's {size} decoded bytes are missing")
            }
            _ => Ok(()),
        }
    }
}

/// Something odd that did not stop reading.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadWarning {
    /// Byte offset in the (decompressed) stream.
    pub offset: u64,
    /// Number of records read before it.
    pub frame_index: u64,
    /// Number of packets (frames) read before it.
    pub packets: u64,
    /// The input is gzip or zstd: `offset` counts its decompressed bytes (and messages say so).
    pub compressed: bool,
    /// What happened.
    pub kind: WarningKind,
}

/// Where in a file: its byte, the records before (pcapng counts its header and interface blocks
/// too) and the packets before (what tshark numbers). The byte of a gzip or zstd input (`compressed`)
/// is one of its decompressed stream, and said to be: the compressed file's bytes are named as such.
fn place(offset: u64, records: u64, packets: u64, compressed: bool) -> String {
    let s = if packets == 1 { "" } else { "s" };
    let byte = if compressed { "decompressed byte" } else { "byte" };
    format!("at {byte} {offset} (record {records}, after {packets} packet{s})")
}

/// Kinds of [`ReadWarning`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WarningKind {
    /// The file ends inside a record: `have` of its `needed` bytes are present (`needed` counts the
    /// header; when the header itself is cut, only the header size is known).
    Truncated {
        /// Bytes the record needs (at least).
        needed: u64,
        /// Bytes present.
        have: u64,
    },
    /// The compressed stream ended early (gzip/zstd said "unexpected end of file"): the decoded
    /// bytes are read as if the file ended where they end.
    CompressedStreamCut(CompressedCut),
    /// `bytes` after the end of the compressed stream that do not begin another member or frame
    /// (garbage, zero padding): ignored, as `gzip -d` ignores them.
    TrailingData {
        /// Bytes ignored.
        bytes: u64,
        /// The stream's compression.
        compression: Compression,
    },
}

impl ReadWarning {
    /// Bytes missing at the cut (0 when unknown, e.g. a cut gzip stream): of the cut record, or of
    /// the cut zstd frame's decoded content when its header gives its size.
    pub fn missing(&self) -> u64 {
        match self.kind {
            WarningKind::Truncated { needed, have } => needed.saturating_sub(have),
            WarningKind::CompressedStreamCut(CompressedCut::Zstd(z)) => z.missing().unwrap_or(0),
            WarningKind::CompressedStreamCut(_) => 0,
            WarningKind::TrailingData { .. } => 0,
        }
    }
}

impl ReadWarning {
    /// Whether the file was cut short: it ends inside a record, or its compressed stream ends early
    /// (bytes ignored after a whole stream are not a cut).
    pub fn is_cut(&self) -> bool {
        matches!(self.kind, WarningKind::Truncated { .. } | WarningKind::CompressedStreamCut(_))
    }
}

impl fmt::Display for ReadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            WarningKind::Truncated { needed, have } => write!(
                f,
                "{}: file cut short inside a record: {} of {} bytes present, {} missing",
                place(self.offset, self.frame_index, self.packets, self.compressed),
                have,
                needed,
                needed.saturating_sub(have)
            ),
            WarningKind::CompressedStreamCut(cut) => write!(
                f,
                "{}: compressed stream ends early (file cut short){cut}",
                place(self.offset, self.frame_index, self.packets, self.compressed),
            ),
            WarningKind::TrailingData { bytes, compression } => {
                let name = match compression {
                    Compression::Zstd => "zstd",
                    _ => "gzip",
                };
                write!(
                    f,
                    "after the {name} stream's end, {} of the capture: {bytes} bytes that are not {name}, \
                     ignored{}: the compressed stream before them ended whole",
                    place(self.offset, self.frame_index, self.packets, self.compressed),
                    if compression == Compression::Gzip { " (as gzip -d ignores them)" } else { "" }
                )
            }
        }
    }
}

/// Bytes as hex pairs with spaces (`74 68 69 73`): a list of numbers read as decimal.
fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" ")
}
