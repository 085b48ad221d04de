//! Real machine code through the thunk's own AQL queue (issue 14): model/tests/isa/kernels.cl
//! compiled here with clang-19 for gfx90a, gfx942 and gfx1100, placed in memory from
//! hsaKmtAllocMemory, dispatched on a queue from hsaKmtCreateQueue by ringing its doorbell, on
//! the model systems with those GPUs (the watcher thread runs the engine), checked against the
//! CPU: a vector add, a reduction through LDS with barriers, global atomics, a private array in
//! scratch, 64-bit and f16 arithmetic; a store to unmapped memory raises the memory-exception
//! event with its address; a trap sets the queue's error word (the runtime is enabled). The
//! model-level tests of every kernel are model/tests/isa_*.rs. Needs the Debian packages
//! clang-19 and lld-19 (.ci/packages).

use hsakmt::*;
use hsakmt_core::abi::hsakmt::*;
use hsakmt_core::abi::kfd::EC_QUEUE_WAVE_TRAP;
use hsakmt_core::packet::aql::{self, Body, KernelDispatch, Signal, SignalRepr, PACKET_LEN, SIGNAL_LEN};
use hsakmt_core::packet::ring::{AqlRing, DoorbellPtr, INVALID_HEADER_WORD};
use hsakmt_model::isa::elf::CodeObject;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use zerocopy::FromZeros;

const OK: HSAKMT_STATUS = HSAKMT_STATUS_SUCCESS;

