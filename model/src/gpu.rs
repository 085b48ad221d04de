//! Checked GPU-virtual-address accesses for the GPU engines: reads, writes and atomics go
//! through the GPU's page table (built by MAP / UNMAP) to the BO's backing. An address that no
//! mapping covers, a write to a read-only mapping, or a userptr page the process has since
//! unmapped is a [`GpuFault`], never a host crash.
//!
//! When the BO page table misses, the GPU's SVM view is consulted (`svm.rs`,
//! `Model::svm_gpu_reach`): SVM ranges the GPU may access are process memory at GPU VA == CPU
//! VA, reached with checked copies like userptr BOs; a page the CPU unmapped is NotMapped, a
//! write to a GPU_RO range or a read-only CPU page is ReadOnly.
//!
//! Memfd-backed BOs (VRAM, GTT, doorbell, MMIO, imports) are reached through the model's own
//! shared mapping of the BO (made on first access, like a kernel kmap), so GPU atomics are real
//! atomics on the same pages the CPU maps. Userptr BOs and SVM memory are process memory reached with
//! checked copies; their atomics are read-modify-write sequences that are atomic with respect to other
//! model GPU accesses (which hold the model lock) but not to concurrent CPU atomics.
//!
//! # Typed accessors (rust-vmm vm-memory's rule for memory shared with another agent)
//!
//! GPU memory is shared with the CPU (the thunk's and the runtime's mappings of the same pages)
//! and with other queues' engines, so the model never forms a `&T` / `&mut T` to plain data in
//! it. It is reached only through:
//! - [`Model::gpu_read`] / [`Model::gpu_write`] and [`Model::gpu_read_obj`] /
//!   [`Model::gpu_write_obj`]: plain data that a protocol says the other side does not change
//!   meanwhile (a packet body after its header was acquired, a kernel argument, a copy's
//!   source). The model's side is volatile word-sized copies, so the compiler neither assumes
//!   the bytes unchanged nor merges, splits into more or invents accesses.
//! - [`Model::gpu_load`] / [`Model::gpu_store`] with an explicit [`Ordering`]: words the other
//!   side changes concurrently (packet headers, read / write pointers, signal values, fence and
//!   poll words). A naturally aligned word is one atomic access; in process memory (userptr,
//!   SVM) it is a checked kernel copy ordered by a fence, the best a model outside the kernel
//!   can do there.
//! - [`Model::gpu_atomic_u32`] and friends: read-modify-write (signals, SDMA atomics).

use crate::devmem::DeviceMemory;
use crate::mem::{Backing, Bo};
use crate::model::{Model, Process};
use crate::sys::current_pid;
use crate::usercopy::{copy_from_user, copy_to_user};
use std::sync::atomic::{fence, AtomicU16, AtomicU32, AtomicU64, Ordering};
use zerocopy::{FromBytes, Immutable, IntoBytes};

/// Why a GPU access faulted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GpuFaultKind {
    /// No GPU with this id.
    UnknownGpu,
    /// The calling process has not opened the model (e.g. a forked child before re-opening).
    NoProcess,
    /// No mapping covers the address on this GPU (never mapped, unmapped, or freed).
    NotMapped,
    /// A write to a mapping without write permission.
    ReadOnly,
    /// An atomic at an address not aligned to its size.
    Misaligned,
    /// The backing is not reachable: a userptr range the process unmapped, or the model could
    /// not map the BO.
    HostFault,
}

/// A GPU page fault: the first faulting address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuFault {
    pub gpu_id: u32,
    pub va: u64,
    pub write: bool,
    pub kind: GpuFaultKind,
}

impl std::fmt::Display for GpuFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let rw = if self.write { "write" } else { "read" };
        write!(f, "GPU {} {rw} fault at {:#x}: {:?}", self.gpu_id, self.va, self.kind)
    }
}

impl std::error::Error for GpuFault {}

