//! AQL packets (HSA Platform System Architecture spec, "Architected Queuing Language") and the
//! `amd_signal_t` that ROCr's completion signals point at. Every AQL packet is 64 bytes; the first
//! 32-bit word (header + setup/format) is what a packet processor polls, so it is published last.

use super::{Error, Result};
use core::ops::Range;

/// Size of every AQL packet in bytes.
pub const PACKET_LEN: usize = 64;
/// Size of an `amd_signal_t` in bytes (64-byte aligned in memory).
pub const SIGNAL_LEN: usize = 64;
/// Dependency signals in a barrier-AND / barrier-OR packet.
pub const DEP_SIGNALS: usize = 5;
/// AMD vendor-specific format: the barrier-value packet (`AMD_AQL_FORMAT_BARRIER_VALUE`).
pub const AMD_FORMAT_BARRIER_VALUE: u8 = 2;
/// AMD vendor-specific format: a PM4 indirect buffer (`AMD_AQL_FORMAT_PM4_IB`).
pub const AMD_FORMAT_PM4_IB: u8 = 1;

mod field {
    pub type Field = core::ops::Range<usize>;

    // Common to all packet types.
    pub const HEADER: Field = 0..2;
    /// Kernel dispatch: setup (dimensions in bits 0..1). Vendor-specific: AmdFormat + reserved byte.
    pub const SETUP: Field = 2..4;
    pub const COMPLETION_SIGNAL: Field = 56..64;

    // Header bits.
    pub const TYPE_SHIFT: u32 = 0;
    pub const TYPE_MASK: u16 = 0xff;
    pub const BARRIER_BIT: u16 = 1 << 8;
    pub const ACQUIRE_SHIFT: u32 = 9;
    pub const RELEASE_SHIFT: u32 = 11;
    pub const SCOPE_MASK: u16 = 0x3;
    pub const SETUP_DIMENSIONS_MASK: u16 = 0x3;

    // Kernel dispatch.
    pub const WORKGROUP_SIZE_X: Field = 4..6;
    pub const WORKGROUP_SIZE_Y: Field = 6..8;
    pub const WORKGROUP_SIZE_Z: Field = 8..10;
    pub const GRID_SIZE_X: Field = 12..16;
    pub const GRID_SIZE_Y: Field = 16..20;
    pub const GRID_SIZE_Z: Field = 20..24;
    pub const PRIVATE_SEGMENT_SIZE: Field = 24..28;
    pub const GROUP_SEGMENT_SIZE: Field = 28..32;
    pub const KERNEL_OBJECT: Field = 32..40;
    pub const KERNARG_ADDRESS: Field = 40..48;

    // Barrier-AND / barrier-OR: dep_signal[5] from byte 8.
    pub const DEP_SIGNAL_BASE: usize = 8;

    // Agent dispatch.
    pub const AGENT_TYPE: Field = 2..4;
    pub const RETURN_ADDRESS: Field = 8..16;
    pub const ARG_BASE: usize = 16;

    // AMD barrier-value (vendor-specific, format 2).
    pub const AMD_FORMAT: usize = 2;
    pub const BV_SIGNAL: Field = 8..16;
    pub const BV_VALUE: Field = 16..24;
    pub const BV_MASK: Field = 24..32;
    pub const BV_COND: Field = 32..36;

    // AMD PM4-IB (vendor-specific, format 1): a PM4 INDIRECT_BUFFER in bytes 4..20.
    pub const PM4_IB_JUMP: Field = 4..20;
    pub const PM4_IB_DW_CNT_REMAIN: Field = 20..24;

    // amd_signal_t.
    pub const SIG_KIND: Field = 0..8;
    pub const SIG_VALUE: Field = 8..16;
    pub const SIG_EVENT_MAILBOX_PTR: Field = 16..24;
    pub const SIG_EVENT_ID: Field = 24..28;
    pub const SIG_START_TS: Field = 32..40;
    pub const SIG_END_TS: Field = 40..48;
    pub const SIG_QUEUE_PTR: Field = 48..56;
}

