//! Per-process memory state and the memory ioctls, following kfd_chardev.c and
//! amdgpu_amdkfd_gpuvm.c (the rules are listed below):
//!
//! - ALLOC_MEMORY_OF_GPU: size 0 → EINVAL; a VA (or userptr address) an SVM range covers →
//!   EADDRINUSE; unknown gpu → EINVAL; PUBLIC VRAM on a small-BAR GPU →
//!   EINVAL; no VM acquired → ENODEV; DOORBELL size ≠ the process doorbell slice, MMIO_REMAP size ≠
//!   a page → EINVAL; no type bit, or USERPTR with mmap_offset 0 → EINVAL; accounting → ENOMEM;
//!   a userptr range that is not mapped → EFAULT (read-only → EPERM). The VA is not checked here.
//!   Handle = gpu_id << 32 | idr (lowest free id per GPU, from 0).
//! - FREE: unknown gpu or handle → EINVAL; still mapped → EBUSY.
//! - MAP / UNMAP: n_devices 0 or n_success > n_devices → EINVAL; the id array is read with a
//!   checked copy (EFAULT); unknown handle → ENOMEM (sic); for each id from n_success: unknown
//!   gpu → EINVAL, then the map (VA 0, misaligned, past the VM, overlapping another mapping →
//!   EINVAL; mapping twice is a no-op) and `n_success = i + 1`, so a caller can resume. Unmap of
//!   a GPU the BO is not mapped on → EINVAL; of a mapping a live queue of the process uses on
//!   that GPU (its ring, read/write pointer page, EOP buffer or CWSR area: the kernel's
//!   `bo_va->queue_refcount` since 6.10) → EBUSY. Such a BO cannot be freed either: it is still
//!   mapped (the FREE rule above), which is also where the kernel's free refuses it.
//! - IPC (ROCm's 0x80/0x81) and dmabuf export/import share one registry, see `devmem.rs`.
//!
//! Where the model differs from the kernel, by design:
//! - `mmap_offset` is an offset in the model's memfd (the kernel's is a DRM fake offset of the
//!   render node, or a KFD-encoded offset for MMIO). The thunk treats it as opaque.
//! - The doorbell BO is backed by the process's doorbell slice (two pages per GPU, one on
//!   gfx7/8) and the MMIO_REMAP BO by one page per GPU, both in the memfd; they are kept until
//!   the process ends.
//! - A model dmabuf is a sealed memfd carrying the export's 128-bit share handle (see
//!   [`DMABUF_MAGIC`]); it names the BO but is not itself an mmap-able view of its pages. Like a
//!   dma-buf it holds the memory until its last descriptor is closed (in any process: dup, fork
//!   and SCM_RIGHTS share it): the exporting process keeps a registry hold for it and a
//!   second open file of the memfd (`/proc/self/fd`); the dmabuf's own open file carries a
//!   shared flock, which goes only when every descriptor of it is closed, and whenever the
//!   exporter reclaims memory it drops the holds of dmabufs whose lock is gone. Unlike a real
//!   dma-buf, the hold ends with the exporting process's KFD use (CloseKFD, exit: its registry
//!   holds are reaped with its arena).
//! - Exporting a userptr BO fails with EPERM (amdgpu refuses to export userptrs); exporting a
//!   doorbell or MMIO BO fails with EINVAL.

use crate::devmem::{DeviceMemory, IpcInfo, Usage, ARENA_SIZE, MAX_GPUS, PAGE};
use crate::model::{Model, Process};
use crate::rangealloc::RangeAlloc;
use crate::sys::{current_pid, get, put, KMALLOC_MAX};
use crate::usercopy::{copy_from_user, copy_to_user};
use hsakmt_core::abi::kfd::*;
use rustix::fd::{BorrowedFd, IntoRawFd, OwnedFd};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use zerocopy::IntoBytes;

mod gem;
pub(crate) use gem::GemVa;

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const ENOMEM: i32 = libc::ENOMEM;
const ENODEV: i32 = libc::ENODEV;
const EBUSY: i32 = libc::EBUSY;
const EPERM: i32 = libc::EPERM;

pub(crate) const F_VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM as u32;
pub(crate) const F_GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
pub(crate) const F_USERPTR: u32 = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR as u32;
pub(crate) const F_DOORBELL: u32 = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL as u32;
pub(crate) const F_MMIO: u32 = KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP as u32;
pub(crate) const F_WRITABLE: u32 = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE as u32;
pub(crate) const F_EXECUTABLE: u32 = KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE as u32;
pub(crate) const F_PUBLIC: u32 = KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC as u32;
pub(crate) const F_AQL: u32 = KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM as u32;

/// First bytes of a model dmabuf memfd: "hsakmtDB", then the device id and the share handle.
pub(crate) const DMABUF_MAGIC: u64 = 0x4244_746d_6b61_7368;

/// Where a BO's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Backing {
    /// In this process's arena of the memfd at `offset` (absolute); freed with the BO.
    Owned { offset: u64 },
    /// Someone else's range (an IPC / dmabuf import), held through the registry.
    Imported { offset: u64 },
    /// The process doorbell slice or MMIO page of a GPU: lives until the process ends.
    Fixed { offset: u64 },
    /// Process memory at `addr` (page-aligned).
    User { addr: u64 },
}

impl Backing {
    pub(crate) fn file_offset(self) -> Option<u64> {
        match self {
            Backing::Owned { offset } | Backing::Imported { offset } | Backing::Fixed { offset } => Some(offset),
            Backing::User { .. } => None,
        }
    }
}

/// A buffer object of this process.
#[derive(Debug)]
pub(crate) struct Bo {
    pub gpu: usize,
    pub flags: u32,
    /// Size of the backing (page-aligned; half the requested size for AQL queue memory).
    pub size: u64,
    pub va: u64,
    pub backing: Backing,
    /// GPUs (indices) whose page table maps it.
    pub mapped: u128,
    /// The registry entry this BO holds (exported or imported): (slot, generation).
    pub ipc: Option<(usize, u32)>,
    pub usage: Usage,
    /// The model's own mapping of the backing (created on first GPU access): (address, length).
    pub kmap: Option<(usize, usize)>,
}

