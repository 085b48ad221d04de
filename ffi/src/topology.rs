//! Topology exports: hsaKmtAcquireSystemProperties, hsaKmtReleaseSystemProperties and the
//! hsaKmtGetNode*Properties calls, with upstream's check order and statuses.

use crate::boundary::{guard, out, out_slice};
use crate::global::{self, pid, with_ctx, with_ctx_mut};
use hsakmt_core::abi::hsakmt::*;

/// # Safety
/// `SystemProperties` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAcquireSystemProperties(SystemProperties: *mut HsaSystemProperties) -> HSAKMT_STATUS {
    guard("hsaKmtAcquireSystemProperties", || {
        // upstream: the open check comes before the NULL check here
        with_ctx(|_| Ok(()))?;
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out(SystemProperties) }?;
        *dst = with_ctx_mut(|c| {
            c.acquire_system_properties().map_err(|e| {
                crate::log::error(format_args!("hsaKmtAcquireSystemProperties: topology: {e}\n"));
                crate::boundary::set_last_error(format!("topology: {e}"));
                e.status
            })
        })?;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtReleaseSystemProperties() -> HSAKMT_STATUS {
    guard("hsaKmtReleaseSystemProperties", || {
        // upstream: no open check, always SUCCESS
        if let Ok(c) = global::thunk().ctx_mut(pid()) {
            c.release_system_properties();
        }
        Ok(())
    })
}

/// # Safety
/// `NodeProperties` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeProperties(NodeId: HSAuint32, NodeProperties: *mut HsaNodeProperties) -> HSAKMT_STATUS {
    guard("hsaKmtGetNodeProperties", || {
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out(NodeProperties) }?;
        *dst = with_ctx(|c| c.node_properties(NodeId))?;
        Ok(())
    })
}

/// # Safety
/// `MemoryProperties` must be NULL or valid for writes of `NumBanks` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeMemoryProperties(
    NodeId: HSAuint32,
    NumBanks: HSAuint32,
    MemoryProperties: *mut HsaMemoryProperties,
) -> HSAKMT_STATUS {
    guard("hsaKmtGetNodeMemoryProperties", || {
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out_slice(MemoryProperties, NumBanks as usize) }?;
        with_ctx(|c| c.node_memory_properties(NodeId, dst))
    })
}

/// # Safety
/// `CacheProperties` must be NULL or valid for writes of `NumCaches` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeCacheProperties(
    NodeId: HSAuint32,
    ProcessorId: HSAuint32,
    NumCaches: HSAuint32,
    CacheProperties: *mut HsaCacheProperties,
) -> HSAKMT_STATUS {
    guard("hsaKmtGetNodeCacheProperties", || {
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out_slice(CacheProperties, NumCaches as usize) }?;
        with_ctx(|c| c.node_cache_properties(NodeId, ProcessorId, dst))
    })
}

/// # Safety
/// `IoLinkProperties` must be NULL or valid for writes of `NumIoLinks` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeIoLinkProperties(
    NodeId: HSAuint32,
    NumIoLinks: HSAuint32,
    IoLinkProperties: *mut HsaIoLinkProperties,
) -> HSAKMT_STATUS {
    guard("hsaKmtGetNodeIoLinkProperties", || {
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out_slice(IoLinkProperties, NumIoLinks as usize) }?;
        with_ctx(|c| c.node_io_link_properties(NodeId, dst))
    })
}

/// Upstream does no checking here at all; we validate like the other Get* calls.
///
/// # Safety
/// `Frequency` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetNodeWallclockFrequency(NodeId: HSAuint32, Frequency: *mut u64) -> HSAKMT_STATUS {
    guard("hsaKmtGetNodeWallclockFrequency", || {
        // SAFETY: the C caller's pointer contract.
        let dst = unsafe { out(Frequency) }?;
        *dst = with_ctx(|c| c.node_wallclock_frequency(NodeId))?;
        Ok(())
    })
}
