//! The handle API through the thunk's Context on the model: a dma-buf of a VRAM buffer imported
//! as a handle and VA-mapped at a caller-chosen address is what the model's GPU reads there; a
//! fault after VaUnmap; the CPU map shares the pages; closing the thunk releases live handles.

use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::context::{Context, OpenConfig};
use hsakmt_core::Status;
use hsakmt_model::{GpuFaultKind, Model, ModelConfig};
use std::sync::Arc;
use zerocopy::FromZeros;

fn open(model: &Arc<Model>) -> Context {
    let mut cfg = OpenConfig::default();
    cfg.memory.fmm.page_size = 4096;
    let port = hsakmt::global::SharedModel { model: model.clone(), release_on_drop: false };
    let mut c = Context::open(Box::new(port), cfg).expect("open");
    c.acquire_system_properties().expect("acquire");
    c
}

fn first_gpu(c: &Context) -> (u32, u32) {
    let topo = c.topology().unwrap();
    let (i, n) = topo.nodes.iter().enumerate().find(|(_, n)| n.gpu_id != 0).unwrap();
    (i as u32, n.gpu_id)
}

#[test]
fn va_mapped_handle_is_what_the_gpu_reads_and_unmapped_is_a_fault() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let (node, gpu_id) = first_gpu(&c);
    let size = 64u64 << 10;
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_NonPaged(1);
    f.set_bf_HostAccess(1);
    f.set_bf_CoarseGrain(1);
    let vram = c.alloc_memory(node, None, size, 0, f, None).unwrap();
    let pattern: Vec<u8> = (0..size as usize).map(|i| (i * 13 + 1) as u8).collect();
    // SAFETY: the thunk CPU-mapped `size` writable bytes at `vram`.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), vram as *mut u8, pattern.len()) };
    let bos = model.live_bos();

    let (fd, _) = c.export_dmabuf(vram, size).unwrap();
    let (h, got) = c.handle_import_dmabuf(i64::from(fd)).unwrap();
    assert_eq!(got, size);
    assert_eq!(c.live_mem_handles(), 1);
    // A VA the caller reserved (OnlyAddress): nothing maps it yet.
    let mut o = HsaMemFlags::new_zeroed();
    o.set_bf_OnlyAddress(1);
    let at = c.alloc_memory(node, None, size, 0, o, None).unwrap();
    let mut buf = vec![0u8; 4096];
    assert_eq!(model.gpu_read(gpu_id, at, &mut buf).unwrap_err().kind, GpuFaultKind::NotMapped);
    // The second half of the object at `at`.
    c.memory_va_op(h, size / 2, size / 2, at, Some(HSA_MEMORY_ACCESS_RW), Some(node)).unwrap();
    let mut back = vec![0u8; (size / 2) as usize];
    model.gpu_read(gpu_id, at, &mut back).unwrap();
    assert_eq!(back, pattern[(size / 2) as usize..], "the GPU reads the object's bytes at the chosen VA");
    // A GPU write there lands in the original buffer, and in the handle's CPU map.
    model.gpu_write(gpu_id, at + 8, b"handle").unwrap();
    // SAFETY: inside the thunk's CPU mapping of the VRAM buffer.
    let seen = unsafe { std::slice::from_raw_parts((vram + size / 2 + 8) as *const u8, 6) };
    assert_eq!(seen, b"handle");
    let cpu = c.memory_cpu_map(h).unwrap();
    assert_eq!(c.memory_cpu_map(h).unwrap(), cpu);
    // SAFETY: the handle's CPU mapping covers the whole object.
    let seen = unsafe { std::slice::from_raw_parts((cpu + size / 2 + 8) as *const u8, 6) };
    assert_eq!(seen, b"handle");
    // Unmapped: a fault; a second unmap is ERROR.
    c.memory_va_op(h, size / 2, size / 2, at, None, Some(node)).unwrap();
    assert_eq!(model.gpu_read(gpu_id, at, &mut buf).unwrap_err().kind, GpuFaultKind::NotMapped);
    assert_eq!(c.memory_va_op(h, size / 2, size / 2, at, None, Some(node)), Err(Status::ERROR));
    // Read-only: GPU writes fault.
    c.memory_va_op(h, 0, 4096, at, Some(HSA_MEMORY_ACCESS_RO), Some(node)).unwrap();
    assert_eq!(model.gpu_write(gpu_id, at, b"x").unwrap_err().kind, GpuFaultKind::ReadOnly);
    // Free: the mapping and the model's BO go.
    c.mem_handle_free(h).unwrap();
    assert_eq!(model.gpu_read(gpu_id, at, &mut buf).unwrap_err().kind, GpuFaultKind::NotMapped);
    assert_eq!(model.live_bos(), bos);
    assert_eq!(c.mem_handle_free(h), Err(Status::ERROR));
    assert_eq!(c.live_mem_handles(), 0);

    // A live, mapped handle is released when the thunk closes.
    let (h2, _) = c.handle_import_dmabuf(i64::from(fd)).unwrap();
    c.memory_va_op(h2, 0, size, at, Some(HSA_MEMORY_ACCESS_RW), Some(node)).unwrap();
    c.memory_cpu_map(h2).unwrap();
    // SAFETY: the fd came from export_dmabuf and is closed once.
    drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
    drop(c);
    assert_eq!(model.gpu_read(gpu_id, at, &mut buf).unwrap_err().kind, GpuFaultKind::NotMapped);
    assert_eq!(model.live_bos(), 0);
}