impl Drop for Bo {
    fn drop(&mut self) {
        if let Some((addr, len)) = self.kmap.take() {
            // SAFETY: the mapping was created by `gpu.rs` for this BO and nothing else refers
            // to it (GPU accesses hold the state lock, as does whoever drops the BO).
            let _ = unsafe { rustix::mm::munmap(addr as *mut std::ffi::c_void, len) };
        }
    }
}

impl Bo {
    fn aql(&self) -> bool {
        self.flags & F_AQL != 0
    }
    /// GPU VA span of a mapping (AQL queue memory is mapped twice, back to back).
    pub(crate) fn va_span(&self) -> u64 {
        if self.aql() {
            self.size * 2
        } else {
            self.size
        }
    }
}

/// One mapping in a GPU page table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pte {
    /// End VA (exclusive).
    pub end: u64,
    pub handle: u64,
    /// Offset into the BO of the mapping's first byte.
    pub bo_offset: u64,
    pub writable: bool,
    pub executable: bool,
}

/// Lowest-free id allocator (the kernel's idr, starting at 0).
#[derive(Debug, Default)]
struct Idr {
    next: u32,
    free: BTreeSet<u32>,
}

impl Idr {
    fn alloc(&mut self) -> Option<u32> {
        if let Some(id) = self.free.pop_first() {
            return Some(id);
        }
        if self.next > i32::MAX as u32 {
            return None;
        }
        self.next += 1;
        Some(self.next - 1)
    }
    fn free(&mut self, id: u32) {
        if id + 1 == self.next {
            self.next -= 1;
            while self.next > 0 && self.free.remove(&(self.next - 1)) {
                self.next -= 1;
            }
        } else {
            self.free.insert(id);
        }
    }
}

/// What the process keeps per GPU (its `kfd_process_device`).
#[derive(Debug, Default)]
pub(crate) struct PerGpu {
    idr: Idr,
    /// The GPU page table: start VA → mapping.
    pub pt: BTreeMap<u64, Pte>,
    pub scratch_backing_va: u64,
    /// (default, alternate, alternate base, alternate size, misc flags) of SET_MEMORY_POLICY.
    pub policy: Option<(u32, u32, u64, u64, u32)>,
    doorbell: Option<u64>,
    mmio: Option<u64>,
}

/// This process's arena of the memfd.
#[derive(Debug)]
struct Arena {
    slot: usize,
    base: u64,
    ranges: RangeAlloc,
}

/// An exported range whose BO was freed while other processes (or other BOs) still hold it:
/// the offsets go back to the allocator once the registry entry is gone.
#[derive(Debug)]
struct Deferred {
    ipc: (usize, u32),
    offset: u64,
    size: u64,
    usage: Usage,
}

/// A registry hold of a dmabuf file this process made: held until every descriptor of the
/// dmabuf is closed. `watcher` is a second open file of the dmabuf's memfd: while a descriptor
/// of the dmabuf's own open file lives, its shared flock keeps the watcher from taking an
/// exclusive one.
#[derive(Debug)]
struct DmabufHold {
    watcher: OwnedFd,
    ipc: (usize, u32),
}

/// The memory part of a KFD process.
#[derive(Debug, Default)]
pub(crate) struct MemState {
    arena: Option<Arena>,
    pub bos: HashMap<u64, Bo>,
    /// CPU-mappable ranges of the memfd: (offset, BO handle or 0 for doorbell/MMIO pages) → length.
    mappable: BTreeMap<(u64, u64), u64>,
    pub gpus: Vec<PerGpu>,
    deferred: Vec<Deferred>,
    /// Holds of the dmabufs this process exported (until their last descriptor is closed).
    dmabufs: Vec<DmabufHold>,
    /// GEM handles of the render-node stand-ins (`gem.rs`).
    gem: gem::Gems,
}

impl MemState {
    pub(crate) fn new(n_gpus: usize) -> MemState {
        MemState { gpus: (0..n_gpus).map(|_| PerGpu::default()).collect(), ..MemState::default() }
    }

    /// The BO a KFD handle names (a GEM object's BO is not a KFD handle).
    pub(crate) fn kfd_bo(&self, handle: u64) -> Option<&Bo> {
        self.bos.get(&handle).filter(|_| !self.gem.holds(handle))
    }

    /// Is `[offset, offset + len)` inside one CPU-mappable range?
    pub(crate) fn mappable(&self, offset: u64, len: u64) -> bool {
        let Some(end) = offset.checked_add(len) else { return false };
        match self.mappable.range(..=(offset, u64::MAX)).next_back() {
            Some((&(o, _), &l)) => o <= offset && end <= o + l,
            None => false,
        }
    }
}

fn page_align(x: u64) -> Option<u64> {
    x.checked_add(PAGE - 1).map(|v| v & !(PAGE - 1))
}

/// What GET_TILE_CONFIG reports: (gb_addr_config, num_banks, num_ranks).
fn tile_config(g: &crate::topology::GpuNode) -> (u32, u32, u32) {
    match g.gfx_version {
        // Vega12 and Raven golden values; Vega10's for the rest of gfx9+ (those read the
        // register; the model picks the gfx9 value). GFX9+ report 0 banks and ranks.
        (9, 0, 4) => (0x2410_4041, 0, 0),
        (9, 0, 2) | (9, 1, _) | (9, 2, _) => (0x2400_0042, 0, 0),
        (7 | 8, _, _) => (0x2201_1003, 16, 2),
        _ => (0x2a11_4042, 0, 0),
    }
}

/// APE1 rules of the pre-gfx9 set_cache_memory_policy (APE1_FIXED_BITS_MASK, APE1_LIMIT_ALIGNMENT).
fn ape1_ok(base: u64, size: u64) -> bool {
    const FIXED: u64 = 0xFFFF_8000_0000_FFFF;
    const LIMIT_ALIGN: u64 = 0xFFFF;
    if size == 0 {
        return true;
    }
    let Some(limit) = base.checked_add(size - 1) else { return false };
    limit > base && base & FIXED == 0 && limit & FIXED == LIMIT_ALIGN
}

