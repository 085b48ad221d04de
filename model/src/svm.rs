//! Shared virtual memory (AMDKFD_IOC_SVM) and the XNACK mode (AMDKFD_IOC_SET_XNACK_MODE), after
//! amdkfd's kfd_chardev.c (`kfd_ioctl_svm`, `kfd_ioctl_set_xnack_mode`), kfd_svm.c
//! (`svm_range_set_attr`, `svm_range_get_attr`, `svm_range_check_attr`, `svm_range_is_valid`)
//! and kfd_process.c (`kfd_process_xnack_mode`).
//!
//! What is modelled: the per-process interval map of SVM ranges (in pages, like the kernel's
//! interval tree) and their attributes; SET splits the ranges it partly covers and creates
//! ranges with the default attributes in the gaps; GET combines every range overlapping the
//! request as the kernel does (locations UNDEFINED when the pieces differ, flags AND / OR,
//! granularity min, access ANDed per GPU); the argument rules and errnos.
//!
//! GPU access: the engines reach SVM memory through [`Model::svm_gpu_reach`], a per-GPU view
//! derived from the ranges' attributes that the GPU accessors (`gpu.rs`) consult when the GPU's
//! BO page table misses. It is computed at each access, so a SET that removes access, or the
//! release of the process's model state (which drops the ranges), takes the memory out of the
//! GPU's view at once, like svm_range_unmap_from_gpus.
//!
//! Where the model differs, on purpose:
//! - The kernel never merges ranges; the model merges adjacent pieces whose attributes are
//!   equal. No answer can tell (GET combines the pieces it finds; an equal neighbour changes
//!   none of AND, OR, min or "all the same"), and the map stays small.
//! - No migration (ranges stay in system memory: the GPU reads and writes the process's own
//!   pages) and no resident-memory accounting (the kernel's ENOMEM when a range exceeds the
//!   system memory limit with XNACK off).
//! - Ranges the CPU unmaps (the kernel's MMU notifier) leave the map when the change goes
//!   through the model's port (`svm_cpu_unmapped`: the thunk's munmaps, and every mmap it makes,
//!   which proves the address was unmapped before or replaces what was there). An munmap the
//!   model cannot see (the application's own) is found lazily, where ALLOC_MEMORY_OF_GPU would
//!   otherwise refuse the address with EADDRINUSE (`svm_forget_unmapped`: holes in the
//!   process's VMAs); a GPU access to pages the CPU unmapped faults NotMapped all the same.
//! - With XNACK on, a GPU access to process memory outside every range is served without
//!   creating a range (the kernel's svm_range_create_unregistered_range records one, with the
//!   defaults GET already answers for a gap; for heap and stack VMAs it also sets the
//!   preferred location to SYSMEM, which the model does not).
//! - An unknown `op` answers EINVAL; the kernel returns a positive 22 from the ioctl (a bug:
//!   `r = EINVAL` in svm_ioctl), which ioctl(2) hands back as a "success" value of 22.
//! - A range whose end wraps past 2^64 is EFAULT (the VMA walk cannot cover it).

use crate::model::{Model, Process};
use crate::sys::{get, put};
use hsakmt_core::abi::kfd::*;
use std::collections::BTreeMap;

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const EBUSY: i32 = libc::EBUSY;
const EPERM: i32 = libc::EPERM;
const EADDRINUSE: i32 = libc::EADDRINUSE;

const PAGE_SHIFT: u32 = 12;
const PAGE_MASK: u64 = (1 << PAGE_SHIFT) - 1;
/// `sizeof(struct kfd_ioctl_svm_args)` without the attributes.
pub(crate) const SVM_HEADER: usize = core::mem::size_of::<kfd_ioctl_svm_args>();
const ATTR: usize = core::mem::size_of::<kfd_ioctl_svm_attribute>();

const UNDEFINED: u32 = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
const SYSMEM: u32 = KFD_IOCTL_SVM_LOCATION_SYSMEM;
/// svm_range_set_default_attributes: granularity 9 (2 MiB), HOST_ACCESS | COHERENT.
const DEFAULT_GRANULARITY: u8 = 9;
const DEFAULT_FLAGS: u32 = (KFD_IOCTL_SVM_FLAG_HOST_ACCESS | KFD_IOCTL_SVM_FLAG_COHERENT) as u32;
/// svm_range_apply_attrs clamps the granularity to 0x3F.
const MAX_GRANULARITY: u32 = 0x3F;

/// The attributes of one range (`struct svm_range`: preferred_loc, prefetch_loc, granularity,
/// flags, bitmap_access, bitmap_aip). Bitmaps are indexed by the process's GPU index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SvmAttrs {
    pub preferred_loc: u32,
    pub prefetch_loc: u32,
    pub granularity: u8,
    pub flags: u32,
    pub access: u128,
    pub access_in_place: u128,
}

