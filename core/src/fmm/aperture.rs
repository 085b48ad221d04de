//! Aperture layout: each GPU's LDS / scratch / GPUVM apertures as the KFD reports them, the SVM
//! aperture plan in CPU VA, the memory-handle aperture and the FMM-init settings. Pure computation;
//! CPU VA is reserved and released by the caller's [`VaSpace`] (the `Kfd` port in practice).
//!
//! How upstream lays out GPU-visible memory (and what this module reproduces):
//! * LDS and scratch are per-GPU windows outside the CPU's address space (gfx9+: 4 GiB at
//!   `1 << 48` and `2 << 48`). They are reported as heaps and never allocated from.
//! * A GPU whose GPUVM limit is canonical (below `1 << 47`, every dGPU and gfx9+ part) shares
//!   the CPU's address space: a BO lives at the same address for CPU and GPU. All such GPUs
//!   share one **SVM aperture**, the intersection of their GPUVM ranges, trimmed to 2 MiB.
//!   - *Unreserved* (the normal case: GPUs reach all 47 bits, `HSA_RESERVE_SVM` off): nothing is
//!     reserved up front; each allocation takes a fresh PROT_NONE mapping wherever the kernel
//!     puts it, padded for alignment and guard pages ([`reserve_placed`]). Coarse- and
//!     fine-grain memory share the aperture (MTYPE is chosen per BO, not per aperture).
//!   - *Reserved* (`HSA_RESERVE_SVM`, or GPUs with less VA): one CPU VA range of at most 1 TiB is
//!     reserved at init ([`SvmPlan::init`]) and managed by [`VaAllocator`]s. Its first quarter is
//!     the coherent (fine-grain) aperture, the rest the default (coarse-grain) one; the KFD's
//!     memory policy makes the coherent part's MTYPE uncached.
//! * A GPU with a non-canonical GPUVM range (old IOMMUv2 APUs) gets its own GPUVM aperture.
//! * Allocations without a GPU address (`NoAddress`) take handles from a **memory-handle
//!   aperture**: a 2^47-byte window of non-canonical space clear of every GPU aperture.
//! * Each GPU that needs SVM gets one **MMIO remap page** (HDP flush) in the coherent aperture.

use super::va::{grow_alignment, reserved_request, Request, VaAllocator};
use super::{align_up, CANONICAL_LIMIT, GPU_HUGE_PAGE_SIZE};
use crate::abi::hsakmt::HsaMemFlags;
use crate::abi::kfd::{
    kfd_process_device_apertures, KFD_IOC_ALLOC_MEM_FLAGS_COHERENT, KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP, KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE,
    KFD_IOC_CACHE_POLICY_COHERENT, KFD_IOC_CACHE_POLICY_NONCOHERENT,
};
use crate::status::Status;
use alloc::vec::Vec;
use zerocopy::FromZeros;

/// A reserved SVM range is at most 40 bits (what gfx8 can address) ...
pub const SVM_RESERVATION_LIMIT: u64 = (1 << 40) - 1;
/// ... and at least 4 GiB, or SVM initialisation fails.
pub const SVM_MIN_VM_SIZE: u64 = 4 << 30;
/// The coherent aperture's base and size are rounded up to 64 KiB.
const COHERENT_ALIGN: u64 = 0x1_0000;
/// Size of a memory-handle window and the step between candidate windows.
const MEM_HANDLE_WINDOW: u64 = 1 << 47;
/// Candidate memory-handle windows start below this (upstream `END_NON_CANONICAL_ADDR - 1`).
const MEM_HANDLE_SEARCH_END: u64 = !0u64 - (1 << 47) - 1;

/// An inclusive address range `[base, limit]`, as the KFD reports apertures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Aperture {
    pub base: u64,
    pub limit: u64,
}

impl Aperture {
    /// No aperture (upstream's NULL/NULL).
    pub const NONE: Aperture = Aperture { base: 0, limit: 0 };

    pub const fn new(base: u64, limit: u64) -> Self {
        Aperture { base, limit }
    }

    /// Upstream's test: both ends non-zero and base below limit. An aperture never starts at 0
    /// (a null pointer must stay invalid), so zeroes mean "absent".
    pub const fn is_valid(&self) -> bool {
        self.base != 0 && self.limit != 0 && self.base < self.limit
    }

