//! The model's memory ioctls: success paths, the kernel's errors, accounting, real memory behind
//! BOs, GPU page tables, IPC and dmabufs, leaks.

use hsakmt_core::abi::kfd::*;
use hsakmt_core::{Errno, Kfd};
use hsakmt_model::{available_memory, AtomicOp, GpuFault, GpuFaultKind, Model, ModelConfig};
use std::ffi::c_void;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use zerocopy::{FromZeros, IntoBytes};

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const ENOMEM: i32 = libc::ENOMEM;
const ENODEV: i32 = libc::ENODEV;
const EBUSY: i32 = libc::EBUSY;
const EPERM: i32 = libc::EPERM;

const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM as u32;
const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
const USERPTR: u32 = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR as u32;
const DOORBELL: u32 = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL as u32;
const MMIO: u32 = KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP as u32;
const RW: u32 = (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) as u32;
const PUBLIC: u32 = KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC as u32;
const AQL: u32 = KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM as u32;
const MIB: u64 = 1 << 20;

/// A model whose process has acquired a VM on every GPU.
struct Fx {
    m: Model,
    ids: Vec<u32>,
    _renders: Vec<OwnedFd>,
}

fn setup(name: &str) -> Fx {
    setup_with(Model::new(ModelConfig::catalogue(name)).unwrap())
}

fn setup_with(m: Model) -> Fx {
    let mut renders = Vec::new();
    let ids: Vec<u32> = m.gpus().iter().map(|g| g.gpu_id).collect();
    for g in m.gpus().to_vec() {
        let fd = m.open_render(g.drm_render_minor).unwrap();
        let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd.as_raw_fd() as u32, gpu_id: g.gpu_id };
        raw(&m, AMDKFD_IOC_ACQUIRE_VM, &mut a).unwrap();
        renders.push(fd);
    }
    Fx { m, ids, _renders: renders }
}

fn raw<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

fn at(m: &Model, request: u32, addr: usize) -> Result<(), i32> {
    // SAFETY: the address is either a live buffer of the test or invalid (checked by the model).
    unsafe { m.handle_ioctl(u64::from(request), addr as *mut c_void) }
}

fn alloc_args(m: &Model, gpu_id: u32, va: u64, size: u64, flags: u32, mmap_offset: u64) -> Result<kfd_ioctl_alloc_memory_of_gpu_args, i32> {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset, gpu_id, flags };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).map(|()| a)
}

/// (handle, mmap_offset)
fn alloc(m: &Model, gpu_id: u32, va: u64, size: u64, flags: u32) -> Result<(u64, u64), i32> {
    alloc_args(m, gpu_id, va, size, flags, 0).map(|a| (a.handle, a.mmap_offset))
}

fn free(m: &Model, handle: u64) -> Result<(), i32> {
    let mut a = kfd_ioctl_free_memory_of_gpu_args { handle };
    raw(m, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut a)
}

/// MAP (or UNMAP) with an explicit id array pointer; returns (result, n_success).
fn map_ptr(m: &Model, handle: u64, ptr: u64, n: u32, from: u32, map: bool) -> (Result<(), i32>, u32) {
    let mut a = kfd_ioctl_map_memory_to_gpu_args { handle, device_ids_array_ptr: ptr, n_devices: n, n_success: from };
    let req = if map { AMDKFD_IOC_MAP_MEMORY_TO_GPU } else { AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU };
    let r = raw(m, req, &mut a);
    (r, a.n_success)
}

fn map(m: &Model, handle: u64, ids: &[u32]) -> Result<(), i32> {
    map_ptr(m, handle, ids.as_ptr() as u64, ids.len() as u32, 0, true).0
}

fn unmap(m: &Model, handle: u64, ids: &[u32]) -> Result<(), i32> {
    map_ptr(m, handle, ids.as_ptr() as u64, ids.len() as u32, 0, false).0
}

fn available(m: &Model, gpu_id: u32) -> u64 {
    let mut a = kfd_ioctl_get_available_memory_args { available: 0, gpu_id, pad: 0 };
    raw(m, AMDKFD_IOC_AVAILABLE_MEMORY, &mut a).unwrap();
    a.available
}

/// A page-aligned heap buffer.
fn pages(n: usize) -> (Vec<u8>, u64) {
    let v = vec![0u8; (n + 1) * 4096];
    let p = (v.as_ptr() as u64 + 4095) & !4095;
    (v, p)
}

const VA: u64 = 0x7000_0000_0000;

#[test]
fn alloc_success_paths() {
    let f = setup("mi210");
    let (m, g0, g1) = (&f.m, f.ids[0], f.ids[1]);
    let (h0, o0) = alloc(m, g0, VA, 2 * MIB, VRAM | RW | PUBLIC).unwrap();
    let (h1, o1) = alloc(m, g0, VA + 2 * MIB, 4096, GTT | RW).unwrap();
    let (h2, _) = alloc(m, g1, VA, 4096, VRAM | RW).unwrap();
    // handle = gpu_id << 32 | per-GPU idr from 0.
    assert_eq!(h0, u64::from(g0) << 32);
    assert_eq!(h1, (u64::from(g0) << 32) | 1);
    assert_eq!(h2, u64::from(g1) << 32);
    assert_ne!(o0, o1);
    assert_eq!(o0 % 4096, 0);
    assert_eq!(o1 % 4096, 0);
    // Unaligned sizes are rounded up, not refused; VA is not checked at allocation.
    let (h3, _) = alloc(m, g0, 0x1234, 100, GTT | RW).unwrap();
    let (h4, _) = alloc(m, g0, 0, 4096, VRAM | RW).unwrap();
    // Userptr: the registered range is real process memory.
    let (_buf, p) = pages(4);
    let u = alloc_args(m, g0, VA + 64 * MIB, 4 * 4096, USERPTR | RW, p).unwrap();
    assert_eq!(u.handle, (u64::from(g0) << 32) | 4);
    // Doorbell (the process slice: 2 pages on gfx9+) and the MMIO remap page.
    let (hd, od) = alloc(m, g0, VA + 128 * MIB, 8192, DOORBELL | RW).unwrap();
    let (hm, om) = alloc(m, g0, VA + 130 * MIB, 4096, MMIO | RW).unwrap();
    assert_ne!(od, om);
    assert_eq!(m.live_bos(), 8);
    // The idr hands out the lowest free id.
    free(m, h1).unwrap();
    let (h1b, _) = alloc(m, g0, VA + 4 * MIB, 4096, GTT | RW).unwrap();
    assert_eq!(h1b, h1);
    for h in [h0, h1b, h2, h3, h4, u.handle, hd, hm] {
        free(m, h).unwrap();
    }
    assert_eq!(m.live_bos(), 0);
}

