//! The libdrm_amdgpu device of each GPU (hsaKmtGetAMDGPUDeviceHandle on `/dev/kfd`), through the
//! thunk's Context on the model's GPUs with a port that says it is the kernel and stands in for
//! libdrm: one `amdgpu_device_initialize` per render node when the thunk opens it, the handle per
//! GPU node, CPU nodes and bad ids refused, libdrm's fd taking over the render node where
//! `amdgpu_device_get_fd` answers, the wall-clock frequency from `amdgpu_query_gpu_info`, and one
//! `amdgpu_device_deinitialize` per device when the context goes (the last CloseKFD, or a forked
//! child dropping what it inherited). Also the real libdrm on the model's render stand-ins
//! (memfds): it refuses them, and the thunk answers INVALID_HANDLE as upstream does when
//! `amdgpu_device_initialize` fails.

use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::context::{Context, OpenConfig};
use hsakmt_core::event::EventData;
use hsakmt_core::{AmdgpuDevice, Backend, Errno, GemVaOp, Kfd, Status, SysTree};
use hsakmt_model::{Model, ModelConfig};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use zerocopy::FromZeros;

/// What the stand-in libdrm does.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Libdrm {
    /// A device; the library has no `amdgpu_device_get_fd` (older libdrm).
    NoGetFd,
    /// A device whose own fd is another file of the same GPU (libdrm reusing a device another
    /// user made): `amdgpu_device_get_fd` answers it.
    OwnFile,
    /// A device, but `amdgpu_device_get_fd` fails for it.
    GetFdFails,
    /// `amdgpu_device_initialize` refuses the fd.
    Refuses,
    /// The real libdrm_amdgpu.so.1 (hsakmt-linux's loader).
    Real,
}

#[derive(Default)]
struct Log {
    /// Render fds the thunk opened, by fd: the minor.
    opened: HashMap<i32, u32>,
    /// Render fds given to `amdgpu_device_initialize` and not closed yet (the topology scan's
    /// access checks open and close render nodes too; those are not counted).
    handed: Vec<i32>,
    /// Closes of fds that had been given to `amdgpu_device_initialize`.
    closed: Vec<i32>,
    inits: Vec<i32>,
    deinits: Vec<usize>,
    /// Live fake devices: handle → (minor, libdrm's own file).
    live: HashMap<usize, (u32, Option<OwnedFd>)>,
    next: usize,
}

struct KernelLike {
    inner: hsakmt::global::SharedModel,
    libdrm: Libdrm,
    real: hsakmt_linux::libdrm::AmdgpuDevices,
    log: Arc<Mutex<Log>>,
}

impl KernelLike {
    fn log(&self) -> std::sync::MutexGuard<'_, Log> {
        self.log.lock().unwrap()
    }
}

