//! PM4 type-3 packets as the gfx9 (Vega / CDNA) command processor reads them from a compute or
//! graphics ring or an indirect buffer. Layouts follow the public gfx9 packet definitions
//! (amdgpu `soc15d.h`, Mesa `sid.h`, kfdtest's PM4 headers).
//!
//! Header: type 3 in bits 30..31, count in bits 16..29 (dwords after the header minus one),
//! opcode in bits 8..15, shader type in bit 1 (1 = compute), predicate in bit 0.

use super::{bit_accessors, fits, get_dword, get_u64, set_dword, set_u64, Dwords, Error, Result};

/// NOP with count 0x3FFF is a one-dword packet (header only).
pub const NOP_HEADER_ONLY_COUNT: u32 = 0x3fff;

/// Type-3 opcodes (gfx9).
pub mod opcode {
    pub const NOP: u8 = 0x10;
    pub const DISPATCH_DIRECT: u8 = 0x15;
    pub const WRITE_DATA: u8 = 0x37;
    pub const WAIT_REG_MEM: u8 = 0x3c;
    pub const INDIRECT_BUFFER: u8 = 0x3f;
    pub const COPY_DATA: u8 = 0x40;
    pub const EVENT_WRITE: u8 = 0x46;
    pub const RELEASE_MEM: u8 = 0x49;
    pub const ACQUIRE_MEM: u8 = 0x58;
    pub const SET_SH_REG: u8 = 0x76;
}

/// First SH register (dword address): SET_SH_REG offsets count from here.
pub const SH_REG_BASE: u32 = 0x2c00;

mod field {
    use crate::packet::{bits, dword, Bits};

    pub const PREDICATE: Bits = bits(0, 0, 0);
    pub const SHADER_TYPE: Bits = bits(0, 1, 1);
    pub const OPCODE: Bits = bits(0, 8, 15);
    pub const COUNT: Bits = bits(0, 16, 29);
    pub const TYPE: Bits = bits(0, 30, 31);

    // WRITE_DATA
    pub const WD_DST_SEL: Bits = bits(1, 8, 11);
    pub const WD_WR_ONE_ADDR: Bits = bits(1, 16, 16);
    pub const WD_WR_CONFIRM: Bits = bits(1, 20, 20);
    pub const WD_CACHE_POLICY: Bits = bits(1, 25, 26);
    pub const WD_ENGINE_SEL: Bits = bits(1, 30, 31);
    pub const WD_ADDR_LO: usize = 2;
    pub const WD_DATA: usize = 4;

    // RELEASE_MEM
    pub const RM_EVENT_TYPE: Bits = bits(1, 0, 5);
    pub const RM_EVENT_INDEX: Bits = bits(1, 8, 11);
    /// TCL1_VOL .. TC_MD action enables.
    pub const RM_ACTIONS: Bits = bits(1, 12, 21);
    pub const RM_ACTIONS_MASK: u32 = 0x3ff << 12;
    pub const RM_CACHE_POLICY: Bits = bits(1, 25, 26);
    pub const RM_DST_SEL: Bits = bits(2, 16, 17);
    pub const RM_INT_SEL: Bits = bits(2, 24, 26);
    pub const RM_DATA_SEL: Bits = bits(2, 29, 31);
    pub const RM_ADDR_LO: usize = 3;
    pub const RM_DATA_LO: usize = 5;
    pub const RM_INT_CTXID: Bits = dword(7);

    // WAIT_REG_MEM
    pub const WRM_FUNCTION: Bits = bits(1, 0, 2);
    pub const WRM_MEM_SPACE: Bits = bits(1, 4, 5);
    pub const WRM_OPERATION: Bits = bits(1, 6, 7);
    pub const WRM_ENGINE_SEL: Bits = bits(1, 8, 9);
    pub const WRM_ADDR_LO: usize = 2;
    pub const WRM_REFERENCE: Bits = dword(4);
    pub const WRM_MASK: Bits = dword(5);
    pub const WRM_POLL_INTERVAL: Bits = bits(6, 0, 15);

    // INDIRECT_BUFFER
    pub const IB_BASE_LO: usize = 1;
    pub const IB_SIZE: Bits = bits(3, 0, 19);
    pub const IB_CHAIN: Bits = bits(3, 20, 20);
    pub const IB_VALID: Bits = bits(3, 23, 23);
    pub const IB_VMID: Bits = bits(3, 24, 27);
    pub const IB_CACHE_POLICY: Bits = bits(3, 28, 29);

