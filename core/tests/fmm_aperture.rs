//! Aperture math: a gfx9 GPU (unreserved and reserved SVM), several GPUs, an old APU with a
//! non-canonical GPUVM aperture, a CPU-only system, KFD answers that omit or repeat GPUs, the
//! SVM reservation search against a fake address space, kernel-placed allocations, and the
//! FMM settings as upstream parses them.

use hsakmt_core::abi::kfd::kfd_process_device_apertures;
use hsakmt_core::fmm::aperture::{
    mmio_mem_flags, reserve_placed, scan_u32, vm_alignment, Aperture, ApertureError, ApertureKind, ApertureLayout, FmmConfig, GpuDesc,
    Region, SvmApertures, SystemDesc, VaSpace, MMIO_ALLOC_FLAGS, SVM_MIN_VM_SIZE, SVM_RESERVATION_LIMIT,
};
use hsakmt_core::fmm::va::Request;
use hsakmt_core::Status;
use std::collections::BTreeMap;

const PAGE: u64 = 4096;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
const TOP_47: u64 = (1 << 47) - 1;

/// What the KFD reports for a gfx9+ dGPU (kfd_flat_memory.c, v9 apertures).
fn gfx9_entry(gpu_id: u32) -> kfd_process_device_apertures {
    kfd_process_device_apertures {
        lds_base: 1 << 48,
        lds_limit: (1 << 48) | 0xFFFF_FFFF,
        scratch_base: 2 << 48,
        scratch_limit: (2 << 48) | 0xFFFF_FFFF,
        gpuvm_base: 0x10000,
        gpuvm_limit: TOP_47,
        gpu_id,
        pad: 0,
    }
}

fn gpu(gpu_id: u32, node_id: u32) -> GpuDesc {
    GpuDesc { gpu_id, node_id, device_id: 0x740f, gfx_version: 0x09000a }
}

/// A process address space: reservations as start → end, placed top-down below `top` like
/// Linux mmap, honouring a hint when the hinted range is free (unless `ignore_hints`).
struct FakeVa {
    map: BTreeMap<u64, u64>,
    top: u64,
    ignore_hints: bool,
    refuse: bool,
    calls: usize,
}

impl FakeVa {
    fn new(top: u64) -> Self {
        FakeVa { map: BTreeMap::new(), top, ignore_hints: false, refuse: false, calls: 0 }
    }
    fn is_free(&self, addr: u64, len: u64) -> bool {
        let end = addr + len;
        end <= self.top && self.map.range(..end).next_back().is_none_or(|(_, &e)| e <= addr)
    }
    fn ranges(&self) -> Vec<(u64, u64)> {
        self.map.iter().map(|(&s, &e)| (s, e)).collect()
    }
}

impl VaSpace for FakeVa {
    fn reserve(&mut self, hint: u64, len: u64) -> Option<u64> {
        self.calls += 1;
        if self.refuse || len == 0 {
            return None;
        }
        let addr = if hint != 0 && !self.ignore_hints && self.is_free(hint, len) {
            hint
        } else {
            // Highest gap below top.
            let mut end = self.top;
            let mut found = None;
            for (&s, &e) in self.map.iter().rev() {
                if e <= end && end - e >= len {
                    found = Some(end - len);
                    break;
                }
                end = end.min(s);
            }
            found.or_else(|| (end >= len + PAGE).then(|| end - len))?
        };
        assert!(self.is_free(addr, len));
        self.map.insert(addr, addr + len);
        Some(addr)
    }
    fn reserve_fixed(&mut self, addr: u64, len: u64) -> bool {
        if self.is_free(addr, len) {
            self.map.insert(addr, addr + len);
            true
        } else {
            false
        }
    }
    fn release(&mut self, addr: u64, len: u64) {
        let end = addr + len;
        let hit: Vec<(u64, u64)> = self.map.iter().filter(|(&s, &e)| s < end && e > addr).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in hit {
            self.map.remove(&s);
            if s < addr {
                self.map.insert(s, addr);
            }
            if e > end {
                self.map.insert(end, e);
            }
        }
    }
}

