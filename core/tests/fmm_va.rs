//! The VA allocator: placement, alignment (start and end), guard pages, coalescing, fixed
//! addresses, lookups, bad input, the alignment policies, and randomised operation sequences
//! checked against a brute-force model with the invariants after every step.

use hsakmt_core::fmm::va::{
    default_alignment, default_max_va_align_order, grow_alignment, reserved_request, Request, VaAllocator, VaError,
};
use hsakmt_core::fmm::GPU_HUGE_PAGE_SIZE;

const PAGE: u64 = 4096;
const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A small deterministic PRNG (splitmix64) so failures replay.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn ok(a: &VaAllocator) {
    if let Err(e) = a.check_invariants() {
        panic!("invariant broken: {e}\nholes: {:x?}\nlive: {:x?}", a.holes().collect::<Vec<_>>(), a.iter().collect::<Vec<_>>());
    }
}

/// A 1 GiB aperture at 1 GiB.
fn gib_aperture() -> VaAllocator {
    VaAllocator::new(GIB, 2 * GIB - 1, PAGE).unwrap()
}

#[test]
fn new_rejects_bad_apertures() {
    assert_eq!(VaAllocator::new(0x2000, 0x1fff, PAGE).unwrap_err(), VaError::BadAperture, "base > limit");
    assert_eq!(VaAllocator::new(0x1001, 0x1_ffff, PAGE).unwrap_err(), VaError::BadAperture, "unaligned base");
    assert_eq!(VaAllocator::new(0x1000, 0x1_fffe, PAGE).unwrap_err(), VaError::BadAperture, "limit + 1 unaligned");
    assert_eq!(VaAllocator::new(0x1000, 0x1_ffff, 3000).unwrap_err(), VaError::BadAperture, "page not a power of two");
    assert_eq!(VaAllocator::new(0x1000, 0x1_ffff, 0).unwrap_err(), VaError::BadAperture, "page 0");
    assert_eq!(VaAllocator::new(0x1000, u64::MAX, PAGE).unwrap_err(), VaError::BadAperture, "reaches 2^64");
    let a = VaAllocator::new(0, u64::MAX - PAGE, PAGE).unwrap();
    ok(&a);
    assert_eq!(a.free_bytes(), u64::MAX - PAGE + 1);
    let one = VaAllocator::new(PAGE, 2 * PAGE - 1, PAGE).unwrap();
    assert_eq!((one.base(), one.limit(), one.free_bytes(), one.largest_hole()), (PAGE, 2 * PAGE - 1, PAGE, PAGE));
}

#[test]
fn fresh_aperture_fills_bottom_up() {
    let mut a = gib_aperture();
    let x = a.alloc(PAGE, PAGE, 0).unwrap();
    let y = a.alloc(3 * PAGE, PAGE, 0).unwrap();
    let z = a.alloc(PAGE, PAGE, 0).unwrap();
    assert_eq!((x, y, z), (GIB, GIB + PAGE, GIB + 4 * PAGE));
    ok(&a);
    assert_eq!(a.len(), 3);
    assert_eq!(a.free_bytes(), GIB - 5 * PAGE);
    assert_eq!(a.iter().collect::<Vec<_>>(), vec![(x, PAGE), (y, 3 * PAGE), (z, PAGE)]);
}

#[test]
fn bad_size_and_alignment_are_rejected_without_change() {
    let mut a = gib_aperture();
    let before = a.clone().holes().collect::<Vec<_>>();
    assert_eq!(a.alloc(0, PAGE, 0), Err(VaError::BadSize));
    assert_eq!(a.alloc(PAGE + 1, PAGE, 0), Err(VaError::BadSize));
    assert_eq!(a.alloc(PAGE, 0, 0), Err(VaError::BadAlignment));
    assert_eq!(a.alloc(PAGE, 3 * PAGE, 0), Err(VaError::BadAlignment));
    assert_eq!(a.alloc(PAGE, u64::MAX, 0), Err(VaError::BadAlignment));
    assert_eq!(a.alloc(2 * GIB, PAGE, 0), Err(VaError::NoSpace));
    assert_eq!(a.alloc(PAGE, 1 << 63, 0), Err(VaError::NoSpace), "alignment beyond the aperture");
    assert_eq!(a.alloc(PAGE, PAGE, u32::MAX), Err(VaError::NoSpace), "guards larger than the aperture");
    assert_eq!(a.alloc(u64::MAX - PAGE + 1, PAGE, 1), Err(VaError::NoSpace), "size + guards overflows");
    assert_eq!(a.holes().collect::<Vec<_>>(), before);
    assert!(a.is_empty());
    ok(&a);
}