impl SvmAttrs {
    /// svm_range_new: the defaults, and with XNACK on every SVM-capable GPU may access.
    fn new(xnack: bool, supported: u128) -> SvmAttrs {
        SvmAttrs {
            preferred_loc: UNDEFINED,
            prefetch_loc: UNDEFINED,
            granularity: DEFAULT_GRANULARITY,
            flags: DEFAULT_FLAGS,
            access: if xnack { supported } else { 0 },
            access_in_place: 0,
        }
    }
}

/// The SVM part of a KFD process (`struct svm_range_list`) and its XNACK mode.
#[derive(Debug, Default)]
pub(crate) struct SvmState {
    /// First page → (last page, attributes); ranges never overlap.
    ranges: BTreeMap<u64, (u64, SvmAttrs)>,
    /// None until SET_XNACK_MODE changes it: the process then has the kernel's default
    /// (`kfd_process_xnack_mode(p, false)`, computed from the GPUs).
    xnack: Option<bool>,
}

/// The GC IP version amdgpu reports for a gfx target (gfx_target_version's major, minor,
/// stepping), for the GFX9 parts whose XNACK rules differ; later targets keep their numbers
/// (every gfx10+ part is at or above GC 10.1.1, which is all the rules ask).
fn gc_version(gfx: (u32, u32, u32)) -> (u32, u32, u32) {
    match gfx {
        (9, 0, 0) => (9, 0, 1),              // Vega 10
        (9, 0, 2) => (9, 1, 0),              // Raven
        (9, 0, 4) => (9, 2, 1),              // Vega 12
        (9, 0, 6) => (9, 4, 0),              // Vega 20
        (9, 0, 8) => (9, 4, 1),              // Arcturus
        (9, 0, 9) => (9, 2, 2),              // Raven2
        (9, 0, 10) => (9, 4, 2),             // Aldebaran
        (9, 0, 12) => (9, 3, 0),             // Renoir
        (9, 4, 0..=2) => (9, 4, 3),          // Aqua Vanjaram
        (major, _, _) if major >= 10 => gfx, // >= 10.1.1 for every target the rules meet
        other => other,
    }
}

/// KFD_IS_SOC15: GC 9.0.1 and later (older GPUs have no SVM API and no say in XNACK).
fn soc15(gc: (u32, u32, u32)) -> bool {
    gc >= (9, 0, 1)
}

/// KFD_SUPPORT_XNACK_PER_PROCESS.
fn xnack_per_process(gc: (u32, u32, u32)) -> bool {
    matches!(gc, (9, 4, 2) | (9, 4, 3) | (9, 4, 4) | (9, 5, 0))
}

/// amdgpu_gmc_noretry_set with the module parameter at its default (`amdgpu.noretry=-1`) on
/// bare metal: retry faults off on these GC versions.
fn noretry_default(gc: (u32, u32, u32)) -> bool {
    matches!(gc, (9, 0, 1) | (9, 4, 0) | (9, 4, 1) | (9, 4, 2) | (9, 4, 3) | (9, 4, 4) | (9, 5, 0)) || gc >= (10, 3, 0)
}

/// kfd_process_xnack_mode: can the process run with XNACK on, given every GPU it has?
/// `supported` false asks for the default mode (at process creation), true whether XNACK on
/// may be chosen (SET_XNACK_MODE).
pub fn xnack_mode(gfx_versions: &[(u32, u32, u32)], supported: bool) -> bool {
    xnack_mode_of(gfx_versions.iter().copied(), supported)
}

/// [`xnack_mode`] over any sequence of gfx versions (no allocation: GPU accesses ask it).
fn xnack_mode_of(gfx_versions: impl Iterator<Item = (u32, u32, u32)>, supported: bool) -> bool {
    for gfx in gfx_versions {
        let gc = gc_version(gfx);
        if !soc15(gc) {
            continue;
        }
        // Per-process XNACK: any mode may be chosen, but noretry still sets the default.
        if supported && xnack_per_process(gc) {
            continue;
        }
        // GFX10+ cannot preempt shaders during page faults.
        if gc >= (10, 1, 1) {
            return false;
        }
        if noretry_default(gc) {
            return false;
        }
    }
    true
}

/// The SET_XNACK_MODE decision (kfd_ioctl_set_xnack_mode): `Ok(Some(mode))` to switch,
/// `Ok(None)` to leave things as they are.
pub(crate) fn xnack_decision(current: bool, requested: i32, has_queues: bool, can_enable: bool) -> Result<Option<bool>, i32> {
    if has_queues {
        return Err(EBUSY); // "Process has user queues running"
    }
    if i32::from(current) == requested {
        return Ok(None);
    }
    if requested != 0 && !can_enable {
        return Err(EPERM);
    }
    Ok(Some(requested != 0))
}

