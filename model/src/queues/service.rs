//! Running the queues: one service pass over every queue with work (the engine seam,
//! `engine/mod.rs`), and the doorbell ring that asks for one.

use super::*;

/// What one service pass did.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Pass {
    pub(super) runs: usize,
    /// Runs that moved a queue (its read position, an error, or a used-up budget).
    pub(super) progressed: usize,
    /// Runs that ended with a machine-code dispatch preempted (it ends within its own
    /// instruction budget, so running on terminates).
    pub(super) preempted: usize,
}

impl Model {
    /// One pass over the active queues: every queue whose doorbell announces a write position
    /// other than its read position (or that was blocked) is run on its engine, without any
    /// model lock held. Returns the number of engine runs.
    pub fn service_queues(&self) -> usize {
        self.service_pass().runs
    }

    pub(super) fn service_pass(&self) -> Pass {
        let pid = current_pid();
        let jobs: Vec<(u32, u64, RingDesc, RingProgress, u64)> = {
            let mut t = self.table();
            if t.pid != pid {
                if !t.queues.is_empty() {
                    // Another process's queues (a forked child's copy): not ours to run.
                    let n = t.gpus.len();
                    t.reset(0, 0, n);
                }
                return Pass::default();
            }
            let mut jobs = Vec::new();
            let ids: Vec<u32> = t.queues.keys().copied().collect();
            for id in ids {
                let Some(q) = t.queues.get(&id) else { continue };
                if !q.active() || q.running || q.progress.error.is_some() {
                    continue;
                }
                let Some(write) = t.write_position(q) else { continue };
                if write == q.progress.read && !q.blocked {
                    continue;
                }
                let job = (id, q.serial, q.desc(id), q.progress.clone(), write);
                if let Some(q) = t.queues.get_mut(&id) {
                    q.running = true;
                }
                jobs.push(job);
            }
            jobs
        };
        self.deliver_debugger_runtime_events();
        // Queues a debugger suspended are not run (the board, debug.rs); the others are marked
        // running there until their run ends, so SUSPEND_QUEUES can wait for it.
        let mut jobs = jobs;
        if !jobs.is_empty() {
            let mut ids: Vec<u32> = jobs.iter().map(|j| j.0).collect();
            let refused = self.debug_claim_runs(&mut ids);
            if !refused.is_empty() {
                let mut t = self.table();
                for id in &refused {
                    if let Some(q) = t.queues.get_mut(id) {
                        q.running = false;
                    }
                }
                drop(t);
                self.queue_idle.notify_all();
                jobs.retain(|j| !refused.contains(&j.0));
            }
        }
        let mut pass = Pass::default();
        for (id, serial, desc, mut progress, write) in jobs {
            let before = progress.clone();
            // An engine bug must not wedge the queue (left `running`) or kill the watcher: a
            // panic stops the queue as a bad packet instead.
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.engine_run(&desc, &mut progress, write, BUDGET)));
            let end = match run {
                Ok(end) => end,
                Err(_) => {
                    // What the run left half-done is dropped: the queue stops where it stood.
                    progress = before.clone();
                    progress.error = Some(QueueError::BadPacket {
                        at: progress.read,
                        what: "the engine panicked",
                        ec: hsakmt_core::abi::kfd::EC_QUEUE_PACKET_VENDOR_UNSUPPORTED,
                    });
                    RunEnd::Stopped
                }
            };
            self.engine_runs.fetch_add(1, Ordering::Relaxed);
            pass.runs += 1;
            let mut t = self.table();
            // The queue may have been destroyed (or the id reused) meanwhile.
            if let Some(q) = t.queues.get_mut(&id).filter(|q| q.serial == serial) {
                // Moved: a packet consumed, an indirect buffer advanced, an error, or a budget
                // used up with work left.
                if progress != before || end == RunEnd::Budget {
                    pass.progressed += 1;
                }
                if end == RunEnd::Budget && progress.dispatch.is_some() {
                    pass.preempted += 1;
                }
                q.blocked = end == RunEnd::Blocked;
                q.progress = progress;
                q.running = false;
            }
            drop(t);
            self.debug_run_done(id);
            self.queue_idle.notify_all();
        }
        pass
    }

    /// What a debugger sent back to this process's runtime (SEND_RUNTIME_EVENT): the memory
    /// fault event of a device, exception bits to a queue's runtime error word.
    fn deliver_debugger_runtime_events(&self) {
        let (queues, faults) = self.debug_take_runtime_events();
        for (_, data) in faults {
            self.signal_memory_exception(data);
        }
        for (id, mask) in queues {
            let ctx = self.table().queues.get(&id).map(|q| q.ctx_va);
            if let Some(ctx) = ctx.filter(|c| *c != 0) {
                self.send_exception_to_runtime(ctx, mask);
            }
        }
    }

    /// Tell the watcher a queue's doorbell was written (hsaKmtQueueRingDoorbell). A model
    /// without a watcher thread (built with [`Model::new`]) services its queues now, on the
    /// caller's thread: one pass, and more while a machine-code dispatch was preempted (it ends
    /// within its instruction budget). Other unfinished work (a ring whose packets outlast a
    /// run's budget) waits for the next doorbell, as before: a PM4 ring whose write pointer
    /// runs far ahead would otherwise keep the caller forever.
    pub fn ring_doorbell(&self, queue_id: u32) -> Result<(), i32> {
        {
            let t = self.table();
            if t.pid != current_pid() || !t.queues.contains_key(&queue_id) {
                return Err(EINVAL);
            }
        }
        if self.shared.strong_count() == 0 {
            while self.service_pass().preempted > 0 {}
        } else {
            self.start_watcher();
            self.kick_watcher();
        }
        Ok(())
    }

    /// Engine runs since the model was made (all queues).
    pub fn engine_runs(&self) -> u64 {
        self.engine_runs.load(Ordering::Relaxed)
    }
}
