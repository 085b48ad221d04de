//! Fuzz target for the model's memory ioctls: sequences of ALLOC / FREE / MAP / UNMAP /
//! AVAILABLE_MEMORY / SET_MEMORY_POLICY / SET_SCRATCH_BACKING_VA / GET_TILE_CONFIG / IPC export
//! and import / dmabuf export, info and import, raw ioctls with fuzzed argument bytes, wild
//! argument and array pointers, CPU maps through the port and GPU-VA accesses, on one model.
//! Nothing may crash or panic; after each input every BO is unmapped and freed and the model
//! must agree (no live BOs, backing store back to its baseline).
//!
//! Pointers the model *writes* through are either the target's own buffers or addresses that
//! cannot be mapped (NULL page, non-canonical, read-only data), so a fuzzed value never makes
//! the model scribble on the fuzzer's own memory; pointers it only reads may be anything.

use crate::common::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_core::Kfd;
use hsakmt_model::{AtomicOp, Model, ModelConfig};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

struct World {
    m: Model,
    ids: Vec<u32>,
    _renders: Vec<OwnedFd>,
    /// Process memory userptrs may register (page-aligned inside).
    user: Vec<u8>,
    baseline: u64,
}

fn world() -> &'static Mutex<World> {
    static W: OnceLock<Mutex<World>> = OnceLock::new();
    W.get_or_init(|| {
        let m = Model::new(ModelConfig::catalogue("mi210")).expect("model");
        let ids: Vec<u32> = m.gpus().iter().map(|g| g.gpu_id).collect();
        // VMs on the first six GPUs only: the last two answer ENODEV.
        let renders = acquire_vms(&m, 6);
        let baseline = m.backing_bytes();
        Mutex::new(World { m, ids, _renders: renders, user: vec![0u8; 65 * 4096], baseline })
    })
}

const MEM_IOCTLS: [u32; 12] = [
    AMDKFD_IOC_ALLOC_MEMORY_OF_GPU,
    AMDKFD_IOC_FREE_MEMORY_OF_GPU,
    AMDKFD_IOC_MAP_MEMORY_TO_GPU,
    AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU,
    AMDKFD_IOC_AVAILABLE_MEMORY,
    AMDKFD_IOC_SET_MEMORY_POLICY,
    AMDKFD_IOC_SET_SCRATCH_BACKING_VA,
    AMDKFD_IOC_GET_TILE_CONFIG,
    AMDKFD_IOC_GET_DMABUF_INFO,
    AMDKFD_IOC_IMPORT_DMABUF,
    AMDKFD_IOC_IPC_IMPORT_HANDLE,
    AMDKFD_IOC_IPC_EXPORT_HANDLE,
];

