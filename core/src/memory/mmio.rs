//! Device pages mapped for the CPU: the per-GPU MMIO remap (HDP flush) page and the queue
//! doorbell page.

use super::*;

impl Memory {
    /// The MMIO remap page of every SVM GPU (the HDP flush registers), as upstream maps it at
    /// FMM init: one page of the fine-grain aperture, an MMIO_REMAP BO CPU-mapped from the KFD
    /// file at the offset the KFD returns, mapped to that GPU. A GPU whose KFD offers no page
    /// (no remap address) simply has none.
    pub(super) fn map_mmio_pages(&mut self, kfd: &dyn Kfd) {
        let page = self.page();
        let gpus: Vec<u32> = self.layout.mmio_gpus().map(|g| g.gpu_id).collect();
        for gpu_id in gpus {
            let Some(gpu) = self.gpu_by_id(gpu_id) else { continue };
            let Ok(va) = self.reserve_svm(kfd, page, 0, true, None) else { continue };
            let ioc = AllocFlags::from_bits_retain(crate::fmm::aperture::MMIO_ALLOC_FLAGS) | AllocFlags::NO_SUBSTITUTE;
            let Ok((handle, off)) = self.alloc_bo(kfd, gpu, va, page, ioc) else {
                self.release_svm(kfd, va, page);
                continue;
            };
            // SAFETY: `va` is this manager's reservation for exactly this page.
            let cpu = unsafe { kfd.mmap(Some(va as usize), page as usize, PROT_READ | PROT_WRITE, true, off) };
            let mapped = cpu.is_ok() && self.map_ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, &[gpu_id]).is_ok();
            if !mapped {
                let _ = self.free_bo_handle(kfd, handle);
                self.release_svm(kfd, va, page);
                continue;
            }
            self.layout.set_mmio(gpu_id, va);
            self.mmio.push((gpu_id, va, handle));
        }
    }

    /// Map a GPU's doorbell page as upstream's map_doorbell does: on a dGPU a DOORBELL BO in
    /// the fine-grain aperture, CPU-mapped from the KFD at the offset CREATE_QUEUE returned
    /// and mapped to the GPU; where that fails, a plain CPU mapping of the KFD offset.
    pub(crate) fn map_doorbell(&mut self, kfd: &dyn Kfd, gpu_id: u32, len: u64, mmap_offset: u64) -> KmtResult<u64> {
        if let Some(d) = self.doorbells.iter().find(|d| d.0 == gpu_id) {
            return Ok(d.1);
        }
        if let Some(va) = self.map_doorbell_bo(kfd, gpu_id, len, mmap_offset) {
            return Ok(va);
        }
        // SAFETY: a new shared mapping at an address the kernel picks.
        let cpu = unsafe { kfd.mmap(None, len as usize, PROT_READ | PROT_WRITE, true, mmap_offset) }.map_err(|_| Status::ERROR)?;
        self.doorbells.push((gpu_id, cpu as u64, len, 0));
        Ok(cpu as u64)
    }

    pub(super) fn map_doorbell_bo(&mut self, kfd: &dyn Kfd, gpu_id: u32, len: u64, mmap_offset: u64) -> Option<u64> {
        let gpu = self.gpu_by_id(gpu_id)?;
        let va = self.reserve_svm(kfd, len, 0, true, None).ok()?;
        let ioc = AllocFlags::DOORBELL | AllocFlags::WRITABLE | AllocFlags::COHERENT;
        let Ok((handle, _)) = self.alloc_bo(kfd, gpu, va, len, ioc) else {
            self.release_svm(kfd, va, len);
            return None;
        };
        // SAFETY: `va` is this manager's reservation for exactly `len` bytes.
        let cpu = unsafe { kfd.mmap(Some(va as usize), len as usize, PROT_READ | PROT_WRITE, true, mmap_offset) };
        if cpu.is_err() || self.map_ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, &[gpu_id]).is_err() {
            let _ = self.free_bo_handle(kfd, handle);
            self.release_svm(kfd, va, len);
            return None;
        }
        self.doorbells.push((gpu_id, va, len, handle));
        Some(va)
    }

    /// Whether the GPU of `gpu_id` has an MMIO remap page.
    pub(crate) fn has_mmio(&self, gpu_id: u32) -> Option<u64> {
        self.mmio.iter().find(|m| m.0 == gpu_id).map(|m| m.1)
    }
}
