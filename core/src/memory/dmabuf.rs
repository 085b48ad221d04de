//! ExportDMABufHandle / RegisterGraphicsHandleToNodes: dma-buf export and import, and the
//! metadata an import carries.

use super::*;

impl Memory {
    /// hsaKmtExportDMABufHandle: (fd, offset of `addr` inside its BO).
    pub(crate) fn export_dmabuf(&self, kfd: &dyn Kfd, addr: u64, size: u64) -> KmtResult<(i32, u64)> {
        let bo = self.bos.find(addr).ok_or(Status::INVALID_PARAMETER)?;
        let off = addr - bo.start();
        if off.checked_add(size).is_none_or(|e| e > bo.size()) {
            return Err(Status::INVALID_PARAMETER);
        }
        let handle = bo.primary_handle().ok_or(Status::INVALID_PARAMETER)?;
        let mut a: kfd_ioctl_export_dmabuf_args = FromZeros::new_zeroed();
        a.handle = handle;
        a.flags = 0o2000000; // O_CLOEXEC
        ioctl_plain(kfd, &mut a).map_err(|_| Status::ERROR)?;
        Ok((a.dmabuf_fd as i32, off))
    }

    /// hsaKmtRegisterGraphicsHandleToNodes(Ext): import a dma-buf (a graphics resource) at a
    /// new VA of the SVM aperture (256 KiB aligned, as upstream). Returns (va, size, node).
    pub(crate) fn import_graphics(&mut self, kfd: &dyn Kfd, dmabuf_fd: i32, nodes: Option<&[u32]>) -> KmtResult<(u64, u64, u32)> {
        if let Some(ns) = nodes {
            for &n in ns {
                self.gpu_of_node(n).ok_or(Status::INVALID_NODE_UNIT)?;
            }
        }
        let fd = u32::try_from(dmabuf_fd).map_err(|_| Status::ERROR)?;
        // The metadata comes back in a caller buffer: 64 bytes first, then what the KFD says
        // it needs (upstream retries once the same way).
        let mut metadata = alloc::vec![0u8; 64];
        let mut info: kfd_ioctl_get_dmabuf_info_args = FromZeros::new_zeroed();
        for _ in 0..2 {
            info = FromZeros::new_zeroed();
            info.dmabuf_fd = fd;
            info.metadata_ptr = metadata.as_mut_ptr() as u64;
            info.metadata_size = metadata.len() as u32;
            // SAFETY: the metadata pointer and size describe `metadata`, live and unborrowed
            // for the call, which the KFD fills with at most `metadata_size` bytes.
            match unsafe { ioctl_typed(kfd, AMDKFD_IOC_GET_DMABUF_INFO, &mut info) } {
                Ok(()) => break,
                Err(Errno(Errno::EINVAL)) if info.metadata_size as usize > metadata.len() => {
                    metadata.resize(info.metadata_size as usize, 0)
                }
                Err(_) => return Err(Status::ERROR),
            }
        }
        metadata.truncate(info.metadata_size as usize);
        let gpu = self.gpu_by_id(info.gpu_id).ok_or(Status::ERROR)?;
        let page = self.page();
        let size = info.size.div_ceil(page) * page;
        if size == 0 {
            return Err(Status::ERROR);
        }
        let va = self.reserve_svm(kfd, size, 256 << 10, false, None)?;
        let mut a: kfd_ioctl_import_dmabuf_args = FromZeros::new_zeroed();
        a.va_addr = va;
        a.gpu_id = gpu.gpu_id;
        a.dmabuf_fd = fd;
        // SAFETY: `[va, va + size)` is this manager's fresh reservation, where the dma-buf's
        // memory will appear; no Rust reference points into it.
        if unsafe { ioctl_typed(kfd, AMDKFD_IOC_IMPORT_DMABUF, &mut a) }.is_err() {
            self.release_svm(kfd, va, size);
            return Err(Status::ERROR);
        }
        let mut f = HsaMemFlags::new_zeroed();
        f.set_bf_CoarseGrain(1);
        f.set_bf_NonPaged(1);
        let mut bo = Bo::new(BoKind::Graphics, va, size, f, gpu.node_id).with_handle(gpu.gpu_id, a.handle);
        bo.metadata = metadata;
        bo.registration_count = 1;
        if let Some(ns) = nodes {
            bo.registered_nodes.set(ns);
        }
        self.insert(bo)?;
        Ok((va, size, gpu.node_id))
    }

    /// The metadata a graphics import carries (valid while the BO lives).
    pub(crate) fn metadata(&self, va: u64) -> Option<&[u8]> {
        self.bos.get(va).map(|b| b.metadata.as_slice())
    }
}
