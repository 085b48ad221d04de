//! The model GPU reaching SVM memory as amdkfd maps it (kfd_svm.c svm_range_validate_and_map,
//! svm_range_map_to_gpus, svm_range_get_pte_flags, svm_range_restore_pages,
//! svm_range_best_restore_location, svm_range_create_unregistered_range): GPU VA == CPU VA;
//! GPUs with ACCESS or ACCESS_IN_PLACE reach a range, others fault NotMapped; GPU_RO and
//! read-only CPU pages make GPU writes fault ReadOnly; NO_ACCESS and the release of the
//! process's state take the mapping away; with XNACK on every GPU reaches memory without an
//! explicit NO_ACCESS; engines copy into SVM memory; CPU-unmapped pages fault, never crash.

mod support;

use hsakmt_core::abi::kfd::*;
use hsakmt_core::packet::sdma;
use hsakmt_model::engine::{EngineKind, QueueError, RingDesc, RingProgress, RunEnd};
use hsakmt_model::{GpuFault, GpuFaultKind, Model, ModelConfig};
use std::ffi::c_void;
use std::os::fd::OwnedFd;
use support::*;

const ACCESS: u32 = KFD_IOCTL_SVM_ATTR_ACCESS;
const IN_PLACE: u32 = KFD_IOCTL_SVM_ATTR_ACCESS_IN_PLACE;
const NO_ACCESS: u32 = KFD_IOCTL_SVM_ATTR_NO_ACCESS;
const SET_FLAGS: u32 = KFD_IOCTL_SVM_ATTR_SET_FLAGS;
const CLR_FLAGS: u32 = KFD_IOCTL_SVM_ATTR_CLR_FLAGS;
const GRAN: u32 = KFD_IOCTL_SVM_ATTR_GRANULARITY;
const GPU_RO: u32 = KFD_IOCTL_SVM_FLAG_GPU_RO as u32;
const ALWAYS_MAPPED: u32 = KFD_IOCTL_SVM_FLAG_GPU_ALWAYS_MAPPED as u32;
const RW: i32 = libc::PROT_READ | libc::PROT_WRITE;

struct Fx {
    m: Model,
    ids: Vec<u32>,
    _renders: Vec<OwnedFd>,
}

fn setup(name: &str) -> Fx {
    let m = Model::new(ModelConfig::catalogue(name)).unwrap();
    let n = m.gpus().len();
    let (ids, renders) = acquire(&m, n);
    Fx { m, ids, _renders: renders }
}

fn read(m: &Model, g: u32, va: u64, n: usize) -> Result<Vec<u8>, GpuFault> {
    let mut b = vec![0u8; n];
    m.gpu_read(g, va, &mut b).map(|()| b)
}

fn kind<T: std::fmt::Debug>(r: Result<T, GpuFault>) -> (u64, GpuFaultKind) {
    let e = r.unwrap_err();
    (e.va, e.kind)
}

#[test]
fn access_maps_the_cpu_pages_on_that_gpu_only() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let mem = Mapping::new(8, RW);
    set(m, mem.page(0), 4 * PAGE, &[attr(ACCESS, g[0]), attr(IN_PLACE, g[1])]).unwrap();
    // The CPU's bytes are the GPU's (GPU VA == CPU VA), both ways.
    mem.cpu_put(100, &[1, 2, 3, 4]);
    assert_eq!(read(m, g[0], mem.page(0) + 100, 4).unwrap(), [1, 2, 3, 4]);
    m.gpu_write(g[0], mem.page(2) + 8, b"svm!").unwrap();
    assert_eq!(mem.cpu(2 * PAGE + 8, 4), b"svm!");
    // ACCESS_IN_PLACE reaches the range too (bitmap_access | bitmap_aip).
    assert_eq!(read(m, g[1], mem.page(2) + 8, 4).unwrap(), b"svm!");
    // An access across pages within the range is one access.
    m.gpu_write(g[1], mem.page(1) - 2, &[9; 4]).unwrap();
    assert_eq!(mem.cpu(PAGE - 2, 4), [9; 4]);
    // Atomics on SVM memory.
    mem.cpu_put(3 * PAGE, &40u32.to_ne_bytes());
    assert_eq!(m.gpu_atomic_u32(g[0], mem.page(3), hsakmt_model::AtomicOp::Add, 2).unwrap(), 40);
    assert_eq!(m.gpu_cmpswap_u64(g[0], mem.page(3) + 8, 0, 7).unwrap(), 0);
    assert_eq!(mem.cpu(3 * PAGE, 4), 42u32.to_ne_bytes());
    assert_eq!(mem.cpu(3 * PAGE + 8, 1), [7]);
    // A GPU without access, and memory outside the range, are not mapped.
    assert_eq!(kind(read(m, g[2], mem.page(0), 4)), (mem.page(0), GpuFaultKind::NotMapped));
    assert_eq!(kind(m.gpu_write(g[2], mem.page(0), &[0])), (mem.page(0), GpuFaultKind::NotMapped));
    assert_eq!(kind(read(m, g[0], mem.page(4), 4)), (mem.page(4), GpuFaultKind::NotMapped));
    // An access running off the range's end faults at the first unmapped byte.
    assert_eq!(kind(read(m, g[0], mem.page(4) - 4, 8)), (mem.page(4), GpuFaultKind::NotMapped));
    assert_eq!(mem.cpu(4 * PAGE, 1), [0], "nothing written past the range");
}

