//! The harness of the real-machine-code tests (model/ISA.md), one for every GPU the model
//! runs: kernels.cl compiled here with clang-19 for the GPU, loaded from its ELF code object and
//! dispatched through an AQL queue on a catalogue system with that GPU, checked against the
//! CPU; the decoder checked against llvm-objdump. `isa_tests!` declares a GPU's tests.
//! Needs the Debian packages clang-19, lld-19 and llvm-19 (.ci/packages).

use super::*;
use hsakmt_core::abi::kfd::*;
use hsakmt_core::packet::aql::{self, Body, KernelDispatch};
use hsakmt_model::engine::{EngineKind, QueueError, RingDesc, RingProgress, RunEnd};
use hsakmt_model::events::event_data;
use hsakmt_model::isa::{elf::CodeObject, gfx11, gfx9};
use hsakmt_model::{Model, ModelConfig};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::Command;
use zerocopy::FromZeros;

/// Which of our decoders reads the GPU's code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isa {
    Gfx9(gfx9::Target),
    Gfx11,
}

/// A GPU the tests run on: its clang/LLVM name, a catalogue system with it, its decoder, its
/// sweep files (tests/isa/, assembled together), and two encodings the tests patch into code.
pub struct Gpu {
    pub mcpu: &'static str,
    pub catalogue: &'static str,
    pub isa: Isa,
    pub sweep: &'static [&'static str],
    /// `v_cvt_off_f32_i4 v0, v1` (not modelled).
    pub unmodelled: u32,
    /// `s_branch -1` (a loop that never ends).
    pub s_branch_self: u32,
}

pub const GFX90A: Gpu = Gpu {
    mcpu: "gfx90a",
    catalogue: "mi210",
    isa: Isa::Gfx9(gfx9::Target::Gfx90a),
    sweep: &["sweep.s", "sweep-gfx90a.s", "sweep-dpp.s"],
    unmodelled: 0x7e00_1d01,
    s_branch_self: 0xbf82_ffff,
};
pub const GFX942: Gpu = Gpu {
    mcpu: "gfx942",
    catalogue: "mi300x",
    isa: Isa::Gfx9(gfx9::Target::Gfx942),
    sweep: &["sweep.s", "sweep-gfx942.s", "sweep-dpp.s"],
    ..GFX90A
};
/// gfx11: VOP1 v_cvt_off_f32_i4 is 0x0e as on gfx9, SOPP s_branch 32.
pub const GFX1100: Gpu = Gpu {
    mcpu: "gfx1100",
    catalogue: "rx7900xtx",
    isa: Isa::Gfx11,
    sweep: &["sweep-gfx1100.s", "sweep-dpp-gfx1100.s"],
    unmodelled: 0x7e00_1d01,
    s_branch_self: 0xbfa0_ffff,
};

/// Declares `#[test]`s calling the functions of the same names here for a GPU: the tests every
/// GPU runs, then the ones named after `;` (`isa_tests!(GFX90A; packed_f32_arithmetic_matches_the_cpu)`).
/// (Every test binary compiles support/; only the isa_* ones use the macro.)
#[allow(unused_macros)]
macro_rules! isa_tests {
    ($gpu:expr $(; $($extra:ident),* $(,)?)?) => {
        support::isa::isa_tests!(@each $gpu;
            decoder_agrees_with_llvm_on_the_compiled_kernels,
            decoder_agrees_with_llvm_on_the_sweep,
            vector_add_of_a_million_floats_matches_the_cpu,
            a_long_dispatch_is_preempted_between_quanta_and_resumes_where_it_stood,
            fill_with_a_partial_last_workgroup_and_wave,
            two_dimensional_work_item_ids_are_packed_in_v0,
            a_store_to_unmapped_memory_raises_the_memory_exception,
            an_unsupported_instruction_or_a_runaway_loop_stops_the_queue,
            a_reduction_through_lds_with_barriers_matches_the_cpu,
            global_atomics_histogram_and_counters_match_the_cpu,
            lds_out_of_range_reads_zero_and_drops_writes,
            a_kernel_using_scratch_for_a_private_array_matches_the_cpu,
            sixty_four_bit_and_f16_arithmetic_match_the_cpu,
            a_kernel_that_traps_stops_its_queue_and_writes_the_queue_inactive_signal,
            with_the_runtime_enabled_a_trap_reaches_the_runtimes_error_word,
            $($($extra,)*)?
        );
    };
    (@each $gpu:expr; $($name:ident,)*) => {
        $(
            #[test]
            fn $name() {
                support::isa::$name(&$gpu);
            }
        )*
    };
}
#[allow(unused_imports)]
pub(crate) use isa_tests;

pub const GTT: u32 = KFD_IOC_ALLOC_MEM_FLAGS_GTT as u32;
pub const RW: u32 = (KFD_IOC_ALLOC_MEM_FLAGS_WRITABLE | KFD_IOC_ALLOC_MEM_FLAGS_EXECUTABLE) as u32;
pub const BASE: u64 = 0x7000_0000_0000;
pub const RING: u64 = BASE;
pub const KARG: u64 = BASE + 0x1000;
pub const CODE: u64 = BASE + 0x10000;
pub const DATA: u64 = BASE + 0x100000;
pub const HOLE: u64 = BASE + 0x1000_0000;
pub const N: u32 = 1 << 20;

/// `tool` from `package`, or a loud failure naming the package.
pub fn tool(name: &str, package: &str) -> String {
    match Command::new(name).arg("--version").output() {
        Ok(o) if o.status.success() => name.to_string(),
        _ => panic!("{name} is missing: install the Debian package {package} (listed in .ci/packages)"),
    }
}

pub fn run(cmd: &mut Command) {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
}

/// A fresh directory for one compile.
pub fn scratch(tag: &str) -> PathBuf {
    // One directory per call: the tests of this binary run in parallel and each compiles the
    // kernels (a second run of the binary reuses the names after emptying them).
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // Under cargo's per-target temporary directory (inside target/, cleaned with it), emptied
    // first: nothing accumulates in the system's /tmp from run to run. Named after the test
    // binary, so the binaries of several targets never share one.
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("{}-{tag}-{n}", env!("CARGO_CRATE_NAME")));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// kernels.cl compiled (with clang's `extra` flags) and linked for the GPU: the code object's
/// bytes and path.
pub fn code_object(gpu: &Gpu, extra: &[&str]) -> (Vec<u8>, PathBuf) {
    code_object_of(gpu, "kernels.cl", extra)
}