    // ACQUIRE_MEM
    pub const AM_COHER_CNTL: Bits = dword(1);
    pub const AM_COHER_SIZE: Bits = dword(2);
    pub const AM_COHER_SIZE_HI: Bits = bits(3, 0, 7);
    pub const AM_COHER_BASE_LO: Bits = dword(4);
    pub const AM_COHER_BASE_HI: Bits = bits(5, 0, 24);
    pub const AM_POLL_INTERVAL: Bits = bits(6, 0, 15);
    /// gfx10+ form only (nvd.h): GCR_CNTL in dword 7.
    pub const AM_GCR_CNTL: Bits = bits(7, 0, 18);

    // SET_SH_REG
    pub const SH_REG_OFFSET: Bits = bits(1, 0, 15);
    pub const SH_VALUES: usize = 2;

    // DISPATCH_DIRECT
    pub const DD_DIM_X: Bits = dword(1);
    pub const DD_DIM_Y: Bits = dword(2);
    pub const DD_DIM_Z: Bits = dword(3);
    pub const DD_INITIATOR: Bits = dword(4);

    // EVENT_WRITE
    pub const EW_EVENT_TYPE: Bits = bits(1, 0, 5);
    pub const EW_EVENT_INDEX: Bits = bits(1, 8, 11);
    pub const EW_ADDR_LO: usize = 2;

    // COPY_DATA
    pub const CD_SRC_SEL: Bits = bits(1, 0, 3);
    pub const CD_DST_SEL: Bits = bits(1, 8, 11);
    pub const CD_SRC_CACHE_POLICY: Bits = bits(1, 13, 14);
    pub const CD_COUNT_SEL: Bits = bits(1, 16, 16);
    pub const CD_WR_CONFIRM: Bits = bits(1, 20, 20);
    pub const CD_DST_CACHE_POLICY: Bits = bits(1, 25, 26);
    pub const CD_ENGINE_SEL: Bits = bits(1, 30, 31);
    pub const CD_SRC_LO: usize = 2;
    pub const CD_DST_LO: usize = 4;
}

/// RELEASE_MEM cache action enables (bits 12..21 of dword 1, given here unshifted).
pub mod release_action {
    pub const TCL1_VOL_ACTION_ENA: u32 = 1 << 12;
    pub const TC_VOL_ACTION_ENA: u32 = 1 << 13;
    pub const TC_WB_ACTION_ENA: u32 = 1 << 15;
    pub const TCL1_ACTION_ENA: u32 = 1 << 16;
    pub const TC_ACTION_ENA: u32 = 1 << 17;
    pub const TC_NC_ACTION_ENA: u32 = 1 << 19;
    pub const TC_WC_ACTION_ENA: u32 = 1 << 20;
    pub const TC_MD_ACTION_ENA: u32 = 1 << 21;
}

/// Event types used with EVENT_WRITE / RELEASE_MEM (VGT_EVENT_TYPE).
pub mod event {
    pub const CS_PARTIAL_FLUSH: u8 = 0x07;
    pub const CACHE_FLUSH_AND_INV_TS_EVENT: u8 = 0x14;
    pub const BOTTOM_OF_PIPE_TS: u8 = 0x28;
}

/// A header word: type 3, `count`, `opcode`, shader type and predicate.
pub const fn header(opcode: u8, count: u32, compute: bool, predicate: bool) -> u32 {
    3 << 30 | (count & 0x3fff) << 16 | (opcode as u32) << 8 | (compute as u32) << 1 | predicate as u32
}

