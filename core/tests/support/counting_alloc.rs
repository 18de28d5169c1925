//! A counting global allocator (per thread), for the tests that show a path allocates nothing: a
//! test binary installs it with `#[global_allocator] static GLOBAL: Counting = Counting;` and reads
//! [`allocs`] before and after.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

/// The system allocator, counting allocations and reallocations made on each thread.
pub struct Counting;

// SAFETY: every call is forwarded unchanged to the system allocator; the only addition is a
// thread-local counter with const initialisation, which itself never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations and reallocations this thread has made so far.
pub fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}
