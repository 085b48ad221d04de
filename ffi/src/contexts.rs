//! KFD contexts (hsakmtctx.h): hsaKmtOpenKFDCtx, CloseKFDCtx, OpenSecondaryKFDCtx,
//! CloseSecondaryKFDCtx, and how every other `*Ctx` export reaches its context.
//!
//! Upstream's design (rocm-systems libhsakmt, `kfdcontext.h`, `openclose.c`): an `HsaKFDContext`
//! is one open KFD file with its own sub-states (topology snapshot, FMM and apertures, queues and
//! doorbells, events and the event page, debug, perf counters). The primary context is the
//! process's first open, which the classic API uses (`hsaKmtOpenKFD` is `hsaKmtOpenKFDCtx` with
//! the handle thrown away); `hsaKmtOpenSecondaryKFDCtx` opens the KFD once more and issues
//! `AMDKFD_IOC_CREATE_PROCESS` on that file, so the context gets a KFD process of its own.
//!
//! Here a context is a core [`hsakmt_core::context::Context`] value; the process-wide `Thunk`
//! holds the primary and the secondary ones (by token). The handles C gets are tokens, never
//! pointers: the primary's is the address of a private static (the same for every open, as
//! upstream's `&hsakmt_primary_kfd_ctx`), a secondary one's a tagged number that is never
//! reused, so a closed or made-up handle is found out instead of followed.
//!
//! A `*Ctx` export selects its context for the duration of the call ([`select`], a per-thread
//! value that `global::with_ctx` resolves: the primary unless a `*Ctx` call chose another) and
//! runs the same implementation as its classic twin; the classic exports run on the primary.
//! The per-dispatch calls of the classic API do not look at the selection: their lock-free paths
//! (`published.rs`) are the primary's; the `*Ctx` event calls on the primary's handle take those
//! same paths, on a secondary context the locked ones (`events.rs`).
//!
//! Bad input: a NULL, unknown or closed handle is INVALID_PARAMETER (after the open check, which
//! comes first, as upstream's CHECK_KFD_OPEN); a forked child's inherited contexts answer
//! KERNEL_IO_CHANNEL_NOT_OPENED like everything else it inherited.

use crate::boundary::{guard, out};
use crate::global::{self, pid};
use hsakmt_core::abi::hsakmt::{HsaKFDContext, HSAKMT_STATUS};
use hsakmt_core::Status;
use std::cell::Cell;

/// The selection value of the primary context.
const PRIMARY: u64 = 0;
/// A selection no context has (a NULL or unknown handle).
const NONE: u64 = u64::MAX;
/// Secondary handles: this tag in the high bits, the token below.
const TAG: usize = 0x6b66_6400_0000_0000;
const TOKEN_MASK: usize = (1 << 40) - 1;

/// The primary context's handle is this static's address.
static PRIMARY_HANDLE: u8 = 0;

thread_local! {
    static SELECTED: Cell<u64> = const { Cell::new(PRIMARY) };
}

/// The primary context's handle.
pub fn primary_handle() -> *mut HsaKFDContext {
    std::ptr::addr_of!(PRIMARY_HANDLE) as *mut HsaKFDContext
}

fn handle_of(token: u64) -> *mut HsaKFDContext {
    (TAG | token as usize) as *mut HsaKFDContext
}

/// The selection a handle stands for: PRIMARY, a secondary token, or NONE.
fn selection_of(ctx: *mut HsaKFDContext) -> u64 {
    let v = ctx as usize;
    if ctx == primary_handle() {
        PRIMARY
    } else if v & !TOKEN_MASK == TAG && v & TOKEN_MASK != 0 {
        (v & TOKEN_MASK) as u64
    } else {
        NONE
    }
}

/// Whether `ctx` is the primary context's handle.
#[inline]
pub fn is_primary(ctx: *mut HsaKFDContext) -> bool {
    ctx == primary_handle()
}

/// The context the current call runs on: `None` for the primary, else a secondary's token (or
/// one no context has).
#[inline]
pub fn selected() -> Option<u64> {
    match SELECTED.with(Cell::get) {
        PRIMARY => None,
        t => Some(t),
    }
}

