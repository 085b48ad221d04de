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
//! The calls a runtime makes per dispatch take no thunk lock: each event's KFD id and type come
//! from the published event index (`crate::published`, kept by CreateEvent and DestroyEvent
//! under the lock), the port from the published port. QueryEventState is an index lookup;
//! SetEvent and ResetEvent one ioctl; a wait blocks in the KFD with a reference of its own to
//! the port (a poll, with a zero timeout, needs none), so other threads set events meanwhile.
//! Waits on up to 16 events, SetEvent, ResetEvent and QueryEventState allocate nothing.

use crate::boundary::{guard, guard_pure, out};
use crate::contexts::{is_primary, select};
use crate::global::{with_ctx, with_ctx_mut};
use crate::published::{self, Lookup, EVENTS};
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::context::Context;
use hsakmt_core::event::{self, is_system_event, EventData, EventDesc};
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
        // One locked section: the open check first, then the arguments (upstream's order).
        with_ctx_mut(|c| {
            // SAFETY: the C caller's pointer contract.
            let d = unsafe { EventDesc.as_ref() }.ok_or(Status::INVALID_PARAMETER)?;
            // SAFETY: the C caller's pointer contract.
            let out = unsafe { out(Event) }?;
            // SAFETY: both members of the SyncVar union are 8 bytes of plain data.
            let user_data = unsafe { d.SyncVar.SyncVar.UserDataPtrValue };
            let desc =
                EventDesc { event_type: d.EventType, node_id: d.NodeId, sync_user_data: user_data, sync_var_size: d.SyncVar.SyncVarSize };
            match c.create_event(&desc, ManualReset, IsSignaled) {
                Ok(addr) => {
                    let (id, ty) = c.event_wait_entry(addr)?;
                    // The published index is the primary context's.
                    if c.is_primary() {
                        EVENTS.insert(addr, id, ty);
                    }
                    *out = addr as *mut HsaEvent;
                    Ok(())
                }
                Err(s) => {
                    *out = std::ptr::null_mut();
                    Err(s)
                }
            }
        })
    })
}

/// # Safety
/// `Event` is looked up by address, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDestroyEvent(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    guard("hsaKmtDestroyEvent", || {
        with_ctx_mut(|c| {
            let ev = handle(Event)?;
            c.destroy_event(ev)?;
            if c.is_primary() {
                EVENTS.remove(ev);
            }
            Ok(())
        })
    })
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

/// Set or reset, without the thunk lock (upstream takes none here either): the open check, the
/// event's id from the index, one ioctl on the published port. A thread this wakes never waits
/// for a lock of ours when it answers at once (a ping-pong of events).
fn set_reset(ev: *mut HsaEvent, set: bool) -> KmtResult<()> {
    published::check_open()?;
    let epoch = published::epoch();
    let (id, ty) = entry(ev)?;
    if is_system_event(ty) {
        return Err(Status::ERROR);
    }
    published::with_port_at(epoch, |kfd| event::set_reset(kfd, set, id))?
}

/// # Safety
/// `Event` is looked up by address, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueryEventState(Event: *mut HsaEvent) -> HSAKMT_STATUS {
    // Upstream only checks the event: here an index lookup, no lock and no system call.
    guard_pure("hsaKmtQueryEventState", || {
        published::check_open()?;
        entry(Event).map(|_| ())
    })
}

/// # Safety
/// `Event` is looked up by address, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnEvent(Event: *mut HsaEvent, Milliseconds: HSAuint32) -> HSAKMT_STATUS {
    // SAFETY: a one-element array on the stack; no age array.
    unsafe { wait_one("hsaKmtWaitOnEvent", false, Event, Milliseconds, std::ptr::null_mut()) }
}

/// # Safety
/// `event_age` must be NULL or valid for reads and writes of one `u64`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnEvent_Ext(Event: *mut HsaEvent, Milliseconds: HSAuint32, event_age: *mut u64) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { wait_one("hsaKmtWaitOnEvent_Ext", false, Event, Milliseconds, event_age) }
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
    unsafe { wait_multiple("hsaKmtWaitOnMultipleEvents", false, Events, NumEvents, WaitOnAll, Milliseconds, std::ptr::null_mut()) }
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
    unsafe { wait_multiple("hsaKmtWaitOnMultipleEvents_Ext", false, Events, NumEvents, WaitOnAll, Milliseconds, event_age) }
}

/// An event pointer as the context's key; NULL is INVALID_HANDLE.
fn handle(ev: *mut HsaEvent) -> KmtResult<usize> {
    if ev.is_null() {
        Err(Status::INVALID_HANDLE)
    } else {
        Ok(ev as usize)
    }
}

