//! Queues across fork: a forked child does not see or run its parent's queues, and its own
//! queues get their own watcher thread (threads do not survive fork). One test function: it
//! forks, so nothing else may run in this process meanwhile.

use hsakmt_core::abi::kfd::*;
use hsakmt_model::{Model, ModelConfig};
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::{Duration, Instant};
use zerocopy::{FromZeros, IntoBytes};

fn raw<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

const GTT: u32 = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;

/// Acquire GPU 0's VM, map an SDMA queue's ring and pointer page, create the queue:
/// (render fd, queue id, doorbell offset).
fn sdma_queue(m: &Model) -> Result<(OwnedFd, u32, u64), i32> {
    let g = m.gpus()[0].clone();
    let fd = m.open_render(g.drm_render_minor)?;
    let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd.as_raw_fd() as u32, gpu_id: g.gpu_id };
    raw(m, AMDKFD_IOC_ACQUIRE_VM, &mut a)?;
    for (va, size) in [(0x1000_0000u64, 4096u64), (0x1100_0000, 4096)] {
        let mut b = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset: 0, gpu_id: g.gpu_id, flags: GTT };
        raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut b)?;
        let ids = [g.gpu_id];
        let mut p =
            kfd_ioctl_map_memory_to_gpu_args { handle: b.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
        raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut p)?;
    }
    let mut q = kfd_ioctl_create_queue_args::new_zeroed();
    q.gpu_id = g.gpu_id;
    q.queue_type = KFD_IOC_QUEUE_TYPE_SDMA as u32;
    q.queue_percentage = 100;
    q.ring_base_address = 0x1000_0000;
    q.ring_size = 4096;
    q.read_pointer_address = 0x1100_0000;
    q.write_pointer_address = 0x1100_0008;
    raw(m, AMDKFD_IOC_CREATE_QUEUE, &mut q)?;
    Ok((fd, q.queue_id, q.doorbell_offset))
}

fn ring(m: &Model, doorbell_offset: u64, value: u64) {
    let fd = m.create_memfd().unwrap();
    // SAFETY: a fresh shared mapping of the model's memfd at the doorbell slice.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            8192,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            (doorbell_offset & !0x1fff) as i64,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // SAFETY: an 8-byte slot inside the mapping.
    unsafe { std::ptr::write_volatile((p as usize + (doorbell_offset & 0x1fff) as usize) as *mut u64, value) };
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p, 8192) };
}

fn wait_runs(m: &Model, from: u64) -> bool {
    let t = Instant::now();
    while m.engine_runs() == from {
        if t.elapsed() > Duration::from_secs(5) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}

#[test]
fn queues_and_watchers_across_fork() {
    let m = Model::new_shared(ModelConfig::catalogue("mi210")).unwrap();
    let (_fd, id, db) = sdma_queue(&m).unwrap();
    assert!(m.watcher_running());
    // Fork while the parent's watcher polls.
    // SAFETY: the child runs only model calls and plain syscalls, then _exit()s.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| -> u8 {
            if m.live_queues() != 0 || m.watcher_running() || m.queue_info(id).is_some() {
                return 1; // the parent's queues are not the child's
            }
            if m.service_queues() != 0 {
                return 2;
            }
            let _ = m.create_memfd(); // open the KFD as this process
            let Ok((_fd, cid, cdb)) = sdma_queue(&m) else { return 3 };
            if !m.watcher_running() || m.live_queues() != 1 {
                return 4; // a watcher of its own
            }
            let runs = m.engine_runs();
            ring(&m, cdb, 64);
            if m.ring_doorbell(cid).is_err() || !wait_runs(&m, runs) {
                return 5;
            }
            0
        }))
        .unwrap_or(99);
        // SAFETY: leave the forked child without running the parent's destructors.
        unsafe { libc::_exit(i32::from(code)) };
    }
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status), "child crashed: status {status:#x}");
    assert_eq!(libc::WEXITSTATUS(status), 0);
    // The parent's queue and watcher are as they were.
    assert!(m.queue_info(id).is_some());
    assert!(m.watcher_running());
    let runs = m.engine_runs();
    ring(&m, db, 128);
    m.ring_doorbell(id).unwrap();
    assert!(wait_runs(&m, runs));
}