/// A zero-copy view of one PM4 type-3 packet; its length comes from the header's count.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Packet<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Checks that the buffer holds a type-3 header and the whole packet it declares.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Packet { buffer };
        p.check_len()?;
        Ok(p)
    }

    pub fn check_len(&self) -> Result<()> {
        let len = self.buffer.as_ref().len();
        if len < 4 {
            return Err(Error::Truncated);
        }
        if self.packet_type() != 3 {
            return Err(Error::UnknownType);
        }
        if len < self.total_len() {
            return Err(Error::Truncated);
        }
        Ok(())
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The packet's length in bytes as its header declares it.
    pub fn total_len(&self) -> usize {
        if self.opcode() == opcode::NOP as u32 && self.count() == NOP_HEADER_ONLY_COUNT {
            4
        } else {
            4 * (self.count() as usize + 2)
        }
    }

    /// Dword `i` of the packet (0 is the header; 0 past the buffer).
    pub fn dword(&self, i: usize) -> u32 {
        get_dword(self.buffer.as_ref(), i)
    }

    pub fn set_dword(&mut self, i: usize, value: u32)
    where
        T: AsMut<[u8]>,
    {
        set_dword(self.buffer.as_mut(), i, value)
    }

    bit_accessors! {
        predicate, set_predicate: field::PREDICATE;
        shader_type, set_shader_type: field::SHADER_TYPE;
        opcode, set_opcode: field::OPCODE;
        count, set_count: field::COUNT;
        packet_type, set_packet_type: field::TYPE;

        write_data_dst_sel, set_write_data_dst_sel: field::WD_DST_SEL;
        write_data_wr_one_addr, set_write_data_wr_one_addr: field::WD_WR_ONE_ADDR;
        write_data_wr_confirm, set_write_data_wr_confirm: field::WD_WR_CONFIRM;
        write_data_cache_policy, set_write_data_cache_policy: field::WD_CACHE_POLICY;
        write_data_engine_sel, set_write_data_engine_sel: field::WD_ENGINE_SEL;

        release_mem_event_type, set_release_mem_event_type: field::RM_EVENT_TYPE;
        release_mem_event_index, set_release_mem_event_index: field::RM_EVENT_INDEX;
        /// Action enables, shifted down from bit 12.
        release_mem_actions, set_release_mem_actions: field::RM_ACTIONS;
        release_mem_cache_policy, set_release_mem_cache_policy: field::RM_CACHE_POLICY;
        release_mem_dst_sel, set_release_mem_dst_sel: field::RM_DST_SEL;
        release_mem_int_sel, set_release_mem_int_sel: field::RM_INT_SEL;
        release_mem_data_sel, set_release_mem_data_sel: field::RM_DATA_SEL;
        release_mem_int_ctxid, set_release_mem_int_ctxid: field::RM_INT_CTXID;

        wait_reg_mem_function, set_wait_reg_mem_function: field::WRM_FUNCTION;
        wait_reg_mem_mem_space, set_wait_reg_mem_mem_space: field::WRM_MEM_SPACE;
        wait_reg_mem_operation, set_wait_reg_mem_operation: field::WRM_OPERATION;
        wait_reg_mem_engine_sel, set_wait_reg_mem_engine_sel: field::WRM_ENGINE_SEL;
        wait_reg_mem_reference, set_wait_reg_mem_reference: field::WRM_REFERENCE;
        wait_reg_mem_mask, set_wait_reg_mem_mask: field::WRM_MASK;
        wait_reg_mem_poll_interval, set_wait_reg_mem_poll_interval: field::WRM_POLL_INTERVAL;

        ib_size, set_ib_size: field::IB_SIZE;
        ib_chain, set_ib_chain: field::IB_CHAIN;
        ib_valid, set_ib_valid: field::IB_VALID;
        ib_vmid, set_ib_vmid: field::IB_VMID;
        ib_cache_policy, set_ib_cache_policy: field::IB_CACHE_POLICY;

        acquire_mem_coher_cntl, set_acquire_mem_coher_cntl: field::AM_COHER_CNTL;
        acquire_mem_coher_size, set_acquire_mem_coher_size: field::AM_COHER_SIZE;
        acquire_mem_coher_size_hi, set_acquire_mem_coher_size_hi: field::AM_COHER_SIZE_HI;
        acquire_mem_coher_base_lo, set_acquire_mem_coher_base_lo: field::AM_COHER_BASE_LO;
        acquire_mem_coher_base_hi, set_acquire_mem_coher_base_hi: field::AM_COHER_BASE_HI;
        acquire_mem_poll_interval, set_acquire_mem_poll_interval: field::AM_POLL_INTERVAL;
        acquire_mem_gcr_cntl, set_acquire_mem_gcr_cntl: field::AM_GCR_CNTL;

        set_sh_reg_offset, set_set_sh_reg_offset: field::SH_REG_OFFSET;

        dispatch_dim_x, set_dispatch_dim_x: field::DD_DIM_X;
        dispatch_dim_y, set_dispatch_dim_y: field::DD_DIM_Y;
        dispatch_dim_z, set_dispatch_dim_z: field::DD_DIM_Z;
        dispatch_initiator, set_dispatch_initiator: field::DD_INITIATOR;

        event_write_event_type, set_event_write_event_type: field::EW_EVENT_TYPE;
        event_write_event_index, set_event_write_event_index: field::EW_EVENT_INDEX;

        copy_data_src_sel, set_copy_data_src_sel: field::CD_SRC_SEL;
        copy_data_dst_sel, set_copy_data_dst_sel: field::CD_DST_SEL;
        copy_data_src_cache_policy, set_copy_data_src_cache_policy: field::CD_SRC_CACHE_POLICY;
        copy_data_count_sel, set_copy_data_count_sel: field::CD_COUNT_SEL;
        copy_data_wr_confirm, set_copy_data_wr_confirm: field::CD_WR_CONFIRM;
        copy_data_dst_cache_policy, set_copy_data_dst_cache_policy: field::CD_DST_CACHE_POLICY;
        copy_data_engine_sel, set_copy_data_engine_sel: field::CD_ENGINE_SEL;
    }

    /// A 64-bit value whose low dword is dword `lo`.
    pub fn qword(&self, lo: usize) -> u64 {
        get_u64(self.buffer.as_ref(), lo)
    }

    pub fn set_qword(&mut self, lo: usize, value: u64)
    where
        T: AsMut<[u8]>,
    {
        set_u64(self.buffer.as_mut(), lo, value)
    }

    /// Dwords `from..` of the packet as declared by its count (empty if the buffer is short).
    pub fn dwords_from(&self, from: usize) -> Dwords<'_> {
        let end = self.total_len().min(self.buffer.as_ref().len());
        Dwords::Bytes(self.buffer.as_ref().get(from * 4..end).unwrap_or(&[]))
    }
}

