//! Built-in kernels of the software model GPU (a model extension, not an AMD format).
//!
//! The model has no shader cores, so a dispatch cannot run ISA. Instead a dispatch names a
//! **model kernel descriptor**: a small record in GPU memory that stands where a real code
//! object's `kernel_descriptor_t` (AQL `kernel_object`) or shader program (`COMPUTE_PGM_LO/HI`
//! for PM4 `DISPATCH_DIRECT`) would be. Because the descriptor is read through the GPU page
//! table, an unmapped kernel object faults like a real one.
//!
//! Descriptor (16 bytes, little-endian, at a [`DESCRIPTOR_ALIGN`]-aligned GPU VA):
//!
//! | bytes  | field                                   |
//! |--------|-----------------------------------------|
//! | 0..4   | [`MAGIC`] (`"HKMK"`)                    |
//! | 4..8   | kernel id ([`KernelId`])                |
//! | 8..16  | reserved, must be 0                     |
//!
//! Arguments come from the kernarg segment (AQL `kernarg_address`; PM4: `COMPUTE_USER_DATA_0/1`,
//! see [`dispatch_regs`]), laid out per kernel ([`Args`]). A model kernel performs its whole
//! job once per dispatch, whatever the grid; the grid and workgroup sizes are only validated.

use super::{Error, Result};

/// `"HKMK"` read as a little-endian u32.
pub const MAGIC: u32 = u32::from_le_bytes(*b"HKMK");
/// Size of a descriptor.
pub const DESCRIPTOR_LEN: usize = 16;
/// Required alignment of a descriptor's GPU VA: `COMPUTE_PGM_LO` holds the address >> 8, and
/// AQL code objects are at least 64-byte aligned; one rule for both.
pub const DESCRIPTOR_ALIGN: u64 = 256;
/// Largest FILL / COPY a single dispatch performs (bytes). Larger is a malformed dispatch: a
/// model kernel runs to completion inside one engine step, so its work must be bounded.
pub const MAX_KERNEL_BYTES: u64 = 256 << 20;

/// Kernel ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum KernelId {
    /// Does nothing (no arguments).
    Nop = 0,
    /// Stores a 32-bit value `count` times from `dst` ([`FillArgs`]).
    Fill = 1,
    /// Copies `bytes` bytes from `src` to `dst` ([`CopyArgs`]); overlapping ranges copy as
    /// if through a temporary buffer chunk by chunk, front to back.
    Copy = 2,
}

impl KernelId {
    pub const fn from_u32(v: u32) -> Option<Self> {
        Some(match v {
            0 => Self::Nop,
            1 => Self::Fill,
            2 => Self::Copy,
            _ => return None,
        })
    }

    /// Bytes of kernarg the kernel reads.
    pub const fn args_len(self) -> usize {
        match self {
            Self::Nop => 0,
            Self::Fill | Self::Copy => ARGS_LEN,
        }
    }
}

/// A validated descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    pub kernel: KernelId,
}

impl Descriptor {
    pub const fn new(kernel: KernelId) -> Self {
        Descriptor { kernel }
    }

    /// A wrong magic or set reserved bytes is `BadField`, an unknown id `UnknownType`.
    pub fn parse(buf: &[u8]) -> Result<Descriptor> {
        let b = buf.get(..DESCRIPTOR_LEN).ok_or(Error::Truncated)?;
        if super::get_dword(b, 0) != MAGIC || super::get_u64(b, 2) != 0 {
            return Err(Error::BadField);
        }
        let kernel = KernelId::from_u32(super::get_dword(b, 1)).ok_or(Error::UnknownType)?;
        Ok(Descriptor { kernel })
    }

    pub fn to_bytes(&self) -> [u8; DESCRIPTOR_LEN] {
        let mut out = [0u8; DESCRIPTOR_LEN];
        super::set_dword(&mut out, 0, MAGIC);
        super::set_dword(&mut out, 1, self.kernel as u32);
        out
    }
}

/// Kernarg bytes of FILL and COPY.
pub const ARGS_LEN: usize = 24;

