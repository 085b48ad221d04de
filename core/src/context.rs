//! The thunk context: one open KFD (kernel or model) with its version, topology snapshot,
//! apertures and runtime state — what upstream keeps in globals. `Thunk` adds upstream's
//! process rules on top: open reference counting and fork detection.

use crate::abi::hsakmt::*;
use crate::abi::kfd::*;
use crate::abi::EventData;
use crate::event::{EventDesc, Events};
use crate::memory::{Memory, MemoryConfig};
use crate::port::{ioctl_plain, ioctl_typed, Backend, Kfd};
use crate::queue::{CreatedQueue, QueueEnv, QueueInfo, QueueRequest, Queues};
use crate::status::{Errno, KmtResult, Status};
use crate::svm::Svm;
use crate::topology::{self, Topology, TopologyConfig, TopologyError};
use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;
use zerocopy::FromZeros;

/// The only KFD major version the thunk talks to (upstream rejects everything else).
pub const KFD_MAJOR_VERSION: u32 = 1;
/// RUNTIME_ENABLE arrived in KFD 1.13; older kernels get NOT_SUPPORTED without an ioctl.
pub const RUNTIME_ENABLE_MIN_MINOR: u32 = 13;

/// Mainline's `AMDKFD_IOC_CREATE_PROCESS` (KFD 1.19): `AMDKFD_IO(0x27)`, no argument. Issued on
/// a further open of the KFD, it gives that file a secondary KFD process of its own; closing
/// the file destroys it. (ROCm's bundled `kfd_ioctl.h` declares it `_IOWR(0x27, 8 bytes)`; the
/// kernel replaces a caller's request with its own definition, so both reach a handler that
/// reads nothing.)
pub const AMDKFD_IOC_CREATE_PROCESS_MAINLINE: u32 = crate::abi::ioc::io(0x27);

/// Settings read from the environment by the C shim at the first open.
#[derive(Clone, Debug, Default)]
pub struct OpenConfig {
    pub topology: TopologyConfig,
    pub memory: MemoryConfig,
}

/// Why an open failed, with something a person can act on.
#[derive(Clone, Debug)]
pub struct OpenError {
    pub status: Status,
    pub message: alloc::string::String,
}

impl OpenError {
    fn new(status: Status, message: impl Into<alloc::string::String>) -> Self {
        OpenError { status, message: message.into() }
    }
}

/// The GPU apertures the KFD reported for one node (all zero for CPU nodes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Apertures {
    pub lds: (u64, u64),
    pub scratch: (u64, u64),
    pub gpuvm: (u64, u64),
}

/// Per-process state that exists between the first AcquireSystemProperties and the
/// matching Release: the snapshot plus what upstream's FMM init sets up with it.
struct Acquired {
    topology: Topology,
    /// Indexed like `topology.nodes`.
    apertures: Vec<Apertures>,
    /// The FMM: SVM apertures, VA allocators and every buffer object of the process.
    memory: Memory,
}

/// One open KFD.
pub struct Context {
    /// Shared so that blocking waits can run without the caller's lock on the context.
    kfd: Arc<dyn Kfd>,
    version: HsaVersionInfo,
    cfg: OpenConfig,
    acquired: Option<Acquired>,
    runtime_caps: u32,
    /// What the last successful RuntimeEnable passed (`r_debug`, TTMP set-up), until
    /// RuntimeDisable: the per-process runtime state the KFD keeps (`kfd_runtime_info`).
    runtime: Option<(u64, bool)>,
    /// Render-node fds by minor, opened once and kept for the life of the context: the KFD
    /// binds a GPU's VM to the DRM file of the first ACQUIRE_VM and refuses (EBUSY) another
    /// file later, so a re-acquired snapshot must present the same fd (upstream caches them).
    render_fds: Vec<(u32, i32)>,
    /// The libdrm_amdgpu device made on each render node (upstream's per-minor
    /// `amdgpu_handle`), for hsaKmtGetAMDGPUDeviceHandle; torn down with the render fds.
    amdgpu_devices: Vec<DrmDevice>,
    /// Events (`event.rs`).
    events: Events,
    /// Queues (`queue.rs`).
    queues: Queues,
    /// Performance counters (`pmc`).
    pmc: crate::pmc::Pmc,
    /// The process's primary context (its first open of the KFD), or a secondary one
    /// ([`Context::open_secondary`]).
    primary: bool,
}

/// A libdrm_amdgpu device on a render node of this context.
#[derive(Clone, Copy, Debug)]
struct DrmDevice {
    minor: u32,
    handle: usize,
    /// The render fd in `render_fds` is libdrm's own (`amdgpu_device_get_fd`), closed by
    /// `amdgpu_device_deinitialize`; otherwise it is ours and closed separately.
    libdrm_owns_fd: bool,
}

fn zeroed<T: FromZeros>() -> T {
    T::new_zeroed()
}

impl Context {
    /// Open: query and check the KFD version (upstream: GET_VERSION, major must be 1).
    /// The topology is snapshotted by the first `acquire_system_properties`, as upstream does.
    pub fn open(kfd: Box<dyn Kfd>, cfg: OpenConfig) -> Result<Context, OpenError> {
        let mut v: kfd_ioctl_get_version_args = zeroed();
        if let Err(e) = ioctl_plain(&*kfd, &mut v) {
            return Err(OpenError::new(Status::ERROR, alloc::format!("AMDKFD_IOC_GET_VERSION failed (errno {})", e.0)));
        }
        if v.major_version != KFD_MAJOR_VERSION {
            return Err(OpenError::new(
                Status::DRIVER_MISMATCH,
                alloc::format!("KFD interface {}.{} is not supported (need major {KFD_MAJOR_VERSION})", v.major_version, v.minor_version),
            ));
        }
        let version = HsaVersionInfo { KernelInterfaceMajorVersion: v.major_version, KernelInterfaceMinorVersion: v.minor_version };
        Ok(Context {
            kfd: kfd.into(),
            version,
            cfg,
            acquired: None,
            runtime_caps: 0,
            runtime: None,
            render_fds: Vec::new(),
            amdgpu_devices: Vec::new(),
            events: Default::default(),
            queues: Default::default(),
            pmc: Default::default(),
            primary: true,
        })
    }

    /// hsaKmtOpenSecondaryKFDCtx (upstream openclose.c): a further open of the KFD, then
    /// `AMDKFD_IOC_CREATE_PROCESS` on it, gives a context with a KFD process of its own: its
    /// own GPU VMs (its own render-node files), apertures, buffer objects, events, queues and
    /// doorbells; nothing of this context is valid in it, nor the other way round. The open
    /// failing is KERNEL_IO_CHANNEL_NOT_OPENED; a KFD without the ioctl (ENOTTY, before 1.19)
    /// or refusing it (EINVAL) NOT_SUPPORTED; any other refusal ERROR. As upstream, the SVM API
    /// is off in a secondary context (the kernel refuses SVM, userptr memory and the debug
    /// trap to a secondary process); the rest of the settings are this context's.
    pub fn open_secondary(&self) -> KmtResult<Context> {
        let file = self.kfd.open_further().map_err(|_| Status::KERNEL_IO_CHANNEL_NOT_OPENED)?;
        match crate::port::ioctl_no_arg(&*file, AMDKFD_IOC_CREATE_PROCESS_MAINLINE) {
            Ok(()) => {}
            Err(Errno(Errno::EINVAL | Errno::ENOTTY)) => return Err(Status::NOT_SUPPORTED),
            Err(_) => return Err(Status::ERROR),
        }
        let mut cfg = self.cfg.clone();
        cfg.topology.disable_svm = true;
        let mut c = Context::open(file, cfg).map_err(|e| e.status)?;
        c.primary = false;
        Ok(c)
    }