/// WRITE_DATA: write `data` to memory or registers at `dst_addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteData<'a> {
    /// 0 = memory-mapped register, 5 = memory (gfx9 DST_SEL).
    pub dst_sel: u8,
    /// Write every dword to the same address.
    pub wr_one_addr: bool,
    pub wr_confirm: bool,
    pub cache_policy: u8,
    pub engine_sel: u8,
    pub dst_addr: u64,
    pub data: Dwords<'a>,
}

/// WRITE_DATA destination: memory.
pub const WRITE_DATA_DST_MEM: u8 = 5;

impl<'a> WriteData<'a> {
    /// Write `data` to memory at `addr` (dword aligned) and wait for the write to land.
    pub const fn memory(addr: u64, data: Dwords<'a>) -> Self {
        WriteData {
            dst_sel: WRITE_DATA_DST_MEM,
            wr_one_addr: false,
            wr_confirm: true,
            cache_policy: 0,
            engine_sel: 0,
            dst_addr: addr,
            data,
        }
    }
}

/// RELEASE_MEM: at an end-of-pipe event, optionally write data and raise an interrupt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReleaseMem {
    pub event_type: u8,
    pub event_index: u8,
    /// [`release_action`] bits (unshifted).
    pub actions: u32,
    pub cache_policy: u8,
    pub dst_sel: u8,
    /// 0 none, 1 interrupt only, 2 interrupt after write confirm, 3 data after write confirm
    /// (further values compare the data before interrupting).
    pub int_sel: u8,
    /// 0 none, 1 32-bit data, 2 64-bit data, 3 64-bit GPU clock, 4 CP perf counter.
    pub data_sel: u8,
    pub addr: u64,
    pub data: u64,
    pub int_ctxid: u32,
}

impl ReleaseMem {
    /// Bottom-of-pipe write of a 64-bit `data` to `addr` with an interrupt after the write.
    pub const fn eop(addr: u64, data: u64) -> Self {
        ReleaseMem {
            event_type: event::BOTTOM_OF_PIPE_TS,
            event_index: 5,
            actions: 0,
            cache_policy: 0,
            dst_sel: 0,
            int_sel: 2,
            data_sel: 2,
            addr,
            data,
            int_ctxid: 0,
        }
    }

    pub const fn actions(mut self, actions: u32) -> Self {
        self.actions = actions;
        self
    }

    pub const fn interrupt(mut self, int_sel: u8, int_ctxid: u32) -> Self {
        self.int_sel = int_sel;
        self.int_ctxid = int_ctxid;
        self
    }
}

/// WAIT_REG_MEM compare functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CompareFunction {
    Always = 0,
    Less = 1,
    LessEqual = 2,
    Equal = 3,
    NotEqual = 4,
    GreaterEqual = 5,
    Greater = 6,
}

impl CompareFunction {
    pub const fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Always,
            1 => Self::Less,
            2 => Self::LessEqual,
            3 => Self::Equal,
            4 => Self::NotEqual,
            5 => Self::GreaterEqual,
            6 => Self::Greater,
            _ => return None,
        })
    }
}

/// WAIT_REG_MEM: wait until `(*addr & mask) function reference`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitRegMem {
    pub function: CompareFunction,
    /// Poll memory (true) or a register (false).
    pub memory: bool,
    pub operation: u8,
    pub engine_sel: u8,
    pub addr: u64,
    pub reference: u32,
    pub mask: u32,
    pub poll_interval: u16,
}

impl WaitRegMem {
    pub const fn memory(addr: u64, function: CompareFunction, reference: u32, mask: u32) -> Self {
        WaitRegMem { function, memory: true, operation: 0, engine_sel: 0, addr, reference, mask, poll_interval: 4 }
    }
}

/// INDIRECT_BUFFER: run `size_dwords` dwords of commands at `ib_base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndirectBuffer {
    /// Dword aligned.
    pub ib_base: u64,
    /// 20 bits.
    pub size_dwords: u32,
    pub chain: bool,
    pub valid: bool,
    pub vmid: u8,
    pub cache_policy: u8,
}

