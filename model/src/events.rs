//! KFD events: CREATE_EVENT, DESTROY_EVENT, SET_EVENT, RESET_EVENT, WAIT_EVENTS, and the
//! hooks the model GPU uses to raise events, as a service ([`Events`]) over the events' own
//! state; the model's ioctls and `Model::signal_event` & co. call it (`kfd/events.rs`).
//!
//! Rules (facts from kfd_events.c / kfd_chardev.c, our own code):
//!
//! - **Ids.** Signal and debug events take the lowest free id in `1..slots` (id 0 is reserved,
//!   so a 4096-slot page holds 4095 signal events); past that, CREATE answers ENOSPC. Other
//!   types take ids from 0x4000_0000 up. `event_trigger_data` is the id, `event_slot_index`
//!   the id, and `event_page_offset` comes back as the KFD's "events" mmap type for signal
//!   events, 0 otherwise.
//! - **The event page.** A non-zero `event_page_offset` on CREATE is a BO handle (the thunk's
//!   dGPU path): the GPU must exist (EINVAL) and have a VM (ENODEV), the BO must exist and be
//!   GTT (EINVAL; userptr and VRAM cannot be kernel-mapped); a page that is already set is
//!   EINVAL. Its slots are `min(BO size, 32 KiB) / 8`, all set to "unsignaled" (all ones).
//!   Without a handle the first signal event gets a KFD-owned page of 256 slots, as the kernel
//!   (mapping it is the thunk's APU path, which the model does not offer).
//! - **Set / reset.** Only signal events can be set or reset from the CPU (EINVAL otherwise,
//!   and for an unknown id). Every set increments the event's age (it starts at 1 and skips 0
//!   and 1 when it wraps). A set leaves an auto-reset event unsignaled when a waiter is queued
//!   on it (the waiter consumes it), signaled otherwise.
//! - **Waits.** The `kfd_event_data` array is read with checked copies (EFAULT); an unknown id
//!   is EINVAL. A waiter is activated at once when the event is signaled (consuming it if
//!   auto-reset) or, for a signal event with a non-zero `last_event_age`, when the event's age
//!   differs (KFD 1.14+): a set that raced ahead of the wait is never lost. Otherwise it sleeps on a
//!   condvar (no spinning) until a set activates it, the timeout passes (0: poll;
//!   0xFFFFFFFF: forever; others: at most 0x7FFFFFFF ms) or the event is destroyed (EIO).
//!   Wait-all needs every waiter activated, wait-any one. On completion, memory-exception data
//!   (and, a model addition, HW-exception data) of activated events and the current age of
//!   age-enabled signal events are copied back. More than the kernel's allocation limit of
//!   waiters is ENOMEM; small waits use a stack array (no allocation).
//! - **Lifetime.** Events belong to the KFD process: a forked child or a released process
//!   starts with none; destroying an event wakes its waiters with a failure.

use crate::devmem::DeviceMemory;
use crate::sys::{get, put, KMALLOC_MAX};
use crate::usercopy::{copy_from_user, copy_to_user};
use hsakmt_core::abi::kfd::*;
use std::collections::{BTreeSet, HashMap};
use std::hash::BuildHasherDefault;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use zerocopy::{FromZeros, IntoBytes};

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const ENOMEM: i32 = libc::ENOMEM;
const ENOSPC: i32 = libc::ENOSPC;
const EIO: i32 = libc::EIO;

/// Slots of a full event page (KFD_SIGNAL_EVENT_LIMIT).
pub const SIGNAL_EVENT_LIMIT: usize = KFD_SIGNAL_EVENT_LIMIT as usize;
/// Slots the KFD's own page offers (the oldest user mode mapped 256).
const KFD_OWN_PAGE_SLOTS: usize = 256;
/// First id of events that are not signal events ((INT_MAX >> 1) + 1).
pub const FIRST_NONSIGNAL_EVENT_ID: u32 = 0x4000_0000;
/// A slot no one has written.
pub const UNSIGNALED_SLOT: u64 = u64::MAX;
/// `event_page_offset` answered for signal events: the KFD's "events" mmap type.
pub const KFD_MMAP_TYPE_EVENTS: u64 = 2 << 62;

