//! The model's SVM and XNACK ioctls against amdkfd's rules (kfd_chardev.c kfd_ioctl_svm /
//! kfd_ioctl_svm_validate / kfd_ioctl_set_xnack_mode, kfd_svm.c svm_range_set_attr /
//! svm_range_get_attr / svm_range_check_attr / svm_range_is_valid, kfd_process.c
//! kfd_process_xnack_mode): splitting, GET over pieces that differ, every attribute type,
//! argument errors, bad ranges, XNACK per GPU generation.

mod support;

use hsakmt_core::abi::kfd::*;
use hsakmt_model::{Model, ModelConfig};
use std::ffi::c_void;
use std::os::fd::{AsRawFd, OwnedFd};
use support::*;

const EINVAL: i32 = libc::EINVAL;
const EFAULT: i32 = libc::EFAULT;
const EPERM: i32 = libc::EPERM;
const ENOTTY: i32 = libc::ENOTTY;
const EADDRINUSE: i32 = libc::EADDRINUSE;

const PREF: u32 = KFD_IOCTL_SVM_ATTR_PREFERRED_LOC;
const PREFETCH: u32 = KFD_IOCTL_SVM_ATTR_PREFETCH_LOC;
const ACCESS: u32 = KFD_IOCTL_SVM_ATTR_ACCESS;
const IN_PLACE: u32 = KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE;
const NO_ACCESS: u32 = KFD_IOCTL_SVM_ATTR_NO_ACCESS;
const SET_FLAGS: u32 = KFD_IOCTL_SVM_ATTR_SET_FLAGS;
const CLR_FLAGS: u32 = KFD_IOCTL_SVM_ATTR_CLR_FLAGS;
const GRAN: u32 = KFD_IOCTL_SVM_ATTR_GRANULARITY;
const UNDEFINED: u32 = KFD_IOCTL_SVM_LOCATION_UNDEFINED;
const SYSMEM: u32 = KFD_IOCTL_SVM_LOCATION_SYSMEM;
const HOST_ACCESS: u32 = KFD_IOCTL_SVM_FLAG_HOST_ACCESS as u32;
const COHERENT: u32 = KFD_IOCTL_SVM_FLAG_COHERENT as u32;
const GPU_RO: u32 = KFD_IOCTL_SVM_FLAG_GPU_RO as u32;
const GPU_EXEC: u32 = KFD_IOCTL_SVM_FLAG_GPU_EXEC as u32;

struct Fx {
    m: Model,
    ids: Vec<u32>,
    _renders: Vec<OwnedFd>,
    mem: Mapping,
}

fn setup(name: &str) -> Fx {
    let m = Model::new(ModelConfig::catalogue(name)).unwrap();
    let n = m.gpus().len();
    let (ids, renders) = acquire(&m, n);
    Fx { m, ids, _renders: renders, mem: Mapping::new(32, libc::PROT_READ | libc::PROT_WRITE) }
}

fn get(m: &Model, start: u64, size: u64, attrs: &mut [kfd_ioctl_svm_attribute]) -> Result<(), i32> {
    let n = attrs.len() as u32;
    svm_declared(m, KFD_IOCTL_SVM_OP_GET_ATTR, start, size, attrs, n)
}

