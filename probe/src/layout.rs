//! The shared-memory segment, layout version 1: the ONE place its shape is defined.
//!
//! A session is one file in `/dev/shm` (POSIX shm), mapped `MAP_SHARED` by the trading app (writer) and
//! by the daemon (reader). All fields are native-endian (x86-64: little-endian) and naturally aligned.
//!
//! ```text
//! offset 0       SegmentHeader            (HEADER_BLOCK = 4096 bytes, fields below, rest zero)
//! 4096           NameEntry × MAX_NAMES    (64 bytes each: names of points and stages the app published)
//! rings_offset   ring 0: RingHeader (192) + capacity × Record (24), padded to 64
//!                ring 1 ... ring max_threads-1, each ring_stride bytes apart
//!
//! SegmentHeader
//!   0  magic u64 "WSPROBE\0"  (stored last, with release, when the segment is complete)
//!   8  version u32           12 header_size u32
//!  16  segment_size u64      24 max_threads u32     28 ring_capacity u32 (records, power of two)
//!  32  record_size u32       36 ring_header_size u32
//!  40  names_offset u64      48 max_names u32       52 name_entry_size u32
//!  56  rings_offset u64      64 ring_stride u64
//!  72  creator_pid u32       76 (pad)               80 created_realtime_ns i64
//!  88  app_pid u32           92 (pad)               96 app_start_realtime_ns i64
//! 104  app_start_tsc u64    112 no_slot_drops u64  (stamps dropped because no ring slot was free)
//!
//! RingHeader (three cache lines, so the producer, the slot owner fields and the reader never share one)
//!   line 0: head u64            records ever published on this ring (release store by its one producer)
//!   line 1: state u64           generation << 32 | FREE/CLAIMING/ACTIVE; pid u32; tid u32; claimed_ns i64
//!   line 2: consumed u64        first record the reader has not yet processed (resume point after restart)
//!
//! Record (24 bytes; record i lives at slot i & (capacity - 1))
//!   0  word0 u64   raw TSC (begin/step/end), the value (value), the order key (link)
//!   8  key   u64   64-bit correlation key (begin/step/end), the tick key (link)
//!  16  meta  u64   point u16 | stage u8 << 16 | kind u8 << 24 | (i as u32) << 32   (the commit word, stored last)
//! ```
//!
//! A record is valid for index `i` only if `i < head` and its commit word carries `i as u32`; anything else
//! is a record overwritten, half-written by a producer that died, or garbage, and is counted, never used.

use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64};

/// `b"WSPROBE\0"` read as a little-endian u64.
pub const MAGIC: u64 = u64::from_le_bytes(*b"WSPROBE\0");
/// Layout version; a reader refuses any other.
pub const LAYOUT_VERSION: u32 = 1;
/// Bytes reserved for the segment header.
pub const HEADER_BLOCK: usize = 4096;
/// Name-table entries.
pub const MAX_NAMES: usize = 256;
/// Bytes of one name-table entry.
pub const NAME_ENTRY_SIZE: usize = 64;
/// Longest name, in bytes (UTF-8).
pub const NAME_MAX_LEN: usize = 48;
/// Offset of the name table.
pub const NAMES_OFFSET: usize = HEADER_BLOCK;
/// Offset of ring 0.
pub const RINGS_OFFSET: usize = NAMES_OFFSET + MAX_NAMES * NAME_ENTRY_SIZE;
/// Bytes of a ring header.
pub const RING_HEADER_SIZE: usize = 192;
/// Bytes of one record.
pub const RECORD_SIZE: usize = 24;
/// Most rings (producer threads) a segment may have.
pub const MAX_THREADS_LIMIT: u32 = 4096;
/// Largest ring, in records.
pub const MAX_CAPACITY: u32 = 1 << 28;
/// Largest segment the reader accepts (64 GiB), so a corrupted header cannot make it map the world.
pub const MAX_SEGMENT_SIZE: u64 = 64 << 30;

