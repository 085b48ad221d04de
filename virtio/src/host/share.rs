//! A port wrapper that knows, for every CPU mapping the thunk makes, which file and offset back
//! it, so the host can hand a guest in another process the very pages (blob resources).
//!
//! BO and doorbell mappings come from the KFD's (or render node's) file at an offset; the
//! wrapper records them. Paged host memory (anonymous in the plain thunk) is made from a memfd
//! of its own instead, `MAP_SHARED`, so it too can be shared. SVM reservations (`prot == 0`)
//! are passed through and not recorded.

use hsakmt_core::abi::EventData;
use hsakmt_core::{AmdgpuDevice, Backend, Errno, GemVaOp, Kfd, SysTree};
use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex};

/// The file behind one CPU mapping of the host.
#[derive(Clone, Debug)]
pub struct Backing {
    pub fd: Arc<OwnedFd>,
    /// File offset of the mapping's first byte.
    pub offset: u64,
}

/// One recorded mapping.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub start: usize,
    pub len: usize,
    pub backing: Backing,
}

/// Every shareable mapping of the host's thunk, by start address.
#[derive(Default, Debug)]
pub struct ShareTable {
    maps: Mutex<BTreeMap<usize, Mapping>>,
}

impl ShareTable {
    /// The mapping that contains `[addr, addr + len)`, if one does.
    pub fn find(&self, addr: usize, len: usize) -> Option<Mapping> {
        let maps = self.maps.lock().unwrap_or_else(|e| e.into_inner());
        let (_, m) = maps.range(..=addr).next_back()?;
        let end = addr.checked_add(len)?;
        (end <= m.start + m.len).then(|| m.clone())
    }

    fn insert(&self, m: Mapping) {
        let mut maps = self.maps.lock().unwrap_or_else(|e| e.into_inner());
        Self::cut(&mut maps, m.start, m.len);
        maps.insert(m.start, m);
    }

    fn remove(&self, addr: usize, len: usize) {
        let mut maps = self.maps.lock().unwrap_or_else(|e| e.into_inner());
        Self::cut(&mut maps, addr, len);
    }

    /// Forget `[addr, addr + len)`, keeping the parts of overlapping mappings outside it.
    fn cut(maps: &mut BTreeMap<usize, Mapping>, addr: usize, len: usize) {
        let end = addr.saturating_add(len);
        let hit: Vec<usize> = maps.range(..end).filter(|(_, m)| m.start + m.len > addr).map(|(s, _)| *s).collect();
        for s in hit {
            let m = maps.remove(&s).expect("listed");
            if m.start < addr {
                maps.insert(m.start, Mapping { start: m.start, len: addr - m.start, backing: m.backing.clone() });
            }
            let m_end = m.start + m.len;
            if m_end > end {
                let off = m.backing.offset + (end - m.start) as u64;
                maps.insert(end, Mapping { start: end, len: m_end - end, backing: Backing { fd: m.backing.fd.clone(), offset: off } });
            }
        }
    }

    /// Number of recorded mappings (tests).
    pub fn len(&self) -> usize {
        self.maps.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn dup(fd: RawFd) -> Result<Arc<OwnedFd>, Errno> {
    // SAFETY: F_DUPFD_CLOEXEC on a descriptor the caller holds open; the new one is ours.
    let n = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
    if n < 0 {
        return Err(Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EBADF)));
    }
    // SAFETY: `n` is a new descriptor nobody else owns.
    Ok(Arc::new(unsafe { OwnedFd::from_raw_fd(n) }))
}

/// The wrapper: a [`Kfd`] that forwards everything to `inner` and records mappings in `table`.
pub struct SharePort {
    inner: Arc<dyn Kfd>,
    /// The file the KFD's mmap offsets refer to (the model's device memfd); `None` where
    /// another process cannot map it (the real `/dev/kfd` is per process).
    kfd_file: Option<Arc<OwnedFd>>,
    table: Arc<ShareTable>,
}

impl SharePort {
    /// `kfd_file`: a descriptor of the file behind the KFD's mmap offsets, if another process
    /// may map it (duplicated here).
    pub fn new(inner: Arc<dyn Kfd>, kfd_file: Option<RawFd>) -> Result<(SharePort, Arc<ShareTable>), Errno> {
        let kfd_file = kfd_file.map(dup).transpose()?;
        let table = Arc::new(ShareTable::default());
        Ok((SharePort { inner, kfd_file, table: table.clone() }, table))
    }
}

fn memfd(len: usize) -> Result<OwnedFd, Errno> {
    let last = || Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM));
    // SAFETY: a NUL-terminated name; the flags are valid.
    let fd = unsafe { libc::memfd_create(c"hsakmt-virtio-host".as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(last());
    }
    // SAFETY: a new descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate on our own memfd.
    if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
        return Err(last());
    }
    Ok(fd)
}

