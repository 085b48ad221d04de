//! The model's queue ioctls (CREATE / DESTROY / UPDATE_QUEUE, SET_CU_MASK, GET_QUEUE_WAVE_STATE,
//! ALLOC_QUEUE_GWS, SET_TRAP_HANDLER), their kernel errors, and the doorbell watcher's
//! bookkeeping. Expected values come from the kernel's rules (kfd_chardev.c, kfd_queue.c,
//! kfd_process_queue_manager.c, kfd_device_queue_manager.c, amdgpu_doorbell.h).

mod support;

use hsakmt_core::abi::kfd::*;
use hsakmt_model::engine::EngineKind;
use hsakmt_model::{Model, ModelConfig, ENOTSUPP};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::*;
use zerocopy::{FromZeros, IntoBytes};

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const ENOMEM: i32 = libc::ENOMEM;
const ENOSPC: i32 = libc::ENOSPC;
const ESRCH: i32 = libc::ESRCH;
const EBUSY: i32 = libc::EBUSY;
const ENODEV: i32 = libc::ENODEV;

const GTT: u32 = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) as u32;
const PM4: u32 = KFD_IOC_QUEUE_TYPE_COMPUTE as u32;
const AQL: u32 = KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32;
const SDMA: u32 = KFD_IOC_QUEUE_TYPE_SDMA as u32;
const XGMI: u32 = KFD_IOC_QUEUE_TYPE_SDMA_XGMI as u32;
const BY_ENG: u32 = KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID as u32;

/// Queue memory of one GPU, mapped there: ring, a page for rptr/wptr, EOP buffer, CWSR area.
#[derive(Clone, Copy)]
struct QMem {
    gpu_id: u32,
    ring: u64,
    ring_size: u32,
    ptrs: u64,
    eop: u64,
    ctx: u64,
    ctx_size: u32,
    ctl_stack: u32,
}

/// kfd_queue_ctx_save_restore_size of a GPU, written out from the kernel's formula:
/// (ctl_stack_size, cwsr_size, debug_memory_size).
fn cwsr_of(gfxv: u32, cu: u64, wave_num: u64, xcc: u64) -> (u32, u32, u32) {
    let _ = xcc;
    let page = |x: u64| x.div_ceil(4096) * 4096;
    let vgpr = match gfxv {
        90402 | 90010 | 90008 | 90500 => 0x80000,
        110000 | 110001 | 120000 | 120001 => 0x60000,
        _ => 0x40000,
    };
    let wg = page(cu * (vgpr + 0x4000 + 0x10000 + 0x1000));
    let per_wave = if gfxv >= 100100 { 12 } else { 8 };
    let ctl = page(40 + wave_num * per_wave + 8);
    (ctl as u32, (ctl + wg) as u32, (wave_num * 32).div_ceil(64) as u32 * 64)
}

/// The CWSR layout of the catalogue GPUs used here.
fn cwsr_for(name: &str) -> (u32, u32, u32, u64) {
    match name {
        // MI210 (gfx90a): 416 SIMDs / 4 = 104 CUs; wave_num = min(104 * 40, 8 / 1 * 512).
        "mi210" => {
            let (a, b, c) = cwsr_of(90010, 104, 4096, 1);
            (a, b, c, 1)
        }
        // RX 7900 XTX (gfx1100): 192 / 2 = 96 CUs; wave_num = 96 * 32.
        "rx7900xtx" => {
            let (a, b, c) = cwsr_of(110000, 96, 3072, 1);
            (a, b, c, 1)
        }
        // MI300X CPX partition (gfx942, one XCC): 152 / 4 = 38 CUs; min(38 * 40, 4 / 1 * 512).
        "mi300x-cpx" => {
            let (a, b, c) = cwsr_of(90402, 38, 1520, 1);
            (a, b, c, 1)
        }
        // MI25 (gfx900 by device id): 256 / 4 = 64 CUs; min(64 * 40, 4 / 1 * 512).
        _ => {
            let (a, b, c) = cwsr_of(90000, 64, 2048, 1);
            (a, b, c, 1)
        }
    }
}

struct Fx {
    m: Arc<Model>,
    ids: Vec<u32>,
    _renders: Vec<OwnedFd>,
    name: &'static str,
}

fn setup(name: &'static str) -> Fx {
    let m = Arc::new(Model::new(ModelConfig::catalogue(name)).unwrap());
    let n = m.gpus().len().min(8);
    let (ids, renders) = acquire(&m, n);
    Fx { m, ids, _renders: renders, name }
}

impl Fx {
    /// Map queue memory on GPU `i` (each GPU has its own VM, so the same VAs serve every GPU).
    fn qmem(&self, i: usize) -> QMem {
        let (m, g) = (&*self.m, self.ids[i]);
        let (ctl_stack, cwsr, debug, xcc) = cwsr_for(self.name);
        let ring_size = 64 << 10;
        let total = (u64::from(cwsr) + u64::from(debug)) * xcc;
        let total = total.div_ceil(4096) * 4096;
        alloc_map(m, g, 0x1000_0000, u64::from(ring_size), GTT);
        alloc_map(m, g, 0x1100_0000, 4096, GTT);
        alloc_map(m, g, 0x1200_0000, 4096, GTT);
        alloc_map(m, g, 0x2000_0000, total, GTT);
        QMem { gpu_id: g, ring: 0x1000_0000, ring_size, ptrs: 0x1100_0000, eop: 0x1200_0000, ctx: 0x2000_0000, ctx_size: cwsr, ctl_stack }
    }
}

fn args(q: &QMem, queue_type: u32) -> kfd_ioctl_create_queue_args {
    let mut a = kfd_ioctl_create_queue_args::new_zeroed();
    a.gpu_id = q.gpu_id;
    a.queue_type = queue_type;
    a.queue_percentage = 100;
    a.queue_priority = 7;
    a.ring_base_address = q.ring;
    a.ring_size = q.ring_size;
    a.read_pointer_address = q.ptrs;
    a.write_pointer_address = q.ptrs + 8;
    if queue_type == PM4 || queue_type == AQL {
        a.eop_buffer_address = q.eop;
        a.eop_buffer_size = 4096;
        a.ctx_save_restore_address = q.ctx;
        a.ctx_save_restore_size = q.ctx_size;
        a.ctl_stack_size = q.ctl_stack;
    }
    a
}

fn create(m: &Model, a: &mut kfd_ioctl_create_queue_args) -> Result<u32, i32> {
    raw(m, AMDKFD_IOC_CREATE_QUEUE, a).map(|()| a.queue_id)
}

fn destroy(m: &Model, id: u32) -> Result<(), i32> {
    let mut a = kfd_ioctl_destroy_queue_args { queue_id: id, pad: 0 };
    raw(m, AMDKFD_IOC_DESTROY_QUEUE, &mut a)
}

fn update(m: &Model, id: u32, ring: u64, size: u32, pct: u32, prio: u32) -> Result<(), i32> {
    let mut a = kfd_ioctl_update_queue_args::new_zeroed();
    a.queue_id = id;
    a.ring_base_address = ring;
    a.ring_size = size;
    a.queue_percentage = pct;
    a.queue_priority = prio;
    raw(m, AMDKFD_IOC_UPDATE_QUEUE, &mut a)
}

/// Write a queue's doorbell the way libhsakmt finds it: mmap the KFD fd at the doorbell
/// offset's slice (SOC15: 1024 doorbells of 8 bytes), write at the offset within it.
fn ring(m: &Model, doorbell_offset: u64, value: u64) {
    let fd = m.create_memfd().unwrap();
    let mask = 8192 - 1;
    // SAFETY: a fresh shared mapping of the model's memfd at the slice offset it answered.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            8192,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            (doorbell_offset & !mask) as i64,
        )
    };
    assert_ne!(p, libc::MAP_FAILED, "the doorbell slice is mappable at doorbell_offset & ~0x1fff");
    // SAFETY: inside the 8 KiB mapping, 8-aligned (doorbells are 8-byte slots).
    unsafe { std::ptr::write_volatile((p as usize + (doorbell_offset & mask) as usize) as *mut u64, value) };
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p, 8192) };
}

