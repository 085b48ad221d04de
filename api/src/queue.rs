//! User-mode queues: SDMA and PM4 command rings and AQL packet rings, each owning its ring
//! memory and destroyed when dropped.

use crate::device::{Device, Inner, Node};
use crate::error::{st, Error, ErrorKind, Result};
use crate::memory::{Mapped, MemFlags};
use hsakmt_core::abi::hsakmt::{HSA_QUEUE_COMPUTE, HSA_QUEUE_COMPUTE_AQL, HSA_QUEUE_SDMA, HSA_QUEUE_TYPE};
use hsakmt_core::packet::aql::{self, PACKET_LEN};
use hsakmt_core::packet::ring::{AqlRing, CmdFormat, CmdRing, CmdRingError, DoorbellPtr, INVALID_HEADER_WORD};
use hsakmt_core::packet::{pm4, sdma};
use hsakmt_core::queue::QueueRequest;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The KFD raises a smaller ring to this size (`KFD_MIN_QUEUE_RING_SIZE`), so the GPU would
/// wrap at a different place than the producer: smaller rings are refused.
const MIN_RING_BYTES: u64 = 1024;

/// A queue's scheduling priority (the C API's `HSA_QUEUE_PRIORITY`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Priority {
    Minimum,
    Low,
    BelowNormal,
    #[default]
    Normal,
    AboveNormal,
    High,
    Maximum,
}

impl Priority {
    fn raw(self) -> i64 {
        self as i64 - 3
    }
}

/// Options for a new queue on one GPU ([`Device::queue`]); finish with [`sdma`](Self::sdma),
/// [`pm4`](Self::pm4) or [`aql`](Self::aql).
#[must_use]
pub struct QueueBuilder<'d> {
    dev: &'d Device,
    gpu: Node,
    ring_bytes: u64,
    aql_packets: u32,
    percentage: u32,
    priority: Priority,
    sdma_engine: Option<u32>,
}

impl Device {
    /// Start describing a queue on `gpu` (defaults: a 4 KiB command ring, 64 AQL packets,
    /// 100 %, normal priority).
    pub fn queue(&self, gpu: &Node) -> QueueBuilder<'_> {
        QueueBuilder {
            dev: self,
            gpu: gpu.clone(),
            ring_bytes: 4096,
            aql_packets: 64,
            percentage: 100,
            priority: Priority::Normal,
            sdma_engine: None,
        }
    }
}

/// The thunk's queue, destroyed on drop.
struct QueueHandle {
    dev: Arc<Inner>,
    id: u64,
    kfd_id: u32,
}

impl Drop for QueueHandle {
    fn drop(&mut self) {
        let _ = self.dev.ctx().destroy_queue(self.id);
    }
}

impl QueueHandle {
    /// Tell the backend the doorbell was written (the model's engine then runs at once; the
    /// kernel needs nothing).
    fn rung(&self) {
        self.dev.kfd.doorbell_rung(self.kfd_id);
    }
}

