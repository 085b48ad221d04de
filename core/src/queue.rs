//! Queues (upstream queues.c): hsaKmtCreateQueue(Ext/V2), UpdateQueue, DestroyQueue,
//! SetQueueCUMask, GetQueueInfo, GetKernelQueueId, AllocQueueGWS, SetTrapHandler, and the
//! memory a queue needs besides its ring: the EOP buffer, the context save/restore (CWSR)
//! area with its control stack, the read/write pointers of PM4 and SDMA queues, and the
//! per-GPU doorbell page.
//!
//! Sizes follow upstream: the EOP buffer is one 4 KiB page from gfx8 on (32 KiB on Tonga; on
//! gfx9.4.x only PM4 compute queues get one); the CWSR area and control stack come from the
//! node's `CwsrSize` / `CtlStackSize` when the KFD reports them, otherwise from upstream's
//! formula over the node's CUs, waves and LDS; SDMA queues get neither.
//!
//! The CWSR area (upstream handle_concrete_asic): where the SVM API is supported (every GPU
//! node has `SVMAPISupported`, KFD ≥ 1.5), it is first tried as upstream's *unified* area:
//! anonymous process memory aligned to 2 MiB (`GPU_HUGE_PAGE_SIZE`), `MADV_DONTFORK` (advice
//! only: a failure is ignored, as upstream logs it), the headers filled, and registered as an
//! SVM range as register_svm_range does (PREFETCH_LOC = the node, PREFERRED_LOC = 0,
//! CLR_FLAGS = !flags, SET_FLAGS = HOST_ACCESS | GPU_EXEC | GPU_ALWAYS_MAPPED, ACCESS = the
//! node, GRANULARITY = 0xFF; GPU_ALWAYS_MAPPED needs KFD ≥ 1.11, else NOT_SUPPORTED). If any
//! step fails the memory is unmapped and the area falls back to GPU-mapped host memory (a BO);
//! DestroyQueue unmaps a unified area (upstream free_queue), which also ends its SVM range.
//!
//! Where hsakmt-rs differs, on purpose: a queue id is looked up in the thunk's table, so an
//! unknown or destroyed id is INVALID_PARAMETER (upstream dereferences it); a NULL
//! `QueueResource` or `HsaQueueInfo` is INVALID_PARAMETER; a ring size that does not fit the
//! KFD's 32-bit field is INVALID_PARAMETER (upstream truncates it).

use crate::abi::hsakmt::*;
use crate::abi::kfd::*;
use crate::fmm::GPU_HUGE_PAGE_SIZE;
use crate::memory::Memory;
use crate::port::{ioctl_plain, ioctl_typed, Kfd};
use crate::status::{Errno, KmtResult, Status};
use crate::svm::{Svm, SVM_MIN_MINOR};
use crate::topology::{Node, Topology};
use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use zerocopy::FromZeros;

/// gfx versions as upstream's `HSA_GET_GFX_VERSION_FULL` packs them (major << 16 | minor << 8
/// | stepping).
pub mod gfx {
    pub const CARRIZO: u32 = 0x08_00_01;
    pub const TONGA: u32 = 0x08_00_02;
    pub const VEGA10: u32 = 0x09_00_00;
    pub const ARCTURUS: u32 = 0x09_00_08;
    pub const ALDEBARAN: u32 = 0x09_00_0A;
    pub const AQUA_VANJARAM: u32 = 0x09_04_00;
    pub const GFX950: u32 = 0x09_05_00;
    pub const NAVI10: u32 = 0x0A_01_00;
    pub const PLUM_BONITO: u32 = 0x0B_00_00;
    pub const WHEAT_NAS: u32 = 0x0B_00_01;
    pub const GFX1200: u32 = 0x0C_00_00;
    pub const GFX1201: u32 = 0x0C_00_01;
}

/// The node's gfx version, packed.
pub fn gfxv(props: &HsaNodeProperties) -> u32 {
    let e = props.EngineId;
    (e.bf_Major() << 16) | (e.bf_Minor() << 8) | e.bf_Stepping()
}

/// SOC15 (gfx9 and later): 64-bit doorbells, and the KFD's doorbell offset carries the
/// doorbell's place in the page.
pub fn is_soc15(gfxv: u32) -> bool {
    gfxv >= gfx::VEGA10
}

/// Bytes of one doorbell.
pub fn doorbell_size(gfxv: u32) -> u64 {
    if gfxv >= 0x9_00_00 {
        8
    } else {
        4
    }
}

/// The process doorbell page of a GPU: 1024 doorbells, at least one CPU page.
pub fn doorbell_page_bytes(gfxv: u32, page: u64) -> u64 {
    (1024 * doorbell_size(gfxv)).max(page)
}

/// CREATE_QUEUE's `doorbell_offset` → (mmap offset of the doorbell page, offset of this
/// queue's doorbell in it). SOC15 KFDs put the in-page offset in the low bits; older ones
/// place doorbells by queue id.
pub fn split_doorbell_offset(gfxv: u32, doorbell_offset: u64, queue_id: u32) -> (u64, u64) {
    if is_soc15(gfxv) {
        let mask = 1024 * doorbell_size(gfxv) - 1;
        (doorbell_offset & !mask, doorbell_offset & mask)
    } else {
        (doorbell_offset, u64::from(queue_id) * doorbell_size(gfxv))
    }
}

