//! The buffer-object table: insert / remove / lookup by any address inside a BO, overlapping
//! GPU ranges refused, user pointers found by CPU address (overlapping registrations allowed,
//! as upstream), `HsaPointerInfo` per BO kind, node lists, handles, and randomised sequences
//! checked against a model with the invariants after every step.

use hsakmt_core::abi::hsakmt::{
    HsaMemFlags, HSA_POINTER_ALLOCATED, HSA_POINTER_REGISTERED_GRAPHICS, HSA_POINTER_REGISTERED_SHARED, HSA_POINTER_REGISTERED_USER,
    HSA_POINTER_RESERVED_ADDR,
};
use hsakmt_core::fmm::bo::{Bo, BoError, BoKind, BoTable, NodeList};

const PAGE: u64 = 4096;

fn flags(v: u32) -> HsaMemFlags {
    HsaMemFlags { Value: v }
}

fn alloc_bo(start: u64, size: u64) -> Bo {
    Bo::new(BoKind::Allocated, start, size, flags(0x41), 1)
}

fn ok(t: &BoTable) {
    if let Err(e) = t.check_invariants() {
        panic!("invariant broken: {e}: {:?}", t.iter().collect::<Vec<_>>());
    }
}

#[test]
fn find_by_any_address_inside() {
    let mut t = BoTable::new();
    t.insert(alloc_bo(0x10000, 3 * PAGE)).unwrap();
    t.insert(alloc_bo(0x20000, PAGE)).unwrap();
    ok(&t);
    for a in [0x10000, 0x10001, 0x10000 + 3 * PAGE - 1] {
        assert_eq!(t.find_gpu(a).map(Bo::start), Some(0x10000), "{a:#x}");
    }
    assert!(t.find_gpu(0x10000 + 3 * PAGE).is_none());
    assert!(t.find_gpu(0xffff).is_none());
    assert!(t.find_gpu(0).is_none() && t.find_gpu(u64::MAX).is_none());
    assert_eq!(t.find(0x20fff).map(Bo::start), Some(0x20000));
    assert_eq!(t.get(0x20000).map(Bo::size), Some(PAGE));
    assert!(t.get(0x20001).is_none(), "get needs the exact start");
    t.find_gpu_mut(0x10005).unwrap().user_data = 99;
    assert_eq!(t.get(0x10000).unwrap().user_data, 99);
    assert_eq!(t.iter().map(Bo::start).collect::<Vec<_>>(), vec![0x10000, 0x20000]);
    assert_eq!(t.len(), 2);
}

#[test]
fn overlapping_or_empty_gpu_ranges_are_refused() {
    let mut t = BoTable::new();
    t.insert(alloc_bo(0x10000, 4 * PAGE)).unwrap();
    for (s, n) in [(0x10000, PAGE), (0x12000, 4 * PAGE), (0xf000, 2 * PAGE), (0x8000, 0x100000), (0x13fff, 1)] {
        assert_eq!(t.insert(alloc_bo(s, n)).unwrap_err(), BoError::Overlap, "{s:#x}+{n:#x}");
    }
    assert_eq!(t.insert(alloc_bo(0x30000, 0)).unwrap_err(), BoError::BadRange);
    assert_eq!(t.insert(alloc_bo(u64::MAX - PAGE + 2, PAGE)).unwrap_err(), BoError::BadRange);
    let bad_user = Bo::new(BoKind::Userptr, 0x40000, PAGE, flags(0), 0).with_userptr(u64::MAX, 2);
    assert_eq!(t.insert(bad_user).unwrap_err(), BoError::BadRange);
    let empty_user = Bo::new(BoKind::Userptr, 0x40000, PAGE, flags(0), 0).with_userptr(0x1000, 0);
    assert_eq!(t.insert(empty_user).unwrap_err(), BoError::BadRange);
    // Touching is fine, on both sides.
    t.insert(alloc_bo(0xf000, PAGE)).unwrap();
    t.insert(alloc_bo(0x14000, PAGE)).unwrap();
    t.insert(alloc_bo(u64::MAX - 2 * PAGE + 1, PAGE)).unwrap();
    assert_eq!(t.insert(alloc_bo(u64::MAX - PAGE + 1, PAGE)).unwrap_err(), BoError::BadRange, "ends at 2^64");
    assert_eq!(t.len(), 4);
    ok(&t);
}