    /// The process's first context (false: a secondary one).
    pub fn is_primary(&self) -> bool {
        self.primary
    }

    pub fn version(&self) -> HsaVersionInfo {
        self.version
    }

    pub fn backend(&self) -> Backend {
        self.kfd.backend()
    }

    pub fn kfd(&self) -> &dyn Kfd {
        &*self.kfd
    }

    /// The port, for a call that must not hold the caller's lock on the context (event waits).
    pub fn kfd_shared(&self) -> Arc<dyn Kfd> {
        self.kfd.clone()
    }

    /// Events alive in this context (tests and leak checks).
    pub fn live_events(&self) -> usize {
        self.events.len()
    }

    // ---- Events (`event.rs`): the service owns the events and the event page.

    /// hsaKmtCreateEvent: returns the new `HsaEvent`'s address. Until the KFD has an event
    /// page, the snapshot is taken first (a dGPU's first event allocates the page).
    pub fn create_event(&mut self, desc: &EventDesc, manual_reset: bool, is_signaled: bool) -> KmtResult<usize> {
        Events::check_desc(desc)?;
        if !self.events.page_given() {
            self.acquire_system_properties().map_err(|_| Status::ERROR)?;
        }
        let acquired = self.acquired.as_mut().map(|a| (&a.topology, &mut a.memory));
        self.events.create(&*self.kfd, acquired, desc, manual_reset, is_signaled)
    }

    /// The KFD id of an event SetEvent / ResetEvent may change (not a system-defined one),
    /// for callers that issue the ioctl with [`crate::event::set_reset`] after releasing their
    /// lock.
    pub fn event_signal_target(&self, ev: usize) -> KmtResult<u32> {
        self.events.signal_target(ev)
    }

    /// hsaKmtDestroyEvent: a KFD refusal keeps the event (upstream).
    pub fn destroy_event(&mut self, ev: usize) -> KmtResult<()> {
        self.events.destroy(&*self.kfd, ev)
    }

    /// hsaKmtSetEvent: system-defined events cannot be set (ERROR). Allocates nothing.
    pub fn set_event(&self, ev: usize) -> KmtResult<()> {
        self.events.set_reset(&*self.kfd, ev, true)
    }

    /// hsaKmtResetEvent. Allocates nothing.
    pub fn reset_event(&self, ev: usize) -> KmtResult<()> {
        self.events.set_reset(&*self.kfd, ev, false)
    }

    /// hsaKmtQueryEventState: upstream only checks the event.
    pub fn query_event_state(&self, ev: usize) -> KmtResult<()> {
        self.events.query_state(ev)
    }

    /// The KFD id and type of a live event (for a wait).
    pub fn event_wait_entry(&self, ev: usize) -> KmtResult<(u32, u32)> {
        self.events.wait_entry(ev)
    }

    /// A live event's slot in the event page (`HWData2`), 0 when it has none
    /// ([`Events::mailbox`]).
    pub fn event_mailbox(&self, ev: usize) -> KmtResult<u64> {
        self.events.mailbox(ev)
    }

    /// hsaKmtWaitOnMultipleEvents(_Ext) for a caller that owns the context for the whole wait
    /// ([`Events::wait_on`]).
    pub fn wait_on_events(&mut self, evs: &[usize], wait_all: bool, milliseconds: u32, ages: Option<&mut [u64]>) -> KmtResult<()> {
        self.events.wait_on(&*self.kfd, self.topology(), evs, wait_all, milliseconds, ages)
    }

    /// After a successful wait: exception data into the `HsaEvent`s ([`Events::finish_wait`]).
    pub fn finish_event_wait(&mut self, evs: impl IntoIterator<Item = usize>, data: &[EventData]) -> KmtResult<()> {
        self.events.finish_wait(self.topology(), evs, data)
    }

    // ---- Queues (`queue.rs`): the service owns the queue table and the doorbell pages; it
    // gets the port, the snapshot and the memory manager for each call.

    /// The queue table and what the queue service needs for one call.
    fn queues_env(&mut self) -> (&mut Queues, QueueEnv<'_>) {
        let env = QueueEnv {
            kfd: &*self.kfd,
            kfd_minor: self.version.KernelInterfaceMinorVersion,
            page_size: self.cfg.memory.fmm.page_size,
            acquired: self.acquired.as_mut().map(|a| (&a.topology, &mut a.memory)),
        };
        (&mut self.queues, env)
    }

    /// Live queues (tests, leak checks).
    pub fn live_queues(&self) -> usize {
        self.queues.len()
    }

    /// hsaKmtCreateQueue / CreateQueueExt / CreateQueueV2 ([`Queues::create`]).
    ///
    /// # Safety
    /// As [`Queues::create`].
    pub unsafe fn create_queue(&mut self, r: &QueueRequest) -> KmtResult<CreatedQueue> {
        // The error event's id, looked up now and checked where upstream checks it.
        let error_event_id = r.error_event.map(|ev| self.events.wait_entry(ev).map(|(id, _)| id)).transpose();
        let (queues, mut env) = self.queues_env();
        // SAFETY: this function's contract, passed on.
        unsafe { queues.create(&mut env, r, error_event_id) }
    }

    /// hsaKmtDestroyQueue: a KFD refusal keeps the queue (upstream).
    pub fn destroy_queue(&mut self, id: u64) -> KmtResult<()> {
        let (queues, mut env) = self.queues_env();
        queues.destroy(&mut env, id)
    }

    /// Destroy every queue (close, release): the KFD must let go of queue memory before the
    /// memory manager frees it.
    fn destroy_all_queues(&mut self) {
        let (queues, mut env) = self.queues_env();
        queues.destroy_all(&mut env);
    }

    /// hsaKmtUpdateQueue.
    ///
    /// # Safety
    /// As [`Queues::update`].
    pub unsafe fn update_queue(&mut self, id: u64, percentage: u32, priority: i64, ring: u64, ring_size: u64) -> KmtResult<()> {
        // SAFETY: this function's contract, passed on.
        unsafe { self.queues.update(&*self.kfd, id, percentage, priority, ring, ring_size) }
    }

    /// hsaKmtSetQueueCUMask: `mask` holds `bits / 32` words.
    pub fn set_queue_cu_mask(&mut self, id: u64, bits: u32, mask: &[u32]) -> KmtResult<()> {
        self.queues.set_cu_mask(&*self.kfd, id, bits, mask)
    }

    /// hsaKmtGetQueueInfo ([`Queues::info`]).
    pub fn queue_info(&self, id: u64) -> KmtResult<QueueInfo> {
        self.queues.info(&*self.kfd, id)
    }

    /// Upstream's `hsakmt_validate_nodeid`: the node's gpu_id (0 for a CPU node), or
    /// INVALID_NODE_UNIT for a node past the snapshot (or no snapshot).
    pub fn node_gpu_id(&self, node: u32) -> KmtResult<u32> {
        self.node(node).map(|(n, _)| n.gpu_id)
    }

    /// The KFD interface is at least 1.`minor`.
    pub fn kfd_minor_at_least(&self, minor: u32) -> bool {
        self.minor_at_least(minor)
    }

    /// hsaKmtGetKernelQueueId: the KFD's id of the queue.
    pub fn kernel_queue_id(&self, id: u64) -> KmtResult<u32> {
        self.queues.kernel_id(id)
    }

