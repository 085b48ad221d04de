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

mod create;
mod errors;
mod ops;
mod props;
mod service;
mod watch;

use props::{align, NodeQueueProps};

pub(crate) use watch::{Watch, FORK_GATE};

use crate::engine::{self, EngineKind, QueueError, RingDesc, RingProgress, RunEnd};
use crate::model::{Model, Process};
use crate::sys::{current_pid, get, put};
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
            ctx_va: self.ctx_va,
            doorbell: self.doorbell,
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_ok_is_a_range_check() {
        assert!(access_ok(0, 8));
        assert!(access_ok(TASK_SIZE_MAX - 8, 8));
        assert!(!access_ok(TASK_SIZE_MAX - 4, 8));
        assert!(!access_ok(u64::MAX, 8));
    }
}
