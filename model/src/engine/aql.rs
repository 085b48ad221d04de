//! The AQL packet processor (HSA Platform System Architecture "Architected Queuing Language",
//! ROCr's amd_signal_t and AMD vendor formats): positions are packet ids.
//!
//! - A slot whose header type is still INVALID is not yet published: Blocked, not consumed.
//!   The header word (header and setup) is loaded with acquire first and the body (bytes
//!   4..64) read only after it is valid: the producer writes the body, then stores the header
//!   with release, so the body it published is the body read.
//! - After a packet completes, its header is set to INVALID (a release store of the 16-bit
//!   header) and then `read_dispatch_id` advances (a release store), as ROCr's own software
//!   packet processor (intercept_queue.cpp) does and its producers expect (they only ever wait
//!   for the header slot to be free).
//! - Completion signal: `start_ts` / `end_ts` are written (model GPU clock), the 64-bit value
//!   is atomically decremented, and when `event_mailbox_ptr` is set the `event_id` is stored
//!   there (64-bit, release) and the interrupt is raised with it as context id. Dependency
//!   signal values are loaded with acquire.
//! - Agent-dispatch packets are for agents with an agent-dispatch processor; a GPU kernel
//!   agent's queue treats them, and unknown vendor formats, as an invalid packet (ROCr's
//!   HSA_STATUS_ERROR_INVALID_PACKET_FORMAT): BadPacket.

use super::{bad, bad_ec, kernels, pm4, Exec, Halt, IbFrame, RingProgress, RunEnd};
use hsakmt_core::abi::kfd::{EC_QUEUE_PACKET_DISPATCH_DIM_INVALID, EC_QUEUE_PACKET_UNSUPPORTED, EC_QUEUE_PACKET_VENDOR_UNSUPPORTED};
use hsakmt_core::packet::aql::{self, Body, PacketType, SignalCondition, PACKET_LEN};
use hsakmt_core::packet::Error as PacketError;
use std::sync::atomic::Ordering;

/// Wave-instructions a machine-code dispatch runs per engine run before it is preempted (at an
/// instruction boundary) and the queue's run ends with `RunEnd::Budget`: the other queues run
/// in between, and a queue destroy waits for at most one quantum.
pub const DISPATCH_QUANTUM: u64 = 1 << 16;

/// Byte offsets inside amd_signal_t (amd_hsa_signal.h).
const SIG_VALUE: u64 = 8;
const SIG_MAILBOX: u64 = 16;
const SIG_START_TS: u64 = 32;

