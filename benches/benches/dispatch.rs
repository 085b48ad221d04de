//! Dispatch → completion latency on the built-in model, through the C API: an AQL queue as ROCr
//! sets one up; each iteration submits the model's NOP kernel (one AQL packet + doorbell) and
//! waits for its completion signal, either by polling the signal value or through the KFD event
//! its mailbox raises (hsaKmtWaitOnEvent). Also an SDMA FENCE polled in memory.

use criterion::{criterion_group, criterion_main, Criterion};
use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::packet::aql::{self, Body, KernelDispatch, Signal, SignalRepr, PACKET_LEN, SIGNAL_LEN};
use hsakmt_core::packet::model_kernel::{Descriptor, KernelId};
use hsakmt_core::packet::ring::{AqlRing, CmdFormat, CmdRing, DoorbellPtr, INVALID_HEADER_WORD};
use hsakmt_core::packet::sdma;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use std::time::Duration;
use zerocopy::FromZeros;

const RING_PACKETS: u32 = 256;

fn gpu_memory(node: u32, size: u64) -> *mut u8 {
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

fn first_gpu() -> u32 {
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    (0..sys.NumNodes).find(|&n| hsakmt::safe::node_properties(n).unwrap().KFDGpuID != 0).expect("a GPU node")
}

fn put_signal(at: *mut u8, s: SignalRepr) {
    // SAFETY: `at` is 64 bytes of bench-owned GPU-visible memory.
    let bytes = unsafe { std::slice::from_raw_parts_mut(at, SIGNAL_LEN) };
    s.emit(&mut Signal::new_unchecked(bytes));
}

fn value(at: *mut u8) -> &'static AtomicI64 {
    // SAFETY: amd_signal_t.value, 8-byte aligned, lives for the whole run.
    unsafe { &*at.add(8).cast::<AtomicI64>() }
}

fn dispatch(c: &mut Criterion) {
    std::env::set_var("HSAKMT_MODEL", "mi300x");
    hsakmt::safe::open().expect("open the model");
    let node = first_gpu();
    let ring = gpu_memory(node, u64::from(RING_PACKETS) * PACKET_LEN as u64);
    let ctl = gpu_memory(node, 4096);
    for i in 0..RING_PACKETS as usize {
        // SAFETY: inside the ring.
        unsafe { ring.add(i * PACKET_LEN).cast::<AtomicU32>().as_ref().unwrap().store(INVALID_HEADER_WORD, Ordering::Relaxed) };
    }
    // SAFETY: offsets inside the 4 KiB control buffer.
    let (rptr, wptr, polled, irq, kernel) = unsafe { (ctl, ctl.add(8), ctl.add(256), ctl.add(320), ctl.add(512)) };
    // SAFETY: as above.
    unsafe { std::ptr::copy_nonoverlapping(Descriptor::new(KernelId::Nop).to_bytes().as_ptr(), kernel, 16) };

    let mut d: HsaEventDescriptor = FromZeros::new_zeroed();
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    d.NodeId = node;
    let mut ev = std::ptr::null_mut();
    // SAFETY: valid descriptor and out-pointer.
    assert_eq!(unsafe { hsaKmtCreateEvent(&mut d, false, false, &mut ev) }, HSAKMT_STATUS_SUCCESS);
    // SAFETY: a live event; EventData is plain data.
    let (ev_id, mailbox) = unsafe { ((*ev).EventId, (*ev).EventData.HWData2) };

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
            u64::from(RING_PACKETS) * PACKET_LEN as u64,
            std::ptr::null_mut(),
            &mut res,
        )
    };
    assert_eq!(st, HSAKMT_STATUS_SUCCESS);
    // SAFETY: ring, ids and doorbell from the queue, alive for the whole run.
    let r = unsafe { AqlRing::new(ring, RING_PACKETS, wptr.cast(), rptr.cast(), DoorbellPtr::new(res.__anon_union_1.Queue_DoorBell_aql)) }
        .unwrap();

    let mut g = c.benchmark_group("dispatch_to_completion");
    g.measurement_time(Duration::from_secs(4));
    let nop =
        |signal: *mut u8| aql::Repr::new(Body::KernelDispatch(KernelDispatch::new(kernel as u64, 1, 1).completion_signal(signal as u64)));
    let polled_packet = nop(polled);
    g.bench_function("aql_nop_polled_signal", |b| {
        b.iter(|| {
            put_signal(polled, SignalRepr::user(1));
            r.submit(&polled_packet);
            while value(polled).load(Ordering::Acquire) != 0 {
                std::hint::spin_loop();
            }
        })
    });
    let irq_packet = nop(irq);
    g.bench_function("aql_nop_interrupt_signal", |b| {
        b.iter(|| {
            put_signal(irq, SignalRepr::user(1).event(mailbox, ev_id));
            r.submit(&irq_packet);
            // SAFETY: a live event.
            assert_eq!(unsafe { hsaKmtWaitOnEvent(ev, 10_000) }, HSAKMT_STATUS_SUCCESS);
        })
    });

    // SDMA: a FENCE polled in memory.
    let sring = gpu_memory(node, 4096);
    let fence = ctl.wrapping_add(2048);
    let mut sres: HsaQueueResource = FromZeros::new_zeroed();
    // SAFETY: as for the AQL queue.
    let st = unsafe {
        hsaKmtCreateQueue(node, HSA_QUEUE_SDMA, 100, HSA_QUEUE_PRIORITY_NORMAL, sring.cast(), 4096, std::ptr::null_mut(), &mut sres)
    };
    assert_eq!(st, HSAKMT_STATUS_SUCCESS);
    // SAFETY: ring, pointers and doorbell from the queue, alive for the whole run.
    let mut s = unsafe {
        CmdRing::new(
            CmdFormat::Sdma,
            sring,
            4096,
            sres.__anon_union_2.Queue_write_ptr_aql,
            sres.__anon_union_3.Queue_read_ptr_aql,
            DoorbellPtr::new(sres.__anon_union_1.Queue_DoorBell_aql),
        )
    }
    .unwrap();
    // SAFETY: a bench-owned, aligned word.
    let fence_word = unsafe { &*fence.cast::<AtomicU32>() };
    let mut n = 0u32;
    g.bench_function("sdma_fence_polled", |b| {
        b.iter(|| {
            n = n.wrapping_add(1);
            s.write_sdma(&sdma::Repr::fence(fence as u64, n)).unwrap();
            s.commit();
            while fence_word.load(Ordering::Acquire) != n {
                std::hint::spin_loop();
            }
        })
    });
    g.finish();
    // SAFETY: the queues and event this bench made.
    unsafe {
        hsaKmtDestroyQueue(res.QueueId);
        hsaKmtDestroyQueue(sres.QueueId);
        hsaKmtDestroyEvent(ev);
    }
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
