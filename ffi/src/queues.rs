//! Queue exports: hsaKmtCreateQueue(Ext/V2), UpdateQueue, DestroyQueue, SetQueueCUMask,
//! GetQueueInfo, GetKernelQueueId, QueueRingDoorbell, AllocQueueGWS, SetTrapHandler,
//! ReportQueue. The logic is in hsakmt_core::queue.
//!
//! Upstream's statuses: the open check first; a priority outside -3..=3 or an unknown queue
//! type is INVALID_PARAMETER; an unknown node INVALID_NODE_UNIT; a KFD refusal ERROR
//! (AllocQueueGWS maps EINVAL/EBUSY/ENODEV as upstream). Ours, where upstream would crash: a
//! NULL `QueueResource`, `QueueInfo` or id out-pointer and an unknown or destroyed queue id
//! are INVALID_PARAMETER.
//!
//! hsaKmtQueueRingDoorbell writes the value to the queue's doorbell (what ROCr does itself on
//! Linux) with a release store, under the thunk lock so a concurrent CloseKFD cannot unmap the
//! doorbell page first; on the model it also wakes the GPU engines at once. hsaKmtReportQueue answers the
//! ring's address and size; the KFD does not tell user mode the VMID, so `VMID` is 0.

use crate::boundary::{guard, out};
use crate::generation::{self, read_record, write_record};
use crate::global::{with_ctx, with_ctx_mut};
use hsakmt_core::abi::generation::{Generation, Record};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::queue::QueueRequest;
use hsakmt_core::Status;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

/// Our headers' binding (`hsaKmtCreateQueue_abi1`): the newest `HsaQueueResource`.
///
/// # Safety
/// `QueueResource` must be NULL or valid for reads and writes; `Event` NULL or an event of
/// this thunk. The ring (`QueueAddress`, `QueueSizeInBytes` bytes), the AQL read/write
/// pointers and `ErrorReason` in `QueueResource` must be memory the GPU may read and write
/// until the queue is destroyed.
#[unsafe(export_name = "hsaKmtCreateQueue_abi1")]
pub unsafe extern "C" fn hsaKmtCreateQueue(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    QueueAddress: *mut c_void,
    QueueSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { create_v1(Generation::NEWEST, NodeId, Type, QueuePercentage, Priority, QueueAddress, QueueSizeInBytes, Event, QueueResource) }
}

/// The plain symbol: the caller's ABI generation's `HsaQueueResource` (crate::generation).
///
/// # Safety
/// As hsaKmtCreateQueue, for the caller's generation's struct.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(export_name = "hsaKmtCreateQueue")]
pub unsafe extern "C" fn plain_hsaKmtCreateQueue(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    QueueAddress: *mut c_void,
    QueueSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    let g = generation::for_function!("hsaKmtCreateQueue");
    // SAFETY: forwarded under the same contract.
    unsafe { create_v1(g, NodeId, Type, QueuePercentage, Priority, QueueAddress, QueueSizeInBytes, Event, QueueResource) }
}

/// # Safety
/// As hsaKmtCreateQueue, for generation `g`'s struct.
#[allow(clippy::too_many_arguments)]
unsafe fn create_v1(
    g: Generation,
    node: u32,
    ty: HSA_QUEUE_TYPE,
    percentage: u32,
    priority: HSA_QUEUE_PRIORITY,
    ring: *mut c_void,
    ring_size: u64,
    event: *mut HsaEvent,
    res: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    if ty == HSA_QUEUE_SDMA_BY_ENG_ID {
        return Status::ERROR.0; // needs an engine id: CreateQueueExt (upstream)
    }
    let req = Request { name: "hsaKmtCreateQueue", node, ty, percentage, priority, engine: 0, ring, ring_size, metadata: 0 };
    // SAFETY: forwarded under the same contract.
    unsafe { create(g, req, event, res.cast()) }
}

/// Our headers' binding (`hsaKmtCreateQueueExt_abi1`): the newest `HsaQueueResource`.
///
/// # Safety
/// As hsaKmtCreateQueue.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(export_name = "hsaKmtCreateQueueExt_abi1")]
pub unsafe extern "C" fn hsaKmtCreateQueueExt(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    SdmaEngineId: HSAuint32,
    QueueAddress: *mut c_void,
    QueueSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe {
        create_ext(
            Generation::NEWEST,
            NodeId,
            Type,
            QueuePercentage,
            Priority,
            SdmaEngineId,
            QueueAddress,
            QueueSizeInBytes,
            Event,
            QueueResource,
        )
    }
}

