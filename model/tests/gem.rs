//! GEM buffer objects on the render-node stand-ins (the DRM side of upstream's handle API),
//! through the `Kfd` port: PRIME import/export of model dma-bufs, GEM_VA into the GPU page
//! table (visible to `Model::gpu_read`, a fault after unmap or close), GEM_MMAP offsets that
//! `mmap_bo` maps, and the kernel's errnos.

use hsakmt_core::abi::kfd::*;
use hsakmt_core::port::{ioctl_plain, ioctl_typed, GEM_VA_EXECUTABLE, GEM_VA_READABLE, GEM_VA_WRITEABLE};
use hsakmt_core::{Errno, GemVaOp, Kfd};
use hsakmt_model::{GpuFaultKind, Model, ModelConfig};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const PAGE: u64 = 4096;
const VA: u64 = 0x7000_0000_0000;
const GEM_VA_AT: u64 = 0x10_0000_0000;
const RW: u64 = (GEM_VA_READABLE | GEM_VA_WRITEABLE) as u64;

fn e(n: i32) -> Errno {
    Errno(n)
}

fn va(map: bool, va: u64, offset: u64, size: u64, flags: u64) -> GemVaOp {
    GemVaOp { map, va, offset, size, flags: flags as u32 }
}

/// A model with a VM on GPU 0, a 4-page VRAM BO on it (bytes 0..4 of each page = page index),
/// its dma-buf, and the render fd.
struct Fx {
    m: Model,
    gpu: u32,
    render: OwnedFd,
    dmabuf: OwnedFd,
}

fn setup() -> Fx {
    let m = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    let g = m.gpus()[0].clone();
    let render = m.open_render(g.drm_render_minor).unwrap();
    let port: &dyn Kfd = &m;
    let mut vm = kfd_ioctl_acquire_vm_args { drm_fd: render.as_raw_fd() as u32, gpu_id: g.gpu_id };
    ioctl_plain(port, &mut vm).unwrap();
    let flags = (KFD_IOC_ALLOC_MEM_FLAGS_VRAM | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC) as u32;
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: VA, size: 4 * PAGE, handle: 0, mmap_offset: 0, gpu_id: g.gpu_id, flags };
    // SAFETY: a VRAM BO at a GPU VA of the model's: no process memory is handed over.
    unsafe { ioctl_typed(port, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a) }.unwrap();
    // SAFETY: the BO's whole range, no fixed address.
    let p = unsafe { port.mmap(None, 4 * PAGE as usize, 3, true, a.mmap_offset) }.unwrap();
    for i in 0..4u32 {
        // SAFETY: inside the 4-page writable mapping.
        unsafe { *((p + i as usize * PAGE as usize) as *mut u32) = 0xa000 + i };
    }
    // SAFETY: the mapping made above.
    unsafe { port.munmap(p, 4 * PAGE as usize) }.unwrap();
    let mut x = kfd_ioctl_export_dmabuf_args { handle: a.handle, flags: libc::O_CLOEXEC as u32, dmabuf_fd: 0 };
    ioctl_plain(port, &mut x).unwrap();
    // SAFETY: EXPORT_DMABUF hands the descriptor to the caller.
    let dmabuf = unsafe { OwnedFd::from_raw_fd(x.dmabuf_fd as i32) };
    Fx { m, gpu: g.gpu_id, render, dmabuf }
}

fn read_u32(m: &Model, gpu: u32, at: u64) -> Result<u32, GpuFaultKind> {
    let mut b = [0u8; 4];
    m.gpu_read(gpu, at, &mut b).map(|()| u32::from_ne_bytes(b)).map_err(|f| f.kind)
}