/// Run `f` with `ctx` selected (restored afterwards, also when `f` unwinds).
pub fn select<R>(ctx: *mut HsaKFDContext, f: impl FnOnce() -> R) -> R {
    struct Restore(u64);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = SELECTED.try_with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SELECTED.with(|s| s.replace(selection_of(ctx))));
    f()
}

/// hsaKmtOpenKFDCtx: hsaKmtOpenKFD, and the primary context's handle in `*pCtx` (also with
/// KERNEL_ALREADY_OPENED). Ours: a NULL `pCtx` is INVALID_PARAMETER, nothing opened.
///
/// # Safety
/// `pCtx` must be NULL or valid for writes of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtOpenKFDCtx(pCtx: *mut *mut HsaKFDContext) -> HSAKMT_STATUS {
    if pCtx.is_null() {
        return Status::INVALID_PARAMETER.0;
    }
    let r = crate::openclose::hsaKmtOpenKFD();
    if r == Status::SUCCESS.0 || r == Status::KERNEL_ALREADY_OPENED.0 {
        // SAFETY: non-NULL (checked), writable by the caller's contract.
        unsafe { *pCtx = primary_handle() };
    }
    r
}

/// hsaKmtCloseKFDCtx: hsaKmtCloseKFD (upstream's takes no context either).
#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtCloseKFDCtx() -> HSAKMT_STATUS {
    crate::openclose::hsaKmtCloseKFD()
}

/// hsaKmtOpenSecondaryKFDCtx: KERNEL_IO_CHANNEL_NOT_OPENED unless the primary is open (and not
/// inherited across fork); then a further open of the KFD (failing: KERNEL_IO_CHANNEL_NOT_OPENED)
/// and AMDKFD_IOC_CREATE_PROCESS on it (a KFD without it, or refusing it with EINVAL:
/// NOT_SUPPORTED; another refusal: ERROR). The new context's handle goes to `*pCtx`.
///
/// # Safety
/// `pCtx` must be NULL or valid for writes of a pointer.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtOpenSecondaryKFDCtx(pCtx: *mut *mut HsaKFDContext) -> HSAKMT_STATUS {
    guard("hsaKmtOpenSecondaryKFDCtx", || {
        crate::published::check_open()?;
        // SAFETY: the C caller's pointer contract.
        let out = unsafe { out(pCtx) }?;
        let token = global::thunk().open_secondary(pid())?;
        if token as usize & !TOKEN_MASK != 0 {
            return Err(Status::NO_MEMORY); // 2^40 contexts opened in one process
        }
        *out = handle_of(token);
        Ok(())
    })
}

/// hsaKmtCloseSecondaryKFDCtx: the context's KFD file is closed, which ends its KFD process and
/// everything it held (the kernel frees the memory, queues and events); the thunk's copies of
/// its state go. NULL, the primary's handle, an unknown or already closed handle:
/// INVALID_PARAMETER (upstream's answer for the first two).
///
/// # Safety
/// `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCloseSecondaryKFDCtx(ctx: *mut HsaKFDContext) -> HSAKMT_STATUS {
    guard("hsaKmtCloseSecondaryKFDCtx", || match selection_of(ctx) {
        PRIMARY | NONE => Err(Status::INVALID_PARAMETER),
        token => global::thunk().close_secondary(token),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_and_selections() {
        assert_eq!(selection_of(primary_handle()), PRIMARY);
        assert_eq!(selection_of(std::ptr::null_mut()), NONE);
        assert_eq!(selection_of(handle_of(1)), 1);
        assert_eq!(selection_of(handle_of(TOKEN_MASK as u64)), TOKEN_MASK as u64);
        assert_eq!(selection_of(TAG as *mut HsaKFDContext), NONE, "token 0 is no context");
        assert_eq!(selection_of(0x1000 as *mut HsaKFDContext), NONE);
        assert_eq!(selection_of((TAG | (1 << 41)) as *mut HsaKFDContext), NONE);
        assert_eq!(selected(), None);
        select(handle_of(7), || {
            assert_eq!(selected(), Some(7));
            select(primary_handle(), || assert_eq!(selected(), None));
            assert_eq!(selected(), Some(7));
        });
        let _ = std::panic::catch_unwind(|| select(handle_of(9), || panic!("unwinds")));
        assert_eq!(selected(), None, "restored on unwind");
    }
}