#[test]
fn every_power_of_two_alignment_is_honoured() {
    let mut a = VaAllocator::new(PAGE, (1 << 40) - 1, PAGE).unwrap();
    // Below the page size means page aligned.
    for align in [1, 2, 64, 2048] {
        let s = a.alloc(PAGE, align, 0).unwrap();
        assert_eq!(s % PAGE, 0);
    }
    for shift in 12..=36 {
        let align = 1u64 << shift;
        let s = a.alloc(PAGE, align, 0).unwrap();
        assert_eq!(s % align, 0, "align {align:#x} gave {s:#x}");
        ok(&a);
    }
}

#[test]
fn end_alignment_puts_the_end_on_the_boundary() {
    let mut a = gib_aperture();
    a.alloc(PAGE, PAGE, 0).unwrap();
    for size in [PAGE, 3 * PAGE, 64 * 1024, 5 * MIB] {
        let req = Request { size, align: 2 * MIB, guard_before: 0, guard_after: 0, align_end: true };
        let s = a.alloc_with(req).unwrap();
        assert_eq!((s + size) % (2 * MIB), 0, "size {size:#x} at {s:#x}");
        ok(&a);
    }
}

#[test]
fn guard_pages_are_reserved_around_and_released_with_the_range() {
    let mut a = gib_aperture();
    let x = a.alloc(2 * PAGE, PAGE, 1).unwrap();
    assert_eq!(x, GIB + PAGE, "leading guard below the first allocation");
    let y = a.alloc(PAGE, PAGE, 1).unwrap();
    assert_eq!(y, x + 2 * PAGE + 2 * PAGE, "one trailing guard, then the next one's leading guard");
    ok(&a);
    // Guard pages belong to nobody and cannot be taken.
    assert_eq!(a.lookup(x - 1), None);
    assert_eq!(a.lookup(x + 2 * PAGE), None);
    assert_eq!(a.alloc_at(x - PAGE, PAGE, 0), Err(VaError::Overlap));
    assert_eq!(a.alloc_at(x + 2 * PAGE, PAGE, 0), Err(VaError::Overlap));
    assert_eq!(a.free_bytes(), GIB - 7 * PAGE);
    // Freeing gives the guards back: the aperture is one hole again.
    assert_eq!(a.free(x), Some(2 * PAGE));
    assert_eq!(a.free(y), Some(PAGE));
    assert_eq!(a.holes().collect::<Vec<_>>(), vec![(GIB, 2 * GIB)]);
    ok(&a);
}

#[test]
fn reserved_request_guards_follow_the_object_only() {
    let mut a = gib_aperture();
    let req = Request { size: PAGE, align: PAGE, guard_before: 0, guard_after: 2, align_end: false };
    let x = a.alloc_with(req).unwrap();
    let y = a.alloc_with(req).unwrap();
    assert_eq!((x, y), (GIB, GIB + 3 * PAGE));
    assert_eq!(a.alloc_at(GIB + PAGE, PAGE, 0), Err(VaError::Overlap), "trailing guard is taken");
    a.free(x).unwrap();
    a.free(y).unwrap();
    assert_eq!(a.free_bytes(), GIB);
    ok(&a);
}

#[test]
fn free_coalesces_with_both_neighbours() {
    let mut a = gib_aperture();
    let v: Vec<u64> = (0..5).map(|_| a.alloc(PAGE, PAGE, 0).unwrap()).collect();
    a.free(v[1]).unwrap();
    a.free(v[3]).unwrap();
    assert_eq!(a.holes().count(), 3, "two interior holes plus the tail");
    ok(&a);
    a.free(v[2]).unwrap(); // joins the holes of v[1] and v[3]
    assert_eq!(a.holes().collect::<Vec<_>>(), vec![(v[1], v[4]), (v[4] + PAGE, 2 * GIB)]);
    ok(&a);
    a.free(v[4]).unwrap(); // joins with the tail
    a.free(v[0]).unwrap(); // joins with everything
    assert_eq!(a.holes().collect::<Vec<_>>(), vec![(GIB, 2 * GIB)]);
    assert_eq!(a.largest_hole(), GIB);
    ok(&a);
}

