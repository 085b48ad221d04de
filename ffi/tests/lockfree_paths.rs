//! The exports that run without the thunk lock (ffi/src/published.rs) against the events that
//! change what they read: CloseKFD / OpenKFD while other threads call SetEvent, ResetEvent,
//! QueryEventState, a polling WaitOnEvent and GetVersion in a loop (the port they use is never
//! freed under them, and each answer is one a caller could get before or after the close), and
//! a forked child, whose lock-free calls say KERNEL_IO_CHANNEL_NOT_OPENED until it opens again.

use hsakmt_core::abi::hsakmt::*;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use zerocopy::FromZeros;

const OK: HSAKMT_STATUS = HSAKMT_STATUS_SUCCESS;
const NOT_OPENED: HSAKMT_STATUS = HSAKMT_STATUS_KERNEL_IO_CHANNEL_NOT_OPENED;

fn create() -> *mut HsaEvent {
    let mut d = HsaEventDescriptor::new_zeroed();
    d.EventType = HSA_EVENTTYPE_SIGNAL;
    let mut e = std::ptr::null_mut();
    // SAFETY: live descriptor and out-pointer.
    assert_eq!(unsafe { hsakmt::hsaKmtCreateEvent(&mut d, true, false, &mut e) }, OK);
    e
}

#[derive(Clone, Copy)]
struct Ev(*mut HsaEvent);
// SAFETY: an opaque handle; the thunk never dereferences it.
unsafe impl Send for Ev {}

#[test]
fn close_and_reopen_under_lock_free_callers_then_fork() {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    hsakmt::safe::open().expect("open the model");
    hsakmt::safe::acquire_system_properties().unwrap();
    let ev = Ev(create());
    let stop = Arc::new(AtomicBool::new(false));
    let calls = Arc::new(AtomicUsize::new(0));
    let callers: Vec<_> = (0..2)
        .map(|t| {
            let (stop, calls) = (stop.clone(), calls.clone());
            std::thread::spawn(move || {
                let ev = ev;
                let mut v = HsaVersionInfo::new_zeroed();
                while !stop.load(Ordering::Relaxed) {
                    // SAFETY: `ev` is only compared by address; out-pointers are live.
                    let st = unsafe {
                        match calls.fetch_add(1, Ordering::Relaxed) % 5 {
                            0 => hsakmt::hsaKmtSetEvent(ev.0),
                            1 => hsakmt::hsaKmtResetEvent(ev.0),
                            2 => hsakmt::hsaKmtQueryEventState(ev.0),
                            3 => hsakmt::hsaKmtWaitOnEvent(ev.0, 0),
                            _ => hsakmt::hsaKmtGetVersion(&mut v),
                        }
                    };
                    // Open with the event: done; closed: not opened; reopened: the old event is
                    // not one of the new context's.
                    assert!(
                        [OK, HSAKMT_STATUS_WAIT_TIMEOUT, NOT_OPENED, HSAKMT_STATUS_INVALID_HANDLE].contains(&st),
                        "thread {t}: status {st}"
                    );
                }
            })
        })
        .collect();
    for _ in 0..50 {
        hsakmt::safe::close().unwrap();
        hsakmt::safe::open().unwrap();
        hsakmt::safe::acquire_system_properties().unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    for c in callers {
        c.join().unwrap();
    }
    assert!(calls.load(Ordering::Relaxed) > 100);
    // SAFETY: compared by address only.
    assert_eq!(unsafe { hsakmt::hsaKmtQueryEventState(ev.0) }, HSAKMT_STATUS_INVALID_HANDLE, "the closed context's event is gone");

    // A forked child: the parent's open state is not its own.
    let ev = create();
    // SAFETY: fork in a test: the child only calls the thunk and exits.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        let mut v = HsaVersionInfo::new_zeroed();
        // SAFETY: live out-pointer / an address compared only.
        let ok = unsafe {
            hsakmt::hsaKmtGetVersion(&mut v) == NOT_OPENED
                && hsakmt::hsaKmtQueryEventState(ev) == NOT_OPENED
                && hsakmt::hsaKmtSetEvent(ev) == NOT_OPENED
                && hsakmt::hsaKmtWaitOnEvent(ev, 0) == NOT_OPENED
        };
        let reopened = hsakmt::safe::open().is_ok() && hsakmt::safe::acquire_system_properties().is_ok();
        // SAFETY: as above.
        let fresh = reopened
            && unsafe { hsakmt::hsaKmtQueryEventState(ev) == HSAKMT_STATUS_INVALID_HANDLE && hsakmt::hsaKmtGetVersion(&mut v) == OK };
        let mine = create();
        // SAFETY: the child's own event.
        let works = unsafe { hsakmt::hsaKmtSetEvent(mine) == OK && hsakmt::hsaKmtWaitOnEvent(mine, 0) == OK };
        // SAFETY: exit the child without running the parent's test harness.
        unsafe { libc::_exit(if ok && fresh && works { 0 } else { 1 }) };
    }
    let mut status = 0;
    // SAFETY: our child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, "child: {status:#x}");
    // SAFETY: the parent's event is untouched by the child.
    unsafe {
        assert_eq!(hsakmt::hsaKmtSetEvent(ev), OK);
        assert_eq!(hsakmt::hsaKmtWaitOnEvent(ev, 0), OK);
        assert_eq!(hsakmt::hsaKmtDestroyEvent(ev), OK);
    }
    hsakmt::safe::close().unwrap();
}
