//! User queues: the queue ioctls (CREATE / DESTROY / UPDATE_QUEUE, SET_CU_MASK,
//! GET_QUEUE_WAVE_STATE, ALLOC_QUEUE_GWS, SET_TRAP_HANDLER) with the kernel's validation and
//! errnos, the per-process queue table, and (in `watch.rs`) the doorbell watcher that feeds the
//! engines through the engine seam (`engine/mod.rs`).
//!
//! The rules, in the kernel's order (kfd_chardev.c, kfd_queue.c, kfd_process_queue_manager.c,
//! kfd_device_queue_manager.c of mainline; the local DRM tree has no amdkfd sources, so these
//! follow mainline as of the 1.22 interface, see QUEUES.md for the full list):
//!
//! - set_queue_properties_from_user: `queue_percentage & 0xff` > 100 → EINVAL (bits 8..15 are
//!   the PM4 target XCC); priority > 15 → EINVAL; a nonzero ring base, the read and write
//!   pointers, a nonzero EOP or CWSR address outside the user address space (x86-64 access_ok,
//!   a range check only) → EFAULT; ring size neither 0 nor a power of two → EINVAL, below 1024
//!   → clamped to 1024 (and the clamped size is copied back); 1.22's metadata_ring_size neither
//!   0 nor a power of two → EINVAL; an unknown queue type → ENOTSUPP (524).
//! - unknown gpu_id → EINVAL; no VM acquired on it (kfd_bind_process_to_device) → ESRCH;
//!   SDMA_BY_ENG_ID with an engine id past the device's SDMA + XGMI SDMA engines → EINVAL.
//! - kfd_queue_acquire_buffers: the write pointer, read pointer and ring must each lie in the
//!   first page of a mapping in that GPU's VM whose size is exactly one page (rptr/wptr) or the
//!   ring size (AQL on gfx7/8: half of it; with a metadata ring: ring + metadata); compute
//!   queues also need an EOP buffer of exactly the node's EOP size in such a mapping (when an
//!   address is given), ctl_stack_size equal to the node's, a CWSR size at least the node's, and
//!   the CWSR area ((size + debugger memory) × XCCs, page-aligned) mapped exactly or else
//!   wholly in SVM ranges mapped to the GPU with GPU_ALWAYS_MAPPED (kfd_queue_buffer_svm_get)
//!   → EINVAL.
//! - pqm_create_queue: 127 queues per process and device (255 on GC 9.4.3/9.4.4/9.5.0) →
//!   ENOSPC; 1024 queue ids per process → ENOMEM; SDMA queues are taken from the device's
//!   engines × queues-per-engine (first free; BY_ENG_ID: first free of that engine) → ENOMEM;
//!   compute doorbells from the process's 1024 (less the reserved non-CP range) → EBUSY.
//!   The queue holds the BOs it found (`bo_va->queue_refcount`): unmapping them from its GPU is
//!   EBUSY until DESTROY_QUEUE (mem.rs asks [`Model::queue_holds_bo`]).
//! - UPDATE_QUEUE: the same argument checks; unknown queue → EFAULT; a nonzero ring address must
//!   be mapped exactly as at creation → EFAULT (and its BO is held instead of the old ring's).
//!   Ring address 0 or percentage 0 deactivates.
//! - SET_CU_MASK: count 0 or not a multiple of 32 → EINVAL; above 1024 bits → truncated; the
//!   mask is read with a checked copy → EFAULT; unknown queue → EFAULT; GC 10+: CUs must be
//!   enabled in pairs → EINVAL; bits past the GPU's active CUs are dropped.
//! - GET_QUEUE_WAVE_STATE: unknown queue → EFAULT; not a compute queue, still active, or no CWSR
//!   on the GPU (gfx9+) → EINVAL; writes the 16-byte wave-state header to ctl_stack_address
//!   (EFAULT) and answers the used sizes (0: the model never saves waves).
//! - ALLOC_QUEUE_GWS: unknown queue → EINVAL; no GWS on the device (num_gws 0) → ENODEV; one
//!   queue per process and device holds them → EBUSY; releasing when none is held → EINVAL;
//!   first_gws is answered 0.
//! - SET_TRAP_HANDLER: unknown gpu → EINVAL; no VM → ESRCH; tba/tma stored.
//!
//! Doorbells: each process has a slice of 1024 doorbells per GPU (8 bytes each on SOC15, 4 on
//! gfx7/8) in the model's memfd. CREATE_QUEUE answers `doorbell_offset` = the slice's memfd
//! offset (aligned to the slice size) | the doorbell's byte offset in the slice on SOC15, the
//! slice offset alone on gfx7/8 (where the doorbell is `queue_id * 4`), which is exactly what
//! libhsakmt's hsaKmtCreateQueueExt splits into an mmap offset of the KFD fd and an offset in
//! the mapping.
//!
//! Lock order: `Model::state` before the queue table; nothing takes `state` while holding the
//! table, and engines run with neither held.

mod watch;

pub(crate) use watch::Watch;

use crate::engine::{self, EngineKind, QueueError, RingDesc, RingProgress, RunEnd};
use crate::kfd::{get, put};
use crate::model::{current_pid, Model, Process};
use crate::usercopy::{copy_from_user, copy_to_user};
use crate::vfs::{parse_properties, prop};
use hsakmt_core::abi::kfd::*;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::MutexGuard;
use zerocopy::IntoBytes;

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const ENOMEM: i32 = libc::ENOMEM;
const ENOSPC: i32 = libc::ENOSPC;
const ESRCH: i32 = libc::ESRCH;
const EBUSY: i32 = libc::EBUSY;
const ENODEV: i32 = libc::ENODEV;
/// The kernel-internal ENOTSUPP that CREATE_QUEUE leaks for an unknown queue type.
pub const ENOTSUPP: i32 = 524;

const PAGE: u64 = 4096;
/// KFD_MAX_NUM_OF_QUEUES_PER_PROCESS: queue ids and doorbells per process (and device).
const MAX_QUEUES_PER_PROCESS: u32 = 1024;
/// KFD_MIN_QUEUE_RING_SIZE.
const MIN_RING: u32 = 1024;
/// KFD_QUEUE_DOORBELL_MIRROR_OFFSET: the second doorbell page repeats the routing of the first.
const MIRROR: u32 = 512;
/// TASK_SIZE_MAX of x86-64 with 4-level paging: access_ok's limit.
const TASK_SIZE_MAX: u64 = (1 << 47) - PAGE;
/// Packets (ring units) one engine run may execute before the watcher moves on.
const BUDGET: u32 = 1024;