#[test]
fn free_needs_the_exact_start_and_catches_double_frees() {
    let mut a = gib_aperture();
    let x = a.alloc(4 * PAGE, PAGE, 1).unwrap();
    assert_eq!(a.free(x + PAGE), None, "interior address");
    assert_eq!(a.free(x - PAGE), None, "guard page");
    assert_eq!(a.free(0), None, "outside the aperture");
    assert_eq!(a.size_of(x), Some(4 * PAGE));
    assert_eq!(a.free(x), Some(4 * PAGE));
    assert_eq!(a.free(x), None, "double free");
    assert_eq!(a.size_of(x), None);
    ok(&a);
}

#[test]
fn fixed_addresses_must_be_free_aligned_and_inside() {
    let mut a = gib_aperture();
    let x = a.alloc_at(GIB + 16 * PAGE, 4 * PAGE, 0).unwrap();
    assert_eq!(x, GIB + 16 * PAGE);
    assert_eq!(a.alloc_at(x, PAGE, 0), Err(VaError::Overlap), "same start");
    assert_eq!(a.alloc_at(x + 3 * PAGE, 4 * PAGE, 0), Err(VaError::Overlap), "overlaps the tail");
    assert_eq!(a.alloc_at(x - 2 * PAGE, 4 * PAGE, 0), Err(VaError::Overlap), "overlaps the head");
    assert_eq!(a.alloc_at(x - 8 * PAGE, 16 * PAGE, 0), Err(VaError::Overlap), "covers it");
    assert_eq!(a.alloc_at(x + 4 * PAGE, PAGE, 1), Err(VaError::Overlap), "leading guard would overlap");
    assert_eq!(a.alloc_at(x + 1, PAGE, 0), Err(VaError::Unaligned));
    assert_eq!(a.alloc_at(GIB - PAGE, PAGE, 0), Err(VaError::OutOfAperture));
    assert_eq!(a.alloc_at(GIB, PAGE, 1), Err(VaError::OutOfAperture), "guard below the base");
    assert_eq!(a.alloc_at(2 * GIB - PAGE, PAGE, 1), Err(VaError::OutOfAperture), "guard past the limit");
    assert_eq!(a.alloc_at(u64::MAX - PAGE + 1, PAGE, 0), Err(VaError::OutOfAperture));
    assert_eq!(a.alloc_at(x, 0, 0), Err(VaError::BadSize));
    // Touching neighbours are fine.
    assert_eq!(a.alloc_at(x + 4 * PAGE, PAGE, 0), Ok(x + 4 * PAGE));
    assert_eq!(a.alloc_at(x - PAGE, PAGE, 0), Ok(x - PAGE));
    assert_eq!(a.alloc_at(GIB, PAGE, 0), Ok(GIB));
    assert_eq!(a.alloc_at(2 * GIB - PAGE, PAGE, 0), Ok(2 * GIB - PAGE));
    assert_eq!(a.len(), 5);
    ok(&a);
}

#[test]
fn lookup_finds_any_address_inside_a_live_range() {
    let mut a = gib_aperture();
    let x = a.alloc(3 * PAGE, PAGE, 1).unwrap();
    let y = a.alloc(PAGE, PAGE, 0).unwrap();
    for addr in [x, x + 1, x + PAGE, x + 3 * PAGE - 1] {
        assert_eq!(a.lookup(addr), Some((x, 3 * PAGE)), "{addr:#x}");
    }
    assert_eq!(a.lookup(x + 3 * PAGE), None, "one past the end (guard)");
    assert_eq!(a.lookup(y + PAGE - 1), Some((y, PAGE)));
    assert_eq!(a.lookup(y + PAGE), None);
    assert_eq!(a.lookup(0), None);
    assert_eq!(a.lookup(u64::MAX), None);
    a.free(x).unwrap();
    assert_eq!(a.lookup(x + 1), None);
    assert!(a.contains(GIB) && a.contains(2 * GIB - 1) && !a.contains(2 * GIB) && !a.contains(GIB - 1));
}

#[test]
fn best_fit_reuses_the_tightest_hole() {
    let mut a = gib_aperture();
    let v: Vec<u64> = [8, 1, 2, 1, 4, 1].iter().map(|&n| a.alloc(n * PAGE, PAGE, 0).unwrap()).collect();
    a.free(v[0]).unwrap(); // 8-page hole
    a.free(v[2]).unwrap(); // 2-page hole
    a.free(v[4]).unwrap(); // 4-page hole
    assert_eq!(a.alloc(2 * PAGE, PAGE, 0), Ok(v[2]));
    assert_eq!(a.alloc(3 * PAGE, PAGE, 0), Ok(v[4]));
    assert_eq!(a.alloc(5 * PAGE, PAGE, 0), Ok(v[0]));
    ok(&a);
}

