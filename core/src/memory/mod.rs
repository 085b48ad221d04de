//! The memory API of one context (hsaKmtAllocMemory … QueryPointerInfo): FMM state — the
//! aperture layout, the SVM VA allocators and the BO table — driving the KFD memory ioctls.
//!
//! Upstream's rules are kept (notes/memory-fmm-spec): VRAM is allocated at an address of the
//! SVM aperture and CPU-mapped there (GPU VA == CPU VA); paged host memory becomes a userptr BO
//! over anonymous memory at its own address; GTT is pinned system memory owned by a GPU.

mod allocate;
mod dmabuf;
pub mod flags;
mod handles;
mod ipc;
mod map;
mod mmio;
mod register;
mod scratch;

use crate::abi::hsakmt::*;
use crate::abi::kfd::*;
use crate::fmm::aperture::{reserve_placed, Aperture, ApertureLayout, FmmConfig, GpuDesc, SvmApertures, SystemDesc, VaSpace};
use crate::fmm::bo::{Bo, BoKind, BoTable};
use crate::fmm::va::{default_max_va_align_order, Request, VaAllocator};
use crate::port::{ioctl_plain, ioctl_typed, Kfd};
use crate::status::{Errno, KmtResult, Status};
use crate::topology::Topology;
use alloc::vec::Vec;
use flags::{AllocFlags, Domain};
use scratch::Scratch;
use zerocopy::FromZeros;

/// PROT_* bits for the port's mmap calls.
const PROT_READ: u32 = 1;
const PROT_WRITE: u32 = 2;
const PROT_EXEC: u32 = 4;

/// Environment settings of the memory manager (read by the C shim).
#[derive(Clone, Copy, Debug, Default)]
pub struct MemoryConfig {
    pub fmm: FmmConfig,
    /// `HSA_ZFB`: every GPU allocation takes the host path.
    pub zfb: bool,
}

/// CPU address-space operations through the port (reservations are PROT_NONE, NORESERVE).
struct PortVa<'a>(&'a dyn Kfd);

impl VaSpace for PortVa<'_> {
    fn reserve(&mut self, hint: u64, len: u64) -> Option<u64> {
        // SAFETY: not fixed, so no existing mapping can be replaced.
        unsafe { self.0.map_anonymous(None, hint as usize, len as usize, 0) }.ok().map(|p| p as u64)
    }

    fn reserve_fixed(&mut self, addr: u64, len: u64) -> bool {
        // MAP_FIXED_NOREPLACE by hand: ask for the address as a hint and keep it only if the
        // kernel placed it there.
        match self.reserve(addr, len) {
            Some(p) if p == addr => true,
            Some(p) => {
                self.release(p, len);
                false
            }
            None => false,
        }
    }

    fn release(&mut self, addr: u64, len: u64) {
        // SAFETY: only ranges this manager reserved and no longer uses are released.
        let _ = unsafe { self.0.release_va(addr as usize, len as usize) };
    }
}

/// One GPU as the memory manager sees it.
#[derive(Clone, Copy, Debug)]
struct Gpu {
    gpu_id: u32,
    node_id: u32,
    render_fd: i32,
}

enum SvmVa {
    /// No GPU uses SVM (CPU-only system).
    None,
    /// The kernel places each allocation inside `aperture`.
    Unreserved,
    /// A reserved range: (fine-grain, coarse-grain) allocators.
    Reserved { coherent: alloc::boxed::Box<VaAllocator>, default: alloc::boxed::Box<VaAllocator> },
}

pub(crate) struct Memory {
    layout: ApertureLayout,
    scratch: Vec<Scratch>,
    /// Per GPU, the MMIO remap (HDP flush) page: (gpu_id, va, handle).
    mmio: Vec<(u32, u64, u64)>,
    /// Per GPU, the queue doorbell page: (gpu_id, cpu address, size, BO handle, 0 when the
    /// page is only CPU-mapped).
    doorbells: Vec<(u32, u64, u64, u64)>,
    svm: SvmVa,
    mem_handle: Option<VaAllocator>,
    bos: BoTable,
    gpus: Vec<Gpu>,
    /// Per GPU (as `gpus`): upstream's usable_peer_id_array, the GPUs a BO of that GPU maps to
    /// by default.
    peers: Vec<Vec<u32>>,
    cfg: MemoryConfig,
    max_va_align_order: u32,
    svm_api: bool,
    /// The handle API's imports (`handles.rs`).
    handles: handles::Handles,
}

