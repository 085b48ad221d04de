//! The `*Ctx` exports of hsakmtctx.h that run their classic twin on a chosen context: each selects
//! the context `ctx` names for the duration of the call ([`crate::contexts::select`]) and calls
//! the classic implementation, so both answer with the same statuses (the primary context's
//! handle reaches exactly the state the classic API uses). Written once from the stub signatures
//! of `gen_exports.rs`; the context calls with their own code (open/close, events) are in
//! `contexts.rs` and `events.rs`.

use crate::contexts::select;
use core::ffi::{c_int, c_uint, c_void};
use hsakmt_core::abi::hsakmt::{
    HSATraceId, HSAint32, HSAuint32, HSAuint64, HsaAMDGPUDeviceHandle, HsaCacheProperties, HsaClockCounters, HsaCounter,
    HsaCounterProperties, HsaEvent, HsaGpuTileConfig, HsaGraphicsResourceInfo, HsaIoLinkProperties, HsaKFDContext, HsaMemFlags,
    HsaMemoryProperties, HsaNodeProperties, HsaPmcTraceRoot, HsaPointerInfo, HsaQueueInfo, HsaQueueResource, HsaSharedMemoryHandle,
    HsaSystemProperties, HSAKMT_STATUS, HSA_QUEUEID, HSA_QUEUE_PRIORITY, HSA_QUEUE_TYPE, HSA_REGISTER_MEM_FLAGS, HSA_SVM_ATTRIBUTE,
};
use hsakmt_core::abi::kfd::kfd_ioctl_dbg_trap_args;

/// `hsaKmtAcquireSystemPropertiesCtx` (hsakmtctx.h): `hsaKmtAcquireSystemProperties` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtAcquireSystemProperties`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAcquireSystemPropertiesCtx(
    ctx: *mut HsaKFDContext,
    system_properties: *mut HsaSystemProperties,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtAcquireSystemProperties's contract.
    select(ctx, || unsafe { crate::topology::hsaKmtAcquireSystemProperties(system_properties) })
}

/// `hsaKmtReleaseSystemPropertiesCtx` (hsakmtctx.h): `hsaKmtReleaseSystemProperties` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtReleaseSystemProperties`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtReleaseSystemPropertiesCtx(ctx: *mut HsaKFDContext) -> HSAKMT_STATUS {
    select(ctx, || crate::topology::hsaKmtReleaseSystemProperties())
}

/// `hsaKmtGetNodePropertiesCtx` (hsakmtctx.h): `hsaKmtGetNodeProperties` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetNodeProperties`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodePropertiesCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    node_properties: *mut HsaNodeProperties,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetNodeProperties's contract.
    select(ctx, || unsafe { crate::topology::hsaKmtGetNodeProperties(node_id, node_properties) })
}

/// `hsaKmtGetNodeMemoryPropertiesCtx` (hsakmtctx.h): `hsaKmtGetNodeMemoryProperties` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetNodeMemoryProperties`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeMemoryPropertiesCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    num_banks: HSAuint32,
    memory_properties: *mut HsaMemoryProperties,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetNodeMemoryProperties's contract.
    select(ctx, || unsafe { crate::topology::hsaKmtGetNodeMemoryProperties(node_id, num_banks, memory_properties) })
}

/// `hsaKmtGetNodeCachePropertiesCtx` (hsakmtctx.h): `hsaKmtGetNodeCacheProperties` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetNodeCacheProperties`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeCachePropertiesCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    processor_id: HSAuint32,
    num_caches: HSAuint32,
    cache_properties: *mut HsaCacheProperties,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetNodeCacheProperties's contract.
    select(ctx, || unsafe { crate::topology::hsaKmtGetNodeCacheProperties(node_id, processor_id, num_caches, cache_properties) })
}

/// `hsaKmtGetNodeIoLinkPropertiesCtx` (hsakmtctx.h): `hsaKmtGetNodeIoLinkProperties` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetNodeIoLinkProperties`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeIoLinkPropertiesCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    num_io_links: HSAuint32,
    io_link_properties: *mut HsaIoLinkProperties,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetNodeIoLinkProperties's contract.
    select(ctx, || unsafe { crate::topology::hsaKmtGetNodeIoLinkProperties(node_id, num_io_links, io_link_properties) })
}