/// GET of one attribute type (value as given, e.g. a gpu_id for ACCESS): (type, value).
fn get1(m: &Model, start: u64, size: u64, ty: u32, value: u32) -> (u32, u32) {
    let mut a = [attr(ty, value)];
    get(m, start, size, &mut a).unwrap();
    (a[0].r#type, a[0].value)
}

#[test]
fn defaults_where_no_range_exists() {
    let f = setup("mi210");
    let (m, p) = (&f.m, f.mem.page(0));
    let mut a = [attr(PREF, 7), attr(PREFETCH, 7), attr(SET_FLAGS, 0), attr(CLR_FLAGS, 0), attr(GRAN, 0), attr(ACCESS, f.ids[0])];
    get(m, p, 4 * PAGE, &mut a).unwrap();
    // svm_range_set_default_attributes: UNDEFINED locations, HOST_ACCESS | COHERENT,
    // granularity 9; XNACK is off by default on gfx90a (noretry), so no GPU has access.
    assert_eq!(a[0].value, UNDEFINED);
    assert_eq!(a[1].value, UNDEFINED);
    assert_eq!(a[2].value, HOST_ACCESS | COHERENT);
    assert_eq!(a[3].value, !(HOST_ACCESS | COHERENT));
    assert_eq!(a[4].value, 9);
    assert_eq!((a[5].r#type, a[5].value), (NO_ACCESS, f.ids[0]));
    assert!(m.svm_ranges().is_empty(), "GET creates no range");
}

#[test]
fn set_splits_ranges_and_get_combines_pieces() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let p = |i| f.mem.page(i);
    set(m, p(4), 4 * PAGE, &[attr(PREF, g[0])]).unwrap();
    assert_eq!(m.svm_ranges(), vec![(p(4), 4 * PAGE)]);
    assert_eq!(get1(m, p(4), 4 * PAGE, PREF, 0).1, g[0]);
    // Only the ranges overlapping the request count: the pages around them have none.
    assert_eq!(get1(m, p(0), 16 * PAGE, PREF, 0).1, g[0]);

    // A SET over the tail of the range splits it.
    set(m, p(6), 4 * PAGE, &[attr(PREF, g[1])]).unwrap();
    assert_eq!(m.svm_ranges(), vec![(p(4), 2 * PAGE), (p(6), 4 * PAGE)]);
    assert_eq!(get1(m, p(4), 2 * PAGE, PREF, 0).1, g[0]);
    assert_eq!(get1(m, p(6), 4 * PAGE, PREF, 0).1, g[1]);
    assert_eq!(get1(m, p(4), 6 * PAGE, PREF, 0).1, UNDEFINED, "pieces differ");
    assert_eq!(get1(m, p(5), 2 * PAGE, PREF, 0).1, UNDEFINED, "one page of each");

    // A SET in the middle of a range leaves three pieces; attributes outside it are kept.
    set(m, p(7), PAGE, &[attr(GRAN, 4)]).unwrap();
    assert_eq!(m.svm_ranges(), vec![(p(4), 2 * PAGE), (p(6), PAGE), (p(7), PAGE), (p(8), 2 * PAGE)]);
    assert_eq!(get1(m, p(6), 4 * PAGE, PREF, 0).1, g[1]);
    assert_eq!(get1(m, p(7), PAGE, GRAN, 0).1, 4);
    assert_eq!(get1(m, p(6), PAGE, GRAN, 0).1, 9);
    assert_eq!(get1(m, p(6), 4 * PAGE, GRAN, 0).1, 4, "granularity: the smallest");

    // Setting the middle back makes the pieces equal again; the model merges them (the
    // kernel keeps them apart; no GET can tell the difference).
    set(m, p(7), PAGE, &[attr(GRAN, 9)]).unwrap();
    assert_eq!(m.svm_ranges(), vec![(p(4), 2 * PAGE), (p(6), 4 * PAGE)]);

    // A SET spanning gaps creates ranges with default attributes there, then applies.
    set(m, p(0), 12 * PAGE, &[attr(SET_FLAGS, GPU_EXEC)]).unwrap();
    assert_eq!(get1(m, p(0), 12 * PAGE, SET_FLAGS, 0).1, HOST_ACCESS | COHERENT | GPU_EXEC);
    assert_eq!(get1(m, p(0), 4 * PAGE, PREF, 0).1, UNDEFINED);
    assert_eq!(get1(m, p(4), 2 * PAGE, PREF, 0).1, g[0]);
    assert_eq!(get1(m, p(10), 2 * PAGE, PREF, 0).1, UNDEFINED);
    let total: u64 = m.svm_ranges().iter().map(|r| r.1).sum();
    assert_eq!(total, 12 * PAGE);
}

#[test]
fn flags_and_or_granularity_clamp_and_prefetch() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let p = |i| f.mem.page(i);
    set(m, p(0), 4 * PAGE, &[attr(SET_FLAGS, GPU_RO)]).unwrap(); // 0..4: 3|8 = 11
    set(m, p(2), 4 * PAGE, &[attr(CLR_FLAGS, COHERENT)]).unwrap(); // 2..4: 9, 4..6: 1
    let mut a = [attr(SET_FLAGS, 0), attr(CLR_FLAGS, 0)];
    get(m, p(0), 6 * PAGE, &mut a).unwrap();
    assert_eq!(a[0].value, 11 & 9 & 1, "SET_FLAGS answers the flags every piece has");
    assert_eq!(a[1].value, !(11 | 9 | 1), "CLR_FLAGS answers the flags no piece has");

    // Granularity is clamped to 0x3F.
    set(m, p(8), PAGE, &[attr(GRAN, 0x50)]).unwrap();
    assert_eq!(get1(m, p(8), PAGE, GRAN, 0).1, 0x3F);

    // PREFETCH_LOC: SYSMEM (0) or a GPU.
    set(m, p(10), PAGE, &[attr(PREFETCH, SYSMEM)]).unwrap();
    assert_eq!(get1(m, p(10), PAGE, PREFETCH, 7).1, SYSMEM);
    set(m, p(11), PAGE, &[attr(PREFETCH, g[2])]).unwrap();
    assert_eq!(get1(m, p(11), PAGE, PREFETCH, 7).1, g[2]);
    assert_eq!(get1(m, p(10), 2 * PAGE, PREFETCH, 7).1, UNDEFINED);
    // PREFERRED_LOC UNDEFINED is accepted and resets it.
    set(m, p(12), PAGE, &[attr(PREF, g[3])]).unwrap();
    set(m, p(12), PAGE, &[attr(PREF, UNDEFINED)]).unwrap();
    assert_eq!(get1(m, p(12), PAGE, PREF, 0).1, UNDEFINED);
    // Later attributes of one SET win over earlier ones.
    set(m, p(13), PAGE, &[attr(PREF, g[0]), attr(PREF, g[1])]).unwrap();
    assert_eq!(get1(m, p(13), PAGE, PREF, 0).1, g[1]);
}

#[test]
fn access_per_gpu() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let p = |i| f.mem.page(i);
    set(m, p(0), 4 * PAGE, &[attr(ACCESS, g[0]), attr(IN_PLACE, g[1]), attr(NO_ACCESS, g[2])]).unwrap();
    let mut a = [attr(ACCESS, g[0]), attr(ACCESS, g[1]), attr(ACCESS, g[2]), attr(ACCESS, g[3])];
    get(m, p(0), 4 * PAGE, &mut a).unwrap();
    assert_eq!(a.map(|x| (x.r#type, x.value)), [(ACCESS, g[0]), (IN_PLACE, g[1]), (NO_ACCESS, g[2]), (NO_ACCESS, g[3])]);
    // Over a second range without access, GPU 0's access is ANDed away.
    set(m, p(4), 4 * PAGE, &[attr(ACCESS, g[1])]).unwrap();
    assert_eq!(get1(m, p(0), 8 * PAGE, ACCESS, g[0]).0, NO_ACCESS);
    // GPU 1: in place on one piece, plain access on the other: neither on all pieces.
    assert_eq!(get1(m, p(0), 8 * PAGE, ACCESS, g[1]).0, NO_ACCESS);
    assert_eq!(get1(m, p(4), 4 * PAGE, ACCESS, g[1]).0, ACCESS);
    // ACCESS and IN_PLACE replace each other; NO_ACCESS clears both.
    set(m, p(0), 4 * PAGE, &[attr(ACCESS, g[1])]).unwrap();
    assert_eq!(get1(m, p(0), 8 * PAGE, ACCESS, g[1]).0, ACCESS);
    set(m, p(0), PAGE, &[attr(NO_ACCESS, g[1])]).unwrap();
    assert_eq!(get1(m, p(0), PAGE, ACCESS, g[1]).0, NO_ACCESS);
    assert_eq!(get1(m, p(1), 3 * PAGE, ACCESS, g[1]).0, ACCESS);
}

#[test]
fn attribute_errors_leave_ranges_intact() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let p = |i| f.mem.page(i);
    set(m, p(0), 4 * PAGE, &[attr(PREF, g[0])]).unwrap();
    let before = m.svm_ranges();
    // svm_range_check_attr: unknown types and gpu ids are EINVAL, before anything changes.
    assert_eq!(set(m, p(2), 4 * PAGE, &[attr(GRAN, 1), attr(8, 0)]), Err(EINVAL));
    assert_eq!(set(m, p(2), 4 * PAGE, &[attr(0x100, 0)]), Err(EINVAL));
    assert_eq!(set(m, p(2), 4 * PAGE, &[attr(ACCESS, 0xdead)]), Err(EINVAL));
    assert_eq!(set(m, p(2), 4 * PAGE, &[attr(ACCESS, 0)]), Err(EINVAL), "the CPU is not a GPU");
    assert_eq!(set(m, p(2), 4 * PAGE, &[attr(PREF, 0xdead)]), Err(EINVAL));
    assert_eq!(set(m, p(2), 4 * PAGE, &[attr(PREFETCH, UNDEFINED)]), Err(EINVAL), "only PREFERRED_LOC takes UNDEFINED");
    assert_eq!(m.svm_ranges(), before);
    assert_eq!(get1(m, p(0), 4 * PAGE, PREF, 0).1, g[0]);
    assert_eq!(get1(m, p(0), 4 * PAGE, GRAN, 0).1, 9);

    // GET: ACCESS_IN_PLACE / NO_ACCESS / unknown types are not questions.
    for ty in [IN_PLACE, NO_ACCESS, 8, 0xffff_ffff] {
        let mut a = [attr(ty, g[0])];
        assert_eq!(get(m, p(0), PAGE, &mut a), Err(EINVAL), "type {ty}");
    }
    // An unknown GPU in an ACCESS question: EINVAL, earlier answers already filled in.
    let mut a = [attr(PREF, 0), attr(ACCESS, 0xdead), attr(GRAN, 0)];
    assert_eq!(get(m, p(0), PAGE, &mut a), Err(EINVAL));
    assert_eq!(a[0].value, g[0]);
    assert_eq!(a[2].value, 0, "not reached");
}

#[test]
fn argument_rules() {
    let f = setup("mi210");
    let m = &f.m;
    let p = f.mem.page(1);
    let ok = [attr(GRAN, 3)];
    assert_eq!(set(m, p + 8, PAGE, &ok), Err(EINVAL), "unaligned start");
    assert_eq!(set(m, p, PAGE + 8, &ok), Err(EINVAL), "unaligned size");
    assert_eq!(set(m, p, 0, &ok), Err(EINVAL), "size 0");
    assert_eq!(set(m, 0, PAGE, &ok), Err(EINVAL), "start 0");
    let mut g = [attr(GRAN, 0)];
    assert_eq!(get(m, p, 0, &mut g), Err(EINVAL));
    // An op that is neither SET nor GET.
    let mut a = ok.to_vec();
    assert_eq!(svm_declared(m, 2, p, PAGE, &mut a, 1), Err(EINVAL));
    // kfd_ioctl_svm_validate: nattr beyond what the request's size covers.
    let mut a = ok.to_vec();
    assert_eq!(svm_declared(m, KFD_IOCTL_SVM_OP_SET_ATTR, p, PAGE, &mut a, 2), Err(EINVAL));
    assert_eq!(svm_declared(m, KFD_IOCTL_SVM_OP_SET_ATTR, p, PAGE, &mut [], u32::MAX), Err(EINVAL));
    // Fewer attributes than the size covers is fine (the rest is ignored).
    let mut a = vec![attr(GRAN, 3), attr(8, 0)];
    assert_eq!(svm_declared(m, KFD_IOCTL_SVM_OP_SET_ATTR, p, PAGE, &mut a, 1), Ok(()));
    // nattr 0: the range is created with defaults.
    assert_eq!(set(m, f.mem.page(20), PAGE, &[]), Ok(()));
    assert!(m.svm_ranges().contains(&(f.mem.page(20), PAGE)));
    // A wild argument pointer.
    // SAFETY: the model checks the address and answers EFAULT.
    let r = unsafe { m.handle_ioctl(u64::from(AMDKFD_IOC_SVM), 0x10 as *mut c_void) };
    assert_eq!(r, Err(EFAULT));
    // KFD 1.4 has no SVM ioctl.
    let old = Model::new(ModelConfig::catalogue("mi210").with_kfd_version(1, 4)).unwrap();
    assert_eq!(set(&old, p, PAGE, &ok), Err(ENOTTY));
    assert_eq!(xnack(&old, -1), Err(ENOTTY));
}

#[test]
fn ranges_must_be_process_memory() {
    let f = setup("mi210");
    let m = &f.m;
    let ok = [attr(GRAN, 3)];
    // A hole in the address space: low memory just above mmap_min_addr, which the kernel's
    // top-down mmap placement never hands out in practice (a page this test unmapped itself
    // could be reused at once by another test thread's mapping).
    let h: u64 = 0x20_0000;
    assert_eq!(set(m, h, PAGE, &ok), Err(EFAULT));
    assert_eq!(get(m, h, PAGE, &mut [attr(GRAN, 0)]), Err(EFAULT));
    // Running off the end of a mapping (its last two pages given back).
    let mut end = Mapping::new(4, libc::PROT_READ | libc::PROT_WRITE);
    // SAFETY: unmapping the tail of the test's own mapping (the guard then owns the head).
    assert_eq!(unsafe { libc::munmap(end.page(2) as *mut c_void, 2 * PAGE as usize) }, 0);
    end.len = 2 * PAGE as usize;
    assert_eq!(set(m, end.page(0), 4 * PAGE, &ok), Err(EFAULT));
    assert_eq!(set(m, end.page(0), 2 * PAGE, &ok), Ok(()));
    // Kernel addresses and wrap-around.
    assert_eq!(set(m, 0xffff_8000_0000_0000, PAGE, &ok), Err(EFAULT));
    assert_eq!(set(m, f.mem.page(0), 0u64.wrapping_sub(PAGE), &ok), Err(EFAULT));
    // Any VMA counts, even PROT_NONE (the kernel checks VMAs, not permissions).
    let none = Mapping::new(2, libc::PROT_NONE);
    assert_eq!(set(m, none.page(0), 2 * PAGE, &ok), Ok(()));
    // A range over two adjacent VMAs of different protection.
    let two = Mapping::new(4, libc::PROT_READ | libc::PROT_WRITE);
    // SAFETY: re-protecting part of the test's own mapping.
    assert_eq!(unsafe { libc::mprotect(two.page(2) as *mut c_void, 2 * PAGE as usize, libc::PROT_READ) }, 0);
    assert_eq!(set(m, two.page(0), 4 * PAGE, &ok), Ok(()));
    assert!(m.svm_ranges().iter().all(|r| r.0 != h), "failed SETs made no range");
}

#[test]
fn memory_mapped_to_a_gpu_is_in_use() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let userptr = (KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
    let p = f.mem.page(8);
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: p, size: 2 * PAGE, handle: 0, mmap_offset: p, gpu_id: g[0], flags: userptr };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    // Allocated but not mapped: no GPU VM mapping yet.
    assert_eq!(set(m, p, PAGE, &[attr(GRAN, 1)]), Ok(()));
    let ids = [g[0]];
    let mut mm =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mm).unwrap();
    // svm_range_check_vm: EADDRINUSE over any page a GPU VM maps, for SET and GET.
    assert_eq!(set(m, f.mem.page(6), 3 * PAGE, &[attr(GRAN, 1)]), Err(EADDRINUSE));
    assert_eq!(get(m, f.mem.page(9), PAGE, &mut [attr(GRAN, 0)]), Err(EADDRINUSE));
    assert_eq!(set(m, f.mem.page(10), PAGE, &[attr(GRAN, 1)]), Ok(()), "the page after it");
}

