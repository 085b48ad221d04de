//! SDMA packets as the system DMA engines fetch them from an SDMA ring: SDMA 4.x (gfx9) and
//! SDMA 5.x/6.x (gfx10/gfx11), whose layouts agree for every packet here. Layouts follow the
//! public `sdma_pkt_open.h` definitions (amdgpu's vega10/navi10/sdma_v6_0_0 headers, ROCr's
//! `sdma_registers.h`): dword 0 holds the opcode in bits 0..7 and the sub-opcode in bits 8..15,
//! with per-packet header bits above.
//!
//! Where the generations differ the view reads the widest form and the engine that executes a
//! packet decides what its generation accepts: the COPY_LINEAR count is 22 bits on SDMA 4.0–4.2
//! and 30 bits where ROCr uses the wide form (gfx90a, gfx10.3+, gfx11+; [`MAX_LINEAR_BYTES_WIDE`]);
//! GCR exists from SDMA 5 (gfx10) on.

use super::{bit_accessors, fits, get_dword, get_u64, set_dword, set_u64, Dwords, Error, Result};

/// SDMA opcodes.
pub mod op {
    pub const NOP: u8 = 0;
    pub const COPY: u8 = 1;
    pub const WRITE: u8 = 2;
    pub const FENCE: u8 = 5;
    pub const TRAP: u8 = 6;
    pub const POLL_REGMEM: u8 = 8;
    pub const ATOMIC: u8 = 10;
    pub const CONST_FILL: u8 = 11;
    pub const TIMESTAMP: u8 = 13;
    /// Cache control (GCR_REQ), SDMA 5 and later (gfx10+).
    pub const GCR: u8 = 17;
}

/// SDMA sub-opcodes.
pub mod sub_op {
    pub const COPY_LINEAR: u8 = 0;
    pub const WRITE_UNTILED: u8 = 0;
    pub const TIMESTAMP_SET: u8 = 0;
    pub const TIMESTAMP_GET_LOCAL: u8 = 1;
    pub const TIMESTAMP_GET_GLOBAL: u8 = 2;
    /// GCR as the kernel's own rings send it (`SDMA_OP_GCR_REQ`, sub-op 0).
    pub const GCR_REQ: u8 = 0;
    /// GCR as user mode sends it (ROCr's `SDMA_SUBOP_USER_GCR`).
    pub const USER_GCR: u8 = 1;
}

/// Largest COPY_LINEAR / CONSTANT_FILL byte count on SDMA 4.0–4.2 (22-bit count field holds
/// count - 1).
pub const MAX_LINEAR_BYTES: u32 = 1 << 22;
/// Largest COPY_LINEAR byte count where the count field is 30 bits (SDMA 4.4 on gfx90a, SDMA
/// 5.2+ and 6: ROCr's `count_ext`, used with copies of up to 0x3fffffff bytes).
pub const MAX_LINEAR_BYTES_WIDE: u32 = 1 << 30;
/// Largest WRITE_UNTILED dword count (20-bit field holds count - 1).
pub const MAX_WRITE_DWORDS: usize = 1 << 20;

mod field {
    use crate::packet::{bits, dword, Bits};

    pub const OP: Bits = bits(0, 0, 7);
    pub const SUB_OP: Bits = bits(0, 8, 15);

    // NOP
    pub const NOP_COUNT: Bits = bits(0, 16, 29);

    // COPY_LINEAR (and its broadcast form, header bit 27: two destinations)
    pub const CL_TMZ: Bits = bits(0, 18, 18);
    pub const CL_BROADCAST: Bits = bits(0, 27, 27);
    pub const CL_COUNT: Bits = bits(1, 0, 29);
    pub const CL_DST_SWAP: Bits = bits(2, 16, 17);
    pub const CL_SRC_SWAP: Bits = bits(2, 24, 25);
    pub const CL_SRC_LO: usize = 3;
    pub const CL_DST_LO: usize = 5;
    // Broadcast form: DST2_SW @8..9 of dword 2 (DST1_SW / SRC_SW as above), the second
    // destination in dwords 7..8.
    pub const CLB_DST2_SWAP: Bits = bits(2, 8, 9);
    pub const CLB_DST2_LO: usize = 7;