#[test]
fn a_tight_aligned_fit_is_found_when_nothing_else_fits() {
    // Many holes of 2 MiB + one page, each starting one page past a 2 MiB boundary: a 2 MiB
    // block aligned to 2 MiB fits none of them. One hole of the same size starts exactly on a
    // boundary; it must be found even though it is neither among the first probes nor larger.
    let mut a = VaAllocator::new(0, 64 * GIB - 1, PAGE).unwrap();
    let hole = 2 * MIB + PAGE;
    let mut fillers = Vec::new();
    let mut target = 0;
    for i in 0..40u64 {
        let start = i * 4 * MIB + if i == 33 { 0 } else { PAGE };
        if i == 33 {
            target = start;
        }
        // Fill everything of this 4 MiB stripe except [start, start + hole).
        if start > i * 4 * MIB {
            fillers.push(a.alloc_at(i * 4 * MIB, start - i * 4 * MIB, 0).unwrap());
        }
        a.alloc_at(start + hole, (i + 1) * 4 * MIB - start - hole, 0).unwrap();
    }
    a.alloc_at(160 * MIB, 64 * GIB - 160 * MIB, 0).unwrap();
    ok(&a);
    assert_eq!(a.alloc(2 * MIB, 2 * MIB, 0), Ok(target));
    assert_eq!(a.alloc(2 * MIB, 2 * MIB, 0), Err(VaError::NoSpace));
    ok(&a);
}

#[test]
fn clear_releases_everything() {
    let mut a = gib_aperture();
    for _ in 0..10 {
        a.alloc(PAGE, 64 * 1024, 1).unwrap();
    }
    a.clear();
    assert!(a.is_empty());
    assert_eq!(a.holes().collect::<Vec<_>>(), vec![(GIB, 2 * GIB)]);
    ok(&a);
}

/// Would `req` fit anywhere? Brute force over the holes (the allocator's answer must agree).
fn fits_somewhere(a: &VaAllocator, req: Request) -> bool {
    let page = a.page_size();
    let align = req.align.max(page);
    let (before, after) = (req.guard_before as u64 * page, req.guard_after as u64 * page);
    a.holes().any(|(s, e)| {
        let lo = s + before;
        let phase = if req.align_end { align.wrapping_sub(req.size) & (align - 1) } else { 0 };
        let start = lo + (phase.wrapping_sub(lo) & (align - 1));
        start.checked_add(req.size + after).is_some_and(|end| end <= e)
    })
}

