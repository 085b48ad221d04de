//! The one panic boundary every export goes through, the NULL-check helpers, and the
//! NOT_SUPPORTED answer of functions whose issue has not landed yet.

use hsakmt_core::abi::hsakmt::HSAKMT_STATUS;
use hsakmt_core::Status;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Run `f` and turn a panic into `HSAKMT_STATUS_ERROR`: no unwind ever crosses into C.
/// errno is saved on entry and restored on return, so a call never clobbers the caller's.
#[inline]
pub fn guard(name: &'static str, f: impl FnOnce() -> Result<(), Status>) -> HSAKMT_STATUS {
    let _errno = ErrnoKeeper::save();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Status::SUCCESS.0,
        Ok(Err(s)) => failed(name, s),
        Err(_) => panicked(name),
    }
}

/// [`guard`] for a path that makes no system call (the lock-free reads: an atomic open check
/// and plain memory): errno is saved only around the logging of a failure or a panic, the one
/// thing here that may change it, so the hot path does not pay for keeping it.
#[inline]
pub fn guard_pure(name: &'static str, f: impl FnOnce() -> Result<(), Status>) -> HSAKMT_STATUS {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => Status::SUCCESS.0,
        Ok(Err(s)) => {
            let _errno = ErrnoKeeper::save();
            failed(name, s)
        }
        Err(_) => {
            let _errno = ErrnoKeeper::save();
            panicked(name)
        }
    }
}

#[cold]
fn failed(name: &'static str, s: Status) -> HSAKMT_STATUS {
    crate::log::debug(format_args!("{name}: {s}\n"));
    s.0
}

#[cold]
fn panicked(name: &'static str) -> HSAKMT_STATUS {
    crate::log::error(format_args!("{name}: internal error (panic caught at the C boundary)\n"));
    Status::ERROR.0
}

thread_local! {
    static LAST_ERROR: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Record why the current call failed, for tools that want more than a status.
pub fn set_last_error(msg: String) {
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(msg));
}

pub fn last_error() -> Option<String> {
    LAST_ERROR.with(|e| e.borrow().clone())
}

/// Restores the thread's errno when dropped.
pub struct ErrnoKeeper(i32);

impl ErrnoKeeper {
    #[inline]
    pub fn save() -> ErrnoKeeper {
        // SAFETY: __errno_location always returns this thread's valid errno slot.
        ErrnoKeeper(unsafe { *libc::__errno_location() })
    }
}

impl Drop for ErrnoKeeper {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: as in `save`.
        unsafe { *libc::__errno_location() = self.0 };
    }
}

/// A status that is not an error but not SUCCESS either (KERNEL_ALREADY_OPENED).
#[inline]
pub fn guard_status(name: &'static str, f: impl FnOnce() -> Result<Status, Status>) -> HSAKMT_STATUS {
    let mut out = Status::SUCCESS;
    let r = guard(name, || {
        out = f()?;
        Ok(())
    });
    if r == Status::SUCCESS.0 {
        out.0
    } else {
        r
    }
}

/// The answer of every export whose function group is not implemented yet (see README).
#[cold]
pub fn not_supported(name: &'static str) -> HSAKMT_STATUS {
    crate::log::debug(format_args!("{name}: not supported by hsakmt-rs yet\n"));
    Status::NOT_SUPPORTED.0
}

/// A writable out-parameter, or INVALID_PARAMETER for NULL.
///
/// # Safety
/// A non-NULL `p` must be valid for writes of `T` (the C caller's promise).
#[inline]
pub unsafe fn out<'a, T>(p: *mut T) -> Result<&'a mut T, Status> {
    // SAFETY: non-NULL is checked here; validity is the caller's contract.
    unsafe { p.as_mut() }.ok_or(Status::INVALID_PARAMETER)
}

/// A writable array out-parameter of `n` elements, or INVALID_PARAMETER for NULL.
///
/// # Safety
/// A non-NULL `p` must be valid for writes of `n` elements of `T`.
#[inline]
pub unsafe fn out_slice<'a, T>(p: *mut T, n: usize) -> Result<&'a mut [T], Status> {
    if p.is_null() {
        return Err(Status::INVALID_PARAMETER);
    }
    // SAFETY: non-NULL checked; the C caller promises `n` writable elements.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}