const TYPE_SIGNAL: u32 = KFD_IOC_EVENT_SIGNAL as u32;
const TYPE_DEBUG: u32 = KFD_IOC_EVENT_DEBUG_EVENT as u32;
const TYPE_MEMORY: u32 = KFD_IOC_EVENT_MEMORY as u32;
const TYPE_HW_EXCEPTION: u32 = KFD_IOC_EVENT_HW_EXCEPTION as u32;

const TIMEOUT_IMMEDIATE: u32 = 0;
const TIMEOUT_INFINITE: u32 = 0xFFFF_FFFF;

const RESULT_COMPLETE: u32 = KFD_IOC_WAIT_RESULT_COMPLETE as u32;
const RESULT_TIMEOUT: u32 = KFD_IOC_WAIT_RESULT_TIMEOUT as u32;
const RESULT_FAIL: u32 = KFD_IOC_WAIT_RESULT_FAIL as u32;

/// Size of `struct kfd_event_data`, and the offsets of its members.
pub(crate) const EVENT_DATA_SIZE: usize = 48;
const EVENT_DATA_ID_OFFSET: usize = 40;
/// The kernel's per-waiter allocation (wait-queue entry, event pointer, two flags).
const WAITER_KERNEL_SIZE: u64 = 56;
/// Waits on up to this many events keep their waiters on the stack.
const STACK_WAITERS: usize = 32;

fn is_signal_like(ty: u32) -> bool {
    ty == TYPE_SIGNAL || ty == TYPE_DEBUG
}

/// The hasher of the event table: ids are the KFD's own small numbers, so one multiply spreads
/// them (SipHash was a tenth of a SetEvent + WaitOnEvent round).
#[derive(Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, v: u32) {
        self.0 = (self.0 ^ u64::from(v)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }
}

/// One event.
struct Event {
    ty: u32,
    auto_reset: bool,
    signaled: bool,
    /// Incremented by every set (starts at 1; 0 means "no age" to waiters).
    age: u64,
    /// Unique for the life of the model, so a waiter can tell a destroyed event from a new
    /// one that took its id.
    serial: u64,
    /// Waiters queued on the event (the kernel's wait queue not being empty).
    queued: u32,
    memory_exception: Option<kfd_hsa_memory_exception_data>,
    hw_exception: Option<kfd_hsa_hw_exception_data>,
}

/// The event page as the model sees it: its own mapping of the slots.
#[derive(Debug)]
struct Page {
    addr: usize,
    len: usize,
    /// The BO the thunk gave (None: the KFD's own page).
    handle: Option<u64>,
}

impl Drop for Page {
    fn drop(&mut self) {
        // SAFETY: the mapping was made for this page by `map_bo_page` / `own_page` and only
        // this struct refers to it.
        let _ = unsafe { rustix::mm::munmap(self.addr as *mut std::ffi::c_void, self.len) };
    }
}

impl Page {
    fn slot(&self, id: u32) -> Option<&AtomicU64> {
        let off = (id as usize).checked_mul(8)?;
        if off + 8 > self.len {
            return None;
        }
        // SAFETY: the slot lies inside this page's mapping (checked above), which is readable,
        // writable, 8-byte aligned (page aligned base) and lives as long as `self`.
        Some(unsafe { AtomicU64::from_ptr((self.addr + off) as *mut u64) })
    }
}

/// Lowest-free id allocator over `[lo, hi)`.
#[derive(Debug)]
struct Ids {
    lo: u32,
    hi: u32,
    next: u32,
    free: BTreeSet<u32>,
}

impl Ids {
    fn new(lo: u32, hi: u32) -> Ids {
        Ids { lo, hi, next: lo, free: BTreeSet::new() }
    }
    fn alloc(&mut self, limit: u32) -> Option<u32> {
        if let Some(&id) = self.free.first() {
            if id < limit {
                self.free.remove(&id);
                return Some(id);
            }
        }
        if self.next >= limit.min(self.hi) {
            return None;
        }
        self.next += 1;
        Some(self.next - 1)
    }
    fn release(&mut self, id: u32) {
        if id + 1 == self.next {
            self.next -= 1;
            while self.next > self.lo && self.free.remove(&(self.next - 1)) {
                self.next -= 1;
            }
        } else {
            self.free.insert(id);
        }
    }
}

