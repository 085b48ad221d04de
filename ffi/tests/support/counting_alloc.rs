//! A per-thread counting global allocator for the allocation-free hot-path tests: set
//! `COUNTING` on a thread, run the path, read `ALLOCS` (allocations and reallocations made by
//! that thread while counting). Per thread, so tests running in parallel do not see each other.

use std::alloc::{GlobalAlloc, Layout, System};

pub struct Counting;
thread_local! {
    pub static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    pub static ALLOCS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn counting() -> bool {
    COUNTING.try_with(|c| c.get()).unwrap_or(false)
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        if counting() {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        if counting() {
            let _ = ALLOCS.try_with(|a| a.set(a.get() + 1));
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;
