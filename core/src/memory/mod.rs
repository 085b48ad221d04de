//! The memory API of one context (hsaKmtAllocMemory … QueryPointerInfo): FMM state — the
//! aperture layout, the SVM VA allocators and the BO table — driving the KFD memory ioctls.
//!
//! Upstream's rules are kept (notes/memory-fmm-spec): VRAM is allocated at an address of the
//! SVM aperture and CPU-mapped there (GPU VA == CPU VA); paged host memory becomes a userptr BO
//! over anonymous memory at its own address; GTT is pinned system memory owned by a GPU.

pub mod flags;
mod handles;

use crate::abi::hsakmt::*;
use crate::abi::kfd::*;
use crate::fmm::aperture::{reserve_placed, Aperture, ApertureLayout, FmmConfig, GpuDesc, SvmApertures, SystemDesc, VaSpace};
use crate::fmm::bo::{Bo, BoKind, BoTable};
use crate::fmm::va::{default_max_va_align_order, Request, VaAllocator};
use crate::port::{ioctl_plain, ioctl_typed, Kfd};
use crate::status::{Errno, KmtResult, Status};
use crate::topology::Topology;
use alloc::vec::Vec;
use flags::Domain;
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

/// A GPU's scratch backing range (upstream: one per GPU). Memory behind it is made at
/// MapMemoryToGPU time, one BO per mapped slice (any sub-range, in any order, as upstream's
/// scratch_physical aperture holds one object per map), and dropped when that slice is unmapped.
#[derive(Clone, Debug)]
struct Scratch {
    gpu: Gpu,
    base: u64,
    size: u64,
    /// (start, size, KFD handle) of each mapped slice.
    slices: Vec<(u64, u64, u64)>,
}

