//! The model plugin table of hsakmtmodeliface.h, interface 1.1: a software KFD exports
//! `get_hsakmt_model_functions` returning this. (The ABI tables record the 0.4 table, still
//! upstream ROCm's, as `hsakmt::hsakmt_model_functions`; 1.0 replaced it with memfd + raw ioctls.
//! Our model plugin serves both, see model/PLUGIN.md.)

use core::ffi::{c_int, c_uint, c_ulong, c_void};

pub const HSAKMT_MODEL_INTERFACE_VERSION_MAJOR: u32 = 1;
pub const HSAKMT_MODEL_INTERFACE_VERSION_MINOR: u32 = 1;
/// The symbol a plugin exports.
pub const GET_HSAKMT_MODEL_FUNCTIONS: &core::ffi::CStr = c"get_hsakmt_model_functions";

/// `struct hsakmt_model_functions` (1.1).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HsakmtModelFunctions {
    pub version_major: u32,
    pub version_minor: u32,
    /// Returns the fd standing in for /dev/kfd, or -1 with errno set.
    pub create_memfd: Option<unsafe extern "C" fn() -> c_int>,
    /// Takes a raw KFD ioctl; returns 0, or -1 with errno set.
    pub handle_ioctl: Option<unsafe extern "C" fn(request: c_ulong, arg: *mut c_void) -> c_int>,
    /// libdrm/amdgpu call simulation (1.1+; absent in 1.0 tables).
    pub handle_drm_call: Option<unsafe extern "C" fn(cmd: c_uint, arg: *mut c_void) -> c_int>,
}

pub type GetHsakmtModelFunctions = unsafe extern "C" fn() -> *const HsakmtModelFunctions;

/// `enum hsakmt_drm_cmd` values used by the thunk.
pub mod drm_cmd {
    pub const BO_VA_OP: u32 = 0;
    pub const BO_FREE: u32 = 1;
    pub const BO_IMPORT: u32 = 2;
    pub const BO_EXPORT: u32 = 3;
    pub const BO_CPU_MAP: u32 = 4;
    pub const BO_QUERY_INFO: u32 = 5;
    pub const BO_SET_METADATA: u32 = 6;
    pub const COMMAND_WRITE_READ: u32 = 7;
    pub const OPEN_RENDER: u32 = 8;
    pub const CLOSE: u32 = 9;
    pub const DEVICE_INITIALIZE: u32 = 10;
    pub const DEVICE_DEINITIALIZE: u32 = 11;
    pub const DEVICE_GET_FD: u32 = 12;
    pub const GET_MARKETING_NAME: u32 = 13;
    pub const QUERY_GPU_INFO: u32 = 14;
}

/// `struct hsakmt_drm_open_render_args`.
#[repr(C)]
pub struct DrmOpenRenderArgs {
    pub minor: c_int,
    pub fd_out: *mut c_int,
}

/// `struct hsakmt_drm_close_args`.
#[repr(C)]
pub struct DrmCloseArgs {
    pub fd: c_int,
}

// Layout of the 1.1 header (LP64): offsets 0, 4, 8, 16, 24; 32 bytes (checked at compile time,
// like the generated modules' layouts).
const _: () = assert!(
    core::mem::size_of::<HsakmtModelFunctions>() == 32
        && core::mem::offset_of!(HsakmtModelFunctions, version_minor) == 4
        && core::mem::offset_of!(HsakmtModelFunctions, create_memfd) == 8
        && core::mem::offset_of!(HsakmtModelFunctions, handle_ioctl) == 16
        && core::mem::offset_of!(HsakmtModelFunctions, handle_drm_call) == 24,
    "hsakmt_model_functions 1.1: layout differs from hsakmtmodeliface.h"
);
const _: () = assert!(core::mem::size_of::<DrmOpenRenderArgs>() == 16, "DrmOpenRenderArgs: size differs from hsakmtmodeliface.h");