/// One VMA of this process: [start, end), and (device, inode) of its file (0 when anonymous).
struct Vma {
    start: u64,
    end: u64,
    dev: (u32, u32),
    inode: u64,
}

fn parse_vma(line: &str) -> Option<Vma> {
    let mut it = line.split_whitespace();
    let (a, b) = it.next()?.split_once('-')?;
    let _perms = it.next()?;
    let _offset = it.next()?;
    let (ma, mi) = it.next()?.split_once(':')?;
    let inode = it.next()?.parse().ok()?;
    Some(Vma {
        start: u64::from_str_radix(a, 16).ok()?,
        end: u64::from_str_radix(b, 16).ok()?,
        dev: (u32::from_str_radix(ma, 16).ok()?, u32::from_str_radix(mi, 16).ok()?),
        inode,
    })
}

/// svm_range_is_valid's VMA walk: every byte of [start, end) must lie in a VMA (of any
/// protection: an SVM range may be PROT_NONE for now) that is not a device mapping
/// (VM_IO | VM_PFNMAP | VM_MIXEDMAP: the kernel's BO mappings through the DRM or KFD file;
/// here, mappings of the model's device file `device`).
fn check_vmas(start: u64, end: u64, device: Option<((u32, u32), u64)>) -> Result<(), i32> {
    let maps = std::fs::read_to_string("/proc/self/maps").map_err(|_| EFAULT)?;
    let mut at = start;
    for vma in maps.lines().filter_map(parse_vma) {
        if vma.end <= at {
            continue;
        }
        if vma.start > at {
            return Err(EFAULT); // a hole
        }
        if device.is_some_and(|(dev, inode)| vma.dev == dev && vma.inode == inode) {
            return Err(EFAULT);
        }
        at = vma.end;
        if at >= end {
            return Ok(());
        }
    }
    Err(EFAULT)
}

fn attr_at(buf: &[u8], i: usize) -> kfd_ioctl_svm_attribute {
    get(&buf[SVM_HEADER + i * ATTR..])
}

fn set_attr_at(buf: &mut [u8], i: usize, a: &kfd_ioctl_svm_attribute) {
    put(&mut buf[SVM_HEADER + i * ATTR..], a);
}

impl Model {
    /// The GPU indexes whose SVM API works (KFD_IS_SVM_API_SUPPORTED: SOC15 dGPUs with device
    /// memory migration; all the model's GFX9+ GPUs).
    pub(crate) fn svm_supported(&self) -> u128 {
        self.gpus.iter().enumerate().filter(|(_, g)| soc15(gc_version(g.gfx_version))).fold(0u128, |m, (i, _)| m | (1u128 << i))
    }

    fn gfx_versions(&self) -> Vec<(u32, u32, u32)> {
        self.gpus.iter().map(|g| g.gfx_version).collect()
    }

    /// The process's XNACK mode: the one SET_XNACK_MODE chose, else the kernel's default.
    pub(crate) fn xnack_enabled(&self, st: &Process) -> bool {
        st.svm.xnack.unwrap_or_else(|| xnack_mode_of(self.gpus.iter().map(|g| g.gfx_version), false))
    }

