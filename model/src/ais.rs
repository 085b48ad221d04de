//! AMDKFD_IOC_AIS_OP (amdgpu-dkms's kfd_ioctl_ais and kfd_ais_rw_file): direct I/O between a
//! file and a VRAM BO. See `model/AIS.md` for what the model accepts instead of the kernel's
//! PCI P2PDMA requirement.
//!
//! The kernel's checks, in its order: the op (READ 1 / WRITE 2) and a negative fd → EINVAL; the
//! handle's GPU → EINVAL when unknown, ENODEV when AIS is not initialized on it (only large-BAR
//! dGPUs register their VRAM for P2PDMA); the process's binding to it → ESRCH; the BO → EINVAL
//! when unknown or not VRAM. Then the transfer: file offset or size not page-aligned → EINVAL;
//! no such file → EBADF; a file the model cannot treat as storage → ENODEV; the range past the
//! BO → EINVAL; size 0 succeeds at once. Reads stop at end of file (a short count, success);
//! a write that makes no progress is EIO; an error of the file's own read / write (e.g. EBADF
//! for a descriptor not open for it) ends the transfer with that error. `out.size_copied` is the
//! bytes moved (also on failure), `out.status` the handler's result (0 or -errno); both are
//! copied back also when the ioctl fails, as every _IOWR argument is.
//!
//! The BO stays pinned for the transfer (the process lock is held: it cannot be freed meanwhile).

use crate::devmem::PAGE;
use crate::mem::F_VRAM;
use crate::model::Model;
use crate::sys::{get, put};
use hsakmt_core::abi::kfd::*;
use rustix::fd::{AsFd, BorrowedFd};
use rustix::fs::FileType;
use zerocopy::FromZeros;

/// The transfer's bounce buffer.
const CHUNK: usize = 1 << 20;

impl Model {
    pub(crate) fn ioctl_ais(&self, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ais_in_args = get(buf);
        let mut copied = 0u64;
        let r = self.ais(&a, &mut copied);
        let mut out = kfd_ais_out_args::new_zeroed();
        out.size_copied = copied;
        out.status = r.err().map_or(0, |e| -e);
        // `out` overlays the start of `in` (the union); the rest keeps what the caller wrote.
        put(buf, &out);
        r
    }

    fn ais(&self, a: &kfd_ais_in_args, copied: &mut u64) -> Result<(), i32> {
        let read = match a.op {
            KFD_IOC_AIS_READ => true,
            KFD_IOC_AIS_WRITE => false,
            _ => return Err(libc::EINVAL),
        };
        if a.fd < 0 {
            return Err(libc::EINVAL);
        }
        let g = self.gpu_index((a.handle >> 32) as u32).ok_or(libc::EINVAL)?;
        if !self.gpus[g].large_bar() {
            return Err(libc::ENODEV); // kfd_ais_init registers large-BAR dGPUs only
        }
        let st = self.lock();
        if st.vms.get(g).is_none_or(Option::is_none) {
            return Err(libc::ESRCH);
        }
        let bo = st.mem.kfd_bo(a.handle).ok_or(libc::EINVAL)?;
        if bo.flags & F_VRAM == 0 {
            return Err(libc::EINVAL);
        }
        let base = bo.backing.file_offset().ok_or(libc::EINVAL)?;
        // kfd_ais_rw_file.
        if !(a.file_offset as u64).is_multiple_of(PAGE) || !a.size.is_multiple_of(PAGE) {
            return Err(libc::EINVAL);
        }
        // SAFETY: borrowed for fstat / pread / pwrite during this call only; a descriptor that
        // is not open fails there with EBADF.
        let file = unsafe { BorrowedFd::borrow_raw(a.fd) };
        let stat = rustix::fs::fstat(file).map_err(|_| libc::EBADF)?;
        let dev = self.devmem()?;
        let own = rustix::fs::fstat(dev.fd()).map_err(|_| libc::EIO)?;
        let is_device_file = stat.st_dev == own.st_dev && stat.st_ino == own.st_ino;
        // The model's storage: any regular file but its own device file (model/AIS.md).
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile || is_device_file {
            return Err(libc::ENODEV);
        }
        if a.file_offset < 0 || a.handle_offset.checked_add(a.size).is_none_or(|e| e > bo.size) {
            return Err(libc::EINVAL);
        }
        let mut bounce = vec![0u8; (a.size as usize).min(CHUNK)];
        let vram = base + a.handle_offset;
        let pos = a.file_offset as u64;
        while *copied < a.size {
            let n = ((a.size - *copied) as usize).min(CHUNK);
            let chunk = &mut bounce[..n];
            let moved = if read {
                let got = rustix::io::pread(file, &mut *chunk, pos + *copied).map_err(|e| e.raw_os_error())?;
                if got == 0 {
                    break; // end of file: a short read
                }
                write_all(dev.fd(), &chunk[..got], vram + *copied)?;
                got
            } else {
                read_all(dev.fd(), chunk, vram + *copied)?;
                let put = rustix::io::pwrite(file, chunk, pos + *copied).map_err(|e| e.raw_os_error())?;
                if put == 0 {
                    return Err(libc::EIO); // no progress: the kernel gives up with EIO
                }
                put
            };
            *copied += moved as u64;
        }
        Ok(())
    }
}

/// All of `data` into the device file at `offset`.
fn write_all(fd: impl AsFd, mut data: &[u8], mut offset: u64) -> Result<(), i32> {
    while !data.is_empty() {
        let n = rustix::io::pwrite(&fd, data, offset).map_err(|e| e.raw_os_error())?;
        if n == 0 {
            return Err(libc::EIO);
        }
        data = &data[n..];
        offset += n as u64;
    }
    Ok(())
}

/// All of `data` from the device file at `offset` (a hole reads as zeros).
fn read_all(fd: impl AsFd, mut data: &mut [u8], mut offset: u64) -> Result<(), i32> {
    while !data.is_empty() {
        let n = rustix::io::pread(&fd, &mut *data, offset).map_err(|e| e.raw_os_error())?;
        if n == 0 {
            data.fill(0);
            return Ok(());
        }
        data = &mut data[n..];
        offset += n as u64;
    }
    Ok(())
}
