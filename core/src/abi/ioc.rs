//! Linux `_IOC` request encoding: the one encoder of the workspace (the KFD's 'K' group here,
//! the DRM 'd' group of the Linux backend through [`encode`]). The size field comes from the
//! argument type, so it cannot drift from the struct.

const NRBITS: u32 = 8;
const TYPEBITS: u32 = 8;
const SIZEBITS: u32 = 14;
const NRSHIFT: u32 = 0;
const TYPESHIFT: u32 = NRSHIFT + NRBITS;
const SIZESHIFT: u32 = TYPESHIFT + TYPEBITS;
const DIRSHIFT: u32 = SIZESHIFT + SIZEBITS;

pub const DIR_NONE: u32 = 0;
pub const DIR_WRITE: u32 = 1;
pub const DIR_READ: u32 = 2;

/// The ioctl type byte of amdkfd.
pub const KFD_IOCTL_BASE: u32 = b'K' as u32;

/// `_IOC(dir, type, nr, size)` for any ioctl type byte.
pub const fn encode(dir: u32, ty: u8, nr: u32, size: usize) -> u32 {
    assert!(size < (1 << SIZEBITS) && nr < (1 << NRBITS) && dir < 4);
    (dir << DIRSHIFT) | ((ty as u32) << TYPESHIFT) | (nr << NRSHIFT) | ((size as u32) << SIZESHIFT)
}

/// `_IOC` in the KFD's group.
pub const fn ioc(dir: u32, nr: u32, size: usize) -> u32 {
    encode(dir, KFD_IOCTL_BASE as u8, nr, size)
}
pub const fn io(nr: u32) -> u32 {
    ioc(DIR_NONE, nr, 0)
}
pub const fn ior<T>(nr: u32) -> u32 {
    ioc(DIR_READ, nr, core::mem::size_of::<T>())
}
pub const fn iow<T>(nr: u32) -> u32 {
    ioc(DIR_WRITE, nr, core::mem::size_of::<T>())
}
pub const fn iowr<T>(nr: u32) -> u32 {
    ioc(DIR_READ | DIR_WRITE, nr, core::mem::size_of::<T>())
}

/// Fields of an encoded request.
pub const fn nr(req: u32) -> u32 {
    (req >> NRSHIFT) & ((1 << NRBITS) - 1)
}
pub const fn ty(req: u32) -> u32 {
    (req >> TYPESHIFT) & ((1 << TYPEBITS) - 1)
}
pub const fn size(req: u32) -> usize {
    ((req >> SIZESHIFT) & ((1 << SIZEBITS) - 1)) as usize
}
pub const fn dir(req: u32) -> u32 {
    req >> DIRSHIFT
}