/// Atomic read-modify-write operations ([`Model::gpu_atomic_u32`], [`Model::gpu_atomic_u64`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AtomicOp {
    Swap,
    Add,
    Sub,
    And,
    Or,
    Xor,
    /// Signed minimum / maximum.
    SMin,
    SMax,
    /// Unsigned minimum / maximum.
    UMin,
    UMax,
}

mod sealed {
    pub trait Sealed {}
}

/// A word the GPU loads and stores as one access ([`Model::gpu_load`], [`Model::gpu_store`]):
/// `u16`, `u32` or `u64`, in the GPU's (little-endian) byte order.
pub trait GpuWord: sealed::Sealed + Copy + Into<u64> + std::fmt::Debug + 'static {
    /// Its size in bytes (and its natural alignment).
    const BYTES: usize;
    /// From the first `BYTES` bytes of `b`.
    fn from_le(b: &[u8]) -> Self;
    /// Write its `BYTES` bytes to the front of `b`.
    fn put_le(self, b: &mut [u8]);
    /// An atomic load at `ptr`.
    ///
    /// # Safety
    /// `ptr` must be valid for reads of `BYTES` bytes, naturally aligned, and every concurrent
    /// access to it must be atomic.
    unsafe fn load(ptr: usize, order: Ordering) -> Self;
    /// An atomic store at `ptr`.
    ///
    /// # Safety
    /// As [`GpuWord::load`], valid for writes.
    unsafe fn store(ptr: usize, v: Self, order: Ordering);
}

macro_rules! gpu_word {
    ($($t:ty => $a:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl GpuWord for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            fn from_le(b: &[u8]) -> Self {
                let mut w = [0u8; std::mem::size_of::<$t>()];
                w.copy_from_slice(&b[..Self::BYTES]);
                <$t>::from_le_bytes(w)
            }
            fn put_le(self, b: &mut [u8]) {
                b[..Self::BYTES].copy_from_slice(&self.to_le_bytes());
            }
            unsafe fn load(ptr: usize, order: Ordering) -> Self {
                // SAFETY: the caller's contract; the atomic type has the integer's layout.
                <$t>::from_le(unsafe { <$a>::from_ptr(ptr as *mut $t) }.load(order))
            }
            unsafe fn store(ptr: usize, v: Self, order: Ordering) {
                // SAFETY: as in `load`.
                unsafe { <$a>::from_ptr(ptr as *mut $t) }.store(v.to_le(), order)
            }
        }
    )*};
}

gpu_word!(u16 => AtomicU16, u32 => AtomicU32, u64 => AtomicU64);

/// Copy `dst.len()` bytes from `src`, memory another agent may access meanwhile: volatile
/// reads, 8 bytes at a time where `src` is aligned (vm-memory's copies of guest memory).
///
/// # Safety
/// `src` must be valid for reads of `dst.len()` bytes.
unsafe fn copy_from_shared(src: usize, dst: &mut [u8]) {
    let mut i = 0;
    while i < dst.len() {
        let at = src + i;
        if at.is_multiple_of(8) && dst.len() - i >= 8 {
            // SAFETY: inside the caller's range, 8-aligned.
            let w = unsafe { std::ptr::read_volatile(at as *const u64) };
            dst[i..i + 8].copy_from_slice(&w.to_ne_bytes());
            i += 8;
        } else {
            // SAFETY: inside the caller's range.
            dst[i] = unsafe { std::ptr::read_volatile(at as *const u8) };
            i += 1;
        }
    }
}

/// Copy `src` to `dst`, memory another agent may access meanwhile (as [`copy_from_shared`]).
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes.
unsafe fn copy_to_shared(dst: usize, src: &[u8]) {
    let mut i = 0;
    while i < src.len() {
        let at = dst + i;
        if at.is_multiple_of(8) && src.len() - i >= 8 {
            let w = u64::from_ne_bytes(src[i..i + 8].try_into().unwrap_or_default());
            // SAFETY: inside the caller's range, 8-aligned.
            unsafe { std::ptr::write_volatile(at as *mut u64, w) };
            i += 8;
        } else {
            // SAFETY: inside the caller's range.
            unsafe { std::ptr::write_volatile(at as *mut u8, src[i]) };
            i += 1;
        }
    }
}