/// Thunk priority (-3..=3) → KFD priority (0..=15), upstream's table.
pub fn kfd_priority(priority: i64) -> Option<u32> {
    const MAP: [u32; 7] = [0, 3, 5, 7, 9, 11, 15];
    if !(HSA_QUEUE_PRIORITY_MINIMUM..=HSA_QUEUE_PRIORITY_MAXIMUM).contains(&priority) {
        return None;
    }
    Some(MAP[(priority + 3) as usize])
}

/// HSA queue type → KFD queue type.
pub fn kfd_queue_type(ty: HSA_QUEUE_TYPE) -> Option<u32> {
    Some(match ty {
        HSA_QUEUE_COMPUTE => KFD_IOC_QUEUE_TYPE_COMPUTE,
        HSA_QUEUE_SDMA => KFD_IOC_QUEUE_TYPE_SDMA,
        HSA_QUEUE_SDMA_XGMI => KFD_IOC_QUEUE_TYPE_SDMA_XGMI,
        HSA_QUEUE_SDMA_BY_ENG_ID => KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID,
        HSA_QUEUE_COMPUTE_AQL => KFD_IOC_QUEUE_TYPE_COMPUTE_AQL,
        _ => return None,
    } as u32)
}

fn is_sdma(kfd_type: u32) -> bool {
    kfd_type == KFD_IOC_QUEUE_TYPE_SDMA as u32
        || kfd_type == KFD_IOC_QUEUE_TYPE_SDMA_XGMI as u32
        || kfd_type == KFD_IOC_QUEUE_TYPE_SDMA_BY_ENG_ID as u32
}

/// The memory sizes of one queue (bytes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueSizes {
    /// EOP buffer (0: none).
    pub eop: u32,
    /// Control stack, per XCC (0: no CWSR area).
    pub ctl_stack: u32,
    /// Context save/restore area per XCC without the debugger part (`ctx_save_restore_size`).
    pub cwsr: u32,
    /// Debugger area per XCC.
    pub debug: u32,
    /// What is allocated for the CWSR area: (cwsr + debug) × XCCs.
    pub total: u32,
    pub xccs: u32,
}

const SGPR_SIZE_PER_CU: u64 = 0x4000;
const HWREG_SIZE_PER_CU: u64 = 0x1000;
const DEBUGGER_BYTES_PER_WAVE: u64 = 32;
const DEBUGGER_BYTES_ALIGN: u64 = 64;
const PROT_READ: u32 = 1;
const PROT_WRITE: u32 = 2;
/// sizeof(HsaUserContextSaveAreaHeader).
const CWSR_HEADER_BYTES: u64 = core::mem::size_of::<HsaUserContextSaveAreaHeader>() as u64;

fn align_up(x: u64, a: u64) -> u64 {
    x.div_ceil(a) * a
}

fn vgpr_size_per_cu(gfxv: u32) -> u64 {
    if gfxv == gfx::GFX950 || gfxv & !0xff == gfx::AQUA_VANJARAM || gfxv == gfx::ALDEBARAN || gfxv == gfx::ARCTURUS {
        0x80000
    } else if matches!(gfxv, gfx::PLUM_BONITO | gfx::WHEAT_NAS | gfx::GFX1200 | gfx::GFX1201) {
        0x60000
    } else {
        0x40000
    }
}

/// Upstream's sizes for a queue of KFD type `kfd_type` on a node (`page`: the CPU page size).
pub fn queue_sizes(props: &HsaNodeProperties, kfd_type: u32, page: u64) -> QueueSizes {
    let gfxv = gfxv(props);
    let mut s = QueueSizes { xccs: props.NumXcc.max(1), ..Default::default() };
    if is_sdma(kfd_type) {
        return s;
    }
    s.eop = if gfxv == gfx::TONGA {
        0x8000
    } else if gfxv & !0xff == gfx::AQUA_VANJARAM {
        if kfd_type == KFD_IOC_QUEUE_TYPE_COMPUTE as u32 {
            4096
        } else {
            0
        }
    } else if gfxv >= 0x8_00_00 {
        4096
    } else {
        0
    };
    if gfxv < gfx::CARRIZO || props.NumFComputeCores == 0 || props.NumSIMDPerCU == 0 {
        return s;
    }
    let cu_num = u64::from(props.NumFComputeCores / props.NumSIMDPerCU / s.xccs);
    let wave_num = if gfxv < gfx::NAVI10 {
        let per_array = u64::from(props.NumShaderBanks.checked_div(props.NumArrays).unwrap_or(0)) * 512;
        (cu_num * 40).min(per_array)
    } else {
        cu_num * 32
    };
    let per_wave = if gfxv >= gfx::NAVI10 { 12 } else { 8 };
    let mut ctl = align_up(CWSR_HEADER_BYTES + wave_num * per_wave + 8, page);
    if gfxv & 0x3f_0000 == 0xA_0000 {
        ctl = ctl.min(0x7000); // a gfx10 hardware limit on the control stack
    }
    // The KFD's own sizes win where it reports them (they follow its page size).
    if props.CtlStackSize > 0 {
        ctl = u64::from(props.CtlStackSize);
    }
    let wg_data = cu_num * (vgpr_size_per_cu(gfxv) + SGPR_SIZE_PER_CU + (u64::from(props.LDSSizeInKB) << 10) + HWREG_SIZE_PER_CU);
    let cwsr = if props.CwsrSize > 0 { u64::from(props.CwsrSize) } else { ctl + align_up(wg_data, page) };
    let debug = align_up(wave_num * DEBUGGER_BYTES_PER_WAVE, DEBUGGER_BYTES_ALIGN);
    let clamp = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
    s.ctl_stack = clamp(ctl);
    s.cwsr = clamp(cwsr);
    s.debug = clamp(debug);
    s.total = clamp((cwsr + debug) * u64::from(s.xccs));
    s
}

