//! hsakmt-linux: the `Kfd` port on a real machine — ioctls and mmaps on `/dev/kfd`,
//! `/dev/dri/renderD<minor>`, and the KFD topology and CPU trees in sysfs.

pub mod drm;
pub mod libdrm;
mod pid;

pub use pid::pid;

use hsakmt_core::{AmdgpuDevice, Backend, Errno, GemVaOp, Kfd, SysTree};
use rustix::fd::{AsFd, AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use rustix::fs::{Mode, OFlags};
use rustix::ioctl::{Ioctl, IoctlOutput, Opcode};
use std::ffi::c_void;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Where the KFD publishes its topology.
pub const KFD_TOPOLOGY_ROOT: &str = "/sys/devices/virtual/kfd/kfd/topology";
/// Where Linux describes CPUs and their caches.
pub const CPU_ROOT: &str = "/sys/devices/system/cpu";
pub const KFD_DEVICE: &str = "/dev/kfd";

/// The amdkfd character device plus the sysfs trees that go with it.
pub struct DevKfd {
    fd: OwnedFd,
    topology_root: PathBuf,
    /// The libdrm_amdgpu devices made on this port's render nodes.
    devices: libdrm::AmdgpuDevices,
}

fn errno(e: rustix::io::Errno) -> Errno {
    Errno(e.raw_os_error())
}

impl DevKfd {
    /// Open `/dev/kfd` (O_RDWR | O_CLOEXEC, as upstream).
    pub fn open() -> Result<DevKfd, Errno> {
        let fd = rustix::fs::open(KFD_DEVICE, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(errno)?;
        Ok(DevKfd { fd, topology_root: PathBuf::from(KFD_TOPOLOGY_ROOT), devices: libdrm::AmdgpuDevices::new() })
    }

    /// Whether a KFD device node exists on this machine.
    pub fn present() -> bool {
        Path::new(KFD_DEVICE).exists()
    }
}

/// One raw KFD ioctl: the request number passes through unchanged, so the kernel applies
/// its own size rule (copy min(sizes), zero-fill the rest).
struct RawIoctl<'a> {
    request: u32,
    arg: &'a mut [u8],
}

// SAFETY: `as_ptr` points at a live, writable buffer of `arg.len()` bytes, which `Kfd::ioctl`
// requires to be at least the request's encoded size; the kernel writes at most that size.
unsafe impl Ioctl for RawIoctl<'_> {
    /// ioctl(2)'s non-negative return value (DBG_TRAP's queue counts).
    type Output = IoctlOutput;
    const IS_MUTATING: bool = true;
    fn opcode(&self) -> Opcode {
        self.request as Opcode
    }
    fn as_ptr(&mut self) -> *mut c_void {
        self.arg.as_mut_ptr().cast()
    }
    unsafe fn output_from_ptr(out: IoctlOutput, _extract: *mut c_void) -> rustix::io::Result<IoctlOutput> {
        Ok(out)
    }
}

/// Read a whole file into `buf`, ERANGE when it does not fit.
pub fn read_into(path: &Path, buf: &mut [u8]) -> Result<usize, Errno> {
    let mut f = std::fs::File::open(path).map_err(|e| Errno(e.raw_os_error().unwrap_or(Errno::EIO)))?;
    let mut n = 0;
    loop {
        if n == buf.len() {
            let mut probe = [0u8; 1];
            return match f.read(&mut probe) {
                Ok(0) => Ok(n),
                Ok(_) => Err(Errno(Errno::ERANGE)),
                Err(e) => Err(Errno(e.raw_os_error().unwrap_or(Errno::EIO))),
            };
        }
        match f.read(&mut buf[n..]) {
            Ok(0) => return Ok(n),
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Errno(e.raw_os_error().unwrap_or(Errno::EIO))),
        }
    }
}

/// Count the entries of `dir` whose names are decimal numbers (sysfs node/bank/link dirs).
pub fn count_numbered(dir: &Path) -> Result<u32, Errno> {
    let rd = std::fs::read_dir(dir).map_err(|e| Errno(e.raw_os_error().unwrap_or(Errno::EIO)))?;
    let mut n = 0u32;
    for entry in rd.flatten() {
        if entry.file_name().to_str().is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())) {
            n += 1;
        }
    }
    Ok(n)
}

/// Resolve a path of one of the read-only trees.
pub fn tree_path(topology_root: &Path, tree: SysTree, rel: &str) -> PathBuf {
    match tree {
        SysTree::Topology => topology_root.join(rel),
        SysTree::Cpu => Path::new(CPU_ROOT).join(rel),
        SysTree::CpuInfo => PathBuf::from("/proc/cpuinfo"),
    }
}

