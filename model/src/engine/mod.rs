//! The model GPU's engines: the command processor of compute queues (AQL and PM4) and the SDMA
//! engines. An engine executes one queue's ring from its read position up to the write pointer
//! the doorbell announced, through the GPU's page table ([`Model::gpu_read`] and friends), so
//! an unmapped address is a [`GpuFault`], never a host crash.
//!
//! This module is the seam between the queue table (`queues.rs`, which owns the queues, watches
//! the doorbells and decides when to run an engine) and the packet execution. The queue table
//! calls [`Model::engine_run`] without holding any model lock.
//!
//! Common rules (model/ENGINES.md has the whole story):
//! - Packets are decoded with the `hsakmt_core::packet` Reprs, read from
//!   `ring_va + position mod ring size` (a packet may wrap around the ring end).
//! - Every packet executed counts one step against the budget, PM4 indirect-buffer packets
//!   included; a call stops at the budget with [`RunEnd::Budget`] and resumes where it was
//!   (also inside an indirect buffer).
//! - A GPU fault anywhere (the ring itself, an IB, a kernel object, a signal) raises the
//!   memory-exception event and stops the queue; so does a malformed packet, as
//!   [`QueueError::BadPacket`] (no event: the KFD raises HW exceptions only on resets).
//! - Memory the host changes concurrently is reached as the hardware's protocols say (see
//!   `gpu.rs`): an AQL header is acquired before its body is read, read pointers, fence and
//!   completion words are stored with release, polled words (WAIT_REG_MEM, POLL_REGMEM,
//!   barrier dependencies, COPY_DATA sources) loaded with acquire, signals decremented with an
//!   atomic read-modify-write; packet bodies, kernel arguments and copied data are plain data.

mod aql;
mod kernels;
mod pm4;
mod sdma;

use crate::gpu::{GpuFault, GpuFaultKind, GpuWord};
use crate::model::Model;
use hsakmt_core::abi::kfd::{kfd_hsa_memory_exception_data, kfd_memory_exception_failure, EC_QUEUE_PACKET_VENDOR_UNSUPPORTED};
use std::sync::atomic::{fence, Ordering};

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
    /// The queue's context save/restore area (its `kfd_context_save_area_header`, where the
    /// runtime left the address of its error word and the id of its queue-error event); 0:
    /// none (SDMA queues, CWSR-less GPUs).
    pub ctx_va: u64,
    /// The queue's doorbell index in its process's doorbell slice (what a wave's
    /// MSG_GET_DOORBELL answers; 0 where not known).
    pub doorbell: u32,
}

/// Why a queue stopped for good (until it is destroyed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueueError {
    /// A GPU page fault (the memory-exception event has been raised).
    Fault(GpuFault),
    /// A packet the engine cannot execute: its position (ring units) and what is wrong. For
    /// a packet inside a PM4 indirect buffer, the position of the ring packet that leads there.
    /// `ec` is the exception code (`EC_QUEUE_PACKET_*`) a compute CP reports for it on an AQL
    /// queue; PM4 and SDMA engines report nothing (their queue hangs, see `queues/errors.rs`).
    BadPacket { at: u64, what: &'static str, ec: u32 },
    /// The queue was lost to a GPU reset (another queue of the GPU hung and the GPU had no
    /// per-queue reset).
    Reset,
}

/// One PM4 indirect buffer in execution.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IbFrame {
    /// GPU VA of the IB (dword aligned).
    pub base: u64,
    /// Its size in dwords.
    pub dwords: u32,
    /// Dwords of it already executed.
    pub pos: u32,
}

/// Deepest nesting of PM4 indirect buffers (ring → IB1 → IB2, as the CP's IB1/IB2 fetchers).
pub const MAX_IB_DEPTH: usize = 2;
/// Most dwords fetched from indirect buffers on behalf of one ring packet (chains included);
/// past it the queue stops with a bad packet, so an IB chain that loops terminates.
pub const MAX_IB_DWORDS: u64 = 1 << 20;

