//! IPC across fork: a child imports what its parent exported and sees (and changes) the same
//! bytes; memory accounting and the backing store are shared by the processes and recovered
//! when a child dies holding memory. One test function: it forks, so nothing else may run
//! beside it in this binary.

use hsakmt_core::abi::kfd::*;
use hsakmt_core::Kfd;
use hsakmt_model::{Model, ModelConfig};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use zerocopy::IntoBytes;

const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM as u32;
const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
const RW: u32 = (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) as u32;
const VA: u64 = 0x7000_0000_0000;
const SIZE: usize = 4 * 4096;

fn raw<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

/// Open render nodes and acquire a VM on every GPU (what the thunk does at open).
fn acquire_all(m: &Model) -> Vec<OwnedFd> {
    let mut fds = Vec::new();
    for g in m.gpus().to_vec() {
        let fd = m.open_render(g.drm_render_minor).unwrap();
        let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd.as_raw_fd() as u32, gpu_id: g.gpu_id };
        raw(m, AMDKFD_IOC_ACQUIRE_VM, &mut a).unwrap();
        fds.push(fd);
    }
    fds
}

fn alloc(m: &Model, gpu_id: u32, va: u64, size: u64, flags: u32) -> Result<(u64, u64), i32> {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset: 0, gpu_id, flags };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).map(|()| (a.handle, a.mmap_offset))
}

fn free(m: &Model, handle: u64) -> Result<(), i32> {
    raw(m, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut kfd_ioctl_free_memory_of_gpu_args { handle })
}

fn map(m: &Model, handle: u64, ids: &[u32], unmap: bool) -> Result<(), i32> {
    let mut a =
        kfd_ioctl_map_memory_to_gpu_args { handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: ids.len() as u32, n_success: 0 };
    raw(m, if unmap { AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU } else { AMDKFD_IOC_MAP_MEMORY_TO_GPU }, &mut a)
}

fn available(m: &Model, gpu_id: u32) -> u64 {
    let mut a = kfd_ioctl_get_available_memory_args { available: 0, gpu_id, pad: 0 };
    raw(m, AMDKFD_IOC_AVAILABLE_MEMORY, &mut a).unwrap();
    a.available
}

fn import(m: &Model, gpu_id: u32, va: u64, share: [u32; 4]) -> Result<(u64, u64), i32> {
    let mut a = kfd_ioctl_ipc_import_handle_args { handle: 0, va_addr: va, mmap_offset: 0, share_handle: share, gpu_id, flags: 0 };
    raw(m, AMDKFD_IOC_IPC_IMPORT_HANDLE, &mut a).map(|()| (a.handle, a.mmap_offset))
}

/// The CPU view of a BO through the port.
fn cpu_view(m: &Model, offset: u64) -> &'static mut [u8] {
    let port: &dyn Kfd = m;
    // SAFETY: no fixed address; the model maps only this process's BO ranges. The mapping is
    // leaked for the test's life (the process exits soon after).
    let p = unsafe { port.mmap(None, SIZE, (libc::PROT_READ | libc::PROT_WRITE) as u32, true, offset) }.unwrap();
    // SAFETY: SIZE readable, writable bytes mapped above.
    unsafe { std::slice::from_raw_parts_mut(p as *mut u8, SIZE) }
}

fn pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0i32; 2];
    // SAFETY: pipe(2) fills the two-element array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: both descriptors were just created and are owned here.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

fn send(fd: &OwnedFd, b: u8) {
    // SAFETY: writes one byte from a live local.
    assert_eq!(unsafe { libc::write(fd.as_raw_fd(), (&b as *const u8).cast(), 1) }, 1);
}

fn recv(fd: &OwnedFd) -> u8 {
    let mut b = 0u8;
    // SAFETY: reads one byte into a live local.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&mut b as *mut u8).cast(), 1) };
    if n == 1 {
        b
    } else {
        0xff
    }
}

/// Run `child` in a forked child; returns its exit code (0 = every check passed).
fn fork_child(child: impl FnOnce() -> u8) -> libc::pid_t {
    // SAFETY: the child runs only model calls and plain syscalls, then _exit()s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(child)).unwrap_or(99);
        // SAFETY: leave the forked child without running the parent's destructors.
        unsafe { libc::_exit(i32::from(code)) };
    }
    pid
}

fn wait(pid: libc::pid_t) -> i32 {
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "child crashed: status {status:#x}");
    libc::WEXITSTATUS(status)
}

