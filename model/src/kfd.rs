//! The KFD ioctl handler, following kfd_chardev.c `kfd_ioctl()`:
//!
//! 1. `nr = _IOC_NR(cmd)`; nr 0, or nr past the end of the ioctl table of the configured KFD
//!    version → ENOTTY (the type byte is not checked).
//! 2. A process other than the one that opened the KFD → EBADF.
//! 3. The argument is copied in with the size the *caller's* request encodes, into a buffer of
//!    max(caller size, kernel size) whose tail is zero; direction bits come from the kernel's own
//!    definition. A fault → EFAULT.
//! 4. The handler runs on the kernel-sized struct; then the caller's size is copied back for
//!    _IOR/_IOWR commands (a fault there → EFAULT, overriding the handler's result).
//!
//! Ioctls the kernel has but this slice of the model does not implement answer ENOTTY without
//! touching the argument (the thunk reads that as NOT_SUPPORTED). The deprecated debugger
//! ioctls (0x0d..0x10) answer EPERM after the argument copy, as mainline does.
//!
//! ROCm's amdgpu-dkms kernel has a second table at nr 0x80..0x87 (IPC_IMPORT_HANDLE,
//! IPC_EXPORT_HANDLE, ...) that mainline lacks; the model answers it when
//! `ModelConfig::dkms_ioctls` is on (the default), independent of the interface version.
//!
//! The memory ioctls live in `mem.rs`, the event ioctls in `events.rs`, the queue ioctls in
//! `queues.rs`, SVM and XNACK in `svm.rs`, SMI_EVENTS in `smi.rs`, RLC_SPM in `spm.rs`, PC_SAMPLE in `pcs.rs`, AIS_OP in `ais.rs`. AMDKFD_IOC_SVM is variable-size: the caller encodes
//! header + nattr attributes in the request's size field, and the whole of it is copied in and
//! back.

mod events;

use crate::model::{BoundVm, Model, Runtime};
use crate::sys::{boottime_ns, get, monotonic_raw_ns, put, KMALLOC_MAX};
use crate::usercopy::{copy_from_user, copy_to_user};
use hsakmt_core::abi::ioc;
use hsakmt_core::abi::kfd::*;
use rustix::fd::BorrowedFd;
use zerocopy::IntoBytes;

const ENOTTY: i32 = libc::ENOTTY;
const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const EBUSY: i32 = libc::EBUSY;
const EBADF: i32 = libc::EBADF;
const EPERM: i32 = libc::EPERM;
const ENOMEM: i32 = libc::ENOMEM;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Handler {
    GetVersion,
    ClockCounters,
    Apertures,
    AperturesNew,
    AcquireVm,
    AvailableMemory,
    RuntimeEnable,
    Alloc,
    Free,
    Map,
    Unmap,
    MemoryPolicy,
    ScratchBacking,
    TileConfig,
    DmabufInfo,
    ImportDmabuf,
    ExportDmabuf,
    IpcImport,
    IpcExport,
    CreateEvent,
    DestroyEvent,
    SetEvent,
    ResetEvent,
    WaitEvents,
    Svm,
    SetXnackMode,
    CreateQueue,
    DestroyQueue,
    UpdateQueue,
    CuMask,
    WaveState,
    QueueGws,
    Trap,
    SmiEvents,
    DbgTrap,
    RlcSpm,
    PcSample,
    /// AMDKFD_IOC_AIS_OP (`ais.rs`).
    Ais,
    /// DBG_*_DEPRECATED: mainline answers EPERM.
    Deprecated,
    /// AMDKFD_IOC_PROFILER, amdgpu-dkms's form (0x86, union at offset 8).
    ProfilerDkms,
    /// AMDKFD_IOC_PROFILER, mainline's form (0x28 from KFD 1.23, union at offset 4).
    ProfilerMainline,
    /// AMDKFD_IOC_CREATE_PROCESS reached without a file to repoint (`file.rs`).
    CreateProcess,
    /// In the kernel's table, not modelled yet.
    NotModelled,
}

