//! A BPF ring-buffer consumer whose callback is given per poll (libbpf-rs's `RingBuffer` fixes it at
//! construction and borrows the map, which a capture owning its skeleton cannot express).
//!
//! libbpf gets a context pointer to a heap slot that holds, only while `poll` runs, a pointer to the
//! caller's `&mut dyn FnMut(&[u8])`; outside `poll` the slot is null and records are left in the ring.
//! A panic in the callback is caught at the C boundary (unwinding through libbpf would abort), stops the
//! poll, and is resumed once libbpf has returned.
//!
//! With batched wakeups (the programs' rodata `wake_bytes`, see `bpf/capture.h`) the kernel signals the
//! ring's epoll fd only once that many bytes wait, so `poll` does not rely on the signal alone: it reads
//! the ring, then waits for the signal at most `drain_interval` at a time, reading again after each wait.

use std::cell::Cell;
use std::ffi::c_void;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::{self, NonNull};
use std::time::{Duration, Instant};

use crate::error::{BpfError, Result};

type Sink<'f> = &'f mut dyn FnMut(&[u8]);

/// What libbpf's context pointer points at.
struct Slot {
    /// The current poll's `Sink`, or null outside `poll`.
    sink: Cell<*mut c_void>,
    /// A panic caught in the callback, to resume after libbpf returns.
    panic: Cell<Option<Box<dyn std::any::Any + Send>>>,
}

pub(crate) struct RingReader {
    rb: NonNull<libbpf_sys::ring_buffer>,
    // Boxed so its address, handed to libbpf, stays put when the reader moves.
    slot: Box<Slot>,
    /// Batched wakeups: the longest single wait for the kernel's signal within a `poll`.
    drain_interval: Option<Duration>,
    /// Records handed on by [`RingReader::poll_records`].
    delivered: u64,
    /// Records it refused (wrong size: a BPF object from another build).
    bad_records: u64,
}

/// `d` in whole milliseconds for epoll, rounded up (a 0.3 ms wait is not a busy loop).
fn ceil_ms(d: Duration) -> i32 {
    i32::try_from(d.as_nanos().div_ceil(1_000_000)).unwrap_or(i32::MAX)
}

unsafe extern "C" fn on_sample(ctx: *mut c_void, data: *mut c_void, size: libbpf_sys::size_t) -> i32 {
    // SAFETY: `ctx` is the `Slot` boxed in `RingReader::slot`, alive as long as the ring buffer.
    let slot = unsafe { &*ctx.cast::<Slot>() };
    let sink = slot.sink.get();
    if sink.is_null() {
        return 0;
    }
    // SAFETY: a non-null slot points at the `Sink` on `poll`'s stack, valid for the whole poll call, and
    // nothing else accesses it meanwhile (the ring is polled from one thread: `RingReader: !Sync`).
    let sink = unsafe { &mut *sink.cast::<Sink<'_>>() };
    // SAFETY: libbpf passes a record of `size` bytes inside the mapped ring, valid until we return.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>().cast_const(), size as usize) };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| sink(bytes))) {
        Ok(()) => 0,
        Err(payload) => {
            slot.panic.set(Some(payload));
            -1 // stops ring_buffer__poll, which returns this value
        }
    }
}

impl RingReader {
    /// A reader of the ring `map_fd`; `drain_interval` is Some when the producer batches its wakeups.
    pub(crate) fn new(map_fd: BorrowedFd<'_>, drain_interval: Option<Duration>) -> Result<Self> {
        let slot = Box::new(Slot { sink: Cell::new(ptr::null_mut()), panic: Cell::new(None) });
        let ctx = ptr::from_ref::<Slot>(&slot).cast_mut().cast::<c_void>();
        // SAFETY: a valid ringbuf map fd, a callback of the right signature, and `ctx` outliving the
        // ring buffer (both are dropped together, the ring first).
        let rb = unsafe { libbpf_sys::ring_buffer__new(map_fd.as_raw_fd(), Some(on_sample), ctx, ptr::null()) };
        let rb =
            NonNull::new(rb).ok_or_else(|| BpfError::Ring { what: "create", source: io::Error::last_os_error() })?;
        Ok(Self { rb, slot, drain_interval, delivered: 0, bad_records: 0 })
    }