#[test]
fn ipc_across_fork() {
    let m = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    let _kfd = m.create_memfd().unwrap();
    let _renders = acquire_all(&m);
    let ids: Vec<u32> = m.gpus().iter().map(|g| g.gpu_id).collect();
    let (g0, g1) = (ids[0], ids[1]);
    let base = m.backing_bytes();
    let a0 = available(&m, g0);

    // --- 1. The parent exports a VRAM BO with a pattern; the child imports it, sees the bytes
    // through its own CPU mapping and GPU page table, and writes back.
    let (h, off) = alloc(&m, g0, VA, SIZE as u64, VRAM | RW).unwrap();
    let view = cpu_view(&m, off);
    for (i, b) in view.iter_mut().enumerate() {
        *b = (i % 253) as u8;
    }
    let mut e = kfd_ioctl_ipc_export_handle_args { handle: h, share_handle: [0; 4], gpu_id: g0, flags: 7 };
    raw(&m, AMDKFD_IOC_IPC_EXPORT_HANDLE, &mut e).unwrap();
    let share = e.share_handle;
    let mut d = kfd_ioctl_export_dmabuf_args { handle: h, flags: 0, dmabuf_fd: 0 };
    raw(&m, AMDKFD_IOC_EXPORT_DMABUF, &mut d).unwrap();
    // SAFETY: EXPORT_DMABUF hands the descriptor to the caller (no CLOEXEC: the child keeps it).
    let dmabuf = unsafe { OwnedFd::from_raw_fd(d.dmabuf_fd as i32) };

    let pid = fork_child(|| {
        // Before re-opening, the parent's KFD is not the child's.
        let mut b = [0u8; 4];
        if m.gpu_read(g0, VA, &mut b).is_ok() || alloc(&m, g0, VA, 4096, GTT | RW) != Err(libc::EBADF) {
            return 1;
        }
        if m.create_memfd().is_err() {
            return 2;
        }
        let _renders = acquire_all(&m);
        if import(&m, g1, VA, [share[0] ^ 1, share[1], share[2], share[3]]) != Err(libc::EINVAL) {
            return 3; // forged
        }
        let Ok((ih, ioff)) = import(&m, g1, VA, share) else { return 4 };
        if ioff != off {
            return 5;
        }
        let v = cpu_view(&m, ioff);
        if v.iter().enumerate().any(|(i, b)| *b != (i % 253) as u8) {
            return 6;
        }
        if map(&m, ih, &[g1], false).is_err() {
            return 7;
        }
        let mut g = [0u8; 64];
        if m.gpu_read(g1, VA + 4000, &mut g).is_err() || g.iter().enumerate().any(|(i, b)| *b != ((4000 + i) % 253) as u8) {
            return 8;
        }
        if m.gpu_write(g1, VA, b"child was here").is_err() {
            return 9;
        }
        // The inherited dmabuf imports too.
        let mut im = kfd_ioctl_import_dmabuf_args { va_addr: VA + (1 << 30), handle: 0, gpu_id: g0, dmabuf_fd: dmabuf.as_raw_fd() as u32 };
        if raw(&m, AMDKFD_IOC_IMPORT_DMABUF, &mut im).is_err() || map(&m, im.handle, &[g0], false).is_err() {
            return 10;
        }
        if m.gpu_read(g0, VA + (1 << 30), &mut g[..14]).is_err() || &g[..14] != b"child was here" {
            return 11;
        }
        // Leave without freeing anything: the parent recovers it.
        0
    });
    assert_eq!(wait(pid), 0, "child step failed");
    assert_eq!(&view[..14], b"child was here", "the parent sees the child's write");
    let mut b = [0u8; 14];
    map(&m, h, &[g0], false).unwrap();
    m.gpu_read(g0, VA, &mut b).unwrap();
    assert_eq!(&b, b"child was here");
    map(&m, h, &[g0], true).unwrap();
    free(&m, h).unwrap();
    // The dead child's holds were dropped. The dmabuf, still open here, holds the memory (a
    // dma-buf lives until its last descriptor is closed): it still imports, with the bytes.
    let mut im = kfd_ioctl_import_dmabuf_args { va_addr: VA, handle: 0, gpu_id: g0, dmabuf_fd: dmabuf.as_raw_fd() as u32 };
    raw(&m, AMDKFD_IOC_IMPORT_DMABUF, &mut im).unwrap();
    map(&m, im.handle, &[g0], false).unwrap();
    m.gpu_read(g0, VA, &mut b).unwrap();
    assert_eq!(&b, b"child was here");
    map(&m, im.handle, &[g0], true).unwrap();
    free(&m, im.handle).unwrap();
    // Closed, it lets go: the export is gone with the parent's BO.
    drop(dmabuf);
    assert_eq!(import(&m, g1, VA, share), Err(libc::EINVAL));

    // --- 2. The child holds the memory while the parent frees its BO; accounting is shared.
    let (h, off) = alloc(&m, g0, VA, SIZE as u64, GTT | RW).unwrap();
    let view = cpu_view(&m, off);
    view[..5].copy_from_slice(b"kept!");
    let mut e = kfd_ioctl_ipc_export_handle_args { handle: h, share_handle: [0; 4], gpu_id: g0, flags: 0 };
    raw(&m, AMDKFD_IOC_IPC_EXPORT_HANDLE, &mut e).unwrap();
    let share = e.share_handle;
    let (to_child_r, to_child_w) = pipe();
    let (to_parent_r, to_parent_w) = pipe();
    let pid = fork_child(|| {
        if m.create_memfd().is_err() {
            return 20;
        }
        let _renders = acquire_all(&m);
        let Ok((ih, ioff)) = import(&m, g0, VA, share) else { return 21 };
        // Some VRAM of our own, left allocated when we exit.
        if alloc(&m, g0, VA + (1 << 32), 1 << 30, VRAM | RW).is_err() {
            return 22;
        }
        send(&to_parent_w, 1);
        if recv(&to_child_r) != 2 {
            return 23;
        }
        // The parent freed its BO: our import still reads the bytes.
        let v = cpu_view(&m, ioff);
        if &v[..5] != b"kept!" {
            return 24;
        }
        if free(&m, ih).is_err() {
            return 25;
        }
        if import(&m, g0, VA, share).is_ok() {
            return 26;
        }
        0
    });
    assert_eq!(recv(&to_parent_r), 1);
    // The child's 1 GiB of VRAM counts on this device for us too.
    assert_eq!(available(&m, g0), a0 - (1 << 30));
    view[..5].copy_from_slice(b"kept!");
    free(&m, h).unwrap();
    send(&to_child_w, 2);
    assert_eq!(wait(pid), 0, "child step failed");
    // The child is gone: its VRAM is back, its import released the last hold, and the backing
    // store is at its baseline again.
    assert_eq!(available(&m, g0), a0);
    assert_eq!(import(&m, g0, VA, share), Err(libc::EINVAL));
    assert_eq!(m.live_bos(), 0);
    assert_eq!(m.backing_bytes(), base);
}
