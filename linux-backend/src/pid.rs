//! The calling process's id without a syscall per call.
//!
//! Every KFD call of the thunk and of the software model checks the caller's pid (fork
//! detection: a child must not use its parent's KFD state), and a `getpid` system call each time
//! was a measurable part of the event round trip (six per SetEvent + satisfied WaitOnEvent).
//! glibc stopped caching the pid (2.25) because a child made by a raw `clone` would see its
//! parent's; we cache it anyway, but only with a `pthread_atfork` child handler registered
//! first, which refreshes the cache in every child `fork()` makes. Not covered (and not
//! supported callers of the thunk): a child of a raw `clone(2)` system call or of glibc's
//! `_Fork()`, which run no fork handlers, and a `vfork` child, which may only exec or exit.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

/// The cached pid; 0 until the first call (and never a real pid).
static PID: AtomicU32 = AtomicU32::new(0);

fn getpid() -> u32 {
    rustix::process::getpid().as_raw_nonzero().get() as u32
}

/// Runs in the child, in the thread that called fork(), before fork() returns there: nothing
/// else runs in the child yet. getpid is async-signal-safe.
extern "C" fn refresh_in_child() {
    PID.store(getpid(), Ordering::Relaxed);
}

/// The calling process's id (`getpid`), cached. Fork-safe: see the module comment.
#[inline]
pub fn pid() -> u32 {
    match PID.load(Ordering::Relaxed) {
        0 => first_pid(),
        p => p,
    }
}

/// Handler registration: 0 not yet, 1 under way (in some thread), 2 done.
static REGISTERED: AtomicU8 = AtomicU8::new(0);

#[cold]
fn first_pid() -> u32 {
    // The cache is only filled once the child handler is registered, so no child can inherit a
    // filled cache without also running the handler. Not a `Once`: a child forked while another
    // thread is inside `call_once` would wait forever on it; here such a child sees 1 and simply
    // never caches. A fork racing with the store below is harmless: the child inherits 0 or gets
    // the handler's value, and the storing thread does not exist in the child.
    let mut state = REGISTERED.load(Ordering::Acquire);
    if state == 0 && REGISTERED.compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire).is_ok() {
        // SAFETY: registers a plain function that only stores an atomic.
        unsafe { libc::pthread_atfork(None, None, Some(refresh_in_child)) };
        REGISTERED.store(2, Ordering::Release);
        state = 2;
    }
    let p = getpid();
    if state == 2 {
        PID.store(p, Ordering::Relaxed);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_getpid() {
        assert_eq!(pid(), getpid());
        assert_eq!(pid(), std::process::id());
    }

    #[test]
    fn a_forked_child_sees_its_own_pid() {
        let parent = pid();
        // SAFETY: the child only loads atomics, makes getpid system calls and _exits (all
        // async-signal-safe), whatever other test threads were doing at the fork.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            let ok = pid() == getpid() && pid() != parent;
            // SAFETY: leaves the child at once, without running the parent's atexit handlers.
            unsafe { libc::_exit(if ok { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: waits for the child made above; `status` is a live out-parameter.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child saw a stale pid: {status:#x}");
        assert_eq!(pid(), parent);
    }
}
