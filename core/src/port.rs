//! The `Kfd` port: the only way core reaches the kernel (or the software model).
//! linux-backend implements it with syscalls on /dev/kfd and sysfs; hsakmt-model answers
//! in-process. Core issues raw KFD ioctls as (request, argument bytes) and reads topology
//! files; it never performs I/O of its own.

use crate::abi::kfd::{kfd_ioctl_wait_events_args, AMDKFD_IOC_WAIT_EVENTS};
use crate::abi::EventData;
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
/// `ioctl` is an `unsafe fn`, as rustix's `ioctl` and kvm-ioctls' raw calls are: the argument
/// bytes carry user addresses that the kernel (or the model) reads and writes through, and the
/// GPUs keep using some of them after the call. Ioctls whose argument holds no address go
/// through the safe [`ioctl_plain`] instead.
pub trait Kfd: Send + Sync {
    /// Issue one KFD ioctl. `Err` carries the errno the kernel (or model) answered.
    ///
    /// `arg` is the caller's argument struct for `request`; its length need not match the size
    /// encoded in `request` (the KFD copies min(sizes) in and out and zero-fills the rest), but
    /// implementations pass the request through unchanged so the kernel applies that rule. An
    /// `arg` shorter than the request's size is `Err(EINVAL)`.
    ///
    /// # Safety
    /// `arg` is interpreted as `request`'s argument struct (`kfd_ioctl.h`), and every user
    /// address in it is used as that ioctl defines. The caller must ensure:
    /// - **Addresses used during the call** (arrays the ioctl reads or fills: `events_ptr`,
    ///   `kfd_process_device_apertures_ptr`, `device_ids_array_ptr`, `cu_mask_ptr`,
    ///   `tile_config_ptr` / `macro_tile_config_ptr`, `metadata_ptr`, `ctl_stack_address`)
    ///   are NULL or valid for the reads and writes that ioctl makes at the sizes the struct
    ///   states, and no Rust reference to memory the call writes is live across it other than
    ///   the one the address was taken from as `*mut`.
    /// - **Memory handed to a GPU** (an ALLOC_MEMORY_OF_GPU userptr, the VA of
    ///   ALLOC_MEMORY_OF_GPU / IMPORT_DMABUF / IPC_IMPORT_HANDLE / SET_SCRATCH_BACKING_VA, the
    ///   ring, read / write pointers, EOP and CWSR areas of CREATE_QUEUE and UPDATE_QUEUE, the
    ///   SET_TRAP_HANDLER addresses, SVM ranges) is the caller's to share: until its teardown
    ///   (FREE_MEMORY_OF_GPU, DESTROY_QUEUE, the SVM range's end) the device may read and write
    ///   it at any time, so Rust reaches it only through raw pointers, atomics and volatile
    ///   copies, never through `&` / `&mut` to plain data.
    ///
    /// An address that is not mapped at all is not undefined behaviour: the kernel and the
    /// model answer EFAULT (or the GPU faults). What the GPUs then do with memory they can
    /// reach is decided by the packets their queues execute, as with any DMA engine.
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno>;