fn handle_of(gpu_id: u32, idr: u32) -> u64 {
    (u64::from(gpu_id) << 32) | u64::from(idr)
}

fn gpu_of(handle: u64) -> u32 {
    (handle >> 32) as u32
}

/// Read a model dmabuf's record: (device id, share handle, size, alloc flags).
fn read_dmabuf(fd: u32) -> Result<([u32; 4], [u32; 4]), i32> {
    let fd = fd as i32;
    if fd < 0 {
        return Err(libc::EBADF);
    }
    // SAFETY: borrowed for fstat/pread only; a closed descriptor fails there with EBADF.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    let st = rustix::fs::fstat(b).map_err(|_| libc::EBADF)?;
    // Model dmabufs are memfds: regular files. Anything else (pipes, sockets, devices) is not
    // read at all, so a fuzzed descriptor can never block.
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::RegularFile {
        return Err(EINVAL);
    }
    let mut rec = [0u8; 40];
    match rustix::io::pread(b, &mut rec, 0) {
        Ok(40) => {}
        _ => return Err(EINVAL),
    }
    if u64::from_ne_bytes(rec[..8].try_into().map_err(|_| EINVAL)?) != DMABUF_MAGIC {
        return Err(EINVAL);
    }
    let w = |i: usize| u32::from_ne_bytes([rec[i], rec[i + 1], rec[i + 2], rec[i + 3]]);
    Ok(([w(8), w(12), w(16), w(20)], [w(24), w(28), w(32), w(36)]))
}

/// A sealed memfd carrying (device id, share handle).
fn make_dmabuf(device: [u32; 4], handle: [u32; 4], cloexec: bool) -> Result<OwnedFd, i32> {
    use rustix::fs::{MemfdFlags, SealFlags};
    let mut flags = MemfdFlags::ALLOW_SEALING;
    if cloexec {
        flags |= MemfdFlags::CLOEXEC;
    }
    let fd = rustix::fs::memfd_create("hsakmt-model-dmabuf", flags).map_err(|e| e.raw_os_error())?;
    let mut rec = [0u8; 40];
    rec[..8].copy_from_slice(&DMABUF_MAGIC.to_ne_bytes());
    for (i, w) in device.iter().chain(handle.iter()).enumerate() {
        rec[8 + 4 * i..12 + 4 * i].copy_from_slice(&w.to_ne_bytes());
    }
    match rustix::io::pwrite(&fd, &rec, 0) {
        Ok(40) => {}
        Ok(_) => return Err(libc::EIO),
        Err(e) => return Err(e.raw_os_error()),
    }
    let seals = SealFlags::SHRINK | SealFlags::GROW | SealFlags::WRITE | SealFlags::SEAL;
    rustix::fs::fcntl_add_seals(&fd, seals).map_err(|e| e.raw_os_error())?;
    Ok(fd)
}

impl Model {
    pub(crate) fn devmem(&self) -> Result<&DeviceMemory, i32> {
        if let Some(d) = self.dev.get() {
            return Ok(d);
        }
        let d = DeviceMemory::create(&self.gpus, self.system_bytes)?;
        Ok(self.dev.get_or_init(|| std::sync::Arc::new(d)))
    }

