//! What the model fuzz targets share: a reader of the fuzz input, the raw ioctl call, the
//! model set-up (a VM acquired on the first GPUs), GPU-mapped BOs, and addresses the model may
//! be asked to write through that are never writable memory of ours. Each target uses what it
//! needs.

#![allow(dead_code)]

use hsakmt_core::abi::kfd::*;
use hsakmt_model::Model;
use std::os::fd::{AsRawFd, OwnedFd};
use zerocopy::IntoBytes;

/// The fuzz input, consumed front to back; reads past the end give zeros.
pub struct Bytes<'a>(pub &'a [u8]);

impl Bytes<'_> {
    pub fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// One KFD ioctl on the model with a typed argument.
pub fn ioctl<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

/// ACQUIRE_VM on the first `n` GPUs; the render-node stand-ins must outlive the model's use.
pub fn acquire_vms(m: &Model, n: usize) -> Vec<OwnedFd> {
    let mut renders = Vec::new();
    for g in m.gpus()[..n].iter().cloned() {
        let fd = m.open_render(g.drm_render_minor).expect("render node");
        let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd.as_raw_fd() as u32, gpu_id: g.gpu_id };
        ioctl(m, AMDKFD_IOC_ACQUIRE_VM, &mut a).expect("acquire vm");
        renders.push(fd);
    }
    renders
}

/// ALLOC_MEMORY_OF_GPU at `va` with `flags`, then MAP on that GPU; returns the handle.
pub fn alloc_map(m: &Model, gpu_id: u32, va: u64, size: u64, flags: u32) -> u64 {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset: 0, gpu_id, flags };
    ioctl(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).expect("alloc");
    let ids = [gpu_id];
    let mut p =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    ioctl(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut p).expect("map");
    a.handle
}

static READ_ONLY: [u8; 512] = [0; 512];

/// An address the model may be asked to write through: never writable memory of ours.
pub fn bad_ptr(sel: u8, r: u64) -> u64 {
    match sel % 5 {
        0 => 0,
        1 => r & 0xffff,                // below mmap_min_addr
        2 => 0x8000_0000_0000_0000 | r, // non-canonical / kernel half
        3 => READ_ONLY.as_ptr() as u64 + (r % 64),
        _ => 0x0000_8000_0000_0000 | (r & 0x0000_7fff_ffff_ffff), // above the user half
    }
}
