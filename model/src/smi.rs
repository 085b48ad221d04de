//! SMI events (AMDKFD_IOC_SMI_EVENTS): the file `kfd_smi_event_open` hands out, and the
//! events the model emits into it. Facts from mainline's `kfd_smi_events.c` and
//! `include/uapi/linux/kfd_ioctl.h` (formats: `hsakmt_core::abi::smi`).
//!
//! The kernel's file (`kfd_smi_ev`, an anonymous inode opened O_RDWR, not close-on-exec):
//! - a client belongs to one GPU (kfd_node) and holds a FIFO of `KFD_MAX_KFIFO_SIZE` bytes
//!   (8192 in mainline since 2024; 1024 before);
//! - `write` stores the first 8 bytes as the event mask (KFD_SMI_EVENT_MASK_FROM_INDEX bits;
//!   any bits are accepted) and returns 8; fewer than 8 bytes is EFAULT;
//! - `read` takes up to `size` bytes out of the FIFO (records are not split on purpose, but a
//!   short buffer gets part of one and the rest next time); an empty FIFO is EAGAIN at once,
//!   whatever O_NONBLOCK says; `poll` is readable while the FIFO holds data;
//! - an event is formatted once (`"%x " event`, then its message, at most 96 bytes) and copied
//!   into every client of the GPU whose mask has it and which may see it; a FIFO without room
//!   for the whole record drops it;
//! - who may see what (`kfd_smi_ev_enabled`): an event emitted for a process (`pid != 0`)
//!   reaches clients opened by that process, and every client opened with CAP_SYS_ADMIN.
//!   Events emitted with pid 0 (VMFAULT, GPU resets, thermal, PROCESS_START/END) reach every
//!   client. The ALL_PROCESS bit (64) no longer matters: mainline dropped the "and the mask
//!   has ALL_PROCESS" condition in 2025 ("fix a bug of smi event for superuser"); it is kept
//!   in the mask like any other bit.
//!
//! The model's file is one end of a Unix stream socket pair (the client's end, O_NONBLOCK, not
//! close-on-exec); the model keeps the other end. Kept exactly: reads (a byte stream, up to
//! `size` bytes, records joined or split as the kernel's FIFO would give them), EAGAIN on an
//! empty file, poll readiness, 8-byte mask writes answered 8, the capacity rule (the bytes the
//! client has not read yet are asked of its end with FIONREAD while that descriptor number
//! still names it), the visibility rule. Deviations, all from being a socket:
//! - A write of fewer than 8 bytes succeeds instead of EFAULT, and writes are not kept apart:
//!   the model takes the written bytes as consecutive 8-byte masks (the last complete one wins,
//!   read when the model next emits an event for that GPU). A 16-byte write sets the mask from
//!   its second half (the kernel: its first half, answering 8).
//! - A client that clears O_NONBLOCK blocks on an empty read (the kernel's answer is EAGAIN
//!   regardless).
//! - A read of 0 bytes answers 0 (the kernel: EAGAIN).
//! - When the client's descriptor number no longer names its socket (dup2'd away and closed),
//!   the model cannot ask how much is unread; the socket's own send buffer then bounds the FIFO
//!   (about 270 short records with Linux's default buffer). That buffer can also fill before
//!   8192 bytes with many very short records; the event is dropped then too.
//! - Clients belong to the process that opened them: a forked child's model does not write to
//!   its parent's clients (the kernel's pid-0 events of the child would reach them), and events
//!   of unrelated processes are never seen (each runs its own model).
//! - After the last CloseKFD the clients stay (the KFD keeps them per device); they are closed
//!   only when the model itself goes away, and then a read answers 0 (end of file).

use crate::model::Model;
use crate::sys::{boottime_ns, current_pid};
use hsakmt_core::abi::smi::smi_event_mask;
use rustix::fd::{AsFd, BorrowedFd, IntoRawFd, OwnedFd};
use std::fmt::{self, Write as _};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Mutex, MutexGuard};

/// KFD_MAX_KFIFO_SIZE (mainline).
pub const SMI_FIFO_BYTES: usize = 8192;
/// KFD_SMI_EVENT_MSG_SIZE: a record is formatted into this many bytes (snprintf's NUL included).
pub const SMI_MSG_BYTES: usize = 96;
/// amdgpu_reset_get_desc's text for a reset the KFD's HWS asked for (AMDGPU_RESET_SRC_HWS,
/// what kfd_hws_hang → amdgpu_amdkfd_gpu_reset sets).
pub const RESET_CAUSE_HWS: &str = "HWS hang";
/// TASK_COMM_LEN.
const COMM_LEN: usize = 16;

