//! How a stopped queue reaches the process, the way amdgpu tells it (model/ENGINES.md, "Queue
//! errors"):
//!
//! - **AQL queue, a packet the CP rejects.** The CP reports an exception code
//!   (`EC_QUEUE_PACKET_*`). With the runtime enabled (RUNTIME_ENABLE), the KFD ORs
//!   `KFD_EC_MASK(ec)` into the 64-bit word whose address the runtime left in the queue's context
//!   save area header (`err_payload_addr`) and sets the header's `err_event_id`
//!   (kfd_send_exception_to_runtime): ROCr's queue exception handler. Without it, the CP's
//!   firmware stores its own queue-error code in the queue's `queue_inactive_signal`
//!   (`amd_queue_t`, found from the read pointer through `read_dispatch_id_field_base_byte_offset`)
//!   and raises that signal's event: ROCr's queue-events handler, which decodes 2 (dimensions), 4
//!   (group segment), 8 (code object), 32 (format), 64 (workgroup), 128 (registers), 256
//!   (vendor format) — `1 << (ec - 15)` of the exception code.
//! - **A GPU fault** raises the memory-exception event (engine/mod.rs); nothing more here.
//! - **PM4 or SDMA queue, a packet the engine rejects.** The engine hangs on it and nothing is
//!   raised: the hang is found when the queue is preempted. DESTROY_QUEUE of a hung queue on a
//!   GPU with per-queue reset for its kind (capability bit 31 for compute, capability2 bit 0 for
//!   SDMA) resets that queue alone: the process's HW-exception events are set (per-engine reset,
//!   memory not lost) and the queue is destroyed. Without it the scheduler hang ends in a
//!   whole-GPU reset: HW-exception events with `memory_lost`, every other queue of the process on
//!   that GPU is lost ([`QueueError::Reset`]), and DESTROY_QUEUE answers ETIME after removing the
//!   queue (pqm_destroy_queue goes on after an -ETIME from the scheduler).

use super::*;
use crate::engine::EngineKind;

/// `kfd_context_save_area_header`: `err_payload_addr` (u64) and `err_event_id` (u32).
const CSA_ERR_PAYLOAD: usize = 24;
const CSA_ERR_EVENT: usize = 32;

/// `amd_queue_t` (amd_hsa_queue.h): `read_dispatch_id`, the field after it that holds its own
/// offset, and `queue_inactive_signal`.
const AMDQ_READ_DISPATCH_ID: u64 = 128;
const AMDQ_INACTIVE_SIGNAL: u64 = 192;
/// `amd_signal_t`: value, event mailbox, event id.
const SIG_VALUE: u64 = 8;
const SIG_MAILBOX: u64 = 16;
const SIG_EVENT_ID: u64 = 24;

/// The firmware's queue-error code for an exception code (what ROCr's queue-events handler
/// decodes): `1 << (ec - 15)` for the packet exceptions 16..=23; bit 31 for a wave's trap
/// (`s_trap`), which ROCr reports as HSA_STATUS_ERROR_EXCEPTION ("an HSAIL operation resulted
/// in a hardware exception", what a kernel's abort showed before RUNTIME_ENABLE existed).
pub(crate) fn firmware_error_code(ec: u32) -> Option<u64> {
    if ec == EC_QUEUE_WAVE_TRAP {
        return Some(0x8000_0000);
    }
    (16..=23).contains(&ec).then(|| 1u64 << (ec - 15))
}

/// `KFD_EC_MASK(ec)`.
pub(crate) fn ec_mask(ec: u32) -> u64 {
    if (1..=64).contains(&ec) {
        1u64 << (ec - 1)
    } else {
        0
    }
}

impl Model {
    /// An engine stopped `ring` with `e` (called by the engine, without model locks).
    pub(crate) fn queue_stopped(&self, ring: &RingDesc, e: &QueueError) {
        let QueueError::BadPacket { ec, .. } = *e else { return };
        if ring.kind != EngineKind::Aql {
            return; // a hang: found at preemption (queue_hang_found)
        }
        // kfd_set_dbg_ev_from_interrupt: a debugger that enabled the exception hears of it
        // first, and then the runtime is not told.
        if self.debug_raise(ec_mask(ec), crate::debug::Source::Queue(ring.queue_id), None) {
            return;
        }
        let runtime_enabled = matches!(self.lock().runtime, crate::model::Runtime::Enabled { .. });
        if runtime_enabled && ring.ctx_va != 0 {
            self.send_exception_to_runtime(ring.ctx_va, ec_mask(ec));
        } else if let Some(code) = firmware_error_code(ec) {
            self.signal_queue_inactive(ring, code);
        }
    }

    /// kfd_send_exception_to_runtime: OR the mask into the runtime's error word (the kernel's
    /// get_user/put_user on the process's memory; an unreadable header or word is skipped, as
    /// the kernel ignores those faults) and set the error event.
    pub(super) fn send_exception_to_runtime(&self, ctx_va: u64, mask: u64) {
        let mut header = [0u8; CSA_ERR_EVENT + 4];
        if copy_from_user(&mut header, ctx_va as usize).is_err() {
            return;
        }
        let payload = u64::from_le_bytes(header[CSA_ERR_PAYLOAD..CSA_ERR_PAYLOAD + 8].try_into().unwrap_or_default());
        let event_id = u32::from_le_bytes(header[CSA_ERR_EVENT..CSA_ERR_EVENT + 4].try_into().unwrap_or_default());
        let mut word = [0u8; 8];
        if payload != 0 && copy_from_user(&mut word, payload as usize).is_ok() {
            let v = u64::from_le_bytes(word) | mask;
            let _ = copy_to_user(payload as usize, &v.to_le_bytes());
        }
        let mut set = kfd_ioctl_set_event_args { event_id, pad: 0 };
        // An id that names no signal event is the kernel's -EINVAL, ignored there too.
        let _ = self.events.set_reset(self.instance.load(Ordering::Relaxed), set.as_mut_bytes(), true);
    }

