//! What the exports read without the thunk lock: the open state, the port, and an index of the
//! live events. Written under the thunk lock (`publish` after every open and close, the event
//! index by CreateEvent and DestroyEvent); read by the calls a runtime makes per dispatch, which
//! then take no lock at all (GetVersion, ModelEnabled, QueryEventState) or none but the port's
//! own (SetEvent, ResetEvent, the event lookups of waits).
//!
//! - **Open state.** `OPEN_PID` is the opener's pid while a context is open, 0 otherwise (no
//!   process has pid 0): a forked child, whose pid differs, reads "not open", upstream's rule.
//! - **The port.** The open context's `Arc<dyn Kfd>`, published as a pointer. A caller marks
//!   itself in flight (one atomic add) before it loads the pointer and unmarks itself after its
//!   last use; a close takes the pointer away and waits for the callers in flight before it
//!   drops its reference, so the port outlives every use. Only calls that cannot block run in
//!   flight (SetEvent, ResetEvent, the KFD id lookups of a wait); a wait that may sleep takes
//!   its own reference to the port first (`port_arc`), as a close must not wait for it.
//! - **Events.** `HsaEvent` address → (KFD event id, type), an open-addressing table behind a
//!   sequence lock: readers retry while a writer (one at a time: the thunk lock) changes it.
//!   Addresses are compared, never dereferenced. An event that does not fit (more than half
//!   the table in use) is not indexed, and a miss then falls back to the context (locked).
//! - **Epoch.** A count of context changes, raised by `publish` after it empties the event
//!   index and before it swaps the port. A caller reads it before looking its events up and
//!   hands it to `with_port_at`/`port_arc_at`, which answer INVALID_HANDLE when the port they
//!   load is a later context's: an event id is only ever used on the port of its own context
//!   (a close and reopen between the lookup and the ioctl would otherwise send the old
//!   context's id to the new one).