#[test]
fn random_sequences_keep_the_invariants_and_agree_with_a_model() {
    for seed in 0..24u64 {
        let mut rng = Rng(seed);
        // Small apertures so that it fills up and NoSpace is exercised.
        let pages = 64 + rng.below(4096);
        let base = rng.below(1 << 20) * PAGE;
        let mut a = VaAllocator::new(base, base + pages * PAGE - 1, PAGE).unwrap();
        let mut model: Vec<(u64, u64)> = Vec::new();
        for step in 0..3000 {
            match rng.below(10) {
                0..=4 => {
                    let max_pages = if rng.below(8) == 0 { 256 } else { 8 };
                    let req = Request {
                        size: (1 + rng.below(max_pages)) * PAGE,
                        align: 1 << rng.below(22),
                        guard_before: rng.below(3) as u32,
                        guard_after: rng.below(3) as u32,
                        align_end: rng.below(4) == 0,
                    };
                    let expect_fit = fits_somewhere(&a, req);
                    match a.alloc_with(req) {
                        Ok(s) => {
                            assert!(expect_fit);
                            let align = req.align.max(PAGE);
                            let anchor = if req.align_end { s + req.size } else { s };
                            assert_eq!(anchor % align, 0, "seed {seed} step {step}");
                            assert!(model.iter().all(|&(m, n)| s + req.size <= m || m + n <= s), "overlap");
                            model.push((s, req.size));
                        }
                        Err(VaError::NoSpace) => assert!(!expect_fit, "seed {seed} step {step}: {req:?} fits but was refused"),
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
                5 => {
                    let addr = base + rng.below(pages) * PAGE;
                    let size = (1 + rng.below(8)) * PAGE;
                    let free_model = model.iter().all(|&(m, n)| addr + size <= m || m + n <= addr);
                    match a.alloc_at(addr, size, 0) {
                        Ok(s) => {
                            assert!(free_model && addr + size <= base + pages * PAGE);
                            model.push((s, size));
                        }
                        Err(VaError::Overlap) | Err(VaError::OutOfAperture) => {}
                        Err(e) => panic!("unexpected {e:?}"),
                    }
                }
                6..=8 if !model.is_empty() => {
                    let i = rng.below(model.len() as u64) as usize;
                    let (s, n) = model.swap_remove(i);
                    assert_eq!(a.free(s), Some(n));
                    assert_eq!(a.free(s), None, "double free");
                }
                _ => {
                    let addr = base + rng.below(pages * PAGE);
                    let want = model.iter().copied().find(|&(m, n)| addr >= m && addr < m + n);
                    assert_eq!(a.lookup(addr), want, "seed {seed} step {step} lookup {addr:#x}");
                }
            }
            ok(&a);
            assert_eq!(a.len(), model.len());
        }
        for (s, n) in model.drain(..) {
            assert_eq!(a.free(s), Some(n));
        }
        assert_eq!(a.holes().collect::<Vec<_>>(), vec![(base, base + pages * PAGE)], "seed {seed}: everything coalesced back");
        ok(&a);
    }
}

#[test]
fn big_buffers_get_big_alignment() {
    // Unreserved apertures: from the page size up to page << HSA_MAX_VA_ALIGN.
    assert_eq!(default_alignment(PAGE, PAGE, 9), PAGE);
    assert_eq!(default_alignment(2 * PAGE, PAGE, 9), 2 * PAGE);
    assert_eq!(default_alignment(3 * PAGE, PAGE, 9), 2 * PAGE);
    assert_eq!(default_alignment(MIB + PAGE, PAGE, 9), MIB);
    assert_eq!(default_alignment(3 * MIB, PAGE, 9), 2 * MIB);
    assert_eq!(default_alignment(64 * GIB, PAGE, 9), 2 * MIB, "order 9 caps at 2 MiB");
    assert_eq!(default_alignment(64 * GIB, PAGE, 18), GIB, "order 18 caps at 1 GiB");
    assert_eq!(default_alignment(GIB - PAGE, PAGE, 18), 512 * MIB);
    assert_eq!(default_alignment(64 * GIB, PAGE, 0), PAGE);
    assert_eq!(default_alignment(u64::MAX, PAGE, 200), 1 << 63, "huge order saturates");
    assert_eq!(grow_alignment(u64::MAX, 1 << 62, u64::MAX), 1 << 63, "no overflow at the top");
    assert_eq!(grow_alignment(u64::MAX, 0, 2 * MIB), 0, "0 stays 0 (no endless doubling)");
    assert_eq!(reserved_request(PAGE, 0, 0, PAGE, 0).align, 0, "a zero alignment is left for alloc to refuse");
    // HSA_MAX_VA_ALIGN's default: 18 only when every node (CPU nodes are gfx 0) is gfx950.
    assert_eq!(default_max_va_align_order([0x090500, 0x090500]), 18);
    assert_eq!(default_max_va_align_order([0, 0x090500]), 9);
    assert_eq!(default_max_va_align_order([0x090402]), 9);
    // Reserved apertures: grow up to 2 MiB; end-aligned unless an alignment was asked for;
    // the guard follows the object.
    let r = reserved_request(8 * MIB, 0, PAGE, PAGE, 1);
    assert_eq!(r, Request { size: 8 * MIB, align: GPU_HUGE_PAGE_SIZE, guard_before: 0, guard_after: 1, align_end: true });
    let r = reserved_request(8 * MIB, 64 * 1024, PAGE, PAGE, 1);
    assert_eq!((r.align, r.align_end), (GPU_HUGE_PAGE_SIZE, false));
    let r = reserved_request(PAGE, 0, 0x8000, PAGE, 0);
    assert_eq!((r.align, r.align_end), (0x8000, false), "an aperture alignment above the page is start alignment");
    let r = reserved_request(PAGE, 4 * MIB, PAGE, PAGE, 0);
    assert_eq!(r.align, 4 * MIB, "an explicit alignment above 2 MiB is kept");
}