/// The engine's own state of one queue (what the CP keeps internally).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RingProgress {
    /// Read position in the ring's units (see [`EngineKind`]); monotonic, not wrapped.
    pub read: u64,
    /// Set when the queue stopped.
    pub error: Option<QueueError>,
    /// PM4 indirect buffers in execution, outermost first (PM4 rings, and AQL PM4-IB packets):
    /// a packet that blocks or a budget that runs out inside an IB resumes there. The ring
    /// packet that opened them is not consumed (`read` stays on it) until they are done. At
    /// most [`MAX_IB_DEPTH`] frames.
    pub ib_stack: Vec<IbFrame>,
    /// Dwords executed from indirect buffers for the current ring packet (bounded by
    /// [`MAX_IB_DWORDS`]).
    pub ib_dwords: u64,
    /// The queue's SH register file (SET_SH_REG), `model_kernel::dispatch_regs::SH_REGS`
    /// dwords from `SH_REG_BASE`; empty (all zero) until the first SET_SH_REG.
    pub sh_regs: Vec<u32>,
    /// GPU clock when the AQL packet at `read` started executing (kept while it blocks or runs
    /// out of budget, so the completion signal's `start_ts` is when it started).
    pub packet_start: Option<u64>,
    /// The machine-code dispatch of the AQL packet at `read`, preempted with work left (its
    /// waves, LDS and scratch): the next run goes on with it.
    pub dispatch: Option<DispatchInFlight>,
}

/// A preempted machine-code dispatch (`isa::wave::InFlight`), shared by the copies of a
/// queue's progress (the queue table's and the run's); equal only to itself.
#[derive(Clone)]
pub struct DispatchInFlight(pub(crate) std::sync::Arc<std::sync::Mutex<crate::isa::wave::InFlight>>);

impl PartialEq for DispatchInFlight {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for DispatchInFlight {}

impl std::fmt::Debug for DispatchInFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0.try_lock() {
            Ok(d) => write!(f, "{d:?}"),
            Err(_) => f.write_str("InFlight(running)"),
        }
    }
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

/// Why execution of a packet did not complete.
#[derive(Debug)]
pub(crate) enum Halt {
    /// A condition is not met: the packet stays unconsumed.
    Blocked,
    /// The queue stops.
    Stop(QueueError),
}

impl From<GpuFault> for Halt {
    fn from(f: GpuFault) -> Halt {
        Halt::Stop(QueueError::Fault(f))
    }
}

/// A malformed packet; on an AQL queue it is reported as a vendor packet the CP does not
/// support (the PM4 of a PM4-IB packet is AMD's vendor format).
pub(crate) fn bad(at: u64, what: &'static str) -> Halt {
    bad_ec(at, what, EC_QUEUE_PACKET_VENDOR_UNSUPPORTED)
}

/// A malformed packet with the exception code an AQL CP reports for it.
pub(crate) fn bad_ec(at: u64, what: &'static str, ec: u32) -> Halt {
    Halt::Stop(QueueError::BadPacket { at, what, ec })
}

/// One call's execution context.
pub(crate) struct Exec<'a> {
    pub m: &'a Model,
    pub ring: &'a RingDesc,
    pub budget: u32,
    /// Packets executed so far in this call.
    pub steps: u32,
    /// Interrupts raised by the packet being executed, delivered once the read position has
    /// been reported past it: a host woken by the interrupt finds the packet consumed.
    pub pending: std::cell::RefCell<Vec<(u32, u32)>>,
    /// The GPU's counters (`None` for an unknown gpu_id).
    pub counters: Option<&'a crate::counters::GpuCounters>,
}

/// Largest chunk a copy or fill moves per GPU access (bounds the bounce buffer).
pub(crate) const CHUNK: usize = 64 << 10;

