//! Test helpers: unique session names removed on drop (also when a test fails), raw byte edits.
#![allow(dead_code)]

use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU32, Ordering};

use wirestamp_probe::layout::{RECORD_SIZE, RING_HEADER_SIZE, RINGS_OFFSET};
use wirestamp_probe::{CreateOptions, Geometry};

static N: AtomicU32 = AtomicU32::new(0);

/// A session segment name unique to this process and call; the segment is unlinked on drop.
pub struct Session(pub String);

impl Session {
    pub fn new(tag: &str) -> Self {
        let n = N.fetch_add(1, Ordering::Relaxed);
        let name = format!("wsp-test-{}-{tag}-{n}", std::process::id());
        let _ = wirestamp_probe::shm::unlink(&name);
        Session(name)
    }

    pub fn create(tag: &str, max_threads: u32, ring_capacity: u32) -> (Self, wirestamp_probe::shm::Mapping) {
        let s = Self::new(tag);
        let opts = CreateOptions { geometry: Geometry { max_threads, ring_capacity }, ..Default::default() };
        let m = wirestamp_probe::shm::create(&s.0, &opts).expect("create segment");
        (s, m)
    }

    pub fn path(&self) -> std::path::PathBuf {
        wirestamp_probe::shm::segment_path(&self.0)
    }

    /// Writes bytes at `offset` of the segment file (the way garbage would get there).
    pub fn poke(&self, offset: u64, bytes: &[u8]) {
        let f = std::fs::OpenOptions::new().write(true).open(self.path()).expect("open segment file");
        f.write_all_at(bytes, offset).expect("write segment file");
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = wirestamp_probe::shm::unlink(&self.0);
    }
}

/// Byte offset of ring `ring`'s header, computed from the documented layout (not from the crate's helpers).
pub fn ring_offset(g: Geometry, ring: u32) -> u64 {
    let stride = (RING_HEADER_SIZE as u64 + g.ring_capacity as u64 * RECORD_SIZE as u64).div_ceil(64) * 64;
    RINGS_OFFSET as u64 + ring as u64 * stride
}

/// Byte offset of record slot `slot` of ring `ring`.
pub fn record_offset(g: Geometry, ring: u32, slot: u64) -> u64 {
    ring_offset(g, ring) + RING_HEADER_SIZE as u64 + slot * RECORD_SIZE as u64
}