impl IndirectBuffer {
    pub const fn new(ib_base: u64, size_dwords: u32) -> Self {
        IndirectBuffer { ib_base, size_dwords, chain: false, valid: true, vmid: 0, cache_policy: 0 }
    }
}

/// ACQUIRE_MEM: make a range coherent. The gfx9 form (soc15d.h) is 7 dwords with the cache
/// actions in COHER_CNTL; the gfx10+ form (nvd.h) is 8 dwords, COHER_CNTL unused and the cache
/// actions in GCR_CNTL (dword 7), as ROCr's `InvalidateCodeCaches` sends it on gfx10+.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcquireMem {
    pub coher_cntl: u32,
    /// 40 bits, in 256-byte units.
    pub coher_size: u64,
    /// 57 bits, in 256-byte units.
    pub coher_base: u64,
    pub poll_interval: u16,
    /// The gfx10+ form's GCR_CNTL (19 bits); `None`: the gfx9 form.
    pub gcr_cntl: Option<u32>,
}

/// SET_SH_REG: write `values` to consecutive SH registers from `SH_REG_BASE + reg_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SetShReg<'a> {
    pub reg_offset: u16,
    pub values: Dwords<'a>,
}

/// DISPATCH_DIRECT: launch a grid of `dim` workgroups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DispatchDirect {
    pub dim: [u32; 3],
    pub dispatch_initiator: u32,
}

/// EVENT_WRITE (2 dwords, or 4 with an address for sample-type events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventWrite {
    pub event_type: u8,
    pub event_index: u8,
    pub addr: Option<u64>,
}

/// COPY_DATA: copy one dword (or two with `count_sel`) between memory, registers and immediates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyData {
    pub src_sel: u8,
    pub dst_sel: u8,
    pub src_cache_policy: u8,
    /// Copy 64 bits instead of 32.
    pub count_sel: bool,
    pub wr_confirm: bool,
    pub dst_cache_policy: u8,
    pub engine_sel: u8,
    pub src: u64,
    pub dst: u64,
}

/// The command of a PM4 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command<'a> {
    /// `body_dwords` dwords of padding after the header (0: the one-dword header-only NOP).
    Nop {
        body_dwords: u16,
    },
    WriteData(WriteData<'a>),
    ReleaseMem(ReleaseMem),
    WaitRegMem(WaitRegMem),
    IndirectBuffer(IndirectBuffer),
    AcquireMem(AcquireMem),
    SetShReg(SetShReg<'a>),
    DispatchDirect(DispatchDirect),
    EventWrite(EventWrite),
    CopyData(CopyData),
}

/// A validated PM4 type-3 packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr<'a> {
    /// Shader type bit: true for compute rings.
    pub compute: bool,
    pub predicate: bool,
    pub command: Command<'a>,
}

impl<'a> Repr<'a> {
    /// A compute-ring packet without predication.
    pub const fn compute(command: Command<'a>) -> Self {
        Repr { compute: true, predicate: false, command }
    }

    pub const fn opcode(&self) -> u8 {
        match self.command {
            Command::Nop { .. } => opcode::NOP,
            Command::WriteData(_) => opcode::WRITE_DATA,
            Command::ReleaseMem(_) => opcode::RELEASE_MEM,
            Command::WaitRegMem(_) => opcode::WAIT_REG_MEM,
            Command::IndirectBuffer(_) => opcode::INDIRECT_BUFFER,
            Command::AcquireMem(_) => opcode::ACQUIRE_MEM,
            Command::SetShReg(_) => opcode::SET_SH_REG,
            Command::DispatchDirect(_) => opcode::DISPATCH_DIRECT,
            Command::EventWrite(_) => opcode::EVENT_WRITE,
            Command::CopyData(_) => opcode::COPY_DATA,
        }
    }

    /// Total packet length in dwords, header included.
    pub fn dwords(&self) -> usize {
        match &self.command {
            Command::Nop { body_dwords: 0 } => 1,
            Command::Nop { body_dwords } => 1 + *body_dwords as usize,
            Command::WriteData(w) => 4 + w.data.len(),
            Command::ReleaseMem(_) => 8,
            Command::WaitRegMem(_) => 7,
            Command::IndirectBuffer(_) => 4,
            Command::AcquireMem(a) => 7 + a.gcr_cntl.is_some() as usize,
            Command::SetShReg(s) => 2 + s.values.len(),
            Command::DispatchDirect(_) => 5,
            Command::EventWrite(e) => {
                if e.addr.is_some() {
                    4
                } else {
                    2
                }
            }
            Command::CopyData(_) => 6,
        }
    }

    pub fn buffer_len(&self) -> usize {
        4 * self.dwords()
    }

    /// The header's count field for this packet.
    fn count(&self) -> u32 {
        match self.command {
            Command::Nop { body_dwords: 0 } => NOP_HEADER_ONLY_COUNT,
            _ => self.dwords() as u32 - 2,
        }
    }

