//! AQL packet submit through the ring writer (reserve by fetch_add, body, header with release,
//! doorbell) against the floor: a bare 64-byte store, a release store of the header word and a
//! doorbell store, with no reservation. Goal (issue 4): ring writer ≤ 1.5× the floor.

use criterion::{criterion_group, criterion_main, Criterion};
use hsakmt_core::packet::aql::{Body, KernelDispatch, Repr, PACKET_LEN};
use hsakmt_core::packet::ring::{AqlRing, INVALID_HEADER_WORD};
use std::cell::UnsafeCell;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

const SLOTS: usize = 256;

#[repr(C, align(64))]
struct Queue(UnsafeCell<[[u8; PACKET_LEN]; SLOTS]>);

fn queue() -> Box<Queue> {
    let mut slots = [[0u8; PACKET_LEN]; SLOTS];
    for s in slots.iter_mut() {
        s[..4].copy_from_slice(&INVALID_HEADER_WORD.to_le_bytes());
    }
    Box::new(Queue(UnsafeCell::new(slots)))
}

fn packet(kernarg: u64) -> Repr {
    Repr::new(Body::KernelDispatch(KernelDispatch::new(0x7f00_0000_1000, 4096, 256).kernarg(kernarg).completion_signal(0x7f00_0000_2040)))
}

fn aql_submit(c: &mut Criterion) {
    let mut g = c.benchmark_group("aql_submit");

    let q = queue();
    let (write, read, doorbell) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    // SAFETY: queue memory, indices and doorbell outlive the ring; only this thread uses them.
    let ring = unsafe { AqlRing::new(q.0.get().cast(), SLOTS as u32, write.as_ptr(), read.as_ptr(), &doorbell) }.unwrap();
    let mut n = 0u64;
    g.bench_function("ring_writer", |b| {
        b.iter(|| {
            n += 1;
            let idx = ring.submit(&packet(black_box(n)));
            // The packet processor's part, so the ring never fills: consume at once.
            read.store(idx + 1, Ordering::Relaxed);
        })
    });

    let q2 = queue();
    let base = q2.0.get().cast::<u8>();
    let bare_doorbell = AtomicU64::new(0);
    let mut i = 0u64;
    g.bench_function("bare_store_release_doorbell", |b| {
        b.iter(|| {
            i += 1;
            let bytes = packet(black_box(i)).to_bytes();
            // SAFETY: in bounds of the 256-slot queue; only this thread touches it.
            unsafe {
                let slot = base.add((i as usize & (SLOTS - 1)) * PACKET_LEN);
                std::ptr::copy_nonoverlapping(bytes.as_ptr().add(4), slot.add(4), PACKET_LEN - 4);
                AtomicU32::from_ptr(slot.cast()).store(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]), Ordering::Release);
            }
            bare_doorbell.store(i, Ordering::Release);
        })
    });
    g.finish();
}

criterion_group!(benches, aql_submit);
criterion_main!(benches);