#[inline]
fn rd<const N: usize>(buf: &[u8], f: Range<usize>) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(b) = buf.get(f) {
        out.copy_from_slice(b);
    }
    out
}

#[inline]
fn wr(buf: &mut [u8], f: Range<usize>, bytes: &[u8]) {
    if let Some(b) = buf.get_mut(f) {
        b.copy_from_slice(bytes);
    }
}

/// `hsa_packet_type_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum PacketType {
    VendorSpecific = 0,
    /// The packet processor stops at an INVALID header: a free slot.
    Invalid = 1,
    KernelDispatch = 2,
    BarrierAnd = 3,
    AgentDispatch = 4,
    BarrierOr = 5,
}

impl PacketType {
    pub const fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::VendorSpecific,
            1 => Self::Invalid,
            2 => Self::KernelDispatch,
            3 => Self::BarrierAnd,
            4 => Self::AgentDispatch,
            5 => Self::BarrierOr,
            _ => return None,
        })
    }
}

/// `hsa_fence_scope_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum FenceScope {
    #[default]
    None = 0,
    Agent = 1,
    System = 2,
}

impl FenceScope {
    pub const fn from_u8(v: u8) -> Option<Self> {
        Some(match v {
            0 => Self::None,
            1 => Self::Agent,
            2 => Self::System,
            _ => return None,
        })
    }
}

/// The 16-bit AQL packet header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub packet_type: PacketType,
    /// Wait for all previous packets of the queue to complete before launching.
    pub barrier: bool,
    pub acquire: FenceScope,
    pub release: FenceScope,
}

impl Header {
    pub const fn new(packet_type: PacketType) -> Self {
        Header { packet_type, barrier: false, acquire: FenceScope::None, release: FenceScope::None }
    }

    pub const fn barrier(mut self, on: bool) -> Self {
        self.barrier = on;
        self
    }

    pub const fn acquire(mut self, scope: FenceScope) -> Self {
        self.acquire = scope;
        self
    }

    pub const fn release(mut self, scope: FenceScope) -> Self {
        self.release = scope;
        self
    }

    pub const fn to_u16(self) -> u16 {
        (self.packet_type as u16) << field::TYPE_SHIFT
            | if self.barrier { field::BARRIER_BIT } else { 0 }
            | (self.acquire as u16) << field::ACQUIRE_SHIFT
            | (self.release as u16) << field::RELEASE_SHIFT
    }

    /// Rejects an unknown type, fence scope 3 and set reserved bits 13..15.
    pub const fn from_u16(v: u16) -> Result<Self> {
        let Some(packet_type) = PacketType::from_u8((v & field::TYPE_MASK) as u8) else {
            return Err(Error::UnknownType);
        };
        let acq = FenceScope::from_u8(((v >> field::ACQUIRE_SHIFT) & field::SCOPE_MASK) as u8);
        let rel = FenceScope::from_u8(((v >> field::RELEASE_SHIFT) & field::SCOPE_MASK) as u8);
        match (acq, rel) {
            (Some(acquire), Some(release)) if v >> 13 == 0 => {
                Ok(Header { packet_type, barrier: v & field::BARRIER_BIT != 0, acquire, release })
            }
            _ => Err(Error::BadField),
        }
    }
}

/// A zero-copy view of one 64-byte AQL packet.
#[derive(Debug, Clone)]
pub struct Packet<T: AsRef<[u8]>> {
    buffer: T,
}