/// The kernel's own definition of each core ioctl, indexed by nr (0x01..=0x27).
const TABLE: &[(u32, Handler)] = &[
    (AMDKFD_IOC_GET_VERSION, Handler::GetVersion),
    (AMDKFD_IOC_CREATE_QUEUE, Handler::CreateQueue),
    (AMDKFD_IOC_DESTROY_QUEUE, Handler::DestroyQueue),
    (AMDKFD_IOC_SET_MEMORY_POLICY, Handler::MemoryPolicy),
    (AMDKFD_IOC_GET_CLOCK_COUNTERS, Handler::ClockCounters),
    (AMDKFD_IOC_GET_PROCESS_APERTURES, Handler::Apertures),
    (AMDKFD_IOC_UPDATE_QUEUE, Handler::UpdateQueue),
    (AMDKFD_IOC_CREATE_EVENT, Handler::CreateEvent),
    (AMDKFD_IOC_DESTROY_EVENT, Handler::DestroyEvent),
    (AMDKFD_IOC_SET_EVENT, Handler::SetEvent),
    (AMDKFD_IOC_RESET_EVENT, Handler::ResetEvent),
    (AMDKFD_IOC_WAIT_EVENTS, Handler::WaitEvents),
    (AMDKFD_IOC_DBG_REGISTER_DEPRECATED, Handler::Deprecated),
    (AMDKFD_IOC_DBG_UNREGISTER_DEPRECATED, Handler::Deprecated),
    (AMDKFD_IOC_DBG_ADDRESS_WATCH_DEPRECATED, Handler::Deprecated),
    (AMDKFD_IOC_DBG_WAVE_CONTROL_DEPRECATED, Handler::Deprecated),
    (AMDKFD_IOC_SET_SCRATCH_BACKING_VA, Handler::ScratchBacking),
    (AMDKFD_IOC_GET_TILE_CONFIG, Handler::TileConfig),
    (AMDKFD_IOC_SET_TRAP_HANDLER, Handler::Trap),
    (AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, Handler::AperturesNew),
    (AMDKFD_IOC_ACQUIRE_VM, Handler::AcquireVm),
    (AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, Handler::Alloc),
    (AMDKFD_IOC_FREE_MEMORY_OF_GPU, Handler::Free),
    (AMDKFD_IOC_MAP_MEMORY_TO_GPU, Handler::Map),
    (AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, Handler::Unmap),
    (AMDKFD_IOC_SET_CU_MASK, Handler::CuMask),
    (AMDKFD_IOC_GET_QUEUE_WAVE_STATE, Handler::WaveState),
    (AMDKFD_IOC_GET_DMABUF_INFO, Handler::DmabufInfo),
    (AMDKFD_IOC_IMPORT_DMABUF, Handler::ImportDmabuf),
    (AMDKFD_IOC_ALLOC_QUEUE_GWS, Handler::QueueGws),
    (AMDKFD_IOC_SMI_EVENTS, Handler::SmiEvents),
    (AMDKFD_IOC_SVM, Handler::Svm),
    (AMDKFD_IOC_SET_XNACK_MODE, Handler::SetXnackMode),
    (AMDKFD_IOC_CRIU_OP, Handler::NotModelled),
    (AMDKFD_IOC_AVAILABLE_MEMORY, Handler::AvailableMemory),
    (AMDKFD_IOC_EXPORT_DMABUF, Handler::ExportDmabuf),
    (AMDKFD_IOC_RUNTIME_ENABLE, Handler::RuntimeEnable),
    (AMDKFD_IOC_DBG_TRAP, Handler::DbgTrap),
    (hsakmt_core::context::AMDKFD_IOC_CREATE_PROCESS_MAINLINE, Handler::CreateProcess),
    (hsakmt_core::pmc::AMDKFD_IOC_PROFILER_MAINLINE, Handler::ProfilerMainline),
];

/// ROCm's amdgpu-dkms table (AMDKFD_COMMAND_START_2 = 0x80 .. AMDKFD_COMMAND_END_2 = 0x88),
/// indexed by nr - 0x80. 0x82 is a hole in that table.
const DKMS_START: u32 = 0x80;
const DKMS_TABLE: &[(u32, Handler)] = &[
    (AMDKFD_IOC_IPC_IMPORT_HANDLE, Handler::IpcImport),
    (AMDKFD_IOC_IPC_EXPORT_HANDLE, Handler::IpcExport),
    (0, Handler::NotModelled),
    (AMDKFD_IOC_CROSS_MEMORY_COPY, Handler::NotModelled),
    (AMDKFD_IOC_RLC_SPM, Handler::RlcSpm),
    (AMDKFD_IOC_PC_SAMPLE, Handler::PcSample),
    (AMDKFD_IOC_PROFILER, Handler::ProfilerDkms),
    (AMDKFD_IOC_AIS_OP, Handler::Ais),
];

