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
//! Linux); on the model it also wakes the GPU engines at once. hsaKmtReportQueue answers the
//! ring's address and size; the KFD does not tell user mode the VMID, so `VMID` is 0.

use crate::boundary::{guard, out};
use crate::global::{with_ctx, with_ctx_mut};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::queue::QueueRequest;
use hsakmt_core::Status;
use std::ffi::c_void;

/// # Safety
/// `QueueResource` must be NULL or valid for reads and writes; `Event` NULL or an event of
/// this thunk.
#[unsafe(no_mangle)]
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
    if Type == HSA_QUEUE_SDMA_BY_ENG_ID {
        return Status::ERROR.0; // needs an engine id: CreateQueueExt (upstream)
    }
    // SAFETY: forwarded under the same contract.
    unsafe {
        create("hsaKmtCreateQueue", NodeId, Type, QueuePercentage, Priority, 0, QueueAddress, QueueSizeInBytes, 0, Event, QueueResource)
    }
}

/// # Safety
/// As hsaKmtCreateQueue.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(no_mangle)]
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
        create(
            "hsaKmtCreateQueueExt",
            NodeId,
            Type,
            QueuePercentage,
            Priority,
            SdmaEngineId,
            QueueAddress,
            QueueSizeInBytes,
            0,
            Event,
            QueueResource,
        )
    }
}

/// # Safety
/// As hsaKmtCreateQueue.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(no_mangle)]
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
        create(
            "hsaKmtCreateQueueV2",
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
/// As hsaKmtCreateQueue.
#[allow(clippy::too_many_arguments)]
unsafe fn create(
    name: &'static str,
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
    guard(name, || {
        with_ctx(|_| Ok(()))?;
        // SAFETY: the C caller's pointer contract.
        let res = unsafe { out(res) }?;
        // SAFETY: each union member is 8 bytes of plain data; the caller sets the AQL
        // pointers (and ErrorReason) before the call.
        let (rptr, wptr) = unsafe { (res.__anon_union_3.QueueRptrValue, res.__anon_union_2.QueueWptrValue) };
        let req = QueueRequest {
            node,
            queue_type: ty,
            percentage,
            priority,
            sdma_engine_id: engine,
            ring: ring as u64,
            ring_size,
            metadata_size: metadata,
            error_event: (!event.is_null()).then_some(event as usize),
            error_reason: res.ErrorReason as u64,
            rptr,
            wptr,
        };
        let q = with_ctx_mut(|c| c.create_queue(&req))?;
        res.QueueId = q.queue_id;
        res.__anon_union_1 = HsaQueueResource__anon_union_1 { QueueDoorBell: q.doorbell };
        res.__anon_union_2 = HsaQueueResource__anon_union_2 { QueueWptrValue: q.wptr };
        res.__anon_union_3 = HsaQueueResource__anon_union_3 { QueueRptrValue: q.rptr };
        Ok(())
    })
}

/// # Safety
/// No pointer is dereferenced (`QueueAddress` is given to the KFD as an address).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUpdateQueue(
    QueueId: HSA_QUEUEID,
    QueuePercentage: HSAuint32,
    Priority: HSA_QUEUE_PRIORITY,
    QueueAddress: *mut c_void,
    QueueSize: HSAuint64,
    _Event: *mut HsaEvent,
) -> HSAKMT_STATUS {
    guard("hsaKmtUpdateQueue", || with_ctx_mut(|c| c.update_queue(QueueId, QueuePercentage, Priority, QueueAddress as u64, QueueSize)))
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
        with_ctx(|_| Ok(()))?;
        if CUMaskCount == 0 || QueueCUMask.is_null() || !CUMaskCount.is_multiple_of(32) {
            return Err(Status::INVALID_PARAMETER);
        }
        // SAFETY: non-NULL; the caller promises CUMaskCount / 32 words.
        let words = unsafe { std::slice::from_raw_parts(QueueCUMask, (CUMaskCount / 32) as usize) };
        with_ctx_mut(|c| c.set_queue_cu_mask(QueueId, CUMaskCount, words))
    })
}

/// # Safety
/// `QueueInfo` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetQueueInfo(QueueId: HSA_QUEUEID, QueueInfo: *mut HsaQueueInfo) -> HSAKMT_STATUS {
    guard("hsaKmtGetQueueInfo", || {
        with_ctx(|_| Ok(()))?;
        // SAFETY: the C caller's pointer contract.
        let out = unsafe { out(QueueInfo) }?;
        let i = with_ctx(|c| c.queue_info(QueueId))?;
        out.QueueDetailError = 0;
        out.QueueTypeExtended = 0;
        out.NumCUAssigned = i.cu_mask_bits;
        out.CUMaskInfo = i.cu_mask as *mut u32;
        out.UserContextSaveArea = i.user_context_save_area as *mut u32;
        out.SaveAreaSizeInBytes = i.save_area_size;
        out.ControlStackTop = i.control_stack_top as *mut u32;
        out.ControlStackUsedInBytes = i.control_stack_used;
        out.SaveAreaHeader = i.save_area_header as *mut HsaUserContextSaveAreaHeader;
        out.SaveAreaAllocSize = i.save_area_alloc_size;
        Ok(())
    })
}

/// # Safety
/// `KernelInternalQueueId` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetKernelQueueId(QueueId: HSA_QUEUEID, KernelInternalQueueId: *mut HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtGetKernelQueueId", || {
        with_ctx(|_| Ok(()))?;
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
        let (doorbell, kfd_id, kfd) = with_ctx(|c| {
            let (d, id) = c.queue_doorbell(QueueId)?;
            Ok((d, id, c.kfd_shared()))
        })?;
        // SAFETY: the doorbell is a slot of the doorbell page this context mapped for the
        // queue, live while the queue is; an aligned 64-bit store as the hardware expects.
        unsafe { std::ptr::write_volatile(doorbell as usize as *mut u64, value) };
        kfd.doorbell_rung(kfd_id);
        Ok(())
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
/// No pointer is dereferenced (they are given to the KFD as addresses).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetTrapHandler(
    NodeId: HSAuint32,
    TrapHandlerBaseAddress: *mut c_void,
    _TrapHandlerSizeInBytes: HSAuint64,
    TrapBufferBaseAddress: *mut c_void,
    _TrapBufferSizeInBytes: HSAuint64,
) -> HSAKMT_STATUS {
    guard("hsaKmtSetTrapHandler", || with_ctx(|c| c.set_trap_handler(NodeId, TrapHandlerBaseAddress as u64, TrapBufferBaseAddress as u64)))
}

/// # Safety
/// `QueueReport` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtReportQueue(QueueId: HSA_QUEUEID, QueueReport: *mut HsaQueueReport) -> HSAKMT_STATUS {
    guard("hsaKmtReportQueue", || {
        with_ctx(|_| Ok(()))?;
        // SAFETY: the C caller's pointer contract.
        let out = unsafe { out(QueueReport) }?;
        let (ring, size) = with_ctx(|c| c.queue_ring(QueueId))?;
        out.VMID = 0;
        out.QueueAddress = ring as *mut c_void;
        out.QueueSize = size;
        Ok(())
    })
}
