//! HsaMemFlags → KFD_IOC_ALLOC_MEM_FLAGS: how the thunk asks the KFD for a buffer object.
//! Upstream's rules (fmm.c): writable unless ReadOnly, coherent unless CoarseGrain, and
//! NO_SUBSTITUTE on every request; CachePolicy, GDS and atomics bits are not the KFD's business.

use crate::abi::hsakmt::HsaMemFlags;
use crate::abi::kfd::*;

/// The KFD flag bits as u32 (the table types them as C `int`).
pub mod ioc {
    use super::*;
    pub const VRAM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_VRAM as u32;
    pub const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
    pub const USERPTR: u32 = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR as u32;
    pub const DOORBELL: u32 = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL as u32;
    pub const MMIO_REMAP: u32 = KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP as u32;
    pub const WRITABLE: u32 = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE as u32;
    pub const EXECUTABLE: u32 = KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE as u32;
    pub const PUBLIC: u32 = KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC as u32;
    pub const NO_SUBSTITUTE: u32 = KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE as u32;
    pub const AQL_QUEUE_MEM: u32 = KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM as u32;
    pub const COHERENT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_COHERENT as u32;
    pub const UNCACHED: u32 = KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED as u32;
    pub const EXT_COHERENT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT as u32;
    pub const CONTIGUOUS: u32 = KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT as u32;
}

/// Where an allocation's memory comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Domain {
    /// VRAM of a GPU (the device path).
    Vram,
    /// GTT: pinned system memory owned by a GPU.
    Gtt,
    /// Pageable process memory registered with the KFD (userptr).
    Userptr,
}

/// The bits common to every path (upstream's translate step).
pub fn common(flags: HsaMemFlags, disable_cache: bool) -> u32 {
    let mut f = ioc::NO_SUBSTITUTE;
    if flags.bf_ReadOnly() == 0 {
        f |= ioc::WRITABLE;
    }
    if flags.bf_ExecuteAccess() != 0 {
        f |= ioc::EXECUTABLE;
    }
    if flags.bf_CoarseGrain() == 0 || disable_cache {
        f |= ioc::COHERENT;
    }
    if flags.bf_Uncached() != 0 || disable_cache {
        f |= ioc::UNCACHED;
    }
    if flags.bf_AQLQueueMemory() != 0 {
        f |= ioc::AQL_QUEUE_MEM | ioc::UNCACHED;
    }
    f
}

/// The full request for an allocation in `domain`.
pub fn alloc_flags(flags: HsaMemFlags, domain: Domain, disable_cache: bool) -> u32 {
    let mut f = common(flags, disable_cache);
    match domain {
        Domain::Vram => {
            f |= ioc::VRAM;
            if flags.bf_HostAccess() != 0 {
                f |= ioc::PUBLIC;
            }
            if flags.bf_ExtendedCoherent() != 0 {
                f |= ioc::EXT_COHERENT;
            }
            if flags.bf_Contiguous() != 0 {
                f |= ioc::CONTIGUOUS;
            }
        }
        Domain::Gtt => f |= ioc::GTT,
        Domain::Userptr => f |= ioc::USERPTR,
    }
    f
}

/// Flags of a userptr registration (RegisterMemory*): always writable and executable, with
/// the caller's coherence choice.
pub fn register_flags(coarse_grain: bool, ext_coherent: bool) -> u32 {
    let mut f = ioc::USERPTR | ioc::WRITABLE | ioc::EXECUTABLE | ioc::NO_SUBSTITUTE;
    if !coarse_grain {
        f |= ioc::COHERENT;
    }
    if ext_coherent {
        f |= ioc::EXT_COHERENT;
    }
    f
}

/// The page size a caller asked for with `HsaMemFlags.PageSize` (4K, 64K, 2M, 1G).
pub fn page_size(flags: HsaMemFlags) -> u64 {
    match flags.bf_PageSize() {
        0 => 4 << 10,
        1 => 64 << 10,
        2 => 2 << 20,
        _ => 1 << 30,
    }
}
