//! The loopback transport: a guest and a host in different processes, connected by a Unix
//! `SOCK_SEQPACKET` socket, with memfds standing in for host blobs (the host passes each
//! mappable blob's file with `SCM_RIGHTS`; the guest maps it at the host's address, as a
//! virtio-gpu guest maps a host-visible blob). One message per virtio-gpu operation:
//!
//! | op | request (`a`, `b`, `c`) | reply (`status`, `res_id`, `a`, `b`, `c`) + fd |
//! |---|---|---|
//! | CAPSET | — | capset bytes after the reply header |
//! | CREATE_BLOB | blob_id, size | res_id, host addr, size, file offset; the file if mappable |
//! | DESTROY_BLOB | res_id | — |
//! | EXECBUF | command bytes after the header | — (sent when every command ran: the fence) |
//!
//! Blob id 0 is the shared response page, as on virtio-gpu.

use crate::host::Session;
use hsakmt_core::Status;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

pub const OP_CAPSET: u32 = 1;
pub const OP_CREATE_BLOB: u32 = 2;
pub const OP_DESTROY_BLOB: u32 = 3;
pub const OP_EXECBUF: u32 = 4;
pub const REQ_HDR: usize = 32;
pub const REP_HDR: usize = 32;

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Send one message, with `fd` attached if given.
pub fn send_msg(sock: RawFd, bytes: &[u8], fd: Option<RawFd>) -> Result<(), i32> {
    let mut iov = libc::iovec { iov_base: bytes.as_ptr() as *mut _, iov_len: bytes.len() };
    // Room for one SCM_RIGHTS descriptor (CMSG_SPACE(4) is 24 on 64-bit Linux), aligned.
    let mut cbuf = [0u64; 4];
    // SAFETY: an all-zero msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    if let Some(fd) = fd {
        msg.msg_control = cbuf.as_mut_ptr().cast();
        // SAFETY: CMSG_SPACE is a pure computation.
        msg.msg_controllen = unsafe { libc::CMSG_SPACE(4) } as usize;
        // SAFETY: the control buffer is CMSG_SPACE(4) ≤ 32 bytes, aligned for cmsghdr; the
        // first header and its data lie inside it.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(4) as usize;
            (libc::CMSG_DATA(c) as *mut i32).write_unaligned(fd);
        }
    }
    // SAFETY: `msg` points at live buffers for the call's duration.
    let n = unsafe { libc::sendmsg(sock, &msg, libc::MSG_NOSIGNAL) };
    if n < 0 {
        return Err(errno());
    }
    Ok(())
}