/// The plain symbol: the caller's ABI generation's `HsaQueueResource` (crate::generation).
///
/// # Safety
/// As hsaKmtCreateQueue, for the caller's generation's struct.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(export_name = "hsaKmtCreateQueueExt")]
pub unsafe extern "C" fn plain_hsaKmtCreateQueueExt(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    SdmaEngineId: HSAuint32,
    QueueAddress: *mut c_void,
    QueueSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    let g = generation::for_function!("hsaKmtCreateQueueExt");
    // SAFETY: forwarded under the same contract, for generation `g`.
    unsafe { create_ext(g, NodeId, Type, QueuePercentage, Priority, SdmaEngineId, QueueAddress, QueueSizeInBytes, Event, QueueResource) }
}

/// Our headers' binding (`hsaKmtCreateQueueV2_abi1`): the newest `HsaQueueResource`.
///
/// # Safety
/// As hsaKmtCreateQueue.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(export_name = "hsaKmtCreateQueueV2_abi1")]
pub unsafe extern "C" fn hsaKmtCreateQueueV2(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    SdmaEngineId: HSAuint32,
    QueueAddress: *mut c_void,
    QueueSizeInBytes: HSAuint64,
    MetaDataPrefetchSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe {
        create_v2(
            Generation::NEWEST,
            NodeId,
            Type,
            QueuePercentage,
            Priority,
            SdmaEngineId,
            QueueAddress,
            QueueSizeInBytes,
            MetaDataPrefetchSizeInBytes,
            Event,
            QueueResource,
        )
    }
}

/// The plain symbol: the caller's ABI generation's `HsaQueueResource` (crate::generation).
///
/// # Safety
/// As hsaKmtCreateQueue, for the caller's generation's struct.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(export_name = "hsaKmtCreateQueueV2")]
pub unsafe extern "C" fn plain_hsaKmtCreateQueueV2(
    NodeId: HSAuint32,
    Type: HSA_QUEUE_TYPE,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    SdmaEngineId: HSAuint32,
    QueueAddress: *mut c_void,
    QueueSizeInBytes: HSAuint64,
    MetaDataPrefetchSizeInBytes: HSAuint64,
    Event: *mut HsaEvent,
    QueueResource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    let g = generation::for_function!("hsaKmtCreateQueueV2");
    // SAFETY: forwarded under the same contract, for generation `g`.
    unsafe {
        create_v2(
            g,
            NodeId,
            Type,
            QueuePercentage,
            Priority,
            SdmaEngineId,
            QueueAddress,
            QueueSizeInBytes,
            MetaDataPrefetchSizeInBytes,
            Event,
            QueueResource,
        )
    }
}

/// # Safety
/// As hsaKmtCreateQueue, for generation `g`'s struct.
#[allow(clippy::too_many_arguments)]
unsafe fn create_ext(
    g: Generation,
    node: u32,
    ty: HSA_QUEUE_TYPE,
    percentage: u32,
    priority: HSA_QUEUE_PRIORITY,
    engine: u32,
    ring: *mut c_void,
    ring_size: u64,
    event: *mut HsaEvent,
    res: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    let req = Request { name: "hsaKmtCreateQueueExt", node, ty, percentage, priority, engine, ring, ring_size, metadata: 0 };
    // SAFETY: forwarded under the same contract.
    unsafe { create(g, req, event, res.cast()) }
}

/// # Safety
/// As hsaKmtCreateQueue, for generation `g`'s struct.
#[allow(clippy::too_many_arguments)]
unsafe fn create_v2(
    g: Generation,
    node: u32,
    ty: HSA_QUEUE_TYPE,
    percentage: u32,
    priority: HSA_QUEUE_PRIORITY,
    engine: u32,
    ring: *mut c_void,
    ring_size: u64,
    metadata: u64,
    event: *mut HsaEvent,
    res: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    let req = Request { name: "hsaKmtCreateQueueV2", node, ty, percentage, priority, engine, ring, ring_size, metadata };
    // SAFETY: forwarded under the same contract.
    unsafe { create(g, req, event, res.cast()) }
}

/// The scalar arguments of the CreateQueue family.
struct Request {
    name: &'static str,
    node: u32,
    ty: HSA_QUEUE_TYPE,
    percentage: u32,
    priority: HSA_QUEUE_PRIORITY,
    engine: u32,
    ring: *mut c_void,
    ring_size: u64,
    metadata: u64,
}