/// One PM4 NOP of `dwords` dwords (header included) at `va`: work a healthy queue consumes.
fn pm4_nop(m: &Model, gpu_id: u32, va: u64, dwords: u32) {
    assert!(dwords >= 2);
    // Type 3, body count - 1 in bits 29:16, opcode 0x10 (NOP) in bits 15:8.
    let header = (3u32 << 30) | ((dwords - 2) << 16) | (0x10 << 8);
    m.gpu_write(gpu_id, va, &header.to_le_bytes()).unwrap();
}

#[test]
fn every_queue_type_is_created_with_kernel_doorbells() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let mut a = args(&q, PM4);
    let pm4 = create(m, &mut a).unwrap();
    let db_pm4 = a.doorbell_offset;
    let mut a = args(&q, AQL);
    let aql = create(m, &mut a).unwrap();
    let db_aql = a.doorbell_offset;
    let mut a = args(&q, SDMA);
    let sdma = create(m, &mut a).unwrap();
    let db_sdma = a.doorbell_offset;
    let mut a = args(&q, XGMI);
    let xgmi = create(m, &mut a).unwrap();
    let db_xgmi = a.doorbell_offset;
    let mut a = args(&q, BY_ENG);
    a.sdma_engine_id = 3; // MI210: engines 0-1 PCIe, 2-4 XGMI
    let by_eng = create(m, &mut a).unwrap();
    let db_by_eng = a.doorbell_offset;
    // Lowest free ids per process, from 0.
    assert_eq!((pm4, aql, sdma, xgmi, by_eng), (0, 1, 2, 3, 4));
    assert_eq!(m.live_queues(), 5);
    // SOC15: one 8 KiB slice per process and GPU, aligned to its size; the low bits are the
    // byte offset of the 8-byte doorbell.
    let slice = db_pm4 & !0x1fff;
    for d in [db_aql, db_sdma, db_xgmi, db_by_eng] {
        assert_eq!(d & !0x1fff, slice);
    }
    // CP doorbells: lowest free below the reserved non-CP range.
    assert_eq!(db_pm4 & 0x1fff, 0);
    assert_eq!(db_aql & 0x1fff, 8);
    // SDMA doorbells (Vega20 layout: engine i at 0x100 + 10 i, queue q at + (q & 1) * 512 +
    // (q >> 1)): SDMA takes engine 0 queue 0, XGMI engine 2 queue 0, BY_ENG_ID 3 engine 3.
    assert_eq!(db_sdma & 0x1fff, 0x100 * 8);
    assert_eq!(db_xgmi & 0x1fff, 0x114 * 8);
    assert_eq!(db_by_eng & 0x1fff, 0x11E * 8);
    let i = m.queue_info(by_eng).unwrap();
    assert_eq!((i.queue_type, i.sdma, i.kind), (XGMI, Some((3, 0)), EngineKind::Sdma));
    assert_eq!(m.queue_info(xgmi).unwrap().sdma, Some((2, 0)));
    assert_eq!(m.queue_info(sdma).unwrap().sdma, Some((0, 0)));
    assert_eq!(m.queue_info(aql).unwrap().kind, EngineKind::Aql);
    assert_eq!(m.queue_info(pm4).unwrap().kind, EngineKind::Pm4);
    assert!(m.queue_info(pm4).unwrap().active);
    for id in [pm4, aql, sdma, xgmi, by_eng] {
        destroy(m, id).unwrap();
    }
    assert_eq!(m.live_queues(), 0);
    // A freed SDMA queue is handed out again.
    let mut a = args(&q, SDMA);
    create(m, &mut a).unwrap();
    assert_eq!(a.doorbell_offset & 0x1fff, 0x100 * 8);
}

#[test]
fn the_doorbell_bo_and_create_queue_agree_on_the_slice() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(1);
    let mut a = args(&q, AQL);
    create(m, &mut a).unwrap();
    // hsaKmtCreateQueue's dGPU path allocates a DOORBELL BO of the slice size; its mmap
    // offset must be the slice CREATE_QUEUE answered.
    let mut d = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: 0x3000_0000,
        size: 8192,
        handle: 0,
        mmap_offset: a.doorbell_offset & !0x1fff,
        gpu_id: q.gpu_id,
        flags: (KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32,
    };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut d).unwrap();
    assert_eq!(d.mmap_offset, a.doorbell_offset & !0x1fff);
}

#[test]
fn ring_size_rules() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let keep = create(m, &mut args(&q, PM4)).unwrap();
    let mut a = args(&q, PM4);
    a.ring_size = 3 << 12;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    // Below KFD_MIN_QUEUE_RING_SIZE: clamped to 1024 and answered back. A 1024-byte ring is
    // less than a page: only the mapping's start is checked.
    let mut a = args(&q, SDMA);
    a.ring_size = 0;
    create(m, &mut a).unwrap();
    assert_eq!(a.ring_size, 1024);
    // The ring mapping must be exactly the ring size.
    let mut a = args(&q, SDMA);
    a.ring_size = 128 << 10;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    // 1.22: a metadata ring that is not a power of two.
    let mut a = args(&q, AQL);
    a.metadata_ring_size = 12345;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    assert!(m.queue_info(keep).unwrap().active, "earlier queue untouched");
    assert_eq!(m.live_queues(), 2);
}

#[test]
fn unmapped_or_wild_queue_memory() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let keep = create(m, &mut args(&q, AQL)).unwrap();
    let mut a = args(&q, PM4);
    a.ring_base_address = 0x5000_0000; // nothing mapped there
    assert_eq!(create(m, &mut a), Err(EINVAL));
    let mut a = args(&q, PM4);
    a.write_pointer_address = 0x5000_0000;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    let mut a = args(&q, SDMA);
    a.read_pointer_address = 0;
    assert_eq!(create(m, &mut a), Err(EINVAL), "0 passes access_ok but is never mapped");
    // Not inside the ring mapping's first page.
    let mut a = args(&q, SDMA);
    a.ring_base_address = q.ring + 4096;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    // Mapped on another GPU only.
    let mut a = args(&q, SDMA);
    a.gpu_id = f.ids[2];
    assert_eq!(create(m, &mut a), Err(EINVAL));
    // Outside the user address space: access_ok → EFAULT.
    for field in 0..4 {
        let mut a = args(&q, PM4);
        let wild = 0xffff_8000_0000_0000;
        match field {
            0 => a.ring_base_address = wild,
            1 => a.read_pointer_address = wild,
            2 => a.write_pointer_address = wild,
            _ => a.eop_buffer_address = wild,
        }
        assert_eq!(create(m, &mut a), Err(EFAULT), "field {field}");
    }
    // A wild argument pointer.
    // SAFETY: an unmapped address; the model checks it.
    let r = unsafe { m.handle_ioctl(u64::from(AMDKFD_IOC_CREATE_QUEUE), 0x10 as *mut _) };
    assert_eq!(r, Err(EFAULT));
    assert_eq!(m.live_queues(), 1);
    destroy(m, keep).unwrap();
}