    // GCR: base VA bits 7..47 in dword 1 bits 7..31 and dword 2 bits 0..15; GCR_CONTROL bits
    // 0..15 in dword 2 bits 16..31 and bits 16..18 in dword 3 bits 0..2; limit VA like the
    // base in dwords 3..4; VMID @24..27 of dword 4.
    pub const GCR_BASE_LO: Bits = bits(1, 7, 31);
    pub const GCR_BASE_HI: Bits = bits(2, 0, 15);
    pub const GCR_CONTROL_LO: Bits = bits(2, 16, 31);
    pub const GCR_CONTROL_HI: Bits = bits(3, 0, 2);
    pub const GCR_LIMIT_LO: Bits = bits(3, 7, 31);
    pub const GCR_LIMIT_HI: Bits = bits(4, 0, 15);
    pub const GCR_VMID: Bits = bits(4, 24, 27);

    // WRITE_UNTILED
    pub const WU_DST_LO: usize = 1;
    pub const WU_COUNT: Bits = bits(3, 0, 19);
    pub const WU_SWAP: Bits = bits(3, 24, 25);
    pub const WU_DATA: usize = 4;

    // FENCE
    pub const FENCE_MTYPE: Bits = bits(0, 16, 18);
    pub const FENCE_ADDR_LO: usize = 1;
    pub const FENCE_DATA: Bits = dword(3);

    // TRAP
    pub const TRAP_INT_CONTEXT: Bits = bits(1, 0, 27);

    // POLL_REGMEM
    pub const PR_HDP_FLUSH: Bits = bits(0, 26, 26);
    pub const PR_FUNC: Bits = bits(0, 28, 30);
    pub const PR_MEM_POLL: Bits = bits(0, 31, 31);
    pub const PR_ADDR_LO: usize = 1;
    pub const PR_VALUE: Bits = dword(3);
    pub const PR_MASK: Bits = dword(4);
    pub const PR_INTERVAL: Bits = bits(5, 0, 15);
    pub const PR_RETRY_COUNT: Bits = bits(5, 16, 27);

    // CONSTANT_FILL
    pub const CF_SWAP: Bits = bits(0, 16, 17);
    pub const CF_FILLSIZE: Bits = bits(0, 30, 31);
    pub const CF_DST_LO: usize = 1;
    pub const CF_DATA: Bits = dword(3);
    pub const CF_COUNT: Bits = bits(4, 0, 21);

    // TIMESTAMP (all three forms): a 64-bit value or address in dwords 1..2.
    pub const TS_LO: usize = 1;

    // ATOMIC
    pub const AT_LOOP: Bits = bits(0, 16, 16);
    pub const AT_TMZ: Bits = bits(0, 18, 18);
    pub const AT_OP: Bits = bits(0, 25, 31);
    pub const AT_ADDR_LO: usize = 1;
    pub const AT_SRC_LO: usize = 3;
    pub const AT_CMP_LO: usize = 5;
    pub const AT_LOOP_INTERVAL: Bits = bits(7, 0, 12);
}

/// A header dword.
pub const fn header(op: u8, sub_op: u8) -> u32 {
    op as u32 | (sub_op as u32) << 8
}

/// A zero-copy view of one SDMA packet; its length follows from the opcode (and, for NOP and
/// WRITE_UNTILED, a count field).
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