impl Kfd for SharePort {
    unsafe fn ioctl(&self, request: u32, arg: &mut [u8]) -> Result<(), Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.ioctl(request, arg) }
    }

    unsafe fn ioctl_value(&self, request: u32, arg: &mut [u8]) -> Result<u32, Errno> {
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.ioctl_value(request, arg) }
    }

    unsafe fn mmap(&self, fixed_addr: Option<usize>, len: usize, prot: u32, shared: bool, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        let p = unsafe { self.inner.mmap(fixed_addr, len, prot, shared, offset) }?;
        match (&self.kfd_file, shared) {
            (Some(fd), true) => self.table.insert(Mapping { start: p, len, backing: Backing { fd: fd.clone(), offset } }),
            _ => self.table.remove(p, len),
        }
        Ok(p)
    }

    unsafe fn munmap(&self, addr: usize, len: usize) -> Result<(), Errno> {
        self.table.remove(addr, len);
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.munmap(addr, len) }
    }

    unsafe fn mmap_bo(&self, render_fd: i32, fixed_addr: Option<usize>, len: usize, prot: u32, offset: u64) -> Result<usize, Errno> {
        // SAFETY: forwarded under the same contract.
        let p = unsafe { self.inner.mmap_bo(render_fd, fixed_addr, len, prot, offset) }?;
        // The model serves BOs from its device file whatever the render fd; the kernel from
        // the render node (a DRM file another process may map at the same offset).
        let fd = match &self.kfd_file {
            Some(fd) if self.inner.backend() != Backend::Kernel => Some(fd.clone()),
            _ => dup(render_fd).ok(),
        };
        match fd {
            Some(fd) => self.table.insert(Mapping { start: p, len, backing: Backing { fd, offset } }),
            None => self.table.remove(p, len),
        }
        Ok(p)
    }

    unsafe fn map_anonymous(&self, fixed_addr: Option<usize>, hint: usize, len: usize, prot: u32) -> Result<usize, Errno> {
        if prot == 0 {
            // SAFETY: forwarded under the same contract.
            let p = unsafe { self.inner.map_anonymous(fixed_addr, hint, len, prot) }?;
            self.table.remove(p, len);
            return Ok(p);
        }
        // Process memory: from a memfd of its own, so it can be shared.
        let fd = memfd(len)?;
        let mut flags = libc::MAP_SHARED;
        if fixed_addr.is_some() {
            flags |= libc::MAP_FIXED;
        }
        let addr = fixed_addr.unwrap_or(hint) as *mut libc::c_void;
        // SAFETY: without MAP_FIXED nothing is replaced; with it the caller owns the range
        // (this function's contract). The memfd is `len` bytes long.
        let p = unsafe { libc::mmap(addr, len, prot as i32, flags, fd.as_raw_fd(), 0) };
        if p == libc::MAP_FAILED {
            return Err(Errno(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::ENOMEM)));
        }
        let p = p as usize;
        self.table.insert(Mapping { start: p, len, backing: Backing { fd: Arc::new(fd), offset: 0 } });
        Ok(p)
    }

    unsafe fn release_va(&self, addr: usize, len: usize) -> Result<(), Errno> {
        self.table.remove(addr, len);
        // SAFETY: forwarded under the same contract.
        unsafe { self.inner.release_va(addr, len) }
    }

    fn open_render_node(&self, minor: u32) -> Result<i32, Errno> {
        self.inner.open_render_node(minor)
    }

    fn close_render_node(&self, fd: i32) {
        self.inner.close_render_node(fd)
    }

    fn read_file(&self, tree: SysTree, path: &str, buf: &mut [u8]) -> Result<usize, Errno> {
        self.inner.read_file(tree, path, buf)
    }

    fn count_numbered_entries(&self, tree: SysTree, dir: &str) -> Result<u32, Errno> {
        self.inner.count_numbered_entries(tree, dir)
    }

    fn wait_events(&self, data: &mut [EventData], wait_all: bool, timeout_ms: u32) -> Result<u32, Errno> {
        self.inner.wait_events(data, wait_all, timeout_ms)
    }

    fn process_id(&self) -> u32 {
        self.inner.process_id()
    }

    fn prefault_user_range(&self, addr: usize, len: usize) -> Result<(), Errno> {
        self.inner.prefault_user_range(addr, len)
    }

    fn advise_dont_fork(&self, addr: usize, len: usize) -> Result<(), Errno> {
        self.inner.advise_dont_fork(addr, len)
    }

    fn backend(&self) -> Backend {
        self.inner.backend()
    }

    fn kfd_file_fd(&self) -> Option<i32> {
        self.inner.kfd_file_fd()
    }

    fn doorbell_rung(&self, queue_id: u32) {
        self.inner.doorbell_rung(queue_id)
    }

    fn gpu_counter_khz(&self, gpu_id: u32) -> Option<u64> {
        self.inner.gpu_counter_khz(gpu_id)
    }

    fn pmc_counter(&self, gpu_id: u32, block: u32, counter_id: u64) -> Option<u64> {
        self.inner.pmc_counter(gpu_id, block, counter_id)
    }

    fn amdgpu_device_initialize(&self, render_fd: i32) -> Result<AmdgpuDevice, Errno> {
        self.inner.amdgpu_device_initialize(render_fd)
    }

    fn amdgpu_device_deinitialize(&self, handle: usize) {
        self.inner.amdgpu_device_deinitialize(handle)
    }

    fn amdgpu_gpu_counter_khz(&self, handle: usize) -> Result<u64, Errno> {
        self.inner.amdgpu_gpu_counter_khz(handle)
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
}