/// The target's body: one fuzz input.
pub fn run(data: &[u8]) {
    let w = world().lock().unwrap_or_else(|e| e.into_inner());
    let World { m, ids, user, baseline, .. } = &*w;
    let (m, baseline) = (m, *baseline);
    let user_base = (user.as_ptr() as u64 + 4095) & !4095;
    let mut b = Bytes(data);
    let mut live: Vec<u64> = Vec::new();
    let mut shares: Vec<[u32; 4]> = Vec::new();
    let mut dmabufs: Vec<OwnedFd> = Vec::new();
    let gpu = |b: &mut Bytes| -> u32 {
        let s = b.u8();
        match s % 8 {
            0 => b.u32(),
            1 => 0,
            _ => ids[s as usize % ids.len()],
        }
    };
    let handle = |b: &mut Bytes, live: &[u64]| -> u64 {
        let s = b.u8();
        if !s.is_multiple_of(4) && !live.is_empty() {
            live[s as usize % live.len()]
        } else {
            b.u64()
        }
    };
    let mut steps = 0;
    while !b.is_empty() && steps < 256 {
        steps += 1;
        match b.u8() % 14 {
            0 => {
                let gpu_id = gpu(&mut b);
                let va = match b.u8() % 4 {
                    0 => 0,
                    1 => b.u64(),
                    _ => (u64::from(b.u32()) << 12) & 0x0000_ffff_ffff_f000,
                };
                let size = match b.u8() % 4 {
                    0 => b.u64(),
                    1 => u64::from(b.u8()) * 4096,
                    _ => u64::from(b.u32() & 0x3f_ffff),
                };
                let flags = match b.u8() % 3 {
                    0 => b.u32(),
                    _ => [1u32, 2, 4, 8, 16][b.u8() as usize % 5] | (b.u32() & 0xff80_0000),
                };
                let mmap_offset = match b.u8() % 3 {
                    0 => user_base + u64::from(b.u8() % 64) * 4096,
                    1 => bad_ptr(b.u8(), b.u64()),
                    _ => b.u64(),
                };
                // A userptr must point at memory the GPU may write: ours, or unmappable.
                let mmap_offset = if flags & 4 != 0 && flags & 3 == 0 && !(user_base..user_base + 64 * 4096).contains(&mmap_offset) {
                    bad_ptr(b.u8(), mmap_offset)
                } else {
                    mmap_offset
                };
                let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset, gpu_id, flags };
                if ioctl(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).is_ok() {
                    live.push(a.handle);
                }
            }
            1 => {
                let h = handle(&mut b, &live);
                if ioctl(m, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut kfd_ioctl_free_memory_of_gpu_args { handle: h }).is_ok() {
                    live.retain(|x| *x != h);
                }
            }
            2 | 3 => {
                let h = handle(&mut b, &live);
                let n = (b.u8() % 5) as usize;
                let arr: Vec<u32> = (0..n).map(|_| gpu(&mut b)).collect();
                let (ptr, n_devices) = match b.u8() % 4 {
                    0 => (b.u64(), u32::from(b.u8())), // only read: anything goes
                    1 => (arr.as_ptr() as u64, b.u32()),
                    _ => (arr.as_ptr() as u64, n as u32),
                };
                let mut a =
                    kfd_ioctl_map_memory_to_gpu_args { handle: h, device_ids_array_ptr: ptr, n_devices, n_success: u32::from(b.u8() % 3) };
                let req = if steps % 2 == 0 { AMDKFD_IOC_MAP_MEMORY_TO_GPU } else { AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU };
                let _ = ioctl(m, req, &mut a);
                assert!(a.n_success <= a.n_devices.max(2), "n_success beyond the array");
            }
            4 => {
                let mut a = kfd_ioctl_get_available_memory_args { available: 0, gpu_id: gpu(&mut b), pad: 0 };
                let _ = ioctl(m, AMDKFD_IOC_AVAILABLE_MEMORY, &mut a);
            }
            5 => {
                let mut a = kfd_ioctl_set_memory_policy_args {
                    alternate_aperture_base: b.u64(),
                    alternate_aperture_size: b.u64(),
                    gpu_id: gpu(&mut b),
                    default_policy: u32::from(b.u8() % 3),
                    alternate_policy: u32::from(b.u8() % 3),
                    misc_process_flag: b.u32(),
                };
                let _ = ioctl(m, AMDKFD_IOC_SET_MEMORY_POLICY, &mut a);
                let mut s = kfd_ioctl_set_scratch_backing_va_args { va_addr: b.u64(), gpu_id: gpu(&mut b), pad: 0 };
                let _ = ioctl(m, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &mut s);
            }
            6 => {
                let mut tiles = [0u32; 32];
                let mut macros = [0u32; 16];
                let own = b.u8() % 2 == 0;
                let mut a = kfd_ioctl_get_tile_config_args {
                    tile_config_ptr: if own { tiles.as_mut_ptr() as u64 } else { bad_ptr(b.u8(), b.u64()) },
                    macro_tile_config_ptr: if own { macros.as_mut_ptr() as u64 } else { bad_ptr(b.u8(), b.u64()) },
                    // The kernel clamps counts to its arrays (32, 16): ours are that big.
                    num_tile_configs: b.u32(),
                    num_macro_tile_configs: b.u32(),
                    gpu_id: gpu(&mut b),
                    gb_addr_config: 0,
                    num_banks: 0,
                    num_ranks: 0,
                };
                let _ = ioctl(m, AMDKFD_IOC_GET_TILE_CONFIG, &mut a);
            }
            7 => {
                let mut a = kfd_ioctl_ipc_export_handle_args {
                    handle: handle(&mut b, &live),
                    share_handle: [0; 4],
                    gpu_id: gpu(&mut b),
                    flags: b.u32(),
                };
                if ioctl(m, AMDKFD_IOC_IPC_EXPORT_HANDLE, &mut a).is_ok() {
                    shares.push(a.share_handle);
                }
            }
            8 => {
                let share = match (b.u8() % 3, shares.is_empty()) {
                    (0, _) | (_, true) => [b.u32(), b.u32(), b.u32(), b.u32()],
                    (1, false) => {
                        let mut s = shares[b.u8() as usize % shares.len()];
                        s[(b.u8() % 4) as usize] ^= 1 << (b.u8() % 32);
                        s
                    }
                    _ => shares[b.u8() as usize % shares.len()],
                };
                let mut a = kfd_ioctl_ipc_import_handle_args {
                    handle: 0,
                    va_addr: b.u64() & !0xfff,
                    mmap_offset: 0,
                    share_handle: share,
                    gpu_id: gpu(&mut b),
                    flags: 0,
                };
                if ioctl(m, AMDKFD_IOC_IPC_IMPORT_HANDLE, &mut a).is_ok() {
                    live.push(a.handle);
                }
            }
            9 => {
                let mut a = kfd_ioctl_export_dmabuf_args { handle: handle(&mut b, &live), flags: b.u32(), dmabuf_fd: 0 };
                if ioctl(m, AMDKFD_IOC_EXPORT_DMABUF, &mut a).is_ok() {
                    // SAFETY: EXPORT_DMABUF hands the new descriptor to the caller.
                    dmabufs.push(unsafe { OwnedFd::from_raw_fd(a.dmabuf_fd as i32) });
                }
            }
            10 => {
                let fd = match (b.u8() % 3, dmabufs.is_empty()) {
                    (0, _) | (_, true) => b.u32(),
                    _ => dmabufs[b.u8() as usize % dmabufs.len()].as_raw_fd() as u32,
                };
                let mut meta = [0u8; 64];
                let mut i = kfd_ioctl_get_dmabuf_info_args {
                    size: 0,
                    metadata_ptr: if b.u8() % 2 == 0 { meta.as_mut_ptr() as u64 } else { bad_ptr(b.u8(), b.u64()) },
                    metadata_size: if b.u8() % 2 == 0 { 64 } else { b.u32() },
                    gpu_id: 0,
                    flags: 0,
                    dmabuf_fd: fd,
                };
                let _ = ioctl(m, AMDKFD_IOC_GET_DMABUF_INFO, &mut i);
                let mut im = kfd_ioctl_import_dmabuf_args { va_addr: b.u64() & !0xfff, handle: 0, gpu_id: gpu(&mut b), dmabuf_fd: fd };
                if ioctl(m, AMDKFD_IOC_IMPORT_DMABUF, &mut im).is_ok() {
                    live.push(im.handle);
                }
            }
            11 => {
                // A raw memory ioctl: fuzzed argument bytes (handles, ids, inner pointers the
                // model only reads), or a wild argument pointer, with a fuzzed size.
                let req = MEM_IOCTLS[b.u8() as usize % MEM_IOCTLS.len()];
                let size = match b.u8() % 3 {
                    0 => hsakmt_core::abi::ioc::size(req),
                    _ => usize::from(b.u8() % 96),
                };
                let req = hsakmt_core::abi::ioc::ioc(hsakmt_core::abi::ioc::dir(req), hsakmt_core::abi::ioc::nr(req), size);
                if b.u8() % 3 == 0 {
                    // SAFETY: a pointer that cannot be ours to overwrite; the model checks it.
                    let _ = unsafe { m.handle_ioctl(u64::from(req), bad_ptr(b.u8(), b.u64()) as *mut std::ffi::c_void) };
                } else {
                    let mut arg = [0u64; 16];
                    for w in arg.iter_mut() {
                        *w = b.u64();
                    }
                    // Inner pointers the model writes through (tile arrays, metadata) must not
                    // be ours: replace them with unmappable ones.
                    if req & 0xff == AMDKFD_IOC_GET_TILE_CONFIG & 0xff {
                        arg[0] = bad_ptr(b.u8(), arg[0]);
                        arg[1] = bad_ptr(b.u8(), arg[1]);
                    }
                    if req & 0xff == AMDKFD_IOC_GET_DMABUF_INFO & 0xff {
                        arg[1] = bad_ptr(b.u8(), arg[1]);
                    }
                    if req & 0xff == AMDKFD_IOC_ALLOC_MEMORY_OF_GPU & 0xff {
                        arg[3] = bad_ptr(b.u8(), arg[3]); // a userptr address
                    }
                    // SAFETY: `arg` is a live 128-byte buffer (larger than any size used here).
                    let r = unsafe { m.handle_ioctl(u64::from(req), arg.as_mut_ptr().cast()) };
                    if r.is_ok() && req & 0xff == AMDKFD_IOC_ALLOC_MEMORY_OF_GPU & 0xff && size >= 24 {
                        live.push(arg[2]);
                    }
                    if r.is_ok() && req & 0xff == AMDKFD_IOC_IPC_IMPORT_HANDLE & 0xff && size >= 8 {
                        live.push(arg[0]);
                    }
                    if r.is_ok() && req & 0xff == AMDKFD_IOC_IMPORT_DMABUF & 0xff && size >= 16 {
                        live.push(arg[1]);
                    }
                }
            }
            12 => {
                let gpu_id = gpu(&mut b);
                let va = match (b.u8() % 2, live.is_empty()) {
                    (0, false) => (live[b.u8() as usize % live.len()] & 0xffff) << 12 | u64::from(b.u8()),
                    _ => b.u64(),
                };
                let mut buf = [0u8; 64];
                let n = (b.u8() % 65) as usize;
                match b.u8() % 6 {
                    0 => drop(m.gpu_read(gpu_id, va, &mut buf[..n])),
                    1 => drop(m.gpu_write(gpu_id, va, &buf[..n])),
                    2 => drop(m.gpu_atomic_u32(gpu_id, va, AtomicOp::Add, b.u32())),
                    3 => drop(m.gpu_atomic_u64(gpu_id, va, AtomicOp::SMax, b.u64())),
                    4 => drop(m.gpu_cmpswap_u32(gpu_id, va, b.u32(), b.u32())),
                    _ => drop(m.gpu_cmpswap_u64(gpu_id, va, b.u64(), b.u64())),
                }
            }
            _ => {
                let port: &dyn Kfd = m;
                let len = (b.u32() as usize & 0xf_ffff).max(1);
                let off = b.u64();
                // SAFETY: no fixed address; the model maps only this process's BO ranges.
                if let Ok(p) = unsafe { port.mmap(None, len, 3, true, off) } {
                    // SAFETY: unmapping exactly what was just mapped.
                    unsafe { port.munmap(p, len) }.expect("munmap");
                }
            }
        }
    }
    // Clean up through the ioctls: unmap everywhere, free everything.
    let all: Vec<u32> = ids.clone();
    live.sort_unstable();
    live.dedup();
    for h in live {
        let mut a = kfd_ioctl_map_memory_to_gpu_args { handle: h, device_ids_array_ptr: 0, n_devices: 1, n_success: 0 };
        for id in &all {
            a.device_ids_array_ptr = id as *const u32 as u64;
            a.n_success = 0;
            let _ = ioctl(m, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &mut a);
        }
        let _ = ioctl(m, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut kfd_ioctl_free_memory_of_gpu_args { handle: h });
    }
    drop(dmabufs);
    assert_eq!(m.live_bos(), 0, "a BO survived unmap + free");
    assert_eq!(m.backing_bytes(), baseline, "backing store leaked");
}