/// Where a queue's read and write pointers live for the thunk's PM4 and SDMA queues: the
/// first words of the queue's own page (upstream keeps them in its `struct queue`, which it
/// allocates in GPU-mapped memory too).
const RPTR_OFFSET: u64 = 0;
const WPTR_OFFSET: u64 = 8;

/// One queue the thunk created.
pub(crate) struct Queue {
    kfd_id: u32,
    node: u32,
    kfd_type: u32,
    /// The queue's page: its id for C callers, and home of the PM4/SDMA read/write pointers.
    page: u64,
    eop: Option<u64>,
    /// CWSR area (address).
    cwsr: Option<u64>,
    /// The CWSR area is upstream's unified one: anonymous memory of this many bytes registered
    /// as an SVM range (0: a BO).
    cwsr_unified_len: u64,
    sizes: QueueSizes,
    doorbell: u64,
    ring: u64,
    ring_size: u64,
    /// CU mask words (bits = 32 × len); pointed to by GetQueueInfo's CUMaskInfo, so it lives
    /// in its own allocation until the next SetQueueCUMask or the queue's end (upstream's
    /// lifetime), and is never written after creation: C may read it at any time. An `Arc`,
    /// not a `Box`: moving the queue must not assert unique ownership over C's pointer.
    cu_mask: alloc::sync::Arc<[u32]>,
    cu_mask_bits: u32,
}

/// The process doorbell page of one GPU, mapped on first use.
#[derive(Clone, Copy)]
struct DoorbellPage {
    gpu_id: u32,
    cpu: u64,
}

/// The queues of one context.
#[derive(Default)]
pub struct Queues {
    live: BTreeMap<u64, Queue>,
    doorbells: Vec<DoorbellPage>,
}

impl Queues {
    pub fn len(&self) -> usize {
        self.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }
}

/// What CreateQueue hands back through `HsaQueueResource`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreatedQueue {
    pub queue_id: u64,
    pub doorbell: u64,
    /// The read and write pointer addresses (the caller's for AQL queues).
    pub rptr: u64,
    pub wptr: u64,
}

/// The arguments of hsaKmtCreateQueue(Ext/V2).
#[derive(Clone, Copy, Debug)]
pub struct QueueRequest {
    pub node: u32,
    pub queue_type: HSA_QUEUE_TYPE,
    pub percentage: u32,
    pub priority: i64,
    pub sdma_engine_id: u32,
    pub ring: u64,
    pub ring_size: u64,
    pub metadata_size: u64,
    /// The `HsaEvent*` (by address) whose id the CWSR header carries for queue errors.
    pub error_event: Option<usize>,
    /// `QueueResource->ErrorReason`, written into the CWSR header.
    pub error_reason: u64,
    /// For AQL queues, the caller's read/write pointer addresses.
    pub rptr: u64,
    pub wptr: u64,
}

/// GetQueueInfo's answer (pointers as addresses).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueInfo {
    pub control_stack_top: u64,
    pub user_context_save_area: u64,
    pub save_area_size: u64,
    pub control_stack_used: u64,
    pub cu_mask_bits: u32,
    pub cu_mask: u64,
    pub save_area_header: u64,
    pub save_area_alloc_size: u64,
}

fn host_flags(uncached: bool, non_paged: bool) -> HsaMemFlags {
    let mut f: HsaMemFlags = FromZeros::new_zeroed();
    f.set_bf_HostAccess(1);
    f.set_bf_ExecuteAccess(1);
    f.set_bf_NonPaged(u32::from(non_paged));
    f.set_bf_PageSize(HSA_PAGE_SIZE_4KB);
    f.set_bf_Uncached(u32::from(uncached));
    f
}

fn vram_flags() -> HsaMemFlags {
    let mut f: HsaMemFlags = FromZeros::new_zeroed();
    f.set_bf_ExecuteAccess(1);
    f.set_bf_NonPaged(1);
    f.set_bf_PageSize(HSA_PAGE_SIZE_4KB);
    f.set_bf_CoarseGrain(1);
    f
}

/// What the queue service works with besides its own table: the port, facts of the open KFD,
/// and — after AcquireSystemProperties — the snapshot and the memory manager (queue memory,
/// doorbell pages). Built by `Context` for each call.
pub(crate) struct QueueEnv<'a> {
    pub kfd: &'a dyn Kfd,
    pub kfd_minor: u32,
    /// The CPU page size the memory manager works with.
    pub page_size: u64,
    pub acquired: Option<(&'a Topology, &'a mut Memory)>,
}

