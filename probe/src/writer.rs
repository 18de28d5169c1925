//! The stamp path: one single-producer ring per thread, claimed on the thread's first stamp.
//!
//! A stamp is: read the TSC, three plain stores into the record slot (the commit word last), one release
//! store of the ring head. On x86-64 every one of those is a plain `mov`: no lock prefix, no syscall, no
//! allocation. The ring overwrites rather than blocks; the reader counts what it lost.
//!
//! Claiming a ring (once per thread, not on the hot path) takes one CAS on the slot's state word; the slot
//! keeps the thread's pid and tid so the reader can tell when a producer went away without releasing it.
//! With no slot free, a thread takes over one whose process is gone (the reader, which frees such slots,
//! may not be running). The ring head is monotonic across owners: a new owner continues from the last
//! published head, so the reader's position and its loss accounting never need resetting.

use std::cell::{Cell, UnsafeCell};
use std::sync::OnceLock;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};
use std::sync::atomic::{AtomicBool, AtomicU64};

use crate::error::{ProbeError, Result};
use crate::layout::*;
use crate::shm::{self, CreateOptions, Mapping};
use crate::tsc;

/// Claims a free ring slot: returns (ring index, generation). With none free, takes over the slot of
/// a process that is gone (an app SIGKILLed holding every slot, restarted before any reader freed
/// them: its stamps were all dropped until one did).
pub(crate) fn claim_slot(m: &Mapping) -> Option<(u32, u32)> {
    let g = m.geometry();
    (0..g.max_threads)
        .find_map(|i| claim_from(m, i, |w| w as u32 == slot::FREE))
        .or_else(|| (0..g.max_threads).find_map(|i| claim_from(m, i, |w| owner_gone(m, i, w))))
}

/// Claims ring `i` if its state word satisfies `take`, by the same CAS steps as a free slot's.
fn claim_from(m: &Mapping, i: u32, take: impl Fn(u64) -> bool) -> Option<(u32, u32)> {
    // SAFETY: getpid/gettid have no preconditions.
    let (pid, tid) = unsafe { (libc::getpid() as u32, libc::gettid() as u32) };
    let r = m.ring(i);
    let w = r.state.load(Acquire);
    if !take(w) {
        return None;
    }
    let generation = ((w >> 32) as u32).wrapping_add(1);
    r.state.compare_exchange(w, slot_word(generation, slot::CLAIMING), Acquire, Relaxed).ok()?;
    r.pid.store(pid, Relaxed);
    r.tid.store(tid, Relaxed);
    r.claimed_realtime_ns.store(shm::realtime_ns(), Relaxed);
    let claiming = slot_word(generation, slot::CLAIMING);
    r.state.compare_exchange(claiming, slot_word(generation, slot::ACTIVE), Release, Relaxed).ok()?;
    Some((i, generation))
}

/// Whether ring `i` (state word `w`) is held by a process that no longer exists, and its owner did not
/// die between writing a record and publishing it: that record is the reader's to recover (it moves
/// the head past it), so such a ring is left to the reader.
fn owner_gone(m: &Mapping, i: u32, w: u64) -> bool {
    let r = m.ring(i);
    let pid = r.pid.load(Relaxed);
    if w as u32 != slot::ACTIVE || pid == 0 || pid > i32::MAX as u32 {
        return false;
    }
    // SAFETY: signal 0 only checks that the process exists.
    let gone = unsafe { libc::kill(pid as i32, 0) } != 0
        && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH);
    if !gone {
        return false;
    }
    let head = r.head.load(Acquire);
    let mask = u64::from(m.geometry().ring_capacity) - 1;
    // SAFETY: a masked slot index inside ring `i`'s records.
    let meta = unsafe { (*m.records(i).add((head & mask) as usize)).meta.load(Acquire) };
    let (_, _, k, seq) = unpack_meta(meta);
    !(seq == head as u32 && (kind::BEGIN..=kind::LINK).contains(&k))
}