impl QueueBuilder<'_> {
    /// Ring size in bytes for SDMA and PM4 queues (a power of two, at least 1 KiB).
    pub fn ring_size(mut self, bytes: u64) -> Self {
        self.ring_bytes = bytes;
        self
    }

    /// Ring size in 64-byte packets for AQL queues (a power of two, at least 16).
    pub fn packets(mut self, n: u32) -> Self {
        self.aql_packets = n;
        self
    }

    /// Share of the GPU (0..=100).
    pub fn percentage(mut self, p: u32) -> Self {
        self.percentage = p;
        self
    }

    pub fn priority(mut self, p: Priority) -> Self {
        self.priority = p;
        self
    }

    /// For SDMA queues: a chosen engine (`HSA_QUEUE_SDMA_BY_ENG_ID`) instead of any.
    pub fn sdma_engine(mut self, id: u32) -> Self {
        self.sdma_engine = Some(id);
        self
    }

    /// `bytes` of ring in an allocation of whole pages (what the thunk allocates).
    fn ring_memory(&self, bytes: u64) -> Result<(Mapped, u64)> {
        let page = hsakmt_linux::page_size() as u64;
        let m = Mapped::new(self.dev, &self.gpu, bytes.div_ceil(page) * page, MemFlags::host().uncached().executable())?;
        Ok((m, bytes))
    }

    /// Create the queue: ring (and for AQL the dispatch ids at `ids`) from memory this crate
    /// owns and never exposes as plain references.
    fn create(
        &self,
        ty: HSA_QUEUE_TYPE,
        (ring, ring_size): (&Mapped, u64),
        ids: u64,
    ) -> Result<(QueueHandle, hsakmt_core::queue::CreatedQueue)> {
        let ty = match (ty, self.sdma_engine) {
            (HSA_QUEUE_SDMA, Some(_)) => hsakmt_core::abi::hsakmt::HSA_QUEUE_SDMA_BY_ENG_ID,
            _ => ty,
        };
        let r = QueueRequest {
            node: self.gpu.id(),
            queue_type: ty,
            percentage: self.percentage,
            priority: self.priority.raw(),
            sdma_engine_id: self.sdma_engine.unwrap_or(0),
            ring: ring.0.addr(),
            ring_size,
            metadata_size: 0,
            error_event: None,
            error_reason: 0,
            rptr: if ids == 0 { 0 } else { ids },
            wptr: if ids == 0 { 0 } else { ids + 8 },
        };
        let mut ctx = self.dev.inner.ctx();
        // SAFETY: the ring (and for AQL the two dispatch ids) is GPU-mapped memory owned by the
        // queue object being built, which destroys the queue (QueueHandle, dropped first)
        // before it frees that memory; Rust reaches it only through the ring producers (raw
        // pointers and atomics), never through references to plain data.
        let q = st("CreateQueue", unsafe { ctx.create_queue(&r) })?;
        let kfd_id = st("CreateQueue", ctx.queue_doorbell(q.queue_id))?.1;
        Ok((QueueHandle { dev: self.dev.inner.clone(), id: q.queue_id, kfd_id }, q))
    }

    fn cmd(self, ty: HSA_QUEUE_TYPE, format: CmdFormat) -> Result<CmdQueue> {
        let size = u32::try_from(self.ring_bytes).ok().filter(|s| s.is_power_of_two() && u64::from(*s) >= MIN_RING_BYTES);
        let size = size.ok_or_else(|| Error::invalid(format!("ring size {}: not a power of two ≥ {MIN_RING_BYTES}", self.ring_bytes)))?;
        let (mem, bytes) = self.ring_memory(u64::from(size))?;
        let (queue, q) = self.create(ty, (&mem, bytes), 0)?;
        // SAFETY: ring, read/write pointers and doorbell come from the queue just created and
        // stay valid until it is destroyed, which happens after the ring producer is dropped
        // (field order of CmdQueue); this is the queue's only producer (behind a mutex).
        let ring = unsafe {
            CmdRing::new(
                format,
                mem.0.addr() as *mut u8,
                size,
                q.wptr as *mut u64,
                q.rptr as *mut u64,
                DoorbellPtr::new(q.doorbell as *mut u64),
            )
        }
        .map_err(|e| Error::invalid(format!("ring set-up: {e:?}")))?;
        Ok(CmdQueue { ring: Mutex::new(ring), queue, _mem: mem })
    }

    /// An SDMA (copy engine) queue.
    pub fn sdma(self) -> Result<SdmaQueue> {
        Ok(SdmaQueue(self.cmd(HSA_QUEUE_SDMA, CmdFormat::Sdma)?))
    }

    /// A PM4 compute queue.
    pub fn pm4(self) -> Result<Pm4Queue> {
        Ok(Pm4Queue(self.cmd(HSA_QUEUE_COMPUTE, CmdFormat::Pm4)?))
    }

    /// An AQL queue (the HSA packet processor), as ROCr makes one.
    pub fn aql(self) -> Result<AqlQueue> {
        let n = self.aql_packets;
        if !n.is_power_of_two() || u64::from(n) * (PACKET_LEN as u64) < MIN_RING_BYTES {
            return Err(Error::invalid(format!("{n} AQL packets: not a power of two ≥ {}", MIN_RING_BYTES / PACKET_LEN as u64)));
        }
        let (mem, bytes) = self.ring_memory(u64::from(n) * PACKET_LEN as u64)?;
        for i in 0..u64::from(n) {
            mem.0.write(i * PACKET_LEN as u64, &INVALID_HEADER_WORD.to_le_bytes())?;
        }
        let ids = Mapped::new(self.dev, &self.gpu, 4096, MemFlags::host().uncached())?;
        let (queue, q) = self.create(HSA_QUEUE_COMPUTE_AQL, (&mem, bytes), ids.0.addr())?;
        // SAFETY: the ring holds INVALID headers (written above), is 64-byte aligned (page
        // aligned allocation) and lives with the queue; the dispatch ids are 8-byte aligned words
        // of `ids`, reached only atomically; the doorbell comes from the queue. All outlive the
        // producer (field order of AqlQueue).
        let ring = unsafe {
            AqlRing::new(mem.0.addr() as *mut u8, n, q.wptr as *mut u64, q.rptr as *mut u64, DoorbellPtr::new(q.doorbell as *mut u64))
        }
        .map_err(|e| Error::invalid(format!("AQL ring set-up: {e:?}")))?;
        Ok(AqlQueue { ring, rung: Mutex::new(0), queue, _ids: ids, _mem: mem })
    }
}