fn layout(gpus: &[GpuDesc], kfd: &[kfd_process_device_apertures], cfg: &FmmConfig) -> ApertureLayout {
    ApertureLayout::compute(&SystemDesc { gpus, is_dgpu: true }, kfd, cfg).unwrap()
}

#[test]
fn gfx9_gpu_layout() {
    let l = layout(&[gpu(0x1234, 1)], &[gfx9_entry(0x1234)], &FmmConfig::default());
    let g = l.gpu(0x1234).unwrap();
    assert!(g.reported && g.uses_svm && g.svm_needed);
    assert_eq!(g.lds, Aperture::new(1 << 48, 0x0001_0000_FFFF_FFFF));
    assert_eq!(g.scratch, Aperture::new(2 << 48, 0x0002_0000_FFFF_FFFF));
    assert_eq!(g.gpuvm, Aperture::NONE, "canonical GPUVM: no per-GPU aperture");
    assert_eq!(g.vm_align, PAGE);
    assert_eq!(l.kfd_order, vec![0x1234]);
    let plan = l.svm_plan.unwrap();
    assert_eq!((plan.base, plan.limit, plan.align, plan.guard_pages), (2 * MIB, TOP_47, PAGE, 1), "trimmed to 2 MiB");
    assert!(plan.try_unreserved);
    // Upstream's window test is one byte wide of the window, so [2^47, 2^48] touches the LDS
    // aperture and [3·2^47, 2^49] touches scratch: the first clear window is 5·2^47.
    assert_eq!(l.mem_handle, Aperture::new(5 << 47, (6 << 47) - 1));
    assert_eq!(l.aperture(ApertureKind::Lds, 0x1234), Ok(g.lds));
    assert_eq!(l.aperture(ApertureKind::Scratch, 0x1234), Ok(g.scratch));
    assert_eq!(l.aperture(ApertureKind::Gpuvm, 0x1234), Err(Status::ERROR));
    assert_eq!(l.aperture(ApertureKind::Svm, 0x1234), Err(Status::ERROR), "not set up yet");
    assert_eq!(l.aperture(ApertureKind::Mmio, 0x1234), Err(Status::ERROR));
    assert_eq!(l.aperture(ApertureKind::Lds, 0x9999), Err(Status::INVALID_PARAMETER));
    assert_eq!(l.mmio_gpus().map(|g| g.gpu_id).collect::<Vec<_>>(), vec![0x1234]);
}

#[test]
fn gfx9_unreserved_svm_probes_one_page_and_reserves_nothing() {
    let mut l = layout(&[gpu(1, 1)], &[gfx9_entry(1)], &FmmConfig::default());
    let mut va = FakeVa::new(0x7fff_f000_0000);
    l.init_svm(&mut va).unwrap();
    let svm = l.svm.unwrap();
    assert_eq!(svm, SvmApertures::Unreserved { aperture: Aperture::new(2 * MIB, TOP_47), align: PAGE, guard_pages: 1 });
    assert!(va.ranges().is_empty(), "the probe page was given back");
    assert_eq!(svm.default_aperture(), svm.coherent_aperture());
    assert_eq!(l.aperture(ApertureKind::Svm, 1), Ok(Aperture::new(2 * MIB, TOP_47)));
    assert!(svm.reservation().is_none() && svm.allocators(PAGE).is_none() && !svm.is_reserved());
    // Placement in unreserved mode: start aligned, growing to page << HSA_MAX_VA_ALIGN.
    assert_eq!(svm.request(8 * MIB, 0, PAGE, 9), Request::new(8 * MIB, 2 * MIB, 1));
    assert_eq!(svm.request(8 * MIB, 0, PAGE, 18), Request::new(8 * MIB, 8 * MIB, 1));
    assert_eq!(svm.request(PAGE, 64 * 1024, PAGE, 9), Request::new(PAGE, 64 * 1024, 1));
    // The memory policy names the whole aperture as the (ignored on gfx9) alternate range.
    let p = l.memory_policy(false, false).unwrap();
    assert_eq!((p.default_policy, p.alternate_policy), (1, 0), "NONCOHERENT default, COHERENT alternate");
    assert_eq!((p.alternate_aperture_base, p.alternate_aperture_size, p.misc_process_flag), (2 * MIB, TOP_47 - 2 * MIB + 1, 0));
    assert_eq!(l.memory_policy(true, true).unwrap().default_policy, 0, "HSA_DISABLE_CACHE: coherent default");
    assert_eq!(l.memory_policy(true, true).unwrap().misc_process_flag, 1);
    // init_svm again is a no-op.
    l.init_svm(&mut va).unwrap();
    assert_eq!(va.calls, 1);
}

