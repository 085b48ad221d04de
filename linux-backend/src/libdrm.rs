//! libdrm_amdgpu devices, loaded at run time.
//!
//! Upstream libhsakmt links libdrm_amdgpu and calls `amdgpu_device_initialize` on every render
//! node it opens; the HSA runtime gets that `amdgpu_device_handle` through
//! hsaKmtGetAMDGPUDeviceHandle and asks libdrm about the GPU with it (its wall-clock frequency
//! through `amdgpu_query_gpu_info`). hsakmt-rs does the same without linking a C library at build
//! time: `libdrm_amdgpu.so.1` is opened with `dlopen` the first time a device is needed (a process
//! that already loaded it, as the HSA runtime does, gets that same copy) and is never unloaded.
//!
//! Without the library, or when it refuses the fd, a render node simply has no device, which is
//! what upstream has when `amdgpu_device_initialize` fails: the node still works, and
//! hsaKmtGetAMDGPUDeviceHandle answers INVALID_HANDLE for it.
//!
//! Handles are only ever passed back to libdrm by [`AmdgpuDevices`], which remembers the ones it
//! made; any other value is refused without calling the library.

use hsakmt_core::{AmdgpuDevice, Errno};
use std::ffi::{c_int, c_void, CStr};
use std::sync::{Mutex, OnceLock};

/// The library's soname (Debian's libdrm-amdgpu1, ROCm's own libdrm_amdgpu).
pub const LIBDRM_AMDGPU: &CStr = c"libdrm_amdgpu.so.1";

type InitializeFn = unsafe extern "C" fn(fd: c_int, major: *mut u32, minor: *mut u32, dev: *mut *mut c_void) -> c_int;
type DeinitializeFn = unsafe extern "C" fn(dev: *mut c_void) -> c_int;
type GetFdFn = unsafe extern "C" fn(dev: *mut c_void) -> c_int;
type QueryGpuInfoFn = unsafe extern "C" fn(dev: *mut c_void, info: *mut c_void) -> c_int;

/// Offset of `gpu_counter_freq` (u32, kHz) in libdrm's `struct amdgpu_gpu_info` (amdgpu.h):
/// four u32 ids, three u64 (`ids_flags`, clocks), eight u32 counts, then the frequency. The
/// struct is 416 bytes; [`GPU_INFO_BUF`] leaves room for a library that grew it.
pub const GPU_COUNTER_FREQ_OFFSET: usize = 72;
/// Bytes given to `amdgpu_query_gpu_info` to fill.
const GPU_INFO_BUF: usize = 4096;

/// The functions of libdrm_amdgpu that the thunk uses.
pub struct LibdrmAmdgpu {
    initialize: InitializeFn,
    deinitialize: DeinitializeFn,
    /// Newer libdrm only (2.4.110+); upstream looks it up the same way and copes without it.
    get_fd: Option<GetFdFn>,
    query_gpu_info: Option<QueryGpuInfoFn>,
}

/// `dlsym` of `name` in `lib`, or NULL.
fn symbol(lib: *mut c_void, name: &CStr) -> *mut c_void {
    // SAFETY: `lib` is a handle from dlopen that is never closed; `name` is NUL-terminated.
    unsafe { libc::dlsym(lib, name.as_ptr()) }
}

impl LibdrmAmdgpu {
    /// Load the library and resolve its functions; `None` when it is missing or lacks
    /// `amdgpu_device_initialize` / `amdgpu_device_deinitialize`.
    fn load() -> Option<LibdrmAmdgpu> {
        // SAFETY: a NUL-terminated soname; loading runs the library's constructors (libdrm has
        // none that need anything from us). RTLD_LOCAL keeps its symbols out of the global
        // namespace; a copy the process already has is reused.
        let lib = unsafe { libc::dlopen(LIBDRM_AMDGPU.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if lib.is_null() {
            return None;
        }
        let (init, deinit) = (symbol(lib, c"amdgpu_device_initialize"), symbol(lib, c"amdgpu_device_deinitialize"));
        if init.is_null() || deinit.is_null() {
            return None; // the library stays loaded: dlclose of a library others may use is not worth it
        }
        let get_fd = symbol(lib, c"amdgpu_device_get_fd");
        let query = symbol(lib, c"amdgpu_query_gpu_info");
        // SAFETY (all four transmutes): each symbol is the libdrm_amdgpu function of that name,
        // whose C prototype in amdgpu.h is the function type it becomes; non-NULL checked.
        Some(LibdrmAmdgpu {
            // SAFETY: see above.
            initialize: unsafe { std::mem::transmute::<*mut c_void, InitializeFn>(init) },
            // SAFETY: see above.
            deinitialize: unsafe { std::mem::transmute::<*mut c_void, DeinitializeFn>(deinit) },
            // SAFETY: see above.
            get_fd: (!get_fd.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, GetFdFn>(get_fd) }),
            // SAFETY: see above.
            query_gpu_info: (!query.is_null()).then(|| unsafe { std::mem::transmute::<*mut c_void, QueryGpuInfoFn>(query) }),
        })
    }

    /// The process's copy, loaded on first use.
    pub fn get() -> Option<&'static LibdrmAmdgpu> {
        static LIB: OnceLock<Option<LibdrmAmdgpu>> = OnceLock::new();
        LIB.get_or_init(LibdrmAmdgpu::load).as_ref()
    }

