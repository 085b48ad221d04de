//! GPU-visible memory: allocation flags, buffers and their GPU mappings.

use crate::device::{Device, Inner, Node};
use crate::error::{st, Error, Result};
use hsakmt_core::abi::hsakmt::{HsaMemFlags, HSA_PAGE_SIZE_4KB};
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use zerocopy::FromZeros;

/// How to allocate memory: a builder over the C API's `HsaMemFlags` bit fields.
///
/// Start from [`MemFlags::host`] (system memory the GPUs reach over the bus) or
/// [`MemFlags::vram`] (the GPU's local memory) and add what you need:
///
/// ```
/// use hsakmt_api::MemFlags;
/// let f = MemFlags::host().uncached().executable();
/// assert_eq!(f.raw().bf_NonPaged(), 1);
/// assert_eq!(f.raw().bf_Uncached(), 1);
/// assert!(f.is_host_accessible());
/// assert!(!MemFlags::vram().is_host_accessible());
/// ```
#[derive(Clone, Copy)]
pub struct MemFlags(HsaMemFlags);

impl std::fmt::Debug for MemFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MemFlags({:#x})", { self.0.Value })
    }
}

impl MemFlags {
    fn base() -> HsaMemFlags {
        let mut f = HsaMemFlags::new_zeroed();
        f.set_bf_PageSize(HSA_PAGE_SIZE_4KB);
        f.set_bf_NonPaged(1);
        f
    }

    /// Pinned system memory, CPU-accessible, which the GPUs reach over PCIe/XGMI (GTT).
    pub fn host() -> MemFlags {
        let mut f = Self::base();
        f.set_bf_HostAccess(1);
        MemFlags(f)
    }

    /// The GPU's local memory (VRAM), not mapped for the CPU.
    pub fn vram() -> MemFlags {
        MemFlags(Self::base())
    }

    /// VRAM the CPU can also reach (through the PCI BAR).
    pub fn host_access(mut self) -> MemFlags {
        self.0.set_bf_HostAccess(1);
        self
    }

    /// Uncached for the CPU (GPU writes are seen without flushes).
    pub fn uncached(mut self) -> MemFlags {
        self.0.set_bf_Uncached(1);
        self
    }

    /// GPUs may execute from it (code, or a queue's ring).
    pub fn executable(mut self) -> MemFlags {
        self.0.set_bf_ExecuteAccess(1);
        self
    }

    /// Read-only for the GPUs.
    pub fn read_only(mut self) -> MemFlags {
        self.0.set_bf_ReadOnly(1);
        self
    }

    /// Fine-grained: coherent between the CPU and the GPUs.
    pub fn coherent(mut self) -> MemFlags {
        self.0.set_bf_CoarseGrain(0);
        self.0.set_bf_ExtendedCoherent(1);
        self
    }

    /// Coarse-grained: coherent only at dispatch boundaries.
    pub fn coarse_grain(mut self) -> MemFlags {
        self.0.set_bf_CoarseGrain(1);
        self
    }

    /// Physically contiguous VRAM (KFD 1.16+).
    pub fn contiguous(mut self) -> MemFlags {
        self.0.set_bf_Contiguous(1);
        self
    }

    /// Fail instead of substituting system memory when VRAM is short.
    pub fn no_substitute(mut self) -> MemFlags {
        self.0.set_bf_NoSubstitute(1);
        self
    }

    /// Whether the CPU can read and write it.
    pub fn is_host_accessible(&self) -> bool {
        self.0.bf_HostAccess() != 0
    }

    /// The C API's flags.
    pub fn raw(&self) -> HsaMemFlags {
        self.0
    }
}