/// The events of one KFD process.
pub(crate) struct EventState {
    /// Which KFD process (`Process::instance`) these events belong to.
    instance: u64,
    events: HashMap<u32, Event, BuildHasherDefault<IdHasher>>,
    page: Option<Page>,
    /// Slots user mode can see (0 until a page exists).
    slots: usize,
    /// Signal events plus the reserved id 0.
    signal_count: usize,
    signal_ids: Ids,
    other_ids: Ids,
    next_serial: u64,
    /// Threads blocked in WAIT_EVENTS (a set only wakes when there are some).
    sleepers: u32,
}

impl EventState {
    fn new(instance: u64) -> EventState {
        EventState {
            instance,
            events: HashMap::default(),
            page: None,
            slots: 0,
            signal_count: 1,
            signal_ids: Ids::new(1, SIGNAL_EVENT_LIMIT as u32),
            other_ids: Ids::new(FIRST_NONSIGNAL_EVENT_ID, i32::MAX as u32),
            next_serial: 1,
            sleepers: 0,
        }
    }

    /// The kernel's set_event on one event; true when waiters must be woken.
    fn set(ev: &mut Event) -> bool {
        ev.signaled = !ev.auto_reset || ev.queued == 0;
        ev.age = ev.age.wrapping_add(1);
        if ev.age == 0 {
            ev.age = 2; // never back to the reserved ages 0 and 1
        }
        ev.queued > 0
    }
}

/// The model's event machinery: state under a mutex, and one condvar for all sleepers.
pub(crate) struct Events {
    st: Mutex<EventState>,
    cv: Condvar,
}

impl Default for Events {
    fn default() -> Events {
        Events { st: Mutex::new(EventState::new(0)), cv: Condvar::new() }
    }
}

impl Events {
    /// The state lock as it is, for the fork handlers (`fork.rs`).
    pub(crate) fn lock_for_fork(&self) -> MutexGuard<'_, EventState> {
        self.st.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One entry of a wait.
#[derive(Clone, Copy, Debug, Default)]
struct Waiter {
    id: u32,
    serial: u64,
    /// The event's age when the waiter queued (a change means a set activated it).
    seen_age: u64,
    activated: bool,
    queued: bool,
    age_enabled: bool,
    /// Set once the waiter was initialised (for the undo on early failure).
    live: bool,
}

/// Where a wait's `kfd_event_data` array lives.
pub(crate) enum EventArray<'a> {
    /// `events_ptr` of the ioctl: a user address, every access checked (EFAULT).
    User(u64),
    /// The array of an in-process caller (`Kfd::wait_events`): a Rust slice of `num_events`
    /// elements, valid by construction, so plain copies suffice (no system call).
    Slice(&'a mut [u8]),
}

impl EventArray<'_> {
    fn read(&self, i: usize) -> Result<[u8; EVENT_DATA_SIZE], i32> {
        let mut b = [0u8; EVENT_DATA_SIZE];
        let off = i.checked_mul(EVENT_DATA_SIZE).ok_or(EFAULT)?;
        match self {
            EventArray::User(ptr) => {
                let at = (*ptr as usize).checked_add(off).ok_or(EFAULT)?;
                copy_from_user(&mut b, at).map_err(|_| EFAULT)?;
            }
            EventArray::Slice(s) => b.copy_from_slice(s.get(off..off + EVENT_DATA_SIZE).ok_or(EFAULT)?),
        }
        Ok(b)
    }

    /// Write `src` at the start of element `i`.
    fn write(&mut self, i: usize, src: &[u8]) -> Result<(), i32> {
        let off = i.checked_mul(EVENT_DATA_SIZE).ok_or(EFAULT)?;
        match self {
            EventArray::User(ptr) => copy_to_user((*ptr as usize).checked_add(off).ok_or(EFAULT)?, src).map_err(|_| EFAULT),
            EventArray::Slice(s) => {
                s.get_mut(off..off + src.len()).ok_or(EFAULT)?.copy_from_slice(src);
                Ok(())
            }
        }
    }
}

