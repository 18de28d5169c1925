//! Draining the thread rings: copy what was published, count what was lost, notice producers that died.
//!
//! Per ring the drainer keeps `tail`, the next record index it has not copied. With `head` the published
//! count and `cap` the ring size, records `[max(tail, head - cap), head)` are candidates; they are copied,
//! then the head is read again (`h2`): the producer may already be writing record `h2`, which overwrites
//! slot `h2 - cap`, so only records `>= h2 + 1 - cap` are kept. Everything skipped is added to `lost`, so
//! `delivered + lost + corrupt` equals the records the producer wrote, exactly.
//!
//! A kept record must carry its own index in its commit word; one that does not is counted as corrupt
//! and never delivered.

use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, Release};
use std::sync::atomic::fence;

use crate::error::Result;
use crate::layout::*;
use crate::shm::{self, Mapping};

/// One record as read from a ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRecord {
    /// Ring (slot) index.
    pub ring: u32,
    /// Index of the record in its ring (monotonic).
    pub index: u64,
    /// Raw TSC for begin/step/end, the value for value, the order key for link.
    pub word0: u64,
    /// Correlation key (begin/step/end), tick key (link).
    pub key: u64,
    pub point: u16,
    pub stage: u8,
    pub kind: u8,
}

/// Counters of the drain (session-wide).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainCounters {
    /// Records handed out.
    pub delivered: u64,
    /// Records overwritten before the reader got to them.
    pub lost: u64,
    /// Records whose commit word did not carry their index, or with an unknown kind (garbage, torn).
    pub corrupt_records: u64,
    /// Times a ring's head was found behind the reader's position (garbage or a reset segment).
    pub ring_resyncs: u64,
    /// Slots found with an invalid state word.
    pub bad_slot_states: u64,
    /// Producer threads found dead while still owning their ring (killed, crashed).
    pub producers_gone: u64,
    /// ...of which had written a complete record but not yet published it (it is recovered).
    pub died_mid_write: u64,
    /// Stamps the app dropped because no ring was free (from the segment header).
    pub no_slot_drops: u64,
}

#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    tail: u64,
    /// Slot state word when last checked, and the thread's start time seen then (pid reuse detection).
    slot_word: u64,
    start_time: Option<Option<u64>>,
}

/// Drains every ring of one session.
pub struct Drainer {
    map: Mapping,
    cursors: Vec<Cursor>,
    scratch: Vec<(u64, u64, u64)>,
    /// Session-wide counters.
    pub counters: DrainCounters,
    /// Most records copied from one ring per call (bounds the reader's latency and memory).
    pub batch: usize,
}

impl Drainer {
    /// Opens `session` and resumes every ring where the previous reader stopped (its `consumed`).
    pub fn open(session: &str) -> Result<Self> {
        Ok(Self::from_mapping(shm::open(session)?))
    }

    /// Wraps an already open mapping.
    pub fn from_mapping(map: Mapping) -> Self {
        let g = map.geometry();
        let cursors = (0..g.max_threads)
            .map(|i| Cursor { tail: map.ring(i).consumed.load(Acquire), ..Default::default() })
            .collect();
        Drainer {
            scratch: Vec::with_capacity(g.ring_capacity as usize),
            batch: g.ring_capacity as usize,
            map,
            cursors,
            counters: DrainCounters::default(),
        }
    }

    /// The mapping.
    pub fn mapping(&self) -> &Mapping {
        &self.map
    }

    /// Number of rings.
    pub fn rings(&self) -> u32 {
        self.cursors.len() as u32
    }

    /// Next index the drainer will copy from `ring`.
    pub fn tail(&self, ring: u32) -> u64 {
        self.cursors[ring as usize].tail
    }

    /// Records that `ring`'s published head is ahead of what was drained.
    pub fn backlog(&self, ring: u32) -> u64 {
        self.map.ring(ring).head.load(Acquire).saturating_sub(self.cursors[ring as usize].tail)
    }

    /// Persists "every record of `ring` before `index` is processed", so a restarted reader resumes there.
    pub fn commit(&self, ring: u32, index: u64) {
        self.map.ring(ring).consumed.store(index, Release);
    }

    /// Copies what `ring` has published since the last call (at most `batch` records) into `out`.
    pub fn drain_ring(&mut self, ring: u32, out: &mut impl FnMut(RawRecord)) -> usize {
        let cap = self.map.geometry().ring_capacity as u64;
        let r = self.map.ring(ring);
        let records = self.map.records(ring);
        let cur = &mut self.cursors[ring as usize];
        let head = r.head.load(Acquire);
        // Behind the reader, or 2^48 records ahead of it (a year at 8 M/s): garbage, not stamps.
        if head < cur.tail || head - cur.tail > 1 << 48 {
            self.counters.ring_resyncs += 1;
            cur.tail = head;
            return 0;
        }
        if head == cur.tail {
            return 0;
        }
        let start = cur.tail.max(head.saturating_sub(cap));
        let end = head.min(start.saturating_add(self.batch as u64));
        self.scratch.clear();
        for i in start..end {
            // SAFETY: the slot index is masked into the ring, which lies inside the mapping.
            let rec = unsafe { &*records.add((i & (cap - 1)) as usize) };
            self.scratch.push((rec.word0.load(Relaxed), rec.key.load(Relaxed), rec.meta.load(Relaxed)));
        }
        // The copies above must complete before the head is re-read.
        fence(Acquire);
        let h2 = r.head.load(Relaxed);
        let first_valid = start.max(h2.saturating_add(1).saturating_sub(cap)).min(end);
        self.counters.lost = self.counters.lost.saturating_add(first_valid - cur.tail);
        let mut n = 0;
        for (k, &(word0, key, meta)) in self.scratch.iter().enumerate() {
            let index = start + k as u64;
            if index < first_valid {
                continue;
            }
            let (point, stage, kind, seq) = unpack_meta(meta);
            if seq != index as u32 || !(kind::BEGIN..=kind::LINK).contains(&kind) {
                self.counters.corrupt_records += 1;
                continue;
            }
            out(RawRecord { ring, index, word0, key, point, stage, kind });
            n += 1;
        }
        self.counters.delivered += n as u64;
        cur.tail = end;
        n
    }

