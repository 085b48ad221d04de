//! Real machine code on the model GPU (model/ISA.md): lane-instructions per second of a
//! VALU-bound and a memory-bound gfx90a kernel, dispatched through the C API's AQL queue on the
//! mi210 model (one core: the model runs a dispatch on the thread that rings the doorbell's
//! engine). The kernels (benches/isa/kernels.s) are assembled with llvm-mc-19 and linked with
//! ld.lld-19 when the bench starts (Debian packages llvm-19 and lld-19).
//!
//! A lane-instruction is one instruction executed by one active lane; scalar instructions count
//! once per lane of their wave too (the wave-instruction count × 64). The counts come from the
//! code objects themselves: each kernel decoded by the model's own decoder from its entry to
//! `s_endpgm`, the loop of `valu` (its one backward branch) counted `ITER` times.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hsakmt_benches::gpu::{first_gpu, gpu_memory, put_signal, signal_value, AqlQueue};
use hsakmt_core::packet::aql::{self, Body, KernelDispatch, SignalRepr};
use hsakmt_model::isa::{elf::CodeObject, gfx9};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Duration;

const ITER: u32 = 64;
const VALU_ITEMS: u32 = 16 << 10;
const VADD_ITEMS: u32 = 1 << 20;

fn run(tool: &str, package: &str, args: &[&std::ffi::OsStr]) {
    let out = Command::new(tool).args(args).output().unwrap_or_else(|e| panic!("{tool} ({e}): install the Debian package {package}"));
    assert!(out.status.success(), "{tool}: {}", String::from_utf8_lossy(&out.stderr));
}