    /// The doorbell address and the KFD queue id (hsaKmtQueueRingDoorbell writes there).
    pub fn queue_doorbell(&self, id: u64) -> KmtResult<(u64, u32)> {
        self.queues.doorbell(id)
    }

    /// hsaKmtReportQueue's facts: the ring's address and size.
    pub fn queue_ring(&self, id: u64) -> KmtResult<(u64, u64)> {
        self.queues.ring(id)
    }

    /// hsaKmtAllocQueueGWS: upstream's errno mapping.
    pub fn alloc_queue_gws(&self, id: u64, n: u32) -> KmtResult<u32> {
        self.queues.alloc_gws(&*self.kfd, id, n)
    }

    /// hsaKmtSetTrapHandler.
    ///
    /// # Safety
    /// As [`crate::queue::set_trap_handler`].
    pub unsafe fn set_trap_handler(&self, node: u32, tba: u64, tma: u64) -> KmtResult<()> {
        let (n, _) = self.node(node)?;
        // SAFETY: this function's contract, passed on.
        unsafe { crate::queue::set_trap_handler(&*self.kfd, n.gpu_id, tba, tma) }
    }

    /// The KFD queue type of a queue.
    pub fn queue_kind(&self, id: u64) -> KmtResult<u32> {
        self.queues.kind(id)
    }