#[test]
fn gpu_ro_makes_gpu_writes_fault_read_only() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let mem = Mapping::new(4, RW);
    mem.cpu_put(0, &[0x5a]);
    set(m, mem.page(0), 2 * PAGE, &[attr(ACCESS, g[0]), attr(SET_FLAGS, GPU_RO)]).unwrap();
    assert_eq!(read(m, g[0], mem.page(0), 1).unwrap(), [0x5a]);
    assert_eq!(kind(m.gpu_write(g[0], mem.page(1), &[1])), (mem.page(1), GpuFaultKind::ReadOnly));
    assert_eq!(kind(m.gpu_atomic_u32(g[0], mem.page(0), hsakmt_model::AtomicOp::Or, 1)), (mem.page(0), GpuFaultKind::ReadOnly));
    assert_eq!(mem.cpu(0, 1), [0x5a]);
    // Clearing GPU_RO on one page makes it writable there only.
    set(m, mem.page(0), PAGE, &[attr(CLR_FLAGS, GPU_RO)]).unwrap();
    m.gpu_write(g[0], mem.page(0), &[0xa5]).unwrap();
    assert_eq!(mem.cpu(0, 1), [0xa5]);
    assert_eq!(kind(m.gpu_write(g[0], mem.page(1) - 1, &[1, 1])), (mem.page(1), GpuFaultKind::ReadOnly));
    assert_eq!(mem.cpu(PAGE - 1, 1), [1], "the writable part was written");
}

#[test]
fn read_only_and_inaccessible_cpu_pages() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let mem = Mapping::new(4, RW);
    set(m, mem.page(0), 4 * PAGE, &[attr(ACCESS, g[0])]).unwrap();
    // SAFETY: re-protecting pages of the test's own mapping.
    unsafe {
        assert_eq!(libc::mprotect(mem.page(1) as *mut c_void, PAGE as usize, libc::PROT_READ), 0);
        assert_eq!(libc::mprotect(mem.page(2) as *mut c_void, PAGE as usize, libc::PROT_NONE), 0);
    }
    // svm_range_validate_and_map: a VMA without VM_WRITE is mapped read-only, one without
    // VM_READ is unmapped from the GPUs.
    assert_eq!(read(m, g[0], mem.page(1), 4).unwrap(), [0; 4]);
    assert_eq!(kind(m.gpu_write(g[0], mem.page(1), &[1])), (mem.page(1), GpuFaultKind::ReadOnly));
    assert_eq!(kind(read(m, g[0], mem.page(2), 4)), (mem.page(2), GpuFaultKind::NotMapped));
    assert_eq!(kind(m.gpu_write(g[0], mem.page(2), &[1])), (mem.page(2), GpuFaultKind::NotMapped));
    m.gpu_write(g[0], mem.page(3), &[3]).unwrap();
}