/// kfd_ioctl_alloc_memory_of_gpu: a BO at a GPU VA an SVM range covers, or a userptr over CPU
/// pages an SVM range covers, is EADDRINUSE; next to the range it is fine.
#[test]
fn memory_an_svm_range_covers_cannot_become_a_bo() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    assert_eq!(set(m, f.mem.page(4), 2 * PAGE, &[attr(GRAN, 1)]), Ok(()));
    let gtt = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
    let userptr = (KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
    let alloc = |va: u64, size: u64, mmap_offset: u64, flags: u32| {
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset, gpu_id: g[0], flags };
        raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a)
    };
    // By GPU VA: the last page of the BO overlaps the range's first page.
    assert_eq!(alloc(f.mem.page(3), 2 * PAGE, 0, gtt), Err(EADDRINUSE));
    // A userptr whose CPU pages overlap (its GPU VA elsewhere), and one whose VA does.
    assert_eq!(alloc(0x7f10_0000_0000, PAGE, f.mem.page(5), userptr), Err(EADDRINUSE));
    assert_eq!(alloc(f.mem.page(5), PAGE, f.mem.page(0), userptr), Err(EADDRINUSE));
    // Next to the range.
    assert_eq!(alloc(f.mem.page(6), PAGE, f.mem.page(6), userptr), Ok(()));
    assert_eq!(alloc(f.mem.page(2), 2 * PAGE, 0, gtt), Ok(()));
}

