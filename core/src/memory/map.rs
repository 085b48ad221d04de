//! MapMemoryToGPU / UnmapMemoryToGPU: which GPUs a BO is mapped on (by default its owner and
//! the GPUs io-linked to it, as upstream's usable peers), with the KFD's partial-success count.

use super::*;

impl Memory {
    /// The GPUs a BO maps to by default (upstream's _fmm_map_to_gpu without a node list): its
    /// registered nodes; else, for a BO of a GPU node that is not a user pointer (VRAM, host
    /// memory allocated for a GPU), that GPU's usable_peer_id_array (itself and every GPU with
    /// an io-link to it); else every GPU in the KFD's order.
    pub(super) fn default_targets(&self, bo: &Bo) -> Vec<u32> {
        if !bo.registered_nodes.is_empty() {
            return bo.registered_nodes.as_slice().iter().filter_map(|&n| self.gpu_of_node(n).map(|g| g.gpu_id)).collect();
        }
        match self.gpus.iter().position(|g| g.node_id == bo.node_id) {
            Some(i) if bo.kind != BoKind::Userptr => self.peers[i].clone(),
            _ => self.layout.kfd_order.clone(),
        }
    }

    /// MAP_MEMORY_TO_GPU or UNMAP_MEMORY_FROM_GPU (`req`; the same argument layout) of a BO.
    pub(super) fn map_ioctl(&self, kfd: &dyn Kfd, req: u32, handle: u64, ids: &[u32]) -> Result<u32, (u32, Errno)> {
        debug_assert!(req == AMDKFD_IOC_MAP_MEMORY_TO_GPU || req == AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU);
        let mut a: kfd_ioctl_map_memory_to_gpu_args = FromZeros::new_zeroed();
        a.handle = handle;
        a.device_ids_array_ptr = ids.as_ptr() as u64;
        a.n_devices = ids.len() as u32;
        // SAFETY: the device-id array is `ids`, borrowed for the call, which the KFD only
        // reads (`n_devices` words); the BO's memory was handed to the GPUs when it was
        // allocated or registered.
        match unsafe { ioctl_typed(kfd, req, &mut a) } {
            Ok(()) => Ok(a.n_success),
            Err(e) => Err((a.n_success, e)),
        }
    }

    /// hsaKmtMapMemoryToGPU(Nodes): map a BO to its default GPUs or to `nodes`.
    pub(crate) fn map(&mut self, kfd: &dyn Kfd, addr: u64, size: u64, nodes: Option<&[u32]>) -> KmtResult<u64> {
        if let Some(i) = self.scratch_index(addr) {
            return self.map_scratch(kfd, i, addr, size);
        }
        // Borrowed, not cloned (the BO's node and handle Vecs): everything below reads the
        // table until the mapped-node updates, which go through `start`.
        let Some(bo) = self.resolve(addr).and_then(|s| self.bos.get(s)) else {
            return Err(if nodes.is_some() { Status::ERROR } else { Status::INVALID_PARAMETER });
        };
        let (start, kind) = (bo.start(), bo.kind);
        if bo.kind == BoKind::Reserved || bo.primary_handle().is_none() || self.in_mem_handle(addr) {
            return Err(Status::INVALID_PARAMETER);
        }
        let targets: Vec<u32> = match nodes {
            Some(ns) => {
                let mut v = Vec::new();
                for &n in ns {
                    v.push(self.gpu_of_node(n).ok_or(Status::INVALID_NODE_UNIT)?.gpu_id);
                }
                v
            }
            None => self.default_targets(bo),
        };
        let handle = bo.primary_handle().ok_or(Status::INVALID_PARAMETER)?;
        // MapMemoryToGPUNodes: GPUs mapped now but not asked for are unmapped first.
        if nodes.is_some() {
            let stale: Vec<u32> = bo
                .mapped_nodes
                .as_slice()
                .iter()
                .filter_map(|&n| self.gpu_of_node(n).map(|g| g.gpu_id))
                .filter(|id| !targets.contains(id))
                .collect();
            if !stale.is_empty() {
                self.map_ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, &stale).map_err(|_| Status::ERROR)?;
                if let Some(b) = self.bos.get_mut(start) {
                    for id in &stale {
                        if let Some(g) = self.gpus.iter().find(|g| g.gpu_id == *id) {
                            b.mapped_nodes.remove(g.node_id);
                        }
                    }
                }
            }
        }
        if targets.is_empty() {
            return Err(Status::ERROR);
        }
        match self.map_ioctl(kfd, AMDKFD_IOC_MAP_MEMORY_TO_GPU, handle, &targets) {
            Ok(n) => {
                let nodes_mapped: Vec<u32> =
                    targets.iter().take(n as usize).filter_map(|&id| self.gpu_by_id(id).map(|g| g.node_id)).collect();
                if let Some(b) = self.bos.get_mut(start) {
                    for node in nodes_mapped {
                        b.mapped_nodes.insert(node);
                    }
                    b.mapping_count = 1;
                }
                // A user pointer's GPU VA differs from its CPU address: tell the caller.
                Ok(if kind == BoKind::Userptr { start + (addr & (self.page() - 1)) } else { 0 })
            }
            Err((n, _)) => {
                // Undo the GPUs that did map, as upstream does.
                if n > 0 {
                    let _ = self.map_ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, &targets[..n as usize]);
                }
                Err(Status::ERROR)
            }
        }
    }

    pub(super) fn unmap_all(&self, kfd: &dyn Kfd, bo: &Bo) -> KmtResult<()> {
        let ids: Vec<u32> = bo.mapped_nodes.as_slice().iter().filter_map(|&n| self.gpu_of_node(n).map(|g| g.gpu_id)).collect();
        if ids.is_empty() {
            return Ok(());
        }
        for &(_, h) in &bo.handles {
            if h != 0 {
                self.map_ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, h, &ids).map_err(|_| Status::ERROR)?;
            }
        }
        Ok(())
    }

    /// hsaKmtUnmapMemoryToGPU: an unknown or unmapped address is SUCCESS on SVM systems.
    pub(crate) fn unmap(&mut self, kfd: &dyn Kfd, addr: u64) -> KmtResult<()> {
        if let Some(i) = self.scratch_index(addr) {
            return self.unmap_scratch(kfd, i, addr);
        }
        let Some(bo) = self.resolve(addr).and_then(|s| self.bos.get(s)) else {
            return if self.svm_api { Ok(()) } else { Err(Status::ERROR) };
        };
        let start = bo.start();
        self.unmap_all(kfd, bo)?;
        if let Some(b) = self.bos.get_mut(start) {
            b.mapped_nodes.clear();
            b.mapping_count = 0;
        }
        Ok(())
    }
}
