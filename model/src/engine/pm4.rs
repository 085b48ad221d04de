//! The compute CP's PM4 packet processor (gfx9 MEC semantics, soc15d.h / kfdtest's PM4 packets):
//! PM4 rings and the indirect buffers of PM4 rings and AQL PM4-IB packets.

use super::{bad, compare, kernels, Exec, Halt, IbFrame, RingProgress, RunEnd, MAX_IB_DEPTH, MAX_IB_DWORDS};
use hsakmt_core::packet::model_kernel::dispatch_regs as regs;
use hsakmt_core::packet::pm4::{self, Command, IndirectBuffer};
use std::sync::atomic::Ordering;

/// An INDIRECT_BUFFER packet is 4 dwords.
const IB_PACKET_DWORDS: u64 = 4;

/// What a packet asks of its fetcher.
enum Next {
    Done,
    Ib(IndirectBuffer),
    /// A machine-code DISPATCH_DIRECT was preempted (its state in `RingProgress::dispatch`):
    /// the packet is not consumed; the next run executes it again, which goes on with it.
    Preempted,
}

/// `DISPATCH_INITIATOR` bits: USE_THREAD_DIMENSIONS (the packet's dimensions count threads,
/// not workgroups) and CS_W32_EN (gfx10+: wave32).
const USE_THREAD_DIMENSIONS: u32 = 1 << 5;
const CS_W32_EN: u32 = 1 << 15;

/// Run a PM4 ring (positions in dwords).
pub(super) fn run(x: &mut Exec<'_>, p: &mut RingProgress, write: u64) -> Result<RunEnd, Halt> {
    let ring_dwords = x.ring.ring_bytes / 4;
    let mut buf = Vec::new();
    loop {
        if !p.ib_stack.is_empty() {
            if !drain_ibs(x, p, &mut buf)? {
                return Ok(RunEnd::Budget);
            }
            // The INDIRECT_BUFFER that opened them is consumed now.
            p.read += IB_PACKET_DWORDS;
            x.report(p.read)?;
            continue;
        }
        if p.read >= write {
            return Ok(RunEnd::Idle);
        }
        if !x.budget_left() {
            return Ok(RunEnd::Budget);
        }
        let at = p.read;
        let avail = (write - p.read).min(ring_dwords);
        let mut h = [0u8; 4];
        x.read_ring(p.read * 4, &mut h)?;
        let len = packet_dwords(&h).ok_or_else(|| bad(at, "not a PM4 type-3 packet"))?;
        if len > avail {
            return Err(bad(at, "packet runs past the write pointer"));
        }
        buf.resize(len as usize * 4, 0);
        x.read_ring(p.read * 4, &mut buf)?;
        let next = exec(x, p, &buf, at)?;
        x.steps += 1;
        match next {
            Next::Preempted => return Ok(RunEnd::Budget),
            Next::Done => {
                p.read += len;
                x.report(p.read)?;
            }
            Next::Ib(ib) => {
                if len != IB_PACKET_DWORDS {
                    return Err(bad(at, "INDIRECT_BUFFER of a wrong length"));
                }
                p.ib_dwords = 0;
                p.ib_stack.push(IbFrame { base: ib.ib_base, dwords: ib.size_dwords, pos: 0 });
            }
        }
    }
}

/// A type-3 header's packet length in dwords.
fn packet_dwords(header: &[u8; 4]) -> Option<u64> {
    let p = pm4::Packet::new_unchecked(&header[..]);
    (p.packet_type() == 3).then(|| p.total_len() as u64 / 4)
}