/// kernels.cl for `mcpu`, linked: the code object's bytes.
fn kernels(mcpu: &str) -> Vec<u8> {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("thunk-isa-{mcpu}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../model/tests/isa/kernels.cl");
    let (o, co) = (dir.join("k.o"), dir.join("k.co"));
    for (tool, package, args) in [
        (
            "clang-19",
            "clang-19",
            vec![
                "-target".into(),
                "amdgcn-amd-amdhsa".into(),
                format!("-mcpu={mcpu}"),
                "-nogpulib".into(),
                "-O2".into(),
                "-c".into(),
                src.display().to_string(),
                "-o".into(),
                o.display().to_string(),
            ],
        ),
        ("ld.lld-19", "lld-19", vec!["-shared".into(), o.display().to_string(), "-o".into(), co.display().to_string()]),
    ] {
        let out = Command::new(tool).args(&args).output().unwrap_or_else(|e| panic!("{tool} ({e}): install the Debian package {package}"));
        assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::read(&co).unwrap()
}

/// `size` zeroed bytes on `node`, host-accessible, executable, mapped to the GPU.
fn gpu_memory(node: u32, size: u64) -> *mut u8 {
    let mut f = HsaMemFlags::new_zeroed();
    f.set_bf_HostAccess(1);
    f.set_bf_NonPaged(1);
    f.set_bf_ExecuteAccess(1);
    f.set_bf_PageSize(HSA_PAGE_SIZE_4KB);
    let (mut p, mut va, mut nodes) = (std::ptr::null_mut(), 0, [node]);
    // SAFETY: valid out-pointers; the memory lives until the thunk closes.
    unsafe {
        assert_eq!(hsaKmtAllocMemory(node, size, f, &mut p), OK);
        assert_eq!(hsaKmtMapMemoryToGPUNodes(p, size, &mut va, HsaMemFlags::new_zeroed(), 1, nodes.as_mut_ptr()), OK);
        std::ptr::write_bytes(p.cast::<u8>(), 0, size as usize);
    }
    p.cast()
}

/// An AQL queue of 64 packets with the runtime's error word (`ctl` + 64) and error event.
struct Queue {
    ring: AqlRing<DoorbellPtr>,
    id: HSA_QUEUEID,
    ctl: *mut u8,
    error_event: *mut HsaEvent,
}

impl Queue {
    fn new(node: u32) -> Queue {
        let ring = gpu_memory(node, 64 * PACKET_LEN as u64);
        let ctl = gpu_memory(node, 4096);
        for i in 0..64 {
            // SAFETY: inside the ring.
            unsafe { (*ring.add(i * PACKET_LEN).cast::<AtomicU32>()).store(INVALID_HEADER_WORD, Ordering::Relaxed) };
        }
        let mut d = HsaEventDescriptor::new_zeroed();
        d.EventType = HSA_EVENTTYPE_SIGNAL;
        d.NodeId = node;
        let mut error_event = std::ptr::null_mut();
        // SAFETY: live descriptor and out-pointer.
        assert_eq!(unsafe { hsaKmtCreateEvent(&mut d, false, false, &mut error_event) }, OK);
        let mut r = HsaQueueResource::new_zeroed();
        // SAFETY: offsets inside the 4 KiB control block.
        unsafe {
            r.__anon_union_3 = HsaQueueResource__anon_union_3 { QueueRptrValue: ctl as u64 };
            r.__anon_union_2 = HsaQueueResource__anon_union_2 { QueueWptrValue: ctl.add(8) as u64 };
            r.ErrorReason = ctl.add(64).cast();
        }
        // SAFETY: GPU-visible ring and control block that outlive the queue.
        let st = unsafe {
            hsaKmtCreateQueue(
                node,
                HSA_QUEUE_COMPUTE_AQL,
                100,
                HSA_QUEUE_PRIORITY_NORMAL,
                ring.cast(),
                64 * PACKET_LEN as u64,
                error_event,
                &mut r,
            )
        };
        assert_eq!(st, OK);
        // SAFETY: ring, indices and doorbell from the queue, alive until it is destroyed.
        let ring = unsafe { AqlRing::new(ring, 64, ctl.add(8).cast(), ctl.cast(), DoorbellPtr::new(r.__anon_union_1.Queue_DoorBell_aql)) }
            .unwrap();
        Queue { ring, id: r.QueueId, ctl, error_event }
    }

    fn error_word(&self) -> u64 {
        // SAFETY: the error word in the control block, written by the model.
        unsafe { (*self.ctl.add(64).cast::<AtomicU64>()).load(Ordering::Acquire) }
    }

    /// Dispatch `k` with `args`: the completion signal's value word (1 until it completes).
    fn submit(&self, k: KernelDispatch, args: &[u64]) -> &'static AtomicI64 {
        // SAFETY: offsets inside the control block: the signal at 256, kernel arguments at 512.
        let (signal, kernarg) = unsafe { (self.ctl.add(256), self.ctl.add(512)) };
        // SAFETY: 64 bytes of signal, at most 448 bytes of arguments, this test's own.
        unsafe {
            SignalRepr::user(1).emit(&mut Signal::new_unchecked(std::slice::from_raw_parts_mut(signal, SIGNAL_LEN)));
            std::ptr::copy_nonoverlapping(args.as_ptr().cast::<u8>(), kernarg, 8 * args.len());
        }
        self.ring.submit(&aql::Repr::new(Body::KernelDispatch(k.kernarg(kernarg as u64).completion_signal(signal as u64))));
        // SAFETY: amd_signal_t.value, 8-byte aligned, in memory that lives until the thunk closes.
        unsafe { &*signal.add(8).cast::<AtomicI64>() }
    }

    /// Dispatch and wait (hang guard 60 s) for the completion signal, or for `stopped` (the
    /// queue's error word, or another sign the queue stopped): whether it completed.
    fn run_until(&self, k: KernelDispatch, args: &[u64], stopped: impl Fn() -> bool) -> bool {
        let value = self.submit(k, args);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if value.load(Ordering::Acquire) == 0 {
                return true;
            }
            if self.error_word() != 0 || stopped() {
                return false;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        false
    }

    fn run(&self, k: KernelDispatch, args: &[u64]) -> bool {
        self.run_until(k, args, || false)
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: the queue and event this value made.
        unsafe {
            assert_eq!(hsaKmtDestroyQueue(self.id), OK);
            assert_eq!(hsaKmtDestroyEvent(self.error_event), OK);
        }
    }
}

fn words(p: *const u8, n: usize) -> Vec<u32> {
    // SAFETY: `p` holds `n` words of this test's GPU memory, no dispatch running.
    unsafe { std::slice::from_raw_parts(p.cast::<u32>(), n).to_vec() }
}

fn put<T: Copy>(p: *mut u8, v: &[T]) {
    // SAFETY: `p` has room for `v` (the test's buffers are sized for it).
    unsafe { std::ptr::copy_nonoverlapping(v.as_ptr().cast::<u8>(), p, std::mem::size_of_val(v)) };
}

fn run_on(model: &str, mcpu: &str) {
    std::env::set_var("HSAKMT_MODEL", model);
    hsakmt::safe::open().expect("open the model");
    let sys = hsakmt::safe::acquire_system_properties().unwrap();
    let node = (0..sys.NumNodes).find(|&n| hsakmt::safe::node_properties(n).unwrap().KFDGpuID != 0).expect("a GPU node");
    // Before any queue: the runtime's part, so a stopped queue reports to its error word.
    // SAFETY: no r_debug pointer.
    assert_eq!(unsafe { hsaKmtRuntimeEnable(std::ptr::null_mut(), false) }, OK);
    let co = kernels(mcpu);
    let obj = CodeObject::parse(&co).unwrap();
    let image = obj.image();
    let code = gpu_memory(node, image.len() as u64);
    put(code, &image);
    let kd = |k: &str| code as u64 + obj.symbol(&format!("{k}.kd")).unwrap();
    let what = format!("{model} ({mcpu})");

    let n = 64 * 1024u32;
    let mem = gpu_memory(node, 16 << 20);
    let at = |off: usize| mem.wrapping_add(off);
    let va = |off: usize| at(off) as u64;
    let q = Queue::new(node);

    // Vector add.
    let a: Vec<f32> = (0..n).map(|i| i as f32 * 0.25 - 77.0).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 1013) as f32 / 3.0).collect();
    put(at(0), &a);
    put(at(1 << 20), &b);
    assert!(q.run(KernelDispatch::new(kd("vadd"), n, 256), &[va(0), va(1 << 20), va(2 << 20), u64::from(n)]), "{what}: vadd");
    let c = words(at(2 << 20), n as usize);
    assert!((0..n as usize).all(|i| c[i] == (a[i] + b[i]).to_bits()), "{what}: vadd results");

    // Reduction through LDS with barriers (and an LDS atomic counter), 64 workgroups of 256.
    let v: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761) >> 12).collect();
    put(at(0), &v);
    assert!(q.run(KernelDispatch::new(kd("reduce"), n, 256), &[va(0), va(3 << 20), va(4 << 20)]), "{what}: reduce");
    let (sums, counts) = (words(at(3 << 20), 256), words(at(4 << 20), 256));
    for g in 0..256 {
        assert_eq!(sums[g], v[g * 256..(g + 1) * 256].iter().fold(0u32, |s, &x| s.wrapping_add(x)), "{what}: workgroup {g}");
        assert_eq!(counts[g], (0..256).sum::<u32>(), "{what}: workgroup {g}'s LDS counter");
    }

    // Global atomics: a histogram of 16 bins and a ticket per work-item (a permutation).
    let m = 5000u32;
    let h: Vec<u32> = (0..m).map(|i| i.wrapping_mul(2_246_822_519).rotate_left(13)).collect();
    put(at(0), &h);
    let mut init = [0u32; 24];
    init[17] = u32::MAX;
    init[20] = u32::MAX;
    put(at(5 << 20), &init);
    put(at(5 << 20 | 0x1000), &[0u32]);
    assert!(
        q.run(KernelDispatch::new(kd("histo"), 5120, 128), &[va(0), va(5 << 20), va(5 << 20 | 0x1000), va(6 << 20), u64::from(m)]),
        "{what}: histo"
    );
    let bins = words(at(5 << 20), 16);
    for (k, &got) in bins.iter().enumerate() {
        assert_eq!(got as usize, h.iter().filter(|&&x| x as usize & 15 == k).count(), "{what}: bin {k}");
    }
    let mut tickets = words(at(6 << 20), m as usize);
    tickets.sort_unstable();
    assert!(tickets.iter().enumerate().all(|(i, &t)| t == i as u32), "{what}: tickets");

    // A private array in scratch.
    put(at(0), &h);
    assert!(q.run(KernelDispatch::new(kd("priv"), m, 256), &[va(0), va(7 << 20), u64::from(m)]), "{what}: priv");
    let got = words(at(7 << 20), m as usize);
    for (i, &x) in h.iter().enumerate() {
        let arr: Vec<u32> = (0..48u32).map(|k| x.wrapping_mul(k + 1).wrapping_add(k)).collect();
        let want = (0..48u32).fold(0u32, |s, k| s.wrapping_add(arr[(k.wrapping_mul(7).wrapping_add(x) % 48) as usize] ^ k));
        assert_eq!(got[i], want, "{what}: priv {i}");
    }

    // 64-bit integers and f16 sums (small integers: exact in half and in float).
    let w = 256usize;
    let xs: Vec<f64> = (0..=w).map(|i| i as f64 * 0.5 - 40.0).collect();
    let ls: Vec<i64> = (0..w as i64).map(|i| i * 0x1_0000_0001 - 77).collect();
    let hs: Vec<u16> = (0..2 * w).map(|i| [0x3c00u16, 0x4000, 0x4200, 0x4400][i % 4]).collect();
    put(at(0), &xs);
    put(at(1 << 20), &ls);
    put(at(8 << 20), &hs);
    let args = [va(0), va(1 << 20), va(2 << 20), va(3 << 20), va(8 << 20), va(9 << 20)];
    assert!(q.run(KernelDispatch::new(kd("wide"), w as u32, 64), &args), "{what}: wide");
    let lo = words(at(3 << 20), 4 * w);
    let hf = words(at(9 << 20), w);
    let half = |b: u16| f32::from(b >> 10 & 0x1f).exp2() / 32768.0 * (1.0 + f32::from(b & 0x3ff) / 1024.0);
    for i in 0..w {
        let q64 = |k: usize| i64::from(lo[2 * k]) & 0xffff_ffff | i64::from(lo[2 * k + 1]) << 32;
        assert_eq!(q64(2 * i), ls[i] * 3 + (ls[i] >> 3) - xs[i] as i64, "{what}: i64 {i}");
        assert_eq!(q64(2 * i + 1), ls[i] ^ i as i64, "{what}: xor {i}");
        assert_eq!(f32::from_bits(hf[i]), half(hs[2 * i]) + half(hs[2 * i + 1]), "{what}: f16 sum {i}");
    }
    drop(q);

    // A store to unmapped memory: the memory-exception event names the page.
    let hole = 0x7f00_0000_0000u64;
    let mut d = HsaEventDescriptor::new_zeroed();
    d.EventType = HSA_EVENTTYPE_MEMORY;
    d.NodeId = node;
    let mut fault = std::ptr::null_mut();
    // SAFETY: live descriptor and out-pointer.
    assert_eq!(unsafe { hsaKmtCreateEvent(&mut d, true, false, &mut fault) }, OK);
    let q = Queue::new(node);
    // SAFETY: a live event; a zero-timeout wait polls it (and fills in its data when set).
    let faulted = || unsafe { hsaKmtWaitOnEvent(fault, 0) } == OK;
    assert!(!q.run_until(KernelDispatch::new(kd("fill"), 64, 64), &[hole + 0x40, 1 | (64 << 32)], faulted), "{what}: the fault completed");
    // SAFETY: the event's data, written by the wait.
    let addr = unsafe { (*fault).EventData.EventData.MemoryAccessFault.VirtualAddress };
    assert_eq!(addr, hole, "{what}: the faulting page");
    drop(q);
    // SAFETY: the event made above.
    assert_eq!(unsafe { hsaKmtDestroyEvent(fault) }, OK);

    // A trap: the queue's error word gets KFD_EC_MASK(EC_QUEUE_WAVE_TRAP) after the stores before it.
    let q = Queue::new(node);
    put(at(0), &[13u32, 0, 0]);
    assert!(!q.run(KernelDispatch::new(kd("trap"), 1, 1), &[va(0)]), "{what}: the trap completed");
    // KFD_EC_MASK(ec) is bit ec - 1.
    assert_eq!(q.error_word(), 1u64 << (EC_QUEUE_WAVE_TRAP - 1), "{what}: error word");
    assert_eq!(words(at(0), 3), [13, 1, 0], "{what}: stores before the trap, none after");
    drop(q);
    hsakmt::safe::close().unwrap();
}

#[test]
fn kernels_run_through_the_thunks_aql_queue_on_every_gpu_with_machine_code() {
    for (model, mcpu) in [("mi210", "gfx90a"), ("mi300x", "gfx942"), ("rx7900xtx", "gfx1100")] {
        run_on(model, mcpu);
    }
}