impl QueueEnv<'_> {
    /// The node, or INVALID_NODE_UNIT (also before AcquireSystemProperties, as upstream).
    pub fn node(&self, id: u32) -> KmtResult<&Node> {
        let (topo, _) = self.acquired.as_ref().ok_or(Status::INVALID_NODE_UNIT)?;
        topo.nodes.get(id as usize).ok_or(Status::INVALID_NODE_UNIT)
    }

    fn minor_at_least(&self, minor: u32) -> bool {
        self.kfd_minor >= minor
    }

    fn mem(&mut self) -> KmtResult<(&dyn Kfd, &Topology, &mut Memory)> {
        let (topo, mem) = self.acquired.as_mut().ok_or(Status::INVALID_NODE_UNIT)?;
        Ok((self.kfd, *topo, &mut **mem))
    }

    /// The SVM API is there (every GPU node reports it, KFD ≥ 1.5).
    fn svm_api_supported(&self) -> bool {
        self.minor_at_least(SVM_MIN_MINOR) && self.acquired.as_ref().is_some_and(|(_, m)| m.svm_api())
    }

    fn svm(&self) -> Svm<'_> {
        Svm { kfd: self.kfd, kfd_minor: self.kfd_minor, topology: self.acquired.as_ref().map(|(t, _)| *t) }
    }

    /// Allocate `size` bytes as upstream's allocate_exec_aligned_memory_gpu does and map
    /// them to the GPU of `node`; undone on failure.
    fn queue_memory(&mut self, node: u32, size: u64, flags: HsaMemFlags) -> KmtResult<u64> {
        let page = self.page_size;
        let size = align_up(size.max(1), page);
        let (kfd, topo, mem) = self.mem()?;
        if node as usize >= topo.nodes.len() {
            return Err(Status::INVALID_NODE_UNIT);
        }
        let va = mem.alloc(kfd, topo, node, None, size, page, flags, None)?;
        if let Err(e) = mem.map(kfd, va, size, Some(&[node])) {
            let _ = mem.free(kfd, va);
            return Err(e);
        }
        Ok(va)
    }

    fn release_queue_memory(&mut self, va: u64) {
        if let Ok((kfd, _, mem)) = self.mem() {
            let _ = mem.unmap(kfd, va);
            let _ = mem.free(kfd, va);
        }
    }

    /// Upstream's unified CWSR area (see the module header): `Some((address, length))`, or
    /// `None` (nothing left behind) when the SVM API is missing or a step failed.
    fn unified_cwsr(&self, node: u32, s: &QueueSizes, error_event_id: Option<u32>, error_reason: u64) -> Option<(u64, u64)> {
        if !self.svm_api_supported() {
            return None;
        }
        let len = align_up(u64::from(s.total), self.page_size);
        let va = self.map_aligned_anonymous(len, GPU_HUGE_PAGE_SIZE)?;
        // Advice only; upstream logs a failure and goes on.
        let _ = self.kfd.advise_dont_fork(va as usize, len as usize);
        fill_cwsr_headers(va, s, error_event_id, error_reason);
        if self.register_cwsr_svm_range(va, len, node).is_err() {
            // SAFETY: the mapping was made just above for this area and nothing else uses it.
            let _ = unsafe { self.kfd.release_va(va as usize, len as usize) };
            return None;
        }
        Some((va, len))
    }

    /// Private read-write anonymous memory of `len` bytes at an `align`-aligned address
    /// (upstream's hsakmt_mmap_allocate_aligned without guard pages): map `len + align - page`
    /// bytes where the kernel chooses, and give back the head and tail around the aligned part.
    fn map_aligned_anonymous(&self, len: u64, align: u64) -> Option<u64> {
        let padded = len.checked_add(align - self.page_size)?;
        let kfd = self.kfd;
        // SAFETY: not fixed, so no existing mapping is replaced.
        let raw = unsafe { kfd.map_anonymous(None, 0, padded as usize, PROT_READ | PROT_WRITE) }.ok()? as u64;
        let va = align_up(raw, align);
        // SAFETY: the head and tail belong to the mapping made just above and are not used.
        unsafe {
            if va > raw {
                let _ = kfd.release_va(raw as usize, (va - raw) as usize);
            }
            if raw + padded > va + len {
                let _ = kfd.release_va((va + len) as usize, (raw + padded - va - len) as usize);
            }
        }
        Some(va)
    }

    /// Upstream's register_svm_range(mem, size, node, node, 0, alwaysMapped = true).
    fn register_cwsr_svm_range(&self, va: u64, len: u64, node: u32) -> KmtResult<()> {
        if !self.minor_at_least(11) {
            return Err(Status::NOT_SUPPORTED); // GPU_ALWAYS_MAPPED came with KFD 1.11
        }
        let flags = HSA_SVM_FLAG_HOST_ACCESS | HSA_SVM_FLAG_GPU_EXEC | HSA_SVM_FLAG_GPU_ALWAYS_MAPPED;
        let attr = |r#type, value| HSA_SVM_ATTRIBUTE { r#type, value };
        let attrs = [
            attr(HSA_SVM_ATTR_PREFETCH_LOC, node),
            attr(HSA_SVM_ATTR_PREFERRED_LOC, 0),
            attr(HSA_SVM_ATTR_CLR_FLAGS, !flags),
            attr(HSA_SVM_ATTR_SET_FLAGS, flags),
            attr(HSA_SVM_ATTR_ACCESS, node),
            attr(HSA_SVM_ATTR_GRANULARITY, 0xFF),
        ];
        // SAFETY: `[va, va + len)` is the unified CWSR area this context just mapped for the
        // queue; Rust writes its headers only through raw pointers.
        unsafe { self.svm().set_attr(va, len, &attrs) }
    }

    fn free_queue(&mut self, q: &Queue) {
        if let Some(e) = q.eop {
            self.release_queue_memory(e);
        }
        match q.cwsr {
            Some(c) if q.cwsr_unified_len > 0 => {
                // SAFETY: the unified area is this queue's own mapping; the KFD no longer uses
                // it (the queue is destroyed or was never created) and nothing else points into
                // it.
                let _ = unsafe { self.kfd.release_va(c as usize, q.cwsr_unified_len as usize) };
            }
            Some(c) => self.release_queue_memory(c),
            None => {}
        }
        self.release_queue_memory(q.page);
    }
}

