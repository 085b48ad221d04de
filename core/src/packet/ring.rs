//! Dispatch-side AQL ring writer: how a producer puts a packet on a user-mode queue that the
//! packet processor (the CP, or the model's engine) reads. No lock and no allocation: a slot is
//! reserved with one atomic add on the write index, the body is written, the header word is
//! stored last with release ordering (the processor polls it), then the doorbell is rung.
//!
//! This is one of the few places the core touches raw memory: the ring, the read/write indices
//! and the doorbell are shared with the GPU, so they are raw pointers behind an `unsafe fn new`.

use super::aql::{self, PacketType, PACKET_LEN};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The word a free slot's header holds: type INVALID, no fences (what the processor writes back
/// after consuming a packet, and what a fresh ring is filled with).
pub const INVALID_HEADER_WORD: u32 = PacketType::Invalid as u32;

/// Tells the packet processor that packets up to `write_index` are ready.
pub trait Doorbell {
    fn ring(&self, write_index: u64);
}

/// A doorbell that is a 64-bit word in memory: a slot of the mapped doorbell page, or a model
/// doorbell. ROCr's AQL queues on gfx9+ write the index of the last packet there.
impl Doorbell for AtomicU64 {
    #[inline]
    fn ring(&self, write_index: u64) {
        self.store(write_index, Ordering::Release);
    }
}

impl<D: Doorbell + ?Sized> Doorbell for &D {
    #[inline]
    fn ring(&self, write_index: u64) {
        (**self).ring(write_index)
    }
}

/// A doorbell at a raw address (the mapped doorbell page).
#[derive(Debug)]
pub struct DoorbellPtr(NonNull<AtomicU64>);

impl DoorbellPtr {
    /// # Safety
    /// `ptr` must be non-null, 8-byte aligned and writable for as long as the value lives, and
    /// every other access to it must be atomic (or by the device).
    pub const unsafe fn new(ptr: *mut u64) -> Self {
        // SAFETY: the caller promises a non-null, aligned pointer; AtomicU64 has u64's layout.
        DoorbellPtr(unsafe { NonNull::new_unchecked(ptr.cast::<AtomicU64>()) })
    }
}

impl Doorbell for DoorbellPtr {
    #[inline]
    fn ring(&self, write_index: u64) {
        // SAFETY: `new`'s contract: valid, aligned, only accessed atomically.
        unsafe { self.0.as_ref() }.store(write_index, Ordering::Release)
    }
}

// SAFETY: the doorbell is a plain atomic word; writing it from any thread is what it is for.
unsafe impl Send for DoorbellPtr {}
// SAFETY: as above; `ring` takes `&self` and only does an atomic store.
unsafe impl Sync for DoorbellPtr {}

/// Why a ring could not be set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingError {
    /// A null ring base or index pointer.
    Null,
    /// The size in packets is 0 or not a power of two.
    NotPowerOfTwo,
    /// The ring base is not 64-byte aligned or an index not 8-byte aligned.
    Misaligned,
}

/// A producer's handle on an AQL ring in shared memory. Several producers (threads) may share
/// one: reservation is a single `fetch_add`.
#[derive(Debug)]
pub struct AqlRing<D: Doorbell> {
    base: NonNull<u8>,
    mask: u64,
    write_index: NonNull<AtomicU64>,
    read_index: NonNull<AtomicU64>,
    doorbell: D,
}

// SAFETY: all shared state is reached through atomics (indices, header words) or through slots
// that one producer owns exclusively between reservation and publication.
unsafe impl<D: Doorbell + Send> Send for AqlRing<D> {}
// SAFETY: as above; `&AqlRing` only reserves slots atomically.
unsafe impl<D: Doorbell + Sync> Sync for AqlRing<D> {}

impl<D: Doorbell> AqlRing<D> {
    /// # Safety
    /// For as long as the returned ring (and any [`Slot`] from it) lives:
    /// - `base` points to `size_packets * 64` bytes, readable and writable, 64-byte aligned;
    /// - `write_index` and `read_index` point to 8-byte aligned `u64`s that everyone else
    ///   (other producers, the packet processor) accesses only atomically;
    /// - the packet processor reads a slot only after it sees a valid header there (with acquire
    ///   ordering), stores INVALID back into the header when done, and advances `read_index`
    ///   with release ordering after it has finished reading the slot.
    ///
    /// The slots are not initialised here: a new ring must already hold INVALID headers.
    pub unsafe fn new(
        base: *mut u8,
        size_packets: u32,
        write_index: *mut u64,
        read_index: *mut u64,
        doorbell: D,
    ) -> Result<Self, RingError> {
        let (Some(b), Some(w), Some(r)) = (NonNull::new(base), NonNull::new(write_index), NonNull::new(read_index)) else {
            return Err(RingError::Null);
        };
        if !size_packets.is_power_of_two() {
            return Err(RingError::NotPowerOfTwo);
        }
        if base as usize & (PACKET_LEN - 1) != 0 || write_index as usize & 7 != 0 || read_index as usize & 7 != 0 {
            return Err(RingError::Misaligned);
        }
        Ok(AqlRing { base: b, mask: size_packets as u64 - 1, write_index: w.cast(), read_index: r.cast(), doorbell })
    }

