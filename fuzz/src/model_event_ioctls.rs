//! Fuzz target for the model's event ioctls: sequences of CREATE_EVENT (every type, with and
//! without an event page handle, fuzzed handles), DESTROY / SET / RESET with known and random
//! ids, WAIT_EVENTS on known and random ids with fuzzed ages, wait-all / wait-any and short
//! timeouts, wild event arrays, raw argument bytes, and the GPU-side hooks (signal_event,
//! memory and HW exceptions, slot writes), on one model. Nothing may crash, panic or hang (no
//! wait is infinite); after each input every event is destroyed and the model must agree.
//!
//! Pointers the model writes through are the target's own buffers or addresses that cannot be
//! mapped writable (NULL page, non-canonical, read-only data).

use crate::common::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_model::events::event_data;
use hsakmt_model::{Model, ModelConfig};
use std::os::fd::OwnedFd;
use std::sync::{Mutex, OnceLock};
use zerocopy::FromZeros;

struct World {
    m: Model,
    gpus: Vec<u32>,
    _renders: Vec<OwnedFd>,
    /// GTT and VRAM BOs that may be offered as the event page.
    gtt: u64,
    vram: u64,
}

fn alloc(m: &Model, gpu_id: u32, va: u64, flags: u32) -> u64 {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size: 32 << 10, handle: 0, mmap_offset: 0, gpu_id, flags };
    ioctl(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).expect("alloc");
    a.handle
}

fn world() -> &'static Mutex<World> {
    static W: OnceLock<Mutex<World>> = OnceLock::new();
    W.get_or_init(|| {
        let m = Model::new(ModelConfig::catalogue("mi210")).expect("model");
        let gpus: Vec<u32> = m.gpus().iter().map(|g| g.gpu_id).collect();
        let renders = acquire_vms(&m, 4);
        let gtt = alloc(&m, gpus[0], 0x7f00_0000_0000, KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32);
        let vram = alloc(&m, gpus[1], 0x7f00_1000_0000, KFD_IOC_ALLOC_MEM_FLAGS_VRAM as u32);
        Mutex::new(World { m, gpus, _renders: renders, gtt, vram })
    })
}

const EVENT_IOCTLS: [u32; 5] =
    [AMDKFD_IOC_CREATE_EVENT, AMDKFD_IOC_DESTROY_EVENT, AMDKFD_IOC_SET_EVENT, AMDKFD_IOC_RESET_EVENT, AMDKFD_IOC_WAIT_EVENTS];

