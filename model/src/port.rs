//! `impl hsakmt_core::Kfd for Model`: the in-process port the thunk uses with the built-in model.

use crate::kfd::Arg;
use crate::mem::GemVa;
use crate::model::Model;
use hsakmt_core::{Backend, Errno, GemVaOp, Kfd, SysTree};
use rustix::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

fn guard<T>(f: impl FnOnce() -> Result<T, Errno>) -> Result<T, Errno> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(Err(Errno(Errno::EIO)))
}

impl Kfd for Model {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        if arg.len() < hsakmt_core::abi::ioc::size(request) {
            return Err(Errno(Errno::EINVAL)); // as the other backends
        }
        // The struct is copied in and out of `arg`; addresses inside it go through checked user
        // copies (EFAULT, never a crash) and the GPU model's page tables, so what they may
        // overwrite is the caller's promise (this function's contract).
        guard(|| self.ioctl_arg(request, Arg::Slice(arg)).map_err(Errno))
    }

    unsafe fn ioctl_value(&self, request: u32, arg: &mut [u8]) -> Result<u32, Errno> {
        if arg.len() < hsakmt_core::abi::ioc::size(request) {
            return Err(Errno(Errno::EINVAL));
        }
        // As `ioctl`.
        guard(|| self.ioctl_arg_value(request, Arg::Slice(arg)).map_err(Errno))
    }

    fn wait_events(&self, data: &mut [hsakmt_core::abi::EventData], wait_all: bool, timeout_ms: u32) -> Result<u32, Errno> {
        use zerocopy::IntoBytes;
        guard(|| self.wait_events_in_process(data.as_mut_bytes(), wait_all, timeout_ms).map_err(Errno))
    }

    unsafe fn mmap(&self, fixed_addr: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, Errno> {
        use rustix::mm::{MapFlags, ProtFlags};
        // Only ranges of this process's BOs (and doorbell / MMIO pages) can be mapped, as the
        // kernel's mmap only finds the caller's own objects.
        let fd = self.check_mmap(offset, len).map_err(Errno)?;
        let mut flags = if shared { MapFlags::SHARED } else { MapFlags::PRIVATE };
        if fixed_addr.is_some() {
            flags |= MapFlags::FIXED;
        }
        let addr = fixed_addr.unwrap_or(0) as *mut c_void;
        // SAFETY: the caller's contract covers `fixed_addr`; the range lies inside the memfd,
        // which is never truncated.
        let p = unsafe { rustix::mm::mmap(addr, len, ProtFlags::from_bits_truncate(prot), flags, fd, offset) }
            .map_err(|e| Errno(e.raw_os_error()))?;
        // Whatever SVM range covered the new mapping's pages is no longer the CPU's (svm.rs).
        self.svm_cpu_unmapped(p as usize, len);
        Ok(p as usize)
    }

    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: the caller's contract (the range came from `mmap`).
        unsafe { rustix::mm::munmap(addr as *mut c_void, len) }.map_err(|e| Errno(e.raw_os_error()))?;
        self.svm_cpu_unmapped(addr, len);
        Ok(())
    }

    unsafe fn map_anonymous(&self, fixed_addr: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
        use rustix::mm::{MapFlags, ProtFlags};
        let mut flags = MapFlags::PRIVATE;
        if prot == 0 {
            flags |= MapFlags::NORESERVE;
        }
        if fixed_addr.is_some() {
            flags |= MapFlags::FIXED;
        }
        let addr = fixed_addr.unwrap_or(hint) as *mut c_void;
        // SAFETY: without MAP_FIXED nothing is replaced; with it the caller owns the range.
        let p = unsafe { rustix::mm::mmap_anonymous(addr, len, ProtFlags::from_bits_truncate(prot), flags) }
            .map_err(|e| Errno(e.raw_os_error()))?;
        self.svm_cpu_unmapped(p as usize, len);
        Ok(p as usize)
    }

    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: the caller's contract (nothing uses the range any more).
        unsafe { rustix::mm::munmap(addr as *mut c_void, len) }.map_err(|e| Errno(e.raw_os_error()))?;
        self.svm_cpu_unmapped(addr, len);
        Ok(())
    }

    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        guard(|| self.open_render(minor).map(|fd| fd.into_raw_fd()).map_err(Errno))
    }

    fn close_render_node(&self, fd: i32) {
        if fd >= 0 {
            // SAFETY: the fd came from `open_render_node` (`into_raw_fd`) and is closed once, here.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let _ = catch_unwind(AssertUnwindSafe(|| self.close_render(fd)));
        }
    }

    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        crate::sysfiles::read(&self.tree, self.host_cpus(), tree, path, buf)
    }

    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        crate::sysfiles::count_numbered(&self.tree, self.host_cpus(), tree, dir)
    }

    fn process_id(&self) -> u32 {
        crate::sys::current_pid()
    }

    fn advise_dont_fork(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // The model runs in this process: its user memory is this process's.
        hsakmt_linux::dont_fork(addr, len)
    }

    fn kfd_file_fd(&self) -> Option<i32> {
        self.null_file().map(rustix::fd::AsRawFd::as_raw_fd)
    }

    fn backend(&self) -> Backend {
        Backend::BuiltinModel
    }

    fn open_further(&self) -> Result<Box<dyn Kfd>, Errno> {
        // Only a model made by `new_shared` can hand out files that keep it alive.
        let m = self.shared.upgrade().ok_or(Errno(Errno::ENOSYS))?;
        Ok(Box::new(m.open_file()))
    }

    fn gpu_counter_khz(&self, gpu_id: u32) -> Option<u64> {
        self.gpu_index(gpu_id).map(|i| self.gpus[i].counter_hz / 1000)
    }

    fn pmc_counter(&self, gpu_id: u32, block: u32, counter_id: u64) -> Option<u64> {
        Model::pmc_counter(self, gpu_id, block, counter_id)
    }

    fn drm_import_dmabuf(&self, render_fd: i32, dmabuf_fd: i32) -> Result<(u32, u64), Errno> {
        guard(|| self.gem_import_dmabuf(render_fd, dmabuf_fd).map_err(Errno))
    }

    fn drm_export_dmabuf(&self, render_fd: i32, gem: u32) -> Result<i32, Errno> {
        guard(|| self.gem_export_dmabuf(render_fd, gem).map(|fd| fd.into_raw_fd()).map_err(Errno))
    }

    fn drm_gem_va(&self, render_fd: i32, gem: u32, op: &GemVaOp) -> Result<(), Errno> {
        let op = GemVa { map: op.map, va: op.va, offset: op.offset, size: op.size, flags: op.flags };
        guard(|| self.gem_va(render_fd, gem, op).map_err(Errno))
    }

    fn drm_mmap_offset(&self, render_fd: i32, gem: u32) -> Result<u64, Errno> {
        guard(|| self.gem_mmap_offset(render_fd, gem).map_err(Errno))
    }

    fn drm_gem_close(&self, render_fd: i32, gem: u32) -> Result<(), Errno> {
        guard(|| self.gem_close(render_fd, gem).map_err(Errno))
    }
}