impl Queues {
    fn queue(&self, id: u64) -> KmtResult<&Queue> {
        self.live.get(&id).ok_or(Status::INVALID_PARAMETER)
    }

    /// hsaKmtCreateQueue / CreateQueueExt / CreateQueueV2.
    ///
    /// # Safety
    /// Until the queue is destroyed the GPU reads and writes memory the request names (see
    /// [`crate::Kfd::ioctl`]): `ring` (`ring_size` bytes, executed as the queue's packets),
    /// for AQL queues `rptr` and `wptr` (8 bytes each), and `error_reason` (8 bytes, or 0).
    /// They must be memory the caller lets the GPU share that long: no Rust reference to plain
    /// data may point into it.
    pub(crate) unsafe fn create(
        &mut self,
        env: &mut QueueEnv,
        r: &QueueRequest,
        error_event_id: KmtResult<Option<u32>>,
    ) -> KmtResult<CreatedQueue> {
        let priority = kfd_priority(r.priority).ok_or(Status::INVALID_PARAMETER)?;
        let (props, gpu_id) = {
            let n = env.node(r.node)?;
            (n.props, n.gpu_id)
        };
        if gpu_id == 0 {
            return Err(Status::INVALID_NODE_UNIT);
        }
        let kfd_type = kfd_queue_type(r.queue_type).ok_or(Status::INVALID_PARAMETER)?;
        let ring_size = u32::try_from(r.ring_size).map_err(|_| Status::INVALID_PARAMETER)?;
        let metadata = u32::try_from(r.metadata_size).map_err(|_| Status::INVALID_PARAMETER)?;
        if metadata != 0 && (!env.minor_at_least(19) || !u64::from(metadata).is_multiple_of(env.page_size)) {
            return Err(Status::INVALID_PARAMETER);
        }
        let error_event_id = error_event_id?;
        let gfxv = gfxv(&props);
        let sizes = queue_sizes(&props, kfd_type, env.page_size);

        // The queue's own page (uncached host memory the GPU can reach).
        let page = env.queue_memory(r.node, 64, host_flags(true, true))?;
        let mut q = Queue {
            kfd_id: 0,
            node: r.node,
            kfd_type,
            page,
            eop: None,
            cwsr: None,
            cwsr_unified_len: 0,
            sizes,
            doorbell: 0,
            ring: r.ring,
            ring_size: r.ring_size,
            cu_mask: alloc::sync::Arc::from([]),
            cu_mask_bits: 0,
        };
        let cu_num = props.NumFComputeCores.checked_div(props.NumSIMDPerCU).unwrap_or(0);
        q.cu_mask_bits = cu_num.div_ceil(32) * 32;
        let mut mask = alloc::vec![0u32; (q.cu_mask_bits / 32) as usize];
        for i in 0..cu_num {
            mask[(i / 32) as usize] |= 1 << (i % 32);
        }
        q.cu_mask = mask.into();

        let mut a: kfd_ioctl_create_queue_args = FromZeros::new_zeroed();
        a.gpu_id = gpu_id;
        a.queue_type = kfd_type;
        let (rptr, wptr) =
            if kfd_type == KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32 { (r.rptr, r.wptr) } else { (page + RPTR_OFFSET, page + WPTR_OFFSET) };
        if let Err(e) = queue_buffers(env, &mut q, &mut a, error_event_id, r.error_reason) {
            env.free_queue(&q);
            return Err(e);
        }
        a.read_pointer_address = rptr;
        a.write_pointer_address = wptr;
        a.ring_base_address = r.ring;
        a.ring_size = ring_size;
        a.queue_percentage = r.percentage;
        a.queue_priority = priority;
        a.sdma_engine_id = r.sdma_engine_id;
        a.metadata_ring_size = metadata;
        // SAFETY: the ring, the AQL read/write pointers and the error-reason word are the
        // caller's to share (this function's contract); PM4/SDMA pointers are in `page`, and
        // the EOP buffer and CWSR area are memory this context allocated for the queue, which
        // Rust reaches only through raw addresses.
        if unsafe { ioctl_typed(env.kfd, AMDKFD_IOC_CREATE_QUEUE, &mut a) }.is_err() {
            env.free_queue(&q);
            return Err(Status::ERROR);
        }
        q.kfd_id = a.queue_id;
        let (mmap_offset, in_page) = split_doorbell_offset(gfxv, a.doorbell_offset, a.queue_id);
        let db_page = match self.doorbell_page(env, gpu_id, doorbell_page_bytes(gfxv, env.page_size), mmap_offset) {
            Ok(p) => p,
            Err(_) => {
                let _ = kfd_destroy_queue(env.kfd, q.kfd_id);
                env.free_queue(&q);
                return Err(Status::ERROR);
            }
        };
        q.doorbell = db_page + in_page;
        let created = CreatedQueue { queue_id: page, doorbell: q.doorbell, rptr, wptr };
        self.live.insert(page, q);
        Ok(created)
    }