fn errno_status(e: Errno, otherwise: Status) -> Status {
    match e.0 {
        Errno::ENOMEM => Status::NO_MEMORY,
        _ => otherwise,
    }
}

/// upstream's usable_peer_id_array of each GPU (fmm init): the GPU itself, then, going through
/// the GPUs in the KFD's order, each one that has an io-link (of any type, as the topology lists
/// them: io, p2p or indirect) to it. Upstream appends one entry per such link; a GPU appears
/// here once (mapping a BO twice on one GPU changes nothing).
fn usable_peers(topo: &Topology, gpus: &[Gpu], kfd_order: &[u32]) -> Vec<Vec<u32>> {
    gpus.iter()
        .map(|to| {
            let mut v = alloc::vec![to.gpu_id];
            for from in kfd_order.iter().filter_map(|&id| gpus.iter().find(|g| g.gpu_id == id)) {
                let linked = topo.nodes.get(from.node_id as usize).is_some_and(|n| n.io_links.iter().any(|l| l.NodeTo == to.node_id));
                if linked && !v.contains(&from.gpu_id) {
                    v.push(from.gpu_id);
                }
            }
            v
        })
        .collect()
}

fn packed_gfx(p: &HsaNodeProperties) -> u32 {
    let e = p.EngineId;
    (e.bf_Major() << 16) | (e.bf_Minor() << 8) | e.bf_Stepping()
}

impl Memory {
    /// Upstream's `hsakmt_is_svm_api_supported`: every GPU node has `SVMAPISupported` (which
    /// `HSA_USE_SVM=0` clears).
    pub(crate) fn svm_api(&self) -> bool {
        self.svm_api
    }