#[test]
fn remove_needs_the_exact_start() {
    let mut t = BoTable::new();
    t.insert(alloc_bo(0x10000, 2 * PAGE)).unwrap();
    assert!(t.remove(0x10001).is_none());
    assert_eq!(t.remove(0x10000).map(|b| b.size()), Some(2 * PAGE));
    assert!(t.remove(0x10000).is_none(), "twice");
    assert!(t.is_empty() && t.find_gpu(0x10000).is_none());
    ok(&t);
}

#[test]
fn user_pointers_are_found_by_cpu_address() {
    let mut t = BoTable::new();
    // A user pointer at an unaligned CPU address; its GPU range elsewhere.
    let u = Bo::new(BoKind::Userptr, 0x7000_0000, 2 * PAGE, flags(0), 2).with_userptr(0x5555_0123, 5000);
    t.insert(u).unwrap();
    t.insert(alloc_bo(0x5555_0000, PAGE)).unwrap(); // a GPU range that coincides with the CPU range
    ok(&t);
    assert_eq!(t.find_userptr(0x5555_0123).map(Bo::start), Some(0x7000_0000));
    assert_eq!(t.find_userptr(0x5555_0123 + 4999).map(Bo::start), Some(0x7000_0000));
    assert!(t.find_userptr(0x5555_0123 + 5000).is_none());
    assert!(t.find_userptr(0x5555_0122).is_none());
    // `find` tries user pointers first, as upstream.
    assert_eq!(t.find(0x5555_0200).map(Bo::start), Some(0x7000_0000));
    assert_eq!(t.find(0x5555_0000).map(Bo::start), Some(0x5555_0000));
    assert_eq!(t.find(0x7000_0010).map(Bo::start), Some(0x7000_0000), "and then GPU ranges");
    assert_eq!(t.find_userptr_exact(0x5555_0123, 5000).map(Bo::start), Some(0x7000_0000));
    assert_eq!(t.find_userptr_exact(0x5555_0123, 0).map(Bo::start), Some(0x7000_0000));
    assert!(t.find_userptr_exact(0x5555_0123, 4096).is_none());
    assert!(t.find_userptr_exact(0x5555_0124, 0).is_none());
    assert!(t.userptr_overlaps(0x5555_0000, 0x200));
    assert!(t.userptr_overlaps(0x5555_1000, PAGE));
    assert!(!t.userptr_overlaps(0x5555_0123 + 5000, PAGE));
    assert!(!t.userptr_overlaps(0x5555_0000, 0x123));
    assert!(!t.userptr_overlaps(0x5555_0000, 0));
    assert!(t.userptr_overlaps(u64::MAX, 2), "a wrapping range is refused");
    t.find_userptr_mut(0x5555_0200).unwrap().registration_count += 1;
    // Removing by GPU start drops the CPU index entry too.
    t.remove(0x7000_0000).unwrap();
    assert!(t.find_userptr(0x5555_0200).is_none());
    ok(&t);
}

#[test]
fn overlapping_registrations_coexist() {
    let mut t = BoTable::new();
    let reg = |gpu: u64, cpu: u64, size: u64| Bo::new(BoKind::Userptr, gpu, 16 * PAGE, flags(0), 0).with_userptr(cpu, size);
    t.insert(reg(0x100_0000, 0x1000, 8 * PAGE)).unwrap(); // [0x1000, 0x9000)
    t.insert(reg(0x200_0000, 0x3000, 2 * PAGE)).unwrap(); // [0x3000, 0x5000), inside the first
    t.insert(reg(0x300_0000, 0x3000, 4 * PAGE)).unwrap(); // same start, longer
    ok(&t);
    // A registration starting exactly at the address wins (the shortest), else the closest below.
    assert_eq!(t.find_userptr(0x3000).map(Bo::start), Some(0x200_0000));
    assert_eq!(t.find_userptr(0x4fff).map(Bo::start), Some(0x300_0000));
    assert_eq!(t.find_userptr(0x5000).map(Bo::start), Some(0x300_0000));
    assert_eq!(t.find_userptr(0x7000).map(Bo::start), Some(0x100_0000));
    assert_eq!(t.find_userptr(0x1000).map(Bo::start), Some(0x100_0000));
    assert!(t.find_userptr(0x9000).is_none());
    // Exact lookups: size-qualified, or size 0 only when unambiguous.
    assert_eq!(t.find_userptr_exact(0x3000, 4 * PAGE).map(Bo::start), Some(0x300_0000));
    assert!(t.find_userptr_exact(0x3000, 0).is_none(), "two registrations start at 0x3000");
    assert_eq!(t.find_userptr_exact(0x1000, 0).map(Bo::start), Some(0x100_0000));
    t.remove(0x200_0000).unwrap();
    assert_eq!(t.find_userptr_exact(0x3000, 0).map(Bo::start), Some(0x300_0000));
    ok(&t);
}