/// One past the last ioctl nr a KFD of this interface version has (`AMDKFD_CORE_IOCTL_COUNT`).
pub fn ioctl_count(version: (u32, u32)) -> u32 {
    match version.1 {
        0..=2 => 0x1f,   // up to ALLOC_QUEUE_GWS
        3..=4 => 0x20,   // 1.3: SMI_EVENTS
        5..=6 => 0x22,   // 1.5: SVM, SET_XNACK_MODE
        7..=8 => 0x23,   // 1.7: CRIU_OP
        9..=11 => 0x24,  // 1.9: AVAILABLE_MEMORY
        12 => 0x25,      // 1.12: EXPORT_DMABUF
        13..=18 => 0x27, // 1.13: RUNTIME_ENABLE, DBG_TRAP
        19..=22 => 0x28, // 1.19 (mainline): CREATE_PROCESS
        _ => 0x29,       // 1.23 (mainline, 2026): PROFILER at 0x28
    }
}

/// Where the caller's argument lives.
pub(crate) enum Arg<'a> {
    /// A user address (plugin / raw interface): every access is checked.
    Ptr(usize),
    /// A Rust buffer (the `Kfd` port); it must cover the request's size.
    Slice(&'a mut [u8]),
}

impl Arg<'_> {
    fn read(&self, dst: &mut [u8]) -> Result<(), i32> {
        match self {
            Arg::Ptr(p) => copy_from_user(dst, *p),
            Arg::Slice(s) => {
                let src = s.get(..dst.len()).ok_or(EFAULT)?;
                dst.copy_from_slice(src);
                Ok(())
            }
        }
    }
    fn write(&mut self, src: &[u8]) -> Result<(), i32> {
        match self {
            Arg::Ptr(p) => copy_to_user(*p, src),
            Arg::Slice(s) => {
                s.get_mut(..src.len()).ok_or(EFAULT)?.copy_from_slice(src);
                Ok(())
            }
        }
    }
}

impl Model {
    /// GPU `i`'s clock counter at CPU time `cpu_ns` (CLOCK_MONOTONIC_RAW): the counter runs at
    /// the GPU's `counter_hz` from the CPU clock's epoch.
    pub(crate) fn gpu_clock_at(&self, i: usize, cpu_ns: u64) -> u64 {
        ((u128::from(cpu_ns) * u128::from(self.gpus[i].counter_hz)) / 1_000_000_000) as u64
    }

    /// The GPU clock counter GET_CLOCK_COUNTERS reports now (0 for an unknown GPU); what the
    /// engines write for timestamps.
    pub fn gpu_clock_counter(&self, gpu_id: u32) -> u64 {
        self.gpu_index(gpu_id).map_or(0, |i| self.gpu_clock_at(i, monotonic_raw_ns()))
    }
    /// One KFD ioctl, as `ioctl(kfd_fd, request, arg)` would run it; `Err` carries the errno.
    pub(crate) fn ioctl_arg(&self, request: u32, arg: Arg<'_>) -> Result<(), i32> {
        self.ioctl_arg_value(request, arg).map(|_| ())
    }

    /// [`Model::ioctl_arg`] with the ioctl's non-negative return value (DBG_TRAP's
    /// SUSPEND / RESUME_QUEUES answer a count; every other ioctl 0).
    pub(crate) fn ioctl_arg_value(&self, request: u32, mut arg: Arg<'_>) -> Result<u32, i32> {
        let nr = ioc::nr(request);
        let entry = if (1..ioctl_count(self.config.kfd_version)).contains(&nr) {
            TABLE.get(nr as usize - 1)
        } else if self.config.dkms_ioctls && nr >= DKMS_START {
            DKMS_TABLE.get((nr - DKMS_START) as usize)
        } else {
            None
        };
        let Some(&(kcmd, handler)) = entry else {
            return Err(ENOTTY);
        };
        if !self.caller_is_owner() {
            return Err(EBADF); // "Using KFD FD in wrong process"
        }
        if handler == Handler::NotModelled {
            return Err(ENOTTY);
        }
        let usize_ = ioc::size(request);
        let ksize = ioc::size(kcmd);
        let kdir = ioc::dir(kcmd);
        // Like the kernel: a stack buffer for the usual small argument, the heap only for a
        // caller-declared size beyond it (keeps hot ioctls such as clock counters alloc-free).
        // Two stack sizes, so the usual argument of a few dozen bytes does not pay for zeroing
        // 512 (it was a tenth of a SetEvent).
        let n = usize_.max(ksize);
        let (mut small, mut stack, mut heap);
        let buf: &mut [u8] = if n <= 128 {
            small = [0u8; 128];
            &mut small[..n]
        } else if n <= 512 {
            stack = [0u8; 512];
            &mut stack[..n]
        } else {
            heap = vec![0u8; n];
            &mut heap
        };
        if kdir & ioc::DIR_WRITE != 0 {
            arg.read(&mut buf[..usize_]).map_err(|_| EFAULT)?;
        }
        // The kernel's per-ioctl validate hook (AMDKFD_IOCTL_DEF_V) runs on the copied-in
        // argument; a failure returns at once, nothing is copied back.
        if handler == Handler::Svm {
            Model::svm_validate(buf, usize_)?;
        }
        let ret = self.run(handler, buf);
        if kdir & ioc::DIR_READ != 0 {
            arg.write(&buf[..usize_]).map_err(|_| EFAULT)?;
        }
        ret
    }

