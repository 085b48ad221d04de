//! The PM4 / SDMA command ring writer: pointer units, NOP padding at the wrap, full rings.

use hsakmt_core::packet::ring::{CmdFormat, CmdRing, CmdRingError, RingError};
use hsakmt_core::packet::{pm4, sdma, Dwords};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Queue memory as the runtime would map it; the test plays the processor.
struct Mem {
    ring: Box<[UnsafeCell<u32>]>,
    wptr: AtomicU64,
    rptr: AtomicU64,
    doorbell: AtomicU64,
}

impl Mem {
    fn new(dwords: usize) -> Self {
        Mem {
            ring: (0..dwords).map(|_| UnsafeCell::new(0xdead_beef)).collect(),
            wptr: AtomicU64::new(0),
            rptr: AtomicU64::new(0),
            doorbell: AtomicU64::new(u64::MAX),
        }
    }

    fn base(&self) -> *mut u8 {
        self.ring.as_ptr().cast_mut().cast()
    }

    fn writer(&self, format: CmdFormat) -> CmdRing<&AtomicU64> {
        let size = (self.ring.len() * 4) as u32;
        // SAFETY: `self` outlives the writer in each test; the test reads ring words only
        // between writer calls.
        unsafe { CmdRing::new(format, self.base(), size, self.wptr.as_ptr(), self.rptr.as_ptr(), &self.doorbell) }.unwrap()
    }

    fn word(&self, i: usize) -> u32 {
        // SAFETY: single-threaded; no writer call is in progress.
        unsafe { *self.ring[i].get() }
    }

    fn bytes(&self) -> Vec<u8> {
        (0..self.ring.len()).flat_map(|i| self.word(i).to_le_bytes()).collect()
    }
}

#[test]
fn pm4_ring_pads_with_nops_at_the_wrap_and_counts_dwords() {
    let m = Mem::new(16);
    let mut ring = m.writer(CmdFormat::Pm4);
    let rm = pm4::Repr::compute(pm4::Command::ReleaseMem(pm4::ReleaseMem::eop(0x1000, 1)));
    ring.write_pm4(&rm).unwrap(); // dwords 0..8
    ring.write_pm4(&pm4::Repr::compute(pm4::Command::DispatchDirect(pm4::DispatchDirect { dim: [1, 1, 1], dispatch_initiator: 1 })))
        .unwrap(); // 8..13
    assert_eq!(ring.commit(), 13, "PM4 write pointer in dwords");
    assert_eq!(m.wptr.load(Ordering::Relaxed), 13);
    assert_eq!(m.doorbell.load(Ordering::Relaxed), 13);

    // 3 dwords left before the end: an 8-dword packet does not fit until the processor reads.
    assert_eq!(ring.write_pm4(&rm), Err(CmdRingError::Full));
    m.rptr.store(13, Ordering::Release);
    ring.write_pm4(&rm).unwrap();
    assert_eq!(ring.commit(), 24, "3 dwords of padding, then the packet at offset 0");

    let bytes = m.bytes();
    // Padding: a 3-dword NOP (count 1) at dword 13.
    let nop = pm4::Packet::new_checked(&bytes[13 * 4..]).unwrap();
    assert_eq!(pm4::Repr::parse(&nop).unwrap().command, pm4::Command::Nop { body_dwords: 2 });
    assert_eq!(nop.total_len(), 12);
    assert_eq!(pm4::Repr::parse(&pm4::Packet::new_checked(&bytes[..]).unwrap()).unwrap(), rm);

    assert_eq!(ring.write_sdma(&sdma::Repr::Trap { int_context: 0 }), Err(CmdRingError::WrongFormat));
}

