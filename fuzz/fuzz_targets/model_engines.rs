//! Fuzz target for the model GPU's engines: random ring contents (AQL, PM4 or SDMA), random
//! ring placement (mapped, partly mapped or not at all), random read/write positions, budgets
//! and indirect-buffer / kernarg memory, over a fixed set of mappings (a writable GTT BO, a
//! read-only BO, an event page). Nothing may crash, panic or hang: every `engine_run` call is
//! bounded by its budget, and the number of calls per input is bounded too.
#![no_main]

use hsakmt_core::abi::kfd::*;
use hsakmt_model::engine::{EngineKind, RingDesc, RingProgress, RunEnd};
use hsakmt_model::{Model, ModelConfig};
use libfuzzer_sys::fuzz_target;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};
use zerocopy::IntoBytes;

const BASE: u64 = 0x7000_0000_0000;
const BO_BYTES: u64 = 1 << 20;
const RO: u64 = BASE + 0x20_0000;

struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }
    /// An address: inside the writable BO, the read-only BO, or anywhere.
    fn addr(&mut self) -> u64 {
        match self.u8() % 4 {
            0 | 1 => BASE + u64::from(self.u32()) % BO_BYTES,
            2 => RO + u64::from(self.u32()) % 4096,
            _ => self.u64(),
        }
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

struct World {
    m: Model,
    gpu: u32,
    _renders: Vec<OwnedFd>,
}

fn ioctl<T: IntoBytes + zerocopy::FromBytes>(m: &Model, request: u32, arg: &mut T) -> Result<(), i32> {
    // SAFETY: `arg` is a live, exclusively borrowed argument struct.
    unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }
}

fn alloc_map(m: &Model, gpu: u32, va: u64, size: u64, flags: u32) {
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset: 0, gpu_id: gpu, flags };
    ioctl(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).expect("alloc");
    let ids = [gpu];
    let mut mp =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    ioctl(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mp).expect("map");
}

fn world() -> &'static Mutex<World> {
    static W: OnceLock<Mutex<World>> = OnceLock::new();
    W.get_or_init(|| {
        let m = Model::new(ModelConfig::catalogue("mi210")).expect("model");
        let mut renders = Vec::new();
        for g in m.gpus().to_vec() {
            let fd = m.open_render(g.drm_render_minor).expect("render");
            let mut a = kfd_ioctl_acquire_vm_args { drm_fd: fd.as_raw_fd() as u32, gpu_id: g.gpu_id };
            ioctl(&m, AMDKFD_IOC_ACQUIRE_VM, &mut a).expect("acquire");
            renders.push(fd);
        }
        let gpu = m.gpus()[0].gpu_id;
        let rw = (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) as u32;
        let gtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
        alloc_map(&m, gpu, BASE, BO_BYTES, gtt | rw);
        alloc_map(&m, gpu, RO, 4096, gtt);
        Mutex::new(World { m, gpu, _renders: renders })
    })
}

fuzz_target!(|data: &[u8]| {
    let w = world().lock().unwrap_or_else(|e| e.into_inner());
    let mut b = Bytes(data);
    let kind = match b.u8() % 3 {
        0 => EngineKind::Aql,
        1 => EngineKind::Pm4,
        _ => EngineKind::Sdma,
    };
    let ring_bytes = 1u64 << (b.u8() % 14);
    let ring_va = match b.u8() % 4 {
        0 => b.addr(),
        _ => BASE + (u64::from(b.u32()) % BO_BYTES & !0xff),
    };
    // Memory writes: the ring, IBs, kernargs, signals and descriptors all live in the BO.
    for _ in 0..(b.u8() % 16) {
        let va = BASE + u64::from(b.u32()) % BO_BYTES;
        let n = usize::from(b.u8() % 64);
        let mut chunk = Vec::with_capacity(n * 4);
        for _ in 0..n {
            chunk.extend_from_slice(&b.u32().to_le_bytes());
        }
        let _ = w.m.gpu_write(w.gpu, va, &chunk);
    }
    let desc = RingDesc { gpu_id: w.gpu, queue_id: 1, kind, ring_va, ring_bytes, rptr_va: b.addr(), wptr_va: 0 };
    let mut p = RingProgress { read: u64::from(b.u32() % 1024), ..RingProgress::default() };
    let write = p.read + u64::from(b.u32() % 4096);
    for _ in 0..8 {
        if b.is_empty() {
            break;
        }
        let budget = u32::from(b.u8());
        match w.m.engine_run(&desc, &mut p, write, budget) {
            RunEnd::Idle | RunEnd::Stopped => break,
            RunEnd::Blocked | RunEnd::Budget => {}
        }
    }
});