#[test]
fn bo_cpu_mappings_are_device_memory() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let flags = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
    let mut a =
        kfd_ioctl_alloc_memory_of_gpu_args { va_addr: 0x7f00_0000_0000, size: 2 * PAGE, handle: 0, mmap_offset: 0, gpu_id: g[0], flags };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    let fd = m.create_memfd().unwrap();
    // SAFETY: a new shared mapping of the BO through the device file, unmapped below.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            2 * PAGE as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            a.mmap_offset as i64,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    // The kernel's BO mappings are VM_IO | VM_PFNMAP: not memory SVM can manage (EFAULT).
    assert_eq!(set(m, p as u64, PAGE, &[attr(GRAN, 1)]), Err(EFAULT));
    // SAFETY: the mapping made above.
    unsafe { libc::munmap(p, 2 * PAGE as usize) };
}

#[test]
fn xnack_query_and_set_on_gfx90a() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    // Default off (amdgpu noretry=1 on GC 9.4.2); a negative value queries.
    assert_eq!(xnack(m, -1), Ok(0));
    assert_eq!(xnack(m, i32::MIN), Ok(0));
    // Aldebaran chooses XNACK per process.
    assert_eq!(xnack(m, 1), Ok(1), "the argument goes back unchanged");
    assert_eq!(xnack(m, -1), Ok(1));
    // With XNACK on, memory without a range may be accessed by every GPU, and new ranges
    // start with access for every GPU.
    assert_eq!(get1(m, f.mem.page(0), PAGE, ACCESS, g[3]).0, ACCESS);
    set(m, f.mem.page(0), PAGE, &[attr(GRAN, 2)]).unwrap();
    assert_eq!(get1(m, f.mem.page(0), PAGE, ACCESS, g[5]).0, ACCESS);
    assert_eq!(xnack(m, 0), Ok(0));
    assert_eq!(xnack(m, -1), Ok(0));
    // A range made while XNACK was on keeps its access; a new one has none.
    assert_eq!(get1(m, f.mem.page(0), PAGE, ACCESS, g[5]).0, ACCESS);
    set(m, f.mem.page(1), PAGE, &[attr(GRAN, 2)]).unwrap();
    assert_eq!(get1(m, f.mem.page(1), PAGE, ACCESS, g[5]).0, NO_ACCESS);
}

