//! AMDKFD_IOC_DBG_TRAP: the debugger interface, with the kernel's rules (mainline
//! kfd_chardev.c `kfd_ioctl_set_debug_trap`, kfd_debug.c, the suspend / resume / snapshot parts of
//! kfd_device_queue_manager.c and kfd_process_queue_manager.c). `model/DEBUG.md` has the full
//! description; in short:
//!
//! - **Who may debug whom.** `pid` names the target. A pid that does not exist (or a zombie) is
//!   ESRCH. A process may debug itself; any other target must be ptrace-attached by the calling
//!   thread (`TracerPid` of the target is the caller's tid), else EPERM (DISABLE excepted). The
//!   target must have a KFD process (opened the model) — ENABLE by its ptrace parent creates one,
//!   as `kfd_create_process` does — else ESRCH. Every operation but ENABLE needs debugging
//!   enabled (EINVAL); wave launch, suspend / resume, address watch and flags need the target's
//!   runtime enabled (EPERM); an unknown gpu_id for address watch is ENODEV; an unknown
//!   operation EINVAL.
//! - **Across processes.** The model runs inside each process, so the debugger's model and the
//!   target's are different copies. What the two must agree on lives in the *debug board*, a
//!   shared mapping of a memfd made with the device file (`devmem.rs`) and inherited across
//!   fork: per KFD process its debug session, exception state and a copy of its queue table;
//!   per device the watch-point ids. Debugger and target must therefore be of one model family
//!   (the debugger opened the KFD before forking the target), as two processes of one machine
//!   share one amdgpu device.
//! - **Events.** Exceptions raised in the target (GPU memory faults, packets the CP rejects,
//!   EC_QUEUE_NEW, EC_PROCESS_RUNTIME) are recorded per queue / device / process; when the
//!   debugger enabled that exception the target's model writes one byte to the debugger's event
//!   file (fetched from the debugger with pidfd_getfd, the model's stand-in for the kernel's
//!   reference to the file), and the runtime is not told (kfd_dbg_ev_raise returns true).
//! - **Suspend / resume.** A suspended queue is not run by the target's engines: the target's
//!   service pass consults the board, and SUSPEND_QUEUES waits for an engine run under way to
//!   end (the kernel's preemption), so once it returns nothing of the queue executes until
//!   RESUME_QUEUES.

use crate::devmem::{pid_alive, pid_lock, MAX_GPUS};
use crate::model::{Model, Runtime};
use crate::sys::{current_pid, get};
use crate::usercopy::{copy_from_user, copy_to_user};
use hsakmt_core::abi::kfd::*;
use rustix::fd::OwnedFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};
use zerocopy::{FromZeros, IntoBytes};

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const ESRCH: i32 = libc::ESRCH;
const EPERM: i32 = libc::EPERM;
const ENODEV: i32 = libc::ENODEV;
const ENOMEM: i32 = libc::ENOMEM;
const EAGAIN: i32 = libc::EAGAIN;
const ENODATA: i32 = libc::ENODATA;
const EACCES: i32 = libc::EACCES;
const EBADF: i32 = libc::EBADF;
const EALREADY: i32 = libc::EALREADY;

/// KFD processes the board tracks at once (past it, a new process simply has no debug state:
/// DBG_TRAP on it answers ESRCH).
pub(crate) const MAX_TARGETS: usize = 16;
/// Queues per process the board copies (past it, a queue is not visible to the debugger).
pub(crate) const MAX_DBG_QUEUES: usize = 128;
/// MAX_WATCH_ADDRESSES of kfd_debug.c: watch points per device.
pub(crate) const MAX_WATCH: usize = 4;
/// How long SUSPEND_QUEUES waits for an engine run of the queue to end (the preemption grace).
const PREEMPT_TIMEOUT: Duration = Duration::from_secs(2);

/// `KFD_EC_MASK(ec)`.
pub(crate) const fn ec_mask(ec: u32) -> u64 {
    if ec >= 1 && ec <= 64 {
        1u64 << (ec - 1)
    } else {
        0
    }
}

const EC_MASK_PROCESS: u64 = KFD_EC_MASK_PROCESS;
const EC_MASK_DEVICE: u64 = KFD_EC_MASK_DEVICE;
const EC_MASK_QUEUE: u64 = KFD_EC_MASK_QUEUE;

/// One queue of a target as the debugger sees it (the kernel's `queue_properties` subset).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct DbgQueue {
    live: u32,
    queue_id: u32,
    gpu_id: u32,
    queue_type: u32,
    ring_size: u32,
    ctx_size: u32,
    suspended: u32,
    /// An engine run of this queue is under way in the target.
    running: u32,
    /// Creation order (the kernel lists the newest queue first).
    seq: u64,
    ring_base: u64,
    wptr: u64,
    rptr: u64,
    ctx_addr: u64,
    exception_status: u64,
    /// Exceptions the debugger sent back to the runtime (SEND_RUNTIME_EVENT), delivered by the
    /// target's model at its next service pass.
    to_runtime: u64,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct Watch {
    addr: u64,
    mask: u32,
    mode: u32,
}

/// One KFD process's debug state (the debug fields of `struct kfd_process` and its pdds).
#[repr(C)]
pub(crate) struct Target {
    pid: u32,
    enabled: u32,
    /// The process that gave the event file at ENABLE (the debugger, or the target itself).
    fd_owner: u32,
    dbg_fd: u32,
    runtime_state: u32,
    ttmp_setup: u32,
    r_debug: u64,
    /// `runtime_enable_sema`: ups from SEND_RUNTIME_EVENT(EC_PROCESS_RUNTIME).
    runtime_sema: u32,
    dbg_flags: u32,
    launch_mode: u32,
    override_mask: u32,
    next_seq: u64,
    exception_enable_mask: u64,
    exception_status: u64,
    /// SEND_RUNTIME_EVENT(EC_DEVICE_MEMORY_VIOLATION) per device, delivered by the target.
    fault_to_runtime: [u8; MAX_GPUS],
    dev_status: [u64; MAX_GPUS],
    dev_fault_valid: [u8; MAX_GPUS],
    dev_fault: [[u8; 32]; MAX_GPUS],
    /// Watch ids the process owns, per device.
    watch_ids: [u32; MAX_GPUS],
    watches: [[Watch; MAX_WATCH]; MAX_GPUS],
    queues: [DbgQueue; MAX_DBG_QUEUES],
}

/// The shared board: a lock word on its own cache line, the device-wide watch-point ids, the
/// processes.
#[repr(C)]
struct Board {
    lock: AtomicU32,
    _pad: [u32; 15],
    dev_watch_ids: [u32; MAX_GPUS],
    targets: [Target; MAX_TARGETS],
}

const BOARD_LEN: usize = std::mem::size_of::<Board>();

/// The board's mapping (made with the device file, so a forked family shares it).
pub(crate) struct BoardMap {
    _file: OwnedFd,
    board: NonNull<Board>,
}

