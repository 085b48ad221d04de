//! The AQL packet processor (HSA Platform System Architecture "Architected Queuing Language",
//! ROCr's amd_signal_t and AMD vendor formats): positions are packet ids.
//!
//! - A slot whose header type is still INVALID is not yet published: Blocked, not consumed.
//! - After a packet completes, its header is set to INVALID and then `read_dispatch_id`
//!   advances, as ROCr's own software packet processor (intercept_queue.cpp) does and its
//!   producers expect (they only ever wait for the header slot to be free).
//! - Completion signal: `start_ts` / `end_ts` are written (model GPU clock), the 64-bit value
//!   is atomically decremented, and when `event_mailbox_ptr` is set the `event_id` is written
//!   there (64-bit) and the interrupt is raised with it as context id.
//! - Agent-dispatch packets are for agents with an agent-dispatch processor; a GPU kernel
//!   agent's queue treats them, and unknown vendor formats, as an invalid packet (ROCr's
//!   HSA_STATUS_ERROR_INVALID_PACKET_FORMAT): BadPacket.

use super::{bad, kernels, pm4, Exec, Halt, IbFrame, RingProgress, RunEnd};
use hsakmt_core::packet::aql::{self, Body, PacketType, SignalCondition, PACKET_LEN};
use hsakmt_core::packet::Error as PacketError;

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
        let mut raw = [0u8; PACKET_LEN];
        x.read(va, &mut raw)?;
        if raw[0] == PacketType::Invalid as u8 {
            return Err(Halt::Blocked);
        }
        let repr = aql::Repr::parse(&aql::Packet::new_unchecked(&raw[..])).map_err(|e| {
            bad(
                at,
                match e {
                    PacketError::UnknownType => "unknown AQL packet type",
                    _ => "malformed AQL packet",
                },
            )
        })?;
        if !matches!(repr.body, Body::Pm4Ib(_)) {
            // Only a PM4-IB packet owns indirect buffers in execution.
            p.ib_stack.clear();
        }
        let start = *p.packet_start.get_or_insert_with(|| x.clock());
        let signal = match repr.body {
            Body::KernelDispatch(k) => {
                if k.workgroup_size.contains(&0) || k.grid_size.contains(&0) {
                    return Err(bad(at, "kernel dispatch with an empty grid or workgroup"));
                }
                kernels::run(x, k.kernel_object, k.kernarg_address, at)?;
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
            Body::AgentDispatch(_) => return Err(bad(at, "agent dispatch packet on a GPU queue")),
            Body::Vendor { .. } => return Err(bad(at, "unknown AMD vendor-specific packet format")),
        };
        complete(x, signal, start)?;
        x.write(va, &u16::from(PacketType::Invalid as u8).to_le_bytes())?;
        p.packet_start = None;
        p.read += 1;
        x.report(p.read)?;
    }
}

/// amd_signal_t.value of the signal at `handle`.
fn signal_value(x: &Exec<'_>, handle: u64) -> Result<i64, Halt> {
    Ok(x.read_u64(handle.wrapping_add(SIG_VALUE))? as i64)
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
        x.write(mailbox, &u64::from(event_id).to_le_bytes())?;
        x.interrupt(event_id, 32);
    }
    Ok(())
}
