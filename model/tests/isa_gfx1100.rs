//! The model GPU runs gfx1100 (RDNA3) machine code (model/ISA.md): OpenCL kernels compiled
//! here with clang-19 for gfx1100 (wave32, and wave64 with -mwavefrontsize64), loaded from
//! their ELF code objects and dispatched through an AQL queue on the rx7900xtx model, checked
//! against the CPU; the decoder checked against llvm-objdump on the compiled kernels and on an
//! llvm-mc sweep. The tests every GPU runs are tests/support/isa.rs's; gfx1100's own (wave64,
//! VOPD, flat scratch limits, hand-written kernels of tests/isa/gfx1100.s) are here. Needs the
//! Debian packages clang-19, lld-19 and llvm-19 (.ci/packages).

mod support;

use hsakmt_core::abi::kfd::*;
use hsakmt_core::packet::aql::KernelDispatch;
use hsakmt_model::engine::{QueueError, RunEnd};
use hsakmt_model::isa::gfx11;
use support::isa::{args, fill_with_partial_workgroups, reduce_through_lds, setup_asm, setup_with, DATA, GFX1100};

support::isa::isa_tests!(GFX1100; dpp16_and_dpp8_match_the_cpu);

#[test]
fn wave64_kernels_run_with_64_lane_exec_and_vcc() {
    // -mwavefrontsize64: the descriptor's WAVEFRONT_SIZE32 bit clear, lane masks in SGPR pairs.
    let f = setup_with(&GFX1100, &["-mwavefrontsize64"]);
    fill_with_partial_workgroups(&f);
    reduce_through_lds(&f, 8);
}

#[test]
fn a_vopd_pair_reads_both_sources_before_either_writes() {
    let f = setup_asm(&GFX1100, "gfx1100.s");
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
    let f = setup_asm(&GFX1100, "gfx1100.s");
    let (end, p) = f.dispatch(KernelDispatch::new(f.kd("scratch_edge"), 96, 96), &args(&[DATA]));
    assert_eq!((end, &p.error), (RunEnd::Idle, &None));
    let got = f.words(DATA, 2 * 96);
    for l in 0..96u32 {
        assert_eq!([got[2 * l as usize], got[2 * l as usize + 1]], [0x1234 + l, 0], "work-item {l}");
    }
}

#[test]
fn running_s_code_end_is_an_illegal_instruction() {
    let f = setup_asm(&GFX1100, "gfx1100.s");
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