/// Memory allocated through the thunk, freed when dropped.
///
/// The GPUs may write it at any time once it is mapped to them, so the CPU never gets a plain
/// `&[u8]` or `&mut [u8]` into it: it reads and writes through [`Buffer::read`] /
/// [`Buffer::write`] (copies made of relaxed atomic byte accesses) and views of atomics
/// ([`Buffer::atomic_u32`], [`Buffer::atomic_u64`]). CPU access to memory the CPU cannot reach
/// (VRAM without [`MemFlags::host_access`]) is an [`crate::ErrorKind::InvalidArgument`] error.
///
/// ```
/// use hsakmt_api::{Device, MemFlags};
/// let dev = Device::open_model("mi300x")?;
/// let gpu = &dev.gpus()?[0];
/// let host = dev.alloc(gpu, 8192, MemFlags::host().uncached())?;
/// let mut vram = dev.alloc(gpu, 1 << 20, MemFlags::vram())?;
/// host.write(4096, b"hello")?;
/// let mut back = [0u8; 5];
/// host.read(4096, &mut back)?;
/// assert_eq!(&back, b"hello");
/// assert!(vram.read(0, &mut back).is_err());     // VRAM is not CPU-visible
/// let mapping = vram.map_to(&[gpu])?;             // unmapped again when `mapping` drops
/// assert_eq!(mapping.gpu_addr(), mapping.addr()); // GPU VA == CPU VA on dGPUs
/// # Ok::<(), hsakmt_api::Error>(())
/// ```
pub struct Buffer {
    pub(crate) dev: Arc<Inner>,
    addr: u64,
    size: u64,
    host: bool,
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Buffer").field("addr", &format_args!("{:#x}", self.addr)).field("size", &self.size).finish()
    }
}

impl Device {
    /// Allocate `size` bytes for `node` (a GPU for VRAM; any node for host memory).
    pub fn alloc(&self, node: &Node, size: u64, flags: MemFlags) -> Result<Buffer> {
        if size == 0 {
            return Err(Error::invalid("alloc: size 0"));
        }
        let addr = st("AllocMemory", self.inner.ctx().alloc_memory(node.id(), None, size, 0, flags.raw(), None))?;
        Ok(Buffer { dev: self.inner.clone(), addr, size, host: flags.is_host_accessible() })
    }
}

impl Buffer {
    /// The CPU virtual address (also the GPU address on discrete GPUs).
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Size in bytes.
    pub fn len(&self) -> u64 {
        self.size
    }

    /// Never true: a buffer has at least one byte.
    pub fn is_empty(&self) -> bool {
        self.size == 0
    }

    /// Whether the CPU can read and write it.
    pub fn is_host_accessible(&self) -> bool {
        self.host
    }