    /// Whether `addr` is inside a valid aperture.
    pub const fn contains(&self, addr: u64) -> bool {
        self.is_valid() && self.base <= addr && addr <= self.limit
    }

    /// Bytes covered (0 when invalid). Cannot overflow: a valid base is at least 1.
    pub const fn size(&self) -> u64 {
        if self.is_valid() {
            self.limit - self.base + 1
        } else {
            0
        }
    }

    /// Whether two inclusive ranges share a byte (validity not considered).
    pub const fn overlaps(&self, other: &Aperture) -> bool {
        self.base <= other.limit && other.base <= self.limit
    }
}

/// The settings upstream reads from the environment at FMM init (first
/// AcquireSystemProperties). Core reads no environment: the caller fills this, e.g. with
/// [`FmmConfig::from_env`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FmmConfig {
    /// The CPU page size (`sysconf(_SC_PAGESIZE)`).
    pub page_size: u64,
    /// `HSA_DISABLE_CACHE`: all memory coherent (GPU caching off).
    pub disable_cache: bool,
    /// `HSA_USERPTR_FOR_PAGED_MEM` (default on). Upstream forces it off in model mode; that is
    /// the caller's decision.
    pub userptr_for_paged_mem: bool,
    /// `HSA_CHECK_USERPTR`: touch user pages when they are registered.
    pub check_userptr: bool,
    /// `HSA_RESERVE_SVM`: reserve the SVM range up front even when unreserved mode would do.
    pub reserve_svm: bool,
    /// `HSA_SVM_GUARD_PAGES` (default 1): guard pages around each SVM and memory-handle allocation.
    pub guard_pages: u32,
    /// `HSA_HIGH_PRECISION_MODE` (gfx950 MFMA), passed with the memory policy.
    pub high_precision_mode: bool,
    /// `HSA_MAX_VA_ALIGN`: the order of the largest alignment given to big buffers in unreserved
    /// mode (`page_size << order`). `None`: [`default_max_va_align_order`](super::va::default_max_va_align_order).
    pub max_va_align_order: Option<u32>,
}

impl Default for FmmConfig {
    fn default() -> Self {
        FmmConfig {
            page_size: 4096,
            disable_cache: false,
            userptr_for_paged_mem: true,
            check_userptr: false,
            reserve_svm: false,
            guard_pages: 1,
            high_precision_mode: false,
            max_va_align_order: None,
        }
    }
}

impl FmmConfig {
    /// Upstream's parsing of the FMM variables; `get` returns a variable's value if set.
    /// Flags are on when set to anything but exactly `"0"` (`HSA_USERPTR_FOR_PAGED_MEM` is also on
    /// when unset); numbers are read like `sscanf("%u")`, and an unreadable one is the default.
    pub fn from_env<'a>(page_size: u64, get: impl Fn(&str) -> Option<&'a str>) -> Self {
        let flag = |name: &str| get(name).is_some_and(|v| v != "0");
        FmmConfig {
            page_size,
            disable_cache: flag("HSA_DISABLE_CACHE"),
            userptr_for_paged_mem: get("HSA_USERPTR_FOR_PAGED_MEM").is_none_or(|v| v != "0"),
            check_userptr: flag("HSA_CHECK_USERPTR"),
            reserve_svm: flag("HSA_RESERVE_SVM"),
            guard_pages: get("HSA_SVM_GUARD_PAGES").and_then(scan_u32).unwrap_or(1),
            high_precision_mode: flag("HSA_HIGH_PRECISION_MODE"),
            max_va_align_order: get("HSA_MAX_VA_ALIGN").and_then(scan_u32),
        }
    }

    /// The `HSA_MAX_VA_ALIGN` order in force for a system whose nodes (CPU nodes included,
    /// as gfx version 0) have these full gfx versions.
    pub fn va_align_order(&self, node_gfx_versions: impl IntoIterator<Item = u32>) -> u32 {
        self.max_va_align_order.unwrap_or_else(|| super::va::default_max_va_align_order(node_gfx_versions))
    }
}