#[test]
fn pointer_info_per_kind() {
    let mut bo = alloc_bo(0x7f00_0000_0000, 4 * PAGE).with_handle(0x1234, (0x1234u64 << 32) | 7);
    bo.user_data = 0xdead;
    bo.mapped_nodes.insert(2);
    bo.mapped_nodes.insert(1);
    let info = bo.pointer_info(PAGE);
    let (ty, node, fl, cpu, gpu, size) = (info.Type, info.Node, info.MemFlags.Value, info.CPUAddress, info.GPUAddress, info.SizeInBytes);
    assert_eq!((ty, node, fl), (HSA_POINTER_ALLOCATED, 1, 0x41));
    assert_eq!((cpu as u64, gpu, size), (0x7f00_0000_0000, 0x7f00_0000_0000, 4 * PAGE));
    let (nm, mapped, nr, reg, ud) = (info.NMappedNodes, info.MappedNodes, info.NRegisteredNodes, info.RegisteredNodes, info.UserData);
    assert_eq!((nm, nr, ud as u64), (2, 0, 0xdead));
    assert!(reg.is_null(), "no registered nodes: null array");
    assert_eq!(mapped, bo.mapped_nodes.as_slice().as_ptr());
    assert_eq!(bo.mapped_nodes.as_slice(), &[2, 1], "insertion order, as upstream hands it out");

    // A user pointer: the user's address and size; the GPU address keeps the page offset.
    let mut u = Bo::new(BoKind::Userptr, 0x7000_0000, 2 * PAGE, flags(0), 3).with_userptr(0x5555_0123, 5000);
    u.registered_nodes.set(&[1, 2, 1]);
    let info = u.pointer_info(PAGE);
    let (ty, cpu, gpu, size, nr) = (info.Type, info.CPUAddress, info.GPUAddress, info.SizeInBytes, info.NRegisteredNodes);
    assert_eq!((ty, cpu as u64, gpu, size, nr), (HSA_POINTER_REGISTERED_USER, 0x5555_0123, 0x7000_0123, 5000, 2));
    assert!(!info.RegisteredNodes.is_null());

    for (kind, ty) in [
        (BoKind::Reserved, HSA_POINTER_RESERVED_ADDR),
        (BoKind::IpcImport, HSA_POINTER_REGISTERED_SHARED),
        (BoKind::DmabufImport, HSA_POINTER_REGISTERED_SHARED),
        (BoKind::Graphics, HSA_POINTER_REGISTERED_GRAPHICS),
    ] {
        let info = Bo::new(kind, 0x1_0000_0000, PAGE, flags(0), 0).pointer_info(PAGE);
        let (t, cpu, gpu) = (info.Type, info.CPUAddress, info.GPUAddress);
        assert_eq!((t, gpu), (ty, 0x1_0000_0000), "{kind:?}");
        assert!(cpu.is_null(), "{kind:?}: no CPU address reported");
    }
    assert!(BoKind::Userptr.is_registration() && BoKind::Graphics.is_registration() && BoKind::IpcImport.is_registration());
    assert!(!BoKind::Allocated.is_registration() && !BoKind::Reserved.is_registration());
}

