//! The model as a plugin .so: `get_hsakmt_model_functions` returns upstream's
//! hsakmtmodeliface.h 1.1 table. The plugin's model is created on first use from the
//! environment (`HSA_MODEL_TOPOLOGY`, `HSAKMT_MODEL`, `HSAKMT_MODEL_KFD_VERSION`); if that
//! fails, the reason is printed once on stderr and every entry point fails with EINVAL.

use crate::model::Model;
use hsakmt_core::abi::model::{HSAKMT_MODEL_INTERFACE_VERSION_MAJOR, HSAKMT_MODEL_INTERFACE_VERSION_MINOR};
use rustix::fd::IntoRawFd;
use std::ffi::{c_int, c_uint, c_ulong, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

pub use hsakmt_core::abi::model::HsakmtModelFunctions;

// The 1.1 layout (LP64): 32 bytes, fields at 0, 4, 8, 16, 24.
const _: () = {
    assert!(std::mem::size_of::<HsakmtModelFunctions>() == 32);
    assert!(std::mem::offset_of!(HsakmtModelFunctions, version_major) == 0);
    assert!(std::mem::offset_of!(HsakmtModelFunctions, version_minor) == 4);
    assert!(std::mem::offset_of!(HsakmtModelFunctions, create_memfd) == 8);
    assert!(std::mem::offset_of!(HsakmtModelFunctions, handle_ioctl) == 16);
    assert!(std::mem::offset_of!(HsakmtModelFunctions, handle_drm_call) == 24);
};

fn set_errno(e: i32) {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() = e };
}

/// The plugin's model, built from the environment on first use.
pub fn global_model() -> Result<&'static Model, &'static str> {
    static MODEL: OnceLock<Result<std::sync::Arc<Model>, String>> = OnceLock::new();
    let m = MODEL.get_or_init(|| {
        crate::ModelConfig::from_env().and_then(Model::new_shared).map_err(|e| {
            let msg = format!("hsakmt-model: {e}");
            eprintln!("{msg}");
            msg
        })
    });
    m.as_ref().map(|m| &**m).map_err(|e| e.as_str())
}

fn with_model(f: impl FnOnce(&Model) -> Result<c_int, i32>) -> c_int {
    let r = catch_unwind(AssertUnwindSafe(|| match global_model() {
        Ok(m) => f(m),
        Err(_) => Err(libc::EINVAL),
    }))
    .unwrap_or(Err(libc::EFAULT));
    match r {
        Ok(v) => v,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}

unsafe extern "C" fn create_memfd() -> c_int {
    with_model(|m| m.create_memfd().map(|fd| fd.into_raw_fd()))
}

unsafe extern "C" fn handle_ioctl(request: c_ulong, arg: *mut c_void) -> c_int {
    // SAFETY: the plugin contract: `arg` is the caller's ioctl argument; every access through
    // it is checked.
    with_model(|m| unsafe { m.handle_ioctl(request, arg) }.map(|()| 0))
}

unsafe extern "C" fn handle_drm_call(cmd: c_uint, arg: *mut c_void) -> c_int {
    // SAFETY: as above, for the command's argument struct.
    with_model(|m| unsafe { m.handle_drm_call(cmd, arg) }.map(|()| 0))
}

/// The table `get_hsakmt_model_functions` returns.
pub static MODEL_FUNCTIONS: HsakmtModelFunctions = HsakmtModelFunctions {
    version_major: HSAKMT_MODEL_INTERFACE_VERSION_MAJOR,
    version_minor: HSAKMT_MODEL_INTERFACE_VERSION_MINOR,
    create_memfd: Some(create_memfd),
    handle_ioctl: Some(handle_ioctl),
    handle_drm_call: Some(handle_drm_call),
};

extern "C" fn fork_prepare_hook() {
    crate::fork::fork_prepare();
}

extern "C" fn fork_release_hook() {
    crate::fork::fork_release();
}

/// Ours, not part of upstream's interface: a loader that calls the plugin while holding a lock
/// of its own takes the plugin's fork handling over (see `fork.rs`): on 0, `*prepare` and
/// `*release` are the functions to call from its fork handlers, prepare after taking its lock,
/// release (in the parent and in the child) before letting it go, and the plugin registers no
/// handlers of its own. -1: the plugin's handlers are registered already (they stay), someone
/// took them over before (and calls them), or a NULL argument. Call it before any other plugin
/// function.
///
/// # Safety
/// `prepare` and `release` must be NULL or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn hsakmt_model_take_fork_handlers(
    prepare: *mut Option<extern "C" fn()>,
    release: *mut Option<extern "C" fn()>,
) -> c_int {
    if prepare.is_null() || release.is_null() || !crate::fork::take_fork_handling() {
        return -1;
    }
    // SAFETY: both non-NULL, and the caller's contract.
    unsafe {
        *prepare = Some(fork_prepare_hook);
        *release = Some(fork_release_hook);
    }
    0
}

/// The plugin entry point (`get_hsakmt_model_functions_t`).
#[no_mangle]
pub extern "C" fn get_hsakmt_model_functions() -> *const HsakmtModelFunctions {
    &MODEL_FUNCTIONS
}
