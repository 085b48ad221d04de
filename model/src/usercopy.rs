//! Checked copies from and to "user" memory (our own address space), the model's
//! `copy_from_user` / `copy_to_user`: a NULL, unmapped or read-only address yields `EFAULT`
//! instead of a crash.
//!
//! The copy is done by the kernel with `process_vm_readv` / `process_vm_writev` on our own pid
//! (rustix does not wrap them, hence libc). Where those are not allowed (a seccomp profile
//! without them), a pipe does the same check: `write(2)` from a bad source and `read(2)` into a
//! bad destination fail with EFAULT too.

use rustix::fd::OwnedFd;
use std::os::fd::AsRawFd;
use std::sync::OnceLock;

const EFAULT: i32 = libc::EFAULT;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Method {
    ProcessVm,
    Pipe,
}

fn method() -> Method {
    static M: OnceLock<Method> = OnceLock::new();
    *M.get_or_init(|| {
        let src = [0x5au8; 8];
        let mut dst = [0u8; 8];
        // SAFETY: both buffers are live locals of the stated length.
        let ok = unsafe { pvm(false, dst.as_mut_ptr() as usize, src.as_ptr() as usize, 8) } == Ok(());
        if ok && dst == src {
            Method::ProcessVm
        } else {
            Method::Pipe
        }
    })
}

/// One process_vm call moving `len` bytes from `src` to `dst`. `write` selects
/// process_vm_writev (local = src, remote = dst) over process_vm_readv (local = dst,
/// remote = src).
///
/// # Safety
/// The local side must be valid for the access; the remote side is checked by the kernel.
unsafe fn pvm(write: bool, dst: usize, src: usize, len: usize) -> Result<(), i32> {
    let mut done = 0usize;
    while done < len {
        let (local, remote) = if write { (src + done, dst + done) } else { (dst + done, src + done) };
        let liov = libc::iovec { iov_base: local as *mut libc::c_void, iov_len: len - done };
        let riov = libc::iovec { iov_base: remote as *mut libc::c_void, iov_len: len - done };
        // SAFETY: the iovecs describe `len - done` bytes; the local one is valid per this
        // function's contract and the kernel checks the remote one.
        let r = unsafe {
            if write {
                libc::process_vm_writev(crate::sys::current_pid() as libc::pid_t, &liov, 1, &riov, 1, 0)
            } else {
                libc::process_vm_readv(crate::sys::current_pid() as libc::pid_t, &liov, 1, &riov, 1, 0)
            }
        };
        if r < 0 {
            let e = std::io::Error::last_os_error().raw_os_error().unwrap_or(EFAULT);
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Err(EFAULT);
        }
        done += r as usize;
    }
    Ok(())
}

fn pipe_pair() -> Result<(OwnedFd, OwnedFd), i32> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| e.raw_os_error())
}

/// Pipe-based copy: write(2) reads `src`, read(2) writes `dst`; each faults cleanly.
///
/// # Safety
/// If `src_checked` is false, `src` must be valid for reads; if `dst_checked` is false, `dst`
/// must be valid for writes. Checked sides may be any address.
unsafe fn pipe_copy(dst: usize, src: usize, len: usize) -> Result<(), i32> {
    const CHUNK: usize = 32 * 1024;
    let (r, w) = pipe_pair()?;
    let mut done = 0;
    while done < len {
        let n = CHUNK.min(len - done);
        // SAFETY: `write` only reads `n` bytes at `src + done`; the kernel faults (EFAULT)
        // instead of touching an invalid address.
        let wrote = unsafe { libc::write(w.as_raw_fd(), (src + done) as *const libc::c_void, n) };
        if wrote < 0 {
            return Err(std::io::Error::last_os_error().raw_os_error().unwrap_or(EFAULT));
        }
        let wrote = wrote as usize;
        let mut got = 0;
        while got < wrote {
            // SAFETY: `read` writes at most `wrote - got` bytes at `dst + done + got`; the kernel
            // faults instead of touching an invalid address.
            let rd = unsafe { libc::read(r.as_raw_fd(), (dst + done + got) as *mut libc::c_void, wrote - got) };
            if rd <= 0 {
                return Err(EFAULT);
            }
            got += rd as usize;
        }
        done += wrote;
    }
    Ok(())
}

/// Copy `dst.len()` bytes from the user address `src` (`copy_from_user`).
pub fn copy_from_user(dst: &mut [u8], src: usize) -> Result<(), i32> {
    if dst.is_empty() {
        return Ok(());
    }
    if src == 0 || src.checked_add(dst.len()).is_none() {
        return Err(EFAULT);
    }
    let d = dst.as_mut_ptr() as usize;
    match method() {
        // SAFETY: `dst` is a live, exclusively borrowed buffer of `dst.len()` bytes; `src` is
        // checked by the kernel.
        Method::ProcessVm => unsafe { pvm(false, d, src, dst.len()) },
        // SAFETY: as above.
        Method::Pipe => unsafe { pipe_copy(d, src, dst.len()) },
    }
    .map_err(|_| EFAULT)
}

/// Copy `src` to the user address `dst` (`copy_to_user`).
pub fn copy_to_user(dst: usize, src: &[u8]) -> Result<(), i32> {
    if src.is_empty() {
        return Ok(());
    }
    if dst == 0 || dst.checked_add(src.len()).is_none() {
        return Err(EFAULT);
    }
    let s = src.as_ptr() as usize;
    match method() {
        // SAFETY: `src` is a live buffer of `src.len()` bytes; `dst` is checked by the kernel.
        Method::ProcessVm => unsafe { pvm(true, dst, s, src.len()) },
        // SAFETY: as above.
        Method::Pipe => unsafe { pipe_copy(dst, s, src.len()) },
    }
    .map_err(|_| EFAULT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_and_bad_addresses() {
        let src = [1u8, 2, 3, 4];
        let mut dst = [0u8; 4];
        copy_from_user(&mut dst, src.as_ptr() as usize).unwrap();
        assert_eq!(dst, src);
        let mut out = [0u8; 4];
        copy_to_user(out.as_mut_ptr() as usize, &src).unwrap();
        assert_eq!(out, src);
        assert_eq!(copy_from_user(&mut dst, 0), Err(EFAULT));
        assert_eq!(copy_from_user(&mut dst, 16), Err(EFAULT));
        assert_eq!(copy_to_user(8, &src), Err(EFAULT));
        assert_eq!(copy_to_user(usize::MAX - 1, &src), Err(EFAULT));
        // Read-only memory (a string literal in .rodata) cannot be written.
        static RO: [u8; 4] = [9; 4];
        assert_eq!(copy_to_user(RO.as_ptr() as usize, &src), Err(EFAULT));
        // Zero-length copies never fault, like the kernel's.
        copy_from_user(&mut [], 0).unwrap();
        copy_to_user(0, &[]).unwrap();
    }

    #[test]
    fn pipe_fallback_checks_too() {
        let src = vec![7u8; 100_000];
        let mut dst = vec![0u8; 100_000];
        // SAFETY: both buffers are live and of the stated length.
        unsafe { pipe_copy(dst.as_mut_ptr() as usize, src.as_ptr() as usize, src.len()) }.unwrap();
        assert_eq!(dst, src);
        // SAFETY: the destination is valid; the source address is bogus and checked.
        assert!(unsafe { pipe_copy(dst.as_mut_ptr() as usize, 24, 8) }.is_err());
        // SAFETY: the source is valid; the destination address is bogus and checked.
        assert!(unsafe { pipe_copy(24, src.as_ptr() as usize, 8) }.is_err());
    }
}