#[test]
fn gem_va_mapping_is_visible_to_gpu_reads_and_faults_after_unmap() {
    let f = setup();
    let (port, r): (&dyn Kfd, i32) = (&f.m, f.render.as_raw_fd());
    let (gem, size) = port.drm_import_dmabuf(r, f.dmabuf.as_raw_fd()).unwrap();
    assert_eq!((gem, size), (1, 4 * PAGE));
    // The same dma-buf on the same file: the same handle.
    assert_eq!(port.drm_import_dmabuf(r, f.dmabuf.as_raw_fd()).unwrap(), (1, 4 * PAGE));
    // Pages 1..3 of the BO at GEM_VA_AT.
    port.drm_gem_va(r, gem, &va(true, GEM_VA_AT, PAGE, 2 * PAGE, RW)).unwrap();
    assert_eq!(read_u32(&f.m, f.gpu, GEM_VA_AT), Ok(0xa001));
    assert_eq!(read_u32(&f.m, f.gpu, GEM_VA_AT + PAGE), Ok(0xa002));
    assert_eq!(read_u32(&f.m, f.gpu, GEM_VA_AT + 2 * PAGE), Err(GpuFaultKind::NotMapped));
    f.m.gpu_write(f.gpu, GEM_VA_AT + 8, b"gem").unwrap();
    // The CPU view through GEM_MMAP's offset sees the GPU's write (page 1, byte 8).
    let off = port.drm_mmap_offset(r, gem).unwrap();
    // SAFETY: the object's whole range, no fixed address.
    let p = unsafe { port.mmap_bo(r, None, 4 * PAGE as usize, 3, off) }.unwrap();
    // SAFETY: inside the 4-page mapping.
    let seen = unsafe { std::slice::from_raw_parts((p + PAGE as usize + 8) as *const u8, 3) }.to_vec();
    assert_eq!(seen, b"gem");
    // SAFETY: the mapping made above.
    unsafe { port.munmap(p, 4 * PAGE as usize) }.unwrap();
    // Unmap: the VA faults; unmapping again is ENOENT.
    port.drm_gem_va(r, gem, &va(false, GEM_VA_AT, 0, 0, 0)).unwrap();
    assert_eq!(read_u32(&f.m, f.gpu, GEM_VA_AT), Err(GpuFaultKind::NotMapped));
    assert_eq!(port.drm_gem_va(r, gem, &va(false, GEM_VA_AT, 0, 0, 0)), Err(e(libc::ENOENT)));
    // Read-only mapping: GPU writes fault.
    port.drm_gem_va(r, gem, &va(true, GEM_VA_AT, 0, PAGE, (GEM_VA_READABLE | GEM_VA_EXECUTABLE) as u64)).unwrap();
    assert_eq!(read_u32(&f.m, f.gpu, GEM_VA_AT), Ok(0xa000));
    assert_eq!(f.m.gpu_write(f.gpu, GEM_VA_AT, b"x").map_err(|f| f.kind), Err(GpuFaultKind::ReadOnly));
    // Close drops the mapping and the object.
    let bos = f.m.live_bos();
    port.drm_gem_close(r, gem).unwrap();
    assert_eq!(read_u32(&f.m, f.gpu, GEM_VA_AT), Err(GpuFaultKind::NotMapped));
    assert_eq!(f.m.live_bos(), bos - 1);
    assert_eq!(port.drm_gem_close(r, gem), Err(e(libc::EINVAL)));
    assert_eq!(port.drm_mmap_offset(r, gem), Err(e(libc::ENOENT)));
}

