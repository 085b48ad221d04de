//! Hot paths allocate nothing: a counting global allocator watches hsaKmtGetClockCounters
//! (through the C export, on the built-in model) after warm-up.

use std::alloc::{GlobalAlloc, Layout, System};

struct Counting;
thread_local! {
    // Counting is per thread so tests running in parallel do not see each other.
    static COUNTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    static ALLOCS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
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

#[test]
fn clock_counters_allocate_nothing() {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    hsakmt::safe::open().expect("open the model");
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    let gpu = sys.NumNodes - 1;
    let cpu = 0;
    // warm-up: thread locals, lazy statics
    for _ in 0..4 {
        hsakmt::safe::clock_counters(gpu).unwrap();
        hsakmt::safe::clock_counters(cpu).unwrap();
    }
    COUNTING.with(|c| c.set(true));
    let mut last = 0;
    for _ in 0..1000 {
        let c = hsakmt::safe::clock_counters(gpu).unwrap();
        assert!(c.GPUClockCounter >= last);
        last = c.GPUClockCounter;
        hsakmt::safe::clock_counters(cpu).unwrap();
    }
    COUNTING.with(|c| c.set(false));
    assert!(last > 0, "the GPU counter runs");
    assert_eq!(ALLOCS.with(|a| a.get()), 0, "hsaKmtGetClockCounters allocated");
    hsakmt::safe::close().unwrap();
}

#[test]
fn the_counter_sees_allocations() {
    // The counter itself works: a Vec allocation is counted (guards the test above).
    COUNTING.with(|c| c.set(true));
    let before = ALLOCS.with(|a| a.get());
    let v: Vec<u64> = Vec::with_capacity(16);
    std::hint::black_box(&v);
    let after = ALLOCS.with(|a| a.get());
    COUNTING.with(|c| c.set(false));
    assert!(after > before);
}