#[test]
fn eop_and_cwsr_rules() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let keep = create(m, &mut args(&q, PM4)).unwrap();
    // The EOP size must be the node's (4096 on gfx9+), neither smaller nor larger.
    for size in [2048, 8192] {
        let mut a = args(&q, PM4);
        a.eop_buffer_size = size;
        assert_eq!(create(m, &mut a), Err(EINVAL), "eop {size}");
    }
    let mut a = args(&q, AQL);
    a.ctl_stack_size += 4096;
    assert_eq!(create(m, &mut a), Err(EINVAL), "ctl stack size must be the node's");
    let mut a = args(&q, AQL);
    a.ctx_save_restore_size -= 4096;
    assert_eq!(create(m, &mut a), Err(EINVAL), "CWSR area below the node's size");
    let mut a = args(&q, AQL);
    a.ctx_save_restore_size += 4096;
    assert_eq!(create(m, &mut a), Err(EINVAL), "a larger area must be mapped at its whole size");
    // No EOP buffer is fine (not every ASIC needs one); SDMA queues ignore EOP and CWSR.
    let mut a = args(&q, AQL);
    a.eop_buffer_address = 0;
    create(m, &mut a).unwrap();
    let mut a = args(&q, SDMA);
    a.eop_buffer_address = 0x5000_0000;
    a.eop_buffer_size = 12;
    create(m, &mut a).unwrap();
    assert_eq!(m.live_queues(), 3);
    destroy(m, keep).unwrap();
}

/// AMDKFD_IOC_SVM SET_ATTR with `attrs` after the header (the request's size covers them).
fn svm_set(m: &Model, start: u64, size: u64, attrs: &[(u32, u32)]) -> Result<(), i32> {
    let h = kfd_ioctl_svm_args { start_addr: start, size, op: KFD_IOCTL_SVM_OP_SET_ATTR, nattr: attrs.len() as u32, attrs: [] };
    let mut buf = h.as_bytes().to_vec();
    for &(r#type, value) in attrs {
        buf.extend_from_slice(kfd_ioctl_svm_attribute { r#type, value }.as_bytes());
    }
    let request = AMDKFD_IOC_SVM + (((attrs.len() * 8) as u32) << 16);
    // SAFETY: `buf` is a live buffer of exactly the size the request encodes.
    unsafe { m.handle_ioctl(u64::from(request), buf.as_mut_ptr().cast()) }
}

/// kfd_queue_buffer_svm_get (kfd_queue.c): a CWSR area no BO mapping matches is accepted when
/// SVM ranges cover all of it, each with GPU_ALWAYS_MAPPED and this GPU's ACCESS or
/// ACCESS_IN_PLACE (upstream libhsakmt's unified CWSR area); anything less is EINVAL. While the
/// queue lives the kernel refuses no SVM change (its queue_refcount only evicts the queues
/// when the CPU unmaps the range).
#[test]
fn cwsr_area_in_svm_ranges() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let g = q.gpu_id;
    let total = (u64::from(q.ctx_size) + u64::from(cwsr_for(f.name).2)) * cwsr_for(f.name).3;
    let total = total.div_ceil(4096) * 4096;
    // SAFETY: a fresh private anonymous mapping, unmapped at the end of the test.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), total as usize, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    assert_ne!(p, libc::MAP_FAILED);
    let area = p as u64;
    let half = (total / 2).div_ceil(4096) * 4096;
    const ALWAYS: u32 = KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED as u32;
    let (access, in_place, no_access) = (KFD_IOCTL_SVM_ATTR_ACCESS, KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE, KFD_IOCTL_SVM_ATTR_NO_ACCESS);
    let (set, clr, gran) = (KFD_IOCTL_SVM_ATTR_SET_FLAGS, KFD_IOCTL_SVM_ATTR_CLR_FLAGS, KFD_IOCTL_SVM_ATTR_GRANULARITY);
    let try_create = || {
        let mut a = args(&q, AQL);
        a.ctx_save_restore_address = area;
        create(m, &mut a)
    };
    assert_eq!(try_create(), Err(EINVAL), "no SVM range and no BO there");
    svm_set(m, area, total, &[(access, g)]).unwrap();
    assert_eq!(try_create(), Err(EINVAL), "mapped to the GPU but without GPU_ALWAYS_MAPPED");
    svm_set(m, area, total, &[(set, ALWAYS), (no_access, g)]).unwrap();
    assert_eq!(try_create(), Err(EINVAL), "GPU_ALWAYS_MAPPED but not mapped to this GPU");
    if let Some(&other) = f.ids.get(1) {
        svm_set(m, area, total, &[(access, other)]).unwrap();
        assert_eq!(try_create(), Err(EINVAL), "mapped to another GPU only");
        svm_set(m, area, total, &[(no_access, other)]).unwrap();
    }
    svm_set(m, area, half, &[(access, g)]).unwrap();
    assert_eq!(try_create(), Err(EINVAL), "only the first half is registered for this GPU");
    // Two ranges (different granularity, so they stay apart), one ACCESS, one ACCESS_IN_PLACE.
    svm_set(m, area + half, total - half, &[(in_place, g), (gran, 3)]).unwrap();
    let id = try_create().unwrap();
    // The kernel refuses no SVM change while the queue holds the ranges.
    svm_set(m, area, total, &[(clr, ALWAYS)]).unwrap();
    destroy(m, id).unwrap();
    assert_eq!(try_create(), Err(EINVAL), "GPU_ALWAYS_MAPPED was cleared");
    // Address 0 with a size: neither a BO mapping nor a range.
    let mut a = args(&q, AQL);
    a.ctx_save_restore_address = 0;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    // SAFETY: the mapping made above; nothing uses it any more.
    unsafe { libc::munmap(p, total as usize) };
}

#[test]
fn argument_and_device_errors() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let mut a = args(&q, PM4);
    a.queue_percentage = 101;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    // Bits 8-15 are the PM4 target XCC, not the percentage.
    let mut a = args(&q, PM4);
    a.queue_percentage = 0x0164;
    create(m, &mut a).unwrap();
    let mut a = args(&q, PM4);
    a.queue_priority = 16;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    let mut a = args(&q, PM4);
    a.queue_type = 5;
    assert_eq!(create(m, &mut a), Err(ENOTSUPP));
    let mut a = args(&q, PM4);
    a.gpu_id = 12345;
    assert_eq!(create(m, &mut a), Err(EINVAL));
    let mut a = args(&q, BY_ENG);
    a.sdma_engine_id = 5; // 2 + 3 engines: ids 0..=4
    assert_eq!(create(m, &mut a), Err(EINVAL));
    // A GPU without an acquired VM.
    let m2 = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    let mut a = args(&q, PM4);
    assert_eq!(create(&m2, &mut a), Err(ESRCH));
    assert_eq!(m.live_queues(), 1);
}

#[test]
fn destroy_twice_and_unknown() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let a = create(m, &mut args(&q, PM4)).unwrap();
    let b = create(m, &mut args(&q, PM4)).unwrap();
    destroy(m, a).unwrap();
    assert_eq!(destroy(m, a), Err(EINVAL));
    assert_eq!(destroy(m, 999), Err(EINVAL));
    assert!(m.queue_info(b).is_some());
    // The freed id and CP doorbell are the lowest free again.
    let mut x = args(&q, PM4);
    assert_eq!(create(m, &mut x), Ok(a));
    assert_eq!(x.doorbell_offset & 0x1fff, 0);
    destroy(m, b).unwrap();
    destroy(m, a).unwrap();
    assert_eq!(m.live_queues(), 0);
}

#[test]
fn queue_limit_per_device() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    // 127 queues per process and device (the HWS limit), BOs shared between them.
    let ids: Vec<u32> = (0..127).map(|_| create(m, &mut args(&q, PM4)).unwrap()).collect();
    assert_eq!(create(m, &mut args(&q, PM4)), Err(ENOSPC));
    assert_eq!(create(m, &mut args(&q, SDMA)), Err(ENOSPC), "the limit counts every queue type");
    // Another device is not affected.
    let q1 = f.qmem(1);
    let other = create(m, &mut args(&q1, PM4)).unwrap();
    assert_eq!(other, 127);
    destroy(m, ids[5]).unwrap();
    assert_eq!(create(m, &mut args(&q, PM4)), Ok(5));
    assert_eq!(m.live_queues(), 128);
}