#[test]
fn gem_va_checks_as_amdgpu() {
    let f = setup();
    let (port, r): (&dyn Kfd, i32) = (&f.m, f.render.as_raw_fd());
    let (gem, _) = port.drm_import_dmabuf(r, f.dmabuf.as_raw_fd()).unwrap();
    let vm_end = f.m.gpus()[0].vm_size();
    for (op, why) in [
        (va(true, GEM_VA_AT + 1, 0, PAGE, RW), "misaligned va"),
        (va(true, GEM_VA_AT, 1, PAGE, RW), "misaligned offset"),
        (va(true, GEM_VA_AT, 0, PAGE + 1, RW), "misaligned size"),
        (va(true, GEM_VA_AT, 0, 0, RW), "empty"),
        (va(true, GEM_VA_AT, 2 * PAGE, 3 * PAGE, RW), "beyond the BO"),
        (va(true, vm_end - PAGE, 0, 2 * PAGE, RW), "beyond the VM"),
        (va(true, PAGE, 0, PAGE, RW), "reserved bottom"),
        (va(true, GEM_VA_AT, 0, PAGE, 1 << 4), "PRT"),
        (va(true, GEM_VA_AT, 0, PAGE, 1 << 12), "unknown flag"),
    ] {
        assert_eq!(port.drm_gem_va(r, gem, &op), Err(e(libc::EINVAL)), "{why}");
    }
    // Overlap with another mapping of the VM.
    port.drm_gem_va(r, gem, &va(true, GEM_VA_AT, 0, 2 * PAGE, RW)).unwrap();
    assert_eq!(port.drm_gem_va(r, gem, &va(true, GEM_VA_AT + PAGE, 0, PAGE, RW)), Err(e(libc::EINVAL)));
    // Unknown handle, a file that is not a render stand-in, a closed fd.
    assert_eq!(port.drm_gem_va(r, 77, &va(true, GEM_VA_AT, 0, PAGE, RW)), Err(e(libc::ENOENT)));
    let devnull = std::fs::File::open("/dev/null").unwrap();
    assert_eq!(port.drm_gem_va(devnull.as_raw_fd(), gem, &va(true, GEM_VA_AT, 0, PAGE, RW)), Err(e(libc::ENOTTY)));
    assert_eq!(port.drm_import_dmabuf(-1, f.dmabuf.as_raw_fd()), Err(e(libc::EBADF)));
    // Not a model dma-buf / closed.
    assert_eq!(port.drm_import_dmabuf(r, devnull.as_raw_fd()), Err(e(libc::EINVAL)));
    assert_eq!(port.drm_import_dmabuf(r, 9999), Err(e(libc::EBADF)));
    assert_eq!(port.drm_export_dmabuf(r, 77), Err(e(libc::ENOENT)));
}

#[test]
fn gem_export_round_trips_and_kfd_cannot_free_a_gem_bo() {
    let f = setup();
    let (port, r): (&dyn Kfd, i32) = (&f.m, f.render.as_raw_fd());
    let (gem, _) = port.drm_import_dmabuf(r, f.dmabuf.as_raw_fd()).unwrap();
    // SAFETY: PRIME export gives the caller a new descriptor.
    let again = unsafe { OwnedFd::from_raw_fd(port.drm_export_dmabuf(r, gem).unwrap()) };
    let mut info = kfd_ioctl_get_dmabuf_info_args {
        size: 0,
        metadata_ptr: 0,
        metadata_size: 0,
        gpu_id: 0,
        flags: 0,
        dmabuf_fd: again.as_raw_fd() as u32,
    };
    // SAFETY: no metadata buffer (NULL, size 0).
    unsafe { ioctl_typed(port, AMDKFD_IOC_GET_DMABUF_INFO, &mut info) }.unwrap();
    assert_eq!((info.size, info.gpu_id), (4 * PAGE, f.gpu));
    // A second render file imports the re-export: its own handle space, same bytes.
    let r2 = f.m.open_render(f.m.gpus()[0].drm_render_minor).unwrap();
    let (gem2, _) = port.drm_import_dmabuf(r2.as_raw_fd(), again.as_raw_fd()).unwrap();
    assert_eq!(gem2, 1);
    port.drm_gem_va(r2.as_raw_fd(), gem2, &va(true, GEM_VA_AT, 3 * PAGE, PAGE, RW)).unwrap();
    assert_eq!(read_u32(&f.m, f.gpu, GEM_VA_AT), Ok(0xa003));
    // The KFD cannot free the BOs behind GEM handles (gpu_id << 32 | idr: the KFD BO is idr 0,
    // the GEM imports take 1 and 2).
    for idr in [1u64, 2] {
        let mut fr = kfd_ioctl_free_memory_of_gpu_args { handle: (u64::from(f.gpu) << 32) | idr };
        assert_eq!(ioctl_plain(port, &mut fr), Err(e(libc::EINVAL)));
    }
    port.drm_gem_close(r2.as_raw_fd(), gem2).unwrap();
    port.drm_gem_close(r, gem).unwrap();
    assert_eq!(f.m.live_bos(), 1);
}