/// FILL: `dst` (u64, dword aligned) at 0..8, `value` (u32) at 8..12, reserved 12..16,
/// `count` (dwords, u64) at 16..24.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FillArgs {
    pub dst: u64,
    pub value: u32,
    pub count: u64,
}

/// COPY: `dst` (u64) at 0..8, `src` (u64) at 8..16, `bytes` (u64) at 16..24.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyArgs {
    pub dst: u64,
    pub src: u64,
    pub bytes: u64,
}

/// A kernel with its validated arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Args {
    Nop,
    Fill(FillArgs),
    Copy(CopyArgs),
}

impl Args {
    pub const fn kernel(&self) -> KernelId {
        match self {
            Args::Nop => KernelId::Nop,
            Args::Fill(_) => KernelId::Fill,
            Args::Copy(_) => KernelId::Copy,
        }
    }

    /// Parses the kernarg of `kernel`. A FILL `dst` not dword aligned, or more than
    /// [`MAX_KERNEL_BYTES`] of work, is `BadField`.
    pub fn parse(kernel: KernelId, buf: &[u8]) -> Result<Args> {
        let b = buf.get(..kernel.args_len()).ok_or(Error::Truncated)?;
        let args = match kernel {
            KernelId::Nop => Args::Nop,
            KernelId::Fill => {
                Args::Fill(FillArgs { dst: super::get_u64(b, 0), value: super::get_dword(b, 2), count: super::get_u64(b, 4) })
            }
            KernelId::Copy => Args::Copy(CopyArgs { dst: super::get_u64(b, 0), src: super::get_u64(b, 2), bytes: super::get_u64(b, 4) }),
        };
        args.check()?;
        Ok(args)
    }

    pub fn check(&self) -> Result<()> {
        let ok = match self {
            Args::Nop => true,
            Args::Fill(f) => f.dst & 3 == 0 && f.count <= MAX_KERNEL_BYTES / 4,
            Args::Copy(c) => c.bytes <= MAX_KERNEL_BYTES,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::BadField)
        }
    }

    /// The kernarg bytes (unused tail zero).
    pub fn to_bytes(&self) -> [u8; ARGS_LEN] {
        let mut out = [0u8; ARGS_LEN];
        match self {
            Args::Nop => {}
            Args::Fill(f) => {
                super::set_u64(&mut out, 0, f.dst);
                super::set_dword(&mut out, 2, f.value);
                super::set_u64(&mut out, 4, f.count);
            }
            Args::Copy(c) => {
                super::set_u64(&mut out, 0, c.dst);
                super::set_u64(&mut out, 2, c.src);
                super::set_u64(&mut out, 4, c.bytes);
            }
        }
        out
    }
}

/// The PM4 `DISPATCH_DIRECT` convention of the model: which SH registers (offsets from
/// [`super::pm4::SH_REG_BASE`], as `SET_SH_REG` takes them) carry what. These are the gfx9
/// registers a real dispatch programs for the same purpose.
pub mod dispatch_regs {
    /// `COMPUTE_NUM_THREAD_X/Y/Z` (0x2e07..0x2e09): workgroup size; bits 0..9 must be non-zero
    /// in every dimension.
    pub const COMPUTE_NUM_THREAD_X: u16 = 0x207;
    pub const COMPUTE_NUM_THREAD_Y: u16 = 0x208;
    pub const COMPUTE_NUM_THREAD_Z: u16 = 0x209;
    /// `COMPUTE_PGM_LO` (0x2e0c): descriptor GPU VA bits 8..39 (the address >> 8).
    pub const COMPUTE_PGM_LO: u16 = 0x20c;
    /// `COMPUTE_PGM_HI` (0x2e0d): descriptor GPU VA bits 40..47 in bits 0..7.
    pub const COMPUTE_PGM_HI: u16 = 0x20d;
    /// `COMPUTE_START_X` (0x2e04): the first of START_X/Y/Z, the grid's starting thread.
    pub const COMPUTE_START_X: u16 = 0x204;
    /// `COMPUTE_PGM_RSRC1/2` (0x2e12, 0x2e13): the resource words a kernel descriptor carries
    /// as `compute_pgm_rsrc1/2` (VGPR granules; user SGPR count, workgroup id and work-item id
    /// enables, LDS size in 512-byte granules in bits 15..23, SCRATCH_EN).
    pub const COMPUTE_PGM_RSRC1: u16 = 0x212;
    pub const COMPUTE_PGM_RSRC2: u16 = 0x213;
    /// `COMPUTE_TMPRING_SIZE` (0x2e18): WAVES in bits 0..11, WAVESIZE (scratch per wave in
    /// 1 KiB units on gfx9) in bits 12..24.
    pub const COMPUTE_TMPRING_SIZE: u16 = 0x218;
    /// `COMPUTE_USER_DATA_0..15` (0x2e40..0x2e4f): the user SGPRs of a machine-code dispatch;
    /// for the model's own kernels USER_DATA_0/1 hold the kernarg GPU VA, low and high dword.
    pub const COMPUTE_USER_DATA_0: u16 = 0x240;
    pub const COMPUTE_USER_DATA_1: u16 = 0x241;
    /// Registers the model's per-queue SH register file holds (offsets 0..SH_REGS).
    pub const SH_REGS: usize = 0x400;

