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
    /// What was wrong.
    pub kind: ReadErrorKind,
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            // Nothing was read: no place in the file to name.
            ReadErrorKind::Open(e) => write!(f, "{}: cannot open it: {e}", self.path),
            ReadErrorKind::Directory => write!(f, "{}: {}", self.path, self.kind),
            kind => write!(f, "{}: {}: {kind}", self.path, place(self.offset, self.frame_index, self.packets)),
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
    Io(#[from] std::io::Error),
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
    /// What happened.
    pub kind: WarningKind,
}

/// Where in a file: its byte, the records before (pcapng counts its header and interface blocks
/// too) and the packets before (what tshark numbers).
fn place(offset: u64, records: u64, packets: u64) -> String {
    let s = if packets == 1 { "" } else { "s" };
    format!("at byte {offset} (record {records}, after {packets} packet{s})")
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
    /// The compressed stream ended early (gzip/zstd said "unexpected end of file").
    CompressedStreamCut,
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
    /// Bytes missing at the cut (0 when unknown, e.g. a cut compressed stream).
    pub fn missing(&self) -> u64 {
        match self.kind {
            WarningKind::Truncated { needed, have } => needed.saturating_sub(have),
            WarningKind::CompressedStreamCut | WarningKind::TrailingData { .. } => 0,
        }
    }
}

impl fmt::Display for ReadWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            WarningKind::Truncated { needed, have } => write!(
                f,
                "{}: file cut short inside a record: {} of {} bytes present, {} missing",
                place(self.offset, self.frame_index, self.packets),
                have,
                needed,
                needed.saturating_sub(have)
            ),
            WarningKind::CompressedStreamCut => write!(
                f,
                "{}: compressed stream ends early (file cut short)",
                place(self.offset, self.frame_index, self.packets)
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
                    place(self.offset, self.frame_index, self.packets),
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
