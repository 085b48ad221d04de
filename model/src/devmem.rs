//! The model's device memory: one memfd standing in for /dev/kfd *and* for the memory behind
//! every buffer object (VRAM, GTT, doorbell and MMIO pages), plus a small shared control block.
//!
//! # Design
//!
//! A BO's bytes live in the device memfd at its `mmap_offset`, so the thunk's CPU mapping
//! (`mmap(kfd_fd, mmap_offset)`, or the port's `Kfd::mmap`) and the model's GPU accesses see the
//! same pages. The file has a fixed sparse size of 2^62 bytes, so no one ever truncates it (no
//! SIGBUS under a live mapping) and only pages that were written use memory. Freeing a BO
//! punches a hole (`fallocate(PUNCH_HOLE)`), so the backing store goes back to its baseline;
//! [`DeviceMemory::backing_bytes`] reads that from `st_blocks`.
//!
//! The model runs inside the process that uses it, so a forked child owns a *copy* of the model.
//! Everything that must agree across processes lives in files both share after `fork`:
//!
//! - the device memfd itself (the child keeps the parent's descriptor, as the kernel keeps one
//!   device for all processes);
//! - a control block: a second memfd mapped `MAP_SHARED` by every process of the family,
//!   guarded by a lock word holding the holder's pid (a dead holder's lock is taken over). It
//!   holds the *arena* table, the per-device memory accounting and the IPC registry.
//!
//! **Arenas.** Each KFD process (each pid that opens the model) claims an arena: a disjoint
//! 16 TiB window of file offsets, at `(index + 1) << 44`, from which it alone allocates (its
//! allocator is process-local, so a child's copy of the parent's allocator is never used). The
//! arena slot records the owner pid and its VRAM / system / TTM usage per GPU, so
//! AVAILABLE_MEMORY and the out-of-memory checks see every process, as the kernel does per device.
//! An arena whose owner died (a child that exited without freeing) is *reaped* by the next
//! process that takes the lock: its IPC holds are dropped and its window punched, except ranges
//! other processes still hold through IPC.
//!
//! **IPC.** An export records (128-bit random handle, arena, offset, size, flags) in the registry
//! and counts *holders* per pid (the exporting BO and every importing BO). An import looks the
//! handle up (all 128 bits compared; a forged handle is EINVAL) and creates a BO on the same file
//! range, so the child reads the parent's bytes. The range dies with its last holder: the last
//! releaser punches it; the exporter returns the offsets to its allocator when it next sees the
//! entry gone (see `mem.rs`). Limits: 4096 live exports, 8 holder processes per export, 64 live
//! arenas (processes) per device file; past them the ioctl answers ENOMEM.
//!
//! Handles come from getrandom(2) (the kernel uses get_random_bytes).

use crate::topology::GpuNode;
use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};

pub(crate) const PAGE: u64 = 4096;
/// Each process's window of file offsets: 16 TiB.
pub(crate) const ARENA_SHIFT: u32 = 44;
pub(crate) const ARENA_SIZE: u64 = 1 << ARENA_SHIFT;
/// Fixed (sparse) size of the device memfd.
const FILE_SIZE: u64 = 1 << 62;
/// Arena indices available in the file (index + 1 windows of 2^44 below 2^62).
const MAX_ARENA_INDEX: u64 = (FILE_SIZE >> ARENA_SHIFT) - 2;
/// GPUs the shared accounting tracks (the 65-node MI300X CPX capture has 63).
pub(crate) const MAX_GPUS: usize = 128;
const MAX_ARENAS: usize = 64;
pub(crate) const MAX_IPC: usize = 4096;
const MAX_HOLDERS: usize = 8;
const MAGIC: u64 = 0x6873_616b_6d74_4d31; // "hsakmtM1"
/// VRAM availability granularity (VRAM_AVAILABLITY_ALIGN).
pub(crate) const VRAM_AVAIL_ALIGN: u64 = 2 << 20;

