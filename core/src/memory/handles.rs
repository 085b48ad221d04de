//! Upstream's handle API (hsaKmtHandleImport / HandleExport / MemoryVaMap / MemoryVaUnmap /
//! MemoryCpuMap / MemHandleFree / MemoryGetCpuAddr): buffer objects outside the FMM, named by
//! an opaque handle. Upstream drives them with libdrm's amdgpu_bo_* calls on a GPU's render
//! node; here they go through the port's DRM methods (PRIME import/export, GEM_VA, GEM_MMAP,
//! GEM_CLOSE) on the render fd the FMM already holds.
//!
//! A handle is a token, never a pointer: `generation << 32 | (slot + 1)`, so a stale or forged
//! value is simply not found (no C value can make Rust dereference anything).

use super::{Gpu, Memory, PROT_READ, PROT_WRITE};
use crate::abi::hsakmt::*;
use crate::abi::kfd::*;
use crate::port::{ioctl_typed, GemVaOp, Kfd, GEM_VA_READABLE, GEM_VA_WRITEABLE};
use crate::status::{KmtResult, Status};
use alloc::vec::Vec;
use zerocopy::FromZeros;

/// One imported buffer object.
#[derive(Debug)]
struct Import {
    gpu: Gpu,
    gem: u32,
    size: u64,
    /// CPU mapping (MemoryCpuMap), made once and kept until the handle is freed.
    cpu: Option<usize>,
    /// GEM_VA mappings made through this handle: (va, offset, size).
    vas: Vec<(u64, u64, u64)>,
}

#[derive(Debug, Default)]
struct Slot {
    generation: u32,
    import: Option<Import>,
}

/// The handle table of one context.
#[derive(Debug, Default)]
pub(crate) struct Handles {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl Handles {
    fn get(&self, token: u64) -> Option<&Import> {
        let i = (token as u32).checked_sub(1)? as usize;
        let s = self.slots.get(i)?;
        (u64::from(s.generation) == token >> 32).then_some(s.import.as_ref()?)
    }

    fn get_mut(&mut self, token: u64) -> Option<&mut Import> {
        let i = (token as u32).checked_sub(1)? as usize;
        let s = self.slots.get_mut(i)?;
        if u64::from(s.generation) != token >> 32 {
            return None;
        }
        s.import.as_mut()
    }

    fn insert(&mut self, imp: Import) -> u64 {
        let i = match self.free.pop() {
            Some(i) => i as usize,
            None => {
                self.slots.push(Slot { generation: 0, import: None });
                self.slots.len() - 1
            }
        };
        let s = &mut self.slots[i];
        s.generation = s.generation.wrapping_add(1).max(1);
        s.import = Some(imp);
        (u64::from(s.generation) << 32) | (i as u64 + 1)
    }

    fn take(&mut self, token: u64) -> Option<Import> {
        let i = (token as u32).checked_sub(1)? as usize;
        let s = self.slots.get_mut(i)?;
        if u64::from(s.generation) != token >> 32 {
            return None;
        }
        let imp = s.import.take()?;
        self.free.push(i as u32);
        Some(imp)
    }

    /// Does another live import hold this GEM handle (the same dma-buf imported twice on one
    /// render file gives one handle)?
    fn shares_gem(&self, render_fd: i32, gem: u32) -> bool {
        self.slots.iter().filter_map(|s| s.import.as_ref()).any(|i| i.gpu.render_fd == render_fd && i.gem == gem)
    }

