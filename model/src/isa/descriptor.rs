//! The AMDHSA kernel descriptor (code object v4/v5 `kernel_descriptor_t`, 64 bytes, 64-byte
//! aligned, in the code object's read-only data; AMDGPUUsage "Kernel Descriptor").
//!
//! | bytes  | field                              |
//! |--------|------------------------------------|
//! | 0..4   | group_segment_fixed_size           |
//! | 4..8   | private_segment_fixed_size         |
//! | 8..12  | kernarg_size                       |
//! | 12..16 | reserved, 0                        |
//! | 16..24 | kernel_code_entry_byte_offset (i64, from the descriptor's own address) |
//! | 24..44 | reserved, 0                        |
//! | 44..48 | compute_pgm_rsrc3                  |
//! | 48..52 | compute_pgm_rsrc1                  |
//! | 52..56 | compute_pgm_rsrc2                  |
//! | 56..58 | kernel_code_properties             |
//! | 58..60 | kernarg_preload (v5)               |
//! | 60..64 | reserved, 0                        |

/// Size of a descriptor.
pub const LEN: usize = 64;
/// Its required alignment.
pub const ALIGN: u64 = 64;

/// kernel_code_properties bits: the user SGPRs a wave asks for, in the order they are loaded.
pub mod props {
    pub const PRIVATE_SEGMENT_BUFFER: u16 = 1 << 0;
    pub const DISPATCH_PTR: u16 = 1 << 1;
    pub const QUEUE_PTR: u16 = 1 << 2;
    pub const KERNARG_SEGMENT_PTR: u16 = 1 << 3;
    pub const DISPATCH_ID: u16 = 1 << 4;
    pub const FLAT_SCRATCH_INIT: u16 = 1 << 5;
    pub const PRIVATE_SEGMENT_SIZE: u16 = 1 << 6;
    /// gfx10+: wave32.
    pub const WAVEFRONT_SIZE32: u16 = 1 << 10;
    pub const USES_DYNAMIC_STACK: u16 = 1 << 11;
}

/// A descriptor as read from memory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelDescriptor {
    pub group_segment_fixed_size: u32,
    pub private_segment_fixed_size: u32,
    pub kernarg_size: u32,
    pub entry_offset: i64,
    pub rsrc1: u32,
    pub rsrc2: u32,
    pub rsrc3: u32,
    pub properties: u16,
    pub kernarg_preload: u16,
}

/// Why bytes are not a descriptor the model can launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DescriptorError {
    Truncated,
    /// A reserved field is not 0.
    Reserved,
    /// The entry offset is 0 or the code is not 256-byte aligned relative to the descriptor.
    Entry,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl KernelDescriptor {
    pub fn parse(b: &[u8]) -> Result<KernelDescriptor, DescriptorError> {
        let b = b.get(..LEN).ok_or(DescriptorError::Truncated)?;
        if b[12..16].iter().chain(&b[24..44]).chain(&b[60..64]).any(|&x| x != 0) {
            return Err(DescriptorError::Reserved);
        }
        let mut e = [0u8; 8];
        e.copy_from_slice(&b[16..24]);
        let entry_offset = i64::from_le_bytes(e);
        if entry_offset == 0 || entry_offset % 64 != 0 {
            return Err(DescriptorError::Entry);
        }
        Ok(KernelDescriptor {
            group_segment_fixed_size: u32_at(b, 0),
            private_segment_fixed_size: u32_at(b, 4),
            kernarg_size: u32_at(b, 8),
            entry_offset,
            rsrc3: u32_at(b, 44),
            rsrc1: u32_at(b, 48),
            rsrc2: u32_at(b, 52),
            properties: u16::from_le_bytes([b[56], b[57]]),
            kernarg_preload: u16::from_le_bytes([b[58], b[59]]),
        })
    }

    /// VGPRs a wave64 has on gfx90a: (GRANULATED_WORKITEM_VGPR_COUNT + 1) * 8.
    pub fn vgprs_gfx90a(&self) -> usize {
        ((self.rsrc1 & 0x3f) as usize + 1) * 8
    }

    /// COMPUTE_PGM_RSRC2.USER_SGPR_COUNT.
    pub fn user_sgpr_count(&self) -> usize {
        ((self.rsrc2 >> 1) & 0x1f) as usize
    }

    /// COMPUTE_PGM_RSRC2.ENABLE_SGPR_WORKGROUP_ID_X/Y/Z.
    pub fn workgroup_id_enabled(&self) -> [bool; 3] {
        [self.rsrc2 & (1 << 7) != 0, self.rsrc2 & (1 << 8) != 0, self.rsrc2 & (1 << 9) != 0]
    }

    /// COMPUTE_PGM_RSRC2.ENABLE_SGPR_WORKGROUP_INFO.
    pub fn workgroup_info_enabled(&self) -> bool {
        self.rsrc2 & (1 << 10) != 0
    }

    /// COMPUTE_PGM_RSRC2.ENABLE_PRIVATE_SEGMENT (the scratch wave offset SGPR).
    pub fn private_segment_enabled(&self) -> bool {
        self.rsrc2 & 1 != 0
    }

    /// COMPUTE_PGM_RSRC2.ENABLE_VGPR_WORKITEM_ID: 0 x, 1 x and y, 2 x, y and z.
    pub fn workitem_id_dims(&self) -> u32 {
        (self.rsrc2 >> 11) & 3
    }

    /// kernarg_preload.KERNARG_PRELOAD_SPEC_LENGTH: dwords of the kernarg segment the CP loads
    /// into the user SGPRs after the ones the properties ask for (gfx940+).
    pub fn kernarg_preload_len(&self) -> usize {
        usize::from(self.kernarg_preload & 0x7f)
    }

    /// kernarg_preload.KERNARG_PRELOAD_SPEC_OFFSET: where they start, in dwords from the
    /// kernarg segment's start.
    pub fn kernarg_preload_offset(&self) -> u64 {
        u64::from(self.kernarg_preload >> 7)
    }

    /// User SGPRs the properties ask for (private segment buffer 4, the pointers and the
    /// dispatch id 2 each, private segment size 1).
    pub fn user_sgprs_requested(&self) -> usize {
        use props::*;
        [
            (PRIVATE_SEGMENT_BUFFER, 4),
            (DISPATCH_PTR, 2),
            (QUEUE_PTR, 2),
            (KERNARG_SEGMENT_PTR, 2),
            (DISPATCH_ID, 2),
            (FLAT_SCRATCH_INIT, 2),
            (PRIVATE_SEGMENT_SIZE, 1),
        ]
        .iter()
        .filter(|(bit, _)| self.properties & bit != 0)
        .map(|(_, n)| n)
        .sum()
    }
}