#[test]
fn queue_ids_run_out_at_1024() {
    let m = Arc::new(Model::new(ModelConfig::catalogue("mi300x-cpx")).unwrap());
    let (ids, _r) = acquire(&m, 5);
    let f = Fx { m, ids, _renders: Vec::new(), name: "mi300x-cpx" };
    let m = &*f.m;
    let mut n = 0;
    for i in 0..5 {
        let q = f.qmem(i);
        // GC 9.4.3 (gfx942): 255 queues per device.
        for _ in 0..255 {
            match create(m, &mut args(&q, PM4)) {
                Ok(_) => n += 1,
                Err(e) => {
                    assert_eq!(e, ENOMEM, "after {n} queues");
                    assert_eq!(n, 1024);
                }
            }
        }
    }
    assert_eq!(n, 1024);
    assert_eq!(m.live_queues(), 1024);
    destroy(m, 17).unwrap();
    assert_eq!(create(m, &mut args(&f.qmem_reuse(4), PM4)), Ok(17));
}

impl Fx {
    /// The queue memory `qmem(i)` already mapped.
    fn qmem_reuse(&self, i: usize) -> QMem {
        let (ctl_stack, cwsr, _, _) = cwsr_for(self.name);
        QMem {
            gpu_id: self.ids[i],
            ring: 0x1000_0000,
            ring_size: 64 << 10,
            ptrs: 0x1100_0000,
            eop: 0x1200_0000,
            ctx: 0x2000_0000,
            ctx_size: cwsr,
            ctl_stack,
        }
    }
}

#[test]
fn sdma_engines_run_out() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    // Engine 0 by id: 8 queues per engine.
    for n in 0..8 {
        let mut a = args(&q, BY_ENG);
        a.sdma_engine_id = 0;
        create(m, &mut a).unwrap();
        assert_eq!(m.queue_info(a.queue_id).unwrap().sdma, Some((0, n)));
    }
    let mut a = args(&q, BY_ENG);
    a.sdma_engine_id = 0;
    assert_eq!(create(m, &mut a), Err(ENOMEM));
    // Plain SDMA queues take what is left: engine 1's 8.
    for _ in 0..8 {
        let mut a = args(&q, SDMA);
        create(m, &mut a).unwrap();
        assert_eq!(m.queue_info(a.queue_id).unwrap().sdma.map(|s| s.0), Some(1));
    }
    assert_eq!(create(m, &mut args(&q, SDMA)), Err(ENOMEM));
    // 3 XGMI engines x 8.
    for _ in 0..24 {
        create(m, &mut args(&q, XGMI)).unwrap();
    }
    assert_eq!(create(m, &mut args(&q, XGMI)), Err(ENOMEM));
    assert_eq!(m.live_queues(), 40);
    // Compute queues still work.
    create(m, &mut args(&q, AQL)).unwrap();
}

#[test]
fn update_queue_rules() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let id = create(m, &mut args(&q, PM4)).unwrap();
    let r = q.ring;
    assert_eq!(update(m, id, r, q.ring_size, 101, 0), Err(EINVAL));
    assert_eq!(update(m, id, r, q.ring_size, 50, 16), Err(EINVAL));
    assert_eq!(update(m, id, r, 3000, 50, 1), Err(EINVAL));
    assert_eq!(update(m, id, 0xffff_f000_0000_0000, q.ring_size, 50, 1), Err(EFAULT));
    assert_eq!(update(m, 77, r, q.ring_size, 50, 1), Err(EFAULT), "unknown queue");
    assert_eq!(update(m, id, 0x5000_0000, q.ring_size, 50, 1), Err(EFAULT), "ring not mapped");
    assert_eq!(update(m, id, r, 32 << 10, 50, 1), Err(EFAULT), "ring mapping of another size");
    let i = m.queue_info(id).unwrap();
    assert_eq!((i.percent, i.priority, i.ring_bytes), (100, 7, 64 << 10), "failed updates change nothing");
    update(m, id, r, q.ring_size, 50, 3).unwrap();
    let i = m.queue_info(id).unwrap();
    assert_eq!((i.percent, i.priority, i.active), (50, 3, true));
    // Ring address 0 or percentage 0 deactivate the queue.
    update(m, id, 0, q.ring_size, 50, 3).unwrap();
    assert!(!m.queue_info(id).unwrap().active);
    update(m, id, r, q.ring_size, 0, 3).unwrap();
    assert!(!m.queue_info(id).unwrap().active);
    // Size below 1024 is clamped.
    update(m, id, r, 0, 10, 3).unwrap();
    let i = m.queue_info(id).unwrap();
    assert_eq!((i.ring_bytes, i.active), (1024, true));
}

#[test]
fn runtime_enable_refused_while_queues_exist() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let id = create(m, &mut args(&q, SDMA)).unwrap();
    let mut r = kfd_ioctl_runtime_enable_args { r_debug: 0, mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK as u32, capabilities_mask: 0 };
    assert_eq!(raw(m, AMDKFD_IOC_RUNTIME_ENABLE, &mut r), Err(libc::EEXIST));
    assert!(m.queue_info(id).is_some());
    destroy(m, id).unwrap();
    raw(m, AMDKFD_IOC_RUNTIME_ENABLE, &mut r).unwrap();
}

#[test]
fn cu_mask_rules() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let id = create(m, &mut args(&q, AQL)).unwrap();
    let mask = [u32::MAX; 40];
    let set = |queue_id: u32, num: u32, ptr: u64| {
        let mut a = kfd_ioctl_set_cu_mask_args { queue_id, num_cu_mask: num, cu_mask_ptr: ptr };
        raw(m, AMDKFD_IOC_SET_CU_MASK, &mut a)
    };
    let p = mask.as_ptr() as u64;
    assert_eq!(set(id, 0, p), Err(EINVAL));
    assert_eq!(set(id, 33, p), Err(EINVAL));
    assert_eq!(set(id, 64, 0x10), Err(EFAULT));
    assert_eq!(set(99, 64, p), Err(EFAULT), "unknown queue");
    // 128 bits on a 104-CU GPU: the bits past the active CUs are dropped.
    set(id, 128, p).unwrap();
    let i = m.queue_info(id).unwrap();
    assert_eq!(i.cu_mask_count, 104);
    assert_eq!(i.cu_mask, vec![u32::MAX, u32::MAX, u32::MAX, 0xff]);
    // Above 1024 bits: only the first 1024 (32 words) are read.
    set(id, 4096, p).unwrap();
    assert_eq!(m.queue_info(id).unwrap().cu_mask_count, 104);
    // GC 10+: CUs come in pairs.
    let f = setup("rx7900xtx");
    let m = &*f.m;
    let q = f.qmem(0);
    let id = create(m, &mut args(&q, SDMA)).unwrap();
    let mut a = kfd_ioctl_set_cu_mask_args { queue_id: id, num_cu_mask: 32, cu_mask_ptr: [0b01u32].as_ptr() as u64 };
    assert_eq!(raw(m, AMDKFD_IOC_SET_CU_MASK, &mut a), Err(EINVAL));
    let mut a = kfd_ioctl_set_cu_mask_args { queue_id: id, num_cu_mask: 32, cu_mask_ptr: [0b1100u32].as_ptr() as u64 };
    raw(m, AMDKFD_IOC_SET_CU_MASK, &mut a).unwrap();
}