/// Execute the indirect buffers on `p.ib_stack` until they are all done (`true`) or the budget
/// runs out (`false`). `p.read` is the position of the ring packet that opened them.
pub(super) fn drain_ibs(x: &mut Exec<'_>, p: &mut RingProgress, buf: &mut Vec<u8>) -> Result<bool, Halt> {
    let at = p.read;
    loop {
        while p.ib_stack.last().is_some_and(|f| f.pos >= f.dwords) {
            p.ib_stack.pop();
        }
        let Some(&top) = p.ib_stack.last() else { return Ok(true) };
        if !x.budget_left() {
            return Ok(false);
        }
        let va = top.base.wrapping_add(u64::from(top.pos) * 4);
        let mut h = [0u8; 4];
        x.read(va, &mut h)?;
        let len = packet_dwords(&h).ok_or_else(|| bad(at, "not a PM4 type-3 packet in an indirect buffer"))?;
        if u64::from(top.pos) + len > u64::from(top.dwords) {
            return Err(bad(at, "packet runs past the end of its indirect buffer"));
        }
        if p.ib_dwords + len > MAX_IB_DWORDS {
            return Err(bad(at, "indirect buffers exceed the model's bound (a loop?)"));
        }
        buf.resize(len as usize * 4, 0);
        x.read(va, buf)?;
        let next = exec(x, p, buf, at)?;
        x.steps += 1;
        if matches!(next, Next::Preempted) {
            return Ok(false);
        }
        p.ib_dwords += len;
        let depth = p.ib_stack.len();
        let Some(frame) = p.ib_stack.last_mut() else { return Ok(true) };
        match next {
            Next::Done => frame.pos += len as u32,
            Next::Preempted => {}
            // A chained IB replaces the rest of the current one.
            Next::Ib(ib) if ib.chain => *frame = IbFrame { base: ib.ib_base, dwords: ib.size_dwords, pos: 0 },
            Next::Ib(ib) => {
                frame.pos += len as u32;
                if depth >= MAX_IB_DEPTH {
                    return Err(bad(at, "indirect buffers nested too deep"));
                }
                p.ib_stack.push(IbFrame { base: ib.ib_base, dwords: ib.size_dwords, pos: 0 });
            }
        }
    }
}

/// The memory destinations of WRITE_DATA (1 sync memory, 2 L2, 5 async memory) and COPY_DATA
/// (2 L2, 5 memory).
fn memory_dst(sel: u8) -> bool {
    matches!(sel, 1 | 2 | 5)
}

fn sh(p: &RingProgress, reg: u16) -> u32 {
    p.sh_regs.get(usize::from(reg)).copied().unwrap_or(0)
}

/// A DISPATCH_DIRECT of machine code, as kfdtest's `Dispatch` issues one: COMPUTE_PGM_LO/HI
/// hold the code's entry address (256-byte aligned) >> 8, COMPUTE_PGM_RSRC1/2 the resource
/// words, COMPUTE_USER_DATA_0..15 the user SGPRs, COMPUTE_NUM_THREAD_X/Y/Z the workgroup size,
/// COMPUTE_TMPRING_SIZE the scratch per wave; the packet's dimensions count threads with
/// USE_THREAD_DIMENSIONS, workgroups without; CS_W32_EN asks for wave32 (gfx11).
#[allow(clippy::too_many_arguments)]
fn machine_code(
    x: &Exec<'_>,
    p: &RingProgress,
    isa: crate::isa::wave::Isa,
    pgm: u64,
    d: &pm4::DispatchDirect,
    threads: [u32; 3],
    user: [u32; 16],
    at: u64,
) -> Result<crate::isa::wave::InFlight, Halt> {
    use crate::isa::descriptor::{props, KernelDescriptor};
    use crate::isa::wave::Isa;
    if (regs::COMPUTE_START_X..regs::COMPUTE_START_X + 3).any(|r| sh(p, r) != 0) {
        return Err(bad(at, "DISPATCH_DIRECT with a non-zero COMPUTE_START (not modelled)"));
    }
    let grid =
        if d.dispatch_initiator & USE_THREAD_DIMENSIONS != 0 { d.dim } else { [0, 1, 2].map(|i| d.dim[i].saturating_mul(threads[i])) };
    let rsrc2 = sh(p, regs::COMPUTE_PGM_RSRC2);
    let wave32 = isa == Isa::Gfx11 && d.dispatch_initiator & CS_W32_EN != 0;
    let lanes = if wave32 { 32 } else { 64 };
    // Scratch per wave (1 KiB units) shared out among its lanes, with SCRATCH_EN.
    let wave_scratch = (sh(p, regs::COMPUTE_TMPRING_SIZE) >> 12 & 0x1fff) * 1024;
    let desc = KernelDescriptor {
        group_segment_fixed_size: (rsrc2 >> 15 & 0x1ff) * 512,
        private_segment_fixed_size: if rsrc2 & 1 != 0 { wave_scratch / lanes } else { 0 },
        rsrc1: sh(p, regs::COMPUTE_PGM_RSRC1),
        rsrc2,
        properties: if wave32 { props::WAVEFRONT_SIZE32 } else { 0 },
        ..KernelDescriptor::default()
    };
    let mut k = hsakmt_core::packet::aql::KernelDispatch::new(pgm, grid[0], threads[0] as u16);
    k.grid_size = grid;
    k.workgroup_size = threads.map(|t| t as u16);
    x.count_dispatch(grid, k.workgroup_size);
    let l = crate::isa::wave::Launch { isa, desc_va: pgm, packet_va: 0, index: at, k, user_data: Some(user) };
    crate::isa::wave::InFlight::new(&desc, &l)
}