/// The events service: each operation names the KFD process whose events it works on (its
/// `instance`, see `Process::instance`; a new instance starts with none) and gets whatever else
/// it needs as narrow inputs (the event page's BO, the device memory), never the model.
impl Events {
    /// The events of KFD process `instance` (a new process starts with none).
    fn lock(&self, instance: u64) -> MutexGuard<'_, EventState> {
        let mut st = self.st.lock().unwrap_or_else(|e| e.into_inner());
        if st.instance != instance {
            let sleepers = st.sleepers;
            *st = EventState::new(instance);
            st.sleepers = sleepers;
            self.cv.notify_all();
        }
        st
    }

    /// CREATE_EVENT. A non-zero `event_page_offset` names the event page's BO: `page_bo` checks
    /// it (the GPU, its VM, the BO's type) and answers its (offset in the device memfd, size);
    /// `dev` is the device memory. Both are called only for a process without a page yet.
    pub(crate) fn create<'d>(
        &self,
        instance: u64,
        buf: &mut [u8],
        page_bo: impl FnOnce(u64) -> Result<(u64, u64), i32>,
        dev: impl FnOnce() -> Result<&'d DeviceMemory, i32>,
    ) -> Result<(), i32> {
        let mut a: kfd_ioctl_create_event_args = get(buf);
        let mut st = self.lock(instance);
        if a.event_page_offset != 0 {
            set_event_page(&mut st, a.event_page_offset, page_bo, dev)?;
        }
        let st = &mut *st;
        let serial = st.next_serial;
        let ev = Event {
            ty: a.event_type,
            auto_reset: a.auto_reset != 0,
            signaled: false,
            age: 1,
            serial,
            queued: 0,
            memory_exception: None,
            hw_exception: None,
        };
        a.event_page_offset = 0;
        let id = if is_signal_like(a.event_type) {
            if st.slots != 0 && st.signal_count == st.slots {
                return Err(ENOSPC);
            }
            if st.page.is_none() {
                st.page = Some(own_page()?);
                st.slots = KFD_OWN_PAGE_SLOTS;
            }
            let id = st.signal_ids.alloc(st.slots as u32).ok_or(ENOSPC)?;
            if let Some(s) = st.page.as_ref().and_then(|p| p.slot(id)) {
                s.store(UNSIGNALED_SLOT, Ordering::Release);
            }
            st.signal_count += 1;
            a.event_page_offset = KFD_MMAP_TYPE_EVENTS;
            a.event_slot_index = id;
            id
        } else {
            st.other_ids.alloc(u32::MAX).ok_or(ENOMEM)?
        };
        st.next_serial += 1;
        st.events.insert(id, ev);
        a.event_id = id;
        a.event_trigger_data = id;
        put(buf, &a);
        Ok(())
    }

    /// DESTROY_EVENT.
    pub(crate) fn destroy(&self, instance: u64, buf: &mut [u8]) -> Result<(), i32> {
        let a: kfd_ioctl_destroy_event_args = get(buf);
        let mut st = self.lock(instance);
        let ev = st.events.remove(&a.event_id).ok_or(EINVAL)?;
        if is_signal_like(ev.ty) {
            st.signal_count -= 1;
            st.signal_ids.release(a.event_id);
        } else {
            st.other_ids.release(a.event_id);
        }
        let wake = ev.queued > 0;
        drop(st);
        if wake {
            self.cv.notify_all();
        }
        Ok(())
    }

    /// SET_EVENT / RESET_EVENT.
    pub(crate) fn set_reset(&self, instance: u64, buf: &mut [u8], set: bool) -> Result<(), i32> {
        let a: kfd_ioctl_set_event_args = get(buf);
        let mut st = self.lock(instance);
        let ev = st.events.get_mut(&a.event_id).ok_or(EINVAL)?;
        if ev.ty != TYPE_SIGNAL {
            return Err(EINVAL);
        }
        if !set {
            ev.signaled = false;
        } else if EventState::set(ev) {
            // Wake after unlocking, so the woken waiter does not block on the lock at once.
            drop(st);
            self.cv.notify_all();
        }
        Ok(())
    }

    /// WAIT_EVENTS on `array` (the ioctl's `events_ptr`, or an in-process caller's slice).
    /// `instance` names the process's events (read when the wait starts); `ages`: the KFD
    /// version has event ages (1.14+).
    pub(crate) fn wait(
        &self,
        instance: impl FnOnce() -> u64,
        ages: bool,
        a: &mut kfd_ioctl_wait_events_args,
        mut array: EventArray<'_>,
    ) -> Result<(), i32> {
        let n = a.num_events as usize;
        if u64::from(a.num_events) * WAITER_KERNEL_SIZE > KMALLOC_MAX {
            a.wait_result = RESULT_FAIL;
            return Err(ENOMEM);
        }
        // A wait on one event (the usual) zeroes one waiter, not the whole stack array.
        let (mut one, mut stack, mut heap);
        let waiters: &mut [Waiter] = if n <= 1 {
            one = [Waiter::default(); 1];
            &mut one[..n]
        } else if n <= STACK_WAITERS {
            stack = [Waiter::default(); STACK_WAITERS];
            &mut stack[..n]
        } else {
            heap = vec![Waiter::default(); n];
            &mut heap
        };
        let (ret, result) = self.wait_on(instance(), ages, a, &mut array, waiters);
        a.wait_result = match ret {
            Err(_) => RESULT_FAIL,
            Ok(()) => result,
        };
        match ret {
            Err(e) => Err(e),
            Ok(()) if result == RESULT_FAIL => Err(EIO),
            Ok(()) => Ok(()),
        }
    }

    fn wait_on(
        &self,
        instance: u64,
        ages: bool,
        a: &kfd_ioctl_wait_events_args,
        array: &mut EventArray<'_>,
        waiters: &mut [Waiter],
    ) -> (Result<(), i32>, u32) {
        let all = a.wait_for_all != 0;
        let mut st = self.lock(instance);
        let mut ret = Ok(());
        let mut result = RESULT_FAIL;
        'init: {
            for (i, w) in waiters.iter_mut().enumerate() {
                let data = match array.read(i) {
                    Ok(d) => d,
                    Err(e) => {
                        ret = Err(e);
                        break 'init;
                    }
                };
                let id = u32::from_ne_bytes(data[EVENT_DATA_ID_OFFSET..EVENT_DATA_ID_OFFSET + 4].try_into().unwrap_or_default());
                let last_age = u64::from_ne_bytes(data[..8].try_into().unwrap_or_default());
                let Some(ev) = st.events.get_mut(&id) else {
                    ret = Err(EINVAL);
                    break 'init;
                };
                *w = Waiter { id, serial: ev.serial, seen_age: ev.age, activated: ev.signaled, live: true, ..Waiter::default() };
                ev.signaled = ev.signaled && !ev.auto_reset;
                if ages && ev.ty == TYPE_SIGNAL && last_age != 0 {
                    w.age_enabled = true;
                    if ev.age != last_age {
                        w.activated = true;
                    }
                }
                if !w.activated {
                    ev.queued += 1;
                    w.queued = true;
                }
            }
            result = test(&st, waiters, all);
            if result == RESULT_TIMEOUT && a.timeout != TIMEOUT_IMMEDIATE {
                let deadline =
                    (a.timeout != TIMEOUT_INFINITE).then(|| Instant::now() + Duration::from_millis(u64::from(a.timeout.min(0x7FFF_FFFF))));
                st.sleepers += 1;
                loop {
                    st = match deadline {
                        None => self.cv.wait(st).unwrap_or_else(|e| e.into_inner()),
                        Some(d) => {
                            let now = Instant::now();
                            if now >= d {
                                break;
                            }
                            self.cv.wait_timeout(st, d - now).unwrap_or_else(|e| e.into_inner()).0
                        }
                    };
                    result = test(&st, waiters, all);
                    if result != RESULT_TIMEOUT {
                        break;
                    }
                }
                st.sleepers -= 1;
            }
            if result == RESULT_COMPLETE {
                ret = copy_signaled_data(&st, waiters, array);
            }
        }
        // Dequeue (the kernel's free_waiters).
        for w in waiters.iter().filter(|w| w.live && w.queued) {
            if let Some(ev) = st.events.get_mut(&w.id).filter(|e| e.serial == w.serial) {
                ev.queued -= 1;
            }
        }
        (ret, result)
    }

    /// The interrupt path of a signal event (see `Model::signal_event`). `owner` is held (the
    /// process lock) until the slot is acknowledged; `bo_alive` says whether the page's BO
    /// still exists.
    pub(crate) fn signal<G>(&self, instance: u64, event_id: u32, owner: G, bo_alive: impl Fn(&G, u64) -> bool) -> bool {
        let pst = owner;
        let mut guard = self.lock(instance);
        let st = &mut *guard;
        let Some(ev) = st.events.get_mut(&event_id).filter(|e| is_signal_like(e.ty)) else { return false };
        if let Some(page) = &st.page {
            // A page whose BO was freed is no longer the process's to write.
            if page.handle.is_none_or(|h| bo_alive(&pst, h)) {
                if let Some(s) = page.slot(event_id) {
                    s.store(UNSIGNALED_SLOT, Ordering::Release);
                }
            }
        }
        drop(pst);
        let wake = EventState::set(ev);
        drop(guard);
        if wake {
            self.cv.notify_all();
        }
        true
    }

    /// The signal events an interrupt with `context_id` (its low `valid_bits` bits) sets (see
    /// `Model::signal_event_interrupt`): that event when it is a signal event whose slot the GPU
    /// has written, else every such event.
    pub(crate) fn interrupt_targets(&self, instance: u64, context_id: u32, valid_bits: u32) -> Vec<u32> {
        let id = if valid_bits >= 32 { context_id } else { context_id & ((1u32 << valid_bits) - 1) };
        let st = self.lock(instance);
        let Some(page) = st.page.as_ref() else { return Vec::new() };
        let written = |i: u32| page.slot(i).is_some_and(|s| s.load(Ordering::Acquire) != UNSIGNALED_SLOT);
        let is_signal = |i: u32| st.events.get(&i).is_some_and(|e| is_signal_like(e.ty));
        if is_signal(id) && written(id) {
            vec![id]
        } else {
            // At most `slots` (<= 4096) ids: bounded.
            (1..st.slots as u32).filter(|&i| written(i) && is_signal(i)).collect()
        }
    }

    /// A GPU memory fault: every memory event of the process is set with the fault's data.
    pub(crate) fn memory_exception(&self, instance: u64, data: kfd_hsa_memory_exception_data) -> usize {
        self.signal_system_events(instance, TYPE_MEMORY, |ev| ev.memory_exception = Some(data))
    }

    /// A GPU reset or HW exception: every HW-exception event of the process is set with `data`.
    pub(crate) fn hw_exception(&self, instance: u64, data: kfd_hsa_hw_exception_data) -> usize {
        self.signal_system_events(instance, TYPE_HW_EXCEPTION, |ev| ev.hw_exception = Some(data))
    }

    fn signal_system_events(&self, instance: u64, ty: u32, mut f: impl FnMut(&mut Event)) -> usize {
        let mut st = self.lock(instance);
        let mut n = 0;
        let mut wake = false;
        for ev in st.events.values_mut().filter(|e| e.ty == ty) {
            wake |= EventState::set(ev);
            f(ev);
            n += 1;
        }
        drop(st);
        if wake {
            self.cv.notify_all();
        }
        n
    }

    /// The value in an event's slot of the event page.
    pub(crate) fn slot(&self, instance: u64, event_id: u32) -> Option<u64> {
        let st = self.lock(instance);
        st.page.as_ref()?.slot(event_id).map(|s| s.load(Ordering::Acquire))
    }

    /// Write an event's slot, as a GPU does before it raises the interrupt.
    pub(crate) fn write_slot(&self, instance: u64, event_id: u32, value: u64) -> bool {
        let st = self.lock(instance);
        match st.page.as_ref().and_then(|p| p.slot(event_id)) {
            Some(s) => {
                s.store(value, Ordering::Release);
                true
            }
            None => false,
        }
    }

    /// Live events of process `instance`.
    pub(crate) fn live(&self, instance: u64) -> usize {
        self.lock(instance).events.len()
    }
}

