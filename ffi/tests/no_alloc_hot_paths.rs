//! Hot paths allocate nothing: a counting global allocator watches hsaKmtGetClockCounters
//! (through the C export, on the built-in model) after warm-up.

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{ALLOCS, COUNTING};

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