/// The engines' accesses as a test sees them: which word was loaded or stored with which
/// ordering, before or after which plain read (unit tests only; nothing is recorded otherwise).
#[cfg(test)]
pub(crate) mod trace {
    use std::cell::RefCell;
    use std::sync::atomic::Ordering;

    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Access {
        Read { va: u64, len: usize },
        Write { va: u64, len: usize },
        Load { va: u64, len: usize, order: Ordering },
        Store { va: u64, len: usize, order: Ordering },
        Rmw { va: u64, len: usize },
    }

    thread_local! {
        static TRACE: RefCell<Option<Vec<Access>>> = const { RefCell::new(None) };
    }

    /// Record this thread's accesses from now on.
    pub(crate) fn start() {
        TRACE.with(|t| *t.borrow_mut() = Some(Vec::new()));
    }

    /// What was recorded since [`start`] (recording goes on).
    pub(crate) fn take() -> Vec<Access> {
        TRACE.with(|t| t.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default())
    }

    pub(crate) fn record(a: Access) {
        TRACE.with(|t| {
            if let Some(v) = t.borrow_mut().as_mut() {
                v.push(a);
            }
        });
    }
}

/// Where one naturally aligned word of GPU memory lives.
enum WordAt {
    /// In the model's own mapping of a BO, at this host address (valid while the model lock is
    /// held: the BO and its mapping cannot go away).
    Mapped(usize),
    /// Process memory (userptr or SVM), reached with checked copies.
    User { addr: u64, svm: bool },
}

/// Where one piece of an access lands.
enum Target<'a> {
    /// A file-backed BO, at this offset in it.
    Bo(&'a mut Bo, u64),
    /// Process memory at `addr`: a userptr BO's pages, or (`svm`) an SVM range's, whose GPU VA
    /// is the CPU address.
    User { addr: u64, svm: bool },
}

/// One resolved piece of an access: where it lands, and how many bytes of the access this
/// mapping covers.
struct Piece<'a> {
    target: Target<'a>,
    len: usize,
}

impl Model {
    /// The mapping of `va` on GPU `g` with room for up to `want` bytes: the GPU's BO page
    /// table first, then its SVM view (`svm.rs`, [`Model::svm_gpu_reach`]). Both lookups are
    /// O(log n) and allocate nothing.
    fn resolve<'a>(&self, st: &'a mut Process, g: usize, va: u64, want: usize, write: bool) -> Result<Piece<'a>, GpuFaultKind> {
        let pt = &st.mem.gpus[g].pt;
        let hit = pt.range(..=va).next_back().filter(|(_, p)| va < p.end).map(|(&start, &pte)| (start, pte));
        if let Some((start, pte)) = hit {
            if write && !pte.writable {
                return Err(GpuFaultKind::ReadOnly);
            }
            let len = ((pte.end - va) as u128).min(want as u128) as usize;
            let bo_off = pte.bo_offset + (va - start);
            let bo = st.mem.bos.get_mut(&pte.handle).ok_or(GpuFaultKind::NotMapped)?;
            let target = match bo.backing {
                Backing::User { addr } => Target::User { addr: addr + bo_off, svm: false },
                _ => Target::Bo(bo, bo_off),
            };
            return Ok(Piece { target, len });
        }
        // Not a BO mapping on this GPU: SVM memory, up to the next BO mapping at most.
        let next_bo = pt.range(va..).next().map_or(u64::MAX, |(&s, _)| s);
        let (end, writable) = self.svm_gpu_reach(st, g, va).ok_or(GpuFaultKind::NotMapped)?;
        if write && !writable {
            return Err(GpuFaultKind::ReadOnly);
        }
        let len = ((end.min(next_bo) - va) as u128).min(want as u128) as usize;
        Ok(Piece { target: Target::User { addr: va, svm: true }, len })
    }
}