#[test]
fn alloc_errors() {
    let f = setup("mi210");
    let (m, g0) = (&f.m, f.ids[0]);
    assert_eq!(alloc(m, g0, VA, 0, VRAM | RW), Err(EINVAL), "size 0");
    assert_eq!(alloc(m, 0xbeef, VA, 4096, VRAM | RW), Err(EINVAL), "unknown gpu");
    assert_eq!(alloc(m, 0, VA, 4096, VRAM | RW), Err(EINVAL), "CPU node");
    assert_eq!(alloc(m, g0, VA, 4096, RW), Err(EINVAL), "no memory type");
    assert_eq!(alloc(m, g0, VA, 4096, USERPTR | RW), Err(EINVAL), "userptr without an address");
    // Userptr ranges are checked against the address space.
    assert_eq!(alloc_args(m, g0, VA, 4096, USERPTR | RW, 0x1000).map(|_| ()), Err(EFAULT));
    assert_eq!(alloc_args(m, g0, VA, 4096, USERPTR | RW, 0xdead_0000_0000).map(|_| ()), Err(EFAULT));
    let (_buf, p) = pages(2);
    assert_eq!(alloc_args(m, g0, VA, 1 << 30, USERPTR | RW, p).map(|_| ()), Err(EFAULT), "runs past the mapping");
    // Read-only memory cannot back a userptr (hmm write fault on a read-only VMA).
    // SAFETY: a fresh anonymous read-only mapping owned by this test.
    let ro = unsafe { libc::mmap(std::ptr::null_mut(), 8192, libc::PROT_READ, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
    assert_ne!(ro, libc::MAP_FAILED);
    assert_eq!(alloc_args(m, g0, VA, 8192, USERPTR | RW, ro as u64).map(|_| ()), Err(EPERM));
    // SAFETY: unmapping the mapping made above.
    unsafe { libc::munmap(ro, 8192) };
    // Doorbell and MMIO sizes are fixed.
    assert_eq!(alloc(m, g0, VA, 4096, DOORBELL | RW), Err(EINVAL));
    assert_eq!(alloc(m, g0, VA, 8192, MMIO | RW), Err(EINVAL));
    // Out of memory.
    assert_eq!(alloc(m, g0, VA, 1 << 50, VRAM | RW), Err(ENOMEM));
    assert_eq!(alloc(m, g0, VA, 1 << 50, GTT | RW), Err(ENOMEM));
    assert_eq!(alloc(m, g0, VA, u64::MAX, GTT | RW), Err(ENOMEM));
    assert_eq!(m.live_bos(), 0, "failures leave nothing behind");
    // No VM acquired on the GPU: ENODEV (kfd_bind_process_to_device).
    let bare = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    assert_eq!(alloc(&bare, g0, VA, 4096, VRAM | RW), Err(ENODEV));
    // Host-visible VRAM on a small-BAR GPU.
    let dir = std::env::temp_dir().join(format!("hsakmt-model-smallbar-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    hsakmt_model::catalogue::export("mi25", &dir).unwrap();
    let bank = dir.join("nodes/1/mem_banks/0/properties");
    let text = std::fs::read_to_string(&bank).unwrap().replace("heap_type 1", "heap_type 2");
    std::fs::write(&bank, text).unwrap();
    let small = setup_with(Model::new(ModelConfig::directory(&dir)).unwrap());
    std::fs::remove_dir_all(&dir).unwrap();
    let sg = small.ids[0];
    assert_eq!(alloc(&small.m, sg, VA, 4096, VRAM | RW | PUBLIC), Err(EINVAL));
    let (h, _) = alloc(&small.m, sg, VA, 4096, VRAM | RW).unwrap();
    free(&small.m, h).unwrap();
}

#[test]
fn free_rules() {
    let f = setup("mi210");
    let (m, g0) = (&f.m, f.ids[0]);
    let (h, _) = alloc(m, g0, VA, 4096, VRAM | RW).unwrap();
    map(m, h, &[g0]).unwrap();
    assert_eq!(free(m, h), Err(EBUSY), "still mapped");
    assert_eq!(m.live_bos(), 1, "the handle is kept");
    unmap(m, h, &[g0]).unwrap();
    free(m, h).unwrap();
    assert_eq!(free(m, h), Err(EINVAL), "double free");
    assert_eq!(free(m, 0xbeef_0000_0000), Err(EINVAL), "unknown gpu");
    assert_eq!(free(m, (u64::from(g0) << 32) | 77), Err(EINVAL), "unknown idr");
    assert_eq!(free(m, 0), Err(EINVAL));
}

#[test]
fn map_and_unmap_rules() {
    let f = setup("mi300x");
    let (m, g) = (&f.m, &f.ids);
    let (h, _) = alloc(m, g[0], VA, 2 * MIB, VRAM | RW).unwrap();
    // Argument checks before anything else.
    assert_eq!(map_ptr(m, h, g.as_ptr() as u64, 0, 0, true), (Err(EINVAL), 0), "no devices");
    assert_eq!(map_ptr(m, h, g.as_ptr() as u64, 2, 3, true), (Err(EINVAL), 3), "n_success > n_devices");
    // A wild device array: EFAULT, never a crash.
    for wild in [0u64, 8, 0xdead_0000, u64::MAX - 3, 0x7fff_ffff_f000_0000] {
        assert_eq!(map_ptr(m, h, wild, 2, 0, true).0, Err(EFAULT), "{wild:#x}");
        assert_eq!(map_ptr(m, h, wild, 2, 0, false).0, Err(EFAULT), "{wild:#x}");
    }
    assert_eq!(map_ptr(m, h, g.as_ptr() as u64, 1 << 30, 0, true).0, Err(ENOMEM), "kmalloc_array too big");
    // A bad id in the list: partial success, resumable from n_success.
    let mut ids = [g[0], 0xbad, g[2]];
    assert_eq!(map_ptr(m, h, ids.as_ptr() as u64, 3, 0, true), (Err(EINVAL), 1));
    ids[1] = g[1];
    assert_eq!(map_ptr(m, h, ids.as_ptr() as u64, 3, 1, true), (Ok(()), 3));
    let mut buf = [0u8; 8];
    for id in &g[..3] {
        m.gpu_read(*id, VA, &mut buf).unwrap();
    }
    assert!(m.gpu_read(g[3], VA, &mut buf).is_err(), "not mapped on that GPU");
    // Mapping again is a no-op success.
    map(m, h, &[g[0], g[1]]).unwrap();
    // Unknown handle (freed or never allocated): ENOMEM (sic); its GPU unknown: EINVAL.
    assert_eq!(map(m, (u64::from(g[0]) << 32) | 9, &[g[0]]), Err(ENOMEM));
    assert_eq!(map(m, 0xbeef_0000_0000, &[g[0]]), Err(EINVAL));
    // Overlap in the same VM; fine on a GPU where the range is free.
    let (h2, _) = alloc(m, g[0], VA + MIB, 2 * MIB, VRAM | RW).unwrap();
    assert_eq!(map(m, h2, &[g[0]]), Err(EINVAL));
    let (h3, _) = alloc(m, g[4], VA, 2 * MIB, VRAM | RW).unwrap();
    map(m, h3, &[g[4]]).unwrap();
    // VA 0, misaligned, or past the VM: refused at map time.
    let (z, _) = alloc(m, g[0], 0, 4096, VRAM | RW).unwrap();
    assert_eq!(map(m, z, &[g[0]]), Err(EINVAL));
    let (mis, _) = alloc(m, g[0], VA + 64 * MIB + 0x800, 4096, VRAM | RW).unwrap();
    assert_eq!(map(m, mis, &[g[0]]), Err(EINVAL));
    let (far, _) = alloc(m, g[0], (1 << 48) - 4096, 8192, VRAM | RW).unwrap();
    assert_eq!(map(m, far, &[g[0]]), Err(EINVAL));
    let (edge, _) = alloc(m, g[0], (1 << 48) - 8192, 8192, VRAM | RW).unwrap();
    map(m, edge, &[g[0]]).unwrap();
    // Unmap: partial with a bad id, resumable; a GPU the BO is not mapped on is EINVAL.
    let ids = [g[2], 0xbad, g[1], g[0]];
    assert_eq!(map_ptr(m, h, ids.as_ptr() as u64, 4, 0, false), (Err(EINVAL), 1));
    assert_eq!(map_ptr(m, h, ids.as_ptr() as u64, 4, 2, false), (Ok(()), 4));
    assert_eq!(unmap(m, h, &[g[0]]), Err(EINVAL), "not mapped any more");
    assert_eq!(unmap(m, h3, &[g[5]]), Err(EINVAL), "never mapped there");
    for x in [h3, edge] {
        let owner = (x >> 32) as u32;
        unmap(m, x, &[owner]).unwrap();
    }
    for x in [h, h2, h3, z, mis, far, edge] {
        free(m, x).unwrap();
    }
}

#[test]
fn available_memory_goes_down_and_up_and_oom() {
    let f = setup("mi25");
    let (m, g0) = (&f.m, f.ids[0]);
    let vram = m.gpus()[0].vram_bytes;
    let a0 = available(m, g0);
    assert_eq!(a0, available_memory(vram, 0, vram));
    // Each VRAM BO counts rounded up to 2 MiB.
    let (small, _) = alloc(m, g0, VA, 4096, VRAM | RW).unwrap();
    assert_eq!(available(m, g0), a0 - 2 * MIB);
    let (big, _) = alloc(m, g0, VA + 2 * MIB, 1 << 30, VRAM | RW).unwrap();
    assert_eq!(available(m, g0), a0 - 2 * MIB - (1 << 30));
    // GTT and userptr do not take VRAM.
    let (gtt, _) = alloc(m, g0, VA + 2 * (1 << 30), 1 << 30, GTT | RW).unwrap();
    assert_eq!(available(m, g0), a0 - 2 * MIB - (1 << 30));
    // AQL queue memory: half is allocated (and mapped twice).
    let (aql, _) = alloc(m, g0, VA + 4 * (1 << 30), 8 * MIB, VRAM | RW | AQL).unwrap();
    assert_eq!(available(m, g0), a0 - 2 * MIB - (1 << 30) - 4 * MIB);
    // Out of VRAM: ENOMEM, and nothing changes.
    let reserve = (vram >> 14).max(8 << 20);
    let left = vram - reserve - 4096 - (1 << 30) - 4 * MIB;
    assert_eq!(alloc(m, g0, VA + 8 * (1 << 30), left + 4096, VRAM | RW), Err(ENOMEM));
    assert_eq!(available(m, g0), a0 - 2 * MIB - (1 << 30) - 4 * MIB);
    let (rest, _) = alloc(m, g0, VA + 8 * (1 << 30), left, VRAM | RW).unwrap();
    assert_eq!(alloc(m, g0, VA + 32 * (1 << 30), 4096, VRAM | RW), Err(ENOMEM), "full");
    assert_eq!(available(m, g0), 0);
    for h in [small, big, gtt, aql, rest] {
        free(m, h).unwrap();
    }
    assert_eq!(available(m, g0), a0, "back up after the frees");
    // Unknown GPU.
    let mut a = kfd_ioctl_get_available_memory_args { available: 0, gpu_id: 77, pad: 0 };
    assert_eq!(raw(m, AMDKFD_IOC_AVAILABLE_MEMORY, &mut a), Err(EINVAL));
}

/// The acceptance test: a pattern written through the CPU mapping of a VRAM BO is read back
/// by GPU VA after MAP, and the GPU faults after UNMAP.
#[test]
fn cpu_pattern_gpu_read_then_fault() {
    let f = setup("mi300x");
    let (m, g0, g1) = (&f.m, f.ids[0], f.ids[1]);
    const SIZE: usize = 3 * 4096;
    let (h, off) = alloc(m, g0, VA, SIZE as u64, VRAM | RW | PUBLIC).unwrap();
    let port: &dyn Kfd = m;
    // SAFETY: no fixed address; the model maps only the BO's range.
    let cpu = unsafe { port.mmap(None, SIZE, (libc::PROT_READ | libc::PROT_WRITE) as u32, true, off) }.unwrap();
    // SAFETY: the mapping is SIZE bytes, readable and writable, and ours alone.
    let view = unsafe { std::slice::from_raw_parts_mut(cpu as *mut u8, SIZE) };
    for (i, b) in view.iter_mut().enumerate() {
        *b = (i * 7 % 251) as u8;
    }
    // Not mapped on any GPU yet: a fault, not a crash.
    let mut out = vec![0u8; SIZE];
    let fault = m.gpu_read(g0, VA, &mut out).unwrap_err();
    assert_eq!(fault, GpuFault { gpu_id: g0, va: VA, write: false, kind: GpuFaultKind::NotMapped });
    map(m, h, &[g0]).unwrap();
    m.gpu_read(g0, VA, &mut out).unwrap();
    assert_eq!(out, *view);
    // Interior and unaligned reads.
    let mut mid = [0u8; 5];
    m.gpu_read(g0, VA + 4093, &mut mid).unwrap();
    assert_eq!(mid, view[4093..4098]);
    // GPU writes show up in the CPU mapping, and atomics work on the same pages.
    m.gpu_write(g0, VA + 100, b"hello").unwrap();
    assert_eq!(&view[100..105], b"hello");
    view[200..204].copy_from_slice(&5u32.to_ne_bytes());
    assert_eq!(m.gpu_atomic_u32(g0, VA + 200, AtomicOp::Add, 3), Ok(5));
    assert_eq!(&view[200..204], &8u32.to_ne_bytes());
    view[208..216].fill(0);
    assert_eq!(m.gpu_cmpswap_u64(g0, VA + 208, 1, 2), Ok(0), "no match: unchanged");
    assert_eq!(m.gpu_cmpswap_u64(g0, VA + 208, 0, 0x1122_3344_5566_7788), Ok(0));
    assert_eq!(m.gpu_atomic_u64(g0, VA + 208, AtomicOp::Xor, 0xff), Ok(0x1122_3344_5566_7788));
    assert_eq!(m.gpu_atomic_u32(g0, VA + 202, AtomicOp::Add, 1).unwrap_err().kind, GpuFaultKind::Misaligned);
    // Past the end of the mapping, and on another GPU: faults.
    let mut tail = [0u8; 16];
    let e = m.gpu_read(g0, VA + SIZE as u64 - 8, &mut tail).unwrap_err();
    assert_eq!((e.va, e.kind), (VA + SIZE as u64, GpuFaultKind::NotMapped));
    assert_eq!(m.gpu_read(g1, VA, &mut tail).unwrap_err().kind, GpuFaultKind::NotMapped);
    assert_eq!(m.gpu_read(0xbeef, VA, &mut tail).unwrap_err().kind, GpuFaultKind::UnknownGpu);
    // After UNMAP: a fault.
    unmap(m, h, &[g0]).unwrap();
    let e = m.gpu_read(g0, VA, &mut out).unwrap_err();
    assert_eq!((e.va, e.write, e.kind), (VA, false, GpuFaultKind::NotMapped));
    assert!(m.gpu_write(g0, VA, b"x").unwrap_err().write);
    // The CPU view stays until munmap; the BO goes with FREE.
    assert_eq!(&view[100..105], b"hello");
    // SAFETY: unmapping the range mapped above; `view` is not used after.
    unsafe { port.munmap(cpu, SIZE) }.unwrap();
    free(m, h).unwrap();
    // A freed BO's offset is no longer mappable.
    // SAFETY: no fixed address; refused by the model.
    assert_eq!(unsafe { port.mmap(None, 4096, 3, true, off) }, Err(Errno(EINVAL)));
}

#[test]
fn page_table_permissions_aql_and_userptr() {
    let f = setup("rx7900xtx");
    let (m, g) = (&f.m, f.ids[0]);
    // Read-only BO: writes fault, reads work.
    let (ro, _) = alloc(m, g, VA, 4096, GTT).unwrap();
    map(m, ro, &[g]).unwrap();
    let mut b = [1u8; 4];
    m.gpu_read(g, VA, &mut b).unwrap();
    assert_eq!(b, [0; 4], "new BOs read as zero");
    assert_eq!(m.gpu_write(g, VA, &b).unwrap_err().kind, GpuFaultKind::ReadOnly);
    assert_eq!(m.gpu_atomic_u32(g, VA, AtomicOp::Swap, 1).unwrap_err().kind, GpuFaultKind::ReadOnly);
    // AQL queue memory is mapped twice back to back: both halves alias.
    let (aql, _) = alloc(m, g, VA + MIB, 16384, GTT | RW | AQL).unwrap();
    map(m, aql, &[g]).unwrap();
    m.gpu_write(g, VA + MIB + 8, b"ring").unwrap();
    let mut r = [0u8; 4];
    m.gpu_read(g, VA + MIB + 8192 + 8, &mut r).unwrap();
    assert_eq!(&r, b"ring");
    assert!(m.gpu_read(g, VA + MIB + 16384, &mut r).is_err());
    // A read across two adjacent mappings.
    let (a1, _) = alloc(m, g, VA + 2 * MIB, 4096, GTT | RW).unwrap();
    let (a2, _) = alloc(m, g, VA + 2 * MIB + 4096, 4096, GTT | RW).unwrap();
    map(m, a1, &[g]).unwrap();
    map(m, a2, &[g]).unwrap();
    m.gpu_write(g, VA + 2 * MIB + 4094, b"span").unwrap();
    let mut s = [0u8; 4];
    m.gpu_read(g, VA + 2 * MIB + 4094, &mut s).unwrap();
    assert_eq!(&s, b"span");
    // Userptr: GPU accesses reach process memory.
    let (mut buf, p) = pages(2);
    let base = p - buf.as_ptr() as u64;
    let u = alloc_args(m, g, VA + 4 * MIB, 8192, USERPTR | RW, p).unwrap();
    map(m, u.handle, &[g]).unwrap();
    m.gpu_write(g, VA + 4 * MIB + 10, b"user").unwrap();
    assert_eq!(&buf[base as usize + 10..base as usize + 14], b"user");
    buf[base as usize + 4096] = 42;
    let mut one = [0u8; 1];
    m.gpu_read(g, VA + 4 * MIB + 4096, &mut one).unwrap();
    assert_eq!(one[0], 42);
    assert_eq!(m.gpu_atomic_u64(g, VA + 4 * MIB + 16, AtomicOp::Add, 2), Ok(0));
    assert_eq!(m.gpu_atomic_u64(g, VA + 4 * MIB + 16, AtomicOp::UMax, 1), Ok(2));
    for h in [ro, aql, a1, a2, u.handle] {
        unmap(m, h, &[g]).unwrap();
        free(m, h).unwrap();
    }
}

#[test]
fn userptr_of_unmapped_memory_faults_on_gpu_access() {
    let f = setup("mi25");
    let (m, g) = (&f.m, f.ids[0]);
    // SAFETY: a fresh anonymous mapping owned by this test.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), 8192, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    assert_ne!(p, libc::MAP_FAILED);
    let u = alloc_args(m, g, VA, 8192, USERPTR | RW, p as u64).unwrap();
    map(m, u.handle, &[g]).unwrap();
    m.gpu_write(g, VA, b"ok").unwrap();
    // SAFETY: unmapping our own mapping; only the model's checked copies touch it afterwards.
    unsafe { libc::munmap(p, 8192) };
    let mut b = [0u8; 2];
    assert_eq!(m.gpu_read(g, VA, &mut b).unwrap_err().kind, GpuFaultKind::HostFault);
    assert_eq!(m.gpu_write(g, VA, &b).unwrap_err().kind, GpuFaultKind::HostFault);
    unmap(m, u.handle, &[g]).unwrap();
    free(m, u.handle).unwrap();
}

fn ipc_export(m: &Model, gpu_id: u32, handle: u64) -> Result<[u32; 4], i32> {
    let mut a = kfd_ioctl_ipc_export_handle_args { handle, share_handle: [0; 4], gpu_id, flags: 0x55 };
    raw(m, AMDKFD_IOC_IPC_EXPORT_HANDLE, &mut a).map(|()| a.share_handle)
}

/// (handle, mmap_offset, flags)
fn ipc_import(m: &Model, gpu_id: u32, va: u64, share: [u32; 4]) -> Result<(u64, u64, u32), i32> {
    let mut a = kfd_ioctl_ipc_import_handle_args { handle: 0, va_addr: va, mmap_offset: 0, share_handle: share, gpu_id, flags: 0 };
    raw(m, AMDKFD_IOC_IPC_IMPORT_HANDLE, &mut a).map(|()| (a.handle, a.mmap_offset, a.flags))
}

#[test]
fn ipc_in_one_process() {
    let f = setup("mi300x");
    let (m, g0, g1) = (&f.m, f.ids[0], f.ids[1]);
    let base = m.backing_bytes();
    let (h, off) = alloc(m, g0, VA, 8192, VRAM | RW).unwrap();
    map(m, h, &[g0]).unwrap();
    m.gpu_write(g0, VA, b"shared bytes").unwrap();
    let s = ipc_export(m, g0, h).unwrap();
    assert_ne!(s, [0; 4]);
    assert_eq!(ipc_export(m, g0, h), Ok(s), "re-export gives the same handle");
    assert_ne!(ipc_export(m, g0, alloc(m, g0, VA + MIB, 4096, GTT | RW).unwrap().0), Ok(s));
    // Forged handles: EINVAL.
    assert_eq!(ipc_import(m, g1, VA, [0; 4]), Err(EINVAL));
    assert_eq!(ipc_import(m, g1, VA, [s[0], s[1], s[2], s[3] ^ 1]), Err(EINVAL));
    assert_eq!(ipc_import(m, g1, VA, [1, 2, 3, 4]), Err(EINVAL));
    // Unknown GPU, unknown BO.
    assert_eq!(ipc_import(m, 0xbeef, VA, s), Err(EINVAL));
    assert_eq!(ipc_export(m, 0xbeef, h), Err(EINVAL));
    assert_eq!(ipc_export(m, g0, h | 0x33), Err(EINVAL));
    // Import on another GPU: same bytes, same memfd offset, the exporter's flags.
    let (ih, ioff, flags) = ipc_import(m, g1, VA, s).unwrap();
    assert_eq!((ih >> 32) as u32, g1);
    assert_eq!((ioff, flags), (off, 0x55));
    map(m, ih, &[g1]).unwrap();
    let mut b = [0u8; 12];
    m.gpu_read(g1, VA, &mut b).unwrap();
    assert_eq!(&b, b"shared bytes");
    // The exporter frees its BO: the importer still sees the memory.
    unmap(m, h, &[g0]).unwrap();
    free(m, h).unwrap();
    m.gpu_read(g1, VA, &mut b).unwrap();
    assert_eq!(&b, b"shared bytes");
    assert_eq!(ipc_import(m, g1, VA + MIB, s).map(|_| ()), Ok(()), "still importable while held");
    // Userptr BOs cannot be exported.
    let (_buf, p) = pages(1);
    let u = alloc_args(m, g0, VA + 8 * MIB, 4096, USERPTR | RW, p).unwrap();
    assert_eq!(ipc_export(m, g0, u.handle), Err(EPERM));
    // Everything freed: the handle is gone and the backing store is back to its baseline.
    m.release_process();
    assert_eq!(m.live_bos(), 0);
    assert_eq!(m.backing_bytes(), base);
}

#[test]
fn ipc_handle_dies_with_its_last_holder() {
    let f = setup("mi210");
    let (m, g0) = (&f.m, f.ids[0]);
    let base = m.backing_bytes();
    let (h, _) = alloc(m, g0, VA, 4096, GTT | RW).unwrap();
    map(m, h, &[g0]).unwrap();
    m.gpu_write(g0, VA, &[9; 4096]).unwrap();
    assert!(m.backing_bytes() > base);
    let s = ipc_export(m, g0, h).unwrap();
    let (ih, _, _) = ipc_import(m, g0, VA + MIB, s).unwrap();
    unmap(m, h, &[g0]).unwrap();
    free(m, h).unwrap();
    assert!(m.backing_bytes() > base, "the import holds the pages");
    free(m, ih).unwrap();
    assert_eq!(m.backing_bytes(), base);
    assert_eq!(ipc_import(m, g0, VA, s), Err(EINVAL), "gone with its last holder");
    // The offsets were given back: the next BO reuses them.
    let (h2, _) = alloc(m, g0, VA, 4096, GTT | RW).unwrap();
    free(m, h2).unwrap();
}

#[test]
fn dmabuf_export_info_import() {
    let f = setup("mi300x");
    let (m, g0, g2) = (&f.m, f.ids[0], f.ids[2]);
    let (h, _) = alloc(m, g0, VA, 3 * 4096, VRAM | RW | PUBLIC).unwrap();
    map(m, h, &[g0]).unwrap();
    m.gpu_write(g0, VA + 5, b"dmabuf").unwrap();
    let mut e = kfd_ioctl_export_dmabuf_args { handle: h, flags: libc::O_CLOEXEC as u32, dmabuf_fd: 0 };
    raw(m, AMDKFD_IOC_EXPORT_DMABUF, &mut e).unwrap();
    // SAFETY: EXPORT_DMABUF hands the new descriptor to the caller.
    let dmabuf = unsafe { OwnedFd::from_raw_fd(e.dmabuf_fd as i32) };
    // Info: size, flags, owning GPU, no metadata.
    let mut meta = [0u8; 64];
    let mut i = kfd_ioctl_get_dmabuf_info_args {
        size: 0,
        metadata_ptr: meta.as_mut_ptr() as u64,
        metadata_size: 64,
        gpu_id: 0,
        flags: 0,
        dmabuf_fd: dmabuf.as_raw_fd() as u32,
    };
    raw(m, AMDKFD_IOC_GET_DMABUF_INFO, &mut i).unwrap();
    assert_eq!((i.size, i.gpu_id, i.flags, i.metadata_size), (3 * 4096, g0, VRAM | PUBLIC, 0));
    // Import on another GPU: the same bytes.
    let mut im = kfd_ioctl_import_dmabuf_args { va_addr: VA, handle: 0, gpu_id: g2, dmabuf_fd: dmabuf.as_raw_fd() as u32 };
    raw(m, AMDKFD_IOC_IMPORT_DMABUF, &mut im).unwrap();
    assert_eq!((im.handle >> 32) as u32, g2);
    map(m, im.handle, &[g2]).unwrap();
    let mut b = [0u8; 6];
    m.gpu_read(g2, VA + 5, &mut b).unwrap();
    assert_eq!(&b, b"dmabuf");
    // Bad descriptors: closed → EBADF; not a dmabuf → EINVAL.
    let devnull = std::fs::File::open("/dev/null").unwrap();
    for (fd, want) in [(-1i32, libc::EBADF), (9999, libc::EBADF), (devnull.as_raw_fd(), EINVAL)] {
        i.dmabuf_fd = fd as u32;
        assert_eq!(raw(m, AMDKFD_IOC_GET_DMABUF_INFO, &mut i), Err(want), "{fd}");
        im.dmabuf_fd = fd as u32;
        assert_eq!(raw(m, AMDKFD_IOC_IMPORT_DMABUF, &mut im), Err(want), "{fd}");
    }
    // A dmabuf of another model instance is foreign.
    let other = setup("mi300x");
    im.dmabuf_fd = dmabuf.as_raw_fd() as u32;
    im.gpu_id = other.ids[0];
    assert_eq!(raw(&other.m, AMDKFD_IOC_IMPORT_DMABUF, &mut im), Err(EINVAL));
    // Export errors: unknown handle, unknown GPU, userptr.
    e.handle = h | 0x40;
    assert_eq!(raw(m, AMDKFD_IOC_EXPORT_DMABUF, &mut e), Err(EINVAL));
    e.handle = 0xbeef_0000_0000;
    assert_eq!(raw(m, AMDKFD_IOC_EXPORT_DMABUF, &mut e), Err(EINVAL));
    let (_buf, p) = pages(1);
    let u = alloc_args(m, g0, VA + 8 * MIB, 4096, USERPTR | RW, p).unwrap();
    e.handle = u.handle;
    assert_eq!(raw(m, AMDKFD_IOC_EXPORT_DMABUF, &mut e), Err(EPERM));
    // Once every BO is gone, the dmabuf names nothing.
    m.release_process();
    i.dmabuf_fd = dmabuf.as_raw_fd() as u32;
    assert_eq!(raw(m, AMDKFD_IOC_GET_DMABUF_INFO, &mut i), Err(EINVAL));
}

/// A dma-buf keeps its memory until its last descriptor is closed: the exporter's BO can be
/// freed and the dma-buf still answers GET_DMABUF_INFO and imports (the model answered EINVAL
/// once no BO held the export); a dup keeps it as well; closing the last descriptor gives
/// every byte back.
#[test]
fn a_dmabuf_holds_its_memory_until_its_last_descriptor_closes() {
    let f = setup("mi210");
    let (m, g0, g1) = (&f.m, f.ids[0], f.ids[1]);
    let base = m.backing_bytes();
    let (h, _) = alloc(m, g0, VA, 2 * 4096, VRAM | RW).unwrap();
    map(m, h, &[g0]).unwrap();
    m.gpu_write(g0, VA + 7, b"kept").unwrap();
    let mut e = kfd_ioctl_export_dmabuf_args { handle: h, flags: libc::O_CLOEXEC as u32, dmabuf_fd: 0 };
    raw(m, AMDKFD_IOC_EXPORT_DMABUF, &mut e).unwrap();
    // SAFETY: EXPORT_DMABUF hands the new descriptor to the caller.
    let dmabuf = unsafe { OwnedFd::from_raw_fd(e.dmabuf_fd as i32) };
    let dup = dmabuf.try_clone().unwrap();
    unmap(m, h, &[g0]).unwrap();
    free(m, h).unwrap();
    drop(dmabuf);
    let mut i = kfd_ioctl_get_dmabuf_info_args {
        size: 0,
        metadata_ptr: 0,
        metadata_size: 0,
        gpu_id: 0,
        flags: 0,
        dmabuf_fd: dup.as_raw_fd() as u32,
    };
    raw(m, AMDKFD_IOC_GET_DMABUF_INFO, &mut i).unwrap();
    assert_eq!((i.size, i.gpu_id, i.flags), (2 * 4096, g0, VRAM));
    let mut im = kfd_ioctl_import_dmabuf_args { va_addr: VA + MIB, handle: 0, gpu_id: g1, dmabuf_fd: dup.as_raw_fd() as u32 };
    raw(m, AMDKFD_IOC_IMPORT_DMABUF, &mut im).unwrap();
    map(m, im.handle, &[g1]).unwrap();
    let mut b = [0u8; 4];
    m.gpu_read(g1, VA + MIB + 7, &mut b).unwrap();
    assert_eq!(&b, b"kept");
    unmap(m, im.handle, &[g1]).unwrap();
    free(m, im.handle).unwrap();
    assert!(m.backing_bytes() > base, "the open dup holds the memory");
    drop(dup);
    assert_eq!(m.backing_bytes(), base, "closed: every byte back");
}

#[test]
fn memory_policy_scratch_and_tile_config() {
    let f = setup("mi210");
    let (m, g0) = (&f.m, f.ids[0]);
    let pol = |gpu_id: u32, d: u32, a: u32, base: u64, size: u64| {
        let mut p = kfd_ioctl_set_memory_policy_args {
            alternate_aperture_base: base,
            alternate_aperture_size: size,
            gpu_id,
            default_policy: d,
            alternate_policy: a,
            misc_process_flag: 0,
        };
        raw(m, AMDKFD_IOC_SET_MEMORY_POLICY, &mut p)
    };
    pol(g0, 1, 0, 0x1234, 0x99).unwrap(); // GFX9+ ignores the alternate aperture
    assert_eq!(pol(g0, 2, 0, 0, 0), Err(EINVAL));
    assert_eq!(pol(g0, 0, 7, 0, 0), Err(EINVAL));
    assert_eq!(pol(0xbeef, 0, 0, 0, 0), Err(EINVAL));
    let bare = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    let mut p = kfd_ioctl_set_memory_policy_args::new_zeroed();
    p.gpu_id = g0;
    assert_eq!(raw(&bare, AMDKFD_IOC_SET_MEMORY_POLICY, &mut p), Err(libc::ESRCH), "not bound");
    // Scratch backing VA.
    let mut s = kfd_ioctl_set_scratch_backing_va_args { va_addr: 0x7f00_0000, gpu_id: g0, pad: 0 };
    raw(m, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &mut s).unwrap();
    s.gpu_id = 3;
    assert_eq!(raw(m, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &mut s), Err(EINVAL));
    s.gpu_id = g0;
    assert_eq!(raw(&bare, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &mut s), Err(ENODEV));
    // Tile config: counts clamped to 32 / 16, arrays zeroed, gfx9 values.
    let mut tiles = [0xffu32; 40];
    let mut macros = [0xffu32; 20];
    let mut t = kfd_ioctl_get_tile_config_args {
        tile_config_ptr: tiles.as_mut_ptr() as u64,
        macro_tile_config_ptr: macros.as_mut_ptr() as u64,
        num_tile_configs: 40,
        num_macro_tile_configs: 20,
        gpu_id: g0,
        gb_addr_config: 0,
        num_banks: 9,
        num_ranks: 9,
    };
    raw(m, AMDKFD_IOC_GET_TILE_CONFIG, &mut t).unwrap();
    assert_eq!((t.num_tile_configs, t.num_macro_tile_configs, t.num_banks, t.num_ranks), (32, 16, 0, 0));
    assert_eq!(t.gb_addr_config, 0x2a11_4042);
    assert!(tiles[..32].iter().all(|x| *x == 0) && tiles[32] == 0xff);
    assert!(macros[..16].iter().all(|x| *x == 0) && macros[16] == 0xff);
    // A bad array pointer: EFAULT, and the count comes back 0.
    t.tile_config_ptr = 8;
    t.num_tile_configs = 4;
    assert_eq!(raw(m, AMDKFD_IOC_GET_TILE_CONFIG, &mut t), Err(EFAULT));
    assert_eq!(t.num_tile_configs, 0);
    // ...unless nothing is copied.
    t.num_tile_configs = 0;
    raw(m, AMDKFD_IOC_GET_TILE_CONFIG, &mut t).unwrap();
    t.gpu_id = 1;
    assert_eq!(raw(m, AMDKFD_IOC_GET_TILE_CONFIG, &mut t), Err(EINVAL));
    // gfx900 (MI25, Vega10): its golden GB_ADDR_CONFIG.
    let mi25 = setup("mi25");
    t.gpu_id = mi25.ids[0];
    t.tile_config_ptr = 0;
    t.num_macro_tile_configs = 0;
    raw(&mi25.m, AMDKFD_IOC_GET_TILE_CONFIG, &mut t).unwrap();
    assert_eq!(t.gb_addr_config, 0x2a11_4042);
}

#[test]
fn wild_argument_pointers_fault() {
    let f = setup("mi210");
    for req in [
        AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
        AMDKFD_IOC_FREE_MEMORY_OF_GPU,
        AMDKFD_IOC_MAP_MEMORY_TO_GPU,
        AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
        AMDKFD_IOC_SET_MEMORY_POLICY,
        AMDKFD_IOC_SET_SCRATCH_BACKING_VA,
        AMDKFD_IOC_GET_TILE_CONFIG,
        AMDKFD_IOC_GET_DMABUF_INFO,
        AMDKFD_IOC_IMPORT_DMABUF,
        AMDKFD_IOC_EXPORT_DMABUF,
        AMDKFD_IOC_IPC_IMPORT_HANDLE,
        AMDKFD_IOC_IPC_EXPORT_HANDLE,
    ] {
        for addr in [0usize, 8, 0xdead_0000, usize::MAX - 3] {
            assert_eq!(at(&f.m, req, addr), Err(EFAULT), "{req:#x} at {addr:#x}");
        }
    }
    // Arguments that can be read but not written back: the copy-out fault wins over the
    // handler's answer.
    static RO: [u8; 64] = [0; 64];
    assert_eq!(at(&f.m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, RO.as_ptr() as usize), Err(EFAULT));
    assert_eq!(at(&f.m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, RO.as_ptr() as usize), Err(EFAULT));
    assert_eq!(at(&f.m, AMDKFD_IOC_FREE_MEMORY_OF_GPU, RO.as_ptr() as usize), Err(EINVAL), "_IOW: nothing copied back");
}

#[test]
fn the_port_takes_memory_ioctls_and_maps_bos() {
    let f = setup("mi25");
    let port: &dyn Kfd = &f.m;
    let g = f.ids[0];
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: VA, size: 8192, handle: 0, mmap_offset: 0, gpu_id: g, flags: GTT | RW };
    // SAFETY: a GTT BO at a GPU VA of the model's: no process memory is handed over.
    unsafe { hsakmt_core::port::ioctl_typed(port, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a) }.unwrap();
    // A range larger than the BO, or straddling its end, is refused.
    // SAFETY: no fixed address; refused before mapping.
    assert_eq!(unsafe { port.mmap(None, 3 * 4096, 3, true, a.mmap_offset) }, Err(Errno(EINVAL)));
    // SAFETY: as above.
    assert_eq!(unsafe { port.mmap(None, 8192, 3, true, a.mmap_offset + 4096) }, Err(Errno(EINVAL)));
    // SAFETY: the second page of the BO, no fixed address.
    let p = unsafe { port.mmap(None, 4096, 3, true, a.mmap_offset + 4096) }.unwrap();
    // SAFETY: the mapping is one writable page.
    unsafe { *(p as *mut u32) = 0xfeed };
    let ids = [g];
    let mut mm =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    // SAFETY: the device list is `ids`, live for the call.
    unsafe { hsakmt_core::port::ioctl_typed(port, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mm) }.unwrap();
    assert_eq!(mm.n_success, 1);
    let mut w = [0u8; 4];
    f.m.gpu_read(g, VA + 4096, &mut w).unwrap();
    assert_eq!(u32::from_ne_bytes(w), 0xfeed);
    // SAFETY: unmapping the page mapped above.
    unsafe { port.munmap(p, 4096) }.unwrap();
    // The plugin-style memfd sees the same bytes at the same offset.
    let fd = f.m.create_memfd().unwrap();
    let mut r = [0u8; 4];
    rustix::io::pread(&fd, &mut r, a.mmap_offset + 4096).unwrap();
    assert_eq!(u32::from_ne_bytes(r), 0xfeed);
}

#[test]
fn ten_thousand_allocations_leave_no_backing() {
    let f = setup("mi300x");
    let (m, g0) = (&f.m, f.ids[0]);
    let base = m.backing_bytes();
    let a0 = available(m, g0);
    for i in 0..10_000u64 {
        let flags = if i % 2 == 0 { VRAM | RW } else { GTT | RW };
        let size = 4096 * (1 + i % 4);
        let (h, _) = alloc(m, g0, VA + i * MIB, size, flags).unwrap();
        if i % 3 == 0 {
            map(m, h, &[g0]).unwrap();
            m.gpu_write(g0, VA + i * MIB, &[0xa5; 64]).unwrap();
            unmap(m, h, &[g0]).unwrap();
        }
        free(m, h).unwrap();
    }
    assert_eq!(m.backing_bytes(), base);
    assert_eq!(available(m, g0), a0);
    // 10k live BOs, written, then the process ends without freeing them.
    for i in 0..10_000u64 {
        let (h, _) = alloc(m, g0, VA + i * MIB, 4096, GTT | RW).unwrap();
        if i % 10 == 0 {
            map(m, h, &[g0]).unwrap();
            m.gpu_write(g0, VA + i * MIB, &[1; 16]).unwrap();
        }
    }
    assert_eq!(m.live_bos(), 10_000);
    assert!(m.backing_bytes() > base);
    m.release_process();
    assert_eq!(m.live_bos(), 0);
    assert_eq!(m.backing_bytes(), base);
    assert_eq!(available(m, g0), a0);
}

#[test]
fn concurrent_mixed_operations_keep_invariants() {
    let f = setup("mi210");
    let m = &f.m;
    let ids = f.ids.clone();
    let base = m.backing_bytes();
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let ids = ids.clone();
            s.spawn(move || {
                let mut live: Vec<(u64, u64, bool)> = Vec::new();
                let mut x = 0x9e37_79b9u64.wrapping_mul(t + 1);
                for i in 0..5_000u64 {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let g = ids[(x % ids.len() as u64) as usize];
                    match x % 5 {
                        0 | 1 => {
                            // Distinct VA windows per thread: no cross-thread overlaps.
                            let va = VA + ((t << 36) | (i << 20));
                            let (h, _) = alloc(m, g, va, 4096 * (1 + x % 3), GTT | RW).unwrap();
                            live.push((h, va, false));
                        }
                        2 if !live.is_empty() => {
                            let k = (x as usize / 7) % live.len();
                            let (h, va, mapped) = live[k];
                            let owner = (h >> 32) as u32;
                            if !mapped {
                                map(m, h, &[owner]).unwrap();
                                m.gpu_write(owner, va, &i.to_ne_bytes()).unwrap();
                                live[k].2 = true;
                            } else {
                                let mut b = [0u8; 8];
                                m.gpu_read(owner, va, &mut b).unwrap();
                            }
                        }
                        3 if !live.is_empty() => {
                            let k = (x as usize / 11) % live.len();
                            let (h, _, mapped) = live.swap_remove(k);
                            if mapped {
                                assert_eq!(free(m, h), Err(EBUSY));
                                unmap(m, h, &[(h >> 32) as u32]).unwrap();
                            }
                            free(m, h).unwrap();
                        }
                        _ => {
                            let _ = available(m, g);
                        }
                    }
                }
                for (h, _, mapped) in live {
                    if mapped {
                        unmap(m, h, &[(h >> 32) as u32]).unwrap();
                    }
                    free(m, h).unwrap();
                }
            });
        }
    });
    assert_eq!(m.live_bos(), 0);
    assert_eq!(m.backing_bytes(), base);
}