impl Kfd for KernelLike {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.ioctl(request, arg) }
    }
    fn wait_events(&self, data: &mut [EventData], wait_all: bool, timeout_ms: u32) -> Result<u32, Errno> {
        self.inner.wait_events(data, wait_all, timeout_ms)
    }
    unsafe fn mmap(&self, fixed: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.mmap(fixed, len, prot, shared, offset) }
    }
    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.munmap(addr, len) }
    }
    unsafe fn mmap_bo(&self, fd: i32, fixed: Option<usize>, len: usize, prot: u32, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.mmap_bo(fd, fixed, len, prot, offset) }
    }
    unsafe fn map_anonymous(&self, fixed: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.map_anonymous(fixed, hint, len, prot) }
    }
    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.release_va(addr, len) }
    }
    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        let fd = self.inner.open_render_node(minor)?;
        self.log().opened.insert(fd, minor);
        Ok(fd)
    }
    fn close_render_node(&self, fd: i32) {
        let mut log = self.log();
        if let Some(i) = log.handed.iter().position(|&h| h == fd) {
            log.handed.swap_remove(i);
            log.closed.push(fd);
        }
        drop(log);
        self.inner.close_render_node(fd)
    }
    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        self.inner.read_file(tree, path, buf)
    }
    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        self.inner.count_numbered_entries(tree, dir)
    }
    fn process_id(&self) -> u32 {
        self.inner.process_id()
    }
    fn backend(&self) -> Backend {
        Backend::Kernel
    }
    fn doorbell_rung(&self, queue_id: u32) {
        self.inner.doorbell_rung(queue_id)
    }
    fn prefault_user_range(&self, addr: usize, len: usize) -> Result<(), Errno> {
        self.inner.prefault_user_range(addr, len)
    }
    fn advise_dont_fork(&self, addr: usize, len: usize) -> Result<(), Errno> {
        self.inner.advise_dont_fork(addr, len)
    }
    fn drm_import_dmabuf(&self, render_fd: i32, dmabuf_fd: i32) -> Result<(u32, u64), Errno> {
        self.inner.drm_import_dmabuf(render_fd, dmabuf_fd)
    }
    fn drm_export_dmabuf(&self, render_fd: i32, gem: u32) -> Result<i32, Errno> {
        self.inner.drm_export_dmabuf(render_fd, gem)
    }
    fn drm_gem_va(&self, render_fd: i32, gem: u32, op: &GemVaOp) -> Result<(), Errno> {
        self.inner.drm_gem_va(render_fd, gem, op)
    }
    fn drm_mmap_offset(&self, render_fd: i32, gem: u32) -> Result<u64, Errno> {
        self.inner.drm_mmap_offset(render_fd, gem)
    }
    fn drm_gem_close(&self, render_fd: i32, gem: u32) -> Result<(), Errno> {
        self.inner.drm_gem_close(render_fd, gem)
    }

    // No counter frequency from the model itself: what the node reports comes from "libdrm".
    fn gpu_counter_khz(&self, _gpu_id: u32) -> Option<u64> {
        None
    }

    fn amdgpu_device_initialize(&self, render_fd: i32) -> Result<AmdgpuDevice, Errno> {
        if self.libdrm == Libdrm::Real {
            let mut log = self.log();
            log.inits.push(render_fd);
            log.handed.push(render_fd);
            return self.real.initialize(render_fd);
        }
        let mut log = self.log();
        log.inits.push(render_fd);
        log.handed.push(render_fd);
        let minor = *log.opened.get(&render_fd).expect("a device is made on a render fd the thunk opened");
        let own = match self.libdrm {
            Libdrm::Refuses => return Err(Errno(Errno::EACCES)),
            Libdrm::OwnFile => Some(self.inner.model.open_render(minor).expect("another file of the GPU")),
            _ => None,
        };
        let libdrm_fd = match (self.libdrm, &own) {
            (Libdrm::OwnFile, Some(f)) => Some(std::os::fd::AsRawFd::as_raw_fd(f)),
            (Libdrm::GetFdFails, _) => Some(-1),
            _ => None,
        };
        log.next += 1;
        let handle = 0x7000_0000 + log.next * 0x100;
        log.live.insert(handle, (minor, own));
        Ok(AmdgpuDevice { handle, libdrm_fd })
    }

    fn amdgpu_device_deinitialize(&self, handle: usize) {
        if self.libdrm == Libdrm::Real {
            self.log().deinits.push(handle);
            return self.real.deinitialize(handle);
        }
        let mut log = self.log();
        log.deinits.push(handle);
        let (_, own) = log.live.remove(&handle).expect("only live devices are deinitialized, once");
        if let Some(f) = own {
            self.inner.model.close_render(f); // libdrm closes its own fd
        }
    }

    fn amdgpu_gpu_counter_khz(&self, handle: usize) -> Result<u64, Errno> {
        if self.libdrm == Libdrm::Real {
            return self.real.gpu_counter_khz(handle);
        }
        let log = self.log();
        let (minor, _) = log.live.get(&handle).ok_or(Errno(Errno::EINVAL))?;
        Ok(25_000 + u64::from(*minor)) // per GPU, to see that each node gets its own
    }
}

fn kernel_like(model: &Arc<Model>, libdrm: Libdrm, log: &Arc<Mutex<Log>>) -> KernelLike {
    KernelLike {
        inner: hsakmt::global::SharedModel { model: model.clone(), release_on_drop: false },
        libdrm,
        real: hsakmt_linux::libdrm::AmdgpuDevices::new(),
        log: log.clone(),
    }
}