/// One process's arena and usage (shared).
#[repr(C)]
struct ArenaSlot {
    /// Owner pid; 0 = free slot.
    owner: u32,
    _pad: u32,
    /// Arena number: the window starts at `(index + 1) << ARENA_SHIFT`.
    index: u64,
    vram_used: [u64; MAX_GPUS],
    vram_used_aligned: [u64; MAX_GPUS],
    system_used: u64,
    ttm_used: u64,
}

/// One exported BO (shared).
#[repr(C)]
#[derive(Clone, Copy)]
struct IpcSlot {
    /// 0 free, 1 live.
    state: u32,
    /// Bumped whenever the slot is freed, so stale references can tell.
    generation: u32,
    handle: [u32; 4],
    /// Absolute file offset and size of the backing.
    offset: u64,
    size: u64,
    /// KFD allocation flags of the exported BO.
    alloc_flags: u32,
    /// Flags the exporter passed (IPC import returns them).
    export_flags: u32,
    /// Exporting GPU (index into the model's GPU list).
    gpu: u32,
    _pad: u32,
    /// (pid, number of BOs of that process holding the range).
    holders: [[u32; 2]; MAX_HOLDERS],
}

/// The control block behind the lock.
#[repr(C)]
struct SharedData {
    magic: u64,
    next_arena: u64,
    /// Random identity of this device file (model dmabuf records name it).
    device_id: [u32; 4],
    arenas: [ArenaSlot; MAX_ARENAS],
    ipc: [IpcSlot; MAX_IPC],
    /// Per GPU (index into the model's GPU list): the pid holding AMDKFD_IOC_PROFILER's
    /// profiling lock, 0 = none.
    profiler_owner: [u32; MAX_GPUS],
    /// Per GPU (index into the model's GPU list): the pid holding its SPM (AMDKFD_IOC_RLC_SPM),
    /// 0 = none.
    spm_owner: [u32; MAX_GPUS],
}

/// The control block as mapped: a lock word on its own cache line, then the data.
#[repr(C)]
struct SharedBlock {
    lock: AtomicU32,
    _pad: [u32; 15],
    data: SharedData,
}

const SHARED_LEN: usize = std::mem::size_of::<SharedBlock>();

/// What an IPC registry entry says (a copy).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct IpcInfo {
    pub slot: usize,
    pub generation: u32,
    pub offset: u64,
    pub size: u64,
    pub alloc_flags: u32,
    pub export_flags: u32,
    pub gpu: usize,
}

/// Usage of one allocation, for the accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    pub gpu: usize,
    pub vram: u64,
    pub system: u64,
    pub ttm: u64,
}

/// The device memory file and the shared control block.
pub(crate) struct DeviceMemory {
    file: OwnedFd,
    _shared_file: OwnedFd,
    shared: NonNull<SharedBlock>,
    /// Per GPU: VRAM bytes, and the reserve for page tables (ESTIMATE_PT_SIZE of the total).
    vram: Vec<u64>,
    reserved_for_pt: u64,
    max_system: u64,
    max_ttm: u64,
    /// The debug board (debug.rs), shared by the same family of processes.
    pub(crate) debug: crate::debug::BoardMap,
}

// SAFETY: `shared` points to a MAP_SHARED mapping owned by this value for its whole life; the
// data behind it is only touched with the lock held (see `lock`), the lock word atomically.
unsafe impl Send for DeviceMemory {}
// SAFETY: as above: all access to the shared block is serialised by its lock.
unsafe impl Sync for DeviceMemory {}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping was created in `create` with this length and is not used after.
        let _ = unsafe { rustix::mm::munmap(self.shared.as_ptr().cast(), SHARED_LEN) };
    }
}

fn errno(e: rustix::io::Errno) -> i32 {
    e.raw_os_error()
}