    /// The GPU's doorbell page, mapped for the CPU (and the GPU, in the fine-grain aperture)
    /// on first use, as upstream's map_doorbell does.
    fn doorbell_page(&mut self, env: &mut QueueEnv, gpu_id: u32, len: u64, mmap_offset: u64) -> KmtResult<u64> {
        if let Some(d) = self.doorbells.iter().find(|d| d.gpu_id == gpu_id) {
            return Ok(d.cpu);
        }
        let (kfd, _, mem) = env.mem()?;
        let cpu = mem.map_doorbell(kfd, gpu_id, len, mmap_offset)?;
        self.doorbells.push(DoorbellPage { gpu_id, cpu });
        Ok(cpu)
    }

    /// hsaKmtDestroyQueue: a KFD refusal keeps the queue (upstream).
    pub(crate) fn destroy(&mut self, env: &mut QueueEnv, id: u64) -> KmtResult<()> {
        let kfd_id = self.queue(id)?.kfd_id;
        let r = kfd_destroy_queue(env.kfd, kfd_id);
        // ETIME: the scheduler hung preempting the queue (a GPU reset follows), but the KFD
        // destroyed it: upstream's ERROR, and the queue's memory is freed all the same, since
        // the KFD no longer holds it.
        if r.is_err_and(|e| e.0 != Errno::ETIME) {
            return Err(Status::ERROR);
        }
        if let Some(q) = self.live.remove(&id) {
            env.free_queue(&q);
        }
        r.map_err(|_| Status::ERROR)
    }

    /// Destroy every queue (close, release): the KFD must let go of queue memory before the
    /// memory manager frees it.
    pub(crate) fn destroy_all(&mut self, env: &mut QueueEnv) {
        let ids: Vec<u64> = self.live.keys().copied().collect();
        for id in ids {
            if self.destroy(env, id).is_err() {
                // The KFD refused: forget the queue, keep its memory with the BOs it lives in.
                self.live.remove(&id);
            }
        }
        // The doorbell pages go with the memory manager's teardown.
        self.doorbells.clear();
    }

    /// hsaKmtUpdateQueue.
    ///
    /// # Safety
    /// As [`Queues::create`] for the new `ring` of `ring_size` bytes.
    pub unsafe fn update(&mut self, kfd: &dyn Kfd, id: u64, percentage: u32, priority: i64, ring: u64, ring_size: u64) -> KmtResult<()> {
        let prio = kfd_priority(priority).ok_or(Status::INVALID_PARAMETER)?;
        let kfd_id = self.queue(id)?.kfd_id;
        let size = u32::try_from(ring_size).map_err(|_| Status::INVALID_PARAMETER)?;
        let mut a: kfd_ioctl_update_queue_args = FromZeros::new_zeroed();
        a.ring_base_address = ring;
        a.queue_id = kfd_id;
        a.ring_size = size;
        a.queue_percentage = percentage;
        a.queue_priority = prio;
        // SAFETY: the new ring is the caller's to share (this function's contract).
        unsafe { ioctl_typed(kfd, AMDKFD_IOC_UPDATE_QUEUE, &mut a) }.map_err(|_| Status::ERROR)?;
        if let Some(q) = self.live.get_mut(&id) {
            q.ring = ring;
            q.ring_size = ring_size;
        }
        Ok(())
    }

    /// hsaKmtSetQueueCUMask: `mask` holds `bits / 32` words.
    pub fn set_cu_mask(&mut self, kfd: &dyn Kfd, id: u64, bits: u32, mask: &[u32]) -> KmtResult<()> {
        if bits == 0 || !bits.is_multiple_of(32) || mask.len() < (bits / 32) as usize {
            return Err(Status::INVALID_PARAMETER);
        }
        let kfd_id = self.queue(id)?.kfd_id;
        let words = &mask[..(bits / 32) as usize];
        let mut a = kfd_ioctl_set_cu_mask_args { queue_id: kfd_id, num_cu_mask: bits, cu_mask_ptr: words.as_ptr() as u64 };
        // SAFETY: `cu_mask_ptr` / `num_cu_mask` describe `words`, borrowed for the call, which
        // the KFD only reads.
        unsafe { ioctl_typed(kfd, AMDKFD_IOC_SET_CU_MASK, &mut a) }.map_err(|_| Status::ERROR)?;
        if let Some(q) = self.live.get_mut(&id) {
            q.cu_mask = words.into();
            q.cu_mask_bits = bits;
        }
        Ok(())
    }

    /// hsaKmtGetQueueInfo: GET_QUEUE_WAVE_STATE on the queue's CWSR area; a queue without one
    /// (SDMA) is ERROR, as upstream.
    pub fn info(&self, kfd: &dyn Kfd, id: u64) -> KmtResult<QueueInfo> {
        let q = self.queue(id)?;
        let cwsr = q.cwsr.ok_or(Status::ERROR)?;
        let mut a: kfd_ioctl_get_queue_wave_state_args = FromZeros::new_zeroed();
        a.queue_id = q.kfd_id;
        a.ctl_stack_address = cwsr;
        // SAFETY: `ctl_stack_address` is this queue's CWSR area (allocated by this context,
        // `ctl_stack` bytes of control stack at its start, reached by Rust only through raw
        // addresses), which the KFD may fill with the saved control stack.
        unsafe { ioctl_typed(kfd, AMDKFD_IOC_GET_QUEUE_WAVE_STATE, &mut a) }.map_err(|_| Status::ERROR)?;
        let ctl = u64::from(q.sizes.ctl_stack);
        Ok(QueueInfo {
            control_stack_top: a.ctl_stack_address + ctl - u64::from(a.ctl_stack_used_size),
            user_context_save_area: a.ctl_stack_address + ctl,
            save_area_size: u64::from(a.save_area_used_size),
            control_stack_used: u64::from(a.ctl_stack_used_size),
            cu_mask_bits: q.cu_mask_bits,
            cu_mask: q.cu_mask.as_ptr() as u64,
            save_area_header: cwsr,
            save_area_alloc_size: u64::from(q.sizes.total),
        })
    }

