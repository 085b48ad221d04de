//! DRM buffer-object ioctls on a render node (the handle API: PRIME import/export, GEM close,
//! AMDGPU_GEM_VA, AMDGPU_GEM_MMAP). The argument layouts and request numbers follow the
//! kernel's `include/uapi/drm/drm.h` and `amdgpu_drm.h`.
//!
//! Not tested on hardware: this machine has no AMD GPU, so these are kept to one ioctl each and
//! only their encodings (sizes, request numbers) are checked by unit tests.

use crate::RawIoctl;
use hsakmt_core::abi::ioc;
use hsakmt_core::{Errno, GemVaOp};
use rustix::fd::BorrowedFd;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// `_IOC` with the DRM type byte ('d'): the core's encoder.
const fn drm_ioc(dir: u32, nr: u32, size: usize) -> u32 {
    ioc::encode(dir, b'd', nr, size)
}
const IOC_WRITE: u32 = ioc::DIR_WRITE;
const IOC_READ: u32 = ioc::DIR_READ;
/// First driver-private DRM command number.
const DRM_COMMAND_BASE: u32 = 0x40;

/// `struct drm_gem_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct DrmGemClose {
    pub handle: u32,
    pub pad: u32,
}

/// `struct drm_prime_handle`.
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct DrmPrimeHandle {
    pub handle: u32,
    /// DRM_CLOEXEC | DRM_RDWR for export.
    pub flags: u32,
    pub fd: i32,
}

/// `union drm_amdgpu_gem_mmap` (in: handle + pad; out: addr_ptr).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct DrmAmdgpuGemMmap {
    /// In: the GEM handle in the low 32 bits; out: the fake mmap offset.
    pub handle_or_offset: u64,
}

/// `struct drm_amdgpu_gem_va` (the original 40-byte layout; newer kernels append timeline
/// fields and zero-fill them for callers that pass the short struct).
#[repr(C)]
#[derive(Clone, Copy, Debug, FromBytes, IntoBytes, KnownLayout, Immutable)]
pub struct DrmAmdgpuGemVa {
    pub handle: u32,
    pub pad: u32,
    pub operation: u32,
    pub flags: u32,
    pub va_address: u64,
    pub offset_in_bo: u64,
    pub map_size: u64,
}

const _: () = assert!(core::mem::size_of::<DrmGemClose>() == 8);
const _: () = assert!(core::mem::size_of::<DrmPrimeHandle>() == 12);
const _: () = assert!(core::mem::size_of::<DrmAmdgpuGemMmap>() == 8);
const _: () = assert!(core::mem::size_of::<DrmAmdgpuGemVa>() == 40);

pub const DRM_IOCTL_GEM_CLOSE: u32 = drm_ioc(IOC_WRITE, 0x09, core::mem::size_of::<DrmGemClose>());
pub const DRM_IOCTL_PRIME_HANDLE_TO_FD: u32 = drm_ioc(IOC_READ | IOC_WRITE, 0x2d, core::mem::size_of::<DrmPrimeHandle>());
pub const DRM_IOCTL_PRIME_FD_TO_HANDLE: u32 = drm_ioc(IOC_READ | IOC_WRITE, 0x2e, core::mem::size_of::<DrmPrimeHandle>());
pub const DRM_IOCTL_AMDGPU_GEM_MMAP: u32 = drm_ioc(IOC_READ | IOC_WRITE, DRM_COMMAND_BASE + 0x01, core::mem::size_of::<DrmAmdgpuGemMmap>());
pub const DRM_IOCTL_AMDGPU_GEM_VA: u32 = drm_ioc(IOC_WRITE, DRM_COMMAND_BASE + 0x08, core::mem::size_of::<DrmAmdgpuGemVa>());

pub const AMDGPU_VA_OP_MAP: u32 = 1;
pub const AMDGPU_VA_OP_UNMAP: u32 = 2;
const DRM_CLOEXEC: u32 = 0o2000000;
const DRM_RDWR: u32 = 0o2;

fn borrow(fd: i32) -> Result<BorrowedFd<'static>, Errno> {
    if fd < 0 {
        return Err(Errno(Errno::EBADF));
    }
    // SAFETY: only borrowed for the duration of one syscall by the callers below; a closed
    // descriptor makes that syscall fail with EBADF.
    Ok(unsafe { BorrowedFd::borrow_raw(fd) })
}