pub(super) fn run(x: &mut Exec<'_>, p: &mut RingProgress, write: u64) -> Result<RunEnd, Halt> {
    let slots = x.ring.ring_bytes / PACKET_LEN as u64;
    let mut buf = Vec::new();
    loop {
        if p.read >= write && p.ib_stack.is_empty() {
            return Ok(RunEnd::Idle);
        }
        if !x.budget_left() {
            return Ok(RunEnd::Budget);
        }
        let at = p.read;
        let va = x.ring.ring_va.wrapping_add((p.read % slots) * PACKET_LEN as u64);
        let header: u32 = x.load(va, Ordering::Acquire)?;
        if header as u8 == PacketType::Invalid as u8 {
            return Err(Halt::Blocked);
        }
        let mut raw = [0u8; PACKET_LEN];
        raw[..4].copy_from_slice(&header.to_le_bytes());
        x.read(va + 4, &mut raw[4..])?;
        let repr = aql::Repr::parse(&aql::Packet::new_unchecked(&raw[..])).map_err(|e| match e {
            PacketError::UnknownType => bad_ec(at, "unknown AQL packet type", EC_QUEUE_PACKET_UNSUPPORTED),
            _ => bad_ec(at, "malformed AQL packet", EC_QUEUE_PACKET_UNSUPPORTED),
        })?;
        if !matches!(repr.body, Body::Pm4Ib(_)) {
            // Only a PM4-IB packet owns indirect buffers in execution.
            p.ib_stack.clear();
        }
        let start = *p.packet_start.get_or_insert_with(|| x.clock());
        let signal = match repr.body {
            Body::KernelDispatch(k) => {
                if k.workgroup_size.contains(&0) || k.grid_size.contains(&0) {
                    return Err(bad_ec(at, "kernel dispatch with an empty grid or workgroup", EC_QUEUE_PACKET_DISPATCH_DIM_INVALID));
                }
                if p.dispatch.is_none() {
                    x.count_dispatch(k.grid_size, k.workgroup_size);
                }
                let d = crate::pcs::Dispatch {
                    kernel_object: k.kernel_object,
                    grid: k.grid_size,
                    wg: k.workgroup_size,
                    index: at,
                    doorbell: x.ring.doorbell,
                };
                if !crate::pcs::sampled(x, &d, || dispatch(x, p, &k, va, at))? {
                    // Preempted: the packet stays at `read` and its dispatch in `p.dispatch`.
                    return Ok(RunEnd::Budget);
                }
                x.steps += 1;
                k.completion_signal
            }
            Body::BarrierAnd(b) => {
                // Satisfied when every (non-null) dependency signal is 0.
                for &s in b.dep_signal.iter().filter(|&&s| s != 0) {
                    if signal_value(x, s)? != 0 {
                        return Err(Halt::Blocked);
                    }
                }
                x.steps += 1;
                b.completion_signal
            }
            Body::BarrierOr(b) => {
                // Satisfied when any (non-null) dependency signal is 0; with none, at once.
                let mut any = false;
                let mut met = false;
                for &s in b.dep_signal.iter().filter(|&&s| s != 0) {
                    any = true;
                    if signal_value(x, s)? == 0 {
                        met = true;
                        break;
                    }
                }
                if any && !met {
                    return Err(Halt::Blocked);
                }
                x.steps += 1;
                b.completion_signal
            }
            Body::BarrierValue(bv) => {
                if bv.signal != 0 {
                    let v = signal_value(x, bv.signal)? & bv.mask;
                    let ok = match bv.cond {
                        SignalCondition::Eq => v == bv.value,
                        SignalCondition::Ne => v != bv.value,
                        SignalCondition::Lt => v < bv.value,
                        SignalCondition::Gte => v >= bv.value,
                    };
                    if !ok {
                        return Err(Halt::Blocked);
                    }
                }
                x.steps += 1;
                bv.completion_signal
            }
            Body::Pm4Ib(ib) => {
                if p.ib_stack.is_empty() {
                    if !ib.ib.valid {
                        return Err(bad(at, "PM4-IB packet without a valid INDIRECT_BUFFER"));
                    }
                    x.steps += 1;
                    p.ib_dwords = 0;
                    p.ib_stack.push(IbFrame { base: ib.ib.ib_base, dwords: ib.ib.size_dwords, pos: 0 });
                }
                if !pm4::drain_ibs(x, p, &mut buf)? {
                    return Ok(RunEnd::Budget);
                }
                ib.completion_signal
            }
            Body::AgentDispatch(_) => return Err(bad_ec(at, "agent dispatch packet on a GPU queue", EC_QUEUE_PACKET_UNSUPPORTED)),
            Body::Vendor { .. } => return Err(bad_ec(at, "unknown AMD vendor-specific packet format", EC_QUEUE_PACKET_VENDOR_UNSUPPORTED)),
        };
        complete(x, signal, start)?;
        x.store(va, u16::from(PacketType::Invalid as u8), Ordering::Release)?;
        p.packet_start = None;
        p.read += 1;
        x.report(p.read)?;
    }
}