/// Makes every page of ring `ring` resident and writable now, so no stamp ever takes a page fault
/// (tmpfs allocates a page on its first write: several microseconds). Contents are left unchanged.
pub(crate) fn prefault_ring(m: &Mapping, ring: u32) {
    const MADV_POPULATE_WRITE: libc::c_int = 23; // Linux 5.14
    let g = m.geometry();
    let start = m.records(ring) as usize;
    let len = g.ring_capacity as usize * RECORD_SIZE;
    let page = 4096;
    let (a, b) = (start / page * page, (start + len).div_ceil(page) * page);
    // SAFETY: the range lies within our mapping; MADV_POPULATE_WRITE only faults pages in.
    if unsafe { libc::madvise(a as *mut libc::c_void, b - a, MADV_POPULATE_WRITE) } == 0 {
        return;
    }
    // Older kernels: an atomic add of zero on one word per page write-faults it without changing it.
    let words = m.records(ring) as *const AtomicU64;
    let mut off = 0;
    while off < len {
        // SAFETY: an 8-aligned word inside this ring's record area.
        unsafe { (*words.add(off / 8)).fetch_add(0, Relaxed) };
        off += page;
    }
}

/// Gives a slot back (only if it is still ours: the reader may have freed it after deciding we died).
pub(crate) fn release_slot(r: &RingHeader, generation: u32) {
    let _ = r.state.compare_exchange(
        slot_word(generation, slot::ACTIVE),
        slot_word(generation, slot::FREE),
        Release,
        Relaxed,
    );
}

/// Writes record `head` and publishes it.
///
/// # Safety
/// `records` points to a ring of `mask + 1` records that only this thread writes; `head_ptr` is its head.
#[inline(always)]
unsafe fn push(records: *mut Record, mask: u64, head_ptr: *const AtomicU64, head: u64, w0: u64, key: u64, lo: u64) {
    // SAFETY: (caller) the slot is inside the ring and this thread is its only writer.
    let r = unsafe { &*records.add((head & mask) as usize) };
    r.word0.store(w0, Relaxed);
    r.key.store(key, Relaxed);
    // The commit word last (release orders it after the two stores above; a plain mov on x86-64).
    r.meta.store(lo | (head << 32), Release);
    // SAFETY: (caller) head_ptr is this ring's head.
    unsafe { (*head_ptr).store(head.wrapping_add(1), Release) };
}

/// An explicit producer handle on one ring: for tools, tests and benchmarks that want a ring without the
/// thread-local registration. Releases its slot on drop.
pub struct Producer<'a> {
    map: &'a Mapping,
    ring: u32,
    generation: u32,
    head: u64,
    mask: u64,
    records: *mut Record,
    head_ptr: *const AtomicU64,
}

// SAFETY: a Producer may move to another thread; it is not Sync, so the ring keeps a single writer.
unsafe impl Send for Producer<'_> {}

impl<'a> Producer<'a> {
    /// Claims a free ring of `map`.
    pub fn new(map: &'a Mapping) -> Result<Self> {
        let (ring, generation) =
            claim_slot(map).ok_or(ProbeError::NoFreeSlot { max_threads: map.geometry().max_threads })?;
        prefault_ring(map, ring);
        let r = map.ring(ring);
        Ok(Producer {
            map,
            ring,
            generation,
            head: r.head.load(Acquire),
            mask: map.geometry().ring_capacity as u64 - 1,
            records: map.records(ring),
            head_ptr: &r.head,
        })
    }

    /// The ring index this producer writes.
    pub fn ring_index(&self) -> u32 {
        self.ring
    }

    /// Records published so far on this ring (by every owner it has had).
    pub fn head(&self) -> u64 {
        self.head
    }

    /// A timed record (begin/step/end), TSC read fenced or not.
    #[inline(always)]
    pub fn timed<const FENCED: bool>(&mut self, kind: u8, point: u16, stage: u8, key: u64) {
        let t = if FENCED { tsc::rdtsc_fenced() } else { tsc::rdtsc() };
        self.raw(t, key, meta_lo(point, stage, kind));
    }

    /// A record with explicit word0 (tests use it to write known TSC values).
    #[inline(always)]
    pub fn raw(&mut self, word0: u64, key: u64, lo: u64) {
        // SAFETY: this producer owns the ring (claimed slot); records/mask/head_ptr describe it.
        unsafe { push(self.records, self.mask, self.head_ptr, self.head, word0, key, lo) };
        self.head = self.head.wrapping_add(1);
    }