/// `sscanf(s, "%u", &v)` as glibc does it: leading white space, an optional sign, decimal
/// digits; a negative number wraps, an out-of-range one saturates, and the result is
/// truncated to 32 bits. `None` when no digit follows.
pub fn scan_u32(s: &str) -> Option<u32> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let digits = t.bytes().take_while(u8::is_ascii_digit);
    let mut v: u64 = 0;
    let mut any = false;
    let mut overflow = false;
    for d in digits {
        any = true;
        match v.checked_mul(10).and_then(|x| x.checked_add(u64::from(d - b'0'))) {
            Some(x) => v = x,
            None => overflow = true,
        }
    }
    if !any {
        return None;
    }
    // strtoul: overflow gives ULONG_MAX (sign ignored); otherwise a '-' negates modulo 2^64.
    let v = if overflow {
        u64::MAX
    } else if neg {
        v.wrapping_neg()
    } else {
        v
    };
    Some(v as u32)
}

/// What FMM init needs to know about one GPU node (from the topology snapshot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuDesc {
    pub gpu_id: u32,
    pub node_id: u32,
    /// PCI device id (a few old ASICs need 32 KiB VA alignment).
    pub device_id: u32,
    /// Full gfx version, `major << 16 | minor << 8 | stepping` (gfx90a = 0x09000a).
    pub gfx_version: u32,
}

/// The system around the GPUs.
#[derive(Clone, Copy, Debug)]
pub struct SystemDesc<'a> {
    /// Every GPU node, in topology order.
    pub gpus: &'a [GpuDesc],
    /// Upstream's `is_dgpu`: some node has compute cores and no CPU cores (any discrete GPU).
    pub is_dgpu: bool,
}

/// One GPU's apertures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuApertures {
    pub gpu_id: u32,
    pub node_id: u32,
    pub device_id: u32,
    pub gfx_version: u32,
    /// The KFD reported this GPU (GET_PROCESS_APERTURES_NEW can omit GPUs the process cannot use;
    /// their apertures stay absent, as upstream).
    pub reported: bool,
    pub lds: Aperture,
    pub scratch: Aperture,
    /// A per-GPU GPUVM aperture (non-canonical GPUVM, old APUs); `NONE` when the GPU uses SVM.
    pub gpuvm: Aperture,
    /// The GPU's GPUVM is canonical: its memory lives in the shared SVM aperture.
    pub uses_svm: bool,
    /// Upstream `hsakmt_topology_is_svm_needed`: any dGPU system, or gfx9 and later. Such a GPU
    /// allocates VRAM in the SVM aperture and gets an MMIO remap page.
    pub svm_needed: bool,
    /// VA alignment this GPU needs (the page size; 32 KiB on Tonga and Carrizo).
    pub vm_align: u64,
    /// The MMIO remap page once the caller has allocated it ([`ApertureLayout::set_mmio`]).
    pub mmio: Aperture,
}

impl GpuApertures {
    /// An allocator for the per-GPU GPUVM aperture, with its first `vm_align` bytes taken so
    /// that no BO sits at the aperture base (upstream: after subtracting the base a valid
    /// pointer must not become NULL). `None` when the GPU has no such aperture.
    pub fn gpuvm_allocator(&self, page_size: u64) -> Option<VaAllocator> {
        if !self.gpuvm.is_valid() {
            return None;
        }
        let mut a = VaAllocator::new(self.gpuvm.base, self.gpuvm.limit, page_size).ok()?;
        a.alloc_at(self.gpuvm.base, self.vm_align.max(page_size), 0).ok()?;
        Some(a)
    }
}

/// The VA alignment a GPU needs: 32 KiB (`TONGA_PAGE_SIZE`) for Tonga and Carrizo, else a page.
pub fn vm_alignment(device_id: u32, page_size: u64) -> u64 {
    const TONGA_PAGE_SIZE: u64 = 0x8000;
    let big = matches!(device_id, 0x6920..=0x6939 | 0x9870..=0x9877);
    if big {
        TONGA_PAGE_SIZE.max(page_size)
    } else {
        page_size
    }
}

/// Why the layout could not be computed or the SVM aperture set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApertureError {
    /// The page size is not a power of two.
    BadPageSize,
    /// The KFD reported one GPU twice.
    DuplicateGpu(u32),
    /// The GPUs' common GPUVM range is empty once trimmed (upstream "No SVM range compatible
    /// with all GPU and software constraints").
    NoSvmRange,
    /// No usable CPU VA range could be reserved for SVM.
    SvmReservationFailed,
}