/// kfd_kmap_event_page: the thunk's BO becomes the event page (see [`Events::create`]).
fn set_event_page<'d>(
    st: &mut EventState,
    handle: u64,
    page_bo: impl FnOnce(u64) -> Result<(u64, u64), i32>,
    dev: impl FnOnce() -> Result<&'d DeviceMemory, i32>,
) -> Result<(), i32> {
    if st.page.is_some() {
        return Err(EINVAL);
    }
    let (off, size) = page_bo(handle)?;
    let len = usize::try_from(size.min((SIGNAL_EVENT_LIMIT * 8) as u64)).map_err(|_| EINVAL)?;
    if len < 8 {
        return Err(EINVAL);
    }
    let dev = dev()?;
    use rustix::mm::{MapFlags, ProtFlags};
    // SAFETY: a new shared mapping of the BO's range of the device memfd at an address the
    // kernel picks; the file has a fixed size, so accesses cannot fault.
    let p = unsafe { rustix::mm::mmap(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::SHARED, dev.fd(), off) }
        .map_err(|e| e.raw_os_error())?;
    let page = Page { addr: p as usize, len, handle: Some(handle) };
    for i in 0..len / 8 {
        if let Some(s) = page.slot(i as u32) {
            s.store(UNSIGNALED_SLOT, Ordering::Relaxed);
        }
    }
    st.slots = len / 8;
    st.page = Some(page);
    Ok(())
}