#[test]
fn wave_state_of_an_inactive_compute_queue() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let id = create(m, &mut args(&q, AQL)).unwrap();
    let sdma = create(m, &mut args(&q, SDMA)).unwrap();
    let mut hdr = [0xAAAA_AAAAu32; 8];
    let get = |queue_id: u32, ptr: u64| {
        let mut a = kfd_ioctl_get_queue_wave_state_args {
            ctl_stack_address: ptr,
            ctl_stack_used_size: 9,
            save_area_used_size: 9,
            queue_id,
            pad: 0,
        };
        raw(m, AMDKFD_IOC_GET_QUEUE_WAVE_STATE, &mut a).map(|()| (a.ctl_stack_used_size, a.save_area_used_size))
    };
    assert_eq!(get(id, hdr.as_mut_ptr() as u64), Err(EINVAL), "the queue is active");
    assert_eq!(get(sdma, hdr.as_mut_ptr() as u64), Err(EINVAL), "not a compute queue");
    assert_eq!(get(55, hdr.as_mut_ptr() as u64), Err(EFAULT), "unknown queue");
    update(m, id, q.ring, q.ring_size, 0, 7).unwrap();
    assert_eq!(get(id, 0x10), Err(EFAULT));
    assert_eq!(get(id, hdr.as_mut_ptr() as u64), Ok((0, 0)));
    // The header as init_mqd leaves the control stack registers: both offsets at the end of
    // the control stack, nothing saved. Only its 16 bytes are written.
    assert_eq!(hdr[..4], [q.ctl_stack, 0, q.ctl_stack, 0]);
    assert_eq!(hdr[4], 0xAAAA_AAAA);
}

#[test]
fn gws_rules() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let a = create(m, &mut args(&q, AQL)).unwrap();
    let b = create(m, &mut args(&q, AQL)).unwrap();
    let gws = |queue_id: u32, num: u32| {
        let mut x = kfd_ioctl_alloc_queue_gws_args { queue_id, num_gws: num, first_gws: 77, pad: 0 };
        raw(m, AMDKFD_IOC_ALLOC_QUEUE_GWS, &mut x).map(|()| x.first_gws)
    };
    assert_eq!(gws(a, 64), Ok(0));
    assert!(m.queue_info(a).unwrap().has_gws);
    assert_eq!(gws(b, 64), Err(EBUSY), "one queue per process and device");
    assert_eq!(gws(9, 64), Err(EINVAL));
    assert_eq!(gws(a, 0), Ok(0));
    assert_eq!(gws(a, 0), Err(EINVAL), "nothing to release");
    assert_eq!(gws(b, 1), Ok(0));
    destroy(m, b).unwrap();
    assert_eq!(gws(a, 1), Ok(0), "destroying the holder frees the GWS");
    // MI25's (2018) topology has no GWS.
    let f = setup("mi25");
    let m = &*f.m;
    let q = f.qmem(0);
    let id = create(m, &mut args(&q, AQL)).unwrap();
    let mut x = kfd_ioctl_alloc_queue_gws_args { queue_id: id, num_gws: 1, first_gws: 0, pad: 0 };
    assert_eq!(raw(m, AMDKFD_IOC_ALLOC_QUEUE_GWS, &mut x), Err(ENODEV));
    // ... and no XGMI SDMA engines.
    assert_eq!(create(m, &mut args(&q, XGMI)), Err(ENOMEM));
}

#[test]
fn trap_handler() {
    let f = setup("mi210");
    let m = &*f.m;
    let mut a = kfd_ioctl_set_trap_handler_args { tba_addr: 0x1000, tma_addr: 0x2000, gpu_id: 1, pad: 0 };
    assert_eq!(raw(m, AMDKFD_IOC_SET_TRAP_HANDLER, &mut a), Err(EINVAL));
    a.gpu_id = f.ids[3];
    raw(m, AMDKFD_IOC_SET_TRAP_HANDLER, &mut a).unwrap();
    assert_eq!(m.trap_handler(f.ids[3]), Some((0x1000, 0x2000)));
    let m2 = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    assert_eq!(raw(&m2, AMDKFD_IOC_SET_TRAP_HANDLER, &mut a), Err(ESRCH));
}

#[test]
fn releasing_the_process_drops_its_queues() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    create(m, &mut args(&q, AQL)).unwrap();
    create(m, &mut args(&q, SDMA)).unwrap();
    assert_eq!(m.live_queues(), 2);
    m.release_process();
    assert_eq!(m.live_queues(), 0);
}

#[test]
fn doorbell_writes_reach_the_engines() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let mut a = args(&q, PM4);
    let pm4 = create(m, &mut a).unwrap();
    let db_pm4 = a.doorbell_offset;
    let mut a = args(&q, AQL);
    let aql = create(m, &mut a).unwrap();
    let db_aql = a.doorbell_offset;
    // Nothing announced yet: no engine runs (a fresh AQL doorbell means "no packet").
    assert_eq!(m.service_queues(), 0);
    pm4_nop(m, q.gpu_id, q.ring, 16);
    ring(m, db_pm4, 16);
    let runs = m.engine_runs();
    assert_eq!(m.service_queues(), 1, "the PM4 queue's write pointer moved");
    assert_eq!(m.engine_runs(), runs + 1);
    // AQL doorbells carry the id of the last packet: id 0 is one packet.
    ring(m, db_aql, 0);
    assert!(m.service_queues() >= 1);
    assert!(m.ring_doorbell(aql).is_ok());
    assert_eq!(m.ring_doorbell(4242), Err(EINVAL));
    // Inactive queues are not run.
    update(m, pm4, q.ring, q.ring_size, 0, 7).unwrap();
    update(m, aql, 0, q.ring_size, 100, 7).unwrap();
    assert_eq!(m.service_queues(), 0);
    destroy(m, pm4).unwrap();
    destroy(m, aql).unwrap();
    assert_eq!(m.service_queues(), 0);
}