fn open(libdrm: Libdrm) -> (Arc<Model>, Context, Arc<Mutex<Log>>) {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let log = Arc::new(Mutex::new(Log::default()));
    let port = KernelLike {
        inner: hsakmt::global::SharedModel { model: model.clone(), release_on_drop: false },
        libdrm,
        real: hsakmt_linux::libdrm::AmdgpuDevices::new(),
        log: log.clone(),
    };
    let mut cfg = OpenConfig::default();
    cfg.memory.fmm.page_size = 4096;
    let c = Context::open(Box::new(port), cfg).expect("open");
    (model, c, log)
}

/// (node, render minor) of every GPU node, and the CPU nodes.
fn nodes(c: &Context) -> (Vec<(u32, u32)>, Vec<u32>) {
    let topo = c.topology().unwrap();
    let gpus =
        topo.nodes.iter().enumerate().filter(|(_, n)| n.gpu_id != 0).map(|(i, n)| (i as u32, n.props.DrmRenderMinor as u32)).collect();
    let cpus = topo.nodes.iter().enumerate().filter(|(_, n)| n.gpu_id == 0).map(|(i, _)| i as u32).collect();
    (gpus, cpus)
}

fn vram_flags() -> HsaMemFlags {
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_NonPaged(1);
    f.set_bf_HostAccess(1);
    f.set_bf_CoarseGrain(1);
    f
}

/// A VRAM buffer of node `node` maps for the CPU and the GPU (through the render fd in use).
fn vram_works(c: &mut Context, node: u32) {
    let va = c.alloc_memory(node, None, 64 << 10, 0, vram_flags(), None).expect("VRAM");
    c.map_memory_to_gpu(va, 64 << 10, None).expect("map");
    // SAFETY: the thunk CPU-mapped 64 KiB writable bytes at `va`.
    unsafe { (va as *mut u64).write_volatile(0x1234_5678) };
    c.unmap_memory_to_gpu(va).unwrap();
    c.free_memory(va).unwrap();
}

#[test]
fn one_device_per_gpu_node_handed_out_by_node_and_deinitialized_with_the_context() {
    let (_model, mut c, log) = open(Libdrm::NoGetFd);
    assert_eq!(c.amdgpu_device_handle(2), Err(Status::INVALID_NODE_UNIT), "no snapshot yet");
    assert!(log.lock().unwrap().inits.is_empty(), "no device before the render nodes are opened");
    c.acquire_system_properties().unwrap();
    let (gpus, cpus) = nodes(&c);
    assert_eq!((gpus.len(), cpus.len()), (8, 2));
    {
        let log = log.lock().unwrap();
        assert_eq!(log.inits.len(), 8, "one amdgpu_device_initialize per GPU render node");
        assert!(log.inits.iter().all(|fd| log.opened.contains_key(fd)), "on the render fds the thunk opened");
        assert!(log.closed.is_empty(), "without amdgpu_device_get_fd the thunk keeps its own fds");
    }
    assert_eq!(c.amdgpu_device_count(), 8);
    let mut handles = Vec::new();
    for &(node, minor) in &gpus {
        let h = c.amdgpu_device_handle(node).expect("a GPU node has a device");
        let log = log.lock().unwrap();
        assert_eq!(log.live.get(&h).map(|(m, _)| *m), Some(minor), "node {node}'s own render node's device");
        handles.push(h);
        // the render fd the node uses (our own here: the library cannot tell its fd)
        let fd = c.amdgpu_device_fd(h).expect("our device has an fd");
        assert_eq!(log.opened.get(&fd), Some(&minor));
        // the wall clock comes from the device's gpu_counter_freq (kHz)
        drop(log);
        assert_eq!(c.node_wallclock_frequency(node), Ok((25_000 + u64::from(minor)) * 1000));
    }
    handles.sort();
    handles.dedup();
    assert_eq!(handles.len(), 8);
    for &cpu in &cpus {
        assert_eq!(c.amdgpu_device_handle(cpu), Err(Status::INVALID_NODE_UNIT));
        assert_eq!(c.node_wallclock_frequency(cpu), Ok(0));
    }
    for bad in [10, 11, 1000, u32::MAX] {
        assert_eq!(c.amdgpu_device_handle(bad), Err(Status::INVALID_NODE_UNIT));
    }
    for forged in [0usize, 1, 0x7000_0000] {
        assert_eq!(c.amdgpu_device_fd(forged), None);
    }
    vram_works(&mut c, gpus[3].0);

    // Release and re-acquire: the render fds (and their devices) are kept, as the KFD's VMs are.
    c.release_system_properties();
    assert_eq!(c.amdgpu_device_handle(gpus[0].0), Err(Status::INVALID_NODE_UNIT));
    c.acquire_system_properties().unwrap();
    assert_eq!(log.lock().unwrap().inits.len(), 8, "no second device for a render node");
    assert_eq!(c.amdgpu_device_count(), 8);
    vram_works(&mut c, gpus[0].0);

    drop(c);
    let log = log.lock().unwrap();
    let mut deinits = log.deinits.clone();
    deinits.sort();
    assert_eq!(deinits, handles, "every device deinitialized once");
    assert!(log.live.is_empty());
    let mut closed = log.closed.clone();
    closed.sort();
    let mut inits = log.inits.clone();
    inits.sort();
    assert_eq!(closed, inits, "and every render fd of ours closed");
}