/// Packet length in dwords from its first dwords, `None` for an unknown opcode. NOP and
/// WRITE_UNTILED read a count field, so the caller must have checked it is present.
fn declared_dwords(buf: &[u8]) -> Option<usize> {
    let h = get_dword(buf, 0);
    Some(match h as u8 {
        op::NOP => 1 + ((h >> 16) & 0x3fff) as usize,
        op::COPY if h & (1 << 27) != 0 => 9,
        op::COPY => 7,
        op::WRITE => 4 + (get_dword(buf, 3) & 0xf_ffff) as usize + 1,
        op::FENCE => 4,
        op::TRAP => 2,
        op::POLL_REGMEM => 6,
        op::ATOMIC => 8,
        op::CONST_FILL => 5,
        op::TIMESTAMP => 3,
        op::GCR => 5,
        _ => return None,
    })
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Checks the opcode is known and the buffer holds the whole packet.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Packet { buffer };
        p.check_len()?;
        Ok(p)
    }

    pub fn check_len(&self) -> Result<()> {
        let buf = self.buffer.as_ref();
        if buf.len() < 4 {
            return Err(Error::Truncated);
        }
        if self.op() as u8 == op::WRITE && buf.len() < 16 {
            return Err(Error::Truncated);
        }
        let dwords = declared_dwords(buf).ok_or(Error::UnknownType)?;
        if buf.len() < 4 * dwords {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The packet's length in bytes (0 for an unknown opcode).
    pub fn total_len(&self) -> usize {
        4 * declared_dwords(self.buffer.as_ref()).unwrap_or(0)
    }

    pub fn dword(&self, i: usize) -> u32 {
        get_dword(self.buffer.as_ref(), i)
    }

    pub fn set_dword(&mut self, i: usize, value: u32)
    where
        T: AsMut<[u8]>,
    {
        set_dword(self.buffer.as_mut(), i, value)
    }

    pub fn qword(&self, lo: usize) -> u64 {
        get_u64(self.buffer.as_ref(), lo)
    }

    pub fn set_qword(&mut self, lo: usize, value: u64)
    where
        T: AsMut<[u8]>,
    {
        set_u64(self.buffer.as_mut(), lo, value)
    }

    bit_accessors! {
        op, set_op: field::OP;
        sub_op, set_sub_op: field::SUB_OP;
        nop_count, set_nop_count: field::NOP_COUNT;
        copy_tmz, set_copy_tmz: field::CL_TMZ;
        copy_broadcast, set_copy_broadcast: field::CL_BROADCAST;
        copy_dst2_swap, set_copy_dst2_swap: field::CLB_DST2_SWAP;
        /// Bytes - 1.
        copy_count, set_copy_count: field::CL_COUNT;
        copy_dst_swap, set_copy_dst_swap: field::CL_DST_SWAP;
        copy_src_swap, set_copy_src_swap: field::CL_SRC_SWAP;
        /// Dwords - 1.
        write_count, set_write_count: field::WU_COUNT;
        write_swap, set_write_swap: field::WU_SWAP;
        fence_mtype, set_fence_mtype: field::FENCE_MTYPE;
        fence_data, set_fence_data: field::FENCE_DATA;
        trap_int_context, set_trap_int_context: field::TRAP_INT_CONTEXT;
        poll_hdp_flush, set_poll_hdp_flush: field::PR_HDP_FLUSH;
        poll_func, set_poll_func: field::PR_FUNC;
        poll_mem_poll, set_poll_mem_poll: field::PR_MEM_POLL;
        poll_value, set_poll_value: field::PR_VALUE;
        poll_mask, set_poll_mask: field::PR_MASK;
        poll_interval, set_poll_interval: field::PR_INTERVAL;
        poll_retry_count, set_poll_retry_count: field::PR_RETRY_COUNT;
        fill_swap, set_fill_swap: field::CF_SWAP;
        fill_size, set_fill_size: field::CF_FILLSIZE;
        fill_data, set_fill_data: field::CF_DATA;
        /// Bytes - 1.
        fill_count, set_fill_count: field::CF_COUNT;
        atomic_loop, set_atomic_loop: field::AT_LOOP;
        atomic_tmz, set_atomic_tmz: field::AT_TMZ;
        atomic_op, set_atomic_op: field::AT_OP;
        atomic_loop_interval, set_atomic_loop_interval: field::AT_LOOP_INTERVAL;
        gcr_base_lo, set_gcr_base_lo: field::GCR_BASE_LO;
        gcr_base_hi, set_gcr_base_hi: field::GCR_BASE_HI;
        gcr_control_lo, set_gcr_control_lo: field::GCR_CONTROL_LO;
        gcr_control_hi, set_gcr_control_hi: field::GCR_CONTROL_HI;
        gcr_limit_lo, set_gcr_limit_lo: field::GCR_LIMIT_LO;
        gcr_limit_hi, set_gcr_limit_hi: field::GCR_LIMIT_HI;
        gcr_vmid, set_gcr_vmid: field::GCR_VMID;
    }

    fn dwords_from(&self, from: usize) -> Dwords<'_> {
        let end = self.total_len().min(self.buffer.as_ref().len());
        Dwords::Bytes(self.buffer.as_ref().get(from * 4..end).unwrap_or(&[]))
    }
}

/// Compare functions of POLL_REGMEM (same encoding as PM4 WAIT_REG_MEM).
pub use super::pm4::CompareFunction;

