//! The AQL step of `kmtinfo --smoke`: an AQL queue as ROCr sets one up (ring of INVALID
//! headers, read/write dispatch ids in GPU-visible memory), a barrier-AND that holds the queue
//! until its dependency signal reaches 0, then the model's built-in FILL kernel with an
//! interrupt completion signal (its mailbox is the event's slot) and a NOP kernel with a
//! polled one.

use crate::smoke::{zeroed, Buffer, Event, Queue, Timings};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::packet::aql::{self, Barrier, Body, KernelDispatch, Signal, SignalRepr, DEP_SIGNALS, PACKET_LEN};
use hsakmt_core::packet::model_kernel::{Args, Descriptor, FillArgs, KernelId};
use hsakmt_core::packet::ring::{AqlRing, DoorbellPtr, INVALID_HEADER_WORD};
use std::time::{Duration, Instant};

const RING_PACKETS: u32 = 64;
// Places in the control buffer (GPU-visible host memory).
const RPTR: usize = 0;
const WPTR: usize = 8;
const DEP_SIGNAL: usize = 256;
const DONE_SIGNAL: usize = 320;
const POLL_SIGNAL: usize = 384;
const FILL_KERNEL: usize = 512; // 256-byte aligned, as a code object would be
const NOP_KERNEL: usize = 768;
const KERNARG: usize = 1024;

fn put(b: &Buffer, at: usize, bytes: &[u8]) {
    assert!(at + bytes.len() <= b.size as usize);
    // SAFETY: inside the buffer (checked above); the GPU does not use these bytes yet.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), b.ptr.add(at), bytes.len()) };
}

fn signal(b: &Buffer, at: usize, s: SignalRepr) {
    let mut bytes = [0u8; aql::SIGNAL_LEN];
    s.emit(&mut Signal::new_unchecked(&mut bytes[..]));
    put(b, at, &bytes);
}

fn signal_value(b: &Buffer, at: usize) -> &std::sync::atomic::AtomicI64 {
    // SAFETY: amd_signal_t.value is the 8-byte aligned word at offset 8 of a 64-byte aligned
    // signal inside the buffer; the GPU changes it atomically, so it is read as an atomic.
    unsafe { &*b.ptr.add(at + 8).cast::<std::sync::atomic::AtomicI64>() }
}

/// Submit one packet; a ring that stays full for 10 s is an error, not a hang.
fn submit(r: &AqlRing<DoorbellPtr>, p: &aql::Repr) -> Result<u64, String> {
    let t = Instant::now();
    loop {
        if let Some(mut slot) = r.try_reserve() {
            slot.write(p);
            return Ok(slot.commit());
        }
        if t.elapsed() > Duration::from_secs(10) {
            return Err(format!("AQL ring full for 10 s (read index {}, write index {})", r.load_read_index(), r.load_write_index()));
        }
        std::hint::spin_loop();
    }
}