/// `hsaKmtCreateQueueCtx` (hsakmtctx.h): `hsaKmtCreateQueue` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtCreateQueue`; `ctx` is looked up by value, never dereferenced.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCreateQueueCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    queue_type: HSA_QUEUE_TYPE,
    queue_percentage: HSAuint32,
    priority: HSA_QUEUE_PRIORITY,
    queue_address: *mut c_void,
    queue_size_in_bytes: HSAuint64,
    event: *mut HsaEvent,
    queue_resource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtCreateQueue's contract.
    select(ctx, || unsafe {
        crate::queues::hsaKmtCreateQueue(
            node_id,
            queue_type,
            queue_percentage,
            priority,
            queue_address,
            queue_size_in_bytes,
            event,
            queue_resource,
        )
    })
}

/// `hsaKmtCreateQueueExtCtx` (hsakmtctx.h): `hsaKmtCreateQueueExt` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtCreateQueueExt`; `ctx` is looked up by value, never dereferenced.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCreateQueueExtCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    queue_type: HSA_QUEUE_TYPE,
    queue_percentage: HSAuint32,
    priority: HSA_QUEUE_PRIORITY,
    sdma_engine_id: HSAuint32,
    queue_address: *mut c_void,
    queue_size_in_bytes: HSAuint64,
    event: *mut HsaEvent,
    queue_resource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtCreateQueueExt's contract.
    select(ctx, || unsafe {
        crate::queues::hsaKmtCreateQueueExt(
            node_id,
            queue_type,
            queue_percentage,
            priority,
            sdma_engine_id,
            queue_address,
            queue_size_in_bytes,
            event,
            queue_resource,
        )
    })
}

/// `hsaKmtCreateQueueV2Ctx` (hsakmtctx.h): `hsaKmtCreateQueueV2` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtCreateQueueV2`; `ctx` is looked up by value, never dereferenced.
#[allow(clippy::too_many_arguments)] // the C signature is fixed
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCreateQueueV2Ctx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    queue_type: HSA_QUEUE_TYPE,
    queue_percentage: HSAuint32,
    priority: HSA_QUEUE_PRIORITY,
    sdma_engine_id: HSAuint32,
    queue_address: *mut c_void,
    queue_size_in_bytes: HSAuint64,
    meta_data_queue_size_in_bytes: HSAuint64,
    event: *mut HsaEvent,
    queue_resource: *mut HsaQueueResource,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtCreateQueueV2's contract.
    select(ctx, || unsafe {
        crate::queues::hsaKmtCreateQueueV2(
            node_id,
            queue_type,
            queue_percentage,
            priority,
            sdma_engine_id,
            queue_address,
            queue_size_in_bytes,
            meta_data_queue_size_in_bytes,
            event,
            queue_resource,
        )
    })
}

/// `hsaKmtUpdateQueueCtx` (hsakmtctx.h): `hsaKmtUpdateQueue` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtUpdateQueue`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUpdateQueueCtx(
    ctx: *mut HsaKFDContext,
    queue_id: HSA_QUEUEID,
    queue_percentage: HSAuint32,
    priority: HSA_QUEUE_PRIORITY,
    queue_address: *mut c_void,
    queue_size: HSAuint64,
    event: *mut HsaEvent,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtUpdateQueue's contract.
    select(ctx, || unsafe { crate::queues::hsaKmtUpdateQueue(queue_id, queue_percentage, priority, queue_address, queue_size, event) })
}

/// `hsaKmtDestroyQueueCtx` (hsakmtctx.h): `hsaKmtDestroyQueue` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtDestroyQueue`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDestroyQueueCtx(ctx: *mut HsaKFDContext, queue_id: HSA_QUEUEID) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtDestroyQueue's contract.
    select(ctx, || unsafe { crate::queues::hsaKmtDestroyQueue(queue_id) })
}

