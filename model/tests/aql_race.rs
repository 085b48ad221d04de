//! Two producer threads (the core's AQL ring writer, as a runtime's threads submit) against the
//! model's AQL packet processor running concurrently on a third, on a 4-slot ring so every slot
//! is reused hundreds of times: each packet decrements its own completion signal exactly once.
//! With two producers a slot before the doorbell may still be unpublished (its producer is
//! writing the body), so the engine must acquire the header before it reads the body. A body
//! read before its header, a header written back after the read pointer, or a read pointer
//! published before the slot was consumed shows up as a signal decremented twice (a stale body)
//! or never. Run on a GTT BO the CPU maps (the model's atomics on its own mapping) and on
//! userptr process memory (checked copies ordered by fences).

mod support;

use hsakmt_core::abi::kfd::*;
use hsakmt_core::packet::aql::{Barrier, Body, PacketType, Repr};
use hsakmt_core::packet::ring::{AqlRing, Doorbell, INVALID_HEADER_WORD};
use hsakmt_core::Kfd;
use hsakmt_model::engine::{EngineKind, RingDesc, RingProgress, RunEnd};
use hsakmt_model::{Model, ModelConfig};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::*;

const SLOTS: u32 = 4;
const PACKETS: u64 = 1000;
const RPTR_OFF: u64 = 0x1000;
const SIG_OFF: u64 = 0x2000;
const BYTES: u64 = SIG_OFF + 64 * PACKETS;
const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
const USERPTR: u32 = KFD_IOC_ALLOC_MEM_FLAGS_USERPTR as u32;
const RW: u32 = KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE as u32;

/// A doorbell for several producers: it holds the write position (one past the highest
/// packet index rung), so a producer ringing late never moves it back.
struct MaxDoorbell(AtomicU64);

impl Doorbell for MaxDoorbell {
    fn ring(&self, index: u64) {
        self.0.fetch_max(index + 1, Ordering::Release);
    }
}

/// Ring, read pointer and signals at GPU VA `gpu_va`, which the CPU sees at `cpu`.
fn race(m: &Model, g: u32, gpu_va: u64, cpu: u64) {
    let sig = |i: u64| gpu_va + SIG_OFF + 64 * i;
    for i in 0..u64::from(SLOTS) {
        m.gpu_write(g, gpu_va + 64 * i, &INVALID_HEADER_WORD.to_le_bytes()).unwrap();
    }
    for i in 0..PACKETS {
        m.gpu_write(g, sig(i) + 8, &1i64.to_le_bytes()).unwrap();
    }
    let desc = RingDesc {
        gpu_id: g,
        queue_id: 1,
        kind: EngineKind::Aql,
        ring_va: gpu_va,
        ring_bytes: 64 * u64::from(SLOTS),
        rptr_va: gpu_va + RPTR_OFF,
        wptr_va: 0,
        ctx_va: 0,
        doorbell: 0,
    };
    let doorbell = MaxDoorbell(AtomicU64::new(0));
    let write_index = Box::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(120);
    // SAFETY: the ring, the read index and the doorbell live until all threads are joined;
    // the ring holds INVALID headers; the engine is the only other party and follows the
    // processor's side of the protocol (acquire the header, INVALID back, release the read
    // index), which is what this test checks.
    let ring = unsafe { AqlRing::new(cpu as *mut u8, SLOTS, write_index.as_ptr(), (cpu + RPTR_OFF) as *mut u64, &doorbell) }.unwrap();
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut p = RingProgress::default();
            while p.read < PACKETS {
                assert!(Instant::now() < deadline, "the engine stalled at {}", p.read);
                let write = doorbell.0.load(Ordering::Acquire);
                match m.engine_run(&desc, &mut p, write, 16) {
                    RunEnd::Stopped => panic!("queue stopped at {}: {:?}", p.read, p.error),
                    RunEnd::Idle | RunEnd::Blocked => std::thread::yield_now(),
                    RunEnd::Budget => {}
                }
            }
        });
        let ring = &ring;
        for t in 0..2 {
            s.spawn(move || {
                for _ in 0..PACKETS / 2 {
                    let mut slot = loop {
                        if let Some(slot) = ring.try_reserve() {
                            break slot;
                        }
                        assert!(Instant::now() < deadline, "the ring stayed full");
                        std::thread::yield_now();
                    };
                    // One producer dawdles between reserving its slot and writing it, so the other
                    // publishes packets after it and rings: the engine then stands on a slot
                    // whose old body is still there and whose header is INVALID.
                    if t == 0 {
                        std::thread::sleep(Duration::from_micros(20));
                    }
                    // Packet i decrements signal i.
                    let packet = Repr::new(Body::BarrierAnd(Barrier::default().completion_signal(sig(slot.index()))));
                    slot.write(&packet);
                    slot.commit();
                }
            });
        }
    });
    assert_eq!(m.gpu_read_obj::<u64>(g, gpu_va + RPTR_OFF).unwrap(), PACKETS);
    let values: Vec<i64> = (0..PACKETS).map(|i| m.gpu_read_obj::<i64>(g, sig(i) + 8).unwrap()).collect();
    let wrong: Vec<(u64, i64)> = (0..PACKETS).zip(values).filter(|&(_, v)| v != 0).collect();
    assert!(wrong.is_empty(), "signals not decremented exactly once: {wrong:?}");
    for i in 0..u64::from(SLOTS) {
        assert_eq!(m.gpu_read_obj::<u8>(g, gpu_va + 64 * i).unwrap(), PacketType::Invalid as u8);
    }
}