    /// FMM init (upstream: first AcquireSystemProperties): apertures, SVM, memory policy.
    pub(crate) fn init(
        kfd: &dyn Kfd,
        topo: &Topology,
        raw: &[kfd_process_device_apertures],
        render_fds: &[(u32, i32)],
        cfg: MemoryConfig,
    ) -> KmtResult<Memory> {
        let descs: Vec<GpuDesc> = topo
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.gpu_id != 0)
            .map(|(i, n)| GpuDesc {
                gpu_id: n.gpu_id,
                node_id: i as u32,
                device_id: u32::from(n.props.DeviceId),
                gfx_version: packed_gfx(&n.props),
            })
            .collect();
        let gpus: Vec<Gpu> = topo
            .nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.gpu_id != 0)
            .map(|(i, n)| {
                let minor = u32::try_from(n.props.DrmRenderMinor).unwrap_or(0);
                let render_fd = render_fds.iter().find(|(m, _)| *m == minor).map_or(-1, |&(_, fd)| fd);
                Gpu { gpu_id: n.gpu_id, node_id: i as u32, render_fd }
            })
            .collect();
        let sys = SystemDesc { gpus: &descs, is_dgpu: topo.is_dgpu() };
        let mut layout = ApertureLayout::compute(&sys, raw, &cfg.fmm).map_err(|_| Status::ERROR)?;
        let max_va_align_order =
            cfg.fmm.max_va_align_order.unwrap_or_else(|| default_max_va_align_order(topo.nodes.iter().map(|n| packed_gfx(&n.props))));
        let mut svm = SvmVa::None;
        if layout.svm_plan.is_some() {
            layout.init_svm(&mut PortVa(kfd)).map_err(|_| Status::NO_MEMORY)?;
            svm = match layout.svm.as_ref().and_then(|s| s.allocators(cfg.fmm.page_size)) {
                Some((coherent, default)) => {
                    SvmVa::Reserved { coherent: alloc::boxed::Box::new(coherent), default: alloc::boxed::Box::new(default) }
                }
                None => SvmVa::Unreserved,
            };
        }
        let mem_handle = layout
            .mem_handle
            .is_valid()
            .then(|| VaAllocator::new(layout.mem_handle.base, layout.mem_handle.limit, cfg.fmm.page_size).ok())
            .flatten();
        let svm_api = topo.nodes.iter().filter(|n| n.gpu_id != 0).all(|n| n.props.Capability.bf_SVMAPISupported() != 0);
        let peers = usable_peers(topo, &gpus, &layout.kfd_order);
        let mut m = Memory {
            layout,
            scratch: Vec::new(),
            mmio: Vec::new(),
            doorbells: Vec::new(),
            svm,
            mem_handle,
            bos: BoTable::default(),
            gpus,
            peers,
            cfg,
            max_va_align_order,
            svm_api,
            handles: handles::Handles::default(),
        };
        if let Err(s) = m.set_default_policies(kfd) {
            m.teardown(kfd);
            return Err(s);
        }
        m.map_mmio_pages(kfd);
        Ok(m)
    }

    /// SET_MEMORY_POLICY on every SVM GPU: the fine-grain aperture is the coherent "alternate".
    fn set_default_policies(&self, kfd: &dyn Kfd) -> KmtResult<()> {
        let Some(p) = self.layout.memory_policy(self.cfg.fmm.disable_cache, self.cfg.fmm.high_precision_mode) else { return Ok(()) };
        for g in self.layout.gpus.iter().filter(|g| g.uses_svm) {
            let mut a: kfd_ioctl_set_memory_policy_args = FromZeros::new_zeroed();
            a.alternate_aperture_base = p.alternate_aperture_base;
            a.alternate_aperture_size = p.alternate_aperture_size;
            a.gpu_id = g.gpu_id;
            a.default_policy = p.default_policy;
            a.alternate_policy = p.alternate_policy;
            a.misc_process_flag = p.misc_process_flag;
            ioctl_plain(kfd, &mut a).map_err(|_| Status::ERROR)?;
        }
        Ok(())
    }

    /// Release every BO, mapping and reservation (CloseKFD / Release / drop).
    pub(crate) fn teardown(&mut self, kfd: &dyn Kfd) {
        self.teardown_handles(kfd);
        while !self.scratch.is_empty() {
            if self.free_scratch(kfd, 0).is_err() {
                self.scratch.remove(0);
            }
        }
        for (gpu_id, va, len, handle) in core::mem::take(&mut self.doorbells) {
            if handle == 0 {
                // SAFETY: the CPU-only doorbell mapping this manager made; nothing uses it now.
                let _ = unsafe { kfd.munmap(va as usize, len as usize) };
                continue;
            }
            let _ = self.map_ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, &[gpu_id]);
            let _ = self.free_bo_handle(kfd, handle);
            self.release_svm(kfd, va, len);
        }
        for (gpu_id, va, handle) in core::mem::take(&mut self.mmio) {
            let _ = self.map_ioctl(kfd, AMDKFD_IOC_UNMAP_MEMORY_FROM_GPU, handle, &[gpu_id]);
            let _ = self.free_bo_handle(kfd, handle);
            self.release_svm(kfd, va, self.page());
        }
        let bos: Vec<Bo> = self.bos.drain().collect();
        for bo in bos {
            let _ = self.release_bo(kfd, &bo);
        }
        if let Some(r) = self.layout.svm.as_ref().and_then(SvmApertures::reservation) {
            PortVa(kfd).release(r.base, r.size());
        }
        self.layout.svm = None;
        self.svm = SvmVa::None;
    }

    pub(crate) fn live_bos(&self) -> usize {
        self.bos.len()
    }

    /// The KFD handle of the BO that starts at `addr` (the event page is given to the KFD by
    /// handle).
    pub(crate) fn kfd_handle(&self, addr: u64) -> Option<u64> {
        self.bos.get(addr)?.primary_handle()
    }

    fn page(&self) -> u64 {
        self.cfg.fmm.page_size
    }

    fn gpu_of_node(&self, node: u32) -> Option<Gpu> {
        self.gpus.iter().copied().find(|g| g.node_id == node)
    }

    fn gpu_by_id(&self, gpu_id: u32) -> Option<Gpu> {
        self.gpus.iter().copied().find(|g| g.gpu_id == gpu_id)
    }

    /// Reserve VA for `size` bytes in the coarse (default) or fine-grain (coherent) SVM aperture.
    fn reserve_svm(&mut self, kfd: &dyn Kfd, size: u64, align: u64, coherent: bool, fixed: Option<u64>) -> KmtResult<u64> {
        let page = self.page();
        let order = self.max_va_align_order;
        let svm = self.layout.svm.ok_or(Status::NO_MEMORY)?;
        let req: Request = svm.request(size, align, page, order);
        match (&mut self.svm, fixed) {
            (SvmVa::Reserved { coherent: c, default: d }, None) => {
                let a = if coherent { c } else { d };
                a.alloc_with(req).map_err(|_| Status::NO_MEMORY)
            }
            (SvmVa::Reserved { coherent: c, default: d }, Some(addr)) => {
                let a = if c.contains(addr) { c } else { d };
                a.alloc_at_with(addr, req).map_err(|_| Status::NO_MEMORY)
            }
            (SvmVa::Unreserved, None) => {
                let ap = if coherent { svm.coherent_aperture() } else { svm.default_aperture() };
                reserve_placed(&mut PortVa(kfd), ap, req, page).ok_or(Status::NO_MEMORY)
            }
            (SvmVa::Unreserved, Some(addr)) => {
                if PortVa(kfd).reserve_fixed(addr, size) {
                    Ok(addr)
                } else {
                    Err(Status::NO_MEMORY)
                }
            }
            (SvmVa::None, _) => Err(Status::NO_MEMORY),
        }
    }

    /// Give a VA range back: to its allocator (and PROT_NONE again) or to the kernel.
    fn release_svm(&mut self, kfd: &dyn Kfd, addr: u64, size: u64) {
        match &mut self.svm {
            SvmVa::Reserved { coherent, default } => {
                let a = if coherent.contains(addr) { coherent } else { default };
                if a.free(addr).is_some() {
                    // Keep the range reserved: PROT_NONE over whatever was mapped there.
                    // SAFETY: the range belongs to this manager's reservation and no BO uses it.
                    let _ = unsafe { kfd.map_anonymous(Some(addr as usize), 0, size as usize, 0) };
                }
            }
            SvmVa::Unreserved => PortVa(kfd).release(addr, size),
            SvmVa::None => {}
        }
    }

    /// The BO an API address names: a BO's start (GPU VA), or the exact CPU address a user
    /// pointer was registered with (its GPU VA differs).
    fn resolve(&self, addr: u64) -> Option<u64> {
        self.bos
            .get(addr)
            .map(|b| b.start())
            .or_else(|| self.bos.find_userptr(addr).filter(|b| b.userptr().is_some_and(|(a, _)| a == addr)).map(|b| b.start()))
    }

    fn in_mem_handle(&self, addr: u64) -> bool {
        self.layout.mem_handle.contains(addr)
    }

    fn insert(&mut self, bo: Bo) -> KmtResult<u64> {
        let start = bo.start();
        self.bos.insert(bo).map_err(|_| Status::ERROR)?;
        Ok(start)
    }

    /// hsaKmtQueryPointerInfo: any address inside a BO, or inside a registered user range.
    pub(crate) fn pointer_info(&self, addr: u64) -> Option<HsaPointerInfo> {
        self.bos.find(addr).or_else(|| self.bos.find_userptr(addr)).map(|b| b.pointer_info(self.page()))
    }

    /// The BO holding all of `[addr, addr + size)`: (its primary KFD handle, the offset of
    /// `addr` inside it), as upstream's `hsakmt_fmm_get_handle` answers for AisReadWriteFile.
    /// A user pointer's offset counts from its first page (where the BO's GPU range starts).
    pub(crate) fn bo_range(&self, addr: u64, size: u64) -> Option<(u64, u64)> {
        let bo = self.bos.find(addr)?;
        let base = match (bo.kind, bo.userptr()) {
            (BoKind::Userptr, Some((cpu, _))) => cpu & !(self.page() - 1),
            _ => bo.start(),
        };
        let off = addr.checked_sub(base)?;
        if off.checked_add(size)? > bo.size() {
            return None;
        }
        Some((bo.primary_handle()?, off))
    }

    pub(crate) fn set_user_data(&mut self, addr: u64, data: u64) -> KmtResult<()> {
        let start = self
            .bos
            .get(addr)
            .map(|b| b.start())
            .or_else(|| self.bos.find_userptr(addr).filter(|b| b.cpu_address() == addr).map(|b| b.start()));
        let b = start.and_then(|s| self.bos.get_mut(s)).ok_or(Status::ERROR)?;
        b.user_data = data;
        Ok(())
    }

    /// The apertures' SVM heap (for GetNodeMemoryProperties).
    pub(crate) fn svm_heap(&self) -> Option<Aperture> {
        self.layout.svm.as_ref().map(SvmApertures::heap)
    }

    /// The BO table's invariants (for tests of the whole stack).
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        self.bos.check_invariants()
    }
}