/// The fault of a checked copy to or from process memory that failed at `addr`. A userptr page
/// the process unmapped is a host fault (the BO mapping stays). SVM memory follows the CPU's
/// mappings (svm_range_validate_and_map): a page the CPU no longer maps (svm_range_unmap_from_cpu)
/// or maps without read permission is not mapped on the GPU, and one the CPU maps read-only is
/// mapped read-only (`readonly = !(vma->vm_flags & VM_WRITE)`).
fn user_fault(addr: u64, svm: bool, write: bool) -> GpuFaultKind {
    if !svm {
        return GpuFaultKind::HostFault;
    }
    let mut probe = [0u8; 1];
    if write && copy_from_user(&mut probe, addr as usize).is_ok() {
        GpuFaultKind::ReadOnly
    } else {
        GpuFaultKind::NotMapped
    }
}

/// The model's mapping of a memfd-backed BO: its address.
fn kmap(dev: &DeviceMemory, bo: &mut Bo) -> Result<usize, GpuFaultKind> {
    if let Some((a, _)) = bo.kmap {
        return Ok(a);
    }
    let off = bo.backing.file_offset().ok_or(GpuFaultKind::HostFault)?;
    let len = usize::try_from(bo.size).map_err(|_| GpuFaultKind::HostFault)?;
    use rustix::mm::{MapFlags, ProtFlags};
    // SAFETY: a new shared mapping of the BO's range of the device memfd, at an address the
    // kernel picks; the file is never truncated (fixed sparse size), so accesses cannot SIGBUS.
    let p = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, dev.fd(), off) }
        .map_err(|_| GpuFaultKind::HostFault)?;
    bo.kmap = Some((p as usize, len));
    Ok(p as usize)
}

