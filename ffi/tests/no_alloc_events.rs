//! Event hot paths allocate nothing: a counting global allocator (per thread) watches
//! hsaKmtSetEvent, ResetEvent, QueryEventState and satisfied waits (WaitOnEvent, _Ext with an
//! age, WaitOnMultipleEvents on a few events) through the C exports on the built-in model,
//! after warm-up.

use hsakmt_core::abi::hsakmt::*;
use zerocopy::FromZeros;

#[path = "support/counting_alloc.rs"]
mod counting_alloc;
use counting_alloc::{ALLOCS, COUNTING};

const OK: HSAKMT_STATUS = HSAKMT_STATUS_SUCCESS;

fn create(manual: bool) -> *mut HsaEvent {
    let mut d: HsaEventDescriptor = FromZeros::new_zeroed();
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    let mut e: *mut HsaEvent = std::ptr::null_mut();
    // SAFETY: live descriptor and out-pointer.
    assert_eq!(unsafe { hsakmt::hsaKmtCreateEvent(&mut d, manual, false, &mut e) }, OK);
    assert!(!e.is_null());
    e
}

/// One round of every hot path; returns nothing, asserts statuses.
fn round(auto: *mut HsaEvent, manual: *mut HsaEvent, four: &mut [*mut HsaEvent; 4], age: &mut u64) {
    // SAFETY: events created by the thunk, live arrays.
    unsafe {
        assert_eq!(hsakmt::hsaKmtSetEvent(auto), OK);
        assert_eq!(hsakmt::hsaKmtQueryEventState(auto), OK);
        assert_eq!(hsakmt::hsaKmtWaitOnEvent(auto, 0), OK);
        assert_eq!(hsakmt::hsaKmtSetEvent(auto), OK);
        assert_eq!(hsakmt::hsaKmtWaitOnEvent_Ext(auto, 1000, age), OK);
        assert_eq!(hsakmt::hsaKmtSetEvent(manual), OK);
        assert_eq!(hsakmt::hsaKmtWaitOnMultipleEvents(four.as_mut_ptr(), 4, true, 1000), OK);
        assert_eq!(hsakmt::hsaKmtResetEvent(manual), OK);
        assert_eq!(hsakmt::hsaKmtWaitOnEvent(manual, 0), HSAKMT_STATUS_WAIT_TIMEOUT);
    }
}

#[test]
fn event_hot_paths_allocate_nothing() {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    hsakmt::safe::open().expect("open the model");
    hsakmt::safe::acquire_system_properties().unwrap();
    let auto = create(false);
    let manual = create(true);
    let others = [create(true), create(true)];
    let mut four = [manual, others[0], others[1], manual];
    for &e in &others {
        // SAFETY: thunk events.
        assert_eq!(unsafe { hsakmt::hsaKmtSetEvent(e) }, OK);
    }
    let mut age = 1u64;
    for _ in 0..4 {
        round(auto, manual, &mut four, &mut age);
    }
    COUNTING.with(|c| c.set(true));
    for _ in 0..1000 {
        round(auto, manual, &mut four, &mut age);
    }
    COUNTING.with(|c| c.set(false));
    assert!(age > 1000, "ages advance: {age}");
    assert_eq!(ALLOCS.with(|a| a.get()), 0, "an event hot path allocated");
    for e in [auto, manual, others[0], others[1]] {
        // SAFETY: thunk events, destroyed once.
        assert_eq!(unsafe { hsakmt::hsaKmtDestroyEvent(e) }, OK);
    }
    hsakmt::safe::close().unwrap();
}

#[test]
fn the_counter_sees_allocations() {
    COUNTING.with(|c| c.set(true));
    let before = ALLOCS.with(|a| a.get());
    let v: Vec<u64> = Vec::with_capacity(16);
    std::hint::black_box(&v);
    let after = ALLOCS.with(|a| a.get());
    COUNTING.with(|c| c.set(false));
    assert!(after > before);
}