    /// The SVM view of GPU index `g` at `va`, consulted by the GPU accessors (`gpu.rs`) after
    /// the GPU's BO page table missed: `Some((end, writable))` when GPU `g` reaches `va` through
    /// an SVM range (GPU VA == CPU VA), up to `end` (exclusive; the range's end, or for XNACK
    /// memory with no range the next range's start). O(log n), no allocation. The rules:
    ///
    /// - A range: GPU `g` reaches it when its ACCESS or ACCESS_IN_PLACE bit is set. With XNACK
    ///   off, svm_range_validate_and_map maps exactly those GPUs (`bitmap_access |
    ///   bitmap_aip`). With XNACK on it maps eagerly only some of them (in-place GPUs, the
    ///   actual location's GPU, or every ACCESS GPU with GPU_ALWAYS_MAPPED or once mapped) and
    ///   the others fault the pages in on their first access (svm_range_restore_pages), which
    ///   svm_range_best_restore_location allows only for ACCESS or ACCESS_IN_PLACE GPUs (else
    ///   -1: the fault is not recovered). The model resolves a retry fault at the access, so
    ///   both modes reach the same set; GPU_ALWAYS_MAPPED changes only when the kernel maps.
    ///   NO_ACCESS (both bits clear) is not reached.
    /// - Writable unless the range has GPU_RO (svm_range_get_pte_flags). A page the CPU maps
    ///   read-only or not at all is judged at the copy (see `gpu.rs`).
    /// - No range, XNACK on: svm_range_restore_pages creates one
    ///   (svm_range_create_unregistered_range, svm_range_new: ACCESS for every SVM-capable GPU)
    ///   where the address lies in a VMA; the model reaches the memory without recording a
    ///   range (GET over a gap already answers those defaults), except where a GPU VM of the
    ///   process maps a BO (svm_range_check_vm; the kernel's userptr check,
    ///   svm_range_check_vm_userptr, is not modelled). No range, XNACK off: nothing.
    pub(crate) fn svm_gpu_reach(&self, st: &Process, g: usize, va: u64) -> Option<(u64, bool)> {
        let bit = 1u128.checked_shl(g as u32)?;
        let page = va >> PAGE_SHIFT;
        let ranges = &st.svm.ranges;
        if let Some((_, &(last, a))) = ranges.range(..=page).next_back().filter(|(_, (l, _))| *l >= page) {
            if (a.access | a.access_in_place) & bit == 0 {
                return None;
            }
            let end = (last + 1).saturating_mul(1 << PAGE_SHIFT);
            return Some((end, a.flags & KFD_IOCTL_SVM_FLAG_GPU_RO as u32 == 0));
        }
        if !self.xnack_enabled(st) || self.svm_supported() & bit == 0 {
            return None;
        }
        let mut end = ranges.range(page..).next().map_or(u64::MAX, |(&s, _)| s.saturating_mul(1 << PAGE_SHIFT));
        // svm_range_create_unregistered_range: no range where a GPU VM of the process maps a
        // BO (svm_range_check_vm); the memory ends where the next such mapping starts.
        for (per, vm) in st.mem.gpus.iter().zip(&st.vms) {
            if vm.is_none() {
                continue;
            }
            if per.pt.range(..=va).next_back().is_some_and(|(_, pte)| pte.end > va) {
                return None;
            }
            if let Some((&s, _)) = per.pt.range(va..).next() {
                end = end.min(s);
            }
        }
        Some((end, true))
    }

    /// kfd_queue_buffer_svm_get (torvalds/linux drivers/gpu/drm/amd/amdkfd/kfd_queue.c), the
    /// CWSR area CREATE_QUEUE accepts when no BO mapping matches it: SVM ranges must cover
    /// every page of `[start, start + size)`, each mapped to a GPU (`mapped_to_gpu`), giving GPU
    /// `g` ACCESS or ACCESS_IN_PLACE, and flagged GPU_ALWAYS_MAPPED; otherwise EINVAL (the
    /// caller's). An empty area passes (the kernel's loop does not run). In the model a range
    /// with GPU_ALWAYS_MAPPED and `g`'s access bit is mapped to `g` in both XNACK modes
    /// (svm_range_validate_and_map maps ALWAYS_MAPPED ranges eagerly; SET already checked that
    /// the range lies in VMAs), so `mapped_to_gpu` needs no state of its own.
    pub(crate) fn svm_queue_area_ok(st: &Process, g: usize, start: u64, size: u64) -> bool {
        let Some(bit) = 1u128.checked_shl(g as u32) else { return false };
        let mut page = start >> PAGE_SHIFT;
        let mut left = size >> PAGE_SHIFT;
        while left > 0 {
            let Some((_, &(last, a))) = st.svm.ranges.range(..=page).next_back().filter(|(_, (l, _))| *l >= page) else {
                return false;
            };
            if (a.access | a.access_in_place) & bit == 0 || a.flags & KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED as u32 == 0 {
                return false;
            }
            let n = last - page + 1;
            if n >= left {
                break;
            }
            left -= n;
            page += n;
        }
        true
    }

    /// The kernel's MMU notifier drops the parts of SVM ranges the CPU unmaps
    /// (svm_range_unmap_from_cpu); the model sees no munmap, so ALLOC_MEMORY calls this where a
    /// range would refuse it (EADDRINUSE): the ranges overlapping `[start, start + size)` keep
    /// only their pages that still lie in a VMA of the process (of any kind). A failed read of
    /// the process's maps keeps everything.
    pub(crate) fn svm_forget_unmapped(st: &mut Process, start: u64, size: u64) {
        let Ok(maps) = std::fs::read_to_string("/proc/self/maps") else { return };
        let vmas: Vec<(u64, u64)> = maps.lines().filter_map(parse_vma).map(|v| (v.start >> PAGE_SHIFT, v.end >> PAGE_SHIFT)).collect();
        let first = start >> PAGE_SHIFT;
        let last = start.saturating_add(size.max(1) - 1) >> PAGE_SHIFT;
        let ranges = &mut st.svm.ranges;
        let from = ranges.range(..=first).next_back().filter(|(_, (l, _))| *l >= first).map_or(first, |(k, _)| *k);
        let hit: Vec<(u64, u64, SvmAttrs)> = ranges.range(from..=last).map(|(&s, &(l, a))| (s, l, a)).collect();
        let span = hit.first().zip(hit.last()).map(|(f, l)| (f.0, l.1));
        for (s, l, a) in hit {
            ranges.remove(&s);
            for &(vs, ve) in &vmas {
                let (ps, pl) = (s.max(vs), l.min(ve.saturating_sub(1)));
                if ve > vs && ps <= pl {
                    ranges.insert(ps, (pl, a));
                }
            }
        }
        if let Some((lo, hi)) = span {
            coalesce(ranges, lo.saturating_sub(1), hi.saturating_add(1)); // adjacent VMAs split nothing
        }
    }

