//! Zero allocations on the AQL submit path: building a packet, encoding it and putting it on the
//! ring through the ring writer (reserve, write, publish, doorbell).

use hsakmt_core::packet::aql::{Barrier, Body, KernelDispatch, Packet, Repr, PACKET_LEN};
use hsakmt_core::packet::pm4;
use hsakmt_core::packet::ring::{AqlRing, INVALID_HEADER_WORD};
use hsakmt_core::packet::{sdma, Dwords};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::AtomicU64;

struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the counter is a const-initialised thread local
// (no allocation, no re-entrancy).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_in(f: impl FnOnce()) -> u64 {
    let before = ALLOCS.with(|c| c.get());
    f();
    ALLOCS.with(|c| c.get()) - before
}

#[repr(C, align(64))]
struct Ring([[u8; PACKET_LEN]; 64]);

#[test]
fn aql_submit_allocates_nothing() {
    let mut mem = Box::new(Ring([[0; PACKET_LEN]; 64]));
    for s in mem.0.iter_mut() {
        s[..4].copy_from_slice(&INVALID_HEADER_WORD.to_le_bytes());
    }
    let (mut w, mut r) = (0u64, 0u64);
    let doorbell = AtomicU64::new(0);
    // SAFETY: all of it outlives `ring`; nothing else touches it while the ring lives.
    let ring = unsafe { AqlRing::new(mem.0.as_mut_ptr().cast(), 64, &mut w, &mut r, &doorbell) }.unwrap();
    let n = allocations_in(|| {
        for i in 0..32u64 {
            let k = KernelDispatch::new(0x1000, 256, 64).kernarg(i).completion_signal(0x40);
            ring.submit(&Repr::new(Body::KernelDispatch(k)).barrier(i % 2 == 0));
            ring.submit(&Repr::new(Body::BarrierAnd(Barrier::new([0x40, 0, 0, 0, 0]))));
        }
    });
    assert_eq!(n, 0, "allocations on AQL submit");
    assert_eq!(ring.load_write_index(), 64);
    assert_eq!(doorbell.load(std::sync::atomic::Ordering::Relaxed), 63);
}

#[test]
fn packet_encode_and_parse_allocate_nothing() {
    let n = allocations_in(|| {
        let mut buf = [0u8; 256];
        let data = [1u32, 2, 3];
        let w = pm4::Repr::compute(pm4::WriteData::memory(0x1000, Dwords::from(&data)).into());
        w.emit(&mut pm4::Packet::new_unchecked(&mut buf[..])).unwrap();
        let p = pm4::Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(pm4::Repr::parse(&p).unwrap(), w);
        let c = sdma::Repr::copy_linear(0x1000, 0x2000, 64);
        c.emit(&mut sdma::Packet::new_unchecked(&mut buf[..])).unwrap();
        assert_eq!(sdma::Repr::parse(&sdma::Packet::new_checked(&buf[..]).unwrap()).unwrap(), c);
        let a = Repr::new(Body::KernelDispatch(KernelDispatch::new(1, 1, 1)));
        a.emit(&mut Packet::new_unchecked(&mut buf[..64]));
        assert_eq!(Repr::parse(&Packet::new_checked(&buf[..64]).unwrap()).unwrap(), a);
    });
    assert_eq!(n, 0);
}