    /// Whether the library has `amdgpu_device_get_fd` / `amdgpu_query_gpu_info`.
    pub fn has_get_fd(&self) -> bool {
        self.get_fd.is_some()
    }
    pub fn has_query_gpu_info(&self) -> bool {
        self.query_gpu_info.is_some()
    }
}

/// The libdrm devices one port made: only these handles are ever passed back to libdrm.
#[derive(Default)]
pub struct AmdgpuDevices {
    live: Mutex<Vec<usize>>,
}

impl AmdgpuDevices {
    pub const fn new() -> AmdgpuDevices {
        AmdgpuDevices { live: Mutex::new(Vec::new()) }
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Vec<usize>> {
        self.live.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn known(&self, handle: usize) -> bool {
        handle != 0 && self.live().contains(&handle)
    }

    /// `amdgpu_device_initialize(fd)`, then `amdgpu_device_get_fd` when the library has it.
    /// ENOSYS without the library; libdrm's own error (a negative errno) when it refuses.
    pub fn initialize(&self, fd: i32) -> Result<AmdgpuDevice, Errno> {
        let lib = LibdrmAmdgpu::get().ok_or(Errno(Errno::ENOSYS))?;
        let (mut major, mut minor, mut dev) = (0u32, 0u32, std::ptr::null_mut::<c_void>());
        // SAFETY: the three out-pointers are live locals; libdrm only reads `fd` (it dups it,
        // or finds the device it already has for that GPU), and any fd value is merely refused.
        let r = unsafe { (lib.initialize)(fd, &mut major, &mut minor, &mut dev) };
        if r != 0 || dev.is_null() {
            return Err(Errno(if r < 0 { -r } else { Errno::EINVAL }));
        }
        // SAFETY: `dev` was just made by amdgpu_device_initialize and is live.
        let libdrm_fd = lib.get_fd.map(|f| unsafe { f(dev) });
        self.live().push(dev as usize);
        Ok(AmdgpuDevice { handle: dev as usize, libdrm_fd })
    }

    /// `amdgpu_device_deinitialize` of a device this made; anything else is ignored.
    pub fn deinitialize(&self, handle: usize) {
        let Some(lib) = LibdrmAmdgpu::get() else { return };
        let mut live = self.live();
        let Some(i) = live.iter().position(|&h| h == handle && h != 0) else { return };
        live.swap_remove(i);
        // SAFETY: made by amdgpu_device_initialize and not yet deinitialized (it was in `live`,
        // and is removed under the same lock, so exactly once).
        unsafe { (lib.deinitialize)(handle as *mut c_void) };
    }

    /// `gpu_counter_freq` (kHz) from `amdgpu_query_gpu_info` of a device this made.
    pub fn gpu_counter_khz(&self, handle: usize) -> Result<u64, Errno> {
        let lib = LibdrmAmdgpu::get().ok_or(Errno(Errno::ENOSYS))?;
        let query = lib.query_gpu_info.ok_or(Errno(Errno::ENOSYS))?;
        let live = self.live(); // held: the device cannot be deinitialized during the query
        if !live.contains(&handle) || handle == 0 {
            return Err(Errno(Errno::EINVAL));
        }
        let mut info = vec![0u64; GPU_INFO_BUF / 8];
        // SAFETY: a live device of ours; `info` is GPU_INFO_BUF writable bytes, 8-aligned, more
        // than libdrm's `struct amdgpu_gpu_info`, which the call copies out.
        let r = unsafe { query(handle as *mut c_void, info.as_mut_ptr().cast()) };
        drop(live);
        if r != 0 {
            return Err(Errno(if r < 0 { -r } else { Errno::EIO }));
        }
        let bytes: &[u8] = zerocopy::IntoBytes::as_bytes(info.as_slice());
        let f = &bytes[GPU_COUNTER_FREQ_OFFSET..GPU_COUNTER_FREQ_OFFSET + 4];
        Ok(u64::from(u32::from_ne_bytes([f[0], f[1], f[2], f[3]])))
    }

    /// Devices made and not yet deinitialized.
    pub fn count(&self) -> usize {
        self.live().len()
    }

    /// Whether `handle` is a live device of this set.
    pub fn contains(&self, handle: usize) -> bool {
        self.known(handle)
    }
}