/// A PM4 or SDMA ring. Fields drop in order: producer, queue, ring memory.
struct CmdQueue {
    ring: Mutex<CmdRing<DoorbellPtr>>,
    queue: QueueHandle,
    _mem: Mapped,
}

fn ring_err(e: CmdRingError) -> Error {
    match e {
        CmdRingError::Full => Error::new(ErrorKind::RingFull, "ring full"),
        e => Error::invalid(format!("packet: {e:?}")),
    }
}

impl CmdQueue {
    fn submit<P>(
        &self,
        packets: &[P],
        mut write: impl FnMut(&mut CmdRing<DoorbellPtr>, &P) -> std::result::Result<(), CmdRingError>,
    ) -> Result<()> {
        let mut r = self.ring.lock().unwrap_or_else(|e| e.into_inner());
        // Written packets become visible only at commit: a failure leaves earlier ones unsent
        // only if nothing was committed, so commit what was written before reporting it.
        let mut res = Ok(());
        for p in packets {
            if let Err(e) = write(&mut r, p) {
                res = Err(ring_err(e));
                break;
            }
        }
        r.commit();
        drop(r);
        self.queue.rung();
        res
    }
}

/// An SDMA queue ([`QueueBuilder::sdma`]); destroyed (then its ring freed) when dropped.
pub struct SdmaQueue(CmdQueue);

impl SdmaQueue {
    /// Put `packets` on the ring and ring the doorbell. A ring without room for all of them is
    /// [`ErrorKind::RingFull`] (those that fit were submitted).
    pub fn submit(&self, packets: &[sdma::Repr<'_>]) -> Result<()> {
        self.0.submit(packets, |r, p| r.write_sdma(p))
    }
}

/// A PM4 compute queue ([`QueueBuilder::pm4`]); destroyed (then its ring freed) when dropped.
pub struct Pm4Queue(CmdQueue);

impl Pm4Queue {
    /// Put `packets` on the ring and ring the doorbell (as [`SdmaQueue::submit`]).
    pub fn submit(&self, packets: &[pm4::Repr<'_>]) -> Result<()> {
        self.0.submit(packets, |r, p| r.write_pm4(p))
    }
}

/// An AQL queue ([`QueueBuilder::aql`]); destroyed (then its ring freed) when dropped. Several
/// threads may submit at once.
pub struct AqlQueue {
    ring: AqlRing<DoorbellPtr>,
    /// The highest index the doorbell was rung with.
    rung: Mutex<u64>,
    queue: QueueHandle,
    _ids: Mapped,
    _mem: Mapped,
}

impl AqlQueue {
    /// Write `packet` into the next slot, publish its header and ring the doorbell; returns its
    /// packet index. A ring that stays full for `timeout` is [`ErrorKind::RingFull`].
    pub fn submit_timeout(&self, packet: &aql::Repr, timeout: Duration) -> Result<u64> {
        let t = Instant::now();
        loop {
            if let Some(mut slot) = self.ring.try_reserve() {
                slot.write(packet);
                let i = slot.publish();
                // Producers finish out of order; the doorbell only ever moves forward (a
                // packet processor takes its value as "packets up to here are there").
                let mut last = self.rung.lock().unwrap_or_else(|e| e.into_inner());
                if *last <= i {
                    *last = i;
                    self.ring.ring_doorbell(i);
                }
                drop(last);
                self.queue.rung();
                return Ok(i);
            }
            if t.elapsed() > timeout {
                return Err(Error::new(ErrorKind::RingFull, format!("AQL ring full for {timeout:?}")));
            }
            std::thread::yield_now();
        }
    }

    /// [`submit_timeout`](Self::submit_timeout) with 10 seconds.
    pub fn submit(&self, packet: &aql::Repr) -> Result<u64> {
        self.submit_timeout(packet, Duration::from_secs(10))
    }

    /// Packets the packet processor has finished with (its read index).
    pub fn read_index(&self) -> u64 {
        self.ring.load_read_index()
    }
}
