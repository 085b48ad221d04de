//! Fuzz target for the model GPU's engines: random ring contents (AQL, PM4 or SDMA), random
//! ring placement (mapped, partly mapped or not at all), random read/write positions, budgets
//! and indirect-buffer / kernarg memory, over a fixed set of mappings (a writable GTT BO, a
//! read-only BO, an event page). Nothing may crash, panic or hang: every `engine_run` call is
//! bounded by its budget, and the number of calls per input is bounded too.

use crate::common::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_model::engine::{EngineKind, RingDesc, RingProgress, RunEnd};
use hsakmt_model::{Model, ModelConfig};
use std::os::fd::OwnedFd;
use std::sync::{Mutex, OnceLock};

const BASE: u64 = 0x7000_0000_0000;
const BO_BYTES: u64 = 1 << 20;
const RO: u64 = BASE + 0x20_0000;

/// An address: inside the writable BO, the read-only BO, or anywhere.
fn addr(b: &mut Bytes) -> u64 {
    match b.u8() % 4 {
        0 | 1 => BASE + u64::from(b.u32()) % BO_BYTES,
        2 => RO + u64::from(b.u32()) % 4096,
        _ => b.u64(),
    }
}

struct World {
    m: Model,
    gpu: u32,
    _renders: Vec<OwnedFd>,
}

fn world() -> &'static Mutex<World> {
    static W: OnceLock<Mutex<World>> = OnceLock::new();
    W.get_or_init(|| {
        let m = Model::new(ModelConfig::catalogue("mi210")).expect("model");
        let renders = acquire_vms(&m, m.gpus().len());
        let gpu = m.gpus()[0].gpu_id;
        let rw = (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) as u32;
        let gtt = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
        alloc_map(&m, gpu, BASE, BO_BYTES, gtt | rw);
        alloc_map(&m, gpu, RO, 4096, gtt);
        Mutex::new(World { m, gpu, _renders: renders })
    })
}

/// The target's body: one fuzz input.
pub fn run(data: &[u8]) {
    let w = world().lock().unwrap_or_else(|e| e.into_inner());
    let mut b = Bytes(data);
    let kind = match b.u8() % 3 {
        0 => EngineKind::Aql,
        1 => EngineKind::Pm4,
        _ => EngineKind::Sdma,
    };
    let ring_bytes = 1u64 << (b.u8() % 14);
    let ring_va = match b.u8() % 4 {
        0 => addr(&mut b),
        _ => BASE + ((u64::from(b.u32()) % BO_BYTES) & !0xff),
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
    let desc =
        RingDesc { gpu_id: w.gpu, queue_id: 1, kind, ring_va, ring_bytes, rptr_va: addr(&mut b), wptr_va: 0, ctx_va: 0, doorbell: 0 };
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
}
