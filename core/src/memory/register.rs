//! RegisterMemory(ToNodes / WithFlags) / DeregisterMemory: user ranges become userptr BOs
//! (overlapping ranges are separate registrations, as upstream).

use super::*;

impl Memory {
    /// hsaKmtRegisterMemory*: a user range becomes a userptr BO on the first GPU (upstream's
    /// fallback path; GPU VA taken from the SVM aperture).
    ///
    /// # Safety
    /// `[addr, addr + size)` must be memory the GPUs may read and write until it is
    /// deregistered ([`Kfd::ioctl`]'s contract for memory handed to a GPU).
    pub(crate) unsafe fn register(
        &mut self,
        kfd: &dyn Kfd,
        addr: u64,
        size: u64,
        nodes: Option<&[u32]>,
        coarse: bool,
        ext: bool,
    ) -> KmtResult<()> {
        if addr == 0 || size == 0 {
            return Err(Status::INVALID_PARAMETER);
        }
        if coarse && ext {
            return Err(Status::INVALID_PARAMETER);
        }
        if let Some(ns) = nodes {
            for &n in ns {
                self.gpu_of_node(n).ok_or(Status::INVALID_NODE_UNIT)?;
            }
        }
        if let Some(bo) = self.bos.find_userptr_exact(addr, size).map(|b| b.start()) {
            let b = self.bos.get_mut(bo).ok_or(Status::ERROR)?;
            if b.kind != BoKind::Userptr {
                // memory from AllocMemory is not the user's to register (upstream)
                return Err(Status::INVALID_HANDLE);
            }
            if let Some(ns) = nodes {
                if !b.registered_nodes.is_empty() && b.registered_nodes.as_slice() != ns {
                    return Err(Status::MEMORY_ALREADY_REGISTERED);
                }
                b.registered_nodes.set(ns);
            }
            b.registration_count += 1;
            return Ok(());
        }
        if let Some(b) = self.bos.get(addr) {
            if b.kind != BoKind::Userptr {
                return Err(Status::INVALID_HANDLE);
            }
        }
        // An overlapping (not identical) range is a registration of its own: the KFD allows
        // user pages in several userptr BOs, and upstream registers it.
        let page = self.page();
        let cpu_page = addr & !(page - 1);
        let span = (addr - cpu_page + size).div_ceil(page) * page;
        let owner = *self.gpus.first().ok_or(Status::NOT_SUPPORTED)?;
        if self.cfg.fmm.check_userptr {
            // HSA_CHECK_USERPTR: touch the user's pages now, so a bad range fails here.
            match kfd.prefault_user_range(cpu_page as usize, span as usize) {
                Ok(()) | Err(Errno(Errno::ENOSYS)) => {}
                Err(_) => return Err(Status::ERROR),
            }
        }
        let va = self.reserve_svm(kfd, span, 0, !coarse, None)?;
        let ioc = flags::register_flags(coarse, ext);
        // SAFETY: the pages of the caller's range (this function's contract); the part of the
        // first and last page outside it is the caller's too (the KFD pins whole pages).
        match unsafe { self.alloc_userptr_bo(kfd, owner, va, cpu_page, span, ioc) } {
            Ok((handle, _)) => {
                let mut f = HsaMemFlags::new_zeroed();
                f.set_bf_HostAccess(1);
                f.set_bf_CoarseGrain(coarse as u32);
                f.set_bf_ExtendedCoherent(ext as u32);
                let mut bo = Bo::new(BoKind::Userptr, va, span, f, 0).with_handle(owner.gpu_id, handle).with_userptr(addr, size);
                bo.registration_count = 1;
                if let Some(ns) = nodes {
                    bo.registered_nodes.set(ns);
                }
                self.insert(bo).map(|_| ())
            }
            Err(_) => {
                self.release_svm(kfd, va, span);
                Err(Status::ERROR)
            }
        }
    }

    /// hsaKmtDeregisterMemory.
    pub(crate) fn deregister(&mut self, kfd: &dyn Kfd, addr: u64) -> KmtResult<()> {
        let start = match self.bos.find_userptr(addr).filter(|b| b.userptr().is_some_and(|(a, _)| a == addr)) {
            Some(b) => b.start(),
            None => match self.bos.get(addr) {
                Some(b) => b.start(),
                None => return if self.svm_api { Ok(()) } else { Err(Status::MEMORY_NOT_REGISTERED) },
            },
        };
        let bo = self.bos.get(start).cloned().ok_or(Status::ERROR)?;
        if bo.kind == BoKind::Userptr && bo.registration_count > 1 {
            if let Some(b) = self.bos.get_mut(start) {
                b.registration_count -= 1;
            }
            return Ok(());
        }
        if bo.kind.is_registration() {
            self.release_bo(kfd, &bo)?;
            self.bos.remove(start);
            return Ok(());
        }
        if bo.registered_nodes.is_empty() {
            return Err(Status::MEMORY_NOT_REGISTERED);
        }
        if let Some(b) = self.bos.get_mut(start) {
            b.registered_nodes.clear();
        }
        Ok(())
    }
}