impl Exec<'_> {
    pub fn gpu(&self) -> u32 {
        self.ring.gpu_id
    }

    /// The GPU's gfx version (major, minor, stepping); (0, 0, 0) for an unknown gpu_id.
    pub fn gfx_version(&self) -> (u32, u32, u32) {
        self.m.gpus.iter().find(|g| g.gpu_id == self.ring.gpu_id).map_or((0, 0, 0), |g| g.gfx_version)
    }

    pub fn read(&self, va: u64, buf: &mut [u8]) -> Result<(), Halt> {
        Ok(self.m.gpu_read(self.ring.gpu_id, va, buf)?)
    }

    pub fn write(&self, va: u64, data: &[u8]) -> Result<(), Halt> {
        Ok(self.m.gpu_write(self.ring.gpu_id, va, data)?)
    }

    /// A word the host may change meanwhile, loaded with `order`. A word a malformed packet
    /// placed misaligned is read as bytes and then fenced (not single-copy atomic, as on
    /// hardware).
    pub fn load<W: GpuWord>(&self, va: u64, order: Ordering) -> Result<W, Halt> {
        if va.is_multiple_of(W::BYTES as u64) {
            return Ok(self.m.gpu_load(self.ring.gpu_id, va, order)?);
        }
        let mut b = [0u8; 8];
        self.read(va, &mut b[..W::BYTES])?;
        if order != Ordering::Relaxed {
            fence(Ordering::Acquire);
        }
        Ok(W::from_le(&b))
    }

    /// A word the host reads meanwhile, stored with `order` (misaligned: as [`Exec::load`]).
    pub fn store<W: GpuWord>(&self, va: u64, v: W, order: Ordering) -> Result<(), Halt> {
        if va.is_multiple_of(W::BYTES as u64) {
            return Ok(self.m.gpu_store(self.ring.gpu_id, va, v, order)?);
        }
        if order != Ordering::Relaxed {
            fence(Ordering::Release);
        }
        let mut b = [0u8; 8];
        v.put_le(&mut b);
        self.write(va, &b[..W::BYTES])
    }

    /// `buf.len()` bytes of the ring from byte position `pos` (wrapping at the ring end). The
    /// caller keeps `buf` no longer than the ring.
    pub fn read_ring(&self, pos: u64, buf: &mut [u8]) -> Result<(), Halt> {
        let mask = self.ring.ring_bytes - 1;
        let off = pos & mask;
        let first = (buf.len() as u64).min(self.ring.ring_bytes - off) as usize;
        let (a, b) = buf.split_at_mut(first);
        self.read(self.ring.ring_va.wrapping_add(off), a)?;
        if !b.is_empty() {
            self.read(self.ring.ring_va, b)?;
        }
        Ok(())
    }

    /// Report the read position where the producer reads it, then deliver the interrupts the
    /// packets before it raised. The store releases: a producer that acquires the new read
    /// position may reuse the ring space before it (the engine has finished reading it).
    pub fn report(&self, read: u64) -> Result<(), Halt> {
        let va = self.ring.rptr_va;
        let r = match self.ring.kind {
            _ if va == 0 => Ok(()),
            // kfdtest's PM4Queue::Rptr: 32-bit, dwords, wrapped at the ring size.
            EngineKind::Pm4 => self.store(va, (read % (self.ring.ring_bytes / 4)) as u32, Ordering::Release),
            EngineKind::Aql | EngineKind::Sdma => self.store(va, read, Ordering::Release),
        };
        self.deliver_interrupts();
        r
    }

    fn deliver_interrupts(&self) {
        let pending = std::mem::take(&mut *self.pending.borrow_mut());
        for (context_id, valid_bits) in pending {
            match self.m.irq_sink.get() {
                // Interface 0.4: the client's events, named by the context id.
                Some(sink) => sink(context_id & valid_mask(valid_bits)),
                None => {
                    self.m.signal_event_interrupt(context_id, valid_bits);
                }
            }
        }
    }

    /// Do interrupts name events directly (model interface 0.4, where the client keeps no event
    /// page: amd_signal_t.event_mailbox_ptr is 0 and the interrupt alone carries `event_id`)?
    pub fn events_by_id(&self) -> bool {
        self.m.irq_sink.get().is_some()
    }

    /// The GPU clock counter (the one GET_CLOCK_COUNTERS reports).
    pub fn clock(&self) -> u64 {
        self.m.gpu_clock_counter(self.ring.gpu_id)
    }

    /// The CP / SDMA interrupt with `context_id` (of which `valid_bits` bits are delivered),
    /// delivered at the next [`Exec::report`] (or when the run ends).
    pub fn interrupt(&self, context_id: u32, valid_bits: u32) {
        self.pending.borrow_mut().push((context_id, valid_bits));
    }

    /// Count `bytes` of data read by a copy (counters).
    pub fn count_read(&self, bytes: u64) {
        if let Some(c) = self.counters {
            c.read(self.ring.kind, bytes);
        }
    }

    /// Count `bytes` of data written by a copy or fill (counters).
    pub fn count_written(&self, bytes: u64) {
        if let Some(c) = self.counters {
            c.written(self.ring.kind, bytes);
        }
    }

    /// Count a kernel dispatch of `grid` work-items in workgroups of `wg` (counters).
    pub fn count_dispatch(&self, grid: [u32; 3], wg: [u16; 3]) {
        if let Some(c) = self.counters {
            c.dispatch(grid, wg, self.m.wave_lanes(self.ring.gpu_id));
        }
    }

    pub fn budget_left(&self) -> bool {
        self.steps < self.budget
    }
}

