//! The model GPU's engines: the command processor of compute queues (AQL and PM4) and the SDMA
//! engines. An engine executes one queue's ring from its read position up to the write pointer
//! the doorbell announced, through the GPU's page table ([`Model::gpu_read`] and friends), so
//! an unmapped address is a [`GpuFault`], never a host crash.
//!
//! This module is the seam between the queue table (`queues.rs`, which owns the queues, watches
//! the doorbells and decides when to run an engine) and the packet execution. The queue table
//! calls [`Model::engine_run`] without holding any model lock.

use crate::gpu::GpuFault;
use crate::model::Model;

/// Which packet processor a queue is fed to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// Compute queue in AQL mode (KFD_IOC_QUEUE_TYPE_COMPUTE_AQL): 64-byte AQL packets; the
    /// read/write positions count packets (dispatch ids).
    Aql,
    /// Compute queue in PM4 mode (KFD_IOC_QUEUE_TYPE_COMPUTE): PM4 type-3 packets; positions
    /// count dwords.
    Pm4,
    /// SDMA queue (KFD_IOC_QUEUE_TYPE_SDMA, _SDMA_XGMI, _SDMA_BY_ENG_ID): SDMA packets;
    /// positions count bytes.
    Sdma,
}

/// What an engine needs to know about one queue: the fields of its MQD, as CREATE_QUEUE /
/// UPDATE_QUEUE left them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RingDesc {
    pub gpu_id: u32,
    pub queue_id: u32,
    pub kind: EngineKind,
    /// GPU VA of the ring.
    pub ring_va: u64,
    /// Ring size in bytes, a power of two.
    pub ring_bytes: u64,
    /// GPU VA where the engine reports its read position (AQL: amd_queue_t.read_dispatch_id,
    /// 64-bit; PM4: 32-bit dwords wrapped at the ring size; SDMA: 64-bit bytes). 0: none.
    pub rptr_va: u64,
    /// GPU VA of the write pointer the producer keeps (informational; the doorbell value is
    /// what the engine obeys).
    pub wptr_va: u64,
}

/// Why a queue stopped for good (until it is destroyed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// A GPU page fault (the memory-exception event has been raised).
    Fault(GpuFault),
    /// A packet the engine cannot execute: its position (ring units) and what is wrong.
    BadPacket { at: u64, what: &'static str },
}

/// The engine's own state of one queue (what the CP keeps internally).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingProgress {
    /// Read position in the ring's units (see [`EngineKind`]); monotonic, not wrapped.
    pub read: u64,
    /// Set when the queue stopped.
    pub error: Option<QueueError>,
}

/// How a call to [`Model::engine_run`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunEnd {
    /// Everything up to the write position is executed.
    Idle,
    /// Waiting on something outside the engine (a barrier's dependency signal, a WAIT_REG_MEM
    /// or POLL_REGMEM condition, an AQL header not yet valid): run again later.
    Blocked,
    /// The step budget ran out with work left.
    Budget,
    /// The queue is stopped (see [`RingProgress::error`]).
    Stopped,
}

/// Doorbell value → write position in the ring's units. AQL doorbells carry the id of the last
/// packet made available (HSA semantics), so the write position is one past it; PM4 (dwords)
/// and SDMA (bytes) doorbells carry the write pointer itself.
pub fn write_position(kind: EngineKind, doorbell: u64) -> u64 {
    match kind {
        EngineKind::Aql => doorbell.wrapping_add(1),
        EngineKind::Pm4 | EngineKind::Sdma => doorbell,
    }
}

impl Model {
    /// Execute `ring` from `progress.read` up to `write` (ring units), at most `budget` packets
    /// (indirect buffers count their packets). Must be called without any model lock held.
    #[allow(dead_code)] // called by the queue table once it lands
    pub(crate) fn engine_run(&self, ring: &RingDesc, progress: &mut RingProgress, write: u64, budget: u32) -> RunEnd {
        let _ = (ring, write, budget);
        if progress.error.is_some() {
            return RunEnd::Stopped;
        }
        // Placeholder until the engines land: nothing is executed.
        RunEnd::Idle
    }
}