/// The layout derived from the topology, the KFD's apertures and the settings.
#[derive(Clone, Debug)]
pub struct ApertureLayout {
    /// Every GPU, in topology order.
    pub gpus: Vec<GpuApertures>,
    /// GPU ids in the KFD's order (upstream's `all_gpu_id_array`, the default map targets).
    pub kfd_order: Vec<u32>,
    /// How to set up SVM; `None` when no GPU has a canonical GPUVM.
    pub svm_plan: Option<SvmPlan>,
    /// The SVM apertures once [`ApertureLayout::init_svm`] succeeded.
    pub svm: Option<SvmApertures>,
    /// Where handles for address-less allocations come from; `NONE` when no window is free.
    pub mem_handle: Aperture,
    pub guard_pages: u32,
    pub page_size: u64,
}

impl ApertureLayout {
    /// Compute the layout. `kfd` is what GET_PROCESS_APERTURES_NEW returned (entries for
    /// unknown GPU ids are skipped, as upstream).
    pub fn compute(sys: &SystemDesc<'_>, kfd: &[kfd_process_device_apertures], cfg: &FmmConfig) -> Result<Self, ApertureError> {
        let page = cfg.page_size;
        if !page.is_power_of_two() {
            return Err(ApertureError::BadPageSize);
        }
        let mut gpus: Vec<GpuApertures> = sys
            .gpus
            .iter()
            .map(|g| GpuApertures {
                gpu_id: g.gpu_id,
                node_id: g.node_id,
                device_id: g.device_id,
                gfx_version: g.gfx_version,
                reported: false,
                lds: Aperture::NONE,
                scratch: Aperture::NONE,
                gpuvm: Aperture::NONE,
                uses_svm: false,
                svm_needed: sys.is_dgpu || g.gfx_version >= 0x09_00_00,
                vm_align: vm_alignment(g.device_id, page),
                mmio: Aperture::NONE,
            })
            .collect();
        let mut kfd_order = Vec::new();
        // The SVM aperture is what every canonical GPU can reach: the highest base and lowest limit.
        let (mut svm_base, mut svm_limit, mut svm_align) = (0u64, 0u64, 0u64);
        for e in kfd {
            let Some(g) = gpus.iter_mut().find(|g| g.gpu_id == e.gpu_id && g.gpu_id != 0) else { continue };
            if g.reported {
                return Err(ApertureError::DuplicateGpu(e.gpu_id));
            }
            g.reported = true;
            kfd_order.push(e.gpu_id);
            g.lds = Aperture::new(e.lds_base, e.lds_limit);
            g.scratch = Aperture::new(e.scratch_base, e.scratch_limit);
            if e.gpuvm_limit < CANONICAL_LIMIT {
                g.uses_svm = true;
                svm_base = svm_base.max(e.gpuvm_base);
                if svm_limit == 0 || e.gpuvm_limit < svm_limit {
                    svm_limit = e.gpuvm_limit;
                }
                svm_align = svm_align.max(g.vm_align);
            } else {
                g.gpuvm = Aperture::new(e.gpuvm_base, e.gpuvm_limit);
            }
        }
        let svm_plan = if svm_limit != 0 { Some(SvmPlan::new(svm_base, svm_limit, svm_align, cfg)?) } else { None };
        let mem_handle = mem_handle_window(&gpus);
        Ok(ApertureLayout { gpus, kfd_order, svm_plan, svm: None, mem_handle, guard_pages: cfg.guard_pages, page_size: page })
    }

    /// The GPU with this id.
    pub fn gpu(&self, gpu_id: u32) -> Option<&GpuApertures> {
        self.gpus.iter().find(|g| g.gpu_id == gpu_id && gpu_id != 0)
    }

    /// Set up the SVM apertures per the plan (reserving CPU VA through `va`); a no-op without
    /// a plan or when already done. Upstream keeps an SVM reservation for the life of the
    /// process (across CloseKFD and into forked children); a caller holding one from an earlier
    /// open passes it in with [`ApertureLayout::adopt_svm`] instead.
    pub fn init_svm(&mut self, va: &mut impl VaSpace) -> Result<(), ApertureError> {
        if self.svm.is_some() {
            return Ok(());
        }
        if let Some(plan) = self.svm_plan {
            self.svm = Some(plan.init(va, self.page_size)?);
        }
        Ok(())
    }

