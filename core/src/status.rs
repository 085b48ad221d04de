//! Thunk status codes (`HSAKMT_STATUS`) as a Rust error type, and the errno → status rule.
//! Every fallible core operation returns `Result<T, Status>`; the C shim passes the code on.

use crate::abi::hsakmt as h;
use core::fmt;

/// A non-success `HSAKMT_STATUS` (or SUCCESS where a raw code is carried).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Status(pub u32);

impl Status {
    pub const SUCCESS: Status = Status(h::HSAKMT_STATUS_SUCCESS);
    pub const ERROR: Status = Status(h::HSAKMT_STATUS_ERROR);
    pub const DRIVER_MISMATCH: Status = Status(h::HSAKMT_STATUS_DRIVER_MISMATCH);
    pub const INVALID_PARAMETER: Status = Status(h::HSAKMT_STATUS_INVALID_PARAMETER);
    pub const INVALID_HANDLE: Status = Status(h::HSAKMT_STATUS_INVALID_HANDLE);
    pub const INVALID_NODE_UNIT: Status = Status(h::HSAKMT_STATUS_INVALID_NODE_UNIT);
    pub const NO_MEMORY: Status = Status(h::HSAKMT_STATUS_NO_MEMORY);
    pub const BUFFER_TOO_SMALL: Status = Status(h::HSAKMT_STATUS_BUFFER_TOO_SMALL);
    pub const NOT_IMPLEMENTED: Status = Status(h::HSAKMT_STATUS_NOT_IMPLEMENTED);
    pub const NOT_SUPPORTED: Status = Status(h::HSAKMT_STATUS_NOT_SUPPORTED);
    pub const UNAVAILABLE: Status = Status(h::HSAKMT_STATUS_UNAVAILABLE);
    pub const OUT_OF_RESOURCES: Status = Status(h::HSAKMT_STATUS_OUT_OF_RESOURCES);
    pub const KERNEL_IO_CHANNEL_NOT_OPENED: Status = Status(h::HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED);
    pub const KERNEL_COMMUNICATION_ERROR: Status = Status(h::HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR);
    pub const KERNEL_ALREADY_OPENED: Status = Status(h::HSAKMT_STATUS_KERNEL_ALREADY_OPENED);
    pub const HSAMMU_UNAVAILABLE: Status = Status(h::HSAKMT_STATUS_HSAMMU_UNAVAILABLE);
    pub const WAIT_FAILURE: Status = Status(h::HSAKMT_STATUS_WAIT_FAILURE);
    pub const WAIT_TIMEOUT: Status = Status(h::HSAKMT_STATUS_WAIT_TIMEOUT);
    pub const MEMORY_ALREADY_REGISTERED: Status = Status(h::HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED);
    pub const MEMORY_NOT_REGISTERED: Status = Status(h::HSAKMT_STATUS_MEMORY_NOT_REGISTERED);

    /// Upstream's name for the code, for logs and `kmtinfo`.
    pub const fn name(self) -> &'static str {
        match self.0 {
            h::HSAKMT_STATUS_SUCCESS => "SUCCESS",
            h::HSAKMT_STATUS_ERROR => "ERROR",
            h::HSAKMT_STATUS_DRIVER_MISMATCH => "DRIVER_MISMATCH",
            h::HSAKMT_STATUS_INVALID_PARAMETER => "INVALID_PARAMETER",
            h::HSAKMT_STATUS_INVALID_HANDLE => "INVALID_HANDLE",
            h::HSAKMT_STATUS_INVALID_NODE_UNIT => "INVALID_NODE_UNIT",
            h::HSAKMT_STATUS_NO_MEMORY => "NO_MEMORY",
            h::HSAKMT_STATUS_BUFFER_TOO_SMALL => "BUFFER_TOO_SMALL",
            h::HSAKMT_STATUS_NOT_IMPLEMENTED => "NOT_IMPLEMENTED",
            h::HSAKMT_STATUS_NOT_SUPPORTED => "NOT_SUPPORTED",
            h::HSAKMT_STATUS_UNAVAILABLE => "UNAVAILABLE",
            h::HSAKMT_STATUS_OUT_OF_RESOURCES => "OUT_OF_RESOURCES",
            h::HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED => "KERNEL_IO_CHANNEL_NOT_OPENED",
            h::HSAKMT_STATUS_KERNEL_COMMUNICATION_ERROR => "KERNEL_COMMUNICATION_ERROR",
            h::HSAKMT_STATUS_KERNEL_ALREADY_OPENED => "KERNEL_ALREADY_OPENED",
            h::HSAKMT_STATUS_HSAMMU_UNAVAILABLE => "HSAMMU_UNAVAILABLE",
            h::HSAKMT_STATUS_WAIT_FAILURE => "WAIT_FAILURE",
            h::HSAKMT_STATUS_WAIT_TIMEOUT => "WAIT_TIMEOUT",
            h::HSAKMT_STATUS_MEMORY_ALREADY_REGISTERED => "MEMORY_ALREADY_REGISTERED",
            h::HSAKMT_STATUS_MEMORY_NOT_REGISTERED => "MEMORY_NOT_REGISTERED",
            _ => "UNKNOWN",
        }
    }

    /// Upstream's mapping of a failed ioctl's errno (libhsakmt treats these three specially,
    /// everything else is a generic ERROR).
    pub const fn from_errno(e: Errno) -> Status {
        match e.0 {
            Errno::EINVAL => Status::INVALID_PARAMETER,
            Errno::ENOMEM => Status::OUT_OF_RESOURCES,
            Errno::EFAULT => Status::INVALID_PARAMETER,
            Errno::ENOTTY | Errno::ENOSYS | Errno::EOPNOTSUPP => Status::NOT_SUPPORTED,
            _ => Status::ERROR,
        }
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HSAKMT_STATUS_{}({})", self.name(), self.0)
    }
}
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "HSAKMT_STATUS_{}", self.name())
    }
}

pub type KmtResult<T> = Result<T, Status>;

/// A Linux errno value (positive), as returned by the KFD or the model.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(transparent)]
pub struct Errno(pub i32);

/// The errno values the thunk names, from the kernel's UAPI headers (`linux-raw-sys`), not
/// typed in: `Errno::EINVAL` is `asm-generic/errno-base.h`'s `EINVAL` of the target.
macro_rules! errnos {
    ($($name:ident),* $(,)?) => {
        impl Errno {
            $(pub const $name: i32 = linux_raw_sys::errno::$name as i32;)*
        }
    };
}

errnos!(
    EPERM,
    ENOENT,
    ESRCH,
    EINTR,
    EIO,
    E2BIG,
    EBADF,
    EAGAIN,
    EALREADY,
    ENOMEM,
    EACCES,
    EFAULT,
    EBUSY,
    EEXIST,
    ENODEV,
    ENOTDIR,
    EINVAL,
    ENFILE,
    EMFILE,
    ENOTTY,
    ENOSPC,
    ERANGE,
    ENAMETOOLONG,
    ENOSYS,
    ENODATA,
    ETIME,
    EOPNOTSUPP,
    ETIMEDOUT,
);
