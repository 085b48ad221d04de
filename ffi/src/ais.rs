//! hsaKmtAisReadWriteFile (upstream ais.c): direct I/O between a file and the BO holding a GPU
//! buffer, over AMDKFD_IOC_AIS_OP (amdgpu-dkms only).
//!
//! As upstream: KERNEL_IO_CHANNEL_NOT_OPENED before OpenKFD; INVALID_PARAMETER when no BO holds
//! the whole of `[MemoryAddress, +MemorySizeInBytes)` or `AisFlags` is neither HSA_AIS_READ nor
//! HSA_AIS_WRITE (then the outputs are not written); otherwise the ioctl, after which
//! `SizeCopiedInBytes` and `status` (each when non-NULL) get what the KFD answered — also when it
//! failed — and a failed ioctl is ERROR (a mainline kernel: ENOTTY). `*status` is the kernel
//! handler's result (0 or a negative errno); errno itself is preserved, as by every export here.
//! The thunk's lock is not held while the KFD transfers.

use crate::boundary::guard;
use crate::global::with_ctx;
use crate::published;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::ais;
use std::ffi::c_void;

/// # Safety
/// `size_copied_in_bytes` and `status` must each be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtAisReadWriteFile(
    memory_address: *mut c_void,
    memory_size_in_bytes: HSAuint64,
    fd: HSAint32,
    file_offset: HSAint64,
    ais_flags: HsaAisFlags,
    size_copied_in_bytes: *mut HSAuint64,
    status: *mut HSAint32,
) -> HSAKMT_STATUS {
    guard("hsaKmtAisReadWriteFile", || {
        let (handle, offset) = with_ctx(|c| c.ais_target(memory_address as u64, memory_size_in_bytes))?;
        let op = ais::ais_op(ais_flags)?;
        let kfd = published::port_arc()?;
        let (r, out) = ais::ais_rw(&*kfd, handle, offset, fd, file_offset, memory_size_in_bytes, op);
        // SAFETY: each pointer is NULL or writable (the C caller's contract).
        if let Some(p) = unsafe { size_copied_in_bytes.as_mut() } {
            *p = out.size_copied;
        }
        // SAFETY: as above.
        if let Some(p) = unsafe { status.as_mut() } {
            *p = out.status;
        }
        r
    })
}