macro_rules! le_accessors {
    ($( $(#[$m:meta])* $get:ident, $set:ident: $ty:ty = $f:expr; )*) => {
        $(
            $(#[$m])*
            #[inline]
            pub fn $get(&self) -> $ty {
                <$ty>::from_le_bytes(rd(self.buffer.as_ref(), $f))
            }

            #[inline]
            pub fn $set(&mut self, value: $ty)
            where
                T: AsMut<[u8]>,
            {
                wr(self.buffer.as_mut(), $f, &value.to_le_bytes())
            }
        )*
    };
}

impl<T: AsRef<[u8]>> Packet<T> {
    /// Wraps a buffer without checking its length (accessors then read 0 past the end).
    pub const fn new_unchecked(buffer: T) -> Self {
        Packet { buffer }
    }

    /// Wraps a buffer of at least [`PACKET_LEN`] bytes.
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Packet { buffer };
        p.check_len()?;
        Ok(p)
    }

    pub fn check_len(&self) -> Result<()> {
        if self.buffer.as_ref().len() < PACKET_LEN {
            Err(Error::Truncated)
        } else {
            Ok(())
        }
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The first 32-bit word: header in the low half, setup / AmdFormat in the high half.
    pub fn header_word(&self) -> u32 {
        u32::from_le_bytes(rd(self.buffer.as_ref(), 0..4))
    }

    pub fn set_header_word(&mut self, value: u32)
    where
        T: AsMut<[u8]>,
    {
        wr(self.buffer.as_mut(), 0..4, &value.to_le_bytes())
    }

    le_accessors! {
        /// The raw 16-bit header.
        header_raw, set_header_raw: u16 = field::HEADER;
        /// Kernel dispatch `setup` (dimensions in bits 0..1); the agent-dispatch `type`.
        setup, set_setup: u16 = field::SETUP;
        workgroup_size_x, set_workgroup_size_x: u16 = field::WORKGROUP_SIZE_X;
        workgroup_size_y, set_workgroup_size_y: u16 = field::WORKGROUP_SIZE_Y;
        workgroup_size_z, set_workgroup_size_z: u16 = field::WORKGROUP_SIZE_Z;
        grid_size_x, set_grid_size_x: u32 = field::GRID_SIZE_X;
        grid_size_y, set_grid_size_y: u32 = field::GRID_SIZE_Y;
        grid_size_z, set_grid_size_z: u32 = field::GRID_SIZE_Z;
        private_segment_size, set_private_segment_size: u32 = field::PRIVATE_SEGMENT_SIZE;
        group_segment_size, set_group_segment_size: u32 = field::GROUP_SEGMENT_SIZE;
        kernel_object, set_kernel_object: u64 = field::KERNEL_OBJECT;
        kernarg_address, set_kernarg_address: u64 = field::KERNARG_ADDRESS;
        agent_type, set_agent_type: u16 = field::AGENT_TYPE;
        return_address, set_return_address: u64 = field::RETURN_ADDRESS;
        barrier_value_signal, set_barrier_value_signal: u64 = field::BV_SIGNAL;
        barrier_value_value, set_barrier_value_value: i64 = field::BV_VALUE;
        barrier_value_mask, set_barrier_value_mask: i64 = field::BV_MASK;
        barrier_value_cond, set_barrier_value_cond: u32 = field::BV_COND;
        pm4_ib_dw_cnt_remain, set_pm4_ib_dw_cnt_remain: u32 = field::PM4_IB_DW_CNT_REMAIN;
        completion_signal, set_completion_signal: u64 = field::COMPLETION_SIGNAL;
    }

    /// The header, decoded.
    pub fn header(&self) -> Result<Header> {
        Header::from_u16(self.header_raw())
    }

    pub fn set_header(&mut self, header: Header)
    where
        T: AsMut<[u8]>,
    {
        self.set_header_raw(header.to_u16())
    }

    /// Kernel dispatch: number of grid dimensions (1..=3 when valid).
    pub fn dimensions(&self) -> u16 {
        self.setup() & field::SETUP_DIMENSIONS_MASK
    }

    /// Vendor-specific: the AMD format byte.
    pub fn amd_format(&self) -> u8 {
        self.buffer.as_ref().get(field::AMD_FORMAT).copied().unwrap_or(0)
    }

    pub fn set_amd_format(&mut self, format: u8)
    where
        T: AsMut<[u8]>,
    {
        if let Some(b) = self.buffer.as_mut().get_mut(field::AMD_FORMAT) {
            *b = format;
        }
    }

    /// Barrier-AND/OR dependency signal `i` (0 when `i >= 5`).
    pub fn dep_signal(&self, i: usize) -> u64 {
        if i >= DEP_SIGNALS {
            return 0;
        }
        let off = field::DEP_SIGNAL_BASE + 8 * i;
        u64::from_le_bytes(rd(self.buffer.as_ref(), off..off + 8))
    }

    pub fn set_dep_signal(&mut self, i: usize, signal: u64)
    where
        T: AsMut<[u8]>,
    {
        if i < DEP_SIGNALS {
            let off = field::DEP_SIGNAL_BASE + 8 * i;
            wr(self.buffer.as_mut(), off..off + 8, &signal.to_le_bytes())
        }
    }

    /// Agent dispatch argument `i` (0 when `i >= 4`).
    pub fn arg(&self, i: usize) -> u64 {
        if i >= 4 {
            return 0;
        }
        let off = field::ARG_BASE + 8 * i;
        u64::from_le_bytes(rd(self.buffer.as_ref(), off..off + 8))
    }

    pub fn set_arg(&mut self, i: usize, value: u64)
    where
        T: AsMut<[u8]>,
    {
        if i < 4 {
            let off = field::ARG_BASE + 8 * i;
            wr(self.buffer.as_mut(), off..off + 8, &value.to_le_bytes())
        }
    }
}

/// Kernel dispatch packet (`hsa_kernel_dispatch_packet_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelDispatch {
    /// 1, 2 or 3.
    pub dimensions: u8,
    pub workgroup_size: [u16; 3],
    pub grid_size: [u32; 3],
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    pub kernarg_address: u64,
    pub completion_signal: u64,
}

impl KernelDispatch {
    /// A one-dimensional dispatch of `grid` work-items in groups of `workgroup`.
    pub const fn new(kernel_object: u64, grid: u32, workgroup: u16) -> Self {
        KernelDispatch {
            dimensions: 1,
            workgroup_size: [workgroup, 1, 1],
            grid_size: [grid, 1, 1],
            private_segment_size: 0,
            group_segment_size: 0,
            kernel_object,
            kernarg_address: 0,
            completion_signal: 0,
        }
    }

    pub const fn grid(mut self, dimensions: u8, grid_size: [u32; 3], workgroup_size: [u16; 3]) -> Self {
        self.dimensions = dimensions;
        self.grid_size = grid_size;
        self.workgroup_size = workgroup_size;
        self
    }

    pub const fn segments(mut self, private_segment_size: u32, group_segment_size: u32) -> Self {
        self.private_segment_size = private_segment_size;
        self.group_segment_size = group_segment_size;
        self
    }

    pub const fn kernarg(mut self, kernarg_address: u64) -> Self {
        self.kernarg_address = kernarg_address;
        self
    }

    pub const fn completion_signal(mut self, signal: u64) -> Self {
        self.completion_signal = signal;
        self
    }
}

/// Barrier-AND / barrier-OR packet body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Barrier {
    /// Null (0) handles are ignored by the packet processor.
    pub dep_signal: [u64; DEP_SIGNALS],
    pub completion_signal: u64,
}

impl Barrier {
    pub const fn new(dep_signal: [u64; DEP_SIGNALS]) -> Self {
        Barrier { dep_signal, completion_signal: 0 }
    }

    pub const fn completion_signal(mut self, signal: u64) -> Self {
        self.completion_signal = signal;
        self
    }
}

/// Agent dispatch packet (`hsa_agent_dispatch_packet_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AgentDispatch {
    pub agent_type: u16,
    pub return_address: u64,
    pub arg: [u64; 4],
    pub completion_signal: u64,
}