    /// Live handles (tests).
    pub(crate) fn len(&self) -> usize {
        self.slots.iter().filter(|s| s.import.is_some()).count()
    }
}

/// HsaMemoryMapFlags → amdgpu page flags (upstream: RO → READ, WO → WRITE, RW → both).
fn va_flags(f: HsaMemoryMapFlags) -> KmtResult<u32> {
    Ok(match f {
        HSA_MEMORY_ACCESS_NONE => 0,
        HSA_MEMORY_ACCESS_RO => GEM_VA_READABLE,
        HSA_MEMORY_ACCESS_WO => GEM_VA_WRITEABLE,
        HSA_MEMORY_ACCESS_RW => GEM_VA_READABLE | GEM_VA_WRITEABLE,
        _ => return Err(Status::ERROR),
    })
}

impl Memory {
    /// The GPU a dma-buf belongs to (GET_DMABUF_INFO), else the first GPU.
    fn dmabuf_gpu(&self, kfd: &dyn Kfd, fd: u32) -> Option<Gpu> {
        let mut info: kfd_ioctl_get_dmabuf_info_args = FromZeros::new_zeroed();
        info.dmabuf_fd = fd;
        // SAFETY: `metadata_ptr` is NULL with `metadata_size` 0, so the KFD writes no metadata;
        // nothing is handed to a GPU.
        let owner = unsafe { ioctl_typed(kfd, AMDKFD_IOC_GET_DMABUF_INFO, &mut info) }.ok().and_then(|()| self.gpu_by_id(info.gpu_id));
        owner.or_else(|| self.gpus.first().copied())
    }

    /// hsaKmtHandleImport of a dma-buf: (handle token, size).
    pub(crate) fn handle_import(&mut self, kfd: &dyn Kfd, dmabuf_fd: i64) -> KmtResult<(u64, u64)> {
        let fd = i32::try_from(dmabuf_fd).ok().filter(|&f| f >= 0).ok_or(Status::ERROR)?;
        let gpu = self.dmabuf_gpu(kfd, fd as u32).ok_or(Status::ERROR)?;
        let (gem, size) = kfd.drm_import_dmabuf(gpu.render_fd, fd).map_err(|_| Status::ERROR)?;
        Ok((self.handles.insert(Import { gpu, gem, size, cpu: None, vas: Vec::new() }), size))
    }

    /// hsaKmtHandleExport as a dma-buf fd.
    pub(crate) fn handle_export(&self, kfd: &dyn Kfd, token: u64) -> KmtResult<i32> {
        let imp = self.handles.get(token).ok_or(Status::INVALID_HANDLE)?;
        kfd.drm_export_dmabuf(imp.gpu.render_fd, imp.gem).map_err(|_| Status::INVALID_HANDLE)
    }

    /// hsaKmtMemoryVaMap / VaUnmap: `[offset, offset + size)` of the BO at GPU VA `addr` of
    /// the BO's GPU (the GEM handle lives on that GPU's render file, as libdrm's BO lives on its
    /// device). `node`, when given, must be that GPU's node.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn handle_va(
        &mut self,
        kfd: &dyn Kfd,
        token: u64,
        offset: u64,
        size: u64,
        addr: u64,
        flags: HsaMemoryMapFlags,
        node: Option<u32>,
        map: bool,
    ) -> KmtResult<()> {
        let node_gpu = match node {
            Some(n) => Some(self.gpu_of_node(n).ok_or(Status::ERROR)?.gpu_id),
            None => None,
        };
        let flags = if map { va_flags(flags)? } else { 0 };
        let imp = self.handles.get_mut(token).ok_or(Status::ERROR)?;
        if node_gpu.is_some_and(|g| g != imp.gpu.gpu_id) {
            return Err(Status::ERROR);
        }
        let op = GemVaOp { map, va: addr, offset, size, flags };
        kfd.drm_gem_va(imp.gpu.render_fd, imp.gem, &op).map_err(|_| Status::ERROR)?;
        if map {
            imp.vas.push((addr, offset, size));
        } else if let Some(i) = imp.vas.iter().position(|v| v.0 == addr) {
            imp.vas.swap_remove(i);
        }
        Ok(())
    }

    /// hsaKmtMemoryCpuMap: the BO mapped read-write for the CPU (once; later calls return the
    /// same address, as libdrm's amdgpu_bo_cpu_map).
    pub(crate) fn handle_cpu_map(&mut self, kfd: &dyn Kfd, token: u64) -> KmtResult<u64> {
        let imp = self.handles.get_mut(token).ok_or(Status::ERROR)?;
        if let Some(a) = imp.cpu {
            return Ok(a as u64);
        }
        let len = usize::try_from(imp.size).ok().filter(|&l| l > 0).ok_or(Status::ERROR)?;
        let off = kfd.drm_mmap_offset(imp.gpu.render_fd, imp.gem).map_err(|_| Status::ERROR)?;
        // SAFETY: not a fixed mapping, so nothing existing is replaced; the range is owned by
        // this import and unmapped only when the handle is freed.
        let a = unsafe { kfd.mmap_bo(imp.gpu.render_fd, None, len, PROT_READ | PROT_WRITE, off) }.map_err(|_| Status::ERROR)?;
        imp.cpu = Some(a);
        Ok(a as u64)
    }

