//! hsaKmtQueueRingDoorbell racing hsaKmtCloseKFD: the doorbell page is the context's mapping,
//! unmapped by the last CloseKFD, so the doorbell must be written while the thunk still holds
//! the queue (under its lock). Threads ring a live queue's doorbell in a tight loop while another
//! thread opens, creates an SDMA queue, and closes again, round after round: every ring answers
//! SUCCESS (the queue was live), INVALID_PARAMETER (it is gone) or KERNEL_IO_CHANNEL_NOT_OPENED,
//! and nothing writes to an unmapped page (which would kill the test process).

use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zerocopy::FromZeros;

const ROUNDS: usize = 150;
const RINGERS: usize = 3;

/// Open, and create an SDMA queue on the first GPU over a 4 KiB GPU-mapped ring.
fn open_with_queue() -> u64 {
    assert_eq!(hsaKmtOpenKFD(), HSAKMT_STATUS_SUCCESS);
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    let gpu = (0..sys.NumNodes).find(|&n| hsakmt::safe::node_properties(n).unwrap().KFDGpuID != 0).unwrap();
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_HostAccess(1);
    f.set_bf_NonPaged(1);
    let mut ring: *mut c_void = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { hsaKmtAllocMemory(gpu, 4096, f, &mut ring) }, HSAKMT_STATUS_SUCCESS);
    let mut alt = 0u64;
    let mut node = gpu;
    // SAFETY: the allocation above, a valid out-pointer and a one-node array.
    let st = unsafe { hsaKmtMapMemoryToGPUNodes(ring, 4096, &mut alt, HsaMemFlags::new_zeroed(), 1, &mut node) };
    assert_eq!(st, HSAKMT_STATUS_SUCCESS);
    let mut r = HsaQueueResource::new_zeroed();
    // SAFETY: the ring is thunk memory mapped to the GPU (zeroed: SDMA NOPs) that nothing else
    // uses until CloseKFD frees it; `r` is a valid out-struct.
    let st = unsafe { hsaKmtCreateQueue(gpu, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, ring, 4096, std::ptr::null_mut(), &mut r) };
    assert_eq!(st, HSAKMT_STATUS_SUCCESS);
    r.QueueId
}

#[test]
fn ring_doorbell_races_close() {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    let queue = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let rung = AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_secs(300);
    /// Stops the ringers however the closing thread leaves the scope (a failed assertion too).
    struct Done<'a>(&'a AtomicBool);
    impl Drop for Done<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Release);
        }
    }
    std::thread::scope(|s| {
        for _ in 0..RINGERS {
            s.spawn(|| {
                while !done.load(Ordering::Acquire) {
                    assert!(Instant::now() < deadline, "ringers ran out of time");
                    let id = queue.load(Ordering::Acquire);
                    if id == 0 {
                        std::hint::spin_loop();
                        continue;
                    }
                    // The write pointer stays 0: the SDMA engine has nothing to do.
                    // SAFETY: callable with any id.
                    match unsafe { hsaKmtQueueRingDoorbell(id, 0) } {
                        HSAKMT_STATUS_SUCCESS => {
                            rung.fetch_add(1, Ordering::Relaxed);
                        }
                        HSAKMT_STATUS_INVALID_PARAMETER | HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED => {}
                        st => panic!("hsaKmtQueueRingDoorbell: {st}"),
                    }
                }
            });
        }
        let _done = Done(&done);
        for round in 0..ROUNDS {
            let id = open_with_queue();
            queue.store(id, Ordering::Release);
            // Let the ringers get at this queue, then close under their feet.
            let before = rung.load(Ordering::Relaxed);
            while rung.load(Ordering::Relaxed) == before && Instant::now() < deadline {
                std::thread::yield_now();
            }
            if round % 2 == 0 {
                std::thread::yield_now();
            }
            assert_eq!(hsaKmtCloseKFD(), HSAKMT_STATUS_SUCCESS);
        }
    });
    assert!(rung.load(Ordering::Relaxed) >= ROUNDS as u64, "every round's queue was rung");
    // SAFETY: callable with any id; the thunk is closed.
    assert_eq!(unsafe { hsaKmtQueueRingDoorbell(queue.load(Ordering::Relaxed), 0) }, HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
}