/// COPY_LINEAR: copy `count` bytes from `src` to `dst`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyLinear {
    pub src: u64,
    pub dst: u64,
    /// 1..=[`MAX_LINEAR_BYTES_WIDE`] (the engine's generation may allow only
    /// [`MAX_LINEAR_BYTES`]).
    pub count: u32,
    pub src_swap: u8,
    pub dst_swap: u8,
    pub tmz: bool,
}

/// COPY_LINEAR in its broadcast form (header bit 27, 9 dwords; kfdtest's two-destination
/// `SDMACopyDataPacket`): copy `count` bytes from `src` to both `dst1` and `dst2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyBroadcast {
    pub src: u64,
    pub dst1: u64,
    pub dst2: u64,
    /// 1..=[`MAX_LINEAR_BYTES_WIDE`], as [`CopyLinear::count`].
    pub count: u32,
    pub src_swap: u8,
    pub dst1_swap: u8,
    pub dst2_swap: u8,
    pub tmz: bool,
}

/// GCR (SDMA 5+): cache invalidate / writeback over a VA range or everything. `control` is the
/// 19-bit GCR_CONTROL field (the [`gcr`] bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gcr {
    /// Sub-op 1 (ROCr's USER_GCR) rather than 0 (the kernel's GCR_REQ).
    pub user: bool,
    /// 128-byte aligned, below 2^48.
    pub base_va: u64,
    /// 128-byte aligned, below 2^48.
    pub limit_va: u64,
    pub control: u32,
    pub vmid: u8,
}

/// GCR_CONTROL bits (amdgpu's `SDMA_GCR_*`, the order of ROCr's `SDMA_PKT_GCR` word 2/3).
pub mod gcr {
    /// GLI_INV (2 bits).
    pub const GLI_INV_SHIFT: u32 = 0;
    /// GL1_RANGE (2 bits).
    pub const GL1_RANGE_SHIFT: u32 = 2;
    pub const GLM_WB: u32 = 1 << 4;
    pub const GLM_INV: u32 = 1 << 5;
    pub const GLK_WB: u32 = 1 << 6;
    pub const GLK_INV: u32 = 1 << 7;
    pub const GLV_INV: u32 = 1 << 8;
    pub const GL1_INV: u32 = 1 << 9;
    pub const GL2_US: u32 = 1 << 10;
    /// GL2_RANGE (2 bits; 0: the whole cache).
    pub const GL2_RANGE_SHIFT: u32 = 11;
    pub const GL2_DISCARD: u32 = 1 << 13;
    pub const GL2_INV: u32 = 1 << 14;
    pub const GL2_WB: u32 = 1 << 15;
    /// SEQ (2 bits).
    pub const SEQ_SHIFT: u32 = 16;
    /// The range is physical, not virtual.
    pub const RANGE_IS_PA: u32 = 1 << 18;
    /// The whole field.
    pub const MASK: u32 = (1 << 19) - 1;

    /// ROCr's `BuildGCRCommand` before a copy (`invalidate`: write back and invalidate GL2,
    /// invalidate GL1/GLV/GLK, write back GLK) and after it (write back GL2 and GLK only).
    pub const fn rocr(invalidate: bool) -> u32 {
        if invalidate {
            GL2_WB | GLK_WB | GL2_INV | GL1_INV | GLV_INV | GLK_INV
        } else {
            GL2_WB | GLK_WB
        }
    }
}

/// POLL_REGMEM: wait until `(*addr & mask) func value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PollRegmem {
    pub addr: u64,
    pub value: u32,
    pub mask: u32,
    pub func: CompareFunction,
    /// Poll memory (true) or a register (false).
    pub mem_poll: bool,
    pub hdp_flush: bool,
    pub interval: u16,
    /// 12 bits; 0xfff retries forever.
    pub retry_count: u16,
}

impl PollRegmem {
    /// ROCr's HDP flush (`hdp_flush_cmd` in `sdma_registers.h`, sent by `BuildHdpFlushCommand`
    /// at the start of every SDMA copy on gfx9+ except gfx101x and XGMI-linked hosts): dwords
    /// `{0x8, 0, 0x80000000, 0, 0, 0}`. Opcode 8 POLL_REGMEM, HDP_FLUSH bit 0, FUNC 0 (always),
    /// MEM_POLL 0 (registers); the polled register (dword 1) is 0 and the register written
    /// first (dword 2) is bit 31 alone, value and mask 0, no interval or retry. ROCr calls it
    /// "HDP flush packet, no parameters" and ties it to gfx9 SDMA microcode 0x1A5 and later.
    pub const ROCR_HDP_FLUSH: PollRegmem = PollRegmem {
        addr: 0x8000_0000 << 32,
        value: 0,
        mask: 0,
        func: CompareFunction::Always,
        mem_poll: false,
        hdp_flush: false,
        interval: 0,
        retry_count: 0,
    };

