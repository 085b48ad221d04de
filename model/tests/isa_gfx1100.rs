//! The model GPU runs gfx1100 (RDNA3) machine code (model/ISA.md): OpenCL kernels compiled
//! here with clang-19 for gfx1100 (wave32, and wave64 with -mwavefrontsize64), loaded from
//! their ELF code objects and dispatched through an AQL queue on the rx7900xtx model, checked
//! against the CPU; the decoder checked against llvm-objdump on the compiled kernels and on an
//! llvm-mc sweep. Needs the Debian packages clang-19, lld-19 and llvm-19 (.ci/packages).

mod support;

use hsakmt_core::abi::kfd::*;
use hsakmt_core::packet::aql::{self, Body, KernelDispatch};
use hsakmt_model::engine::{EngineKind, QueueError, RingDesc, RingProgress, RunEnd};
use hsakmt_model::events::event_data;
use hsakmt_model::isa::{elf::CodeObject, gfx11};
use hsakmt_model::{Model, ModelConfig};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Command;
use support::*;
use zerocopy::FromZeros;

const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
const RW: u32 = (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) as u32;
const BASE: u64 = 0x7000_0000_0000;
const RING: u64 = BASE;
const KARG: u64 = BASE + 0x1000;
const CODE: u64 = BASE + 0x10000;
const DATA: u64 = BASE + 0x100000;
const HOLE: u64 = BASE + 0x1000_0000;
const N: u32 = 1 << 20;

/// `tool` from `package`, or a loud failure naming the package.
fn tool(name: &str, package: &str) -> String {
    match Command::new(name).arg("--version").output() {
        Ok(o) if o.status.success() => name.to_string(),
        _ => panic!("{name} is missing: install the Debian package {package} (listed in .ci/packages)"),
    }
}

fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
}

fn scratch(tag: &str) -> PathBuf {
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("isa11-{tag}-{n}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// kernels.cl compiled (with clang's `extra` flags) and linked for gfx1100: the code
/// object's bytes and path.
fn code_object(extra: &[&str]) -> (Vec<u8>, PathBuf) {
    let (clang, lld) = (tool("clang-19", "clang-19"), tool("ld.lld-19", "lld-19"));
    let d = scratch("cl");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/isa/kernels.cl");
    let (o, co) = (d.join("k.o"), d.join("k.co"));
    run(Command::new(clang)
        .args(["-target", "amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-nogpulib", "-O2", "-c"])
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&o));
    run(Command::new(lld).arg("-shared").arg(&o).arg("-o").arg(&co));
    (std::fs::read(&co).unwrap(), co)
}

/// llvm-objdump's instructions of `file`: (its text, the encoding's dwords).
fn objdump(file: &PathBuf) -> Vec<(String, Vec<u32>)> {
    let out = Command::new(tool("llvm-objdump-19", "llvm-19")).args(["-d", "--mcpu=gfx1100"]).arg(file).output().unwrap();
    assert!(out.status.success());
    let mut v = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((text, comment)) = line.split_once("//") else { continue };
        let Some((_, enc)) = comment.split_once(':') else { continue };
        let words: Vec<u32> = enc.split_whitespace().take_while(|t| t.len() == 8).map(|t| u32::from_str_radix(t, 16).unwrap()).collect();
        if !words.is_empty() {
            v.push((text.split_whitespace().collect::<Vec<_>>().join(" "), words));
        }
    }
    v
}

