//! `handle_drm_call` (model interface 1.1): the device-level libdrm/amdgpu calls.
//!
//! Implemented: OPEN_RENDER, CLOSE, DEVICE_INITIALIZE, DEVICE_DEINITIALIZE, DEVICE_GET_FD,
//! GET_MARKETING_NAME. The BO commands, COMMAND_WRITE_READ and QUERY_GPU_INFO answer ENOSYS in
//! this slice (the BO operations exist as GEM calls on the render stand-ins, `mem/gem.rs`,
//! which the in-process port uses). Argument structs are read and written with checked copies (EFAULT, never a
//! crash).

use crate::model::Model;
use crate::sys::file_key;
use crate::usercopy::{copy_from_user, copy_to_user};
use hsakmt_core::abi::model::drm_cmd;
use rustix::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, IntoRawFd, OwnedFd};
use std::ffi::CStr;

const EFAULT: i32 = libc::EFAULT;
const EINVAL: i32 = libc::EINVAL;

/// DRM interface version reported by DEVICE_INITIALIZE (amdgpu KMS 3.x).
pub const DRM_VERSION: (u32, u32) = (3, 61);

/// libdrm's amdgpu.ids name for the catalogue's parts (None: libdrm has no name, and upstream
/// leaves MarketingName empty).
pub fn marketing_name(device_id: u32) -> Option<&'static CStr> {
    Some(match device_id {
        0x74a1 => c"AMD Instinct MI300X",
        0x74a2 => c"AMD Instinct MI308X",
        0x740f => c"AMD Instinct MI210",
        0x744c => c"AMD Radeon RX 7900 XTX",
        0x6860 => c"Radeon Instinct MI25",
        _ => return None,
    })
}

fn read_words<const N: usize>(arg: usize) -> Result<[u64; N], i32> {
    let mut raw = vec![0u8; N * 8];
    copy_from_user(&mut raw, arg)?;
    let mut out = [0u64; N];
    for (i, w) in out.iter_mut().enumerate() {
        *w = u64::from_ne_bytes(raw[i * 8..i * 8 + 8].try_into().map_err(|_| EFAULT)?);
    }
    Ok(out)
}

fn write_i32(addr: u64, v: i32) -> Result<(), i32> {
    copy_to_user(addr as usize, &v.to_ne_bytes())
}

fn write_u32(addr: u64, v: u32) -> Result<(), i32> {
    copy_to_user(addr as usize, &v.to_ne_bytes())
}

fn write_ptr(addr: u64, v: usize) -> Result<(), i32> {
    copy_to_user(addr as usize, &v.to_ne_bytes())
}

/// Opaque device handles are small non-null tokens, never pointers.
const DEV_TOKEN_BASE: usize = 0x4b46_4400;

impl Model {
    /// One `handle_drm_call(cmd, arg)`.
    pub(crate) fn drm_call(&self, cmd: u32, arg: usize) -> Result<(), i32> {
        match cmd {
            drm_cmd::OPEN_RENDER => {
                // { int minor; int *fd_out; }
                let [w0, fd_out] = read_words::<2>(arg)?;
                let minor = w0 as u32 as i32;
                if minor < 0 {
                    return Err(libc::ENOENT);
                }
                let fd = self.open_render(minor as u32)?;
                let raw = fd.as_raw_fd();
                write_i32(fd_out, raw)?;
                let _ = fd.into_raw_fd(); // now the caller's
                Ok(())
            }
            drm_cmd::CLOSE => {
                // { int fd; }
                let mut raw = [0u8; 4];
                copy_from_user(&mut raw, arg)?;
                let fd = i32::from_ne_bytes(raw);
                if fd < 0 {
                    return Err(libc::EBADF);
                }
                // SAFETY: borrowed only to check that it is open.
                if rustix::fs::fstat(unsafe { BorrowedFd::borrow_raw(fd) }).is_err() {
                    return Err(libc::EBADF);
                }
                // SAFETY: the caller hands the fd over to be closed (libdrm's close semantics).
                self.close_render(unsafe { OwnedFd::from_raw_fd(fd) });
                Ok(())
            }
            drm_cmd::DEVICE_INITIALIZE => {
                // { int fd; u32 *major_out; u32 *minor_out; void **dev_out; }
                let [w0, major_out, minor_out, dev_out] = read_words::<4>(arg)?;
                let fd = w0 as u32 as i32;
                if fd < 0 {
                    return Err(libc::EBADF);
                }
                // SAFETY: borrowed for fstat/dup only; a closed fd fails there.
                let bfd = unsafe { BorrowedFd::borrow_raw(fd) };
                let key = file_key(bfd).ok_or(libc::EBADF)?;
                let mut st = self.lock();
                let minor = *st.renders.get(&key).ok_or(EINVAL)?;
                let held = rustix::io::fcntl_dupfd_cloexec(bfd, 0).map_err(|e| e.raw_os_error())?;
                let token = DEV_TOKEN_BASE + 16 * st.next_device;
                write_u32(major_out, DRM_VERSION.0)?;
                write_u32(minor_out, DRM_VERSION.1)?;
                write_ptr(dev_out, token)?;
                st.next_device += 1;
                st.devices.insert(token, (held, minor));
                Ok(())
            }
            drm_cmd::DEVICE_DEINITIALIZE => {
                let [dev] = read_words::<1>(arg)?;
                self.lock().devices.remove(&(dev as usize)).map(|_| ()).ok_or(EINVAL)
            }
            drm_cmd::DEVICE_GET_FD => {
                // { void *dev; int *fd_out; }
                let [dev, fd_out] = read_words::<2>(arg)?;
                let st = self.lock();
                let (fd, _) = st.devices.get(&(dev as usize)).ok_or(EINVAL)?;
                write_i32(fd_out, fd.as_fd().as_raw_fd())
            }
            drm_cmd::GET_MARKETING_NAME => {
                // { void *dev; const char **name_out; }
                let [dev, name_out] = read_words::<2>(arg)?;
                let minor = self.lock().devices.get(&(dev as usize)).map(|(_, m)| *m).ok_or(EINVAL)?;
                let name = self
                    .gpus
                    .iter()
                    .find(|g| g.drm_render_minor == minor)
                    .and_then(|g| marketing_name(g.device_id))
                    .map_or(0, |c| c.as_ptr() as usize);
                write_ptr(name_out, name)
            }
            _ => Err(libc::ENOSYS),
        }
    }
}