/// The kernel's test_event_condition, refreshing each waiter from its event's age.
fn test(st: &EventState, waiters: &mut [Waiter], all: bool) -> u32 {
    let mut activated = 0;
    for w in waiters.iter_mut() {
        let Some(ev) = st.events.get(&w.id).filter(|e| e.serial == w.serial) else { return RESULT_FAIL };
        if !w.activated && ev.age != w.seen_age {
            w.activated = true;
        }
        if w.activated {
            if !all {
                return RESULT_COMPLETE;
            }
            activated += 1;
        }
    }
    if activated == waiters.len() {
        RESULT_COMPLETE
    } else {
        RESULT_TIMEOUT
    }
}

/// copy_signaled_event_data: exception data of activated events, ages of age-enabled ones.
fn copy_signaled_data(st: &EventState, waiters: &[Waiter], array: &mut EventArray<'_>) -> Result<(), i32> {
    for (i, w) in waiters.iter().enumerate() {
        let ev = st.events.get(&w.id).filter(|e| e.serial == w.serial).ok_or(EINVAL)?;
        if !w.activated {
            continue;
        }
        match (ev.ty, ev.memory_exception, ev.hw_exception) {
            (TYPE_MEMORY, Some(m), _) => array.write(i, m.as_bytes())?,
            (TYPE_HW_EXCEPTION, _, Some(h)) => array.write(i, h.as_bytes())?,
            (TYPE_SIGNAL, _, _) if w.age_enabled => array.write(i, &ev.age.to_ne_bytes())?,
            _ => {}
        }
    }
    Ok(())
}

/// The KFD's own event page (no BO was given): anonymous memory of the model.
fn own_page() -> Result<Page, i32> {
    use rustix::mm::{MapFlags, ProtFlags};
    let len = SIGNAL_EVENT_LIMIT * 8;
    // SAFETY: a new private anonymous mapping at an address the kernel picks.
    let p = unsafe { rustix::mm::mmap_anonymous(std::ptr::null_mut(), len, ProtFlags::READ | ProtFlags::WRITE, MapFlags::PRIVATE) }
        .map_err(|e| e.raw_os_error())?;
    let page = Page { addr: p as usize, len, handle: None };
    for i in 0..SIGNAL_EVENT_LIMIT {
        if let Some(s) = page.slot(i as u32) {
            s.store(UNSIGNALED_SLOT, Ordering::Relaxed);
        }
    }
    Ok(page)
}

/// A zeroed `kfd_event_data` array element for tests and callers building wait arrays.
pub fn event_data(event_id: u32, last_event_age: u64) -> kfd_event_data {
    let mut d = kfd_event_data::new_zeroed();
    d.event_id = event_id;
    d.__anon_union_1.signal_event_data = kfd_hsa_signal_event_data { last_event_age };
    d
}