/// `hsa_signal_condition_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum SignalCondition {
    Eq = 0,
    Ne = 1,
    Lt = 2,
    Gte = 3,
}

/// AMD vendor-specific barrier-value packet (`hsa_amd_barrier_value_packet_t`): wait until
/// `(signal.value & mask) cond value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BarrierValue {
    pub signal: u64,
    pub value: i64,
    pub mask: i64,
    pub cond: SignalCondition,
    pub completion_signal: u64,
}

/// What ROCr puts in `dw_cnt_remain` of a PM4-IB packet.
pub const PM4_IB_DW_CNT_REMAIN: u32 = 0xa;

/// AMD vendor-specific PM4-IB packet (`amd_aql_pm4_ib`, format [`AMD_FORMAT_PM4_IB`]): the CP
/// jumps to a PM4 indirect buffer, then decrements `completion_signal`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pm4Ib {
    /// The INDIRECT_BUFFER packet in `ib_jump_cmd[4]`.
    pub ib: super::pm4::IndirectBuffer,
    /// Shader-type bit of that packet's header (ROCr leaves it 0 on gfx9+).
    pub ib_compute: bool,
    pub dw_cnt_remain: u32,
    pub completion_signal: u64,
}

impl Pm4Ib {
    /// Run `size_dwords` dwords of PM4 at `ib_base` (dword aligned), as ROCr builds it.
    pub const fn new(ib_base: u64, size_dwords: u32, completion_signal: u64) -> Self {
        Pm4Ib {
            ib: super::pm4::IndirectBuffer::new(ib_base, size_dwords),
            ib_compute: false,
            dw_cnt_remain: PM4_IB_DW_CNT_REMAIN,
            completion_signal,
        }
    }