pub(crate) fn pid_alive(pid: u32) -> bool {
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let r = unsafe { libc::kill(pid as libc::pid_t, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

pub(crate) fn random_u32x4() -> [u32; 4] {
    let mut b = [0u8; 16];
    let mut got = 0;
    while got < b.len() {
        // SAFETY: writes at most `16 - got` bytes into the live local buffer.
        let r = unsafe { libc::getrandom(b[got..].as_mut_ptr().cast(), b.len() - got, 0) };
        if r > 0 {
            got += r as usize;
        } else if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // No getrandom: fall back to the kernel's pool file.
            if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
                use std::io::Read;
                if f.read_exact(&mut b).is_ok() {
                    break;
                }
            }
            // Last resort (never expected on Linux): time and address entropy.
            let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
            let x = (t.tv_nsec as u64) ^ ((t.tv_sec as u64) << 32) ^ (&b as *const _ as u64);
            b[..8].copy_from_slice(&x.to_ne_bytes());
            b[8..].copy_from_slice(&x.rotate_left(29).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_ne_bytes());
            break;
        }
    }
    let w = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    [w(0), w(4), w(8), w(12)]
}

/// Take a cross-process lock word holding the holder's pid (0: free); a dead holder's lock is
/// taken over. Released by storing 0.
pub(crate) fn pid_lock(word: &AtomicU32) {
    let me = crate::sys::current_pid();
    let mut spins = 0u32;
    loop {
        match word.compare_exchange(0, me, Ordering::Acquire, Ordering::Relaxed) {
            Ok(_) => return,
            Err(holder) => {
                spins = spins.wrapping_add(1);
                if spins & 63 == 0 {
                    if holder != me && !pid_alive(holder) && word.compare_exchange(holder, me, Ordering::Acquire, Ordering::Relaxed).is_ok()
                    {
                        return;
                    }
                    std::thread::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

/// The lock is held while this lives.
pub(crate) struct Locked<'a> {
    dev: &'a DeviceMemory,
    data: &'a mut SharedData,
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        self.dev.lock_word().store(0, Ordering::Release);
    }
}

impl DeviceMemory {
    /// Create the device file and the control block for a model with these GPUs, whose CPU
    /// nodes have `system_bytes` of memory.
    pub(crate) fn create(gpus: &[GpuNode], system_bytes: u64) -> Result<DeviceMemory, i32> {
        use rustix::fs::{memfd_create, MemfdFlags};
        use rustix::mm::{MapFlags, ProtFlags};
        let file = memfd_create("hsakmt-model-kfd", MemfdFlags::CLOEXEC).map_err(errno)?;
        rustix::fs::ftruncate(&file, FILE_SIZE).map_err(errno)?;
        let shared_file = memfd_create("hsakmt-model-shared", MemfdFlags::CLOEXEC).map_err(errno)?;
        rustix::fs::ftruncate(&shared_file, SHARED_LEN as u64).map_err(errno)?;
        // SAFETY: a fresh shared mapping of a file we just sized; no fixed address.
        let p = unsafe {
            rustix::mm::mmap(std::ptr::null_mut(), SHARED_LEN, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, &shared_file, 0)
        }
        .map_err(errno)?;
        let shared = NonNull::new(p.cast::<SharedBlock>()).ok_or(libc::ENOMEM)?;
        let vram: Vec<u64> = gpus.iter().map(|g| g.vram_bytes).collect();
        let total: u64 = vram.iter().fold(0u64, |a, v| a.saturating_add(*v));
        let dev = DeviceMemory {
            file,
            _shared_file: shared_file,
            shared,
            vram,
            reserved_for_pt: reserved_for_pt(total),
            max_system: max_system_mem(system_bytes),
            max_ttm: system_bytes / 2,
            debug: crate::debug::BoardMap::create()?,
        };
        {
            let l = dev.lock();
            l.data.magic = MAGIC;
            l.data.device_id = random_u32x4();
        }
        Ok(dev)
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }

    fn lock_word(&self) -> &AtomicU32 {
        // SAFETY: the mapping is live for `self`'s lifetime; the lock word is only accessed
        // atomically, by every process.
        unsafe { &(*self.shared.as_ptr()).lock }
    }

    /// Take the cross-process lock. Callers hold their process's state mutex, so at most one
    /// thread per process waits here; the lock word holds the holder's pid and a dead holder's
    /// lock is taken over.
    pub(crate) fn lock(&self) -> Locked<'_> {
        pid_lock(self.lock_word());
        // SAFETY: the lock is held: no other thread or process touches the data until it is
        // released in `Locked::drop`; the mapping outlives the guard.
        let data = unsafe { &mut (*self.shared.as_ptr()).data };
        Locked { dev: self, data }
    }

    /// Bytes of backing store in use (allocated pages of the device file).
    pub(crate) fn backing_bytes(&self) -> u64 {
        rustix::fs::fstat(&self.file).map(|s| s.st_blocks as u64 * 512).unwrap_or(0)
    }

    /// Release `len` bytes of backing at `offset` (a no-op where nothing is allocated).
    pub(crate) fn punch(&self, offset: u64, len: u64) {
        if len == 0 {
            return;
        }
        let mode = rustix::fs::FallocateFlags::PUNCH_HOLE | rustix::fs::FallocateFlags::KEEP_SIZE;
        let _ = rustix::fs::fallocate(&self.file, mode, offset, len);
    }

    pub(crate) fn vram_bytes(&self, gpu: usize) -> u64 {
        self.vram.get(gpu).copied().unwrap_or(0)
    }
}

/// ESTIMATE_PT_SIZE of the total VRAM of all devices: max(total >> 14, 8 MiB).
pub(crate) fn reserved_for_pt(total_vram: u64) -> u64 {
    (total_vram >> 14).max(8 << 20)
}

/// The kernel's system memory limit: RAM − RAM/64 − 1.5 GiB (half of that reserve when RAM is
/// small).
fn max_system_mem(ram: u64) -> u64 {
    let reserve = if ram < (6 << 30) { 768 << 20 } else { 1536 << 20 };
    (ram - ram / 64).saturating_sub(reserve)
}

impl Locked<'_> {
    /// AMDKFD_IOC_PROFILER's device lock (kfd_profiler_pmc's profile_lock_device): take it
    /// (`lock`) when free or held by a dead process, EALREADY when `pid` holds it, EBUSY when
    /// another live process does; drop it only when `pid` holds it (else EINVAL).
    pub(crate) fn profiler_lock(&mut self, gpu: usize, pid: u32, lock: bool) -> Result<(), i32> {
        let owner = self.data.profiler_owner.get_mut(gpu).ok_or(libc::EINVAL)?;
        match (lock, *owner) {
            (true, o) if o == pid => Err(libc::EALREADY),
            (true, o) if o != 0 && pid_alive(o) => Err(libc::EBUSY),
            (true, _) => {
                *owner = pid;
                Ok(())
            }
            (false, o) if o == pid => {
                *owner = 0;
                Ok(())
            }
            (false, _) => Err(libc::EINVAL),
        }
    }

    /// The pid holding GPU `gpu`'s profiling lock (0: none or a dead holder).
    pub(crate) fn profiler_owner(&self, gpu: usize) -> u32 {
        self.data.profiler_owner.get(gpu).copied().filter(|&o| o != 0 && pid_alive(o)).unwrap_or(0)
    }

    /// Take GPU `gpu`'s SPM for `pid`: EBUSY while another live process holds it (a dead
    /// holder's is taken over).
    pub(crate) fn spm_take(&mut self, gpu: usize, pid: u32) -> Result<(), i32> {
        let owner = self.data.spm_owner.get_mut(gpu).ok_or(libc::EINVAL)?;
        if *owner != 0 && *owner != pid && pid_alive(*owner) {
            return Err(libc::EBUSY);
        }
        *owner = pid;
        Ok(())
    }

    /// Give GPU `gpu`'s SPM back if `pid` holds it.
    pub(crate) fn spm_drop(&mut self, gpu: usize, pid: u32) {
        if let Some(owner) = self.data.spm_owner.get_mut(gpu).filter(|o| **o == pid) {
            *owner = 0;
        }
    }

    /// Reap arenas whose owner died: drop their IPC holds and punch their windows (except
    /// ranges other processes still hold).
    pub(crate) fn reap(&mut self) {
        let me = crate::sys::current_pid();
        for s in 0..MAX_ARENAS {
            let owner = self.data.arenas[s].owner;
            if owner != 0 && owner != me && !pid_alive(owner) {
                let index = self.data.arenas[s].index;
                self.release_arena(s, index, owner);
            }
        }
    }

    /// Claim a free arena slot for `pid`: (slot, arena base offset).
    pub(crate) fn claim_arena(&mut self, pid: u32) -> Result<(usize, u64), i32> {
        self.reap();
        if self.data.next_arena > MAX_ARENA_INDEX {
            return Err(libc::ENOMEM);
        }
        let s = self.data.arenas.iter().position(|a| a.owner == 0).ok_or(libc::ENOMEM)?;
        let index = self.data.next_arena;
        self.data.next_arena += 1;
        let a = &mut self.data.arenas[s];
        a.owner = pid;
        a.index = index;
        a.vram_used = [0; MAX_GPUS];
        a.vram_used_aligned = [0; MAX_GPUS];
        a.system_used = 0;
        a.ttm_used = 0;
        Ok((s, (index + 1) << ARENA_SHIFT))
    }

    /// The end of a process: drop `pid`'s IPC holds, punch its arena window except ranges still
    /// held by others, free the slot.
    pub(crate) fn release_arena(&mut self, slot: usize, index: u64, pid: u32) {
        if self.data.arenas[slot].owner != pid || self.data.arenas[slot].index != index {
            return;
        }
        for i in 0..MAX_IPC {
            if self.data.ipc[i].state == 1 {
                for h in self.data.ipc[i].holders.iter_mut() {
                    if h[0] == pid {
                        *h = [0, 0];
                    }
                }
                if self.data.ipc[i].holders.iter().all(|h| h[1] == 0) {
                    let (off, size) = (self.data.ipc[i].offset, self.data.ipc[i].size);
                    self.free_ipc(i);
                    self.dev.punch(off, size);
                }
            }
        }
        // Punch the window around the ranges other processes still hold.
        let base = (index + 1) << ARENA_SHIFT;
        let end = base + ARENA_SIZE;
        let mut kept: Vec<(u64, u64)> = self
            .data
            .ipc
            .iter()
            .filter(|e| e.state == 1 && e.offset >= base && e.offset < end)
            .map(|e| (e.offset, e.offset + e.size))
            .collect();
        kept.sort_unstable();
        let mut at = base;
        for (s, e) in kept {
            if s > at {
                self.dev.punch(at, s - at);
            }
            at = at.max(e);
        }
        if at < end {
            self.dev.punch(at, end - at);
        }
        self.data.arenas[slot].owner = 0;
    }

    fn free_ipc(&mut self, i: usize) {
        let e = &mut self.data.ipc[i];
        e.state = 0;
        e.generation = e.generation.wrapping_add(1);
        e.handle = [0; 4];
        e.holders = [[0; 2]; MAX_HOLDERS];
    }

    fn used(&self) -> (u64, u64) {
        self.data.arenas.iter().filter(|a| a.owner != 0).fold((0, 0), |(s, t), a| (s + a.system_used, t + a.ttm_used))
    }

    fn vram_used(&self, gpu: usize) -> (u64, u64) {
        if gpu >= MAX_GPUS {
            return (0, 0);
        }
        self.data
            .arenas
            .iter()
            .filter(|a| a.owner != 0)
            .fold((0, 0), |(u, al), a| (u.saturating_add(a.vram_used[gpu]), al.saturating_add(a.vram_used_aligned[gpu])))
    }

    /// amdgpu_amdkfd_reserve_mem_limit: account `u` to the arena in `slot`, or ENOMEM.
    pub(crate) fn reserve(&mut self, slot: usize, u: Usage) -> Result<(), i32> {
        self.reap();
        let (sys, ttm) = self.used();
        let (vram_used, _) = self.vram_used(u.gpu);
        let vram_limit = self.dev.vram_bytes(u.gpu).saturating_sub(self.dev.reserved_for_pt);
        if sys.saturating_add(u.system) > self.dev.max_system
            || ttm.saturating_add(u.ttm) > self.dev.max_ttm
            || (u.vram > 0 && vram_used.saturating_add(u.vram) > vram_limit)
            || (u.vram > 0 && u.gpu >= MAX_GPUS)
        {
            return Err(libc::ENOMEM);
        }
        let a = &mut self.data.arenas[slot];
        a.system_used += u.system;
        a.ttm_used += u.ttm;
        if u.vram > 0 {
            a.vram_used[u.gpu] += u.vram;
            a.vram_used_aligned[u.gpu] += u.vram.div_ceil(VRAM_AVAIL_ALIGN) * VRAM_AVAIL_ALIGN;
        }
        Ok(())
    }

    pub(crate) fn unreserve(&mut self, slot: usize, pid: u32, u: Usage) {
        let a = &mut self.data.arenas[slot];
        if a.owner != pid {
            return;
        }
        a.system_used = a.system_used.saturating_sub(u.system);
        a.ttm_used = a.ttm_used.saturating_sub(u.ttm);
        if u.vram > 0 && u.gpu < MAX_GPUS {
            a.vram_used[u.gpu] = a.vram_used[u.gpu].saturating_sub(u.vram);
            let al = u.vram.div_ceil(VRAM_AVAIL_ALIGN) * VRAM_AVAIL_ALIGN;
            a.vram_used_aligned[u.gpu] = a.vram_used_aligned[u.gpu].saturating_sub(al);
        }
    }

    /// amdgpu_amdkfd_get_available_memory for a dGPU.
    pub(crate) fn available(&mut self, gpu: usize) -> u64 {
        self.reap();
        let (_, aligned) = self.vram_used(gpu);
        available_memory_with(self.dev.vram_bytes(gpu), aligned, self.dev.reserved_for_pt)
    }

    pub(crate) fn device_id(&self) -> [u32; 4] {
        self.data.device_id
    }

    /// Register an export held by `pid`: returns the entry.
    pub(crate) fn ipc_export(
        &mut self,
        pid: u32,
        offset: u64,
        size: u64,
        alloc_flags: u32,
        export_flags: u32,
        gpu: usize,
    ) -> Result<(IpcInfo, [u32; 4]), i32> {
        self.reap();
        let i = self.data.ipc.iter().position(|e| e.state == 0).ok_or(libc::ENOMEM)?;
        let mut handle = random_u32x4();
        while handle == [0; 4] || self.data.ipc.iter().any(|e| e.state == 1 && e.handle == handle) {
            handle = random_u32x4();
        }
        let e = &mut self.data.ipc[i];
        e.state = 1;
        e.handle = handle;
        e.offset = offset;
        e.size = size;
        e.alloc_flags = alloc_flags;
        e.export_flags = export_flags;
        e.gpu = gpu as u32;
        e.holders = [[0; 2]; MAX_HOLDERS];
        e.holders[0] = [pid, 1];
        Ok((info(i, e), handle))
    }

    /// Look a share handle up (all 128 bits) and add a hold for `pid`. None: no such export.
    pub(crate) fn ipc_import(&mut self, pid: u32, handle: [u32; 4]) -> Result<IpcInfo, i32> {
        self.reap();
        if handle == [0; 4] {
            return Err(libc::EINVAL);
        }
        let i = self.data.ipc.iter().position(|e| e.state == 1 && e.handle == handle).ok_or(libc::EINVAL)?;
        self.ipc_hold(i, pid)?;
        Ok(info(i, &self.data.ipc[i]))
    }

    /// One more hold of `pid` on a live entry (a dma-buf file of the process names it).
    pub(crate) fn ipc_add_hold(&mut self, slot: usize, generation: u32, pid: u32) -> Result<(), i32> {
        self.ipc_get(slot, generation).ok_or(libc::EINVAL)?;
        self.ipc_hold(slot, pid)
    }

    fn ipc_hold(&mut self, i: usize, pid: u32) -> Result<(), i32> {
        let holders = &mut self.data.ipc[i].holders;
        if let Some(h) = holders.iter_mut().find(|h| h[0] == pid && h[1] > 0) {
            h[1] += 1;
            return Ok(());
        }
        let h = holders.iter_mut().find(|h| h[1] == 0).ok_or(libc::ENOMEM)?;
        *h = [pid, 1];
        Ok(())
    }

    /// The entry, if still live with this generation.
    pub(crate) fn ipc_get(&self, slot: usize, generation: u32) -> Option<IpcInfo> {
        let e = self.data.ipc.get(slot)?;
        (e.state == 1 && e.generation == generation).then(|| info(slot, e))
    }

    /// The live entry with this share handle (no hold taken).
    pub(crate) fn ipc_find(&self, handle: [u32; 4]) -> Option<IpcInfo> {
        if handle == [0; 4] {
            return None;
        }
        self.data.ipc.iter().position(|e| e.state == 1 && e.handle == handle).map(|i| info(i, &self.data.ipc[i]))
    }

    pub(crate) fn ipc_handle(&self, slot: usize, generation: u32) -> Option<[u32; 4]> {
        let e = self.data.ipc.get(slot)?;
        (e.state == 1 && e.generation == generation).then_some(e.handle)
    }

    /// Drop one hold of `pid`. Returns true when that was the last hold of anyone: the entry is
    /// gone and its range punched.
    pub(crate) fn ipc_release(&mut self, slot: usize, generation: u32, pid: u32) -> bool {
        let Some(e) = self.data.ipc.get_mut(slot) else { return false };
        if e.state != 1 || e.generation != generation {
            return false;
        }
        if let Some(h) = e.holders.iter_mut().find(|h| h[0] == pid && h[1] > 0) {
            h[1] -= 1;
            if h[1] == 0 {
                h[0] = 0;
            }
        }
        if e.holders.iter().all(|h| h[1] == 0) {
            let (off, size) = (e.offset, e.size);
            self.free_ipc(slot);
            self.dev.punch(off, size);
            return true;
        }
        false
    }

    /// Is this arena slot still owned by `pid` with this index?
    pub(crate) fn owns(&self, slot: usize, index_base: u64, pid: u32) -> bool {
        let a = &self.data.arenas[slot];
        a.owner == pid && (a.index + 1) << ARENA_SHIFT == index_base
    }
}

fn info(i: usize, e: &IpcSlot) -> IpcInfo {
    IpcInfo {
        slot: i,
        generation: e.generation,
        offset: e.offset,
        size: e.size,
        alloc_flags: e.alloc_flags,
        export_flags: e.export_flags,
        gpu: e.gpu as usize,
    }
}

/// VRAM less the used part and the page-table reserve, aligned down to 2 MiB
/// (amdgpu_amdkfd_get_available_memory; see `kfd::available_memory`).
pub(crate) fn available_memory_with(vram: u64, used_aligned: u64, reserved_for_pt: u64) -> u64 {
    vram.saturating_sub(used_aligned).saturating_sub(reserved_for_pt) & !(VRAM_AVAIL_ALIGN - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_and_limits() {
        const { assert!(SHARED_LEN < 1 << 20) };
        assert_eq!(reserved_for_pt(0), 8 << 20);
        assert_eq!(reserved_for_pt(1 << 40), 64 << 20);
        assert_eq!(max_system_mem(64 << 30), (63 << 30) - (1536 << 20));
        let a = random_u32x4();
        let b = random_u32x4();
        assert_ne!(a, b);
    }
}