fn model() -> (Model, u32, Vec<std::os::fd::OwnedFd>) {
    let m = Model::new(ModelConfig::catalogue("mi210")).unwrap();
    let (_, renders) = acquire(&m, 1);
    let g = m.gpus()[0].gpu_id;
    (m, g, renders)
}

#[test]
fn producer_and_engine_race_on_a_gtt_ring() {
    let (m, g, _renders) = model();
    let va = 0x7000_0000_0000;
    let mut a = kfd_ioctl_alloc_memory_of_gpu_args {
        va_addr: va,
        size: BYTES.next_multiple_of(PAGE),
        handle: 0,
        mmap_offset: 0,
        gpu_id: g,
        flags: GTT | RW,
    };
    raw(&m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    let ids = [g];
    let mut map =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(&m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut map).unwrap();
    let len = a.size as usize;
    // SAFETY: the whole BO, at an address the kernel picks; unmapped below.
    let cpu = unsafe { Kfd::mmap(&m, None, len, 3, true, a.mmap_offset) }.unwrap();
    race(&m, g, va, cpu as u64);
    // SAFETY: the mapping made above; the threads using it are joined.
    unsafe { Kfd::munmap(&m, cpu, len) }.unwrap();
}

#[test]
fn producer_and_engine_race_on_a_userptr_ring() {
    let (m, g, _renders) = model();
    let mem = Mapping::new(BYTES.div_ceil(PAGE), libc::PROT_READ | libc::PROT_WRITE);
    let size = BYTES.next_multiple_of(PAGE);
    // GPU VA == CPU VA, as the thunk registers paged memory.
    let mut a =
        kfd_ioctl_alloc_memory_of_gpu_args { va_addr: mem.base, size, handle: 0, mmap_offset: mem.base, gpu_id: g, flags: USERPTR | RW };
    raw(&m, AMDKFD_IOC_ALLOC_MEMORY_OF_GPU, &mut a).unwrap();
    let ids = [g];
    let mut map =
        kfd_ioctl_map_memory_to_gpu_args { handle: a.handle, device_ids_array_ptr: ids.as_ptr() as u64, n_devices: 1, n_success: 0 };
    raw(&m, AMDKFD_IOC_MAP_MEMORY_TO_GPU, &mut map).unwrap();
    race(&m, g, mem.base, mem.base);
}