    /// This process's arena (claimed on first use).
    fn arena<'a>(&self, st: &'a mut Process) -> Result<&'a mut Arena, i32> {
        if st.mem.arena.is_none() {
            let dev = self.devmem()?;
            let (slot, base) = dev.lock().claim_arena(current_pid())?;
            st.mem.arena = Some(Arena { slot, base, ranges: RangeAlloc::new(ARENA_SIZE) });
        }
        st.mem.arena.as_mut().ok_or(ENOMEM)
    }

    /// Give back the ranges of exports whose last holder has gone.
    fn reclaim_deferred(&self, st: &mut Process) {
        if st.pid != current_pid() {
            return;
        }
        self.drop_closed_dmabufs(st);
        if st.mem.deferred.is_empty() {
            return;
        }
        let Some(dev) = self.dev.get() else { return };
        let pid = current_pid();
        let mut l = dev.lock();
        let Some(arena) = st.mem.arena.as_mut() else { return };
        st.mem.deferred.retain(|d| {
            if l.ipc_get(d.ipc.0, d.ipc.1).is_some() {
                return true;
            }
            dev.punch(d.offset, d.size);
            arena.ranges.free(d.offset - arena.base, d.size);
            l.unreserve(arena.slot, pid, d.usage);
            false
        });
    }

    /// A new dmabuf file `fd` of registry entry `ipc` holds the entry until its last descriptor
    /// is closed (see the module notes). Without /proc to open the watcher the dmabuf holds
    /// nothing of its own (as before: the BOs holding the entry keep it).
    fn hold_dmabuf(&self, st: &mut Process, fd: &OwnedFd, ipc: (usize, u32)) -> Result<(), i32> {
        use rustix::fs::{flock, FlockOperation, Mode, OFlags};
        flock(fd, FlockOperation::LockShared).map_err(|e| e.raw_os_error())?;
        let path = format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(fd));
        let Ok(watcher) = rustix::fs::open(path.as_str(), OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty()) else { return Ok(()) };
        self.devmem()?.lock().ipc_add_hold(ipc.0, ipc.1, current_pid())?;
        st.mem.dmabufs.push(DmabufHold { watcher, ipc });
        Ok(())
    }

    /// Let go of the holds of dmabufs whose every descriptor is closed: nothing keeps their
    /// shared lock any more, so the watcher's exclusive one is granted.
    fn drop_closed_dmabufs(&self, st: &mut Process) {
        use rustix::fs::{flock, FlockOperation};
        if st.mem.dmabufs.is_empty() || st.pid != current_pid() {
            return; // none, or a forked child's copy of its parent's (not the child's to drop)
        }
        let Some(dev) = self.dev.get() else { return };
        let pid = current_pid();
        st.mem.dmabufs.retain(|h| {
            if flock(&h.watcher, FlockOperation::NonBlockingLockExclusive).is_err() {
                return true; // still open somewhere
            }
            dev.lock().ipc_release(h.ipc.0, h.ipc.1, pid);
            false
        });
    }

    /// The process doorbell slice (or MMIO page) of a GPU: allocated in the arena on first use.
    fn fixed_page(&self, st: &mut Process, gpu: usize, doorbell: bool) -> Result<u64, i32> {
        let cur = if doorbell { st.mem.gpus[gpu].doorbell } else { st.mem.gpus[gpu].mmio };
        if let Some(o) = cur {
            return Ok(o);
        }
        let len = if doorbell { self.gpus[gpu].doorbell_slice_bytes() } else { PAGE };
        let arena = self.arena(st)?;
        // The doorbell slice is aligned to its size: libhsakmt splits CREATE_QUEUE's
        // doorbell_offset into (offset & ~(slice - 1), offset & (slice - 1)).
        let raw = arena.ranges.alloc(2 * len - PAGE).ok_or(ENOMEM)?;
        let rel = raw.next_multiple_of(len);
        if rel > raw {
            arena.ranges.free(raw, rel - raw);
        }
        if raw + 2 * len - PAGE > rel + len {
            arena.ranges.free(rel + len, raw + 2 * len - PAGE - (rel + len));
        }
        let off = arena.base + rel;
        st.mem.mappable.insert((off, 0), len);
        if doorbell {
            st.mem.gpus[gpu].doorbell = Some(off);
        } else {
            st.mem.gpus[gpu].mmio = Some(off);
        }
        Ok(off)
    }

    /// The memfd offset of a GPU's process doorbell slice (for queue doorbells).
    pub(crate) fn doorbell_slice(&self, st: &mut Process, gpu: usize) -> Result<u64, i32> {
        self.fixed_page(st, gpu, true)
    }

    /// ALLOC_MEMORY_OF_GPU.
    pub(crate) fn ioctl_alloc(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_alloc_memory_of_gpu_args = get(buf);
        let r = self.alloc(&mut a);
        put(buf, &a);
        r
    }

    fn alloc(&self, a: &mut kfd_ioctl_alloc_memory_of_gpu_args) -> Result<(), i32> {
        if a.size == 0 {
            return Err(EINVAL);
        }
        let flags = a.flags;
        // Only the primary process, which lives as long as the address space, may hold user
        // pages (a secondary one ends when its file is closed).
        if self.is_secondary() && flags & F_USERPTR != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        let mut st = self.lock();
        // kfd_ioctl_alloc_memory_of_gpu: memory an SVM range already covers, by GPU VA (or, for
        // a userptr, by CPU address) → EADDRINUSE, before the GPU is even looked up.
        let userptr = flags & F_USERPTR != 0;
        let in_svm =
            |st: &Process| Model::svm_overlaps(st, a.va_addr, a.size) || (userptr && Model::svm_overlaps(st, a.mmap_offset, a.size));
        if in_svm(&st) {
            // Ranges the CPU has unmapped since (e.g. a destroyed queue's unified CWSR area)
            // would be gone in the kernel.
            Model::svm_forget_unmapped(&mut st, a.va_addr, a.size);
            if userptr {
                Model::svm_forget_unmapped(&mut st, a.mmap_offset, a.size);
            }
            if in_svm(&st) {
                return Err(libc::EADDRINUSE);
            }
        }
        let gpu = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if flags & F_PUBLIC != 0 && flags & F_VRAM != 0 && !self.gpus[gpu].large_bar() {
            return Err(EINVAL);
        }
        if st.vms[gpu].is_none() {
            return Err(ENODEV);
        }
        self.reclaim_deferred(&mut st);
        let mut offset_in = a.mmap_offset;
        if flags & F_DOORBELL != 0 {
            if a.size != self.gpus[gpu].doorbell_slice_bytes() {
                return Err(EINVAL);
            }
            offset_in = self.fixed_page(&mut st, gpu, true)?;
        } else if flags & F_MMIO != 0 {
            if a.size != PAGE {
                return Err(EINVAL);
            }
            offset_in = self.fixed_page(&mut st, gpu, false)?;
        }
        enum Kind {
            Vram,
            Gtt,
            User(u64),
            Fixed(u64),
        }
        let kind = if flags & F_VRAM != 0 {
            Kind::Vram
        } else if flags & F_GTT != 0 {
            Kind::Gtt
        } else if flags & F_USERPTR != 0 {
            if offset_in == 0 {
                return Err(EINVAL);
            }
            Kind::User(offset_in & !(PAGE - 1))
        } else if flags & (F_DOORBELL | F_MMIO) != 0 {
            Kind::Fixed(offset_in)
        } else {
            return Err(EINVAL);
        };
        let size = if flags & F_AQL != 0 { a.size >> 1 } else { a.size };
        let size = page_align(size).ok_or(ENOMEM)?;
        if size == 0 {
            return Err(EINVAL);
        }
        // amdgpu_amdkfd_reserve_mem_limit tests the GTT bit before the VRAM bit.
        let usage = if flags & F_GTT != 0 {
            Usage { gpu, vram: 0, system: size, ttm: size }
        } else if flags & F_VRAM != 0 {
            Usage { gpu, vram: size, system: 0, ttm: 0 }
        } else if flags & F_USERPTR != 0 {
            Usage { gpu, vram: 0, system: size, ttm: 0 }
        } else {
            Usage { gpu, ..Usage::default() }
        };
        let dev = self.devmem()?;
        let arena = self.arena(&mut st)?;
        let slot = arena.slot;
        dev.lock().reserve(slot, usage)?;
        let pid = current_pid();
        let unreserve = |dev: &DeviceMemory| dev.lock().unreserve(slot, pid, usage);
        let backing = match kind {
            Kind::Vram | Kind::Gtt => match arena.ranges.alloc(size) {
                Some(r) => Backing::Owned { offset: arena.base + r },
                None => {
                    unreserve(dev);
                    return Err(ENOMEM);
                }
            },
            Kind::User(addr) => {
                if let Err(e) = crate::userptr::check_user_range(addr, size) {
                    unreserve(dev);
                    return Err(e);
                }
                Backing::User { addr }
            }
            Kind::Fixed(offset) => Backing::Fixed { offset },
        };
        let Some(idr) = st.mem.gpus[gpu].idr.alloc() else {
            if let Backing::Owned { offset } = backing {
                if let Some(ar) = st.mem.arena.as_mut() {
                    ar.ranges.free(offset - ar.base, size);
                }
            }
            unreserve(dev);
            return Err(EFAULT);
        };
        let handle = handle_of(a.gpu_id, idr);
        if let Backing::Owned { offset } = backing {
            st.mem.mappable.insert((offset, handle), size);
        }
        a.mmap_offset = backing.file_offset().unwrap_or(0);
        st.mem.bos.insert(handle, Bo { gpu, flags, size, va: a.va_addr, backing, mapped: 0, ipc: None, usage, kmap: None });
        a.handle = handle;
        Ok(())
    }

    /// FREE_MEMORY_OF_GPU.
    pub(crate) fn ioctl_free(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_free_memory_of_gpu_args = get(buf);
        let mut st = self.lock();
        self.gpu_index(gpu_of(a.handle)).ok_or(EINVAL)?;
        let bo = st.mem.bos.get(&a.handle).ok_or(EINVAL)?;
        if st.mem.gem.holds(a.handle) {
            return Err(EINVAL); // a GEM object's BO is not a KFD handle
        }
        if bo.mapped != 0 {
            return Err(EBUSY);
        }
        self.release_bo(&mut st, a.handle);
        self.reclaim_deferred(&mut st);
        Ok(())
    }

    /// Drop a BO (unmapped from everything first): its backing, accounting and registry hold.
    fn release_bo(&self, st: &mut Process, handle: u64) {
        for g in 0..st.mem.gpus.len() {
            let _ = Self::unmap_one(st, handle, g);
        }
        let Some(bo) = st.mem.bos.remove(&handle) else { return };
        st.mem.gpus[bo.gpu].idr.free(handle as u32);
        if let Some(off) = bo.backing.file_offset() {
            st.mem.mappable.remove(&(off, handle));
        }
        // (The BO's own kmap goes when `bo` is dropped below.)
        let Some(dev) = self.dev.get() else { return };
        let pid = current_pid();
        let mut l = dev.lock();
        let Some(arena) = st.mem.arena.as_mut() else { return };
        match bo.backing {
            Backing::Owned { offset } => {
                if let Some((slot, gen)) = bo.ipc {
                    if !l.ipc_release(slot, gen, pid) {
                        // Others still hold the range: keep the offsets until they let go.
                        st.mem.deferred.push(Deferred { ipc: (slot, gen), offset, size: bo.size, usage: bo.usage });
                        return;
                    }
                }
                dev.punch(offset, bo.size);
                arena.ranges.free(offset - arena.base, bo.size);
                l.unreserve(arena.slot, pid, bo.usage);
            }
            Backing::Imported { .. } => {
                if let Some((slot, gen)) = bo.ipc {
                    l.ipc_release(slot, gen, pid);
                }
            }
            Backing::Fixed { .. } | Backing::User { .. } => l.unreserve(arena.slot, pid, bo.usage),
        }
    }

    /// The end of the KFD process (kfd_process_wq_release): every BO, mapping, registry hold,
    /// doorbell page and the arena are released; VMs and runtime state are dropped.
    pub(crate) fn release_locked(&self, st: &mut Process) {
        self.release_queues();
        if st.pid == current_pid() {
            self.debug_unregister();
        }
        self.spm_release_all();
        self.pcs_release_all();
        // kfd_process_destroy_pdds: PROCESS_END for each device whose VM was acquired.
        for (i, vm) in st.vms.iter().enumerate() {
            if vm.is_some() {
                self.smi_process(i, st.task, false);
            }
        }
        let handles: Vec<u64> = st.mem.bos.keys().copied().collect();
        for h in handles {
            self.release_bo(st, h);
        }
        if let (Some(dev), Some(arena)) = (self.dev.get(), st.mem.arena.take()) {
            let pid = current_pid();
            let mut l = dev.lock();
            if let Some(index) = (arena.base >> crate::devmem::ARENA_SHIFT).checked_sub(1) {
                if l.owns(arena.slot, arena.base, pid) {
                    l.release_arena(arena.slot, index, pid);
                }
            }
        }
        *st = Process::new(self.gpus.len());
        self.owner.store(st.pid, std::sync::atomic::Ordering::Relaxed);
        self.instance.store(st.instance, std::sync::atomic::Ordering::Relaxed);
    }

    /// Read the device id array of MAP/UNMAP (the kernel's kmalloc_array + copy_from_user) into
    /// `small` when it fits (no allocation), else onto the heap.
    fn device_ids<'a>(ptr: u64, n: u32, small: &'a mut [u32; 64], heap: &'a mut Vec<u32>) -> Result<&'a [u32], i32> {
        let bytes = u64::from(n) * 4;
        if bytes > KMALLOC_MAX {
            return Err(ENOMEM);
        }
        let ids: &mut [u32] = if n as usize <= small.len() {
            &mut small[..n as usize]
        } else {
            heap.resize(n as usize, 0);
            heap
        };
        copy_from_user(ids.as_mut_bytes(), ptr as usize).map_err(|_| EFAULT)?;
        Ok(ids)
    }

    /// MAP_MEMORY_TO_GPU.
    pub(crate) fn ioctl_map(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_map_memory_to_gpu_args = get(buf);
        let r = self.map(a.handle, a.device_ids_array_ptr, a.n_devices, &mut a.n_success, true);
        put(buf, &a);
        r
    }

    /// UNMAP_MEMORY_FROM_GPU.
    pub(crate) fn ioctl_unmap(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_unmap_memory_from_gpu_args = get(buf);
        let r = self.map(a.handle, a.device_ids_array_ptr, a.n_devices, &mut a.n_success, false);
        put(buf, &a);
        r
    }

    fn map(&self, handle: u64, ids_ptr: u64, n: u32, n_success: &mut u32, map: bool) -> Result<(), i32> {
        if n == 0 || *n_success > n {
            return Err(EINVAL);
        }
        let (mut small, mut heap) = ([0u32; 64], Vec::new());
        let ids = Self::device_ids(ids_ptr, n, &mut small, &mut heap)?;
        let mut st = self.lock();
        let owner = self.gpu_index(gpu_of(handle)).ok_or(EINVAL)?;
        if map && st.vms[owner].is_none() {
            return Err(ENODEV);
        }
        if !st.mem.bos.contains_key(&handle) {
            return Err(ENOMEM);
        }
        for (i, &id) in ids.iter().enumerate().skip(*n_success as usize) {
            let g = self.gpu_index(id).ok_or(EINVAL)?;
            if map {
                if st.vms[g].is_none() {
                    return Err(ENODEV);
                }
                self.map_one(&mut st, handle, g)?;
            } else {
                // unmap_bo_from_gpuvm (mainline 6.10+): a mapping a live queue holds
                // (kfd_queue_acquire_buffers took bo_va->queue_refcount) stays, EBUSY. A BO not
                // mapped on that GPU is EINVAL first (no VM reserved).
                let mapped = st.mem.bos.get(&handle).is_some_and(|b| b.mapped & (1u128 << (g % MAX_GPUS)) != 0);
                if mapped && self.queue_holds_bo(&st, g, handle) {
                    return Err(EBUSY);
                }
                Self::unmap_one(&mut st, handle, g)?;
            }
            *n_success = i as u32 + 1;
        }
        Ok(())
    }

    fn map_one(&self, st: &mut Process, handle: u64, g: usize) -> Result<(), i32> {
        let bit = 1u128 << (g % MAX_GPUS);
        let bo = st.mem.bos.get(&handle).ok_or(ENOMEM)?;
        if bo.mapped & bit != 0 {
            return Ok(()); // already mapped on this GPU: skipped, success
        }
        let va = bo.va;
        if va == 0 || va & (PAGE - 1) != 0 {
            return Err(EINVAL);
        }
        let span = bo.va_span();
        let end = va.checked_add(span).ok_or(EINVAL)?;
        if end > self.gpus[g].vm_size() {
            return Err(EINVAL);
        }
        let pt = &st.mem.gpus[g].pt;
        if let Some((_, p)) = pt.range(..end).next_back() {
            if p.end > va {
                return Err(EINVAL); // overlaps an existing mapping in this VM
            }
        }
        let writable = bo.flags & F_WRITABLE != 0;
        let executable = bo.flags & F_EXECUTABLE != 0;
        let size = bo.size;
        let copies = if bo.aql() { 2 } else { 1 };
        let pt = &mut st.mem.gpus[g].pt;
        for c in 0..copies {
            pt.insert(va + c * size, Pte { end: va + (c + 1) * size, handle, bo_offset: 0, writable, executable });
        }
        if let Some(bo) = st.mem.bos.get_mut(&handle) {
            bo.mapped |= bit;
        }
        Ok(())
    }

    fn unmap_one(st: &mut Process, handle: u64, g: usize) -> Result<(), i32> {
        let bit = 1u128 << (g % MAX_GPUS);
        let bo = st.mem.bos.get_mut(&handle).ok_or(ENOMEM)?;
        if bo.mapped & bit == 0 {
            return Err(EINVAL);
        }
        bo.mapped &= !bit;
        // The BO's mappings start at its VA (and, for AQL memory, one BO size further).
        let (va, size, copies) = (bo.va, bo.size, if bo.aql() { 2 } else { 1 });
        let pt = &mut st.mem.gpus[g].pt;
        for c in 0..copies {
            let start = va + c * size;
            if pt.get(&start).is_some_and(|p| p.handle == handle) {
                pt.remove(&start);
            }
        }
        Ok(())
    }

    /// Make `[va, va + size)` of GPU `g` reach process memory at `host` (upstream's model
    /// interface 0.4: an allocation in the global aperture, see `plugin04.rs`). Unlike a userptr
    /// BO the range is not checked against the process's mappings now: the client maps its pages
    /// after announcing them, and an access to a page it has not mapped (or has mapped
    /// PROT_NONE) is a checked copy that fails, so the engine sees a GPU fault, never a host
    /// crash. EINVAL: misaligned, empty, beyond the GPU's VM, or overlapping a mapping.
    /// Returns the BO handle for [`Model::unmap_host_window`].
    pub(crate) fn map_host_window(&self, g: usize, va: u64, size: u64, host: u64, writable: bool) -> Result<u64, i32> {
        let gpu = self.gpus.get(g).ok_or(EINVAL)?;
        if size == 0 || (va | size | host) & (PAGE - 1) != 0 {
            return Err(EINVAL);
        }
        let end = va.checked_add(size).ok_or(EINVAL)?;
        host.checked_add(size).ok_or(EINVAL)?;
        if end > gpu.vm_size() {
            return Err(EINVAL);
        }
        let gpu_id = gpu.gpu_id;
        let mut st = self.lock();
        if let Some((_, p)) = st.mem.gpus[g].pt.range(..end).next_back() {
            if p.end > va {
                return Err(EINVAL);
            }
        }
        let idr = st.mem.gpus[g].idr.alloc().ok_or(ENOMEM)?;
        let handle = handle_of(gpu_id, idr);
        let flags = F_USERPTR | if writable { F_WRITABLE } else { 0 };
        let usage = Usage { gpu: g, ..Usage::default() };
        let bo = Bo {
            gpu: g,
            flags,
            size,
            va,
            backing: Backing::User { addr: host },
            mapped: 1u128 << (g % MAX_GPUS),
            ipc: None,
            usage,
            kmap: None,
        };
        st.mem.bos.insert(handle, bo);
        st.mem.gpus[g].pt.insert(va, Pte { end, handle, bo_offset: 0, writable, executable: true });
        Ok(handle)
    }

    /// Undo [`Model::map_host_window`]: the mapping and its BO are gone.
    pub(crate) fn unmap_host_window(&self, handle: u64) {
        let mut st = self.lock();
        if st.mem.bos.get(&handle).is_some_and(|b| matches!(b.backing, Backing::User { .. }) && b.ipc.is_none()) {
            self.release_bo(&mut st, handle);
        }
    }

    /// AVAILABLE_MEMORY.
    pub(crate) fn ioctl_available(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_get_available_memory_args = get(buf);
        let gpu = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        let mut st = self.lock();
        self.reclaim_deferred(&mut st);
        a.available = self.devmem()?.lock().available(gpu);
        put(buf, &a);
        Ok(())
    }

    /// SET_MEMORY_POLICY.
    pub(crate) fn ioctl_memory_policy(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_set_memory_policy_args = get(buf);
        let ok = |p: u32| p == KFD_IOC_CACHE_POLICY_COHERENT as u32 || p == KFD_IOC_CACHE_POLICY_NONCOHERENT as u32;
        if !ok(a.default_policy) || !ok(a.alternate_policy) {
            return Err(EINVAL);
        }
        let mut st = self.lock();
        let gpu = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if st.vms[gpu].is_none() {
            return Err(libc::ESRCH);
        }
        // GFX9+ ignores the alternate aperture; gfx7/8 program APE1 from it.
        if self.gpus[gpu].family == crate::topology::ApertureFamily::Vi && !ape1_ok(a.alternate_aperture_base, a.alternate_aperture_size) {
            return Err(EINVAL);
        }
        st.mem.gpus[gpu].policy =
            Some((a.default_policy, a.alternate_policy, a.alternate_aperture_base, a.alternate_aperture_size, a.misc_process_flag));
        Ok(())
    }

    /// SET_SCRATCH_BACKING_VA.
    pub(crate) fn ioctl_scratch_backing(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_set_scratch_backing_va_args = get(buf);
        let mut st = self.lock();
        let gpu = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if st.vms[gpu].is_none() {
            return Err(ENODEV);
        }
        st.mem.gpus[gpu].scratch_backing_va = a.va_addr;
        Ok(())
    }

    /// GET_TILE_CONFIG.
    pub(crate) fn ioctl_tile_config(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_get_tile_config_args = get(buf);
        let gpu = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        let (gb, banks, ranks) = tile_config(&self.gpus[gpu]);
        a.gb_addr_config = gb;
        a.num_banks = banks;
        a.num_ranks = ranks;
        // tile_mode_array has 32 entries, macrotile_mode_array 16; the model's are all zero
        // (as on GFX9+).
        let zeros = [0u8; 32 * 4];
        a.num_tile_configs = a.num_tile_configs.min(32);
        let mut r = copy_to_user(a.tile_config_ptr as usize, &zeros[..a.num_tile_configs as usize * 4]);
        if r.is_err() {
            a.num_tile_configs = 0;
        } else {
            a.num_macro_tile_configs = a.num_macro_tile_configs.min(16);
            r = copy_to_user(a.macro_tile_config_ptr as usize, &zeros[..a.num_macro_tile_configs as usize * 4]);
            if r.is_err() {
                a.num_macro_tile_configs = 0;
            }
        }
        put(buf, &a);
        r.map_err(|_| EFAULT)
    }

    /// Register (or reuse) the registry entry of a BO for export. EPERM for userptrs, EINVAL
    /// for doorbell and MMIO BOs.
    fn export_entry(&self, st: &mut Process, handle: u64, export_flags: u32) -> Result<[u32; 4], i32> {
        let dev = self.devmem()?;
        let pid = current_pid();
        let bo = st.mem.bos.get_mut(&handle).ok_or(EINVAL)?;
        let offset = match bo.backing {
            Backing::User { .. } => return Err(EPERM),
            Backing::Fixed { .. } => return Err(EINVAL),
            Backing::Owned { offset } | Backing::Imported { offset } => offset,
        };
        let mut l = dev.lock();
        if let Some((slot, gen)) = bo.ipc {
            return l.ipc_handle(slot, gen).ok_or(EINVAL);
        }
        let (info, h) = l.ipc_export(pid, offset, bo.size, bo.flags, export_flags, bo.gpu)?;
        bo.ipc = Some((info.slot, info.generation));
        Ok(h)
    }

    /// A new BO of this process on `gpu` backed by an existing registry entry (already held).
    fn import_bo(&self, st: &mut Process, gpu: usize, va: u64, e: IpcInfo) -> Result<u64, i32> {
        let Some(idr) = st.mem.gpus[gpu].idr.alloc() else {
            if let Some(dev) = self.dev.get() {
                dev.lock().ipc_release(e.slot, e.generation, current_pid());
            }
            return Err(EFAULT);
        };
        let handle = handle_of(self.gpus[gpu].gpu_id, idr);
        let domain = if e.alloc_flags & F_VRAM != 0 { F_VRAM } else { F_GTT };
        let flags = domain | F_WRITABLE | F_EXECUTABLE;
        st.mem.mappable.insert((e.offset, handle), e.size);
        st.mem.bos.insert(
            handle,
            Bo {
                gpu,
                flags,
                size: e.size,
                va,
                backing: Backing::Imported { offset: e.offset },
                mapped: 0,
                ipc: Some((e.slot, e.generation)),
                usage: Usage { gpu, ..Usage::default() },
                kmap: None,
            },
        );
        Ok(handle)
    }

    /// IPC_EXPORT_HANDLE (ROCm kernels only).
    pub(crate) fn ioctl_ipc_export(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_ipc_export_handle_args = get(buf);
        let mut st = self.lock();
        let gpu = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if st.vms[gpu].is_none() {
            return Err(ENODEV);
        }
        // The BO is looked up in that GPU's table by the handle's idr part.
        let handle = handle_of(a.gpu_id, a.handle as u32);
        a.share_handle = self.export_entry(&mut st, handle, a.flags)?;
        put(buf, &a);
        Ok(())
    }

    /// IPC_IMPORT_HANDLE (ROCm kernels only).
    pub(crate) fn ioctl_ipc_import(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_ipc_import_handle_args = get(buf);
        let mut st = self.lock();
        let gpu = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        let dev = self.devmem()?;
        let pid = current_pid();
        // An export whose dmabufs were all closed since is gone, if this process made them.
        self.drop_closed_dmabufs(&mut st);
        // Every process holding registry entries has an arena slot, so its holds are dropped
        // when it dies (reaping goes by arena slot).
        self.arena(&mut st)?;
        let e = dev.lock().ipc_import(pid, a.share_handle)?;
        if st.vms[gpu].is_none() {
            dev.lock().ipc_release(e.slot, e.generation, pid);
            return Err(ENODEV);
        }
        a.handle = self.import_bo(&mut st, gpu, a.va_addr, e)?;
        a.mmap_offset = e.offset;
        a.flags = e.export_flags;
        put(buf, &a);
        Ok(())
    }

    /// EXPORT_DMABUF.
    pub(crate) fn ioctl_export_dmabuf(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_export_dmabuf_args = get(buf);
        let mut st = self.lock();
        self.gpu_index(gpu_of(a.handle)).ok_or(EINVAL)?;
        if !st.mem.bos.contains_key(&a.handle) {
            return Err(EINVAL);
        }
        let h = self.export_entry(&mut st, a.handle, 0)?;
        let ipc = st.mem.bos.get(&a.handle).and_then(|b| b.ipc).ok_or(EINVAL)?;
        let device = self.devmem()?.lock().device_id();
        let fd = make_dmabuf(device, h, a.flags & libc::O_CLOEXEC as u32 != 0)?;
        self.hold_dmabuf(&mut st, &fd, ipc)?;
        a.dmabuf_fd = fd.into_raw_fd() as u32;
        put(buf, &a);
        Ok(())
    }

    /// The registry entry a model dmabuf names (checked: ours, and still live).
    fn dmabuf_entry(&self, fd: u32) -> Result<(IpcInfo, [u32; 4]), i32> {
        let (device, handle) = read_dmabuf(fd)?;
        let dev = self.devmem()?;
        let l = dev.lock();
        if device != l.device_id() {
            return Err(EINVAL);
        }
        l.ipc_find(handle).map(|e| (e, handle)).ok_or(EINVAL)
    }

    /// GET_DMABUF_INFO.
    pub(crate) fn ioctl_dmabuf_info(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_get_dmabuf_info_args = get(buf);
        if self.gpus.is_empty() {
            return Err(EINVAL);
        }
        if a.metadata_ptr != 0 && u64::from(a.metadata_size) > KMALLOC_MAX {
            return Err(ENOMEM);
        }
        let _st = self.lock();
        let (e, _) = self.dmabuf_entry(a.dmabuf_fd)?;
        a.size = e.size;
        a.gpu_id = self.gpus.get(e.gpu).map_or(self.gpus[0].gpu_id, |g| g.gpu_id);
        let mut flags = if e.alloc_flags & F_VRAM != 0 { F_VRAM } else { F_GTT };
        if e.alloc_flags & F_VRAM != 0 && e.alloc_flags & F_PUBLIC != 0 {
            flags |= F_PUBLIC;
        }
        a.flags = flags;
        // KFD BOs carry no metadata: size 0, nothing copied.
        a.metadata_size = 0;
        put(buf, &a);
        Ok(())
    }

    /// IMPORT_DMABUF.
    pub(crate) fn ioctl_import_dmabuf(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_import_dmabuf_args = get(buf);
        let mut st = self.lock();
        let gpu = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if st.vms[gpu].is_none() {
            return Err(ENODEV);
        }
        let (_, handle) = self.dmabuf_entry(a.dmabuf_fd)?;
        self.arena(&mut st)?;
        let e = self.devmem()?.lock().ipc_import(current_pid(), handle)?;
        a.handle = self.import_bo(&mut st, gpu, a.va_addr, e)?;
        put(buf, &a);
        Ok(())
    }

    /// The CPU view of `[offset, offset + len)` of the memfd, if it belongs to this process.
    pub(crate) fn check_mmap(&self, offset: u64, len: usize) -> Result<BorrowedFd<'_>, i32> {
        let st = self.lock();
        if len == 0 || !st.mem.mappable(offset, len as u64) {
            return Err(EINVAL);
        }
        Ok(self.devmem()?.fd())
    }

    /// The device memfd (where every BO and doorbell page lives at its mmap offset), for a
    /// host that shares this process's mappings with another process (hsakmt-virtio's
    /// loopback transport). `None` before the device file exists.
    pub fn device_memfd(&self) -> Option<BorrowedFd<'_>> {
        self.devmem().ok().map(|d| d.fd())
    }

    /// Number of live BOs of this process.
    pub fn live_bos(&self) -> usize {
        self.lock().mem.bos.len()
    }

    /// Bytes of the device memfd's backing store in use (all processes sharing it; dead
    /// processes' arenas are reaped first). For leak checks: after every BO is freed this is
    /// back to its baseline.
    pub fn backing_bytes(&self) -> u64 {
        let Some(dev) = self.dev.get() else { return 0 };
        let mut st = self.lock();
        self.reclaim_deferred(&mut st);
        dev.lock().reap();
        dev.backing_bytes()
    }

    /// End this process's use of the KFD, as the kernel does when the last reference to
    /// /dev/kfd goes: every BO (mapped or not) and GPU mapping is released, shared and exported
    /// memory is let go, the backing store is returned. A process other than the one that opened
    /// the model has nothing to release.
    pub fn release_process(&self) {
        let mut st = self.lock();
        if st.pid == current_pid() {
            self.release_locked(&mut st);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idr_is_lowest_free() {
        let mut i = Idr::default();
        assert_eq!((i.alloc(), i.alloc(), i.alloc()), (Some(0), Some(1), Some(2)));
        i.free(1);
        assert_eq!(i.alloc(), Some(1));
        i.free(2);
        i.free(1);
        i.free(0);
        assert_eq!(i.next, 0);
        assert!(i.free.is_empty());
    }

    #[test]
    fn ape1() {
        assert!(ape1_ok(0, 0));
        assert!(ape1_ok(0x1_0000_0000, 0x1_0000));
        assert!(!ape1_ok(0x1_0000_0001, 0x1_0000));
        assert!(!ape1_ok(u64::MAX, 2));
    }
}
