//! AMD Infinity Storage (upstream ais.c): hsaKmtAisReadWriteFile's ioctl, AMDKFD_IOC_AIS_OP
//! (amdgpu-dkms only; mainline answers ENOTTY).
//!
//! The argument is a union (`kfd_ioctl_ais_args`, abi/gen_kfd.rs, layout checked there and
//! against two independent user-space mirrors of the DKMS header): the thunk writes `in`
//! {handle, handle_offset, file_offset, size, op, fd} and the KFD answers over it `out`
//! {size_copied, status} — the bytes transferred and the handler's own result (0 or a negative
//! errno), copied back also when the ioctl fails. Upstream hands both to the caller whatever the
//! ioctl answered, and maps any ioctl failure to ERROR.

use crate::abi::hsakmt::{HsaAisFlags, HSA_AIS_READ, HSA_AIS_WRITE};
use crate::abi::kfd::{kfd_ais_in_args, kfd_ais_out_args, kfd_ioctl_ais_args, AMDKFD_IOC_AIS_OP, KFD_IOC_AIS_READ, KFD_IOC_AIS_WRITE};
use crate::port::Kfd;
use crate::status::{KmtResult, Status};
use zerocopy::{FromBytes, FromZeros, IntoBytes};

const ARG_BYTES: usize = core::mem::size_of::<kfd_ioctl_ais_args>();
const _: () = assert!(
    ARG_BYTES == core::mem::size_of::<kfd_ais_in_args>() && core::mem::size_of::<kfd_ais_out_args>() <= ARG_BYTES,
    "AIS_OP: `in` fills the union, `out` overlays its start"
);

/// The KFD op for an `HsaAisFlags` value (only READ and WRITE exist; anything else, also both
/// bits, is INVALID_PARAMETER as upstream).
pub fn ais_op(flags: HsaAisFlags) -> KmtResult<u32> {
    match flags {
        HSA_AIS_READ => Ok(KFD_IOC_AIS_READ),
        HSA_AIS_WRITE => Ok(KFD_IOC_AIS_WRITE),
        _ => Err(Status::INVALID_PARAMETER),
    }
}

/// What the KFD answered in `out` (zero when it wrote nothing, e.g. ENOTTY).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AisOut {
    pub size_copied: u64,
    pub status: i32,
}

/// AMDKFD_IOC_AIS_OP: move `size` bytes between the file `fd` at `file_offset` and the BO
/// `handle` at `handle_offset`. The status is ERROR when the ioctl fails, SUCCESS otherwise;
/// `out` is what the KFD wrote back in either case.
pub fn ais_rw(kfd: &dyn Kfd, handle: u64, handle_offset: u64, fd: i32, file_offset: i64, size: u64, op: u32) -> (KmtResult<()>, AisOut) {
    let mut a = kfd_ais_in_args::new_zeroed();
    a.handle = handle;
    a.handle_offset = handle_offset;
    a.file_offset = file_offset;
    a.size = size;
    a.op = op;
    a.fd = fd;
    let mut buf = [0u8; ARG_BYTES];
    buf.copy_from_slice(a.as_bytes());
    // SAFETY: the argument holds no user address (a BO handle and offset, a file descriptor
    // and offset, sizes), so the KFD reads and writes only `buf`. The memory it transfers is
    // the BO's, which was handed to the GPU at allocation and which Rust reaches only through
    // raw pointers (the `Kfd::ioctl` contract); the file is the caller's descriptor.
    let r = unsafe { kfd.ioctl(AMDKFD_IOC_AIS_OP, &mut buf) }.map_err(|_| Status::ERROR);
    let out =
        kfd_ais_out_args::read_from_prefix(&buf).map(|(o, _)| AisOut { size_copied: o.size_copied, status: o.status }).unwrap_or_default();
    (r, out)
}