    /// The CPU's address space changed at `[addr, addr + len)` through the model's port: an
    /// munmap, or an mmap (a fixed one replaced what was there; any other landed where nothing
    /// was mapped). The kernel's MMU notifier removes the SVM ranges' pages the CPU unmaps
    /// (svm_range_unmap_from_cpu), and mapping over them with MAP_FIXED unmaps them first; a
    /// range the kernel placed a new mapping in was unmapped before, behind the model's back. So
    /// the ranges lose those pages here (split where they cover part), and the thunk's next VA
    /// reservation in such a hole is free for its BOs (ALLOC_MEMORY_OF_GPU no longer sees an SVM
    /// range there). A forked child's copy of its parent's state is left alone.
    pub(crate) fn svm_cpu_unmapped(&self, addr: usize, len: usize) {
        if len == 0 {
            return;
        }
        let mut st = self.lock();
        if st.pid != crate::sys::current_pid() || st.svm.ranges.is_empty() {
            return;
        }
        let first = addr as u64 >> PAGE_SHIFT;
        let last = (addr as u64).saturating_add(len as u64 - 1) >> PAGE_SHIFT;
        let removed = remove_pages(&mut st.svm.ranges, first, last);
        let pid = st.pid;
        drop(st);
        // svm_range_unmap_from_cpu → svm_range_unmap_from_gpus: UNMAP_FROM_GPU for each piece,
        // on every GPU with access or access in place.
        for (s, l, a) in removed {
            for g in 0..self.gpus.len().min(128) {
                if (a.access | a.access_in_place) & (1u128 << g) != 0 {
                    self.smi_unmap_from_gpu(g, pid, s, l, hsakmt_core::abi::smi::KFD_SVM_UNMAP_TRIGGER_UNMAP_FROM_CPU);
                }
            }
        }
    }

    /// Does an SVM range of the process cover any page of `[start, start + size)`?
    /// (ALLOC_MEMORY_OF_GPU answers EADDRINUSE for such a VA, and for such a userptr.)
    pub(crate) fn svm_overlaps(st: &Process, start: u64, size: u64) -> bool {
        let first = start >> PAGE_SHIFT;
        let last = start.saturating_add(size.max(1) - 1) >> PAGE_SHIFT;
        st.svm.ranges.range(..=last).next_back().is_some_and(|(_, &(l, _))| l >= first)
    }

    pub(crate) fn ioctl_set_xnack_mode(&self, buf: &mut [u8]) -> Result<(), i32> {
        let mut a: kfd_ioctl_set_xnack_mode_args = get(buf);
        let mut st = self.lock();
        let current = self.xnack_enabled(&st);
        if a.xnack_enabled < 0 {
            a.xnack_enabled = i32::from(current);
            put(buf, &a);
            return Ok(());
        }
        let can_enable = a.xnack_enabled == 0 || xnack_mode(&self.gfx_versions(), true);
        if let Some(mode) = xnack_decision(current, a.xnack_enabled, self.has_queues(), can_enable)? {
            st.svm.xnack = Some(mode);
        }
        Ok(())
    }

    /// kfd_ioctl_svm_validate, run on the copied-in argument before the handler: the caller's
    /// size must hold the header and `nattr` attributes (else EINVAL, nothing copied back).
    pub(crate) fn svm_validate(buf: &[u8], caller_size: usize) -> Result<(), i32> {
        let a: kfd_ioctl_svm_args = get(buf);
        let expected = SVM_HEADER as u64 + u64::from(a.nattr) * ATTR as u64;
        if (caller_size as u64) < expected {
            return Err(EINVAL);
        }
        Ok(())
    }

    pub(crate) fn ioctl_svm(&self, buf: &mut [u8]) -> Result<(), i32> {
        // kfd_ioctl_svm: the SVM API belongs to the primary process (after the validate hook).
        if self.is_secondary() {
            return Err(libc::EOPNOTSUPP);
        }
        let a: kfd_ioctl_svm_args = get(buf);
        if a.start_addr & PAGE_MASK != 0 || a.size & PAGE_MASK != 0 {
            return Err(EINVAL);
        }
        if a.start_addr == 0 || a.size == 0 {
            return Err(EINVAL);
        }
        let n = a.nattr as usize;
        // The dispatcher's validate step guarantees the attributes are in the buffer.
        if buf.len() < SVM_HEADER + n * ATTR {
            return Err(EINVAL);
        }
        let start = a.start_addr >> PAGE_SHIFT;
        let pages = a.size >> PAGE_SHIFT;
        match a.op {
            KFD_IOCTL_SVM_OP_SET_ATTR => self.svm_set(start, pages, n, buf),
            KFD_IOCTL_SVM_OP_GET_ATTR => self.svm_get(start, pages, n, buf),
            _ => Err(EINVAL),
        }
    }