/// `hsaKmtSetQueueCUMaskCtx` (hsakmtctx.h): `hsaKmtSetQueueCUMask` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtSetQueueCUMask`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetQueueCUMaskCtx(
    ctx: *mut HsaKFDContext,
    queue_id: HSA_QUEUEID,
    cu_mask_count: HSAuint32,
    queue_cu_mask: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtSetQueueCUMask's contract.
    select(ctx, || unsafe { crate::queues::hsaKmtSetQueueCUMask(queue_id, cu_mask_count, queue_cu_mask) })
}

/// `hsaKmtGetQueueInfoCtx` (hsakmtctx.h): `hsaKmtGetQueueInfo` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetQueueInfo`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetQueueInfoCtx(
    ctx: *mut HsaKFDContext,
    queue_id: HSA_QUEUEID,
    queue_info: *mut HsaQueueInfo,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetQueueInfo's contract.
    select(ctx, || unsafe { crate::queues::hsaKmtGetQueueInfo(queue_id, queue_info) })
}

/// `hsaKmtSetMemoryPolicyCtx` (hsakmtctx.h): `hsaKmtSetMemoryPolicy` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtSetMemoryPolicy`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetMemoryPolicyCtx(
    ctx: *mut HsaKFDContext,
    node: HSAuint32,
    default_policy: HSAuint32,
    alternate_policy: HSAuint32,
    memory_address_alternate: *mut c_void,
    memory_size_in_bytes: HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtSetMemoryPolicy's contract.
    select(ctx, || unsafe {
        crate::memory::hsaKmtSetMemoryPolicy(node, default_policy, alternate_policy, memory_address_alternate, memory_size_in_bytes)
    })
}

/// `hsaKmtAllocMemoryCtx` (hsakmtctx.h): `hsaKmtAllocMemory` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtAllocMemory`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocMemoryCtx(
    ctx: *mut HsaKFDContext,
    preferred_node: HSAuint32,
    size_in_bytes: HSAuint64,
    mem_flags: HsaMemFlags,
    memory_address: *mut *mut c_void,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtAllocMemory's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtAllocMemory(preferred_node, size_in_bytes, mem_flags, memory_address) })
}

/// `hsaKmtAllocMemoryAlignCtx` (hsakmtctx.h): `hsaKmtAllocMemoryAlign` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtAllocMemoryAlign`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocMemoryAlignCtx(
    ctx: *mut HsaKFDContext,
    preferred_node: HSAuint32,
    size_in_bytes: HSAuint64,
    alignment: HSAuint64,
    mem_flags: HsaMemFlags,
    memory_address: *mut *mut c_void,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtAllocMemoryAlign's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtAllocMemoryAlign(preferred_node, size_in_bytes, alignment, mem_flags, memory_address) })
}

/// `hsaKmtAllocMemoryHostGttCtx` (hsakmtctx.h): `hsaKmtAllocMemoryHostGtt` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtAllocMemoryHostGtt`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocMemoryHostGttCtx(
    ctx: *mut HsaKFDContext,
    preferred_node: HSAuint32,
    gtt_anchor_node: HSAuint32,
    size_in_bytes: HSAuint64,
    mem_flags: HsaMemFlags,
    memory_address: *mut *mut c_void,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtAllocMemoryHostGtt's contract.
    select(ctx, || unsafe {
        crate::memory::hsaKmtAllocMemoryHostGtt(preferred_node, gtt_anchor_node, size_in_bytes, mem_flags, memory_address)
    })
}

/// `hsaKmtFreeMemoryCtx` (hsakmtctx.h): `hsaKmtFreeMemory` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtFreeMemory`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtFreeMemoryCtx(
    ctx: *mut HsaKFDContext,
    memory_address: *mut c_void,
    size_in_bytes: HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtFreeMemory's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtFreeMemory(memory_address, size_in_bytes) })
}