// SAFETY: `board` points to a MAP_SHARED mapping owned by this value for its whole life; the data
// behind it is only touched with its lock held (see `lock`), the lock word atomically.
unsafe impl Send for BoardMap {}
// SAFETY: as above.
unsafe impl Sync for BoardMap {}

impl Drop for BoardMap {
    fn drop(&mut self) {
        // SAFETY: the mapping was made in `create` with this length and is not used after.
        let _ = unsafe { rustix::mm::munmap(self.board.as_ptr().cast(), BOARD_LEN) };
    }
}

/// The board with its lock held.
pub(crate) struct BoardGuard<'a> {
    map: &'a BoardMap,
    b: &'a mut Board,
}

impl Drop for BoardGuard<'_> {
    fn drop(&mut self) {
        self.map.lock_word().store(0, Ordering::Release);
    }
}

impl BoardMap {
    pub(crate) fn create() -> Result<BoardMap, i32> {
        use rustix::fs::{memfd_create, MemfdFlags};
        use rustix::mm::{MapFlags, ProtFlags};
        let file = memfd_create("hsakmt-model-debug", MemfdFlags::CLOEXEC).map_err(|e| e.raw_os_error())?;
        rustix::fs::ftruncate(&file, BOARD_LEN as u64).map_err(|e| e.raw_os_error())?;
        // SAFETY: a fresh shared mapping of a file just sized; no fixed address. A zero-filled
        // `Board` is valid (integers and an atomic).
        let p =
            unsafe { rustix::mm::mmap(std::ptr::null_mut(), BOARD_LEN, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, &file, 0) }
                .map_err(|e| e.raw_os_error())?;
        let board = NonNull::new(p.cast::<Board>()).ok_or(ENOMEM)?;
        Ok(BoardMap { _file: file, board })
    }

    fn lock_word(&self) -> &AtomicU32 {
        // SAFETY: the mapping lives as long as `self`; the word is only used atomically.
        unsafe { &(*self.board.as_ptr()).lock }
    }

    pub(crate) fn lock(&self) -> BoardGuard<'_> {
        pid_lock(self.lock_word());
        // SAFETY: the lock is held until the guard drops; nothing else touches the data
        // meanwhile, and the mapping outlives the guard.
        let b = unsafe { &mut *self.board.as_ptr() };
        BoardGuard { map: self, b }
    }
}

impl BoardGuard<'_> {
    fn find(&self, pid: u32) -> Option<usize> {
        (pid != 0).then(|| self.b.targets.iter().position(|t| t.pid == pid)).flatten()
    }

    /// The slot of `pid`, claimed (reset) if it has none; slots of dead processes are reaped.
    fn claim(&mut self, pid: u32) -> Result<usize, i32> {
        if let Some(i) = self.find(pid) {
            return Ok(i);
        }
        for i in 0..MAX_TARGETS {
            let t = &self.b.targets[i];
            if t.pid != 0 && !pid_alive(t.pid) {
                self.free(i);
            }
        }
        let i = self.b.targets.iter().position(|t| t.pid == 0).ok_or(ENOMEM)?;
        // SAFETY-free reset: zero the slot field by field through a fresh value.
        let t = &mut self.b.targets[i];
        t.as_mut_bytes_zeroed();
        t.pid = pid;
        Ok(i)
    }

    fn free(&mut self, i: usize) {
        // The device watch points it owned go back to the devices.
        for d in 0..MAX_GPUS {
            let owned = self.b.targets[i].watch_ids[d];
            self.b.dev_watch_ids[d] &= !owned;
        }
        self.b.targets[i].as_mut_bytes_zeroed();
    }
}

impl Target {
    fn as_mut_bytes_zeroed(&mut self) {
        self.pid = 0;
        self.enabled = 0;
        self.fd_owner = 0;
        self.dbg_fd = 0;
        self.runtime_state = 0;
        self.ttmp_setup = 0;
        self.r_debug = 0;
        self.runtime_sema = 0;
        self.dbg_flags = 0;
        self.launch_mode = 0;
        self.override_mask = 0;
        self.next_seq = 0;
        self.exception_enable_mask = 0;
        self.exception_status = 0;
        self.fault_to_runtime = [0; MAX_GPUS];
        self.dev_status = [0; MAX_GPUS];
        self.dev_fault_valid = [0; MAX_GPUS];
        self.dev_fault = [[0; 32]; MAX_GPUS];
        self.watch_ids = [0; MAX_GPUS];
        self.watches = [[Watch::default(); MAX_WATCH]; MAX_GPUS];
        self.queues = [DbgQueue::default(); MAX_DBG_QUEUES];
    }

    fn queue_mut(&mut self, id: u32) -> Option<&mut DbgQueue> {
        self.queues.iter_mut().find(|q| q.live != 0 && q.queue_id == id)
    }

    /// Clear every exception status (kfd_dbg_clean_exception_status).
    fn clean_exception_status(&mut self) {
        self.exception_status = 0;
        self.dev_status = [0; MAX_GPUS];
        self.dev_fault_valid = [0; MAX_GPUS];
        for q in self.queues.iter_mut() {
            q.exception_status = 0;
        }
    }

    fn event_fd(&self) -> Option<(u32, u32)> {
        (self.enabled != 0).then_some((self.fd_owner, self.dbg_fd))
    }
}

/// Exceptions for the runtime: (queue id, mask) pairs, and (device, memory fault data).
pub(crate) type RuntimeEvents = (Vec<(u32, u64)>, Vec<(usize, kfd_hsa_memory_exception_data)>);

/// Where an exception comes from (kfd_dbg_ev_raise's `dev` and `source_id`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Source {
    Device(usize),
    Queue(u32),
}

/// The thread id of the caller (ptrace's tracer is a thread).
fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    (unsafe { libc::gettid() }) as u32
}

/// What /proc says of a pid: (exists and is not a zombie, TracerPid).
fn proc_status(pid: u32) -> Option<(bool, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let mut alive = true;
    let mut tracer = 0;
    let mut tgid = 0;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("State:") {
            alive = !v.trim_start().starts_with('Z') && !v.trim_start().starts_with('X');
        } else if let Some(v) = line.strip_prefix("TracerPid:") {
            tracer = v.trim().parse().unwrap_or(0);
        } else if let Some(v) = line.strip_prefix("Tgid:") {
            tgid = v.trim().parse().unwrap_or(0);
        }
    }
    // find_get_pid takes thread ids too; the KFD process is found by the thread group.
    Some((alive && tgid != 0, tracer))
}