    /// svm_range_check_attr: known types, and GPU ids of this process whose SVM API works.
    fn svm_check_attrs(&self, n: usize, buf: &[u8]) -> Result<(), i32> {
        let supported = self.svm_supported();
        for i in 0..n {
            let at = attr_at(buf, i);
            let gpu = match at.r#type {
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC if at.value != SYSMEM && at.value != UNDEFINED => Some(at.value),
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC if at.value != SYSMEM => Some(at.value),
                KFD_IOCTL_SVM_ATTR_ACCESS | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE | KFD_IOCTL_SVM_ATTR_NO_ACCESS => Some(at.value),
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC
                | KFD_IOCTL_SVM_ATTR_PREFETCH_LOC
                | KFD_IOCTL_SVM_ATTR_SET_FLAGS
                | KFD_IOCTL_SVM_ATTR_CLR_FLAGS
                | KFD_IOCTL_SVM_ATTR_GRANULARITY => None,
                _ => return Err(EINVAL),
            };
            if let Some(id) = gpu {
                let idx = self.gpu_index(id).ok_or(EINVAL)?;
                if supported & (1u128 << idx) == 0 {
                    return Err(EINVAL);
                }
            }
        }
        Ok(())
    }

    /// svm_range_is_valid: the pages must be process memory (EFAULT) and no GPU VM of the
    /// process may have a BO mapped there (svm_range_check_vm: EADDRINUSE).
    fn svm_check_range(&self, st: &Process, start: u64, pages: u64) -> Result<(), i32> {
        let first = start << PAGE_SHIFT;
        let end = pages.checked_mul(1 << PAGE_SHIFT).and_then(|len| first.checked_add(len)).ok_or(EFAULT)?;
        let device = self.dev.get().and_then(|d| {
            let st = rustix::fs::fstat(d.fd()).ok()?;
            Some(((rustix::fs::major(st.st_dev), rustix::fs::minor(st.st_dev)), st.st_ino))
        });
        check_vmas(first, end, device)?;
        for (g, per) in st.mem.gpus.iter().enumerate() {
            if st.vms.get(g).is_none_or(|v| v.is_none()) {
                continue; // no VM acquired on this GPU (no drm_priv)
            }
            if per.pt.range(..end).next_back().is_some_and(|(_, pte)| pte.end > first) {
                return Err(EADDRINUSE);
            }
        }
        Ok(())
    }

    fn svm_set(&self, start: u64, pages: u64, n: usize, buf: &[u8]) -> Result<(), i32> {
        self.svm_check_attrs(n, buf)?;
        let mut st = self.lock();
        self.svm_check_range(&st, start, pages)?;
        let last = start + pages - 1;
        let fresh = SvmAttrs::new(self.xnack_enabled(&st), self.svm_supported());
        let apply = |mut r: SvmAttrs| {
            for i in 0..n {
                let at = attr_at(buf, i);
                match at.r#type {
                    KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => r.preferred_loc = at.value,
                    KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => r.prefetch_loc = at.value,
                    KFD_IOCTL_SVM_ATTR_ACCESS | KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE | KFD_IOCTL_SVM_ATTR_NO_ACCESS => {
                        let bit = self.gpu_index(at.value).map_or(0, |i| 1u128 << i);
                        r.access &= !bit;
                        r.access_in_place &= !bit;
                        match at.r#type {
                            KFD_IOCTL_SVM_ATTR_ACCESS => r.access |= bit,
                            KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE => r.access_in_place |= bit,
                            _ => {}
                        }
                    }
                    KFD_IOCTL_SVM_ATTR_SET_FLAGS => r.flags |= at.value,
                    KFD_IOCTL_SVM_ATTR_CLR_FLAGS => r.flags &= !at.value,
                    KFD_IOCTL_SVM_ATTR_GRANULARITY => r.granularity = at.value.min(MAX_GRANULARITY) as u8,
                    _ => {}
                }
            }
            r
        };
        let ranges = &mut st.svm.ranges;
        // Pieces overlapping [start, last], in order (the one starting before `start` too).
        let first_key = ranges.range(..=start).next_back().filter(|(_, (l, _))| *l >= start).map(|(k, _)| *k).unwrap_or(start);
        let overlapping: Vec<(u64, u64, SvmAttrs)> = ranges.range(first_key..=last).map(|(&s, &(l, a))| (s, l, a)).collect();
        let mut pieces: Vec<(u64, u64, SvmAttrs)> = Vec::with_capacity(overlapping.len() * 2 + 2);
        let mut at = start;
        for &(s, l, a) in &overlapping {
            ranges.remove(&s);
            // The parts outside the request keep their attributes (svm_range_split_head/tail).
            if s < start {
                pieces.push((s, start - 1, a));
            }
            if s > at {
                pieces.push((at, s - 1, apply(fresh))); // a gap: a new range
            }
            let (is, il) = (s.max(start), l.min(last));
            pieces.push((is, il, apply(a)));
            if l > last {
                pieces.push((last + 1, l, a));
            }
            at = il + 1;
        }
        if at <= last {
            pieces.push((at, last, apply(fresh)));
        }
        for (s, l, a) in pieces {
            ranges.insert(s, (l, a));
        }
        coalesce(ranges, start.saturating_sub(1), last.saturating_add(1));
        Ok(())
    }

    fn svm_get(&self, start: u64, pages: u64, n: usize, buf: &mut [u8]) -> Result<(), i32> {
        let st = self.lock();
        self.svm_check_range(&st, start, pages)?;
        let (mut want_pref, mut want_prefetch, mut want_access, mut want_flags, mut want_gran) = (false, false, false, false, false);
        for i in 0..n {
            match attr_at(buf, i).r#type {
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => want_pref = true,
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => want_prefetch = true,
                KFD_IOCTL_SVM_ATTR_ACCESS => want_access = true,
                KFD_IOCTL_SVM_ATTR_SET_FLAGS | KFD_IOCTL_SVM_ATTR_CLR_FLAGS => want_flags = true,
                KFD_IOCTL_SVM_ATTR_GRANULARITY => want_gran = true,
                // ACCESS_IN_PLACE and NO_ACCESS are answers, not questions.
                _ => return Err(EINVAL),
            }
        }
        let last = start + pages - 1;
        let supported = self.svm_supported();
        let mut location = UNDEFINED;
        let mut prefetch = UNDEFINED;
        let mut granularity = 0xffu8;
        let mut flags_and = u32::MAX;
        let mut flags_or = 0u32;
        let (mut access, mut aip);
        let first_key = st.svm.ranges.range(..=start).next_back().filter(|(_, (l, _))| *l >= start).map(|(k, _)| *k).unwrap_or(start);
        let mut found = st.svm.ranges.range(first_key..=last).peekable();
        if found.peek().is_none() {
            // No range: the defaults (with XNACK on, every SVM GPU may access).
            let d = SvmAttrs::new(self.xnack_enabled(&st), supported);
            (location, prefetch, granularity, flags_and, flags_or) = (d.preferred_loc, d.prefetch_loc, d.granularity, d.flags, d.flags);
            (access, aip) = (d.access, 0);
        } else {
            (access, aip) = (supported, supported);
            for (_, (_, r)) in found {
                // A location is answered only while every piece has the same, defined one.
                if want_pref {
                    if r.preferred_loc == UNDEFINED || (location != UNDEFINED && location != r.preferred_loc) {
                        location = UNDEFINED;
                        want_pref = false;
                    } else {
                        location = r.preferred_loc;
                    }
                }
                if want_prefetch {
                    if r.prefetch_loc == UNDEFINED || (prefetch != UNDEFINED && prefetch != r.prefetch_loc) {
                        prefetch = UNDEFINED;
                        want_prefetch = false;
                    } else {
                        prefetch = r.prefetch_loc;
                    }
                }
                if want_access {
                    access &= r.access;
                    aip &= r.access_in_place;
                }
                if want_flags {
                    flags_and &= r.flags;
                    flags_or |= r.flags;
                }
                if want_gran {
                    granularity = granularity.min(r.granularity);
                }
            }
        }
        drop(st);
        // Filled in order; an unknown GPU in an ACCESS question stops here with EINVAL, the
        // attributes before it already answered (the kernel copies them back all the same).
        for i in 0..n {
            let mut at = attr_at(buf, i);
            match at.r#type {
                KFD_IOCTL_SVM_ATTR_PREFERRED_LOC => at.value = location,
                KFD_IOCTL_SVM_ATTR_PREFETCH_LOC => at.value = prefetch,
                KFD_IOCTL_SVM_ATTR_ACCESS => {
                    let bit = 1u128 << self.gpu_index(at.value).ok_or(EINVAL)?;
                    at.r#type = if access & bit != 0 {
                        KFD_IOCTL_SVM_ATTR_ACCESS
                    } else if aip & bit != 0 {
                        KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE
                    } else {
                        KFD_IOCTL_SVM_ATTR_NO_ACCESS
                    };
                }
                KFD_IOCTL_SVM_ATTR_SET_FLAGS => at.value = flags_and,
                KFD_IOCTL_SVM_ATTR_CLR_FLAGS => at.value = !flags_or,
                KFD_IOCTL_SVM_ATTR_GRANULARITY => at.value = u32::from(granularity),
                _ => {}
            }
            set_attr_at(buf, i, &at);
        }
        Ok(())
    }

    /// The process's SVM ranges as (first byte, byte length), in address order (tests).
    pub fn svm_ranges(&self) -> Vec<(u64, u64)> {
        self.lock().svm.ranges.iter().map(|(&s, &(l, _))| (s << PAGE_SHIFT, (l - s + 1) << PAGE_SHIFT)).collect()
    }
}

