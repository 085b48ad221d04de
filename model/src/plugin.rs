//! The model as a plugin .so serving two interfaces of hsakmtmodeliface.h (see model/PLUGIN.md):
//!
//! - 0.4 (upstream ROCm's, `plugin04.rs`): the client thunk emulates the KFD and gives the
//!   plugin the GPU (aperture, allocations, queues, events).
//! - 1.1 (this module's table): the plugin IS the KFD (`create_memfd`, `handle_ioctl`,
//!   `handle_drm_call`). Its model is created on first use from the environment
//!   (`HSA_MODEL_TOPOLOGY`, `HSAKMT_MODEL`, `HSAKMT_MODEL_KFD_VERSION`); if that fails, the
//!   reason is printed once on stderr and every entry point fails with EINVAL.
//!
//! Both kinds of client call the same export, `get_hsakmt_model_functions`, and neither tells
//! which interface it speaks, so the plain export answers 0.4 (what every released HSA runtime's
//! thunk asks for) unless `HSAKMT_MODEL_INTERFACE=1.1` says otherwise. Our own thunk asks for
//! what it speaks by name: `hsakmt_rs_get_model_functions(major)`.

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

/// The interface the plain export answers: `HSAKMT_MODEL_INTERFACE` = `0.4` (or `0`, the
/// default when unset or empty) or `1.1` (or `1`). Another value is reported on stderr and the
/// default is used: the export must never return NULL (upstream's thunk does not check).
pub fn env_interface_major() -> u32 {
    match std::env::var("HSAKMT_MODEL_INTERFACE").as_deref().map(str::trim) {
        Err(_) | Ok("") | Ok("0") | Ok("0.4") => 0,
        Ok("1") | Ok("1.1") => 1,
        Ok(v) => {
            eprintln!("hsakmt-model: HSAKMT_MODEL_INTERFACE={v} is neither 0.4 nor 1.1; answering 0.4");
            0
        }
    }
}

/// The plugin entry point (`get_hsakmt_model_functions_t`): the 0.4 table
/// ([`crate::plugin04::ModelFunctions04`]), or with `HSAKMT_MODEL_INTERFACE=1.1` the 1.1 table
/// ([`HsakmtModelFunctions`]). Both begin with `u32 version_major, version_minor`.
#[no_mangle]
pub extern "C" fn get_hsakmt_model_functions() -> *const c_void {
    hsakmt_rs_get_model_functions(env_interface_major())
}

/// Ours: the table of interface major `major` (0: 0.4, 1: 1.1), whatever the environment
/// says; NULL for another major. A loader that knows this export calls it first and falls back
/// to `get_hsakmt_model_functions` (another plugin).
#[no_mangle]
pub extern "C" fn hsakmt_rs_get_model_functions(major: u32) -> *const c_void {
    match major {
        0 => (&crate::plugin04::MODEL_FUNCTIONS_04 as *const crate::plugin04::ModelFunctions04).cast(),
        HSAKMT_MODEL_INTERFACE_VERSION_MAJOR => (&MODEL_FUNCTIONS as *const HsakmtModelFunctions).cast(),
        _ => std::ptr::null(),
    }
}