#[test]
fn kernel_placed_allocations_are_aligned_and_trimmed() {
    let mut va = FakeVa::new(0x7fff_0000_0000);
    let ap = Aperture::new(2 * MIB, TOP_47);
    let s = reserve_placed(&mut va, ap, Request::new(3 * MIB, 2 * MIB, 1), PAGE).unwrap();
    assert_eq!(s % (2 * MIB), 0);
    assert_eq!(va.ranges(), vec![(s, s + 3 * MIB)], "padding and guards unmapped; only the range stays");
    let t = reserve_placed(&mut va, ap, Request::new(PAGE, PAGE, 0), PAGE).unwrap();
    assert_eq!(va.ranges().len(), 2);
    assert!(t + PAGE <= s || t >= s + 3 * MIB);
    // Outside the aperture: nothing kept.
    let low = Aperture::new(2 * MIB, 4 * GIB - 1);
    assert_eq!(reserve_placed(&mut va, low, Request::new(PAGE, PAGE, 1), PAGE), None);
    assert_eq!(va.ranges().len(), 2);
    // Bad requests and a refusing kernel.
    assert_eq!(reserve_placed(&mut va, ap, Request::new(0, PAGE, 0), PAGE), None);
    assert_eq!(reserve_placed(&mut va, ap, Request::new(PAGE, 3, 0), PAGE), None);
    assert_eq!(reserve_placed(&mut va, ap, Request::new(u64::MAX, PAGE, 1), PAGE), None);
    va.refuse = true;
    assert_eq!(reserve_placed(&mut va, ap, Request::new(PAGE, PAGE, 0), PAGE), None);
}

#[test]
fn hsa_reserve_svm_reserves_one_tib_and_splits_it() {
    let cfg = FmmConfig { reserve_svm: true, ..FmmConfig::default() };
    let mut l = layout(&[gpu(1, 1)], &[gfx9_entry(1)], &cfg);
    assert!(!l.svm_plan.unwrap().try_unreserved);
    let mut va = FakeVa::new(0x7fff_f000_0000);
    l.init_svm(&mut va).unwrap();
    let svm = l.svm.unwrap();
    let SvmApertures::Reserved { reservation, coherent, default, align, guard_pages } = svm else { panic!("{svm:?}") };
    // The hint at the base is honoured: [2 MiB, 1 TiB).
    assert_eq!(reservation, Aperture::new(2 * MIB, SVM_RESERVATION_LIMIT));
    assert_eq!(va.ranges(), vec![(2 * MIB, SVM_RESERVATION_LIMIT + 1)]);
    let quarter = reservation.size() / 4;
    assert_eq!(coherent.base, 2 * MIB);
    assert_eq!(coherent.size(), quarter.next_multiple_of(0x10000));
    assert_eq!(default, Aperture::new(coherent.limit + 1, SVM_RESERVATION_LIMIT));
    assert_eq!((align, guard_pages), (PAGE, 1));
    assert_eq!(svm.heap(), Aperture::new(2 * MIB, SVM_RESERVATION_LIMIT));
    // Reserved placement: grows to 2 MiB, end-aligned, guard after.
    let r = svm.request(8 * MIB, 0, PAGE, 9);
    assert_eq!((r.align, r.align_end, r.guard_before, r.guard_after), (2 * MIB, true, 0, 1));
    let (mut fine, mut coarse) = svm.allocators(PAGE).unwrap();
    assert_eq!((fine.base(), fine.limit(), coarse.base(), coarse.limit()), (coherent.base, coherent.limit, default.base, default.limit));
    let x = coarse.alloc_with(r).unwrap();
    assert_eq!((x + 8 * MIB) % (2 * MIB), 0);
    fine.alloc_with(svm.request(PAGE, 0, PAGE, 9)).unwrap();
    assert_eq!(l.classify(x), Some(Region::SvmDefault));
    assert_eq!(l.classify(coherent.base), Some(Region::SvmCoherent));
    assert_eq!(l.classify(5 << 47), Some(Region::MemHandle));
    assert_eq!(l.classify(0x1000), None);
    let p = l.memory_policy(false, false).unwrap();
    assert_eq!((p.alternate_aperture_base, p.alternate_aperture_size), (coherent.base, coherent.size()));
}