/// Merge neighbouring ranges with equal attributes in the pages `[lo, hi]` (see the module
/// notes: invisible to GET, keeps the map small).
/// Take pages `first..=last` out of the ranges; a range covering some of them keeps the rest.
/// Returns the pieces taken out: (first page, last page, attributes).
fn remove_pages(ranges: &mut BTreeMap<u64, (u64, SvmAttrs)>, first: u64, last: u64) -> Vec<(u64, u64, SvmAttrs)> {
    let from = ranges.range(..=first).next_back().filter(|(_, (l, _))| *l >= first).map_or(first, |(k, _)| *k);
    let hit: Vec<(u64, u64, SvmAttrs)> = ranges.range(from..=last).map(|(&s, &(l, a))| (s, l, a)).collect();
    let mut removed = Vec::with_capacity(hit.len());
    for (s, l, a) in hit {
        ranges.remove(&s);
        if s < first {
            ranges.insert(s, (first - 1, a));
        }
        if l > last {
            ranges.insert(last + 1, (l, a));
        }
        removed.push((s.max(first), l.min(last), a));
    }
    removed
}

fn coalesce(ranges: &mut BTreeMap<u64, (u64, SvmAttrs)>, lo: u64, hi: u64) {
    let from = ranges.range(..=lo).next_back().map(|(k, _)| *k).unwrap_or(lo);
    let keys: Vec<u64> = ranges.range(from..=hi).map(|(k, _)| *k).collect();
    let mut cur: Option<u64> = None;
    for k in keys {
        let (l, a) = ranges[&k];
        if let Some(c) = cur {
            let (cl, ca) = ranges[&c];
            if cl + 1 == k && ca == a {
                ranges.remove(&k);
                ranges.insert(c, (l, ca));
                continue;
            }
        }
        cur = Some(k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xnack_rules_per_gpu() {
        let mi300x = (9, 4, 2);
        let mi210 = (9, 0, 10);
        let navi31 = (11, 0, 0);
        let vega10 = (9, 0, 0);
        let renoir = (9, 0, 12);
        let fiji = (8, 0, 3);
        // Default (noretry=-1): retry faults off on all of these but Renoir.
        for g in [mi300x, mi210, navi31, vega10] {
            assert!(!xnack_mode(&[g], false), "{g:?}");
        }
        assert!(xnack_mode(&[renoir], false));
        // XNACK on may be chosen on per-process parts only (and where noretry is off).
        assert!(xnack_mode(&[mi300x], true));
        assert!(xnack_mode(&[mi210], true));
        assert!(!xnack_mode(&[navi31], true));
        assert!(!xnack_mode(&[vega10], true));
        assert!(!xnack_mode(&[mi210, navi31], true));
        // Pre-SOC15 GPUs have no say.
        assert!(xnack_mode(&[fiji], false));
        assert!(xnack_mode(&[fiji, mi210], true));
    }

    #[test]
    fn xnack_decision_order() {
        // Queues refuse any change, even to the current mode.
        assert_eq!(xnack_decision(false, 0, true, true), Err(EBUSY));
        assert_eq!(xnack_decision(false, 1, true, false), Err(EBUSY));
        assert_eq!(xnack_decision(false, 0, false, false), Ok(None));
        assert_eq!(xnack_decision(true, 1, false, false), Ok(None));
        assert_eq!(xnack_decision(false, 1, false, false), Err(EPERM));
        assert_eq!(xnack_decision(false, 1, false, true), Ok(Some(true)));
        assert_eq!(xnack_decision(true, 0, false, false), Ok(Some(false)));
        // 2 is not the bool 1: it counts as a change to on.
        assert_eq!(xnack_decision(true, 2, false, true), Ok(Some(true)));
    }

    #[test]
    fn coalesce_merges_equal_neighbours_only() {
        let a = SvmAttrs::new(false, 0);
        let b = SvmAttrs { granularity: 3, ..a };
        let mut m = BTreeMap::new();
        m.insert(0, (9, a));
        m.insert(10, (19, a));
        m.insert(20, (29, b));
        m.insert(31, (40, b));
        coalesce(&mut m, 0, 100);
        assert_eq!(m.into_iter().collect::<Vec<_>>(), vec![(0, (19, a)), (20, (29, b)), (31, (40, b))]);
    }
}
