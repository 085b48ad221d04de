//! Event exports: hsaKmtCreateEvent, DestroyEvent, SetEvent, ResetEvent, QueryEventState,
//! WaitOnEvent(_Ext), WaitOnMultipleEvents(_Ext).
//!
//! Upstream's statuses: the open check first; a NULL event or event array is INVALID_HANDLE
//! (upstream's answer; it would crash on a NULL descriptor or a NULL array element, which are
//! INVALID_PARAMETER and INVALID_HANDLE here); setting or resetting a system-defined event is
//! ERROR; a KFD failure is ERROR; a timeout WAIT_TIMEOUT. Ours: an `HsaEvent*` the thunk does
//! not know (never created, or destroyed and freed) is INVALID_HANDLE, found by address and
//! never dereferenced; a wait on zero events is INVALID_PARAMETER; a wait on more events than
//! the KFD can take (`event::MAX_WAIT_EVENTS`) is NO_MEMORY before anything is allocated or
//! read (upstream's calloc of 0xFFFFFFFF entries fails with that status; for counts its calloc
//! serves, upstream reads every pointer and the KFD's ENOMEM makes it ERROR).
//!
//! Waits take what they need under the thunk lock (each event's KFD id and type, the port),
//! release it, and block in the KFD, so other threads can set events meanwhile. Waits on up to
//! 16 events, SetEvent, ResetEvent and QueryEventState allocate nothing.

use crate::boundary::{guard, out};
use crate::global::{pid, thunk, with_ctx, with_ctx_mut};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::event::{self, EventData, EventDesc};
use hsakmt_core::{KmtResult, Status};

/// Waits on up to this many events keep their arrays on the stack.
const STACK_EVENTS: usize = 16;

/// # Safety
/// `EventDesc` must be NULL or readable; `Event` NULL or writable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCreateEvent(
    EventDesc: *mut HsaEventDescriptor,
    ManualReset: bool,
    IsSignaled: bool,
    Event: *mut *mut HsaEvent,
) -> HSAKMT_STATUS {
    guard("hsaKmtCreateEvent", || {
        with_ctx(|_| Ok(()))?;
        // SAFETY: the C caller's pointer contract.
        let d = unsafe { EventDesc.as_ref() }.ok_or(Status::INVALID_PARAMETER)?;
        // SAFETY: the C caller's pointer contract.
        let out = unsafe { out(Event) }?;
        // SAFETY: both members of the SyncVar union are 8 bytes of plain data.
        let user_data = unsafe { d.SyncVar.SyncVar.UserDataPtrValue };
        let desc =
            EventDesc { event_type: d.EventType, node_id: d.NodeId, sync_user_data: user_data, sync_var_size: d.SyncVar.SyncVarSize };
        match with_ctx_mut(|c| c.create_event(&desc, ManualReset, IsSignaled)) {
            Ok(addr) => {
                *out = addr as *mut HsaEvent;
                Ok(())
            }
            Err(s) => {
                *out = std::ptr::null_mut();
                Err(s)
            }
        }
    })
}

/// # Safety
/// `Event` is looked up by address, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDestroyEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    guard("hsaKmtDestroyEvent", || with_ctx_mut(|c| c.destroy_event(handle(Event)?)))
}

/// # Safety
/// `Event` is looked up by address, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    guard("hsaKmtSetEvent", || set_reset(Event, true))
}

/// # Safety
/// `Event` is looked up by address, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtResetEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    guard("hsaKmtResetEvent", || set_reset(Event, false))
}

/// Set or reset: the event's id and the port under the thunk lock, the ioctl without it (as
/// upstream, which takes no lock here), so the thread this wakes never waits for our lock when
/// it answers at once (a ping-pong of events).
fn set_reset(ev: *mut HsaEvent, set: bool) -> KmtResult<()> {
    let (id, kfd) = with_ctx(|c| Ok((c.event_signal_target(handle(ev)?)?, c.kfd_shared())))?;
    event::set_reset(&*kfd, set, id)
}

/// # Safety
/// `Event` is looked up by address, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueryEventState(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    guard("hsaKmtQueryEventState", || with_ctx(|c| c.query_event_state(handle(Event)?)))
}

/// # Safety
/// `Event` is looked up by address, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnEvent(Event: *mut HsaEvent, Milliseconds: HSAuint32) -> HSAKMT_STATUS {
    // SAFETY: a one-element array on the stack; no age array.
    unsafe { wait_one("hsaKmtWaitOnEvent", Event, Milliseconds, std::ptr::null_mut()) }
}