use hsakmt_core::abi::hsakmt::HsaVersionInfo;
use hsakmt_core::context::Thunk;
use hsakmt_core::{Backend, Kfd, KmtResult, Status};
use std::sync::atomic::{fence, AtomicBool, AtomicPtr, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

static OPEN_PID: AtomicU32 = AtomicU32::new(0);
static VERSION: AtomicU64 = AtomicU64::new(0);
static ON_MODEL: AtomicBool = AtomicBool::new(false);
/// A leaked `Box<Arc<dyn Kfd>>` holding a reference to the open context's port, or NULL.
static PORT: AtomicPtr<Arc<dyn Kfd>> = AtomicPtr::new(std::ptr::null_mut());
/// Callers between `with_port`'s load of `PORT` and their last use of the port.
static IN_FLIGHT: AtomicUsize = AtomicUsize::new(0);
/// Context changes so far (see the module documentation).
static EPOCH: AtomicU64 = AtomicU64::new(0);

/// Publish the thunk's open state; called with the thunk lock held after every open and close.
pub fn publish(t: &Thunk) {
    install_fork_handler();
    let pid = crate::global::pid();
    let ctx = t.ctx(pid).ok();
    let old = PORT.load(Ordering::Relaxed);
    // SAFETY: a non-NULL `PORT` is a live box only `publish` frees, and we hold the thunk lock.
    let same_port = match (ctx, unsafe { old.as_ref() }) {
        (Some(c), Some(o)) => Arc::ptr_eq(&c.kfd_shared(), o),
        (None, None) => true,
        _ => false,
    };
    if !same_port {
        // A new context, or none: its predecessor's events and port go.
        OPEN_PID.store(0, Ordering::Release);
        EVENTS.clear();
        EPOCH.fetch_add(1, Ordering::SeqCst);
        let new = ctx.map_or(std::ptr::null_mut(), |c| Box::into_raw(Box::new(c.kfd_shared())));
        let old = PORT.swap(new, Ordering::SeqCst);
        if !old.is_null() {
            // Every caller that loaded `old` is in flight: wait for them (their sections never
            // block and never take the thunk lock).
            while IN_FLIGHT.load(Ordering::SeqCst) != 0 {
                std::thread::yield_now();
            }
            // SAFETY: made by `Box::into_raw` above; no one can load it any more.
            drop(unsafe { Box::from_raw(old) });
        }
    }
    if let Some(c) = ctx {
        let v = c.version();
        VERSION.store(u64::from(v.KernelInterfaceMajorVersion) << 32 | u64::from(v.KernelInterfaceMinorVersion), Ordering::Relaxed);
        ON_MODEL.store(c.backend() != Backend::Kernel, Ordering::Relaxed);
        OPEN_PID.store(pid, Ordering::Release);
    }
}

/// The open check: KERNEL_IO_CHANNEL_NOT_OPENED unless this process has an open context
/// (never opened, closed, or inherited across fork otherwise).
#[inline]
pub fn check_open() -> KmtResult<()> {
    if OPEN_PID.load(Ordering::Acquire) == crate::global::pid() {
        Ok(())
    } else {
        Err(Status::KERNEL_IO_CHANNEL_NOT_OPENED)
    }
}

/// The open context's KFD version.
#[inline]
pub fn version() -> KmtResult<HsaVersionInfo> {
    check_open()?;
    let v = VERSION.load(Ordering::Relaxed);
    Ok(HsaVersionInfo { KernelInterfaceMajorVersion: (v >> 32) as u32, KernelInterfaceMinorVersion: v as u32 })
}

/// Whether the open context runs on a model.
#[inline]
pub fn on_model() -> KmtResult<bool> {
    check_open()?;
    Ok(ON_MODEL.load(Ordering::Relaxed))
}

/// Unmarks a caller in flight (also when `f` panics).
struct InFlight;

impl Drop for InFlight {
    #[inline]
    fn drop(&mut self) {
        IN_FLIGHT.fetch_sub(1, Ordering::Release);
    }
}

/// Run `f` on the open context's port (KERNEL_IO_CHANNEL_NOT_OPENED without one). `f` must not
/// block and must not take the thunk lock: a close waits for it.
#[inline]
pub fn with_port<R>(f: impl FnOnce(&dyn Kfd) -> R) -> KmtResult<R> {
    in_flight(|port| f(&**port))
}

/// A reference of its own to the open context's port, for a call that may block.
#[inline]
pub fn port_arc() -> KmtResult<Arc<dyn Kfd>> {
    in_flight(Arc::clone)
}

/// The current epoch: read it before looking events up in `EVENTS`.
#[inline]
pub fn epoch() -> u64 {
    EPOCH.load(Ordering::SeqCst)
}

/// `with_port` for event ids looked up after reading `epoch`: INVALID_HANDLE when the port is
/// a later context's (the events are gone with theirs).
#[inline]
pub fn with_port_at<R>(epoch: u64, f: impl FnOnce(&dyn Kfd) -> R) -> KmtResult<R> {
    in_flight_at(Some(epoch), |port| f(&**port))
}

/// `port_arc` for event ids looked up after reading `epoch` (see `with_port_at`).
#[inline]
pub fn port_arc_at(epoch: u64) -> KmtResult<Arc<dyn Kfd>> {
    in_flight_at(Some(epoch), Arc::clone)
}

#[inline]
fn in_flight<R>(f: impl FnOnce(&Arc<dyn Kfd>) -> R) -> KmtResult<R> {
    in_flight_at(None, f)
}

#[inline]
fn in_flight_at<R>(epoch: Option<u64>, f: impl FnOnce(&Arc<dyn Kfd>) -> R) -> KmtResult<R> {
    check_open()?;
    IN_FLIGHT.fetch_add(1, Ordering::SeqCst);
    let _in_flight = InFlight;
    let p = PORT.load(Ordering::SeqCst);
    // The epoch rises before the port is swapped: a port loaded after a change is seen with
    // the raised epoch.
    if epoch.is_some_and(|e| EPOCH.load(Ordering::SeqCst) != e) {
        return Err(Status::INVALID_HANDLE);
    }
    // SAFETY: a non-NULL `PORT` stays allocated while we are in flight (see `publish`).
    match unsafe { p.as_ref() } {
        Some(port) => Ok(f(port)),
        None => Err(Status::KERNEL_IO_CHANNEL_NOT_OPENED),
    }
}

/// A forked child has only the forking thread: callers in flight in the parent are not its.
fn install_fork_handler() {
    extern "C" fn child() {
        IN_FLIGHT.store(0, Ordering::Relaxed);
    }
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registers a plain function that only stores an atomic (async-signal-safe).
        unsafe { libc::pthread_atfork(None, None, Some(child)) };
    });
}