/// Scratch ranges are 64 KiB aligned (upstream SCRATCH_ALIGN).
const SCRATCH_ALIGN: u64 = 64 << 10;

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

    /// The MMIO remap page of every SVM GPU (the HDP flush registers), as upstream maps it at
    /// FMM init: one page of the fine-grain aperture, an MMIO_REMAP BO CPU-mapped from the KFD
    /// file at the offset the KFD returns, mapped to that GPU. A GPU whose KFD offers no page
    /// (no remap address) simply has none.
    fn map_mmio_pages(&mut self, kfd: &dyn Kfd) {
        let page = self.page();
        let gpus: Vec<u32> = self.layout.mmio_gpus().map(|g| g.gpu_id).collect();
        for gpu_id in gpus {
            let Some(gpu) = self.gpu_by_id(gpu_id) else { continue };
            let Ok(va) = self.reserve_svm(kfd, page, 0, true, None) else { continue };
            let ioc = crate::fmm::aperture::MMIO_ALLOC_FLAGS | flags::ioc::NO_SUBSTITUTE;
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

    fn map_doorbell_bo(&mut self, kfd: &dyn Kfd, gpu_id: u32, len: u64, mmap_offset: u64) -> Option<u64> {
        let gpu = self.gpu_by_id(gpu_id)?;
        let va = self.reserve_svm(kfd, len, 0, true, None).ok()?;
        let ioc = flags::ioc::DOORBELL | flags::ioc::WRITABLE | flags::ioc::COHERENT;
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

    /// hsaKmtAllocMemory with `Scratch`: a VA range for the GPU's scratch backing, told to the
    /// KFD with SET_SCRATCH_BACKING_VA; memory comes at map time. One range per GPU.
    fn alloc_scratch(&mut self, kfd: &dyn Kfd, gpu: Gpu, size: u64) -> KmtResult<u64> {
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

    fn scratch_index(&self, addr: u64) -> Option<usize> {
        self.scratch.iter().position(|s| addr >= s.base && addr - s.base < s.size)
    }

    /// Map a slice of a scratch range (upstream's _fmm_map_to_gpu_scratch): a VRAM BO over
    /// `[addr, addr + size)`, CPU-mapped PROT_NONE there and mapped to the range's GPU. Any
    /// slice inside the range, in any order; one that leaves the range is INVALID_PARAMETER
    /// (upstream's check), the BO allocation failing INVALID_HANDLE and the mappings failing
    /// ERROR, as upstream. A slice overlapping a mapped one is ERROR before anything changes
    /// (upstream finds that out when the KFD refuses the overlapping GPU mapping: ERROR too).
    /// Ours: size 0 maps the rest of the range.
    fn map_scratch(&mut self, kfd: &dyn Kfd, i: usize, addr: u64, size: u64) -> KmtResult<u64> {
        let (gpu, base, len) = (self.scratch[i].gpu, self.scratch[i].base, self.scratch[i].size);
        let size = if size == 0 { base + len - addr } else { size.div_ceil(self.page()) * self.page() };
        let Some(end) = addr.checked_add(size).filter(|&e| e <= base + len) else {
            return Err(Status::INVALID_PARAMETER);
        };
        if self.scratch[i].slices.iter().any(|&(s, l, _)| addr < s + l && s < end) {
            return Err(Status::ERROR);
        }
        let ioc = flags::ioc::VRAM | flags::ioc::WRITABLE | flags::ioc::NO_SUBSTITUTE;
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
    fn unmap_scratch(&mut self, kfd: &dyn Kfd, i: usize, addr: u64) -> KmtResult<()> {
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
    fn free_scratch(&mut self, kfd: &dyn Kfd, i: usize) -> KmtResult<()> {
        while let Some(&(addr, _, _)) = self.scratch[i].slices.first() {
            self.unmap_scratch(kfd, i, addr)?;
        }
        let sc = self.scratch.remove(i);
        self.release_svm(kfd, sc.base, sc.size);
        Ok(())
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

    fn alloc_device(&mut self, kfd: &dyn Kfd, gpu: Gpu, size: u64, align: u64, mflags: HsaMemFlags, fixed: Option<u64>) -> KmtResult<u64> {
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
    fn alloc_host(
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
    fn alloc_bo(&self, kfd: &dyn Kfd, gpu: Gpu, va: u64, size: u64, ioc: u32) -> KmtResult<(u64, u64)> {
        if ioc & flags::ioc::USERPTR != 0 {
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
    unsafe fn alloc_userptr_bo(&self, kfd: &dyn Kfd, gpu: Gpu, va: u64, cpu: u64, size: u64, ioc: u32) -> KmtResult<(u64, u64)> {
        // SAFETY: the caller's contract.
        unsafe { self.alloc_bo_raw(kfd, gpu, va, cpu, size, ioc | flags::ioc::USERPTR) }
    }

    /// # Safety
    /// As [`Memory::alloc_userptr_bo`] when `ioc` has USERPTR (`mmap_offset_in` is then the CPU
    /// address); otherwise the KFD ignores `mmap_offset_in`.
    unsafe fn alloc_bo_raw(&self, kfd: &dyn Kfd, gpu: Gpu, va: u64, mmap_offset_in: u64, size: u64, ioc: u32) -> KmtResult<(u64, u64)> {
        let mut a: kfd_ioctl_alloc_memory_of_gpu_args = FromZeros::new_zeroed();
        a.va_addr = va;
        a.size = size;
        a.gpu_id = gpu.gpu_id;
        a.flags = ioc;
        a.mmap_offset = mmap_offset_in;
        // SAFETY: `va` is GPU VA of our reservation (the KFD maps nothing of the CPU's there);
        // a userptr's CPU range is shareable by this function's contract.
        unsafe { ioctl_typed(kfd, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a) }.map_err(|e| errno_status(e, Status::ERROR))?;
        Ok((a.handle, a.mmap_offset))
    }

    fn free_bo_handle(&self, kfd: &dyn Kfd, handle: u64) -> Result<(), Errno> {
        ioctl_plain(kfd, &mut kfd_ioctl_free_memory_of_gpu_args { handle })
    }

    fn insert(&mut self, bo: Bo) -> KmtResult<u64> {
        let start = bo.start();
        self.bos.insert(bo).map_err(|_| Status::ERROR)?;
        Ok(start)
    }

    /// Free every KFD handle of a BO and give back its VA. A handle the KFD refuses to free
    /// (still mapped: EBUSY) leaves the BO alive.
    fn release_bo(&mut self, kfd: &dyn Kfd, bo: &Bo) -> KmtResult<()> {
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
        let Some(bo) = self.bos.get(addr).cloned() else {
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
        self.bos.remove(addr);
        let va_size = if bo.flags.bf_AQLQueueMemory() != 0 { bo.size() * 2 } else { bo.size() };
        if self.in_mem_handle(addr) {
            if let Some(a) = self.mem_handle.as_mut() {
                a.free(addr);
            }
        } else {
            self.release_svm(kfd, addr, va_size);
        }
        Ok(())
    }

    /// The GPUs a BO maps to by default (upstream's _fmm_map_to_gpu without a node list): its
    /// registered nodes; else, for a BO of a GPU node that is not a user pointer (VRAM, host
    /// memory allocated for a GPU), that GPU's usable_peer_id_array (itself and every GPU with
    /// an io-link to it); else every GPU in the KFD's order.
    fn default_targets(&self, bo: &Bo) -> Vec<u32> {
        if !bo.registered_nodes.is_empty() {
            return bo.registered_nodes.as_slice().iter().filter_map(|&n| self.gpu_of_node(n).map(|g| g.gpu_id)).collect();
        }
        match self.gpus.iter().position(|g| g.node_id == bo.node_id) {
            Some(i) if bo.kind != BoKind::Userptr => self.peers[i].clone(),
            _ => self.layout.kfd_order.clone(),
        }
    }

    /// MAP_MEMORY_TO_GPU or UNMAP_MEMORY_FROM_GPU (`req`; the same argument layout) of a BO.
    fn map_ioctl(&self, kfd: &dyn Kfd, req: u32, handle: u64, ids: &[u32]) -> Result<u32, (u32, Errno)> {
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
        let Some(bo) = self.resolve(addr).and_then(|s| self.bos.get(s)).cloned() else {
            return Err(if nodes.is_some() { Status::ERROR } else { Status::INVALID_PARAMETER });
        };
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
            None => self.default_targets(&bo),
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
                if let Some(b) = self.bos.get_mut(bo.start()) {
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
                if let Some(b) = self.bos.get_mut(bo.start()) {
                    for node in nodes_mapped {
                        b.mapped_nodes.insert(node);
                    }
                    b.mapping_count = 1;
                }
                // A user pointer's GPU VA differs from its CPU address: tell the caller.
                Ok(if bo.kind == BoKind::Userptr { bo.start() + (addr & (self.page() - 1)) } else { 0 })
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

    fn unmap_all(&self, kfd: &dyn Kfd, bo: &Bo) -> KmtResult<()> {
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
        let Some(bo) = self.resolve(addr).and_then(|s| self.bos.get(s)).cloned() else {
            return if self.svm_api { Ok(()) } else { Err(Status::ERROR) };
        };
        self.unmap_all(kfd, &bo)?;
        if let Some(b) = self.bos.get_mut(bo.start()) {
            b.mapped_nodes.clear();
            b.mapping_count = 0;
        }
        Ok(())
    }

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

    /// hsaKmtQueryPointerInfo: any address inside a BO, or inside a registered user range.
    pub(crate) fn pointer_info(&self, addr: u64) -> Option<HsaPointerInfo> {
        self.bos.find(addr).or_else(|| self.bos.find_userptr(addr)).map(|b| b.pointer_info(self.page()))
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

    /// The apertures' SVM heap (for GetNodeMemoryProperties).
    pub(crate) fn svm_heap(&self) -> Option<Aperture> {
        self.layout.svm.as_ref().map(SvmApertures::heap)
    }

    /// The BO table's invariants (for tests of the whole stack).
    pub(crate) fn check(&self) -> Result<(), &'static str> {
        self.bos.check_invariants()
    }
}
