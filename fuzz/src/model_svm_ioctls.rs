//! Fuzz target for the model's SVM and XNACK ioctls: sequences of SET / GET (and unknown ops)
//! over a private arena of process memory, its edges and random addresses, with fuzzed sizes,
//! attribute lists (known and unknown types, the process's gpu_ids, SYSMEM, UNDEFINED, random
//! values), request sizes that cover fewer or more attributes than `nattr` says, and
//! SET_XNACK_MODE queries and changes. Nothing may crash or panic; after every call the ranges
//! must be sorted and disjoint, and a granularity just set must read back (clamped to 0x3F).

use crate::common::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_model::{Model, ModelConfig};
use std::os::fd::OwnedFd;
use std::sync::{Mutex, OnceLock};
use zerocopy::IntoBytes;

const PAGE: u64 = 4096;
const ARENA_PAGES: u64 = 64;

struct World {
    m: Model,
    gpus: Vec<u32>,
    _renders: Vec<OwnedFd>,
    arena: u64,
}

fn world() -> &'static Mutex<World> {
    static W: OnceLock<Mutex<World>> = OnceLock::new();
    W.get_or_init(|| {
        let m = Model::new(ModelConfig::catalogue("mi210")).expect("model");
        let gpus: Vec<u32> = m.gpus().iter().map(|g| g.gpu_id).collect();
        let renders = acquire_vms(&m, 2);
        // Heap memory is process memory; leaked so the arena lives as long as the process.
        let buf: &'static mut [u8] = Box::leak(vec![0u8; ((ARENA_PAGES + 1) * PAGE) as usize].into_boxed_slice());
        let p = (buf.as_ptr() as u64 + PAGE - 1) & !(PAGE - 1);
        Mutex::new(World { m, gpus, _renders: renders, arena: p as u64 })
    })
}

fn value(b: &mut Bytes, gpus: &[u32]) -> u32 {
    match b.u8() % 5 {
        0 => gpus[b.u8() as usize % gpus.len()],
        1 => KFD_IOCTL_SVM_LOCATION_SYSMEM,
        2 => KFD_IOCTL_SVM_LOCATION_UNDEFINED,
        3 => u32::from(b.u8()),
        _ => b.u32(),
    }
}

/// One SVM ioctl; returns the result and the attributes as they came back.
fn svm(m: &Model, op: u32, start: u64, size: u64, attrs: &[kfd_ioctl_svm_attribute], nattr: u32) -> (Result<(), i32>, Vec<u8>) {
    let mut buf = Vec::with_capacity(24 + attrs.len() * 8);
    buf.extend_from_slice(kfd_ioctl_svm_args { start_addr: start, size, op, nattr, attrs: [] }.as_bytes());
    for a in attrs {
        buf.extend_from_slice(a.as_bytes());
    }
    let request = AMDKFD_IOC_SVM + (((attrs.len() * 8) as u32) << 16);
    // SAFETY: `buf` covers exactly the size the request encodes.
    let r = unsafe { m.handle_ioctl(u64::from(request), buf.as_mut_ptr().cast()) };
    (r, buf)
}

/// The target's body: one fuzz input.
pub fn run(data: &[u8]) {
    let w = world().lock().unwrap_or_else(|e| e.into_inner());
    let (m, gpus, arena) = (&w.m, &w.gpus, w.arena);
    let mut b = Bytes(data);
    let mut steps = 0;
    while !b.is_empty() && steps < 64 {
        steps += 1;
        let kind = b.u8();
        if kind % 8 == 7 {
            let v = match b.u8() % 4 {
                0 => -1,
                1 => 0,
                2 => 1,
                _ => b.u32() as i32,
            };
            let mut a = kfd_ioctl_set_xnack_mode_args { xnack_enabled: v };
            // SAFETY: a live argument struct.
            let r = unsafe { m.handle_ioctl(u64::from(AMDKFD_IOC_SET_XNACK_MODE), a.as_mut_bytes().as_mut_ptr().cast()) };
            if v < 0 {
                assert!(r.is_ok() && (a.xnack_enabled == 0 || a.xnack_enabled == 1));
            }
            continue;
        }
        let start = match b.u8() % 4 {
            0 | 1 => arena + u64::from(b.u8()) % ARENA_PAGES * PAGE,
            2 => arena + u64::from(b.u32() % (ARENA_PAGES as u32 * PAGE as u32)),
            _ => b.u64(),
        };
        let size = match b.u8() % 4 {
            0 | 1 => (1 + u64::from(b.u8()) % 16) * PAGE,
            2 => u64::from(b.u32()),
            _ => b.u64(),
        };
        let n = (b.u8() % 6) as usize;
        let mut attrs = Vec::with_capacity(n);
        for _ in 0..n {
            let ty = match b.u8() % 10 {
                t @ 0..=7 => u32::from(t),
                8 => u32::from(b.u8()),
                _ => b.u32(),
            };
            attrs.push(kfd_ioctl_svm_attribute { r#type: ty, value: value(&mut b, gpus) });
        }
        let nattr = match b.u8() % 8 {
            0 => n as u32 + 1,
            1 => b.u32(),
            _ => n as u32,
        };
        let op = match kind % 8 {
            0..=3 => KFD_IOCTL_SVM_OP_SET_ATTR,
            4..=5 => KFD_IOCTL_SVM_OP_GET_ATTR,
            _ => b.u32(),
        };
        let (r, _) = svm(m, op, start, size, &attrs, nattr);
        // A granularity just set reads back, clamped. Only the first `nattr` attributes are
        // the request's: with a smaller `nattr` the KFD applies those and never looks at the
        // rest of the buffer (with a larger one the SET fails).
        if r.is_ok() && op == KFD_IOCTL_SVM_OP_SET_ATTR {
            let sent = &attrs[..attrs.len().min(nattr as usize)];
            if let Some(g) = sent.iter().rev().find(|a| a.r#type == KFD_IOCTL_SVM_ATTR_GRANULARITY) {
                let q = [kfd_ioctl_svm_attribute { r#type: KFD_IOCTL_SVM_ATTR_GRANULARITY, value: 0 }];
                let (r2, out) = svm(m, KFD_IOCTL_SVM_OP_GET_ATTR, start, size, &q, 1);
                assert_eq!(r2, Ok(()));
                let got = u32::from_ne_bytes(out[28..32].try_into().unwrap());
                assert_eq!(got, g.value.min(0x3F));
            }
        }
        let ranges = m.svm_ranges();
        for pair in ranges.windows(2) {
            assert!(pair[0].0 + pair[0].1 <= pair[1].0, "ranges overlap: {pair:?}");
        }
        assert!(ranges.iter().all(|r| r.1 > 0 && r.0 % PAGE == 0 && r.1 % PAGE == 0));
    }
}