/// `hsaKmtAvailableMemoryCtx` (hsakmtctx.h): `hsaKmtAvailableMemory` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtAvailableMemory`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAvailableMemoryCtx(
    ctx: *mut HsaKFDContext,
    node: HSAuint32,
    available_bytes: *mut HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtAvailableMemory's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtAvailableMemory(node, available_bytes) })
}

/// `hsaKmtRegisterMemoryCtx` (hsakmtctx.h): `hsaKmtRegisterMemory` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRegisterMemory`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemoryCtx(
    ctx: *mut HsaKFDContext,
    memory_address: *mut c_void,
    memory_size_in_bytes: HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtRegisterMemory's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtRegisterMemory(memory_address, memory_size_in_bytes) })
}

/// `hsaKmtRegisterMemoryToNodesCtx` (hsakmtctx.h): `hsaKmtRegisterMemoryToNodes` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRegisterMemoryToNodes`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemoryToNodesCtx(
    ctx: *mut HsaKFDContext,
    memory_address: *mut c_void,
    memory_size_in_bytes: HSAuint64,
    number_of_nodes: HSAuint64,
    node_array: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtRegisterMemoryToNodes's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtRegisterMemoryToNodes(memory_address, memory_size_in_bytes, number_of_nodes, node_array) })
}

/// `hsaKmtRegisterMemoryWithFlagsCtx` (hsakmtctx.h): `hsaKmtRegisterMemoryWithFlags` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRegisterMemoryWithFlags`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterMemoryWithFlagsCtx(
    ctx: *mut HsaKFDContext,
    memory_address: *mut c_void,
    memory_size_in_bytes: HSAuint64,
    mem_flags: HsaMemFlags,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtRegisterMemoryWithFlags's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtRegisterMemoryWithFlags(memory_address, memory_size_in_bytes, mem_flags) })
}

/// `hsaKmtRegisterGraphicsHandleToNodesCtx` (hsakmtctx.h): `hsaKmtRegisterGraphicsHandleToNodes` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRegisterGraphicsHandleToNodes`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterGraphicsHandleToNodesCtx(
    ctx: *mut HsaKFDContext,
    graphics_resource_handle: HSAuint64,
    graphics_resource_info: *mut HsaGraphicsResourceInfo,
    number_of_nodes: HSAuint64,
    node_array: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtRegisterGraphicsHandleToNodes's contract.
    select(ctx, || unsafe {
        crate::memory::hsaKmtRegisterGraphicsHandleToNodes(graphics_resource_handle, graphics_resource_info, number_of_nodes, node_array)
    })
}

/// `hsaKmtRegisterGraphicsHandleToNodesExtCtx` (hsakmtctx.h): `hsaKmtRegisterGraphicsHandleToNodesExt` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRegisterGraphicsHandleToNodesExt`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterGraphicsHandleToNodesExtCtx(
    ctx: *mut HsaKFDContext,
    graphics_resource_handle: HSAuint64,
    graphics_resource_info: *mut HsaGraphicsResourceInfo,
    number_of_nodes: HSAuint64,
    node_array: *mut HSAuint32,
    register_flags: HSA_REGISTER_MEM_FLAGS,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtRegisterGraphicsHandleToNodesExt's contract.
    select(ctx, || unsafe {
        crate::memory::hsaKmtRegisterGraphicsHandleToNodesExt(
            graphics_resource_handle,
            graphics_resource_info,
            number_of_nodes,
            node_array,
            register_flags,
        )
    })
}

/// `hsaKmtExportDMABufHandleCtx` (hsakmtctx.h): `hsaKmtExportDMABufHandle` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtExportDMABufHandle`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtExportDMABufHandleCtx(
    ctx: *mut HsaKFDContext,
    memory_address: *mut c_void,
    memory_size_in_bytes: HSAuint64,
    dma_buf_fd: *mut c_int,
    offset: *mut HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtExportDMABufHandle's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtExportDMABufHandle(memory_address, memory_size_in_bytes, dma_buf_fd, offset) })
}