#[test]
fn libdrms_own_fd_replaces_the_thunks_where_amdgpu_device_get_fd_answers() {
    let (_model, mut c, log) = open(Libdrm::OwnFile);
    c.acquire_system_properties().unwrap();
    let (gpus, _) = nodes(&c);
    {
        let log = log.lock().unwrap();
        assert_eq!(log.inits.len(), 8);
        // the thunk's own fds went at once; the VMs were acquired on libdrm's files (the model
        // refuses an fd it did not issue, and ours were closed before ACQUIRE_VM)
        let mut closed = log.closed.clone();
        closed.sort();
        let mut inits = log.inits.clone();
        inits.sort();
        assert_eq!(closed, inits);
    }
    for &(node, minor) in &gpus {
        let h = c.amdgpu_device_handle(node).unwrap();
        let fd = c.amdgpu_device_fd(h).unwrap();
        let log = log.lock().unwrap();
        let own = log.live.get(&h).unwrap().1.as_ref().map(std::os::fd::AsRawFd::as_raw_fd);
        assert_eq!(Some(fd), own, "node {node} (minor {minor}) uses libdrm's fd");
    }
    vram_works(&mut c, gpus[5].0);
    drop(c);
    let log = log.lock().unwrap();
    assert_eq!(log.deinits.len(), 8);
    assert!(log.live.is_empty());
    assert_eq!(log.closed.len(), 8, "libdrm's fds are closed by deinitialize, not by the thunk");
}

#[test]
fn a_device_whose_fd_libdrm_cannot_tell_is_dropped_and_the_node_answers_invalid_handle() {
    let (_model, mut c, log) = open(Libdrm::GetFdFails);
    c.acquire_system_properties().unwrap();
    let (gpus, cpus) = nodes(&c);
    {
        let log = log.lock().unwrap();
        assert_eq!((log.inits.len(), log.deinits.len()), (8, 8), "deinitialized at once, as upstream");
        assert!(log.live.is_empty() && log.closed.is_empty());
    }
    assert_eq!(c.amdgpu_device_count(), 0);
    for &(node, _) in &gpus {
        assert_eq!(c.amdgpu_device_handle(node), Err(Status::INVALID_HANDLE));
        assert_eq!(c.node_wallclock_frequency(node), Ok(0), "no device, no gpu_counter_freq");
    }
    assert_eq!(c.amdgpu_device_handle(cpus[0]), Err(Status::INVALID_NODE_UNIT));
    vram_works(&mut c, gpus[1].0);
    drop(c);
    let log = log.lock().unwrap();
    assert_eq!(log.deinits.len(), 8, "nothing deinitialized twice");
    assert_eq!(log.closed.len(), 8, "the thunk's own fds closed");
}

