//! The doorbell watcher: a background thread playing the command processors' doorbell
//! monitoring. It holds only a `Weak<Model>` (upgraded for one service pass at a time), so it
//! never keeps a model alive, and exits when the model is gone or when the process has had no
//! queues for a while. CREATE_QUEUE (re)starts it lazily, per process: threads do not survive
//! fork, so a forked child that creates queues gets its own.
//!
//! Polling: after a pass that moved some queue the thread yields and polls again for a short
//! spin window (tens of µs, the latency a GPU would show); then it sleeps on a condition
//! variable with a timeout that doubles up to 1 ms. `ring_doorbell` (and UPDATE_QUEUE) wake it
//! at once. Idle, it costs about a thousand cheap passes a second, not a core.

use crate::model::{current_pid, Model};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

const SPIN: Duration = Duration::from_micros(50);
const FIRST_SLEEP: Duration = Duration::from_micros(20);
const MAX_SLEEP: Duration = Duration::from_millis(1);
/// How long the thread stays without queues before it exits.
const LINGER: Duration = Duration::from_millis(200);

/// Watcher threads alive in this process (all models).
static THREADS: AtomicUsize = AtomicUsize::new(0);

#[derive(Debug, Default)]
struct WatchState {
    /// The process whose watcher thread is running, if any.
    pid: Option<u32>,
    kick: bool,
}

/// The wake-up channel between the model and its watcher thread (shared, so the thread can
/// sleep on it without holding the model).
#[derive(Debug, Default)]
pub(crate) struct Watch {
    state: Mutex<WatchState>,
    cv: Condvar,
    passes: AtomicU64,
}

impl Watch {
    fn lock(&self) -> std::sync::MutexGuard<'_, WatchState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Model {
    /// Start the watcher thread of this process if the model is shared and none runs.
    pub(crate) fn start_watcher(&self) {
        if self.shared.strong_count() == 0 {
            return; // a plain model: queues advance through service_queues / ring_doorbell
        }
        let pid = current_pid();
        let mut s = self.watch.lock();
        if s.pid == Some(pid) {
            return;
        }
        let weak = self.shared.clone();
        let watch = Arc::clone(&self.watch);
        THREADS.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new().name("hsakmt-model-queues".into()).spawn(move || {
            run(weak, &watch, pid);
            THREADS.fetch_sub(1, Ordering::SeqCst);
        });
        match spawned {
            Ok(_) => s.pid = Some(pid),
            // No thread: the queues still advance through ring_doorbell / service_queues.
            Err(_) => {
                THREADS.fetch_sub(1, Ordering::SeqCst);
            }
        }
    }

    /// Wake the watcher now.
    pub(crate) fn kick_watcher(&self) {
        let mut s = self.watch.lock();
        s.kick = true;
        self.watch.cv.notify_all();
    }

    /// Is this process's watcher thread running?
    pub fn watcher_running(&self) -> bool {
        self.watch.lock().pid == Some(current_pid())
    }

    /// Service passes the watcher thread has made (for tests: an idle watcher must not spin).
    pub fn watcher_passes(&self) -> u64 {
        self.watch.passes.load(Ordering::Relaxed)
    }

    /// Watcher threads alive in this process, over all models.
    pub fn watcher_threads() -> usize {
        THREADS.load(Ordering::SeqCst)
    }
}

fn run(weak: Weak<Model>, watch: &Watch, pid: u32) {
    let mut sleep = FIRST_SLEEP;
    let mut spin_until = Instant::now() + SPIN;
    let mut had_queues_at = Instant::now();
    loop {
        let Some(m) = weak.upgrade() else { break };
        let pass = m.service_pass();
        let has_queues = m.has_queues();
        drop(m);
        watch.passes.fetch_add(1, Ordering::Relaxed);
        let now = Instant::now();
        if has_queues {
            had_queues_at = now;
        }
        if pass.progressed > 0 {
            sleep = FIRST_SLEEP;
            spin_until = now + SPIN;
        }
        if now < spin_until {
            std::thread::yield_now();
            continue;
        }
        let mut s = watch.lock();
        if !has_queues && now.duration_since(had_queues_at) >= LINGER {
            // Decide under the lock CREATE_QUEUE starts threads under: a queue created after
            // this check finds no thread and starts one.
            let still_none = weak.upgrade().is_none_or(|m| !m.has_queues());
            if still_none {
                if s.pid == Some(pid) {
                    s.pid = None;
                }
                return;
            }
            had_queues_at = now;
        }
        if !s.kick {
            s = watch.cv.wait_timeout(s, sleep).map(|(g, _)| g).unwrap_or_else(|e| e.into_inner().0);
        }
        if std::mem::take(&mut s.kick) {
            sleep = FIRST_SLEEP;
            spin_until = Instant::now() + SPIN;
        } else {
            sleep = (sleep * 2).min(MAX_SLEEP);
        }
    }
    let mut s = watch.lock();
    if s.pid == Some(pid) {
        s.pid = None;
    }
}
