//! The SDMA engine (SDMA v4 packet semantics, sdma_v4_0.c / kfdtest's SDMAPacket.cpp; the
//! SDMA 5/6 differences ROCr relies on: GCR and the 30-bit copy count): positions count bytes.

use super::{bad, compare, kernels, Exec, Halt, RingProgress, RunEnd};
use crate::gpu::AtomicOp;
use hsakmt_core::packet::sdma::{self, Repr, Timestamp};
use hsakmt_core::packet::Dwords;
use std::sync::atomic::Ordering;

/// The SDMA trap interrupt delivers 28 bits of context id (kfd_int_process_v9.c).
const TRAP_CONTEXT_BITS: u32 = 28;

/// What the GPU's SDMA generation accepts where generations differ.
#[derive(Clone, Copy, Debug)]
struct Generation {
    /// GCR (op 17): SDMA 5 and later, gfx10+.
    gcr: bool,
    /// Largest COPY_LINEAR count: 30 bits where ROCr uses `count_ext` (gfx90a, gfx10.3+,
    /// gfx11+: amd_gpu_agent.cpp CreateBlitSdma), else 22 bits.
    max_copy: u32,
}

fn generation(gfx: (u32, u32, u32)) -> Generation {
    let wide = matches!(gfx, (9, 0, 10)) || gfx >= (10, 3, 0);
    Generation { gcr: gfx.0 >= 10, max_copy: if wide { sdma::MAX_LINEAR_BYTES_WIDE } else { sdma::MAX_LINEAR_BYTES } }
}

pub(super) fn run(x: &mut Exec<'_>, p: &mut RingProgress, write: u64) -> Result<RunEnd, Halt> {
    let mut buf = Vec::new();
    loop {
        if p.read >= write {
            return Ok(RunEnd::Idle);
        }
        if !x.budget_left() {
            return Ok(RunEnd::Budget);
        }
        let at = p.read;
        if !at.is_multiple_of(4) {
            return Err(bad(at, "SDMA read position not dword aligned"));
        }
        let avail = (write - p.read).min(x.ring.ring_bytes);
        // The header, and for WRITE the count in dword 3.
        let mut h = [0u8; 16];
        let hn = avail.min(16) as usize;
        x.read_ring(p.read, &mut h[..hn])?;
        let len = sdma::Packet::new_unchecked(&h[..]).total_len() as u64;
        if len == 0 {
            return Err(bad(at, "unknown SDMA opcode"));
        }
        if len > avail {
            return Err(bad(at, "packet runs past the write pointer"));
        }
        buf.resize(len as usize, 0);
        x.read_ring(p.read, &mut buf)?;
        exec(x, &buf, at)?;
        x.steps += 1;
        p.read += len;
        x.report(p.read)?;
    }
}

fn exec(x: &Exec<'_>, bytes: &[u8], at: u64) -> Result<(), Halt> {
    let gen = generation(x.gfx_version());
    let pkt = sdma::Packet::new_checked(bytes).map_err(|_| bad(at, "truncated SDMA packet"))?;
    let repr = Repr::parse(&pkt).map_err(|e| {
        bad(
            at,
            match e {
                hsakmt_core::packet::Error::UnknownType => "unknown SDMA opcode",
                _ => "malformed SDMA packet",
            },
        )
    })?;
    match repr {
        Repr::Nop { .. } | Repr::Timestamp(Timestamp::Set(_)) => {}
        Repr::CopyLinear(c) => {
            if c.src_swap != 0 || c.dst_swap != 0 {
                return Err(bad(at, "SDMA endian swap not modelled"));
            }
            if c.count > gen.max_copy {
                return Err(bad(at, "COPY_LINEAR count wider than this GPU's SDMA takes (22 bits)"));
            }
            kernels::copy(x, c.dst, c.src, u64::from(c.count))?;
        }
        // The broadcast form: the same source bytes to two destinations, in order.
        Repr::CopyBroadcast(c) => {
            if c.src_swap != 0 || c.dst1_swap != 0 || c.dst2_swap != 0 {
                return Err(bad(at, "SDMA endian swap not modelled"));
            }
            if c.count > gen.max_copy {
                return Err(bad(at, "COPY_LINEAR count wider than this GPU's SDMA takes (22 bits)"));
            }
            kernels::copy(x, c.dst1, c.src, u64::from(c.count))?;
            kernels::copy(x, c.dst2, c.src, u64::from(c.count))?;
        }
        Repr::WriteUntiled { dst, data, swap } => {
            if swap != 0 {
                return Err(bad(at, "SDMA endian swap not modelled"));
            }
            let bytes: Vec<u8> = match data {
                Dwords::Bytes(b) => b.to_vec(),
                Dwords::Words(w) => w.iter().flat_map(|d| d.to_le_bytes()).collect(),
            };
            x.write(dst, &bytes)?;
            x.count_written(bytes.len() as u64);
        }
        // The fence: a release store, after everything before it.
        Repr::Fence { addr, data, .. } => x.store(addr, data, Ordering::Release)?,
        Repr::Trap { int_context } => x.interrupt(int_context, TRAP_CONTEXT_BITS),
        Repr::PollRegmem(pr) if !pr.mem_poll => register_poll(&pr, at)?,
        Repr::PollRegmem(pr) => {
            let v: u32 = x.load(pr.addr, Ordering::Acquire)?;
            if !compare(pr.func, v & pr.mask, pr.value) {
                return Err(Halt::Blocked);
            }
        }
        Repr::ConstantFill(f) => {
            if f.fill_size > 2 || f.swap != 0 {
                return Err(bad(at, "CONSTANT_FILL size or swap not modelled"));
            }
            let pattern = f.data.to_le_bytes();
            kernels::fill(x, f.dst, &pattern[..1 << f.fill_size], u64::from(f.count))?;
        }
        Repr::Timestamp(Timestamp::GetLocal(a) | Timestamp::GetGlobal(a)) => x.store(a, x.clock(), Ordering::Release)?,
        Repr::Atomic(a) => atomic(x, &a, at)?,
        Repr::Gcr(g) => {
            if !gen.gcr {
                return Err(bad(at, "SDMA GCR on a gfx9 GPU (SDMA 4 has no GCR)"));
            }
            if g.control & sdma::gcr::RANGE_IS_PA != 0 {
                return Err(bad(at, "SDMA GCR over a physical range (no physical addresses in a user queue)"));
            }
            if g.vmid != 0 {
                return Err(bad(at, "SDMA GCR for another VMID"));
            }
            // Invalidate / write back: nothing to do, the model's memory has no GPU caches.
        }
    }
    Ok(())
}