    fn jump(&self) -> super::pm4::Repr<'static> {
        super::pm4::Repr { compute: self.ib_compute, predicate: false, command: super::pm4::Command::IndirectBuffer(self.ib) }
    }
}

/// A validated AQL packet body (everything the header does not say).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    KernelDispatch(KernelDispatch),
    BarrierAnd(Barrier),
    BarrierOr(Barrier),
    AgentDispatch(AgentDispatch),
    /// Vendor-specific with AMD format [`AMD_FORMAT_BARRIER_VALUE`].
    BarrierValue(BarrierValue),
    /// Vendor-specific with AMD format [`AMD_FORMAT_PM4_IB`].
    Pm4Ib(Pm4Ib),
    /// Any other vendor-specific packet: its format byte and bytes 4..64, carried as they are.
    Vendor {
        format: u8,
        payload: [u8; PACKET_LEN - 4],
    },
}

/// A validated AQL packet. `barrier`, `acquire` and `release` come from the header; the packet
/// type follows from the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repr {
    pub barrier: bool,
    pub acquire: FenceScope,
    pub release: FenceScope,
    pub body: Body,
}

impl Repr {
    /// A packet with no barrier bit and system-scope acquire and release fences (what ROCr uses
    /// for most dispatches).
    pub const fn new(body: Body) -> Self {
        Repr { barrier: false, acquire: FenceScope::System, release: FenceScope::System, body }
    }

    pub const fn barrier(mut self, on: bool) -> Self {
        self.barrier = on;
        self
    }

    pub const fn fences(mut self, acquire: FenceScope, release: FenceScope) -> Self {
        self.acquire = acquire;
        self.release = release;
        self
    }

    pub const fn packet_type(&self) -> PacketType {
        match self.body {
            Body::KernelDispatch(_) => PacketType::KernelDispatch,
            Body::BarrierAnd(_) => PacketType::BarrierAnd,
            Body::BarrierOr(_) => PacketType::BarrierOr,
            Body::AgentDispatch(_) => PacketType::AgentDispatch,
            Body::BarrierValue(_) | Body::Pm4Ib(_) | Body::Vendor { .. } => PacketType::VendorSpecific,
        }
    }

    pub const fn header(&self) -> Header {
        Header { packet_type: self.packet_type(), barrier: self.barrier, acquire: self.acquire, release: self.release }
    }