#[test]
fn no_access_and_process_release_remove_the_mapping() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let mem = Mapping::new(4, RW);
    set(m, mem.page(0), 4 * PAGE, &[attr(ACCESS, g[0]), attr(ACCESS, g[1])]).unwrap();
    m.gpu_write(g[0], mem.page(1), &[1]).unwrap();
    set(m, mem.page(1), PAGE, &[attr(NO_ACCESS, g[0])]).unwrap();
    assert_eq!(kind(m.gpu_write(g[0], mem.page(1), &[2])), (mem.page(1), GpuFaultKind::NotMapped));
    assert_eq!(kind(read(m, g[0], mem.page(0) + PAGE - 1, 2)), (mem.page(1), GpuFaultKind::NotMapped));
    m.gpu_write(g[0], mem.page(2), &[3]).unwrap();
    m.gpu_write(g[1], mem.page(1), &[4]).unwrap();
    assert_eq!(mem.cpu(PAGE, 1), [4], "GPU 1 keeps its access");
    // ACCESS again restores it.
    set(m, mem.page(1), PAGE, &[attr(ACCESS, g[0])]).unwrap();
    assert_eq!(read(m, g[0], mem.page(1), 1).unwrap(), [4]);
    // Releasing the process's model state drops every range (svm_range_list_fini).
    m.release_process();
    assert_eq!(m.svm_ranges(), vec![]);
    for gi in [g[0], g[1]] {
        assert_eq!(kind(read(m, gi, mem.page(0), 1)), (mem.page(0), GpuFaultKind::NotMapped));
    }
}

#[test]
fn xnack_on_every_gpu_reaches_memory_without_no_access() {
    for name in ["mi210", "mi300x"] {
        let f = setup(name);
        let (m, g) = (&f.m, &f.ids);
        let mem = Mapping::new(8, RW);
        mem.cpu_put(0, &[0x11]);
        // XNACK off (the default): memory outside every range is not mapped.
        assert_eq!(kind(read(m, g[0], mem.page(0), 1)), (mem.page(0), GpuFaultKind::NotMapped), "{name}");
        assert_eq!(xnack(m, 1), Ok(1), "{name}");
        // No range: every GPU faults the pages in (svm_range_create_unregistered_range, access
        // for every SVM GPU).
        for &gi in g {
            assert_eq!(read(m, gi, mem.page(0), 1).unwrap(), [0x11], "{name} {gi}");
        }
        m.gpu_write(g[g.len() - 1], mem.page(5), b"xn").unwrap();
        assert_eq!(mem.cpu(5 * PAGE, 2), b"xn");
        // A range without access attributes (made with XNACK on) is reached by every GPU, an
        // explicit NO_ACCESS is not, and a range made with XNACK off grants nothing by itself.
        set(m, mem.page(0), 2 * PAGE, &[attr(GRAN, 0), attr(SET_FLAGS, ALWAYS_MAPPED)]).unwrap();
        set(m, mem.page(1), PAGE, &[attr(NO_ACCESS, g[1])]).unwrap();
        for &gi in g {
            assert_eq!(read(m, gi, mem.page(0), 1).unwrap(), [0x11], "{name} {gi}");
        }
        assert_eq!(kind(read(m, g[1], mem.page(1), 1)), (mem.page(1), GpuFaultKind::NotMapped), "{name}");
        read(m, g[0], mem.page(1), 1).unwrap();
        // The range's own rules hold over the gap's: an access runs from the gap into it.
        assert_eq!(kind(read(m, g[1], mem.page(1) - 1, 2)), (mem.page(1), GpuFaultKind::NotMapped), "{name}");
        assert_eq!(xnack(m, 0), Ok(0));
        set(m, mem.page(4), PAGE, &[attr(GRAN, 0)]).unwrap();
        assert_eq!(kind(read(m, g[0], mem.page(4), 1)), (mem.page(4), GpuFaultKind::NotMapped), "{name}");
        assert_eq!(kind(read(m, g[0], mem.page(6), 1)), (mem.page(6), GpuFaultKind::NotMapped), "{name}: no range, XNACK off");
        read(m, g[2], mem.page(0), 1).unwrap();
    }
}