/// The task amdgpu records for a VM (amdgpu_task_info: the thread that acquired it and its
/// name), which VMFAULT and PROCESS_START/END report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct TaskInfo {
    pub pid: u32,
    comm: [u8; COMM_LEN],
    comm_len: u8,
}

impl TaskInfo {
    /// The calling thread: its id and its name (`/proc/thread-self/comm`, at most 15 bytes).
    pub(crate) fn current() -> TaskInfo {
        let mut t = TaskInfo { pid: rustix::thread::gettid().as_raw_nonzero().get() as u32, ..Default::default() };
        if let Ok(name) = std::fs::read("/proc/thread-self/comm") {
            let name = name.strip_suffix(b"\n").unwrap_or(&name);
            let n = name.len().min(COMM_LEN - 1);
            t.comm[..n].copy_from_slice(&name[..n]);
            t.comm_len = n as u8;
        }
        t
    }

    pub(crate) fn name(&self) -> &str {
        std::str::from_utf8(&self.comm[..self.comm_len as usize]).unwrap_or("")
    }
}

struct Client {
    gpu: usize,
    /// The model's end of the pair.
    end: OwnedFd,
    /// The client's descriptor number and its socket's identity, to ask how much is unread.
    peer_fd: i32,
    peer_key: crate::sys::FileKey,
    /// tgid and CAP_SYS_ADMIN of the opener.
    pid: u32,
    suser: bool,
    mask: u64,
    /// Mask bytes written so far that do not make a whole 8-byte mask yet.
    partial: [u8; 8],
    partial_len: usize,
}

#[derive(Default)]
struct SmiState {
    /// The process whose clients these are (a forked child finds its parent's and drops them).
    owner: u32,
    clients: Vec<Client>,
}

/// The SMI clients of every GPU of the model.
pub(crate) struct Smi {
    state: Mutex<SmiState>,
    /// Any client at all: emit points cost one load when nobody listens.
    any: AtomicBool,
    /// dev->reset_seq_num per GPU (incremented by every pre-reset, listened to or not).
    reset_seq: [AtomicU32; crate::devmem::MAX_GPUS],
}

impl Default for Smi {
    fn default() -> Smi {
        Smi { state: Default::default(), any: AtomicBool::new(false), reset_seq: std::array::from_fn(|_| AtomicU32::new(0)) }
    }
}

/// kfd_smi_ev_enabled: may a client opened by `client_pid` (CAP_SYS_ADMIN: `suser`) with
/// `mask` see `event` emitted for `pid` (0: for nobody in particular)?
pub fn smi_event_visible(event: u32, pid: u32, client_pid: u32, suser: bool, mask: u64) -> bool {
    if pid != 0 && client_pid != pid && !suser {
        return false;
    }
    (1..=64).contains(&event) && mask & smi_event_mask(event) != 0
}

/// capable(CAP_SYS_ADMIN): bit 21 of the effective set in /proc/self/status.
fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    let Ok(s) = std::fs::read_to_string("/proc/self/status") else { return false };
    s.lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// A record being formatted: a stack buffer of KFD_SMI_EVENT_MSG_SIZE bytes, cut like
/// snprintf (room for the NUL kept).
struct Record {
    buf: [u8; SMI_MSG_BYTES],
    len: usize,
}

impl fmt::Write for Record {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = SMI_MSG_BYTES - 1 - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

impl Smi {
    fn lock(&self) -> MutexGuard<'_, SmiState> {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let pid = current_pid();
        if st.owner != pid {
            // A forked child: its parent's clients are not its own (their model ends close in
            // this process only).
            st.clients.clear();
            st.owner = pid;
            self.any.store(false, Ordering::Relaxed);
        }
        st
    }

    /// The next reset sequence number of GPU `gpu` (kfd_smi_event_update_gpu_reset).
    fn next_reset_seq(&self, gpu: usize) -> u32 {
        self.reset_seq.get(gpu).map_or(0, |s| s.fetch_add(1, Ordering::Relaxed).wrapping_add(1))
    }

    fn reset_seq(&self, gpu: usize) -> u32 {
        self.reset_seq.get(gpu).map_or(0, |s| s.load(Ordering::Relaxed))
    }
}