/// # Safety
/// `res` must be NULL or valid for reads and writes of generation `g`'s `HsaQueueResource`;
/// `event` NULL or an event of this thunk.
unsafe fn create(g: Generation, r: Request, event: *mut HsaEvent, res: *mut u8) -> HSAKMT_STATUS {
    guard(r.name, || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        if res.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        // SAFETY: non-NULL, and the caller's contract for generation `g`.
        let mut q: HsaQueueResource = unsafe { read_record(g, Record::HsaQueueResource, res) };
        // SAFETY: each union member is 8 bytes of plain data; the caller sets the AQL
        // pointers (and ErrorReason) before the call.
        let (rptr, wptr) = unsafe { (q.__anon_union_3.QueueRptrValue, q.__anon_union_2.QueueWptrValue) };
        let req = QueueRequest {
            node: r.node,
            queue_type: r.ty,
            percentage: r.percentage,
            priority: r.priority,
            sdma_engine_id: r.engine,
            ring: r.ring as u64,
            ring_size: r.ring_size,
            metadata_size: r.metadata,
            error_event: (!event.is_null()).then_some(event as usize),
            error_reason: q.ErrorReason as u64,
            rptr,
            wptr,
        };
        // SAFETY: the C caller's contract: the ring, the AQL pointers and the error-reason word
        // are theirs to share with the GPU until the queue is destroyed.
        let created = with_ctx_mut(|c| unsafe { c.create_queue(&req) })?;
        crate::log::debug(format_args!("{}: node {} type {} -> queue {}\n", r.name, r.node, r.ty, created.queue_id));
        q.QueueId = created.queue_id;
        q.__anon_union_1 = HsaQueueResource__anon_union_1 { QueueDoorBell: created.doorbell };
        q.__anon_union_2 = HsaQueueResource__anon_union_2 { QueueWptrValue: created.wptr };
        q.__anon_union_3 = HsaQueueResource__anon_union_3 { QueueRptrValue: created.rptr };
        // SAFETY: as above.
        unsafe { write_record(g, Record::HsaQueueResource, &q, res) };
        Ok(())
    })
}

/// # Safety
/// No pointer is dereferenced here; `QueueAddress` is given to the KFD as the queue's new ring,
/// memory the GPU may read and write until the queue is destroyed or updated again.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUpdateQueue(
    QueueId: HSA_QUEUEID,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    QueueAddress: *mut c_void,
    QueueSize: HSAuint64,
    _Event: *mut HsaEvent,
) -> HSAKMT_STATUS {
    guard("hsaKmtUpdateQueue", || {
        // SAFETY: the C caller's contract: the new ring is theirs to share with the GPU.
        with_ctx_mut(|c| unsafe { c.update_queue(QueueId, QueuePercentage, Priority, QueueAddress as u64, QueueSize) })
    })
}

/// # Safety
/// Callable with any id.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDestroyQueue(QueueId: HSA_QUEUEID) -> HSAKMT_STATUS {
    guard("hsaKmtDestroyQueue", || with_ctx_mut(|c| c.destroy_queue(QueueId)))
}

/// # Safety
/// `QueueCUMask` must be NULL or hold `CUMaskCount / 32` readable words.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetQueueCUMask(QueueId: HSA_QUEUEID, CUMaskCount: HSAuint32, QueueCUMask: *mut HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtSetQueueCUMask", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        if CUMaskCount == 0 || QueueCUMask.is_null() || !CUMaskCount.is_multiple_of(32) {
            return Err(Status::INVALID_PARAMETER);
        }
        // SAFETY: non-NULL; the caller promises CUMaskCount / 32 words.
        let words = unsafe { std::slice::from_raw_parts(QueueCUMask, (CUMaskCount / 32) as usize) };
        with_ctx_mut(|c| c.set_queue_cu_mask(QueueId, CUMaskCount, words))
    })
}

/// Our headers' binding (`hsaKmtGetQueueInfo_abi1`): the newest `HsaQueueInfo`.
///
/// # Safety
/// `QueueInfo` must be NULL or writable.
#[unsafe(export_name = "hsaKmtGetQueueInfo_abi1")]
pub unsafe extern "C" fn hsaKmtGetQueueInfo(QueueId: HSA_QUEUEID, QueueInfo: *mut HsaQueueInfo) -> HSAKMT_STATUS {
    // SAFETY: the same contract.
    unsafe { queue_info(Generation::NEWEST, QueueId, QueueInfo.cast()) }
}

/// The plain symbol: the caller's ABI generation's `HsaQueueInfo` (crate::generation).
///
/// # Safety
/// `QueueInfo` must be NULL or writable for the caller's generation's struct.
#[unsafe(export_name = "hsaKmtGetQueueInfo")]
pub unsafe extern "C" fn plain_hsaKmtGetQueueInfo(QueueId: HSA_QUEUEID, QueueInfo: *mut HsaQueueInfo) -> HSAKMT_STATUS {
    let g = generation::for_function!("hsaKmtGetQueueInfo");
    // SAFETY: the same contract, for generation `g`.
    unsafe { queue_info(g, QueueId, QueueInfo.cast()) }
}