    /// Opens a span.
    #[inline(always)]
    pub fn begin(&mut self, point: u16, key: u64) {
        self.timed::<{ cfg!(feature = "fenced") }>(kind::BEGIN, point, BEGIN_STAGE, key)
    }

    /// Marks the end of `stage` in a span.
    #[inline(always)]
    pub fn step(&mut self, point: u16, stage: u8, key: u64) {
        debug_assert!((1..=254).contains(&stage), "stage {stage}: stages are 1..=254 (0 is begin's, 255 end's)");
        self.timed::<{ cfg!(feature = "fenced") }>(kind::STEP, point, stage, key)
    }

    /// Closes a span.
    #[inline(always)]
    pub fn end(&mut self, point: u16, key: u64) {
        self.timed::<{ cfg!(feature = "fenced") }>(kind::END, point, END_STAGE, key)
    }

    /// A value sample (no TSC read).
    #[inline(always)]
    pub fn value(&mut self, point: u16, v: u64) {
        self.raw(v, 0, meta_lo(point, 0, kind::VALUE))
    }

    /// Declares that the order `order_key` was triggered by the tick `tick_key`.
    #[inline(always)]
    pub fn link(&mut self, tick_key: u64, order_key: u64) {
        self.raw(order_key, tick_key, meta_lo(0, 0, kind::LINK))
    }

    /// Leaves the slot ACTIVE with this process as its owner, as a crash would (tests only).
    #[doc(hidden)]
    pub fn leak(self) {
        std::mem::forget(self)
    }
}

impl Drop for Producer<'_> {
    fn drop(&mut self) {
        release_slot(self.map.ring(self.ring), self.generation);
    }
}

// ----- the process-wide session and the per-thread rings -----

static SESSION: OnceLock<Mapping> = OnceLock::new();
static ENABLED: AtomicBool = AtomicBool::new(false);

#[derive(Clone, Copy)]
struct Local {
    records: *mut Record,
    head_ptr: *const AtomicU64,
    head: u64,
    mask: u64,
    /// Stamps to drop before trying to claim a ring again (after finding none free); u32::MAX: thread exiting.
    backoff: u32,
}

const NO_RING: Local =
    Local { records: std::ptr::null_mut(), head_ptr: std::ptr::null(), head: 0, mask: 0, backoff: 0 };

thread_local! {
    // No destructor and a const initialiser: access is a plain fs-relative load, no lazy-init check.
    static LOCAL: UnsafeCell<Local> = const { UnsafeCell::new(NO_RING) };
    // Releases the ring at thread exit; touched only when a ring is claimed.
    static GUARD: SlotGuard = const { SlotGuard { ring: Cell::new(u32::MAX), generation: Cell::new(0) } };
}

struct SlotGuard {
    ring: Cell<u32>,
    generation: Cell<u32>,
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        // Stamps from later thread-local destructors must not write a ring another thread may now own.
        LOCAL.with(|l| {
            // SAFETY: LOCAL is only touched by this thread, never re-entrantly.
            unsafe { *l.get() = Local { backoff: u32::MAX, ..NO_RING } }
        });
        if let (Some(m), ring) = (SESSION.get(), self.ring.get())
            && ring != u32::MAX
        {
            release_slot(m.ring(ring), self.generation.get());
        }
    }
}

/// Options for [`attach`].
#[derive(Debug, Clone, Copy, Default)]
pub struct AttachOptions {
    /// Create the segment with these options if it does not exist.
    pub create: Option<CreateOptions>,
}