#[test]
fn reservation_search_halves_and_trims() {
    // 40-bit GPUs (gfx8-like): limit 2^40 - 1, so reserved mode without HSA_RESERVE_SVM.
    let mut e = gfx9_entry(1);
    e.gpuvm_limit = (1 << 40) - 1;
    let l = layout(&[gpu(1, 1)], &[e], &FmmConfig::default());
    let plan = l.svm_plan.unwrap();
    assert!(!plan.try_unreserved);
    // Something already sits at 256 GiB: the full TiB and the half TiB at the base don't fit
    // at the hint, the kernel puts them near the top of the address space (above the limit),
    // so the search walks and halves until a range fits.
    let mut va = FakeVa::new(1 << 47);
    va.reserve_fixed(256 * GIB, GIB);
    let svm = plan.init(&mut va, PAGE).unwrap();
    let res = svm.reservation().unwrap();
    assert!(res.limit <= SVM_RESERVATION_LIMIT && res.size() >= SVM_MIN_VM_SIZE, "{res:x?}");
    assert!(res.base >= 2 * MIB);
    // Only the reservation and the obstacle remain: rejected attempts were given back.
    let mut want = vec![(256 * GIB, 257 * GIB), (res.base, res.limit + 1)];
    want.sort();
    assert_eq!(va.ranges(), want);
}

#[test]
fn reservation_above_the_limit_is_trimmed_or_refused() {
    let cfg = FmmConfig { reserve_svm: true, ..FmmConfig::default() };
    let plan = layout(&[gpu(1, 1)], &[gfx9_entry(1)], &cfg).svm_plan.unwrap();
    // A kernel that ignores hints and maps top-down from 2^47: never below the 1 TiB limit.
    // Bounded: hints step through the range; give up quickly by refusing after many calls.
    let mut va = FakeVa::new(1 << 47);
    va.ignore_hints = true;
    va.top = SVM_RESERVATION_LIMIT + 1 + 8 * GIB; // addresses land just above the limit
    let got = plan.init(&mut va, PAGE);
    // Upstream accepts a range when half of it is below the limit, then trims the tail.
    match got {
        Ok(svm) => {
            let res = svm.reservation().unwrap();
            assert!(res.limit <= SVM_RESERVATION_LIMIT);
            assert_eq!(va.ranges(), vec![(res.base, res.limit + 1)], "tail above the limit released");
        }
        Err(e) => panic!("{e:?}"),
    }
    // A kernel that refuses every mapping: failure, nothing left behind.
    let mut va = FakeVa::new(1 << 47);
    va.refuse = true;
    assert_eq!(plan.init(&mut va, PAGE), Err(ApertureError::SvmReservationFailed));
    assert!(va.ranges().is_empty());
}

#[test]
fn a_refused_probe_falls_back_to_reserving() {
    let mut l = layout(&[gpu(1, 1)], &[gfx9_entry(1)], &FmmConfig::default());
    // The kernel only places mappings above the aperture: the unreserved probe fails (the
    // page lands outside), the hinted reservation at the base succeeds.
    let mut va = FakeVa::new(1 << 48);
    l.init_svm(&mut va).unwrap();
    assert!(l.svm.unwrap().is_reserved());
}