/// # Safety
/// `dst` must be NULL or writable for generation `g`'s `HsaQueueInfo`.
unsafe fn queue_info(g: Generation, id: HSA_QUEUEID, dst: *mut u8) -> HSAKMT_STATUS {
    guard("hsaKmtGetQueueInfo", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
        if dst.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        let i = with_ctx(|c| c.queue_info(id))?;
        let mut out: HsaQueueInfo = zerocopy::FromZeros::new_zeroed();
        out.NumCUAssigned = i.cu_mask_bits;
        out.CUMaskInfo = i.cu_mask as *mut u32;
        out.UserContextSaveArea = i.user_context_save_area as *mut u32;
        out.SaveAreaSizeInBytes = i.save_area_size;
        out.ControlStackTop = i.control_stack_top as *mut u32;
        out.ControlStackUsedInBytes = i.control_stack_used;
        out.SaveAreaHeader = i.save_area_header as *mut HsaUserContextSaveAreaHeader;
        out.SaveAreaAllocSize = i.save_area_alloc_size;
        // SAFETY: non-NULL, and the caller's contract for generation `g`.
        unsafe { write_record(g, Record::HsaQueueInfo, &out, dst) };
        Ok(())
    })
}

/// # Safety
/// `KernelInternalQueueId` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetKernelQueueId(QueueId: HSA_QUEUEID, KernelInternalQueueId: *mut HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtGetKernelQueueId", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let out = unsafe { out(KernelInternalQueueId) }?;
        *out = with_ctx(|c| c.kernel_queue_id(QueueId))?;
        Ok(())
    })
}

/// # Safety
/// Callable with any id.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueueRingDoorbell(QueueId: HSA_QUEUEID, value: HSAuint64) -> HSAKMT_STATUS {
    guard("hsaKmtQueueRingDoorbell", || {
        // All under the thunk lock: the doorbell page is the context's mapping, which CloseKFD
        // (or ReleaseSystemProperties) unmaps under the same lock; and the port is not kept
        // past it (the last reference to a model's port closes the model's process, which
        // must not happen after a later OpenKFD). Waking a model's engines is a futex wake.
        with_ctx(|c| {
            let (doorbell, kfd_id) = c.queue_doorbell(QueueId)?;
            // SAFETY: the doorbell is an 8-byte aligned slot of the doorbell page this context
            // mapped for the queue, live while the queue is, and the queue cannot go away while
            // we hold the lock. A release store, as ROCr rings it: the packets written before
            // are visible to the engine that sees the new value (the model's watcher loads it
            // with acquire; hardware takes it as an MMIO write).
            unsafe { AtomicU64::from_ptr(doorbell as usize as *mut u64) }.store(value, Ordering::Release);
            c.kfd().doorbell_rung(kfd_id);
            Ok(())
        })
    })
}

/// # Safety
/// `firstGWS` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocQueueGWS(QueueId: HSA_QUEUEID, nGWS: HSAuint32, firstGWS: *mut HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtAllocQueueGWS", || {
        let first = with_ctx(|c| c.alloc_queue_gws(QueueId, nGWS))?;
        // SAFETY: the C caller's pointer contract (NULL is allowed, as upstream).
        if let Some(f) = unsafe { firstGWS.as_mut() } {
            *f = first;
        }
        Ok(())
    })
}

/// # Safety
/// No pointer is dereferenced here; the trap handler code and the trap buffer are given to the
/// KFD as addresses the GPU executes, reads and writes from now on.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetTrapHandler(
    NodeId: HSAuint32,
    TrapHandlerBaseAddress: *mut c_void,
    _TrapHandlerSizeInBytes: HSAuint64,
    TrapBufferBaseAddress: *mut c_void,
    _TrapBufferSizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    guard("hsaKmtSetTrapHandler", || {
        // SAFETY: the C caller's contract: both areas are theirs to share with the GPU.
        with_ctx(|c| unsafe { c.set_trap_handler(NodeId, TrapHandlerBaseAddress as u64, TrapBufferBaseAddress as u64) })
    })
}

/// # Safety
/// `QueueReport` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtReportQueue(QueueId: HSA_QUEUEID, QueueReport: *mut HsaQueueReport) -> HSAKMT_STATUS {
    guard("hsaKmtReportQueue", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let out = unsafe { out(QueueReport) }?;
        let (ring, size) = with_ctx(|c| c.queue_ring(QueueId))?;
        out.VMID = 0;
        out.QueueAddress = ring as *mut c_void;
        out.QueueSize = size;
        Ok(())
    })
}