    /// The CP firmware's path: the error code into `queue_inactive_signal`'s value, then the
    /// signal's event (mailbox write + interrupt), all through the GPU's page table. A queue
    /// without an `amd_queue_t` behind its read pointer (not ROCr's layout) gets nothing.
    fn signal_queue_inactive(&self, ring: &RingDesc, code: u64) {
        let g = ring.gpu_id;
        if ring.rptr_va < AMDQ_READ_DISPATCH_ID {
            return;
        }
        let Ok(own_offset) = self.gpu_load::<u32>(g, ring.rptr_va + 8, Ordering::Acquire) else { return };
        if u64::from(own_offset) != AMDQ_READ_DISPATCH_ID {
            return;
        }
        let amd_queue = ring.rptr_va - AMDQ_READ_DISPATCH_ID;
        let Ok(signal) = self.gpu_load::<u64>(g, amd_queue + AMDQ_INACTIVE_SIGNAL, Ordering::Acquire) else { return };
        if signal == 0 {
            return;
        }
        if self.gpu_store::<u64>(g, signal.wrapping_add(SIG_VALUE), code, Ordering::Release).is_err() {
            return;
        }
        let Ok(mailbox) = self.gpu_load::<u64>(g, signal.wrapping_add(SIG_MAILBOX), Ordering::Acquire) else { return };
        let Ok(event_id) = self.gpu_load::<u32>(g, signal.wrapping_add(SIG_EVENT_ID), Ordering::Acquire) else { return };
        if mailbox != 0 && self.gpu_store::<u64>(g, mailbox, u64::from(event_id), Ordering::Release).is_ok() {
            self.signal_event_interrupt(event_id, 32);
        }
    }

    /// Preempting queue `q` (DESTROY_QUEUE) found it hung. Returns the errno DESTROY_QUEUE
    /// answers once the queue is gone (0: none). `t` is the caller's queue table.
    pub(super) fn queue_hang_found(&self, t: &mut QueueTable, q: &Queue) -> i32 {
        let n = self.node_queue_props(q.gpu);
        let per_queue = match q.kind {
            EngineKind::Sdma => n.per_sdma_queue_reset,
            EngineKind::Aql | EngineKind::Pm4 => n.per_queue_reset,
        };
        let mut data = kfd_hsa_hw_exception_data {
            reset_type: KFD_HW_EXCEPTION_PER_ENGINE_RESET as u32,
            reset_cause: KFD_HW_EXCEPTION_GPU_HANG as u32,
            memory_lost: 0,
            gpu_id: q.gpu_id,
        };
        let errno = if per_queue {
            0
        } else {
            // kfd_hws_hang → amdgpu_amdkfd_gpu_reset → kgd2kfd_pre_reset: GPU_PRE_RESET, then
            // kgd2kfd_suspend suspends every process (kfd_process_evict_queues with the
            // SUSPEND trigger: QUEUE_EVICTION on each of its GPUs); after the reset,
            // GPU_POST_RESET. The kernel keeps the processes evicted: no QUEUE_RESTORE.
            self.smi_gpu_reset(q.gpu, false, crate::smi::RESET_CAUSE_HWS);
            let pid = self.owner.load(Ordering::Relaxed);
            for g in 0..self.gpus.len() {
                self.smi_queue_eviction(g, pid, hsakmt_core::abi::smi::KFD_QUEUE_EVICTION_TRIGGER_SUSPEND);
            }
            self.smi_gpu_reset(q.gpu, true, "");
            data.reset_type = KFD_HW_EXCEPTION_WHOLE_GPU_RESET as u32;
            data.memory_lost = 1;
            for other in t.queues.values_mut().filter(|o| o.gpu == q.gpu) {
                other.progress.error.get_or_insert(QueueError::Reset);
            }
            libc::ETIME
        };
        self.signal_hw_exception(data);
        errno
    }
}

/// Did the engine leave `q` hung (a PM4 or SDMA packet it rejected)?
pub(super) fn hung(q: &Queue) -> bool {
    q.kind != EngineKind::Aql && matches!(q.progress.error, Some(QueueError::BadPacket { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firmware_codes_are_the_ones_rocr_decodes() {
        // ROCr's AqlQueue::DynamicQueueEventsHandler: 2 invalid dim, 4 group memory, 8 code,
        // 32 format, 64 group too large, 128 VGPRs, 256 vendor-specific format.
        let want = [
            (EC_QUEUE_PACKET_DISPATCH_DIM_INVALID, 2),
            (EC_QUEUE_PACKET_DISPATCH_GROUP_SEGMENT_SIZE_INVALID, 4),
            (EC_QUEUE_PACKET_DISPATCH_CODE_INVALID, 8),
            (EC_QUEUE_PACKET_UNSUPPORTED, 32),
            (EC_QUEUE_PACKET_DISPATCH_WORK_GROUP_SIZE_INVALID, 64),
            (EC_QUEUE_PACKET_DISPATCH_REGISTER_INVALID, 128),
            (EC_QUEUE_PACKET_VENDOR_UNSUPPORTED, 256),
        ];
        for (ec, code) in want {
            assert_eq!(firmware_error_code(ec), Some(code), "ec {ec}");
        }
        assert_eq!(firmware_error_code(EC_QUEUE_WAVE_ABORT), None);
        // KFD_EC_MASK: ROCr's ExceptionHandler tests bit (code - 1).
        assert_eq!(ec_mask(EC_QUEUE_PACKET_UNSUPPORTED), 1 << 19);
        assert_eq!(ec_mask(0), 0);
    }
}
