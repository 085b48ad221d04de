//! The thunk's memory manager and the model seen together: bytes written through the CPU
//! mapping of a VRAM buffer are what the GPU reads at the same address once the buffer is
//! mapped, and a GPU access after unmapping is a page fault; closing the thunk after 10k
//! allocations gives every byte of the model's backing store back.

use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::context::{Context, OpenConfig};
use hsakmt_model::{Model, ModelConfig};
use std::sync::Arc;
use zerocopy::FromZeros;

fn open(model: &Arc<Model>) -> Context {
    let mut cfg = OpenConfig::default();
    cfg.memory.fmm.page_size = 4096;
    // The model does not clean up behind the thunk here: what is released, the thunk released.
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

fn vram_flags() -> HsaMemFlags {
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_NonPaged(1);
    f.set_bf_HostAccess(1);
    f.set_bf_CoarseGrain(1);
    f
}

#[test]
fn cpu_writes_are_what_the_gpu_reads_and_unmapped_is_a_fault() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi210")).unwrap());
    let mut c = open(&model);
    let (node, gpu_id) = first_gpu(&c);
    let size = 64 << 10;
    let va = c.alloc_memory(node, None, size, 0, vram_flags(), None).unwrap();
    let pattern: Vec<u8> = (0..size as usize).map(|i| (i * 7 + 3) as u8).collect();
    // SAFETY: the thunk CPU-mapped `size` writable bytes at `va` (HostAccess VRAM).
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), va as *mut u8, pattern.len()) };

    // Not yet mapped on the GPU: the GPU faults at the buffer's address.
    let mut buf = vec![0u8; 256];
    let fault = model.gpu_read(gpu_id, va + 4096, &mut buf).unwrap_err();
    assert_eq!(fault.va, va + 4096);

    c.map_memory_to_gpu(va, 0, None).unwrap();
    let mut back = vec![0u8; size as usize];
    model.gpu_read(gpu_id, va, &mut back).unwrap();
    assert_eq!(back, pattern, "the GPU reads what the CPU wrote");
    // And the other way: a GPU write shows up in the CPU mapping.
    model.gpu_write(gpu_id, va + 100, b"GPU").unwrap();
    // SAFETY: inside the CPU mapping of the buffer.
    let seen = unsafe { std::slice::from_raw_parts((va + 100) as *const u8, 3) };
    assert_eq!(seen, b"GPU");

    c.unmap_memory_to_gpu(va).unwrap();
    let fault = model.gpu_read(gpu_id, va + 8, &mut buf[..8]).unwrap_err();
    assert_eq!((fault.va, fault.write), (va + 8, false));
    assert!(model.gpu_write(gpu_id, va, b"x").is_err());
    c.free_memory(va).unwrap();
    assert_eq!(c.live_buffer_objects(), 0);
}

#[test]
fn close_after_ten_thousand_allocations_returns_every_byte() {
    let model = Arc::new(Model::new(ModelConfig::catalogue("mi25")).unwrap());
    let baseline = model.backing_bytes();
    {
        let mut c = open(&model);
        let (node, _) = first_gpu(&c);
        let mut host = HsaMemFlags::new_zeroed();
        host.set_bf_HostAccess(1);
        for i in 0..10_000u64 {
            let (n, f) = if i % 2 == 0 { (node, vram_flags()) } else { (0, host) };
            let va = c.alloc_memory(n, None, 4096 * (1 + i % 4), 0, f, None).unwrap();
            // Touch the buffer so the backing store really holds its page.
            // SAFETY: both kinds are CPU-mapped writable at `va` for at least one page.
            unsafe { (va as *mut u8).write_volatile(i as u8) };
            if i % 3 == 0 {
                c.map_memory_to_gpu(va, 0, None).unwrap();
            }
        }
        assert_eq!(c.live_buffer_objects(), 10_000);
        assert!(model.backing_bytes() > baseline);
        assert!(model.live_bos() >= 10_000);
        // dropping the context is CloseKFD's last close
    }
    assert_eq!(model.live_bos(), 0, "every BO was freed");
    assert_eq!(model.backing_bytes(), baseline, "the backing store is back to its baseline");
}