    fn run(&self, handler: Handler, buf: &mut [u8]) -> Result<u32, i32> {
        match handler {
            Handler::DbgTrap => self.ioctl_dbg_trap(buf),
            h => self.run_plain(h, buf).map(|()| 0),
        }
    }

    fn run_plain(&self, handler: Handler, buf: &mut [u8]) -> Result<(), i32> {
        match handler {
            Handler::GetVersion => {
                let (major_version, minor_version) = self.config.kfd_version;
                put(buf, &kfd_ioctl_get_version_args { major_version, minor_version });
                Ok(())
            }
            Handler::ClockCounters => {
                let mut a: kfd_ioctl_get_clock_counters_args = get(buf);
                let cpu = monotonic_raw_ns();
                a.gpu_clock_counter = match self.gpu_index(a.gpu_id) {
                    Some(i) => self.gpu_clock_at(i, cpu),
                    None => 0, // node without GPU resource: still success
                };
                a.cpu_clock_counter = cpu;
                a.system_clock_counter = boottime_ns();
                a.system_clock_freq = 1_000_000_000;
                put(buf, &a);
                Ok(())
            }
            Handler::Apertures => {
                let mut a: kfd_ioctl_get_process_apertures_args = get(buf);
                a.num_of_nodes = 0;
                for (slot, g) in a.process_apertures.iter_mut().zip(&self.gpus) {
                    *slot = entry(g);
                    a.num_of_nodes += 1;
                }
                put(buf, &a);
                Ok(())
            }
            Handler::AperturesNew => {
                let mut a: kfd_ioctl_get_process_apertures_new_args = get(buf);
                let n = self.gpus.len() as u32;
                if a.num_of_nodes == 0 {
                    a.num_of_nodes = n;
                    put(buf, &a);
                    return Ok(());
                }
                if u64::from(a.num_of_nodes) * 56 > KMALLOC_MAX {
                    return Err(ENOMEM);
                }
                let count = n.min(a.num_of_nodes);
                let entries: Vec<kfd_process_device_apertures> = self.gpus[..count as usize].iter().map(entry).collect();
                a.num_of_nodes = count;
                put(buf, &a);
                copy_to_user(a.kfd_process_device_apertures_ptr as usize, entries.as_bytes()).map_err(|_| EFAULT)
            }
            Handler::AcquireVm => {
                let a: kfd_ioctl_acquire_vm_args = get(buf);
                self.acquire_vm(a.drm_fd as i32, a.gpu_id)
            }
            Handler::AvailableMemory => self.ioctl_available(buf),
            Handler::ProfilerDkms => self.ioctl_profiler(buf, 8),
            Handler::ProfilerMainline => self.ioctl_profiler(buf, 4),
            Handler::Alloc => self.ioctl_alloc(buf),
            Handler::Free => self.ioctl_free(buf),
            Handler::Map => self.ioctl_map(buf),
            Handler::Unmap => self.ioctl_unmap(buf),
            Handler::MemoryPolicy => self.ioctl_memory_policy(buf),
            Handler::ScratchBacking => self.ioctl_scratch_backing(buf),
            Handler::TileConfig => self.ioctl_tile_config(buf),
            Handler::DmabufInfo => self.ioctl_dmabuf_info(buf),
            Handler::ImportDmabuf => self.ioctl_import_dmabuf(buf),
            Handler::ExportDmabuf => self.ioctl_export_dmabuf(buf),
            Handler::IpcImport => self.ioctl_ipc_import(buf),
            Handler::IpcExport => self.ioctl_ipc_export(buf),
            Handler::CreateEvent => self.ioctl_create_event(buf),
            Handler::DestroyEvent => self.ioctl_destroy_event(buf),
            Handler::SetEvent => self.ioctl_set_reset_event(buf, true),
            Handler::ResetEvent => self.ioctl_set_reset_event(buf, false),
            Handler::WaitEvents => self.ioctl_wait_events(buf),
            Handler::Svm => self.ioctl_svm(buf),
            Handler::SetXnackMode => self.ioctl_set_xnack_mode(buf),
            Handler::RuntimeEnable => {
                let a: kfd_ioctl_runtime_enable_args = get(buf);
                let mut st = self.lock();
                if a.mode_mask & KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK as u32 != 0 {
                    if st.runtime != Runtime::Disabled {
                        return Err(EBUSY);
                    }
                    // kfd_runtime_enable: a device that already has queues → EEXIST.
                    if self.has_queues() {
                        return Err(libc::EEXIST);
                    }
                    st.runtime = Runtime::Enabled {
                        r_debug: a.r_debug,
                        ttmp_setup: a.mode_mask & KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK as u32 != 0,
                    };
                } else {
                    st.runtime = Runtime::Disabled;
                }
                let rt = st.runtime;
                drop(st);
                // The debugger's view (and, when it debugs this process, EC_PROCESS_RUNTIME and
                // the wait for its answer).
                self.debug_runtime_changed(rt);
                // Mainline does not write capabilities_mask: it goes back as passed in.
                Ok(())
            }
            Handler::CreateQueue => self.ioctl_create_queue(buf),
            Handler::DestroyQueue => self.ioctl_destroy_queue(buf),
            Handler::UpdateQueue => self.ioctl_update_queue(buf),
            Handler::CuMask => self.ioctl_set_cu_mask(buf),
            Handler::WaveState => self.ioctl_get_queue_wave_state(buf),
            Handler::QueueGws => self.ioctl_alloc_queue_gws(buf),
            Handler::Trap => self.ioctl_set_trap_handler(buf),
            Handler::SmiEvents => self.ioctl_smi_events(buf),
            Handler::RlcSpm => self.ioctl_rlc_spm(buf),
            Handler::PcSample => self.ioctl_pc_sample(buf),
            Handler::Ais => self.ioctl_ais(buf),
            Handler::Deprecated => Err(EPERM),
            // A file's CREATE_PROCESS is KfdFile's; here there is no file to give a process to.
            Handler::CreateProcess if self.is_secondary() => Err(EINVAL),
            Handler::CreateProcess => Err(ENOTTY),
            Handler::NotModelled | Handler::DbgTrap => Err(ENOTTY),
        }
    }