/// Receive one message into `buf` (its length); returns (bytes, truncated, fd). End of stream
/// is `Err(0)`.
pub fn recv_msg(sock: RawFd, buf: &mut [u8]) -> Result<(usize, bool, Option<OwnedFd>), i32> {
    let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
    let mut cbuf = [0u64; 4];
    // SAFETY: an all-zero msghdr is valid.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = cbuf.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&cbuf);
    let n = loop {
        // SAFETY: `msg` points at live buffers for the call's duration.
        let n = unsafe { libc::recvmsg(sock, &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        break n;
    };
    if n < 0 {
        return Err(errno());
    }
    if n == 0 && buf.is_empty() {
        return Ok((0, false, None));
    }
    if n == 0 {
        return Err(0);
    }
    let mut fd = None;
    // SAFETY: walking the control messages the kernel wrote into `cbuf`.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let raw = (libc::CMSG_DATA(c) as *const i32).read_unaligned();
                // The descriptor is new in this process: ours to own.
                fd = Some(OwnedFd::from_raw_fd(raw));
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    Ok((n as usize, msg.msg_flags & libc::MSG_TRUNC != 0, fd))
}

fn reply(status: Status, res_id: u32, a: u64, b: u64, c: u64) -> Vec<u8> {
    let mut r = vec![0u8; REP_HDR];
    r[0..4].copy_from_slice(&(status.0 as i32).to_le_bytes());
    r[4..8].copy_from_slice(&res_id.to_le_bytes());
    r[8..16].copy_from_slice(&a.to_le_bytes());
    r[16..24].copy_from_slice(&b.to_le_bytes());
    r[24..32].copy_from_slice(&c.to_le_bytes());
    r
}

/// Serve one guest on `sock` until it goes away (end of stream or a socket error); the
/// session is then dropped by the caller, which frees everything it held. A message the host
/// cannot accept (too long, too short, unknown) is answered with a status; the connection
/// stays up.
pub fn serve(sock: &OwnedFd, session: &mut Session, max_message: usize) {
    let mut buf = vec![0u8; max_message + REQ_HDR];
    loop {
        let (n, truncated, _fd) = match recv_msg(sock.as_raw_fd(), &mut buf) {
            Ok(m) => m,
            Err(_) => return,
        };
        let msg = &buf[..n];
        let g = |o: usize| msg.get(o..o + 8).map_or(0, |s| u64::from_le_bytes(s.try_into().expect("8")));
        let op = msg.get(0..4).map_or(0, |s| u32::from_le_bytes(s.try_into().expect("4")));
        let (rep, fd) = if truncated {
            (reply(Status::NO_MEMORY, 0, 0, 0, 0), None)
        } else if n < REQ_HDR {
            (reply(Status::INVALID_PARAMETER, 0, 0, 0, 0), None)
        } else {
            match op {
                OP_CAPSET => {
                    let mut r = reply(Status::SUCCESS, 0, 0, 0, 0);
                    r.extend_from_slice(&session.capset());
                    (r, None)
                }
                OP_CREATE_BLOB => match session.create_blob(g(8), g(16)) {
                    Ok(b) => {
                        let off = b.backing.as_ref().map_or(0, |k| k.offset);
                        let fd = b.backing.map(|k| k.fd);
                        (reply(Status::SUCCESS, b.res_id, b.addr, b.size, off), fd)
                    }
                    Err(e) => (reply(e, 0, 0, 0, 0), None),
                },
                OP_DESTROY_BLOB => (reply(session.destroy_resource(g(8) as u32).err().unwrap_or(Status::SUCCESS), 0, 0, 0, 0), None),
                OP_EXECBUF => {
                    let st = session.submit(&msg[REQ_HDR..]).err().unwrap_or(Status::SUCCESS);
                    (reply(st, 0, 0, 0, 0), None)
                }
                _ => (reply(Status::INVALID_PARAMETER, 0, 0, 0, 0), None),
            }
        };
        if send_msg(sock.as_raw_fd(), &rep, fd.as_ref().map(|f| f.as_raw_fd())).is_err() {
            return;
        }
    }
}

/// A connected `SOCK_SEQPACKET` pair (tests, or a VMM that forks its guest).
pub fn socketpair() -> Result<(OwnedFd, OwnedFd), i32> {
    let mut fds = [0i32; 2];
    // SAFETY: a valid out-array of two descriptors.
    if unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr()) } != 0 {
        return Err(errno());
    }
    // SAFETY: two new descriptors nobody else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Listen on a Unix socket path (removed first if it exists).
pub fn listen(path: &std::path::Path) -> Result<OwnedFd, i32> {
    let _ = std::fs::remove_file(path);
    let fd = socket()?;
    let (addr, len) = sockaddr(path)?;
    // SAFETY: a valid sockaddr_un of `len` bytes.
    if unsafe { libc::bind(fd.as_raw_fd(), (&addr as *const libc::sockaddr_un).cast(), len) } != 0 {
        return Err(errno());
    }
    // SAFETY: a bound socket.
    if unsafe { libc::listen(fd.as_raw_fd(), 64) } != 0 {
        return Err(errno());
    }
    Ok(fd)
}

/// Accept one connection.
pub fn accept(listener: &OwnedFd) -> Result<OwnedFd, i32> {
    loop {
        // SAFETY: a listening socket; no address is asked for.
        let n = unsafe { libc::accept4(listener.as_raw_fd(), std::ptr::null_mut(), std::ptr::null_mut(), libc::SOCK_CLOEXEC) };
        if n >= 0 {
            // SAFETY: a new descriptor nobody else owns.
            return Ok(unsafe { OwnedFd::from_raw_fd(n) });
        }
        if errno() != libc::EINTR {
            return Err(errno());
        }
    }
}

/// Connect to a host listening at `path`.
pub fn connect(path: &std::path::Path) -> Result<OwnedFd, i32> {
    let fd = socket()?;
    let (addr, len) = sockaddr(path)?;
    // SAFETY: a valid sockaddr_un of `len` bytes.
    if unsafe { libc::connect(fd.as_raw_fd(), (&addr as *const libc::sockaddr_un).cast(), len) } != 0 {
        return Err(errno());
    }
    Ok(fd)
}

fn socket() -> Result<OwnedFd, i32> {
    // SAFETY: plain socket creation.
    let fd = unsafe { libc::socket(libc::AF_UNIX, libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC, 0) };
    if fd < 0 {
        return Err(errno());
    }
    // SAFETY: a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn sockaddr(path: &std::path::Path) -> Result<(libc::sockaddr_un, libc::socklen_t), i32> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: an all-zero sockaddr_un is valid.
    let mut a: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    a.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let p = path.as_os_str().as_bytes();
    if p.len() >= a.sun_path.len() {
        return Err(libc::ENAMETOOLONG);
    }
    for (d, s) in a.sun_path.iter_mut().zip(p) {
        *d = *s as libc::c_char;
    }
    Ok((a, std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t))
}