/// The low `bits` bits.
fn valid_mask(bits: u32) -> u32 {
    if bits >= 32 {
        u32::MAX
    } else {
        (1u32 << bits) - 1
    }
}

/// The WAIT_REG_MEM / POLL_REGMEM comparison of `(value & mask)` with the reference.
pub(crate) fn compare(f: hsakmt_core::packet::pm4::CompareFunction, v: u32, reference: u32) -> bool {
    use hsakmt_core::packet::pm4::CompareFunction as F;
    match f {
        F::Always => true,
        F::Less => v < reference,
        F::LessEqual => v <= reference,
        F::Equal => v == reference,
        F::NotEqual => v != reference,
        F::GreaterEqual => v >= reference,
        F::Greater => v > reference,
    }
}

/// Smallest ring the engines accept: one AQL packet, one PM4 / SDMA dword.
fn check_ring(ring: &RingDesc) -> Result<(), &'static str> {
    let min = match ring.kind {
        EngineKind::Aql => hsakmt_core::packet::aql::PACKET_LEN as u64,
        EngineKind::Pm4 | EngineKind::Sdma => 4,
    };
    if !ring.ring_bytes.is_power_of_two() || ring.ring_bytes < min {
        return Err("ring size is not a power of two of at least one packet");
    }
    Ok(())
}

impl Model {
    /// Execute `ring` from `progress.read` up to `write` (ring units), at most `budget` packets
    /// (indirect buffers count their packets). Must be called without any model lock held.
    pub fn engine_run(&self, ring: &RingDesc, progress: &mut RingProgress, write: u64, budget: u32) -> RunEnd {
        if progress.error.is_some() {
            return RunEnd::Stopped;
        }
        if let Err(what) = check_ring(ring) {
            return self.stop_queue(
                ring,
                progress,
                QueueError::BadPacket { at: progress.read, what, ec: EC_QUEUE_PACKET_VENDOR_UNSUPPORTED },
            );
        }
        let counters = self.gpu_index(ring.gpu_id).and_then(|i| self.counters.get(i));
        let mut x = Exec { m: self, ring, budget, steps: 0, pending: Default::default(), counters };
        let r = match ring.kind {
            EngineKind::Aql => aql::run(&mut x, progress, write),
            EngineKind::Pm4 => pm4::run(&mut x, progress, write),
            EngineKind::Sdma => sdma::run(&mut x, progress, write),
        };
        // Whatever ended the run, no raised interrupt is lost.
        x.deliver_interrupts();
        if let Some(c) = x.counters {
            c.packets(ring.kind, u64::from(x.steps));
        }
        match r {
            Ok(end) => end,
            Err(Halt::Blocked) => RunEnd::Blocked,
            Err(Halt::Stop(e)) => self.stop_queue(ring, progress, e),
        }
    }