    /// The first 32-bit word as it is published: header | setup (or AmdFormat) << 16.
    pub const fn header_word(&self) -> u32 {
        let high: u32 = match self.body {
            Body::KernelDispatch(k) => (k.dimensions as u16 & field::SETUP_DIMENSIONS_MASK) as u32,
            Body::AgentDispatch(a) => a.agent_type as u32,
            Body::BarrierValue(_) => AMD_FORMAT_BARRIER_VALUE as u32,
            Body::Pm4Ib(_) => AMD_FORMAT_PM4_IB as u32,
            Body::Vendor { format, payload: _ } => format as u32,
            Body::BarrierAnd(_) | Body::BarrierOr(_) => 0,
        };
        self.header().to_u16() as u32 | high << 16
    }

    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }

    /// Whether the packet is one [`Repr::parse`] accepts back: a dispatch has 1..=3 dimensions
    /// (emit keeps only the 2 bits the setup field has); a PM4-IB's INDIRECT_BUFFER encodes.
    pub fn check(&self) -> Result<()> {
        match &self.body {
            Body::KernelDispatch(k) if k.dimensions == 0 || k.dimensions > 3 => Err(Error::BadField),
            Body::Pm4Ib(ib) => ib.jump().check(),
            _ => Ok(()),
        }
    }

    /// Parses a packet. An INVALID header (a free slot) or an undefined type is
    /// `Err(UnknownType)`; a reserved fence scope or header bit, a dispatch with 0 dimensions or
    /// reserved setup bits, or an unknown barrier-value condition is `Err(BadField)`.
    pub fn parse<T: AsRef<[u8]>>(p: &Packet<T>) -> Result<Repr> {
        p.check_len()?;
        let h = p.header()?;
        let body = match h.packet_type {
            PacketType::Invalid => return Err(Error::UnknownType),
            PacketType::KernelDispatch => {
                let dimensions = p.dimensions() as u8;
                if dimensions == 0 || p.setup() >> 2 != 0 {
                    return Err(Error::BadField);
                }
                Body::KernelDispatch(KernelDispatch {
                    dimensions,
                    workgroup_size: [p.workgroup_size_x(), p.workgroup_size_y(), p.workgroup_size_z()],
                    grid_size: [p.grid_size_x(), p.grid_size_y(), p.grid_size_z()],
                    private_segment_size: p.private_segment_size(),
                    group_segment_size: p.group_segment_size(),
                    kernel_object: p.kernel_object(),
                    kernarg_address: p.kernarg_address(),
                    completion_signal: p.completion_signal(),
                })
            }
            PacketType::BarrierAnd | PacketType::BarrierOr => {
                let mut b = Barrier { dep_signal: [0; DEP_SIGNALS], completion_signal: p.completion_signal() };
                for (i, s) in b.dep_signal.iter_mut().enumerate() {
                    *s = p.dep_signal(i);
                }
                if h.packet_type == PacketType::BarrierAnd {
                    Body::BarrierAnd(b)
                } else {
                    Body::BarrierOr(b)
                }
            }
            PacketType::AgentDispatch => Body::AgentDispatch(AgentDispatch {
                agent_type: p.agent_type(),
                return_address: p.return_address(),
                arg: [p.arg(0), p.arg(1), p.arg(2), p.arg(3)],
                completion_signal: p.completion_signal(),
            }),
            PacketType::VendorSpecific if p.amd_format() == AMD_FORMAT_BARRIER_VALUE => {
                let cond = match p.barrier_value_cond() {
                    0 => SignalCondition::Eq,
                    1 => SignalCondition::Ne,
                    2 => SignalCondition::Lt,
                    3 => SignalCondition::Gte,
                    _ => return Err(Error::BadField),
                };
                Body::BarrierValue(BarrierValue {
                    signal: p.barrier_value_signal(),
                    value: p.barrier_value_value(),
                    mask: p.barrier_value_mask(),
                    cond,
                    completion_signal: p.completion_signal(),
                })
            }
            PacketType::VendorSpecific if p.amd_format() == AMD_FORMAT_PM4_IB => {
                let jump = super::pm4::Packet::new_checked(&p.buffer.as_ref()[field::PM4_IB_JUMP])?;
                let (compute, ib) = match super::pm4::Repr::parse(&jump)? {
                    super::pm4::Repr { compute, predicate: false, command: super::pm4::Command::IndirectBuffer(ib) } => (compute, ib),
                    _ => return Err(Error::BadField),
                };
                Body::Pm4Ib(Pm4Ib {
                    ib,
                    ib_compute: compute,
                    dw_cnt_remain: p.pm4_ib_dw_cnt_remain(),
                    completion_signal: p.completion_signal(),
                })
            }
            PacketType::VendorSpecific => {
                let mut payload = [0u8; PACKET_LEN - 4];
                payload.copy_from_slice(&p.buffer.as_ref()[4..PACKET_LEN]);
                Body::Vendor { format: p.amd_format(), payload }
            }
        };
        let repr = Repr { barrier: h.barrier, acquire: h.acquire, release: h.release, body };
        repr.check()?;
        Ok(repr)
    }

    /// Writes bytes 4..64 (everything but the header word). Reserved fields become 0.
    pub fn emit_body<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        if let Some(b) = p.buffer.as_mut().get_mut(4..PACKET_LEN) {
            b.fill(0);
        }
        match &self.body {
            Body::KernelDispatch(k) => {
                p.set_workgroup_size_x(k.workgroup_size[0]);
                p.set_workgroup_size_y(k.workgroup_size[1]);
                p.set_workgroup_size_z(k.workgroup_size[2]);
                p.set_grid_size_x(k.grid_size[0]);
                p.set_grid_size_y(k.grid_size[1]);
                p.set_grid_size_z(k.grid_size[2]);
                p.set_private_segment_size(k.private_segment_size);
                p.set_group_segment_size(k.group_segment_size);
                p.set_kernel_object(k.kernel_object);
                p.set_kernarg_address(k.kernarg_address);
                p.set_completion_signal(k.completion_signal);
            }
            Body::BarrierAnd(b) | Body::BarrierOr(b) => {
                for (i, s) in b.dep_signal.iter().enumerate() {
                    p.set_dep_signal(i, *s);
                }
                p.set_completion_signal(b.completion_signal);
            }
            Body::AgentDispatch(a) => {
                p.set_return_address(a.return_address);
                for (i, v) in a.arg.iter().enumerate() {
                    p.set_arg(i, *v);
                }
                p.set_completion_signal(a.completion_signal);
            }
            Body::BarrierValue(bv) => {
                p.set_barrier_value_signal(bv.signal);
                p.set_barrier_value_value(bv.value);
                p.set_barrier_value_mask(bv.mask);
                p.set_barrier_value_cond(bv.cond as u32);
                p.set_completion_signal(bv.completion_signal);
            }
            Body::Pm4Ib(ib) => {
                if let Some(b) = p.buffer.as_mut().get_mut(field::PM4_IB_JUMP) {
                    // A jump that does not encode (see `check`) stays zero: the CP sees no packet.
                    let _ = ib.jump().emit(&mut super::pm4::Packet::new_unchecked(b));
                }
                p.set_pm4_ib_dw_cnt_remain(ib.dw_cnt_remain);
                p.set_completion_signal(ib.completion_signal);
            }
            Body::Vendor { payload, .. } => {
                if let Some(b) = p.buffer.as_mut().get_mut(4..PACKET_LEN) {
                    b.copy_from_slice(payload);
                }
            }
        }
    }

    /// Writes the whole packet, header word included.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Packet<T>) {
        self.emit_body(p);
        p.set_header_word(self.header_word());
    }

    /// The packet as 64 bytes, for a ring writer to copy.
    pub fn to_bytes(&self) -> [u8; PACKET_LEN] {
        let mut out = [0u8; PACKET_LEN];
        self.emit(&mut Packet::new_unchecked(&mut out[..]));
        out
    }
}