impl Client {
    /// Take the mask bytes the client wrote since last time (non-blocking).
    fn drain_mask(&mut self) -> bool {
        let mut buf = [0u8; 256];
        loop {
            match rustix::net::recv(&self.end, &mut buf, rustix::net::RecvFlags::DONTWAIT) {
                Ok((0, _)) => return false, // the client closed its end
                Ok((n, _)) => {
                    for &b in &buf[..n] {
                        self.partial[self.partial_len] = b;
                        self.partial_len += 1;
                        if self.partial_len == 8 {
                            self.mask = u64::from_ne_bytes(self.partial);
                            self.partial_len = 0;
                        }
                    }
                }
                Err(rustix::io::Errno::AGAIN) => return true,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => return false,
            }
        }
    }

    /// Bytes the client has not read yet, when its descriptor still names its socket.
    fn unread(&self) -> Option<usize> {
        // SAFETY: the number is only borrowed for fstat and FIONREAD, two queries that change
        // nothing; if the client closed it meanwhile they fail with EBADF, and if the number
        // now names another file, the identity check below rejects it.
        let fd = unsafe { BorrowedFd::borrow_raw(self.peer_fd) };
        if crate::sys::file_key(fd) != Some(self.peer_key) {
            return None;
        }
        rustix::io::ioctl_fionread(fd).ok().map(|n| n as usize)
    }

    /// kfifo_avail ≥ len ? kfifo_in : drop. Returns false when the client is gone.
    fn push(&mut self, record: &[u8]) -> bool {
        if let Some(unread) = self.unread() {
            if SMI_FIFO_BYTES.saturating_sub(unread) < record.len() {
                return true; // no space left: dropped, as the kernel's pr_debug says
            }
        }
        let flags = rustix::net::SendFlags::DONTWAIT | rustix::net::SendFlags::NOSIGNAL;
        loop {
            match rustix::net::send(&self.end, record, flags) {
                Ok(_) => return true,
                Err(rustix::io::Errno::INTR) => continue,
                Err(rustix::io::Errno::AGAIN) => return true, // the socket's buffer is full: dropped
                Err(_) => return false,                       // EPIPE: the client closed its end
            }
        }
    }
}

impl Model {
    /// AMDKFD_IOC_SMI_EVENTS for GPU index `gpu`: a new client, its file descriptor returned.
    pub(crate) fn smi_open(&self, gpu: usize) -> Result<i32, i32> {
        use rustix::net::{socketpair, AddressFamily, SocketFlags, SocketType};
        let (mine, theirs) =
            socketpair(AddressFamily::UNIX, SocketType::STREAM, SocketFlags::CLOEXEC, None).map_err(|e| e.raw_os_error())?;
        // The kernel's anon file: O_RDWR, not close-on-exec; reads never block.
        rustix::io::fcntl_setfd(&theirs, rustix::io::FdFlags::empty()).map_err(|e| e.raw_os_error())?;
        rustix::fs::fcntl_setfl(&theirs, rustix::fs::OFlags::NONBLOCK).map_err(|e| e.raw_os_error())?;
        let peer_key = crate::sys::file_key(theirs.as_fd()).ok_or(libc::EIO)?;
        let suser = has_cap_sys_admin();
        let mut st = self.smi.lock();
        let peer_fd = theirs.into_raw_fd();
        st.clients.push(Client { gpu, end: mine, peer_fd, peer_key, pid: current_pid(), suser, mask: 0, partial: [0; 8], partial_len: 0 });
        self.smi.any.store(true, Ordering::Relaxed);
        Ok(peer_fd)
    }

    /// SMI_EVENTS ioctl.
    pub(crate) fn ioctl_smi_events(&self, buf: &mut [u8]) -> Result<(), i32> {
        use hsakmt_core::abi::kfd::kfd_ioctl_smi_events_args;
        let mut a: kfd_ioctl_smi_events_args = crate::sys::get(buf);
        // kfd_lock_pdd_by_id: a gpu_id the process has no device data for (0: a CPU) is EINVAL.
        let gpu = self.gpu_index(a.gpuid).filter(|_| a.gpuid != 0).ok_or(libc::EINVAL)?;
        a.anon_fd = self.smi_open(gpu)? as u32;
        crate::sys::put(buf, &a);
        Ok(())
    }

    /// Does GPU `gpu` have a client at all (saves formatting when nobody listens)?
    fn smi_listened(&self) -> bool {
        self.smi.any.load(Ordering::Relaxed)
    }