#[test]
fn xnack_on_does_not_reach_through_another_gpus_bo_mapping() {
    // svm_range_create_unregistered_range refuses an address a GPU VM maps a BO at.
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    let mem = Mapping::new(4, RW);
    assert_eq!(xnack(m, 1), Ok(1));
    let flags = (KFD_IOC_ALLOC_MEM_FLAGS_USERPTR | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
    let mut a =
        kfd_ioctl_alloc_memory_of_gpu_args { va_addr: mem.page(2), size: PAGE, handle: 0, mmap_offset: mem.page(2), gpu_id: g[0], flags };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    let ids = [g[0]];
    let mut mp =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mp).unwrap();
    m.gpu_write(g[0], mem.page(2), &[7]).unwrap();
    assert_eq!(kind(read(m, g[1], mem.page(2), 1)), (mem.page(2), GpuFaultKind::NotMapped));
    assert_eq!(kind(read(m, g[1], mem.page(2) - 1, 2)), (mem.page(2), GpuFaultKind::NotMapped));
    assert_eq!(read(m, g[1], mem.page(3), 1).unwrap(), [0]);
    assert_eq!(mem.cpu(2 * PAGE, 1), [7]);
}

#[test]
fn cpu_unmapped_svm_memory_faults() {
    let f = setup("mi210");
    let (m, g) = (&f.m, &f.ids);
    // Low memory the kernel's top-down placement does not hand out, so no other test thread
    // maps the hole this test leaves.
    let at = 0x30_0000u64;
    // SAFETY: a new mapping at a fixed address that must be free (NOREPLACE), unmapped below.
    let p = unsafe {
        libc::mmap(at as *mut c_void, 2 * PAGE as usize, RW, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE, -1, 0)
    };
    assert_eq!(p as u64, at);
    set(m, at, 2 * PAGE, &[attr(ACCESS, g[0])]).unwrap();
    m.gpu_write(g[0], at, &[1; 16]).unwrap();
    // SAFETY: the mapping made above.
    assert_eq!(unsafe { libc::munmap(p, 2 * PAGE as usize) }, 0);
    assert_eq!(kind(read(m, g[0], at + 8, 4)), (at + 8, GpuFaultKind::NotMapped));
    assert_eq!(kind(m.gpu_write(g[0], at + PAGE, &[1])), (at + PAGE, GpuFaultKind::NotMapped));
    assert_eq!(kind(m.gpu_atomic_u64(g[0], at, hsakmt_model::AtomicOp::Add, 1)), (at, GpuFaultKind::NotMapped));
}

/// The BO the engine test runs from: ring, read pointer and source data.
const BASE: u64 = 0x7200_0000_0000;
const RING: u64 = BASE;
const RPTR: u64 = BASE + 0x1000;
const SRC: u64 = BASE + 0x2000;

fn sdmab(r: sdma::Repr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut sdma::Packet::new_unchecked(&mut b[..])).unwrap();
    b
}

#[test]
fn sdma_copies_from_a_bo_into_svm_memory() {
    let f = setup("mi210");
    let (m, g) = (&f.m, f.ids[0]);
    let flags = (KFD_IOC_ALLOC_MEM_FLAGS_GTT | KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE) as u32;
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args { va_addr: BASE, size: 64 << 10, handle: 0, mmap_offset: 0, gpu_id: g, flags };
    raw(m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    let ids = [g];
    let mut mp =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut mp).unwrap();
    let data: Vec<u8> = (0..=255u8).cycle().take(6000).collect();
    m.gpu_write(g, SRC, &data).unwrap();
    let mem = Mapping::new(4, RW);
    set(m, mem.page(0), 2 * PAGE, &[attr(ACCESS, g)]).unwrap();
    // Into the range (across its page boundary), then into memory it does not cover.
    let mut ring = sdmab(sdma::Repr::copy_linear(SRC, mem.page(0) + 100, data.len() as u32));
    ring.extend(sdmab(sdma::Repr::copy_linear(SRC, mem.page(2), 16)));
    m.gpu_write(g, RING, &ring).unwrap();
    let desc = RingDesc {
        gpu_id: g,
        queue_id: 1,
        kind: EngineKind::Sdma,
        ring_va: RING,
        ring_bytes: 4096,
        rptr_va: RPTR,
        wptr_va: 0,
        ctx_va: 0,
        doorbell: 0,
    };
    let mut p = RingProgress::default();
    assert_eq!(m.engine_run(&desc, &mut p, ring.len() as u64, 100), RunEnd::Stopped);
    assert_eq!(mem.cpu(100, data.len()), data, "the CPU sees the GPU's copy");
    match &p.error {
        Some(QueueError::Fault(e)) => assert_eq!((e.va, e.write, e.kind), (mem.page(2), true, GpuFaultKind::NotMapped)),
        e => panic!("{e:?}"),
    }
    assert_eq!(mem.cpu(2 * PAGE, 1), [0]);
}