/// A kernel dispatch: a model kernel ("HKMK" descriptor), or on gfx90a / gfx1100 the machine
/// code of an AMDHSA kernel descriptor (model/ISA.md), run for at most `DISPATCH_QUANTUM`
/// wave-instructions: `Ok(true)` when it has ended, `Ok(false)` when preempted (kept in
/// `p.dispatch`; the next run goes on with it). The descriptor is read through the GPU page
/// table.
fn dispatch(x: &Exec<'_>, p: &mut RingProgress, k: &aql::KernelDispatch, packet_va: u64, at: u64) -> Result<bool, Halt> {
    crate::isa::wave::run_in_flight(x, &mut p.dispatch, DISPATCH_QUANTUM, || {
        let mut magic = [0u8; 4];
        x.read(k.kernel_object, &mut magic)?;
        let isa = match crate::isa::wave::Isa::of(x.gfx_version()) {
            Some(isa) if u32::from_le_bytes(magic) != hsakmt_core::packet::model_kernel::MAGIC => isa,
            _ => {
                kernels::run(x, k.kernel_object, k.kernarg_address, at)?;
                return Ok(None);
            }
        };
        use crate::isa::descriptor::{KernelDescriptor, ALIGN, LEN};
        use hsakmt_core::abi::kfd::EC_QUEUE_PACKET_DISPATCH_CODE_INVALID as CODE_INVALID;
        if !k.kernel_object.is_multiple_of(ALIGN) {
            return Err(bad_ec(at, "kernel object is not 64-byte aligned", CODE_INVALID));
        }
        let mut b = [0u8; LEN];
        x.read(k.kernel_object, &mut b)?;
        let d = KernelDescriptor::parse(&b)
            .map_err(|_| bad_ec(at, "kernel object is neither a model kernel nor a kernel descriptor", CODE_INVALID))?;
        let l = crate::isa::wave::Launch { isa, desc_va: k.kernel_object, packet_va, index: at, k: *k, user_data: None };
        crate::isa::wave::InFlight::new(&d, &l).map(Some)
    })
}

/// amd_signal_t.value of the signal at `handle`.
fn signal_value(x: &Exec<'_>, handle: u64) -> Result<i64, Halt> {
    Ok(x.load::<u64>(handle.wrapping_add(SIG_VALUE), Ordering::Acquire)? as i64)
}