#[test]
fn old_gpus_needing_32k_alignment_always_reserve() {
    assert_eq!(vm_alignment(0x6939, PAGE), 0x8000);
    assert_eq!(vm_alignment(0x9874, PAGE), 0x8000);
    assert_eq!(vm_alignment(0x9874, 65536), 65536);
    assert_eq!(vm_alignment(0x740f, PAGE), PAGE);
    let tonga = GpuDesc { gpu_id: 7, node_id: 1, device_id: 0x6920, gfx_version: 0x080002 };
    let mut l = layout(&[tonga], &[gfx9_entry(7)], &FmmConfig::default());
    assert_eq!(l.svm_plan.unwrap().align, 0x8000);
    l.init_svm(&mut FakeVa::new(0x7fff_f000_0000)).unwrap();
    assert!(l.svm.unwrap().is_reserved());
}

#[test]
fn several_gpus_share_the_intersection() {
    let mut a = gfx9_entry(1);
    a.gpuvm_base = 0x1000000;
    let mut b = gfx9_entry(2);
    b.gpuvm_limit = (1 << 44) - 1;
    let l = layout(&[gpu(2, 2), gpu(1, 1)], &[a, b], &FmmConfig::default());
    let p = l.svm_plan.unwrap();
    assert_eq!((p.base, p.limit), (0x1000000, (1 << 44) - 1));
    assert!(!p.try_unreserved, "a 44-bit GPU forces reserved mode");
    assert_eq!(l.kfd_order, vec![1, 2], "KFD order, not topology order");
    assert_eq!(l.gpus.iter().map(|g| g.gpu_id).collect::<Vec<_>>(), vec![2, 1], "topology order");
}

#[test]
fn gpus_the_kfd_omits_or_repeats() {
    // Reported: only GPU 1; an unknown id and a zero id are skipped.
    let mut unknown = gfx9_entry(77);
    unknown.gpuvm_limit = 0x1000;
    let l = layout(&[gpu(1, 1), gpu(2, 2)], &[unknown, gfx9_entry(0), gfx9_entry(1)], &FmmConfig::default());
    assert_eq!(l.kfd_order, vec![1]);
    let g2 = l.gpu(2).unwrap();
    assert!(!g2.reported && g2.lds == Aperture::NONE && !g2.uses_svm);
    assert_eq!(l.aperture(ApertureKind::Lds, 2), Err(Status::ERROR));
    assert_eq!(l.mmio_gpus().count(), 1);
    assert_eq!(l.svm_plan.unwrap().limit, TOP_47, "the unknown entry's tiny GPUVM does not shrink SVM");
    // The same GPU twice is refused.
    let err =
        ApertureLayout::compute(&SystemDesc { gpus: &[gpu(1, 1)], is_dgpu: true }, &[gfx9_entry(1), gfx9_entry(1)], &FmmConfig::default());
    assert_eq!(err.unwrap_err(), ApertureError::DuplicateGpu(1));
    // A GPUVM range with nothing left after the 2 MiB trim.
    let mut tiny = gfx9_entry(1);
    tiny.gpuvm_limit = MIB;
    let err = ApertureLayout::compute(&SystemDesc { gpus: &[gpu(1, 1)], is_dgpu: true }, &[tiny], &FmmConfig::default());
    assert_eq!(err.unwrap_err(), ApertureError::NoSvmRange);
    let mut inverted = gfx9_entry(1);
    inverted.gpuvm_base = 3 * GIB;
    inverted.gpuvm_limit = 2 * GIB;
    let plan = layout(&[gpu(1, 1)], &[inverted], &FmmConfig::default()).svm_plan.unwrap();
    assert_eq!(plan.init(&mut FakeVa::new(1 << 47), PAGE), Err(ApertureError::NoSvmRange));
    let bad_page =
        ApertureLayout::compute(&SystemDesc { gpus: &[], is_dgpu: false }, &[], &FmmConfig { page_size: 3000, ..FmmConfig::default() });
    assert_eq!(bad_page.unwrap_err(), ApertureError::BadPageSize);
}

