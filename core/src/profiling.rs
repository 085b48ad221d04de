//! SPM and PC sampling (upstream spm.c and pc_sampling.c): the ioctls and upstream's statuses.
//! Free functions on the port, so the exports can issue them without the thunk's lock (SPM's
//! SET_DEST_BUF may wait for its timeout).
//!
//! SPM statuses: upstream returns `hsakmt_ioctl`'s own result, 0 or -1, as the status; -1 is no
//! `HSAKMT_STATUS` value, so every refusal is ERROR here. PC sampling maps errnos as upstream.

use crate::abi::kfd::*;
use crate::port::{ioctl_typed, Kfd};
use crate::status::{Errno, KmtResult, Status};
use zerocopy::FromZeros;

/// PC sampling's INVALID_TRACE_ID.
pub const INVALID_TRACE_ID: u32 = 0;

/// AMDKFD_IOC_RLC_SPM's ACQUIRE or RELEASE on `gpu_id`.
pub fn spm_op(kfd: &dyn Kfd, gpu_id: u32, op: u32) -> KmtResult<()> {
    let mut a = kfd_ioctl_spm_args::new_zeroed();
    a.op = op;
    a.gpu_id = gpu_id;
    // SAFETY: `dest_buf` is NULL: ACQUIRE and RELEASE read and write only the struct, and no
    // memory is handed to the GPU.
    unsafe { ioctl_typed(kfd, AMDKFD_IOC_RLC_SPM, &mut a) }.map_err(|_| Status::ERROR)
}

/// What SET_DEST_BUF answers about the buffer it retired (upstream copies these out whatever
/// the ioctl's result).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpmRetired {
    pub bytes_copied: u32,
    pub data_loss: bool,
    pub timeout: u32,
}

/// AMDKFD_IOC_RLC_SPM's SET_DEST_BUF: make `dest` (NULL: none, which stops the stream) of
/// `size` bytes the destination, after waiting up to `timeout` ms for the current one to fill.
///
/// # Safety
/// A non-NULL `dest` must be valid for writes of `size` bytes until it is retired by the next
/// SET_DEST_BUF or RELEASE (or the process closes the KFD): the KFD writes samples into it at
/// any time meanwhile, so the caller reads it only after retiring it. The retired buffer's
/// first 32 bytes are written (its header) by this call.
pub unsafe fn spm_set_dest(kfd: &dyn Kfd, gpu_id: u32, size: u32, timeout: u32, dest: u64) -> (KmtResult<()>, SpmRetired) {
    let mut a = kfd_ioctl_spm_args::new_zeroed();
    a.op = KFD_IOCTL_SPM_OP_SET_DEST_BUF;
    a.gpu_id = gpu_id;
    a.buf_size = size;
    a.timeout = timeout;
    a.dest_buf = dest;
    // SAFETY: the caller's contract covers `dest` for the whole time the KFD may write it.
    let r = unsafe { ioctl_typed(kfd, AMDKFD_IOC_RLC_SPM, &mut a) }.map_err(|_| Status::ERROR);
    (r, SpmRetired { bytes_copied: a.bytes_copied, data_loss: a.has_data_loss != 0, timeout: a.timeout })
}

fn pcs_ioctl(kfd: &dyn Kfd, a: &mut kfd_ioctl_pc_sample_args) -> Result<(), Errno> {
    // SAFETY: `sample_info_ptr` is NULL or, by the callers' contracts, valid for the
    // `num_sample_info` entries the op reads or writes; no memory is handed to the GPU.
    unsafe { ioctl_typed(kfd, AMDKFD_IOC_PC_SAMPLE, a) }
}

/// QUERY_CAPABILITIES: (status, the count the KFD answered). ENOSPC → BUFFER_TOO_SMALL,
/// EINVAL → INVALID_PARAMETER, EOPNOTSUPP → NOT_SUPPORTED, EBUSY → UNAVAILABLE, else ERROR.
///
/// # Safety
/// `info` is NULL or valid for writes of `count` `kfd_pc_sample_info` entries.
pub unsafe fn pcs_query(kfd: &dyn Kfd, gpu_id: u32, info: u64, count: u32) -> (KmtResult<()>, u32) {
    let mut a = kfd_ioctl_pc_sample_args::new_zeroed();
    a.op = KFD_IOCTL_PCS_OP_QUERY_CAPABILITIES;
    a.gpu_id = gpu_id;
    a.sample_info_ptr = info;
    a.num_sample_info = count;
    let r = pcs_ioctl(kfd, &mut a).map_err(|e| match e.0 {
        Errno::ENOSPC => Status::BUFFER_TOO_SMALL,
        Errno::EINVAL => Status::INVALID_PARAMETER,
        Errno::EOPNOTSUPP => Status::NOT_SUPPORTED,
        Errno::EBUSY => Status::UNAVAILABLE,
        _ => Status::ERROR,
    });
    (r, a.num_sample_info)
}

/// CREATE with one entry: the trace id. EINVAL → INVALID_PARAMETER, ENOMEM → NO_MEMORY,
/// EBUSY → UNAVAILABLE, else ERROR (an unsupported method or a method in use with other
/// parameters, whose parameters the KFD then writes into the entry).
///
/// # Safety
/// `info` is valid for reads and writes of one `kfd_pc_sample_info`.
pub unsafe fn pcs_create(kfd: &dyn Kfd, gpu_id: u32, info: u64) -> KmtResult<u32> {
    let mut a = kfd_ioctl_pc_sample_args::new_zeroed();
    a.op = KFD_IOCTL_PCS_OP_CREATE;
    a.gpu_id = gpu_id;
    a.sample_info_ptr = info;
    a.num_sample_info = 1;
    a.trace_id = INVALID_TRACE_ID;
    pcs_ioctl(kfd, &mut a).map_err(|e| match e.0 {
        Errno::EINVAL => Status::INVALID_PARAMETER,
        Errno::ENOMEM => Status::NO_MEMORY,
        Errno::EBUSY => Status::UNAVAILABLE,
        _ => Status::ERROR,
    })?;
    Ok(a.trace_id)
}

/// DESTROY, START or STOP of a trace, with upstream's errno mapping for each.
pub fn pcs_trace_op(kfd: &dyn Kfd, gpu_id: u32, op: u32, trace_id: u32) -> KmtResult<()> {
    let mut a = kfd_ioctl_pc_sample_args::new_zeroed();
    a.op = op;
    a.gpu_id = gpu_id;
    a.trace_id = trace_id;
    pcs_ioctl(kfd, &mut a).map_err(|e| match (op, e.0) {
        (_, Errno::EINVAL) => Status::INVALID_PARAMETER,
        (KFD_IOCTL_PCS_OP_START, Errno::ENOMEM) => Status::OUT_OF_RESOURCES,
        (KFD_IOCTL_PCS_OP_START, Errno::EBUSY) => Status::UNAVAILABLE,
        (KFD_IOCTL_PCS_OP_START | KFD_IOCTL_PCS_OP_STOP, Errno::EALREADY) => Status::KERNEL_ALREADY_OPENED,
        _ => Status::ERROR,
    })
}