#[test]
fn shared_model_watcher_thread() {
    let m = Model::new_shared(ModelConfig::catalogue("mi210")).unwrap();
    let (ids, renders) = acquire(&m, 1);
    let f = Fx { m, ids, _renders: renders, name: "mi210" };
    let q = f.qmem(0);
    assert!(!f.m.watcher_running(), "no queue, no thread");
    let mut a = args(&q, PM4);
    let id = create(&f.m, &mut a).unwrap();
    assert!(f.m.watcher_running());
    let runs = f.m.engine_runs();
    pm4_nop(&f.m, q.gpu_id, q.ring, 64);
    ring(&f.m, a.doorbell_offset, 64);
    f.m.ring_doorbell(id).unwrap();
    let t = Instant::now();
    while f.m.engine_runs() == runs {
        assert!(t.elapsed() < Duration::from_secs(5), "the watcher never ran the queue");
        std::thread::sleep(Duration::from_millis(1));
    }
    // Idle (the queue's doorbell unchanged): the thread sleeps with a 1 ms ceiling, it does
    // not spin. A busy loop would make millions of passes.
    update(&f.m, id, q.ring, q.ring_size, 0, 7).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let p0 = f.m.watcher_passes();
    std::thread::sleep(Duration::from_millis(300));
    let passes = f.m.watcher_passes() - p0;
    assert!(passes < 3000, "{passes} passes in 300 ms");
    assert!(passes > 10, "the watcher still polls ({passes})");
    // No queues for a while: the thread ends.
    destroy(&f.m, id).unwrap();
    let t = Instant::now();
    while f.m.watcher_running() {
        assert!(t.elapsed() < Duration::from_secs(5), "the watcher outlived the queues");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A new queue starts it again; dropping the model ends it (it holds only a weak handle).
    let mut a = args(&q, SDMA);
    create(&f.m, &mut a).unwrap();
    assert!(f.m.watcher_running());
    let weak = Arc::downgrade(&f.m);
    drop(f);
    let t = Instant::now();
    while weak.upgrade().is_some() {
        assert!(t.elapsed() < Duration::from_secs(5), "the watcher keeps the model alive");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// MI25's 2018 topology with the device id of a Polaris 10 (gfx803): a gfx8 GPU.
fn gfx8_model() -> Model {
    let mut t = hsakmt_model::catalogue::build("mi25").unwrap();
    let props = t.read_str("nodes/1/properties").unwrap();
    let props = props.replace("device_id 26720", "device_id 26591"); // 0x6860 → 0x67df
    assert!(props.contains("device_id 26591"));
    t.add_file("nodes/1/properties", props);
    let cfg = ModelConfig { topology: hsakmt_model::TopologySource::Tree(t), ..ModelConfig::catalogue("mi25") };
    Model::new(cfg).unwrap()
}

#[test]
fn gfx8_doorbells_and_aql_rings() {
    let m = Arc::new(gfx8_model());
    assert_eq!(m.gpus()[0].gfx_version, (8, 0, 3));
    let (ids, renders) = acquire(&m, 1);
    let g = ids[0];
    // gfx803: 64 CUs, wave_num = min(64 * 40, 4 / 1 * 512) = 2048; ctl stack
    // align(40 + 2048 * 8 + 8) = 20480; CWSR = 20480 + 64 * (0x40000 + 0x4000 + 0x10000 + 0x1000);
    // debugger memory 2048 * 32.
    let (ctl, cwsr, debug) = cwsr_of(80003, 64, 2048, 1);
    assert_eq!(ctl, 20480);
    // An AQL ring on gfx7/8 is AQL queue memory: the BO is half the ring, mapped twice.
    let aql_flags = GTT | KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM as u32;
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: 0x1000_0000,
        size: 128 << 10,
        handle: 0,
        mmap_offset: 0,
        gpu_id: g,
        flags: aql_flags,
    };
    raw(&m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    let idl = [g];
    let mut p =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: idl.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(&m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut p).unwrap();
    alloc_map(&m, g, 0x1100_0000, 4096, GTT);
    alloc_map(&m, g, 0x1200_0000, 4096, GTT);
    alloc_map(&m, g, 0x2000_0000, (u64::from(cwsr) + u64::from(debug)).div_ceil(4096) * 4096, GTT);
    let q = QMem {
        gpu_id: g,
        ring: 0x1000_0000,
        ring_size: 128 << 10,
        ptrs: 0x1100_0000,
        eop: 0x1200_0000,
        ctx: 0x2000_0000,
        ctx_size: cwsr,
        ctl_stack: ctl,
    };
    let mut x = args(&q, AQL);
    let aql = create(&m, &mut x).unwrap();
    // Pre-SOC15: the doorbell is the queue id; doorbell_offset is the 4 KiB slice alone.
    let slice = x.doorbell_offset;
    assert_eq!(slice % 4096, 0);
    // A PM4 queue's ring is the whole size: the 64 KiB mapping of the AQL BO does not fit it.
    let mut y = args(&q, PM4);
    assert_eq!(create(&m, &mut y), Err(EINVAL));
    y.ring_size = 64 << 10;
    let pm4 = create(&m, &mut y).unwrap();
    assert_eq!(y.doorbell_offset, slice);
    assert_eq!((m.queue_info(aql).unwrap().doorbell_index, m.queue_info(pm4).unwrap().doorbell_index), (aql, pm4));
    // 32-bit doorbells at queue_id * 4; gfx8 AQL doorbells count dwords (16 per packet).
    assert_eq!(m.service_queues(), 0);
    let fd = m.create_memfd().unwrap();
    // SAFETY: a shared mapping of the model's memfd at the slice CREATE_QUEUE answered.
    let d = unsafe {
        libc::mmap(std::ptr::null_mut(), 4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), slice as i64)
    };
    assert_ne!(d, libc::MAP_FAILED);
    // SAFETY: a 4-byte slot inside the 4 KiB mapping.
    unsafe { std::ptr::write_volatile((d as usize + aql as usize * 4) as *mut u32, 16) };
    assert_eq!(m.service_queues(), 1, "one AQL packet announced");
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(d, 4096) };
    drop(renders);
}

#[test]
fn an_sdma_fence_runs_end_to_end_through_the_watcher() {
    use hsakmt_core::packet::sdma;
    let m = Model::new_shared(ModelConfig::catalogue("mi210")).unwrap();
    let (ids, renders) = acquire(&m, 1);
    let f = Fx { m, ids, _renders: renders, name: "mi210" };
    let q = f.qmem(0);
    let target = 0x3000_0000;
    alloc_map(&f.m, q.gpu_id, target, 4096, GTT);
    let mut a = args(&q, SDMA);
    let id = create(&f.m, &mut a).unwrap();
    // The thunk's side: write an SDMA FENCE packet into the ring, then the doorbell with the
    // write pointer in bytes.
    let r = sdma::Repr::fence(target + 8, 0xC0FFEE);
    let mut pkt = vec![0u8; r.buffer_len()];
    r.emit(&mut sdma::Packet::new_unchecked(&mut pkt[..])).unwrap();
    f.m.gpu_write(q.gpu_id, q.ring, &pkt).unwrap();
    ring(&f.m, a.doorbell_offset, pkt.len() as u64);
    f.m.ring_doorbell(id).unwrap();
    let t = Instant::now();
    loop {
        let mut v = [0u8; 4];
        f.m.gpu_read(q.gpu_id, target + 8, &mut v).unwrap();
        if u32::from_le_bytes(v) == 0xC0FFEE {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "the fence never landed: {:?}", f.m.queue_info(id));
        std::thread::sleep(Duration::from_millis(1));
    }
    let t = Instant::now();
    while f.m.queue_info(id).unwrap().progress.read != pkt.len() as u64 {
        assert!(t.elapsed() < Duration::from_secs(5), "read position not stored back");
        std::thread::sleep(Duration::from_millis(1));
    }
    assert_eq!(f.m.queue_info(id).unwrap().progress.error, None);
}

/// UNMAP_MEMORY_FROM_GPU of `handle` from `ids`: the result and `n_success`.
fn unmap(m: &Model, handle: u64, ids: &[u32], n_success: u32) -> (Result<(), i32>, u32) {
    let mut a =
        kfd_ioctl_unmap_memory_from_gpu_args { handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: ids.len() as u32, n_success };
    let r = raw(m, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, &mut a);
    (r, a.n_success)
}

fn free(m: &Model, handle: u64) -> Result<(), i32> {
    let mut a = kfd_ioctl_free_memory_of_gpu_args { handle };
    raw(m, AMDKFD_IOC_FREE_MEMORY_OF_GPU, &mut a)
}

/// Mainline 6.10+: kfd_queue_acquire_buffers takes `bo_va->queue_refcount` on the mappings of a
/// queue's write/read pointer page, ring, EOP buffer and CWSR area in its GPU's VM, and
/// unmap_bo_from_gpuvm refuses such a mapping with EBUSY until DESTROY_QUEUE drops the count.
/// FREE of a BO still mapped is EBUSY anyway (amdgpu_amdkfd_gpuvm_free_memory_of_gpu).
#[test]
fn queue_memory_stays_mapped_while_the_queue_lives() {
    let f = setup("mi210");
    let m = &*f.m;
    let (g, g1) = (f.ids[0], f.ids[1]);
    let (ctl_stack, cwsr, debug, xcc) = cwsr_for(f.name);
    let total = ((u64::from(cwsr) + u64::from(debug)) * xcc).div_ceil(4096) * 4096;
    let ring = alloc_map(m, g, 0x1000_0000, 64 << 10, GTT);
    let ptrs = alloc_map(m, g, 0x1100_0000, 4096, GTT);
    let eop = alloc_map(m, g, 0x1200_0000, 4096, GTT);
    let ctx = alloc_map(m, g, 0x2000_0000, total, GTT);
    let spare = alloc_map(m, g, 0x3000_0000, 4096, GTT);
    let q = QMem {
        gpu_id: g,
        ring: 0x1000_0000,
        ring_size: 64 << 10,
        ptrs: 0x1100_0000,
        eop: 0x1200_0000,
        ctx: 0x2000_0000,
        ctx_size: cwsr,
        ctl_stack,
    };
    let id = create(m, &mut args(&q, PM4)).unwrap();
    for (what, h) in [("ring", ring), ("pointer page", ptrs), ("EOP buffer", eop), ("CWSR area", ctx)] {
        assert_eq!(unmap(m, h, &[g], 0), (Err(EBUSY), 0), "{what}");
        assert_eq!(free(m, h), Err(EBUSY), "{what}: still mapped");
    }
    // The mapping is intact: the queue's engine still reaches its memory.
    m.gpu_write(g, q.ring, &[1, 2, 3, 4]).unwrap();
    // Memory no queue uses comes and goes as before.
    assert_eq!(unmap(m, spare, &[g], 0), (Ok(()), 1));
    free(m, spare).unwrap();
    // The count is per VM: the ring BO mapped on another GPU unmaps there; the devices before
    // the refusal are done and counted in n_success, so a caller can resume after it.
    let ids = [g1];
    let mut mp = kfd_ioctl_map_memory_to_gpu_args { handle: ring, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mp).unwrap();
    assert_eq!(unmap(m, ring, &[g1, g], 0), (Err(EBUSY), 1));
    assert!(m.gpu_read(g1, q.ring, &mut [0u8; 4]).is_err(), "unmapped from the other GPU");
    // Not mapped on a GPU: EINVAL comes first there.
    assert_eq!(unmap(m, ring, &[g1], 0), (Err(EINVAL), 0));

    destroy(m, id).unwrap();
    assert_eq!(unmap(m, ring, &[g1, g], 1), (Ok(()), 2), "resumed after the queue is gone");
    for h in [ptrs, eop, ctx] {
        assert_eq!(unmap(m, h, &[g], 0), (Ok(()), 1));
    }
    for h in [ring, ptrs, eop, ctx] {
        free(m, h).unwrap();
    }
}

/// An SDMA queue holds its pointer page and ring only; UPDATE_QUEUE moves the hold to the new
/// ring (pqm_update_queue_properties), while a disabling update (ring 0) keeps it.
#[test]
fn queue_holds_follow_update_queue() {
    let f = setup("mi210");
    let m = &*f.m;
    let g = f.ids[0];
    let ring_a = alloc_map(m, g, 0x4000_0000, 64 << 10, GTT);
    let ptrs = alloc_map(m, g, 0x4100_0000, 4096, GTT);
    let unused = alloc_map(m, g, 0x4200_0000, 4096, GTT);
    let ring_b = alloc_map(m, g, 0x4300_0000, 64 << 10, GTT);
    let q =
        QMem { gpu_id: g, ring: 0x4000_0000, ring_size: 64 << 10, ptrs: 0x4100_0000, eop: 0x4200_0000, ctx: 0, ctx_size: 0, ctl_stack: 0 };
    let id = create(m, &mut args(&q, SDMA)).unwrap();
    assert_eq!(unmap(m, ring_a, &[g], 0), (Err(EBUSY), 0));
    assert_eq!(unmap(m, ptrs, &[g], 0), (Err(EBUSY), 0));
    assert_eq!(unmap(m, unused, &[g], 0), (Ok(()), 1), "SDMA queues take no EOP buffer");
    assert_eq!(unmap(m, ring_b, &[g], 0), (Ok(()), 1));
    // A ring that is not mapped: EFAULT, and the hold stays where it was.
    assert_eq!(update(m, id, 0x4300_0000, 64 << 10, 100, 7), Err(EFAULT));
    let ids = [g];
    let mut mp = kfd_ioctl_map_memory_to_gpu_args { handle: ring_b, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mp).unwrap();
    update(m, id, 0x4300_0000, 64 << 10, 100, 7).unwrap();
    assert_eq!(unmap(m, ring_b, &[g], 0), (Err(EBUSY), 0), "the new ring is held");
    assert_eq!(unmap(m, ring_a, &[g], 0), (Ok(()), 1), "the old ring is let go");
    update(m, id, 0, 64 << 10, 100, 7).unwrap();
    assert_eq!(unmap(m, ring_b, &[g], 0), (Err(EBUSY), 0), "disabling keeps the hold");
    destroy(m, id).unwrap();
    assert_eq!(unmap(m, ring_b, &[g], 0), (Ok(()), 1));
    assert_eq!(unmap(m, ptrs, &[g], 0), (Ok(()), 1));
}

// ---- Queue errors: how a stopped queue reaches the process (model/src/queues/errors.rs) ----

const SIGNAL_EVENT: u32 = KFD_IOC_EVENT_SIGNAL as u32;
const HW_EVENT: u32 = KFD_IOC_EVENT_HW_EXCEPTION as u32;

fn create_event(m: &Model, ty: u32) -> u32 {
    let mut a = kfd_ioctl_create_event_args::new_zeroed();
    a.event_type = ty;
    raw(m, AMDKFD_IOC_CREATE_EVENT, &mut a).unwrap();
    a.event_id
}

/// WAIT_EVENTS on one event for `ms`: (wait result, the event's data as returned).
fn wait_event(m: &Model, id: u32, ms: u32) -> (u32, kfd_event_data) {
    let mut d = kfd_event_data::new_zeroed();
    d.event_id = id;
    let mut a =
        kfd_ioctl_wait_events_args { events_ptr: &mut d as *mut _ as u64, num_events: 1, wait_for_all: 1, timeout: ms, wait_result: 99 };
    raw(m, AMDKFD_IOC_WAIT_EVENTS, &mut a).unwrap();
    (a.wait_result, d)
}

fn hw_data(d: &kfd_event_data) -> kfd_hsa_hw_exception_data {
    // SAFETY: a HW-exception event's data is the hw_exception_data member.
    unsafe { d.__anon_union_1.hw_exception_data }
}

/// A second ring (and pointer slots) for a healthy SDMA queue beside the one under test.
fn healthy_sdma(f: &Fx, q: &QMem) -> u32 {
    alloc_map(&f.m, q.gpu_id, 0x3000_0000, 4096, GTT);
    let mut a = args(q, SDMA);
    a.ring_base_address = 0x3000_0000;
    a.ring_size = 4096;
    a.read_pointer_address = q.ptrs + 256;
    a.write_pointer_address = q.ptrs + 264;
    create(&f.m, &mut a).unwrap()
}

/// A queue of `qtype` whose engine rejects its first packet (`bad`, announced with
/// `announce`): what DESTROY_QUEUE answers, the HW-exception data raised, and the state of a
/// healthy SDMA queue of the same GPU afterwards.
fn hang_and_destroy(
    name: &'static str,
    qtype: u32,
    bad: &[u8],
    announce: u64,
) -> (Result<(), i32>, kfd_hsa_hw_exception_data, Option<hsakmt_model::engine::QueueError>) {
    let f = setup(name);
    let m = &*f.m;
    let q = f.qmem(0);
    let hw = create_event(m, HW_EVENT);
    let other = healthy_sdma(&f, &q);
    let mut a = args(&q, qtype);
    let id = create(m, &mut a).unwrap();
    m.gpu_write(q.gpu_id, q.ring, bad).unwrap();
    ring(m, a.doorbell_offset, announce);
    m.service_queues();
    let e = m.queue_info(id).unwrap().progress.error;
    assert!(matches!(e, Some(hsakmt_model::engine::QueueError::BadPacket { .. })), "{name}: {e:?}");
    // A hang raises nothing by itself: it is found when the queue is preempted.
    assert_eq!(wait_event(m, hw, 0).0, KFD_IOC_WAIT_RESULT_TIMEOUT as u32, "{name}");
    let r = destroy(m, id);
    assert!(m.queue_info(id).is_none(), "{name}: the queue is gone either way");
    let (res, d) = wait_event(m, hw, 0);
    assert_eq!(res, KFD_IOC_WAIT_RESULT_COMPLETE as u32, "{name}: the HW-exception event is set");
    let other_state = m.queue_info(other).unwrap().progress.error;
    (r, hw_data(&d), other_state)
}

#[test]
fn a_hung_pm4_queue_is_reset_alone_where_the_gpu_has_per_queue_reset() {
    // MI300X (gfx942) advertises per-queue reset for compute queues (capability bit 31 in the
    // real capture): the hung queue alone is reset, DESTROY_QUEUE succeeds, memory is kept.
    let type1 = 0x4000_0000u32.to_le_bytes(); // a PM4 type-1 header: not a type-3 packet
    let (r, d, other) = hang_and_destroy("mi300x-cpx", PM4, &type1, 1);
    assert_eq!(r, Ok(()));
    assert_eq!(
        (d.reset_type, d.reset_cause, d.memory_lost),
        (KFD_HW_EXCEPTION_PER_ENGINE_RESET as u32, KFD_HW_EXCEPTION_GPU_HANG as u32, 0)
    );
    assert_ne!(d.gpu_id, 0);
    assert_eq!(other, None, "the healthy queue is untouched");
}

#[test]
fn a_hung_queue_without_per_queue_reset_resets_the_whole_gpu() {
    // MI210 (gfx90a) has no per-queue reset: the scheduler hang ends in a GPU reset.
    let type1 = 0x4000_0000u32.to_le_bytes();
    let (r, d, other) = hang_and_destroy("mi210", PM4, &type1, 1);
    assert_eq!(r, Err(libc::ETIME), "pqm_destroy_queue passes the scheduler's -ETIME on");
    assert_eq!(
        (d.reset_type, d.reset_cause, d.memory_lost),
        (KFD_HW_EXCEPTION_WHOLE_GPU_RESET as u32, KFD_HW_EXCEPTION_GPU_HANG as u32, 1)
    );
    assert_eq!(other, Some(hsakmt_model::engine::QueueError::Reset), "every queue of the GPU is lost");
    // SDMA on MI300X: the capture's kernel has no per-SDMA-queue reset (no capability2).
    let unknown_sdma = 0x0000_00ffu32.to_le_bytes(); // SDMA opcode 0xff
    let (r, d, other) = hang_and_destroy("mi300x-cpx", SDMA, &unknown_sdma, 4);
    assert_eq!(r, Err(libc::ETIME));
    assert_eq!((d.reset_type, d.memory_lost), (KFD_HW_EXCEPTION_WHOLE_GPU_RESET as u32, 1));
    assert_eq!(other, Some(hsakmt_model::engine::QueueError::Reset));
}

/// An AQL packet of a type no CP knows (header type 7), at `ring`.
fn bad_aql_packet() -> [u8; 64] {
    let mut p = [0u8; 64];
    p[0] = 7;
    p
}

#[test]
fn a_rejected_aql_packet_reaches_the_runtime_through_its_cwsr_header() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    // RUNTIME_ENABLE first (it refuses once queues exist).
    let mut re = kfd_ioctl_runtime_enable_args { r_debug: 0, mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK as u32, capabilities_mask: 0 };
    raw(m, AMDKFD_IOC_RUNTIME_ENABLE, &mut re).unwrap();
    let err_event = create_event(m, SIGNAL_EVENT);
    // The CWSR area in host memory the GPU reaches at the same address (a userptr BO), as the
    // thunk's unified CWSR area: the kernel reads its header with get_user.
    let (_, cwsr, debug, _) = cwsr_for("mi210");
    let pages = (u64::from(cwsr) + u64::from(debug)).div_ceil(4096);
    let ctx = Mapping::new(pages, libc::PROT_READ | libc::PROT_WRITE);
    let mut u = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: ctx.base,
        size: pages * 4096,
        handle: 0,
        mmap_offset: ctx.base,
        gpu_id: q.gpu_id,
        flags: (KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32,
    };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut u).unwrap();
    let ids = [q.gpu_id];
    let mut mp =
        kfd_ioctl_map_memory_to_gpu_args { handle: u.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mp).unwrap();
    // The runtime's error word (ROCr: its exception signal's value), with a bit already set
    // that must survive (the kernel ORs).
    let error_word = Box::new(std::sync::atomic::AtomicU64::new(1 << 40));
    let mut header = [0u8; 40];
    header[24..32].copy_from_slice(&(error_word.as_ptr() as u64).to_le_bytes());
    header[32..36].copy_from_slice(&err_event.to_le_bytes());
    ctx.cpu_put(0, &header);
    let mut a = args(&q, AQL);
    a.ctx_save_restore_address = ctx.base;
    let id = create(m, &mut a).unwrap();
    m.gpu_write(q.gpu_id, q.ring, &bad_aql_packet()).unwrap();
    assert_eq!(wait_event(m, err_event, 0).0, KFD_IOC_WAIT_RESULT_TIMEOUT as u32);
    ring(m, a.doorbell_offset, 0);
    m.service_queues();
    assert!(m.queue_info(id).unwrap().progress.error.is_some());
    // KFD_EC_MASK(EC_QUEUE_PACKET_UNSUPPORTED) = bit 19: ROCr's ExceptionHandler maps it to
    // HSA_STATUS_ERROR_INVALID_PACKET_FORMAT.
    assert_eq!(error_word.load(std::sync::atomic::Ordering::Acquire), (1 << 40) | (1 << 19));
    assert_eq!(wait_event(m, err_event, 0).0, KFD_IOC_WAIT_RESULT_COMPLETE as u32);
    // A reported error is not a hang: the queue is preempted and destroyed normally.
    assert_eq!(destroy(m, id), Ok(()));
}