    fn stop_queue(&self, ring: &RingDesc, progress: &mut RingProgress, e: QueueError) -> RunEnd {
        let e = match e {
            // A misaligned atomic is a malformed packet, not a page fault.
            QueueError::Fault(f) if f.kind == GpuFaultKind::Misaligned => {
                QueueError::BadPacket { at: progress.read, what: "misaligned atomic", ec: EC_QUEUE_PACKET_VENDOR_UNSUPPORTED }
            }
            e => e,
        };
        if let QueueError::Fault(f) = &e {
            // kfd_int_process_v9 on a fault that is not retried: the SMI VMFAULT event (the
            // VM's task), then the memory-exception event.
            if let Some(g) = self.gpu_index(ring.gpu_id) {
                let task = self.lock().task;
                self.smi_vmfault(g, task);
            }
            let data = memory_exception(ring.gpu_id, f);
            // kfd_set_dbg_ev_from_interrupt(EC_DEVICE_MEMORY_VIOLATION): a debugger that enabled
            // it is told instead of the runtime's memory-exception event.
            let dev = self.gpu_index(ring.gpu_id).unwrap_or(usize::MAX);
            let ec = hsakmt_core::abi::kfd::EC_DEVICE_MEMORY_VIOLATION;
            if !self.debug_raise(crate::debug::ec_mask(ec), crate::debug::Source::Device(dev), Some(&data)) {
                self.signal_memory_exception(data);
            }
        }
        if logs_errors() {
            // What the packet at the stop looked like, best effort (the ring may be unreadable).
            let mut bytes = [0u8; 64];
            let n = stop_window(ring, &e);
            let off = stop_offset(ring, &e);
            let n = n.min((ring.ring_bytes - off) as usize);
            let shown = if self.gpu_read(ring.gpu_id, ring.ring_va.wrapping_add(off), &mut bytes[..n]).is_ok() { n } else { 0 };
            eprintln!("hsakmt: {}", describe_stop(ring, &e, &bytes[..shown]));
        }
        // The error reaches the process as the KFD delivers it (AQL: the runtime's error word
        // and event, or the queue's inactive signal; PM4/SDMA: nothing until the hung queue is
        // preempted).
        self.queue_stopped(ring, &e);
        progress.error = Some(e);
        RunEnd::Stopped
    }
}

/// `HSAKMT_DEBUG_LEVEL` 3 (errors) or more: the model says why it stopped a queue, as the
/// thunk logs its own errors (read at each stop: stops are rare).
fn logs_errors() -> bool {
    std::env::var("HSAKMT_DEBUG_LEVEL").ok().and_then(|v| v.trim().parse::<i32>().ok()).is_some_and(|l| (3..=7).contains(&l))
}

/// Byte offset in the ring of the position where the queue stopped.
fn stop_offset(ring: &RingDesc, e: &QueueError) -> u64 {
    let at = match e {
        QueueError::BadPacket { at, .. } => *at,
        QueueError::Fault(_) | QueueError::Reset => return 0,
    };
    let unit = match ring.kind {
        EngineKind::Aql => hsakmt_core::packet::aql::PACKET_LEN as u64,
        EngineKind::Pm4 => 4,
        EngineKind::Sdma => 1,
    };
    at.wrapping_mul(unit) & (ring.ring_bytes.max(1) - 1)
}

/// How many bytes of the ring to show: one AQL packet, or the first eight dwords of a PM4 or
/// SDMA packet; nothing for a fault (the faulting address says it).
fn stop_window(ring: &RingDesc, e: &QueueError) -> usize {
    match (e, ring.kind) {
        (QueueError::Fault(_) | QueueError::Reset, _) => 0,
        (_, EngineKind::Aql) => 64,
        _ => 32,
    }
}

/// The log line of a stopped queue: which queue, where in its ring, why, and the packet's
/// dwords (`bytes`, read from the ring at that position).
pub fn describe_stop(ring: &RingDesc, e: &QueueError, bytes: &[u8]) -> String {
    let kind = match ring.kind {
        EngineKind::Aql => "AQL",
        EngineKind::Pm4 => "PM4",
        EngineKind::Sdma => "SDMA",
    };
    match e {
        QueueError::BadPacket { at, what, .. } => {
            let dwords: Vec<String> =
                bytes.chunks_exact(4).map(|d| format!("{:#010x}", u32::from_le_bytes(d.try_into().unwrap()))).collect();
            format!(
                "model GPU {:#x}: {kind} queue {} stopped at ring offset {:#x} (position {at}): {what}; packet dwords [{}]",
                ring.gpu_id,
                ring.queue_id,
                stop_offset(ring, e),
                dwords.join(", ")
            )
        }
        QueueError::Fault(f) => format!(
            "model GPU {:#x}: {kind} queue {} stopped: GPU page fault at {:#x} ({:?}); memory-exception event raised",
            ring.gpu_id, ring.queue_id, f.va, f.kind
        ),
        QueueError::Reset => format!("model GPU {:#x}: {kind} queue {} lost to a GPU reset", ring.gpu_id, ring.queue_id),
    }
}

#[cfg(test)]
mod stop_log_tests {
    use super::*;