pub fn aql_steps(node: u32, dst: &Buffer, ev: &Event, tm: &mut Timings) -> Result<(), String> {
    let ring = Buffer::new(node, u64::from(RING_PACKETS) * PACKET_LEN as u64)?;
    let ctl = Buffer::new(node, 4096)?;
    for i in 0..RING_PACKETS as usize {
        put(&ring, i * PACKET_LEN, &INVALID_HEADER_WORD.to_le_bytes());
    }
    let fill_at = dst.addr() + (48 << 10);
    let count = 1024u64; // dwords
    put(&ctl, FILL_KERNEL, &Descriptor::new(KernelId::Fill).to_bytes());
    put(&ctl, NOP_KERNEL, &Descriptor::new(KernelId::Nop).to_bytes());
    put(&ctl, KERNARG, &Args::Fill(FillArgs { dst: fill_at, value: 0xa5a5_0002, count }).to_bytes());
    signal(&ctl, DEP_SIGNAL, SignalRepr::user(1));
    signal(&ctl, DONE_SIGNAL, SignalRepr::user(1).event(ev.mailbox(), ev.id()));

    let mut res: HsaQueueResource = zeroed();
    res.__anon_union_3 = HsaQueueResource__anon_union_3 { QueueRptrValue: ctl.addr() + RPTR as u64 };
    res.__anon_union_2 = HsaQueueResource__anon_union_2 { QueueWptrValue: ctl.addr() + WPTR as u64 };
    let t = Instant::now();
    let q = Queue::new(node, HSA_QUEUE_COMPUTE_AQL, &ring, res)?;
    tm.add("create AQL queue", t.elapsed());
    // SAFETY: the ring (INVALID headers), the dispatch ids and the doorbell come from the queue
    // just created and outlive `r`.
    let r = unsafe { AqlRing::new(ring.ptr, RING_PACKETS, q.wptr(), q.rptr(), DoorbellPtr::new(q.doorbell())) }
        .map_err(|e| format!("AQL ring set-up: {e:?}"))?;

    let mut deps = [0u64; DEP_SIGNALS];
    deps[0] = ctl.addr() + DEP_SIGNAL as u64;
    let barrier = aql::Repr::new(Body::BarrierAnd(Barrier { dep_signal: deps, completion_signal: 0 })).barrier(true);
    let fill = aql::Repr::new(Body::KernelDispatch(
        KernelDispatch::new(ctl.addr() + FILL_KERNEL as u64, count as u32, 64)
            .kernarg(ctl.addr() + KERNARG as u64)
            .completion_signal(ctl.addr() + DONE_SIGNAL as u64),
    ));
    submit(&r, &barrier)?;
    submit(&r, &fill)?;
    // The barrier holds the dispatch while its dependency is 1.
    std::thread::sleep(Duration::from_millis(5));
    if signal_value(&ctl, DONE_SIGNAL).load(std::sync::atomic::Ordering::Acquire) != 1 || dst.u32_at((48 << 10) / 4) != 0 {
        return Err("AQL barrier-AND: the dispatch ran before its dependency signal was 0".into());
    }
    let t = Instant::now();
    signal_value(&ctl, DEP_SIGNAL).store(0, std::sync::atomic::Ordering::Release);
    ev.wait()?;
    tm.add("AQL barrier release → fill 4 KiB → interrupt signal", t.elapsed());
    if signal_value(&ctl, DONE_SIGNAL).load(std::sync::atomic::Ordering::Acquire) != 0 {
        return Err("AQL completion signal not decremented to 0".into());
    }
    let base = (48 << 10) / 4;
    if let Some(i) = (0..count as usize).find(|&i| dst.u32_at(base + i) != 0xa5a5_0002) {
        return Err(format!("AQL fill kernel: word {i} is {:#x}, expected 0xa5a50002", dst.u32_at(base + i)));
    }

    // A NOP dispatch completing a polled signal (no mailbox).
    signal(&ctl, POLL_SIGNAL, SignalRepr::user(1));
    let nop = aql::Repr::new(Body::KernelDispatch(
        KernelDispatch::new(ctl.addr() + NOP_KERNEL as u64, 1, 1).completion_signal(ctl.addr() + POLL_SIGNAL as u64),
    ));
    let t = Instant::now();
    submit(&r, &nop)?;
    let v = signal_value(&ctl, POLL_SIGNAL);
    while v.load(std::sync::atomic::Ordering::Acquire) != 0 {
        if t.elapsed() > Duration::from_secs(10) {
            return Err("AQL NOP dispatch: polled completion signal never reached 0".into());
        }
        std::hint::spin_loop();
    }
    tm.add("AQL NOP dispatch → polled signal", t.elapsed());
    // The packet processor advances read_dispatch_id once it is done with a slot, which may
    // be just after the signal it completed.
    let t = Instant::now();
    while ctl.u32_at(RPTR / 4) != 3 {
        if t.elapsed() > Duration::from_secs(10) {
            return Err(format!("AQL read_dispatch_id is {}, expected 3", ctl.u32_at(RPTR / 4)));
        }
        std::hint::spin_loop();
    }
    Ok(())
}
