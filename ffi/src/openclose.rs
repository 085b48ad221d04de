//! OpenClose and version/runtime/clock exports: hsaKmtOpenKFD, hsaKmtCloseKFD,
//! hsaKmtGetVersion, hsaKmtModelEnabled, hsaKmtRuntime*, hsaKmtGetClockCounters.

use crate::boundary::{guard, guard_pure, guard_status, out};
use crate::global::{self, pid, with_ctx, with_ctx_mut};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::Status;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU32, Ordering};

/// Upstream keeps the last RuntimeEnable capabilities process-wide (never reset).
static RUNTIME_CAPS: AtomicU32 = AtomicU32::new(0);

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtOpenKFD() -> HSAKMT_STATUS {
    guard_status("hsaKmtOpenKFD", || {
        // The struct layouts of plain-symbol callers are decided before anything else, so a
        // bad HSAKMT_ABI fails every open instead of falling back to a guess.
        crate::generation::decide().map_err(|msg| {
            // Printed whatever HSAKMT_DEBUG_LEVEL says: the user asked for something that
            // cannot be served, and the status alone would not say what.
            eprintln!("hsakmt: {msg}");
            crate::boundary::set_last_error(msg);
            Status::ERROR
        })?;
        global::install_fork_handlers();
        let mut t = global::thunk();
        let opened = t.open(pid(), global::make_port);
        crate::published::publish(&t);
        opened.map_err(|e| {
            crate::log::error(format_args!("hsaKmtOpenKFD: {}\n", e.message));
            crate::boundary::set_last_error(e.message);
            e.status
        })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtCloseKFD() -> HSAKMT_STATUS {
    guard("hsaKmtCloseKFD", || {
        let mut t = global::thunk();
        let closed = t.close(pid());
        crate::published::publish(&t);
        closed
    })
}

/// # Safety
/// `VersionInfo` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetVersion(VersionInfo: *mut HsaVersionInfo) -> HSAKMT_STATUS {
    // Lock-free: the open check and the version are published atomics (upstream takes no
    // lock here either).
    guard_pure("hsaKmtGetVersion", || {
        let v = crate::published::version()?;
        // SAFETY: the C caller's pointer contract.
        *unsafe { out(VersionInfo) }? = v;
        Ok(())
    })
}

/// Whether the thunk runs on a software model (ROCr skips driver-only calls then).
///
/// # Safety
/// `enable` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtModelEnabled(enable: *mut bool) -> HSAKMT_STATUS {
    guard_pure("hsaKmtModelEnabled", || {
        // SAFETY: the C caller's pointer contract.
        let enable = unsafe { out(enable) }?;
        // Upstream decides on a model inside OpenKFD: before an open the answer is false.
        *enable = crate::published::on_model().unwrap_or(false);
        Ok(())
    })
}

/// # Safety
/// `rDebug` is passed to the KFD as an address and never dereferenced here.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtRuntimeEnable(rDebug: *mut c_void, setupTtmp: bool) -> HSAKMT_STATUS {
    guard("hsaKmtRuntimeEnable", || {
        with_ctx_mut(|c| {
            c.runtime_enable(rDebug as u64, setupTtmp)?;
            if c.is_primary() {
                RUNTIME_CAPS.store(c.runtime_capabilities(), Ordering::Relaxed);
            }
            Ok(())
        })
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtRuntimeDisable() -> HSAKMT_STATUS {
    guard("hsaKmtRuntimeDisable", || with_ctx_mut(|c| c.runtime_disable()))
}

/// # Safety
/// `caps_mask` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetRuntimeCapabilities(caps_mask: *mut HSAuint32) -> HSAKMT_STATUS {
    guard("hsaKmtGetRuntimeCapabilities", || {
        // A secondary context's own (hsaKmtGetRuntimeCapabilitiesCtx), checked like any call on
        // it; the classic call reads the process-wide value without a check, as upstream.
        let caps = match crate::contexts::selected() {
            None => RUNTIME_CAPS.load(Ordering::Relaxed),
            Some(_) => with_ctx(|c| Ok(c.runtime_capabilities()))?,
        };
        // SAFETY: the C caller's pointer contract.
        *unsafe { out(caps_mask) }? = caps;
        Ok(())
    })
}

/// The runtime state RuntimeEnable left (`r_debug`, ENABLED/DISABLED, TTMP set-up), as the KFD
/// keeps it per process; what a GPU core dump records. Upstream declares it in the newest
/// headers; its Linux implementation is not public (its WSL thunk answers NOT_SUPPORTED), so
/// the semantics are those of the runtime that calls it (ROCr's core dump: "cached from
/// runtime_enable").
///
/// # Safety
/// `runtime_info` is NULL (INVALID_PARAMETER) or valid for writing one `kfd_runtime_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetCoreRuntimeInfo(runtime_info: *mut hsakmt_core::abi::kfd::kfd_runtime_info) -> HSAKMT_STATUS {
    guard("hsaKmtGetCoreRuntimeInfo", || {
        let info = with_ctx(|c| Ok(c.core_runtime_info()))?;
        // SAFETY: the C caller's pointer contract.
        *unsafe { out(runtime_info) }? = info;
        Ok(())
    })
}

/// The device-snapshot entry of the GPU `gpu_id` (a KFD gpu_id, as ROCr passes it), as the
/// KFD's DBG_TRAP device snapshot fills it, from the topology and the process's apertures.
/// Same provenance as [`hsaKmtGetCoreRuntimeInfo`].
///
/// # Safety
/// `device_info` is NULL (INVALID_PARAMETER) or valid for writing one
/// `kfd_dbg_device_info_entry`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetCoreDeviceInfo(
    gpu_id: HSAuint32,
    device_info: *mut hsakmt_core::abi::kfd::kfd_dbg_device_info_entry,
) -> HSAKMT_STATUS {
    guard("hsaKmtGetCoreDeviceInfo", || {
        let d = with_ctx(|c| c.core_device_info(gpu_id))?;
        // SAFETY: the C caller's pointer contract.
        *unsafe { out(device_info) }? = d;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn hsaKmtCheckRuntimeDebugSupport() -> HSAKMT_STATUS {
    guard("hsaKmtCheckRuntimeDebugSupport", || {
        with_ctx_mut(|c| c.check_runtime_debug_support())
            .map_err(|s| if s == Status::KERNEL_IO_CHANNEL_NOT_OPENED { Status::ERROR } else { s })
    })
}

/// # Safety
/// `Counters` must be NULL or valid for writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtGetClockCounters(NodeId: HSAuint32, Counters: *mut HsaClockCounters) -> HSAKMT_STATUS {
    guard("hsaKmtGetClockCounters", || {
        let c = with_ctx(|c| c.clock_counters(NodeId))?;
        // SAFETY: the C caller's pointer contract.
        *unsafe { out(Counters) }? = c;
        Ok(())
    })
}