/// x86-64 access_ok: a range check against the user address space, nothing more.
fn access_ok(addr: u64, size: u64) -> bool {
    addr.checked_add(size).is_some_and(|end| end <= TASK_SIZE_MAX)
}

/// What CREATE_QUEUE needs to know of a GPU node (its sysfs properties and the sizes the kernel
/// derives from them in kfd_queue_ctx_save_restore_size).
#[derive(Clone, Copy, Debug, Default)]
struct NodeQueueProps {
    /// gfx_target_version (major * 10000 + minor * 100 + stepping).
    gfxv: u32,
    cu_active: u32,
    num_xcc: u32,
    num_gws: u32,
    sdma_engines: u32,
    xgmi_engines: u32,
    sdma_queues_per_engine: u32,
    eop_buffer_size: u32,
    ctl_stack_size: u32,
    cwsr_size: u32,
    debug_memory_size: u32,
}

fn align(x: u64, a: u64) -> u64 {
    x.div_ceil(a).saturating_mul(a)
}

impl NodeQueueProps {
    fn soc15(&self) -> bool {
        self.gfxv >= 90000
    }

    /// kfd_get_vgpr_size_per_cu.
    fn vgpr_size_per_cu(gfxv: u32) -> u64 {
        match gfxv {
            90402 | 90010 | 90008 | 90500 => 0x80000,
            110000 | 110001 | 120000 | 120001 => 0x60000,
            _ => 0x40000,
        }
    }

    /// kfd_queue_ctx_save_restore_size: control stack, CWSR and debugger sizes and the EOP size.
    fn derive(&mut self, simd_count: u64, simd_per_cu: u64, array_count: u64, sa_per_engine: u64, lds_kb: u64) {
        let gfxv = self.gfxv;
        if gfxv < 80001 {
            return;
        }
        let xcc = u64::from(self.num_xcc.max(1));
        let cu_num = simd_count / simd_per_cu.max(1) / xcc;
        let wave_num = if gfxv < 100100 { (cu_num * 40).min(array_count / sa_per_engine.max(1) * 512) } else { cu_num * 32 };
        let lds = if gfxv == 90500 { lds_kb << 10 } else { 0x10000 };
        let wg_data = align(cu_num * (Self::vgpr_size_per_cu(gfxv) + 0x4000 + lds + 0x1000), PAGE);
        let per_wave = if gfxv >= 100100 { 12 } else { 8 };
        let mut ctl = align(40 + wave_num * per_wave + 8, PAGE);
        if gfxv / 10000 * 10000 == 100000 {
            // The hardware limits the control stack to 0x7000 on gfx10.
            ctl = ctl.min(0x7000);
        }
        self.ctl_stack_size = ctl.min(u64::from(u32::MAX)) as u32;
        self.debug_memory_size = align(wave_num * 32, 64).min(u64::from(u32::MAX)) as u32;
        self.cwsr_size = (ctl + wg_data).min(u64::from(u32::MAX)) as u32;
        self.eop_buffer_size = if gfxv == 80002 { 0x8000 } else { 4096 };
    }

    /// The queue limit of pqm_create_queue: the HWS limit, raised on GC 9.4.3/9.4.4/9.5.0
    /// (gfx942 / gfx950).
    fn max_queues(&self) -> u32 {
        match self.gfxv {
            90402 | 90500 => 255,
            _ => 127,
        }
    }

    /// First doorbell of each SDMA engine and the reserved non-CP range [first, last] of the
    /// SOC15 doorbell layouts (amdgpu_doorbell.h): Vega10/Vega12/Raven use the DOORBELL64 layout,
    /// later GPUs the Vega20/Navi10 one.
    fn sdma_doorbell_base(&self, engine: u32) -> u32 {
        if self.vega10_layout() {
            0xF0 + 2 * engine
        } else {
            0x100 + 0xA * engine
        }
    }

    fn non_cp_range(&self) -> (u32, u32) {
        if self.vega10_layout() {
            (0xF0, 0xFF)
        } else {
            (0x100, 0x18F)
        }
    }

    fn vega10_layout(&self) -> bool {
        matches!(self.gfxv, 90000 | 90002 | 90004 | 90100..=90299)
    }
}

/// The doorbell slot the thunk writes, seen through the model's own mapping of the slice.
#[derive(Debug)]
struct SliceMap {
    addr: usize,
    len: usize,
}

impl Drop for SliceMap {
    fn drop(&mut self) {
        // SAFETY: a mapping `watch`/`create` made for this slice; the table owns it alone and
        // every access to it holds the table lock, as does whoever drops it.
        let _ = unsafe { rustix::mm::munmap(self.addr as *mut std::ffi::c_void, self.len) };
    }
}

/// What one process keeps per GPU for its queues (its `qcm_process_device` and the device's
/// SDMA allocation, which the model keeps per process).
#[derive(Debug, Default)]
struct GpuQueues {
    count: u32,
    /// Compute doorbells in use (SOC15), 1024 bits.
    doorbells: [u64; 16],
    sdma_used: Vec<bool>,
    xgmi_used: Vec<bool>,
    /// The queue holding the device's GWS.
    gws: Option<u32>,
    trap: Option<(u64, u64)>,
    slice: Option<SliceMap>,
}

/// Handles of the BOs a queue holds: write pointer, read pointer, ring, EOP buffer, CWSR area
/// (the kernel's `wptr_bo`, `rptr_bo`, `ring_bo`, `eop_buf_bo`, `cwsr_bo`).
type QueueBos = [Option<u64>; 5];
const BO_WPTR: usize = 0;
const BO_RPTR: usize = 1;
const BO_RING: usize = 2;
const BO_EOP: usize = 3;
const BO_CWSR: usize = 4;

