//! HsaMemFlags → KFD_IOC_ALLOC_MEM_FLAGS: how the thunk asks the KFD for a buffer object.
//! Upstream's rules (fmm.c): writable unless ReadOnly, coherent unless CoarseGrain, and
//! NO_SUBSTITUTE on every request; CachePolicy, GDS and atomics bits are not the KFD's business.

use crate::abi::hsakmt::HsaMemFlags;
use crate::abi::kfd::*;

bitflags::bitflags! {
    /// `KFD_IOC_ALLOC_MEM_FLAGS_*`: the flag word of an ALLOC_MEMORY_OF_GPU request (the table
    /// types the bits as C `int`; the argument's field is a `__u32`).
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub struct AllocFlags: u32 {
        const VRAM = KFD_IOC_ALLOC_MEM_FLAGS_VRAM as u32;
        const GTT = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
        const USERPTR = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR as u32;
        const DOORBELL = KFD_IOC_ALLOC_MEM_FLAGS_DOORBELL as u32;
        const MMIO_REMAP = KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP as u32;
        const WRITABLE = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE as u32;
        const EXECUTABLE = KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE as u32;
        const PUBLIC = KFD_IOC_ALLOC_MEM_FLAGS_PUBLIC as u32;
        const NO_SUBSTITUTE = KFD_IOC_ALLOC_MEM_FLAGS_NO_SUBSTITUTE as u32;
        const AQL_QUEUE_MEM = KFD_IOC_ALLOC_MEM_FLAGS_AQL_QUEUE_MEM as u32;
        const COHERENT = KFD_IOC_ALLOC_MEM_FLAGS_COHERENT as u32;
        const UNCACHED = KFD_IOC_ALLOC_MEM_FLAGS_UNCACHED as u32;
        const EXT_COHERENT = KFD_IOC_ALLOC_MEM_FLAGS_EXT_COHERENT as u32;
        const CONTIGUOUS = KFD_IOC_ALLOC_MEM_FLAGS_CONTIGUOUS_BEST_EFFORT as u32;
    }
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
pub fn common(flags: HsaMemFlags, disable_cache: bool) -> AllocFlags {
    let mut f = AllocFlags::NO_SUBSTITUTE;
    if flags.bf_ReadOnly() == 0 {
        f |= AllocFlags::WRITABLE;
    }
    if flags.bf_ExecuteAccess() != 0 {
        f |= AllocFlags::EXECUTABLE;
    }
    if flags.bf_CoarseGrain() == 0 || disable_cache {
        f |= AllocFlags::COHERENT;
    }
    if flags.bf_Uncached() != 0 || disable_cache {
        f |= AllocFlags::UNCACHED;
    }
    if flags.bf_AQLQueueMemory() != 0 {
        f |= AllocFlags::AQL_QUEUE_MEM | AllocFlags::UNCACHED;
    }
    f
}

/// The full request for an allocation in `domain`.
pub fn alloc_flags(flags: HsaMemFlags, domain: Domain, disable_cache: bool) -> AllocFlags {
    let mut f = common(flags, disable_cache);
    match domain {
        Domain::Vram => {
            f |= AllocFlags::VRAM;
            if flags.bf_HostAccess() != 0 {
                f |= AllocFlags::PUBLIC;
            }
            if flags.bf_ExtendedCoherent() != 0 {
                f |= AllocFlags::EXT_COHERENT;
            }
            if flags.bf_Contiguous() != 0 {
                f |= AllocFlags::CONTIGUOUS;
            }
        }
        Domain::Gtt => f |= AllocFlags::GTT,
        Domain::Userptr => f |= AllocFlags::USERPTR,
    }
    f
}

/// Flags of a userptr registration (RegisterMemory*): always writable and executable, with
/// the caller's coherence choice.
pub fn register_flags(coarse_grain: bool, ext_coherent: bool) -> AllocFlags {
    let mut f = AllocFlags::USERPTR | AllocFlags::WRITABLE | AllocFlags::EXECUTABLE | AllocFlags::NO_SUBSTITUTE;
    if !coarse_grain {
        f |= AllocFlags::COHERENT;
    }
    if ext_coherent {
        f |= AllocFlags::EXT_COHERENT;
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

#[cfg(test)]
mod tests {
    use super::*;
    use zerocopy::FromZeros;

    #[test]
    fn requests_as_upstream_builds_them() {
        let mut f = HsaMemFlags::new_zeroed();
        f.set_bf_HostAccess(1);
        f.set_bf_CoarseGrain(1);
        let vram = alloc_flags(f, Domain::Vram, false);
        assert_eq!(vram, AllocFlags::VRAM | AllocFlags::PUBLIC | AllocFlags::WRITABLE | AllocFlags::NO_SUBSTITUTE);
        f.set_bf_CoarseGrain(0);
        f.set_bf_ReadOnly(1);
        f.set_bf_AQLQueueMemory(1);
        let gtt = alloc_flags(f, Domain::Gtt, false);
        assert_eq!(
            gtt,
            AllocFlags::GTT | AllocFlags::COHERENT | AllocFlags::AQL_QUEUE_MEM | AllocFlags::UNCACHED | AllocFlags::NO_SUBSTITUTE
        );
        assert!(alloc_flags(f, Domain::Userptr, true).contains(AllocFlags::USERPTR | AllocFlags::UNCACHED | AllocFlags::COHERENT));
        let reg = register_flags(true, true);
        assert_eq!(
            reg,
            AllocFlags::USERPTR | AllocFlags::WRITABLE | AllocFlags::EXECUTABLE | AllocFlags::NO_SUBSTITUTE | AllocFlags::EXT_COHERENT
        );
        // The word the ioctl carries is the kernel's bit layout.
        assert_eq!(AllocFlags::VRAM.bits(), 1);
        assert_eq!(AllocFlags::NO_SUBSTITUTE.bits(), 1 << 28);
    }
}