    /// hsaKmtGetKernelQueueId: the KFD's id of the queue.
    pub fn kernel_id(&self, id: u64) -> KmtResult<u32> {
        Ok(self.queue(id)?.kfd_id)
    }

    /// The doorbell address and the KFD queue id (hsaKmtQueueRingDoorbell writes there).
    pub fn doorbell(&self, id: u64) -> KmtResult<(u64, u32)> {
        let q = self.queue(id)?;
        Ok((q.doorbell, q.kfd_id))
    }

    /// hsaKmtReportQueue's facts: the ring's address and size (the KFD does not tell user mode
    /// the VMID).
    pub fn ring(&self, id: u64) -> KmtResult<(u64, u64)> {
        let q = self.queue(id)?;
        Ok((q.ring, q.ring_size))
    }

    /// hsaKmtAllocQueueGWS: upstream's errno mapping.
    pub fn alloc_gws(&self, kfd: &dyn Kfd, id: u64, n: u32) -> KmtResult<u32> {
        let kfd_id = self.queue(id)?.kfd_id;
        let mut a = kfd_ioctl_alloc_queue_gws_args { queue_id: kfd_id, num_gws: n, first_gws: 0, pad: 0 };
        match ioctl_plain(kfd, &mut a) {
            Ok(()) => Ok(a.first_gws),
            Err(Errno(e)) if e == Errno::EINVAL => Err(Status::INVALID_PARAMETER),
            Err(Errno(e)) if e == Errno::EBUSY => Err(Status::OUT_OF_RESOURCES),
            Err(Errno(e)) if e == Errno::ENODEV => Err(Status::NOT_SUPPORTED),
            Err(_) => Err(Status::ERROR),
        }
    }

    /// The KFD queue type of a queue.
    pub fn kind(&self, id: u64) -> KmtResult<u32> {
        Ok(self.queue(id)?.kfd_type)
    }
}

/// EOP buffer and CWSR area (compute queues), filling the ioctl's fields.
fn queue_buffers(
    env: &mut QueueEnv,
    q: &mut Queue,
    a: &mut kfd_ioctl_create_queue_args,
    error_event_id: Option<u32>,
    error_reason: u64,
) -> KmtResult<()> {
    if is_sdma(q.kfd_type) {
        return Ok(());
    }
    let s = q.sizes;
    if s.eop > 0 {
        let eop = env.queue_memory(q.node, u64::from(s.eop), vram_flags()).map_err(|_| Status::NO_MEMORY)?;
        q.eop = Some(eop);
        a.eop_buffer_address = eop;
        a.eop_buffer_size = u64::from(s.eop);
    }
    if s.total > 0 {
        let cwsr = match env.unified_cwsr(q.node, &s, error_event_id, error_reason) {
            Some((va, len)) => {
                q.cwsr_unified_len = len;
                va
            }
            None => {
                let va = env.queue_memory(q.node, u64::from(s.total), host_flags(false, false)).map_err(|_| Status::NO_MEMORY)?;
                fill_cwsr_headers(va, &s, error_event_id, error_reason);
                va
            }
        };
        q.cwsr = Some(cwsr);
        a.ctx_save_restore_address = cwsr;
        a.ctx_save_restore_size = s.cwsr;
        a.ctl_stack_size = s.ctl_stack;
    }
    Ok(())
}

fn kfd_destroy_queue(kfd: &dyn Kfd, kfd_id: u32) -> Result<(), Errno> {
    ioctl_plain(kfd, &mut kfd_ioctl_destroy_queue_args { queue_id: kfd_id, pad: 0 })
}

/// One header per XCC at the start of its slice of the CWSR area (upstream's
/// fill_cwsr_header): where the error event and reason go, and where the debugger area is.
fn fill_cwsr_headers(base: u64, s: &QueueSizes, error_event_id: Option<u32>, error_reason: u64) {
    for i in 0..s.xccs {
        let mut h: HsaUserContextSaveAreaHeader = FromZeros::new_zeroed();
        h.ErrorEventId = error_event_id.unwrap_or(0);
        h.ErrorReason = error_reason as usize as *mut i64;
        h.DebugOffset = (s.xccs - i) * s.cwsr;
        h.DebugSize = s.debug * s.xccs;
        let at = base + u64::from(i) * u64::from(s.cwsr);
        // SAFETY: `at` lies in the CWSR area this context just allocated with CPU access
        // (host memory, a BO or the unified area's anonymous mapping, size `total` ≥
        // xccs × cwsr ≥ at - base + header size), not yet given to the KFD; the header is
        // plain data written unaligned-safe.
        unsafe { core::ptr::write_unaligned(at as usize as *mut HsaUserContextSaveAreaHeader, h) };
    }
}

