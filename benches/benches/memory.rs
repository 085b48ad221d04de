//! The memory API through the C exports on the built-in model, with 10k live buffer objects:
//! an alloc + map + unmap + free cycle, and QueryPointerInfo of an interior address.

use criterion::{criterion_group, criterion_main, Criterion};
use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use std::ffi::c_void;
use std::hint::black_box;
use zerocopy::FromZeros;

fn flags(vram: bool) -> HsaMemFlags {
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_NonPaged(vram as u32);
    f.set_bf_HostAccess(1);
    f.set_bf_CoarseGrain(1);
    f
}

fn alloc(node: u32, size: u64, f: HsaMemFlags) -> *mut c_void {
    let mut p = std::ptr::null_mut();
    // SAFETY: a valid out-pointer.
    assert_eq!(unsafe { hsaKmtAllocMemory(node, size, f, &mut p) }, HSAKMT_STATUS_SUCCESS);
    p
}

fn memory(c: &mut Criterion) {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    hsakmt::safe::open().expect("open the model");
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    let gpu = (0..sys.NumNodes).find(|&n| hsakmt::safe::node_properties(n).unwrap().KFDGpuID != 0).unwrap();
    let live: Vec<*mut c_void> = (0..10_000).map(|i| alloc(gpu, 4096 * (1 + i % 4), flags(true))).collect();
    let mut g = c.benchmark_group("memory-10k-live-bos");
    g.bench_function("alloc+map+unmap+free VRAM 64 KiB", |b| {
        b.iter(|| {
            let p = alloc(gpu, 64 << 10, flags(true));
            // SAFETY: addresses only / valid arguments.
            unsafe {
                assert_eq!(hsaKmtMapMemoryToGPU(p, 64 << 10, std::ptr::null_mut()), 0);
                assert_eq!(hsaKmtUnmapMemoryToGPU(p), 0);
                assert_eq!(hsaKmtFreeMemory(p, 64 << 10), 0);
            }
        })
    });
    g.bench_function("alloc+map+unmap+free paged host 64 KiB", |b| {
        b.iter(|| {
            let p = alloc(0, 64 << 10, flags(false));
            // SAFETY: addresses only / valid arguments.
            unsafe {
                assert_eq!(hsaKmtMapMemoryToGPU(p, 64 << 10, std::ptr::null_mut()), 0);
                assert_eq!(hsaKmtUnmapMemoryToGPU(p), 0);
                assert_eq!(hsaKmtFreeMemory(p, 64 << 10), 0);
            }
        })
    });
    let mut i = 0usize;
    g.bench_function("QueryPointerInfo (interior address)", |b| {
        b.iter(|| {
            i = (i + 7919) % live.len();
            let mut info = HsaPointerInfo::new_zeroed();
            // SAFETY: a valid out-pointer.
            let st = unsafe { hsaKmtQueryPointerInfo((live[i] as usize + 100) as *const c_void, &mut info) };
            black_box((st, info.SizeInBytes))
        })
    });
    g.finish();
    for p in live {
        // SAFETY: addresses only.
        unsafe { hsaKmtFreeMemory(p, 0) };
    }
    hsakmt::safe::close().unwrap();
}

criterion_group!(benches, memory);
criterion_main!(benches);