#[test]
fn xnack_per_catalogue_gpu() {
    // (entry, may XNACK be turned on): per-process XNACK on GC 9.4.2 / 9.4.3; gfx900 has
    // noretry on; gfx1100 (GFX10+) cannot preempt shaders during page faults.
    for (name, can) in [("mi300x", true), ("mi210", true), ("mi25", false), ("rx7900xtx", false)] {
        let m = Model::new(ModelConfig::catalogue(name)).unwrap();
        assert_eq!(xnack(&m, -1), Ok(0), "{name}: default off");
        assert_eq!(xnack(&m, 0), Ok(0), "{name}: off is always allowed");
        assert_eq!(xnack(&m, 1), if can { Ok(1) } else { Err(EPERM) }, "{name}");
        assert_eq!(xnack(&m, -1), Ok(can as i32), "{name}: a refusal changes nothing");
    }
}

#[test]
fn xnack_change_refused_while_queues_exist() {
    // kfd_ioctl_set_xnack_mode: EBUSY while the process has user queues, even for the mode
    // it already has; a query still answers. The queue's ring and pointer page are GPU-mapped
    // BOs (kfd_queue_acquire_buffers); an SDMA queue needs no EOP or CWSR area.
    let f = setup("mi210");
    let m = &f.m;
    let g = f.ids[0];
    // The ring mapping is the ring size; the pointers' mapping exactly one page.
    for (va, size) in [(0x7100_0000_0000u64, 2 * PAGE), (0x7100_0001_0000, PAGE)] {
        let flags = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset: 0, gpu_id: g, flags };
        raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
        let ids = [g];
        let mut p =
            kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
        raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut p).unwrap();
    }
    let mut q = kfd_ioctl_create_queue_args {
        ring_base_address: 0x7100_0000_0000,
        write_pointer_address: 0x7100_0001_0000,
        read_pointer_address: 0x7100_0001_0008,
        doorbell_offset: 0,
        ring_size: 2 * PAGE as u32,
        gpu_id: g,
        queue_type: KFD_IOC_QUEUE_TYPE_SDMA as u32,
        queue_percentage: 100,
        queue_priority: 7,
        queue_id: 0,
        eop_buffer_address: 0,
        eop_buffer_size: 0,
        ctx_save_restore_address: 0,
        ctx_save_restore_size: 0,
        ctl_stack_size: 0,
        sdma_engine_id: 0,
        metadata_ring_size: 0,
    };
    raw(m, AMDKFD_IOC_CREATE_QUEUE, &mut q).unwrap();
    assert_eq!(xnack(m, 1), Err(libc::EBUSY));
    assert_eq!(xnack(m, 0), Err(libc::EBUSY));
    assert_eq!(xnack(m, -1), Ok(0));
}

