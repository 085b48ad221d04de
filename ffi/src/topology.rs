//! Topology exports: hsaKmtAcquireSystemProperties, hsaKmtReleaseSystemProperties and the
//! hsaKmtGetNode*Properties calls, with upstream's check order and statuses.

use crate::boundary::{guard, out, out_slice};
use crate::generation::{self, write_member, write_record};
use crate::global::{self, pid, with_ctx, with_ctx_mut};
use hsakmt_core::abi::generation::{Generation, Record};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::Status;
use std::mem::offset_of;

/// # Safety
/// `SystemProperties` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAcquireSystemProperties(SystemProperties: *mut HsaSystemProperties) -> HSAKMT_STATUS {
    guard("hsaKmtAcquireSystemProperties", || {
        // upstream: the open check comes before the NULL check here
        crate::published::check_open()?; // the open check first (upstream), without a lock
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

/// Our headers' binding (`hsaKmtGetNodeProperties_abi1`): the newest layout.
///
/// # Safety
/// `NodeProperties` must be NULL or valid for writes.
#[unsafe(export_name = "hsaKmtGetNodeProperties_abi1")]
pub unsafe extern "C" fn hsaKmtGetNodeProperties(NodeId: HSAuint32, NodeProperties: *mut HsaNodeProperties) -> HSAKMT_STATUS {
    // SAFETY: the same contract.
    unsafe { node_properties(Generation::NEWEST, NodeId, NodeProperties.cast()) }
}

/// The plain symbol: the caller's ABI generation's layout (crate::generation).
///
/// # Safety
/// `NodeProperties` must be NULL or valid for writes of the caller's generation's struct.
#[unsafe(export_name = "hsaKmtGetNodeProperties")]
pub unsafe extern "C" fn plain_hsaKmtGetNodeProperties(NodeId: HSAuint32, NodeProperties: *mut HsaNodeProperties) -> HSAKMT_STATUS {
    let g = generation::for_function!("hsaKmtGetNodeProperties");
    // SAFETY: the same contract, for generation `g`.
    unsafe { node_properties(g, NodeId, NodeProperties.cast()) }
}

/// # Safety
/// `dst` must be NULL or valid for writes of `g`'s `HsaNodeProperties`.
unsafe fn node_properties(g: Generation, id: u32, dst: *mut u8) -> HSAKMT_STATUS {
    guard("hsaKmtGetNodeProperties", || {
        if dst.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        with_ctx(|c| {
            // One copy of the record, from the snapshot to the caller, then the bank count.
            let (p, banks) = c.node_properties_ref(id)?;
            // SAFETY: non-NULL, and the caller's contract for generation `g`.
            unsafe {
                write_record(g, Record::HsaNodeProperties, p, dst);
                write_member(g, Record::HsaNodeProperties, offset_of!(HsaNodeProperties, NumMemoryBanks), banks, dst);
            }
            Ok(())
        })
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

/// Our headers' binding (`hsaKmtGetNodeCacheProperties_abi1`): the newest layout.
///
/// # Safety
/// `CacheProperties` must be NULL or valid for writes of `NumCaches` elements.
#[unsafe(export_name = "hsaKmtGetNodeCacheProperties_abi1")]
pub unsafe extern "C" fn hsaKmtGetNodeCacheProperties(
    NodeId: HSAuint32,
    ProcessorId: HSAuint32,
    NumCaches: HSAuint32,
    CacheProperties: *mut HsaCacheProperties,
) -> HSAKMT_STATUS {
    // SAFETY: the same contract.
    unsafe { cache_properties(Generation::NEWEST, NodeId, ProcessorId, NumCaches, CacheProperties.cast()) }
}

/// The plain symbol: the caller's ABI generation's layout (crate::generation).
///
/// # Safety
/// `CacheProperties` must be NULL or valid for writes of `NumCaches` elements of the
/// caller's generation's struct.
#[unsafe(export_name = "hsaKmtGetNodeCacheProperties")]
pub unsafe extern "C" fn plain_hsaKmtGetNodeCacheProperties(
    NodeId: HSAuint32,
    ProcessorId: HSAuint32,
    NumCaches: HSAuint32,
    CacheProperties: *mut HsaCacheProperties,
) -> HSAKMT_STATUS {
    let g = generation::for_function!("hsaKmtGetNodeCacheProperties");
    // SAFETY: the same contract, for generation `g`.
    unsafe { cache_properties(g, NodeId, ProcessorId, NumCaches, CacheProperties.cast()) }
}

/// # Safety
/// `dst` must be NULL or valid for writes of `n` elements of `g`'s `HsaCacheProperties`.
unsafe fn cache_properties(g: Generation, id: u32, processor: u32, n: u32, dst: *mut u8) -> HSAKMT_STATUS {
    guard("hsaKmtGetNodeCacheProperties", || {
        if dst.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        let stride = g.size_of(Record::HsaCacheProperties);
        with_ctx(|c| {
            let caches = c.node_caches(id, processor, n)?;
            for (i, cache) in caches.iter().enumerate() {
                // SAFETY: non-NULL, `i < n`: inside the caller's array of `g`'s structs.
                unsafe { write_record(g, Record::HsaCacheProperties, cache, dst.add(i * stride)) };
            }
            Ok(())
        })
    })
}

/// Our headers' binding (`hsaKmtGetNodeIoLinkProperties_abi1`): the newest layout.
///
/// # Safety
/// `IoLinkProperties` must be NULL or valid for writes of `NumIoLinks` elements.
#[unsafe(export_name = "hsaKmtGetNodeIoLinkProperties_abi1")]
pub unsafe extern "C" fn hsaKmtGetNodeIoLinkProperties(
    NodeId: HSAuint32,
    NumIoLinks: HSAuint32,
    IoLinkProperties: *mut HsaIoLinkProperties,
) -> HSAKMT_STATUS {
    // SAFETY: the same contract.
    unsafe { io_link_properties(Generation::NEWEST, NodeId, NumIoLinks, IoLinkProperties.cast()) }
}

/// The plain symbol: the caller's ABI generation's layout (crate::generation).
///
/// # Safety
/// `IoLinkProperties` must be NULL or valid for writes of `NumIoLinks` elements of the
/// caller's generation's struct.
#[unsafe(export_name = "hsaKmtGetNodeIoLinkProperties")]
pub unsafe extern "C" fn plain_hsaKmtGetNodeIoLinkProperties(
    NodeId: HSAuint32,
    NumIoLinks: HSAuint32,
    IoLinkProperties: *mut HsaIoLinkProperties,
) -> HSAKMT_STATUS {
    let g = generation::for_function!("hsaKmtGetNodeIoLinkProperties");
    // SAFETY: the same contract, for generation `g`.
    unsafe { io_link_properties(g, NodeId, NumIoLinks, IoLinkProperties.cast()) }
}

/// # Safety
/// `dst` must be NULL or valid for writes of `n` elements of `g`'s `HsaIoLinkProperties`.
unsafe fn io_link_properties(g: Generation, id: u32, n: u32, dst: *mut u8) -> HSAKMT_STATUS {
    guard("hsaKmtGetNodeIoLinkProperties", || {
        if dst.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        let stride = g.size_of(Record::HsaIoLinkProperties);
        with_ctx(|c| {
            let links = c.node_io_links(id, n)?;
            for (i, link) in links.iter().enumerate() {
                // SAFETY: non-NULL, `i < n`: inside the caller's array of `g`'s structs.
                unsafe { write_record(g, Record::HsaIoLinkProperties, link, dst.add(i * stride)) };
            }
            Ok(())
        })
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
