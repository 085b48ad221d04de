//! Files of the KFD and secondary KFD processes (mainline's AMDKFD_IOC_CREATE_PROCESS, KFD 1.19).
//!
//! In the kernel a `struct file` of /dev/kfd points at a `kfd_process`. `kfd_open` finds the
//! caller's process by its address space, so every open of one process reaches the same, primary,
//! process (`KFD_CONTEXT_ID_PRIMARY`). `AMDKFD_IOC_CREATE_PROCESS` (`AMDKFD_IO(0x27)`, no
//! argument) on a file whose process is the primary creates a *secondary* process for the same
//! task and makes the file point at it: a context id from the primary's id table (0..=0xFFFE,
//! lowest free), everything else its own — GPU VMs (it acquires them with render files of its
//! own; a file bound to the primary is not its), buffer objects and the arena of device-file
//! offsets they live in, events and the event page, queues and doorbells, SVM state. On a file
//! whose process is already secondary it is EINVAL ("each FD owns only one kfd_process").
//! Closing the file destroys the secondary process at once (`kfd_process_notifier_release_internal`)
//! and frees its id; the primary lives on.
//!
//! Shared with the primary: the device (the device memfd, VRAM/system accounting, IPC registry,
//! profiler lock: `devmem.rs`), the SMI clients of each GPU, the topology, and the address space
//! (the model runs in the task). Refused to a secondary process with EOPNOTSUPP, as mainline does:
//! AMDKFD_IOC_SVM, ALLOC_MEMORY_OF_GPU with the USERPTR flag, and DBG_TRAP; a debugger never sees
//! it (it finds a task's primary process by pid).
//!
//! [`KfdFile`] is such a file: made by [`Model::open_file`] (a further open of the model's
//! /dev/kfd), it forwards every call to the process it points at. The model reached without a
//! file (the plugin interface, the model itself as a port) has no file to repoint: there
//! CREATE_PROCESS answers ENOTTY on the primary (as if not modelled) and EINVAL on a secondary.

use crate::model::{Model, SecondaryOf};
use hsakmt_core::abi::ioc;
use hsakmt_core::{Backend, Errno, GemVaOp, Kfd, SysTree};
use std::sync::{Arc, OnceLock};

/// `_IOC_NR(AMDKFD_IOC_CREATE_PROCESS)`.
pub(crate) const NR_CREATE_PROCESS: u32 = 0x27;
/// The largest secondary context id (KFD_CONTEXT_ID_PRIMARY - 1).
const MAX_CONTEXT_ID: u16 = 0xFFFE;

/// A file of the model's /dev/kfd: the caller's primary process until CREATE_PROCESS gives it a
/// secondary one, which it owns (dropping the file destroys it).
pub struct KfdFile {
    primary: Arc<Model>,
    process: OnceLock<Arc<Model>>,
}

impl Model {
    /// A further open of this model's /dev/kfd, as the caller (a forked child gets a fresh
    /// primary process first, as `kfd_open` creates one).
    pub fn open_file(self: &Arc<Model>) -> KfdFile {
        self.open_as_caller();
        KfdFile { primary: self.clone(), process: OnceLock::new() }
    }

    /// create_process(current, false): a secondary KFD process of this (primary) one.
    fn new_secondary(self: &Arc<Model>) -> Result<Arc<Model>, i32> {
        // kfd_process_alloc_id: the lowest free id (ida_alloc_range → ENOSPC when none is).
        let id = {
            let mut st = self.lock();
            let id = (0..=MAX_CONTEXT_ID).find(|i| !st.context_ids.contains(i)).ok_or(libc::ENOSPC)?;
            st.context_ids.insert(id);
            id
        };
        let dev = OnceLock::new();
        match self.devmem() {
            Ok(_) => {
                if let Some(d) = self.dev.get() {
                    let _ = dev.set(d.clone());
                }
            }
            Err(e) => {
                self.free_context_id(id);
                return Err(e);
            }
        }
        let mut m = Model::build_from(self, dev, SecondaryOf { primary: Arc::downgrade(self), id });
        let m = Arc::new_cyclic(move |w| {
            m.shared = w.clone();
            m
        });
        crate::fork::register(&Arc::downgrade(&m));
        Ok(m)
    }

    fn free_context_id(&self, id: u16) {
        self.lock().context_ids.remove(&id);
    }

    /// The context id of this process: KFD_CONTEXT_ID_PRIMARY (0xFFFF) for a primary one.
    pub fn context_id(&self) -> u16 {
        self.secondary.as_ref().map_or(0xFFFF, |s| s.id)
    }

    /// Live secondary processes of this primary one (tests).
    pub fn secondary_count(&self) -> usize {
        self.lock().context_ids.len()
    }
}

impl KfdFile {
    /// The process this file points at.
    pub fn process(&self) -> &Arc<Model> {
        self.process.get().unwrap_or(&self.primary)
    }

    /// AMDKFD_IOC_CREATE_PROCESS on this file, with the dispatcher's checks first (an ioctl the
    /// configured KFD version does not have is ENOTTY, another task's file EBADF). The kernel's
    /// definition has no argument: nothing is copied in or out.
    fn create_process(&self) -> Result<(), i32> {
        if !(1..crate::kfd::ioctl_count(self.primary.config.kfd_version)).contains(&NR_CREATE_PROCESS) {
            return Err(libc::ENOTTY);
        }
        if !self.process().caller_is_owner() {
            return Err(libc::EBADF);
        }
        if self.process.get().is_some() {
            return Err(libc::EINVAL);
        }
        let p = self.primary.new_secondary()?;
        if let Err(p) = self.process.set(p) {
            // Another thread won: that call succeeded, this one is on a secondary's file.
            retire(&p);
            return Err(libc::EINVAL);
        }
        Ok(())
    }

