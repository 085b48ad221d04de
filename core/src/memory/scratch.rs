//! Scratch backing ranges: one range per GPU, memory behind it made one BO per mapped slice
//! (any sub-range, in any order) at MapMemoryToGPU time.

use super::*;

/// A GPU's scratch backing range (upstream: one per GPU). Memory behind it is made at
/// MapMemoryToGPU time, one BO per mapped slice (any sub-range, in any order, as upstream's
/// scratch_physical aperture holds one object per map), and dropped when that slice is unmapped.
#[derive(Clone, Debug)]
pub(super) struct Scratch {
    pub(super) gpu: Gpu,
    pub(super) base: u64,
    pub(super) size: u64,
    /// (start, size, KFD handle) of each mapped slice.
    pub(super) slices: Vec<(u64, u64, u64)>,
}

/// Scratch ranges are 64 KiB aligned (upstream SCRATCH_ALIGN).
const SCRATCH_ALIGN: u64 = 64 << 10;

impl Memory {
    /// hsaKmtAllocMemory with `Scratch`: a VA range for the GPU's scratch backing, told to the
    /// KFD with SET_SCRATCH_BACKING_VA; memory comes at map time. One range per GPU.
    pub(super) fn alloc_scratch(&mut self, kfd: &dyn Kfd, gpu: Gpu, size: u64) -> KmtResult<u64> {
        if self.scratch.iter().any(|s| s.gpu.gpu_id == gpu.gpu_id) {
            return Err(Status::NO_MEMORY);
        }
        let size = size.div_ceil(SCRATCH_ALIGN) * SCRATCH_ALIGN;
        let va = self.reserve_svm(kfd, size, SCRATCH_ALIGN, false, None)?;
        let mut a: kfd_ioctl_set_scratch_backing_va_args = FromZeros::new_zeroed();
        a.va_addr = va;
        a.gpu_id = gpu.gpu_id;
        // SAFETY: `[va, va + size)` is this manager's fresh PROT_NONE reservation for the GPU's
        // scratch; CPU code reaches it only through the address handed back (memory comes at
        // map time, a BO the GPU owns).
        if unsafe { ioctl_typed(kfd, AMDKFD_IOC_SET_SCRATCH_BACKING_VA, &mut a) }.is_err() {
            self.release_svm(kfd, va, size);
            return Err(Status::NO_MEMORY);
        }
        self.scratch.push(Scratch { gpu, base: va, size, slices: Vec::new() });
        Ok(va)
    }

    pub(super) fn scratch_index(&self, addr: u64) -> Option<usize> {
        self.scratch.iter().position(|s| addr >= s.base && addr - s.base < s.size)
    }

    /// Map a slice of a scratch range (upstream's _fmm_map_to_gpu_scratch): a VRAM BO over
    /// `[addr, addr + size)`, CPU-mapped PROT_NONE there and mapped to the range's GPU. Any
    /// slice inside the range, in any order; one that leaves the range is INVALID_PARAMETER
    /// (upstream's check), the BO allocation failing INVALID_HANDLE and the mappings failing
    /// ERROR, as upstream. A slice overlapping a mapped one is ERROR before anything changes
    /// (upstream finds that out when the KFD refuses the overlapping GPU mapping: ERROR too).
    /// Ours: size 0 maps the rest of the range.
    pub(super) fn map_scratch(&mut self, kfd: &dyn Kfd, i: usize, addr: u64, size: u64) -> KmtResult<u64> {
        let (gpu, base, len) = (self.scratch[i].gpu, self.scratch[i].base, self.scratch[i].size);
        let size = if size == 0 { base + len - addr } else { size.div_ceil(self.page()) * self.page() };
        let Some(end) = addr.checked_add(size).filter(|&e| e <= base + len) else {
            return Err(Status::INVALID_PARAMETER);
        };
        if self.scratch[i].slices.iter().any(|&(s, l, _)| addr < s + l && s < end) {
            return Err(Status::ERROR);
        }
        let ioc = AllocFlags::VRAM | AllocFlags::WRITABLE | AllocFlags::NO_SUBSTITUTE;
        let (handle, off) = self.alloc_bo(kfd, gpu, addr, size, ioc).map_err(|_| Status::INVALID_HANDLE)?;
        // The CPU view stays inaccessible (upstream maps it PROT_NONE unless a debugger asks).
        // SAFETY: the slice is inside this manager's scratch reservation and no other slice
        // overlaps it.
        if unsafe { kfd.mmap_bo(gpu.render_fd, Some(addr as usize), size as usize, 0, off) }.is_err() {
            let _ = self.free_bo_handle(kfd, handle);
            return Err(Status::ERROR);
        }
        if self.map_ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, &[gpu.gpu_id]).is_err() {
            // SAFETY: back to a PROT_NONE reservation over the slice this call mapped.
            let _ = unsafe { kfd.map_anonymous(Some(addr as usize), 0, size as usize, 0) };
            let _ = self.free_bo_handle(kfd, handle);
            return Err(Status::ERROR);
        }
        self.scratch[i].slices.push((addr, size, handle));
        Ok(0)
    }

    /// Unmap the scratch slice that starts at `addr` (upstream finds the object by its exact
    /// start: any other address is ERROR): GPU unmap, the CPU range back to a PROT_NONE
    /// reservation, the BO freed.
    pub(super) fn unmap_scratch(&mut self, kfd: &dyn Kfd, i: usize, addr: u64) -> KmtResult<()> {
        let gpu = self.scratch[i].gpu;
        let j = self.scratch[i].slices.iter().position(|&(s, _, _)| s == addr).ok_or(Status::ERROR)?;
        let (addr, size, handle) = self.scratch[i].slices[j];
        self.map_ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, &[gpu.gpu_id]).map_err(|_| Status::ERROR)?;
        // SAFETY: back to a PROT_NONE reservation over our own scratch slice.
        let _ = unsafe { kfd.map_anonymous(Some(addr as usize), 0, size as usize, 0) };
        self.free_bo_handle(kfd, handle).map_err(|_| Status::ERROR)?;
        self.scratch[i].slices.swap_remove(j);
        Ok(())
    }

    /// FreeMemory of a scratch range (upstream's fmm_release_scratch): every mapped slice is
    /// unmapped, then the VA is given back.
    pub(super) fn free_scratch(&mut self, kfd: &dyn Kfd, i: usize) -> KmtResult<()> {
        while let Some(&(addr, _, _)) = self.scratch[i].slices.first() {
            self.unmap_scratch(kfd, i, addr)?;
        }
        let sc = self.scratch.remove(i);
        self.release_svm(kfd, sc.base, sc.size);
        Ok(())
    }
}