    /// Whether every field fits its bits and the packet length fits the count field.
    pub fn check(&self) -> Result<()> {
        let ok = match &self.command {
            Command::Nop { body_dwords } => (*body_dwords as u32) <= NOP_HEADER_ONLY_COUNT,
            Command::WriteData(w) => {
                !w.data.is_empty()
                    && w.data.len() <= 0x3ffd
                    && fits(field::WD_DST_SEL, w.dst_sel as u32)
                    && fits(field::WD_CACHE_POLICY, w.cache_policy as u32)
                    && fits(field::WD_ENGINE_SEL, w.engine_sel as u32)
                    // Memory and L2 destinations are byte addresses; a register destination is a
                    // dword register offset.
                    && (w.dst_sel == 0 || w.dst_addr & 3 == 0)
            }
            Command::ReleaseMem(r) => {
                fits(field::RM_EVENT_TYPE, r.event_type as u32)
                    && fits(field::RM_EVENT_INDEX, r.event_index as u32)
                    && r.actions & !(field::RM_ACTIONS_MASK) == 0
                    && fits(field::RM_CACHE_POLICY, r.cache_policy as u32)
                    && fits(field::RM_DST_SEL, r.dst_sel as u32)
                    && fits(field::RM_INT_SEL, r.int_sel as u32)
                    && fits(field::RM_DATA_SEL, r.data_sel as u32)
                    // 32-bit data needs a dword-aligned address, 64-bit data (and clocks) a qword.
                    && r.addr & if r.data_sel >= 2 { 7 } else { 3 } == 0
            }
            Command::WaitRegMem(w) => {
                fits(field::WRM_OPERATION, w.operation as u32)
                    && fits(field::WRM_ENGINE_SEL, w.engine_sel as u32)
                    && (!w.memory || w.addr & 3 == 0)
            }
            Command::IndirectBuffer(ib) => {
                ib.ib_base & 3 == 0
                    && ib.ib_base >> 48 == 0
                    && fits(field::IB_SIZE, ib.size_dwords)
                    && fits(field::IB_VMID, ib.vmid as u32)
                    && fits(field::IB_CACHE_POLICY, ib.cache_policy as u32)
            }
            Command::AcquireMem(a) => {
                a.coher_size >> 40 == 0 && a.coher_base >> 57 == 0 && a.gcr_cntl.is_none_or(|g| fits(field::AM_GCR_CNTL, g))
            }
            Command::SetShReg(s) => !s.values.is_empty() && s.values.len() <= 0x3fff,
            Command::DispatchDirect(_) => true,
            Command::EventWrite(e) => {
                fits(field::EW_EVENT_TYPE, e.event_type as u32)
                    && fits(field::EW_EVENT_INDEX, e.event_index as u32)
                    && e.addr.is_none_or(|a| a & 7 == 0 && a >> 48 == 0)
            }
            Command::CopyData(c) => {
                fits(field::CD_SRC_SEL, c.src_sel as u32)
                    && fits(field::CD_DST_SEL, c.dst_sel as u32)
                    && fits(field::CD_SRC_CACHE_POLICY, c.src_cache_policy as u32)
                    && fits(field::CD_DST_CACHE_POLICY, c.dst_cache_policy as u32)
                    && fits(field::CD_ENGINE_SEL, c.engine_sel as u32)
            }
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
        let count = p.count();
        let fixed = |n: u32| if count == n { Ok(()) } else { Err(Error::BadLength) };
        let command = match p.opcode() as u8 {
            opcode::NOP => Command::Nop { body_dwords: if count == NOP_HEADER_ONLY_COUNT { 0 } else { count as u16 + 1 } },
            opcode::WRITE_DATA => {
                if count < 3 {
                    return Err(Error::BadLength);
                }
                WriteData {
                    dst_sel: p.write_data_dst_sel() as u8,
                    wr_one_addr: p.write_data_wr_one_addr() != 0,
                    wr_confirm: p.write_data_wr_confirm() != 0,
                    cache_policy: p.write_data_cache_policy() as u8,
                    engine_sel: p.write_data_engine_sel() as u8,
                    dst_addr: p.qword(field::WD_ADDR_LO),
                    data: p.dwords_from(field::WD_DATA),
                }
                .into()
            }
            opcode::RELEASE_MEM => {
                fixed(6)?;
                Command::ReleaseMem(ReleaseMem {
                    event_type: p.release_mem_event_type() as u8,
                    event_index: p.release_mem_event_index() as u8,
                    actions: p.release_mem_actions() << field::RM_ACTIONS.shift,
                    cache_policy: p.release_mem_cache_policy() as u8,
                    dst_sel: p.release_mem_dst_sel() as u8,
                    int_sel: p.release_mem_int_sel() as u8,
                    data_sel: p.release_mem_data_sel() as u8,
                    addr: p.qword(field::RM_ADDR_LO),
                    data: p.qword(field::RM_DATA_LO),
                    int_ctxid: p.release_mem_int_ctxid(),
                })
            }
            opcode::WAIT_REG_MEM => {
                fixed(5)?;
                Command::WaitRegMem(WaitRegMem {
                    function: CompareFunction::from_u32(p.wait_reg_mem_function()).ok_or(Error::BadField)?,
                    memory: match p.wait_reg_mem_mem_space() {
                        0 => false,
                        1 => true,
                        _ => return Err(Error::BadField),
                    },
                    operation: p.wait_reg_mem_operation() as u8,
                    engine_sel: p.wait_reg_mem_engine_sel() as u8,
                    addr: p.qword(field::WRM_ADDR_LO),
                    reference: p.wait_reg_mem_reference(),
                    mask: p.wait_reg_mem_mask(),
                    poll_interval: p.wait_reg_mem_poll_interval() as u16,
                })
            }
            opcode::INDIRECT_BUFFER => {
                fixed(2)?;
                Command::IndirectBuffer(IndirectBuffer {
                    ib_base: p.qword(field::IB_BASE_LO),
                    size_dwords: p.ib_size(),
                    chain: p.ib_chain() != 0,
                    valid: p.ib_valid() != 0,
                    vmid: p.ib_vmid() as u8,
                    cache_policy: p.ib_cache_policy() as u8,
                })
            }
            opcode::ACQUIRE_MEM => {
                if count != 5 && count != 6 {
                    return Err(Error::BadLength);
                }
                Command::AcquireMem(AcquireMem {
                    gcr_cntl: (count == 6).then(|| p.acquire_mem_gcr_cntl()),
                    coher_cntl: p.acquire_mem_coher_cntl(),
                    coher_size: p.acquire_mem_coher_size() as u64 | (p.acquire_mem_coher_size_hi() as u64) << 32,
                    coher_base: p.acquire_mem_coher_base_lo() as u64 | (p.acquire_mem_coher_base_hi() as u64) << 32,
                    poll_interval: p.acquire_mem_poll_interval() as u16,
                })
            }
            opcode::SET_SH_REG => {
                if count < 1 {
                    return Err(Error::BadLength);
                }
                Command::SetShReg(SetShReg { reg_offset: p.set_sh_reg_offset() as u16, values: p.dwords_from(field::SH_VALUES) })
            }
            opcode::DISPATCH_DIRECT => {
                fixed(3)?;
                Command::DispatchDirect(DispatchDirect {
                    dim: [p.dispatch_dim_x(), p.dispatch_dim_y(), p.dispatch_dim_z()],
                    dispatch_initiator: p.dispatch_initiator(),
                })
            }
            opcode::EVENT_WRITE => Command::EventWrite(EventWrite {
                event_type: p.event_write_event_type() as u8,
                event_index: p.event_write_event_index() as u8,
                addr: match count {
                    0 => None,
                    2 => Some(p.qword(field::EW_ADDR_LO)),
                    _ => return Err(Error::BadLength),
                },
            }),
            opcode::COPY_DATA => {
                fixed(4)?;
                Command::CopyData(CopyData {
                    src_sel: p.copy_data_src_sel() as u8,
                    dst_sel: p.copy_data_dst_sel() as u8,
                    src_cache_policy: p.copy_data_src_cache_policy() as u8,
                    count_sel: p.copy_data_count_sel() != 0,
                    wr_confirm: p.copy_data_wr_confirm() != 0,
                    dst_cache_policy: p.copy_data_dst_cache_policy() as u8,
                    engine_sel: p.copy_data_engine_sel() as u8,
                    src: p.qword(field::CD_SRC_LO),
                    dst: p.qword(field::CD_DST_LO),
                })
            }
            _ => return Err(Error::UnknownType),
        };
        let repr = Repr { compute: p.shader_type() != 0, predicate: p.predicate() != 0, command };
        // What parses must emit again: values `check` refuses (misaligned addresses, swap bits in
        // an IB base) are malformed here too.
        repr.check()?;
        Ok(repr)
    }

    /// Writes the packet (header included) at the front of the view's buffer. A packet that
    /// fails [`Repr::check`] or a buffer shorter than [`Repr::buffer_len`] is an error and
    /// leaves the buffer untouched.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) -> Result<()> {
        self.check()?;
        let len = self.buffer_len();
        let buf = p.buffer.as_mut();
        let Some(buf) = buf.get_mut(..len) else {
            return Err(Error::Truncated);
        };
        buf.fill(0);
        set_dword(buf, 0, header(self.opcode(), self.count(), self.compute, self.predicate));
        let mut p = Packet::new_unchecked(buf);
        match &self.command {
            Command::Nop { .. } => {}
            Command::WriteData(w) => {
                p.set_write_data_dst_sel(w.dst_sel as u32);
                p.set_write_data_wr_one_addr(w.wr_one_addr as u32);
                p.set_write_data_wr_confirm(w.wr_confirm as u32);
                p.set_write_data_cache_policy(w.cache_policy as u32);
                p.set_write_data_engine_sel(w.engine_sel as u32);
                p.set_qword(field::WD_ADDR_LO, w.dst_addr);
                for (i, d) in w.data.iter().enumerate() {
                    p.set_dword(field::WD_DATA + i, d);
                }
            }
            Command::ReleaseMem(r) => {
                p.set_release_mem_event_type(r.event_type as u32);
                p.set_release_mem_event_index(r.event_index as u32);
                p.set_release_mem_actions(r.actions >> field::RM_ACTIONS.shift);
                p.set_release_mem_cache_policy(r.cache_policy as u32);
                p.set_release_mem_dst_sel(r.dst_sel as u32);
                p.set_release_mem_int_sel(r.int_sel as u32);
                p.set_release_mem_data_sel(r.data_sel as u32);
                p.set_qword(field::RM_ADDR_LO, r.addr);
                p.set_qword(field::RM_DATA_LO, r.data);
                p.set_release_mem_int_ctxid(r.int_ctxid);
            }
            Command::WaitRegMem(w) => {
                p.set_wait_reg_mem_function(w.function as u32);
                p.set_wait_reg_mem_mem_space(w.memory as u32);
                p.set_wait_reg_mem_operation(w.operation as u32);
                p.set_wait_reg_mem_engine_sel(w.engine_sel as u32);
                p.set_qword(field::WRM_ADDR_LO, w.addr);
                p.set_wait_reg_mem_reference(w.reference);
                p.set_wait_reg_mem_mask(w.mask);
                p.set_wait_reg_mem_poll_interval(w.poll_interval as u32);
            }
            Command::IndirectBuffer(ib) => {
                p.set_qword(field::IB_BASE_LO, ib.ib_base);
                p.set_ib_size(ib.size_dwords);
                p.set_ib_chain(ib.chain as u32);
                p.set_ib_valid(ib.valid as u32);
                p.set_ib_vmid(ib.vmid as u32);
                p.set_ib_cache_policy(ib.cache_policy as u32);
            }
            Command::AcquireMem(a) => {
                p.set_acquire_mem_coher_cntl(a.coher_cntl);
                p.set_acquire_mem_coher_size(a.coher_size as u32);
                p.set_acquire_mem_coher_size_hi((a.coher_size >> 32) as u32);
                p.set_acquire_mem_coher_base_lo(a.coher_base as u32);
                p.set_acquire_mem_coher_base_hi((a.coher_base >> 32) as u32);
                p.set_acquire_mem_poll_interval(a.poll_interval as u32);
                if let Some(g) = a.gcr_cntl {
                    p.set_acquire_mem_gcr_cntl(g);
                }
            }
            Command::SetShReg(s) => {
                p.set_set_sh_reg_offset(s.reg_offset as u32);
                for (i, v) in s.values.iter().enumerate() {
                    p.set_dword(field::SH_VALUES + i, v);
                }
            }
            Command::DispatchDirect(d) => {
                p.set_dispatch_dim_x(d.dim[0]);
                p.set_dispatch_dim_y(d.dim[1]);
                p.set_dispatch_dim_z(d.dim[2]);
                p.set_dispatch_initiator(d.dispatch_initiator);
            }
            Command::EventWrite(e) => {
                p.set_event_write_event_type(e.event_type as u32);
                p.set_event_write_event_index(e.event_index as u32);
                if let Some(a) = e.addr {
                    p.set_qword(field::EW_ADDR_LO, a);
                }
            }
            Command::CopyData(c) => {
                p.set_copy_data_src_sel(c.src_sel as u32);
                p.set_copy_data_dst_sel(c.dst_sel as u32);
                p.set_copy_data_src_cache_policy(c.src_cache_policy as u32);
                p.set_copy_data_count_sel(c.count_sel as u32);
                p.set_copy_data_wr_confirm(c.wr_confirm as u32);
                p.set_copy_data_dst_cache_policy(c.dst_cache_policy as u32);
                p.set_copy_data_engine_sel(c.engine_sel as u32);
                p.set_qword(field::CD_SRC_LO, c.src);
                p.set_qword(field::CD_DST_LO, c.dst);
            }
        }
        Ok(())
    }
}

impl<'a> From<WriteData<'a>> for Command<'a> {
    fn from(w: WriteData<'a>) -> Self {
        Command::WriteData(w)
    }
}
