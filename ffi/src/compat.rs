//! Functions that released upstream headers declared and the newest ones dropped, so that code
//! written for those releases still links (their prototypes are in our hsakmt.h).

use hsakmt_core::abi::hsakmt::{HSAuint32, HSAKMT_STATUS};

/// ROCm 5.0–5.6: the version of the debug-trap interface of the kernel's old debugger ABI
/// (KFD_IOC_DBG_TRAP's GET_VERSION), which upstream removed with that ABI in ROCm 5.7. The
/// debugger interface of newer kernels has no such query: NOT_SUPPORTED, and nothing written.
///
/// # Safety
/// Callable with any arguments: none of them is read or written.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetKernelDebugTrapVersionInfo(_Major: *mut HSAuint32, _Minor: *mut HSAuint32) -> HSAKMT_STATUS {
    crate::boundary::not_supported("hsaKmtGetKernelDebugTrapVersionInfo")
}