    /// `(COMPUTE_PGM_LO, COMPUTE_PGM_HI)` for a descriptor at `va` (256-byte aligned).
    pub const fn pgm(va: u64) -> (u32, u32) {
        ((va >> 8) as u32, ((va >> 40) & 0xff) as u32)
    }

    /// The descriptor VA the two registers name.
    pub const fn pgm_va(lo: u32, hi: u32) -> u64 {
        ((lo as u64) << 8) | (((hi & 0xff) as u64) << 40)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_round_trip_and_errors() {
        let d = Descriptor::new(KernelId::Copy);
        let b = d.to_bytes();
        assert_eq!(&b[..4], b"HKMK");
        assert_eq!(b[4], 2);
        assert_eq!(Descriptor::parse(&b), Ok(d));
        assert_eq!(Descriptor::parse(&b[..15]), Err(Error::Truncated));
        let mut bad = b;
        bad[0] = b'X';
        assert_eq!(Descriptor::parse(&bad), Err(Error::BadField));
        let mut bad = b;
        bad[12] = 1;
        assert_eq!(Descriptor::parse(&bad), Err(Error::BadField));
        let mut bad = b;
        bad[4] = 9;
        assert_eq!(Descriptor::parse(&bad), Err(Error::UnknownType));
    }

    #[test]
    fn args_layout() {
        let f = Args::Fill(FillArgs { dst: 0x1_0000_0004, value: 0xdead_beef, count: 3 });
        let b = f.to_bytes();
        assert_eq!(&b[0..8], &0x1_0000_0004u64.to_le_bytes());
        assert_eq!(&b[8..12], &0xdead_beefu32.to_le_bytes());
        assert_eq!(&b[16..24], &3u64.to_le_bytes());
        assert_eq!(Args::parse(KernelId::Fill, &b), Ok(f));
        let c = Args::Copy(CopyArgs { dst: 1, src: 2, bytes: 3 });
        assert_eq!(Args::parse(KernelId::Copy, &c.to_bytes()), Ok(c));
        assert_eq!(Args::parse(KernelId::Nop, &[]), Ok(Args::Nop));
        assert_eq!(Args::parse(KernelId::Copy, &[0; 23]), Err(Error::Truncated));
        let misaligned = Args::Fill(FillArgs { dst: 2, value: 0, count: 1 });
        assert_eq!(Args::parse(KernelId::Fill, &misaligned.to_bytes()), Err(Error::BadField));
        let huge = Args::Copy(CopyArgs { dst: 0, src: 0, bytes: MAX_KERNEL_BYTES + 1 });
        assert_eq!(Args::parse(KernelId::Copy, &huge.to_bytes()), Err(Error::BadField));
    }

    #[test]
    fn pgm_registers() {
        let va = 0x7f12_3456_7800u64 & !0xff;
        let (lo, hi) = dispatch_regs::pgm(va);
        assert_eq!(lo, (va >> 8) as u32);
        assert_eq!(hi, 0x7f);
        assert_eq!(dispatch_regs::pgm_va(lo, hi), va);
    }
}