    /// Map it to the GPUs `gpus` until the returned mapping drops. The borrow is exclusive, so a
    /// buffer has one mapping at a time; the mapping gives the buffer back through `Deref`.
    pub fn map_to(&mut self, gpus: &[&Node]) -> Result<GpuMapping<'_>> {
        let ids: Vec<u32> = gpus.iter().map(|n| n.id()).collect();
        let va = st("MapMemoryToGPUNodes", self.dev.ctx().map_memory_to_gpu(self.addr, self.size, Some(&ids)))?;
        Ok(GpuMapping { gpu_addr: if va == 0 { self.addr } else { va }, buf: self })
    }

    /// The bytes as atomics: sound while the GPU writes them, valid as long as `self`.
    fn bytes(&self) -> Result<&[AtomicU8]> {
        if !self.host {
            return Err(Error::invalid("the CPU cannot reach this buffer (VRAM without host access)"));
        }
        // SAFETY: the allocation is `size` bytes of CPU-mapped memory (host access was asked
        // for) from `addr`, mapped until `self` drops (the borrow of `self` bounds the slice),
        // zero-filled by the KFD, so initialised. Everyone else (GPUs, other threads through
        // other views) reaches it only by atomic or device accesses; AtomicU8 has u8's layout.
        Ok(unsafe { std::slice::from_raw_parts(self.addr as *const AtomicU8, self.size as usize) })
    }

    fn range(&self, offset: u64, len: usize) -> Result<std::ops::Range<usize>> {
        let end = offset.checked_add(len as u64).filter(|&e| e <= self.size);
        match end {
            Some(e) => Ok(offset as usize..e as usize),
            None => Err(Error::invalid(format!("range {offset}+{len} is past the buffer's {} bytes", self.size))),
        }
    }

    /// Copy `data` into the buffer at `offset`.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        let r = self.range(offset, data.len())?;
        for (b, &v) in self.bytes()?[r].iter().zip(data) {
            b.store(v, Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
        Ok(())
    }

    /// Copy from the buffer at `offset` into `out`.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        let r = self.range(offset, out.len())?;
        std::sync::atomic::fence(Ordering::Acquire);
        for (o, b) in out.iter_mut().zip(&self.bytes()?[r]) {
            *o = b.load(Ordering::Relaxed);
        }
        Ok(())
    }

    /// Set every byte to `value`.
    pub fn fill(&self, value: u8) -> Result<()> {
        for b in self.bytes()? {
            b.store(value, Ordering::Relaxed);
        }
        std::sync::atomic::fence(Ordering::Release);
        Ok(())
    }

    /// The whole buffer as 32-bit atomics (the size rounded down to whole words).
    pub fn atomic_u32(&self) -> Result<&[AtomicU32]> {
        let b = self.bytes()?;
        // SAFETY: `b` is valid for its length and lives as long as `&self`; the address is page
        // aligned (KFD allocations are), so aligned for AtomicU32, which has u32's layout; the
        // memory is only reached atomically (see `bytes`). (Rust's model leaves racing atomic
        // accesses of different sizes to the same bytes unspecified; the hardware makes each
        // access single-copy atomic. docs/soundness.md.)
        Ok(unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<AtomicU32>(), b.len() / 4) })
    }

    /// The whole buffer as 64-bit atomics (the size rounded down to whole words).
    pub fn atomic_u64(&self) -> Result<&[AtomicU64]> {
        let b = self.bytes()?;
        // SAFETY: as `atomic_u32`, with 8-byte alignment (page-aligned address).
        Ok(unsafe { std::slice::from_raw_parts(b.as_ptr().cast::<AtomicU64>(), b.len() / 8) })
    }
}

impl Drop for Buffer {
    fn drop(&mut self) {
        let mut ctx = self.dev.ctx();
        // A mapping left by a queue or signal that owns this buffer goes first (the thunk
        // answers an error for memory that is not mapped: nothing to do then).
        let _ = ctx.unmap_memory_to_gpu(self.addr);
        let _ = ctx.free_memory(self.addr);
    }
}

/// A buffer mapped to GPUs; unmapped when dropped. Dereferences to the [`Buffer`].
pub struct GpuMapping<'b> {
    buf: &'b mut Buffer,
    gpu_addr: u64,
}

impl GpuMapping<'_> {
    /// The address the GPUs use (on discrete GPUs, the CPU address).
    pub fn gpu_addr(&self) -> u64 {
        self.gpu_addr
    }
}

impl std::ops::Deref for GpuMapping<'_> {
    type Target = Buffer;
    fn deref(&self) -> &Buffer {
        self.buf
    }
}

impl Drop for GpuMapping<'_> {
    fn drop(&mut self) {
        let _ = self.buf.dev.ctx().unmap_memory_to_gpu(self.buf.addr);
    }
}

/// A buffer mapped for the life of its owner (queue rings, signals): no `Deref` to a plain
/// slice, only its address.
pub(crate) struct Mapped(pub(crate) Buffer);

impl Mapped {
    pub(crate) fn new(dev: &Device, node: &Node, size: u64, flags: MemFlags) -> Result<Mapped> {
        let b = dev.alloc(node, size, flags)?;
        st("MapMemoryToGPUNodes", dev.inner.ctx().map_memory_to_gpu(b.addr, b.size, Some(&[node.id()])))?;
        Ok(Mapped(b))
    }
}