fn check_decoder(listing: &[(String, Vec<u32>)]) {
    assert!(listing.len() > 20);
    let mut bad = Vec::new();
    for (text, words) in listing {
        match gfx11::decode(words) {
            None => bad.push(format!("not decoded: {text} {words:08x?}")),
            Some(i) => {
                let ours = i.to_string().split_whitespace().collect::<Vec<_>>().join(" ");
                if usize::from(i.len) != 4 * words.len() || ours != *text {
                    bad.push(format!("{words:08x?}: ours {ours:?} ({} bytes), llvm {text:?}", i.len));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{} of {} differ:\n{}", bad.len(), listing.len(), bad.join("\n"));
}

#[test]
fn decoder_agrees_with_llvm_on_the_compiled_kernels() {
    let (_, co) = code_object(&[]);
    check_decoder(&objdump(&co));
}

#[test]
fn decoder_agrees_with_llvm_on_the_sweep() {
    let mc = tool("llvm-mc-19", "llvm-19");
    let d = scratch("sweep");
    let obj = d.join("sweep.o");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/isa/sweep-gfx1100.s");
    run(Command::new(mc).args(["-arch=amdgcn", "-mcpu=gfx1100", "-filetype=obj"]).arg(&src).arg("-o").arg(&obj));
    let listing = objdump(&obj);
    let lines = std::fs::read_to_string(&src).unwrap().lines().filter(|l| !l.is_empty() && !l.starts_with("//")).count();
    assert_eq!(listing.len(), lines, "every sweep line disassembled");
    check_decoder(&listing);
}

struct Fx {
    m: Model,
    g: u32,
    co: Vec<u8>,
    _renders: Vec<OwnedFd>,
}

fn setup() -> Fx {
    setup_with(&[])
}

/// The fixture with the kernels compiled with clang's `extra` flags.
fn setup_with(extra: &[&str]) -> Fx {
    let m = Model::new(ModelConfig::catalogue("rx7900xtx")).unwrap();
    let (_, renders) = acquire(&m, 1);
    let g = m.gpus()[0].gpu_id;
    alloc_map(&m, g, BASE, 64 << 20, GTT | RW);
    let (co, _) = code_object(extra);
    let f = Fx { m, g, co, _renders: renders };
    let obj = CodeObject::parse(&f.co).unwrap();
    f.m.gpu_write(f.g, CODE, &obj.image()).unwrap();
    f
}

/// The fixture with the hand-written kernels of tests/isa/gfx1100.s, assembled by llvm-mc.
fn setup_asm() -> Fx {
    let m = Model::new(ModelConfig::catalogue("rx7900xtx")).unwrap();
    let (_, renders) = acquire(&m, 1);
    let g = m.gpus()[0].gpu_id;
    alloc_map(&m, g, BASE, 64 << 20, GTT | RW);
    let (mc, lld) = (tool("llvm-mc-19", "llvm-19"), tool("ld.lld-19", "lld-19"));
    let d = scratch("asm");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/isa/gfx1100.s");
    let (o, co) = (d.join("h.o"), d.join("h.co"));
    run(Command::new(mc).args(["-triple=amdgcn-amd-amdhsa", "-mcpu=gfx1100", "-filetype=obj"]).arg(&src).arg("-o").arg(&o));
    run(Command::new(lld).arg("-shared").arg(&o).arg("-o").arg(&co));
    let f = Fx { m, g, co: std::fs::read(&co).unwrap(), _renders: renders };
    let obj = CodeObject::parse(&f.co).unwrap();
    f.m.gpu_write(f.g, CODE, &obj.image()).unwrap();
    f
}

impl Fx {
    /// GPU VA of `kernel`'s descriptor.
    fn kd(&self, kernel: &str) -> u64 {
        CODE + CodeObject::parse(&self.co).unwrap().symbol(&format!("{kernel}.kd")).unwrap()
    }
    /// One dispatch on a fresh AQL queue: how the run ended and the queue's progress.
    fn dispatch(&self, k: KernelDispatch, args: &[u8]) -> (RunEnd, RingProgress) {
        self.dispatch_at(k, args, 0, 0)
    }
    /// The same with the queue's read pointer at `rptr_va` and its CWSR area at `ctx_va` (0: none).
    fn dispatch_at(&self, k: KernelDispatch, args: &[u8], rptr_va: u64, ctx_va: u64) -> (RunEnd, RingProgress) {
        self.m.gpu_write(self.g, KARG, args).unwrap();
        let k = KernelDispatch { kernarg_address: KARG, ..k };
        self.m.gpu_write(self.g, RING, &aql::Repr::new(Body::KernelDispatch(k)).to_bytes()).unwrap();
        let ring = RingDesc {
            gpu_id: self.g,
            queue_id: 1,
            kind: EngineKind::Aql,
            ring_va: RING,
            ring_bytes: 4096,
            rptr_va,
            wptr_va: 0,
            ctx_va,
            doorbell: 0,
        };
        let mut p = RingProgress::default();
        // A long dispatch is preempted after each quantum of wave-instructions: run on.
        let mut end = RunEnd::Budget;
        while end == RunEnd::Budget {
            end = self.m.engine_run(&ring, &mut p, 1, 16);
        }
        (end, p)
    }
    fn words(&self, va: u64, n: usize) -> Vec<u32> {
        let mut b = vec![0u8; 4 * n];
        self.m.gpu_read(self.g, va, &mut b).unwrap();
        b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }
}

fn args(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

#[test]
fn vector_add_of_a_million_floats_matches_the_cpu() {
    let f = setup();
    let (a, b, c) = (DATA, DATA + 4 * u64::from(N), DATA + 8 * u64::from(N));
    let av: Vec<f32> = (0..N).map(|i| i as f32 * 0.5 - 1000.0).collect();
    let bv: Vec<f32> = (0..N).map(|i| (i % 977) as f32 / 7.0).collect();
    f.m.gpu_write(f.g, a, &av.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    f.m.gpu_write(f.g, b, &bv.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    // n is one less than the grid: the last work-item is masked off by the kernel's compare.
    let n = N - 1;
    let t = std::time::Instant::now();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("vadd"), N, 256), &args(&[a, b, c, u64::from(n)]));
    let took = t.elapsed();
    eprintln!("vadd of {N} floats on the model GPU: {took:?} ({:.1} M work-items/s)", f64::from(N) / took.as_secs_f64() / 1e6);
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(c, N as usize);
    for i in 0..n as usize {
        assert_eq!(got[i], (av[i] + bv[i]).to_bits(), "c[{i}]");
    }
    assert_eq!(got[n as usize], 0, "the work-item past n stored nothing");
}

#[test]
fn fill_with_a_partial_last_workgroup_and_wave() {
    let f = setup();
    // 1000 work-items in workgroups of 96: the last workgroup has 40 (one partial wave).
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 1000, 96), &args(&[DATA, 7 | (2000 << 32)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, 1001);
    for (i, &v) in got[..1000].iter().enumerate() {
        assert_eq!(v, 7 + i as u32);
    }
    assert_eq!(got[1000], 0, "nothing past the grid");
}

#[test]
fn two_dimensional_work_item_ids_are_packed_in_v0() {
    let f = setup();
    let (w, h) = (64u32, 12u32);
    let k = KernelDispatch { dimensions: 2, workgroup_size: [16, 4, 1], grid_size: [w, h, 1], ..KernelDispatch::new(f.kd("ids"), 0, 1) };
    let (end, p) = f.dispatch(k, &args(&[DATA, u64::from(w)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, (w * h) as usize);
    for y in 0..h {
        for x in 0..w {
            assert_eq!(got[(y * w + x) as usize], y << 16 | x, "({x}, {y})");
        }
    }
}

fn memory_exception(d: &kfd_event_data) -> kfd_hsa_memory_exception_data {
    // SAFETY: every bit pattern is a valid kfd_hsa_memory_exception_data.
    unsafe { d.__anon_union_1.memory_exception_data }
}

#[test]
fn a_store_to_unmapped_memory_raises_the_memory_exception() {
    let f = setup();
    let mut e = kfd_ioctl_create_event_args::new_zeroed();
    e.event_type = KFD_IOC_EVENT_MEMORY as u32;
    raw(&f.m, AMDKFD_IOC_CREATE_EVENT, &mut e).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 64, 64), &args(&[HOLE + 0x40, 1 | (64 << 32)]));
    assert_eq!(end, RunEnd::Stopped);
    match &p.error {
        Some(QueueError::Fault(x)) => assert_eq!((x.va, x.write), (HOLE + 0x40, true)),
        e => panic!("{e:?}"),
    }
    let mut d = [event_data(e.event_id, 0)];
    let mut w =
        kfd_ioctl_wait_events_args { events_ptr: d.as_mut_ptr() as u64, num_events: 1, wait_for_all: 1, timeout: 0, wait_result: 99 };
    let _ = raw(&f.m, AMDKFD_IOC_WAIT_EVENTS, &mut w);
    assert_eq!(w.wait_result, KFD_IOC_WAIT_RESULT_COMPLETE as u32);
    let x = memory_exception(&d[0]);
    assert_eq!((x.va, x.gpu_id, x.failure.NotPresent), (HOLE, f.g, 1));
}

#[test]
fn an_unsupported_instruction_or_a_runaway_loop_stops_the_queue() {
    let f = setup();
    let entry = CODE + CodeObject::parse(&f.co).unwrap().symbol("fill").unwrap();
    // v_cvt_off_f32_i4 (gfx11 VOP1 0x0e, not modelled) as the first instruction.
    f.m.gpu_write(f.g, entry, &0x7e00_1d01u32.to_le_bytes()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 64, 64), &args(&[DATA, 64 << 32]));
    assert_eq!(end, RunEnd::Stopped);
    assert!(matches!(p.error, Some(QueueError::BadPacket { at: 0, ec: EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, .. })), "{:?}", p.error);
    // s_branch -1 (gfx11 SOPP 32): a loop that never ends is cut at the model's instruction limit.
    f.m.gpu_write(f.g, entry, &0xbfa0_ffffu32.to_le_bytes()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 64, 64), &args(&[DATA, 64 << 32]));
    assert_eq!(end, RunEnd::Stopped);
    assert!(matches!(p.error, Some(QueueError::BadPacket { ec: EC_QUEUE_WAVE_ABORT, .. })), "{:?}", p.error);
}

#[test]
fn a_reduction_through_lds_with_barriers_matches_the_cpu() {
    let f = setup();
    let groups = 64u32;
    let (input, out, counts) = (DATA, DATA + 0x10_0000, DATA + 0x20_0000);
    let v: Vec<u32> = (0..groups * 256).map(|i| i.wrapping_mul(2_654_435_761) >> 12).collect();
    f.m.gpu_write(f.g, input, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let k = KernelDispatch { group_segment_size: 0, ..KernelDispatch::new(f.kd("reduce"), groups * 256, 256) };
    let (end, p) = f.dispatch(k, &args(&[input, out, counts]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let (sums, cnt) = (f.words(out, groups as usize), f.words(counts, groups as usize));
    for g in 0..groups as usize {
        let want = v[g * 256..(g + 1) * 256].iter().fold(0u32, |a, &b| a.wrapping_add(b));
        assert_eq!(sums[g], want, "workgroup {g}'s sum");
        assert_eq!(cnt[g], (0..256).sum::<u32>(), "workgroup {g}'s LDS atomic counter");
    }
}

#[test]
fn global_atomics_histogram_and_counters_match_the_cpu() {
    let f = setup();
    let n = 5000u32;
    let (input, bins, ticket, order) = (DATA, DATA + 0x10_0000, DATA + 0x10_1000, DATA + 0x20_0000);
    let v: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_246_822_519).rotate_left(13)).collect();
    f.m.gpu_write(f.g, input, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let mut init = [0u32; 24];
    init[17] = u32::MAX;
    init[20] = u32::MAX;
    f.m.gpu_write(f.g, bins, &init.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    f.m.gpu_write(f.g, ticket, &[0; 4]).unwrap();
    // 5000 work-items in workgroups of 128: a partial last workgroup and wave.
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("histo"), 5120, 128), &args(&[input, bins, ticket, order, u64::from(n)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(bins, 24);
    let mut want = init;
    for (i, &x) in v.iter().enumerate() {
        want[(x & 15) as usize] += 1;
        want[16] = want[16].max(x);
        want[17] = want[17].min(x);
        want[18] |= x;
        want[19] ^= x;
        want[20] &= x | 0xffff_0000;
        want[21] = want[21].wrapping_sub(1);
        if want[22] == 0 {
            want[22] = i as u32 + 1;
        }
        want[23] = 5;
    }
    assert_eq!(got[..22], want[..22]);
    assert!((1..=n).contains(&got[22]), "cmpxchg stored one work-item's i + 1: {}", got[22]);
    assert_eq!(got[23], 5);
    assert_eq!(f.words(ticket, 1)[0], n, "every work-item took a ticket");
    let mut tickets = f.words(order, n as usize);
    tickets.sort_unstable();
    assert!(tickets.iter().copied().eq(0..n), "the tickets are 0..n, each once");
}

#[test]
fn lds_out_of_range_reads_zero_and_drops_writes() {
    let f = setup();
    // Two waves over an a[64] (256 bytes of LDS): the stores of work-items 64.. and every store
    // at l + 64 land past it and are dropped; the reads at l + 32 see a[32..64], then zeros.
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("lds_range"), 128, 128), &args(&[DATA, 64 | (32 << 32)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, 128);
    for (l, &v) in got.iter().enumerate() {
        let want = if l + 32 < 64 { 100 + l as u32 + 32 } else { 0 };
        assert_eq!(v, want, "out[{l}]");
    }
}

#[test]
fn a_kernel_using_scratch_for_a_private_array_matches_the_cpu() {
    let f = setup();
    let n = 1000u32;
    let (input, out) = (DATA, DATA + 0x10_0000);
    let v: Vec<u32> = (0..n).map(|i| i.wrapping_mul(2_654_435_761).rotate_left(7)).collect();
    f.m.gpu_write(f.g, input, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    // Workgroups of 256 (four waves, each with its own part of the scratch) and a partial one.
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("priv"), n, 256), &args(&[input, out, u64::from(n)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(out, n as usize);
    for (i, &x) in v.iter().enumerate() {
        let a: Vec<u32> = (0..48u32).map(|k| x.wrapping_mul(k + 1).wrapping_add(k)).collect();
        let want = (0..48u32).fold(0u32, |s, k| s.wrapping_add(a[(k.wrapping_mul(7).wrapping_add(x) % 48) as usize] ^ k));
        assert_eq!(got[i], want, "out[{i}]");
    }
}

/// A half's value (the test's own decoding, from the IEEE 754 binary16 layout).
fn half_value(h: u16) -> f64 {
    let (e, m) = (i32::from(h >> 10 & 0x1f), f64::from(h & 0x3ff));
    let mag = if e == 0 { m * 2f64.powi(-24) } else { (1024.0 + m) * 2f64.powi(e - 25) };
    if h & 0x8000 != 0 {
        -mag
    } else {
        mag
    }
}

/// The half nearest to `x` (ties to the even significand; finite inputs well inside the range).
fn nearest_half(x: f64) -> u16 {
    let sign = if x < 0.0 { 0x8000 } else { 0 };
    let a = x.abs();
    // Non-negative halves are ordered like their bit patterns: the last one not above |x|.
    let (mut lo, mut hi) = (0u16, 0x7bff);
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if half_value(mid) <= a {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let (below, above) = (half_value(lo), half_value(lo + 1));
    let pick = if a - below < above - a || (a - below == above - a && lo & 1 == 0) { lo } else { lo + 1 };
    sign | pick
}

#[test]
fn sixty_four_bit_and_f16_arithmetic_match_the_cpu() {
    let f = setup();
    let n = 256usize;
    let (a, l, out, lo, h, hf) = (DATA, DATA + 0x10000, DATA + 0x20000, DATA + 0x30000, DATA + 0x40000, DATA + 0x50000);
    let av: Vec<f64> = (0..=n).map(|i| (i as f64 - 100.5) * 1.337e3 + (i % 7) as f64 * 0.001).collect();
    let lv: Vec<i64> = (0..n as i64).map(|i| (i - 128).wrapping_mul(0x1234_5678_9abc) ^ (i << 40)).collect();
    // Halves between 2^-5 and 2^5 of both signs.
    let hv: Vec<u16> =
        (0..2 * n as u32).map(|i| ((i.wrapping_mul(2_654_435_761) >> 7) & 0x83ff) as u16 | ((10 + i % 11) as u16) << 10).collect();
    let bytes = |v: &[u8]| v.to_vec();
    f.m.gpu_write(f.g, a, &bytes(&av.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>())).unwrap();
    f.m.gpu_write(f.g, l, &lv.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    f.m.gpu_write(f.g, h, &hv.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("wide"), n as u32, 64), &args(&[a, l, out, lo, h, hf]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let (o, lw, hw, hfw) = (f.words(out, 6 * n), f.words(lo, 4 * n), f.words(h, n), f.words(hf, n));
    let u64_at = |v: &[u32], k: usize| u64::from(v[2 * k]) | u64::from(v[2 * k + 1]) << 32;
    for i in 0..n {
        let (x, y) = (av[i], av[i + 1]);
        let r = x.mul_add(y, x * 1.5) + (y - x);
        let r = if r < 0.0 { r.max(x) } else { r.min(y * 4.0) };
        assert_eq!(f64::from_bits(u64_at(&o, 3 * i)), r, "out[{}]", 3 * i);
        let w1 = f64::from(x as f32) + f64::from((y * 3.0) as i32) + f64::from(i as u32);
        assert_eq!(f64::from_bits(u64_at(&o, 3 * i + 1)), w1, "out[{}]", 3 * i + 1);
        assert_eq!(f64::from_bits(u64_at(&o, 3 * i + 2)), lv[i] as f64, "out[{}]", 3 * i + 2);
        let want = lv[i].wrapping_mul(3).wrapping_add(lv[i] >> 3).wrapping_sub(x as i64);
        assert_eq!(u64_at(&lw, 2 * i) as i64, want, "lo[{}]", 2 * i);
        assert_eq!(u64_at(&lw, 2 * i + 1) as i64, lv[i] ^ i as i64, "lo[{}]", 2 * i + 1);
        let (pv, qv) = (half_value(hv[2 * i]), half_value(hv[2 * i + 1]));
        // p * q + 0.5 is contracted into one fma (as clang's OpenCL default does); each
        // expression below is exact in f64 before its one rounding to half.
        let s1 = half_value(nearest_half(pv * qv + 0.5));
        let s2 = half_value(nearest_half(pv * qv + qv));
        let s = nearest_half(s1 - s2);
        let want = if half_value(s) > pv { s } else { hv[2 * i] };
        assert_eq!(hw[i] & 0xffff, u32::from(want), "h[{}]: p {pv} q {qv}", 2 * i);
        let sum = half_value(nearest_half(pv + qv)) as f32;
        assert_eq!(f32::from_bits(hfw[i]), sum, "hf[{i}]");
    }
}

#[test]
fn a_kernel_that_traps_stops_its_queue_and_writes_the_queue_inactive_signal() {
    let f = setup();
    // ROCr's amd_queue_t (read_dispatch_id at +128 is the read pointer, its own offset at
    // +136, queue_inactive_signal at +192) and the signal's amd_signal_t (value at +8, event
    // mailbox at +16, event id at +24).
    let (amdq, signal, mailbox) = (BASE + 0x3000, BASE + 0x4000, BASE + 0x5000);
    let mut e = kfd_ioctl_create_event_args::new_zeroed();
    e.event_type = KFD_IOC_EVENT_SIGNAL as u32;
    raw(&f.m, AMDKFD_IOC_CREATE_EVENT, &mut e).unwrap();
    f.m.gpu_write(f.g, amdq + 136, &128u32.to_le_bytes()).unwrap();
    f.m.gpu_write(f.g, amdq + 192, &signal.to_le_bytes()).unwrap();
    f.m.gpu_write(f.g, signal + 16, &mailbox.to_le_bytes()).unwrap();
    f.m.gpu_write(f.g, signal + 24, &e.event_id.to_le_bytes()).unwrap();
    // d[0] != 13: no trap, the kernel runs to its end.
    f.m.gpu_write(f.g, DATA, &[0u8; 12]).unwrap();
    let (end, p) = f.dispatch_at(KernelDispatch::new(f.kd("trap"), 64, 64), &args(&[DATA]), amdq + 128, 0);
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    assert_eq!(f.words(DATA, 3), [0, 1, 2]);
    assert_eq!(f.words(signal + 8, 2), [0, 0], "no error raised");
    // d[0] == 13: s_trap 2 after the first store.
    f.m.gpu_write(f.g, DATA, &[13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    let (end, p) = f.dispatch_at(KernelDispatch::new(f.kd("trap"), 64, 64), &args(&[DATA]), amdq + 128, 0);
    assert_eq!(end, RunEnd::Stopped);
    assert!(matches!(p.error, Some(QueueError::BadPacket { at: 0, ec: EC_QUEUE_WAVE_TRAP, .. })), "{:?}", p.error);
    assert_eq!(f.words(DATA, 3), [13, 1, 0], "the wave stopped at the trap");
    // Without RUNTIME_ENABLE the CP's path: bit 31 (ROCr: HSA_STATUS_ERROR_EXCEPTION) in the
    // queue-inactive signal and its event id in the mailbox, then the interrupt (which sets
    // the event once its event-page slot is the mailbox, as with ROCr: model/tests/queues.rs).
    assert_eq!(f.words(signal + 8, 2), [0x8000_0000, 0]);
    assert_eq!(f.words(mailbox, 1), [e.event_id]);
}

#[test]
fn with_the_runtime_enabled_a_trap_reaches_the_runtimes_error_word() {
    let f = setup();
    let mut re = kfd_ioctl_runtime_enable_args { r_debug: 0, mode_mask: KFD_RUNTIME_ENABLE_MODE_ENABLE_MASK as u32, capabilities_mask: 0 };
    raw(&f.m, AMDKFD_IOC_RUNTIME_ENABLE, &mut re).unwrap();
    let mut e = kfd_ioctl_create_event_args::new_zeroed();
    e.event_type = KFD_IOC_EVENT_SIGNAL as u32;
    raw(&f.m, AMDKFD_IOC_CREATE_EVENT, &mut e).unwrap();
    // The CWSR header the KFD reads with get_user: err_payload_addr at +24 (the runtime's error
    // word, with a bit already set that must survive), err_event_id at +32.
    let word = Box::new(std::sync::atomic::AtomicU64::new(1 << 40));
    let mut header = Box::new([0u8; 40]);
    header[24..32].copy_from_slice(&(word.as_ptr() as u64).to_le_bytes());
    header[32..36].copy_from_slice(&e.event_id.to_le_bytes());
    f.m.gpu_write(f.g, DATA, &13u32.to_le_bytes()).unwrap();
    let (end, p) = f.dispatch_at(KernelDispatch::new(f.kd("trap"), 64, 64), &args(&[DATA]), 0, header.as_ptr() as u64);
    assert_eq!(end, RunEnd::Stopped);
    assert!(matches!(p.error, Some(QueueError::BadPacket { ec: EC_QUEUE_WAVE_TRAP, .. })), "{:?}", p.error);
    // KFD_EC_MASK(EC_QUEUE_WAVE_TRAP) = bit 1.
    assert_eq!(word.load(std::sync::atomic::Ordering::Acquire), 1 << 40 | 1 << (EC_QUEUE_WAVE_TRAP - 1));
    let mut d = [event_data(e.event_id, 0)];
    let mut w =
        kfd_ioctl_wait_events_args { events_ptr: d.as_mut_ptr() as u64, num_events: 1, wait_for_all: 1, timeout: 0, wait_result: 99 };
    let _ = raw(&f.m, AMDKFD_IOC_WAIT_EVENTS, &mut w);
    assert_eq!(w.wait_result, KFD_IOC_WAIT_RESULT_COMPLETE as u32);
}

#[test]
fn wave64_kernels_run_with_64_lane_exec_and_vcc() {
    // -mwavefrontsize64: the descriptor's WAVEFRONT_SIZE32 bit clear, lane masks in SGPR pairs.
    let f = setup_with(&["-mwavefrontsize64"]);
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 1000, 96), &args(&[DATA, 7 | (2000 << 32)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, 1001);
    for (i, &v) in got[..1000].iter().enumerate() {
        assert_eq!(v, 7 + i as u32);
    }
    assert_eq!(got[1000], 0, "nothing past the grid");
    let groups = 8u32;
    let (input, out, counts) = (DATA, DATA + 0x10_0000, DATA + 0x20_0000);
    let v: Vec<u32> = (0..groups * 256).map(|i| i.wrapping_mul(2_654_435_761) >> 12).collect();
    f.m.gpu_write(f.g, input, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("reduce"), groups * 256, 256), &args(&[input, out, counts]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let (sums, cnt) = (f.words(out, groups as usize), f.words(counts, groups as usize));
    for g in 0..groups as usize {
        let want = v[g * 256..(g + 1) * 256].iter().fold(0u32, |a, &b| a.wrapping_add(b));
        assert_eq!(sums[g], want, "workgroup {g}'s sum");
        assert_eq!(cnt[g], (0..256).sum::<u32>(), "workgroup {g}'s LDS atomic counter");
    }
}

#[test]
fn a_vopd_pair_reads_both_sources_before_either_writes() {
    let f = setup_asm();
    // Two waves of 32: v_dual_mov_b32 v0, v1 :: v_dual_mov_b32 v1, v0 swaps the registers.
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("swap"), 64, 64), &args(&[DATA]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, 128);
    for l in 0..64u32 {
        assert_eq!([got[2 * l as usize], got[2 * l as usize + 1]], [l + 100, l], "lane {l}");
    }
}

#[test]
fn scratch_past_a_work_items_private_size_reads_zero_and_drops_writes() {
    let f = setup_asm();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("scratch_edge"), 96, 96), &args(&[DATA]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, 2 * 96);
    for l in 0..96u32 {
        assert_eq!([got[2 * l as usize], got[2 * l as usize + 1]], [0x1234 + l, 0], "work-item {l}");
    }
}

#[test]
fn running_s_code_end_is_an_illegal_instruction() {
    let f = setup_asm();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("code_end"), 32, 32), &[]);
    assert_eq!(end, RunEnd::Stopped);
    assert!(matches!(p.error, Some(QueueError::BadPacket { at: 0, ec: EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, .. })), "{:?}", p.error);
}

#[test]
fn decoding_arbitrary_words_never_panics() {
    // xorshift64: every encoding prefix with random fields, decoded and printed.
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x as u32
    };
    let mut decoded = 0;
    for k in 0..300_000u32 {
        let w = [(next() & 0x03ff_ffff) | (k % 64) << 26, next(), next()];
        for n in 1..=3 {
            if let Some(i) = gfx11::decode(&w[..n]) {
                assert!(usize::from(i.len) <= 4 * n);
                assert!(!i.to_string().is_empty());
                decoded += 1;
            }
        }
    }
    assert!(decoded > 10_000, "{decoded}");
}