    /// Size in packets.
    pub fn size(&self) -> u64 {
        self.mask + 1
    }

    pub fn doorbell(&self) -> &D {
        &self.doorbell
    }

    fn write_index(&self) -> &AtomicU64 {
        // SAFETY: `new`'s contract: valid, aligned, accessed only atomically.
        unsafe { self.write_index.as_ref() }
    }

    fn read_index(&self) -> &AtomicU64 {
        // SAFETY: as for `write_index`.
        unsafe { self.read_index.as_ref() }
    }

    pub fn load_write_index(&self) -> u64 {
        self.write_index().load(Ordering::Relaxed)
    }

    pub fn load_read_index(&self) -> u64 {
        self.read_index().load(Ordering::Acquire)
    }

    fn slot(&self, index: u64) -> Slot<'_, D> {
        // `index & mask` < size, so the offset stays inside the ring (`new`'s contract).
        let offset = (index & self.mask) as usize * PACKET_LEN;
        // SAFETY: in bounds of the ring allocation, see above.
        let ptr = unsafe { self.base.add(offset) };
        Slot { ring: self, index, ptr, header: INVALID_HEADER_WORD, published: false }
    }

    /// Reserves the next slot: one wait-free `fetch_add` on the write index, then (as ROCr does)
    /// spins only while the ring is full, until the processor has consumed the packet that last
    /// used the slot.
    #[inline]
    pub fn reserve(&self) -> Slot<'_, D> {
        let index = self.write_index().fetch_add(1, Ordering::Relaxed);
        while index.wrapping_sub(self.load_read_index()) >= self.size() {
            core::hint::spin_loop();
        }
        self.slot(index)
    }

    /// Reserves the next slot unless the ring is full (lock-free: a compare-exchange loop).
    pub fn try_reserve(&self) -> Option<Slot<'_, D>> {
        let mut w = self.write_index().load(Ordering::Relaxed);
        loop {
            if w.wrapping_sub(self.load_read_index()) >= self.size() {
                return None;
            }
            match self.write_index().compare_exchange_weak(w, w + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return Some(self.slot(w)),
                Err(now) => w = now,
            }
        }
    }

    /// Reserve, write, publish, ring: the whole submit. Returns the packet's index.
    #[inline]
    pub fn submit(&self, packet: &aql::Repr) -> u64 {
        let mut slot = self.reserve();
        slot.write(packet);
        slot.commit()
    }

    /// Rings the doorbell for packets up to `index` (after several [`Slot::publish`]es).
    #[inline]
    pub fn ring_doorbell(&self, index: u64) {
        self.doorbell.ring(index)
    }
}

/// A reserved slot. The processor stops at it (its header is INVALID) until it is published;
/// dropping it unpublished publishes a barrier-AND with no dependencies so the queue does not
/// stall forever.
#[derive(Debug)]
pub struct Slot<'r, D: Doorbell> {
    ring: &'r AqlRing<D>,
    index: u64,
    ptr: NonNull<u8>,
    header: u32,
    published: bool,
}

impl<D: Doorbell> Slot<'_, D> {
    /// The packet's index (the value the write index had).
    pub fn index(&self) -> u64 {
        self.index
    }

    /// Writes bytes 4..64 of `packet` into the slot; the header word stays INVALID.
    #[inline]
    pub fn write(&mut self, packet: &aql::Repr) {
        let bytes = packet.to_bytes();
        self.write_body(&bytes);
        self.header = packet.header_word();
    }

    #[inline]
    fn write_body(&mut self, bytes: &[u8; PACKET_LEN]) {
        // SAFETY: the slot is 64 bytes inside the ring (`AqlRing::slot`) and ours alone: the
        // write index reservation gave it to this producer and `reserve` waited until the
        // processor had finished with it. Bytes 0..4 (the header word the processor polls) are
        // not touched here.
        unsafe { core::ptr::copy_nonoverlapping(bytes.as_ptr().add(4), self.ptr.as_ptr().add(4), PACKET_LEN - 4) }
    }

    #[inline]
    fn store_header(&mut self, word: u32) {
        // SAFETY: the slot start is 64-byte aligned (so 4-byte aligned) and the processor reads
        // the header word only atomically; the release store orders the body writes before it.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().cast::<u32>()) }.store(word, Ordering::Release);
        self.published = true;
    }

    /// Stores the header word (release) without ringing the doorbell; returns the index. A slot
    /// that was never written is published as the no-op barrier (see [`Slot`]).
    #[inline]
    pub fn publish(mut self) -> u64 {
        if self.header != INVALID_HEADER_WORD {
            self.store_header(self.header);
        }
        self.index
    }

    /// Publishes and rings the doorbell with this packet's index.
    #[inline]
    pub fn commit(self) -> u64 {
        let ring = self.ring;
        let index = self.publish();
        ring.doorbell.ring(index);
        index
    }
}