#[test]
fn without_the_runtime_enabled_the_cp_writes_the_queue_inactive_signal() {
    let f = setup("mi210");
    let m = &*f.m;
    let q = f.qmem(0);
    let g = q.gpu_id;
    // ROCr's amd_queue_t at the start of the pointer page: read_dispatch_id at +128 (the read
    // pointer), its own offset at +136, queue_inactive_signal at +192.
    let amdq = q.ptrs;
    let signal = q.ptrs + 0x400;
    let mailbox = q.ptrs + 0x800;
    m.gpu_write(g, amdq + 136, &128u32.to_le_bytes()).unwrap();
    m.gpu_write(g, amdq + 192, &signal.to_le_bytes()).unwrap();
    // amd_signal_t: value 0 at +8, event mailbox at +16, event id at +24.
    m.gpu_write(g, signal + 16, &mailbox.to_le_bytes()).unwrap();
    m.gpu_write(g, signal + 24, &0x55u32.to_le_bytes()).unwrap();
    let mut a = args(&q, AQL);
    a.read_pointer_address = amdq + 128;
    a.write_pointer_address = amdq + 56;
    let id = create(m, &mut a).unwrap();
    // A dispatch with an empty grid: ROCr's code 2 (invalid dimensions).
    use hsakmt_core::packet::aql::{Body, KernelDispatch, Repr};
    let p = Repr::new(Body::KernelDispatch(KernelDispatch::new(0, 0, 0))).to_bytes();
    m.gpu_write(g, q.ring, &p).unwrap();
    ring(m, a.doorbell_offset, 0);
    m.service_queues();
    assert!(m.queue_info(id).unwrap().progress.error.is_some());
    assert_eq!(m.gpu_read_obj::<u64>(g, signal + 8).unwrap(), 2, "the queue-error code in the inactive signal");
    assert_eq!(m.gpu_read_obj::<u64>(g, mailbox).unwrap(), 0x55, "the signal's event id written to its mailbox");
    assert_eq!(destroy(m, id), Ok(()));
    // A queue whose read pointer is not inside an amd_queue_t gets nothing written.
    let mut a = args(&q, AQL);
    a.read_pointer_address = q.ptrs + 0xc00;
    m.gpu_write(g, signal + 8, &0u64.to_le_bytes()).unwrap();
    let id = create(m, &mut a).unwrap();
    ring(m, a.doorbell_offset, 0);
    m.service_queues();
    assert!(m.queue_info(id).unwrap().progress.error.is_some());
    assert_eq!(m.gpu_read_obj::<u64>(g, signal + 8).unwrap(), 0);
}
