//! Fork safety of the model's locks.
//!
//! The model runs inside the process that uses it, and a forked child keeps using its copy (it
//! reopens the KFD as itself, see `Model::create_memfd`). fork() copies memory, not threads: a
//! lock some other thread of the parent held at that moment stays locked in the child forever,
//! and the child hangs in its first call that takes it (a thread inside SET_EVENT while another
//! forks leaves the child unable to CREATE_EVENT). So, as POSIX prescribes for libraries, the
//! fork handlers here take every lock a child may need before fork() and release them on both
//! sides after it: the fork gate (held shared by doorbell watcher threads during a pass, see
//! `queues/watch.rs`), the registry of live models, and each live model's locks in the model's
//! order (`state`, then `queues`, then the events). Waiters sleeping on a condvar hold none of
//! them, so a fork never waits for an event wait to end.
//!
//! Models made by [`Model::new_shared`] (the ones shared by threads: the thunk's built-in model,
//! the plugin's) are registered; a plain [`Model::new`] is not.
//!
//! Order against the embedder's locks: a library that calls the model while holding a lock of
//! its own (the thunk's lock) must have that lock taken *before* the model's at fork, or a
//! thread holding it and waiting for a model lock deadlocks with the forking thread. prepare
//! handlers run in the reverse order of their registration, so such an embedder calls
//! [`install_fork_handlers`] before it registers its own handlers (the thunk does), or takes the
//! model's fork handling over with [`take_fork_handling`] and calls [`fork_prepare`] /
//! [`fork_release`] from its own handlers, after its lock.

use crate::model::Model;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLockWriteGuard, Weak};

/// The models made by `Model::new_shared` (dead entries are pruned at registration).
static LIVE: Mutex<Vec<Weak<Model>>> = Mutex::new(Vec::new());

/// What the thread that forks holds between prepare and release. Fields drop in order: the
/// model guards before the models they borrow from, then the registry, then the gate.
struct Held {
    _guards: Vec<ModelGuards>,
    _models: Vec<Arc<Model>>,
    _live: MutexGuard<'static, Vec<Weak<Model>>>,
    _gate: RwLockWriteGuard<'static, ()>,
}

/// One model's locks. The `'static` is a lie told to the thread-local: each guard borrows from
/// a model that `Held::_models` keeps alive and that outlives the guards (drop order above).
type ModelGuards = (
    MutexGuard<'static, crate::model::Process>,
    MutexGuard<'static, crate::queues::QueueTable>,
    MutexGuard<'static, crate::events::EventState>,
);

thread_local! {
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Take every model lock a forked child may need (see the module notes).
pub fn fork_prepare() {
    let gate = crate::queues::FORK_GATE.write().unwrap_or_else(|e| e.into_inner());
    let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    let models: Vec<Arc<Model>> = live.iter().filter_map(Weak::upgrade).collect();
    let guards = models
        .iter()
        .map(|m| {
            // SAFETY: `m` stays alive in `Held::_models` until after these guards are dropped
            // (field order of `Held`), so extending the borrow to 'static never outlives it.
            let m: &'static Model = unsafe { &*Arc::as_ptr(m) };
            m.fork_locks()
        })
        .collect();
    let held = Held { _guards: guards, _models: models, _live: live, _gate: gate };
    let _ = HELD.try_with(|h| *h.borrow_mut() = Some(held));
}

/// Release what [`fork_prepare`] took (parent and child: the same thread, which fork() kept).
pub fn fork_release() {
    let held = HELD.try_with(|h| h.borrow_mut().take()).ok().flatten();
    drop(held);
}

extern "C" fn prepare_handler() {
    fork_prepare();
}

extern "C" fn release_handler() {
    fork_release();
}

const NONE: u8 = 0;
const REGISTERED: u8 = 1;
const EMBEDDER: u8 = 2;
/// Who runs the fork handlers of this copy of the crate.
static HANDLING: AtomicU8 = AtomicU8::new(NONE);

/// Register this crate's fork handlers (once; nothing when an embedder took them over).
pub fn install_fork_handlers() {
    if HANDLING.compare_exchange(NONE, REGISTERED, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
        // SAFETY: registers plain functions that only take and release locks of this crate.
        unsafe { libc::pthread_atfork(Some(prepare_handler), Some(release_handler), Some(release_handler)) };
    }
}

/// An embedder takes fork handling over: from now on it calls [`fork_prepare`] (after taking
/// its own locks) and [`fork_release`] from its own fork handlers, and this crate registers
/// none. True only for the first caller; false when the handlers are registered already (they
/// stay) or someone took them over before (and calls the functions already): then the caller
/// must not call them as well.
pub fn take_fork_handling() -> bool {
    HANDLING.compare_exchange(NONE, EMBEDDER, Ordering::SeqCst, Ordering::SeqCst).is_ok()
}

/// Register a model made by `Model::new_shared` (and the handlers, unless an embedder runs them).
pub(crate) fn register(m: &Weak<Model>) {
    install_fork_handlers();
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.retain(|w| w.strong_count() > 0);
    live.push(m.clone());
}

impl Model {
    /// The model's locks, in its lock order.
    fn fork_locks(&'static self) -> ModelGuards {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let q = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        (st, q, self.events.lock_for_fork())
    }
}