    /// Use SVM apertures set up earlier.
    pub fn adopt_svm(&mut self, svm: SvmApertures) {
        self.svm = Some(svm);
    }

    /// Record a GPU's MMIO remap page (allocated by the caller in the coherent aperture).
    pub fn set_mmio(&mut self, gpu_id: u32, page_addr: u64) -> bool {
        let page = self.page_size;
        match self.gpus.iter_mut().find(|g| g.gpu_id == gpu_id && gpu_id != 0) {
            Some(g) => {
                g.mmio = Aperture::new(page_addr, page_addr.saturating_add(page - 1));
                true
            }
            None => false,
        }
    }

    /// GPUs that get an MMIO remap page: reported and needing SVM.
    pub fn mmio_gpus(&self) -> impl Iterator<Item = &GpuApertures> + '_ {
        self.gpus.iter().filter(|g| g.reported && g.svm_needed)
    }

    /// Upstream `hsakmt_fmm_get_aperture_base_and_limit`: an unknown GPU is INVALID_PARAMETER,
    /// an absent aperture ERROR.
    pub fn aperture(&self, kind: ApertureKind, gpu_id: u32) -> Result<Aperture, Status> {
        let g = self.gpu(gpu_id).ok_or(Status::INVALID_PARAMETER)?;
        let a = match kind {
            ApertureKind::Lds => g.lds,
            ApertureKind::Scratch => g.scratch,
            ApertureKind::Gpuvm => g.gpuvm,
            ApertureKind::Mmio => g.mmio,
            ApertureKind::Svm => self.svm.map_or(Aperture::NONE, |s| s.heap()),
        };
        if a.is_valid() {
            Ok(a)
        } else {
            Err(Status::ERROR)
        }
    }

    /// Which aperture `addr` belongs to, in upstream's order of checks: the memory-handle
    /// window, the SVM apertures, the per-GPU GPUVM apertures. `None`: ordinary CPU memory.
    pub fn classify(&self, addr: u64) -> Option<Region> {
        if self.mem_handle.contains(addr) {
            return Some(Region::MemHandle);
        }
        if let Some(s) = &self.svm {
            if s.default_aperture().contains(addr) {
                return Some(Region::SvmDefault);
            }
            if s.coherent_aperture().contains(addr) {
                return Some(Region::SvmCoherent);
            }
        }
        self.gpus.iter().find(|g| g.gpuvm.contains(addr)).map(|g| Region::Gpuvm(g.gpu_id))
    }

    /// The SET_MEMORY_POLICY arguments for an SVM GPU once SVM is set up: default MTYPE per
    /// `HSA_DISABLE_CACHE`, the coherent aperture as the alternate (always coherent) range.
    /// `high_precision` is `HSA_HIGH_PRECISION_MODE` where it applies (gfx950; upstream tests
    /// the gfx version of the node numbered like the GPU's KFD entry index).
    pub fn memory_policy(&self, disable_cache: bool, high_precision: bool) -> Option<MemoryPolicy> {
        let alt = self.svm?.coherent_aperture();
        Some(MemoryPolicy {
            default_policy: if disable_cache { KFD_IOC_CACHE_POLICY_COHERENT as u32 } else { KFD_IOC_CACHE_POLICY_NONCOHERENT as u32 },
            alternate_policy: KFD_IOC_CACHE_POLICY_COHERENT as u32,
            alternate_aperture_base: alt.base,
            alternate_aperture_size: alt.size(),
            misc_process_flag: u32::from(high_precision),
        })
    }
}

/// The aperture kinds of `hsakmt_fmm_get_aperture_base_and_limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ApertureKind {
    Lds,
    Scratch,
    Gpuvm,
    /// The SVM heap: from the coherent aperture's base to the default aperture's limit.
    Svm,
    Mmio,
}

/// Where an address lives (see [`ApertureLayout::classify`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Region {
    MemHandle,
    SvmDefault,
    SvmCoherent,
    Gpuvm(u32),
}

/// Arguments of AMDKFD_IOC_SET_MEMORY_POLICY for an SVM GPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryPolicy {
    pub default_policy: u32,
    pub alternate_policy: u32,
    pub alternate_aperture_base: u64,
    pub alternate_aperture_size: u64,
    pub misc_process_flag: u32,
}