impl Model {
    fn gpu_access(
        &self,
        gpu_id: u32,
        va: u64,
        len: usize,
        write: bool,
        mut f: impl FnMut(&DeviceMemory, Piece<'_>, usize) -> Result<(), GpuFaultKind>,
    ) -> Result<(), GpuFault> {
        let fault = |va: u64, kind| GpuFault { gpu_id, va, write, kind };
        let g = self.gpu_index(gpu_id).ok_or(fault(va, GpuFaultKind::UnknownGpu))?;
        let mut st = self.lock();
        if st.pid != current_pid() {
            return Err(fault(va, GpuFaultKind::NoProcess));
        }
        let dev = self.devmem().map_err(|_| fault(va, GpuFaultKind::HostFault))?;
        let mut done = 0usize;
        while done < len {
            let at = va.checked_add(done as u64).ok_or(fault(u64::MAX, GpuFaultKind::NotMapped))?;
            let piece = self.resolve(&mut st, g, at, len - done, write).map_err(|k| fault(at, k))?;
            let n = piece.len;
            f(dev, piece, done).map_err(|k| fault(at, k))?;
            done += n;
        }
        Ok(())
    }

    /// Read `buf.len()` bytes of plain data at GPU virtual address `va` of GPU `gpu_id` (see
    /// the module notes: not for words the other side changes meanwhile).
    pub fn gpu_read(&self, gpu_id: u32, va: u64, buf: &mut [u8]) -> Result<(), GpuFault> {
        let buf_len = buf.len();
        #[cfg(test)]
        trace::record(trace::Access::Read { va, len: buf_len });
        self.gpu_access(gpu_id, va, buf_len, false, |dev, p, done| {
            let dst = &mut buf[done..done + p.len];
            match p.target {
                Target::User { addr, svm } => copy_from_user(dst, addr as usize).map_err(|_| user_fault(addr, svm, false)),
                Target::Bo(bo, off) => {
                    let base = kmap(dev, bo)?;
                    // SAFETY: the mapping covers the whole BO and `off + len` lies inside it
                    // (the page table entry is within the BO); `dst` is a distinct buffer.
                    unsafe { copy_from_shared(base + off as usize, dst) };
                    Ok(())
                }
            }
        })
    }

    /// Write `data` (plain data) at GPU virtual address `va` of GPU `gpu_id`.
    pub fn gpu_write(&self, gpu_id: u32, va: u64, data: &[u8]) -> Result<(), GpuFault> {
        #[cfg(test)]
        trace::record(trace::Access::Write { va, len: data.len() });
        self.gpu_access(gpu_id, va, data.len(), true, |dev, p, done| {
            let src = &data[done..done + p.len];
            match p.target {
                Target::User { addr, svm } => copy_to_user(addr as usize, src).map_err(|_| user_fault(addr, svm, true)),
                Target::Bo(bo, off) => {
                    let base = kmap(dev, bo)?;
                    // SAFETY: as in `gpu_read`, with the mapping writable and `src` distinct.
                    unsafe { copy_to_shared(base + off as usize, src) };
                    Ok(())
                }
            }
        })
    }

    /// Read a plain-data object at `va` (vm-memory's `read_obj`).
    pub fn gpu_read_obj<T: FromBytes + IntoBytes>(&self, gpu_id: u32, va: u64) -> Result<T, GpuFault> {
        let mut v = T::new_zeroed();
        self.gpu_read(gpu_id, va, v.as_mut_bytes())?;
        Ok(v)
    }

    /// Write a plain-data object at `va` (vm-memory's `write_obj`).
    pub fn gpu_write_obj<T: IntoBytes + Immutable>(&self, gpu_id: u32, va: u64, v: &T) -> Result<(), GpuFault> {
        self.gpu_write(gpu_id, va, v.as_bytes())
    }

    /// The naturally aligned `size`-byte word at `va`, for `f` (called once). A word that is
    /// not naturally aligned is a Misaligned fault.
    fn with_word<R>(
        &self,
        gpu_id: u32,
        va: u64,
        size: usize,
        write: bool,
        f: impl FnOnce(WordAt) -> Result<R, GpuFaultKind>,
    ) -> Result<R, GpuFault> {
        if va & (size as u64 - 1) != 0 {
            return Err(GpuFault { gpu_id, va, write, kind: GpuFaultKind::Misaligned });
        }
        let mut f = Some(f);
        let mut out = None;
        self.gpu_access(gpu_id, va, size, write, |dev, p, _| {
            // An aligned word never straddles a page, so it is one piece.
            if p.len != size {
                return Err(GpuFaultKind::Misaligned);
            }
            let at = match p.target {
                Target::User { addr, svm } => WordAt::User { addr, svm },
                Target::Bo(bo, off) => WordAt::Mapped(kmap(dev, bo)? + off as usize),
            };
            let f = f.take().ok_or(GpuFaultKind::HostFault)?;
            out = Some(f(at)?);
            Ok(())
        })?;
        out.ok_or(GpuFault { gpu_id, va, write, kind: GpuFaultKind::HostFault })
    }

    /// Load the word at `va` with `order` (Relaxed, Acquire or SeqCst): a word the other side
    /// may change meanwhile (vm-memory's `load`). It must be naturally aligned (else a
    /// Misaligned fault). In process memory it is a checked copy followed by an acquire fence.
    pub fn gpu_load<W: GpuWord>(&self, gpu_id: u32, va: u64, order: Ordering) -> Result<W, GpuFault> {
        #[cfg(test)]
        trace::record(trace::Access::Load { va, len: W::BYTES, order });
        self.with_word(gpu_id, va, W::BYTES, false, |at| match at {
            // SAFETY: inside the model's live mapping of the BO (the model lock is held),
            // naturally aligned (checked), and everyone else reaches the word atomically or
            // through their own mappings of the same pages.
            WordAt::Mapped(ptr) => Ok(unsafe { W::load(ptr, order) }),
            WordAt::User { addr, svm } => {
                let mut b = [0u8; 8];
                copy_from_user(&mut b[..W::BYTES], addr as usize).map_err(|_| user_fault(addr, svm, false))?;
                if order != Ordering::Relaxed {
                    fence(Ordering::Acquire);
                }
                Ok(W::from_le(&b))
            }
        })
    }

    /// Store `v` to the word at `va` with `order` (Relaxed, Release or SeqCst): a word the other
    /// side reads meanwhile (vm-memory's `store`). Naturally aligned, as [`Model::gpu_load`];
    /// in process memory a release fence, then a checked copy.
    pub fn gpu_store<W: GpuWord>(&self, gpu_id: u32, va: u64, v: W, order: Ordering) -> Result<(), GpuFault> {
        #[cfg(test)]
        trace::record(trace::Access::Store { va, len: W::BYTES, order });
        self.with_word(gpu_id, va, W::BYTES, true, |at| match at {
            WordAt::Mapped(ptr) => {
                // SAFETY: as in `gpu_load`, on a writable mapping (`resolve` checked the PTE).
                unsafe { W::store(ptr, v, order) };
                Ok(())
            }
            WordAt::User { addr, svm } => {
                if order != Ordering::Relaxed {
                    fence(Ordering::Release);
                }
                let mut b = [0u8; 8];
                v.put_le(&mut b);
                copy_to_user(addr as usize, &b[..W::BYTES]).map_err(|_| user_fault(addr, svm, true))
            }
        })
    }

    /// Atomic `op` of `value` on the 32-bit word at `va` (naturally aligned); returns the old
    /// value.
    pub fn gpu_atomic_u32(&self, gpu_id: u32, va: u64, op: AtomicOp, value: u32) -> Result<u32, GpuFault> {
        let old = self.atomic(gpu_id, va, 4, &mut |cur| apply32(op, cur as u32, value) as u64, Some((op, u64::from(value))))?;
        Ok(old as u32)
    }

    /// Atomic `op` of `value` on the 64-bit word at `va` (naturally aligned); returns the old
    /// value.
    pub fn gpu_atomic_u64(&self, gpu_id: u32, va: u64, op: AtomicOp, value: u64) -> Result<u64, GpuFault> {
        self.atomic(gpu_id, va, 8, &mut |cur| apply64(op, cur, value), Some((op, value)))
    }

    /// Compare-and-swap on the 32-bit word at `va`: stores `new` if it holds `expected`;
    /// returns the old value.
    pub fn gpu_cmpswap_u32(&self, gpu_id: u32, va: u64, expected: u32, new: u32) -> Result<u32, GpuFault> {
        let old =
            self.atomic(gpu_id, va, 4, &mut |cur| if cur as u32 == expected { u64::from(new) } else { cur }, None).map(|v| v as u32)?;
        Ok(old)
    }

    /// Compare-and-swap on the 64-bit word at `va`.
    pub fn gpu_cmpswap_u64(&self, gpu_id: u32, va: u64, expected: u64, new: u64) -> Result<u64, GpuFault> {
        self.atomic(gpu_id, va, 8, &mut |cur| if cur == expected { new } else { cur }, None)
    }

    /// Atomic read-modify-write of the 32-bit word at `va` with `f` (new value from old);
    /// returns the old value. For operations [`AtomicOp`] does not name (increment / decrement
    /// with wrap, compare-swap loops).
    pub(crate) fn gpu_rmw_u32(&self, gpu_id: u32, va: u64, f: &mut dyn FnMut(u32) -> u32) -> Result<u32, GpuFault> {
        self.atomic(gpu_id, va, 4, &mut |cur| u64::from(f(cur as u32)), None).map(|v| v as u32)
    }

    /// [`Model::gpu_rmw_u32`] on a 64-bit word.
    pub(crate) fn gpu_rmw_u64(&self, gpu_id: u32, va: u64, f: &mut dyn FnMut(u64) -> u64) -> Result<u64, GpuFault> {
        self.atomic(gpu_id, va, 8, f, None)
    }

    /// Read-modify-write of a `size`-byte word with `f` (new value from old); memfd-backed
    /// memory uses a CAS loop on the model's mapping (or the native op when `native` is given).
    fn atomic(
        &self,
        gpu_id: u32,
        va: u64,
        size: usize,
        f: &mut dyn FnMut(u64) -> u64,
        native: Option<(AtomicOp, u64)>,
    ) -> Result<u64, GpuFault> {
        #[cfg(test)]
        trace::record(trace::Access::Rmw { va, len: size });
        self.with_word(gpu_id, va, size, true, |at| match at {
            WordAt::User { addr, svm } => {
                let at = addr as usize;
                let mut b = [0u8; 8];
                copy_from_user(&mut b[..size], at).map_err(|_| user_fault(addr, svm, false))?;
                let old = u64::from_ne_bytes(b);
                let new = f(old).to_ne_bytes();
                copy_to_user(at, &new[..size]).map_err(|_| user_fault(addr, svm, true))?;
                Ok(old)
            }
            WordAt::Mapped(ptr) => Ok(if size == 4 {
                // SAFETY: `ptr` is 4-aligned (page-aligned mapping, aligned VA and page-aligned
                // mapping starts) and inside the live BO mapping, which other threads and
                // processes only access atomically or through their own mappings of the same
                // pages.
                let a = unsafe { AtomicU32::from_ptr(ptr as *mut u32) };
                u64::from(rmw32(a, native, f))
            } else {
                // SAFETY: as above, 8-aligned.
                let a = unsafe { AtomicU64::from_ptr(ptr as *mut u64) };
                rmw64(a, native, f)
            }),
        })
    }
}

fn apply32(op: AtomicOp, cur: u32, v: u32) -> u32 {
    match op {
        AtomicOp::Swap => v,
        AtomicOp::Add => cur.wrapping_add(v),
        AtomicOp::Sub => cur.wrapping_sub(v),
        AtomicOp::And => cur & v,
        AtomicOp::Or => cur | v,
        AtomicOp::Xor => cur ^ v,
        AtomicOp::SMin => (cur as i32).min(v as i32) as u32,
        AtomicOp::SMax => (cur as i32).max(v as i32) as u32,
        AtomicOp::UMin => cur.min(v),
        AtomicOp::UMax => cur.max(v),
    }
}

fn apply64(op: AtomicOp, cur: u64, v: u64) -> u64 {
    match op {
        AtomicOp::Swap => v,
        AtomicOp::Add => cur.wrapping_add(v),
        AtomicOp::Sub => cur.wrapping_sub(v),
        AtomicOp::And => cur & v,
        AtomicOp::Or => cur | v,
        AtomicOp::Xor => cur ^ v,
        AtomicOp::SMin => (cur as i64).min(v as i64) as u64,
        AtomicOp::SMax => (cur as i64).max(v as i64) as u64,
        AtomicOp::UMin => cur.min(v),
        AtomicOp::UMax => cur.max(v),
    }
}

fn rmw32(a: &AtomicU32, native: Option<(AtomicOp, u64)>, f: &mut dyn FnMut(u64) -> u64) -> u32 {
    const O: Ordering = Ordering::SeqCst;
    match native {
        Some((op, v)) => {
            let v = v as u32;
            match op {
                AtomicOp::Swap => a.swap(v, O),
                AtomicOp::Add => a.fetch_add(v, O),
                AtomicOp::Sub => a.fetch_sub(v, O),
                AtomicOp::And => a.fetch_and(v, O),
                AtomicOp::Or => a.fetch_or(v, O),
                AtomicOp::Xor => a.fetch_xor(v, O),
                AtomicOp::UMin => a.fetch_min(v, O),
                AtomicOp::UMax => a.fetch_max(v, O),
                AtomicOp::SMin | AtomicOp::SMax => a.fetch_update(O, O, |c| Some(apply32(op, c, v))).unwrap_or_else(|c| c),
            }
        }
        None => a.fetch_update(O, O, |c| Some(f(u64::from(c)) as u32)).unwrap_or_else(|c| c),
    }
}

fn rmw64(a: &AtomicU64, native: Option<(AtomicOp, u64)>, f: &mut dyn FnMut(u64) -> u64) -> u64 {
    const O: Ordering = Ordering::SeqCst;
    match native {
        Some((op, v)) => match op {
            AtomicOp::Swap => a.swap(v, O),
            AtomicOp::Add => a.fetch_add(v, O),
            AtomicOp::Sub => a.fetch_sub(v, O),
            AtomicOp::And => a.fetch_and(v, O),
            AtomicOp::Or => a.fetch_or(v, O),
            AtomicOp::Xor => a.fetch_xor(v, O),
            AtomicOp::UMin => a.fetch_min(v, O),
            AtomicOp::UMax => a.fetch_max(v, O),
            AtomicOp::SMin | AtomicOp::SMax => a.fetch_update(O, O, |c| Some(apply64(op, c, v))).unwrap_or_else(|c| c),
        },
        None => a.fetch_update(O, O, |c| Some(f(c))).unwrap_or_else(|c| c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testing::{gpu_memory, BASE};

    #[test]
    fn words_and_objects() {
        let (m, g, _render) = gpu_memory();
        m.gpu_store(g, BASE, 0x1122u16, Ordering::Release).unwrap();
        m.gpu_store(g, BASE + 4, 0x3344_5566u32, Ordering::SeqCst).unwrap();
        m.gpu_store(g, BASE + 8, 0x0102_0304_0506_0708u64, Ordering::Relaxed).unwrap();
        assert_eq!(m.gpu_load::<u16>(g, BASE, Ordering::Acquire), Ok(0x1122));
        assert_eq!(m.gpu_load::<u32>(g, BASE + 4, Ordering::Acquire), Ok(0x3344_5566));
        assert_eq!(m.gpu_load::<u64>(g, BASE + 8, Ordering::Relaxed), Ok(0x0102_0304_0506_0708));
        // Little-endian, as the GPU sees memory.
        let mut b = [0u8; 16];
        m.gpu_read(g, BASE, &mut b).unwrap();
        assert_eq!(b, [0x22, 0x11, 0, 0, 0x66, 0x55, 0x44, 0x33, 8, 7, 6, 5, 4, 3, 2, 1]);
        // Objects: any length and alignment, through the volatile copies.
        let obj = [0xabu8; 13];
        m.gpu_write_obj(g, BASE + 0x103, &obj).unwrap();
        assert_eq!(m.gpu_read_obj::<[u8; 13]>(g, BASE + 0x103), Ok(obj));
        assert_eq!(m.gpu_read_obj::<[u8; 4]>(g, BASE + 0x100), Ok([0, 0, 0, 0xab]));
        // A word must be naturally aligned; an unmapped one faults.
        let fault = |va, write, kind| GpuFault { gpu_id: g, va, write, kind };
        assert_eq!(m.gpu_load::<u64>(g, BASE + 4, Ordering::Acquire), Err(fault(BASE + 4, false, GpuFaultKind::Misaligned)));
        assert_eq!(m.gpu_store(g, BASE + 2, 1u32, Ordering::Release), Err(fault(BASE + 2, true, GpuFaultKind::Misaligned)));
        assert_eq!(m.gpu_load::<u32>(g, BASE - 4096, Ordering::Acquire), Err(fault(BASE - 4096, false, GpuFaultKind::NotMapped)));
    }

    #[test]
    fn volatile_copies_handle_every_alignment() {
        let src: Vec<u8> = (0..64u8).collect();
        for start in 0..8 {
            for len in [0, 1, 7, 8, 9, 23, 40] {
                let mut dst = vec![0u8; len];
                // SAFETY: `start + len` <= 48 bytes inside `src`.
                unsafe { copy_from_shared(src.as_ptr() as usize + start, &mut dst) };
                assert_eq!(dst, src[start..start + len]);
                let mut out = vec![0xffu8; 64];
                // SAFETY: inside `out`.
                unsafe { copy_to_shared(out.as_mut_ptr() as usize + start, &src[..len]) };
                assert_eq!(out[start..start + len], src[..len]);
                assert!(out[..start].iter().chain(&out[start + len..]).all(|&b| b == 0xff));
            }
        }
    }
}
