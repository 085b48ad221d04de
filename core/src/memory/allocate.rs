//! AllocMemory / FreeMemory: VRAM at an SVM address, host memory (paged userptr or GTT),
//! OnlyAddress / NoAddress reservations, and the BOs behind them.

use super::*;

impl Memory {
    /// hsaKmtAllocMemoryAlign after the open/node checks of the caller.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn alloc(
        &mut self,
        kfd: &dyn Kfd,
        topo: &Topology,
        node: u32,
        gtt_anchor: Option<u32>,
        size: u64,
        align: u64,
        mflags: HsaMemFlags,
        fixed: Option<u64>,
    ) -> KmtResult<u64> {
        let n = topo.nodes.get(node as usize).ok_or(Status::INVALID_NODE_UNIT)?;
        let page = flags::page_size(mflags);
        if align != 0 && (align < page || !align.is_power_of_two()) {
            return Err(Status::INVALID_PARAMETER);
        }
        if size == 0 || !size.is_multiple_of(page) {
            return Err(Status::INVALID_PARAMETER);
        }
        if mflags.bf_FixedAddress() != 0 && fixed.is_none_or(|a| a == 0) {
            return Err(Status::INVALID_PARAMETER);
        }
        let fixed = if mflags.bf_FixedAddress() != 0 { fixed } else { None };
        let ext = mflags.bf_ExtendedCoherent() != 0;
        if ext && (mflags.bf_CoarseGrain() != 0 || mflags.bf_Uncached() != 0) {
            return Err(Status::INVALID_PARAMETER);
        }
        if mflags.bf_Scratch() != 0 {
            if align != 0 {
                return Err(Status::NOT_IMPLEMENTED);
            }
            let gpu = self.gpu_of_node(node).ok_or(Status::NO_MEMORY)?;
            return self.alloc_scratch(kfd, gpu, size);
        }
        if mflags.bf_OnlyAddress() != 0 && mflags.bf_NoAddress() != 0 {
            return Err(Status::INVALID_PARAMETER);
        }
        let host = n.gpu_id == 0
            || mflags.bf_NonPaged() == 0
            || self.cfg.zfb
            || mflags.bf_GTTAccess() != 0
            || mflags.bf_OnlyAddress() != 0
            || gtt_anchor.is_some();
        if host {
            let mut f = mflags;
            if self.cfg.zfb && mflags.bf_NonPaged() != 0 && n.gpu_id != 0 {
                f.set_bf_CoarseGrain(1);
            }
            let owner = match gtt_anchor {
                Some(anchor) => self.gpu_of_node(anchor).ok_or(Status::INVALID_NODE_UNIT)?,
                None if n.gpu_id != 0 => self.gpu_of_node(node).ok_or(Status::INVALID_NODE_UNIT)?,
                None => *self.gpus.first().ok_or(Status::NOT_SUPPORTED)?,
            };
            let record_node = if mflags.bf_GTTAccess() != 0 { 0 } else { node };
            self.alloc_host(kfd, owner, record_node, size, align, f, fixed).map_err(|s| {
                if s == Status::INVALID_PARAMETER {
                    s
                } else {
                    Status::ERROR
                }
            })
        } else {
            let gpu = self.gpu_of_node(node).ok_or(Status::INVALID_NODE_UNIT)?;
            self.alloc_device(kfd, gpu, size, align, mflags, fixed).map_err(|s| {
                if s == Status::INVALID_PARAMETER {
                    s
                } else {
                    Status::NO_MEMORY
                }
            })
        }
    }

    pub(super) fn alloc_device(
        &mut self,
        kfd: &dyn Kfd,
        gpu: Gpu,
        size: u64,
        align: u64,
        mflags: HsaMemFlags,
        fixed: Option<u64>,
    ) -> KmtResult<u64> {
        // AQL queue memory is mapped twice by the KFD (ring wrap-around): ask for twice the VA.
        let va_size = if mflags.bf_AQLQueueMemory() != 0 { size * 2 } else { size };
        if mflags.bf_NoAddress() != 0 {
            let a = self.mem_handle.as_mut().ok_or(Status::NO_MEMORY)?;
            let va = a.alloc(va_size, align.max(self.cfg.fmm.page_size), self.layout.guard_pages).map_err(|_| Status::NO_MEMORY)?;
            return match self.alloc_bo(kfd, gpu, va, va_size, flags::alloc_flags(mflags, Domain::Vram, self.cfg.fmm.disable_cache)) {
                Ok((handle, off)) => {
                    let mut bo = Bo::new(BoKind::Allocated, va, size, mflags, gpu.node_id).with_handle(gpu.gpu_id, handle);
                    bo.mmap_offset = off;
                    self.insert(bo)
                }
                Err(s) => {
                    if let Some(a) = self.mem_handle.as_mut() {
                        a.free(va);
                    }
                    Err(s)
                }
            };
        }
        let va = self.reserve_svm(kfd, va_size, align, false, fixed)?;
        if mflags.bf_OnlyAddress() != 0 {
            return self.insert(Bo::new(BoKind::Reserved, va, size, mflags, gpu.node_id));
        }
        let ioc = flags::alloc_flags(mflags, Domain::Vram, self.cfg.fmm.disable_cache);
        let (handle, off) = match self.alloc_bo(kfd, gpu, va, va_size, ioc) {
            Ok(x) => x,
            Err(s) => {
                self.release_svm(kfd, va, va_size);
                return Err(s);
            }
        };
        let prot = if mflags.bf_HostAccess() != 0 { PROT_READ | PROT_WRITE } else { 0 };
        // SAFETY: `va` is this manager's reservation for exactly this BO.
        if let Err(e) = unsafe { kfd.mmap_bo(gpu.render_fd, Some(va as usize), size as usize, prot, off) } {
            let _ = self.free_bo_handle(kfd, handle);
            self.release_svm(kfd, va, va_size);
            return Err(errno_status(e, Status::NO_MEMORY));
        }
        let mut bo = Bo::new(BoKind::Allocated, va, size, mflags, gpu.node_id).with_handle(gpu.gpu_id, handle);
        bo.mmap_offset = off;
        self.insert(bo)
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn alloc_host(
        &mut self,
        kfd: &dyn Kfd,
        owner: Gpu,
        node: u32,
        size: u64,
        align: u64,
        mflags: HsaMemFlags,
        fixed: Option<u64>,
    ) -> KmtResult<u64> {
        let coherent = mflags.bf_CoarseGrain() == 0;
        let va_size = if mflags.bf_AQLQueueMemory() != 0 { size * 2 } else { size };
        let va = self.reserve_svm(kfd, va_size, align, coherent, fixed)?;
        if mflags.bf_OnlyAddress() != 0 {
            return self.insert(Bo::new(BoKind::Reserved, va, size, mflags, 0));
        }
        let paged_userptr = mflags.bf_NonPaged() == 0 && self.cfg.fmm.userptr_for_paged_mem;
        let result = if paged_userptr {
            let mut prot = PROT_READ | PROT_WRITE;
            if mflags.bf_ExecuteAccess() != 0 {
                prot |= PROT_EXEC;
            }
            // SAFETY: `va` is this manager's reservation for exactly this allocation.
            match unsafe { kfd.map_anonymous(Some(va as usize), 0, size as usize, prot) } {
                Err(e) => Err(errno_status(e, Status::ERROR)),
                Ok(_) => {
                    let ioc = flags::alloc_flags(mflags, Domain::Userptr, self.cfg.fmm.disable_cache);
                    // SAFETY: the anonymous memory just mapped at `va` for this allocation;
                    // Rust reaches it only through the address handed back to the caller.
                    unsafe { self.alloc_userptr_bo(kfd, owner, va, va, va_size, ioc) }
                }
            }
        } else {
            let ioc = flags::alloc_flags(mflags, Domain::Gtt, self.cfg.fmm.disable_cache);
            self.alloc_bo(kfd, owner, va, va_size, ioc).and_then(|(handle, off)| {
                if mflags.bf_HostAccess() != 0 {
                    // SAFETY: `va` is this manager's reservation for exactly this BO.
                    if let Err(e) = unsafe { kfd.mmap_bo(owner.render_fd, Some(va as usize), size as usize, PROT_READ | PROT_WRITE, off) } {
                        let _ = self.free_bo_handle(kfd, handle);
                        return Err(errno_status(e, Status::ERROR));
                    }
                }
                Ok((handle, off))
            })
        };
        match result {
            Ok((handle, off)) => {
                let mut bo = Bo::new(BoKind::Allocated, va, size, mflags, node).with_handle(owner.gpu_id, handle);
                bo.mmap_offset = off;
                if paged_userptr {
                    bo = bo.with_userptr(va, size);
                    bo.kind = BoKind::Allocated;
                }
                self.insert(bo)
            }
            Err(s) => {
                self.release_svm(kfd, va, va_size);
                Err(s)
            }
        }
    }

    /// ALLOC_MEMORY_OF_GPU of a BO that is not a userptr (VRAM, GTT, doorbell, MMIO) at `va`, a
    /// range of this manager's reservations: the memory is the KFD's new BO. A userptr needs
    /// [`Memory::alloc_userptr_bo`] (ERROR here).
    pub(super) fn alloc_bo(&self, kfd: &dyn Kfd, gpu: Gpu, va: u64, size: u64, ioc: AllocFlags) -> KmtResult<(u64, u64)> {
        if ioc.contains(AllocFlags::USERPTR) {
            return Err(Status::ERROR);
        }
        // SAFETY: not a userptr, so no process memory is handed over: the BO is new device
        // memory the GPU VA `va` (our reservation) will show.
        unsafe { self.alloc_bo_raw(kfd, gpu, va, 0, size, ioc) }
    }

    /// ALLOC_MEMORY_OF_GPU of a userptr BO over the process memory `[cpu, cpu + size)`, at
    /// GPU VA `va` (this manager's reservation).
    ///
    /// # Safety
    /// `[cpu, cpu + size)` must be memory the GPUs may read and write until the BO is freed
    /// ([`Kfd::ioctl`]'s contract for memory handed to a GPU).
    pub(super) unsafe fn alloc_userptr_bo(
        &self,
        kfd: &dyn Kfd,
        gpu: Gpu,
        va: u64,
        cpu: u64,
        size: u64,
        ioc: AllocFlags,
    ) -> KmtResult<(u64, u64)> {
        // SAFETY: the caller's contract.
        unsafe { self.alloc_bo_raw(kfd, gpu, va, cpu, size, ioc | AllocFlags::USERPTR) }
    }

    /// # Safety
    /// As [`Memory::alloc_userptr_bo`] when `ioc` has USERPTR (`mmap_offset_in` is then the CPU
    /// address); otherwise the KFD ignores `mmap_offset_in`.
    pub(super) unsafe fn alloc_bo_raw(
        &self,
        kfd: &dyn Kfd,
        gpu: Gpu,
        va: u64,
        mmap_offset_in: u64,
        size: u64,
        ioc: AllocFlags,
    ) -> KmtResult<(u64, u64)> {
        let mut a: kfd_ioctl_alloc_memory_of_gpu_args = FromZeros::new_zeroed();
        a.va_addr = va;
        a.size = size;
        a.gpu_id = gpu.gpu_id;
        a.flags = ioc.bits();
        a.mmap_offset = mmap_offset_in;
        // SAFETY: `va` is GPU VA of our reservation (the KFD maps nothing of the CPU's there);
        // a userptr's CPU range is shareable by this function's contract.
        unsafe { ioctl_typed(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a) }.map_err(|e| errno_status(e, Status::ERROR))?;
        Ok((a.handle, a.mmap_offset))
    }

    pub(super) fn free_bo_handle(&self, kfd: &dyn Kfd, handle: u64) -> Result<(), Errno> {
        ioctl_plain(kfd, &mut kfd_ioctl_free_memory_of_gpu_args { handle })
    }

    /// Free every KFD handle of a BO and give back its VA. A handle the KFD refuses to free
    /// (still mapped: EBUSY) leaves the BO alive.
    pub(super) fn release_bo(&mut self, kfd: &dyn Kfd, bo: &Bo) -> KmtResult<()> {
        if !bo.mapped_nodes.is_empty() {
            let _ = self.unmap_all(kfd, bo);
        }
        for &(_, h) in &bo.handles {
            if h != 0 {
                self.free_bo_handle(kfd, h).map_err(|_| Status::ERROR)?;
            }
        }
        let va_size = if bo.flags.bf_AQLQueueMemory() != 0 { bo.size() * 2 } else { bo.size() };
        if self.in_mem_handle(bo.start()) {
            if let Some(a) = self.mem_handle.as_mut() {
                a.free(bo.start());
            }
        } else {
            // For a registered user range this is its GPU VA only; the CPU pages are the user's.
            self.release_svm(kfd, bo.start(), va_size);
        }
        Ok(())
    }

    /// hsaKmtFreeMemory: upstream answers SUCCESS for an unknown pointer on SVM systems.
    pub(crate) fn free(&mut self, kfd: &dyn Kfd, addr: u64) -> KmtResult<()> {
        if let Some(i) = self.scratch_index(addr) {
            return self.free_scratch(kfd, i);
        }
        // Borrowed, not cloned: the table only changes once the KFD has let go of the BO.
        let Some(bo) = self.bos.get(addr) else {
            return if self.svm_api { Ok(()) } else { Err(Status::MEMORY_NOT_REGISTERED) };
        };
        if bo.kind.is_registration() && bo.kind != BoKind::IpcImport {
            // Registrations are undone with DeregisterMemory.
            return if self.svm_api { Ok(()) } else { Err(Status::MEMORY_NOT_REGISTERED) };
        }
        // The KFD refuses to free a mapped BO; upstream leaves the BO alive then (ERROR).
        for &(_, h) in &bo.handles {
            if h != 0 {
                self.free_bo_handle(kfd, h).map_err(|_| Status::ERROR)?;
            }
        }
        let va_size = if bo.flags.bf_AQLQueueMemory() != 0 { bo.size() * 2 } else { bo.size() };
        self.bos.remove(addr);
        if self.in_mem_handle(addr) {
            if let Some(a) = self.mem_handle.as_mut() {
                a.free(addr);
            }
        } else {
            self.release_svm(kfd, addr, va_size);
        }
        Ok(())
    }
}
