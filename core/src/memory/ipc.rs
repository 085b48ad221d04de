//! ShareMemory / RegisterSharedHandle(ToNodes): IPC handles of BOs, exported and imported
//! through the KFD.

use super::*;

impl Memory {
    /// hsaKmtShareMemory: export an allocation for another process (legacy IPC ioctl).
    pub(crate) fn share(&self, kfd: &dyn Kfd, addr: u64, size: u64) -> KmtResult<HsaSharedMemoryHandle> {
        let page_shift = self.page().trailing_zeros();
        if size >= 1u64 << (32 + page_shift) {
            return Err(Status::INVALID_PARAMETER);
        }
        let bo = self.bos.get(addr).ok_or(Status::INVALID_PARAMETER)?;
        let (gpu_id, handle) = *bo.handles.first().ok_or(Status::INVALID_PARAMETER)?;
        let mut a: kfd_ioctl_ipc_export_handle_args = FromZeros::new_zeroed();
        a.handle = handle;
        a.gpu_id = gpu_id;
        a.flags = bo.flags.Value;
        ioctl_plain(kfd, &mut a).map_err(|_| Status::ERROR)?;
        let mut h = [0u32; 8];
        h[..4].copy_from_slice(&a.share_handle);
        // ApeInfo: aperture type (1: coarse SVM, 2: fine-grain SVM) and index.
        let coherent = matches!(self.layout.classify(addr), Some(crate::fmm::aperture::Region::SvmCoherent));
        h[4] = if coherent { 2 } else { 1 };
        h[5] = 0;
        h[6] = (size >> page_shift) as u32;
        h[7] = gpu_id;
        Ok(h)
    }

    /// hsaKmtRegisterSharedHandle(ToNodes): import another process's export at a new VA.
    pub(crate) fn import_shared(&mut self, kfd: &dyn Kfd, h: &HsaSharedMemoryHandle, nodes: Option<&[u32]>) -> KmtResult<(u64, u64)> {
        let pages = u64::from(h[6]);
        let coherent = match h[4] {
            1 => false,
            2 => true,
            _ => return Err(Status::INVALID_PARAMETER),
        };
        let size = pages.checked_mul(self.page()).filter(|&s| s != 0).ok_or(Status::INVALID_PARAMETER)?;
        let gpu = self.gpu_by_id(h[7]).ok_or(Status::ERROR)?;
        if let Some(ns) = nodes {
            for &n in ns {
                self.gpu_of_node(n).ok_or(Status::INVALID_NODE_UNIT)?;
            }
        }
        let va = self.reserve_svm(kfd, size, 0, coherent, None)?;
        let mut a: kfd_ioctl_ipc_import_handle_args = FromZeros::new_zeroed();
        a.share_handle.copy_from_slice(&h[..4]);
        a.gpu_id = gpu.gpu_id;
        a.va_addr = va;
        // SAFETY: `[va, va + size)` is this manager's fresh reservation, where the imported BO
        // (the exporter's memory) will appear; no Rust reference points into it.
        if unsafe { ioctl_typed(kfd, AMDKFD_IOC_IPC_IMPORT_HANDLE, &mut a) }.is_err() {
            self.release_svm(kfd, va, size);
            return Err(Status::ERROR);
        }
        let mut f = HsaMemFlags::new_zeroed();
        f.Value = a.flags;
        if a.mmap_offset != 0 {
            // SAFETY: `va` is this manager's reservation for exactly this import.
            if unsafe { kfd.mmap_bo(gpu.render_fd, Some(va as usize), size as usize, PROT_READ | PROT_WRITE, a.mmap_offset) }.is_err() {
                let _ = self.free_bo_handle(kfd, a.handle);
                self.release_svm(kfd, va, size);
                return Err(Status::ERROR);
            }
        }
        let mut bo = Bo::new(BoKind::IpcImport, va, size, f, gpu.node_id).with_handle(gpu.gpu_id, a.handle);
        bo.mmap_offset = a.mmap_offset;
        if let Some(ns) = nodes {
            bo.registered_nodes.set(ns);
        }
        self.insert(bo)?;
        Ok((va, size))
    }
}