/// A live queue.
#[derive(Clone, Debug)]
struct Queue {
    serial: u64,
    gpu: usize,
    gpu_id: u32,
    /// KFD_IOC_QUEUE_TYPE_* (BY_ENG_ID resolved to SDMA or SDMA_XGMI, as the kernel does).
    qtype: u32,
    kind: EngineKind,
    ring_va: u64,
    ring_bytes: u64,
    /// 1.22's metadata ring behind the AQL ring (bytes).
    metadata: u64,
    percent: u32,
    priority: u32,
    rptr: u64,
    wptr: u64,
    ctx_va: u64,
    ctl_stack_size: u32,
    /// The BOs whose mappings on this GPU the queue holds (kfd_queue_acquire_buffers).
    bos: QueueBos,
    /// Doorbell index in the slice (doorbell-size units).
    doorbell: u32,
    /// (engine, queue on the engine, bit in the allocation bitmap).
    sdma: Option<(u32, u32, u32)>,
    cu_mask: Vec<u32>,
    cu_mask_count: u32,
    progress: RingProgress,
    blocked: bool,
    /// An engine run holds a copy of `progress`.
    running: bool,
}

impl Queue {
    /// QUEUE_IS_ACTIVE: a ring, a size and a share of the CP.
    fn active(&self) -> bool {
        self.ring_bytes > 0 && self.ring_va != 0 && self.percent > 0
    }

    fn desc(&self, id: u32) -> RingDesc {
        RingDesc {
            gpu_id: self.gpu_id,
            queue_id: id,
            kind: self.kind,
            ring_va: self.ring_va,
            ring_bytes: self.ring_bytes,
            rptr_va: self.rptr,
            wptr_va: self.wptr,
        }
    }
}

/// A snapshot of one queue (tests, tools).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueInfo {
    pub gpu_id: u32,
    /// KFD_IOC_QUEUE_TYPE_*; SDMA_BY_ENG_ID queues report SDMA or SDMA_XGMI.
    pub queue_type: u32,
    pub kind: EngineKind,
    pub ring_va: u64,
    pub ring_bytes: u64,
    pub percent: u32,
    pub priority: u32,
    pub active: bool,
    /// Doorbell index in the process's slice (doorbell-size units).
    pub doorbell_index: u32,
    /// (SDMA engine, queue on that engine).
    pub sdma: Option<(u32, u32)>,
    /// The CU mask as stored (truncated to the GPU's active CUs); empty: all CUs.
    pub cu_mask: Vec<u32>,
    pub cu_mask_count: u32,
    pub has_gws: bool,
    pub progress: RingProgress,
}

/// The queue table of the process (own lock, see the module notes).
#[derive(Debug, Default)]
pub(crate) struct QueueTable {
    /// The process and `Process::instance` the queues belong to.
    pid: u32,
    instance: u64,
    queues: BTreeMap<u32, Queue>,
    gpus: Vec<GpuQueues>,
    next_serial: u64,
}

impl QueueTable {
    fn reset(&mut self, pid: u32, instance: u64, n_gpus: usize) {
        *self = QueueTable {
            pid,
            instance,
            queues: BTreeMap::new(),
            gpus: (0..n_gpus).map(|_| GpuQueues::default()).collect(),
            next_serial: 1,
        };
    }

    /// find_available_queue_slot: the lowest free id below 1024.
    fn free_id(&self) -> Option<u32> {
        let mut want = 0;
        for &id in self.queues.keys() {
            if id != want {
                break;
            }
            want += 1;
        }
        (want < MAX_QUEUES_PER_PROCESS).then_some(want)
    }

    /// The doorbell value of a queue, from the slice mapping.
    fn doorbell_value(&self, q: &Queue) -> Option<u64> {
        let s = self.gpus.get(q.gpu)?.slice.as_ref()?;
        let size = if s.len == 4096 { 4 } else { 8 };
        let off = q.doorbell as usize * size;
        if off + size > s.len {
            return None;
        }
        if size == 8 {
            // SAFETY: inside the live slice mapping (checked above), 8-aligned (page-aligned
            // mapping, 8-byte slots); the thunk writes the slot concurrently through its own
            // mapping of the same page, so it is read atomically.
            Some(unsafe { AtomicU64::from_ptr((s.addr + off) as *mut u64) }.load(Ordering::Acquire))
        } else {
            // SAFETY: as above, 4-byte slots.
            Some(u64::from(unsafe { AtomicU32::from_ptr((s.addr + off) as *mut u32) }.load(Ordering::Acquire)))
        }
    }

    fn set_doorbell(&self, gpu: usize, index: u32, value: u64) {
        let Some(s) = self.gpus.get(gpu).and_then(|g| g.slice.as_ref()) else { return };
        let size = if s.len == 4096 { 4 } else { 8 };
        let off = index as usize * size;
        if off + size > s.len {
            return;
        }
        if size == 8 {
            // SAFETY: as in `doorbell_value`.
            unsafe { AtomicU64::from_ptr((s.addr + off) as *mut u64) }.store(value, Ordering::Release);
        } else {
            // SAFETY: as in `doorbell_value`.
            unsafe { AtomicU32::from_ptr((s.addr + off) as *mut u32) }.store(value as u32, Ordering::Release);
        }
    }

    /// The write position a queue's doorbell announces, in ring units.
    fn write_position(&self, q: &Queue) -> Option<u64> {
        let v = self.doorbell_value(q)?;
        let legacy = self.gpus.get(q.gpu)?.slice.as_ref()?.len == 4096;
        Some(if legacy && q.kind == EngineKind::Aql {
            // gfx7/8 AQL doorbells carry the write pointer in dwords (16 per packet).
            v / 16
        } else {
            engine::write_position(q.kind, v)
        })
    }

    fn remove(&mut self, id: u32) -> Option<Queue> {
        let q = self.queues.remove(&id)?;
        if let Some(g) = self.gpus.get_mut(q.gpu) {
            g.count = g.count.saturating_sub(1);
            if let Some((_, _, bit)) = q.sdma {
                let map = if q.qtype == KFD_IOC_QUEUE_TYPE_SDMA_XGMI as u32 { &mut g.xgmi_used } else { &mut g.sdma_used };
                if let Some(b) = map.get_mut(bit as usize) {
                    *b = false;
                }
            } else if q.doorbell < MAX_QUEUES_PER_PROCESS {
                g.doorbells[q.doorbell as usize / 64] &= !(1u64 << (q.doorbell % 64));
            }
            if g.gws == Some(id) {
                g.gws = None;
            }
        }
        Some(q)
    }
}