/// Open a DRM render node the way upstream does (O_RDWR | O_CLOEXEC); minors are 128..=255.
pub fn open_render_node(minor: u32) -> Result<i32, Errno> {
    if !(128..=255).contains(&minor) {
        return Err(Errno(Errno::EINVAL));
    }
    let path = format!("/dev/dri/renderD{minor}");
    let fd = rustix::fs::open(path.as_str(), OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(errno)?;
    Ok(fd.into_raw_fd())
}

/// mmap `len` bytes of `fd` at `offset` (the `Kfd::mmap` contract).
///
/// # Safety
/// With `fixed_addr`, the caller owns that range and accepts it being replaced.
pub unsafe fn mmap_fd(
    fd: rustix::fd::BorrowedFd<'_>,
    fixed_addr: Option<usize>,
    len: usize,
    prot: u32,
    shared: bool,
    offset: u64,
) -> Result<usize, Errno> {
    use rustix::mm::{MapFlags, ProtFlags};
    let mut flags = if shared { MapFlags::SHARED } else { MapFlags::PRIVATE };
    if fixed_addr.is_some() {
        flags |= MapFlags::FIXED;
    }
    let addr = fixed_addr.unwrap_or(0) as *mut c_void;
    // SAFETY: the caller owns `fixed_addr` (contract above); otherwise the kernel picks.
    let p = unsafe { rustix::mm::mmap(addr, len, ProtFlags::from_bits_truncate(prot), flags, fd, offset) }.map_err(errno)?;
    Ok(p as usize)
}

/// # Safety
/// The range must have come from `mmap_fd` and nothing may use it afterwards.
pub unsafe fn munmap(addr: usize, len: usize) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { rustix::mm::munmap(addr as *mut c_void, len) }.map_err(errno)
}

/// Private anonymous memory (the `Kfd::map_anonymous` contract): `prot == 0` reserves
/// address space (PROT_NONE, MAP_NORESERVE).
///
/// # Safety
/// With `fixed_addr`, the caller owns that range and accepts it being replaced.
pub unsafe fn map_anonymous(fixed_addr: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
    use rustix::mm::{MapFlags, ProtFlags};
    let mut flags = MapFlags::PRIVATE;
    if prot == 0 {
        flags |= MapFlags::NORESERVE;
    }
    if fixed_addr.is_some() {
        flags |= MapFlags::FIXED;
    }
    let addr = fixed_addr.unwrap_or(hint) as *mut c_void;
    // SAFETY: without MAP_FIXED nothing existing is replaced; with it the caller owns the range.
    let p = unsafe { rustix::mm::mmap_anonymous(addr, len, ProtFlags::from_bits_truncate(prot), flags) }.map_err(errno)?;
    Ok(p as usize)
}

/// `madvise(MADV_DONTFORK)` on `[addr, addr + len)` of this process: a fork's child does not
/// inherit the range. Only advice about future forks: no memory contents change.
pub fn dont_fork(addr: usize, len: usize) -> Result<(), Errno> {
    // SAFETY: MADV_DONTFORK changes no data and no mapping of this process (only what a later
    // fork copies); unmapped addresses fail with ENOMEM instead of being touched.
    unsafe { rustix::mm::madvise(addr as *mut c_void, len, rustix::mm::Advice::LinuxDontFork) }.map_err(errno)
}

/// Fault in `[addr, addr + len)` of this process (MADV_WILLNEED): ENOMEM when part of the
/// range is not mapped. Only advice: no memory contents change.
pub fn prefault(addr: usize, len: usize) -> Result<(), Errno> {
    // SAFETY: MADV_WILLNEED only schedules reads of existing mappings; it changes no data and
    // fails (ENOMEM) on unmapped addresses instead of touching them.
    unsafe { rustix::mm::madvise(addr as *mut c_void, len, rustix::mm::Advice::WillNeed) }.map_err(errno)
}

/// The CPU page size.
pub fn page_size() -> usize {
    rustix::param::page_size()
}

pub fn close_fd(fd: i32) {
    if fd >= 0 {
        // SAFETY: the fd came from `open_render_node` (`into_raw_fd`) and is closed once here.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
    }
}