/// hsaKmtSetTrapHandler.
///
/// # Safety
/// The GPU executes the trap handler at `tba` and reads and writes the trap buffer at
/// `tma` from now on (see [`crate::Kfd::ioctl`]): both must be memory the caller lets the
/// GPU share.
pub unsafe fn set_trap_handler(kfd: &dyn Kfd, gpu_id: u32, tba: u64, tma: u64) -> KmtResult<()> {
    let mut a = kfd_ioctl_set_trap_handler_args { tba_addr: tba, tma_addr: tma, gpu_id, pad: 0 };
    // SAFETY: the two addresses are the caller's to share (this function's contract).
    unsafe { ioctl_typed(kfd, AMDKFD_IOC_SET_TRAP_HANDLER, &mut a) }.map_err(|_| Status::ERROR)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(major: u32, minor: u32, step: u32) -> HsaNodeProperties {
        let mut p: HsaNodeProperties = FromZeros::new_zeroed();
        p.EngineId.set_bf_Major(major);
        p.EngineId.set_bf_Minor(minor);
        p.EngineId.set_bf_Stepping(step);
        p
    }

    #[test]
    fn priorities_map_as_upstream() {
        assert_eq!(kfd_priority(-3), Some(0));
        assert_eq!(kfd_priority(0), Some(7));
        assert_eq!(kfd_priority(3), Some(15));
        assert_eq!(kfd_priority(4), None);
        assert_eq!(kfd_priority(-4), None);
    }

    #[test]
    fn doorbell_offsets_split_by_family() {
        // gfx9: 8-byte doorbells, 8 KiB page; the low 13 bits are the in-page offset.
        assert_eq!(split_doorbell_offset(0x9_00_00, 0x1234_6000 | 0x18, 5), (0x1234_6000, 0x18));
        // gfx8: 4-byte doorbells placed by queue id.
        assert_eq!(split_doorbell_offset(0x8_00_03, 0x5000, 3), (0x5000, 12));
        assert_eq!(doorbell_page_bytes(0x9_04_02, 4096), 8192);
        assert_eq!(doorbell_page_bytes(0x8_00_03, 4096), 4096);
    }

    #[test]
    fn sdma_queues_have_no_eop_or_cwsr() {
        let mut p = node(9, 0, 10);
        p.NumFComputeCores = 440;
        p.NumSIMDPerCU = 4;
        let s = queue_sizes(&p, KFD_IOC_QUEUE_TYPE_SDMA as u32, 4096);
        assert_eq!((s.eop, s.total), (0, 0));
    }

    #[test]
    fn gfx90a_sizes_follow_upstreams_formula() {
        // MI210-like: 104 CUs (416 SIMDs, 4 per CU), 1 XCC, 64 KiB LDS, 4 shader engines of 1 array.
        let mut p = node(9, 0, 10);
        p.NumFComputeCores = 416;
        p.NumSIMDPerCU = 4;
        p.NumXcc = 1;
        p.LDSSizeInKB = 64;
        p.NumShaderBanks = 8;
        p.NumArrays = 8;
        let s = queue_sizes(&p, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32, 4096);
        // cu_num 104; waves min(104*40 = 4160, 8/8*512 = 512) = 512.
        // ctl = align(40 + 512*8 + 8, 4096) = align(4144) = 8192.
        assert_eq!(s.ctl_stack, 8192);
        // wg_data = 104 * (0x80000 + 0x4000 + 0x10000 + 0x1000) = 104 * 0x95000 = 0x3C8_8000.
        assert_eq!(s.cwsr, 8192 + 0x3C8_8000);
        // debug = align(512*32, 64) = 16384.
        assert_eq!(s.debug, 16384);
        assert_eq!(s.total, 8192 + 0x3C8_8000 + 16384);
        assert_eq!(s.eop, 4096);
    }

    #[test]
    fn kfd_reported_sizes_win() {
        let mut p = node(9, 4, 2);
        p.NumFComputeCores = 1216;
        p.NumSIMDPerCU = 4;
        p.NumXcc = 8;
        p.NumShaderBanks = 32;
        p.NumArrays = 32;
        p.CwsrSize = 0x10_0000;
        p.CtlStackSize = 0x3000;
        let s = queue_sizes(&p, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32, 4096);
        assert_eq!((s.cwsr, s.ctl_stack, s.xccs), (0x10_0000, 0x3000, 8));
        // 38 CUs per XCC: waves min(1520, 512) = 512 → debug 16 KiB per XCC.
        assert_eq!(s.total, (0x10_0000 + 16384) * 8);
        // gfx9.4.x: only PM4 compute queues get an EOP buffer.
        assert_eq!(s.eop, 0);
        assert_eq!(queue_sizes(&p, KFD_IOC_QUEUE_TYPE_COMPUTE as u32, 4096).eop, 4096);
    }

    #[test]
    fn gfx10_control_stack_is_capped() {
        let mut p = node(10, 3, 0);
        p.NumFComputeCores = 80 * 2 * 20; // many CUs
        p.NumSIMDPerCU = 2;
        p.NumXcc = 1;
        let s = queue_sizes(&p, KFD_IOC_QUEUE_TYPE_COMPUTE_AQL as u32, 4096);
        assert_eq!(s.ctl_stack, 0x7000);
    }
}
