//! Memory API answers that must be what a real system gives (issue 9: an upstream test suite
//! run on the model found these four different), checked through the thunk and on the model's
//! GPUs:
//!
//! - scratch: any 64 KiB slice of a scratch range maps, in any order (upstream's
//!   _fmm_map_to_gpu_scratch makes one BO per map); unmapping goes by a slice's start;
//! - MapMemoryToGPU of VRAM with no node list maps the owner and every GPU with an io-link to it
//!   (upstream's usable_peer_id_array), so a peer reaches that VRAM;
//! - a dma-buf keeps its memory until its last descriptor is closed: an import after the
//!   exporter freed its buffer works and sees the bytes;
//! - SVM ranges the CPU unmapped leave the model, so the thunk's next VA reservation in that
//!   hole takes BOs.

use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::context::{Context, OpenConfig};
use hsakmt_core::Status;
use hsakmt_model::{Model, ModelConfig};
use std::sync::Arc;
use zerocopy::FromZeros;

const KIB64: u64 = 64 << 10;

fn open(model: &Arc<Model>) -> Context {
    let mut cfg = OpenConfig::default();
    cfg.memory.fmm.page_size = 4096;
    let port = hsakmt::global::SharedModel { model: model.clone(), release_on_drop: false };
    let mut c = Context::open(Box::new(port), cfg).expect("open");
    c.acquire_system_properties().expect("acquire");
    c
}

/// (node, gpu_id) of every GPU node.
fn gpus(c: &Context) -> Vec<(u32, u32)> {
    c.topology().unwrap().nodes.iter().enumerate().filter(|(_, n)| n.gpu_id != 0).map(|(i, n)| (i as u32, n.gpu_id)).collect()
}

fn vram_flags() -> HsaMemFlags {
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_NonPaged(1);
    f.set_bf_HostAccess(1);
    f.set_bf_CoarseGrain(1);
    f
}

fn reaches(model: &Model, gpu_id: u32, va: u64) -> bool {
    let mut b = [0u8; 8];
    model.gpu_read(gpu_id, va, &mut b).is_ok()
}

#[test]
fn scratch_slices_map_in_any_order() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let (node, gpu_id) = gpus(&c)[0];
    let bos = model.live_bos();
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_Scratch(1);
    let base = c.alloc_memory(node, None, 4 * KIB64, 0, f, None).unwrap();
    let slice = |i: u64| base + i * KIB64;

    // The third slice first, then the first: both map (the second map was INVALID_PARAMETER).
    assert_eq!(c.map_memory_to_gpu(slice(2), KIB64, None), Ok(0));
    assert!(reaches(&model, gpu_id, slice(2)) && !reaches(&model, gpu_id, slice(0)));
    assert_eq!(c.map_memory_to_gpu(slice(0), KIB64, None), Ok(0));
    assert!(reaches(&model, gpu_id, slice(0)) && reaches(&model, gpu_id, slice(2)));
    assert!(!reaches(&model, gpu_id, slice(1)) && !reaches(&model, gpu_id, slice(3)));
    // Leaving the range is upstream's sanity check (INVALID_PARAMETER); overlapping a mapped
    // slice is the KFD's refusal of the overlapping GPU mapping (ERROR). Neither changes anything.
    assert_eq!(c.map_memory_to_gpu(slice(3), 2 * KIB64, None), Err(Status::INVALID_PARAMETER));
    assert_eq!(c.map_memory_to_gpu(slice(1), 2 * KIB64, None), Err(Status::ERROR));
    assert!(!reaches(&model, gpu_id, slice(1)) && reaches(&model, gpu_id, slice(2)));
    assert_eq!(c.map_memory_to_gpu(slice(1), KIB64, None), Ok(0));
    assert_eq!(model.live_bos(), bos + 3, "one BO per mapped slice");

    // Unmapping goes by a slice's exact start (upstream's lookup); others are ERROR.
    assert_eq!(c.unmap_memory_to_gpu(slice(0) + 4096), Err(Status::ERROR));
    assert_eq!(c.unmap_memory_to_gpu(slice(3)), Err(Status::ERROR), "nothing mapped there");
    assert_eq!(c.unmap_memory_to_gpu(slice(0)), Ok(()));
    assert!(!reaches(&model, gpu_id, slice(0)) && reaches(&model, gpu_id, slice(1)) && reaches(&model, gpu_id, slice(2)));
    assert_eq!(c.unmap_memory_to_gpu(slice(0)), Err(Status::ERROR), "already unmapped");
    assert_eq!(c.map_memory_to_gpu(slice(0), KIB64, None), Ok(0), "mapped again");

    // Freeing the range unmaps and frees every slice.
    assert_eq!(c.free_memory(base), Ok(()));
    assert!((0..4).all(|i| !reaches(&model, gpu_id, slice(i))));
    assert_eq!(model.live_bos(), bos);
}