/// tests/isa/`file` compiled (with clang's `extra` flags) and linked for the GPU.
pub fn code_object_of(gpu: &Gpu, file: &str, extra: &[&str]) -> (Vec<u8>, PathBuf) {
    let (clang, lld) = (tool("clang-19", "clang-19"), tool("ld.lld-19", "lld-19"));
    let d = scratch("cl");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/isa").join(file);
    let (o, co) = (d.join("k.o"), d.join("k.co"));
    run(Command::new(clang)
        .args(["-target", "amdgcn-amd-amdhsa", &format!("-mcpu={}", gpu.mcpu), "-nogpulib", "-O2", "-c"])
        .args(extra)
        .arg(&src)
        .arg("-o")
        .arg(&o));
    run(Command::new(lld).arg("-shared").arg(&o).arg("-o").arg(&co));
    (std::fs::read(&co).unwrap(), co)
}

/// llvm-objdump's instructions of `file`: (its text, the encoding's dwords).
pub fn objdump(gpu: &Gpu, file: &PathBuf) -> Vec<(String, Vec<u32>)> {
    let out = Command::new(tool("llvm-objdump-19", "llvm-19")).args(["-d", &format!("--mcpu={}", gpu.mcpu)]).arg(file).output().unwrap();
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

/// Our decoder's reading of `words` for the GPU: its length in bytes and text.
pub fn decoded(gpu: &Gpu, words: &[u32]) -> Option<(u8, String)> {
    match gpu.isa {
        Isa::Gfx9(target) => gfx9::decode(words, target).map(|i| (i.len, i.to_string())),
        Isa::Gfx11 => gfx11::decode(words).map(|i| (i.len, i.to_string())),
    }
}

/// Our decoder's text of every instruction of `listing` equals LLVM's, and its length.
fn check_decoder(gpu: &Gpu, listing: &[(String, Vec<u32>)]) {
    assert!(listing.len() > 20);
    let mut bad = Vec::new();
    for (text, words) in listing {
        match decoded(gpu, words) {
            None => bad.push(format!("not decoded: {text} {words:08x?}")),
            Some((len, ours)) => {
                let ours = ours.split_whitespace().collect::<Vec<_>>().join(" ");
                if usize::from(len) != 4 * words.len() || ours != *text {
                    bad.push(format!("{words:08x?}: ours {ours:?} ({len} bytes), llvm {text:?}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{} of {} differ:\n{}", bad.len(), listing.len(), bad.join("\n"));
}

pub fn decoder_agrees_with_llvm_on_the_compiled_kernels(gpu: &Gpu) {
    let (_, co) = code_object(gpu, &[]);
    check_decoder(gpu, &objdump(gpu, &co));
}

pub fn decoder_agrees_with_llvm_on_the_sweep(gpu: &Gpu) {
    // The GPU's sweep files (tests/isa/, instruction forms one a line) assembled together.
    let mc = tool("llvm-mc-19", "llvm-19");
    let d = scratch("sweep");
    let (src, obj) = (d.join("sweep.s"), d.join("sweep.o"));
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/isa");
    let text: String = gpu.sweep.iter().map(|f| std::fs::read_to_string(dir.join(f)).unwrap()).collect();
    std::fs::write(&src, &text).unwrap();
    run(Command::new(mc).args(["-arch=amdgcn", &format!("-mcpu={}", gpu.mcpu), "-filetype=obj"]).arg(&src).arg("-o").arg(&obj));
    let listing = objdump(gpu, &obj);
    let lines = text.lines().filter(|l| !l.is_empty() && !l.starts_with("//")).count();
    assert_eq!(listing.len(), lines, "every sweep line disassembled");
    check_decoder(gpu, &listing);
}

pub struct Fx {
    pub m: Model,
    pub g: u32,
    pub co: Vec<u8>,
    _renders: Vec<OwnedFd>,
}

/// A model of the GPU's catalogue system with its first GPU's VM acquired, 64 MiB mapped at
/// BASE and the code object `co` loaded at CODE.
fn fixture(gpu: &Gpu, co: Vec<u8>) -> Fx {
    let m = Model::new(ModelConfig::catalogue(gpu.catalogue)).unwrap();
    let (_, renders) = acquire(&m, 1);
    let g = m.gpus()[0].gpu_id;
    alloc_map(&m, g, BASE, 64 << 20, GTT | RW);
    let f = Fx { m, g, co, _renders: renders };
    let obj = CodeObject::parse(&f.co).unwrap();
    f.m.gpu_write(f.g, CODE, &obj.image()).unwrap();
    f
}

/// The fixture with kernels.cl compiled for the GPU.
pub fn setup(gpu: &Gpu) -> Fx {
    setup_with(gpu, &[])
}

/// The fixture with kernels.cl compiled with clang's `extra` flags.
pub fn setup_with(gpu: &Gpu, extra: &[&str]) -> Fx {
    setup_of(gpu, "kernels.cl", extra)
}

/// The fixture with tests/isa/`file` compiled with clang's `extra` flags.
pub fn setup_of(gpu: &Gpu, file: &str, extra: &[&str]) -> Fx {
    fixture(gpu, code_object_of(gpu, file, extra).0)
}

/// The fixture with hand-written kernels (tests/isa/`file`), assembled by llvm-mc.
pub fn setup_asm(gpu: &Gpu, file: &str) -> Fx {
    let (mc, lld) = (tool("llvm-mc-19", "llvm-19"), tool("ld.lld-19", "lld-19"));
    let d = scratch("asm");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/isa").join(file);
    let (o, co) = (d.join("h.o"), d.join("h.co"));
    run(Command::new(mc).args(["-triple=amdgcn-amd-amdhsa", &format!("-mcpu={}", gpu.mcpu), "-filetype=obj"]).arg(&src).arg("-o").arg(&o));
    run(Command::new(lld).arg("-shared").arg(&o).arg("-o").arg(&co));
    fixture(gpu, std::fs::read(&co).unwrap())
}

impl Fx {
    /// GPU VA of `kernel`'s descriptor.
    pub fn kd(&self, kernel: &str) -> u64 {
        CODE + CodeObject::parse(&self.co).unwrap().symbol(&format!("{kernel}.kd")).unwrap()
    }
    /// One dispatch on a fresh AQL queue: how the run ended and the queue's progress.
    pub fn dispatch(&self, k: KernelDispatch, args: &[u8]) -> (RunEnd, RingProgress) {
        self.dispatch_at(k, args, 0, 0)
    }
    /// The same with the queue's read pointer at `rptr_va` and its CWSR area at `ctx_va` (0: none).
    pub fn dispatch_at(&self, k: KernelDispatch, args: &[u8], rptr_va: u64, ctx_va: u64) -> (RunEnd, RingProgress) {
        let ring = self.submit(k, args, rptr_va, ctx_va);
        let mut p = RingProgress::default();
        // A long dispatch is preempted after each quantum of wave-instructions: run on.
        let mut end = RunEnd::Budget;
        while end == RunEnd::Budget {
            end = self.m.engine_run(&ring, &mut p, 1, 16);
        }
        (end, p)
    }
    /// Write the dispatch packet and its kernel arguments: the ring to run.
    pub fn submit(&self, k: KernelDispatch, args: &[u8], rptr_va: u64, ctx_va: u64) -> RingDesc {
        self.m.gpu_write(self.g, KARG, args).unwrap();
        let k = KernelDispatch { kernarg_address: KARG, ..k };
        self.m.gpu_write(self.g, RING, &aql::Repr::new(Body::KernelDispatch(k)).to_bytes()).unwrap();
        RingDesc {
            gpu_id: self.g,
            queue_id: 1,
            kind: EngineKind::Aql,
            ring_va: RING,
            ring_bytes: 4096,
            rptr_va,
            wptr_va: 0,
            ctx_va,
            doorbell: 0,
        }
    }
    pub fn words(&self, va: u64, n: usize) -> Vec<u32> {
        let mut b = vec![0u8; 4 * n];
        self.m.gpu_read(self.g, va, &mut b).unwrap();
        b.chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    }
}

pub fn args(v: &[u64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn vector_add_of_a_million_floats_matches_the_cpu(gpu: &Gpu) {
    let f = setup(gpu);
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

pub fn a_long_dispatch_is_preempted_between_quanta_and_resumes_where_it_stood(gpu: &Gpu) {
    let f = setup(gpu);
    // 2^20 work-items of vadd: 16384 waves of ~20 instructions, many quanta of 2^16.
    let (a, b, c) = (DATA, DATA + 4 * u64::from(N), DATA + 8 * u64::from(N));
    let av: Vec<u32> = (0..N).map(|i| (i as f32 * 0.75).to_bits()).collect();
    let bv: Vec<u32> = (0..N).map(|i| ((i % 13) as f32).to_bits()).collect();
    f.m.gpu_write(f.g, a, &av.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    f.m.gpu_write(f.g, b, &bv.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let ring = f.submit(KernelDispatch::new(f.kd("vadd"), N, 256), &args(&[a, b, c, u64::from(N)]), 0, 0);
    let mut p = RingProgress::default();
    let mut runs = 0u64;
    loop {
        let end = f.m.engine_run(&ring, &mut p, 1, 16);
        runs += 1;
        if end != RunEnd::Budget {
            assert_eq!((end, &p.error), (RunEnd::Idle, &None));
            break;
        }
        // Preempted: the packet is not consumed, its dispatch waits in the progress.
        assert_eq!(p.read, 0);
        assert!(p.dispatch.is_some());
    }
    let minimum = u64::from(N / 64) * 10 / (1 << 16);
    assert!(runs > minimum, "{runs} runs for at least {minimum} quanta of work");
    assert_eq!((p.read, p.dispatch.is_none()), (1, true));
    let got = f.words(c, N as usize);
    for i in 0..N as usize {
        assert_eq!(got[i], (f32::from_bits(av[i]) + f32::from_bits(bv[i])).to_bits(), "c[{i}]");
    }

    // An endless loop (s_branch -1) on the same queue: each run ends preempted with no error,
    // and dropping the progress (what a queue destroy does) is all it takes to stop it.
    let entry = CODE + CodeObject::parse(&f.co).unwrap().symbol("fill").unwrap();
    f.m.gpu_write(f.g, entry, &gpu.s_branch_self.to_le_bytes()).unwrap();
    let ring = f.submit(KernelDispatch::new(f.kd("fill"), 64, 64), &args(&[DATA, 64 << 32]), 0, 0);
    let mut p = RingProgress::default();
    for _ in 0..8 {
        assert_eq!(f.m.engine_run(&ring, &mut p, 1, 16), RunEnd::Budget);
        assert_eq!((p.read, &p.error, p.dispatch.is_some()), (0, &None, true));
    }
}

pub fn fill_with_a_partial_last_workgroup_and_wave(gpu: &Gpu) {
    fill_with_partial_workgroups(&setup(gpu));
}

/// `fill` over 1000 work-items in workgroups of 96 on the fixture `f`.
pub fn fill_with_partial_workgroups(f: &Fx) {
    // 1000 work-items in workgroups of 96: the last workgroup has 40 (one partial wave).
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 1000, 96), &args(&[DATA, 7 | (2000 << 32)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, 1001);
    for (i, &v) in got[..1000].iter().enumerate() {
        assert_eq!(v, 7 + i as u32);
    }
    assert_eq!(got[1000], 0, "nothing past the grid");
}

pub fn two_dimensional_work_item_ids_are_packed_in_v0(gpu: &Gpu) {
    let f = setup(gpu);
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

pub fn a_store_to_unmapped_memory_raises_the_memory_exception(gpu: &Gpu) {
    let f = setup(gpu);
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

pub fn an_unsupported_instruction_or_a_runaway_loop_stops_the_queue(gpu: &Gpu) {
    let f = setup(gpu);
    let entry = CODE + CodeObject::parse(&f.co).unwrap().symbol("fill").unwrap();
    // v_cvt_off_f32_i4 (not modelled) as the first instruction.
    f.m.gpu_write(f.g, entry, &gpu.unmodelled.to_le_bytes()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 64, 64), &args(&[DATA, 64 << 32]));
    assert_eq!(end, RunEnd::Stopped);
    assert!(matches!(p.error, Some(QueueError::BadPacket { at: 0, ec: EC_QUEUE_WAVE_ILLEGAL_INSTRUCTION, .. })), "{:?}", p.error);
    // s_branch -1: a loop that never ends is cut at the model's instruction limit.
    f.m.gpu_write(f.g, entry, &gpu.s_branch_self.to_le_bytes()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 64, 64), &args(&[DATA, 64 << 32]));
    assert_eq!(end, RunEnd::Stopped);
    assert!(matches!(p.error, Some(QueueError::BadPacket { ec: EC_QUEUE_WAVE_ABORT, .. })), "{:?}", p.error);
}

pub fn a_reduction_through_lds_with_barriers_matches_the_cpu(gpu: &Gpu) {
    reduce_through_lds(&setup(gpu), 64);
}

/// `reduce` over `groups` workgroups of 256 on the fixture `f`, checked against the CPU.
pub fn reduce_through_lds(f: &Fx, groups: u32) {
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

pub fn global_atomics_histogram_and_counters_match_the_cpu(gpu: &Gpu) {
    let f = setup(gpu);
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

pub fn lds_out_of_range_reads_zero_and_drops_writes(gpu: &Gpu) {
    let f = setup(gpu);
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

pub fn a_kernel_using_scratch_for_a_private_array_matches_the_cpu(gpu: &Gpu) {
    let f = setup(gpu);
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

pub fn sixty_four_bit_and_f16_arithmetic_match_the_cpu(gpu: &Gpu) {
    let f = setup(gpu);
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

/// float2 arithmetic compiles to gfx9's packed f32 VOP3P (gfx90a, gfx942): v_pk_add_f32,
/// v_pk_mul_f32 with a swizzle (op_sel), v_pk_fma_f32 with negations (neg_lo/neg_hi) and an
/// SGPR-pair source, and v_pk_mov_b32 (gfx942: v_mov_b64) of an SGPR pair (the code is checked
/// to hold them). 200 work-items: the last
/// wave is partial.
pub fn packed_f32_arithmetic_matches_the_cpu(gpu: &Gpu) {
    let f = setup(gpu);
    let listing = objdump(gpu, &code_object(gpu, &[]).1);
    // The SGPR pair k moves to VGPRs with v_pk_mov_b32 on gfx90a, with v_mov_b64 on gfx942.
    let mov = if gpu.isa == Isa::Gfx9(gfx9::Target::Gfx942) { "v_mov_b64" } else { "v_pk_mov_b32" };
    for want in ["v_pk_add_f32", "v_pk_mul_f32", "v_pk_fma_f32", mov] {
        assert!(listing.iter().any(|(t, _)| t.starts_with(want)), "clang-19 no longer emits {want} for kernels.cl");
    }
    let n = 200usize;
    let (a, b, out) = (DATA, DATA + 0x10000, DATA + 0x20000);
    let val = |i: usize, s: f32| (i as f32 * 0.731 - 50.3) * s + 1.0 / (i as f32 + 3.0);
    let av: Vec<[f32; 2]> = (0..n).map(|i| [val(i, 1.0), val(i, -2.5)]).collect();
    let bv: Vec<[f32; 2]> = (0..n).map(|i| [val(i + 7, 0.37), val(i * 3, 1.9)]).collect();
    let k = [1.000_000_1f32, -3.25];
    let flat = |v: &[[f32; 2]]| v.iter().flatten().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    f.m.gpu_write(f.g, a, &flat(&av)).unwrap();
    f.m.gpu_write(f.g, b, &flat(&bv)).unwrap();
    f.m.gpu_write(f.g, out, &vec![0xffu8; 5 * 8 * (n + 64)]).unwrap();
    let kbits = u64::from(k[0].to_bits()) | u64::from(k[1].to_bits()) << 32;
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("packed"), n as u32, 64), &args(&[a, b, out, kbits]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let o = f.words(out, 10 * (n + 64));
    for i in 0..n {
        let ([x0, x1], [y0, y1]) = (av[i], bv[i]);
        // clang contracts a * b + c into one fma (OpenCL's default), so those are mul_add here.
        let want = [
            [x0 + y0, x1 + y1],
            [x0 * y1, x1 * y0],
            [x0.mul_add(y0, -y1), x1.mul_add(y1, x0)],
            [(-x1).mul_add(k[0], -y0), x0.mul_add(k[1], -y1)],
            k,
        ];
        for (j, w) in want.iter().enumerate() {
            let at = 2 * (5 * i + j);
            assert_eq!([o[at], o[at + 1]], [w[0].to_bits(), w[1].to_bits()], "out[{}] (i {i}, part {j})", 5 * i + j);
        }
    }
    assert!(o[10 * n..].iter().all(|&w| w == !0), "nothing written past the grid");
}

pub fn a_kernel_that_traps_stops_its_queue_and_writes_the_queue_inactive_signal(gpu: &Gpu) {
    let f = setup(gpu);
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

pub fn with_the_runtime_enabled_a_trap_reaches_the_runtimes_error_word(gpu: &Gpu) {
    let f = setup(gpu);
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

/// A PM4 packet as the compute CP reads it.
pub fn pm4_packet(c: hsakmt_core::packet::pm4::Command<'_>) -> Vec<u8> {
    use hsakmt_core::packet::pm4;
    let r = pm4::Repr::compute(c);
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut pm4::Packet::new_unchecked(&mut b[..])).unwrap();
    b
}

/// PM4 DISPATCH_DIRECT of machine code (gfx9: the code is hand-written gfx9 assembly), as
/// kfdtest's `Dispatch` issues it: the code's address
/// in COMPUTE_PGM_LO/HI, the resource words in COMPUTE_PGM_RSRC1/2, the arguments in
/// COMPUTE_USER_DATA (s0..s3 here), the workgroup id after them, work-item ids in v0; the
/// packet's dimensions count threads with USE_THREAD_DIMENSIONS and workgroups without. A grid
/// larger than one quantum is preempted on the PM4 ring and resumes at the same packet.
pub fn pm4_dispatch_direct_runs_machine_code_from_the_sh_registers(gpu: &Gpu) {
    use hsakmt_core::packet::model_kernel::dispatch_regs as regs;
    use hsakmt_core::packet::pm4::{Command as Pm4, DispatchDirect, SetShReg};
    let f = setup(gpu);
    // dst[i] = src[i] + 1 for i = workgroup id * 64 + thread id.
    let src = "s_lshl_b32 s5, s4, 6\nv_add_u32_e32 v0, s5, v0\nv_lshlrev_b32_e32 v0, 2, v0\n\
               global_load_dword v1, v0, s[0:1]\ns_waitcnt vmcnt(0)\nv_add_u32_e32 v1, 1, v1\n\
               global_store_dword v0, v1, s[2:3]\ns_endpgm\n";
    let d = scratch("pm4");
    std::fs::write(d.join("k.s"), src).unwrap();
    run(Command::new(tool("llvm-mc-19", "llvm-19"))
        .args(["-triple=amdgcn-amd-amdhsa", &format!("-mcpu={}", gpu.mcpu), "-filetype=obj", "k.s", "-o", "k.o"])
        .current_dir(&d));
    run(Command::new(tool("llvm-objcopy-19", "llvm-19")).args(["-O", "binary", "--only-section=.text", "k.o", "k.bin"]).current_dir(&d));
    const PGM: u64 = BASE + 0x8000;
    const PM4_RING: u64 = BASE + 0x4000;
    f.m.gpu_write(f.g, PGM, &std::fs::read(d.join("k.bin")).unwrap()).unwrap();
    let (sv, dv) = (DATA, DATA + 4 * u64::from(N));
    let input: Vec<u32> = (0..N).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    f.m.gpu_write(f.g, sv, &input.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();

    let (lo, hi) = regs::pgm(PGM);
    // 8 VGPRs; four user SGPRs (USER_SGPR = 4), TGID_X_EN, work-item id x only.
    let (rsrc1, rsrc2) = (0u32, 4 << 1 | 1 << 7);
    let dispatch = |threads: u32, initiator: u32| -> (RunEnd, RingProgress, u64) {
        f.m.gpu_write(f.g, dv, &vec![0u8; 4 * N as usize]).unwrap();
        let mut ring = Vec::new();
        for (reg, values) in [
            (regs::COMPUTE_NUM_THREAD_X, vec![64u32, 1, 1]),
            (regs::COMPUTE_PGM_LO, vec![lo, hi]),
            (regs::COMPUTE_PGM_RSRC1, vec![rsrc1, rsrc2]),
            (regs::COMPUTE_USER_DATA_0, vec![sv as u32, (sv >> 32) as u32, dv as u32, (dv >> 32) as u32]),
        ] {
            ring.extend(pm4_packet(Pm4::SetShReg(SetShReg { reg_offset: reg, values: (&values[..]).into() })));
        }
        ring.extend(pm4_packet(Pm4::DispatchDirect(DispatchDirect { dim: [threads, 1, 1], dispatch_initiator: initiator })));
        f.m.gpu_write(f.g, PM4_RING, &ring).unwrap();
        let desc = RingDesc {
            gpu_id: f.g,
            queue_id: 2,
            kind: EngineKind::Pm4,
            ring_va: PM4_RING,
            ring_bytes: 4096,
            rptr_va: 0,
            wptr_va: 0,
            ctx_va: 0,
            doorbell: 0,
        };
        let dwords = ring.len() as u64 / 4;
        let mut p = RingProgress::default();
        let mut runs = 0;
        loop {
            runs += 1;
            let end = f.m.engine_run(&desc, &mut p, dwords, 64);
            if end != RunEnd::Budget {
                return (end, p, runs);
            }
            // Preempted inside the dispatch: the packet (the last one) is not consumed.
            assert!(p.dispatch.is_some() && p.read < dwords, "{p:?}");
        }
    };
    let check = |n: usize| {
        let got = f.words(dv, n + 1);
        for i in 0..n {
            assert_eq!(got[i], input[i].wrapping_add(1), "dst[{i}]");
        }
        assert_eq!(got[n], 0, "dst[{n}] is past the grid");
    };
    // 1000 threads: 16 workgroups, the last one 40 threads (a partial wave).
    let (end, p, _) = dispatch(1000, 1 | 1 << 5);
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    check(1000);
    // Without USE_THREAD_DIMENSIONS the dimension counts workgroups: 16 of 64.
    let (end, p, _) = dispatch(16, 1);
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    check(1024);
    // 2^20 - 64 threads: 16383 waves of 8 instructions, more than one quantum.
    let (end, p, runs) = dispatch(N - 64, 1 | 1 << 5);
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    assert!(runs > 1, "{runs} run(s)");
    check(N as usize - 64);
}

/// Lanes exchanging data without LDS (tests/isa/cross_lane.cl): `ds_bpermute_b32` reads the
/// lane an address names, `ds_permute_b32` writes to it, `ds_swizzle_b32` with a quad
/// permutation and a 16-lane swap; 64-bit LDS atomics (add with and without return, min, max,
/// xor) and `ds_add_f32`, per workgroup of 256 (four waves); bit counts, reversal and byte
/// conversion (v_ffbh_u32, v_ffbl_b32, v_bfrev_b32, v_cvt_f32_ubyte2); the integer VOP3 and
/// 24-bit forms clang picks (intops): checked against the CPU.
pub fn cross_lane_ds_and_64_bit_lds_atomics_match_the_cpu(gpu: &Gpu) {
    const CODE2: u64 = BASE + 0x80000;
    let f = setup(gpu);
    let (co, path) = code_object_of(gpu, "cross_lane.cl", &[]);
    check_decoder(gpu, &objdump(gpu, &path));
    let obj = CodeObject::parse(&co).unwrap();
    assert!(obj.image_len() <= 0x80000, "the image fits below DATA");
    f.m.gpu_write(f.g, CODE2, &obj.image()).unwrap();
    let kd = |k: &str| CODE2 + obj.symbol(&format!("{k}.kd")).unwrap();

    // shuffle: 256 work-items in workgroups of 128 (two waves each).
    let n = 256usize;
    let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9e37_79b9) ^ 0x55).collect();
    let out = DATA + 0x10000;
    f.m.gpu_write(f.g, DATA, &input.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd("shuffle"), n as u32, 128), &args(&[DATA, out]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(out, 4 * n);
    for i in 0..n {
        let (wave, l) = (i & !63, i & 63);
        let at = |lane: usize| input[wave + lane];
        assert_eq!(got[4 * i], at((l * 7 + 3) & 63), "bpermute, item {i}");
        assert_eq!(got[4 * i + 1], at((l + 64 - 5) & 63), "permute, item {i}");
        assert_eq!(got[4 * i + 2], at((l & !3) | (3 - (l & 3))), "quad reversal, item {i}");
        assert_eq!(got[4 * i + 3], at(l ^ 16), "swap of 16-lane halves, item {i}");
    }

    // lds64: 1024 work-items, workgroups of 256.
    let (items, wg) = (1024usize, 256usize);
    let vals: Vec<u64> = (0..items as u64).map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i % 23)).collect();
    let (inp, res, tickets, fsum) = (DATA, DATA + 0x10000, DATA + 0x20000, DATA + 0x30000);
    f.m.gpu_write(f.g, inp, &vals.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd("lds64"), items as u32, wg as u16), &args(&[inp, res, tickets, fsum]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let r = f.words(res, 8 * items / wg);
    let t = f.words(tickets, 2 * items);
    let fs = f.words(fsum, items / wg);
    let q = |w: &[u32], k: usize| u64::from(w[2 * k]) | u64::from(w[2 * k + 1]) << 32;
    for g in 0..items / wg {
        let v = &vals[g * wg..(g + 1) * wg];
        let want = [
            v.iter().fold(0u64, |a, &x| a.wrapping_add(x)),
            *v.iter().min().unwrap(),
            *v.iter().max().unwrap(),
            v.iter().fold(0u64, |a, &x| a ^ x),
        ];
        for (k, w) in want.iter().enumerate() {
            assert_eq!(q(&r, 4 * g + k), *w, "workgroup {g}, result {k}");
        }
        let mut got: Vec<u64> = (g * wg..(g + 1) * wg).map(|i| q(&t, i)).collect();
        got.sort_unstable();
        assert_eq!(got, (0..wg as u64).map(|k| (1u64 << 40) + k).collect::<Vec<_>>(), "workgroup {g}: tickets");
        assert_eq!(f32::from_bits(fs[g]), (0..wg).sum::<usize>() as f32, "workgroup {g}: float sum");
    }

    // bits: leading/trailing zeros, redundant sign bits, reversal, a byte as a float.
    let xs: Vec<u32> = [0u32, 1, u32::MAX, 0x8000_0000, 0x4000_0000, 0xffff_fffe, 0x00ff_0000, 0x0001_2300]
        .into_iter()
        .chain((0..56u32).map(|k| 0x9e37_79b9u32.rotate_left(k) >> (k % 31)))
        .collect();
    f.m.gpu_write(f.g, DATA, &xs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd("bits"), xs.len() as u32, 64), &args(&[DATA, out]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(out, 5 * xs.len());
    for (i, &x) in xs.iter().enumerate() {
        let want = [
            x.leading_zeros(),
            x.trailing_zeros(),
            (x ^ ((x as i32 >> 31) as u32)).leading_zeros() - 1,
            x.reverse_bits(),
            ((x >> 16 & 0xff) as f32).to_bits(),
        ];
        assert_eq!(&got[5 * i..5 * i + 5], &want, "bits of {x:#x}");
    }

    // intops: the integer VOP3 / 24-bit forms, against the same expressions on the CPU.
    let m = 256usize;
    let xs: Vec<u32> = (0..m as u32).map(|k| k.wrapping_mul(0x9e37_79b9).rotate_left(k % 29) ^ (k << 20)).collect();
    let ys: Vec<u32> =
        (0..m as u32).map(|k| k.wrapping_mul(0x85eb_ca6b).rotate_right(k % 13) ^ 0x8000_0001u32.wrapping_mul(k & 3)).collect();
    let (ya, oa) = (DATA + 0x1000, DATA + 0x2000);
    f.m.gpu_write(f.g, DATA, &xs.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    f.m.gpu_write(f.g, ya, &ys.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd("intops"), m as u32, 64), &args(&[DATA, ya, oa]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(oa, 16 * m);
    for i in 0..m {
        let (x, y) = (xs[i], ys[i]);
        let (sx, sy) = (i64::from((x << 8) as i32 >> 8), i64::from((y << 8) as i32 >> 8));
        let perm = |a: u32, b: u32, sel: u32| -> u32 {
            let data = u64::from(a) << 32 | u64::from(b);
            (0..4)
                .map(|k| {
                    let s = (sel >> (8 * k)) & 0xff;
                    let byte = match s {
                        0..=7 => (data >> (8 * s)) as u8 as u32,
                        8 => {
                            if data & 0x8000 != 0 {
                                0xff
                            } else {
                                0
                            }
                        }
                        9 => {
                            if data & 0x8000_0000 != 0 {
                                0xff
                            } else {
                                0
                            }
                        }
                        10 => {
                            if data & 0x8000_0000_0000 != 0 {
                                0xff
                            } else {
                                0
                            }
                        }
                        11 => {
                            if data & 0x8000_0000_0000_0000 != 0 {
                                0xff
                            } else {
                                0
                            }
                        }
                        12 => 0,
                        _ => 0xff,
                    };
                    byte << (8 * k)
                })
                .sum()
        };
        let want = [
            (sx * sy) as u32,
            ((sx * sy) >> 32) as u32,
            ((i64::from(x as i32) * i64::from(y as i32)) >> 32) as u32,
            ((x << 5) as i32 >> 20) as u32,
            (y & x) | (!y & (x ^ 0x5a5a_5a5a)),
            x.rotate_right(7),
            ((u64::from(x) << 32 | u64::from(y)) >> (8 * (y & 3))) as u32,
            x.min(y).min(x ^ y),
            (x as i32).max(y as i32).max((x ^ y) as i32) as u32,
            x.clamp(0x4000_0000, 0xC000_0000),
            (y as i32).clamp(-1_000_000, 1_000_000) as u32,
            perm(x, y, (i as u32).wrapping_mul(0x0d0c_0b07) ^ 0x0008_0903),
            x.wrapping_add(y) << (y & 31),
            (x & y) | (i as u32 * 3),
            x.count_ones().wrapping_add(y),
            (sx * sy + i as i64) as u32,
        ];
        assert_eq!(&got[16 * i..16 * i + 16], &want, "intops of {x:#x}, {y:#x} (item {i})");
    }
}

/// DPP and SDWA (tests/isa/dpp_sdwa.cl, compiled with -fno-slp-vectorize): `v_mov_b32_dpp`
/// with every control clang's `update_dpp` builtin takes, row and bank masks, bound_ctrl, an
/// old value kept where the source lane is out of range or disabled (a partial last wave and
/// divergent branches), DPP folded into `v_add_u32_dpp`/`v_add_f32_dpp`; byte, short and half
/// arithmetic lowered to SDWA (selections with zero and sign extension, dst_sel WORD_1, a VOPC
/// compare). The expected lanes are computed here from the controls' definitions.
pub fn dpp_and_sdwa_match_the_cpu(gpu: &Gpu) {
    const CODE2: u64 = BASE + 0x80000;
    let f = setup(gpu);
    let (co, path) = code_object_of(gpu, "dpp_sdwa.cl", &["-fno-slp-vectorize", "-mllvm", "-amdgpu-atomic-optimizer-strategy=DPP"]);
    let listing = objdump(gpu, &path);
    check_decoder(gpu, &listing);
    for want in [
        "v_mov_b32_dpp",
        "v_add_u32_dpp",
        "v_add_f32_dpp",
        "v_add_u32_sdwa",
        "v_mul_f16_sdwa",
        "v_cmp_lt_u32_sdwa",
        "row_bcast:31",
        "v_mul_lo_u16_sdwa",
        "v_sub_u16_sdwa",
    ] {
        assert!(listing.iter().any(|(t, _)| t.contains(want)), "clang-19 no longer emits {want} for dpp_sdwa.cl");
    }
    let obj = CodeObject::parse(&co).unwrap();
    assert!(obj.image_len() <= 0x80000, "the image fits below DATA");
    f.m.gpu_write(f.g, CODE2, &obj.image()).unwrap();
    let kd = |k: &str| CODE2 + obj.symbol(&format!("{k}.kd")).unwrap();

    // dpp: 3 full waves and one of 40 lanes (workgroups of 64, the last partial).
    let n = 232usize;
    // Positive values below 2^30: finite floats for the f32 add.
    let x: Vec<u32> = (0..n as u32).map(|i| (i.wrapping_mul(0x9e37_79b9) ^ 0x1234_5678) >> 2).collect();
    let out = DATA + 0x10000;
    f.m.gpu_write(f.g, DATA, &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd("dpp"), n as u32, 64), &args(&[DATA, out]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(out, 20 * n);
    for i in 0..n {
        let (base, l) = (i & !63, i & 63);
        let row = l & !15;
        // The value lane `s` of this wave holds if `s` exists and `on` says it takes part.
        let at = |s: Option<usize>, on: &dyn Fn(usize) -> bool| s.filter(|&s| s < 64 && base + s < n && on(base + s)).map(|s| x[base + s]);
        let all = |_: usize| true;
        let or = |v: Option<u32>, old: u32| v.unwrap_or(old);
        let m1 = u32::MAX;
        let want: [u32; 20] = [
            or(at(Some((l & !3) | (3 - (l & 3))), &all), m1),
            or(at((l % 16 < 15).then(|| l + 1), &all), m1),
            or(at((l % 16 == 0).then(|| l + 15), &all), m1),
            or(at((l % 16 >= 1).then(|| l - 1), &all), m1),
            or(at((l % 16 >= 8).then(|| l - 8), &all), 0),
            or(at(Some(row + (l + 13) % 16), &all), m1),
            or(at(Some(l + 1), &all), m1),
            or(at(Some((l + 1) % 64), &all), m1),
            or(at(l.checked_sub(1), &all), m1),
            or(at(Some((l + 63) % 64), &all), m1),
            or(at(Some(row + 15 - l % 16), &all), m1),
            or(at(Some((l & !7) + 7 - l % 8), &all), m1),
            if l / 16 % 2 == 1 { or(at(Some(row - 1), &all), m1) } else { m1 },
            if l >= 32 { or(at(Some(31), &all), m1) } else { m1 },
            // Rows 0 and 2, lanes 4..12 of the row: row_shr:2; the others keep the old -1.
            if l / 16 % 2 == 0 && (4..12).contains(&(l % 16)) { or(at(Some(l - 2), &all), m1) } else { m1 },
            if l / 16 % 2 == 0 && (4..12).contains(&(l % 16)) { or(at(Some(l - 2), &all), 0) } else { m1 },
            x[i].wrapping_add(or(at((l % 16 >= 1).then(|| l - 1), &all), 0)),
            (f32::from_bits(x[i]) + f32::from_bits(or(at(Some((l & !3) | (3 - (l & 3))), &all), 0))).to_bits(),
            if i % 3 != 0 { or(at(Some(row + (l + 15) % 16), &|j| j % 3 != 0), -3i32 as u32) } else { -7i32 as u32 },
            if i % 3 != 1 { or(at((l % 16 < 15).then(|| l + 1), &|j| j % 3 != 1), 0) } else { -7i32 as u32 },
        ];
        assert_eq!(&got[20 * i..20 * i + 20], &want, "dpp: item {i} (lane {l})");
    }

    // sdwa: 192 work-items; the first 128 take arbitrary dwords, the rest pairs of halves
    // between 2^-5 and 2^5 (the f16 results are checked on those).
    let n = 192usize;
    let half = |k: u32| ((k.wrapping_mul(2_654_435_761) >> 7) & 0x83ff) | ((10 + k % 11) << 10);
    let word = |i: usize, s: u32| {
        let i = i as u32;
        if i < 128 {
            (i ^ s).wrapping_mul(0x9e37_79b9).rotate_left(i % 29) ^ s
        } else {
            half(2 * i + s) | half(2 * i + s + 7) << 16
        }
    };
    let (a, b): (Vec<u32>, Vec<u32>) = ((0..n).map(|i| word(i, 1)).collect(), (0..n).map(|i| word(i, 0x55)).collect());
    let (av, bv, out) = (DATA, DATA + 0x1000, DATA + 0x10000);
    f.m.gpu_write(f.g, av, &a.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    f.m.gpu_write(f.g, bv, &b.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd("sdwa"), n as u32, 64), &args(&[av, bv, out]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(out, 12 * n);
    for i in 0..n {
        let (x, y) = (a[i], b[i]);
        let xb = x.to_le_bytes();
        let yb = y.to_le_bytes();
        let (s0, s1, t0, t1) = (x as u16, (x >> 16) as u16, y as u16, (y >> 16) as u16);
        let bytes = |f: &dyn Fn(usize) -> u8| u32::from_le_bytes([f(0), f(1), f(2), f(3)]);
        let halves = |lo: u16, hi: u16| u32::from(lo) | u32::from(hi) << 16;
        let want = [
            bytes(&|k| xb[k].wrapping_add(yb[k])),
            bytes(&|k| xb[k].wrapping_mul(yb[(k + 1) % 4])),
            halves(s0.wrapping_add(t1), s1.wrapping_mul(t0)),
            halves(s1.wrapping_sub(t1), ((u32::from(s0)) << (t0 & 15)) as u16),
            (i32::from(s1 as i16) + i32::from(yb[1] as i8)) as u32,
            (x >> 16).wrapping_mul(y & 0xff),
            (i32::from(s1 as i16 >> 3) ^ i32::from((s0 as i16).max(t1 as i16))) as u32,
            u32::from(xb[1].max(yb[2])) | u32::from(xb[3].min(yb[0])) << 8 | u32::from(s1.max(t0)) << 16,
        ];
        assert_eq!(&got[12 * i..12 * i + 8], &want, "sdwa: item {i}, x {x:#x}, y {y:#x}");
        let cmp = if (i32::from(s1 as i16) as u32) < (i32::from(xb[1] as i8) as u32) { x } else { y };
        assert_eq!(got[12 * i + 11], cmp, "sdwa: compare, item {i}");
        if i >= 128 {
            let h = |v: u16| half_value(v);
            let r = |v: f64| nearest_half(v);
            assert_eq!(got[12 * i + 8], halves(r(h(s1) + h(t1)), r(h(s0) * h(t1))), "sdwa: f16, item {i}");
            assert_eq!(got[12 * i + 9], halves(r(h(s1) - h(t0)), r(h(s0).max(h(t0)))), "sdwa: f16, item {i}");
            assert_eq!(f32::from_bits(got[12 * i + 10]), (h(s1) * h(t1)) as f32, "sdwa: f16 to f32, item {i}");
        }
    }

    // bytes: uchar4 and short arithmetic through gfx9's 16-bit ops and their SDWA forms.
    let (end, p) = f.dispatch(KernelDispatch::new(kd("bytes"), n as u32, 64), &args(&[av, bv, out]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(out, 4 * n);
    for i in 0..n {
        let (xb, yb) = (a[i].to_le_bytes(), b[i].to_le_bytes());
        let bytes = |f: &dyn Fn(usize) -> u8| u32::from_le_bytes([f(0), f(1), f(2), f(3)]);
        let (x, y) = (a[i] as i16, (b[i] >> 16) as i16);
        let want = [
            bytes(&|k| xb[k].wrapping_add(yb[k])),
            bytes(&|k| xb[k].wrapping_mul(yb[k])),
            bytes(&|k| xb[k].wrapping_sub(yb[k] >> (k + 1))),
            u32::from(x.wrapping_mul(y) as u16) | u32::from(x.max(y) as u16) << 16,
        ];
        assert_eq!(&got[4 * i..4 * i + 4], &want, "bytes: item {i}");
    }

    // scan: the atomic optimizer's DPP scan; 232 work-items (a partial last wave), the items
    // whose value is a multiple of 5 skip the atomic.
    let n = 232usize;
    let v: Vec<u32> = (0..n as u32).map(|i| (i.wrapping_mul(0x9e37_79b9) >> 12) % 1000).collect();
    let (inp, sum, old) = (DATA, DATA + 0x1000, DATA + 0x2000);
    f.m.gpu_write(f.g, inp, &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    f.m.gpu_write(f.g, sum, &[0; 4]).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd("scan"), n as u32, 64), &args(&[inp, sum, old]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let adds = |r: std::ops::Range<usize>| v[r].iter().filter(|&&x| !x.is_multiple_of(5)).sum::<u32>();
    assert_eq!(f.words(sum, 1)[0], adds(0..n), "scan: the total");
    let got = f.words(old, n);
    // Each wave adds its total at once: its lanes see the sum before it (the waves' totals in
    // the order they ran) plus the values of the wave's earlier adding lanes.
    let mut starts: Vec<(u32, usize)> = Vec::new();
    for base in (0..n).step_by(64) {
        let end = (base + 64).min(n);
        let first = (base..end).find(|&i| !v[i].is_multiple_of(5)).unwrap();
        let start = got[first];
        for i in base..end {
            let want = if !v[i].is_multiple_of(5) { start + adds(base..i) } else { u32::MAX };
            assert_eq!(got[i], want, "scan: item {i}");
        }
        starts.push((start, base));
    }
    starts.sort_unstable();
    let mut before = 0;
    for (start, base) in starts {
        assert_eq!(start, before, "scan: the wave at {base} started from the sum of the waves before it");
        before += adds(base..(base + 64).min(n));
    }
}

/// gfx1100's DPP16 and DPP8 (tests/isa/dpp16.cl) in wave32: `update_dpp` with the gfx10+
/// controls (quad_perm, row shifts, rotation and mirrors, row_share, row_xmask), row and bank
/// masks, bound_ctrl, old values kept where the source lane is out of range or disabled (a
/// partial last wave, a divergent branch), `mov_dpp8`, DPP folded into `v_add_nc_u32_dpp`;
/// the expected lanes computed here from the controls' definitions.
pub fn dpp16_and_dpp8_match_the_cpu(gpu: &Gpu) {
    const CODE2: u64 = BASE + 0x80000;
    let f = setup(gpu);
    let (co, path) = code_object_of(gpu, "dpp16.cl", &[]);
    let listing = objdump(gpu, &path);
    check_decoder(gpu, &listing);
    for want in ["v_mov_b32_dpp", "v_add_nc_u32_dpp", "dpp8:", "row_share:3", "row_xmask:5"] {
        assert!(listing.iter().any(|(t, _)| t.contains(want)), "clang-19 no longer emits {want} for dpp16.cl");
    }
    let obj = CodeObject::parse(&co).unwrap();
    assert!(obj.image_len() <= 0x80000, "the image fits below DATA");
    f.m.gpu_write(f.g, CODE2, &obj.image()).unwrap();
    let kd = |k: &str| CODE2 + obj.symbol(&format!("{k}.kd")).unwrap();
    // Three full waves of 32 and one of 20 (workgroups of 32).
    let n = 116usize;
    let x: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(0x9e37_79b9) ^ 0x1234_5678).collect();
    let out = DATA + 0x10000;
    f.m.gpu_write(f.g, DATA, &x.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    let (end, p) = f.dispatch(KernelDispatch::new(kd("dpp16"), n as u32, 32), &args(&[DATA, out]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(out, 12 * n);
    for i in 0..n {
        let (base, l) = (i & !31, i & 31);
        let row = l & !15;
        let at = |s: Option<usize>, on: &dyn Fn(usize) -> bool| s.filter(|&s| s < 32 && base + s < n && on(base + s)).map(|s| x[base + s]);
        let all = |_: usize| true;
        let or = |v: Option<u32>, old: u32| v.unwrap_or(old);
        let m1 = u32::MAX;
        let want: [u32; 12] = [
            or(at(Some((l & !3) | (3 - (l & 3))), &all), m1),
            or(at((l % 16 < 15).then(|| l + 1), &all), m1),
            or(at((l % 16 >= 8).then(|| l - 8), &all), 0),
            or(at(Some(row + (l + 13) % 16), &all), m1),
            or(at(Some(row + 15 - l % 16), &all), m1),
            or(at(Some((l & !7) + 7 - l % 8), &all), m1),
            or(at(Some(row + 3), &all), m1),
            or(at(Some(row + ((l % 16) ^ 5)), &all), m1),
            if l < 16 && (4..12).contains(&l) { or(at(Some(l - 2), &all), m1) } else { m1 },
            // DPP8 without FI: a disabled source lane reads 0.
            or(at(Some((l & !7) + 7 - l % 8), &all), 0),
            x[i].wrapping_add(or(at((l % 16 >= 1).then(|| l - 1), &all), 0)),
            if i % 3 != 0 { or(at(Some(row + (l + 15) % 16), &|j| j % 3 != 0), -3i32 as u32) } else { -7i32 as u32 },
        ];
        assert_eq!(&got[12 * i..12 * i + 12], &want, "dpp16: item {i} (lane {l})");
    }
}