/// Write the debugger's event byte ('.', as kfd_dbg_ev_raise) to `fd` of process `owner`.
fn write_event(owner: u32, fd: u32) {
    let byte = b".";
    if owner == current_pid() {
        // SAFETY: write(2) of one byte from a live buffer; a closed or wrong fd is an error the
        // kernel would also ignore.
        let _ = unsafe { libc::write(fd as i32, byte.as_ptr().cast(), 1) };
        return;
    }
    // SAFETY: pidfd_open / pidfd_getfd only create new descriptors, which are closed below.
    unsafe {
        let pidfd = libc::syscall(libc::SYS_pidfd_open, owner as libc::c_long, 0 as libc::c_long) as i32;
        if pidfd < 0 {
            return;
        }
        let f = libc::syscall(libc::SYS_pidfd_getfd, pidfd as libc::c_long, fd as libc::c_long, 0 as libc::c_long) as i32;
        if f >= 0 {
            let _ = libc::write(f, byte.as_ptr().cast(), 1);
            libc::close(f);
        }
        libc::close(pidfd);
    }
}

/// `kfd_dbg_is_per_vmid_supported` by the node's GC IP version (gfx target → GC: gfx90a is
/// 9.4.2, gfx942 9.4.3, gfx950 9.5.0; GFX11 and later).
fn per_vmid_supported(gfx: (u32, u32, u32)) -> bool {
    matches!(gfx, (9, 0, 10) | (9, 4, 2) | (9, 5, 0)) || gfx.0 >= 11
}

impl Model {
    /// /dev/null, standing in for the KFD file as an event file (hsaKmtDbgEnable gives the KFD
    /// fd; the kernel's writes to /dev/kfd go nowhere).
    pub(crate) fn null_file(&self) -> Option<&OwnedFd> {
        self.null_file
            .get_or_init(|| {
                rustix::fs::open("/dev/null", rustix::fs::OFlags::WRONLY | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty()).ok()
            })
            .as_ref()
    }

    fn board(&self) -> Result<&BoardMap, i32> {
        if self.is_secondary() {
            return Err(ESRCH);
        }
        Ok(&self.devmem()?.debug)
    }

    /// The device, for the debug board: none for a secondary process, which a debugger never
    /// sees (it finds a process's primary by pid; DBG_TRAP refuses secondary ones).
    fn debug_dev(&self) -> Option<&crate::devmem::DeviceMemory> {
        if self.is_secondary() {
            return None;
        }
        self.dev.get().map(|d| &**d)
    }

    /// This process's KFD process on the board (claimed on first use: open, RUNTIME_ENABLE,
    /// CREATE_QUEUE).
    pub(crate) fn debug_register(&self) {
        if let Ok(b) = self.board() {
            let _ = b.lock().claim(current_pid());
        }
    }

    /// The process ends its KFD use: its debug state goes (the debugger sees ESRCH from now).
    pub(crate) fn debug_unregister(&self) {
        if let Some(Ok(b)) = self.debug_dev().map(|d| Ok::<_, i32>(&d.debug)) {
            let mut g = b.lock();
            if let Some(i) = g.find(current_pid()) {
                g.free(i);
            }
        }
    }

