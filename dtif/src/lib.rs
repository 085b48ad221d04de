//! libdtif.so: hsakmt-rs as the thunk of an HSA runtime started with `HSA_ENABLE_DTIF=1`.
//!
//! Released ROCm links its thunk statically into libhsa-runtime64.so, so replacing
//! libhsakmt.so.1 does not reach it. With `HSA_ENABLE_DTIF=1` the runtime instead `dlopen`s
//! `libdtif.so` and takes from it, with `dlsym`, every `hsaKmt*` function it calls, nine libdrm
//! functions, and `DtifCreate` / `DtifDestroy` (upstream's `core/runtime/thunk_loader.cpp`).
//! This library is the whole of libhsakmt (the `hsakmt` crate: every `hsaKmt*` export, the
//! model) plus those entry points; `dtif.map` exports exactly them.
//!
//! The libdrm functions forward to the system's libdrm_amdgpu / libdrm, loaded at run time (so
//! that building needs no C library); without them, or given a NULL handle (the model hands
//! out none, as upstream's model mode), they answer `-ENOSYS` / `-EINVAL` instead of crashing.

use std::ffi::{c_char, c_int, c_ulong, c_void, CStr};
use std::sync::OnceLock;

// The thunk itself: linking the crate is what puts its exports into this library.
pub use hsakmt as thunk;

/// What `DtifCreate` returns: the runtime only checks it for NULL and never looks inside.
#[repr(C)]
pub struct DtifPlatform {
    _opaque: [u8; 0],
}

static PLATFORM: u8 = 0;

/// `DtifCreate(platform_name)`: the runtime calls it once (`"HSA"`) after loading every
/// function, and gives up on a NULL answer. Nothing needs creating here: the thunk opens the
/// KFD (or the model) in hsaKmtOpenKFD, as it always does.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn DtifCreate(name: *const c_char) -> *mut DtifPlatform {
    if !name.is_null() {
        // SAFETY: the caller's contract.
        let name = unsafe { CStr::from_ptr(name) };
        hsakmt::log::info(format_args!("DtifCreate({name:?})\n"));
    }
    (&PLATFORM as *const u8).cast_mut().cast()
}

/// `DtifDestroy()`: the runtime's last call into the library (after hsaKmtCloseKFD).
#[unsafe(no_mangle)]
pub extern "C" fn DtifDestroy() {}

/// The system's libdrm libraries, opened once.
struct Drm {
    amdgpu: *mut c_void,
    drm: *mut c_void,
}

// SAFETY: dlopen handles are process-wide and may be used from any thread.
unsafe impl Send for Drm {}
// SAFETY: as above; the handles are never closed.
unsafe impl Sync for Drm {}

fn drm() -> &'static Drm {
    static DRM: OnceLock<Drm> = OnceLock::new();
    DRM.get_or_init(|| {
        let open = |names: &[&CStr]| {
            names
                .iter()
                // SAFETY: dlopen with a NUL-terminated name; a failure is a NULL handle.
                .map(|n| unsafe { libc::dlopen(n.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) })
                .find(|h| !h.is_null())
                .unwrap_or(std::ptr::null_mut())
        };
        Drm { amdgpu: open(&[c"libdrm_amdgpu.so.1", c"libdrm_amdgpu.so"]), drm: open(&[c"libdrm.so.2", c"libdrm.so"]) }
    })
}

/// The address of `name` in `lib`, or NULL.
fn symbol(lib: *mut c_void, name: &CStr) -> *mut c_void {
    if lib.is_null() {
        return std::ptr::null_mut();
    }
    // SAFETY: a live dlopen handle and a NUL-terminated name.
    unsafe { libc::dlsym(lib, name.as_ptr()) }
}

/// One libdrm forwarder per function: the same C signature, resolved on first use. A missing
/// library is `-ENOSYS`; a NULL first (handle) argument is `-EINVAL`, where libdrm would crash.
macro_rules! forward {
    ($lib:ident, $name:ident($first:ident: $first_ty:ty $(, $arg:ident: $ty:ty)*) $(, null_checked = $checked:tt)?) => {
        /// Forwarded to the system's library of the same name (see the module docs).
        ///
        /// # Safety
        /// As the libdrm function of the same name.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $name($first: $first_ty $(, $arg: $ty)*) -> c_int {
            $( if $checked && ($first as *const c_void).is_null() { return -libc::EINVAL; } )?
            static F: OnceLock<usize> = OnceLock::new();
            let f = *F.get_or_init(|| symbol(drm().$lib, &std::ffi::CString::new(stringify!($name)).unwrap()) as usize);
            if f == 0 {
                return -libc::ENOSYS;
            }
            // SAFETY: `f` is libdrm's function of this name, whose C signature this one repeats.
            let f: unsafe extern "C" fn($first_ty $(, $ty)*) -> c_int = unsafe { std::mem::transmute(f) };
            // SAFETY: the caller's contract is libdrm's.
            unsafe { f($first $(, $arg)*) }
        }
    };
}

type Handle = *mut c_void;

forward!(amdgpu, amdgpu_device_initialize(fd: c_int, major: *mut u32, minor: *mut u32, device: *mut Handle));
forward!(amdgpu, amdgpu_device_deinitialize(device: Handle), null_checked = true);
forward!(amdgpu, amdgpu_query_gpu_info(device: Handle, info: *mut c_void), null_checked = true);
forward!(amdgpu, amdgpu_bo_cpu_map(bo: Handle, cpu: *mut *mut c_void), null_checked = true);
forward!(amdgpu, amdgpu_bo_free(bo: Handle), null_checked = true);
forward!(amdgpu, amdgpu_bo_export(bo: Handle, kind: u32, shared: *mut u32), null_checked = true);
forward!(amdgpu, amdgpu_bo_import(device: Handle, kind: u32, shared: u32, output: *mut c_void), null_checked = true);
forward!(amdgpu, amdgpu_bo_va_op(bo: Handle, offset: u64, size: u64, addr: u64, flags: u64, ops: u32), null_checked = true);
forward!(drm, drmCommandWriteRead(fd: c_int, index: c_ulong, data: *mut c_void, size: c_ulong));
