//! The `Kfd` port: the only way core reaches the kernel (or the software model).
//! linux-backend implements it with syscalls on /dev/kfd and sysfs; hsakmt-model answers
//! in-process. Core issues raw KFD ioctls as (request, argument bytes) and reads topology
//! files; it never performs I/O of its own.

use crate::abi::kfd::{kfd_ioctl_wait_events_args, AMDKFD_IOC_WAIT_EVENTS};
use crate::event::EventData;
use crate::status::Errno;
use zerocopy::{FromBytes, FromZeros, Immutable, IntoBytes, KnownLayout};

/// Which read-only file tree a path is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysTree {
    /// The KFD topology: `/sys/devices/virtual/kfd/kfd/topology` on Linux
    /// (`generation_id`, `system_properties`, `nodes/N/...`).
    Topology,
    /// CPU description: `/sys/devices/system/cpu` (`cpuN/cache/indexM/...`).
    Cpu,
    /// `/proc/cpuinfo` (path must be empty).
    CpuInfo,
}

/// Where the port's answers come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// The amdkfd driver through /dev/kfd.
    Kernel,
    /// The built-in software model (hsakmt-model, in process).
    BuiltinModel,
    /// A model plugin .so loaded from `HSA_MODEL_LIB`.
    PluginModel,
}

/// The kernel interface as core sees it.
///
/// Contract for `ioctl`: `arg` is the caller's argument struct; its length need not match the
/// size encoded in `request` (the KFD copies min(sizes) in and out and zero-fills the rest),
/// but implementations pass the request through unchanged so the kernel applies that rule.
pub trait Kfd: Send + Sync {
    /// Issue one KFD ioctl. `Err` carries the errno the kernel (or model) answered.
    fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno>;

