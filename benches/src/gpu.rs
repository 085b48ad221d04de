//! GPU-side set-up through the C API, shared by the dispatch benches: memory the GPU and the
//! host both see, the first GPU node, amd_signal_t access, and an AQL queue as ROCr sets one up.

use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::packet::aql::{Signal, SignalRepr, PACKET_LEN, SIGNAL_LEN};
use hsakmt_core::packet::ring::{AqlRing, DoorbellPtr, INVALID_HEADER_WORD};
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use zerocopy::FromZeros;

/// `size` zeroed bytes on `node`, host-accessible, executable and mapped to the GPU; the bench
/// keeps them for its whole run.
pub fn gpu_memory(node: u32, size: u64) -> *mut u8 {
    let mut f: HsaMemFlags = FromZeros::new_zeroed();
    f.set_bf_HostAccess(1);
    f.set_bf_NonPaged(1);
    f.set_bf_ExecuteAccess(1);
    f.set_bf_PageSize(HSA_PAGE_SIZE_4KB);
    let mut p = std::ptr::null_mut();
    let mut va = 0;
    let mut nodes = [node];
    // SAFETY: valid out-pointers; the memory is the bench's for the whole run.
    unsafe {
        assert_eq!(hsaKmtAllocMemory(node, size, f, &mut p), HSAKMT_STATUS_SUCCESS);
        assert_eq!(hsaKmtMapMemoryToGPUNodes(p, size, &mut va, FromZeros::new_zeroed(), 1, nodes.as_mut_ptr()), HSAKMT_STATUS_SUCCESS);
        std::ptr::write_bytes(p.cast::<u8>(), 0, size as usize);
    }
    p.cast()
}

/// The first node with a GPU (the thunk is open).
pub fn first_gpu() -> u32 {
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    (0..sys.NumNodes).find(|&n| hsakmt::safe::node_properties(n).unwrap().KFDGpuID != 0).expect("a GPU node")
}

/// Write an `amd_signal_t` at `at`.
///
/// # Safety
/// `at` must be valid for writes of 64 bytes that no one else accesses meanwhile.
pub unsafe fn put_signal(at: *mut u8, s: SignalRepr) {
    // SAFETY: the caller's contract.
    let bytes = unsafe { std::slice::from_raw_parts_mut(at, SIGNAL_LEN) };
    s.emit(&mut Signal::new_unchecked(bytes));
}

/// The value word of the `amd_signal_t` at `at`.
///
/// # Safety
/// `at` must be an 8-byte aligned `amd_signal_t` that lives for the rest of the process.
pub unsafe fn signal_value(at: *mut u8) -> &'static AtomicI64 {
    // SAFETY: the caller's contract (amd_signal_t.value is at offset 8).
    unsafe { &*at.add(8).cast::<AtomicI64>() }
}

/// An AQL queue of `packets` slots on `node`: its ring writer, its id, and 4 KiB of control
/// memory (read and write indices in its first 16 bytes; the rest free from offset 256).
pub struct AqlQueue {
    pub ring: AqlRing<DoorbellPtr>,
    pub id: HSA_QUEUEID,
    pub ctl: *mut u8,
}

impl AqlQueue {
    pub fn new(node: u32, packets: u32) -> AqlQueue {
        let ring = gpu_memory(node, u64::from(packets) * PACKET_LEN as u64);
        let ctl = gpu_memory(node, 4096);
        for i in 0..packets as usize {
            // SAFETY: inside the ring.
            unsafe { ring.add(i * PACKET_LEN).cast::<AtomicU32>().as_ref().unwrap().store(INVALID_HEADER_WORD, Ordering::Relaxed) };
        }
        // SAFETY: offsets inside the 4 KiB control buffer.
        let (rptr, wptr) = unsafe { (ctl, ctl.add(8)) };
        let mut res: HsaQueueResource = FromZeros::new_zeroed();
        res.__anon_union_3 = HsaQueueResource__anon_union_3 { QueueRptrValue: rptr as u64 };
        res.__anon_union_2 = HsaQueueResource__anon_union_2 { QueueWptrValue: wptr as u64 };
        // SAFETY: GPU-visible ring that outlives the queue; valid resource struct.
        let st = unsafe {
            hsaKmtCreateQueue(
                node,
                HSA_QUEUE_COMPUTE_AQL,
                100,
                HSA_QUEUE_PRIORITY_NORMAL,
                ring.cast(),
                u64::from(packets) * PACKET_LEN as u64,
                std::ptr::null_mut(),
                &mut res,
            )
        };
        assert_eq!(st, HSAKMT_STATUS_SUCCESS);
        // SAFETY: ring, indices and doorbell from the queue, alive for the whole run.
        let ring =
            unsafe { AqlRing::new(ring, packets, wptr.cast(), rptr.cast(), DoorbellPtr::new(res.__anon_union_1.Queue_DoorBell_aql)) }
                .unwrap();
        AqlQueue { ring, id: res.QueueId, ctl }
    }
}

impl Drop for AqlQueue {
    fn drop(&mut self) {
        // SAFETY: the queue this value made.
        unsafe { hsaKmtDestroyQueue(self.id) };
    }
}