    /// RUNTIME_ENABLE / disable as the debugger sees it; with debugging enabled the kernel
    /// raises EC_PROCESS_RUNTIME and waits until the debugger acknowledges it
    /// (SEND_RUNTIME_EVENT), which this does too.
    pub(crate) fn debug_runtime_changed(&self, rt: Runtime) {
        let Ok(b) = self.board() else { return };
        let me = current_pid();
        let notify = {
            let mut g = b.lock();
            let Ok(i) = g.claim(me) else { return };
            let t = &mut g.b.targets[i];
            match rt {
                Runtime::Enabled { r_debug, ttmp_setup } => {
                    t.runtime_state = DEBUG_RUNTIME_STATE_ENABLED;
                    t.r_debug = r_debug;
                    t.ttmp_setup = u32::from(ttmp_setup);
                }
                Runtime::Disabled => {
                    t.runtime_state = DEBUG_RUNTIME_STATE_DISABLED;
                    t.r_debug = 0;
                    t.ttmp_setup = 0;
                }
            }
            if t.enabled == 0 {
                return;
            }
            t.exception_status |= ec_mask(EC_PROCESS_RUNTIME);
            (t.exception_enable_mask & ec_mask(EC_PROCESS_RUNTIME) != 0).then(|| t.event_fd()).flatten()
        };
        if let Some((owner, fd)) = notify {
            write_event(owner, fd);
        }
        // down_interruptible(&p->runtime_enable_sema): until the debugger answers, detaches or
        // goes away.
        loop {
            {
                let g = b.lock();
                let Some(i) = g.find(me) else { return };
                let t = &mut g.b.targets[i];
                if t.enabled == 0 || (t.fd_owner != me && !pid_alive(t.fd_owner)) {
                    return;
                }
                if t.runtime_sema > 0 {
                    t.runtime_sema -= 1;
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// A queue was created: the debugger's copy, and EC_QUEUE_NEW.
    pub(crate) fn debug_queue_created(&self, q: DbgQueue) {
        let Ok(b) = self.board() else { return };
        let notify = {
            let mut g = b.lock();
            let Ok(i) = g.claim(current_pid()) else { return };
            let t = &mut g.b.targets[i];
            t.next_seq += 1;
            let seq = t.next_seq;
            let Some(slot) = t.queues.iter_mut().find(|s| s.live == 0) else { return };
            *slot = q;
            slot.live = 1;
            slot.seq = seq;
            raise_locked(t, ec_mask(EC_QUEUE_NEW), Source::Queue(q.queue_id), None)
        };
        if let Some((owner, fd)) = notify {
            write_event(owner, fd);
        }
    }

    /// A queue was destroyed.
    pub(crate) fn debug_queue_destroyed(&self, queue_id: u32) {
        let Some(d) = self.debug_dev() else { return };
        let g = d.debug.lock();
        if let Some(i) = g.find(current_pid()) {
            if let Some(q) = g.b.targets[i].queue_mut(queue_id) {
                *q = DbgQueue::default();
            }
        }
    }

    /// kfd_dbg_ev_raise in the target: record `mask` at `src`; true when the debugger has
    /// that exception enabled (it was told, through its event file, and the runtime is not).
    pub(crate) fn debug_raise(&self, mask: u64, src: Source, fault: Option<&kfd_hsa_memory_exception_data>) -> bool {
        let Some(d) = self.debug_dev() else { return false };
        let notify = {
            let g = d.debug.lock();
            let Some(i) = g.find(current_pid()) else { return false };
            let t = &mut g.b.targets[i];
            if t.enabled == 0 {
                return false;
            }
            match raise_locked(t, mask, src, fault) {
                Some(n) => n,
                None => return false,
            }
        };
        write_event(notify.0, notify.1);
        true
    }

    /// The engines may run these queues (ids)? Suspended ones are dropped from `ids` and the
    /// others marked running on the board until [`Model::debug_runs_done`].
    pub(crate) fn debug_claim_runs(&self, ids: &mut Vec<u32>) -> Vec<u32> {
        let mut refused = Vec::new();
        let Some(d) = self.debug_dev() else { return refused };
        let g = d.debug.lock();
        let Some(i) = g.find(current_pid()) else { return refused };
        let t = &mut g.b.targets[i];
        ids.retain(|id| match t.queue_mut(*id) {
            Some(q) if q.suspended != 0 => {
                refused.push(*id);
                false
            }
            Some(q) => {
                q.running = 1;
                true
            }
            None => true,
        });
        refused
    }

    pub(crate) fn debug_run_done(&self, id: u32) {
        let Some(d) = self.debug_dev() else { return };
        let g = d.debug.lock();
        if let Some(i) = g.find(current_pid()) {
            if let Some(q) = g.b.targets[i].queue_mut(id) {
                q.running = 0;
            }
        }
    }

    /// What the debugger sent back to the runtime (SEND_RUNTIME_EVENT), taken by the target:
    /// (queue id, exception mask) pairs and the devices whose memory fault is to be signalled.
    pub(crate) fn debug_take_runtime_events(&self) -> RuntimeEvents {
        let mut qs = Vec::new();
        let mut faults = Vec::new();
        let Some(d) = self.debug_dev() else { return (qs, faults) };
        let g = d.debug.lock();
        let Some(i) = g.find(current_pid()) else { return (qs, faults) };
        let t = &mut g.b.targets[i];
        for q in t.queues.iter_mut().filter(|q| q.live != 0 && q.to_runtime != 0) {
            qs.push((q.queue_id, q.to_runtime));
            q.to_runtime = 0;
        }
        for dev in 0..MAX_GPUS {
            if t.fault_to_runtime[dev] != 0 {
                t.fault_to_runtime[dev] = 0;
                let data = <kfd_hsa_memory_exception_data as zerocopy::FromBytes>::read_from_bytes(&t.dev_fault[dev])
                    .unwrap_or_else(|_| FromZeros::new_zeroed());
                faults.push((dev, data));
            }
        }
        (qs, faults)
    }

    /// AMDKFD_IOC_DBG_TRAP. The answer is the ioctl's return value (SUSPEND / RESUME_QUEUES:
    /// the number of queues).
    pub(crate) fn ioctl_dbg_trap(&self, buf: &mut [u8]) -> Result<u32, i32> {
        let mut a: kfd_ioctl_dbg_trap_args = get(buf);
        let r = self.dbg_trap(&mut a);
        let n = std::mem::size_of::<kfd_ioctl_dbg_trap_args>();
        // SAFETY: `a` is a live repr(C) value of `n` bytes without padding (two u32s, then a
        // union of 24 bytes at offset 8), every byte initialised: it was read whole from the
        // kernel buffer and only changed member by member since.
        let bytes = unsafe { std::slice::from_raw_parts((&a as *const kfd_ioctl_dbg_trap_args).cast::<u8>(), n) };
        buf[..n].copy_from_slice(bytes);
        r
    }

    fn dbg_trap(&self, a: &mut kfd_ioctl_dbg_trap_args) -> Result<u32, i32> {
        // kfd_ioctl_set_debug_trap: never on a secondary process.
        if self.is_secondary() {
            return Err(libc::EOPNOTSUPP);
        }
        let me = current_pid();
        let pid = a.pid;
        // find_get_pid / get_pid_task / get_task_mm.
        if pid == 0 || pid > i32::MAX as u32 {
            return Err(ESRCH);
        }
        let Some((alive, tracer)) = proc_status(pid) else { return Err(ESRCH) };
        if !alive {
            return Err(ESRCH);
        }
        let op = a.op;
        let traced_by_me = pid != me && tracer == gettid();
        let b = self.board()?;
        let mut g = b.lock();
        let i = match g.find(pid) {
            Some(i) => i,
            // The caller is a KFD process by definition (it issued the ioctl).
            None if pid == me => g.claim(pid)?,
            // kfd_create_process for a ptrace child that has no KFD process yet.
            None if op == KFD_IOC_DBG_TRAP_ENABLE && traced_by_me => g.claim(pid)?,
            None => return Err(ESRCH),
        };
        if pid != me && op != KFD_IOC_DBG_TRAP_DISABLE && !traced_by_me {
            return Err(EPERM); // "PID %i is not PTRACED and cannot be debugged"
        }
        if op != KFD_IOC_DBG_TRAP_ENABLE && g.b.targets[i].enabled == 0 {
            return Err(EINVAL);
        }
        let needs_runtime = matches!(
            op,
            KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE
                | KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE
                | KFD_IOC_DBG_TRAP_SUSPEND_QUEUES
                | KFD_IOC_DBG_TRAP_RESUME_QUEUES
                | KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH
                | KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH
                | KFD_IOC_DBG_TRAP_SET_FLAGS
        );
        if needs_runtime && g.b.targets[i].runtime_state != DEBUG_RUNTIME_STATE_ENABLED {
            return Err(EPERM);
        }
        // Which member of the argument union applies is decided by `op`, as in the kernel; each
        // is plain integers, valid for any bytes.
        let u = &mut a.__anon_union_1;
        let watch_dev = match op {
            // SAFETY: as above.
            KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH => Some(unsafe { u.set_node_address_watch.gpu_id }),
            // SAFETY: as above.
            KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH => Some(unsafe { u.clear_node_address_watch.gpu_id }),
            _ => None,
        };
        let watch_dev = match watch_dev {
            Some(id) => Some(self.gpu_index(id).ok_or(ENODEV)?),
            None => None,
        };
        match op {
            KFD_IOC_DBG_TRAP_ENABLE => {
                // SAFETY: the ENABLE member (integers).
                let e = unsafe { &mut u.enable };
                let t = &mut g.b.targets[i];
                if t.enabled != 0 {
                    return Err(EALREADY);
                }
                if self.gpus.iter().any(|gpu| gpu.gfx_version.0 < 9) {
                    return Err(ENODEV); // !KFD_IS_SOC15
                }
                let copy = (e.rinfo_size as usize).min(std::mem::size_of::<kfd_runtime_info>());
                // fget(fd), in the caller's file table.
                // SAFETY: F_GETFD only inspects the descriptor table.
                if unsafe { libc::fcntl(e.dbg_fd as i32, libc::F_GETFD) } < 0 {
                    return Err(EBADF);
                }
                t.enabled = 1;
                t.fd_owner = me;
                t.dbg_fd = e.dbg_fd;
                let info = kfd_runtime_info { r_debug: t.r_debug, runtime_state: t.runtime_state, ttmp_setup: t.ttmp_setup };
                let r = if copy_to_user(e.rinfo_ptr as usize, &info.as_bytes()[..copy]).is_err() {
                    deactivate(t);
                    t.enabled = 0;
                    Err(EFAULT)
                } else {
                    t.exception_enable_mask = e.exception_mask;
                    Ok(0)
                };
                e.rinfo_size = std::mem::size_of::<kfd_runtime_info>() as u32;
                r
            }
            KFD_IOC_DBG_TRAP_DISABLE => {
                let t = &mut g.b.targets[i];
                deactivate(t);
                t.enabled = 0;
                t.fd_owner = 0;
                t.dbg_fd = 0;
                t.clean_exception_status();
                Ok(0)
            }
            KFD_IOC_DBG_TRAP_SEND_RUNTIME_EVENT => {
                // SAFETY: the SEND_RUNTIME_EVENT member.
                let s = unsafe { u.send_runtime_event };
                let t = &mut g.b.targets[i];
                let mut mask = s.exception_mask;
                if mask & ec_mask(EC_DEVICE_MEMORY_VIOLATION) != 0 {
                    let dev = self.gpu_index(s.gpu_id).ok_or(ENODEV)?;
                    t.fault_to_runtime[dev] = 1;
                    mask &= !ec_mask(EC_DEVICE_MEMORY_VIOLATION);
                }
                if mask & ec_mask(EC_PROCESS_RUNTIME) != 0 {
                    t.runtime_sema += 1;
                    mask &= !ec_mask(EC_PROCESS_RUNTIME);
                }
                if mask != 0 {
                    // kfd_send_exception_to_runtime: an unknown queue is EINVAL.
                    let q = t.queue_mut(s.queue_id).ok_or(EINVAL)?;
                    q.to_runtime |= mask;
                }
                Ok(0)
            }
            KFD_IOC_DBG_TRAP_SET_EXCEPTIONS_ENABLED => {
                // SAFETY: the SET_EXCEPTIONS_ENABLED member.
                let mask = unsafe { u.set_exceptions_enabled.exception_mask };
                let t = &mut g.b.targets[i];
                let mut found = t.exception_status;
                for q in t.queues.iter().filter(|q| q.live != 0) {
                    found |= q.exception_status;
                }
                for s in t.dev_status.iter() {
                    found |= s;
                }
                let notify = (mask & found != 0).then_some((t.fd_owner, t.dbg_fd));
                t.exception_enable_mask = mask;
                drop(g);
                if let Some((owner, fd)) = notify {
                    write_event(owner, fd);
                }
                Ok(0)
            }
            KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_OVERRIDE => {
                // SAFETY: the SET_WAVE_LAUNCH_OVERRIDE member.
                let o = unsafe { &mut u.launch_override };
                let mut supported = u32::MAX;
                for gpu in &self.gpus {
                    let (sup, mode_ok, err) = if gpu.gfx_version.0 == 9 && !per_vmid_supported(gpu.gfx_version) {
                        // gfx9 before 9.4.2: only OR-ing the address-watch bit.
                        (KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH as u32, o.override_mode == KFD_DBG_TRAP_OVERRIDE_OR, EINVAL)
                    } else {
                        let sup = (KFD_DBG_TRAP_MASK_FP_INVALID
                            | KFD_DBG_TRAP_MASK_FP_INPUT_DENORMAL
                            | KFD_DBG_TRAP_MASK_FP_DIVIDE_BY_ZERO
                            | KFD_DBG_TRAP_MASK_FP_OVERFLOW
                            | KFD_DBG_TRAP_MASK_FP_UNDERFLOW
                            | KFD_DBG_TRAP_MASK_FP_INEXACT
                            | KFD_DBG_TRAP_MASK_INT_DIVIDE_BY_ZERO
                            | KFD_DBG_TRAP_MASK_DBG_ADDRESS_WATCH
                            | KFD_DBG_TRAP_MASK_DBG_MEMORY_VIOLATION) as u32;
                        let ok = o.override_mode == KFD_DBG_TRAP_OVERRIDE_OR || o.override_mode == KFD_DBG_TRAP_OVERRIDE_REPLACE;
                        (sup, ok, EPERM)
                    };
                    supported &= sup;
                    if !mode_ok {
                        o.support_request_mask = supported;
                        return Err(err);
                    }
                }
                if o.support_request_mask & !supported != 0 {
                    o.support_request_mask = supported;
                    return Err(EACCES);
                }
                let t = &mut g.b.targets[i];
                let prev = t.override_mask;
                let req = o.support_request_mask;
                t.override_mask = if o.override_mode == KFD_DBG_TRAP_OVERRIDE_OR {
                    prev | (o.enable_mask & req)
                } else {
                    (prev & !req) | (o.enable_mask & req)
                };
                o.enable_mask = prev;
                o.support_request_mask = supported;
                Ok(0)
            }
            KFD_IOC_DBG_TRAP_SET_WAVE_LAUNCH_MODE => {
                // SAFETY: the SET_WAVE_LAUNCH_MODE member.
                let mode = unsafe { u.launch_mode.launch_mode };
                if mode != KFD_DBG_TRAP_WAVE_LAUNCH_MODE_NORMAL
                    && mode != KFD_DBG_TRAP_WAVE_LAUNCH_MODE_HALT
                    && mode != KFD_DBG_TRAP_WAVE_LAUNCH_MODE_DEBUG
                {
                    return Err(EINVAL);
                }
                g.b.targets[i].launch_mode = mode;
                Ok(0)
            }
            KFD_IOC_DBG_TRAP_SUSPEND_QUEUES => {
                // SAFETY: the SUSPEND_QUEUES member.
                let s = unsafe { u.suspend_queues };
                drop(g);
                self.suspend_queues(b, pid, s.num_queues, s.exception_mask, s.queue_array_ptr)
            }
            KFD_IOC_DBG_TRAP_RESUME_QUEUES => {
                // SAFETY: the RESUME_QUEUES member.
                let s = unsafe { u.resume_queues };
                drop(g);
                resume_queues(b, pid, s.num_queues, s.queue_array_ptr)
            }
            KFD_IOC_DBG_TRAP_SET_NODE_ADDRESS_WATCH => {
                // SAFETY: the SET_NODE_ADDRESS_WATCH member.
                let w = unsafe { &mut u.set_node_address_watch };
                let d = watch_dev.unwrap_or(0);
                let used = g.b.dev_watch_ids[d];
                let id = (0..MAX_WATCH as u32).find(|id| used & (1 << id) == 0).ok_or(ENOMEM)?;
                g.b.dev_watch_ids[d] |= 1 << id;
                let t = &mut g.b.targets[i];
                t.watch_ids[d] |= 1 << id;
                t.watches[d][id as usize] = Watch { addr: w.address, mask: w.mask, mode: w.mode };
                w.id = id;
                Ok(0)
            }
            KFD_IOC_DBG_TRAP_CLEAR_NODE_ADDRESS_WATCH => {
                // SAFETY: the CLEAR_NODE_ADDRESS_WATCH member.
                let id = unsafe { u.clear_node_address_watch.id };
                let d = watch_dev.unwrap_or(0);
                if id as usize >= MAX_WATCH || g.b.targets[i].watch_ids[d] & (1 << id) == 0 {
                    return Err(EINVAL);
                }
                g.b.targets[i].watch_ids[d] &= !(1 << id);
                g.b.targets[i].watches[d][id as usize] = Watch::default();
                g.b.dev_watch_ids[d] &= !(1 << id);
                Ok(0)
            }
            KFD_IOC_DBG_TRAP_SET_FLAGS => {
                // SAFETY: the SET_FLAGS member.
                let f = unsafe { &mut u.set_flags };
                let t = &mut g.b.targets[i];
                let prev = t.dbg_flags;
                if f.flags & KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP != 0 && self.gpus.iter().any(|gpu| !per_vmid_supported(gpu.gfx_version)) {
                    f.flags = prev;
                    return Err(EACCES);
                }
                t.dbg_flags = f.flags & KFD_DBG_TRAP_FLAG_SINGLE_MEM_OP;
                f.flags = prev;
                Ok(0)
            }
            KFD_IOC_DBG_TRAP_QUERY_DEBUG_EVENT => {
                // SAFETY: the QUERY_DEBUG_EVENT member.
                let q = unsafe { &mut u.query_debug_event };
                let t = &mut g.b.targets[i];
                let clear = q.exception_mask;
                q.exception_mask = 0;
                q.queue_id = 0;
                q.gpu_id = 0;
                let en = t.exception_enable_mask;
                // Queues, newest first (the kernel's list order), then devices, then the process.
                let mut order: Vec<usize> = (0..MAX_DBG_QUEUES).filter(|&k| t.queues[k].live != 0).collect();
                order.sort_by_key(|&k| std::cmp::Reverse(t.queues[k].seq));
                if let Some(k) = order.into_iter().find(|&k| t.queues[k].exception_status & en != 0) {
                    let dq = &mut t.queues[k];
                    q.exception_mask = dq.exception_status;
                    q.queue_id = dq.queue_id;
                    q.gpu_id = dq.gpu_id;
                    dq.exception_status &= !clear;
                } else if let Some(d) = (0..self.gpus.len().min(MAX_GPUS)).find(|&d| t.dev_status[d] & en != 0) {
                    q.exception_mask = t.dev_status[d];
                    q.gpu_id = self.gpus[d].gpu_id;
                    t.dev_status[d] &= !clear;
                } else if t.exception_status & en != 0 {
                    q.exception_mask = t.exception_status;
                    t.exception_status &= !clear;
                }
                if q.exception_mask != 0 {
                    Ok(0)
                } else {
                    Err(EAGAIN)
                }
            }
            KFD_IOC_DBG_TRAP_QUERY_EXCEPTION_INFO => {
                // SAFETY: the QUERY_EXCEPTION_INFO member.
                let q = unsafe { &mut u.query_exception_info };
                self.query_exception_info(&mut g.b.targets[i], q)
            }
            KFD_IOC_DBG_TRAP_GET_QUEUE_SNAPSHOT => {
                // SAFETY: the GET_QUEUE_SNAPSHOT member.
                let s = unsafe { &mut u.queue_snapshot };
                queue_snapshot(&mut g.b.targets[i], s)
            }
            KFD_IOC_DBG_TRAP_GET_DEVICE_SNAPSHOT => {
                // SAFETY: the GET_DEVICE_SNAPSHOT member.
                let s = unsafe { &mut u.device_snapshot };
                self.device_snapshot(&mut g.b.targets[i], s)
            }
            _ => Err(EINVAL),
        }
    }

    fn query_exception_info(&self, t: &mut Target, q: &mut kfd_ioctl_dbg_trap_query_exception_info_args) -> Result<u32, i32> {
        if q.info_ptr == 0 {
            return Err(EINVAL);
        }
        let ec = q.exception_code;
        let m = ec_mask(ec);
        let mut actual = 0u32;
        let clear = q.clear_exception != 0;
        if m & EC_MASK_QUEUE != 0 {
            let dq = t.queue_mut(q.source_id).ok_or(EINVAL)?;
            if dq.exception_status & m == 0 {
                return Err(ENODATA);
            }
            if clear {
                dq.exception_status &= !m;
            }
        } else if m & EC_MASK_DEVICE != 0 {
            let d = self.gpu_index(q.source_id).filter(|&d| d < MAX_GPUS).ok_or(EINVAL)?;
            if t.dev_status[d] & m == 0 {
                return Err(ENODATA);
            }
            if ec == EC_DEVICE_MEMORY_VIOLATION {
                let size = if t.dev_fault_valid[d] != 0 { 32 } else { 0 };
                let n = (q.info_size as usize).min(size);
                copy_to_user(q.info_ptr as usize, &t.dev_fault[d][..n]).map_err(|_| EFAULT)?;
                actual = size as u32;
                if clear {
                    t.dev_fault_valid[d] = 0;
                }
            }
            if clear {
                t.dev_status[d] &= !m;
            }
        } else if m & EC_MASK_PROCESS != 0 {
            if t.exception_status & m == 0 {
                return Err(ENODATA);
            }
            if ec == EC_PROCESS_RUNTIME {
                let info = kfd_runtime_info { r_debug: t.r_debug, runtime_state: t.runtime_state, ttmp_setup: t.ttmp_setup };
                let n = (q.info_size as usize).min(16);
                copy_to_user(q.info_ptr as usize, &info.as_bytes()[..n]).map_err(|_| EFAULT)?;
                actual = 16;
            }
            if clear {
                t.exception_status &= !m;
            }
        } else {
            return Err(EINVAL);
        }
        q.info_size = actual;
        Ok(0)
    }

    fn device_snapshot(&self, t: &mut Target, s: &mut kfd_ioctl_dbg_trap_device_snapshot_args) -> Result<u32, i32> {
        if s.snapshot_buf_ptr == 0 {
            return Err(EINVAL);
        }
        let n_pdds = self.gpus.len() as u32;
        let tmp_entry = s.entry_size as usize;
        let n = s.num_devices.min(n_pdds) as usize;
        s.num_devices = n_pdds;
        let entry_size = tmp_entry.min(std::mem::size_of::<kfd_dbg_device_info_entry>());
        s.entry_size = entry_size as u32;
        for (d, gpu) in self.gpus.iter().enumerate().take(n) {
            let text = self.tree.read_str(&format!("nodes/{}/properties", gpu.node)).unwrap_or_default();
            let p = crate::vfs::parse_properties(&text);
            let prop = |k: &str| crate::vfs::prop(&p, k).unwrap_or(0);
            let ap = gpu.apertures();
            let mut e: kfd_dbg_device_info_entry = FromZeros::new_zeroed();
            e.exception_status = t.dev_status.get(d).copied().unwrap_or(0);
            e.lds_base = ap.lds_base;
            e.lds_limit = ap.lds_limit;
            e.scratch_base = ap.scratch_base;
            e.scratch_limit = ap.scratch_limit;
            e.gpuvm_base = ap.gpuvm_base;
            e.gpuvm_limit = ap.gpuvm_limit;
            e.gpu_id = gpu.gpu_id;
            e.location_id = prop("location_id") as u32;
            e.vendor_id = prop("vendor_id") as u32;
            e.device_id = prop("device_id") as u32;
            e.revision_id = 0;
            e.subsystem_vendor_id = 0;
            e.subsystem_device_id = 0;
            e.fw_version = prop("fw_version") as u32;
            e.gfx_target_version = prop("gfx_target_version") as u32;
            e.simd_count = prop("simd_count") as u32;
            e.max_waves_per_simd = prop("max_waves_per_simd") as u32;
            e.array_count = prop("array_count") as u32;
            e.simd_arrays_per_engine = prop("simd_arrays_per_engine") as u32;
            e.num_xcc = prop("num_xcc").max(1) as u32;
            e.capability = prop("capability") as u32;
            e.debug_prop = prop("debug_prop") as u32;
            if s.exception_mask != 0 {
                if let Some(st) = t.dev_status.get_mut(d) {
                    *st &= !s.exception_mask;
                }
            }
            let at = (s.snapshot_buf_ptr as usize).wrapping_add(d.wrapping_mul(tmp_entry));
            copy_to_user(at, &e.as_bytes()[..entry_size]).map_err(|_| EFAULT)?;
        }
        Ok(0)
    }

    /// suspend_queues: every queue of the target named in the array is suspended (a queue
    /// still flagged EC_QUEUE_NEW is skipped, as the kernel defers new queues); the answer is
    /// the number suspended, the array gets KFD_DBG_QUEUE_INVALID_MASK on ids that were not,
    /// and KFD_DBG_QUEUE_ERROR_MASK where the preemption did not finish in time.
    fn suspend_queues(&self, b: &BoardMap, pid: u32, n: u32, clear: u64, ptr: u64) -> Result<u32, i32> {
        let mut ids = read_ids(n, ptr)?;
        for id in ids.iter_mut() {
            *id |= KFD_DBG_QUEUE_INVALID_MASK as u32;
        }
        let mut suspended = Vec::new();
        {
            let g = b.lock();
            let i = g.find(pid).ok_or(ESRCH)?;
            let t = &mut g.b.targets[i];
            for q in t.queues.iter_mut().filter(|q| q.live != 0) {
                let Some(k) = ids.iter().position(|id| id & !(KFD_DBG_QUEUE_INVALID_MASK as u32) == q.queue_id) else { continue };
                if q.suspended == 0 && q.exception_status & ec_mask(EC_QUEUE_NEW) != 0 {
                    continue; // -EBUSY: stays invalid
                }
                q.suspended = 1;
                ids[k] &= !(KFD_DBG_QUEUE_INVALID_MASK as u32);
                suspended.push((k, q.queue_id));
            }
        }
        // Preempt: wait for a run of each queue under way in the target to end.
        let deadline = Instant::now() + PREEMPT_TIMEOUT;
        let mut total = 0u32;
        for (k, qid) in suspended {
            loop {
                let running = {
                    let g = b.lock();
                    let Some(i) = g.find(pid) else { break };
                    let t = &mut g.b.targets[i];
                    match t.queue_mut(qid) {
                        Some(q) if q.running != 0 => true,
                        Some(q) => {
                            q.exception_status &= !clear;
                            false
                        }
                        None => false,
                    }
                };
                if !running {
                    total += 1;
                    break;
                }
                if Instant::now() > deadline {
                    ids[k] |= KFD_DBG_QUEUE_ERROR_MASK as u32;
                    break;
                }
                std::thread::sleep(Duration::from_micros(100));
            }
        }
        let _ = copy_to_user(ptr as usize, ids.as_bytes());
        Ok(total)
    }
}

fn read_ids(n: u32, ptr: u64) -> Result<Vec<u32>, i32> {
    if u64::from(n) * 4 > crate::sys::KMALLOC_MAX {
        return Err(ENOMEM);
    }
    let mut ids = vec![0u32; n as usize];
    copy_from_user(ids.as_mut_bytes(), ptr as usize).map_err(|_| EFAULT)?;
    Ok(ids)
}

/// resume_queues: a NULL array resumes every queue; otherwise each named queue that is
/// suspended resumes, and one that is not gets KFD_DBG_QUEUE_ERROR_MASK (and ends the walk, as
/// the kernel's loop breaks on it).
fn resume_queues(b: &BoardMap, pid: u32, n: u32, ptr: u64) -> Result<u32, i32> {
    let mut ids = if ptr != 0 { Some(read_ids(n, ptr)?) } else { None };
    if let Some(ids) = ids.as_mut() {
        for id in ids.iter_mut() {
            *id |= KFD_DBG_QUEUE_INVALID_MASK as u32;
        }
    }
    let mut total = 0;
    {
        let g = b.lock();
        let i = g.find(pid).ok_or(ESRCH)?;
        total += resume_in(&mut g.b.targets[i], ids.as_deref_mut());
    }
    if let Some(ids) = ids {
        let _ = copy_to_user(ptr as usize, ids.as_bytes());
    }
    Ok(total)
}

fn resume_in(t: &mut Target, mut ids: Option<&mut [u32]>) -> u32 {
    let mut total = 0;
    for q in t.queues.iter_mut().filter(|q| q.live != 0) {
        let k = match ids.as_deref() {
            Some(ids) => match ids.iter().position(|id| id & !(KFD_DBG_QUEUE_INVALID_MASK as u32) == q.queue_id) {
                Some(k) => Some(k),
                None => continue,
            },
            None => None,
        };
        if q.suspended == 0 {
            if let (Some(ids), Some(k)) = (ids.as_deref_mut(), k) {
                ids[k] |= KFD_DBG_QUEUE_ERROR_MASK as u32;
                break;
            }
            continue;
        }
        q.suspended = 0;
        if let (Some(ids), Some(k)) = (ids.as_deref_mut(), k) {
            ids[k] &= !(KFD_DBG_QUEUE_INVALID_MASK as u32);
        }
        total += 1;
    }
    total
}

/// kfd_dbg_trap_deactivate: queues resumed, watch points, launch mode and flags cleared.
fn deactivate(t: &mut Target) {
    resume_in(t, None);
    t.watches = [[Watch::default(); MAX_WATCH]; MAX_GPUS];
    t.launch_mode = 0;
    t.dbg_flags = 0;
}

/// pqm_get_queue_snapshot.
fn queue_snapshot(t: &mut Target, s: &mut kfd_ioctl_dbg_trap_queue_snapshot_args) -> Result<u32, i32> {
    let tmp_entry = s.entry_size as usize;
    let tmp_n = s.num_queues;
    s.num_queues = 0;
    if tmp_entry == 0 {
        return Err(EINVAL);
    }
    let entry_size = tmp_entry.min(std::mem::size_of::<kfd_queue_snapshot_entry>());
    s.entry_size = entry_size as u32;
    let mut order: Vec<usize> = (0..MAX_DBG_QUEUES).filter(|&k| t.queues[k].live != 0).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(t.queues[k].seq));
    let mut at = s.snapshot_buf_ptr as usize;
    for k in order {
        if s.num_queues < tmp_n {
            let q = &mut t.queues[k];
            let mut e: kfd_queue_snapshot_entry = FromZeros::new_zeroed();
            e.exception_status = q.exception_status;
            e.ring_base_address = q.ring_base;
            e.write_pointer_address = q.wptr;
            e.read_pointer_address = q.rptr;
            e.ctx_save_restore_address = q.ctx_addr;
            e.queue_id = q.queue_id;
            e.gpu_id = q.gpu_id;
            e.ring_size = q.ring_size;
            e.queue_type = q.queue_type;
            e.ctx_save_restore_area_size = q.ctx_size;
            q.exception_status &= !s.exception_mask;
            copy_to_user(at, &e.as_bytes()[..entry_size]).map_err(|_| EFAULT)?;
            at = at.wrapping_add(tmp_entry);
        }
        s.num_queues += 1;
    }
    Ok(0)
}

/// kfd_dbg_ev_raise on a locked target: record, and say whom to tell (the event file) when the
/// exception is enabled; `None` when it is not (the runtime is told instead).
fn raise_locked(t: &mut Target, mask: u64, src: Source, fault: Option<&kfd_hsa_memory_exception_data>) -> Option<(u32, u32)> {
    if t.enabled == 0 {
        return None;
    }
    if mask & EC_MASK_DEVICE != 0 {
        if let Source::Device(d) = src {
            if d < MAX_GPUS {
                t.dev_status[d] |= mask & EC_MASK_DEVICE;
                if let Some(f) = fault {
                    if t.dev_fault_valid[d] == 0 {
                        t.dev_fault[d].copy_from_slice(f.as_bytes());
                        t.dev_fault_valid[d] = 1;
                    }
                }
            }
        }
    } else if mask & EC_MASK_PROCESS != 0 {
        t.exception_status |= mask & EC_MASK_PROCESS;
    } else if let Source::Queue(id) = src {
        if let Some(q) = t.queue_mut(id) {
            q.exception_status |= mask;
        }
    }
    (t.exception_enable_mask & mask != 0).then_some((t.fd_owner, t.dbg_fd))
}

/// A queue's debugger view at creation.
#[allow(clippy::too_many_arguments)]
pub(crate) fn new_queue(
    queue_id: u32,
    gpu_id: u32,
    queue_type: u32,
    ring_base: u64,
    ring_size: u64,
    wptr: u64,
    rptr: u64,
    ctx_addr: u64,
    ctx_size: u64,
) -> DbgQueue {
    DbgQueue {
        queue_id,
        gpu_id,
        queue_type,
        ring_base,
        ring_size: ring_size as u32,
        wptr,
        rptr,
        ctx_addr,
        ctx_size: ctx_size as u32,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ec_masks_match_the_header() {
        // kfd_ioctl.h: the queue, device and process classes.
        assert_eq!(ec_mask(EC_QUEUE_NEW), 1 << 30);
        assert_ne!(ec_mask(EC_QUEUE_NEW) & EC_MASK_QUEUE, 0);
        assert_ne!(ec_mask(EC_DEVICE_MEMORY_VIOLATION) & EC_MASK_DEVICE, 0);
        assert_ne!(ec_mask(EC_PROCESS_RUNTIME) & EC_MASK_PROCESS, 0);
        assert_eq!(ec_mask(0), 0);
    }

    #[test]
    fn per_vmid_by_gc_version() {
        assert!(!per_vmid_supported((9, 0, 0))); // gfx900 (mi25)
        assert!(per_vmid_supported((9, 0, 10))); // gfx90a (mi210): GC 9.4.2
        assert!(per_vmid_supported((9, 4, 2))); // gfx942 (mi300x): GC 9.4.3
        assert!(per_vmid_supported((11, 0, 0)));
        assert!(!per_vmid_supported((10, 3, 0)));
    }

    #[test]
    fn resume_marks_queues_that_were_not_suspended() {
        let b = BoardMap::create().unwrap();
        let mut g = b.lock();
        let i = g.claim(4242).unwrap();
        let t = &mut g.b.targets[i];
        t.queues[0] = DbgQueue { live: 1, queue_id: 3, suspended: 1, ..Default::default() };
        t.queues[1] = DbgQueue { live: 1, queue_id: 5, suspended: 0, ..Default::default() };
        let inv = KFD_DBG_QUEUE_INVALID_MASK as u32;
        let mut ids = [3 | inv, 5 | inv, 9 | inv];
        assert_eq!(resume_in(t, Some(&mut ids)), 1);
        assert_eq!(ids[0], 3, "resumed: valid");
        assert_eq!(ids[1], 5 | inv | KFD_DBG_QUEUE_ERROR_MASK as u32, "not suspended: error");
        assert_eq!(ids[2], 9 | inv, "unknown: invalid");
        assert_eq!(t.queues[0].suspended, 0);
    }

    #[test]
    fn snapshot_negotiates_sizes_and_lists_newest_first() {
        let b = BoardMap::create().unwrap();
        let mut g = b.lock();
        let i = g.claim(4243).unwrap();
        let t = &mut g.b.targets[i];
        t.queues[0] = DbgQueue { live: 1, queue_id: 1, seq: 1, exception_status: 4, ..Default::default() };
        t.queues[1] = DbgQueue { live: 1, queue_id: 2, seq: 2, ..Default::default() };
        // Zero entry size: EINVAL, count 0.
        let mut s = kfd_ioctl_dbg_trap_queue_snapshot_args { exception_mask: 0, snapshot_buf_ptr: 0, num_queues: 5, entry_size: 0 };
        assert_eq!(queue_snapshot(t, &mut s), Err(EINVAL));
        assert_eq!(s.num_queues, 0);
        // No room: the count of queues, nothing written.
        let mut s = kfd_ioctl_dbg_trap_queue_snapshot_args { exception_mask: 0, snapshot_buf_ptr: 0, num_queues: 0, entry_size: 64 };
        assert_eq!(queue_snapshot(t, &mut s), Ok(0));
        assert_eq!(s.num_queues, 2);
        // A larger entry than the kernel's: entry_size answers 64, the stride stays the caller's.
        let mut buf = vec![0xffu8; 2 * 80];
        let mut s = kfd_ioctl_dbg_trap_queue_snapshot_args {
            exception_mask: 4,
            snapshot_buf_ptr: buf.as_mut_ptr() as u64,
            num_queues: 2,
            entry_size: 80,
        };
        assert_eq!(queue_snapshot(t, &mut s), Ok(0));
        assert_eq!(s.entry_size, 64);
        assert_eq!(s.num_queues, 2);
        let id_at = |o: usize| u32::from_le_bytes(buf[o + 40..o + 44].try_into().unwrap());
        assert_eq!((id_at(0), id_at(80)), (2, 1), "newest first");
        assert_eq!(buf[64], 0xff, "bytes past the kernel's entry untouched");
        assert_eq!(t.queues[0].exception_status, 0, "cleared by the mask");
    }
}