    /// In register mode (`!mem_poll`): the register polled (dword 1, a byte offset as the
    /// kernel writes it: `reg << 2`).
    pub const fn poll_register(&self) -> u32 {
        self.addr as u32
    }

    /// In register mode: the register the engine writes `value` to before polling (dword 2;
    /// the kernel's HDP flush names the flush request register there and the flush done
    /// register in dword 1).
    pub const fn request_register(&self) -> u32 {
        (self.addr >> 32) as u32
    }
}

/// CONSTANT_FILL: fill `count` bytes at `dst` with `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConstantFill {
    pub dst: u64,
    pub data: u32,
    /// 1..=[`MAX_LINEAR_BYTES`].
    pub count: u32,
    /// Fill element size code (header bits 30..31; 2 = dword).
    pub fill_size: u8,
    pub swap: u8,
}

/// ATOMIC: `op` on the 32/64-bit value at `addr` with `src` (and `cmp` for compare-swap).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Atomic {
    pub addr: u64,
    /// The TC atomic opcode (7 bits), e.g. [`ATOMIC_ADD64`].
    pub op: u8,
    pub src: u64,
    pub cmp: u64,
    /// Retry a compare-swap until it succeeds.
    pub loop_: bool,
    pub loop_interval: u16,
    pub tmz: bool,
}

/// TC atomic opcodes used with [`Atomic`].
pub const ATOMIC_CMPSWAP_RTN_64: u8 = 40;
pub const ATOMIC_ADD64: u8 = 47;

/// TIMESTAMP forms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timestamp {
    /// Set the engine's local timestamp counter.
    Set(u64),
    /// Write the local timestamp to an 8-byte aligned address.
    GetLocal(u64),
    /// Write the global (GPU clock) timestamp to an 8-byte aligned address.
    GetGlobal(u64),
}

/// The command of an SDMA packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Repr<'a> {
    /// `count` padding dwords after the header.
    Nop {
        count: u16,
    },
    CopyLinear(CopyLinear),
    CopyBroadcast(CopyBroadcast),
    /// WRITE_UNTILED: write `data` (1..=2^20 dwords) to `dst`.
    WriteUntiled {
        dst: u64,
        data: Dwords<'a>,
        swap: u8,
    },
    /// FENCE: write `data` to `addr` once earlier packets are done.
    Fence {
        addr: u64,
        data: u32,
        mtype: u8,
    },
    /// TRAP: raise an interrupt carrying `int_context` (28 bits).
    Trap {
        int_context: u32,
    },
    PollRegmem(PollRegmem),
    ConstantFill(ConstantFill),
    Timestamp(Timestamp),
    Atomic(Atomic),
    Gcr(Gcr),
}

impl<'a> Repr<'a> {
    pub const fn copy_linear(src: u64, dst: u64, count: u32) -> Self {
        Repr::CopyLinear(CopyLinear { src, dst, count, src_swap: 0, dst_swap: 0, tmz: false })
    }

    pub const fn constant_fill(dst: u64, data: u32, count: u32) -> Self {
        Repr::ConstantFill(ConstantFill { dst, data, count, fill_size: 2, swap: 0 })
    }

    pub const fn fence(addr: u64, data: u32) -> Self {
        Repr::Fence { addr, data, mtype: 0 }
    }