impl<D: Doorbell> Drop for Slot<'_, D> {
    fn drop(&mut self) {
        if !self.published {
            let nop = aql::Repr::new(aql::Body::BarrierAnd(aql::Barrier::default())).fences(aql::FenceScope::None, aql::FenceScope::None);
            self.write_body(&nop.to_bytes());
            self.store_header(nop.header_word());
            self.ring.doorbell.ring(self.index);
        }
    }
}

/// Which packets a command ring carries; it decides the padding NOP and the write-pointer unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmdFormat {
    /// PM4 compute ring: read/write pointers count dwords.
    Pm4,
    /// SDMA ring: read/write pointers count bytes.
    Sdma,
}

impl CmdFormat {
    /// log2 of the pointer unit in bytes.
    const fn unit_shift(self) -> u32 {
        match self {
            CmdFormat::Pm4 => 2,
            CmdFormat::Sdma => 0,
        }
    }
}

/// Why a command could not be put on a PM4/SDMA ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmdRingError {
    /// Not enough free space until the processor catches up (nothing was written).
    Full,
    /// The packet is larger than the whole ring.
    TooLarge,
    /// The packet itself does not encode.
    Packet(super::Error),
    /// A PM4 packet on an SDMA ring or the reverse.
    WrongFormat,
}

/// Largest NOP used for padding, in dwords (both formats carry a 14-bit count).
const PAD_NOP_MAX_DWORDS: u64 = 0x4000;

/// A single producer's handle on a PM4 or SDMA ring in shared memory. Packets never straddle the
/// end of the ring: when one would, the rest of the ring is filled with NOPs and the packet
/// starts again at offset 0. Writes become visible to the processor at [`CmdRing::commit`],
/// which stores the write pointer with release ordering and rings the doorbell.
#[derive(Debug)]
pub struct CmdRing<D: Doorbell> {
    format: CmdFormat,
    base: NonNull<u8>,
    size: u64,
    /// Bytes written so far (monotonic); published at `commit`.
    wptr: u64,
    write_ptr: NonNull<AtomicU64>,
    read_ptr: NonNull<AtomicU64>,
    doorbell: D,
}

// SAFETY: the ring memory is reached only through the write/read pointers' protocol; moving the
// single producer to another thread is fine.
unsafe impl<D: Doorbell + Send> Send for CmdRing<D> {}

impl<D: Doorbell> CmdRing<D> {
    /// # Safety
    /// For as long as the returned ring lives:
    /// - `base` points to `size_bytes` readable and writable bytes, 4-byte aligned;
    /// - `write_ptr` and `read_ptr` point to 8-byte aligned `u64`s in the format's unit (dwords
    ///   for PM4, bytes for SDMA); nobody else writes `write_ptr`, and the processor advances
    ///   `read_ptr` with release ordering once it has finished reading the bytes before it;
    /// - the processor reads ring bytes only below the published write pointer.
    ///
    /// The producer starts at the current write pointer.
    pub unsafe fn new(
        format: CmdFormat,
        base: *mut u8,
        size_bytes: u32,
        write_ptr: *mut u64,
        read_ptr: *mut u64,
        doorbell: D,
    ) -> Result<Self, RingError> {
        let (Some(b), Some(w), Some(r)) = (NonNull::new(base), NonNull::new(write_ptr), NonNull::new(read_ptr)) else {
            return Err(RingError::Null);
        };
        if !size_bytes.is_power_of_two() || size_bytes < 4 {
            return Err(RingError::NotPowerOfTwo);
        }
        if base as usize & 3 != 0 || write_ptr as usize & 7 != 0 || read_ptr as usize & 7 != 0 {
            return Err(RingError::Misaligned);
        }
        let write_ptr: NonNull<AtomicU64> = w.cast();
        // SAFETY: `new`'s contract: valid, aligned, atomically accessed.
        let wptr = unsafe { write_ptr.as_ref() }.load(Ordering::Relaxed) << format.unit_shift();
        Ok(CmdRing { format, base: b, size: size_bytes as u64, wptr, write_ptr, read_ptr: r.cast(), doorbell })
    }