/// `hsaKmtShareMemoryCtx` (hsakmtctx.h): `hsaKmtShareMemory` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtShareMemory`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtShareMemoryCtx(
    ctx: *mut HsaKFDContext,
    memory_address: *mut c_void,
    size_in_bytes: HSAuint64,
    shared_memory_handle: *mut HsaSharedMemoryHandle,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtShareMemory's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtShareMemory(memory_address, size_in_bytes, shared_memory_handle) })
}

/// `hsaKmtRegisterSharedHandleCtx` (hsakmtctx.h): `hsaKmtRegisterSharedHandle` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRegisterSharedHandle`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterSharedHandleCtx(
    ctx: *mut HsaKFDContext,
    shared_memory_handle: *const HsaSharedMemoryHandle,
    memory_address: *mut *mut c_void,
    size_in_bytes: *mut HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtRegisterSharedHandle's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtRegisterSharedHandle(shared_memory_handle, memory_address, size_in_bytes) })
}

/// `hsaKmtRegisterSharedHandleToNodesCtx` (hsakmtctx.h): `hsaKmtRegisterSharedHandleToNodes` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRegisterSharedHandleToNodes`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRegisterSharedHandleToNodesCtx(
    ctx: *mut HsaKFDContext,
    shared_memory_handle: *const HsaSharedMemoryHandle,
    memory_address: *mut *mut c_void,
    size_in_bytes: *mut HSAuint64,
    number_of_nodes: HSAuint64,
    node_array: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtRegisterSharedHandleToNodes's contract.
    select(ctx, || unsafe {
        crate::memory::hsaKmtRegisterSharedHandleToNodes(shared_memory_handle, memory_address, size_in_bytes, number_of_nodes, node_array)
    })
}

/// `hsaKmtDeregisterMemoryCtx` (hsakmtctx.h): `hsaKmtDeregisterMemory` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtDeregisterMemory`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDeregisterMemoryCtx(ctx: *mut HsaKFDContext, memory_address: *mut c_void) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtDeregisterMemory's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtDeregisterMemory(memory_address) })
}

/// `hsaKmtMapMemoryToGPUCtx` (hsakmtctx.h): `hsaKmtMapMemoryToGPU` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtMapMemoryToGPU`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMapMemoryToGPUCtx(
    ctx: *mut HsaKFDContext,
    memory_address: *mut c_void,
    memory_size_in_bytes: HSAuint64,
    alternate_vagpu: *mut HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtMapMemoryToGPU's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtMapMemoryToGPU(memory_address, memory_size_in_bytes, alternate_vagpu) })
}

/// `hsaKmtMapMemoryToGPUNodesCtx` (hsakmtctx.h): `hsaKmtMapMemoryToGPUNodes` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtMapMemoryToGPUNodes`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtMapMemoryToGPUNodesCtx(
    ctx: *mut HsaKFDContext,
    memory_address: *mut c_void,
    memory_size_in_bytes: HSAuint64,
    alternate_vagpu: *mut HSAuint64,
    mem_flags: HsaMemFlags,
    number_of_nodes: HSAuint64,
    node_array: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtMapMemoryToGPUNodes's contract.
    select(ctx, || unsafe {
        crate::memory::hsaKmtMapMemoryToGPUNodes(
            memory_address,
            memory_size_in_bytes,
            alternate_vagpu,
            mem_flags,
            number_of_nodes,
            node_array,
        )
    })
}

/// `hsaKmtUnmapMemoryToGPUCtx` (hsakmtctx.h): `hsaKmtUnmapMemoryToGPU` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtUnmapMemoryToGPU`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUnmapMemoryToGPUCtx(ctx: *mut HsaKFDContext, memory_address: *mut c_void) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtUnmapMemoryToGPU's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtUnmapMemoryToGPU(memory_address) })
}

/// `hsaKmtUnmapGraphicHandleCtx` (hsakmtctx.h): `hsaKmtUnmapGraphicHandle` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtUnmapGraphicHandle`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtUnmapGraphicHandleCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    flat_memory_address: HSAuint64,
    size_in_bytes: HSAuint64,
) -> HSAKMT_STATUS {
    select(ctx, || crate::memory::hsaKmtUnmapGraphicHandle(node_id, flat_memory_address, size_in_bytes))
}

