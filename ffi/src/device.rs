//! Device-handle exports: hsaKmtGetAmdGPUDeviceFd and hsaKmtSetSigbusDelay. Upstream answers
//! both through a libdrm amdgpu device. On `/dev/kfd` GetAMDGPUDeviceHandle hands out the libdrm
//! device of a GPU's render node (when libdrm_amdgpu.so.1 is there); on a model it gives NULL.

use crate::boundary::{guard, out};
use crate::global::with_ctx;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::Status;

/// Upstream: `amdgpu_device_get_fd(handle)`, ERROR when it fails. We answer for the devices
/// GetAMDGPUDeviceHandle handed out (the render fd the node uses, which is libdrm's own fd for
/// the device where libdrm can tell it); any other value (NULL, a model's NULL, a forged
/// pointer) is ERROR and never reaches libdrm.
///
/// # Safety
/// `fd` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetAmdGPUDeviceFd(DeviceHandle: HsaAMDGPUDeviceHandle, fd: *mut i32) -> HSAKMT_STATUS {
    guard("hsaKmtGetAmdGPUDeviceFd", || {
        crate::published::check_open()?; // the open check first (upstream), without a lock
                                         // SAFETY: the C caller's pointer contract.
        let fd = unsafe { out(fd) }?;
        let known = with_ctx(|c| Ok(c.amdgpu_device_fd(DeviceHandle as usize)))?;
        *fd = known.unwrap_or(-1);
        known.map(|_| ()).ok_or(Status::ERROR)
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
