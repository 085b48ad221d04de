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

use crate::devmem::DeviceMemory;
use crate::mem::{Backing, Bo};
use crate::model::{current_pid, Model, Process};
use crate::usercopy::{copy_from_user, copy_to_user};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

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

    /// Read `buf.len()` bytes at GPU virtual address `va` of GPU `gpu_id`.
    pub fn gpu_read(&self, gpu_id: u32, va: u64, buf: &mut [u8]) -> Result<(), GpuFault> {
        let buf_len = buf.len();
        self.gpu_access(gpu_id, va, buf_len, false, |dev, p, done| {
            let dst = &mut buf[done..done + p.len];
            match p.target {
                Target::User { addr, svm } => copy_from_user(dst, addr as usize).map_err(|_| user_fault(addr, svm, false)),
                Target::Bo(bo, off) => {
                    let base = kmap(dev, bo)?;
                    // SAFETY: the mapping covers the whole BO and `off + len` lies inside it
                    // (the page table entry is within the BO); `dst` is a distinct buffer.
                    unsafe { std::ptr::copy_nonoverlapping((base + off as usize) as *const u8, dst.as_mut_ptr(), p.len) };
                    Ok(())
                }
            }
        })
    }

    /// Write `data` at GPU virtual address `va` of GPU `gpu_id`.
    pub fn gpu_write(&self, gpu_id: u32, va: u64, data: &[u8]) -> Result<(), GpuFault> {
        self.gpu_access(gpu_id, va, data.len(), true, |dev, p, done| {
            let src = &data[done..done + p.len];
            match p.target {
                Target::User { addr, svm } => copy_to_user(addr as usize, src).map_err(|_| user_fault(addr, svm, true)),
                Target::Bo(bo, off) => {
                    let base = kmap(dev, bo)?;
                    // SAFETY: as in `gpu_read`, with the mapping writable and `src` distinct.
                    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), (base + off as usize) as *mut u8, p.len) };
                    Ok(())
                }
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
        if va & (size as u64 - 1) != 0 {
            return Err(GpuFault { gpu_id, va, write: true, kind: GpuFaultKind::Misaligned });
        }
        let mut old = 0u64;
        self.gpu_access(gpu_id, va, size, true, |dev, p, _| {
            if p.len != size {
                return Err(GpuFaultKind::Misaligned);
            }
            match p.target {
                Target::User { addr, svm } => {
                    let at = addr as usize;
                    let mut b = [0u8; 8];
                    copy_from_user(&mut b[..size], at).map_err(|_| user_fault(addr, svm, false))?;
                    old = u64::from_ne_bytes(b);
                    let new = f(old).to_ne_bytes();
                    copy_to_user(at, &new[..size]).map_err(|_| user_fault(addr, svm, true))
                }
                Target::Bo(bo, off) => {
                    let ptr = kmap(dev, bo)? + off as usize;
                    old = if size == 4 {
                        // SAFETY: `ptr` is 4-aligned (page-aligned mapping, aligned VA and
                        // page-aligned mapping starts) and inside the live BO mapping, which
                        // other threads and processes only access atomically or through their
                        // own mappings of the same pages.
                        let a = unsafe { AtomicU32::from_ptr(ptr as *mut u32) };
                        u64::from(rmw32(a, native, f))
                    } else {
                        // SAFETY: as above, 8-aligned.
                        let a = unsafe { AtomicU64::from_ptr(ptr as *mut u64) };
                        rmw64(a, native, f)
                    };
                    Ok(())
                }
            }
        })?;
        Ok(old)
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