#[test]
fn vram_maps_to_its_gpu_and_every_gpu_linked_to_it() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let all = gpus(&c);
    let (owner, _) = all[0];
    // upstream's usable_peer_id_array: the owner and every GPU with an io-link to it.
    let topo = c.topology().unwrap();
    let linked: Vec<u32> = all
        .iter()
        .filter(|&&(n, _)| n == owner || topo.nodes[n as usize].io_links.iter().any(|l| l.NodeTo == owner))
        .map(|&(_, id)| id)
        .collect();
    assert!(linked.len() > 1, "the mi210 GPUs are linked to each other");

    let va = c.alloc_memory(owner, None, KIB64, 0, vram_flags(), None).unwrap();
    c.map_memory_to_gpu(va, 0, None).unwrap();
    for &(_, id) in &all {
        assert_eq!(reaches(&model, id, va), linked.contains(&id), "gpu {id}");
    }
    let info = c.query_pointer_info(va).unwrap();
    assert_eq!(info.NMappedNodes as usize, linked.len());
    c.unmap_memory_to_gpu(va).unwrap();
    assert!(all.iter().all(|&(_, id)| !reaches(&model, id, va)));
    // A node list still says exactly which GPUs.
    let (other_node, other_id) = all[1];
    c.map_memory_to_gpu(va, 0, Some(&[other_node])).unwrap();
    assert!(reaches(&model, other_id, va) && !reaches(&model, all[0].1, va));
    c.unmap_memory_to_gpu(va).unwrap();
    c.free_memory(va).unwrap();
}

#[test]
fn a_dmabuf_keeps_its_memory_until_its_last_descriptor_closes() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let (node, gpu_id) = gpus(&c)[0];
    let baseline = model.backing_bytes();
    let va = c.alloc_memory(node, None, KIB64, 0, vram_flags(), None).unwrap();
    let pattern: Vec<u8> = (0..KIB64 as usize).map(|i| (i * 11 + 1) as u8).collect();
    // SAFETY: the thunk CPU-mapped KIB64 writable bytes at `va` (HostAccess VRAM).
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), va as *mut u8, pattern.len()) };
    let (fd, offset) = c.export_dmabuf(va, KIB64).unwrap();
    assert_eq!(offset, 0);
    // The exporter lets its buffer go; the dma-buf still holds the memory.
    c.free_memory(va).unwrap();
    let (iva, size, _, _, _) = c.register_graphics_handle(fd, None).expect("import after the exporter freed it");
    assert_eq!(size, KIB64);
    c.map_memory_to_gpu(iva, 0, Some(&[node])).unwrap();
    let mut back = vec![0u8; KIB64 as usize];
    model.gpu_read(gpu_id, iva, &mut back).unwrap();
    assert_eq!(back, pattern, "the import sees the exporter's bytes");
    c.unmap_memory_to_gpu(iva).unwrap();
    c.deregister_memory(iva).unwrap();
    // A descriptor of the same dma-buf (dup) keeps it too; closing the last one lets it go.
    // SAFETY: `fd` is the exported descriptor, ours to dup and close.
    let dup = unsafe { libc::dup(fd) };
    assert!(dup >= 0);
    // SAFETY: as above; closed once.
    unsafe { libc::close(fd) };
    let (iva, _, _, _, _) = c.register_graphics_handle(dup, None).expect("a dup keeps the dma-buf");
    c.deregister_memory(iva).unwrap();
    assert!(model.backing_bytes() > baseline, "held by the open descriptor");
    // SAFETY: the dup'ed descriptor, closed once.
    unsafe { libc::close(dup) };
    assert_eq!(model.backing_bytes(), baseline, "every byte back once the last descriptor is closed");
}

#[test]
fn an_svm_hole_the_cpu_unmapped_takes_the_thunks_next_buffer() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let (node, _) = gpus(&c)[0];
    let len = 2 << 20;
    // SAFETY: a new private anonymous mapping at an address the kernel picks.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    assert_ne!(p, libc::MAP_FAILED);
    let addr = p as u64;
    let attrs = [HSA_SVM_ATTRIBUTE { r#type: HSA_SVM_ATTR_ACCESS, value: node }];
    // SAFETY: the test's own mapping, which Rust never references; the GPU may share it.
    unsafe { c.svm_set_attr(addr, len as u64, &attrs) }.unwrap();
    assert!(model.svm_ranges().iter().any(|&(s, _)| s == addr));
    // The application unmaps it (the kernel drops the range there); the thunk's next buffer
    // is placed in that hole.
    // SAFETY: the mapping made above, unused from here on.
    assert_eq!(unsafe { libc::munmap(p, len) }, 0);
    let mut f = vram_flags();
    f.set_bf_FixedAddress(1);
    let va = c.alloc_memory(node, None, len as u64, 0, f, Some(addr));
    assert_eq!(va, Ok(addr), "a VRAM buffer at the address the SVM range had");
    assert!(!model.svm_ranges().iter().any(|&(s, l)| s < addr + len as u64 && addr < s + l), "the range left with the CPU mapping");
    c.map_memory_to_gpu(addr, 0, None).unwrap();
    c.unmap_memory_to_gpu(addr).unwrap();
    c.free_memory(addr).unwrap();
}