/// Attaches this process to `session` (`/dev/shm/<session>`) and enables stamping. One session per
/// process; the mapping stays for the life of the process (threads hold pointers into it).
pub fn attach(session: &str, opts: &AttachOptions) -> Result<()> {
    if let Some(m) = SESSION.get() {
        if m.name() == session {
            ENABLED.store(true, Release);
            return Ok(());
        }
        return Err(ProbeError::AlreadyAttached(m.name().to_string()));
    }
    let m = match (shm::open(session), opts.create) {
        (Ok(m), _) => m,
        (Err(ProbeError::NotFound { .. }), Some(c)) => match shm::create(session, &c) {
            Err(ProbeError::Io { source, .. }) if source.raw_os_error() == Some(libc::EEXIST) => shm::open(session)?,
            r => r?,
        },
        (Err(e), _) => return Err(e),
    };
    let h = m.header();
    // SAFETY: getpid has no preconditions.
    h.app_pid.store(unsafe { libc::getpid() } as u32, Relaxed);
    h.app_start_realtime_ns.store(shm::realtime_ns(), Relaxed);
    h.app_start_tsc.store(tsc::rdtsc_fenced(), Relaxed);
    if SESSION.set(m).is_err() {
        return Err(ProbeError::AlreadyAttached(session.to_string()));
    }
    ENABLED.store(true, Release);
    Ok(())
}

/// Stops stamping and releases the ring of the calling thread. Other threads release theirs when they exit.
/// The mapping stays (stamps racing with this see a disabled probe, never an unmapped page).
pub fn detach() {
    ENABLED.store(false, Release);
    if let Some(m) = SESSION.get() {
        GUARD.with(|g| {
            if g.ring.get() != u32::MAX {
                release_slot(m.ring(g.ring.get()), g.generation.get());
                g.ring.set(u32::MAX);
            }
        });
        LOCAL.with(|l| {
            // SAFETY: LOCAL is only touched by this thread.
            unsafe { *l.get() = NO_RING }
        });
    }
}

/// Turns stamping on or off at run time (off: a stamp is one relaxed load and a branch).
pub fn set_enabled(on: bool) {
    ENABLED.store(on && SESSION.get().is_some(), Relaxed);
}

/// Whether stamps are being recorded.
pub fn enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// The attached session's mapping.
pub fn session() -> Option<&'static Mapping> {
    SESSION.get()
}

/// Names a point in the session's name table.
pub fn name_point(point: u16, name: &str) -> Result<()> {
    shm::publish_name(SESSION.get().ok_or(ProbeError::NotAttached)?, point, None, name)
}

/// Names a stage of a point (the interval that ENDS at this stage is reported under the name).
pub fn name_stage(point: u16, stage: u8, name: &str) -> Result<()> {
    shm::publish_name(SESSION.get().ok_or(ProbeError::NotAttached)?, point, Some(stage), name)
}

/// Claims a ring for the calling thread now, rather than on its first stamp (which then pays for claiming
/// the slot and faulting in the ring's pages: do this at thread start in latency-critical threads).
pub fn register_thread() -> Result<()> {
    let m = SESSION.get().ok_or(ProbeError::NotAttached)?;
    // SAFETY: LOCAL is only touched by this thread.
    let has = LOCAL.with(|l| unsafe { !(*l.get()).records.is_null() });
    if has || register(m) { Ok(()) } else { Err(ProbeError::NoFreeSlot { max_threads: m.geometry().max_threads }) }
}

fn register(m: &'static Mapping) -> bool {
    let Some((ring, generation)) = claim_slot(m) else { return false };
    prefault_ring(m, ring);
    let r = m.ring(ring);
    let local = Local {
        records: m.records(ring),
        head_ptr: &r.head,
        head: r.head.load(Acquire),
        mask: m.geometry().ring_capacity as u64 - 1,
        backoff: 0,
    };
    // Registering the guard may fail while the thread is being torn down: then give the slot back.
    let ok = GUARD
        .try_with(|g| {
            g.ring.set(ring);
            g.generation.set(generation);
        })
        .is_ok();
    if !ok {
        release_slot(r, generation);
        return false;
    }
    // SAFETY: LOCAL is only touched by this thread.
    LOCAL.with(|l| unsafe { *l.get() = local });
    true
}