#[test]
fn refused_render_fds_have_no_device_and_the_gpu_still_works() {
    for libdrm in [Libdrm::Refuses, Libdrm::Real] {
        let (_model, mut c, log) = open(libdrm);
        c.acquire_system_properties().unwrap();
        let (gpus, _) = nodes(&c);
        assert_eq!(log.lock().unwrap().inits.len(), 8, "{libdrm:?}: asked once per render node");
        assert_eq!(c.amdgpu_device_count(), 0, "{libdrm:?}");
        for &(node, _) in &gpus {
            // upstream: amdgpu_device_initialize failed, so amdgpu_handle[minor] is NULL
            assert_eq!(c.amdgpu_device_handle(node), Err(Status::INVALID_HANDLE), "{libdrm:?}");
            assert_eq!(c.node_wallclock_frequency(node), Ok(0), "{libdrm:?}");
        }
        vram_works(&mut c, gpus[7].0);
        drop(c);
        let log = log.lock().unwrap();
        assert!(log.deinits.is_empty(), "{libdrm:?}: nothing to deinitialize");
        assert_eq!(log.closed.len(), 8, "{libdrm:?}: the render fds closed");
    }
}

#[test]
fn a_model_port_has_no_device_and_answers_null() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let port = hsakmt::global::SharedModel { model, release_on_drop: false };
    let mut c = Context::open(Box::new(port), OpenConfig::default()).unwrap();
    c.acquire_system_properties().unwrap();
    let (gpus, cpus) = nodes(&c);
    assert_eq!(c.amdgpu_device_count(), 0);
    for &(node, _) in &gpus {
        assert_eq!(c.amdgpu_device_handle(node), Ok(0));
        assert_eq!(c.node_wallclock_frequency(node), Ok(100_000_000), "the model's own counter");
    }
    assert_eq!(c.amdgpu_device_handle(cpus[0]), Err(Status::INVALID_NODE_UNIT));
    assert_eq!(c.amdgpu_device_fd(0), None);
}

/// Upstream deinitializes its devices in a forked child before that child opens the KFD again
/// (clear_after_fork); ours go with the inherited context, which the child's OpenKFD drops, and
/// the child's new context makes its own. CloseKFD's last close drops them too.
#[test]
fn a_forked_child_reopening_and_the_last_close_deinitialize_the_devices() {
    use hsakmt_core::context::Thunk;
    // The child is another KFD process: its own model instance (the kernel keeps the parent's
    // VMs bound to the parent's files).
    let parent = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let child = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let (parent_log, child_log) = (Arc::new(Mutex::new(Log::default())), Arc::new(Mutex::new(Log::default())));
    let mut thunk = Thunk::new();
    let mut cfg = OpenConfig::default();
    cfg.memory.fmm.page_size = 4096;
    let port = |model: &Arc<Model>, log: &Arc<Mutex<Log>>| {
        let p: Box<dyn Kfd> = Box::new(kernel_like(model, Libdrm::NoGetFd, log));
        Ok((p, cfg.clone()))
    };
    assert_eq!(thunk.open(100, || port(&parent, &parent_log)).ok(), Some(Status::SUCCESS));
    assert_eq!(thunk.open(100, || port(&parent, &parent_log)).ok(), Some(Status::KERNEL_ALREADY_OPENED));
    thunk.ctx_mut(100).unwrap().acquire_system_properties().unwrap();
    assert_eq!(parent_log.lock().unwrap().live.len(), 8);
    // One close of two: the devices stay.
    thunk.close(100).unwrap();
    assert!(parent_log.lock().unwrap().deinits.is_empty());

    // "pid 200" is a forked child: its OpenKFD forgets the parent's context (and its devices).
    assert_eq!(thunk.ctx_mut(200).err(), Some(Status::KERNEL_IO_CHANNEL_NOT_OPENED));
    assert_eq!(thunk.open(200, || port(&child, &child_log)).ok(), Some(Status::SUCCESS));
    {
        let p = parent_log.lock().unwrap();
        assert_eq!(p.deinits.len(), 8, "the inherited devices deinitialized");
        assert!(p.live.is_empty());
    }
    thunk.ctx_mut(200).unwrap().acquire_system_properties().unwrap();
    assert_eq!(child_log.lock().unwrap().inits.len(), 8, "the child makes its own");
    assert_eq!(thunk.ctx(200).unwrap().amdgpu_device_count(), 8);
    thunk.close(200).unwrap();
    let c = child_log.lock().unwrap();
    assert_eq!((c.deinits.len(), c.live.len()), (8, 0), "the last CloseKFD deinitializes");
}