    #[test]
    fn a_bad_packet_names_queue_offset_reason_and_dwords() {
        let ring = RingDesc {
            gpu_id: 0x1234,
            queue_id: 7,
            kind: EngineKind::Sdma,
            ring_va: 0x10000,
            ring_bytes: 4096,
            rptr_va: 0,
            wptr_va: 0,
            ctx_va: 0,
            doorbell: 0,
        };
        let e = QueueError::BadPacket { at: 4096 + 24, what: "unknown SDMA opcode", ec: 0 };
        let mut bytes = [0u8; 8];
        bytes[..4].copy_from_slice(&0xffu32.to_le_bytes());
        bytes[4..].copy_from_slice(&0xdead_beefu32.to_le_bytes());
        let line = describe_stop(&ring, &e, &bytes);
        assert_eq!(
            line,
            "model GPU 0x1234: SDMA queue 7 stopped at ring offset 0x18 (position 4120): unknown SDMA opcode; packet dwords [0x000000ff, 0xdeadbeef]"
        );
        let aql = RingDesc { kind: EngineKind::Aql, ..ring };
        assert_eq!(stop_offset(&aql, &QueueError::BadPacket { at: 65, what: "", ec: 0 }), 64);
        assert_eq!(stop_window(&aql, &e), 64);
    }
}

/// The memory-exception data the KFD reports for a GPU VM fault (kfd_signal_vm_fault_event):
/// the faulting page's address, and why (not present, or a write to a read-only page).
pub fn memory_exception(gpu_id: u32, f: &GpuFault) -> kfd_hsa_memory_exception_data {
    let read_only = f.kind == GpuFaultKind::ReadOnly;
    kfd_hsa_memory_exception_data {
        failure: kfd_memory_exception_failure {
            NotPresent: u32::from(!read_only),
            ReadOnly: u32::from(read_only),
            NoExecute: 0,
            imprecise: 0,
        },
        va: f.va & !0xfff,
        gpu_id,
        ErrorType: 0,
    }
}

/// What the engines' unit tests share: a model with GPU memory mapped at [`testing::BASE`].
#[cfg(test)]
pub(crate) mod testing {
    use crate::gpu::trace::Access;
    use crate::model::{Model, ModelConfig};
    use hsakmt_core::abi::kfd::*;
    use std::os::fd::{AsRawFd, OwnedFd};
    use zerocopy::{FromBytes, IntoBytes};

    /// GPU VA of the 64 KiB GTT BO.
    pub(crate) const BASE: u64 = 0x7000_0000_0000;

    fn ioctl<T: IntoBytes + FromBytes>(m: &Model, request: u32, arg: &mut T) {
        // SAFETY: `arg` is a live argument struct; the only address in one (the device-id
        // array of `gpu_memory`) is valid for the call; the BO is the model's own memory.
        unsafe { m.handle_ioctl(u64::from(request), arg.as_mut_bytes().as_mut_ptr().cast()) }.unwrap();
    }

    /// A model with 64 KiB of GTT mapped at BASE on its first GPU: (model, gpu_id, the render
    /// node to keep open).
    pub(crate) fn gpu_memory() -> (Model, u32, OwnedFd) {
        let m = Model::new(ModelConfig::catalogue("mi210")).unwrap();
        let g = m.gpus()[0].clone();
        let render = m.open_render(g.drm_render_minor).unwrap();
        ioctl(&m, AMDKFD_IOC_ACQUIRE_VM, &mut kfd_ioctl_acquire_vm_args { drm_fd: render.as_raw_fd() as u32, gpu_id: g.gpu_id });
        let flags = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
        let mut a =
            kfd_ioctl_alloc_memory_of_gpu_args { va_addr: BASE, size: 64 << 10, handle: 0, mmap_offset: 0, gpu_id: g.gpu_id, flags };
        ioctl(&m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a);
        let ids = [g.gpu_id];
        let mut map =
            kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
        ioctl(&m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut map);
        (m, g.gpu_id, render)
    }