/// The arguments of CREATE_QUEUE after set_queue_properties_from_user.
struct Props {
    qtype: u32,
    percent: u32,
    priority: u32,
    ring_va: u64,
    ring_size: u64,
    metadata: u64,
    rptr: u64,
    wptr: u64,
    eop_va: u64,
    eop_size: u64,
    ctx_va: u64,
    ctx_size: u32,
    ctl_stack_size: u32,
    sdma_engine_id: u32,
}

impl Model {
    fn table(&self) -> MutexGuard<'_, QueueTable> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The queue table of the process `st` (emptied if it still holds another process's queues:
    /// a forked child's copy, or a released process's).
    fn table_for(&self, st: &Process) -> MutexGuard<'_, QueueTable> {
        let mut t = self.table();
        if t.pid != st.pid || t.instance != st.instance || t.gpus.len() != self.gpus.len() {
            t.reset(st.pid, st.instance, self.gpus.len());
        }
        t
    }

    /// Drop every queue (the end of the KFD process). Called with `state` held.
    pub(crate) fn release_queues(&self) {
        let mut t = self.table();
        let n = t.gpus.len();
        t.reset(0, 0, n);
    }

    /// Does the calling process have queues? (SET_XNACK_MODE and RUNTIME_ENABLE refuse while it
    /// does.) May be called with `state` held.
    pub(crate) fn has_queues(&self) -> bool {
        let t = self.table();
        t.pid == current_pid() && !t.queues.is_empty()
    }

    /// Number of live queues of the calling process.
    pub fn live_queues(&self) -> usize {
        let t = self.table();
        if t.pid == current_pid() {
            t.queues.len()
        } else {
            0
        }
    }

    /// A snapshot of a live queue of the calling process.
    pub fn queue_info(&self, queue_id: u32) -> Option<QueueInfo> {
        let t = self.table();
        if t.pid != current_pid() {
            return None;
        }
        let q = t.queues.get(&queue_id)?;
        Some(QueueInfo {
            gpu_id: q.gpu_id,
            queue_type: q.qtype,
            kind: q.kind,
            ring_va: q.ring_va,
            ring_bytes: q.ring_bytes,
            percent: q.percent,
            priority: q.priority,
            active: q.active(),
            doorbell_index: q.doorbell,
            sdma: q.sdma.map(|(e, n, _)| (e, n)),
            cu_mask: q.cu_mask.clone(),
            cu_mask_count: q.cu_mask_count,
            has_gws: t.gpus.get(q.gpu).is_some_and(|g| g.gws == Some(queue_id)),
            progress: q.progress.clone(),
        })
    }

    /// The trap handler addresses (tba, tma) SET_TRAP_HANDLER stored for a GPU.
    pub fn trap_handler(&self, gpu_id: u32) -> Option<(u64, u64)> {
        let g = self.gpu_index(gpu_id)?;
        let t = self.table();
        if t.pid != current_pid() {
            return None;
        }
        t.gpus.get(g)?.trap
    }

    fn node_queue_props(&self, g: usize) -> NodeQueueProps {
        let node = &self.gpus[g];
        let text = self.tree.read_str(&format!("nodes/{}/properties", node.node)).unwrap_or_default();
        let p = parse_properties(&text);
        let get = |k: &str| prop(&p, k);
        let (ma, mi, st) = node.gfx_version;
        let gfxv = ma * 10000 + mi * 100 + st;
        // Kernels before the SDMA properties existed: the device-info defaults of their GPUs
        // (two engines; two queues per engine before Vega20).
        let old_qpe = if gfxv < 90006 || (90100..90300).contains(&gfxv) { 2 } else { 8 };
        let u = |v: Option<u64>, d: u32| v.map(|x| x.min(u64::from(u32::MAX)) as u32).unwrap_or(d);
        let simd_count = get("simd_count").unwrap_or(0);
        let simd_per_cu = get("simd_per_cu").unwrap_or(1).max(1);
        let mut n = NodeQueueProps {
            gfxv,
            num_xcc: u(get("num_xcc"), 1).max(1),
            num_gws: u(get("num_gws"), 0),
            sdma_engines: u(get("num_sdma_engines"), 2),
            xgmi_engines: u(get("num_sdma_xgmi_engines"), 0),
            sdma_queues_per_engine: u(get("num_sdma_queues_per_engine"), old_qpe),
            ..NodeQueueProps::default()
        };
        n.cu_active = (simd_count / simd_per_cu).min(u64::from(u32::MAX)) as u32;
        n.derive(
            simd_count,
            simd_per_cu,
            get("array_count").unwrap_or(0),
            get("simd_arrays_per_engine").unwrap_or(1),
            get("lds_size_in_kb").unwrap_or(64),
        );
        n
    }

    /// kfd_queue_buffer_get: the BO whose mapping on GPU `g` starts at `addr`'s page and is
    /// `expected` bytes long (rounded down to pages; 0: any size), if there is one. The queue
    /// holds it (`bo_va->queue_refcount`) until it is destroyed.
    fn queue_buffer_get(st: &Process, g: usize, addr: u64, expected: u64) -> Option<u64> {
        let page = addr & !(PAGE - 1);
        let pt = &st.mem.gpus.get(g)?.pt;
        let (&start, pte) = pt.range(..=page).next_back()?;
        if page >= pte.end || start != page {
            return None;
        }
        let pages = expected / PAGE;
        (pages == 0 || (pte.end - start) / PAGE == pages).then_some(pte.handle)
    }

    /// Does a live queue of the process `st` on GPU `g` hold the mapping of BO `handle` there
    /// (kfd_queue_acquire_buffers took `bo_va->queue_refcount`)? Then unmapping it from that
    /// GPU is refused with EBUSY (unmap_bo_from_gpuvm). Called with `state` held.
    pub(crate) fn queue_holds_bo(&self, st: &Process, g: usize, handle: u64) -> bool {
        let t = self.table();
        t.pid == st.pid && t.instance == st.instance && t.queues.values().any(|q| q.gpu == g && q.bos.contains(&Some(handle)))
    }

    /// CREATE_QUEUE.
    pub(crate) fn ioctl_create_queue(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_create_queue_args = get(buf);
        let r = self.create_queue(&mut a);
        put(buf, &a);
        r
    }

    fn props_from_user(&self, a: &mut kfd_ioctl_create_queue_args) -> Result<Props, i32> {
        if a.queue_percentage & 0xff > KFD_MAX_QUEUE_PERCENTAGE as u32 {
            return Err(EINVAL);
        }
        if a.queue_priority > KFD_MAX_QUEUE_PRIORITY as u32 {
            return Err(EINVAL);
        }
        if a.ring_base_address != 0 && !access_ok(a.ring_base_address, 8) {
            return Err(EFAULT);
        }
        if a.ring_size != 0 && !a.ring_size.is_power_of_two() {
            return Err(EINVAL);
        }
        if a.ring_size < MIN_RING {
            a.ring_size = MIN_RING;
        }
        // 1.22 turned the last pad word into metadata_ring_size; older kernels ignore it.
        let metadata_field = self.config.kfd_version >= (1, 22);
        if metadata_field && a.metadata_ring_size != 0 && !a.metadata_ring_size.is_power_of_two() {
            return Err(EINVAL);
        }
        if !access_ok(a.read_pointer_address, 4) || !access_ok(a.write_pointer_address, 4) {
            return Err(EFAULT);
        }
        if a.eop_buffer_address != 0 && !access_ok(a.eop_buffer_address, 4) {
            return Err(EFAULT);
        }
        if a.ctx_save_restore_address != 0 && !access_ok(a.ctx_save_restore_address, 4) {
            return Err(EFAULT);
        }
        let t = a.queue_type;
        let known = [
            KFD_IOC_QUEUE_TYPE_COMPUTE,
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
            KFD_IOC_QUEUE_TYPE_SDMA,
            KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
            KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
        ];
        if !known.iter().any(|&k| k as u32 == t) {
            return Err(ENOTSUPP);
        }
        let aql = t == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32;
        Ok(Props {
            qtype: t,
            percent: a.queue_percentage & 0xff,
            priority: a.queue_priority,
            ring_va: a.ring_base_address,
            ring_size: u64::from(a.ring_size),
            metadata: if aql && metadata_field { u64::from(a.metadata_ring_size) } else { 0 },
            rptr: a.read_pointer_address,
            wptr: a.write_pointer_address,
            eop_va: a.eop_buffer_address,
            eop_size: a.eop_buffer_size,
            ctx_va: a.ctx_save_restore_address,
            ctx_size: a.ctx_save_restore_size,
            ctl_stack_size: a.ctl_stack_size,
            sdma_engine_id: a.sdma_engine_id,
        })
    }

    /// kfd_queue_acquire_buffers: the BOs the queue holds, in `QueueBos` order.
    fn acquire_buffers(st: &Process, g: usize, n: &NodeQueueProps, p: &Props) -> Result<QueueBos, i32> {
        let compute = p.qtype == KFD_IOC_QUEUE_TYPE_COMPUTE as u32 || p.qtype == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32;
        let aql = p.qtype == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32;
        // AQL rings on gfx7/8 are mapped twice: the mapping is half the announced size.
        let expected_ring = if aql && (70000..90000).contains(&n.gfxv) { p.ring_size / 2 } else { p.ring_size + p.metadata };
        let mut bos: QueueBos = [None; 5];
        bos[BO_WPTR] = Some(Self::queue_buffer_get(st, g, p.wptr, PAGE).ok_or(EINVAL)?);
        bos[BO_RPTR] = Some(Self::queue_buffer_get(st, g, p.rptr, PAGE).ok_or(EINVAL)?);
        bos[BO_RING] = Some(Self::queue_buffer_get(st, g, p.ring_va, expected_ring).ok_or(EINVAL)?);
        if !compute {
            return Ok(bos);
        }
        if p.eop_va != 0 {
            if p.eop_size != u64::from(n.eop_buffer_size) {
                return Err(EINVAL);
            }
            bos[BO_EOP] = Some(Self::queue_buffer_get(st, g, p.eop_va, p.eop_size).ok_or(EINVAL)?);
        }
        if p.ctl_stack_size != n.ctl_stack_size || p.ctx_size < n.cwsr_size {
            return Err(EINVAL);
        }
        let total = align((u64::from(p.ctx_size) + u64::from(n.debug_memory_size)) * u64::from(n.num_xcc), PAGE);
        // Without a matching mapping the kernel tries SVM ranges (kfd_queue_buffer_svm_get,
        // see `svm_queue_area_ok`: the whole area in ranges mapped to this GPU with
        // GPU_ALWAYS_MAPPED, else EINVAL); an empty area (GPUs without CWSR) passes there (a
        // mapping that starts at the address is still held: size 0 matches any). The kernel's
        // queue_refcount on the ranges refuses nothing: it only makes a CPU munmap of the
        // range evict the process's queues (svm_range_unmap_from_cpu, "Freeing queue vital
        // buffer"), which the model, seeing no CPU munmap, does not do.
        bos[BO_CWSR] = Self::queue_buffer_get(st, g, p.ctx_va, total);
        if total != 0 && bos[BO_CWSR].is_none() && !Self::svm_queue_area_ok(st, g, p.ctx_va, total) {
            return Err(EINVAL);
        }
        Ok(bos)
    }

    fn create_queue(&self, a: &mut kfd_ioctl_create_queue_args) -> Result<(), i32> {
        let p = self.props_from_user(a)?;
        let mut st = self.lock();
        let g = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if st.vms[g].is_none() {
            return Err(ESRCH);
        }
        let n = self.node_queue_props(g);
        if p.qtype == KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID as u32 {
            // The kernel compares the u32 id with an int maximum: C turns the maximum unsigned,
            // so with no engines at all (-1) nothing is too big.
            let max = (n.sdma_engines + n.xgmi_engines).wrapping_sub(1);
            if p.sdma_engine_id > max {
                return Err(EINVAL);
            }
        }
        let slice = self.doorbell_slice(&mut st, g)?;
        let bos = Self::acquire_buffers(&st, g, &n, &p)?;
        let slice_len = self.gpus[g].doorbell_slice_bytes();
        let dev_fd = self.devmem()?.fd();

        let mut t = self.table_for(&st);
        let count = t.gpus[g].count;
        if count >= n.max_queues() {
            return Err(ENOSPC);
        }
        let id = t.free_id().ok_or(ENOMEM)?;
        let mut qtype = p.qtype;
        let sdma = match qtype as i32 {
            KFD_IOC_QUEUE_TYPE_SDMA | KFD_IOC_QUEUE_TYPE_SDMA_XGMI | KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID => {
                let (e, q, bit, xgmi) = Self::allocate_sdma(&mut t.gpus[g], &n, qtype, p.sdma_engine_id)?;
                qtype = if xgmi { KFD_IOC_QUEUE_TYPE_SDMA_XGMI as u32 } else { KFD_IOC_QUEUE_TYPE_SDMA as u32 };
                Some((e, q, bit))
            }
            _ => None,
        };
        let release_sdma = |t: &mut QueueTable| {
            if let Some((_, _, bit)) = sdma {
                let gq = &mut t.gpus[g];
                let map = if qtype == KFD_IOC_QUEUE_TYPE_SDMA_XGMI as u32 { &mut gq.xgmi_used } else { &mut gq.sdma_used };
                map[bit as usize] = false;
            }
        };
        // allocate_doorbell
        let doorbell = if !n.soc15() {
            // Pre-SOC15: the doorbell is the queue id (the user-mode ABI).
            id
        } else if let Some((e, q, _)) = sdma {
            n.sdma_doorbell_base(e) + (q & 1) * MIRROR + (q >> 1)
        } else {
            let (lo, hi) = n.non_cp_range();
            let bits = &t.gpus[g].doorbells;
            let free = (0..MAX_QUEUES_PER_PROCESS).find(|&i| {
                // init_doorbell_bitmap: the non-CP range is reserved in both doorbell pages.
                let reserved = (lo..=hi).contains(&(i % MIRROR));
                !reserved && bits[i as usize / 64] & (1u64 << (i % 64)) == 0
            });
            match free {
                Some(i) => {
                    t.gpus[g].doorbells[i as usize / 64] |= 1u64 << (i % 64);
                    i
                }
                None => {
                    release_sdma(&mut t);
                    return Err(EBUSY);
                }
            }
        };
        if t.gpus[g].slice.is_none() {
            use rustix::mm::{MapFlags, ProtFlags};
            // SAFETY: a new shared mapping of this process's doorbell slice of the device memfd
            // at an address the kernel picks; the file has a fixed size, so no SIGBUS.
            let m = unsafe {
                rustix::mm::mmap(
                    std::ptr::null_mut(),
                    slice_len as usize,
                    ProtFlags::READ | ProtFlags::WRITE,
                    MapFlags::SHARED,
                    dev_fd,
                    slice,
                )
            };
            match m {
                Ok(addr) => t.gpus[g].slice = Some(SliceMap { addr: addr as usize, len: slice_len as usize }),
                Err(e) => {
                    release_sdma(&mut t);
                    if sdma.is_none() && n.soc15() {
                        t.gpus[g].doorbells[doorbell as usize / 64] &= !(1u64 << (doorbell % 64));
                    }
                    return Err(e.raw_os_error());
                }
            }
        }
        let kind = match qtype as i32 {
            KFD_IOC_QUEUE_TYPE_COMPUTE_AQL => EngineKind::Aql,
            KFD_IOC_QUEUE_TYPE_COMPUTE => EngineKind::Pm4,
            _ => EngineKind::Sdma,
        };
        // A fresh doorbell reads as "nothing submitted": write position = read position 0.
        // AQL doorbells carry the last packet id, so that is -1 there (gfx7/8: dword 0).
        let init = if kind == EngineKind::Aql && n.soc15() { u64::MAX } else { 0 };
        t.set_doorbell(g, doorbell, init);
        let serial = t.next_serial;
        t.next_serial += 1;
        t.gpus[g].count += 1;
        t.queues.insert(
            id,
            Queue {
                serial,
                gpu: g,
                gpu_id: a.gpu_id,
                qtype,
                kind,
                ring_va: p.ring_va,
                ring_bytes: p.ring_size,
                metadata: p.metadata,
                percent: p.percent,
                priority: p.priority,
                rptr: p.rptr,
                wptr: p.wptr,
                ctx_va: p.ctx_va,
                ctl_stack_size: p.ctl_stack_size,
                bos,
                doorbell,
                sdma,
                cu_mask: Vec::new(),
                cu_mask_count: 0,
                progress: RingProgress::default(),
                blocked: false,
                running: false,
            },
        );
        drop(t);
        drop(st);
        a.queue_id = id;
        a.doorbell_offset = if n.soc15() { slice | (u64::from(doorbell) * 8) } else { slice };
        self.start_watcher();
        Ok(())
    }

    /// allocate_sdma_queue: (engine, queue on the engine, bitmap bit, XGMI?).
    fn allocate_sdma(gq: &mut GpuQueues, n: &NodeQueueProps, qtype: u32, engine_id: u32) -> Result<(u32, u32, u32, bool), i32> {
        // KFD_MAX_SDMA_QUEUES bits per bitmap.
        let nq = (n.sdma_engines.saturating_mul(n.sdma_queues_per_engine)).min(128);
        let nx = (n.xgmi_engines.saturating_mul(n.sdma_queues_per_engine)).min(128);
        gq.sdma_used.resize(nq as usize, false);
        gq.xgmi_used.resize(nx as usize, false);
        let take = |used: &mut Vec<bool>, start: u32, step: u32| -> Option<u32> {
            let mut i = start;
            while (i as usize) < used.len() {
                if !used[i as usize] {
                    used[i as usize] = true;
                    return Some(i);
                }
                i = i.checked_add(step.max(1))?;
            }
            None
        };
        match qtype as i32 {
            KFD_IOC_QUEUE_TYPE_SDMA => {
                let bit = take(&mut gq.sdma_used, 0, 1).ok_or(ENOMEM)?;
                let e = n.sdma_engines.max(1);
                Ok((bit % e, bit / e, bit, false))
            }
            KFD_IOC_QUEUE_TYPE_SDMA_XGMI => {
                let bit = take(&mut gq.xgmi_used, 0, 1).ok_or(ENOMEM)?;
                let e = n.xgmi_engines.max(1);
                Ok((n.sdma_engines + bit % e, bit / e, bit, true))
            }
            _ => {
                if engine_id < n.sdma_engines {
                    let bit = take(&mut gq.sdma_used, engine_id, n.sdma_engines).ok_or(ENOMEM)?;
                    Ok((engine_id, bit / n.sdma_engines, bit, false))
                } else {
                    let start = engine_id - n.sdma_engines;
                    let bit = take(&mut gq.xgmi_used, start, n.xgmi_engines).ok_or(ENOMEM)?;
                    Ok((engine_id, bit / n.xgmi_engines.max(1), bit, true))
                }
            }
        }
    }

    /// DESTROY_QUEUE.
    pub(crate) fn ioctl_destroy_queue(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_destroy_queue_args = get(buf);
        loop {
            let st = self.lock();
            let t = self.table_for(&st);
            let running = t.queues.get(&a.queue_id).ok_or(EINVAL)?.running;
            if !running {
                let mut t = t;
                return t.remove(a.queue_id).map(|_| ()).ok_or(EINVAL);
            }
            // The kernel preempts a queue before destroying it: once DESTROY_QUEUE returns, the
            // CP never touches the queue's memory again, and the thunk frees it. Wait for the
            // engine run under way to end, without `state` (the engine takes it for every
            // memory access), then look again.
            drop(st);
            let t = self.queue_idle.wait_while(t, |t| t.queues.get(&a.queue_id).is_some_and(|q| q.running));
            drop(t.unwrap_or_else(|e| e.into_inner()));
        }
    }

    /// UPDATE_QUEUE.
    pub(crate) fn ioctl_update_queue(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_update_queue_args = get(buf);
        if a.queue_percentage & 0xff > KFD_MAX_QUEUE_PERCENTAGE as u32 || a.queue_priority > KFD_MAX_QUEUE_PRIORITY as u32 {
            return Err(EINVAL);
        }
        if a.ring_base_address != 0 && !access_ok(a.ring_base_address, 8) {
            return Err(EFAULT);
        }
        if a.ring_size != 0 && !a.ring_size.is_power_of_two() {
            return Err(EINVAL);
        }
        let ring_size = u64::from(a.ring_size.max(MIN_RING));
        let st = self.lock();
        let mut t = self.table_for(&st);
        let q = t.queues.get(&a.queue_id).ok_or(EFAULT)?;
        // An update with ring address 0 disables the queue; any other ring must be mapped as at
        // creation (size without the gfx7/8 AQL halving: the kernel checks the size as given).
        // The new ring's BO is held instead of the old one (pqm_update_queue_properties); a
        // disabling update keeps holding the old one.
        let ring_bo = if a.ring_base_address != 0 {
            Some(Self::queue_buffer_get(&st, q.gpu, a.ring_base_address, ring_size + q.metadata).ok_or(EFAULT)?)
        } else {
            q.bos[BO_RING]
        };
        let q = t.queues.get_mut(&a.queue_id).ok_or(EFAULT)?;
        q.bos[BO_RING] = ring_bo;
        q.ring_va = a.ring_base_address;
        q.ring_bytes = ring_size;
        q.percent = a.queue_percentage & 0xff;
        q.priority = a.queue_priority;
        drop(t);
        drop(st);
        self.kick_watcher();
        Ok(())
    }

    /// SET_CU_MASK.
    pub(crate) fn ioctl_set_cu_mask(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_set_cu_mask_args = get(buf);
        if !a.num_cu_mask.is_multiple_of(32) || a.num_cu_mask == 0 {
            return Err(EINVAL);
        }
        // Masks beyond 1024 bits are cut to their first 1024 bits.
        let count = a.num_cu_mask.min(1024);
        let mut words = vec![0u32; count as usize / 32];
        copy_from_user(words.as_mut_bytes(), a.cu_mask_ptr as usize).map_err(|_| EFAULT)?;
        let st = self.lock();
        let mut t = self.table_for(&st);
        let q = t.queues.get(&a.queue_id).ok_or(EFAULT)?;
        let n = self.node_queue_props(q.gpu);
        if n.gfxv >= 100000 {
            // GPUs with WGPs: CUs are enabled in adjacent pairs.
            for i in (0..count).step_by(2) {
                let pair = (words[i as usize / 32] >> (i % 32)) & 3;
                if pair != 0 && pair != 3 {
                    return Err(EINVAL);
                }
            }
        }
        // mqd_symmetrically_map_cu_mask: bits past the active CUs are dropped.
        let kept = count.min(n.cu_active);
        words.truncate(kept.div_ceil(32) as usize);
        if !kept.is_multiple_of(32) {
            if let Some(last) = words.last_mut() {
                *last &= (1u32 << (kept % 32)) - 1;
            }
        }
        let q = t.queues.get_mut(&a.queue_id).ok_or(EFAULT)?;
        q.cu_mask = words;
        q.cu_mask_count = kept;
        Ok(())
    }

    /// GET_QUEUE_WAVE_STATE.
    pub(crate) fn ioctl_get_queue_wave_state(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_get_queue_wave_state_args = get(buf);
        let st = self.lock();
        let t = self.table_for(&st);
        let q = t.queues.get(&a.queue_id).ok_or(EFAULT)?;
        let n = self.node_queue_props(q.gpu);
        let compute = q.kind != EngineKind::Sdma;
        // Only the gfx9+ MQD managers can report wave state, and only with CWSR on.
        if !compute || q.active() || n.gfxv < 90000 || n.cwsr_size == 0 {
            return Err(EINVAL);
        }
        // The MQD's control stack registers as init_mqd set them: no wave has been saved, so
        // the used sizes are 0 and both offsets are the control stack size.
        let off = if q.ctx_va != 0 { q.ctl_stack_size } else { 0 };
        let header = kfd_context_save_area_header__wave_state {
            control_stack_offset: off,
            control_stack_size: 0,
            wave_state_offset: off,
            wave_state_size: 0,
        };
        drop(t);
        drop(st);
        a.ctl_stack_used_size = 0;
        a.save_area_used_size = 0;
        put(buf, &a);
        copy_to_user(a.ctl_stack_address as usize, header.as_bytes()).map_err(|_| EFAULT)
    }

    /// ALLOC_QUEUE_GWS.
    pub(crate) fn ioctl_alloc_queue_gws(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_alloc_queue_gws_args = get(buf);
        let st = self.lock();
        let mut t = self.table_for(&st);
        let g = t.queues.get(&a.queue_id).ok_or(EINVAL)?.gpu;
        if self.node_queue_props(g).num_gws == 0 {
            return Err(ENODEV);
        }
        let gq = &mut t.gpus[g];
        // pqm_set_gws: one queue per process and device; releasing needs a holder.
        let r = if a.num_gws != 0 {
            if gq.gws.is_some() {
                Err(EBUSY)
            } else {
                gq.gws = Some(a.queue_id);
                Ok(())
            }
        } else if gq.gws.is_none() {
            Err(EINVAL)
        } else {
            gq.gws = None;
            Ok(())
        };
        a.first_gws = 0;
        put(buf, &a);
        r
    }

    /// SET_TRAP_HANDLER.
    pub(crate) fn ioctl_set_trap_handler(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_set_trap_handler_args = get(buf);
        let st = self.lock();
        let g = self.gpu_index(a.gpu_id).ok_or(EINVAL)?;
        if st.vms[g].is_none() {
            return Err(ESRCH);
        }
        let mut t = self.table_for(&st);
        t.gpus[g].trap = Some((a.tba_addr, a.tma_addr));
        Ok(())
    }

    /// One pass over the active queues: every queue whose doorbell announces a write position
    /// other than its read position (or that was blocked) is run on its engine, without any
    /// model lock held. Returns the number of engine runs.
    pub fn service_queues(&self) -> usize {
        self.service_pass().runs
    }

    fn service_pass(&self) -> Pass {
        let pid = current_pid();
        let jobs: Vec<(u32, u64, RingDesc, RingProgress, u64)> = {
            let mut t = self.table();
            if t.pid != pid {
                if !t.queues.is_empty() {
                    // Another process's queues (a forked child's copy): not ours to run.
                    let n = t.gpus.len();
                    t.reset(0, 0, n);
                }
                return Pass::default();
            }
            let mut jobs = Vec::new();
            let ids: Vec<u32> = t.queues.keys().copied().collect();
            for id in ids {
                let Some(q) = t.queues.get(&id) else { continue };
                if !q.active() || q.running || q.progress.error.is_some() {
                    continue;
                }
                let Some(write) = t.write_position(q) else { continue };
                if write == q.progress.read && !q.blocked {
                    continue;
                }
                let job = (id, q.serial, q.desc(id), q.progress.clone(), write);
                if let Some(q) = t.queues.get_mut(&id) {
                    q.running = true;
                }
                jobs.push(job);
            }
            jobs
        };
        let mut pass = Pass::default();
        for (id, serial, desc, mut progress, write) in jobs {
            let before = progress.clone();
            // An engine bug must not wedge the queue (left `running`) or kill the watcher: a
            // panic stops the queue as a bad packet instead.
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.engine_run(&desc, &mut progress, write, BUDGET)));
            let end = match run {
                Ok(end) => end,
                Err(_) => {
                    // What the run left half-done is dropped: the queue stops where it stood.
                    progress = before.clone();
                    progress.error = Some(QueueError::BadPacket { at: progress.read, what: "the engine panicked" });
                    RunEnd::Stopped
                }
            };
            self.engine_runs.fetch_add(1, Ordering::Relaxed);
            pass.runs += 1;
            let mut t = self.table();
            // The queue may have been destroyed (or the id reused) meanwhile.
            if let Some(q) = t.queues.get_mut(&id).filter(|q| q.serial == serial) {
                // Moved: a packet consumed, an indirect buffer advanced, an error, or a budget
                // used up with work left.
                if progress != before || end == RunEnd::Budget {
                    pass.progressed += 1;
                }
                q.blocked = end == RunEnd::Blocked;
                q.progress = progress;
                q.running = false;
            }
            drop(t);
            self.queue_idle.notify_all();
        }
        pass
    }

    /// Tell the watcher a queue's doorbell was written (hsaKmtQueueRingDoorbell). A model
    /// without a watcher thread (built with [`Model::new`]) services its queues now.
    pub fn ring_doorbell(&self, queue_id: u32) -> Result<(), i32> {
        {
            let t = self.table();
            if t.pid != current_pid() || !t.queues.contains_key(&queue_id) {
                return Err(EINVAL);
            }
        }
        if self.shared.strong_count() == 0 {
            self.service_queues();
        } else {
            self.start_watcher();
            self.kick_watcher();
        }
        Ok(())
    }

    /// Engine runs since the model was made (all queues).
    pub fn engine_runs(&self) -> u64 {
        self.engine_runs.load(Ordering::Relaxed)
    }
}