/// One DRM ioctl, retried on EINTR/EAGAIN as libdrm's drmIoctl does.
fn drm_ioctl<T: IntoBytes + FromBytes>(fd: i32, request: u32, arg: &mut T) -> Result<(), Errno> {
    let fd = borrow(fd)?;
    loop {
        // SAFETY: the buffer is the whole argument struct, whose size the request encodes.
        let r = unsafe { rustix::ioctl::ioctl(fd, RawIoctl { request, arg: arg.as_mut_bytes() }) };
        match r {
            Ok(_) => return Ok(()),
            Err(e) if e == rustix::io::Errno::INTR || e == rustix::io::Errno::AGAIN => continue,
            Err(e) => return Err(Errno(e.raw_os_error())),
        }
    }
}

pub fn import_dmabuf(render_fd: i32, dmabuf_fd: i32) -> Result<(u32, u64), Errno> {
    let mut a = DrmPrimeHandle { handle: 0, flags: 0, fd: dmabuf_fd };
    drm_ioctl(render_fd, DRM_IOCTL_PRIME_FD_TO_HANDLE, &mut a)?;
    // The size of a dma-buf is its seek end (as libdrm's amdgpu_bo_import finds it).
    let size = rustix::fs::seek(borrow(dmabuf_fd)?, rustix::fs::SeekFrom::End(0)).map_err(|e| Errno(e.raw_os_error()));
    match size {
        Ok(s) => Ok((a.handle, s)),
        Err(e) => {
            let _ = gem_close(render_fd, a.handle);
            Err(e)
        }
    }
}

pub fn export_dmabuf(render_fd: i32, gem: u32) -> Result<i32, Errno> {
    let mut a = DrmPrimeHandle { handle: gem, flags: DRM_CLOEXEC | DRM_RDWR, fd: -1 };
    drm_ioctl(render_fd, DRM_IOCTL_PRIME_HANDLE_TO_FD, &mut a)?;
    Ok(a.fd)
}

pub fn gem_va(render_fd: i32, gem: u32, op: &GemVaOp) -> Result<(), Errno> {
    let mut a = DrmAmdgpuGemVa {
        handle: gem,
        pad: 0,
        operation: if op.map { AMDGPU_VA_OP_MAP } else { AMDGPU_VA_OP_UNMAP },
        flags: op.flags,
        va_address: op.va,
        offset_in_bo: op.offset,
        map_size: op.size,
    };
    drm_ioctl(render_fd, DRM_IOCTL_AMDGPU_GEM_VA, &mut a)
}

pub fn mmap_offset(render_fd: i32, gem: u32) -> Result<u64, Errno> {
    let mut a = DrmAmdgpuGemMmap { handle_or_offset: u64::from(gem) };
    drm_ioctl(render_fd, DRM_IOCTL_AMDGPU_GEM_MMAP, &mut a)?;
    Ok(a.handle_or_offset)
}

pub fn gem_close(render_fd: i32, gem: u32) -> Result<(), Errno> {
    let mut a = DrmGemClose { handle: gem, pad: 0 };
    drm_ioctl(render_fd, DRM_IOCTL_GEM_CLOSE, &mut a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_numbers_match_the_kernel_headers() {
        // The values libdrm's headers expand to on x86-64.
        assert_eq!(DRM_IOCTL_GEM_CLOSE, 0x4008_6409);
        assert_eq!(DRM_IOCTL_PRIME_HANDLE_TO_FD, 0xc00c_642d);
        assert_eq!(DRM_IOCTL_PRIME_FD_TO_HANDLE, 0xc00c_642e);
        assert_eq!(DRM_IOCTL_AMDGPU_GEM_MMAP, 0xc008_6441);
        assert_eq!(DRM_IOCTL_AMDGPU_GEM_VA, 0x4028_6448);
    }

    #[test]
    fn bad_descriptors_are_ebadf_not_a_crash() {
        assert_eq!(gem_close(-1, 1), Err(Errno(Errno::EBADF)));
        assert_eq!(import_dmabuf(-1, -1), Err(Errno(Errno::EBADF)));
    }
}
