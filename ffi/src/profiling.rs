//! SPM (upstream spm.c) and PC sampling (upstream pc_sampling.c) exports.
//!
//! SPM: the node is validated (INVALID_NODE_UNIT), then AMDKFD_IOC_RLC_SPM; every refusal is
//! ERROR (upstream returns the ioctl's -1, which is no status value). SetDestBuffer copies out
//! SizeCopied, the data-loss flag and the timeout the KFD answered, also when it failed, as
//! upstream; ours: a NULL `timeout`, `SizeCopied` or `isSPMDataLoss` is INVALID_PARAMETER
//! before the ioctl (upstream dereferences them), and the call does not hold the thunk's lock
//! while the KFD waits for the buffer to fill.
//!
//! PC sampling: upstream's order of checks and errno mapping (`hsakmt_core::profiling`).

use crate::boundary::{guard, out};
use crate::global::with_ctx;
use crate::published;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_core::profiling::{self, INVALID_TRACE_ID};
use hsakmt_core::Status;
use std::ffi::c_void;

fn spm(name: &'static str, node: HSAuint32, op: u32) -> HSAKMT_STATUS {
    guard(name, || with_ctx(|c| profiling::spm_op(c.kfd(), c.node_gpu_id(node)?, op)))
}

/// # Safety
/// Callable with any arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSPMAcquire(preferred_node: HSAuint32) -> HSAKMT_STATUS {
    spm("hsaKmtSPMAcquire", preferred_node, KFD_IOCTL_SPM_OP_ACQUIRE)
}

/// # Safety
/// Callable with any arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSPMRelease(preferred_node: HSAuint32) -> HSAKMT_STATUS {
    spm("hsaKmtSPMRelease", preferred_node, KFD_IOCTL_SPM_OP_RELEASE)
}

/// # Safety
/// `timeout`, `size_copied` and `is_spm_data_loss` must be NULL or writable; a non-NULL
/// `dest_memory_address` must be writable for `size_in_bytes` bytes until the next
/// SetDestBuffer or SPMRelease of the node retires it (the KFD writes it meanwhile).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSPMSetDestBuffer(
    preferred_node: HSAuint32,
    size_in_bytes: HSAuint32,
    timeout: *mut HSAuint32,
    size_copied: *mut HSAuint32,
    dest_memory_address: *mut c_void,
    is_spm_data_loss: *mut bool,
) -> HSAKMT_STATUS {
    guard("hsaKmtSPMSetDestBuffer", || {
        let gpu_id = with_ctx(|c| c.node_gpu_id(preferred_node))?;
        // SAFETY: the C caller's pointer contract.
        let (timeout, copied, loss) = unsafe { (out(timeout)?, out(size_copied)?, out(is_spm_data_loss)?) };
        let kfd = published::port_arc()?;
        // SAFETY: the destination's contract is this function's (see above).
        let (r, retired) = unsafe { profiling::spm_set_dest(&*kfd, gpu_id, size_in_bytes, *timeout, dest_memory_address as u64) };
        *copied = retired.bytes_copied;
        *loss = retired.data_loss;
        *timeout = retired.timeout;
        r
    })
}

/// # Safety
/// Callable with any arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingSupport() -> HSAKMT_STATUS {
    guard("hsaKmtPcSamplingSupport", || with_ctx(|c| if c.kfd_minor_at_least(16) { Ok(()) } else { Err(Status::NOT_SUPPORTED) }))
}

/// # Safety
/// `sample_info` must be NULL or writable for `sample_info_sz` `HsaPcSamplingInfo` entries;
/// `size` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingQueryCapabilities(
    node_id: HSAuint32,
    sample_info: *mut c_void,
    sample_info_sz: HSAuint32,
    size: *mut HSAuint32,
) -> HSAKMT_STATUS {
    guard("hsaKmtPcSamplingQueryCapabilities", || {
        // SAFETY: the C caller's pointer contract.
        let size = unsafe { out(size) }?;
        with_ctx(|c| {
            if !c.kfd_minor_at_least(16) {
                return Err(Status::NOT_SUPPORTED);
            }
            let gpu_id = c.node_gpu_id(node_id)?;
            // SAFETY: `sample_info` is NULL or holds `sample_info_sz` entries (the caller's
            // contract); HsaPcSamplingInfo has kfd_pc_sample_info's layout (40 bytes, same
            // fields; abi tests).
            let (r, n) = unsafe { profiling::pcs_query(c.kfd(), gpu_id, sample_info as u64, sample_info_sz) };
            *size = n;
            r
        })
    })
}

/// # Safety
/// `sample_info` must be NULL or readable and writable; `trace_id` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingCreate(
    node_id: HSAuint32,
    sample_info: *mut HsaPcSamplingInfo,
    trace_id: *mut HsaPcSamplingTraceId,
) -> HSAKMT_STATUS {
    guard("hsaKmtPcSamplingCreate", || {
        if sample_info.is_null() {
            return Err(Status::INVALID_PARAMETER);
        }
        // SAFETY: the C caller's pointer contract.
        let trace_id = unsafe { out(trace_id) }?;
        with_ctx(|c| {
            *trace_id = INVALID_TRACE_ID;
            let gpu_id = c.node_gpu_id(node_id)?;
            // SAFETY: `sample_info` is a valid entry (the caller's contract), laid out as
            // kfd_pc_sample_info.
            *trace_id = unsafe { profiling::pcs_create(c.kfd(), gpu_id, sample_info as u64) }?;
            Ok(())
        })
    })
}

fn trace_op(name: &'static str, node: HSAuint32, trace: HsaPcSamplingTraceId, op: u32) -> HSAKMT_STATUS {
    guard(name, || {
        if trace == INVALID_TRACE_ID {
            return Err(Status::INVALID_HANDLE);
        }
        with_ctx(|c| {
            let gpu_id = c.node_gpu_id(node)?;
            if op == KFD_IOCTL_PCS_OP_DESTROY {
                // Upstream stops the trace first, whatever that answers.
                let _ = profiling::pcs_trace_op(c.kfd(), gpu_id, KFD_IOCTL_PCS_OP_STOP, trace);
            }
            profiling::pcs_trace_op(c.kfd(), gpu_id, op, trace)
        })
    })
}

/// # Safety
/// Callable with any arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingDestroy(node_id: HSAuint32, trace_id: HsaPcSamplingTraceId) -> HSAKMT_STATUS {
    trace_op("hsaKmtPcSamplingDestroy", node_id, trace_id, KFD_IOCTL_PCS_OP_DESTROY)
}

/// # Safety
/// Callable with any arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingStart(node_id: HSAuint32, trace_id: HsaPcSamplingTraceId) -> HSAKMT_STATUS {
    trace_op("hsaKmtPcSamplingStart", node_id, trace_id, KFD_IOCTL_PCS_OP_START)
}

/// # Safety
/// Callable with any arguments.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtPcSamplingStop(node_id: HSAuint32, trace_id: HsaPcSamplingTraceId) -> HSAKMT_STATUS {
    trace_op("hsaKmtPcSamplingStop", node_id, trace_id, KFD_IOCTL_PCS_OP_STOP)
}