    fn intercept(&self, request: u32, arg_len: usize) -> Option<Result<u32, Errno>> {
        if ioc::nr(request) != NR_CREATE_PROCESS {
            return None;
        }
        if arg_len < ioc::size(request) {
            return Some(Err(Errno(Errno::EINVAL)));
        }
        Some(self.create_process().map(|()| 0).map_err(Errno))
    }
}

/// The end of a secondary process: everything it holds goes back, its id is free again.
fn retire(p: &Model) {
    p.release_process();
    if let Some(primary) = p.secondary.as_ref().and_then(|s| s.primary.upgrade()) {
        primary.free_context_id(p.context_id());
    }
}

impl Drop for KfdFile {
    fn drop(&mut self) {
        // kfd_release of a secondary's file: kfd_process_notifier_release_internal, at once. A
        // forked child's copy is not the child's process (release_process checks the owner).
        if let Some(p) = self.process.get() {
            if p.caller_is_owner() {
                retire(p);
            }
        }
    }
}

impl Kfd for KfdFile {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        if let Some(r) = self.intercept(request, arg.len()) {
            return r.map(|_| ());
        }
        // SAFETY: forwarded under the same contract.
        unsafe { Kfd::ioctl(&**self.process(), request, arg) }
    }
    unsafe fn ioctl_value(&self, request: u32, arg: &mut [u8]) -> Result<u32, Errno> {
        if let Some(r) = self.intercept(request, arg.len()) {
            return r;
        }
        // SAFETY: forwarded under the same contract.
        unsafe { Kfd::ioctl_value(&**self.process(), request, arg) }
    }
    fn wait_events(&self, data: &mut [hsakmt_core::abi::EventData], wait_all: bool, timeout_ms: u32) -> Result<u32, Errno> {
        Kfd::wait_events(&**self.process(), data, wait_all, timeout_ms)
    }
    unsafe fn mmap(&self, fixed: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { Kfd::mmap(&**self.process(), fixed, len, prot, shared, offset) }
    }
    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { Kfd::munmap(&**self.process(), addr, len) }
    }
    unsafe fn map_anonymous(&self, fixed: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { Kfd::map_anonymous(&**self.process(), fixed, hint, len, prot) }
    }
    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { Kfd::release_va(&**self.process(), addr, len) }
    }
    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        Kfd::open_render_node(&**self.process(), minor)
    }
    fn close_render_node(&self, fd: i32) {
        Kfd::close_render_node(&**self.process(), fd)
    }
    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        Kfd::read_file(&**self.process(), tree, path, buf)
    }
    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        Kfd::count_numbered_entries(&**self.process(), tree, dir)
    }
    fn process_id(&self) -> u32 {
        crate::sys::current_pid()
    }
    fn prefault_user_range(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // The model runs in this process: its user pages are this process's.
        hsakmt_linux::prefault(addr, len)
    }
    fn advise_dont_fork(&self, addr: usize, len: usize) -> Result<(), Errno> {
        Kfd::advise_dont_fork(&**self.process(), addr, len)
    }
    fn backend(&self) -> Backend {
        Backend::BuiltinModel
    }
    fn open_further(&self) -> Result<Box<dyn Kfd>, Errno> {
        Ok(Box::new(self.primary.open_file()))
    }
    fn kfd_file_fd(&self) -> Option<i32> {
        Kfd::kfd_file_fd(&**self.process())
    }
    fn doorbell_rung(&self, queue_id: u32) {
        let _ = self.process().ring_doorbell(queue_id);
    }
    fn gpu_counter_khz(&self, gpu_id: u32) -> Option<u64> {
        Kfd::gpu_counter_khz(&**self.process(), gpu_id)
    }
    fn pmc_counter(&self, gpu_id: u32, block: u32, counter_id: u64) -> Option<u64> {
        Kfd::pmc_counter(&**self.process(), gpu_id, block, counter_id)
    }
    fn drm_import_dmabuf(&self, render_fd: i32, dmabuf_fd: i32) -> Result<(u32, u64), Errno> {
        Kfd::drm_import_dmabuf(&**self.process(), render_fd, dmabuf_fd)
    }
    fn drm_export_dmabuf(&self, render_fd: i32, gem: u32) -> Result<i32, Errno> {
        Kfd::drm_export_dmabuf(&**self.process(), render_fd, gem)
    }
    fn drm_gem_va(&self, render_fd: i32, gem: u32, op: &GemVaOp) -> Result<(), Errno> {
        Kfd::drm_gem_va(&**self.process(), render_fd, gem, op)
    }
    fn drm_mmap_offset(&self, render_fd: i32, gem: u32) -> Result<u64, Errno> {
        Kfd::drm_mmap_offset(&**self.process(), render_fd, gem)
    }
    fn drm_gem_close(&self, render_fd: i32, gem: u32) -> Result<(), Errno> {
        Kfd::drm_gem_close(&**self.process(), render_fd, gem)
    }
}