impl Kfd for DevKfd {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: the same contract.
        unsafe { self.ioctl_value(request, arg) }.map(|_| ())
    }

    unsafe fn ioctl_value(&self, request: u32, arg: &mut [u8]) -> Result<u32, Errno> {
        if arg.len() < hsakmt_core::abi::ioc::size(request) {
            return Err(Errno(Errno::EINVAL));
        }
        loop {
            // SAFETY: RawIoctl's buffer is at least the request's size (checked above), so
            // the kernel's copies of the struct stay inside `arg`; the addresses inside it
            // are the caller's promise (this function's contract).
            let r = unsafe { rustix::ioctl::ioctl(self.fd.as_fd(), RawIoctl { request, arg: &mut *arg }) };
            match r {
                Ok(v) => return Ok(v.max(0) as u32),
                // upstream retries interrupted and busy-again ioctls
                Err(e) if e == rustix::io::Errno::INTR || e == rustix::io::Errno::AGAIN => continue,
                Err(e) => return Err(errno(e)),
            }
        }
    }

    unsafe fn mmap(&self, fixed_addr: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { mmap_fd(self.fd.as_fd(), fixed_addr, len, prot, shared, offset) }
    }

    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { munmap(addr, len) }
    }

    unsafe fn mmap_bo(&self, render_fd: i32, fixed_addr: Option<usize>, len: usize, prot: u32, offset: u64) -> Result<usize, Errno> {
        // SAFETY: the fd is the caller's render node; the mapping contract is forwarded.
        let fd = unsafe { rustix::fd::BorrowedFd::borrow_raw(render_fd) };
        // SAFETY: forwarded under the same contract.
        unsafe { mmap_fd(fd, fixed_addr, len, prot, true, offset) }
    }

    unsafe fn map_anonymous(&self, fixed_addr: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { map_anonymous(fixed_addr, hint, len, prot) }
    }

    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno> {
        // SAFETY: the caller's contract.
        unsafe { munmap(addr, len) }
    }

    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        open_render_node(minor)
    }

    fn close_render_node(&self, fd: i32) {
        close_fd(fd)
    }

    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        read_into(&tree_path(&self.topology_root, tree, path), buf)
    }

    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        count_numbered(&tree_path(&self.topology_root, tree, dir))
    }

    fn process_id(&self) -> u32 {
        pid()
    }

    fn prefault_user_range(&self, addr: usize, len: usize) -> Result<(), Errno> {
        prefault(addr, len)
    }

    fn advise_dont_fork(&self, addr: usize, len: usize) -> Result<(), Errno> {
        dont_fork(addr, len)
    }

    fn kfd_file_fd(&self) -> Option<i32> {
        Some(self.fd.as_raw_fd())
    }

    fn backend(&self) -> Backend {
        Backend::Kernel
    }

    fn open_further(&self) -> Result<Box<dyn Kfd>, Errno> {
        // Another open of /dev/kfd (upstream's hsaKmtOpenSecondaryKFDCtx): the same topology
        // root, libdrm devices of its own (a secondary context binds its own render files).
        let fd = rustix::fs::open(KFD_DEVICE, OFlags::RDWR | OFlags::CLOEXEC, Mode::empty()).map_err(errno)?;
        Ok(Box::new(DevKfd { fd, topology_root: self.topology_root.clone(), devices: libdrm::AmdgpuDevices::new() }))
    }

    fn amdgpu_device_initialize(&self, render_fd: i32) -> Result<AmdgpuDevice, Errno> {
        self.devices.initialize(render_fd)
    }

    fn amdgpu_device_deinitialize(&self, handle: usize) {
        self.devices.deinitialize(handle)
    }

    fn amdgpu_gpu_counter_khz(&self, handle: usize) -> Result<u64, Errno> {
        self.devices.gpu_counter_khz(handle)
    }

    fn drm_import_dmabuf(&self, render_fd: i32, dmabuf_fd: i32) -> Result<(u32, u64), Errno> {
        drm::import_dmabuf(render_fd, dmabuf_fd)
    }

    fn drm_export_dmabuf(&self, render_fd: i32, gem: u32) -> Result<i32, Errno> {
        drm::export_dmabuf(render_fd, gem)
    }

    fn drm_gem_va(&self, render_fd: i32, gem: u32, op: &GemVaOp) -> Result<(), Errno> {
        drm::gem_va(render_fd, gem, op)
    }

    fn drm_mmap_offset(&self, render_fd: i32, gem: u32) -> Result<u64, Errno> {
        drm::mmap_offset(render_fd, gem)
    }

    fn drm_gem_close(&self, render_fd: i32, gem: u32) -> Result<(), Errno> {
        drm::gem_close(render_fd, gem)
    }
}

impl AsRawFd for DevKfd {
    fn as_raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}