/// What one service pass did.
#[derive(Clone, Copy, Debug, Default)]
struct Pass {
    runs: usize,
    /// Runs that moved a queue (its read position, an error, or a used-up budget).
    progressed: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(gfxv: u32, simd: u64, simd_per_cu: u64, arrays: u64, sa: u64, xcc: u32) -> NodeQueueProps {
        let mut n = NodeQueueProps { gfxv, num_xcc: xcc, ..Default::default() };
        n.derive(simd, simd_per_cu, arrays, sa, 64);
        n
    }

    #[test]
    fn ctx_save_restore_sizes_follow_the_kernel_formula() {
        // MI210 (gfx90a): 104 CUs, wave_num = min(104 * 40, 8 / 1 * 512) = 4096.
        let n = props(90010, 416, 4, 8, 1, 1);
        assert_eq!(n.ctl_stack_size, align(40 + 4096 * 8 + 8, 4096) as u32);
        assert_eq!(n.debug_memory_size, 4096 * 32);
        let wg = align(104 * (0x80000 + 0x4000 + 0x10000 + 0x1000), 4096);
        assert_eq!(u64::from(n.cwsr_size), u64::from(n.ctl_stack_size) + wg);
        assert_eq!(n.eop_buffer_size, 4096);
        // gfx10.1: 12 bytes per wave, capped at 0x7000.
        let n = props(100100, 160, 2, 4, 2, 1);
        assert_eq!(n.ctl_stack_size, 0x7000);
        // Tonga: a 32 KiB EOP buffer; gfx7: no CWSR, no EOP size.
        assert_eq!(props(80002, 128, 4, 4, 1, 1).eop_buffer_size, 0x8000);
        let n = props(70001, 176, 4, 4, 1, 1);
        assert_eq!((n.eop_buffer_size, n.ctl_stack_size, n.cwsr_size), (0, 0, 0));
    }

    #[test]
    fn access_ok_is_a_range_check() {
        assert!(access_ok(0, 8));
        assert!(access_ok(TASK_SIZE_MAX - 8, 8));
        assert!(!access_ok(TASK_SIZE_MAX - 4, 8));
        assert!(!access_ok(u64::MAX, 8));
    }
}