/// Execute one packet (`bytes`: exactly the packet).
fn exec(x: &Exec<'_>, p: &mut RingProgress, bytes: &[u8], at: u64) -> Result<Next, Halt> {
    let pkt = pm4::Packet::new_checked(bytes).map_err(|_| bad(at, "truncated PM4 packet"))?;
    let repr = pm4::Repr::parse(&pkt).map_err(|e| {
        bad(
            at,
            match e {
                hsakmt_core::packet::Error::UnknownType => "unknown PM4 opcode",
                _ => "malformed PM4 packet",
            },
        )
    })?;
    match repr.command {
        Command::Nop { .. } | Command::EventWrite(_) => {}
        // No caches to act on; the form must be the GPU's (gfx9: 7 dwords, gfx10+: 8 with
        // GCR_CNTL).
        Command::AcquireMem(a) => {
            if a.gcr_cntl.is_some() != (x.gfx_version().0 >= 10) {
                return Err(bad(at, "ACQUIRE_MEM form of another GPU generation"));
            }
        }
        Command::WriteData(w) => {
            if !memory_dst(w.dst_sel) {
                return Err(bad(at, "WRITE_DATA destination not modelled (registers, GDS)"));
            }
            // Each dword is a release store: a host may poll any of them (kfdtest's fences).
            if w.wr_one_addr {
                // Every dword goes to the same address; the last one is what stays.
                if let Some(last) = w.data.iter().last() {
                    x.store(w.dst_addr, last, Ordering::Release)?;
                }
            } else {
                for (i, d) in w.data.iter().enumerate() {
                    x.store(w.dst_addr.wrapping_add(4 * i as u64), d, Ordering::Release)?;
                }
            }
        }
        Command::ReleaseMem(r) => {
            match r.data_sel {
                0 => {}
                // The end-of-pipe fence: a release store, after everything before it.
                1 => x.store(r.addr, r.data as u32, Ordering::Release)?,
                2 => x.store(r.addr, r.data, Ordering::Release)?,
                3 => x.store(r.addr, x.clock(), Ordering::Release)?,
                4 => x.store(r.addr, crate::sys::boottime_ns(), Ordering::Release)?,
                _ => return Err(bad(at, "RELEASE_MEM data select reserved")),
            }
            match r.int_sel {
                // 3: wait for the write confirm, no interrupt (kfdtest's polling form).
                0 | 3 => {}
                1 | 2 => x.interrupt(r.int_ctxid, 32),
                _ => return Err(bad(at, "RELEASE_MEM conditional interrupt not modelled")),
            }
        }
        Command::WaitRegMem(w) => {
            if !w.memory || w.operation != 0 {
                return Err(bad(at, "WAIT_REG_MEM on registers not modelled"));
            }
            let v: u32 = x.load(w.addr, Ordering::Acquire)?;
            if !compare(w.function, v & w.mask, w.reference) {
                return Err(Halt::Blocked);
            }
        }
        Command::IndirectBuffer(ib) => {
            if !ib.valid {
                return Err(bad(at, "INDIRECT_BUFFER without VALID"));
            }
            return Ok(Next::Ib(ib));
        }
        Command::SetShReg(s) => {
            let start = usize::from(s.reg_offset);
            if start + s.values.len() > regs::SH_REGS {
                return Err(bad(at, "SET_SH_REG outside the SH register file"));
            }
            if p.sh_regs.is_empty() {
                p.sh_regs = vec![0; regs::SH_REGS];
            }
            for (slot, v) in p.sh_regs[start..].iter_mut().zip(s.values.iter()) {
                *slot = v;
            }
        }
        Command::DispatchDirect(d) => {
            let threads = [regs::COMPUTE_NUM_THREAD_X, regs::COMPUTE_NUM_THREAD_Y, regs::COMPUTE_NUM_THREAD_Z].map(|r| sh(p, r) & 0x3ff);
            if d.dim.contains(&0) || threads.contains(&0) {
                return Err(bad(at, "DISPATCH_DIRECT with an empty grid or workgroup"));
            }
            let pgm = regs::pgm_va(sh(p, regs::COMPUTE_PGM_LO), sh(p, regs::COMPUTE_PGM_HI));
            let mut regs_now = [0u32; 16];
            for (i, v) in regs_now.iter_mut().enumerate() {
                *v = sh(p, regs::COMPUTE_USER_DATA_0 + i as u16);
            }
            let mut slot = p.dispatch.take();
            let done = crate::isa::wave::run_in_flight(x, &mut slot, super::aql::DISPATCH_QUANTUM, || {
                let mut magic = [0u8; 4];
                x.read(pgm, &mut magic)?;
                let isa = crate::isa::wave::Isa::of(x.gfx_version());
                let Some(isa) = isa.filter(|_| u32::from_le_bytes(magic) != hsakmt_core::packet::model_kernel::MAGIC) else {
                    // The model's own kernels: COMPUTE_PGM names an "HKMK" descriptor.
                    let kernarg = u64::from(regs_now[0]) | u64::from(regs_now[1]) << 32;
                    let grid = [0, 1, 2].map(|i| d.dim[i].saturating_mul(threads[i]));
                    x.count_dispatch(grid, threads.map(|t| t as u16));
                    kernels::run(x, pgm, kernarg, at)?;
                    return Ok(None);
                };
                machine_code(x, p, isa, pgm, &d, threads, regs_now, at).map(Some)
            })?;
            p.dispatch = slot;
            if !done {
                return Ok(Next::Preempted);
            }
        }
        Command::CopyData(c) => {
            let wide = c.count_sel;
            let value = match c.src_sel {
                1 | 2 if wide => x.load::<u64>(c.src, Ordering::Acquire)?,
                1 | 2 => u64::from(x.load::<u32>(c.src, Ordering::Acquire)?),
                5 => c.src,
                9 => x.clock(),
                10 => crate::sys::boottime_ns(),
                _ => return Err(bad(at, "COPY_DATA source not modelled")),
            };
            if !matches!(c.dst_sel, 2 | 5) {
                return Err(bad(at, "COPY_DATA destination not modelled"));
            }
            if wide {
                x.store(c.dst, value, Ordering::Release)?;
            } else {
                x.store(c.dst, value as u32, Ordering::Release)?;
            }
        }
    }
    Ok(Next::Done)
}
