//! Helpers the model's integration tests share: the raw ioctl call, acquiring VMs, GPU-mapped
//! BOs, process memory mappings, and SVM / XNACK requests as upstream's thunk issues them.
#![allow(dead_code)]

pub mod isa;

use hsakmt_core::abi::ioc;
use hsakmt_core::abi::kfd::*;
use hsakmt_model::Model;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, OwnedFd};
use zerocopy::IntoBytes;

pub const PAGE: u64 = 4096;

/// One KFD ioctl on the model with a typed argument.
pub fn raw<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

/// ACQUIRE_VM on the first `n` GPUs: (every GPU's id, the render-node stand-ins to keep).
pub fn acquire(m: &Model, n: usize) -> (Vec<u32>, Vec<OwnedFd>) {
    let mut renders = Vec::new();
    let ids: Vec<u32> = m.gpus().iter().map(|g| g.gpu_id).collect();
    for g in m.gpus()[..n].iter() {
        let fd = m.open_render(g.drm_render_minor).unwrap();
        let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd.as_raw_fd() as u32, gpu_id: g.gpu_id };
        raw(m, AMDKFD_IOC_ACQUIRE_VM, &mut a).unwrap();
        renders.push(fd);
    }
    (ids, renders)
}

/// ALLOC_MEMORY_OF_GPU at `va` with `flags`, then MAP on that GPU; returns the handle.
pub fn alloc_map(m: &Model, gpu_id: u32, va: u64, size: u64, flags: u32) -> u64 {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset: 0, gpu_id, flags };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).expect("alloc");
    let ids = [gpu_id];
    let mut p =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut p).expect("map");
    a.handle
}

/// A private anonymous mapping of `pages` pages, unmapped on drop (unless `len` was set to 0).
pub struct Mapping {
    pub base: u64,
    pub len: usize,
}

impl Mapping {
    pub fn new(pages: u64, prot: i32) -> Mapping {
        let len = (pages * PAGE) as usize;
        // SAFETY: a fresh private anonymous mapping owned by the returned guard.
        let p = unsafe { libc::mmap(std::ptr::null_mut(), len, prot, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0) };
        assert_ne!(p, libc::MAP_FAILED);
        Mapping { base: p as u64, len }
    }
    pub fn page(&self, i: u64) -> u64 {
        self.base + i * PAGE
    }
    /// The CPU reads `n` bytes at `off` of the mapping.
    pub fn cpu(&self, off: u64, n: usize) -> Vec<u8> {
        assert!(off as usize + n <= self.len);
        let mut b = vec![0u8; n];
        // SAFETY: inside the live mapping (checked above); tests call this on readable pages.
        unsafe { std::ptr::copy_nonoverlapping((self.base + off) as *const u8, b.as_mut_ptr(), n) };
        b
    }
    /// The CPU writes `b` at `off` of the mapping.
    pub fn cpu_put(&self, off: u64, b: &[u8]) {
        assert!(off as usize + b.len() <= self.len);
        // SAFETY: inside the live mapping (checked above); tests call this on writable pages.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), (self.base + off) as *mut u8, b.len()) };
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len != 0 {
            // SAFETY: the mapping made in `new`.
            unsafe { libc::munmap(self.base as *mut c_void, self.len) };
        }
    }
}

pub fn attr(r#type: u32, value: u32) -> kfd_ioctl_svm_attribute {
    kfd_ioctl_svm_attribute { r#type, value }
}

/// AMDKFD_IOC_SVM as upstream's thunk issues it: the request's size field covers the header and
/// `attrs`, of which the header declares `nattr`; `attrs` are updated from what comes back.
pub fn svm_declared(m: &Model, op: u32, start: u64, size: u64, attrs: &mut [kfd_ioctl_svm_attribute], nattr: u32) -> Result<(), i32> {
    let mut buf = Vec::new();
    let h = kfd_ioctl_svm_args { start_addr: start, size, op, nattr, attrs: [] };
    buf.extend_from_slice(h.as_bytes());
    for a in attrs.iter() {
        buf.extend_from_slice(a.as_bytes());
    }
    let request = AMDKFD_IOC_SVM + (((attrs.len() * 8) as u32) << 16);
    assert_eq!(ioc::size(request), buf.len());
    // SAFETY: `buf` is a live buffer of exactly the size the request encodes.
    let r = unsafe { m.handle_ioctl(u64::from(request), buf.as_mut_ptr().cast()) };
    for (i, a) in attrs.iter_mut().enumerate() {
        let o = 24 + i * 8;
        a.r#type = u32::from_ne_bytes(buf[o..o + 4].try_into().unwrap());
        a.value = u32::from_ne_bytes(buf[o + 4..o + 8].try_into().unwrap());
    }
    r
}

/// SVM SET of `attrs` over `[start, start + size)`.
pub fn set(m: &Model, start: u64, size: u64, attrs: &[kfd_ioctl_svm_attribute]) -> Result<(), i32> {
    let mut a = attrs.to_vec();
    svm_declared(m, KFD_IOCTL_SVM_OP_SET_ATTR, start, size, &mut a, attrs.len() as u32)
}

/// SET_XNACK_MODE (a negative value queries); the mode the KFD answers.
pub fn xnack(m: &Model, v: i32) -> Result<i32, i32> {
    let mut a = kfd_ioctl_set_xnack_mode_args { xnack_enabled: v };
    raw(m, AMDKFD_IOC_SET_XNACK_MODE, &mut a).map(|()| a.xnack_enabled)
}
