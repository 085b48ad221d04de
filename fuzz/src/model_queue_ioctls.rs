//! Fuzz target for the model's queue ioctls: sequences of CREATE_QUEUE (every type, with the
//! fields either valid for mapped queue memory or fuzzed), DESTROY / UPDATE with known and
//! random ids, SET_CU_MASK with fuzzed counts and pointers, GET_QUEUE_WAVE_STATE,
//! ALLOC_QUEUE_GWS, SET_TRAP_HANDLER, raw argument bytes, doorbell writes and service passes, on
//! one model. Nothing may crash or panic; after each input every queue is destroyed and the
//! model must agree.
//!
//! Pointers the model writes through are the target's own buffers or addresses that cannot be
//! mapped writable (NULL page, non-canonical, read-only data).

use crate::common::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_model::{Model, ModelConfig};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};
use zerocopy::FromZeros;

/// MI210 (gfx90a): 104 CUs, wave_num 4096; kfd_queue_ctx_save_restore_size.
const CTL_STACK: u32 = 36864;
const CWSR: u32 = 36864 + 104 * 0x95000;
const CWSR_TOTAL: u64 = CWSR as u64 + 4096 * 32;
/// Queue memory: writable GTT.
const GTT_RW: u32 = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
const RING: u64 = 0x1000_0000;
const PTRS: u64 = 0x1100_0000;
const EOP: u64 = 0x1200_0000;
const CTX: u64 = 0x2000_0000;

struct World {
    m: Model,
    gpus: Vec<u32>,
    _renders: Vec<OwnedFd>,
    memfd: OwnedFd,
}

fn world() -> &'static Mutex<World> {
    static W: OnceLock<Mutex<World>> = OnceLock::new();
    W.get_or_init(|| {
        let m = Model::new(ModelConfig::catalogue("mi210")).expect("model");
        let gpus: Vec<u32> = m.gpus().iter().map(|g| g.gpu_id).collect();
        // VMs on GPUs 0-2; queue memory on 0 and 1 (GPU 3 has no VM: ESRCH paths).
        let renders = acquire_vms(&m, 3);
        for &g in &gpus[..2] {
            alloc_map(&m, g, RING, 64 << 10, GTT_RW);
            alloc_map(&m, g, PTRS, 4096, GTT_RW);
            alloc_map(&m, g, EOP, 4096, GTT_RW);
            alloc_map(&m, g, CTX, CWSR_TOTAL, GTT_RW);
        }
        let memfd = m.create_memfd().expect("memfd");
        Mutex::new(World { m, gpus, _renders: renders, memfd })
    })
}

const QUEUE_IOCTLS: [u32; 7] = [
    AMDKFD_IOC_CREATE_QUEUE,
    AMDKFD_IOC_DESTROY_QUEUE,
    AMDKFD_IOC_UPDATE_QUEUE,
    AMDKFD_IOC_SET_CU_MASK,
    AMDKFD_IOC_GET_QUEUE_WAVE_STATE,
    AMDKFD_IOC_ALLOC_QUEUE_GWS,
    AMDKFD_IOC_SET_TRAP_HANDLER,
];

