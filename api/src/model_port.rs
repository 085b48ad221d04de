//! The built-in model as the thunk's port: an `Arc` of a model made with
//! `Model::new_shared` (so its doorbell watcher runs queues by themselves). Dropping the port
//! (the device's close) drops the model, which releases everything the process still held, as
//! closing `/dev/kfd` does.

use hsakmt_core::abi::EventData;
use hsakmt_core::{Backend, Errno, GemVaOp, Kfd, SysTree};
use std::sync::Arc;

pub(crate) struct ModelPort(pub(crate) Arc<hsakmt_model::Model>);

impl Kfd for ModelPort {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.0.ioctl(request, arg) }
    }
    unsafe fn ioctl_value(&self, request: u32, arg: &mut [u8]) -> Result<u32, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.0.ioctl_value(request, arg) }
    }
    fn wait_events(&self, data: &mut [EventData], wait_all: bool, timeout_ms: u32) -> Result<u32, Errno> {
        self.0.wait_events(data, wait_all, timeout_ms)
    }
    unsafe fn mmap(&self, fixed: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.0.mmap(fixed, len, prot, shared, offset) }
    }
    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.0.munmap(addr, len) }
    }
    unsafe fn mmap_bo(&self, fd: i32, fixed: Option<usize>, len: usize, prot: u32, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.0.mmap_bo(fd, fixed, len, prot, offset) }
    }
    unsafe fn map_anonymous(&self, fixed: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.0.map_anonymous(fixed, hint, len, prot) }
    }
    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.0.release_va(addr, len) }
    }
    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        self.0.open_render_node(minor)
    }
    fn close_render_node(&self, fd: i32) {
        self.0.close_render_node(fd)
    }
    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        self.0.read_file(tree, path, buf)
    }
    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        self.0.count_numbered_entries(tree, dir)
    }
    fn process_id(&self) -> u32 {
        self.0.process_id()
    }
    fn kfd_file_fd(&self) -> Option<i32> {
        self.0.kfd_file_fd()
    }
    fn backend(&self) -> Backend {
        self.0.backend()
    }
    fn open_further(&self) -> Result<Box<dyn Kfd>, Errno> {
        Ok(Box::new(self.0.open_file()))
    }
    fn doorbell_rung(&self, queue_id: u32) {
        // The watcher would notice the write on its next pass; this runs the engine at once.
        let _ = self.0.ring_doorbell(queue_id);
    }
    fn gpu_counter_khz(&self, gpu_id: u32) -> Option<u64> {
        self.0.gpu_counter_khz(gpu_id)
    }
    fn pmc_counter(&self, gpu_id: u32, block: u32, counter_id: u64) -> Option<u64> {
        self.0.pmc_counter(gpu_id, block, counter_id)
    }
    fn prefault_user_range(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // The model runs in this process: its user pages are this process's.
        hsakmt_linux::prefault(addr, len)
    }
    fn advise_dont_fork(&self, addr: usize, len: usize) -> Result<(), Errno> {
        self.0.advise_dont_fork(addr, len)
    }
    fn drm_import_dmabuf(&self, render_fd: i32, dmabuf_fd: i32) -> Result<(u32, u64), Errno> {
        self.0.drm_import_dmabuf(render_fd, dmabuf_fd)
    }
    fn drm_export_dmabuf(&self, render_fd: i32, gem: u32) -> Result<i32, Errno> {
        self.0.drm_export_dmabuf(render_fd, gem)
    }
    fn drm_gem_va(&self, render_fd: i32, gem: u32, op: &GemVaOp) -> Result<(), Errno> {
        self.0.drm_gem_va(render_fd, gem, op)
    }
    fn drm_mmap_offset(&self, render_fd: i32, gem: u32) -> Result<u64, Errno> {
        self.0.drm_mmap_offset(render_fd, gem)
    }
    fn drm_gem_close(&self, render_fd: i32, gem: u32) -> Result<(), Errno> {
        self.0.drm_gem_close(render_fd, gem)
    }
}