/// The first stamp of a thread (or one after a failed claim): claim a ring, or count the stamp as dropped.
#[cold]
#[inline(never)]
fn slow_stamp(w0: u64, key: u64, lo: u64, timed: bool) {
    let Some(m) = SESSION.get() else { return };
    // SAFETY: LOCAL is only touched by this thread.
    let backoff = LOCAL.with(|l| unsafe { (*l.get()).backoff });
    let dropped = if backoff == u32::MAX {
        true
    } else if backoff > 0 {
        // SAFETY: as above.
        LOCAL.with(|l| unsafe { (*l.get()).backoff -= 1 });
        true
    } else if register(m) {
        false
    } else {
        // SAFETY: as above. Retry only every 1024 stamps: scanning the slot table is not free.
        LOCAL.with(|l| unsafe { (*l.get()).backoff = 1024 });
        true
    };
    if dropped {
        m.header().no_slot_drops.fetch_add(1, Relaxed);
        return;
    }
    // Claiming a ring (a scan of the slot table, its pages faulted in) took far longer than a stamp.
    // A span's begin is read after it, so that the span does not charge the app for the probe's own
    // setup; a step or end keeps the time it was called at (read after, it would add the claim to a
    // span another thread began).
    let w0 = if timed && unpack_meta(lo).2 == kind::BEGIN { tsc::rdtsc() } else { w0 };
    LOCAL.with(|l| {
        // SAFETY: register() filled LOCAL with this thread's own ring.
        let l = unsafe { &mut *l.get() };
        // SAFETY: as above.
        unsafe { push(l.records, l.mask, l.head_ptr, l.head, w0, key, lo) };
        l.head = l.head.wrapping_add(1);
    });
}

/// One record through the thread's ring. `TIMED`: word0 is the TSC (fenced if `FENCED`), else `w0`.
#[doc(hidden)]
#[inline(always)]
pub fn __stamp<const TIMED: bool, const FENCED: bool>(w0: u64, key: u64, lo: u64) {
    if cfg!(feature = "disabled") || !ENABLED.load(Relaxed) {
        return;
    }
    LOCAL.with(|l| {
        // SAFETY: LOCAL is only touched by this thread and never re-entrantly.
        let l = unsafe { &mut *l.get() };
        // The ring state is loaded before the TSC read, so that after a fenced read only stores remain.
        let (records, mask, head_ptr, head) = (l.records, l.mask, l.head_ptr, l.head);
        let w0 = if !TIMED {
            w0
        } else if FENCED {
            tsc::rdtsc_fenced_after(records.wrapping_add((head & mask) as usize))
        } else {
            tsc::rdtsc()
        };
        if records.is_null() {
            slow_stamp(w0, key, lo, TIMED);
            return;
        }
        // SAFETY: records/mask/head_ptr describe the ring this thread claimed.
        unsafe { push(records, mask, head_ptr, head, w0, key, lo) };
        l.head = head.wrapping_add(1);
    });
}

const FENCED: bool = cfg!(feature = "fenced");

/// Opens a span of `point` identified by `key` (any thread may step or end it).
#[inline(always)]
pub fn begin(point: u16, key: u64) {
    __stamp::<true, FENCED>(0, key, meta_lo(point, BEGIN_STAGE, kind::BEGIN))
}

/// Marks the end of `stage` (1..=254) in the span (`point`, `key`). Another stage is a bug (checked in
/// debug builds); the reader counts it among the orphans, not as the span's `begin` or `end`.
#[inline(always)]
pub fn step(point: u16, stage: u8, key: u64) {
    debug_assert!((1..=254).contains(&stage), "stage {stage}: stages are 1..=254 (0 is begin's, 255 end's)");
    __stamp::<true, FENCED>(0, key, meta_lo(point, stage, kind::STEP))
}

/// Closes the span (`point`, `key`).
#[inline(always)]
pub fn end(point: u16, key: u64) {
    __stamp::<true, FENCED>(0, key, meta_lo(point, END_STAGE, kind::END))
}

/// Records a number that is a measurement in itself (queue depth, batch size); no TSC read.
#[inline(always)]
pub fn value(point: u16, v: u64) {
    __stamp::<false, false>(v, 0, meta_lo(point, 0, kind::VALUE))
}

/// Declares that the order `order_key` was triggered by the tick `tick_key`.
#[inline(always)]
pub fn link(tick_key: u64, order_key: u64) {
    __stamp::<false, false>(order_key, tick_key, meta_lo(0, 0, kind::LINK))
}