// ---- The event index

const SLOTS: usize = 4096;
const SHIFT: u32 = 64 - SLOTS.trailing_zeros();

/// The index of live events (see the module documentation).
pub struct EventIndex {
    /// Even while no writer is inside; odd while one is.
    seq: AtomicU32,
    /// `HsaEvent` addresses; 0 is an empty slot.
    keys: [AtomicUsize; SLOTS],
    /// KFD id | type << 32.
    vals: [AtomicU64; SLOTS],
    /// Used slots (writers only).
    len: AtomicUsize,
    /// Every live event is in the table (none was left out for lack of room).
    complete: AtomicBool,
}

/// What a lookup found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// The event's KFD id and type.
    Live(u32, u32),
    /// Not an event of this thunk.
    Unknown,
    /// Not in the table, which does not hold every event: ask the context.
    Ask,
}

pub static EVENTS: EventIndex = EventIndex {
    seq: AtomicU32::new(0),
    keys: [const { AtomicUsize::new(0) }; SLOTS],
    vals: [const { AtomicU64::new(0) }; SLOTS],
    len: AtomicUsize::new(0),
    complete: AtomicBool::new(true),
};

#[inline]
fn home(addr: usize) -> usize {
    ((addr as u64 >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> SHIFT) as usize
}

#[inline]
fn next(i: usize) -> usize {
    (i + 1) & (SLOTS - 1)
}

impl EventIndex {
    /// Look `addr` up without a lock.
    #[inline]
    pub fn lookup(&self, addr: usize) -> Lookup {
        loop {
            let s1 = self.seq.load(Ordering::Acquire);
            if s1 & 1 == 0 {
                let found = self.probe(addr);
                let complete = self.complete.load(Ordering::Relaxed);
                fence(Ordering::Acquire);
                if self.seq.load(Ordering::Relaxed) == s1 {
                    return match found {
                        Some(v) => Lookup::Live(v as u32, (v >> 32) as u32),
                        None if complete => Lookup::Unknown,
                        None => Lookup::Ask,
                    };
                }
            }
            std::hint::spin_loop();
        }
    }

    /// The value at `addr`'s slot, if any (a read inside a sequence-lock section).
    #[inline]
    fn probe(&self, addr: usize) -> Option<u64> {
        let mut i = home(addr);
        for _ in 0..SLOTS {
            match self.keys[i].load(Ordering::Relaxed) {
                0 => return None,
                k if k == addr => return Some(self.vals[i].load(Ordering::Relaxed)),
                _ => i = next(i),
            }
        }
        None
    }

    /// Run a writer's change. Writers hold the thunk lock, so there is one at a time; a fork
    /// cannot catch one in the middle (the fork handlers hold the thunk lock across fork).
    fn write(&self, f: impl FnOnce()) {
        let s = self.seq.load(Ordering::Relaxed);
        self.seq.store(s.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        f();
        self.seq.store(s.wrapping_add(2), Ordering::Release);
    }

    /// Add a new event (thunk lock held).
    pub fn insert(&self, addr: usize, id: u32, ty: u32) {
        debug_assert_ne!(addr, 0);
        if self.len.load(Ordering::Relaxed) * 2 >= SLOTS {
            self.complete.store(false, Ordering::Relaxed);
            return;
        }
        self.write(|| {
            let mut i = home(addr);
            while self.keys[i].load(Ordering::Relaxed) != 0 {
                i = next(i);
            }
            self.vals[i].store(u64::from(id) | u64::from(ty) << 32, Ordering::Relaxed);
            self.keys[i].store(addr, Ordering::Relaxed);
            self.len.fetch_add(1, Ordering::Relaxed);
        });
    }

    /// Remove a destroyed event, if it is there (thunk lock held). Linear probing's deletion:
    /// later entries of the same probe run move back, so no lookup stops early at the hole.
    pub fn remove(&self, addr: usize) {
        let mut i = home(addr);
        loop {
            match self.keys[i].load(Ordering::Relaxed) {
                0 => return,
                k if k == addr => break,
                _ => i = next(i),
            }
        }
        self.write(|| {
            let mut hole = i;
            let mut j = next(hole);
            loop {
                let k = self.keys[j].load(Ordering::Relaxed);
                if k == 0 {
                    break;
                }
                // Move `j` into the hole unless its home lies cyclically in (hole, j].
                let h = home(k);
                let stays = if hole <= j { hole < h && h <= j } else { hole < h || h <= j };
                if !stays {
                    self.keys[hole].store(k, Ordering::Relaxed);
                    self.vals[hole].store(self.vals[j].load(Ordering::Relaxed), Ordering::Relaxed);
                    hole = j;
                }
                j = next(j);
            }
            self.keys[hole].store(0, Ordering::Relaxed);
            self.len.fetch_sub(1, Ordering::Relaxed);
        });
    }

    /// Forget every event (a context came or went; thunk lock held).
    pub fn clear(&self) {
        if self.len.load(Ordering::Relaxed) == 0 && self.complete.load(Ordering::Relaxed) {
            return;
        }
        self.write(|| {
            for k in &self.keys {
                k.store(0, Ordering::Relaxed);
            }
            self.len.store(0, Ordering::Relaxed);
            self.complete.store(true, Ordering::Relaxed);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private index (the static one belongs to the thunk).
    fn index() -> Box<EventIndex> {
        Box::new(EventIndex {
            seq: AtomicU32::new(0),
            keys: [const { AtomicUsize::new(0) }; SLOTS],
            vals: [const { AtomicU64::new(0) }; SLOTS],
            len: AtomicUsize::new(0),
            complete: AtomicBool::new(true),
        })
    }

    #[test]
    fn insert_lookup_remove_against_a_shadow_map() {
        let ix = index();
        let mut shadow = std::collections::BTreeMap::new();
        let mut x: u64 = 0x1234_5678;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        // Addresses from a small range collide on purpose (long probe runs, wrap-around).
        for step in 0..200_000u32 {
            let addr = 0x1000 + 16 * (rnd() % 3000) as usize;
            if rnd() % 2 == 0 && shadow.len() < SLOTS / 2 {
                if let std::collections::btree_map::Entry::Vacant(e) = shadow.entry(addr) {
                    e.insert((step, 1));
                    ix.insert(addr, step, 1);
                }
            } else if shadow.remove(&addr).is_some() {
                ix.remove(addr);
            }
            let probe = 0x1000 + 16 * (rnd() % 3000) as usize;
            let want = shadow.get(&probe).map_or(Lookup::Unknown, |&(id, ty)| Lookup::Live(id, ty));
            assert_eq!(ix.lookup(probe), want, "step {step}");
        }
        for (&a, &(id, ty)) in &shadow {
            assert_eq!(ix.lookup(a), Lookup::Live(id, ty));
        }
        assert_eq!(ix.len.load(Ordering::Relaxed), shadow.len());
        ix.clear();
        assert!(shadow.keys().all(|&a| ix.lookup(a) == Lookup::Unknown));
    }

    #[test]
    fn a_full_table_says_ask() {
        let ix = index();
        for i in 0..SLOTS / 2 {
            ix.insert(0x10_000 + 64 * i, i as u32, 0);
        }
        ix.insert(0x9000_0000, 7, 0);
        assert_eq!(ix.lookup(0x9000_0000), Lookup::Ask);
        assert_eq!(ix.lookup(0x10_000), Lookup::Live(0, 0));
        ix.clear();
        assert_eq!(ix.lookup(0x9000_0000), Lookup::Unknown);
    }

    #[test]
    fn readers_never_see_a_torn_table() {
        let ix: &'static EventIndex = Box::leak(index());
        ix.insert(0x42_0000, 42, 3);
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let reader = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    // Always present with its value; the others come and go.
                    assert_eq!(ix.lookup(0x42_0000), Lookup::Live(42, 3));
                }
            })
        };
        for round in 0..2000usize {
            for i in 0..64 {
                ix.insert(0x42_0000 + 8 * (i + 1) * (1 + round % 7), i as u32, 0);
            }
            for i in 0..64 {
                ix.remove(0x42_0000 + 8 * (i + 1) * (1 + round % 7));
            }
        }
        stop.store(true, Ordering::Relaxed);
        reader.join().unwrap();
    }
}