/// `hsaKmtGetAMDGPUDeviceHandleCtx` (hsakmtctx.h): `hsaKmtGetAMDGPUDeviceHandle` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetAMDGPUDeviceHandle`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetAMDGPUDeviceHandleCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    device_handle: *mut HsaAMDGPUDeviceHandle,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetAMDGPUDeviceHandle's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtGetAMDGPUDeviceHandle(node_id, device_handle) })
}

/// `hsaKmtSetTrapHandlerCtx` (hsakmtctx.h): `hsaKmtSetTrapHandler` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtSetTrapHandler`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetTrapHandlerCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    trap_handler_base_address: *mut c_void,
    trap_handler_size_in_bytes: HSAuint64,
    trap_buffer_base_address: *mut c_void,
    trap_buffer_size_in_bytes: HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtSetTrapHandler's contract.
    select(ctx, || unsafe {
        crate::queues::hsaKmtSetTrapHandler(
            node_id,
            trap_handler_base_address,
            trap_handler_size_in_bytes,
            trap_buffer_base_address,
            trap_buffer_size_in_bytes,
        )
    })
}

/// `hsaKmtGetTileConfigCtx` (hsakmtctx.h): `hsaKmtGetTileConfig` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetTileConfig`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetTileConfigCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    config: *mut HsaGpuTileConfig,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetTileConfig's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtGetTileConfig(node_id, config) })
}

/// `hsaKmtQueryPointerInfoCtx` (hsakmtctx.h): `hsaKmtQueryPointerInfo` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtQueryPointerInfo`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueryPointerInfoCtx(
    ctx: *mut HsaKFDContext,
    pointer: *const c_void,
    pointer_info: *mut HsaPointerInfo,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtQueryPointerInfo's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtQueryPointerInfo(pointer, pointer_info) })
}

/// `hsaKmtSetMemoryUserDataCtx` (hsakmtctx.h): `hsaKmtSetMemoryUserData` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtSetMemoryUserData`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetMemoryUserDataCtx(
    ctx: *mut HsaKFDContext,
    pointer: *const c_void,
    user_data: *mut c_void,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtSetMemoryUserData's contract.
    select(ctx, || unsafe { crate::memory::hsaKmtSetMemoryUserData(pointer, user_data) })
}

/// `hsaKmtAllocQueueGWSCtx` (hsakmtctx.h): `hsaKmtAllocQueueGWS` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtAllocQueueGWS`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAllocQueueGWSCtx(
    ctx: *mut HsaKFDContext,
    queue_id: HSA_QUEUEID,
    n_gws: HSAuint32,
    first_gws: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtAllocQueueGWS's contract.
    select(ctx, || unsafe { crate::queues::hsaKmtAllocQueueGWS(queue_id, n_gws, first_gws) })
}

/// `hsaKmtRuntimeEnableCtx` (hsakmtctx.h): `hsaKmtRuntimeEnable` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRuntimeEnable`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRuntimeEnableCtx(ctx: *mut HsaKFDContext, r_debug: *mut c_void, setup_ttmp: bool) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtRuntimeEnable's contract.
    select(ctx, || unsafe { crate::openclose::hsaKmtRuntimeEnable(r_debug, setup_ttmp) })
}

/// `hsaKmtRuntimeDisableCtx` (hsakmtctx.h): `hsaKmtRuntimeDisable` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtRuntimeDisable`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRuntimeDisableCtx(ctx: *mut HsaKFDContext) -> HSAKMT_STATUS {
    select(ctx, || crate::openclose::hsaKmtRuntimeDisable())
}

/// `hsaKmtGetRuntimeCapabilitiesCtx` (hsakmtctx.h): `hsaKmtGetRuntimeCapabilities` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetRuntimeCapabilities`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetRuntimeCapabilitiesCtx(ctx: *mut HsaKFDContext, caps_mask: *mut HSAuint32) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetRuntimeCapabilities's contract.
    select(ctx, || unsafe { crate::openclose::hsaKmtGetRuntimeCapabilities(caps_mask) })
}