#[test]
fn old_apu_gets_a_per_gpu_gpuvm_aperture() {
    // IOMMUv2 APU: non-canonical GPUVM at ((id + 1) << 61) + 2^48.
    let base = (1u64 << 61) + (1 << 48);
    let e = kfd_process_device_apertures {
        lds_base: 1 << 61,
        lds_limit: (1 << 61) | 0xFFFF_FFFF,
        scratch_base: (1 << 61) + (1 << 32),
        scratch_limit: (1 << 61) + (1 << 32) + 0xFFFF_FFFF,
        gpuvm_base: base,
        gpuvm_limit: (base & 0xFFFF_FF00_0000_0000) + (1 << 40) - 1,
        gpu_id: 3,
        pad: 0,
    };
    let kaveri = GpuDesc { gpu_id: 3, node_id: 0, device_id: 0x1304, gfx_version: 0x070000 };
    let l = ApertureLayout::compute(&SystemDesc { gpus: &[kaveri], is_dgpu: false }, &[e], &FmmConfig::default()).unwrap();
    let g = l.gpu(3).unwrap();
    assert!(!g.uses_svm && !g.svm_needed, "APU before gfx9 on a system without dGPUs");
    assert_eq!(g.gpuvm, Aperture::new(e.gpuvm_base, e.gpuvm_limit));
    assert!(l.svm_plan.is_none());
    assert_eq!(l.mmio_gpus().count(), 0);
    assert_eq!(l.aperture(ApertureKind::Gpuvm, 3), Ok(g.gpuvm));
    assert_eq!(l.classify(base + GIB), Some(Region::Gpuvm(3)));
    // Its allocator never hands out the aperture base.
    let mut a = g.gpuvm_allocator(PAGE).unwrap();
    let first = a.alloc(PAGE, PAGE, 0).unwrap();
    assert!(first > base);
    assert_eq!(a.lookup(base), Some((base, PAGE)), "the head is taken");
    assert!(l.gpu(3).map(|g| g.mmio).unwrap() == Aperture::NONE);
}

#[test]
fn cpu_only_system_has_no_gpu_apertures() {
    let mut l = ApertureLayout::compute(&SystemDesc { gpus: &[], is_dgpu: false }, &[], &FmmConfig::default()).unwrap();
    assert!(l.gpus.is_empty() && l.kfd_order.is_empty() && l.svm_plan.is_none());
    assert_eq!(l.mem_handle, Aperture::new(1 << 47, (1 << 48) - 1), "nothing to avoid: the first window");
    let mut va = FakeVa::new(1 << 47);
    l.init_svm(&mut va).unwrap();
    assert!(l.svm.is_none() && va.calls == 0);
    assert_eq!(l.aperture(ApertureKind::Lds, 0), Err(Status::INVALID_PARAMETER), "a CPU node has gpu_id 0");
    assert_eq!(l.aperture(ApertureKind::Svm, 0), Err(Status::INVALID_PARAMETER));
    assert!(l.gpu(0).is_none());
    assert!(l.memory_policy(false, false).is_none());
    assert_eq!(l.classify(0x1000), None);
    // A CPU node in a GPU system: KFD entries with gpu_id 0 never match it.
    let l = layout(&[gpu(5, 1)], &[gfx9_entry(0)], &FmmConfig::default());
    assert!(l.svm_plan.is_none() && !l.gpu(5).unwrap().reported);
}

#[test]
fn mmio_pages_are_recorded_per_gpu() {
    let mut l = layout(&[gpu(1, 1)], &[gfx9_entry(1)], &FmmConfig::default());
    assert!(l.set_mmio(1, 0x7000_0000));
    assert!(!l.set_mmio(9, 0x7000_0000));
    assert!(!l.set_mmio(0, 0x7000_0000));
    assert_eq!(l.aperture(ApertureKind::Mmio, 1), Ok(Aperture::new(0x7000_0000, 0x7000_0fff)));
    assert_eq!(MMIO_ALLOC_FLAGS, 0x8000_0000 | 0x0400_0000 | 0x10);
    assert_eq!(mmio_mem_flags().Value, 0x41, "NonPaged (bit 0) and HostAccess (bit 6)");
}