    /// The SVM service over this open (`svm.rs`).
    fn svm(&self) -> Svm<'_> {
        Svm { kfd: &*self.kfd, kfd_minor: self.version.KernelInterfaceMinorVersion, topology: self.topology() }
    }

    /// The checks of SVMSetAttr / SVMGetAttr before the attributes are read ([`Svm::precheck`]).
    pub fn svm_precheck(&self, start: u64, size: u64, nattr: usize) -> KmtResult<()> {
        self.svm().precheck(start, size, nattr)
    }

    /// hsaKmtSVMSetAttr ([`Svm::set_attr`]).
    ///
    /// # Safety
    /// As [`Svm::set_attr`].
    pub unsafe fn svm_set_attr(&self, start: u64, size: u64, attrs: &[HSA_SVM_ATTRIBUTE]) -> KmtResult<()> {
        // SAFETY: this function's contract, passed on.
        unsafe { self.svm().set_attr(start, size, attrs) }
    }

    /// hsaKmtSVMGetAttr ([`Svm::get_attr`]).
    pub fn svm_get_attr(&self, start: u64, size: u64, attrs: &mut [HSA_SVM_ATTRIBUTE]) -> KmtResult<()> {
        self.svm().get_attr(start, size, attrs)
    }

    /// hsaKmtSetXNACKMode: 0 off, anything else on (a negative value only queries).
    pub fn set_xnack_mode(&self, enable: i32) -> KmtResult<()> {
        self.svm().set_xnack_mode(enable)
    }

    /// hsaKmtGetXNACKMode: 1 on, 0 off.
    pub fn xnack_mode(&self) -> KmtResult<i32> {
        self.svm().xnack_mode()
    }

    /// hsaKmtOpenSMI (upstream events.c): the node's gpu_id (INVALID_NODE_UNIT for a node
    /// the snapshot lacks, or before AcquireSystemProperties), then AMDKFD_IOC_SMI_EVENTS; the
    /// new file descriptor is the caller's. As upstream there is no version check: a KFD older
    /// than 1.3 answers ENOTTY, and every refusal (a CPU node's gpu_id 0 is the KFD's EINVAL)
    /// is ERROR.
    pub fn open_smi(&self, node: u32) -> KmtResult<i32> {
        let gpu_id = self.node(node)?.0.gpu_id;
        let mut a = kfd_ioctl_smi_events_args { gpuid: gpu_id, anon_fd: 0 };
        ioctl_plain(&*self.kfd, &mut a).map_err(|_| Status::ERROR)?;
        Ok(a.anon_fd as i32)
    }

    /// The node's gpu_id check of [`Context::open_smi`] alone (the export checks its output
    /// pointer after it, before anything is opened).
    pub fn smi_node_check(&self, node: u32) -> KmtResult<()> {
        self.node(node).map(|_| ())
    }

    pub(crate) fn minor_at_least(&self, minor: u32) -> bool {
        self.version.KernelInterfaceMinorVersion >= minor
    }

    /// The snapshot, if AcquireSystemProperties has run.
    pub fn topology(&self) -> Option<&Topology> {
        self.acquired.as_ref().map(|a| &a.topology)
    }

    /// Upstream: a snapshot that exists is returned as is (sysfs is not re-read); otherwise
    /// take it and initialise the per-GPU apertures (FMM) and VMs. A failure leaves no state.
    pub fn acquire_system_properties(&mut self) -> Result<HsaSystemProperties, TopologyError> {
        if let Some(a) = &self.acquired {
            return Ok(a.topology.system);
        }
        let mut topology = topology::snapshot(&*self.kfd, &self.cfg.topology)?;
        // The sysfs tree has no GPU counter frequency; upstream's runtime asks libdrm, we ask
        // the port (0 stays 0 where the backend cannot tell).
        for n in topology.nodes.iter_mut().filter(|n| n.gpu_id != 0 && n.props.WallClockKHz == 0) {
            if let Some(khz) = self.kfd.gpu_counter_khz(n.gpu_id) {
                n.props.WallClockKHz = khz;
            }
        }
        let (apertures, raw) = self.init_gpu_vms(&topology)?;
        // Upstream's newest thunk reads `gpu_counter_freq` with libdrm's amdgpu_query_gpu_info
        // into WallClockKHz (GPUs whose query fails keep 0); we ask through the device made
        // on the node's render fd.
        for n in topology.nodes.iter_mut().filter(|n| n.gpu_id != 0 && n.props.WallClockKHz == 0) {
            let minor = n.props.DrmRenderMinor as u32;
            if let Some(d) = self.amdgpu_devices.iter().find(|d| d.minor == minor) {
                if let Ok(khz) = self.kfd.amdgpu_gpu_counter_khz(d.handle) {
                    n.props.WallClockKHz = khz;
                }
            }
        }
        let memory = Memory::init(&*self.kfd, &topology, &raw, &self.render_fds, self.cfg.memory)
            .map_err(|s| TopologyError::new(s, "memory manager (FMM) initialisation failed", ""))?;
        let system = topology.system;
        self.acquired = Some(Acquired { topology, apertures, memory });
        Ok(system)
    }

    /// GET_PROCESS_APERTURES_NEW for every GPU, then ACQUIRE_VM on each GPU's render node.
    #[allow(clippy::type_complexity)]
    fn init_gpu_vms(&mut self, topo: &Topology) -> Result<(Vec<Apertures>, Vec<kfd_process_device_apertures>), TopologyError> {
        let mut apertures = alloc::vec![Apertures::default(); topo.nodes.len()];
        let gpus = topo.nodes.iter().filter(|n| n.gpu_id != 0).count();
        if gpus == 0 {
            return Ok((apertures, Vec::new()));
        }
        let fail = |status, reason| TopologyError::new(status, reason, "");
        let mut raw: Vec<kfd_process_device_apertures> = (0..gpus).map(|_| zeroed()).collect();
        let mut args: kfd_ioctl_get_process_apertures_new_args = zeroed();
        args.kfd_process_device_apertures_ptr = raw.as_mut_ptr() as u64;
        args.num_of_nodes = gpus as u32;
        // SAFETY: the pointer and count describe `raw`, live and unborrowed for the call, which
        // the KFD fills with up to `num_of_nodes` entries of exactly this type; nothing is
        // handed to a GPU.
        unsafe { ioctl_typed(&*self.kfd, AMDKFD_IOC_GET_PROCESS_APERTURES_NEW, &mut args) }
            .map_err(|_| fail(Status::ERROR, "AMDKFD_IOC_GET_PROCESS_APERTURES_NEW failed"))?;
        for a in raw.iter().take(args.num_of_nodes as usize) {
            if let Some(i) = topo.nodes.iter().position(|n| n.gpu_id == a.gpu_id && n.gpu_id != 0) {
                apertures[i] = Apertures {
                    lds: (a.lds_base, a.lds_limit),
                    scratch: (a.scratch_base, a.scratch_limit),
                    gpuvm: (a.gpuvm_base, a.gpuvm_limit),
                };
            }
        }
        for n in topo.nodes.iter().filter(|n| n.gpu_id != 0) {
            let minor = u32::try_from(n.props.DrmRenderMinor).map_err(|_| fail(Status::ERROR, "a GPU node has no render minor"))?;
            let fd = self.render_fd(minor).map_err(|_| fail(Status::ERROR, "cannot open a GPU's render node"))?;
            let mut vm: kfd_ioctl_acquire_vm_args = zeroed();
            vm.drm_fd = fd as u32;
            vm.gpu_id = n.gpu_id;
            ioctl_plain(&*self.kfd, &mut vm).map_err(|_| fail(Status::ERROR, "AMDKFD_IOC_ACQUIRE_VM failed"))?;
        }
        raw.truncate(args.num_of_nodes as usize);
        Ok((apertures, raw))
    }

    /// The cached render-node fd of `minor`, opened on first use.
    ///
    /// As upstream, a new render node gets a libdrm_amdgpu device (`amdgpu_device_initialize`).
    /// Where libdrm can tell the fd it uses for the device (`amdgpu_device_get_fd`), that fd
    /// replaces ours, so the VM the KFD binds and the runtime's libdrm calls share one DRM file
    /// (libdrm reuses a device another user already made on another file of the same GPU); if
    /// it cannot answer for the device, the device is dropped. Without a device the node works
    /// as before and GetAMDGPUDeviceHandle answers INVALID_HANDLE for it.
    fn render_fd(&mut self, minor: u32) -> Result<i32, Errno> {
        if let Some(&(_, fd)) = self.render_fds.iter().find(|(m, _)| *m == minor) {
            return Ok(fd);
        }
        let mut fd = self.kfd.open_render_node(minor)?;
        if let Ok(dev) = self.kfd.amdgpu_device_initialize(fd) {
            match dev.libdrm_fd {
                None => self.amdgpu_devices.push(DrmDevice { minor, handle: dev.handle, libdrm_owns_fd: false }),
                Some(lfd) if lfd > 0 => {
                    if lfd != fd {
                        self.kfd.close_render_node(fd);
                        fd = lfd;
                    }
                    self.amdgpu_devices.push(DrmDevice { minor, handle: dev.handle, libdrm_owns_fd: true });
                }
                Some(_) => self.kfd.amdgpu_device_deinitialize(dev.handle),
            }
        }
        self.render_fds.push((minor, fd));
        Ok(fd)
    }

    /// hsaKmtGetAMDGPUDeviceHandle: the libdrm_amdgpu device of GPU node `id`, as an address.
    /// Upstream: a node that is not a GPU (or no snapshot) is INVALID_NODE_UNIT; a model has
    /// no libdrm device and answers NULL (0); a GPU whose render node got no device (libdrm
    /// missing or refusing the fd) is INVALID_HANDLE.
    pub fn amdgpu_device_handle(&self, id: u32) -> KmtResult<usize> {
        let (n, _) = self.node(id)?;
        if n.gpu_id == 0 {
            return Err(Status::INVALID_NODE_UNIT);
        }
        if self.kfd.backend() != Backend::Kernel {
            return Ok(0);
        }
        let minor = n.props.DrmRenderMinor as u32;
        self.amdgpu_devices.iter().find(|d| d.minor == minor).map(|d| d.handle).ok_or(Status::INVALID_HANDLE)
    }

    /// The render fd libdrm uses for a device this context made (hsaKmtGetAmdGPUDeviceFd;
    /// upstream asks `amdgpu_device_get_fd`, which answers the fd of the render node's device).
    /// `None` for any other value: it is never handed to libdrm.
    pub fn amdgpu_device_fd(&self, handle: usize) -> Option<i32> {
        let d = self.amdgpu_devices.iter().find(|d| d.handle == handle && handle != 0)?;
        self.render_fds.iter().find(|(m, _)| *m == d.minor).map(|&(_, fd)| fd)
    }

    /// How many libdrm_amdgpu devices this context holds (tests).
    pub fn amdgpu_device_count(&self) -> usize {
        self.amdgpu_devices.len()
    }

    /// Drop the snapshot and what was derived from it. Always succeeds (upstream). The VMs
    /// stay bound to their render fds, which live as long as the context.
    pub fn release_system_properties(&mut self) {
        // Queues use memory the teardown frees: the KFD lets go of them first.
        self.destroy_all_queues();
        if let Some(mut a) = self.acquired.take() {
            a.memory.teardown(&*self.kfd);
            self.events.forget_page();
        }
    }

    fn acquired(&self) -> KmtResult<&Acquired> {
        self.acquired.as_ref().ok_or(Status::INVALID_NODE_UNIT)
    }

    /// The node, or INVALID_NODE_UNIT (also before AcquireSystemProperties, as upstream).
    fn mmio_page(&self, gpu_id: u32) -> Option<u64> {
        self.acquired.as_ref()?.memory.has_mmio(gpu_id)
    }

    fn svm_heap(&self) -> Option<(u64, u64)> {
        self.acquired.as_ref()?.memory.svm_heap().map(|a| (a.base, a.limit))
    }

    fn node(&self, id: u32) -> KmtResult<(&topology::Node, Apertures)> {
        let a = self.acquired()?;
        let i = id as usize;
        match a.topology.nodes.get(i) {
            Some(n) => Ok((n, a.apertures.get(i).copied().unwrap_or_default())),
            None => Err(Status::INVALID_NODE_UNIT),
        }
    }

    /// Thunk-added memory heaps of a GPU node (upstream appends LDS, SCRATCH and DEVICE_SVM
    /// after the sysfs banks; they describe apertures, not memory).
    fn thunk_heaps(
        node: &topology::Node,
        ap: Apertures,
        svm: Option<(u64, u64)>,
        mmio: Option<u64>,
    ) -> heapless::Vec<HsaMemoryProperties, 4> {
        let mut v = heapless::Vec::new();
        if node.gpu_id == 0 {
            return v;
        }
        let mut heap = |ty: u32, base: u64, size: u64| {
            let mut m: HsaMemoryProperties = zeroed();
            m.HeapType = ty;
            m.set_size_in_bytes(size);
            m.VirtualBaseAddress = base;
            let _ = v.push(m);
        };
        let span = |(b, l): (u64, u64)| if l > b { l - b + 1 } else { 0 };
        heap(HSA_HEAPTYPE_GPU_LDS, ap.lds.0, u64::from(node.props.LDSSizeInKB) * 1024);
        heap(HSA_HEAPTYPE_GPU_SCRATCH, ap.scratch.0, span(ap.scratch));
        // DEVICE_SVM: the SVM aperture the FMM set up (the GPUVM range if it has none).
        let svm = svm.unwrap_or(ap.gpuvm);
        heap(HSA_HEAPTYPE_DEVICE_SVM, svm.0, span(svm));
        // The MMIO remap (HDP flush) page, where the FMM mapped one.
        if let Some(va) = mmio {
            heap(HSA_HEAPTYPE_MMIO_REMAP, va, 4096);
        }
        v
    }

    pub fn node_properties(&self, id: u32) -> KmtResult<HsaNodeProperties> {
        let (props, banks) = self.node_properties_ref(id)?;
        let mut p = *props;
        p.NumMemoryBanks = banks;
        Ok(p)
    }

    /// The node's properties as the snapshot has them, and the `NumMemoryBanks` to report in
    /// their place (the sysfs banks and the thunk heaps): a caller copies the record once.
    /// Allocates nothing and builds no heap list: the heaps counted are what `thunk_heaps`
    /// gives (LDS, scratch, DEVICE_SVM, and MMIO_REMAP where mapped).
    pub fn node_properties_ref(&self, id: u32) -> KmtResult<(&HsaNodeProperties, u32)> {
        let (n, _) = self.node(id)?;
        let heaps = if n.gpu_id == 0 { 0 } else { 3 + usize::from(self.mmio_page(n.gpu_id).is_some()) };
        debug_assert_eq!(heaps, Self::thunk_heaps(n, self.node(id)?.1, self.svm_heap(), self.mmio_page(n.gpu_id)).len());
        Ok((&n.props, (n.mem_banks.len() + heaps) as u32))
    }

    /// The node's banks, then the thunk's heaps, into the front of `out` while they fit; a
    /// count larger or smaller than the node's is not an error. Entries past the node's real
    /// bank count are left as the caller had them: upstream writes only the banks that exist
    /// (the 2025-08 fork memsets all `NumBanks` first; a caller that sized its array from
    /// NumMemoryBanks sees no difference).
    pub fn node_memory_properties(&self, id: u32, out: &mut [HsaMemoryProperties]) -> KmtResult<()> {
        let (n, ap) = self.node(id)?;
        let heaps = Self::thunk_heaps(n, ap, self.svm_heap(), self.mmio_page(n.gpu_id));
        for (dst, src) in out.iter_mut().zip(n.mem_banks.iter().chain(heaps.iter())) {
            *dst = *src;
        }
        Ok(())
    }

    /// The first `n` caches of node `id`. Upstream: asking for more caches than the node has
    /// is INVALID_PARAMETER; ProcessorId does not select caches.
    pub fn node_caches(&self, id: u32, _processor_id: u32, n: u32) -> KmtResult<&[HsaCacheProperties]> {
        let (node, _) = self.node(id)?;
        node.caches.get(..n as usize).ok_or(Status::INVALID_PARAMETER)
    }

    /// The first `n` io-links of node `id`. Upstream: asking for more links than the node has
    /// is INVALID_PARAMETER.
    pub fn node_io_links(&self, id: u32, n: u32) -> KmtResult<&[HsaIoLinkProperties]> {
        let (node, _) = self.node(id)?;
        node.io_links.get(..n as usize).ok_or(Status::INVALID_PARAMETER)
    }

    /// GPU wall clock in Hz (the topology's WallClockKHz × 1000; 0 for CPU nodes).
    pub fn node_wallclock_frequency(&self, id: u32) -> KmtResult<u64> {
        let (n, _) = self.node(id)?;
        Ok({ n.props.WallClockKHz }.saturating_mul(1000))
    }

    /// GET_CLOCK_COUNTERS for the node's gpu_id (0 for a CPU node: the KFD then reports a
    /// zero GPU counter and real CPU/system counters). Allocates nothing.
    pub fn clock_counters(&self, id: u32) -> KmtResult<HsaClockCounters> {
        let (n, _) = self.node(id)?;
        let mut a: kfd_ioctl_get_clock_counters_args = zeroed();
        a.gpu_id = n.gpu_id;
        ioctl_plain(&*self.kfd, &mut a).map_err(|_| Status::ERROR)?;
        Ok(HsaClockCounters {
            GPUClockCounter: a.gpu_clock_counter,
            CPUClockCounter: a.cpu_clock_counter,
            SystemClockCounter: a.system_clock_counter,
            SystemClockFrequencyHz: a.system_clock_freq,
        })
    }

    /// Upstream's CheckRuntimeDebugSupport: every GPU must have debug-capable firmware and
    /// the KFD must be at least 1.13.
    pub fn check_runtime_debug_support(&mut self) -> KmtResult<()> {
        self.acquire_system_properties().map_err(|_| Status::ERROR)?;
        let topo = self.topology().ok_or(Status::ERROR)?;
        for n in &topo.nodes {
            let cpu_only = n.props.NumCPUCores != 0 && n.props.NumFComputeCores == 0;
            if !cpu_only && n.props.Capability.bf_DebugSupportedFirmware() == 0 {
                return Err(Status::NOT_SUPPORTED);
            }
        }
        if !self.minor_at_least(RUNTIME_ENABLE_MIN_MINOR) {
            return Err(Status::NOT_SUPPORTED);
        }
        Ok(())
    }

    pub fn runtime_enable(&mut self, r_debug: u64, setup_ttmp: bool) -> KmtResult<()> {
        self.check_runtime_debug_support()?;
        let mut a: kfd_ioctl_runtime_enable_args = zeroed();
        a.r_debug = r_debug;
        a.mode_mask = KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK as u32;
        if setup_ttmp {
            a.mode_mask |= KFD_RUNTIME_ENABLE_MODE_TTMP_SAVE_MASK as u32;
        }
        match ioctl_plain(&*self.kfd, &mut a) {
            Ok(()) => {
                self.runtime_caps = a.capabilities_mask;
                self.runtime = Some((r_debug, setup_ttmp));
                Ok(())
            }
            Err(Errno(Errno::EBUSY)) => Err(Status::UNAVAILABLE),
            Err(_) => Err(Status::ERROR),
        }
    }

    pub fn runtime_disable(&mut self) -> KmtResult<()> {
        self.check_runtime_debug_support()?;
        let mut a: kfd_ioctl_runtime_enable_args = zeroed();
        ioctl_plain(&*self.kfd, &mut a).map_err(|_| Status::ERROR)?;
        self.runtime = None;
        Ok(())
    }

    /// hsaKmtGetCoreRuntimeInfo: the runtime state RuntimeEnable established, as the KFD keeps
    /// it per process (`kfd_runtime_info`, what the debugger's ENABLE hands out and a GPU core
    /// dump records): `r_debug`, ENABLED or DISABLED, TTMP set-up.
    pub fn core_runtime_info(&self) -> kfd_runtime_info {
        let (r_debug, ttmp) = self.runtime.unwrap_or((0, false));
        kfd_runtime_info {
            r_debug,
            runtime_state: if self.runtime.is_some() { DEBUG_RUNTIME_STATE_ENABLED } else { DEBUG_RUNTIME_STATE_DISABLED },
            ttmp_setup: u32::from(ttmp),
        }
    }

    /// hsaKmtGetCoreDeviceInfo: the GPU `gpu_id`'s entry as the KFD's device snapshot fills it
    /// (kfd_dbg_trap_device_snapshot), from the topology snapshot and the process's apertures:
    /// no pending exceptions; LDS, scratch and GPUVM apertures; ids; the gfx target; SIMDs,
    /// waves per SIMD, shader arrays (`array_count`), arrays per engine, XCCs; capability and
    /// debug properties. The KFD's sysfs carries no PCI revision or subsystem ids: 0.
    /// INVALID_NODE_UNIT before AcquireSystemProperties, INVALID_PARAMETER for an id no GPU
    /// node has.
    pub fn core_device_info(&self, gpu_id: u32) -> KmtResult<kfd_dbg_device_info_entry> {
        let a = self.acquired.as_ref().ok_or(Status::INVALID_NODE_UNIT)?;
        let i = a.topology.nodes.iter().position(|n| n.gpu_id == gpu_id && gpu_id != 0).ok_or(Status::INVALID_PARAMETER)?;
        let p = &a.topology.nodes[i].props;
        let ap = a.apertures.get(i).copied().unwrap_or_default();
        let e = p.EngineId;
        let mut d: kfd_dbg_device_info_entry = zeroed();
        (d.lds_base, d.lds_limit) = ap.lds;
        (d.scratch_base, d.scratch_limit) = ap.scratch;
        (d.gpuvm_base, d.gpuvm_limit) = ap.gpuvm;
        d.gpu_id = gpu_id;
        d.location_id = p.LocationId;
        d.vendor_id = u32::from(p.VendorId);
        d.device_id = u32::from(p.DeviceId);
        d.fw_version = e.bf_uCode();
        d.gfx_target_version = e.bf_Major() * 10000 + e.bf_Minor() * 100 + e.bf_Stepping();
        d.simd_count = p.NumFComputeCores;
        d.max_waves_per_simd = p.MaxWavesPerSIMD;
        d.array_count = p.NumShaderBanks.saturating_mul(p.NumArrays);
        d.simd_arrays_per_engine = p.NumArrays;
        d.num_xcc = p.NumXcc;
        d.capability = p.Capability.Value;
        d.debug_prop = p.DebugProperties.Value as u32;
        Ok(d)
    }

    /// The capabilities the last successful RuntimeEnable reported (0 before one).
    pub fn runtime_capabilities(&self) -> u32 {
        self.runtime_caps
    }

    // ---- Memory (upstream memory.c): every call needs the snapshot (INVALID_NODE_UNIT
    // before AcquireSystemProperties, as upstream's node validation answers).

    fn mem(&mut self) -> KmtResult<(&dyn Kfd, &Topology, &mut Memory)> {
        let a = self.acquired.as_mut().ok_or(Status::INVALID_NODE_UNIT)?;
        Ok((&*self.kfd, &a.topology, &mut a.memory))
    }

    /// hsaKmtAllocMemoryAlign / AllocMemory / AllocMemoryHostGtt (`gtt_anchor`). `fixed` is
    /// the caller's `*MemoryAddress`, used with `FixedAddress`.
    pub fn alloc_memory(
        &mut self,
        node: u32,
        gtt_anchor: Option<u32>,
        size: u64,
        align: u64,
        flags: HsaMemFlags,
        fixed: Option<u64>,
    ) -> KmtResult<u64> {
        if flags.bf_Contiguous() != 0 && !self.minor_at_least(16) {
            return Err(Status::NOT_SUPPORTED);
        }
        let (kfd, topo, mem) = self.mem()?;
        if node as usize >= topo.nodes.len() || gtt_anchor.is_some_and(|a| a as usize >= topo.nodes.len()) {
            return Err(Status::INVALID_NODE_UNIT);
        }
        mem.alloc(kfd, topo, node, gtt_anchor, size, align, flags, fixed)
    }

    pub fn free_memory(&mut self, addr: u64) -> KmtResult<()> {
        if addr == 0 {
            return Err(Status::ERROR);
        }
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.free(kfd, addr)
    }

    /// AVAILABLE_MEMORY (KFD 1.9+); a CPU node is refused by the KFD (ERROR).
    pub fn available_memory(&self, node: u32) -> KmtResult<u64> {
        if !self.minor_at_least(9) {
            return Err(Status::NOT_SUPPORTED);
        }
        let (n, _) = self.node(node)?;
        let mut a: kfd_ioctl_get_available_memory_args = zeroed();
        a.gpu_id = n.gpu_id;
        ioctl_plain(&*self.kfd, &mut a).map_err(|_| Status::ERROR)?;
        Ok(a.available)
    }

    /// hsaKmtSetMemoryPolicy: upstream implements it only for Kaveri APUs (gfx7), which
    /// hsakmt-rs does not support, and answers NOT_IMPLEMENTED on everything else; so do we,
    /// after the node check.
    pub fn set_memory_policy(&self, node: u32) -> KmtResult<()> {
        self.node(node)?;
        Err(Status::NOT_IMPLEMENTED)
    }

    /// hsaKmtRegisterMemory(ToNodes / WithFlags): the user range becomes GPU-accessible.
    ///
    /// # Safety
    /// `[addr, addr + size)` must be memory the GPUs may read and write until it is
    /// deregistered (see [`Kfd::ioctl`]): no Rust reference to plain data may point into it.
    pub unsafe fn register_memory(&mut self, addr: u64, size: u64, nodes: Option<&[u32]>, coarse: bool, ext: bool) -> KmtResult<()> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        // SAFETY: this function's contract, passed on.
        unsafe { mem.register(kfd, addr, size, nodes, coarse, ext) }
    }

    pub fn deregister_memory(&mut self, addr: u64) -> KmtResult<()> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::MEMORY_NOT_REGISTERED)?;
        mem.deregister(kfd, addr)
    }

    /// hsaKmtMapMemoryToGPU(Nodes); returns the alternate GPU VA (0: GPU VA == CPU VA).
    pub fn map_memory_to_gpu(&mut self, addr: u64, size: u64, nodes: Option<&[u32]>) -> KmtResult<u64> {
        if addr == 0 {
            return Err(Status::ERROR);
        }
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.map(kfd, addr, size, nodes)
    }

    pub fn unmap_memory_to_gpu(&mut self, addr: u64) -> KmtResult<()> {
        if addr == 0 {
            return Ok(()); // upstream tolerates NULL here
        }
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.unmap(kfd, addr)
    }

    /// hsaKmtQueryPointerInfo; an unknown pointer is HSA_POINTER_UNKNOWN with ERROR.
    pub fn query_pointer_info(&self, addr: u64) -> KmtResult<HsaPointerInfo> {
        let a = self.acquired.as_ref().ok_or(Status::ERROR)?;
        a.memory.pointer_info(addr).ok_or(Status::ERROR)
    }

    /// The (KFD handle, offset inside it) of the BO holding all of `[addr, addr + size)`, for
    /// hsaKmtAisReadWriteFile; INVALID_PARAMETER when no BO holds the whole range.
    pub fn ais_target(&self, addr: u64, size: u64) -> KmtResult<(u64, u64)> {
        let a = self.acquired.as_ref().ok_or(Status::INVALID_PARAMETER)?;
        a.memory.bo_range(addr, size).ok_or(Status::INVALID_PARAMETER)
    }

    pub fn set_memory_user_data(&mut self, addr: u64, data: u64) -> KmtResult<()> {
        let (_, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.set_user_data(addr, data)
    }

    pub fn share_memory(&mut self, addr: u64, size: u64) -> KmtResult<HsaSharedMemoryHandle> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.share(kfd, addr, size)
    }

    pub fn register_shared_handle(&mut self, h: &HsaSharedMemoryHandle, nodes: Option<&[u32]>) -> KmtResult<(u64, u64)> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.import_shared(kfd, h, nodes)
    }

    /// hsaKmtExportDMABufHandle (KFD 1.12+).
    pub fn export_dmabuf(&mut self, addr: u64, size: u64) -> KmtResult<(i32, u64)> {
        if !self.minor_at_least(12) {
            return Err(Status::NOT_SUPPORTED);
        }
        let (kfd, _, mem) = self.mem().map_err(|_| Status::INVALID_PARAMETER)?;
        mem.export_dmabuf(kfd, addr, size)
    }

    /// hsaKmtRegisterGraphicsHandleToNodes(Ext): returns (va, size, node, metadata pointer,
    /// metadata size); the metadata stays valid until the import is deregistered.
    pub fn register_graphics_handle(&mut self, dmabuf_fd: i32, nodes: Option<&[u32]>) -> KmtResult<(u64, u64, u32, *const u8, u32)> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        let (va, size, node) = mem.import_graphics(kfd, dmabuf_fd, nodes)?;
        let md = mem.metadata(va).unwrap_or(&[]);
        let ptr = if md.is_empty() { core::ptr::null() } else { md.as_ptr() };
        Ok((va, size, node, ptr, md.len() as u32))
    }

    // ---- The handle API (upstream's libdrm-based BO handles; see memory/handles.rs). Tokens,
    // never pointers; an unknown token is ERROR (INVALID_HANDLE for export), as upstream's
    // failures are.

    /// hsaKmtHandleImport of a dma-buf: (handle token, size).
    pub fn handle_import_dmabuf(&mut self, dmabuf_fd: i64) -> KmtResult<(u64, u64)> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.handle_import(kfd, dmabuf_fd)
    }

    /// hsaKmtHandleExport: a dma-buf fd of the handle's BO.
    pub fn handle_export_dmabuf(&mut self, token: u64) -> KmtResult<i32> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::INVALID_HANDLE)?;
        mem.handle_export(kfd, token)
    }

    /// hsaKmtMemoryVaMap (`flags` are HsaMemoryMapFlags) / hsaKmtMemoryVaUnmap (`flags` None).
    pub fn memory_va_op(&mut self, token: u64, offset: u64, size: u64, addr: u64, flags: Option<u32>, node: Option<u32>) -> KmtResult<()> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.handle_va(kfd, token, offset, size, addr, flags.unwrap_or(0), node, flags.is_some())
    }

    /// hsaKmtMemoryCpuMap: the CPU address of the handle's BO.
    pub fn memory_cpu_map(&mut self, token: u64) -> KmtResult<u64> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.handle_cpu_map(kfd, token)
    }

    /// hsaKmtMemoryGetCpuAddr: the BO's mmap offset on its render node.
    pub fn memory_cpu_addr(&mut self, token: u64) -> KmtResult<u64> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.handle_cpu_addr(kfd, token)
    }

    /// hsaKmtMemHandleFree(PreserveMetadata).
    pub fn mem_handle_free(&mut self, token: u64) -> KmtResult<()> {
        let (kfd, _, mem) = self.mem().map_err(|_| Status::ERROR)?;
        mem.handle_free(kfd, token)
    }

    /// Live handles of the handle API (tests and leak checks).
    pub fn live_mem_handles(&self) -> usize {
        self.acquired.as_ref().map_or(0, |a| a.memory.live_handles())
    }

    /// hsaKmtGetTileConfig: the caller's arrays (sizes in `cfg`) are zeroed, then filled.
    pub fn tile_config(&self, node: u32, tile: &mut [u32], macro_tile: &mut [u32]) -> KmtResult<(u32, u32, u32, u32, u32, u32)> {
        let (n, _) = self.node(node)?;
        tile.fill(0);
        macro_tile.fill(0);
        let mut a: kfd_ioctl_get_tile_config_args = zeroed();
        a.gpu_id = n.gpu_id;
        a.tile_config_ptr = tile.as_mut_ptr() as u64;
        a.macro_tile_config_ptr = macro_tile.as_mut_ptr() as u64;
        a.num_tile_configs = tile.len() as u32;
        a.num_macro_tile_configs = macro_tile.len() as u32;
        // SAFETY: the two pointers and counts describe `tile` and `macro_tile`, exclusively
        // borrowed for the call, which the KFD fills with at most that many words; nothing is
        // handed to a GPU.
        unsafe { ioctl_typed(&*self.kfd, AMDKFD_IOC_GET_TILE_CONFIG, &mut a) }.map_err(|_| Status::ERROR)?;
        Ok((a.num_tile_configs, a.num_macro_tile_configs, a.gb_addr_config, a.num_banks, a.num_ranks, a.gpu_id))
    }

    // ---- Performance counters (upstream perfctr.c; the rules are in `pmc`).

    /// The node's gpu_id and PMC table (INVALID_NODE_UNIT for an unknown node; the table
    /// selection's INVALID_PARAMETER for a CPU node or a GPU upstream has no table for).
    fn pmc_node(&self, node: u32) -> KmtResult<(u32, KmtResult<crate::pmc::Asic>)> {
        let (n, _) = self.node(node)?;
        Ok((n.gpu_id, crate::pmc::select(crate::queue::gfxv(&n.props), n.props.DeviceId)))
    }

    fn kfd_version(&self) -> (u32, u32) {
        (self.version.KernelInterfaceMajorVersion, self.version.KernelInterfaceMinorVersion)
    }

    /// hsaKmtPmcGetCounterProperties: built once per node and kept until close, as upstream
    /// (the pointer stays valid that long). A counter the backend counts itself is
    /// PRIVILEGED_IMMEDIATE, every other NONPRIV_IMMEDIATE (upstream's type for all).
    pub fn pmc_counter_properties(&mut self, node: u32) -> KmtResult<*const HsaCounterProperties> {
        let (gpu_id, asic) = self.pmc_node(node)?;
        if let Some(p) = self.pmc.cached_properties(node) {
            return Ok(p);
        }
        let kfd = &*self.kfd;
        let words = crate::pmc::build_properties(asic?, |b, id| {
            if kfd.pmc_counter(gpu_id, b, id).is_some() {
                HSA_PROFILE_TYPE_PRIVILEGED_IMMEDIATE
            } else {
                HSA_PROFILE_TYPE_NONPRIV_IMMEDIATE
            }
        });
        Ok(self.pmc.cache_properties(node, words))
    }

    /// The node's PMC table (for tools: kmtinfo lists it).
    pub fn pmc_table(&self, node: u32) -> KmtResult<crate::pmc::Asic> {
        self.pmc_node(node)?.1
    }

    /// Which `AMDKFD_IOC_PROFILER` the KFD offers and its profiler version (probed once).
    pub fn pmc_profiler(&mut self) -> Option<(crate::pmc::ProfilerIoctl, u32)> {
        let v = self.kfd_version();
        self.pmc.profiler(&*self.kfd, v)
    }

    pub fn pmc_register(&mut self, node: u32, reqs: &[crate::pmc::CounterReq]) -> KmtResult<crate::pmc::Registered> {
        let (gpu_id, asic) = self.pmc_node(node)?;
        self.pmc.register(gpu_id, asic.ok(), reqs)
    }

    pub fn pmc_unregister(&mut self, node: u32, token: u64) -> KmtResult<()> {
        if token == 0 {
            return Err(Status::INVALID_PARAMETER);
        }
        let (gpu_id, _) = self.pmc_node(node)?;
        if self.pmc.trace_gpu(token)? != gpu_id {
            return Err(Status::INVALID_NODE_UNIT);
        }
        self.pmc.unregister(&*self.kfd, token)
    }

    pub fn pmc_acquire(&mut self, node: u32, token: u64) -> KmtResult<()> {
        self.pmc.trace_gpu(token)?;
        let _table = self.pmc_node(node)?;
        let v = self.kfd_version();
        self.pmc.acquire(&*self.kfd, v, token)
    }

    pub fn pmc_release(&mut self, token: u64) -> KmtResult<()> {
        self.pmc.release(&*self.kfd, token)
    }

    pub fn pmc_start(&mut self, token: u64, buf: u64, size: u64) -> KmtResult<()> {
        if token == 0 || buf == 0 || size == 0 {
            return Err(Status::INVALID_PARAMETER);
        }
        self.pmc.start(&*self.kfd, token, buf, size)
    }

    /// The trace's buffer address and the values QueryTrace writes there, in order.
    pub fn pmc_query(&mut self, token: u64, out: &mut alloc::vec::Vec<u64>) -> KmtResult<u64> {
        self.pmc.query(&*self.kfd, token, out)
    }

    pub fn pmc_stop(&mut self, token: u64) -> KmtResult<()> {
        self.pmc.stop(&*self.kfd, token)
    }

    pub fn pmc_live_traces(&self) -> usize {
        self.pmc.live_traces()
    }

    /// The memory manager's invariants hold (no overlapping BOs, consistent indexes).
    pub fn check_memory_invariants(&self) -> Result<(), &'static str> {
        self.acquired.as_ref().map_or(Ok(()), |a| a.memory.check())
    }

    /// Buffer objects alive in the FMM (tests and leak checks).
    pub fn live_buffer_objects(&self) -> usize {
        self.acquired.as_ref().map_or(0, |a| a.memory.live_bos())
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        self.pmc.release_all(&*self.kfd);
        self.release_system_properties();
        // Each render node's libdrm device goes with its fd (upstream deinitializes them where
        // it drops its render fds: in a forked child before it reopens).
        for (minor, fd) in self.render_fds.drain(..) {
            match self.amdgpu_devices.iter().position(|d| d.minor == minor) {
                Some(i) => {
                    let d = self.amdgpu_devices.swap_remove(i);
                    self.kfd.amdgpu_device_deinitialize(d.handle);
                    if !d.libdrm_owns_fd {
                        self.kfd.close_render_node(fd);
                    }
                }
                None => self.kfd.close_render_node(fd),
            }
        }
    }
}