/// `hsaKmtDbgEnableCtx` (hsakmtctx.h): `hsaKmtDbgEnable` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtDbgEnable`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgEnableCtx(
    ctx: *mut HsaKFDContext,
    runtime_info: *mut *mut c_void,
    data_size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtDbgEnable's contract.
    select(ctx, || unsafe { crate::debug::hsaKmtDbgEnable(runtime_info, data_size) })
}

/// `hsaKmtDbgDisableCtx` (hsakmtctx.h): `hsaKmtDbgDisable` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtDbgDisable`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgDisableCtx(ctx: *mut HsaKFDContext) -> HSAKMT_STATUS {
    select(ctx, || crate::debug::hsaKmtDbgDisable())
}

/// `hsaKmtDbgGetDeviceDataCtx` (hsakmtctx.h): `hsaKmtDbgGetDeviceData` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtDbgGetDeviceData`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgGetDeviceDataCtx(
    ctx: *mut HsaKFDContext,
    data: *mut *mut c_void,
    n_entries: *mut HSAuint32,
    entry_size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtDbgGetDeviceData's contract.
    select(ctx, || unsafe { crate::debug::hsaKmtDbgGetDeviceData(data, n_entries, entry_size) })
}

/// `hsaKmtDbgGetQueueDataCtx` (hsakmtctx.h): `hsaKmtDbgGetQueueData` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtDbgGetQueueData`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDbgGetQueueDataCtx(
    ctx: *mut HsaKFDContext,
    data: *mut *mut c_void,
    n_entries: *mut HSAuint32,
    entry_size: *mut HSAuint32,
    suspend_queues: bool,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtDbgGetQueueData's contract.
    select(ctx, || unsafe { crate::debug::hsaKmtDbgGetQueueData(data, n_entries, entry_size, suspend_queues) })
}

/// `hsaKmtCheckRuntimeDebugSupportCtx` (hsakmtctx.h): `hsaKmtCheckRuntimeDebugSupport` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtCheckRuntimeDebugSupport`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCheckRuntimeDebugSupportCtx(ctx: *mut HsaKFDContext) -> HSAKMT_STATUS {
    select(ctx, || crate::openclose::hsaKmtCheckRuntimeDebugSupport())
}

/// `hsaKmtDebugTrapIoctlCtx` (hsakmtctx.h): `hsaKmtDebugTrapIoctl` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtDebugTrapIoctl`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDebugTrapIoctlCtx(
    ctx: *mut HsaKFDContext,
    args: *mut kfd_ioctl_dbg_trap_args,
    queues: *mut HSA_QUEUEID,
    debug_return: *mut HSAuint64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtDebugTrapIoctl's contract.
    select(ctx, || unsafe { crate::debug::hsaKmtDebugTrapIoctl(args, queues, debug_return) })
}

/// `hsaKmtGetClockCountersCtx` (hsakmtctx.h): `hsaKmtGetClockCounters` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetClockCounters`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetClockCountersCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    counters: *mut HsaClockCounters,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetClockCounters's contract.
    select(ctx, || unsafe { crate::openclose::hsaKmtGetClockCounters(node_id, counters) })
}

/// `hsaKmtPmcGetCounterPropertiesCtx` (hsakmtctx.h): `hsaKmtPmcGetCounterProperties` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtPmcGetCounterProperties`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcGetCounterPropertiesCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    counter_properties: *mut *mut HsaCounterProperties,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtPmcGetCounterProperties's contract.
    select(ctx, || unsafe { crate::pmc::hsaKmtPmcGetCounterProperties(node_id, counter_properties) })
}

/// `hsaKmtPmcRegisterTraceCtx` (hsakmtctx.h): `hsaKmtPmcRegisterTrace` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtPmcRegisterTrace`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcRegisterTraceCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    number_of_counters: HSAuint32,
    counters: *mut HsaCounter,
    trace_root: *mut HsaPmcTraceRoot,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtPmcRegisterTrace's contract.
    select(ctx, || unsafe { crate::pmc::hsaKmtPmcRegisterTrace(node_id, number_of_counters, counters, trace_root) })
}

