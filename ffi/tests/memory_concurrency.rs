//! 4 threads × 25k mixed alloc / map / unmap / free / query operations through the C exports
//! on the built-in model, with invariants: live ranges never overlap, every query agrees with
//! what its thread allocated, and no buffer object is left at the end.

use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::Mutex;
use zerocopy::FromZeros;

const THREADS: usize = 4;
const OPS: usize = 25_000;

/// A tiny deterministic PRNG (xorshift64*), one per thread.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn four_threads_of_mixed_memory_operations() {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    assert_eq!(hsakmt::safe::open(), Ok(hsakmt_core::Status::SUCCESS));
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    let gpus: Vec<u32> = (0..sys.NumNodes).filter(|&n| hsakmt::safe::node_properties(n).unwrap().KFDGpuID != 0).collect();
    // Every live range of every thread: start -> end, to check that none overlap.
    let live: Mutex<BTreeMap<u64, u64>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let gpus = &gpus;
            let live = &live;
            s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
                let mut mine: Vec<(u64, u64, bool)> = Vec::new(); // (addr, size, mapped)
                for _ in 0..OPS {
                    let op = rng.next() % 10;
                    if op < 3 || mine.is_empty() {
                        let size = ((rng.next() % 16) + 1) * 4096;
                        let node = gpus[(rng.next() % gpus.len() as u64) as usize];
                        let mut f = HsaMemFlags::new_zeroed();
                        let vram = rng.next().is_multiple_of(2);
                        f.set_bf_NonPaged(vram as u32);
                        f.set_bf_HostAccess(1);
                        f.set_bf_CoarseGrain(1);
                        let mut p: *mut c_void = std::ptr::null_mut();
                        // SAFETY: valid out-pointer.
                        let st = unsafe { hsaKmtAllocMemory(if vram { node } else { 0 }, size, f, &mut p) };
                        assert_eq!(st, HSAKMT_STATUS_SUCCESS, "alloc");
                        let a = p as u64;
                        let mut l = live.lock().unwrap();
                        // No live range may overlap the new one.
                        if let Some((&s0, &e0)) = l.range(..=a).next_back() {
                            assert!(e0 <= a, "{a:#x} overlaps [{s0:#x}, {e0:#x})");
                        }
                        if let Some((&s1, _)) = l.range(a..).next() {
                            assert!(s1 >= a + size, "{a:#x}+{size:#x} overlaps {s1:#x}");
                        }
                        l.insert(a, a + size);
                        drop(l);
                        mine.push((a, size, false));
                    } else {
                        let i = (rng.next() % mine.len() as u64) as usize;
                        let (a, size, mapped) = mine[i];
                        match op {
                            3 | 4 => {
                                // SAFETY: no out-pointer.
                                let st = unsafe { hsaKmtMapMemoryToGPU(a as *mut c_void, size, std::ptr::null_mut()) };
                                assert_eq!(st, HSAKMT_STATUS_SUCCESS);
                                mine[i].2 = true;
                            }
                            5 => {
                                // SAFETY: address only.
                                assert_eq!(unsafe { hsaKmtUnmapMemoryToGPU(a as *mut c_void) }, HSAKMT_STATUS_SUCCESS);
                                mine[i].2 = false;
                            }
                            6 | 7 => {
                                let mut info = HsaPointerInfo::new_zeroed();
                                let inner = a + (rng.next() % size);
                                // SAFETY: valid out-pointer.
                                assert_eq!(unsafe { hsaKmtQueryPointerInfo(inner as *const c_void, &mut info) }, HSAKMT_STATUS_SUCCESS);
                                assert_eq!({ info.GPUAddress }, a);
                                assert_eq!({ info.SizeInBytes }, size);
                                assert_eq!(info.NMappedNodes != 0, mapped, "mapping state of {a:#x}");
                            }
                            _ => {
                                if mapped {
                                    // SAFETY: address only.
                                    assert_eq!(unsafe { hsaKmtUnmapMemoryToGPU(a as *mut c_void) }, HSAKMT_STATUS_SUCCESS);
                                }
                                live.lock().unwrap().remove(&a);
                                // SAFETY: address only.
                                assert_eq!(unsafe { hsaKmtFreeMemory(a as *mut c_void, size) }, HSAKMT_STATUS_SUCCESS);
                                mine.swap_remove(i);
                            }
                        }
                    }
                }
                for (a, size, mapped) in mine {
                    if mapped {
                        // SAFETY: address only.
                        assert_eq!(unsafe { hsaKmtUnmapMemoryToGPU(a as *mut c_void) }, HSAKMT_STATUS_SUCCESS);
                    }
                    live.lock().unwrap().remove(&a);
                    // SAFETY: address only.
                    assert_eq!(unsafe { hsaKmtFreeMemory(a as *mut c_void, size) }, HSAKMT_STATUS_SUCCESS);
                }
            });
        }
    });
    assert!(live.lock().unwrap().is_empty());
    hsakmt::global::with_ctx(|c| Ok(c.check_memory_invariants())).unwrap().expect("BO table invariants");
    let left = hsakmt::global::with_ctx(|c| Ok(c.live_buffer_objects())).unwrap();
    assert_eq!(left, 0, "every BO is gone");
    hsakmt::safe::close().unwrap();
}