/// The first free memory-handle window: `[k << 47, (k + 1) << 47)` for k = 1, 2, ... clear of every
/// GPU's LDS, scratch and GPUVM apertures. Upstream tests candidates with the inclusive limit
/// `base + 2^47` (one byte more than the window), so a window that merely touches an aperture
/// is skipped; reproducing that gives the same address (gfx9: `5 << 47`). The window itself is
/// `[base, base + 2^47 - 1]`.
fn mem_handle_window(gpus: &[GpuApertures]) -> Aperture {
    let mut base = MEM_HANDLE_WINDOW;
    while base < MEM_HANDLE_SEARCH_END {
        let probe = Aperture::new(base, base + MEM_HANDLE_WINDOW);
        let clash = gpus.iter().any(|g| [g.lds, g.scratch, g.gpuvm].iter().any(|a| a.base != 0 && a.overlaps(&probe)));
        if !clash {
            return Aperture::new(base, base + MEM_HANDLE_WINDOW - 1);
        }
        base += MEM_HANDLE_WINDOW;
    }
    Aperture::NONE
}

/// Flags of the MMIO remap page's ALLOC_MEMORY_OF_GPU (NO_SUBSTITUTE is added to every allocation).
pub const MMIO_ALLOC_FLAGS: u32 =
    (KFD_IOC_ALLOC_MEM_FLAGS_MMIO_REMAP | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_COHERENT) as u32;

/// The `HsaMemFlags` recorded on the MMIO remap page's BO: NonPaged and HostAccess.
pub fn mmio_mem_flags() -> HsaMemFlags {
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_NonPaged(1);
    f.set_bf_HostAccess(1);
    f
}

/// CPU address-space operations the SVM setup needs. The real implementation is an anonymous
/// `PROT_NONE`, `MAP_PRIVATE | MAP_NORESERVE` mapping (address space only, no memory).
pub trait VaSpace {
    /// Reserve `len` bytes. `hint` (0 = anywhere) is only a hint: the kernel may place the
    /// range elsewhere, and the caller checks where it landed. `None` when the kernel refuses.
    fn reserve(&mut self, hint: u64, len: u64) -> Option<u64>;
    /// Reserve exactly `[addr, addr + len)` or fail without touching existing mappings
    /// (`MAP_FIXED_NOREPLACE`).
    fn reserve_fixed(&mut self, addr: u64, len: u64) -> bool;
    /// Give back `[addr, addr + len)`, all or part of an earlier reservation (`munmap`).
    fn release(&mut self, addr: u64, len: u64);
}

/// Reserve `req.size` bytes for an allocation in an unreserved aperture, the way upstream's
/// mmap apertures do: map `size + 2 guards + (align - page)` anywhere, pick the aligned start
/// after the leading guard, and unmap the rest — the padding *and the guard pages*, so in this
/// mode guards only shape the placement and reserve nothing. Fails (reserving nothing) when the
/// kernel's choice falls outside `aperture`.
pub fn reserve_placed(va: &mut impl VaSpace, aperture: Aperture, req: Request, page_size: u64) -> Option<u64> {
    if req.size == 0 || !req.align.is_power_of_two() || !page_size.is_power_of_two() {
        return None;
    }
    let align = req.align.max(page_size);
    // Upstream pads by the same guard on both sides; the larger of the request's two is used.
    let guard = u64::from(req.guard_before.max(req.guard_after)).checked_mul(page_size)?;
    let padded = req.size.checked_add(guard.checked_mul(2)?)?.checked_add(align - page_size)?;
    let addr = va.reserve(0, padded)?;
    let Some(map_end) = addr.checked_add(padded) else {
        va.release(addr, padded);
        return None;
    };
    let start = addr.checked_add(guard).and_then(|a| align_up(a, align));
    let end = start.and_then(|s| s.checked_add(req.size));
    let (Some(start), Some(end)) = (start, end) else {
        va.release(addr, padded);
        return None;
    };
    if start < aperture.base || end - 1 > aperture.limit || end > map_end {
        va.release(addr, padded);
        return None;
    }
    if start > addr {
        va.release(addr, start - addr);
    }
    if map_end > end {
        va.release(end, map_end - end);
    }
    Some(start)
}