/// The KFD id and type of the event at `ev` (the caller has checked that the thunk is open):
/// from the index without a lock; from the context if the index does not hold every event.
/// NULL, foreign or destroyed: INVALID_HANDLE.
#[inline]
fn entry(ev: *mut HsaEvent) -> KmtResult<(u32, u32)> {
    let h = handle(ev)?;
    match EVENTS.lookup(h) {
        Lookup::Live(id, ty) => Ok((id, ty)),
        Lookup::Unknown => Err(Status::INVALID_HANDLE),
        Lookup::Ask => with_ctx(|c| c.event_wait_entry(h)),
    }
}

/// # Safety
/// As hsaKmtWaitOnEvent_Ext.
unsafe fn wait_one(name: &'static str, secondary: bool, ev: *mut HsaEvent, ms: u32, age: *mut u64) -> HSAKMT_STATUS {
    if ev.is_null() {
        return Status::INVALID_HANDLE.0; // upstream checks this before the open check
    }
    let mut one = [ev];
    // SAFETY: `one` is a live one-element array; `age` per the caller's contract.
    unsafe { wait_multiple(name, secondary, one.as_mut_ptr(), 1, true, ms, age) }
}

/// `secondary`: the events are a secondary context's (selected by the caller), looked up in it
/// under the lock; otherwise the primary's, from the published index.
///
/// # Safety
/// As hsaKmtWaitOnMultipleEvents_Ext.
unsafe fn wait_multiple(
    name: &'static str,
    secondary: bool,
    evs: *mut *mut HsaEvent,
    n: u32,
    all: bool,
    ms: u32,
    ages: *mut u64,
) -> HSAKMT_STATUS {
    guard(name, || {
        // No thunk lock: the open check and the entries are published; a wait that may
        // sleep holds a reference of its own to the port.
        published::check_open()?;
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
        // The ids below are used only on the port of the context they were looked up in.
        let epoch = published::epoch();
        // SAFETY: the C caller promises `n` readable pointers.
        let ptrs = unsafe { std::slice::from_raw_parts(evs, n) };
        let mut ages = if ages.is_null() {
            None
        } else {
            // SAFETY: the C caller promises `n` readable and writable ages.
            Some(unsafe { std::slice::from_raw_parts_mut(ages, n) })
        };
        // A wait on one event (the usual) initialises one entry, not the whole stack array.
        let (mut data_one, mut types_one, mut data_stack, mut types_stack, mut data_heap, mut types_heap);
        let (data, types): (&mut [EventData], &mut [u32]) = if n == 1 {
            (data_one, types_one) = ([EventData::default()], [0u32]);
            (&mut data_one, &mut types_one)
        } else if n <= STACK_EVENTS {
            (data_stack, types_stack) = ([EventData::default(); STACK_EVENTS], [0u32; STACK_EVENTS]);
            (&mut data_stack[..n], &mut types_stack[..n])
        } else {
            data_heap = vec![EventData::default(); n];
            types_heap = vec![0u32; n];
            (&mut data_heap, &mut types_heap)
        };
        for (i, (d, ty)) in data.iter_mut().zip(types.iter_mut()).enumerate() {
            let (id, event_type) = if secondary {
                let h = handle(ptrs[i])?;
                with_ctx(|c| c.event_wait_entry(h))?
            } else {
                entry(ptrs[i])?
            };
            let age = match &ages {
                Some(a) if event_type == HSA_EVENTTYPE_SIGNAL => a[i],
                _ => 0,
            };
            *d = EventData::new(id, age);
            *ty = event_type;
        }
        let mut result = if secondary {
            // The context's own port, held for the wait (the lock is not).
            let kfd = with_ctx(|c| Ok(c.kfd_shared()))?;
            event::wait(&*kfd, data, all, ms)
        } else if ms == 0 {
            // A poll never sleeps: it may run on the published port.
            published::with_port_at(epoch, |kfd| event::wait(kfd, data, all, 0))?
        } else {
            let kfd = published::port_arc_at(epoch)?;
            event::wait(&*kfd, data, all, ms)
        };
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

// ---- The `*Ctx` event calls (hsakmtctx.h). On the primary context's handle they are the classic
// calls, lock-free paths included. On a secondary context the events are that context's: not in
// the published index (the primary's), so they are looked up in the context under the lock; a
// wait holds the context's port, not the lock, while it sleeps.

/// `hsaKmtCreateEventCtx`: hsaKmtCreateEvent on the context `ctx`.
///
/// # Safety
/// As hsaKmtCreateEvent; `ctx` is looked up by value, never dereferenced.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtCreateEventCtx(
    ctx: *mut HsaKFDContext,
    EventDesc: *mut HsaEventDescriptor,
    ManualReset: bool,
    IsSignaled: bool,
    Event: *mut *mut HsaEvent,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    select(ctx, || unsafe { hsaKmtCreateEvent(EventDesc, ManualReset, IsSignaled, Event) })
}

/// `hsaKmtDestroyEventCtx`.
///
/// # Safety
/// As hsaKmtDestroyEvent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtDestroyEventCtx(ctx: *mut HsaKFDContext, Event: *mut HsaEvent) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    select(ctx, || unsafe { hsaKmtDestroyEvent(Event) })
}

/// Set, reset or query an event of the secondary context `ctx` (the open check first).
fn secondary_event(
    name: &'static str,
    ctx: *mut HsaKFDContext,
    ev: *mut HsaEvent,
    op: fn(&Context, usize) -> KmtResult<()>,
) -> HSAKMT_STATUS {
    guard(name, || {
        published::check_open()?;
        select(ctx, || with_ctx(|c| op(c, handle(ev)?)))
    })
}

/// `hsaKmtSetEventCtx`.
///
/// # Safety
/// As hsaKmtSetEvent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtSetEventCtx(ctx: *mut HsaKFDContext, Event: *mut HsaEvent) -> HSAKMT_STATUS {
    if is_primary(ctx) {
        // SAFETY: forwarded under the same contract.
        return unsafe { hsaKmtSetEvent(Event) };
    }
    secondary_event("hsaKmtSetEventCtx", ctx, Event, Context::set_event)
}