/// The target's body: one fuzz input.
pub fn run(data: &[u8]) {
    let w = world().lock().unwrap_or_else(|e| e.into_inner());
    let World { m, gpus, gtt, vram, .. } = &*w;
    let mut b = Bytes(data);
    let mut live: Vec<u32> = Vec::new();
    let id = |b: &mut Bytes, live: &[u32]| -> u32 {
        let s = b.u8();
        if !s.is_multiple_of(4) && !live.is_empty() {
            live[s as usize % live.len()]
        } else {
            b.u32()
        }
    };
    let mut steps = 0;
    while !b.is_empty() && steps < 256 {
        steps += 1;
        match b.u8() % 10 {
            0 => {
                let mut a = kfd_ioctl_create_event_args::new_zeroed();
                a.event_type = match b.u8() % 4 {
                    0 => b.u32(),
                    1 => KFD_IOC_EVENT_MEMORY as u32,
                    2 => u32::from(b.u8() % 10),
                    _ => KFD_IOC_EVENT_SIGNAL as u32,
                };
                a.auto_reset = u32::from(b.u8() & 1);
                a.node_id = b.u32();
                a.event_page_offset = match b.u8() % 8 {
                    0 => *gtt,
                    1 => *vram,
                    2 => b.u64(),
                    3 => (u64::from(gpus[b.u8() as usize % gpus.len()]) << 32) | u64::from(b.u8()),
                    _ => 0,
                };
                if ioctl(m, AMDKFD_IOC_CREATE_EVENT, &mut a).is_ok() {
                    assert!(!live.contains(&a.event_id), "an id handed out twice");
                    live.push(a.event_id);
                }
            }
            1 => {
                let e = id(&mut b, &live);
                let mut a = kfd_ioctl_destroy_event_args { event_id: e, pad: 0 };
                if ioctl(m, AMDKFD_IOC_DESTROY_EVENT, &mut a).is_ok() {
                    live.retain(|&x| x != e);
                }
            }
            2 | 3 => {
                let e = id(&mut b, &live);
                let req = if b.u8() & 1 == 0 { AMDKFD_IOC_SET_EVENT } else { AMDKFD_IOC_RESET_EVENT };
                let mut a = kfd_ioctl_set_event_args { event_id: e, pad: 0 };
                let _ = ioctl(m, req, &mut a);
            }
            4 | 5 => {
                let n = b.u8() as usize % 40;
                let mut arr: Vec<kfd_event_data> = (0..n)
                    .map(|_| {
                        let e = id(&mut b, &live);
                        let age = if b.u8() & 1 == 0 { 0 } else { u64::from(b.u8()) };
                        event_data(e, age)
                    })
                    .collect();
                let mut a = kfd_ioctl_wait_events_args {
                    events_ptr: arr.as_mut_ptr() as u64,
                    num_events: n as u32,
                    wait_for_all: u32::from(b.u8() & 1),
                    timeout: u32::from(b.u8() % 3),
                    wait_result: b.u32(),
                };
                match b.u8() % 8 {
                    0 => a.events_ptr = bad_ptr(b.u8(), b.u64()),
                    1 => a.num_events = b.u32() % 100_000, // longer than the array: reads past it fault or read READ_ONLY-like memory
                    _ => {}
                }
                if a.num_events as usize > n {
                    a.events_ptr = bad_ptr(b.u8(), b.u64());
                }
                let r = ioctl(m, AMDKFD_IOC_WAIT_EVENTS, &mut a);
                assert!(r.is_err() == (a.wait_result == KFD_IOC_WAIT_RESULT_FAIL as u32), "{r:?} {}", a.wait_result);
            }
            6 => {
                let e = id(&mut b, &live);
                let _ = m.signal_event(e);
            }
            7 => {
                let e = id(&mut b, &live);
                let _ = m.write_event_slot(e, b.u64());
            }
            8 => {
                if b.u8() & 1 == 0 {
                    let mut x = kfd_hsa_memory_exception_data::new_zeroed();
                    x.va = b.u64();
                    x.gpu_id = b.u32();
                    x.failure.NotPresent = b.u32();
                    let _ = m.signal_memory_exception(x);
                } else {
                    let h = kfd_hsa_hw_exception_data { reset_type: b.u32(), reset_cause: b.u32(), memory_lost: b.u32(), gpu_id: b.u32() };
                    let _ = m.signal_hw_exception(h);
                }
            }
            _ => {
                // Raw argument bytes for an event ioctl. WAIT's array pointer stays harmless.
                let req = EVENT_IOCTLS[b.u8() as usize % EVENT_IOCTLS.len()];
                let mut raw = [0u8; 32];
                for x in raw.iter_mut() {
                    *x = b.u8();
                }
                if req == AMDKFD_IOC_WAIT_EVENTS {
                    raw[..8].copy_from_slice(&bad_ptr(b.u8(), b.u64()).to_le_bytes());
                    raw[16..20].copy_from_slice(&u32::from(b.u8() % 3).to_le_bytes());
                    // timeout
                }
                if req == AMDKFD_IOC_CREATE_EVENT {
                    raw[..8].fill(0); // no fuzzed page handle through this path
                }
                // SAFETY: `raw` is a live buffer larger than every event argument.
                let r = unsafe { m.handle_ioctl(u64::from(req), raw.as_mut_ptr().cast()) };
                if req == AMDKFD_IOC_CREATE_EVENT && r.is_ok() {
                    let e = u32::from_le_bytes([raw[24], raw[25], raw[26], raw[27]]);
                    if !live.contains(&e) {
                        live.push(e);
                    }
                }
                if req == AMDKFD_IOC_DESTROY_EVENT && r.is_ok() {
                    let e = u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]);
                    live.retain(|&x| x != e);
                }
            }
        }
    }
    for e in live.drain(..) {
        let mut a = kfd_ioctl_destroy_event_args { event_id: e, pad: 0 };
        ioctl(m, AMDKFD_IOC_DESTROY_EVENT, &mut a).expect("a live event can be destroyed");
    }
    assert_eq!(m.live_events(), 0, "events the target does not know of");
}