/// svm_range_unmap_from_cpu: the parts of ranges the CPU unmaps are gone in the kernel, so a BO
/// can take their addresses; the part still mapped keeps its range (EADDRINUSE). An munmap the
/// model does not see (not through its port) is found when ALLOC_MEMORY meets the range.
#[test]
fn ranges_the_cpu_unmapped_do_not_block_a_later_bo() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let gtt = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
    let alloc = |va: u64, size: u64| {
        let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: va, size, handle: 0, mmap_offset: 0, gpu_id: g[0], flags: gtt };
        raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a)
    };
    let mem = Mapping::new(4, libc::PROT_READ | libc::PROT_WRITE);
    assert_eq!(set(m, mem.page(0), 4 * PAGE, &[attr(GRAN, 1)]), Ok(()));
    assert_eq!(alloc(mem.page(2), 2 * PAGE), Err(EADDRINUSE));
    // SAFETY: the last two pages of the mapping `mem` owns; its drop unmaps the whole span,
    // which is fine over a hole.
    assert_eq!(unsafe { libc::munmap(mem.page(2) as *mut c_void, 2 * PAGE as usize) }, 0);
    assert_eq!(alloc(mem.page(1), 2 * PAGE), Err(EADDRINUSE), "page 1 is still mapped and in the range");
    assert_eq!(alloc(mem.page(2), 2 * PAGE), Ok(()), "the unmapped pages left the range");
    let mut q = [attr(GRAN, 0)];
    assert_eq!(get(m, mem.page(0), 2 * PAGE, &mut q), Ok(()));
    assert_eq!(q[0].value, 1, "the mapped part keeps its attributes");
}

