//! Performance-counter exports: hsaKmtPmc* (upstream perfctr.c; the rules are in
//! hsakmt_core::pmc). Trace ids are tokens the context hands out, never pointers: an unknown
//! one is INVALID_HANDLE (upstream dereferences it), 0 INVALID_PARAMETER.

use crate::boundary::{guard, out};
use crate::global::with_ctx_mut;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::pmc::CounterReq;
use hsakmt_core::Status;
use std::ffi::c_void;

/// # Safety
/// `counter_properties` must be NULL or writable. The pointer stored there stays valid until
/// the last CloseKFD (as upstream).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcGetCounterProperties(
    node_id: HSAuint32,
    counter_properties: *mut *mut HsaCounterProperties,
) -> HSAKMT_STATUS {
    guard("hsaKmtPmcGetCounterProperties", || {
        with_ctx_mut(|c| {
            // SAFETY: the C caller's pointer contract.
            let dst = unsafe { out(counter_properties) }?;
            *dst = c.pmc_counter_properties(node_id)?.cast_mut();
            Ok(())
        })
    })
}

/// # Safety
/// `counters` must be NULL or valid for reads of `number_of_counters` elements; `trace_root`
/// NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcRegisterTrace(
    node_id: HSAuint32,
    number_of_counters: HSAuint32,
    counters: *mut HsaCounter,
    trace_root: *mut HsaPmcTraceRoot,
) -> HSAKMT_STATUS {
    guard("hsaKmtPmcRegisterTrace", || {
        with_ctx_mut(|c| {
            if counters.is_null() || trace_root.is_null() || number_of_counters == 0 {
                return Err(Status::INVALID_PARAMETER);
            }
            // Upstream's order: the node, then the count, then the counters.
            let _ = c.node_properties_ref(node_id)?;
            if number_of_counters > hsakmt_core::pmc::MAX_TRACE_COUNTERS {
                return Err(Status::NO_MEMORY);
            }
            // SAFETY: non-NULL checked; the C caller promises `number_of_counters` elements.
            // HsaCounter is packed(4): elements are read unaligned-safe by copy.
            let reqs: Vec<CounterReq> = (0..number_of_counters as usize)
                .map(|i| {
                    // SAFETY: i < number_of_counters, within the caller's array.
                    let k = unsafe { counters.add(i).read_unaligned() };
                    CounterReq { ty: k.Type, block: k.BlockIndex, id: k.CounterId, size_bits: k.CounterSizeInBits }
                })
                .collect();
            let r = c.pmc_register(node_id, &reqs)?;
            // SAFETY: non-NULL checked; the C caller's pointer contract.
            let root = unsafe { out(trace_root) }?;
            root.NumberOfPasses = 1;
            root.TraceBufferMinSizeBytes = r.min_buffer_bytes;
            root.TraceId = r.trace_id;
            Ok(())
        })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtPmcUnregisterTrace(node_id: HSAuint32, trace_id: HSATraceId) -> HSAKMT_STATUS {
    guard("hsaKmtPmcUnregisterTrace", || with_ctx_mut(|c| c.pmc_unregister(node_id, trace_id)))
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtPmcAcquireTraceAccess(node_id: HSAuint32, trace_id: HSATraceId) -> HSAKMT_STATUS {
    guard("hsaKmtPmcAcquireTraceAccess", || with_ctx_mut(|c| c.pmc_acquire(node_id, trace_id)))
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtPmcReleaseTraceAccess(_node_id: HSAuint32, trace_id: HSATraceId) -> HSAKMT_STATUS {
    guard("hsaKmtPmcReleaseTraceAccess", || with_ctx_mut(|c| c.pmc_release(trace_id)))
}

/// # Safety
/// `trace_buffer` must be valid for writes of `trace_buffer_size_bytes` bytes until the trace
/// is stopped, released or unregistered: QueryTrace writes the counters there.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPmcStartTrace(
    trace_id: HSATraceId,
    trace_buffer: *mut c_void,
    trace_buffer_size_bytes: HSAuint64,
) -> HSAKMT_STATUS {
    guard("hsaKmtPmcStartTrace", || with_ctx_mut(|c| c.pmc_start(trace_id, trace_buffer as u64, trace_buffer_size_bytes)))
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtPmcQueryTrace(trace_id: HSATraceId) -> HSAKMT_STATUS {
    guard("hsaKmtPmcQueryTrace", || {
        with_ctx_mut(|c| {
            let mut values = Vec::new();
            let buf = c.pmc_query(trace_id, &mut values)?;
            let dst = buf as *mut u64;
            for (i, v) in values.iter().enumerate() {
                // SAFETY: StartTrace's contract: the buffer holds `size` bytes, and the core
                // checked that `values.len() * 8 <= size`; written unaligned (upstream does not
                // require alignment either).
                unsafe { dst.add(i).write_unaligned(*v) };
            }
            Ok(())
        })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtPmcStopTrace(trace_id: HSATraceId) -> HSAKMT_STATUS {
    guard("hsaKmtPmcStopTrace", || with_ctx_mut(|c| c.pmc_stop(trace_id)))
}

/// Which `AMDKFD_IOC_PROFILER` the open KFD offers (for tools: kmtinfo), with its profiler
/// version; `None` when it has none.
pub fn profiler_interface() -> Result<Option<(&'static str, u32)>, Status> {
    with_ctx_mut(|c| Ok(c.pmc_profiler().map(|(p, v)| (p.name(), v))))
}

/// The PMC table upstream selects for a node (for tools).
pub fn table_name(node_id: u32) -> Result<&'static str, Status> {
    crate::global::with_ctx(|c| c.pmc_table(node_id).map(|a| a.name()))
}
