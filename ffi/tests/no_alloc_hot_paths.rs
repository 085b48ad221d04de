//! Hot paths allocate nothing: a counting global allocator watches what a runtime calls per
//! dispatch or per signal, through the C exports on the built-in model, after warm-up:
//! hsaKmtGetClockCounters; hsaKmtGetVersion, hsaKmtModelEnabled, hsaKmtGetNodeProperties (our
//! headers' `_abi1` symbol and the plain one, which converts to the detected generation) and
//! hsaKmtQueryPointerInfo among 1000 live BOs. (Events: `no_alloc_events.rs`.)

use hsakmt_core::abi::hsakmt::*;
use std::ffi::c_void;
use zerocopy::FromZeros;

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
fn lookups_and_pointer_info_allocate_nothing() {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    hsakmt::safe::open().expect("open the model");
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    let gpu = sys.NumNodes - 1;
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_NonPaged(1);
    f.set_bf_HostAccess(1);
    f.set_bf_CoarseGrain(1);
    let live: Vec<*mut c_void> = (0..1000)
        .map(|i| {
            let mut p = std::ptr::null_mut();
            // SAFETY: a valid out-pointer.
            assert_eq!(unsafe { hsakmt::hsaKmtAllocMemory(gpu, 4096 * (1 + i % 4), f, &mut p) }, HSAKMT_STATUS_SUCCESS);
            p
        })
        .collect();
    let round = |i: usize| {
        let mut v = HsaVersionInfo::new_zeroed();
        let mut model = false;
        let mut n = HsaNodeProperties::new_zeroed();
        let mut info = HsaPointerInfo::new_zeroed();
        // SAFETY: valid out-pointers (the plain symbol's struct is at most ours).
        unsafe {
            assert_eq!(hsakmt::hsaKmtGetVersion(&mut v), HSAKMT_STATUS_SUCCESS);
            assert_eq!(hsakmt::hsaKmtModelEnabled(&mut model), HSAKMT_STATUS_SUCCESS);
            assert_eq!(hsakmt::hsaKmtGetNodeProperties(gpu, &mut n), HSAKMT_STATUS_SUCCESS);
            assert_eq!(hsakmt::plain_hsaKmtGetNodeProperties(gpu, &mut n), HSAKMT_STATUS_SUCCESS);
            let p = (live[i % live.len()] as usize + 100) as *const c_void;
            assert_eq!(hsakmt::hsaKmtQueryPointerInfo(p, &mut info), HSAKMT_STATUS_SUCCESS);
        }
        assert!(model && v.KernelInterfaceMajorVersion == 1 && info.Type == HSA_POINTER_ALLOCATED);
    };
    for i in 0..4 {
        round(i);
    }
    COUNTING.with(|c| c.set(true));
    for i in 0..2000 {
        round(i * 7);
    }
    COUNTING.with(|c| c.set(false));
    assert_eq!(ALLOCS.with(|a| a.get()), 0, "a lookup path allocated");
    for p in live {
        // SAFETY: our allocations.
        assert_eq!(unsafe { hsakmt::hsaKmtFreeMemory(p, 0) }, HSAKMT_STATUS_SUCCESS);
    }
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