/// Address-space changes through the model's port (the thunk's munmaps and mmaps) take pages
/// out of the ranges at once, as the kernel's MMU notifier does: an munmap splits a range, and
/// a new mapping where the application unmapped a range behind the model's back (the thunk's
/// next VA reservation landing in the hole) drops what was left there, so a BO takes the
/// address. Before, the reservation's own mapping kept the stale range alive (EADDRINUSE).
#[test]
fn the_ports_munmap_and_mmap_take_pages_out_of_ranges() {
    use hsakmt_core::Kfd;
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let rw = (libc::PROT_READ | libc::PROT_WRITE) as u32;
    // SAFETY: a new mapping at an address the kernel picks.
    let p = unsafe { m.map_anonymous(None, 0, 8 * PAGE as usize, rw) }.unwrap() as u64;
    assert_eq!(set(m, p, 8 * PAGE, &[attr(GRAN, 3)]), Ok(()));
    assert_eq!(m.svm_ranges(), vec![(p, 8 * PAGE)]);
    // SAFETY: page 2 of the mapping made above, unused.
    unsafe { m.munmap(p as usize + 2 * PAGE as usize, PAGE as usize) }.unwrap();
    assert_eq!(m.svm_ranges(), vec![(p, 2 * PAGE), (p + 3 * PAGE, 5 * PAGE)], "split around the unmapped page");
    assert_eq!(get1(m, p + 3 * PAGE, PAGE, GRAN, 0).1, 3, "the rest keeps its attributes");

    // The application unmaps pages 4..8 itself; a reservation placed there drops them.
    // SAFETY: pages of the mapping above, unused from here on.
    assert_eq!(unsafe { libc::munmap((p + 4 * PAGE) as *mut c_void, 4 * PAGE as usize) }, 0);
    assert_eq!(m.svm_ranges().last(), Some(&(p + 3 * PAGE, 5 * PAGE)), "not seen yet");
    // SAFETY: a PROT_NONE reservation over the hole just made (nothing else is mapped there).
    let r = unsafe { m.map_anonymous(Some(p as usize + 4 * PAGE as usize), 0, 4 * PAGE as usize, 0) }.unwrap() as u64;
    assert_eq!(r, p + 4 * PAGE);
    assert_eq!(m.svm_ranges(), vec![(p, 2 * PAGE), (p + 3 * PAGE, PAGE)]);
    let gtt = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: r, size: 4 * PAGE, handle: 0, mmap_offset: 0, gpu_id: g[0], flags: gtt };
    assert_eq!(raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a), Ok(()), "a BO takes the reserved hole");
    a.va_addr = p + 3 * PAGE;
    a.size = PAGE;
    assert_eq!(raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a), Err(EADDRINUSE), "page 3 is still a range");
    // SAFETY: the rest of the mapping and the reservation, unused.
    unsafe {
        m.munmap(p as usize, 4 * PAGE as usize).unwrap();
        m.release_va(r as usize, 4 * PAGE as usize).unwrap();
    }
    assert!(m.svm_ranges().is_empty());
}