    /// AMDKFD_IOC_PROFILER (kfd_ioctl_profiler): VERSION answers KFD_IOC_PROFILER_VERSION_NUM;
    /// PMC takes (`lock` 1) or drops (`lock` 0) the GPU's profiling lock, shared by every
    /// process of the model's family (devmem.rs): EALREADY when the caller holds it, EBUSY when
    /// another live process does, EINVAL for an unknown gpu_id, another `lock` value, or a drop
    /// of a lock the caller does not hold. Not modelled: the perfmon_capable() check (every
    /// process may profile) and `perfcount_enable` (the model GPU always counts). Other ops
    /// (PC_SAMPLE here) are EINVAL. `union_at`: where the form puts the union.
    fn ioctl_profiler(&self, buf: &mut [u8], union_at: usize) -> Result<(), i32> {
        let word = |b: &[u8], at: usize| u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        match word(buf, 0) {
            KFD_IOC_PROFILER_VERSION => {
                buf[union_at..union_at + 4].copy_from_slice(&(KFD_IOC_PROFILER_VERSION_NUM as u32).to_ne_bytes());
                Ok(())
            }
            KFD_IOC_PROFILER_PMC => {
                let (gpu_id, lock) = (word(buf, union_at), word(buf, union_at + 4));
                let i = self.gpu_index(gpu_id).ok_or(EINVAL)?;
                if lock > 1 {
                    return Err(EINVAL);
                }
                let dev = self.devmem()?;
                let mut l = dev.lock();
                l.profiler_lock(i, crate::sys::current_pid(), lock == 1)
            }
            _ => Err(EINVAL),
        }
    }

