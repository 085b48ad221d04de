//! FMM building blocks (the thunk's "flat memory manager"): aperture layout, VA allocation
//! and the buffer-object table. Pure logic; callers do the ioctls and mmaps through the port.
//!
//! * [`va`] — a VA range allocator over one aperture (guard pages, alignment, coalescing,
//!   O(log n) alloc / free / lookup) and upstream's alignment policies.
//! * [`aperture`] — per-GPU apertures from GET_PROCESS_APERTURES_NEW, the SVM plan in CPU
//!   VA (unreserved 47-bit mode or a reserved range split into coherent and non-coherent
//!   parts), the memory-handle aperture, MMIO pages, and the settings read at FMM init.
//! * [`bo`] — the buffer-object table: address → BO record, with lookup by any address inside
//!   a BO (GPU VA, or the CPU range of a registered user pointer).

pub mod aperture;
pub mod bo;
pub mod va;

/// The GPU's large page (PDE fragment) size: SVM apertures are trimmed to it and reserved
/// apertures grow big buffers' alignment up to it (upstream `GPU_HUGE_PAGE_SIZE`).
pub const GPU_HUGE_PAGE_SIZE: u64 = 2 << 20;

/// The first non-canonical address of x86-64's 47-bit user space: a GPUVM limit below it means
/// the GPU shares the CPU's address space (the SVM aperture).
pub const CANONICAL_LIMIT: u64 = 1 << 47;

/// Round `x` up to `align`; `None` on overflow or when `align` is not a power of two.
pub(crate) fn align_up(x: u64, align: u64) -> Option<u64> {
    if !align.is_power_of_two() {
        return None;
    }
    x.checked_add(align - 1).map(|v| v & !(align - 1))
}
