//! The AQL ring writer: header published last, wrap-around, full rings, doorbells, several
//! producers against a consumer thread that plays the packet processor.

use hsakmt_core::packet::aql::{Barrier, Body, KernelDispatch, Packet, PacketType, Repr, PACKET_LEN};
use hsakmt_core::packet::ring::{AqlRing, Doorbell, DoorbellPtr, RingError, INVALID_HEADER_WORD};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

/// Queue memory is written by the ring writer through raw pointers while the test reads it.
#[repr(C, align(64))]
struct Slot(UnsafeCell<[u8; PACKET_LEN]>);

/// Queue memory as a runtime would set it up: INVALID headers, indices at 0.
struct Queue {
    slots: Box<[Slot]>,
    write: Box<AtomicU64>,
    read: Box<AtomicU64>,
    doorbell: AtomicU64,
}

// SAFETY: slot bytes are shared with the ring writer as queue memory is with a GPU: headers
// and indices through atomics, bodies handed over by the header's release/acquire.
unsafe impl Sync for Queue {}

impl Queue {
    fn new(size: usize) -> Self {
        let slots = (0..size)
            .map(|_| {
                let mut s = [0; PACKET_LEN];
                s[..4].copy_from_slice(&INVALID_HEADER_WORD.to_le_bytes());
                Slot(UnsafeCell::new(s))
            })
            .collect();
        Queue { slots, write: Box::new(AtomicU64::new(0)), read: Box::new(AtomicU64::new(0)), doorbell: AtomicU64::new(u64::MAX) }
    }

    fn base(&self) -> *mut u8 {
        self.slots.as_ptr().cast_mut().cast()
    }

    fn ring(&self) -> AqlRing<&AtomicU64> {
        // SAFETY: the queue outlives the ring in every test; indices and headers are accessed
        // atomically by the test's consumer.
        unsafe { AqlRing::new(self.base(), self.slots.len() as u32, self.write.as_ptr(), self.read.as_ptr(), &self.doorbell) }.unwrap()
    }

    fn slot_ptr(&self, index: u64) -> *const u8 {
        self.slots[(index as usize) % self.slots.len()].0.get().cast()
    }

    fn header_word(&self, index: u64) -> u32 {
        // SAFETY: 64-byte aligned slot start, accessed atomically by the ring writer.
        unsafe { AtomicU32::from_ptr(self.slot_ptr(index) as *mut u32) }.load(Ordering::Acquire)
    }

    fn body(&self, index: u64) -> [u8; PACKET_LEN] {
        let mut out = [0u8; PACKET_LEN];
        // SAFETY: reading a published (or single-threaded) slot.
        unsafe { std::ptr::copy_nonoverlapping(self.slot_ptr(index), out.as_mut_ptr(), PACKET_LEN) };
        out[..4].copy_from_slice(&self.header_word(index).to_le_bytes());
        out
    }

    /// What the packet processor does after consuming a slot.
    fn consume(&self, index: u64) {
        // SAFETY: as in `header_word`.
        unsafe { AtomicU32::from_ptr(self.slot_ptr(index) as *mut u32) }.store(INVALID_HEADER_WORD, Ordering::Release);
        self.read.store(index + 1, Ordering::Release);
    }
}

fn dispatch(n: u32) -> Repr {
    Repr::new(Body::KernelDispatch(KernelDispatch::new(0x1000 + n as u64, 64 * n, 64).kernarg(n as u64).completion_signal(0x40)))
}

#[test]
fn header_is_stored_last() {
    let q = Queue::new(4);
    let ring = q.ring();
    let pkt = dispatch(7);
    let mut slot = ring.reserve();
    assert_eq!(slot.index(), 0);
    assert_eq!(q.write.load(Ordering::Relaxed), 1, "reservation bumps the write index");
    slot.write(&pkt);
    // The body is in place, the header still says INVALID: the processor would not start.
    let mid = q.body(0);
    assert_eq!(u32::from_le_bytes(mid[..4].try_into().unwrap()), INVALID_HEADER_WORD);
    assert_eq!(&mid[4..], &pkt.to_bytes()[4..]);
    assert_eq!(q.doorbell.load(Ordering::Relaxed), u64::MAX, "no doorbell before publication");
    assert_eq!(slot.commit(), 0);
    assert_eq!(q.header_word(0), pkt.header_word());
    assert_eq!(Repr::parse(&Packet::new_checked(&q.body(0)[..]).unwrap()).unwrap(), pkt);
    assert_eq!(q.doorbell.load(Ordering::Relaxed), 0, "doorbell gets the packet index");
}