/// The target's body: one fuzz input.
pub fn run(data: &[u8]) {
    let w = world().lock().unwrap_or_else(|e| e.into_inner());
    let World { m, gpus, memfd, .. } = &*w;
    let mut b = Bytes(data);
    let mut live: Vec<(u32, u64)> = Vec::new();
    let id = |b: &mut Bytes, live: &[(u32, u64)]| -> u32 {
        let s = b.u8();
        if !s.is_multiple_of(4) && !live.is_empty() {
            live[s as usize % live.len()].0
        } else {
            b.u32() % 2048
        }
    };
    let gpu = |b: &mut Bytes| -> u32 {
        let s = b.u8();
        if s < 200 {
            gpus[s as usize % 4]
        } else {
            b.u32()
        }
    };
    let mut steps = 0;
    while !b.is_empty() && steps < 256 {
        steps += 1;
        match b.u8() % 11 {
            0..=2 => {
                let mut a = kfd_ioctl_create_queue_args::new_zeroed();
                a.gpu_id = gpu(&mut b);
                a.queue_type = if b.u8() < 240 { u32::from(b.u8() % 5) } else { b.u32() };
                a.queue_percentage = if b.u8() < 200 { 100 } else { b.u32() };
                a.queue_priority = u32::from(b.u8() % 18);
                a.ring_base_address = if b.u8() < 200 { RING } else { b.u64() };
                a.ring_size = if b.u8() < 200 { 64 << 10 } else { b.u32() };
                a.read_pointer_address = if b.u8() < 220 { PTRS } else { b.u64() };
                a.write_pointer_address = if b.u8() < 220 { PTRS + 8 } else { b.u64() };
                if b.u8() < 200 {
                    a.eop_buffer_address = EOP;
                    a.eop_buffer_size = 4096;
                    a.ctx_save_restore_address = CTX;
                    a.ctx_save_restore_size = CWSR;
                    a.ctl_stack_size = CTL_STACK;
                } else {
                    a.eop_buffer_address = b.u64();
                    a.eop_buffer_size = b.u64();
                    a.ctx_save_restore_address = b.u64();
                    a.ctx_save_restore_size = b.u32();
                    a.ctl_stack_size = b.u32();
                }
                a.sdma_engine_id = u32::from(b.u8() % 7);
                a.metadata_ring_size = if b.u8() < 240 { 0 } else { b.u32() };
                if ioctl(m, AMDKFD_IOC_CREATE_QUEUE, &mut a).is_ok() {
                    assert!(!live.iter().any(|l| l.0 == a.queue_id), "a queue id handed out twice");
                    assert!(a.queue_id < 1024);
                    live.push((a.queue_id, a.doorbell_offset));
                }
            }
            3 => {
                let q = id(&mut b, &live);
                let mut a = kfd_ioctl_destroy_queue_args { queue_id: q, pad: 0 };
                let was = live.iter().any(|l| l.0 == q);
                match ioctl(m, AMDKFD_IOC_DESTROY_QUEUE, &mut a) {
                    Ok(()) => assert!(was, "destroyed a queue that was not live"),
                    // A queue its engine left hung: destroyed, with a whole-GPU reset.
                    Err(libc::ETIME) => assert!(was, "ETIME for a queue that was not live"),
                    Err(e) => assert!(!was, "a live queue's destroy failed with {e}"),
                }
                live.retain(|l| l.0 != q);
            }
            4 => {
                let mut a = kfd_ioctl_update_queue_args::new_zeroed();
                a.queue_id = id(&mut b, &live);
                a.ring_base_address = match b.u8() % 3 {
                    0 => RING,
                    1 => 0,
                    _ => b.u64(),
                };
                a.ring_size = if b.u8() < 200 { 64 << 10 } else { b.u32() };
                a.queue_percentage = u32::from(b.u8());
                a.queue_priority = u32::from(b.u8() % 18);
                let _ = ioctl(m, AMDKFD_IOC_UPDATE_QUEUE, &mut a);
            }
            5 => {
                let words = [b.u32(); 40];
                let mut a = kfd_ioctl_set_cu_mask_args {
                    queue_id: id(&mut b, &live),
                    num_cu_mask: b.u32() % 2000,
                    cu_mask_ptr: words.as_ptr() as u64,
                };
                if b.u8() & 1 == 0 || a.num_cu_mask > 40 * 32 {
                    a.cu_mask_ptr = bad_ptr(b.u8(), b.u64());
                }
                let _ = ioctl(m, AMDKFD_IOC_SET_CU_MASK, &mut a);
            }
            6 => {
                let mut hdr = [0u32; 8];
                let mut a = kfd_ioctl_get_queue_wave_state_args::new_zeroed();
                a.queue_id = id(&mut b, &live);
                a.ctl_stack_address = if b.u8() & 1 == 0 { hdr.as_mut_ptr() as u64 } else { bad_ptr(b.u8(), b.u64()) };
                let _ = ioctl(m, AMDKFD_IOC_GET_QUEUE_WAVE_STATE, &mut a);
            }
            7 => {
                let mut a =
                    kfd_ioctl_alloc_queue_gws_args { queue_id: id(&mut b, &live), num_gws: u32::from(b.u8() % 3), first_gws: 0, pad: 0 };
                let _ = ioctl(m, AMDKFD_IOC_ALLOC_QUEUE_GWS, &mut a);
                let mut t = kfd_ioctl_set_trap_handler_args { tba_addr: b.u64(), tma_addr: b.u64(), gpu_id: gpu(&mut b), pad: 0 };
                let _ = ioctl(m, AMDKFD_IOC_SET_TRAP_HANDLER, &mut t);
            }
            8 => {
                // A doorbell write through the thunk's view of the slice, then a service pass.
                if !live.is_empty() {
                    let (q, off) = live[b.u8() as usize % live.len()];
                    let v = b.u64();
                    // SAFETY: a shared mapping of the model's memfd at the slice CREATE_QUEUE named.
                    let p = unsafe {
                        libc::mmap(
                            std::ptr::null_mut(),
                            8192,
                            libc::PROT_READ | libc::PROT_WRITE,
                            libc::MAP_SHARED,
                            memfd.as_raw_fd(),
                            (off & !0x1fff) as i64,
                        )
                    };
                    if p != libc::MAP_FAILED {
                        // SAFETY: an 8-byte slot inside the 8 KiB mapping.
                        unsafe { std::ptr::write_volatile((p as usize + (off & 0x1fff) as usize) as *mut u64, v) };
                        // SAFETY: the mapping made above.
                        unsafe { libc::munmap(p, 8192) };
                    }
                    let _ = m.ring_doorbell(q);
                }
                let _ = m.service_queues();
            }
            9 => {
                let _ = m.ring_doorbell(b.u32());
            }
            _ => {
                // Raw argument bytes for a queue ioctl; CREATE keeps its pointers harmless.
                let req = QUEUE_IOCTLS[b.u8() as usize % QUEUE_IOCTLS.len()];
                let mut raw = [0u8; 104];
                for x in raw.iter_mut() {
                    *x = b.u8();
                }
                if req == AMDKFD_IOC_SET_CU_MASK || req == AMDKFD_IOC_GET_QUEUE_WAVE_STATE {
                    let at = if req == AMDKFD_IOC_SET_CU_MASK { 8 } else { 0 };
                    raw[at..at + 8].copy_from_slice(&bad_ptr(b.u8(), b.u64()).to_le_bytes());
                }
                // SAFETY: `raw` is a live buffer larger than every queue argument.
                let r = unsafe { m.handle_ioctl(u64::from(req), raw.as_mut_ptr().cast()) };
                if req == AMDKFD_IOC_CREATE_QUEUE && r.is_ok() {
                    let q = u32::from_le_bytes([raw[44], raw[45], raw[46], raw[47]]);
                    let off = u64::from_le_bytes(raw[24..32].try_into().unwrap_or_default());
                    assert!(!live.iter().any(|l| l.0 == q));
                    live.push((q, off));
                }
                if req == AMDKFD_IOC_DESTROY_QUEUE && matches!(r, Ok(()) | Err(libc::ETIME)) {
                    let q = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
                    live.retain(|l| l.0 != q);
                }
            }
        }
    }
    assert_eq!(m.live_queues(), live.len(), "queues the target does not know of");
    for (q, _) in live.drain(..) {
        let mut a = kfd_ioctl_destroy_queue_args { queue_id: q, pad: 0 };
        // ETIME: a queue its engine left hung, destroyed with a whole-GPU reset.
        let r = ioctl(m, AMDKFD_IOC_DESTROY_QUEUE, &mut a);
        assert!(matches!(r, Ok(()) | Err(libc::ETIME)), "a live queue can be destroyed: {r:?}");
    }
    assert_eq!(m.live_queues(), 0);
}