    /// [`Kfd::ioctl`], answering also the ioctl's non-negative return value: AMDKFD_IOC_DBG_TRAP's
    /// SUSPEND_QUEUES and RESUME_QUEUES return the number of queues they acted on; every other
    /// KFD ioctl returns 0. The default issues `ioctl` and answers 0.
    ///
    /// # Safety
    /// As [`Kfd::ioctl`].
    unsafe fn ioctl_value(&self, request: u32, arg: &mut [u8]) -> Result<u32, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.ioctl(request, arg) }.map(|()| 0)
    }

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
        // SAFETY: `events_ptr` / `num_events` describe `data`, exclusively borrowed for the
        // call, which WAIT_EVENTS reads and writes as `kfd_event_data` (same layout as
        // `EventData`, checked in abi/event_data.rs); nothing is handed to a GPU.
        unsafe { self.ioctl(AMDKFD_IOC_WAIT_EVENTS, a.as_mut_bytes()) }?;
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

    /// A further open of the KFD file (`open("/dev/kfd")` once more): a new file of the same
    /// device, owned by the returned port. Like the kernel's open, it refers to the caller's
    /// (primary) KFD process until `AMDKFD_IOC_CREATE_PROCESS` on it gives it a secondary
    /// process of its own, which lives until the port is dropped (the file closed).
    /// `Err(ENOSYS)` where the backend has no such thing (a model plugin).
    fn open_further(&self) -> Result<alloc::boxed::Box<dyn Kfd>, Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    /// The descriptor of the KFD file itself (upstream's `hsakmt_kfd_fd`, which hsaKmtDbgEnable
    /// gives DBG_TRAP ENABLE as the debug event file: the kernel's writes to /dev/kfd do
    /// nothing). A model answers a file whose writes go nowhere. `None`: no such file.
    fn kfd_file_fd(&self) -> Option<i32> {
        None
    }

    /// A doorbell of KFD queue `queue_id` was written through the thunk (hsaKmtQueueRingDoorbell).
    /// Hardware needs nothing more; a model may use it to run its engines at once instead of
    /// noticing the write later.
    fn doorbell_rung(&self, _queue_id: u32) {}

    /// The frequency of a GPU's clock counter in kHz (what upstream's runtime reads from
    /// libdrm's `gpu_counter_freq`), when the backend knows it.
    fn gpu_counter_khz(&self, _gpu_id: u32) -> Option<u64> {
        None
    }

    /// The current value of counter `counter_id` of perf block `block` (upstream's
    /// `enum perf_block_id`) of GPU `gpu_id`, when the backend counts it itself (the thunk then
    /// reports it as a privileged counter and reads it for PMC traces); `None` otherwise. The
    /// kernel's port counts none (the runtime programs the GPU's counters with PM4); the model
    /// counts what its GPU does (model/COUNTERS.md). Must be cheap and allocation-free.
    fn pmc_counter(&self, _gpu_id: u32, _block: u32, _counter_id: u64) -> Option<u64> {
        None
    }

    // ---- libdrm_amdgpu devices. Upstream calls `amdgpu_device_initialize` on every render node
    // it opens and hands that `amdgpu_device_handle` out through hsaKmtGetAMDGPUDeviceHandle; the
    // HSA runtime then asks libdrm about the GPU through it (its wall-clock frequency among
    // other things). Core only stores the handle; the defaults answer ENOSYS (no libdrm).

    /// `amdgpu_device_initialize` on an fd from `open_render_node`.
    fn amdgpu_device_initialize(&self, _render_fd: i32) -> Result<AmdgpuDevice, Errno> {
        Err(Errno(Errno::ENOSYS))
    }

    /// `amdgpu_device_deinitialize` of a device from `amdgpu_device_initialize` (this closes
    /// the fd libdrm uses for it).
    fn amdgpu_device_deinitialize(&self, _handle: usize) {}

    /// The GPU counter (wall clock) frequency in kHz libdrm reports for a device from
    /// `amdgpu_device_initialize` (`amdgpu_query_gpu_info`'s `gpu_counter_freq`).
    fn amdgpu_gpu_counter_khz(&self, _handle: usize) -> Result<u64, Errno> {
        Err(Errno(Errno::ENOSYS))
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

/// A libdrm_amdgpu device made by [`Kfd::amdgpu_device_initialize`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AmdgpuDevice {
    /// The `amdgpu_device_handle` (an address in libdrm's memory; core never dereferences it).
    pub handle: usize,
    /// What `amdgpu_device_get_fd` answered for it: the fd libdrm itself uses (a negative value
    /// when that call failed); `None` when the library has no such function.
    pub libdrm_fd: Option<i32>,
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
///
/// # Safety
/// As [`Kfd::ioctl`], for `arg` as `request`'s argument struct.
pub unsafe fn ioctl_typed<T: IntoBytes + FromBytes + KnownLayout + Immutable>(
    kfd: &dyn Kfd,
    request: u32,
    arg: &mut T,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract is [`Kfd::ioctl`]'s.
    unsafe { kfd.ioctl(request, arg.as_mut_bytes()) }
}

/// The argument struct of a KFD ioctl that carries no user address: the kernel (and the
/// model) reads and writes nothing but the struct itself, and the call hands no process
/// memory to a GPU. Such an ioctl is safe whatever the field values are, so it goes through
/// [`ioctl_plain`], which takes the request from the type (one struct, one request).
///
/// Handles and fds are not addresses: they name objects the kernel owns (a BO, a dma-buf, a
/// render node's VM), and any memory such an object stands for was given to the device by the
/// ioctl that made it ([`Kfd::ioctl`]'s contract covers that one).
///
/// # Safety
/// Implement only for `REQUEST`'s own argument struct, and only when no field is used as an
/// address of this process's memory by the kernel, the model or a GPU. Every implementation
/// is in this module's `plain_ioctls!` list (`PLAIN_IOCTLS`), which a test checks against the
/// ABI tables.
pub unsafe trait PlainIoctl: IntoBytes + FromBytes + KnownLayout + Immutable {
    /// The ioctl request this struct is the argument of.
    const REQUEST: u32;
}

/// Issue the ioctl whose argument struct `arg` is. Safe: a [`PlainIoctl`] carries no address.
///
/// An argument that carries pointers does not compile here; it needs the `unsafe`
/// [`ioctl_typed`] and a reason why its pointers are valid:
///
/// ```compile_fail
/// # use hsakmt_core::abi::kfd::kfd_ioctl_wait_events_args;
/// # fn f(kfd: &dyn hsakmt_core::Kfd, a: &mut kfd_ioctl_wait_events_args) {
/// hsakmt_core::port::ioctl_plain(kfd, a); // events_ptr is an address: not a PlainIoctl
/// # }
/// ```
#[inline]
pub fn ioctl_plain<T: PlainIoctl>(kfd: &dyn Kfd, arg: &mut T) -> Result<(), Errno> {
    // SAFETY: `T: PlainIoctl` is `T::REQUEST`'s argument struct and holds no address, so the
    // call reads and writes only `arg` (exclusively borrowed) and gives no memory to a GPU.
    unsafe { kfd.ioctl(T::REQUEST, arg.as_mut_bytes()) }
}

/// Issue an ioctl that has no argument at all (`_IO`: size 0, no direction), such as
/// mainline's `AMDKFD_IOC_CREATE_PROCESS`. Safe: the kernel (and the model) reads and writes no
/// user memory for it. A request that encodes an argument size is `Err(EINVAL)`, never issued.
pub fn ioctl_no_arg(kfd: &dyn Kfd, request: u32) -> Result<(), Errno> {
    if crate::abi::ioc::size(request) != 0 {
        return Err(Errno(Errno::EINVAL));
    }
    // SAFETY: the request carries no argument (size 0, checked above), so the call reads and
    // writes nothing of ours and hands no memory to a GPU.
    unsafe { kfd.ioctl(request, &mut []) }
}

macro_rules! plain_ioctls {
    ($($(#[doc = $why:literal])* $ty:ident => $req:ident,)*) => {
        $(
            $(#[doc = $why])*
            // SAFETY: `$req` is defined with `$ty` (abi/gen_kfd.rs), and the note above says
            // why none of its fields is an address (checked against the ABI tables by
            // core/tests/plain_ioctls.rs).
            unsafe impl PlainIoctl for crate::abi::kfd::$ty {
                const REQUEST: u32 = crate::abi::kfd::$req;
            }
        )*
        /// Every [`PlainIoctl`]: (argument struct, request), for the test against the ABI tables.
        #[doc(hidden)]
        pub const PLAIN_IOCTLS: &[(&str, u32)] = &[$((stringify!($ty), crate::abi::kfd::$req)),*];
    };
}

plain_ioctls! {
    /// Version numbers only.
    kfd_ioctl_get_version_args => AMDKFD_IOC_GET_VERSION,
    /// A queue id; the GPU stops using the queue's memory.
    kfd_ioctl_destroy_queue_args => AMDKFD_IOC_DESTROY_QUEUE,
    /// The alternate aperture only selects a cache policy for GPU accesses in that VA range
    /// (APE1 on gfx8); it gives the GPU no memory.
    kfd_ioctl_set_memory_policy_args => AMDKFD_IOC_SET_MEMORY_POLICY,
    /// Counters out, a gpu_id in.
    kfd_ioctl_get_clock_counters_args => AMDKFD_IOC_GET_CLOCK_COUNTERS,
    /// `event_page_offset` is the KFD handle of a BO (dGPU) or an mmap offset (APU).
    kfd_ioctl_create_event_args => AMDKFD_IOC_CREATE_EVENT,
    /// An event id.
    kfd_ioctl_destroy_event_args => AMDKFD_IOC_DESTROY_EVENT,
    /// An event id.
    kfd_ioctl_set_event_args => AMDKFD_IOC_SET_EVENT,
    /// An event id.
    kfd_ioctl_reset_event_args => AMDKFD_IOC_RESET_EVENT,
    /// A render-node fd (the kernel looks it up) and a gpu_id.
    kfd_ioctl_acquire_vm_args => AMDKFD_IOC_ACQUIRE_VM,
    /// A BO handle.
    kfd_ioctl_free_memory_of_gpu_args => AMDKFD_IOC_FREE_MEMORY_OF_GPU,
    /// A queue id and counts.
    kfd_ioctl_alloc_queue_gws_args => AMDKFD_IOC_ALLOC_QUEUE_GWS,
    /// A mode.
    kfd_ioctl_set_xnack_mode_args => AMDKFD_IOC_SET_XNACK_MODE,
    /// A byte count out, a gpu_id in.
    kfd_ioctl_get_available_memory_args => AMDKFD_IOC_AVAILABLE_MEMORY,
    /// A BO handle in, a new dma-buf fd out.
    kfd_ioctl_export_dmabuf_args => AMDKFD_IOC_EXPORT_DMABUF,
    /// A BO handle in, a share handle out.
    kfd_ioctl_ipc_export_handle_args => AMDKFD_IOC_IPC_EXPORT_HANDLE,
    /// `r_debug` is stored for a debugger to read back (kfd_ioctl_runtime_enable); neither the
    /// kernel nor a GPU dereferences it.
    kfd_ioctl_runtime_enable_args => AMDKFD_IOC_RUNTIME_ENABLE,
    /// A gpu_id in, a new file descriptor out.
    kfd_ioctl_smi_events_args => AMDKFD_IOC_SMI_EVENTS,
}
