//! A safe Rust face of the C API, for kmtinfo, benches and tests: each function calls the
//! real export (same code path as a C caller) with valid pointers and maps the status.

use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::Status;
use zerocopy::FromZeros;

fn st(code: HSAKMT_STATUS) -> Result<(), Status> {
    if code == HSAKMT_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(Status(code))
    }
}

/// hsaKmtOpenKFD; KERNEL_ALREADY_OPENED counts as success (as ROCr treats it).
pub fn open() -> Result<Status, Status> {
    match crate::hsaKmtOpenKFD() {
        HSAKMT_STATUS_SUCCESS => Ok(Status::SUCCESS),
        HSAKMT_STATUS_KERNEL_ALREADY_OPENED => Ok(Status::KERNEL_ALREADY_OPENED),
        e => Err(Status(e)),
    }
}

pub fn close() -> Result<(), Status> {
    st(crate::hsaKmtCloseKFD())
}

pub fn version() -> Result<HsaVersionInfo, Status> {
    let mut v = HsaVersionInfo::new_zeroed();
    // SAFETY: a valid out-pointer.
    st(unsafe { crate::hsaKmtGetVersion(&mut v) })?;
    Ok(v)
}

pub fn model_enabled() -> Result<bool, Status> {
    let mut b = false;
    // SAFETY: a valid out-pointer.
    st(unsafe { crate::hsaKmtModelEnabled(&mut b) })?;
    Ok(b)
}

pub fn acquire_system_properties() -> Result<HsaSystemProperties, Status> {
    let mut s = HsaSystemProperties::new_zeroed();
    // SAFETY: a valid out-pointer.
    st(unsafe { crate::hsaKmtAcquireSystemProperties(&mut s) })?;
    Ok(s)
}

pub fn release_system_properties() -> Result<(), Status> {
    st(crate::hsaKmtReleaseSystemProperties())
}

pub fn node_properties(node: u32) -> Result<HsaNodeProperties, Status> {
    let mut p = HsaNodeProperties::new_zeroed();
    // SAFETY: a valid out-pointer.
    st(unsafe { crate::hsaKmtGetNodeProperties(node, &mut p) })?;
    Ok(p)
}

pub fn memory_properties(node: u32, count: u32) -> Result<Vec<HsaMemoryProperties>, Status> {
    let mut v: Vec<HsaMemoryProperties> = (0..count).map(|_| HsaMemoryProperties::new_zeroed()).collect();
    // SAFETY: `count` writable elements.
    st(unsafe { crate::hsaKmtGetNodeMemoryProperties(node, count, v.as_mut_ptr()) })?;
    Ok(v)
}

pub fn cache_properties(node: u32, processor_id: u32, count: u32) -> Result<Vec<HsaCacheProperties>, Status> {
    let mut v: Vec<HsaCacheProperties> = (0..count).map(|_| HsaCacheProperties::new_zeroed()).collect();
    // SAFETY: `count` writable elements.
    st(unsafe { crate::hsaKmtGetNodeCacheProperties(node, processor_id, count, v.as_mut_ptr()) })?;
    Ok(v)
}

pub fn io_link_properties(node: u32, count: u32) -> Result<Vec<HsaIoLinkProperties>, Status> {
    let mut v: Vec<HsaIoLinkProperties> = (0..count).map(|_| HsaIoLinkProperties::new_zeroed()).collect();
    // SAFETY: `count` writable elements.
    st(unsafe { crate::hsaKmtGetNodeIoLinkProperties(node, count, v.as_mut_ptr()) })?;
    Ok(v)
}

pub fn clock_counters(node: u32) -> Result<HsaClockCounters, Status> {
    let mut c = HsaClockCounters::new_zeroed();
    // SAFETY: a valid out-pointer.
    st(unsafe { crate::hsaKmtGetClockCounters(node, &mut c) })?;
    Ok(c)
}

pub fn wallclock_frequency(node: u32) -> Result<u64, Status> {
    let mut f = 0u64;
    // SAFETY: a valid out-pointer.
    st(unsafe { crate::hsaKmtGetNodeWallclockFrequency(node, &mut f) })?;
    Ok(f)
}

/// The last failure message the thunk recorded on this thread (open/acquire detail).
pub fn last_error() -> Option<String> {
    crate::boundary::last_error()
}