    /// kfd_smi_event_add: format `"<event hex> " + msg` once and put it into every client of
    /// GPU index `gpu` that may see it. Allocates nothing.
    pub(crate) fn smi_emit(&self, gpu: usize, event: u32, pid: u32, msg: fmt::Arguments<'_>) {
        if !self.smi_listened() {
            return;
        }
        let mut r = Record { buf: [0; SMI_MSG_BYTES], len: 0 };
        let _ = write!(r, "{event:x} ");
        let _ = r.write_fmt(msg);
        let record = &r.buf[..r.len];
        let mut st = self.smi.lock();
        st.clients.retain_mut(|c| {
            if c.gpu != gpu {
                return true;
            }
            if !c.drain_mask() {
                return false;
            }
            if !smi_event_visible(event, pid, c.pid, c.suser, c.mask) {
                return true;
            }
            c.push(record)
        });
        if st.clients.is_empty() {
            self.smi.any.store(false, Ordering::Relaxed);
        }
    }

    /// The number of open SMI clients (tests).
    pub fn smi_clients(&self) -> usize {
        let mut st = self.smi.lock();
        st.clients.retain_mut(|c| c.drain_mask());
        st.clients.len()
    }

    // ---- The events (kfd_smi_event_update_* and friends). ----

    /// kfd_smi_event_update_vmfault: a GPU page fault of the process whose VM `task` is.
    pub(crate) fn smi_vmfault(&self, gpu: usize, task: TaskInfo) {
        if task.pid == 0 {
            return; // "Report VM faults from user applications, not retry from kernel"
        }
        self.smi_emit(gpu, hsakmt_core::abi::kfd::KFD_SMI_EVENT_VMFAULT, 0, format_args!("{:x}:{}\n", task.pid, task.name()));
    }

    /// kfd_smi_event_update_gpu_reset: before (the sequence number moves on, with `cause`) or
    /// after (no cause) a reset of GPU `gpu`.
    pub(crate) fn smi_gpu_reset(&self, gpu: usize, post: bool, cause: &str) {
        use hsakmt_core::abi::kfd::{KFD_SMI_EVENT_GPU_POST_RESET, KFD_SMI_EVENT_GPU_PRE_RESET};
        let (event, seq) = if post {
            (KFD_SMI_EVENT_GPU_POST_RESET, self.smi.reset_seq(gpu))
        } else {
            (KFD_SMI_EVENT_GPU_PRE_RESET, self.smi.next_reset_seq(gpu))
        };
        self.smi_emit(gpu, event, 0, format_args!("{seq:x} {cause}\n"));
    }

    /// kfd_smi_event_queue_eviction: the queues of process `pid` on GPU `gpu` were evicted.
    pub(crate) fn smi_queue_eviction(&self, gpu: usize, pid: u32, trigger: u32) {
        let gpu_id = self.gpus[gpu].gpu_id;
        self.smi_emit(
            gpu,
            hsakmt_core::abi::smi::KFD_SMI_EVENT_QUEUE_EVICTION,
            pid,
            format_args!("{} -{} {:x} {}\n", boottime_ns(), pid, gpu_id, trigger),
        );
    }

    /// kfd_smi_event_unmap_from_gpu: pages `first..=last` unmapped from GPU `gpu`'s VM.
    pub(crate) fn smi_unmap_from_gpu(&self, gpu: usize, pid: u32, first: u64, last: u64, trigger: u32) {
        let gpu_id = self.gpus[gpu].gpu_id;
        self.smi_emit(
            gpu,
            hsakmt_core::abi::smi::KFD_SMI_EVENT_UNMAP_FROM_GPU,
            pid,
            format_args!("{} -{} @{:x}({:x}) {:x} {}\n", boottime_ns(), pid, first, last - first + 1, gpu_id, trigger),
        );
    }