/// How SVM is to be set up: the GPUs' common GPUVM range, trimmed to huge pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SvmPlan {
    pub base: u64,
    pub limit: u64,
    /// The largest VA alignment the SVM GPUs need.
    pub align: u64,
    pub guard_pages: u32,
    /// Try unreserved mode first: the range reaches the top of the 47-bit space and
    /// `HSA_RESERVE_SVM` is off. Reserved mode is the fallback.
    pub try_unreserved: bool,
}

impl SvmPlan {
    fn new(base: u64, limit: u64, align: u64, cfg: &FmmConfig) -> Result<Self, ApertureError> {
        let base = align_up(base, GPU_HUGE_PAGE_SIZE).ok_or(ApertureError::NoSvmRange)?;
        // limit + 1 cannot overflow: a canonical limit is below 2^47.
        let top = (limit + 1) & !(GPU_HUGE_PAGE_SIZE - 1);
        let limit = top.checked_sub(1).ok_or(ApertureError::NoSvmRange)?;
        let try_unreserved = limit >= CANONICAL_LIMIT - 1 && !cfg.reserve_svm;
        Ok(SvmPlan { base, limit, align: align.max(cfg.page_size), guard_pages: cfg.guard_pages, try_unreserved })
    }

    /// Set up the SVM apertures. Unreserved mode is accepted when one page can be placed inside
    /// the range (then given back). Otherwise a range is reserved: sizes from the whole range
    /// (capped at 1 TiB) down by halves to 4 GiB; for each, start hints from `base` up in 2 MiB
    /// steps; a reservation is taken when at least half of it — and at least 4 GiB — is below
    /// the limit, and anything above the limit is given back.
    pub fn init(&self, va: &mut impl VaSpace, page_size: u64) -> Result<SvmApertures, ApertureError> {
        if !page_size.is_power_of_two() {
            return Err(ApertureError::BadPageSize);
        }
        let align = self.align.max(page_size);
        // Unreserved mode cannot honour a GPU alignment above the page size (only old GPUs
        // without 47-bit VA need one): such systems always reserve.
        if self.try_unreserved && align <= page_size && self.base < self.limit {
            let aperture = Aperture::new(self.base, self.limit);
            if let Some(p) = reserve_placed(va, aperture, Request::new(page_size, align, self.guard_pages), page_size) {
                va.release(p, page_size);
                return Ok(SvmApertures::Unreserved { aperture, align, guard_pages: self.guard_pages });
            }
        }
        let limit = self.limit.min(SVM_RESERVATION_LIMIT);
        if self.base >= limit {
            return Err(ApertureError::NoSvmRange);
        }
        let (addr, map_size) = search_reservation(va, self.base, limit, page_size).ok_or(ApertureError::SvmReservationFailed)?;
        // Keep only the GPU-addressable part.
        let last = addr + (map_size - 1);
        let limit = if last > limit {
            va.release(limit + 1, last - limit);
            limit
        } else {
            last
        };
        SvmApertures::split_reserved(Aperture::new(addr, limit), align, self.guard_pages).ok_or(ApertureError::SvmReservationFailed)
    }
}

/// The reservation search of [`SvmPlan::init`]; returns the reservation (start, length).
fn search_reservation(va: &mut impl VaSpace, base: u64, limit: u64, page_size: u64) -> Option<(u64, u64)> {
    let mut len = limit - base + 1;
    while len >= SVM_MIN_VM_SIZE {
        let half = len.div_ceil(2);
        let mut hint = base;
        let mut got = None;
        // Try start hints while at least half of `len` would still fit below the limit.
        while hint.checked_add(half - 1).is_some_and(|h| h <= limit) {
            let top = hint.saturating_add(len).min(limit + 1);
            let map_size = (top - hint) & !(page_size - 1);
            if map_size < SVM_MIN_VM_SIZE {
                break;
            }
            let Some(addr) = va.reserve(hint, map_size) else { break };
            if addr.checked_add(half - 1).is_some_and(|h| h <= limit) {
                got = Some((addr, map_size));
                break;
            }
            va.release(addr, map_size);
            hint = match hint.checked_add(GPU_HUGE_PAGE_SIZE) {
                Some(h) => h,
                None => break,
            };
        }
        if let Some((addr, map_size)) = got {
            if addr.checked_add(SVM_MIN_VM_SIZE - 1).is_some_and(|h| h <= limit) {
                return Some((addr, map_size));
            }
            // Less than the minimum is addressable: give it back and try a smaller size.
            va.release(addr, map_size);
        }
        len = len.div_ceil(2);
    }
    None
}