/// `hsaKmtPmcUnregisterTraceCtx` (hsakmtctx.h): `hsaKmtPmcUnregisterTrace` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtPmcUnregisterTrace`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcUnregisterTraceCtx(ctx: *mut HsaKFDContext, node_id: HSAuint32, trace_id: HSATraceId) -> HSAKMT_STATUS {
    select(ctx, || crate::pmc::hsaKmtPmcUnregisterTrace(node_id, trace_id))
}

/// `hsaKmtPmcAcquireTraceAccessCtx` (hsakmtctx.h): `hsaKmtPmcAcquireTraceAccess` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtPmcAcquireTraceAccess`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcAcquireTraceAccessCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    trace_id: HSATraceId,
) -> HSAKMT_STATUS {
    select(ctx, || crate::pmc::hsaKmtPmcAcquireTraceAccess(node_id, trace_id))
}

/// `hsaKmtPmcReleaseTraceAccessCtx` (hsakmtctx.h): `hsaKmtPmcReleaseTraceAccess` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtPmcReleaseTraceAccess`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcReleaseTraceAccessCtx(
    ctx: *mut HsaKFDContext,
    node_id: HSAuint32,
    trace_id: HSATraceId,
) -> HSAKMT_STATUS {
    select(ctx, || crate::pmc::hsaKmtPmcReleaseTraceAccess(node_id, trace_id))
}

/// `hsaKmtSVMSetAttrCtx` (hsakmtctx.h): `hsaKmtSVMSetAttr` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtSVMSetAttr`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSVMSetAttrCtx(
    ctx: *mut HsaKFDContext,
    start_addr: *mut c_void,
    size: HSAuint64,
    nattr: c_uint,
    attrs: *mut HSA_SVM_ATTRIBUTE,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtSVMSetAttr's contract.
    select(ctx, || unsafe { crate::svm::hsaKmtSVMSetAttr(start_addr, size, nattr, attrs) })
}

/// `hsaKmtSVMGetAttrCtx` (hsakmtctx.h): `hsaKmtSVMGetAttr` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtSVMGetAttr`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSVMGetAttrCtx(
    ctx: *mut HsaKFDContext,
    start_addr: *mut c_void,
    size: HSAuint64,
    nattr: c_uint,
    attrs: *mut HSA_SVM_ATTRIBUTE,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtSVMGetAttr's contract.
    select(ctx, || unsafe { crate::svm::hsaKmtSVMGetAttr(start_addr, size, nattr, attrs) })
}

/// `hsaKmtSetXNACKModeCtx` (hsakmtctx.h): `hsaKmtSetXNACKMode` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtSetXNACKMode`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetXNACKModeCtx(ctx: *mut HsaKFDContext, enable: HSAint32) -> HSAKMT_STATUS {
    select(ctx, || crate::svm::hsaKmtSetXNACKMode(enable))
}

/// `hsaKmtGetXNACKModeCtx` (hsakmtctx.h): `hsaKmtGetXNACKMode` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtGetXNACKMode`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetXNACKModeCtx(ctx: *mut HsaKFDContext, enable: *mut HSAint32) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtGetXNACKMode's contract.
    select(ctx, || unsafe { crate::svm::hsaKmtGetXNACKMode(enable) })
}

/// `hsaKmtOpenSMICtx` (hsakmtctx.h): `hsaKmtOpenSMI` on the context `ctx` (`contexts.rs`).
///
/// # Safety
/// As `hsaKmtOpenSMI`; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtOpenSMICtx(ctx: *mut HsaKFDContext, node_id: HSAuint32, fd: *mut c_int) -> HSAKMT_STATUS {
    // SAFETY: forwarded under hsaKmtOpenSMI's contract.
    select(ctx, || unsafe { crate::smi::hsaKmtOpenSMI(node_id, fd) })
}