/// # Safety
/// `event_age` must be NULL or valid for reads and writes of one `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnEvent_Ext(Event: *mut HsaEvent, Milliseconds: HSAuint32, event_age: *mut u64) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { wait_one("hsaKmtWaitOnEvent_Ext", Event, Milliseconds, event_age) }
}

/// # Safety
/// `Events` must be NULL or hold `NumEvents` readable pointers.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnMultipleEvents(
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { wait_multiple("hsaKmtWaitOnMultipleEvents", Events, NumEvents, WaitOnAll, Milliseconds, std::ptr::null_mut()) }
}

/// # Safety
/// `Events` must be NULL or hold `NumEvents` readable pointers; `event_age` NULL or
/// `NumEvents` readable and writable `u64`s.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnMultipleEvents_Ext(
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
    event_age: *mut u64,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { wait_multiple("hsaKmtWaitOnMultipleEvents_Ext", Events, NumEvents, WaitOnAll, Milliseconds, event_age) }
}

/// An event pointer as the context's key; NULL is INVALID_HANDLE.
fn handle(ev: *mut HsaEvent) -> KmtResult<usize> {
    if ev.is_null() {
        Err(Status::INVALID_HANDLE)
    } else {
        Ok(ev as usize)
    }
}

/// # Safety
/// As hsaKmtWaitOnEvent_Ext.
unsafe fn wait_one(name: &'static str, ev: *mut HsaEvent, ms: u32, age: *mut u64) -> HSAKMT_STATUS {
    if ev.is_null() {
        return Status::INVALID_HANDLE.0; // upstream checks this before the open check
    }
    let mut one = [ev];
    // SAFETY: `one` is a live one-element array; `age` per the caller's contract.
    unsafe { wait_multiple(name, one.as_mut_ptr(), 1, true, ms, age) }
}

/// # Safety
/// As hsaKmtWaitOnMultipleEvents_Ext.
unsafe fn wait_multiple(name: &'static str, evs: *mut *mut HsaEvent, n: u32, all: bool, ms: u32, ages: *mut u64) -> HSAKMT_STATUS {
    guard(name, || {
        // One thunk lock for the open check and the entries (a second lock and pid check per
        // wait showed in the wake round trip).
        let t = thunk();
        let c = t.ctx(pid())?;
        if evs.is_null() {
            return Err(Status::INVALID_HANDLE);
        }
        if n == 0 {
            return Err(Status::INVALID_PARAMETER);
        }
        let n = n as usize;
        // More than the KFD can wait on: refused before anything is allocated or read.
        if n > event::MAX_WAIT_EVENTS {
            return Err(Status::NO_MEMORY);
        }
        // SAFETY: the C caller promises `n` readable pointers.
        let ptrs = unsafe { std::slice::from_raw_parts(evs, n) };
        let mut ages = if ages.is_null() {
            None
        } else {
            // SAFETY: the C caller promises `n` readable and writable ages.
            Some(unsafe { std::slice::from_raw_parts_mut(ages, n) })
        };
        let mut data_stack = [EventData::default(); STACK_EVENTS];
        let mut types_stack = [0u32; STACK_EVENTS];
        let (mut data_heap, mut types_heap);
        let (data, types): (&mut [EventData], &mut [u32]) = if n <= STACK_EVENTS {
            (&mut data_stack[..n], &mut types_stack[..n])
        } else {
            data_heap = vec![EventData::default(); n];
            types_heap = vec![0u32; n];
            (&mut data_heap, &mut types_heap)
        };
        // Under the lock: ids, types and the port. Then wait without it.
        for (i, (d, ty)) in data.iter_mut().zip(types.iter_mut()).enumerate() {
            let (id, event_type) = c.event_wait_entry(handle(ptrs[i])?)?;
            let age = match &ages {
                Some(a) if event_type == HSA_EVENTTYPE_SIGNAL => a[i],
                _ => 0,
            };
            *d = EventData::new(id, age);
            *ty = event_type;
        }
        let kfd = c.kfd_shared();
        drop(t);
        let mut result = event::wait(&*kfd, data, all, ms);
        drop(kfd);
        // Exception data only exists for memory and HW-exception events: skip the lock otherwise.
        if result.is_ok() && types.iter().any(|&t| t == HSA_EVENTTYPE_MEMORY || t == HSA_EVENTTYPE_HW_EXCEPTION) {
            result = with_ctx_mut(|c| c.finish_event_wait(ptrs.iter().map(|&p| p as usize), data));
        }
        if let Some(a) = ages.as_mut() {
            for ((age, d), ty) in a.iter_mut().zip(data.iter()).zip(types.iter()) {
                if *ty == HSA_EVENTTYPE_SIGNAL {
                    *age = d.last_event_age();
                }
            }
        }
        result
    })
}