    /// The pid holding GPU `gpu_id`'s AMDKFD_IOC_PROFILER lock (0: nobody).
    pub fn profiler_owner(&self, gpu_id: u32) -> u32 {
        match (self.gpu_index(gpu_id), self.devmem()) {
            (Some(i), Ok(dev)) => dev.lock().profiler_owner(i),
            _ => 0,
        }
    }

    fn acquire_vm(&self, drm_fd: i32, gpu_id: u32) -> Result<(), i32> {
        if drm_fd < 0 {
            return Err(EINVAL);
        }
        // SAFETY: the fd is only borrowed for fstat/dup below; if it is not open those calls
        // fail with EBADF, which is reported as the kernel's fget() failure (EINVAL).
        let fd = unsafe { BorrowedFd::borrow_raw(drm_fd) };
        if rustix::fs::fstat(fd).is_err() {
            return Err(EINVAL);
        }
        let i = self.gpu_index(gpu_id).ok_or(EINVAL)?;
        let mut st = self.lock();
        let issued = self.render_minor_of(&st, fd);
        if let Some(vm) = &st.vms[i] {
            return match issued {
                Some((key, _)) if key == vm.key => Ok(()),
                _ => Err(EBUSY),
            };
        }
        // kfd_process_device_init_vm: the file must be an amdgpu render node (ours), of this GPU.
        let Some((key, minor)) = issued else {
            return Err(EINVAL);
        };
        if minor != self.gpus[i].drm_render_minor {
            return Err(EINVAL);
        }
        let held = rustix::io::fcntl_dupfd_cloexec(fd, 0).map_err(|e| e.raw_os_error())?;
        st.vms[i] = Some(BoundVm { key, _file: held });
        // amdgpu_vm_set_task_info, then kfd_process_device_init_vm's PROCESS_START.
        if st.task.pid == 0 {
            st.task = crate::smi::TaskInfo::current();
        }
        let task = st.task;
        drop(st);
        self.smi_process(i, task, true);
        Ok(())
    }
}

fn entry(g: &crate::topology::GpuNode) -> kfd_process_device_apertures {
    let a = g.apertures();
    kfd_process_device_apertures {
        lds_base: a.lds_base,
        lds_limit: a.lds_limit,
        scratch_base: a.scratch_base,
        scratch_limit: a.scratch_limit,
        gpuvm_base: a.gpuvm_base,
        gpuvm_limit: a.gpuvm_limit,
        gpu_id: g.gpu_id,
        pad: 0,
    }
}

/// amdgpu_amdkfd_get_available_memory of a dGPU with `vram` bytes when the devices of the
/// system have `total_vram` together and `used_aligned` is allocated (each VRAM BO counted
/// rounded up to 2 MiB): VRAM less the used part and the page-table reserve
/// (max(total_vram >> 14, 8 MiB)), aligned down to 2 MiB.
pub fn available_memory(vram: u64, used_aligned: u64, total_vram: u64) -> u64 {
    crate::devmem::available_memory_with(vram, used_aligned, crate::devmem::reserved_for_pt(total_vram))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_indexed_by_nr() {
        // 0x01..=0x27, then mainline's PROFILER at 0x28 (KFD 1.23).
        assert_eq!(TABLE.len(), 0x28);
        for (i, (cmd, _)) in TABLE.iter().enumerate() {
            assert_eq!(ioc::nr(*cmd) as usize, i + 1, "{cmd:#x}");
        }
        assert!(ioctl_count(DEFAULT) as usize <= TABLE.len() + 1);
        assert_eq!(ioctl_count((1, 23)) as usize, TABLE.len() + 1);
    }

    const DEFAULT: (u32, u32) = crate::model::DEFAULT_KFD_VERSION;

    #[test]
    fn dkms_table_is_indexed_by_nr() {
        for (i, (cmd, _)) in DKMS_TABLE.iter().enumerate() {
            if *cmd != 0 {
                assert_eq!(ioc::nr(*cmd), DKMS_START + i as u32, "{cmd:#x}");
            }
        }
    }

    #[test]
    fn available_memory_is_2mib_aligned() {
        assert_eq!(available_memory(0, 0, 0), 0);
        assert_eq!(available_memory(1 << 30, 0, 1 << 30) % (2 << 20), 0);
        assert!(available_memory(1 << 30, 1 << 29, 1 << 30) < 1 << 29);
        assert_eq!(available_memory(1 << 40, 0, 8 << 40), (1 << 40) - (512 << 20));
    }
}