/// POLL_REGMEM in register mode. The only registers an SDMA user queue reaches this way are
/// the HDP flush pair: a write to the flush request register completes at once (the model's
/// memory is coherent, HDP holds nothing), so the done register then shows every bit the write
/// asked for. ROCr's HDP flush ([`sdma::PollRegmem::ROCR_HDP_FLUSH`]) asks the microcode for
/// the flush without naming registers and compares with "always"; it completes. Any other
/// register poll (amdgpu's own form names the NBIO request/done registers, which the model does
/// not map) is refused.
fn register_poll(pr: &sdma::PollRegmem, at: u64) -> Result<(), Halt> {
    let rocr = sdma::PollRegmem::ROCR_HDP_FLUSH;
    if pr.hdp_flush || pr.request_register() != rocr.request_register() || pr.poll_register() != rocr.poll_register() {
        return Err(bad(at, "POLL_REGMEM on registers other than the HDP flush not modelled"));
    }
    // The flush requested the bits in `value`; the done register reads them back at once.
    let done = pr.value;
    if !compare(pr.func, done & pr.mask, pr.value) {
        return Err(bad(at, "HDP flush POLL_REGMEM whose compare can never succeed"));
    }
    Ok(())
}

/// SDMA ATOMIC with a TC atomic opcode: bits 0..4 the operation, bit 5 64-bit, bit 6 "no
/// return" (the SDMA discards the returned value either way).
fn atomic(x: &Exec<'_>, a: &sdma::Atomic, at: u64) -> Result<(), Halt> {
    let wide = a.op & 0x20 != 0;
    let op = match a.op & 0x1f {
        0x07 => Some(AtomicOp::Swap),
        0x0f => Some(AtomicOp::Add),
        0x10 => Some(AtomicOp::Sub),
        0x11 => Some(AtomicOp::SMin),
        0x12 => Some(AtomicOp::UMin),
        0x13 => Some(AtomicOp::SMax),
        0x14 => Some(AtomicOp::UMax),
        0x15 => Some(AtomicOp::And),
        0x16 => Some(AtomicOp::Or),
        0x17 => Some(AtomicOp::Xor),
        0x08 | 0x18 | 0x19 => None,
        _ => return Err(bad(at, "SDMA atomic opcode not modelled")),
    };
    let gpu = x.gpu();
    if let Some(op) = op {
        if wide {
            x.m.gpu_atomic_u64(gpu, a.addr, op, a.src)?;
        } else {
            x.m.gpu_atomic_u32(gpu, a.addr, op, a.src as u32)?;
        }
        return Ok(());
    }
    let (src, cmp) = (a.src, a.cmp);
    // CMPSWAP, INC (wrap to 0 past src), DEC (wrap to src at 0 or above src), TC semantics.
    let f = |old: u64, max: u64| -> u64 {
        match a.op & 0x1f {
            0x08 if old == (cmp & max) => src & max,
            0x08 => old,
            0x18 if old >= (src & max) => 0,
            0x18 => old + 1,
            _ if old == 0 || old > (src & max) => src & max,
            _ => old - 1,
        }
    };
    let old = if wide {
        x.m.gpu_rmw_u64(gpu, a.addr, &mut |o| f(o, u64::MAX))?
    } else {
        u64::from(x.m.gpu_rmw_u32(gpu, a.addr, &mut |o| f(u64::from(o), u64::from(u32::MAX)) as u32)?)
    };
    // A looping compare-swap retries until the compare succeeds.
    if a.op & 0x1f == 0x08 && a.loop_ && old != (cmp & if wide { u64::MAX } else { u64::from(u32::MAX) }) {
        return Err(Halt::Blocked);
    }
    Ok(())
}