/// Upstream's process-wide open/close rules around one `Context`: reference counting,
/// KERNEL_ALREADY_OPENED for nested opens, and a forked child that inherited an open thunk
/// sees KERNEL_IO_CHANNEL_NOT_OPENED until it opens again (and then starts clean).
///
/// Secondary contexts (hsaKmtOpenSecondaryKFDCtx) live here too, by token: they are opened
/// only while the primary is, every call on one needs the primary open (upstream's
/// CHECK_KFD_OPEN), they outlive a CloseKFD (usable again after the next OpenKFD, as upstream)
/// and a forked child cannot use the ones it inherited (it forgets them when it reopens).
#[derive(Default)]
pub struct Thunk {
    open_count: u32,
    opener_pid: u32,
    ctx: Option<Context>,
    /// Secondary contexts by token, and the pid that opened them.
    secondaries: Vec<(u64, u32, Context)>,
    /// The last token handed out (tokens are never reused).
    last_token: u64,
}

impl Thunk {
    pub const fn new() -> Thunk {
        Thunk { open_count: 0, opener_pid: 0, ctx: None, secondaries: Vec::new(), last_token: 0 }
    }

    fn forked(&self, pid: u32) -> bool {
        self.open_count > 0 && self.opener_pid != pid
    }

    /// `make_port` is only called when a new context is needed.
    pub fn open(
        &mut self,
        pid: u32,
        make_port: impl FnOnce() -> Result<(Box<dyn Kfd>, OpenConfig), OpenError>,
    ) -> Result<Status, OpenError> {
        if self.forked(pid) {
            // The inherited context belongs to the parent: forget it without touching the
            // parent's objects (dropping it only closes this process's copies of its fds).
            self.ctx = None;
            self.open_count = 0;
            self.secondaries.retain(|(_, p, _)| *p == pid);
        }
        if self.open_count > 0 {
            self.open_count += 1;
            return Ok(Status::KERNEL_ALREADY_OPENED);
        }
        let (kfd, cfg) = make_port()?;
        let ctx = Context::open(kfd, cfg)?;
        self.ctx = Some(ctx);
        self.open_count = 1;
        self.opener_pid = pid;
        Ok(Status::SUCCESS)
    }