    /// hsaKmtMemoryGetCpuAddr: the BO's mmap offset on its render node (upstream returns
    /// GEM_MMAP's offset under this name).
    pub(crate) fn handle_cpu_addr(&self, kfd: &dyn Kfd, token: u64) -> KmtResult<u64> {
        let imp = self.handles.get(token).ok_or(Status::ERROR)?;
        kfd.drm_mmap_offset(imp.gpu.render_fd, imp.gem).map_err(|_| Status::ERROR)
    }

    /// hsaKmtMemHandleFree(PreserveMetadata): CPU mapping, VA mappings, then the GEM handle
    /// (unless another import holds the same one).
    pub(crate) fn handle_free(&mut self, kfd: &dyn Kfd, token: u64) -> KmtResult<()> {
        let imp = self.handles.take(token).ok_or(Status::ERROR)?;
        Self::release_import(kfd, &self.handles, imp)
    }

    fn release_import(kfd: &dyn Kfd, others: &Handles, imp: Import) -> KmtResult<()> {
        let mut ok = true;
        if let Some(a) = imp.cpu {
            // SAFETY: the mapping was made by `handle_cpu_map` for this import and nothing
            // of ours uses it afterwards (the C caller was told it dies with the handle).
            ok &= unsafe { kfd.munmap(a, imp.size as usize) }.is_ok();
        }
        if others.shares_gem(imp.gpu.render_fd, imp.gem) {
            for &(va, offset, size) in &imp.vas {
                let op = GemVaOp { map: false, va, offset, size, flags: 0 };
                ok &= kfd.drm_gem_va(imp.gpu.render_fd, imp.gem, &op).is_ok();
            }
        } else {
            // Closing the handle drops its VA mappings too.
            ok &= kfd.drm_gem_close(imp.gpu.render_fd, imp.gem).is_ok();
        }
        ok.then_some(()).ok_or(Status::ERROR)
    }

    /// Free every handle (CloseKFD / ReleaseSystemProperties).
    pub(crate) fn teardown_handles(&mut self, kfd: &dyn Kfd) {
        let mut all = core::mem::take(&mut self.handles);
        while let Some(imp) = all.slots.iter_mut().find_map(|s| s.import.take()) {
            let _ = Self::release_import(kfd, &all, imp);
        }
    }

    /// Live handles of the handle API (tests).
    pub(crate) fn live_handles(&self) -> usize {
        self.handles.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn import(gem: u32) -> Import {
        Import { gpu: Gpu { gpu_id: 1, node_id: 1, render_fd: 3 }, gem, size: 4096, cpu: None, vas: Vec::new() }
    }

    #[test]
    fn stale_and_forged_tokens_are_not_found() {
        let mut h = Handles::default();
        let a = h.insert(import(1));
        assert_ne!(a, 0);
        assert_eq!(h.get(a).map(|i| i.gem), Some(1));
        assert!(h.take(a).is_some());
        // The slot is reused with a new generation: the old token names nothing.
        let b = h.insert(import(2));
        assert_eq!(b as u32, a as u32);
        assert_ne!(a, b);
        assert!(h.get(a).is_none() && h.take(a).is_none());
        assert_eq!(h.get(b).map(|i| i.gem), Some(2));
        for forged in [0u64, 1, 0x1234, u64::MAX, b + 1, b ^ (1 << 40)] {
            assert!(h.get(forged).is_none(), "{forged:#x}");
        }
        assert!(h.shares_gem(3, 2) && !h.shares_gem(3, 1) && !h.shares_gem(4, 2));
        assert_eq!(h.len(), 1);
    }
}