#[test]
fn wrap_around_reuses_slots_after_the_processor_consumes_them() {
    let q = Queue::new(4);
    let ring = q.ring();
    for i in 0..11u64 {
        let idx = ring.submit(&dispatch(i as u32));
        assert_eq!(idx, i);
        assert_eq!(q.doorbell.load(Ordering::Relaxed), i);
        let got = Repr::parse(&Packet::new_checked(&q.body(i)[..]).unwrap()).unwrap();
        assert_eq!(got, dispatch(i as u32), "slot {} on lap {}", i % 4, i / 4);
        q.consume(i);
    }
    assert_eq!(ring.load_write_index(), 11);
}

#[test]
fn full_ring_refuses_try_reserve_until_consumed() {
    let q = Queue::new(2);
    let ring = q.ring();
    ring.submit(&dispatch(0));
    ring.submit(&dispatch(1));
    assert!(ring.try_reserve().is_none());
    assert_eq!(ring.load_write_index(), 2, "a refused try_reserve takes no index");
    q.consume(0);
    let mut s = ring.try_reserve().expect("one slot free");
    assert_eq!(s.index(), 2);
    s.write(&dispatch(2));
    assert_eq!(s.publish(), 2);
    assert_eq!(q.doorbell.load(Ordering::Relaxed), 1, "publish alone does not ring");
    ring.ring_doorbell(2);
    assert_eq!(q.doorbell.load(Ordering::Relaxed), 2);
}

#[test]
fn an_abandoned_slot_becomes_a_no_op_barrier() {
    let q = Queue::new(4);
    let ring = q.ring();
    drop(ring.reserve());
    let got = Repr::parse(&Packet::new_checked(&q.body(0)[..]).unwrap()).unwrap();
    assert_eq!(got.packet_type(), PacketType::BarrierAnd);
    assert_eq!(got.body, Body::BarrierAnd(Barrier::default()));
    // Publishing a slot that was never written does the same.
    let s = ring.reserve();
    s.publish();
    assert_eq!(q.header_word(1) & 0xff, PacketType::BarrierAnd as u32);
}

#[test]
fn bad_ring_parameters_are_errors() {
    let q = Queue::new(4);
    let db = AtomicU64::new(0);
    // SAFETY: every call fails its checks before any memory is touched.
    unsafe {
        assert_eq!(AqlRing::new(q.base(), 3, q.write.as_ptr(), q.read.as_ptr(), &db).err(), Some(RingError::NotPowerOfTwo));
        assert_eq!(AqlRing::new(q.base(), 0, q.write.as_ptr(), q.read.as_ptr(), &db).err(), Some(RingError::NotPowerOfTwo));
        assert_eq!(AqlRing::new(q.base().add(8), 2, q.write.as_ptr(), q.read.as_ptr(), &db).err(), Some(RingError::Misaligned));
        assert_eq!(AqlRing::new(std::ptr::null_mut(), 4, q.write.as_ptr(), q.read.as_ptr(), &db).err(), Some(RingError::Null));
        assert_eq!(AqlRing::new(q.base(), 4, q.write.as_ptr(), std::ptr::null_mut(), &db).err(), Some(RingError::Null));
    }
}

#[test]
fn raw_doorbell_pointer() {
    let mut word = 0u64;
    {
        // SAFETY: `word` outlives `db` and is only touched through it here.
        let db = unsafe { DoorbellPtr::new(&mut word) };
        db.ring(42);
    }
    assert_eq!(word, 42);
}

#[test]
fn concurrent_producers_and_a_processor_thread() {
    const PRODUCERS: u32 = 2;
    const PER: u32 = 1000;
    let q = Arc::new(Queue::new(64));
    let total = (PRODUCERS * PER) as u64;
    let consumer = {
        let q = q.clone();
        std::thread::spawn(move || {
            let mut seen = vec![false; total as usize];
            for i in 0..total {
                while q.header_word(i) == INVALID_HEADER_WORD {
                    std::thread::yield_now();
                }
                let r = Repr::parse(&Packet::new_checked(&q.body(i)[..]).unwrap()).expect("a whole packet");
                let Body::KernelDispatch(k) = r.body else { panic!("{r:?}") };
                let n = k.kernarg_address as usize;
                assert_eq!(k.kernel_object, 0x1000 + n as u64, "torn packet");
                assert!(!seen[n]);
                seen[n] = true;
                q.consume(i);
            }
            seen.iter().all(|s| *s)
        })
    };
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|t| {
            let q = q.clone();
            std::thread::spawn(move || {
                let ring = q.ring();
                for i in 0..PER {
                    ring.submit(&dispatch(t * PER + i));
                }
            })
        })
        .collect();
    for p in producers {
        p.join().unwrap();
    }
    assert!(consumer.join().unwrap(), "every packet seen once");
    assert_eq!(q.write.load(Ordering::Relaxed), total);
}
