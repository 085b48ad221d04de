//! SVM and XNACK exports: hsaKmtSVMSetAttr, hsaKmtSVMGetAttr, hsaKmtSetXNACKMode,
//! hsaKmtGetXNACKMode (upstream svm.c; the rules are in hsakmt_core::svm).
//!
//! The open check comes first, then the core's checks (the count among them, before the array
//! is looked at). NULL `attrs` with `nattr > 0` and a NULL `enable` are INVALID_PARAMETER
//! (upstream would crash); `nattr == 0` needs no array.

use crate::boundary::{guard, out};
use crate::global::with_ctx;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::Status;
use std::ffi::{c_uint, c_void};

/// The caller's attribute array, or INVALID_PARAMETER for NULL with a non-zero count.
///
/// # Safety
/// A non-NULL `attrs` must be valid for reads and writes of `nattr` elements.
unsafe fn attr_slice<'a>(attrs: *mut HSA_SVM_ATTRIBUTE, nattr: c_uint) -> Result<&'a mut [HSA_SVM_ATTRIBUTE], Status> {
    if nattr == 0 {
        return Ok(&mut []);
    }
    if attrs.is_null() {
        return Err(Status::INVALID_PARAMETER);
    }
    // SAFETY: non-NULL checked; the C caller promises `nattr` elements.
    Ok(unsafe { std::slice::from_raw_parts_mut(attrs, nattr as usize) })
}

/// # Safety
/// `attrs` must be NULL or valid for reads of `nattr` elements; a range given GPU access must
/// be memory the caller lets the GPUs read and write while it has that access.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSVMSetAttr(
    start_addr: *mut c_void,
    size: HSAuint64,
    nattr: c_uint,
    attrs: *mut HSA_SVM_ATTRIBUTE,
) -> HSAKMT_STATUS {
    guard("hsaKmtSVMSetAttr", || {
        with_ctx(|c| {
            c.svm_precheck(start_addr as u64, size, nattr as usize)?;
            // SAFETY: the C caller's pointer contract (only read here).
            let a = unsafe { attr_slice(attrs, nattr) }?;
            // SAFETY: the C caller's contract: the range is theirs to share with the GPUs.
            unsafe { c.svm_set_attr(start_addr as u64, size, a) }
        })
    })
}

/// # Safety
/// `attrs` must be NULL or valid for reads and writes of `nattr` elements.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSVMGetAttr(
    start_addr: *mut c_void,
    size: HSAuint64,
    nattr: c_uint,
    attrs: *mut HSA_SVM_ATTRIBUTE,
) -> HSAKMT_STATUS {
    guard("hsaKmtSVMGetAttr", || {
        with_ctx(|c| {
            c.svm_precheck(start_addr as u64, size, nattr as usize)?;
            // SAFETY: the C caller's pointer contract.
            let a = unsafe { attr_slice(attrs, nattr) }?;
            c.svm_get_attr(start_addr as u64, size, a)
        })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtSetXNACKMode(enable: HSAint32) -> HSAKMT_STATUS {
    guard("hsaKmtSetXNACKMode", || with_ctx(|c| c.set_xnack_mode(enable)))
}

/// # Safety
/// `enable` must be NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetXNACKMode(enable: *mut HSAint32) -> HSAKMT_STATUS {
    guard("hsaKmtGetXNACKMode", || {
        with_ctx(|c| {
            // SAFETY: the C caller's pointer contract.
            let out = unsafe { out(enable) }?;
            *out = c.xnack_mode()?;
            Ok(())
        })
    })
}