    /// kfd_smi_event_process: the process (its VM's task) started or ended on GPU `gpu`.
    pub(crate) fn smi_process(&self, gpu: usize, task: TaskInfo, start: bool) {
        use hsakmt_core::abi::smi::{KFD_SMI_EVENT_PROCESS_END, KFD_SMI_EVENT_PROCESS_START};
        let event = if start { KFD_SMI_EVENT_PROCESS_START } else { KFD_SMI_EVENT_PROCESS_END };
        self.smi_emit(gpu, event, 0, format_args!("{:x} {}\n", task.pid, task.name()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsakmt_core::abi::kfd::*;
    use hsakmt_core::abi::smi::*;

    #[test]
    fn visibility_follows_kfd_smi_ev_enabled() {
        let vm = smi_event_mask(KFD_SMI_EVENT_VMFAULT);
        let ev = smi_event_mask(KFD_SMI_EVENT_QUEUE_EVICTION);
        let all = smi_event_mask(KFD_SMI_EVENT_ALL_PROCESS);
        // pid 0: everyone with the bit.
        assert!(smi_event_visible(KFD_SMI_EVENT_VMFAULT, 0, 100, false, vm));
        assert!(!smi_event_visible(KFD_SMI_EVENT_VMFAULT, 0, 100, false, ev));
        // A process's event: its own clients.
        assert!(smi_event_visible(KFD_SMI_EVENT_QUEUE_EVICTION, 100, 100, false, ev));
        // Another process's: not even with ALL_PROCESS, unless CAP_SYS_ADMIN ...
        assert!(!smi_event_visible(KFD_SMI_EVENT_QUEUE_EVICTION, 200, 100, false, ev | all));
        // ... which needs no ALL_PROCESS bit any more (mainline, 2025).
        assert!(smi_event_visible(KFD_SMI_EVENT_QUEUE_EVICTION, 200, 100, true, ev));
        // The mask still decides.
        assert!(!smi_event_visible(KFD_SMI_EVENT_QUEUE_EVICTION, 200, 100, true, vm | all));
        assert!(!smi_event_visible(0, 0, 100, true, u64::MAX));
    }

    use crate::model::ModelConfig;
    use rustix::fd::FromRawFd;

    fn model() -> Model {
        Model::new(ModelConfig::catalogue("mi300x")).expect("model")
    }

    /// A client of GPU 0, owned by the test, with `mask` written.
    fn client(m: &Model, mask: u64) -> OwnedFd {
        let fd = m.smi_open(0).expect("open");
        // SAFETY: smi_open hands the new descriptor to its caller; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        assert_eq!(rustix::io::write(&fd, &mask.to_ne_bytes()), Ok(8));
        fd
    }

    fn read_all(fd: &OwnedFd) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 1000];
        loop {
            match rustix::io::read(fd, &mut buf) {
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => {
                    assert_eq!(e, rustix::io::Errno::AGAIN);
                    return out;
                }
            }
        }
    }

    fn readable(fd: &OwnedFd) -> bool {
        let mut p = [rustix::event::PollFd::new(fd, rustix::event::PollFlags::IN)];
        rustix::event::poll(&mut p, Some(&rustix::time::Timespec { tv_sec: 0, tv_nsec: 0 })).expect("poll") == 1
            && p[0].revents().contains(rustix::event::PollFlags::IN)
    }

    #[test]
    fn a_full_fifo_drops_whole_records() {
        let m = model();
        let fd = client(&m, smi_event_mask(KFD_SMI_EVENT_UNMAP_FROM_GPU));
        // Records of 2 + 38 + 1 = 41 bytes: 199 fit in 8192 bytes, the 200th does not.
        let body = "y".repeat(38);
        for _ in 0..300 {
            m.smi_emit(0, KFD_SMI_EVENT_UNMAP_FROM_GPU, 0, format_args!("{body}\n"));
        }
        let got = read_all(&fd);
        assert_eq!(got.len(), 199 * 41);
        let want = format!("b {body}\n");
        assert!(got.chunks(41).all(|r| r == want.as_bytes()));
        // Room again: the next one arrives.
        m.smi_emit(0, KFD_SMI_EVENT_UNMAP_FROM_GPU, 0, format_args!("{body}\n"));
        assert_eq!(read_all(&fd), want.as_bytes());
    }

    #[test]
    fn the_mask_filters_and_reads_never_block() {
        let m = model();
        let fd = client(&m, smi_event_mask(KFD_SMI_EVENT_VMFAULT));
        let mut buf = [0u8; 64];
        assert_eq!(rustix::io::read(&fd, &mut buf), Err(rustix::io::Errno::AGAIN));
        assert!(!readable(&fd));
        m.smi_emit(0, KFD_SMI_EVENT_QUEUE_EVICTION, 0, format_args!("not asked for\n"));
        assert!(!readable(&fd));
        // Another GPU's event never reaches a GPU 0 client.
        m.smi_emit(1, KFD_SMI_EVENT_VMFAULT, 0, format_args!("gpu 1\n"));
        assert!(!readable(&fd));
        m.smi_emit(0, KFD_SMI_EVENT_VMFAULT, 0, format_args!("1234:app\n"));
        assert!(readable(&fd));
        assert_eq!(read_all(&fd), b"1 1234:app\n");
        // A new mask replaces the old one.
        assert_eq!(rustix::io::write(&fd, &smi_event_mask(KFD_SMI_EVENT_QUEUE_EVICTION).to_ne_bytes()), Ok(8));
        m.smi_emit(0, KFD_SMI_EVENT_VMFAULT, 0, format_args!("1234:app\n"));
        m.smi_emit(0, KFD_SMI_EVENT_QUEUE_EVICTION, 0, format_args!("5 -6 7 3\n"));
        assert_eq!(read_all(&fd), b"9 5 -6 7 3\n");
        // A short read takes part of a record; the rest follows.
        m.smi_emit(0, KFD_SMI_EVENT_QUEUE_EVICTION, 0, format_args!("5 -6 7 3\n"));
        assert_eq!(rustix::io::read(&fd, &mut buf[..4]), Ok(4));
        assert_eq!(&buf[..4], b"9 5 ");
        assert_eq!(read_all(&fd), b"-6 7 3\n");
    }

    #[test]
    fn another_process_events_need_cap_sys_admin_not_all_process() {
        let m = model();
        let mask = smi_event_mask(KFD_SMI_EVENT_QUEUE_EVICTION) | smi_event_mask(KFD_SMI_EVENT_ALL_PROCESS);
        let fd = client(&m, mask);
        let me = current_pid();
        m.smi_emit(0, KFD_SMI_EVENT_QUEUE_EVICTION, me + 1, format_args!("other\n"));
        let other = read_all(&fd);
        if has_cap_sys_admin() {
            assert_eq!(other, b"9 other\n");
        } else {
            assert!(other.is_empty(), "{}", String::from_utf8_lossy(&other));
        }
        m.smi_emit(0, KFD_SMI_EVENT_QUEUE_EVICTION, me, format_args!("mine\n"));
        assert_eq!(read_all(&fd), b"9 mine\n");
    }

    #[test]
    fn a_closed_client_is_dropped_and_two_clients_each_get_a_copy() {
        let m = model();
        let a = client(&m, smi_event_mask(KFD_SMI_EVENT_GPU_PRE_RESET));
        let b = client(&m, smi_event_mask(KFD_SMI_EVENT_GPU_PRE_RESET) | smi_event_mask(KFD_SMI_EVENT_GPU_POST_RESET));
        assert_eq!(m.smi_clients(), 2);
        m.smi_gpu_reset(0, false, RESET_CAUSE_HWS);
        m.smi_gpu_reset(0, true, "");
        assert_eq!(read_all(&a), b"3 1 HWS hang\n");
        assert_eq!(read_all(&b), b"3 1 HWS hang\n4 1 \n");
        drop(a);
        m.smi_gpu_reset(0, false, RESET_CAUSE_HWS);
        assert_eq!(m.smi_clients(), 1);
        assert_eq!(read_all(&b), b"3 2 HWS hang\n");
    }

    #[test]
    fn the_ioctl_refuses_cpus_and_unknown_gpus() {
        let m = model();
        let mut a = kfd_ioctl_smi_events_args { gpuid: 0, anon_fd: 0 };
        assert_eq!(m.ioctl_smi_events(zerocopy::IntoBytes::as_mut_bytes(&mut a)), Err(libc::EINVAL));
        a.gpuid = 0xdead;
        assert_eq!(m.ioctl_smi_events(zerocopy::IntoBytes::as_mut_bytes(&mut a)), Err(libc::EINVAL));
        a.gpuid = m.gpus()[0].gpu_id;
        assert_eq!(m.ioctl_smi_events(zerocopy::IntoBytes::as_mut_bytes(&mut a)), Ok(()));
        // SAFETY: the ioctl handed the new descriptor to us.
        let fd = unsafe { OwnedFd::from_raw_fd(a.anon_fd as i32) };
        let fl = rustix::fs::fcntl_getfl(&fd).expect("getfl");
        assert!(fl.contains(rustix::fs::OFlags::NONBLOCK) && fl.contains(rustix::fs::OFlags::RDWR));
        assert!(!rustix::io::fcntl_getfd(&fd).expect("getfd").contains(rustix::io::FdFlags::CLOEXEC));
    }

    #[test]
    fn records_are_cut_like_snprintf() {
        let mut r = Record { buf: [0; SMI_MSG_BYTES], len: 0 };
        let long = "x".repeat(200);
        let _ = write!(r, "1 {long}");
        assert_eq!(r.len, SMI_MSG_BYTES - 1);
    }
}