    pub fn format(&self) -> CmdFormat {
        self.format
    }

    /// Bytes written so far, committed or not.
    pub fn write_offset(&self) -> u64 {
        self.wptr
    }

    fn read_bytes(&self) -> u64 {
        // SAFETY: `new`'s contract: valid, aligned, atomically accessed.
        unsafe { self.read_ptr.as_ref() }.load(Ordering::Acquire) << self.format.unit_shift()
    }

    /// Free bytes, as far as the processor's read pointer says. The pointers are compared
    /// modulo the ring size because a CP reports its PM4 read pointer as a 32-bit dword offset
    /// that wraps at the ring size (SDMA engines report a monotonic byte count; both read the
    /// same way here). One dword always stays free, so a full ring never reads as empty.
    pub fn free_bytes(&self) -> u64 {
        let used = self.wptr.wrapping_sub(self.read_bytes()) & (self.size - 1);
        self.size - used - 4
    }

    /// The ring bytes `[offset, offset + len)`, which the caller has checked are free.
    fn area(&mut self, offset: u64, len: usize) -> &mut [u8] {
        // SAFETY: `offset + len <= size` (callers never straddle the end), the bytes are inside
        // the ring (`new`'s contract), and they are free: the processor has read past them
        // (`free_bytes`) and will not read them before the next `commit`. `&mut self` makes
        // this the only reference.
        unsafe { core::slice::from_raw_parts_mut(self.base.as_ptr().add(offset as usize), len) }
    }

    /// Room for `len` contiguous bytes: pads to the end of the ring with NOPs when needed.
    fn make_room(&mut self, len: u64) -> Result<u64, CmdRingError> {
        if len > self.size {
            return Err(CmdRingError::TooLarge);
        }
        let offset = self.wptr & (self.size - 1);
        let pad = if offset + len > self.size { self.size - offset } else { 0 };
        if self.free_bytes() < pad + len {
            return Err(CmdRingError::Full);
        }
        let mut left = pad / 4;
        let mut at = offset;
        while left > 0 {
            let n = left.min(PAD_NOP_MAX_DWORDS);
            let format = self.format;
            let area = self.area(at, 4 * n as usize);
            // Padding NOPs always fit their count fields (n <= 0x4000), so these cannot fail.
            let _ = match format {
                CmdFormat::Pm4 => super::pm4::Repr::compute(super::pm4::Command::Nop { body_dwords: (n - 1) as u16 })
                    .emit(&mut super::pm4::Packet::new_unchecked(area)),
                CmdFormat::Sdma => super::sdma::Repr::Nop { count: (n - 1) as u16 }.emit(&mut super::sdma::Packet::new_unchecked(area)),
            };
            at += 4 * n;
            left -= n;
        }
        self.wptr += pad;
        Ok(self.wptr & (self.size - 1))
    }

    /// Writes one PM4 packet (not yet visible: see [`CmdRing::commit`]).
    pub fn write_pm4(&mut self, packet: &super::pm4::Repr) -> Result<(), CmdRingError> {
        if self.format != CmdFormat::Pm4 {
            return Err(CmdRingError::WrongFormat);
        }
        packet.check().map_err(CmdRingError::Packet)?;
        let len = packet.buffer_len();
        let offset = self.make_room(len as u64)?;
        packet.emit(&mut super::pm4::Packet::new_unchecked(self.area(offset, len))).map_err(CmdRingError::Packet)?;
        self.wptr += len as u64;
        Ok(())
    }

    /// Writes one SDMA packet (not yet visible: see [`CmdRing::commit`]).
    pub fn write_sdma(&mut self, packet: &super::sdma::Repr) -> Result<(), CmdRingError> {
        if self.format != CmdFormat::Sdma {
            return Err(CmdRingError::WrongFormat);
        }
        packet.check().map_err(CmdRingError::Packet)?;
        let len = packet.buffer_len();
        let offset = self.make_room(len as u64)?;
        packet.emit(&mut super::sdma::Packet::new_unchecked(self.area(offset, len))).map_err(CmdRingError::Packet)?;
        self.wptr += len as u64;
        Ok(())
    }

    /// Publishes everything written: stores the write pointer (release, in the format's unit)
    /// and rings the doorbell with it. Returns the published write pointer.
    pub fn commit(&mut self) -> u64 {
        let w = self.wptr >> self.format.unit_shift();
        // SAFETY: `new`'s contract: valid, aligned, only this producer writes it.
        unsafe { self.write_ptr.as_ref() }.store(w, Ordering::Release);
        self.doorbell.ring(w);
        w
    }
}