    pub fn op(&self) -> (u8, u8) {
        match self {
            Repr::Nop { .. } => (op::NOP, 0),
            Repr::CopyLinear(_) | Repr::CopyBroadcast(_) => (op::COPY, sub_op::COPY_LINEAR),
            Repr::WriteUntiled { .. } => (op::WRITE, sub_op::WRITE_UNTILED),
            Repr::Fence { .. } => (op::FENCE, 0),
            Repr::Trap { .. } => (op::TRAP, 0),
            Repr::PollRegmem(_) => (op::POLL_REGMEM, 0),
            Repr::ConstantFill(_) => (op::CONST_FILL, 0),
            Repr::Timestamp(Timestamp::Set(_)) => (op::TIMESTAMP, sub_op::TIMESTAMP_SET),
            Repr::Timestamp(Timestamp::GetLocal(_)) => (op::TIMESTAMP, sub_op::TIMESTAMP_GET_LOCAL),
            Repr::Timestamp(Timestamp::GetGlobal(_)) => (op::TIMESTAMP, sub_op::TIMESTAMP_GET_GLOBAL),
            Repr::Atomic(_) => (op::ATOMIC, 0),
            Repr::Gcr(g) => (op::GCR, if g.user { sub_op::USER_GCR } else { sub_op::GCR_REQ }),
        }
    }

    pub fn dwords(&self) -> usize {
        match self {
            Repr::Nop { count } => 1 + *count as usize,
            Repr::CopyLinear(_) => 7,
            Repr::CopyBroadcast(_) => 9,
            Repr::WriteUntiled { data, .. } => 4 + data.len(),
            Repr::Fence { .. } => 4,
            Repr::Trap { .. } => 2,
            Repr::PollRegmem(_) => 6,
            Repr::ConstantFill(_) => 5,
            Repr::Timestamp(_) => 3,
            Repr::Atomic(_) => 8,
            Repr::Gcr(_) => 5,
        }
    }

    pub fn buffer_len(&self) -> usize {
        4 * self.dwords()
    }

    /// Whether every field fits its bits.
    pub fn check(&self) -> Result<()> {
        let ok = match self {
            Repr::Nop { count } => fits(field::NOP_COUNT, *count as u32),
            Repr::CopyLinear(c) => {
                c.count >= 1
                    && c.count <= MAX_LINEAR_BYTES_WIDE
                    && fits(field::CL_SRC_SWAP, c.src_swap as u32)
                    && fits(field::CL_DST_SWAP, c.dst_swap as u32)
            }
            Repr::CopyBroadcast(c) => {
                c.count >= 1
                    && c.count <= MAX_LINEAR_BYTES_WIDE
                    && fits(field::CL_SRC_SWAP, c.src_swap as u32)
                    && fits(field::CL_DST_SWAP, c.dst1_swap as u32)
                    && fits(field::CLB_DST2_SWAP, c.dst2_swap as u32)
            }
            Repr::Gcr(g) => {
                let va_ok = |va: u64| va & 0x7f == 0 && va >> 48 == 0;
                va_ok(g.base_va) && va_ok(g.limit_va) && g.control & !gcr::MASK == 0 && fits(field::GCR_VMID, g.vmid as u32)
            }
            Repr::WriteUntiled { dst, data, swap } => {
                !data.is_empty() && data.len() <= MAX_WRITE_DWORDS && dst & 3 == 0 && fits(field::WU_SWAP, *swap as u32)
            }
            Repr::Fence { addr, mtype, .. } => addr & 3 == 0 && fits(field::FENCE_MTYPE, *mtype as u32),
            Repr::Trap { int_context } => fits(field::TRAP_INT_CONTEXT, *int_context),
            Repr::PollRegmem(p) => fits(field::PR_RETRY_COUNT, p.retry_count as u32) && (!p.mem_poll || p.addr & 3 == 0),
            Repr::ConstantFill(f) => {
                f.count >= 1
                    && f.count <= MAX_LINEAR_BYTES
                    && f.dst & 3 == 0
                    && fits(field::CF_FILLSIZE, f.fill_size as u32)
                    && fits(field::CF_SWAP, f.swap as u32)
            }
            Repr::Timestamp(Timestamp::Set(_)) => true,
            Repr::Timestamp(Timestamp::GetLocal(a) | Timestamp::GetGlobal(a)) => a & 7 == 0,
            Repr::Atomic(a) => a.addr & 7 == 0 && fits(field::AT_OP, a.op as u32) && fits(field::AT_LOOP_INTERVAL, a.loop_interval as u32),
        };
        if ok {
            Ok(())
        } else {
            Err(Error::BadField)
        }
    }