    /// Where `want` is in a trace (panics with the trace if it is not).
    pub(crate) fn position(t: &[Access], want: Access) -> usize {
        t.iter().position(|a| *a == want).unwrap_or_else(|| panic!("{want:?} not in {t:#?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{gpu_memory, position, BASE};
    use super::*;
    use crate::gpu::trace::{self, Access};
    use hsakmt_core::packet::pm4::{self, Command, CompareFunction, ReleaseMem, WaitRegMem, WriteData};
    use hsakmt_core::packet::sdma;

    const RING: u64 = BASE;
    const RPTR: u64 = BASE + 0x1000;
    const DATA: u64 = BASE + 0x2000;

    fn load(va: u64, len: usize) -> Access {
        Access::Load { va, len, order: Ordering::Acquire }
    }

    fn store(va: u64, len: usize) -> Access {
        Access::Store { va, len, order: Ordering::Release }
    }

    /// PM4: WRITE_DATA dwords and the RELEASE_MEM fence are release stores, WAIT_REG_MEM an
    /// acquire load, and the 32-bit read pointer is published with release after them.
    #[test]
    fn pm4_fences_and_polls_are_ordered() {
        let (m, g, _render) = gpu_memory();
        let mut bytes = Vec::new();
        for c in [
            WriteData::memory(DATA, (&[1u32, 2]).into()).into(),
            Command::ReleaseMem(ReleaseMem { data_sel: 2, int_sel: 0, ..ReleaseMem::eop(DATA + 8, 7) }),
            Command::WaitRegMem(WaitRegMem::memory(DATA, CompareFunction::Equal, 1, !0)),
        ] {
            let r = pm4::Repr::compute(c);
            let at = bytes.len();
            bytes.resize(at + r.buffer_len(), 0);
            r.emit(&mut pm4::Packet::new_unchecked(&mut bytes[at..])).unwrap();
        }
        m.gpu_write(g, RING, &bytes).unwrap();
        let ring = RingDesc {
            gpu_id: g,
            queue_id: 1,
            kind: EngineKind::Pm4,
            ring_va: RING,
            ring_bytes: 4096,
            rptr_va: RPTR,
            wptr_va: 0,
            ctx_va: 0,
            doorbell: 0,
        };
        let mut p = RingProgress::default();
        trace::start();
        assert_eq!(m.engine_run(&ring, &mut p, bytes.len() as u64 / 4, 16), RunEnd::Idle);
        let t = trace::take();
        let (d0, d1) = (position(&t, store(DATA, 4)), position(&t, store(DATA + 4, 4)));
        let fence = position(&t, store(DATA + 8, 8));
        let poll = position(&t, load(DATA, 4));
        let last_rptr = t.iter().rposition(|a| *a == store(RPTR, 4)).unwrap();
        assert!(d0 < d1 && d1 < fence && fence < poll && poll < last_rptr, "{t:#?}");
        assert_eq!(m.gpu_read_obj::<u64>(g, DATA + 8).unwrap(), 7);
    }

    /// SDMA: FENCE and TIMESTAMP are release stores, POLL_REGMEM an acquire load, the 64-bit
    /// read pointer a release store.
    #[test]
    fn sdma_fences_and_polls_are_ordered() {
        let (m, g, _render) = gpu_memory();
        let mut bytes = Vec::new();
        let poll = sdma::PollRegmem {
            addr: DATA,
            value: 5,
            mask: !0,
            func: CompareFunction::Equal,
            mem_poll: true,
            hdp_flush: false,
            interval: 10,
            retry_count: 0xfff,
        };
        for r in [sdma::Repr::fence(DATA, 5), sdma::Repr::PollRegmem(poll), sdma::Repr::Timestamp(sdma::Timestamp::GetGlobal(DATA + 8))] {
            let at = bytes.len();
            bytes.resize(at + r.buffer_len(), 0);
            r.emit(&mut sdma::Packet::new_unchecked(&mut bytes[at..])).unwrap();
        }
        m.gpu_write(g, RING, &bytes).unwrap();
        let ring = RingDesc {
            gpu_id: g,
            queue_id: 1,
            kind: EngineKind::Sdma,
            ring_va: RING,
            ring_bytes: 4096,
            rptr_va: RPTR,
            wptr_va: 0,
            ctx_va: 0,
            doorbell: 0,
        };
        let mut p = RingProgress::default();
        trace::start();
        assert_eq!(m.engine_run(&ring, &mut p, bytes.len() as u64, 16), RunEnd::Idle);
        let t = trace::take();
        let fence = position(&t, store(DATA, 4));
        let polled = position(&t, load(DATA, 4));
        let stamp = position(&t, store(DATA + 8, 8));
        let last_rptr = t.iter().rposition(|a| *a == store(RPTR, 8)).unwrap();
        assert!(fence < polled && polled < stamp && stamp < last_rptr, "{t:#?}");
    }
}