/// The SVM apertures once set up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SvmApertures {
    /// One aperture for coarse- and fine-grain memory; the kernel places each allocation
    /// ([`reserve_placed`]) and nothing is reserved between allocations.
    Unreserved { aperture: Aperture, align: u64, guard_pages: u32 },
    /// A reserved CPU VA range: `coherent` (fine-grain) is its first quarter, rounded to 64 KiB,
    /// `default` (coarse-grain) the rest. Managed with [`VaAllocator`]s.
    Reserved { reservation: Aperture, coherent: Aperture, default: Aperture, align: u64, guard_pages: u32 },
}

impl SvmApertures {
    /// Split a reserved range as upstream does. `None` if the range is too small to split.
    pub fn split_reserved(reservation: Aperture, align: u64, guard_pages: u32) -> Option<Self> {
        let quarter = reservation.size() >> 2;
        let alt_base = align_up(reservation.base, COHERENT_ALIGN)?;
        let alt_size = align_up(quarter, COHERENT_ALIGN)?;
        let coherent = Aperture::new(alt_base, alt_base.checked_add(alt_size)?.checked_sub(1)?);
        let default = Aperture::new(coherent.limit.checked_add(1)?, reservation.limit);
        (quarter > 0 && coherent.is_valid() && default.is_valid()).then_some(SvmApertures::Reserved {
            reservation,
            coherent,
            default,
            align,
            guard_pages,
        })
    }

    /// Where coarse-grain allocations go (upstream `dgpu_aperture`).
    pub fn default_aperture(&self) -> Aperture {
        match *self {
            SvmApertures::Unreserved { aperture, .. } => aperture,
            SvmApertures::Reserved { default, .. } => default,
        }
    }

    /// Where fine-grain (coherent) allocations, doorbells and MMIO pages go (`dgpu_alt_aperture`).
    pub fn coherent_aperture(&self) -> Aperture {
        match *self {
            SvmApertures::Unreserved { aperture, .. } => aperture,
            SvmApertures::Reserved { coherent, .. } => coherent,
        }
    }

    /// The DEVICE_SVM heap reported for GPU nodes: coherent base to default limit.
    pub fn heap(&self) -> Aperture {
        Aperture::new(self.coherent_aperture().base, self.default_aperture().limit)
    }

    /// The CPU VA to give back at teardown (reserved mode only).
    pub fn reservation(&self) -> Option<Aperture> {
        match *self {
            SvmApertures::Unreserved { .. } => None,
            SvmApertures::Reserved { reservation, .. } => Some(reservation),
        }
    }

    pub fn is_reserved(&self) -> bool {
        matches!(self, SvmApertures::Reserved { .. })
    }

    /// The placement upstream uses for an allocation of `size` bytes (`requested_align` 0 =
    /// none asked). Unreserved: start-aligned, growing up to `page_size << max_va_align_order`
    /// (`HSA_MAX_VA_ALIGN`). Reserved: see [`reserved_request`].
    pub fn request(&self, size: u64, requested_align: u64, page_size: u64, max_va_align_order: u32) -> Request {
        match *self {
            SvmApertures::Unreserved { align, guard_pages, .. } => {
                let start = if requested_align == 0 { align } else { requested_align };
                let cap = page_size.checked_shl(max_va_align_order).filter(|c| c >> max_va_align_order == page_size).unwrap_or(1 << 63);
                Request::new(size, grow_alignment(size, start, cap), guard_pages)
            }
            SvmApertures::Reserved { align, guard_pages, .. } => reserved_request(size, requested_align, align, page_size, guard_pages),
        }
    }

    /// Allocators for a reserved range: `(coherent, default)`. `None` in unreserved mode.
    pub fn allocators(&self, page_size: u64) -> Option<(VaAllocator, VaAllocator)> {
        match *self {
            SvmApertures::Unreserved { .. } => None,
            SvmApertures::Reserved { coherent, default, .. } => Some((
                VaAllocator::new(coherent.base, coherent.limit, page_size).ok()?,
                VaAllocator::new(default.base, default.limit, page_size).ok()?,
            )),
        }
    }
}