    /// Parses one packet from the front of the view's buffer. Whatever parses passes
    /// [`Repr::check`], so it emits again.
    pub fn parse<T: AsRef<[u8]>>(p: &'a Packet<T>) -> Result<Repr<'a>> {
        p.check_len()?;
        let sub = p.sub_op() as u8;
        let want_sub = |s: u8| if sub == s { Ok(()) } else { Err(Error::UnknownType) };
        let repr = match p.op() as u8 {
            op::NOP => Repr::Nop { count: p.nop_count() as u16 },
            op::COPY if p.copy_broadcast() != 0 => {
                want_sub(sub_op::COPY_LINEAR)?;
                Repr::CopyBroadcast(CopyBroadcast {
                    src: p.qword(field::CL_SRC_LO),
                    dst1: p.qword(field::CL_DST_LO),
                    dst2: p.qword(field::CLB_DST2_LO),
                    count: p.copy_count() + 1,
                    src_swap: p.copy_src_swap() as u8,
                    dst1_swap: p.copy_dst_swap() as u8,
                    dst2_swap: p.copy_dst2_swap() as u8,
                    tmz: p.copy_tmz() != 0,
                })
            }
            op::COPY => {
                want_sub(sub_op::COPY_LINEAR)?;
                Repr::CopyLinear(CopyLinear {
                    src: p.qword(field::CL_SRC_LO),
                    dst: p.qword(field::CL_DST_LO),
                    count: p.copy_count() + 1,
                    src_swap: p.copy_src_swap() as u8,
                    dst_swap: p.copy_dst_swap() as u8,
                    tmz: p.copy_tmz() != 0,
                })
            }
            op::WRITE => {
                want_sub(sub_op::WRITE_UNTILED)?;
                Repr::WriteUntiled { dst: p.qword(field::WU_DST_LO), data: p.dwords_from(field::WU_DATA), swap: p.write_swap() as u8 }
            }
            op::FENCE => Repr::Fence { addr: p.qword(field::FENCE_ADDR_LO), data: p.fence_data(), mtype: p.fence_mtype() as u8 },
            op::TRAP => Repr::Trap { int_context: p.trap_int_context() },
            op::POLL_REGMEM => Repr::PollRegmem(PollRegmem {
                addr: p.qword(field::PR_ADDR_LO),
                value: p.poll_value(),
                mask: p.poll_mask(),
                func: CompareFunction::from_u32(p.poll_func()).ok_or(Error::BadField)?,
                mem_poll: p.poll_mem_poll() != 0,
                hdp_flush: p.poll_hdp_flush() != 0,
                interval: p.poll_interval() as u16,
                retry_count: p.poll_retry_count() as u16,
            }),
            op::CONST_FILL => Repr::ConstantFill(ConstantFill {
                dst: p.qword(field::CF_DST_LO),
                data: p.fill_data(),
                count: p.fill_count() + 1,
                fill_size: p.fill_size() as u8,
                swap: p.fill_swap() as u8,
            }),
            op::TIMESTAMP => {
                let v = p.qword(field::TS_LO);
                Repr::Timestamp(match sub {
                    sub_op::TIMESTAMP_SET => Timestamp::Set(v),
                    sub_op::TIMESTAMP_GET_LOCAL => Timestamp::GetLocal(v),
                    sub_op::TIMESTAMP_GET_GLOBAL => Timestamp::GetGlobal(v),
                    _ => return Err(Error::UnknownType),
                })
            }
            op::ATOMIC => Repr::Atomic(Atomic {
                addr: p.qword(field::AT_ADDR_LO),
                op: p.atomic_op() as u8,
                src: p.qword(field::AT_SRC_LO),
                cmp: p.qword(field::AT_CMP_LO),
                loop_: p.atomic_loop() != 0,
                loop_interval: p.atomic_loop_interval() as u16,
                tmz: p.atomic_tmz() != 0,
            }),
            op::GCR => Repr::Gcr(Gcr {
                user: match sub {
                    sub_op::GCR_REQ => false,
                    sub_op::USER_GCR => true,
                    _ => return Err(Error::UnknownType),
                },
                base_va: u64::from(p.gcr_base_lo()) << 7 | u64::from(p.gcr_base_hi()) << 32,
                limit_va: u64::from(p.gcr_limit_lo()) << 7 | u64::from(p.gcr_limit_hi()) << 32,
                control: p.gcr_control_lo() | p.gcr_control_hi() << 16,
                vmid: p.gcr_vmid() as u8,
            }),
            _ => return Err(Error::UnknownType),
        };
        // What parses must emit again (aligned addresses, counts in range).
        repr.check()?;
        Ok(repr)
    }

    /// Writes the packet at the front of the view's buffer; an invalid packet or a short buffer
    /// is an error and leaves the buffer untouched.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        self.check()?;
        let len = self.buffer_len();
        let Some(buf) = p.buffer.as_mut().get_mut(..len) else {
            return Err(Error::Truncated);
        };
        buf.fill(0);
        let (o, s) = self.op();
        set_dword(buf, 0, header(o, s));
        let mut p = Packet::new_unchecked(buf);
        match self {
            Repr::Nop { count } => p.set_nop_count(*count as u32),
            Repr::CopyLinear(c) => {
                p.set_copy_tmz(c.tmz as u32);
                p.set_copy_count(c.count - 1);
                p.set_copy_dst_swap(c.dst_swap as u32);
                p.set_copy_src_swap(c.src_swap as u32);
                p.set_qword(field::CL_SRC_LO, c.src);
                p.set_qword(field::CL_DST_LO, c.dst);
            }
            Repr::CopyBroadcast(c) => {
                p.set_copy_tmz(c.tmz as u32);
                p.set_copy_broadcast(1);
                p.set_copy_count(c.count - 1);
                p.set_copy_dst2_swap(c.dst2_swap as u32);
                p.set_copy_dst_swap(c.dst1_swap as u32);
                p.set_copy_src_swap(c.src_swap as u32);
                p.set_qword(field::CL_SRC_LO, c.src);
                p.set_qword(field::CL_DST_LO, c.dst1);
                p.set_qword(field::CLB_DST2_LO, c.dst2);
            }
            Repr::WriteUntiled { dst, data, swap } => {
                p.set_qword(field::WU_DST_LO, *dst);
                p.set_write_count(data.len() as u32 - 1);
                p.set_write_swap(*swap as u32);
                for (i, d) in data.iter().enumerate() {
                    p.set_dword(field::WU_DATA + i, d);
                }
            }
            Repr::Fence { addr, data, mtype } => {
                p.set_fence_mtype(*mtype as u32);
                p.set_qword(field::FENCE_ADDR_LO, *addr);
                p.set_fence_data(*data);
            }
            Repr::Trap { int_context } => p.set_trap_int_context(*int_context),
            Repr::PollRegmem(r) => {
                p.set_poll_hdp_flush(r.hdp_flush as u32);
                p.set_poll_func(r.func as u32);
                p.set_poll_mem_poll(r.mem_poll as u32);
                p.set_qword(field::PR_ADDR_LO, r.addr);
                p.set_poll_value(r.value);
                p.set_poll_mask(r.mask);
                p.set_poll_interval(r.interval as u32);
                p.set_poll_retry_count(r.retry_count as u32);
            }
            Repr::ConstantFill(f) => {
                p.set_fill_swap(f.swap as u32);
                p.set_fill_size(f.fill_size as u32);
                p.set_qword(field::CF_DST_LO, f.dst);
                p.set_fill_data(f.data);
                p.set_fill_count(f.count - 1);
            }
            Repr::Timestamp(Timestamp::Set(v) | Timestamp::GetLocal(v) | Timestamp::GetGlobal(v)) => p.set_qword(field::TS_LO, *v),
            Repr::Atomic(a) => {
                p.set_atomic_loop(a.loop_ as u32);
                p.set_atomic_tmz(a.tmz as u32);
                p.set_atomic_op(a.op as u32);
                p.set_qword(field::AT_ADDR_LO, a.addr);
                p.set_qword(field::AT_SRC_LO, a.src);
                p.set_qword(field::AT_CMP_LO, a.cmp);
                p.set_atomic_loop_interval(a.loop_interval as u32);
            }
            Repr::Gcr(g) => {
                p.set_gcr_base_lo((g.base_va >> 7) as u32);
                p.set_gcr_base_hi((g.base_va >> 32) as u32);
                p.set_gcr_control_lo(g.control);
                p.set_gcr_control_hi(g.control >> 16);
                p.set_gcr_limit_lo((g.limit_va >> 7) as u32);
                p.set_gcr_limit_hi((g.limit_va >> 32) as u32);
                p.set_gcr_vmid(g.vmid as u32);
            }
        }
        Ok(())
    }
}