/// `amd_signal_kind_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i64)]
pub enum SignalKind {
    Invalid = 0,
    /// A memory signal: `value` is the signal value.
    User = 1,
    /// A queue doorbell signal: the value word holds the hardware doorbell pointer.
    Doorbell = -1,
    LegacyDoorbell = -2,
}

impl SignalKind {
    pub const fn from_i64(v: i64) -> Option<Self> {
        Some(match v {
            0 => Self::Invalid,
            1 => Self::User,
            -1 => Self::Doorbell,
            -2 => Self::LegacyDoorbell,
            _ => return None,
        })
    }
}

/// A zero-copy view of an `amd_signal_t` (64 bytes): what an AQL `completion_signal` handle
/// points at in ROCr.
#[derive(Debug, Clone)]
pub struct Signal<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Signal<T> {
    pub const fn new_unchecked(buffer: T) -> Self {
        Signal { buffer }
    }

    pub fn new_checked(buffer: T) -> Result<Self> {
        if buffer.as_ref().len() < SIGNAL_LEN {
            return Err(Error::Truncated);
        }
        Ok(Signal { buffer })
    }

    pub fn into_inner(self) -> T {
        self.buffer
    }

    le_accessors! {
        kind_raw, set_kind_raw: i64 = field::SIG_KIND;
        /// The signal value (kind USER), or the doorbell pointer (kind DOORBELL).
        value, set_value: i64 = field::SIG_VALUE;
        /// Where the packet processor writes `event_id` to raise the KFD event (0: no interrupt).
        event_mailbox_ptr, set_event_mailbox_ptr: u64 = field::SIG_EVENT_MAILBOX_PTR;
        event_id, set_event_id: u32 = field::SIG_EVENT_ID;
        start_ts, set_start_ts: u64 = field::SIG_START_TS;
        end_ts, set_end_ts: u64 = field::SIG_END_TS;
        queue_ptr, set_queue_ptr: u64 = field::SIG_QUEUE_PTR;
    }