    pub fn close(&mut self, pid: u32) -> KmtResult<()> {
        if self.open_count == 0 {
            return Err(Status::KERNEL_IO_CHANNEL_NOT_OPENED);
        }
        if self.forked(pid) {
            // A child closing what it inherited: upstream decrements and succeeds.
            self.open_count -= 1;
            if self.open_count == 0 {
                self.ctx = None;
            }
            return Ok(());
        }
        self.open_count -= 1;
        if self.open_count == 0 {
            self.ctx = None;
        }
        Ok(())
    }

    pub fn open_count(&self) -> u32 {
        self.open_count
    }

    /// The open context of this process, or KERNEL_IO_CHANNEL_NOT_OPENED (never open,
    /// closed, or inherited across fork).
    pub fn ctx(&self, pid: u32) -> KmtResult<&Context> {
        if self.forked(pid) {
            return Err(Status::KERNEL_IO_CHANNEL_NOT_OPENED);
        }
        self.ctx.as_ref().ok_or(Status::KERNEL_IO_CHANNEL_NOT_OPENED)
    }

    pub fn ctx_mut(&mut self, pid: u32) -> KmtResult<&mut Context> {
        if self.forked(pid) {
            return Err(Status::KERNEL_IO_CHANNEL_NOT_OPENED);
        }
        self.ctx.as_mut().ok_or(Status::KERNEL_IO_CHANNEL_NOT_OPENED)
    }