    /// Map `len` bytes of the KFD file at `offset` (an offset an ioctl returned).
    ///
    /// # Safety
    /// With `fixed_addr` set, the caller owns that address range and accepts it being replaced.
    unsafe fn mmap(&self, fixed_addr: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, Errno>;

    /// Unmap a range returned by `mmap`.
    ///
    /// # Safety
    /// The range must have come from `mmap` and nothing may use it afterwards.
    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno>;

    /// Map a buffer object for the CPU at the `offset` ALLOC_MEMORY_OF_GPU returned. The kernel
    /// serves VRAM/GTT BOs through the GPU's DRM render node (`render_fd`); a model serves
    /// them from its own file, which is what the default does.
    ///
    /// # Safety
    /// As [`Kfd::mmap`].
    unsafe fn mmap_bo(&self, render_fd: i32, fixed_addr: Option<usize>, len: usize, prot: u32, offset: u64) -> Result<usize, Errno> {
        let _ = render_fd;
        // SAFETY: forwarded under the same contract.
        unsafe { self.mmap(fixed_addr, len, prot, true, offset) }
    }

    /// Map private anonymous memory: with `prot == 0` a reservation (PROT_NONE, MAP_NORESERVE)
    /// for the SVM apertures whose addresses BOs later take; otherwise process memory, e.g.
    /// paged host allocations registered as userptr. Without `fixed_addr` the kernel picks
    /// (`hint` is only a hint).
    ///
    /// # Safety
    /// With `fixed_addr`, the caller owns that range and accepts it being replaced.
    unsafe fn map_anonymous(&self, fixed_addr: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno>;

    /// Give back (part of) a reservation or of any mapping.
    ///
    /// # Safety
    /// Nothing may use the range afterwards.
    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno>;

    /// Open `/dev/dri/renderD<minor>` (or the model's stand-in); returns an owned fd.
    fn open_render_node(&self, minor: u32) -> Result<i32, Errno>;

    /// Close an fd from `open_render_node`.
    fn close_render_node(&self, fd: i32);

    /// Read a whole file of `tree` at relative `path` into `buf`; returns its length.
    /// A file longer than `buf` is `Err(ERANGE)`; a missing one `Err(ENOENT)`.
    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno>;

    /// Count the entries named 0, 1, 2, ... (the numbered subdirectories) of a directory of
    /// `tree`. A missing directory is `Err(ENOENT)`.
    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno>;

    /// AMDKFD_IOC_WAIT_EVENTS on `data` (what `events_ptr` and `num_events` would point at):
    /// `Ok(wait_result)`, or the errno. The default issues the ioctl; a model that runs in this
    /// process may read and write `data` directly, sparing the checked user copies a raw
    /// pointer needs (the slice is valid by construction).
    fn wait_events(&self, data: &mut [EventData], wait_all: bool, timeout_ms: u32) -> Result<u32, Errno> {
        let mut a: kfd_ioctl_wait_events_args = FromZeros::new_zeroed();
        a.events_ptr = data.as_mut_ptr() as u64;
        a.num_events = u32::try_from(data.len()).map_err(|_| Errno(Errno::EINVAL))?;
        a.wait_for_all = u32::from(wait_all);
        a.timeout = timeout_ms;
        self.ioctl(AMDKFD_IOC_WAIT_EVENTS, a.as_mut_bytes())?;
        Ok(a.wait_result)
    }

    /// The calling process's id (for fork detection).
    fn process_id(&self) -> u32;

    /// Fault in a range of the process's own memory and check that it is mapped
    /// (`HSA_CHECK_USERPTR`: upstream touches every page of a user pointer it registers).
    /// `Err(ENOSYS)` where the backend cannot tell.
    fn prefault_user_range(&self, _addr: usize, _len: usize) -> Result<(), Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    /// `madvise(MADV_DONTFORK)` on a range of this process's anonymous memory (upstream does
    /// it to the unified CWSR area so a fork's copy-on-write cannot evict the parent's queues).
    /// Only advice: no memory contents change. `Err(ENOSYS)` where the backend cannot.
    fn advise_dont_fork(&self, _addr: usize, _len: usize) -> Result<(), Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    /// What answers this port.
    fn backend(&self) -> Backend;

    /// A doorbell of KFD queue `queue_id` was written through the thunk (hsaKmtQueueRingDoorbell).
    /// Hardware needs nothing more; a model may use it to run its engines at once instead of
    /// noticing the write later.
    fn doorbell_rung(&self, _queue_id: u32) {}

    /// The frequency of a GPU's clock counter in kHz (what upstream's runtime reads from
    /// libdrm's `gpu_counter_freq`), when the backend knows it.
    fn gpu_counter_khz(&self, _gpu_id: u32) -> Option<u64> {
        None
    }

    // ---- DRM buffer objects on a render node (upstream's handle API goes through libdrm's
    // amdgpu_bo_* calls; these are the ioctls under them). `render_fd` is an fd from
    // `open_render_node`; GEM handles are per open render file, as in the kernel. The defaults
    // answer ENOSYS (a port without DRM buffer objects).

    /// PRIME import: a dma-buf as a GEM handle of `render_fd`: (handle, size in bytes).
    fn drm_import_dmabuf(&self, _render_fd: i32, _dmabuf_fd: i32) -> Result<(u32, u64), Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    /// PRIME export of a GEM handle as a new dma-buf fd (O_CLOEXEC, read-write), owned by the
    /// caller.
    fn drm_export_dmabuf(&self, _render_fd: i32, _gem: u32) -> Result<i32, Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    /// AMDGPU_GEM_VA: map (or unmap) `[offset, offset + size)` of a GEM object at `va` of the
    /// render file's GPU VM.
    fn drm_gem_va(&self, _render_fd: i32, _gem: u32, _op: &GemVaOp) -> Result<(), Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    /// AMDGPU_GEM_MMAP: the offset at which `mmap_bo(render_fd, …)` maps the GEM object.
    fn drm_mmap_offset(&self, _render_fd: i32, _gem: u32) -> Result<u64, Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    /// GEM_CLOSE: drop the handle (and the VM mappings made through it).
    fn drm_gem_close(&self, _render_fd: i32, _gem: u32) -> Result<(), Errno> {
        Err(Errno(Errno::ENOSYS))
    }
}

/// One AMDGPU_GEM_VA operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GemVaOp {
    /// MAP (true) or UNMAP (false).
    pub map: bool,
    pub va: u64,
    /// Offset into the BO of the mapping's first byte.
    pub offset: u64,
    pub size: u64,
    /// `GEM_VA_*` page flags.
    pub flags: u32,
}

/// amdgpu's `AMDGPU_VM_PAGE_*` flags of a GEM_VA mapping.
pub const GEM_VA_READABLE: u32 = 1 << 1;
pub const GEM_VA_WRITEABLE: u32 = 1 << 2;
pub const GEM_VA_EXECUTABLE: u32 = 1 << 3;

/// Typed helper: issue `request` with a zerocopy argument struct.
pub fn ioctl_typed<T: IntoBytes + FromBytes + KnownLayout + Immutable>(kfd: &dyn Kfd, request: u32, arg: &mut T) -> Result<(), Errno> {
    kfd.ioctl(request, arg.as_mut_bytes())
}