/// Record kinds (meta bits 24..32).
pub mod kind {
    /// Span start.
    pub const BEGIN: u8 = 1;
    /// Span stage boundary.
    pub const STEP: u8 = 2;
    /// Span end.
    pub const END: u8 = 3;
    /// A number that is a measurement in itself.
    pub const VALUE: u8 = 4;
    /// Order key triggered by tick key.
    pub const LINK: u8 = 5;
}

/// Stage id of a `begin` record.
pub const BEGIN_STAGE: u8 = 0;
/// Stage id of an `end` record: the last stage of a span is reported under it.
pub const END_STAGE: u8 = 255;

/// Slot states (low 32 bits of `RingHeader::state`).
pub mod slot {
    /// Nobody owns the ring; a thread may claim it.
    pub const FREE: u32 = 0;
    /// A thread is filling in its identity.
    pub const CLAIMING: u32 = 1;
    /// Owned by the thread in `pid`/`tid`.
    pub const ACTIVE: u32 = 2;
}

/// Name-entry states.
pub mod name_state {
    /// Unused.
    pub const EMPTY: u32 = 0;
    /// Being written by its claimer.
    pub const WRITING: u32 = 1;
    /// Complete.
    pub const READY: u32 = 2;
}

/// Name-entry kinds.
pub mod name_kind {
    /// Names a point (stage field unused).
    pub const POINT: u8 = 1;
    /// Names a stage of a point.
    pub const STAGE: u8 = 2;
}

/// Segment header (fields written once at creation are atomics too, so a reader mapping garbage reads
/// plain integers and nothing else).
#[repr(C)]
pub struct SegmentHeader {
    pub magic: AtomicU64,
    pub version: AtomicU32,
    pub header_size: AtomicU32,
    pub segment_size: AtomicU64,
    pub max_threads: AtomicU32,
    pub ring_capacity: AtomicU32,
    pub record_size: AtomicU32,
    pub ring_header_size: AtomicU32,
    pub names_offset: AtomicU64,
    pub max_names: AtomicU32,
    pub name_entry_size: AtomicU32,
    pub rings_offset: AtomicU64,
    pub ring_stride: AtomicU64,
    pub creator_pid: AtomicU32,
    pub _pad0: AtomicU32,
    pub created_realtime_ns: AtomicI64,
    pub app_pid: AtomicU32,
    pub _pad1: AtomicU32,
    pub app_start_realtime_ns: AtomicI64,
    pub app_start_tsc: AtomicU64,
    pub no_slot_drops: AtomicU64,
}

/// One name-table entry.
#[repr(C)]
pub struct NameEntry {
    pub state: AtomicU32,
    /// point u16 | stage u8 << 16 | kind u8 << 24
    pub id: AtomicU32,
    /// Name length in bytes, then the UTF-8 bytes (not NUL-terminated), packed little-endian into words.
    pub len: AtomicU32,
    pub _pad: AtomicU32,
    pub text: [AtomicU64; 6],
}

/// Per-ring header.
#[repr(C, align(64))]
pub struct RingHeader {
    pub head: AtomicU64,
    pub _p0: [u64; 7],
    pub state: AtomicU64,
    pub pid: AtomicU32,
    pub tid: AtomicU32,
    pub claimed_realtime_ns: AtomicI64,
    pub _p1: [u64; 5],
    pub consumed: AtomicU64,
    pub _p2: [u64; 7],
}

/// One record.
#[repr(C)]
pub struct Record {
    pub word0: AtomicU64,
    pub key: AtomicU64,
    pub meta: AtomicU64,
}

const _: () = assert!(size_of::<SegmentHeader>() == 120);
const _: () = assert!(size_of::<SegmentHeader>() <= HEADER_BLOCK);
const _: () = assert!(size_of::<NameEntry>() == NAME_ENTRY_SIZE);
const _: () = assert!(size_of::<RingHeader>() == RING_HEADER_SIZE);
const _: () = assert!(size_of::<Record>() == RECORD_SIZE);
const _: () = assert!(std::mem::offset_of!(SegmentHeader, no_slot_drops) == 112);
const _: () = assert!(std::mem::offset_of!(RingHeader, state) == 64);
const _: () = assert!(std::mem::offset_of!(RingHeader, consumed) == 128);
const _: () = assert!(NAME_MAX_LEN == 6 * 8);