#[test]
fn aperture_ranges() {
    let a = Aperture::new(0x1000, 0x1fff);
    assert!(a.is_valid() && a.contains(0x1000) && a.contains(0x1fff) && !a.contains(0x2000) && !a.contains(0xfff));
    assert_eq!(a.size(), 0x1000);
    assert!(!Aperture::NONE.is_valid() && !Aperture::NONE.contains(0) && Aperture::NONE.size() == 0);
    assert!(!Aperture::new(0, 0x1000).is_valid(), "an aperture at 0 does not exist");
    assert!(!Aperture::new(0x2000, 0x1000).is_valid());
    assert_eq!(Aperture::new(1, u64::MAX).size(), u64::MAX);
    assert!(a.overlaps(&Aperture::new(0x1fff, 0x3000)) && !a.overlaps(&Aperture::new(0x2000, 0x3000)));
    // A reservation too small to split.
    assert!(SvmApertures::split_reserved(Aperture::new(0x10000, 0x10fff), PAGE, 1).is_none());
    assert!(SvmApertures::split_reserved(Aperture::NONE, PAGE, 1).is_none());
    assert!(SvmApertures::split_reserved(Aperture::new(u64::MAX - 0xfffff, u64::MAX), PAGE, 1).is_some(), "no overflow at the top");
    assert!(SvmApertures::split_reserved(Aperture::new(u64::MAX - 0xff, u64::MAX), PAGE, 1).is_none(), "64 KiB rounding overflows");
}

#[test]
fn settings_are_parsed_like_upstream() {
    assert_eq!(scan_u32("3"), Some(3));
    assert_eq!(scan_u32("  12abc"), Some(12));
    assert_eq!(scan_u32("\t+7"), Some(7));
    assert_eq!(scan_u32("-1"), Some(u32::MAX), "sscanf %u wraps negatives");
    assert_eq!(scan_u32("-2"), Some(u32::MAX - 1));
    assert_eq!(scan_u32("4294967296"), Some(0), "truncated to 32 bits");
    assert_eq!(scan_u32("99999999999999999999999"), Some(u32::MAX), "strtoul saturates");
    assert_eq!(scan_u32(""), None);
    assert_eq!(scan_u32("x1"), None);
    assert_eq!(scan_u32("-"), None);
    assert_eq!(scan_u32(" "), None);

    let env = |pairs: &'static [(&'static str, &'static str)]| move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
    let d = FmmConfig::from_env(PAGE, env(&[]));
    assert_eq!(d, FmmConfig::default());
    assert!(d.userptr_for_paged_mem && d.guard_pages == 1 && d.max_va_align_order.is_none());
    let c = FmmConfig::from_env(
        16384,
        env(&[
            ("HSA_DISABLE_CACHE", "1"),
            ("HSA_USERPTR_FOR_PAGED_MEM", "0"),
            ("HSA_CHECK_USERPTR", "yes"),
            ("HSA_RESERVE_SVM", "00"),
            ("HSA_SVM_GUARD_PAGES", "4"),
            ("HSA_HIGH_PRECISION_MODE", ""),
            ("HSA_MAX_VA_ALIGN", "18"),
        ]),
    );
    assert_eq!(c.page_size, 16384);
    assert!(c.disable_cache && !c.userptr_for_paged_mem && c.check_userptr);
    assert!(c.reserve_svm, "only exactly \"0\" is off");
    assert!(c.high_precision_mode, "set to empty is on");
    assert_eq!((c.guard_pages, c.max_va_align_order), (4, Some(18)));
    let g = FmmConfig::from_env(PAGE, env(&[("HSA_SVM_GUARD_PAGES", "many"), ("HSA_MAX_VA_ALIGN", "")]));
    assert_eq!((g.guard_pages, g.max_va_align_order), (1, None), "unreadable numbers give the defaults");
    assert_eq!(g.va_align_order([0x090500]), 18);
    assert_eq!(g.va_align_order([0, 0x090500]), 9);
    assert_eq!(c.va_align_order([0]), 18, "an explicit HSA_MAX_VA_ALIGN wins");
}