    pub fn kind(&self) -> Option<SignalKind> {
        SignalKind::from_i64(self.kind_raw())
    }
}

/// A validated `amd_signal_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignalRepr {
    pub kind: SignalKind,
    pub value: i64,
    pub event_mailbox_ptr: u64,
    pub event_id: u32,
    pub start_ts: u64,
    pub end_ts: u64,
    pub queue_ptr: u64,
}

impl SignalRepr {
    /// A user (memory) signal with an initial value and no interrupt.
    pub const fn user(value: i64) -> Self {
        SignalRepr { kind: SignalKind::User, value, event_mailbox_ptr: 0, event_id: 0, start_ts: 0, end_ts: 0, queue_ptr: 0 }
    }

    /// Makes it an interrupt signal: completion writes `event_id` to `mailbox`.
    pub const fn event(mut self, mailbox: u64, event_id: u32) -> Self {
        self.event_mailbox_ptr = mailbox;
        self.event_id = event_id;
        self
    }

    pub const fn buffer_len(&self) -> usize {
        SIGNAL_LEN
    }

    pub fn parse<T: AsRef<[u8]>>(s: &Signal<T>) -> Result<SignalRepr> {
        if s.buffer.as_ref().len() < SIGNAL_LEN {
            return Err(Error::Truncated);
        }
        Ok(SignalRepr {
            kind: s.kind().ok_or(Error::UnknownType)?,
            value: s.value(),
            event_mailbox_ptr: s.event_mailbox_ptr(),
            event_id: s.event_id(),
            start_ts: s.start_ts(),
            end_ts: s.end_ts(),
            queue_ptr: s.queue_ptr(),
        })
    }

    /// Writes all 64 bytes; reserved fields become 0.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, s: &mut Signal<T>) {
        if let Some(b) = s.buffer.as_mut().get_mut(..SIGNAL_LEN) {
            b.fill(0);
        }
        s.set_kind_raw(self.kind as i64);
        s.set_value(self.value);
        s.set_event_mailbox_ptr(self.event_mailbox_ptr);
        s.set_event_id(self.event_id);
        s.set_start_ts(self.start_ts);
        s.set_end_ts(self.end_ts);
        s.set_queue_ptr(self.queue_ptr);
    }
}
