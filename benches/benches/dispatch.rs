//! Dispatch → completion latency on the built-in model, through the C API: an AQL queue as ROCr
//! sets one up; each iteration submits the model's NOP kernel (one AQL packet + doorbell) and
//! waits for its completion signal, either by polling the signal value or through the KFD event
//! its mailbox raises (hsaKmtWaitOnEvent). Also an SDMA FENCE polled in memory.

use criterion::{criterion_group, criterion_main, Criterion};
use hsakmt::*;
use hsakmt_benches::gpu::{first_gpu, gpu_memory, put_signal, signal_value, AqlQueue};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::packet::aql::{self, Body, KernelDispatch, SignalRepr};
use hsakmt_core::packet::model_kernel::{Descriptor, KernelId};
use hsakmt_core::packet::ring::{CmdFormat, CmdRing, DoorbellPtr};
use hsakmt_core::packet::sdma;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;
use zerocopy::FromZeros;

const RING_PACKETS: u32 = 256;

fn dispatch(c: &mut Criterion) {
    std::env::set_var("HSAKMT_MODEL", "mi300x");
    hsakmt::safe::open().expect("open the model");
    let node = first_gpu();
    let q = AqlQueue::new(node, RING_PACKETS);
    let ctl = q.ctl;
    // SAFETY: offsets inside the 4 KiB control buffer (the queue's indices are below 256).
    let (polled, irq, kernel) = unsafe { (ctl.add(256), ctl.add(320), ctl.add(512)) };
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
    let r = &q.ring;

    let mut g = c.benchmark_group("dispatch_to_completion");
    g.measurement_time(Duration::from_secs(4));
    let nop =
        |signal: *mut u8| aql::Repr::new(Body::KernelDispatch(KernelDispatch::new(kernel as u64, 1, 1).completion_signal(signal as u64)));
    let polled_packet = nop(polled);
    g.bench_function("aql_nop_polled_signal", |b| {
        b.iter(|| {
            // SAFETY: the signal slot in the queue's control buffer, alive for the whole run.
            unsafe { put_signal(polled, SignalRepr::user(1)) };
            r.submit(&polled_packet);
            // SAFETY: as above.
            while unsafe { signal_value(polled) }.load(Ordering::Acquire) != 0 {
                std::hint::spin_loop();
            }
        })
    });
    let irq_packet = nop(irq);
    g.bench_function("aql_nop_interrupt_signal", |b| {
        b.iter(|| {
            // SAFETY: the signal slot in the queue's control buffer, alive for the whole run.
            unsafe { put_signal(irq, SignalRepr::user(1).event(mailbox, ev_id)) };
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
        hsaKmtDestroyQueue(sres.QueueId);
        hsaKmtDestroyEvent(ev);
    }
}

criterion_group!(benches, dispatch);
criterion_main!(benches);
