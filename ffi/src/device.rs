//! Device-handle exports: hsaKmtGetAmdGPUDeviceFd and hsaKmtSetSigbusDelay. Upstream answers
//! both through a libdrm amdgpu device; hsakmt-rs hands out no such device (GetAMDGPUDeviceHandle
//! gives NULL on a model), so these give upstream's answers for "no device".

use crate::boundary::{guard, out};
use crate::global::with_ctx;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::Status;

/// Upstream: `amdgpu_device_get_fd(handle)` failing is ERROR; no handle we issue is a device.
///
/// # Safety
/// `fd` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetAmdGPUDeviceFd(DeviceHandle: HsaAMDGPUDeviceHandle, fd: *mut i32) -> HSAKMT_STATUS {
    guard("hsaKmtGetAmdGPUDeviceFd", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let fd = unsafe { out(fd) }?;
        let _ = DeviceHandle;
        *fd = -1;
        Err(Status::ERROR)
    })
}

/// Upstream: without an amdgpu device (its render fd) the SIGBUS delay cannot be set:
/// NOT_SUPPORTED after the open and node checks.
#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtSetSigbusDelay(NodeId: HSAuint32, _DelayMs: HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtSetSigbusDelay", || {
        let gpu = with_ctx(|c| Ok(c.node_properties(NodeId)?.KFDGpuID))?;
        if gpu == 0 {
            return Err(Status::INVALID_NODE_UNIT);
        }
        Err(Status::NOT_SUPPORTED)
    })
}