#[test]
fn one_dword_of_padding_is_a_header_only_nop() {
    let m = Mem::new(8);
    let mut ring = m.writer(CmdFormat::Pm4);
    let data = [1u32, 2, 3];
    ring.write_pm4(&pm4::Repr::compute(pm4::WriteData::memory(0x40, Dwords::from(&data)).into())).unwrap(); // 7 dwords
    m.rptr.store(7, Ordering::Release);
    ring.write_pm4(&pm4::Repr::compute(pm4::Command::EventWrite(pm4::EventWrite { event_type: 7, event_index: 4, addr: None }))).unwrap();
    assert_eq!(ring.commit(), 10);
    assert_eq!(m.word(7), 0xffff_1002, "type 3, count 0x3fff, NOP, compute");
}

#[test]
fn sdma_ring_counts_bytes_and_pads_with_sdma_nops() {
    let m = Mem::new(16);
    let mut ring = m.writer(CmdFormat::Sdma);
    let copy = sdma::Repr::copy_linear(0x1000, 0x2000, 64);
    ring.write_sdma(&copy).unwrap(); // 7 dwords
    ring.write_sdma(&sdma::Repr::fence(0x3000, 7)).unwrap(); // 4 dwords
    assert_eq!(ring.commit(), 44, "SDMA write pointer in bytes");
    m.rptr.store(44, Ordering::Release);
    ring.write_sdma(&copy).unwrap(); // 5 dwords left: pad, then at 0
    assert_eq!(ring.commit(), 64 + 28);
    assert_eq!(m.word(11), 4 << 16, "SDMA NOP with count 4 pads dwords 11..16");
    let bytes = m.bytes();
    assert_eq!(sdma::Repr::parse(&sdma::Packet::new_checked(&bytes[..]).unwrap()).unwrap(), copy);

    // A full ring, then a packet larger than the ring.
    assert_eq!(ring.write_sdma(&copy), Err(CmdRingError::Full));
    let big = [0u32; 20];
    assert_eq!(ring.write_sdma(&sdma::Repr::WriteUntiled { dst: 0, data: Dwords::from(&big), swap: 0 }), Err(CmdRingError::TooLarge));
    assert_eq!(ring.write_sdma(&sdma::Repr::copy_linear(0, 0, 0)), Err(CmdRingError::Packet(hsakmt_core::packet::Error::BadField)));
}

#[test]
fn bad_command_ring_parameters() {
    let m = Mem::new(16);
    let db = AtomicU64::new(0);
    let base = m.base();
    let (w, r) = (m.wptr.as_ptr(), m.rptr.as_ptr());
    // SAFETY: every call fails its checks before touching memory.
    unsafe {
        assert_eq!(CmdRing::new(CmdFormat::Pm4, base, 48, w, r, &db).err(), Some(RingError::NotPowerOfTwo));
        assert_eq!(CmdRing::new(CmdFormat::Pm4, base.add(2), 64, w, r, &db).err(), Some(RingError::Misaligned));
        assert_eq!(CmdRing::new(CmdFormat::Sdma, base, 64, std::ptr::null_mut(), r, &db).err(), Some(RingError::Null));
    }
}

/// A CP reports its PM4 read pointer as a dword offset that wraps at the ring size (kfdtest's
/// PM4Queue::Rptr); the writer must read it modulo the ring, never as "far behind".
#[test]
fn pm4_read_pointer_that_wraps_at_the_ring_size() {
    let m = Mem::new(16);
    let mut ring = m.writer(CmdFormat::Pm4);
    let rm = pm4::Repr::compute(pm4::Command::ReleaseMem(pm4::ReleaseMem::eop(0x1000, 1)));
    for round in 1..=5u64 {
        ring.write_pm4(&rm).unwrap();
        let w = ring.commit();
        assert_eq!(w, round * 8);
        // The processor consumed everything and reports its position wrapped.
        m.rptr.store(w % 16, Ordering::Release);
        assert_eq!(ring.free_bytes(), 60, "round {round}: an empty ring less the dword kept free");
    }
    // Half consumed: 8 dwords in flight, 7 free (one stays free).
    ring.write_pm4(&rm).unwrap();
    ring.commit();
    assert_eq!(ring.free_bytes(), 28);
}
