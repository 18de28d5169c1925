//! wirestamp-capture: sources of [`wirestamp_core::Frame`]s.
//!
//! Capture files are read by hand-rolled streaming parsers (no libpcap): bytes are `read()` into
//! one reusable buffer and frames are borrowed from it, so memory is constant in the file size.
//!
//! | module | holds |
//! |---|---|
//! | [`reader`] | [`CaptureReader`]: one file, format and compression detected from its content |
//! | [`merge`] | [`MergedReader`]: several files as one stream in timestamp order |
//! | `pcap` | classic pcap: µs/ns, both byte orders, modified (Kuznetzov), FCS bits, LINKTYPE_ERF |
//! | `pcapng` | pcapng: sections, interfaces, `if_tsresol` (10^-n and 2^-n), `if_tsoffset`, EPB/SPB/PB |
//! | `erf` | Endace ERF files and records (timestamp rounding as Wireshark) |
//! | [`decompress`] | gzip / zstd, recognised by magic bytes |
//! | [`interface`] | the interface table and exact timestamp-unit conversion |
//! | [`error`] | errors (what, which file, which byte) and warnings (file cut short) |
//! | [`mod@write`] | pcap (ns) and pcapng (ns, one IDB per interface) writers |
//! | `buffer` | the chunked read buffer (256 KiB: it stays in L2 between the kernel's copy and the parse; grows only for larger records, 256 MiB cap) |
//!
//! Timestamps are integer ns since the epoch, computed without floating point. A malformed
//! record is an error returned after every good frame before it; a file cut short inside a
//! record ends the stream with a [`ReadWarning`]. Nothing here panics on bad input.
//!
//! ```no_run
//! use wirestamp_capture::CaptureReader;
//! let mut r = CaptureReader::open(std::path::Path::new("trace.pcapng.zst"))?;
//! while let Some(f) = r.next_frame()? {
//!     println!("{} {} {}", f.ts_ns, f.interface, f.data.len());
//! }
//! # Ok::<(), wirestamp_capture::ReadError>(())
//! ```

mod buffer;
pub mod decompress;
mod erf;
pub mod error;
mod gzip;
pub mod interface;
pub mod live;
pub mod merge;
mod pcap;
mod pcapng;
mod raw;
pub mod reader;
pub mod write;

pub use decompress::Compression;
pub use erf::erf_ts_to_ns;
pub use error::{
    CompressedCut, GzipCut, ReadError, ReadErrorKind, ReadWarning, Stopped, WarningKind, ZstdCut, ZstdPart,
};
pub use interface::{ContainerKind, Interface, RecordedStats, TsResolution};
pub use live::Waits;
pub use merge::{MergeKey, MergedReader};
pub use pcap::ByteOrder;
pub use reader::{CaptureReader, Container, FileFormat, ReadStats, RunEnd, STDIN};