/// The completion-signal protocol of the CP for ROCr's amd_signal_t.
fn complete(x: &Exec<'_>, handle: u64, start: u64) -> Result<(), Halt> {
    if handle == 0 {
        return Ok(());
    }
    let mut ts = [0u8; 16];
    ts[..8].copy_from_slice(&start.to_le_bytes());
    ts[8..].copy_from_slice(&x.clock().to_le_bytes());
    x.write(handle.wrapping_add(SIG_START_TS), &ts)?;
    x.m.gpu_atomic_u64(x.gpu(), handle.wrapping_add(SIG_VALUE), crate::gpu::AtomicOp::Sub, 1)?;
    let mut mb = [0u8; 12];
    x.read(handle.wrapping_add(SIG_MAILBOX), &mut mb)?;
    let mailbox = u64::from_le_bytes(mb[..8].try_into().unwrap_or_default());
    let event_id = u32::from_le_bytes(mb[8..].try_into().unwrap_or_default());
    if mailbox != 0 {
        x.store(mailbox, u64::from(event_id), Ordering::Release)?;
        x.interrupt(event_id, 32);
    } else if event_id != 0 && x.events_by_id() {
        // Interface 0.4: no event page, the event id alone names the event.
        x.interrupt(event_id, 32);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testing::{gpu_memory, position, BASE};
    use crate::engine::{EngineKind, RingDesc};
    use crate::gpu::trace::{self, Access};
    use hsakmt_core::packet::aql::{Barrier, KernelDispatch, SignalRepr};

    const RING: u64 = BASE;
    const RPTR: u64 = BASE + 0x1000;
    const SIG: u64 = BASE + 0x2000;

    /// The header word is acquired before the body is read, and nothing of the body is read
    /// while the header is INVALID; once done, the INVALID header and then the read pointer are
    /// stored with release.
    #[test]
    fn the_header_is_acquired_before_the_body_is_read() {
        let (m, g, _render) = gpu_memory();
        let mut sig = [0u8; 64];
        SignalRepr::user(1).emit(&mut aql::Signal::new_unchecked(&mut sig[..]));
        m.gpu_write(g, SIG, &sig).unwrap();
        let ring = RingDesc {
            gpu_id: g,
            queue_id: 1,
            kind: EngineKind::Aql,
            ring_va: RING,
            ring_bytes: 4096,
            rptr_va: RPTR,
            wptr_va: 0,
            ctx_va: 0,
            doorbell: 0,
        };
        // A slot whose body is not written yet (garbage: a dispatch with an empty grid, which
        // would stop the queue if it were read) and whose header is still INVALID.
        let garbage = aql::Repr::new(Body::KernelDispatch(KernelDispatch::new(0, 0, 0))).to_bytes();
        m.gpu_write(g, RING, &garbage).unwrap();
        m.gpu_write(g, RING, &u32::from(PacketType::Invalid as u8).to_le_bytes()).unwrap();
        let mut p = RingProgress::default();
        trace::start();
        assert_eq!(m.engine_run(&ring, &mut p, 1, 16), RunEnd::Blocked);
        assert_eq!(trace::take(), [Access::Load { va: RING, len: 4, order: Ordering::Acquire }], "only the header is looked at");
        assert_eq!((p.read, &p.error), (0, &None));
        // The producer writes the body, then publishes the header (release).
        let packet = aql::Repr::new(Body::BarrierAnd(Barrier::default().completion_signal(SIG))).to_bytes();
        m.gpu_write(g, RING + 4, &packet[4..]).unwrap();
        m.gpu_store(g, RING, u32::from_le_bytes(packet[..4].try_into().unwrap()), Ordering::Release).unwrap();
        trace::take();
        assert_eq!(m.engine_run(&ring, &mut p, 1, 16), RunEnd::Idle);
        let t = trace::take();
        assert_eq!(t[0], Access::Load { va: RING, len: 4, order: Ordering::Acquire }, "{t:#?}");
        assert_eq!(t[1], Access::Read { va: RING + 4, len: 60 }, "the body, after the header");
        assert!(!t[2..].iter().any(|a| matches!(a, Access::Read { va, .. } if (RING..RING + 64).contains(va))), "{t:#?}");
        let decrement = position(&t, Access::Rmw { va: SIG + 8, len: 8 });
        let invalid = position(&t, Access::Store { va: RING, len: 2, order: Ordering::Release });
        let rptr = position(&t, Access::Store { va: RPTR, len: 8, order: Ordering::Release });
        assert!(decrement < invalid && invalid < rptr, "{t:#?}");
        assert_eq!(m.gpu_read_obj::<u64>(g, RPTR).unwrap(), 1);
        assert_eq!(m.gpu_read_obj::<i64>(g, SIG + 8).unwrap(), 0, "the body that ran is the published one");
    }

    /// Dependency signals are polled with acquire loads.
    #[test]
    fn barrier_dependencies_are_acquired() {
        let (m, g, _render) = gpu_memory();
        let mut sig = [0u8; 64];
        SignalRepr::user(1).emit(&mut aql::Signal::new_unchecked(&mut sig[..]));
        m.gpu_write(g, SIG, &sig).unwrap();
        let ring = RingDesc {
            gpu_id: g,
            queue_id: 1,
            kind: EngineKind::Aql,
            ring_va: RING,
            ring_bytes: 4096,
            rptr_va: RPTR,
            wptr_va: 0,
            ctx_va: 0,
            doorbell: 0,
        };
        let packet = aql::Repr::new(Body::BarrierAnd(Barrier::new([SIG, 0, 0, 0, 0]))).to_bytes();
        m.gpu_write(g, RING, &packet).unwrap();
        let mut p = RingProgress::default();
        trace::start();
        assert_eq!(m.engine_run(&ring, &mut p, 1, 16), RunEnd::Blocked);
        let t = trace::take();
        assert_eq!(t.last(), Some(&Access::Load { va: SIG + 8, len: 8, order: Ordering::Acquire }), "{t:#?}");
        m.gpu_store(g, SIG + 8, 0u64, Ordering::Release).unwrap();
        assert_eq!(m.engine_run(&ring, &mut p, 1, 16), RunEnd::Idle);
    }
}