/// Packs a record's commit word.
#[inline(always)]
pub const fn meta(point: u16, stage: u8, kind: u8, index: u64) -> u64 {
    (point as u64) | ((stage as u64) << 16) | ((kind as u64) << 24) | ((index as u32 as u64) << 32)
}

/// The low half of a commit word (everything but the index).
#[inline(always)]
pub const fn meta_lo(point: u16, stage: u8, kind: u8) -> u64 {
    (point as u64) | ((stage as u64) << 16) | ((kind as u64) << 24)
}

/// Fields of a commit word: (point, stage, kind, index low 32 bits).
#[inline(always)]
pub const fn unpack_meta(m: u64) -> (u16, u8, u8, u32) {
    (m as u16, (m >> 16) as u8, (m >> 24) as u8, (m >> 32) as u32)
}

/// Packs a slot state word.
#[inline(always)]
pub const fn slot_word(generation: u32, state: u32) -> u64 {
    ((generation as u64) << 32) | state as u64
}

/// Segment geometry: everything derived from (max_threads, ring_capacity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    pub max_threads: u32,
    pub ring_capacity: u32,
}

impl Geometry {
    /// Bytes from one ring header to the next.
    pub const fn ring_stride(&self) -> u64 {
        let raw = RING_HEADER_SIZE as u64 + self.ring_capacity as u64 * RECORD_SIZE as u64;
        raw.div_ceil(64) * 64
    }

    /// Total segment bytes.
    pub const fn segment_size(&self) -> u64 {
        RINGS_OFFSET as u64 + self.max_threads as u64 * self.ring_stride()
    }

    /// Whether these numbers are within the layout's limits.
    pub fn check(&self) -> Result<(), String> {
        if self.max_threads == 0 || self.max_threads > MAX_THREADS_LIMIT {
            return Err(format!("max_threads {} is outside 1..={MAX_THREADS_LIMIT}", self.max_threads));
        }
        if !self.ring_capacity.is_power_of_two() || self.ring_capacity < 2 || self.ring_capacity > MAX_CAPACITY {
            return Err(format!("ring_capacity {} is not a power of two in 2..={MAX_CAPACITY}", self.ring_capacity));
        }
        if self.segment_size() > MAX_SEGMENT_SIZE {
            return Err(format!("segment of {} bytes exceeds {MAX_SEGMENT_SIZE}", self.segment_size()));
        }
        Ok(())
    }
}

impl Default for Geometry {
    /// 32 threads × 65536 records (1.5 MiB each; tmpfs only backs the pages a ring has touched).
    fn default() -> Self {
        Geometry { max_threads: 32, ring_capacity: 1 << 16 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_round_trip_and_bit_positions() {
        // point 0x1234, stage 0x56, kind 3 (END), index 0x1_0000_0007 -> low 32 bits 7.
        let m = meta(0x1234, 0x56, kind::END, 0x1_0000_0007);
        assert_eq!(m, 0x0000_0007_0356_1234);
        assert_eq!(unpack_meta(m), (0x1234, 0x56, 3, 7));
        assert_eq!(meta_lo(0x1234, 0x56, 3) | (7 << 32), m);
    }

    #[test]
    fn geometry_sizes() {
        // 2 threads x 4 records: stride = 192 + 96 = 288 -> padded to 320.
        let g = Geometry { max_threads: 2, ring_capacity: 4 };
        assert_eq!(g.ring_stride(), 320);
        assert_eq!(g.segment_size(), 4096 + 256 * 64 + 2 * 320);
        assert!(g.check().is_ok());
        assert!(Geometry { max_threads: 2, ring_capacity: 6 }.check().is_err());
        assert!(Geometry { max_threads: 0, ring_capacity: 4 }.check().is_err());
        assert_eq!(MAGIC.to_le_bytes(), *b"WSPROBE\0");
    }
}
