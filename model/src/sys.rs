//! What the model's subsystems take from the kernel it stands in for, shared by all of them:
//! the caller's pid, a file's identity, the clocks, kmalloc's limit, and reading and writing the
//! kernel's copy of an ioctl argument. A leaf: it uses no other module of the crate.

use rustix::fd::BorrowedFd;
use zerocopy::{FromBytes, IntoBytes};

/// The caller's pid, checked by every ioctl (the KFD's "wrong process" rule). Cached, with a
/// fork handler refreshing it, so the check costs no system call.
pub(crate) fn current_pid() -> u32 {
    hsakmt_linux::pid()
}

/// Identity of an open file description's inode: (st_dev, st_ino).
pub(crate) type FileKey = (u64, u64);

pub(crate) fn file_key(fd: BorrowedFd<'_>) -> Option<FileKey> {
    let st = rustix::fs::fstat(fd).ok()?;
    Some((st.st_dev, st.st_ino))
}

pub(crate) fn monotonic_raw_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::MonotonicRaw);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

pub(crate) fn boottime_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Boottime);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// Largest kcalloc the kernel can satisfy (KMALLOC_MAX_SIZE on x86-64, 4 MiB).
pub(crate) const KMALLOC_MAX: u64 = 4 << 20;

/// Read the kernel struct `T` from the front of the kernel buffer.
pub(crate) fn get<T: FromBytes>(buf: &[u8]) -> T {
    T::read_from_prefix(buf).map(|(t, _)| t).unwrap_or_else(|_| T::new_zeroed())
}

pub(crate) fn put<T: IntoBytes + zerocopy::Immutable>(buf: &mut [u8], v: &T) {
    let b = v.as_bytes();
    buf[..b.len()].copy_from_slice(b);
}