/// benches/isa/kernels.s assembled and linked.
fn code_object() -> Vec<u8> {
    let dir = std::env::temp_dir().join(format!("hsakmt-isa-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("isa/kernels.s");
    let (o, co) = (dir.join("k.o"), dir.join("k.co"));
    run(
        "llvm-mc-19",
        "llvm-19",
        &[
            "-triple=amdgcn-amd-amdhsa".as_ref(),
            "-mcpu=gfx90a".as_ref(),
            "-filetype=obj".as_ref(),
            src.as_os_str(),
            "-o".as_ref(),
            o.as_os_str(),
        ],
    );
    run("ld.lld-19", "lld-19", &["-shared".as_ref(), o.as_os_str(), "-o".as_ref(), co.as_os_str()]);
    let bytes = std::fs::read(&co).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    bytes
}

/// Wave-instructions one wave of `kernel` executes, its loop (if any) run `iter` times.
fn wave_instructions(obj: &CodeObject<'_>, image: &[u8], kernel: &str, iter: u64) -> u64 {
    let mut pc = obj.symbol(kernel).unwrap() as usize;
    let mut seen = Vec::new();
    loop {
        let w: Vec<u32> = image[pc..pc + 8].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        let i = gfx9::decode(&w, gfx9::Target::Gfx90a).unwrap_or_else(|| panic!("{kernel}: not decoded at {pc:#x}"));
        seen.push(pc);
        if i.name == "s_endpgm" {
            break;
        }
        if i.name.starts_with("s_cbranch") {
            // A backward branch: the instructions from its target to it repeat.
            let target = (pc as i64 + 4 + 4 * i64::from(i.imm)) as usize;
            let body = seen.iter().filter(|&&at| at >= target).count() as u64;
            return seen.len() as u64 - body + iter * body + wave_instructions_after(image, pc + usize::from(i.len));
        }
        pc += usize::from(i.len);
    }
    seen.len() as u64
}

/// Straight-line instructions from `pc` to `s_endpgm`, inclusive.
fn wave_instructions_after(image: &[u8], mut pc: usize) -> u64 {
    let mut n = 0;
    loop {
        let w: Vec<u32> = image[pc..pc + 8].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
        let i = gfx9::decode(&w, gfx9::Target::Gfx90a).unwrap();
        n += 1;
        if i.name == "s_endpgm" {
            return n;
        }
        pc += usize::from(i.len);
    }
}

fn isa(c: &mut Criterion) {
    std::env::set_var("HSAKMT_MODEL", "mi210");
    hsakmt::safe::open().expect("open the model");
    let node = first_gpu();
    let co = code_object();
    let obj = CodeObject::parse(&co).unwrap();
    let image = obj.image();
    let code = gpu_memory(node, image.len() as u64);
    // SAFETY: `code` holds `image.len()` bytes.
    unsafe { std::ptr::copy_nonoverlapping(image.as_ptr(), code, image.len()) };
    let kd = |k: &str| code as u64 + obj.symbol(&format!("{k}.kd")).unwrap();

    let q = AqlQueue::new(node, 64);
    // SAFETY: offsets inside the queue's 4 KiB control buffer.
    let (signal, kernarg) = unsafe { (q.ctl.add(256), q.ctl.add(512)) };
    let bytes = 4 * u64::from(VADD_ITEMS);
    let data = gpu_memory(node, 3 * bytes);
    let (a, b, out) = (data as u64, data as u64 + bytes, data as u64 + 2 * bytes);
    // SAFETY: `data` holds three arrays of VADD_ITEMS floats.
    unsafe {
        let av = std::slice::from_raw_parts_mut(data.cast::<f32>(), 2 * VADD_ITEMS as usize);
        for (i, x) in av.iter_mut().enumerate() {
            *x = i as f32 * 0.25;
        }
    }
    let submit = |k: KernelDispatch, args: &[u64]| {
        // SAFETY: the kernarg area is 3.5 KiB of the control buffer; at most 3 arguments.
        unsafe { std::ptr::copy_nonoverlapping(args.as_ptr().cast::<u8>(), kernarg, 8 * args.len()) };
        // SAFETY: the signal slot in the queue's control buffer, alive for the whole run.
        unsafe { put_signal(signal, SignalRepr::user(1)) };
        q.ring.submit(&aql::Repr::new(Body::KernelDispatch(k.kernarg(kernarg as u64).completion_signal(signal as u64))));
        // SAFETY: as above.
        while unsafe { signal_value(signal) }.load(Ordering::Acquire) != 0 {
            std::hint::spin_loop();
        }
    };

    // The vector add really runs, once before it is measured: c = a + b.
    submit(KernelDispatch::new(kd("vadd"), VADD_ITEMS, 256), &[a, b, out]);
    // SAFETY: the three arrays above.
    let all = unsafe { std::slice::from_raw_parts(data.cast::<f32>(), 3 * VADD_ITEMS as usize) };
    let n = VADD_ITEMS as usize;
    assert!((0..n).all(|i| all[2 * n + i] == all[i] + all[n + i]), "vadd's results");

    let mut g = c.benchmark_group("isa_gfx90a");
    g.sample_size(10).measurement_time(Duration::from_secs(5));
    let valu = wave_instructions(&obj, &image, "valu", u64::from(ITER));
    g.throughput(Throughput::Elements(valu * u64::from(VALU_ITEMS)));
    g.bench_function("valu_fma_loop_lane_instructions", |bch| {
        bch.iter(|| submit(KernelDispatch::new(kd("valu"), VALU_ITEMS, 256), &[u64::from(ITER), out]))
    });
    let vadd = wave_instructions(&obj, &image, "vadd", 0);
    g.throughput(Throughput::Elements(vadd * u64::from(VADD_ITEMS)));
    g.bench_function("vadd_1m_lane_instructions", |bch| {
        bch.iter(|| submit(KernelDispatch::new(kd("vadd"), VADD_ITEMS, 256), &[a, b, out]))
    });
    g.finish();
    eprintln!("wave-instructions per wave: valu {valu}, vadd {vadd}");
}

criterion_group!(benches, isa);
criterion_main!(benches);
