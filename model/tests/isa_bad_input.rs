//! Bad input to the machine-code path (issue 14, "Bad input"), on every GPU the model runs code
//! for: a kernel object in unmapped memory, a misaligned or malformed descriptor, resources no
//! workgroup can have, and garbage instead of code. Each stops the queue the way the CP and the
//! KFD report it (a memory exception with the address, or the packet's exception code), never
//! panics and never hangs, and the model runs the next good dispatch as before.

mod support;

use hsakmt_core::abi::kfd::*;
use hsakmt_core::packet::aql::KernelDispatch;
use hsakmt_model::engine::{QueueError, RunEnd};
use support::isa::{args, setup, Fx, Gpu, CODE, DATA, GFX1100, GFX90A, GFX942, HOLE};

/// `fill` of 64 work-items on a fresh queue, as a probe that the model still works.
fn fill_works(f: &Fx) {
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 64, 64), &args(&[DATA, 3 | (64 << 32)]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    assert_eq!(f.words(DATA, 2), [3, 4]);
}

fn code_invalid(f: &Fx, k: KernelDispatch, why: &str) {
    let (end, p) = f.dispatch(k, &args(&[DATA, 9 | (64 << 32)]));
    assert_eq!(end, RunEnd::Stopped, "{why}");
    assert!(
        matches!(p.error, Some(QueueError::BadPacket { at: 0, ec: EC_QUEUE_PACKET_DISPATCH_CODE_INVALID, .. })),
        "{why}: {:?}",
        p.error
    );
    assert_ne!(f.words(DATA, 1), [9], "{why}: no wave ran");
}

fn bad_dispatches_stop_the_queue_as_the_cp_reports_them(gpu: &Gpu) {
    let f = setup(gpu);
    let kd = f.kd("fill");
    let fill = |object: u64| KernelDispatch::new(object, 64, 64);

    // The kernel object in unmapped memory: a GPU page fault at its address.
    let (end, p) = f.dispatch(fill(HOLE), &args(&[DATA, 0]));
    assert_eq!(end, RunEnd::Stopped);
    match p.error {
        Some(QueueError::Fault(x)) => assert_eq!((x.va, x.write), (HOLE, false)),
        e => panic!("descriptor in unmapped memory: {e:?}"),
    }
    fill_works(&f);

    // Not 64-byte aligned; reserved bytes set; resources beyond a workgroup's.
    code_invalid(&f, fill(kd + 4), "a misaligned kernel object");
    let mut d = [0u8; 64];
    f.m.gpu_read(f.g, kd, &mut d).unwrap();
    let spare = CODE + 0x8000;
    let mut bad = d;
    bad[12] = 1;
    f.m.gpu_write(f.g, spare, &bad).unwrap();
    code_invalid(&f, fill(spare), "a descriptor with reserved bytes set");
    code_invalid(&f, KernelDispatch { group_segment_size: 128 << 10, ..fill(kd) }, "128 KiB of LDS");
    code_invalid(&f, KernelDispatch { private_segment_size: 1 << 20, ..fill(kd) }, "1 MiB of private memory per work-item");
    let mut bad = d;
    // USER_SGPR_COUNT 0 while the properties ask for the kernarg pointer (and more).
    bad[52] &= !(0x1f << 1);
    f.m.gpu_write(f.g, spare, &bad).unwrap();
    code_invalid(&f, fill(spare), "more user SGPRs asked for than USER_SGPR_COUNT");
    fill_works(&f);
}

/// Garbage instead of code: 64 blocks of pseudo-random words at a kernel's entry. Each dispatch
/// ends (the queue stops: illegal instruction, fault, trap or the runaway limit) or runs to its
/// end, without a panic; afterwards the model runs good code again.
fn garbage_code_stops_the_queue_and_nothing_else(gpu: &Gpu) {
    let f = setup(gpu);
    let fill_entry = {
        let obj = hsakmt_model::isa::elf::CodeObject::parse(&f.co).unwrap();
        CODE + obj.symbol("fill").unwrap()
    };
    let original = f.words(fill_entry, 64);
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut stopped = 0;
    for _ in 0..64 {
        let words: Vec<u8> = (0..64)
            .flat_map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x as u32).to_le_bytes()
            })
            .collect();
        f.m.gpu_write(f.g, fill_entry, &words).unwrap();
        let (end, p) = f.dispatch(KernelDispatch::new(f.kd("fill"), 64, 64), &args(&[DATA, 5 | (64 << 32)]));
        match end {
            RunEnd::Stopped => {
                stopped += 1;
                assert!(p.error.is_some());
            }
            RunEnd::Idle => assert_eq!(p.error, None),
            e => panic!("{e:?}"),
        }
    }
    assert!(stopped > 32, "random code rarely runs cleanly to an end ({stopped} of 64 stopped)");
    f.m.gpu_write(f.g, fill_entry, &original.iter().flat_map(|w| w.to_le_bytes()).collect::<Vec<_>>()).unwrap();
    fill_works(&f);
}

macro_rules! per_gpu {
    ($($name:ident => $test:ident($gpu:expr)),* $(,)?) => {
        $(#[test] fn $name() { $test(&$gpu) })*
    };
}

per_gpu! {
    bad_dispatches_on_gfx90a => bad_dispatches_stop_the_queue_as_the_cp_reports_them(GFX90A),
    bad_dispatches_on_gfx942 => bad_dispatches_stop_the_queue_as_the_cp_reports_them(GFX942),
    bad_dispatches_on_gfx1100 => bad_dispatches_stop_the_queue_as_the_cp_reports_them(GFX1100),
    garbage_code_on_gfx90a => garbage_code_stops_the_queue_and_nothing_else(GFX90A),
    garbage_code_on_gfx942 => garbage_code_stops_the_queue_and_nothing_else(GFX942),
    garbage_code_on_gfx1100 => garbage_code_stops_the_queue_and_nothing_else(GFX1100),
}