#[test]
fn handles_and_node_lists() {
    let bo = alloc_bo(0x10000, PAGE).with_handle(1, 0x1_0000_0001).with_handle(2, 0x2_0000_0005).with_handle(1, 0x1_0000_0009);
    assert_eq!(bo.primary_handle(), Some(0x1_0000_0001));
    assert_eq!(bo.handle(2), Some(0x2_0000_0005));
    assert_eq!(bo.handle(1), Some(0x1_0000_0001), "the first for that GPU");
    assert_eq!(bo.handle(3), None);
    assert_eq!(alloc_bo(0, PAGE).primary_handle(), None);

    let mut l = NodeList::new();
    assert!(l.insert(3) && l.insert(1) && !l.insert(3));
    assert_eq!(l.as_slice(), &[3, 1]);
    assert!(l.contains(1) && !l.contains(2));
    assert!(l.remove(3) && !l.remove(3));
    assert_eq!(l.as_slice(), &[1]);
    l.set(&[5, 5, 4]);
    assert_eq!((l.as_slice(), l.len()), (&[5, 4][..], 2));
    l.clear();
    assert!(l.is_empty());
    let s = format!("{:?}", alloc_bo(0x10000, PAGE));
    assert!(s.contains("0x10000") && s.contains("Allocated"), "{s}");
}

#[test]
fn drain_empties_every_index() {
    let mut t = BoTable::new();
    t.insert(alloc_bo(0x10000, PAGE)).unwrap();
    t.insert(Bo::new(BoKind::Userptr, 0x20000, PAGE, flags(0), 0).with_userptr(0x9000, 10)).unwrap();
    let all: Vec<u64> = t.drain().map(|b| b.start()).collect();
    assert_eq!(all, vec![0x10000, 0x20000]);
    assert!(t.is_empty() && t.find_userptr(0x9000).is_none());
    ok(&t);
    for b in t.iter_mut() {
        b.user_data = 1;
    }
}

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

#[test]
fn random_sequences_agree_with_a_model() {
    for seed in 0..16u64 {
        let mut rng = Rng(seed);
        let mut t = BoTable::new();
        // (gpu start, gpu size, optional cpu range)
        // (start, size, user range) of every live BO
        type Shadow = (u64, u64, Option<(u64, u64)>);
        let mut model: Vec<Shadow> = Vec::new();
        for step in 0..2000 {
            match rng.below(6) {
                0..=2 => {
                    let start = rng.below(512) * PAGE;
                    let size = (1 + rng.below(8)) * PAGE;
                    let user = (rng.below(3) == 0).then(|| (rng.below(1 << 20), 1 + rng.below(5 * PAGE)));
                    let mut bo = Bo::new(if user.is_some() { BoKind::Userptr } else { BoKind::Allocated }, start, size, flags(0), 0);
                    if let Some((c, s)) = user {
                        bo = bo.with_userptr(c, s);
                    }
                    let free = model.iter().all(|&(m, n, _)| start + size <= m || m + n <= start);
                    assert_eq!(t.insert(bo).is_ok(), free, "seed {seed} step {step}");
                    if free {
                        model.push((start, size, user));
                    }
                }
                3 if !model.is_empty() => {
                    let i = rng.below(model.len() as u64) as usize;
                    let (s, _, _) = model.swap_remove(i);
                    assert!(t.remove(s).is_some());
                    assert!(t.remove(s).is_none());
                }
                _ => {
                    let a = rng.below(520 * PAGE);
                    let want = model.iter().find(|&&(m, n, _)| a >= m && a < m + n).map(|m| m.0);
                    assert_eq!(t.find_gpu(a).map(Bo::start), want, "seed {seed} step {step} gpu {a:#x}");
                    let c = rng.below(1 << 20);
                    let hit = t.find_userptr(c).map(|b| b.userptr().unwrap());
                    let any = model.iter().any(|&(_, _, u)| u.is_some_and(|(uc, us)| c >= uc && c - uc < us));
                    assert_eq!(hit.is_some(), any, "seed {seed} step {step} cpu {c:#x}");
                    if let Some((uc, us)) = hit {
                        assert!(c >= uc && c - uc < us);
                    }
                }
            }
            ok(&t);
            assert_eq!(t.len(), model.len());
        }
    }
}