    /// Drains every ring once.
    pub fn drain_all(&mut self, out: &mut impl FnMut(RawRecord)) -> usize {
        (0..self.rings()).map(|i| self.drain_ring(i, out)).sum()
    }

    /// Checks the owner of every claimed ring; a ring whose thread is gone gets its last complete but
    /// unpublished record recovered (delivered to `out`) and is freed for reuse. Call it every ~100 ms:
    /// it reads /proc.
    pub fn check_producers(&mut self, out: &mut impl FnMut(RawRecord)) {
        self.counters.no_slot_drops = self.map.header().no_slot_drops.load(Relaxed);
        for ring in 0..self.rings() {
            let r = self.map.ring(ring);
            let w = r.state.load(Acquire);
            let state = w as u32;
            if state == slot::FREE {
                continue;
            }
            // A slot being claimed still shows its previous owner's pid: never judge it.
            if state == slot::CLAIMING {
                continue;
            }
            if state != slot::ACTIVE {
                if self.cursors[ring as usize].slot_word != w {
                    self.counters.bad_slot_states += 1;
                    self.cursors[ring as usize].slot_word = w;
                }
                continue;
            }
            let (pid, tid) = (r.pid.load(Relaxed), r.tid.load(Relaxed));
            let alive = thread_start_time(pid, tid);
            let cur = &mut self.cursors[ring as usize];
            if cur.slot_word != w {
                cur.slot_word = w;
                cur.start_time = alive;
            }
            let dead = match (alive, cur.start_time) {
                (None, _) => true,
                (Some(Some(now)), Some(Some(then))) => now != then, // the tid was reused by another thread
                _ => false,
            };
            if !dead {
                continue;
            }
            // Drain what it published, then look for a record it completed but did not publish.
            while self.drain_ring(ring, out) > 0 {}
            let r = self.map.ring(ring);
            let cap = self.map.geometry().ring_capacity as u64;
            let head = r.head.load(Acquire);
            // SAFETY: masked slot index inside the ring.
            let rec = unsafe { &*self.map.records(ring).add((head & (cap - 1)) as usize) };
            let meta = rec.meta.load(Acquire);
            let (point, stage, kind, seq) = unpack_meta(meta);
            self.counters.producers_gone += 1;
            if seq == head as u32
                && (kind::BEGIN..=kind::LINK).contains(&kind)
                && head < u64::MAX
                && r.head.compare_exchange(head, head + 1, AcqRel, Relaxed).is_ok()
            {
                self.counters.died_mid_write += 1;
                let raw = RawRecord {
                    ring,
                    index: head,
                    word0: rec.word0.load(Relaxed),
                    key: rec.key.load(Relaxed),
                    point,
                    stage,
                    kind,
                };
                out(raw);
                self.counters.delivered += 1;
                self.cursors[ring as usize].tail = head + 1;
            }
            let _ = r.state.compare_exchange(w, slot_word((w >> 32) as u32, slot::FREE), Release, Relaxed);
            self.cursors[ring as usize].slot_word = 0;
        }
    }
}

/// Start time (clock ticks since boot, /proc stat field 22) of thread `tid` of `pid` if it is alive (None
/// inside when /proc cannot tell), or None if it is certainly gone (no such process, a zombie, or the
/// process lives on without that thread). Unsure means alive: freeing a live producer's ring would give
/// it a second writer.
pub fn thread_start_time(pid: u32, tid: u32) -> Option<Option<u64>> {
    if pid == 0 || tid == 0 || pid > i32::MAX as u32 {
        return None;
    }
    // SAFETY: signal 0 only checks for existence and permission.
    if unsafe { libc::kill(pid as i32, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH)
    {
        return None;
    }
    let Ok(s) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")) else {
        let proc_visible = std::path::Path::new(&format!("/proc/{pid}")).exists();
        return if proc_visible { None } else { Some(None) };
    };
    // Fields after the command name, which is in parentheses and may itself contain spaces or ')'.
    let Some(close) = s.rfind(')') else { return Some(None) };
    let mut f = s[close + 1..].split_ascii_whitespace();
    match f.next() {
        Some("Z" | "X" | "x") => return None,
        None => return Some(None),
        _ => {}
    }
    // State is field 3; starttime is field 22, i.e. 19 fields further.
    Some(f.nth(18).and_then(|v| v.parse().ok()))
}