    /// The epoll fd that becomes readable when the kernel signals records (for a caller's own epoll).
    pub(crate) fn wait_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `rb` is live; the fd it returns is owned by the ring buffer and closed with it, so a
        // borrow tied to `self` cannot outlive it.
        unsafe { BorrowedFd::borrow_raw(libbpf_sys::ring_buffer__epoll_fd(self.rb.as_ptr())) }
    }

    /// libbpf's count of records consumed, or a negative errno.
    fn wait_and_consume(&mut self, timeout: Duration) -> i32 {
        let rb = self.rb.as_ptr();
        let Some(tick) = self.drain_interval else {
            // SAFETY: `rb` is a live ring buffer owned by `self`.
            return unsafe { libbpf_sys::ring_buffer__poll(rb, ceil_ms(timeout)) };
        };
        // None: a timeout past the clock's range, i.e. no deadline.
        let deadline = Instant::now().checked_add(timeout);
        loop {
            // Records the kernel did not signal (fewer than the wake threshold) are read here.
            // SAFETY: as above.
            let n = unsafe { libbpf_sys::ring_buffer__consume(rb) };
            if n != 0 {
                return n;
            }
            let left = deadline.map_or(tick, |d| d.saturating_duration_since(Instant::now()));
            if left.is_zero() {
                return 0;
            }
            // SAFETY: as above.
            let n = unsafe { libbpf_sys::ring_buffer__poll(rb, ceil_ms(left.min(tick))) };
            if n != 0 {
                return n;
            }
        }
    }

    /// As [`RingReader::poll`], for records that `f` decodes and hands on, returning whether the bytes
    /// were a valid record: the valid ones are counted as delivered, the others as bad. Every capture
    /// reads its ring this way.
    pub(crate) fn poll_records(&mut self, timeout: Duration, mut f: impl FnMut(&[u8]) -> bool) -> Result<usize> {
        let (mut good, mut bad) = (0, 0);
        let res = self.poll(timeout, &mut |bytes| if f(bytes) { good += 1 } else { bad += 1 });
        self.delivered += good;
        self.bad_records += bad;
        res
    }

    /// (records delivered, bad records) so far.
    pub(crate) fn counts(&self) -> (u64, u64) {
        (self.delivered, self.bad_records)
    }

    /// Waits up to `timeout` (rounded up to whole milliseconds) for records and hands each to `f`; returns
    /// how many were consumed.
    fn poll(&mut self, timeout: Duration, f: &mut dyn FnMut(&[u8])) -> Result<usize> {
        let mut sink: Sink<'_> = f;
        self.slot.sink.set(ptr::from_mut(&mut sink).cast::<c_void>());
        let n = self.wait_and_consume(timeout);
        self.slot.sink.set(ptr::null_mut());
        if let Some(payload) = self.slot.panic.take() {
            std::panic::resume_unwind(payload);
        }
        if n < 0 {
            let err = io::Error::from_raw_os_error(-n);
            if err.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(BpfError::Ring { what: "poll", source: err });
        }
        Ok(n as usize)
    }
}

impl Drop for RingReader {
    fn drop(&mut self) {
        // SAFETY: `rb` came from ring_buffer__new and is freed once, here.
        unsafe { libbpf_sys::ring_buffer__free(self.rb.as_ptr()) };
    }
}

// SAFETY: the ring buffer is only touched through `&mut self` (poll) or on drop; moving it to another
// thread is what libbpf permits (no thread affinity). It is not Sync (`Cell`).
unsafe impl Send for RingReader {}