    /// hsaKmtOpenSecondaryKFDCtx: a new secondary context ([`Context::open_secondary`]) and its
    /// token (never 0, never reused). The primary must be open in this process.
    pub fn open_secondary(&mut self, pid: u32) -> KmtResult<u64> {
        let c = self.ctx(pid)?.open_secondary()?;
        self.last_token += 1;
        self.secondaries.push((self.last_token, pid, c));
        Ok(self.last_token)
    }

    /// hsaKmtCloseSecondaryKFDCtx: the context goes (its KFD file is closed, which destroys its
    /// KFD process and everything it held). An unknown or closed token is INVALID_PARAMETER
    /// (upstream's answer for a NULL or primary context). Also after CloseKFD and in a forked
    /// child (which only drops its copy), as upstream.
    pub fn close_secondary(&mut self, token: u64) -> KmtResult<()> {
        let i = self.secondaries.iter().position(|(t, _, _)| *t == token).ok_or(Status::INVALID_PARAMETER)?;
        drop(self.secondaries.remove(i));
        Ok(())
    }

    /// The secondary context `token`: KERNEL_IO_CHANNEL_NOT_OPENED unless the primary is open in
    /// this process (upstream checks that first), INVALID_PARAMETER for a token that is not a
    /// live secondary context.
    pub fn secondary(&self, pid: u32, token: u64) -> KmtResult<&Context> {
        self.ctx(pid)?;
        self.secondaries.iter().find(|(t, _, _)| *t == token).map(|(_, _, c)| c).ok_or(Status::INVALID_PARAMETER)
    }

    pub fn secondary_mut(&mut self, pid: u32, token: u64) -> KmtResult<&mut Context> {
        self.ctx(pid)?;
        self.secondaries.iter_mut().find(|(t, _, _)| *t == token).map(|(_, _, c)| c).ok_or(Status::INVALID_PARAMETER)
    }

    /// Live secondary contexts (tests).
    pub fn secondary_count(&self) -> usize {
        self.secondaries.len()
    }
}
