//! The doorbell watcher: a background thread playing the command processors' doorbell
//! monitoring. It holds only a `Weak<Model>` (upgraded for one service pass at a time), so it
//! never keeps a model alive, and exits when the model is gone or when the process has had no
//! queues for a while. CREATE_QUEUE (re)starts it lazily, per process: threads do not survive
//! fork, so a forked child that creates queues gets its own.
//!
//! Polling: after a pass that moved some queue the thread yields and polls again for a short
//! spin window (tens of µs, the latency a GPU would show); then it sleeps on a futex with a
//! timeout that doubles up to 1 ms. `ring_doorbell` (and UPDATE_QUEUE) wake it
//! at once. Idle, it costs about a thousand cheap passes a second, not a core.

use crate::model::Model;
use crate::sys::current_pid;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock, Weak};
use std::time::{Duration, Instant};

/// Held shared by a doorbell watcher thread for a service pass (it may take model locks and
/// runs engines that touch queue state); fork takes it exclusively first (`fork.rs`).
pub(crate) static FORK_GATE: RwLock<()> = RwLock::new(());

const SPIN: Duration = Duration::from_micros(50);
const FIRST_SLEEP: Duration = Duration::from_micros(20);
const MAX_SLEEP: Duration = Duration::from_millis(1);
/// How long the thread stays without queues before it exits.
const LINGER: Duration = Duration::from_millis(200);

/// Watcher threads alive in this process (all models).
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// The wake-up channel between the model and its watcher thread: atomics and a futex, no lock
/// (a forked child must not inherit a locked one).
#[derive(Debug, Default)]
pub(crate) struct Watch {
    /// The process whose watcher thread is running (0: none).
    pid: AtomicU32,
    /// 1: a doorbell was rung since the thread last looked (the futex word).
    kick: AtomicU32,
    passes: AtomicU64,
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec { tv_sec: timeout.as_secs() as libc::time_t, tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32) };
    // SAFETY: FUTEX_WAIT on a live, aligned u32 with a relative timeout; returns at once if the
    // word no longer holds `expected`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: FUTEX_WAKE on a live, aligned u32.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG, i32::MAX, 0usize, 0usize, 0u32) };
}

impl Model {
    /// Start the watcher thread of this process if the model is shared and none runs.
    pub(crate) fn start_watcher(&self) {
        if self.shared.strong_count() == 0 {
            return; // a plain model: queues advance through service_queues / ring_doorbell
        }
        let pid = current_pid();
        let mut cur = self.watch.pid.load(Ordering::SeqCst);
        loop {
            if cur == pid {
                return;
            }
            // 0, or a parent's thread that did not survive fork.
            match self.watch.pid.compare_exchange(cur, pid, Ordering::SeqCst, Ordering::SeqCst) {
                Ok(_) => break,
                Err(now) => cur = now,
            }
        }
        let weak = self.shared.clone();
        let watch = Arc::clone(&self.watch);
        THREADS.fetch_add(1, Ordering::SeqCst);
        let spawned = std::thread::Builder::new().name("hsakmt-model-queues".into()).spawn(move || {
            run(weak, &watch, pid);
            THREADS.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            // No thread: the queues still advance through ring_doorbell / service_queues.
            THREADS.fetch_sub(1, Ordering::SeqCst);
            let _ = self.watch.pid.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
        }
    }

    /// Wake the watcher now.
    pub(crate) fn kick_watcher(&self) {
        self.watch.kick.store(1, Ordering::SeqCst);
        futex_wake(&self.watch.kick);
    }

    /// Is this process's watcher thread running?
    pub fn watcher_running(&self) -> bool {
        self.watch.pid.load(Ordering::SeqCst) == current_pid()
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
        let gate = FORK_GATE.read().unwrap_or_else(|e| e.into_inner());
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
        if !has_queues && now.duration_since(had_queues_at) >= LINGER {
            // Give up the slot first, then look again: a queue created meanwhile either sees
            // the slot free and starts a thread, or is seen here and this thread stays (unless
            // another thread has taken the slot already).
            if watch.pid.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                return;
            }
            let again = weak.upgrade().is_some_and(|m| m.has_queues());
            if !again || watch.pid.compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst).is_err() {
                return;
            }
            had_queues_at = now;
        }
        drop(gate);
        if now < spin_until {
            std::thread::yield_now();
            continue;
        }
        let kicked = watch.kick.swap(0, Ordering::SeqCst) != 0 || {
            futex_wait(&watch.kick, 0, sleep);
            watch.kick.swap(0, Ordering::SeqCst) != 0
        };
        if kicked {
            sleep = FIRST_SLEEP;
            spin_until = Instant::now() + SPIN;
        } else {
            sleep = (sleep * 2).min(MAX_SLEEP);
        }
    }
    let _ = watch.pid.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
}