/// `hsaKmtResetEventCtx`.
///
/// # Safety
/// As hsaKmtResetEvent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtResetEventCtx(ctx: *mut HsaKFDContext, Event: *mut HsaEvent) -> HSAKMT_STATUS {
    if is_primary(ctx) {
        // SAFETY: forwarded under the same contract.
        return unsafe { hsaKmtResetEvent(Event) };
    }
    secondary_event("hsaKmtResetEventCtx", ctx, Event, Context::reset_event)
}

/// `hsaKmtQueryEventStateCtx`.
///
/// # Safety
/// As hsaKmtQueryEventState.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtQueryEventStateCtx(ctx: *mut HsaKFDContext, Event: *mut HsaEvent) -> HSAKMT_STATUS {
    if is_primary(ctx) {
        // SAFETY: forwarded under the same contract.
        return unsafe { hsaKmtQueryEventState(Event) };
    }
    secondary_event("hsaKmtQueryEventStateCtx", ctx, Event, Context::query_event_state)
}

/// `hsaKmtWaitOnEventCtx`.
///
/// # Safety
/// As hsaKmtWaitOnEvent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnEventCtx(ctx: *mut HsaKFDContext, Event: *mut HsaEvent, Milliseconds: HSAuint32) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { hsaKmtWaitOnEvent_ExtCtx(ctx, Event, Milliseconds, std::ptr::null_mut()) }
}

/// `hsaKmtWaitOnEvent_ExtCtx`.
///
/// # Safety
/// As hsaKmtWaitOnEvent_Ext.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnEvent_ExtCtx(
    ctx: *mut HsaKFDContext,
    Event: *mut HsaEvent,
    Milliseconds: HSAuint32,
    event_age: *mut u64,
) -> HSAKMT_STATUS {
    let secondary = !is_primary(ctx);
    // SAFETY: forwarded under the same contract.
    select(ctx, || unsafe { wait_one("hsaKmtWaitOnEvent_ExtCtx", secondary, Event, Milliseconds, event_age) })
}

/// `hsaKmtWaitOnMultipleEventsCtx`.
///
/// # Safety
/// As hsaKmtWaitOnMultipleEvents.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnMultipleEventsCtx(
    ctx: *mut HsaKFDContext,
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
) -> HSAKMT_STATUS {
    // SAFETY: forwarded under the same contract.
    unsafe { hsaKmtWaitOnMultipleEvents_ExtCtx(ctx, Events, NumEvents, WaitOnAll, Milliseconds, std::ptr::null_mut()) }
}

/// `hsaKmtWaitOnMultipleEvents_ExtCtx`.
///
/// # Safety
/// As hsaKmtWaitOnMultipleEvents_Ext.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn hsaKmtWaitOnMultipleEvents_ExtCtx(
    ctx: *mut HsaKFDContext,
    Events: *mut *mut HsaEvent,
    NumEvents: HSAuint32,
    WaitOnAll: bool,
    Milliseconds: HSAuint32,
    event_age: *mut u64,
) -> HSAKMT_STATUS {
    let secondary = !is_primary(ctx);
    // SAFETY: forwarded under the same contract.
    select(ctx, || unsafe {
        wait_multiple("hsaKmtWaitOnMultipleEvents_ExtCtx", secondary, Events, NumEvents, WaitOnAll, Milliseconds, event_age)
    })
}
